/* test_core_numfmt.c — Python's repr() of floats (core_format_double_py).
 * Every expected string is what CPython 3 prints for repr(x). The
 * ECMAScript form (core_format_double) is tested in test_core_canon.c. */
#include <math.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

static void assert_py(double d, const char *want)
{
	char buf[32];
	int n = core_format_double_py(d, buf, sizeof(buf));

	cr_assert_eq(n, (int)strlen(want), "%a: got \"%s\", want \"%s\"", d,
		     n >= 0 ? buf : "(error)", want);
	cr_assert_str_eq(buf, want, "%a", d);
}

static double from_bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

Test(core_numfmt, py_shortest_round_trip_digits)
{
	assert_py(0.1, "0.1");
	assert_py(1.5, "1.5");
	assert_py(-2.5, "-2.5");
	assert_py(0.1 + 0.2, "0.30000000000000004");
	assert_py(1.0 / 3, "0.3333333333333333");
	assert_py(2.0 / 3, "0.6666666666666666");
	assert_py(3.141592653589793, "3.141592653589793");
}

Test(core_numfmt, py_integral_values_end_in_point_zero)
{
	assert_py(1.0, "1.0");
	assert_py(100.0, "100.0");
	assert_py(-7.0, "-7.0");
	assert_py(1e15, "1000000000000000.0");
	assert_py(9999999999999998.0, "9999999999999998.0");
}

Test(core_numfmt, py_exponent_form_from_1e16)
{
	assert_py(1e16, "1e+16");
	assert_py(-1e16, "-1e+16");
	assert_py(1.5e16, "1.5e+16");
	assert_py(123456789012345678.0, "1.2345678901234568e+17");
	assert_py(1e22, "1e+22");
	assert_py(1e100, "1e+100");
	assert_py(1.7976931348623157e308, "1.7976931348623157e+308");
}

Test(core_numfmt, py_exponent_form_below_1e_4)
{
	assert_py(1e-4, "0.0001");
	assert_py(0.00012345, "0.00012345");
	assert_py(1e-5, "1e-05");
	assert_py(-1e-5, "-1e-05");
	assert_py(1.5e-7, "1.5e-07");
	assert_py(2.2250738585072014e-308, "2.2250738585072014e-308");
	assert_py(5e-324, "5e-324");
	assert_py(-5e-324, "-5e-324");
}

Test(core_numfmt, py_zero_keeps_its_sign)
{
	assert_py(0.0, "0.0");
	assert_py(-0.0, "-0.0");
}

Test(core_numfmt, py_nan_and_infinities)
{
	assert_py(NAN, "nan");
	assert_py(-NAN, "nan");
	assert_py(INFINITY, "inf");
	assert_py(-INFINITY, "-inf");
}

/* Just above a power of two the gap below is half the gap above, and the
 * nearest 16-digit decimal may not read back while a neighbour does:
 * Python prints that neighbour, not 17 digits. */
Test(core_numfmt, py_power_of_two_neighbours)
{
	assert_py(ldexp(1.0, 574), "6.183260036827614e+172");
	assert_py(ldexp(1.0, -778), "6.290184345309701e-235");
	assert_py(ldexp(1.0, 182), "6.129982163463556e+54");
	assert_py(ldexp(1.0, -140), "7.174648137343064e-43");
	assert_py(from_bits(0x4340000000000000ULL), "9007199254740992.0");
}

Test(core_numfmt, py_fails_when_the_buffer_is_too_small)
{
	char buf[32];

	cr_assert_eq(core_format_double_py(1.5, buf, 3), -1);
	cr_assert_eq(core_format_double_py(1.5, buf, 4), 3);
	cr_assert_str_eq(buf, "1.5");
	cr_assert_eq(core_format_double_py(-INFINITY, buf, 4), -1);
	cr_assert_eq(core_format_double_py(-2.2250738585072014e-308, buf, 32), 24);
}

/*
 * test_plugins_pynum.c — Python's arithmetic for the 0.7.1 statistics
 * aggregations (plugins/aggregation/pynum.c) against what Python 3.11
 * computed: tests/fixtures/pynum_cases.txt, recorded by
 * tests/reference/pynum_cases.py (400 random batches: ints near the
 * 64-bit range, decimals, tiny and huge floats, signed zeros, mixes).
 * Every figure must be Python's to the bit.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/aggregation/pynum.h"

#define FIXTURE ELSPETH_SOURCE_DIR "/tests/fixtures/pynum_cases.txt"

static pynum parse(char **p)
{
	char *s = *p, *e;
	pynum v;

	while (*s == ' ')
		s++;
	if (*s == 'i')
		v = pynum_int(strtoll(s + 1, &e, 10));
	else
		v = pynum_real(strtod(s + 1, &e));
	*p = e;
	return v;
}

/* Same value and type, and the same bits for a float (-0.0 is not 0.0). */
static bool same(pynum a, pynum b)
{
	if (a.is_int != b.is_int)
		return false;
	return a.is_int ? a.i == b.i : !memcmp(&a.d, &b.d, sizeof(double));
}

Test(pynum, python_311_on_400_recorded_batches)
{
	FILE *f = fopen(FIXTURE, "r");
	static char line[1 << 16];
	int cases = 0;

	cr_assert(f, "cannot read %s", FIXTURE);
	while (fgets(line, sizeof(line), f)) {
		pynum v[64], w[64], sum, med;
		char *p = line;
		size_t n = 0;
		double sd;

		while (n < 64 && *p != '|') {
			v[n++] = parse(&p);
			while (*p == ' ')
				p++;
		}
		p++;
		pynum want_sd = parse(&p), want_sum = parse(&p), want_med = parse(&p);
		pynum want_mean = parse(&p), want_round = parse(&p);

		cr_assert_eq(pynum_stdev(v, n, &sd), 0);
		cr_assert(same(pynum_real(sd), want_sd), "case %d: stdev %.17g, Python %.17g",
			  cases + 1, sd, want_sd.d);
		cr_assert_eq(pynum_sum(v, n, &sum), 0);
		cr_assert(same(sum, want_sum), "case %d: sum", cases + 1);
		memcpy(w, v, n * sizeof(*v));
		pynum_sort(w, n);
		cr_assert_eq(pynum_median(w, n, &med), 0);
		cr_assert(same(med, want_med), "case %d: median", cases + 1);
		cr_assert(same(pynum_real(pynum_div(sum, pynum_int((long long)n))), want_mean),
			  "case %d: sum / len", cases + 1);
		cr_assert(same(pynum_real(pynum_round(pynum_float(sum) / 7, 4)), want_round),
			  "case %d: round", cases + 1);
		cases++;
	}
	fclose(f);
	cr_assert_eq(cases, 400);
}

Test(pynum, ints_stay_ints_and_overflow_is_an_error)
{
	pynum r;

	cr_assert_eq(pynum_add(pynum_int(2), pynum_int(3), &r), 0);
	cr_assert(r.is_int && r.i == 5);
	cr_assert_eq(pynum_add(pynum_int(2), pynum_real(0.5), &r), 0);
	cr_assert(!r.is_int && r.d == 2.5);
	cr_assert_eq(pynum_add(pynum_int(LLONG_MAX), pynum_int(1), &r), -1);
	cr_assert_eq(pynum_mul(pynum_int(1LL << 40), pynum_int(1LL << 40), &r), -1);
	/* (2^62 + 1) / 3 rounds once, as Python's int / int */
	cr_assert_eq(pynum_div(pynum_int((1LL << 62) + 1), pynum_int(3)), 1537228672809129301.0);
	cr_assert_eq(pynum_div(pynum_int(LLONG_MIN), pynum_int(-1)), 9223372036854775808.0);
}

Test(pynum, sorting_is_exact_and_stable)
{
	pynum v[] = { pynum_real(2.0), pynum_int(1), pynum_int(2), pynum_real(1.5),
		      pynum_int(9007199254740993LL), pynum_real(9007199254740992.0) };

	pynum_sort(v, 6);
	cr_assert(v[0].is_int && v[0].i == 1);
	cr_assert(!v[1].is_int && v[1].d == 1.5);
	cr_assert(!v[2].is_int && v[2].d == 2.0);  /* 2.0 came first: stable */
	cr_assert(v[3].is_int && v[3].i == 2);
	cr_assert(!v[4].is_int);                    /* 2^53 < 2^53 + 1 exactly */
	cr_assert(v[5].is_int);
}

Test(pynum, a_float_squared_is_python_s_pow_not_the_product)
{
	volatile double x = 5.365929013053771;

	/* Python: x ** 2 == 28.793194173132214, x * x == 28.793194173132218 */
	cr_assert_eq(pynum_square(x), 28.793194173132214);
	cr_assert_eq(pynum_square(-x), 28.793194173132214);
	cr_assert_eq(x * x, 28.793194173132218);
	cr_assert_eq(pynum_square(0.0), 0.0);
}

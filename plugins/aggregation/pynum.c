/*
 * pynum.c — Python's numbers and its `statistics` arithmetic (see
 * pynum.h). The exact parts (large int division, stdev) use OpenSSL's
 * BIGNUM for the rationals Python's Fraction holds.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>

#include "plugins/aggregation/pynum.h"

/* The exact comparison of an int with a double relies on long double
 * holding every 64-bit int (x86-64's extended precision). */
_Static_assert(LDBL_MANT_DIG >= 64, "long double must hold a 64-bit int exactly");

pynum pynum_of(const json_t *v)
{
	return json_is_integer(v) ? pynum_int(json_integer_value(v)) :
				    pynum_real(json_real_value(v));
}

json_t *pynum_json(pynum v)
{
	return v.is_int ? json_integer(v.i) : json_real(v.d);
}

double pynum_float(pynum v)
{
	return v.is_int ? (double)v.i : v.d; /* C's conversion rounds to nearest */
}

int pynum_add(pynum a, pynum b, pynum *out)
{
	if (a.is_int && b.is_int) {
		out->is_int = true;
		return __builtin_add_overflow(a.i, b.i, &out->i) ? -1 : 0;
	}
	*out = pynum_real(pynum_float(a) + pynum_float(b));
	return 0;
}

int pynum_sub(pynum a, pynum b, pynum *out)
{
	if (a.is_int && b.is_int) {
		out->is_int = true;
		return __builtin_sub_overflow(a.i, b.i, &out->i) ? -1 : 0;
	}
	*out = pynum_real(pynum_float(a) - pynum_float(b));
	return 0;
}

int pynum_mul(pynum a, pynum b, pynum *out)
{
	if (a.is_int && b.is_int) {
		out->is_int = true;
		return __builtin_mul_overflow(a.i, b.i, &out->i) ? -1 : 0;
	}
	*out = pynum_real(pynum_float(a) * pynum_float(b));
	return 0;
}

/* n / m (m > 0) as the nearest double: the quotient scaled to 55–56
 * bits, its remainder kept as a sticky last bit (round to odd), then one
 * rounding to 53 bits — correct, as Python's int / int. */
static double bn_ratio(const BIGNUM *n, const BIGNUM *m, BN_CTX *ctx)
{
	BIGNUM *a = BN_CTX_get(ctx), *b = BN_CTX_get(ctx);
	BIGNUM *q = BN_CTX_get(ctx), *r = BN_CTX_get(ctx);
	int k = BN_num_bits(m) - BN_num_bits(n) + 55, neg = BN_is_negative(n);
	double v = NAN;

	if (!r || !BN_copy(a, n) || !BN_copy(b, m))
		return NAN;
	BN_set_negative(a, 0);
	if (BN_is_zero(a))
		return 0.0;
	if (((k >= 0 && BN_lshift(a, a, k)) || (k < 0 && BN_lshift(b, b, -k))) &&
	    BN_div(q, r, a, b, ctx) && (BN_is_zero(r) || BN_set_bit(q, 0)))
		v = ldexp((double)BN_get_word(q), -k);
	return neg ? -v : v;
}

static int bn_set_ll(BIGNUM *b, long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	if (!BN_set_word(b, u))
		return -1;
	BN_set_negative(b, v < 0);
	return 0;
}

double pynum_div(pynum a, pynum b)
{
	const long long exact = 1LL << 53;
	BN_CTX *ctx;
	BIGNUM *n, *m;
	double v = NAN;

	if (!a.is_int || !b.is_int || (a.i >= -exact && a.i <= exact &&
					b.i >= -exact && b.i <= exact))
		return pynum_float(a) / pynum_float(b); /* both exact: one rounding */
	if (!(ctx = BN_CTX_new()))
		return NAN;
	BN_CTX_start(ctx);
	n = BN_CTX_get(ctx);
	m = BN_CTX_get(ctx);
	if (m && !bn_set_ll(n, a.i) && !bn_set_ll(m, b.i)) {
		BN_set_negative(n, BN_is_negative(n) != BN_is_negative(m));
		BN_set_negative(m, 0);
		v = bn_ratio(n, m, ctx);
	}
	BN_CTX_end(ctx);
	BN_CTX_free(ctx);
	return v;
}

int pynum_cmp(pynum a, pynum b)
{
	if (a.is_int && b.is_int)
		return (a.i > b.i) - (a.i < b.i);
	if (!a.is_int && !b.is_int)
		return (a.d > b.d) - (a.d < b.d);
	{
		long double x = a.is_int ? (long double)a.i : a.d;
		long double y = b.is_int ? (long double)b.i : b.d;

		return (x > y) - (x < y);
	}
}

void pynum_sort(pynum *v, size_t n)
{
	/* insertion sort: stable; batches are small (0.7.1 caps some at 4,096) */
	for (size_t i = 1; i < n; i++) {
		pynum x = v[i];
		size_t j = i;

		while (j > 0 && pynum_cmp(v[j - 1], x) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

int pynum_sum(const pynum *v, size_t n, pynum *out)
{
	*out = pynum_int(0);
	for (size_t i = 0; i < n; i++)
		if (pynum_add(*out, v[i], out))
			return -1;
	return 0;
}

int pynum_median(const pynum *sorted, size_t n, pynum *out)
{
	pynum s;

	if (n % 2) {
		*out = sorted[n / 2];
		return 0;
	}
	if (pynum_add(sorted[n / 2 - 1], sorted[n / 2], &s))
		return -1;
	*out = pynum_real(pynum_div(s, pynum_int(2)));
	return 0;
}

/* x as an integer over 2^e: its exact ratio (Python's as_integer_ratio,
 * with a power-of-two denominator). */
static int scaled(pynum x, int e, BIGNUM *out)
{
	int ex;
	double f;

	if (x.is_int)
		return bn_set_ll(out, x.i) || (e && !BN_lshift(out, out, e)) ? -1 : 0;
	if (x.d == 0)
		return BN_zero(out), 0;
	f = frexp(x.d, &ex); /* x = f * 2^ex, 0.5 <= |f| < 1 */
	if (bn_set_ll(out, (long long)ldexp(f, 53)))
		return -1;
	ex -= 53; /* x = mantissa * 2^ex; e >= -ex (pynum_stdev chose it so) */
	return BN_lshift(out, out, ex + e) ? 0 : -1;
}

/* isqrt(n) for n >= 0: Newton's iteration from above. */
static int bn_isqrt(BIGNUM *out, const BIGNUM *n, BN_CTX *ctx)
{
	BIGNUM *x = BN_CTX_get(ctx), *y = BN_CTX_get(ctx);

	if (!y)
		return -1;
	if (BN_is_zero(n))
		return BN_zero(out), 0;
	if (!BN_set_word(x, 1) || !BN_lshift(x, x, (BN_num_bits(n) + 1) / 2))
		return -1;
	for (;;) { /* y = (x + n / x) / 2 until it stops falling */
		if (!BN_div(y, NULL, n, x, ctx) || !BN_add(y, y, x) || !BN_rshift1(y, y))
			return -1;
		if (BN_cmp(y, x) >= 0)
			break;
		if (!BN_copy(x, y))
			return -1;
	}
	return BN_copy(out, x) ? 0 : -1;
}

/* sqrt(n / m) correctly rounded, as Python 3.11's _float_sqrt_of_frac:
 * the root of n / m scaled to 109 bits, rounded to an odd integer
 * (round to odd), then to a double. */
static double bn_sqrt_of_frac(const BIGNUM *n, const BIGNUM *m, BN_CTX *ctx)
{
	BIGNUM *a = BN_CTX_get(ctx), *b = BN_CTX_get(ctx), *r = BN_CTX_get(ctx);
	BIGNUM *t = BN_CTX_get(ctx);
	int d = BN_num_bits(n) - BN_num_bits(m) - (2 * DBL_MANT_DIG + 3);
	int q = d >= 0 ? d / 2 : -((-d + 1) / 2); /* Python's // 2 */

	if (!t || !BN_copy(a, n) || !BN_copy(b, m))
		return NAN;
	if ((q >= 0 && !BN_lshift(b, b, 2 * q)) || (q < 0 && !BN_lshift(a, a, -2 * q)))
		return NAN;
	/* r = isqrt(a // b) | (r*r*b != a) */
	if (!BN_div(t, NULL, a, b, ctx) || bn_isqrt(r, t, ctx) ||
	    !BN_sqr(t, r, ctx) || !BN_mul(t, t, b, ctx))
		return NAN;
	if (BN_cmp(t, a) && !BN_set_bit(r, 0))
		return NAN;
	return ldexp((double)BN_get_word(r), q);
}

int pynum_stdev(const pynum *v, size_t n, double *out)
{
	BN_CTX *ctx = BN_CTX_new();
	BIGNUM *x, *sx, *sxx, *t, *num, *den, *g;
	int e = 0, rc = -1;

	if (!ctx)
		return -1;
	/* a common denominator 2^e for every value */
	for (size_t i = 0; i < n; i++) {
		int ex;

		if (v[i].is_int || v[i].d == 0)
			continue;
		frexp(v[i].d, &ex);
		if (53 - ex > e)
			e = 53 - ex;
	}
	BN_CTX_start(ctx);
	x = BN_CTX_get(ctx);
	sx = BN_CTX_get(ctx);
	sxx = BN_CTX_get(ctx);
	t = BN_CTX_get(ctx);
	num = BN_CTX_get(ctx);
	den = BN_CTX_get(ctx);
	g = BN_CTX_get(ctx);
	if (!g)
		goto out;
	BN_zero(sx);
	BN_zero(sxx);
	for (size_t i = 0; i < n; i++)
		if (scaled(v[i], e, x) || !BN_add(sx, sx, x) || !BN_sqr(t, x, ctx) ||
		    !BN_add(sxx, sxx, t))
			goto out;
	/* ss / (n - 1) = (n·Σx² − (Σx)²) / (n·(n − 1)·2^2e), reduced */
	if (!BN_set_word(t, n) || !BN_mul(num, sxx, t, ctx) || !BN_sqr(x, sx, ctx) ||
	    !BN_sub(num, num, x) || !BN_set_word(den, n) ||
	    !BN_mul_word(den, n - 1) || !BN_lshift(den, den, 2 * e) ||
	    !BN_gcd(g, num, den, ctx) ||
	    (!BN_is_zero(g) && (!BN_div(num, NULL, num, g, ctx) ||
				!BN_div(den, NULL, den, g, ctx))))
		goto out;
	*out = bn_sqrt_of_frac(num, den, ctx);
	rc = isnan(*out) ? -1 : 0;
out:
	BN_CTX_end(ctx);
	BN_CTX_free(ctx);
	return rc;
}

/* Called through a pointer the compiler cannot see through, so that
 * pow(x, 2.0) is not folded into x * x. */
static double (*volatile libm_pow)(double, double) = pow;

double pynum_square(double x)
{
	return x == 0 ? 0.0 : libm_pow(fabs(x), 2.0);
}

double pynum_round(double x, int ndigits)
{
	char buf[400];

	/* glibc prints the exact binary value, rounded half to even: what
	 * CPython's round() gets from its correctly rounded dtoa */
	snprintf(buf, sizeof(buf), "%.*f", ndigits, x);
	return strtod(buf, NULL);
}

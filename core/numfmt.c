/*
 * numfmt.c — ECMAScript Number.prototype.toString for doubles: the
 * shortest digits that read back to the same double, laid out as
 * ECMAScript does (exponent form from 1e21 up and below 1e-6), and the
 * same digits laid out as Python's repr() of a float. Used by canonical
 * JSON (RFC 8785) and sinks (ECMAScript), gate expressions and prompt
 * templates (Python).
 */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

/* value = dig[0..len) * 10^scale, dig without leading zeros. */
struct decimal {
	char dig[24];
	int len;
	int scale;
};

/* Parses "%.*e" output: digits (skipping the locale's radix char) and the
 * exponent. */
static void decimal_parse(struct decimal *dc, const char *s, int prec)
{
	dc->len = 0;
	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9')
			dc->dig[dc->len++] = *s;
	dc->scale = (*s ? atoi(s + 1) : 0) - prec;
}

static int decimal_is(const struct decimal *dc, double a)
{
	char s[48];

	snprintf(s, sizeof(s), "%.*se%d", dc->len, dc->dig, dc->scale);
	return strtod(s, NULL) == a;
}

/* Adds delta (+1 or -1) to the last digit, carrying. */
static void decimal_step(struct decimal *dc, int delta)
{
	int i = dc->len - 1;

	while (i >= 0) {
		int d = dc->dig[i] - '0' + delta;

		if (d >= 0 && d <= 9) {
			dc->dig[i] = (char)('0' + d);
			break;
		}
		dc->dig[i--] = delta > 0 ? '0' : '9';
	}
	if (i < 0) { /* 99..9 + 1 */
		memmove(dc->dig + 1, dc->dig, (size_t)dc->len);
		dc->dig[0] = '1';
		dc->len++;
	}
	while (dc->len > 1 && dc->dig[0] == '0') {
		memmove(dc->dig, dc->dig + 1, (size_t)--dc->len);
	}
}

/*
 * The correctly rounded prec+1 digits of a, if they read back as a. Just
 * above a power of two the rounding interval is twice as wide above a as
 * below it, so the nearest decimal may miss while its upper (or lower)
 * neighbour still reads back; ECMAScript then wants that neighbour.
 */
static int digits_try(struct decimal *dc, double a, int prec, int pow2)
{
	char s[40];
	struct decimal nb;

	snprintf(s, sizeof(s), "%.*e", prec, a);
	if (strtod(s, NULL) == a) {
		decimal_parse(dc, s, prec);
		return 1;
	}
	if (!pow2)
		return 0;
	decimal_parse(dc, s, prec);
	nb = *dc;
	decimal_step(&nb, +1);
	if (decimal_is(&nb, a)) {
		*dc = nb;
		return 1;
	}
	nb = *dc;
	decimal_step(&nb, -1);
	if (decimal_is(&nb, a)) {
		*dc = nb;
		return 1;
	}
	return 0;
}

/*
 * Shortest digits that read back as a (a finite, > 0). Any decimal of at
 * most DBL_DIG digits survives a round trip through a normal double, so if
 * DBL_DIG digits read back, dropping their trailing zeros gives the
 * shortest; otherwise 16 or 17 digits do. Subnormals hold fewer digits, so
 * for them search upwards from one digit.
 */
/*
 * The fast way, for the numbers data holds (57.3, 1200, 0.125): the
 * fewest fraction digits k (up to 9) for which the nearest integer m to
 * a * 10^k gives a back as m / 10^k. Both m (below 10^15) and 10^k are
 * exact doubles and the division is correctly rounded, so a match means
 * the decimal m e-k reads back as a; with at most 15 digits it is what
 * the slow search finds too (see below). 0 when there is none.
 */
static int digits_fast(struct decimal *dc, double a)
{
	double p = 1;

	for (int k = 0; k <= 9; k++, p *= 10) {
		double x = a * p, m;
		char tmp[24];
		int n = 0;

		if (x >= 1e15)
			return 0;
		m = nearbyint(x);
		if (m < 1 || m / p != a)
			continue;
		for (unsigned long long u = (unsigned long long)m; u; u /= 10)
			tmp[n++] = (char)('0' + u % 10);
		for (dc->len = 0; n > 0;)
			dc->dig[dc->len++] = tmp[--n];
		dc->scale = -k;
		return 1;
	}
	return 0;
}

static void shortest_digits(struct decimal *dc, double a)
{
	int e, prec, pow2 = frexp(a, &e) == 0.5;

	if (a >= DBL_MIN && digits_fast(dc, a)) {
		prec = 0; /* found: only the zeros to strip */
	} else if (a < DBL_MIN) {
		for (prec = 0; prec < 16; prec++)
			if (digits_try(dc, a, prec, 0))
				break;
	} else {
		for (prec = DBL_DIG - 1; prec < 16; prec++)
			if (digits_try(dc, a, prec, pow2))
				break;
	}
	if (prec == 16)
		digits_try(dc, a, 16, 0); /* 17 digits always read back */
	while (dc->len > 1 && dc->dig[dc->len - 1] == '0') {
		dc->len--;
		dc->scale++;
	}
}

/* The digits in fixed notation, the decimal point after n = len + scale
 * of them: "0.00ddd" when n <= 0, "ddd00" when n >= len (with ".0" when
 * point_zero), else "dd.ddd". */
static int lay_fixed(char *o, const struct decimal *dc, bool point_zero)
{
	int k = dc->len, n = dc->len + dc->scale;

	if (n <= 0) {
		memcpy(o, "0.", 2);
		memset(o + 2, '0', (size_t)-n);
		memcpy(o + 2 - n, dc->dig, (size_t)k);
		return 2 - n + k;
	}
	if (n >= k) {
		memcpy(o, dc->dig, (size_t)k);
		memset(o + k, '0', (size_t)(n - k));
		if (!point_zero)
			return n;
		memcpy(o + n, ".0", 2);
		return n + 2;
	}
	memcpy(o, dc->dig, (size_t)n);
	o[n] = '.';
	memcpy(o + n + 1, dc->dig + n, (size_t)(k - n));
	return k + 1;
}

/* d[.ddd]e+X / e-X, the exponent at least `width` digits. */
static int lay_exp(char *o, const struct decimal *dc, int width)
{
	int k = dc->len, e = dc->len + dc->scale - 1, i = 0;

	o[i++] = dc->dig[0];
	if (k > 1) {
		o[i++] = '.';
		memcpy(o + i, dc->dig + 1, (size_t)(k - 1));
		i += k - 1;
	}
	return i + snprintf(o + i, 8, "e%c%0*d", e < 0 ? '-' : '+', width,
			    abs(e));
}

/* Number::toString layout (ECMA-262 6.1.6.1.20): fixed notation from
 * 1e-6 up to below 1e21. */
static int es_layout(char *o, const struct decimal *dc)
{
	int n = dc->len + dc->scale;

	if (-6 < n && n <= 21)
		return lay_fixed(o, dc, false);
	return lay_exp(o, dc, 1);
}

/* Python's repr() layout (float_repr_style 'r'): fixed notation from
 * 1e-4 up to below 1e16, always with a digit after the point. */
static int py_layout(char *o, const struct decimal *dc)
{
	int n = dc->len + dc->scale;

	if (-4 < n && n <= 16)
		return lay_fixed(o, dc, true);
	return lay_exp(o, dc, 2);
}

/* Copies the text out with its NUL: its length, or -1 when it does not
 * fit (never with the documented 32 bytes). */
static int put_text(char *buf, size_t cap, const char *tmp, int len)
{
	if ((size_t)len >= cap)
		return -1;
	memcpy(buf, tmp, (size_t)len);
	buf[len] = '\0';
	return len;
}

int core_format_double(double d, char *buf, size_t cap)
{
	struct decimal dc;
	char tmp[48];
	int len = 0;

	if (!isfinite(d))
		return -1;
	if (d == 0) { /* -0 too */
		tmp[len++] = '0';
	} else {
		if (d < 0)
			tmp[len++] = '-';
		shortest_digits(&dc, fabs(d));
		len += es_layout(tmp + len, &dc);
	}
	return put_text(buf, cap, tmp, len);
}

int core_format_double_py(double d, char *buf, size_t cap)
{
	struct decimal dc;
	char tmp[48];
	int len = 0;

	if (!isnan(d) && signbit(d)) /* Python prints any NaN as "nan" */
		tmp[len++] = '-';
	if (isnan(d) || isinf(d)) {
		memcpy(tmp + len, isnan(d) ? "nan" : "inf", 3);
		len += 3;
	} else if (d == 0) {
		memcpy(tmp + len, "0.0", 3);
		len += 3;
	} else {
		shortest_digits(&dc, fabs(d));
		len += py_layout(tmp + len, &dc);
	}
	return put_text(buf, cap, tmp, len);
}

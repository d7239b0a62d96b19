/*
 * pynum.h — Python's numbers and its `statistics` arithmetic, for ELSPETH
 * 0.7.1's statistics aggregations (ADR 0046).
 *
 * 0.7.1 computes with Python ints and floats: `sum()` left to right
 * (Python 3.11's, the reference's), int + int exact, int op float in
 * float, `/` correctly rounded even between large ints,
 * `statistics.stdev` exactly in rationals and then a correctly rounded
 * square root, `statistics.median` on sorted values, `round(x, n)`. The
 * functions here do the same operations in the same order, so a result
 * is 0.7.1's to the bit. Ints are 64-bit (JSON's, the trail's); an int
 * result outside that range is an error where Python would go on.
 *
 * Values are finite: the plugins set NaN and infinities aside before
 * calling these.
 */
#ifndef ELSPETH_PYNUM_H
#define ELSPETH_PYNUM_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct pynum {
	bool is_int;
	long long i;    /* when is_int */
	double d;       /* otherwise */
} pynum;

/* An int or a real JSON value (the caller checked which). */
pynum pynum_of(const json_t *v);
/* A new JSON value: an integer or a real. */
json_t *pynum_json(pynum v);
/* float(v), correctly rounded. */
double pynum_float(pynum v);
static inline pynum pynum_int(long long i) { return (pynum){ true, i, 0 }; }
static inline pynum pynum_real(double d) { return (pynum){ false, 0, d }; }

/* a + b, a - b, a * b as Python: int when both are ints, else float.
 * -1 when an int result leaves the 64-bit range. */
int pynum_add(pynum a, pynum b, pynum *out);
int pynum_sub(pynum a, pynum b, pynum *out);
int pynum_mul(pynum a, pynum b, pynum *out);
/* a / b (b != 0), correctly rounded as Python's true division. */
double pynum_div(pynum a, pynum b);
/* Exact comparison (1 < 1.5, 2 == 2.0): -1, 0 or 1. */
int pynum_cmp(pynum a, pynum b);
/* sorted(v): ascending and stable (equal values keep their order). */
void pynum_sort(pynum *v, size_t n);
/* sum(v) (start 0). -1 on int overflow. */
int pynum_sum(const pynum *v, size_t n, pynum *out);
/* statistics.median of values already sorted (n >= 1): the middle one,
 * or the two middle ones' sum / 2. -1 on int overflow. */
int pynum_median(const pynum *sorted, size_t n, pynum *out);
/* statistics.stdev(v) (n >= 2): the sample standard deviation, from the
 * exact sum of squared deviations, its square root correctly rounded.
 * -1 when out of memory. */
int pynum_stdev(const pynum *v, size_t n, double *out);
/* x ** 2 for a float x, as CPython's float_pow: the C library's pow of
 * |x| (glibc's pow(x, 2) and the product x * x differ in the last bit for
 * about 1 double in 1,200; Python uses pow). */
double pynum_square(double x);
/* round(x, ndigits): the nearest number with ndigits decimals, ties to
 * even on the exact binary value. */
double pynum_round(double x, int ndigits);

#endif

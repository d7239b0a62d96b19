/*
 * expr_compare.c — comparison operators of gate expressions, with Python 3
 * semantics: numbers compare exactly across int and float (no rounding of
 * large ints), str by code point, lists and tuples lexicographically, sets
 * by inclusion ({1} < {1, 2}), and ordering incompatible types (dicts
 * among them) is a TypeError. Comparisons with NaN are
 * false, except !=.
 *
 * `is` / `is not` only reach here with the literal None on one side (the
 * parser refuses any other use, as ELSPETH does: expr_parse.c check_is),
 * so they test whether the other operand is None. identical() is still
 * Python's identity for every kind, should that ever change.
 */
#define _GNU_SOURCE	/* memmem: linear-time substring search in glibc */
#include <math.h>
#include <string.h>

#include "expr/expr_internal.h"

static const char *const cmp_names[] = {
	[DAG__CMP_EQ] = "==", [DAG__CMP_NE] = "!=", [DAG__CMP_LT] = "<",
	[DAG__CMP_LE] = "<=", [DAG__CMP_GT] = ">", [DAG__CMP_GE] = ">=",
	[DAG__CMP_IN] = "in", [DAG__CMP_NOT_IN] = "not in",
	[DAG__CMP_IS] = "is", [DAG__CMP_IS_NOT] = "is not",
};

/* i compared with d: -1, 0, 1, or 2 when d is NaN. */
static int int_float_cmp(long long i, double d)
{
	long long t;
	double frac;

	if (isnan(d))
		return 2;
	if (d >= 9223372036854775808.0)
		return -1;
	if (d < -9223372036854775808.0)
		return 1;
	t = (long long)d;	/* exact: |trunc(d)| < 2^63 */
	if (i != t)
		return i < t ? -1 : 1;
	frac = d - (double)t;
	return frac > 0 ? -1 : frac < 0 ? 1 : 0;
}

static long long as_int(const expr__val *v)
{
	return v->kind == DAG__V_BOOL ? v->u.b : v->u.i;
}

int expr__num_cmp(const expr__val *a, const expr__val *b)
{
	bool af = a->kind == DAG__V_FLOAT, bf = b->kind == DAG__V_FLOAT;
	long long x, y;
	int r;

	if (af && bf) {
		if (isnan(a->u.d) || isnan(b->u.d))
			return 2;
		return a->u.d < b->u.d ? -1 : a->u.d > b->u.d;
	}
	if (af) {
		r = int_float_cmp(as_int(b), a->u.d);
		return r == 2 ? 2 : -r;
	}
	if (bf)
		return int_float_cmp(as_int(a), b->u.d);
	x = as_int(a);
	y = as_int(b);
	return x < y ? -1 : x > y;
}

static bool holds(expr__cmpop op, int r)
{
	switch (op) {
	case DAG__CMP_LT: return r < 0;
	case DAG__CMP_LE: return r <= 0;
	case DAG__CMP_GT: return r > 0;
	default: return r >= 0;
	}
}

static int type_error(expr__ctx *c, uint32_t n, expr__cmpop op,
		      const expr__val *a, const expr__val *b)
{
	char snip[128];

	return expr__rt_error(c,
		"'%s' not supported between instances of '%s' and '%s' (in `%s`)",
		cmp_names[op], expr__type_name(a), expr__type_name(b),
		expr__snippet(c->e, n, snip, sizeof(snip)));
}

static int order(expr__ctx *c, uint32_t n, expr__cmpop op, const expr__val *a,
		 const expr__val *b, bool *res);

static int order_lists(expr__ctx *c, uint32_t n, expr__cmpop op,
		       const expr__val *a, const expr__val *b, bool *res)
{
	size_t i, la = expr__list_len(a), lb = expr__list_len(b);
	expr__val x, y;

	for (i = 0; i < la && i < lb; i++) {
		expr__list_at(a, i, &x);
		expr__list_at(b, i, &y);
		if (!expr__equal(&x, &y))
			return order(c, n, op, &x, &y, res);
	}
	*res = holds(op, la < lb ? -1 : la > lb);
	return 0;
}

static int order(expr__ctx *c, uint32_t n, expr__cmpop op, const expr__val *a,
		 const expr__val *b, bool *res)
{
	size_t m;
	int r;

	if (expr__is_num(a) && expr__is_num(b)) {
		r = expr__num_cmp(a, b);
		*res = r != 2 && holds(op, r);
		return 0;
	}
	if (a->kind == DAG__V_STR && b->kind == DAG__V_STR) {
		m = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
		r = memcmp(a->u.s.p, b->u.s.p, m);
		if (!r)
			r = a->u.s.n < b->u.s.n ? -1 : a->u.s.n > b->u.s.n;
		*res = holds(op, r);
		return 0;
	}
	if (expr__is_list(a) && expr__is_list(b) &&
	    !strcmp(expr__type_name(a), expr__type_name(b)))
		return order_lists(c, n, op, a, b, res);
	if (a->kind == DAG__V_SET && b->kind == DAG__V_SET) {
		*res = op == DAG__CMP_LT || op == DAG__CMP_LE ?
		       expr__subset(a, b, op == DAG__CMP_LT) :
		       expr__subset(b, a, op == DAG__CMP_GT);
		return 0;
	}
	return type_error(c, n, op, a, b);
}

static int contains(expr__ctx *c, uint32_t n, const expr__val *a,
		    const expr__val *b, bool *res)
{
	char snip[128];
	size_t i, len;
	expr__val x;

	if (b->kind == DAG__V_STR && a->kind == DAG__V_STR) {
		*res = !a->u.s.n || memmem(b->u.s.p, b->u.s.n, a->u.s.p, a->u.s.n);
		return 0;
	}
	if (b->kind == DAG__V_STR)
		return expr__rt_error(c,
			"'in <string>' requires a string as left operand, not '%s' (in `%s`)",
			expr__type_name(a), expr__snippet(c->e, n, snip, sizeof(snip)));
	if (expr__is_list(b)) {
		len = expr__list_len(b);
		for (*res = false, i = 0; i < len && !*res; i++) {
			expr__list_at(b, i, &x);
			*res = expr__equal(a, &x);
		}
		return 0;
	}
	if (expr__is_dict(b) || b->kind == DAG__V_SET) {
		if (!expr__hashable(a))
			return expr__unhashable(c, n, a);
		*res = expr__lookup(b, a, NULL);
		return 0;
	}
	return expr__rt_error(c, "argument of type '%s' is not iterable (in `%s`)",
		expr__type_name(b), expr__snippet(c->e, n, snip, sizeof(snip)));
}

static bool identical(const expr__val *a, const expr__val *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case DAG__V_NONE:
		return true;
	case DAG__V_BOOL:
		return a->u.b == b->u.b;
	case DAG__V_JARR:
	case DAG__V_DICT:
		return a->u.j == b->u.j;
	case DAG__V_ARR:
	case DAG__V_SET:
	case DAG__V_MAP:
		return false;	/* each literal or operation builds a new one */
	default:
		return expr__equal(a, b);
	}
}

int expr__compare(expr__ctx *c, uint32_t n, expr__cmpop op, const expr__val *a,
		 const expr__val *b, bool *res)
{
	int rc;

	switch (op) {
	case DAG__CMP_EQ:
	case DAG__CMP_NE:
		*res = expr__equal(a, b) == (op == DAG__CMP_EQ);
		return 0;
	case DAG__CMP_IN:
	case DAG__CMP_NOT_IN:
		rc = contains(c, n, a, b, res);
		if (op == DAG__CMP_NOT_IN)
			*res = !*res;
		return rc;
	case DAG__CMP_IS:
	case DAG__CMP_IS_NOT:
		*res = identical(a, b) == (op == DAG__CMP_IS);
		return 0;
	default:
		return order(c, n, op, a, b, res);
	}
}

/*
 * expr_arith.c — arithmetic operators of gate expressions with Python 3
 * semantics: / is always float division, // and % round toward negative
 * infinity (7 // -2 == -4, -7 % 3 == 2), + concatenates str and lists,
 * * repeats them. Integers are 64-bit: a result outside that range is a
 * runtime error, never undefined behaviour. Float overflow gives inf, as in
 * Python.
 */
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include "expr/expr_internal.h"

static const char *const op_names[] = {
	[DAG__OP_ADD] = "+", [DAG__OP_SUB] = "-", [DAG__OP_MUL] = "*",
	[DAG__OP_DIV] = "/", [DAG__OP_FLOORDIV] = "//", [DAG__OP_MOD] = "%",
};

static int op_error(expr__ctx *c, uint32_t n, const char *what)
{
	char snip[128];

	return expr__rt_error(c, "%s (in `%s`)", what,
			     expr__snippet(c->e, n, snip, sizeof(snip)));
}

int expr__make_str(expr__ctx *c, const char *p, size_t n, expr__val *out)
{
	char *s = n ? expr__arena_alloc(&c->arena, n) : NULL;

	if (n && !s)
		return expr__alloc_error(c);
	if (n)
		memcpy(s, p, n);
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_STR;
	out->u.s.p = n ? s : "";
	out->u.s.n = n;
	return 0;
}

static long long as_int(const expr__val *v)
{
	return v->kind == DAG__V_BOOL ? v->u.b : v->u.i;
}

static double as_double(const expr__val *v)
{
	return v->kind == DAG__V_FLOAT ? v->u.d : (double)as_int(v);
}

static int int_divmod(expr__ctx *c, uint32_t n, expr__binop op, long long x,
		      long long y, expr__val *out)
{
	long long q, r;

	if (y == 0)
		return op_error(c, n, "integer division or modulo by zero");
	if (y == -1) {	/* x / -1 and x % -1 can trap for LLONG_MIN */
		if (op == DAG__OP_FLOORDIV && x == LLONG_MIN)
			return op_error(c, n, "integer overflow");
		expr__set_int(out, op == DAG__OP_FLOORDIV ? -x : 0);
		return 0;
	}
	q = x / y;
	r = x % y;
	if (r && ((r < 0) != (y < 0))) {
		q--;
		r += y;
	}
	expr__set_int(out, op == DAG__OP_FLOORDIV ? q : r);
	return 0;
}

static int int_op(expr__ctx *c, uint32_t n, expr__binop op, long long x,
		  long long y, expr__val *out)
{
	long long r = 0;
	bool ovf = false;

	switch (op) {
	case DAG__OP_ADD:
		ovf = __builtin_add_overflow(x, y, &r);
		break;
	case DAG__OP_SUB:
		ovf = __builtin_sub_overflow(x, y, &r);
		break;
	case DAG__OP_MUL:
		ovf = __builtin_mul_overflow(x, y, &r);
		break;
	case DAG__OP_DIV:
		if (y == 0)
			return op_error(c, n, "division by zero");
		expr__set_float(out, (double)x / (double)y);
		return 0;
	default:
		return int_divmod(c, n, op, x, y, out);
	}
	if (ovf)
		return op_error(c, n, "integer overflow (result outside the 64-bit range)");
	expr__set_int(out, r);
	return 0;
}

/* CPython's float_divmod, for the same results on signs and zeros. */
static void float_divmod(double x, double y, double *floordiv, double *mod)
{
	double div;

	*mod = fmod(x, y);
	div = (x - *mod) / y;
	if (*mod != 0.0) {
		if ((y < 0) != (*mod < 0)) {
			*mod += y;
			div -= 1.0;
		}
	} else {
		*mod = copysign(0.0, y);
	}
	if (div != 0.0) {
		*floordiv = floor(div);
		if (div - *floordiv > 0.5)
			*floordiv += 1.0;
	} else {
		*floordiv = copysign(0.0, x / y);
	}
}

static int float_op(expr__ctx *c, uint32_t n, expr__binop op, double x,
		    double y, expr__val *out)
{
	double q, r;

	switch (op) {
	case DAG__OP_ADD:
		expr__set_float(out, x + y);
		return 0;
	case DAG__OP_SUB:
		expr__set_float(out, x - y);
		return 0;
	case DAG__OP_MUL:
		expr__set_float(out, x * y);
		return 0;
	default:
		break;
	}
	if (y == 0)
		return op_error(c, n, op == DAG__OP_DIV ? "float division by zero" :
				op == DAG__OP_MOD ? "float modulo by zero" :
				"float floor division by zero");
	if (op == DAG__OP_DIV) {
		expr__set_float(out, x / y);
		return 0;
	}
	float_divmod(x, y, &q, &r);
	expr__set_float(out, op == DAG__OP_FLOORDIV ? q : r);
	return 0;
}

static int concat_str(expr__ctx *c, const expr__val *a, const expr__val *b,
		      expr__val *out)
{
	size_t n = a->u.s.n + b->u.s.n;	/* both in memory: cannot wrap */
	char *s;

	if (!b->u.s.n || !a->u.s.n) {
		*out = a->u.s.n ? *a : *b;
		return 0;
	}
	if (!(s = expr__arena_alloc(&c->arena, n)))
		return expr__alloc_error(c);
	memcpy(s, a->u.s.p, a->u.s.n);
	memcpy(s + a->u.s.n, b->u.s.p, b->u.s.n);
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_STR;
	out->u.s.p = s;
	out->u.s.n = n;
	return 0;
}

/* The weight of a repeated `times` times followed by b, or
 * SIZE_MAX when over the limit. */
static size_t list_weight(const expr__val *a, size_t times, const expr__val *b)
{
	size_t wa = expr__weight(a), wb = b ? expr__weight(b) : 2;

	if (wa > DAG__ARENA_LIMIT || wb > DAG__ARENA_LIMIT ||
	    (times && wa > DAG__ARENA_LIMIT / times))
		return SIZE_MAX;
	return times * wa + wb;
}

/* The items of a, `times` times, then those of b (b may be NULL). */
static int build_list(expr__ctx *c, const expr__val *a, size_t times,
		      const expr__val *b, bool tuple, expr__val *out)
{
	size_t la = expr__list_len(a), lb = b ? expr__list_len(b) : 0, i, k = 0;
	size_t weight = list_weight(a, times, b);
	expr__val *items = NULL;

	if (weight == SIZE_MAX || expr__arena_charge(&c->arena, weight) ||
	    (times && la > (DAG__ARENA_LIMIT / sizeof(*items)) / times)) {
		c->arena.over = true;
		return expr__alloc_error(c);
	}
	if (la * times + lb &&
	    !(items = expr__arena_alloc(&c->arena, (la * times + lb) * sizeof(*items))))
		return expr__alloc_error(c);
	for (; times; times--)
		for (i = 0; i < la; i++)
			expr__list_at(a, i, &items[k++]);
	for (i = 0; i < lb; i++)
		expr__list_at(b, i, &items[k++]);
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_ARR;
	out->tuple = tuple;
	out->u.l.items = items;
	out->u.l.n = k;
	out->u.l.weight = weight;
	return 0;
}

static int repeat(expr__ctx *c, const expr__val *seq, long long times,
		  expr__val *out)
{
	size_t n, i;
	char *s;

	if (expr__is_list(seq))
		return build_list(c, seq, times > 0 && expr__list_len(seq) ?
				  (size_t)times : 0, NULL,
				  seq->kind == DAG__V_ARR && seq->tuple, out);
	n = seq->u.s.n;
	if (times <= 0 || !n)
		return expr__make_str(c, "", 0, out);
	if ((size_t)times > DAG__ARENA_LIMIT / n) {
		c->arena.over = true;
		return expr__alloc_error(c);
	}
	if (!(s = expr__arena_alloc(&c->arena, n * (size_t)times)))
		return expr__alloc_error(c);
	for (i = 0; i < (size_t)times; i++)
		memcpy(s + i * n, seq->u.s.p, n);
	*out = *seq;
	out->u.s.p = s;
	out->u.s.n = n * (size_t)times;
	return 0;
}

static bool is_int(const expr__val *v)
{
	return v->kind == DAG__V_INT || v->kind == DAG__V_BOOL;
}

static bool is_seq(const expr__val *v)
{
	return v->kind == DAG__V_STR || expr__is_list(v);
}

static int type_error(expr__ctx *c, uint32_t n, expr__binop op,
		      const expr__val *a, const expr__val *b)
{
	char snip[128];

	if (op == DAG__OP_MUL && (is_seq(a) || is_seq(b)))
		return expr__rt_error(c,
			"can't multiply sequence by non-int of type '%s' (in `%s`)",
			expr__type_name(is_seq(a) ? b : a),
			expr__snippet(c->e, n, snip, sizeof(snip)));
	if (op == DAG__OP_ADD && (a->kind == DAG__V_STR || expr__is_list(a)))
		return expr__rt_error(c,
			"can only concatenate %s (not \"%s\") to %s (in `%s`)",
			expr__type_name(a), expr__type_name(b), expr__type_name(a),
			expr__snippet(c->e, n, snip, sizeof(snip)));
	return expr__rt_error(c,
		"unsupported operand type(s) for %s: '%s' and '%s' (in `%s`)",
		op_names[op], expr__type_name(a), expr__type_name(b),
		expr__snippet(c->e, n, snip, sizeof(snip)));
}

int expr__binop_eval(expr__ctx *c, uint32_t n, const expr__val *a,
		    const expr__val *b, expr__val *out)
{
	expr__binop op = (expr__binop)c->e->nodes[n].op;

	if (expr__is_num(a) && expr__is_num(b)) {
		if (a->kind == DAG__V_FLOAT || b->kind == DAG__V_FLOAT)
			return float_op(c, n, op, as_double(a), as_double(b), out);
		return int_op(c, n, op, as_int(a), as_int(b), out);
	}
	if (op == DAG__OP_ADD && a->kind == DAG__V_STR && b->kind == DAG__V_STR)
		return concat_str(c, a, b, out);
	if (op == DAG__OP_ADD && expr__is_list(a) && expr__is_list(b) &&
	    !strcmp(expr__type_name(a), expr__type_name(b)))
		return build_list(c, a, 1, b, a->kind == DAG__V_ARR && a->tuple,
				  out);
	if (op == DAG__OP_MUL && is_seq(a) && is_int(b))
		return repeat(c, a, as_int(b), out);
	if (op == DAG__OP_MUL && is_int(a) && is_seq(b))
		return repeat(c, b, as_int(a), out);
	if (op == DAG__OP_SUB && a->kind == DAG__V_SET && b->kind == DAG__V_SET)
		return expr__set_difference(c, n, a, b, out);
	return type_error(c, n, op, a, b);
}

int expr__unary_eval(expr__ctx *c, uint32_t n, const expr__val *a,
		    expr__val *out)
{
	bool neg = c->e->nodes[n].kind == DAG__N_NEG;
	char snip[128];

	if (a->kind == DAG__V_FLOAT) {
		expr__set_float(out, neg ? -a->u.d : a->u.d);
		return 0;
	}
	if (is_int(a)) {
		if (neg && as_int(a) == LLONG_MIN)
			return op_error(c, n, "integer overflow (result outside the 64-bit range)");
		expr__set_int(out, neg ? -as_int(a) : as_int(a));
		return 0;
	}
	return expr__rt_error(c, "bad operand type for unary %c: '%s' (in `%s`)",
			     neg ? '-' : '+', expr__type_name(a),
			     expr__snippet(c->e, n, snip, sizeof(snip)));
}

/*
 * expr_eval.c — evaluation of a compiled gate expression over one row.
 *
 * A tree walk over the immutable AST; recursion depth is bounded by
 * DAG__MAX_DEPTH, checked at compile time. Values borrow from the row and
 * the expression; anything built (strings, lists) goes to the per-call
 * arena in the expr__ctx on the caller's stack, so concurrent evaluations
 * share nothing mutable.
 */
#include <string.h>

#include "expr/expr_internal.h"

static void set_bool(expr__val *out, bool b)
{
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_BOOL;
	out->u.b = b;
}

static const expr__node *node(const expr__ctx *c, uint32_t n)
{
	return &c->e->nodes[n];
}

static int eval_literal(expr__ctx *c, uint32_t n, expr__val *out)
{
	const expr__node *x = node(c, n);

	memset(out, 0, sizeof(*out));
	switch (x->kind) {
	case DAG__N_BOOL:
		out->kind = DAG__V_BOOL;
		out->u.b = x->u.i != 0;
		break;
	case DAG__N_INT:
		out->kind = DAG__V_INT;
		out->u.i = x->u.i;
		break;
	case DAG__N_FLOAT:
		out->kind = DAG__V_FLOAT;
		out->u.d = x->u.d;
		break;
	case DAG__N_STR:
		out->kind = DAG__V_STR;
		out->u.s.p = c->e->pool + x->u.s.off;
		out->u.s.n = x->u.s.len;
		break;
	case DAG__N_ROW:
		out->kind = DAG__V_DICT;
		out->u.j = c->row;
		break;
	default:
		out->kind = DAG__V_NONE;
		break;
	}
	return 0;
}

/* "fields: a, b, c", or "12 fields" when that would be long. */
static const char *fields_hint(const json_t *o, char *buf, size_t cap)
{
	void *it = json_object_iter((json_t *)o);
	size_t len, used;

	if (!it)
		return "it has no fields";
	used = (size_t)snprintf(buf, cap, "fields: ");
	for (; it; it = json_object_iter_next((json_t *)o, it)) {
		len = json_object_iter_key_len(it);
		if (used + len + 3 >= cap || json_object_size(o) > 20) {
			snprintf(buf, cap, "%zu fields", json_object_size(o));
			return buf;
		}
		used += (size_t)snprintf(buf + used, cap - used, "%s%.*s",
					 used > 8 ? ", " : "", (int)len,
					 json_object_iter_key(it));
	}
	return buf;
}

static int missing_field(expr__ctx *c, uint32_t n, const json_t *o,
			 const expr__val *key)
{
	char where[128], hint[200];
	core_buf k = { 0 };
	int rc;

	expr__append_str(&k, key, true);
	rc = expr__rt_error(c, "field %.100s%s not found in %s (%s)",
			   k.data ? k.data : "?", k.len > 100 ? "..." : "",
			   expr__snippet(c->e, node(c, n)->a, where, sizeof(where)),
			   fields_hint(o, hint, sizeof(hint)));
	core_buf_release(&k);
	return rc;
}

/* A key a dict built by the expression lacks. */
static int missing_key(expr__ctx *c, uint32_t n, const expr__val *key)
{
	char where[128];
	core_buf k = { 0 };
	int rc;

	expr__append_str(&k, key, true);
	rc = expr__rt_error(c, "key %.100s%s not found in `%s`",
			   k.data ? k.data : "?", k.len > 100 ? "..." : "",
			   expr__snippet(c->e, node(c, n)->a, where, sizeof(where)));
	core_buf_release(&k);
	return rc;
}

/* The code point at index i of a UTF-8 string, as a view. */
static void str_at(const expr__val *s, long long i, expr__val *out)
{
	size_t at = core_utf8_prefix(s->u.s.p, s->u.s.n, (size_t)i);

	*out = *s;
	out->u.s.p = s->u.s.p + at;
	out->u.s.n = core_utf8_prefix(out->u.s.p, s->u.s.n - at, 1);
}

static int index_seq(expr__ctx *c, uint32_t n, const expr__val *seq,
		     const expr__val *idx, expr__val *out)
{
	bool str = seq->kind == DAG__V_STR;
	long long len, i;
	char where[128];

	if (idx->kind != DAG__V_INT && idx->kind != DAG__V_BOOL)
		return expr__rt_error(c, "%s indices must be integers, not '%s' (in `%s`)",
			expr__type_name(seq), expr__type_name(idx),
			expr__snippet(c->e, n, where, sizeof(where)));
	i = idx->kind == DAG__V_INT ? idx->u.i : idx->u.b;
	len = (long long)(str ? core_utf8_count(seq->u.s.p, seq->u.s.n) :
			  expr__list_len(seq));
	if (i < 0)
		i += len;
	if (i < 0 || i >= len)
		return expr__rt_error(c, "index %lld out of range for %s (length %lld)",
			idx->kind == DAG__V_INT ? idx->u.i : idx->u.b,
			expr__snippet(c->e, node(c, n)->a, where, sizeof(where)), len);
	if (str)
		str_at(seq, i, out);
	else
		expr__list_at(seq, (size_t)i, out);
	return 0;
}

static int eval_subscript(expr__ctx *c, uint32_t n, expr__val *out)
{
	expr__val obj, key;
	char where[128];
	int rc;

	if ((rc = expr__eval_node(c, node(c, n)->a, &obj)) ||
	    (rc = expr__eval_node(c, node(c, n)->b, &key)))
		return rc;
	if (expr__is_dict(&obj)) {
		if (!expr__hashable(&key))
			return expr__unhashable(c, n, &key);
		if (expr__lookup(&obj, &key, out))
			return 0;
		if (obj.kind == DAG__V_DICT)
			return missing_field(c, n, obj.u.j, &key);
		return missing_key(c, n, &key);
	}
	if (obj.kind == DAG__V_STR || expr__is_list(&obj))
		return index_seq(c, n, &obj, &key, out);
	return expr__rt_error(c, "cannot subscript `%s`: '%s' object is not subscriptable",
		expr__snippet(c->e, node(c, n)->a, where, sizeof(where)),
		expr__type_name(&obj));
}

/* row.get(key[, default]): Python evaluates the default eagerly. */
static int eval_get(expr__ctx *c, uint32_t n, expr__val *out)
{
	const expr__node *x = node(c, n);
	const json_t *j = NULL;
	expr__val key;
	int rc;

	if ((rc = expr__eval_node(c, x->a, &key)))
		return rc;
	if (!expr__hashable(&key))
		return expr__unhashable(c, n, &key);
	if (x->b != DAG__NONE && (rc = expr__eval_node(c, x->b, out)))
		return rc;
	if (key.kind == DAG__V_STR)
		j = json_object_getn(c->row, key.u.s.p, key.u.s.n);
	if (j)
		expr__from_json(j, out);
	else if (x->b == DAG__NONE)
		memset(out, 0, sizeof(*out));	/* None */
	return 0;
}

/* `left in [a, b, ...]` without building the list; every item is still
 * evaluated, as Python would. */
static int member_of_literal(expr__ctx *c, uint32_t items, const expr__val *left,
			     bool *res)
{
	expr__val item;
	uint32_t k;
	int rc;

	*res = false;
	for (k = node(c, items)->a; k != DAG__NONE; k = node(c, k)->next) {
		if ((rc = expr__eval_node(c, k, &item)))
			return rc;
		*res = *res || expr__equal(left, &item);
	}
	return 0;
}

static int eval_chain(expr__ctx *c, uint32_t n, expr__val *out)
{
	expr__val left, right;
	uint32_t k, rhs;
	expr__cmpop op;
	bool res = true;
	int rc;

	if ((rc = expr__eval_node(c, node(c, n)->a, &left)))
		return rc;
	for (k = node(c, node(c, n)->a)->next; res && k != DAG__NONE;
	     k = node(c, k)->next) {
		op = (expr__cmpop)node(c, k)->op;
		rhs = node(c, k)->a;
		if ((op == DAG__CMP_IN || op == DAG__CMP_NOT_IN) &&
		    node(c, k)->next == DAG__NONE &&
		    (node(c, rhs)->kind == DAG__N_LIST ||
		     node(c, rhs)->kind == DAG__N_TUPLE)) {
			if ((rc = member_of_literal(c, rhs, &left, &res)))
				return rc;
			res = res == (op == DAG__CMP_IN);
			break;
		}
		if ((rc = expr__eval_node(c, rhs, &right)) ||
		    (rc = expr__compare(c, n, op, &left, &right, &res)))
			return rc;
		left = right;
	}
	set_bool(out, res);
	return 0;
}

/* and/or return the deciding operand, as in Python. */
static int eval_logic(expr__ctx *c, uint32_t n, expr__val *out)
{
	bool is_and = node(c, n)->kind == DAG__N_AND;
	uint32_t k;
	int rc;

	for (k = node(c, n)->a; k != DAG__NONE; k = node(c, k)->next) {
		if ((rc = expr__eval_node(c, k, out)))
			return rc;
		if (expr__truthy(out) != is_and)
			break;
	}
	return 0;
}

/* The items of a list, tuple, set or dict node, evaluated in order, and
 * their weight (2 for the container, 2 + each item's); one over the arena
 * limit is an allocation error. */
static int eval_items(expr__ctx *c, uint32_t n, expr__val **items, size_t *weight)
{
	size_t count = node(c, n)->count, i = 0;
	uint32_t k;
	int rc;

	*items = NULL;
	*weight = 2;
	if (count && !(*items = expr__arena_alloc(&c->arena, count * sizeof(**items))))
		return expr__alloc_error(c);
	for (k = node(c, n)->a; k != DAG__NONE && i < count; k = node(c, k)->next) {
		if ((rc = expr__eval_node(c, k, &(*items)[i])))
			return rc;
		*weight += 2 + expr__weight(&(*items)[i++]);
		if (*weight > DAG__ARENA_LIMIT) {
			c->arena.over = true;
			return expr__alloc_error(c);
		}
	}
	return 0;
}

static int eval_seq(expr__ctx *c, uint32_t n, expr__val *out)
{
	expr__val *items;
	size_t weight;
	int rc;

	if ((rc = eval_items(c, n, &items, &weight)))
		return rc;
	if (expr__arena_charge(&c->arena, weight))
		return expr__alloc_error(c);
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_ARR;
	out->tuple = node(c, n)->kind == DAG__N_TUPLE;
	out->u.l.items = items;
	out->u.l.n = node(c, n)->count;
	out->u.l.weight = weight;
	return 0;
}

/* {a, b} and {k: v}: every item evaluated in order, then the set or dict
 * built (Python's order: an unhashable item fails after all are
 * evaluated). */
static int eval_coll(expr__ctx *c, uint32_t n, expr__val *out)
{
	size_t count = node(c, n)->count, weight;
	bool map = node(c, n)->kind == DAG__N_DICT;
	expr__val *items;
	int rc;

	if ((rc = eval_items(c, n, &items, &weight)))
		return rc;
	return expr__make_coll(c, n, map ? DAG__V_MAP : DAG__V_SET, items,
			      map ? count / 2 : count, out);
}

static int eval_unary(expr__ctx *c, uint32_t n, expr__val *out)
{
	const expr__node *x = node(c, n);
	expr__val a;
	int rc;

	if (x->kind == DAG__N_CALL && x->a == DAG__NONE)
		return expr__call_builtin(c, n, NULL, out);
	if ((rc = expr__eval_node(c, x->a, &a)))
		return rc;
	if (x->kind == DAG__N_NOT) {
		set_bool(out, !expr__truthy(&a));
		return 0;
	}
	if (x->kind == DAG__N_CALL)
		return expr__call_builtin(c, n, &a, out);
	return expr__unary_eval(c, n, &a, out);
}

static int eval_binop(expr__ctx *c, uint32_t n, expr__val *out)
{
	expr__val a, b;
	int rc;

	if ((rc = expr__eval_node(c, node(c, n)->a, &a)) ||
	    (rc = expr__eval_node(c, node(c, n)->b, &b)))
		return rc;
	return expr__binop_eval(c, n, &a, &b, out);
}

static int eval_ternary(expr__ctx *c, uint32_t n, expr__val *out)
{
	const expr__node *x = node(c, n);
	expr__val cond;
	int rc;

	if ((rc = expr__eval_node(c, x->b, &cond)))
		return rc;
	return expr__eval_node(c, expr__truthy(&cond) ? x->a : x->c, out);
}

int expr__eval_node(expr__ctx *c, uint32_t n, expr__val *out)
{
	switch ((expr__node_kind)node(c, n)->kind) {
	case DAG__N_SUBSCRIPT:
		return eval_subscript(c, n, out);
	case DAG__N_GET:
		return eval_get(c, n, out);
	case DAG__N_CALL:
	case DAG__N_NEG:
	case DAG__N_POS:
	case DAG__N_NOT:
		return eval_unary(c, n, out);
	case DAG__N_BINOP:
		return eval_binop(c, n, out);
	case DAG__N_AND:
	case DAG__N_OR:
		return eval_logic(c, n, out);
	case DAG__N_CHAIN:
		return eval_chain(c, n, out);
	case DAG__N_LIST:
	case DAG__N_TUPLE:
		return eval_seq(c, n, out);
	case DAG__N_SET:
	case DAG__N_DICT:
		return eval_coll(c, n, out);
	case DAG__N_TERNARY:
		return eval_ternary(c, n, out);
	case DAG__N_CMP:
		return core_err_set(c->err, CORE_EINTERNAL,
				    "comparison outside a chain");
	default:
		return eval_literal(c, n, out);
	}
}

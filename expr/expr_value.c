/*
 * expr_value.c — runtime values of gate expressions: the evaluation arena,
 * conversion from the row's JSON, truthiness and Python 3 equality.
 *
 * bool is a subtype of int, as in Python: True == 1, True + 1 == 2 and
 * ['a', 'b'][True] == 'b'. JSON true/false become bools, null becomes None.
 */
#include <stdalign.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "expr/expr_internal.h"

struct expr__chunk {
	expr__chunk *next;
	size_t cap, used;
	max_align_t data[];
};

#define ALIGN_UP(n) (((n) + alignof(max_align_t) - 1) & \
		     ~(size_t)(alignof(max_align_t) - 1))

/* NULL when out of memory or over DAG__ARENA_LIMIT (a->over is set). */
void *expr__arena_alloc(expr__arena *a, size_t size)
{
	expr__chunk *ch = a->head;
	size_t cap;
	void *p;

	size = ALIGN_UP(size ? size : 1);
	if (size > DAG__ARENA_LIMIT || a->total + size > DAG__ARENA_LIMIT) {
		a->over = true;
		return NULL;
	}
	if (!ch || ch->cap - ch->used < size) {
		cap = ch ? ch->cap * 2 : 1024;
		if (cap < size)
			cap = size;
		ch = malloc(sizeof(*ch) + cap);
		if (!ch)
			return NULL;
		ch->next = a->head;
		ch->cap = cap;
		ch->used = 0;
		a->head = ch;
	}
	p = (char *)ch->data + ch->used;
	ch->used += size;
	a->total += size;
	return p;
}

int expr__arena_charge(expr__arena *a, size_t weight)
{
	if (weight > DAG__ARENA_LIMIT || a->total + weight > DAG__ARENA_LIMIT) {
		a->over = true;
		return -1;
	}
	a->total += weight;
	return 0;
}

void expr__arena_release(expr__arena *a)
{
	expr__chunk *ch, *next;

	for (ch = a->head; ch; ch = next) {
		next = ch->next;
		free(ch);
	}
	a->head = NULL;
	a->total = 0;
	a->over = false;
}

void expr__set_int(expr__val *out, long long i)
{
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_INT;
	out->u.i = i;
}

void expr__set_float(expr__val *out, double d)
{
	memset(out, 0, sizeof(*out));
	out->kind = DAG__V_FLOAT;
	out->u.d = d;
}

void expr__from_json(const json_t *j, expr__val *out)
{
	memset(out, 0, sizeof(*out));
	switch (j ? json_typeof(j) : JSON_NULL) {
	case JSON_OBJECT:
		out->kind = DAG__V_DICT;
		out->u.j = j;
		break;
	case JSON_ARRAY:
		out->kind = DAG__V_JARR;
		out->u.j = j;
		break;
	case JSON_STRING:
		out->kind = DAG__V_STR;
		out->u.s.p = json_string_value(j);
		out->u.s.n = json_string_length(j);
		break;
	case JSON_INTEGER:
		out->kind = DAG__V_INT;
		out->u.i = json_integer_value(j);
		break;
	case JSON_REAL:
		out->kind = DAG__V_FLOAT;
		out->u.d = json_real_value(j);
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		out->kind = DAG__V_BOOL;
		out->u.b = json_is_true(j);
		break;
	case JSON_NULL:
		out->kind = DAG__V_NONE;
		break;
	}
}

const char *expr__type_name(const expr__val *v)
{
	switch (v->kind) {
	case DAG__V_NONE: return "NoneType";
	case DAG__V_BOOL: return "bool";
	case DAG__V_INT: return "int";
	case DAG__V_FLOAT: return "float";
	case DAG__V_STR: return "str";
	case DAG__V_JARR: return "list";
	case DAG__V_ARR: return v->tuple ? "tuple" : "list";
	case DAG__V_DICT: return "dict";
	case DAG__V_SET: return "set";
	case DAG__V_MAP: return "dict";
	}
	return "?";
}

bool expr__is_list(const expr__val *v)
{
	return v->kind == DAG__V_JARR || v->kind == DAG__V_ARR;
}

bool expr__is_num(const expr__val *v)
{
	return v->kind == DAG__V_BOOL || v->kind == DAG__V_INT ||
	       v->kind == DAG__V_FLOAT;
}

size_t expr__list_len(const expr__val *v)
{
	return v->kind == DAG__V_JARR ? json_array_size(v->u.j) : v->u.l.n;
}

void expr__list_at(const expr__val *v, size_t i, expr__val *out)
{
	if (v->kind == DAG__V_JARR)
		expr__from_json(json_array_get(v->u.j, i), out);
	else
		*out = v->u.l.items[i];
}

/* Stops early once over budget; budget - w never wraps. */
static size_t json_weight(const json_t *j, size_t budget)
{
	size_t w = 2, i;
	void *it;

	switch (json_typeof(j)) {
	case JSON_STRING:
		return 2 + json_string_length(j);
	case JSON_ARRAY:
		for (i = 0; i < json_array_size(j) && w <= budget; i++)
			w += 2 + json_weight(json_array_get(j, i), budget - w);
		return w;
	case JSON_OBJECT:
		it = json_object_iter((json_t *)j);
		for (; it && w <= budget; it = json_object_iter_next((json_t *)j, it))
			w += 4 + json_object_iter_key_len(it) +
			     json_weight(json_object_iter_value(it), budget - w);
		return w;
	default:
		return 8;
	}
}

size_t expr__weight(const expr__val *v)
{
	switch (v->kind) {
	case DAG__V_STR:
		return 2 + v->u.s.n;
	case DAG__V_ARR:
	case DAG__V_SET:
	case DAG__V_MAP:
		return v->u.l.weight;
	case DAG__V_JARR:
	case DAG__V_DICT:
		return json_weight(v->u.j, DAG__ARENA_LIMIT);
	default:
		return 8;
	}
}

bool expr__truthy(const expr__val *v)
{
	switch (v->kind) {
	case DAG__V_NONE: return false;
	case DAG__V_BOOL: return v->u.b;
	case DAG__V_INT: return v->u.i != 0;
	case DAG__V_FLOAT: return v->u.d != 0.0;
	case DAG__V_STR: return v->u.s.n != 0;
	case DAG__V_JARR:
	case DAG__V_ARR: return expr__list_len(v) != 0;
	case DAG__V_DICT: return json_object_size(v->u.j) != 0;
	case DAG__V_SET:
	case DAG__V_MAP: return v->u.l.n != 0;
	}
	return false;
}

static bool is_tuple(const expr__val *v)
{
	return v->kind == DAG__V_ARR && v->tuple;
}

static bool list_equal(const expr__val *a, const expr__val *b)
{
	size_t i, n = expr__list_len(a);
	expr__val x, y;

	if (is_tuple(a) != is_tuple(b) || n != expr__list_len(b))
		return false;
	for (i = 0; i < n; i++) {
		expr__list_at(a, i, &x);
		expr__list_at(b, i, &y);
		if (!expr__equal(&x, &y))
			return false;
	}
	return true;
}

/* Python 3 ==: numbers by value across bool/int/float, containers
 * element-wise (sets and dicts whatever their order), different types
 * unequal. */
bool expr__equal(const expr__val *a, const expr__val *b)
{
	if (expr__is_num(a) && expr__is_num(b))
		return expr__num_cmp(a, b) == 0;
	if (expr__is_list(a) && expr__is_list(b))
		return list_equal(a, b);
	if ((expr__is_dict(a) && expr__is_dict(b)) ||
	    (a->kind == DAG__V_SET && b->kind == DAG__V_SET))
		return (a->kind == DAG__V_DICT && a->u.j == b->u.j) ||
		       expr__coll_equal(a, b);
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case DAG__V_STR:
		return a->u.s.n == b->u.s.n &&
		       !memcmp(a->u.s.p, b->u.s.p, a->u.s.n);
	default:
		return true;	/* None */
	}
}

const char *expr__snippet(const expr_code *e, uint32_t n, char *buf,
			 size_t cap)
{
	const expr__node *node = &e->nodes[n];
	size_t len = node->end - node->start;

	if (len + 1 > cap) {
		len = core_utf8_cut(e->src + node->start, cap - 4);
		memcpy(buf, e->src + node->start, len);
		memcpy(buf + len, "...", 4);
		return buf;
	}
	memcpy(buf, e->src + node->start, len);
	buf[len] = '\0';
	return buf;
}

int expr__rt_error(expr__ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	core_err_vset(c->err, CORE_EEXPR, fmt, ap);
	va_end(ap);
	return CORE_EEXPR;
}

int expr__alloc_error(expr__ctx *c)
{
	if (c->arena.over)
		return expr__rt_error(c,
			"expression builds values larger than %u bytes",
			DAG__ARENA_LIMIT);
	return core_err_set(c->err, CORE_ENOMEM, "out of memory");
}

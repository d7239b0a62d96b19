/*
 * expr_repr.c — Python str()/repr() of runtime values (for str(), route
 * keys and messages) and conversion of values to JSON.
 *
 * Floats are printed as Python's repr does, by core_format_double_py (the
 * prompt templates print them with it too): 1.5, 100.0, 1e+16, 1e-05.
 */
#include <string.h>

#include "expr/expr_internal.h"

static int append_repr_str(core_buf *b, const char *s, size_t n)
{
	char quote = '\'';
	int rc = 0;
	size_t i;

	if (memchr(s, '\'', n) && !memchr(s, '"', n))
		quote = '"';
	rc |= core_buf_putc(b, quote);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == (unsigned char)quote || ch == '\\')
			rc |= core_buf_printf(b, "\\%c", ch);
		else if (ch == '\n')
			rc |= core_buf_puts(b, "\\n");
		else if (ch == '\r')
			rc |= core_buf_puts(b, "\\r");
		else if (ch == '\t')
			rc |= core_buf_puts(b, "\\t");
		else if (ch < 0x20 || ch == 0x7F)
			rc |= core_buf_printf(b, "\\x%02x", ch);
		else
			rc |= core_buf_putc(b, (char)ch);
	}
	rc |= core_buf_putc(b, quote);
	return rc ? CORE_ENOMEM : 0;
}

static int append_list(core_buf *b, const expr__val *v)
{
	bool tuple = v->kind == DAG__V_ARR && v->tuple;
	size_t i, n = expr__list_len(v);
	expr__val x;
	int rc;

	rc = core_buf_putc(b, tuple ? '(' : '[');
	for (i = 0; !rc && i < n; i++) {
		expr__list_at(v, i, &x);
		if (i)
			rc = core_buf_puts(b, ", ");
		if (!rc)
			rc = expr__append_str(b, &x, true);
	}
	if (!rc && tuple && n == 1)
		rc = core_buf_putc(b, ',');
	return rc ? rc : core_buf_putc(b, tuple ? ')' : ']');
}

/* A dict (the row's or a built one) or a set; Python writes an empty set
 * as set(). */
static int append_coll(core_buf *b, const expr__val *v)
{
	bool set = v->kind == DAG__V_SET;
	size_t i, n = set ? v->u.l.n : expr__dict_len(v);
	expr__val k, x;
	void *it = NULL;
	int rc;

	if (set && !n)
		return core_buf_puts(b, "set()");
	rc = core_buf_putc(b, '{');
	for (i = 0; !rc && i < n; i++) {
		expr__coll_at(v, i, &it, &k, set ? NULL : &x);
		if (i)
			rc = core_buf_puts(b, ", ");
		if (!rc)
			rc = expr__append_str(b, &k, true);
		if (!rc && !set && !(rc = core_buf_puts(b, ": ")))
			rc = expr__append_str(b, &x, true);
	}
	return rc ? rc : core_buf_putc(b, '}');
}

int expr__append_str(core_buf *b, const expr__val *v, bool repr)
{
	char num[40];

	switch (v->kind) {
	case DAG__V_NONE:
		return core_buf_puts(b, "None");
	case DAG__V_BOOL:
		return core_buf_puts(b, v->u.b ? "True" : "False");
	case DAG__V_INT:
		return core_buf_printf(b, "%lld", v->u.i);
	case DAG__V_FLOAT:
		core_format_double_py(v->u.d, num, sizeof(num));
		return core_buf_puts(b, num);
	case DAG__V_STR:
		if (repr)
			return append_repr_str(b, v->u.s.p, v->u.s.n);
		return core_buf_append(b, v->u.s.p, v->u.s.n);
	case DAG__V_JARR:
	case DAG__V_ARR:
		return append_list(b, v);
	case DAG__V_DICT:
	case DAG__V_SET:
	case DAG__V_MAP:
		return append_coll(b, v);
	}
	return CORE_EINTERNAL;
}

static json_t *list_to_json(const expr__val *v)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr && i < v->u.l.n; i++) {
		if (json_array_append_new(arr, expr__to_json(&v->u.l.items[i]))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* A set becomes an array (in the order written), a dict an object; a
 * dict with a key that is not a string has no JSON form. */
static json_t *coll_to_json(const expr__val *v)
{
	bool set = v->kind == DAG__V_SET;
	json_t *out = set ? json_array() : json_object();
	size_t i;
	int rc;

	for (i = 0; out && i < v->u.l.n; i++) {
		const expr__val *k = &v->u.l.items[set ? i : 2 * i];

		if (set)
			rc = json_array_append_new(out, expr__to_json(k));
		else if (k->kind != DAG__V_STR)
			rc = -1;
		else
			rc = json_object_setn_new(out, k->u.s.p, k->u.s.n,
				expr__to_json(&v->u.l.items[2 * i + 1]));
		if (rc) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

json_t *expr__to_json(const expr__val *v)
{
	switch (v->kind) {
	case DAG__V_NONE:
		return json_null();
	case DAG__V_BOOL:
		return json_boolean(v->u.b);
	case DAG__V_INT:
		return json_integer(v->u.i);
	case DAG__V_FLOAT:
		return json_real(v->u.d);	/* NULL for NaN and inf */
	case DAG__V_STR:
		return json_stringn(v->u.s.p, v->u.s.n);
	case DAG__V_JARR:
	case DAG__V_DICT:
		return json_deep_copy(v->u.j);
	case DAG__V_ARR:
		return list_to_json(v);
	case DAG__V_SET:
	case DAG__V_MAP:
		return coll_to_json(v);
	}
	return NULL;
}

/*
 * eval.c — the value of a template expression for one render: paths into
 * the row, the lookup and loop variables (a missing key is "undefined",
 * which only default and the tests may meet: anything else fails with
 * the reason, as Jinja's StrictUndefined does), loop attributes, list
 * literals, the mapping methods, filters, tests, not/and/or and
 * comparisons with Python's rules.
 */
#define _GNU_SOURCE	/* memmem */
#include <stdio.h>
#include <string.h>

#include "plugins/template/template_internal.h"

void tpl__val_own(tpl__val *x, json_t *own)
{
	json_decref(x->own);
	x->own = own;
	x->v = own;
}

int tpl__path_step(core_buf *b, const json_t *key, bool first)
{
	const char *s = json_string_value(key);
	size_t n = json_string_length(key);

	if (json_is_integer(key))
		return core_buf_printf(b, "[%" JSON_INTEGER_FORMAT "]",
				       json_integer_value(key));
	if (first)
		return core_buf_append(b, s, n);
	if (n && tpl__ident_len(s, n) == n)
		return core_buf_printf(b, ".%s", s);
	return core_buf_printf(b, "['%s']", s);
}

/* ----------------------------------------------------------------- paths */

/* Where a path starts, for messages: "the row", "the lookup", "loop
 * variable 'x'" or the expression's text. */
static void root_label(const tpl__ex *e, char *buf, size_t cap)
{
	switch (e->root) {
	case TPL__ROOT_ROW:
		snprintf(buf, cap, "the row");
		break;
	case TPL__ROOT_LOOKUP:
		snprintf(buf, cap, "the lookup");
		break;
	case TPL__ROOT_VAR:
		snprintf(buf, cap, "loop variable '%s'", e->name);
		break;
	case TPL__ROOT_EXPR:
		snprintf(buf, cap, "'%s'", e->a->text);
		break;
	}
}

/* The start of a path's display: nothing for the row (its fields are
 * named alone), else the root's name. */
static int root_path(const tpl__ex *e, core_buf *p)
{
	switch (e->root) {
	case TPL__ROOT_ROW:
		return 0;
	case TPL__ROOT_LOOKUP:
		return core_buf_puts(p, "lookup");
	case TPL__ROOT_VAR:
		return core_buf_puts(p, e->name);
	case TPL__ROOT_EXPR:
		return core_buf_puts(p, e->a->text);
	}
	return 0;
}

/* Whether .name on a mapping is, in Jinja, one of its methods rather
 * than the key: Python's attributes come first. ELSPETH gives templates
 * the row as a PipelineRow (its fields first, then get, keys, to_dict,
 * contract) and everything else (the lookup, objects in the row) as
 * dicts. */
static bool jinja_method(const tpl__ex *e, size_t i, const json_t *key)
{
	static const char *const dict_attrs[] = {
		"clear", "copy", "fromkeys", "get", "items", "keys", "pop",
		"popitem", "setdefault", "update", "values", NULL
	};
	static const char *const row_attrs[] = {
		"get", "keys", "to_dict", "contract", NULL
	};
	const char *const *a = e->root == TPL__ROOT_ROW && i == 0 ? row_attrs :
			       dict_attrs;

	if (!e->steps[i].attr)
		return false;
	for (; *a; a++)
		if (!strcmp(*a, json_string_value(key)))
			return true;
	return false;
}

/* The k-th character (0 <= k < its length) of string s, made. */
static int char_at(tpl__rx *rx, const json_t *s, long long k, json_t **made)
{
	const char *p = json_string_value(s);
	size_t n = json_string_length(s);
	size_t at = core_utf8_prefix(p, n, (size_t)k);

	*made = json_stringn(p + at, core_utf8_prefix(p + at, n - at, 1));
	return *made ? 0 : core_err_set(rx->err, CORE_ENOMEM, "out of memory");
}

/* Messages of a step: the path up to and with it (p, plen), before it
 * (prev) and where the path starts. */
typedef struct step_msg {
	const char *p;
	int plen, prev;
	char where[160];
} step_msg;

/* v[k] of a list, or the k-th character of a string (made into *made);
 * negative from the end; out of range is missing. */
static int index_step(tpl__rx *rx, const step_msg *m, const json_t *v,
		      long long k, const json_t **next, json_t **made)
{
	bool str = json_is_string(v);
	long long n = str ? (long long)core_utf8_count(json_string_value(v),
						       json_string_length(v)) :
			    (long long)json_array_size(v);
	int rc = 0;

	if (k < 0)
		k += n;
	if (k >= 0 && k < n && !str)
		*next = json_array_get(v, (size_t)k);
	else if (k >= 0 && k < n && !(rc = char_at(rx, v, k, made)))
		*next = *made;
	if (!rc && !*next)
		core_err_set(&rx->miss, CORE_EDATA, "template field '%.*s' is not "
			     "in %s ('%.*s' has %lld %s)", m->plen, m->p, m->where,
			     m->prev, m->p, n, str ? "characters" : "items");
	return rc;
}

/* One step from v by key (a string or an integer). *next NULL: missing,
 * with the reason in rx->miss; a character of a string is made into
 * *made (*next is it). p holds the path up to v; the step is appended. */
static int step(tpl__rx *rx, const tpl__ex *e, size_t i, const json_t *v,
		const json_t *key, core_buf *p, const json_t **next,
		json_t **made)
{
	step_msg m = { .prev = (int)p->len };
	const char *k = json_string_value(key);

	*next = NULL;
	if (tpl__path_step(p, key, e->root == TPL__ROOT_ROW && !m.prev))
		return core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	m.p = p->data;
	m.plen = (int)p->len;
	root_label(e, m.where, sizeof(m.where));
	if (json_is_null(v)) {
		core_err_set(&rx->miss, CORE_EDATA, "template field '%.*s' is not "
			     "in %s ('%.*s' is null)", m.plen, m.p, m.where,
			     m.prev, m.p);
		return 0;
	}
	if (!k && !json_is_integer(key))
		return core_err_set(rx->err, CORE_EDATA, "template field '%.*s': a "
				    "key must be a string or an integer, not %s",
				    m.plen, m.p, core_json_kind(key));
	if (k ? !json_is_object(v) : !json_is_array(v) && !json_is_string(v))
		return core_err_set(rx->err, CORE_EDATA, "template field '%.*s': "
				    "'%.*s' is %s, not %s", m.plen, m.p, m.prev,
				    m.p, core_json_kind(v),
				    k ? "an object" : "an array");
	if (!k)
		return index_step(rx, &m, v, json_integer_value(key), next, made);
	if (jinja_method(e, i, key))
		return core_err_set(rx->err, CORE_EDATA, "template field '%.*s': in "
				    "Jinja .%s of a mapping is its method, not the "
				    "key; write ['%s']", m.plen, m.p, k, k);
	*next = json_object_getn(v, k, json_string_length(key));
	if (!*next)
		core_err_set(&rx->miss, CORE_EDATA, "template field '%.*s' is not "
			     "in %s", m.plen, m.p, m.where);
	return 0;
}

static int eval_path(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	core_buf p = { 0 };
	tpl__val key = { 0 };
	const json_t *v = NULL;
	int rc = 0;

	switch (e->root) {
	case TPL__ROOT_ROW:
		v = rx->row;
		break;
	case TPL__ROOT_LOOKUP:
		v = rx->lookup;
		break;
	case TPL__ROOT_VAR:
		v = rx->vars[e->slot];
		break;
	case TPL__ROOT_EXPR:
		if ((rc = tpl__eval(rx, e->a, out)) || !out->v)
			return rc;
		v = out->v;
		break;
	}
	if (!v)
		return core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	if (e->nsteps && root_path(e, &p))
		rc = core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && v && i < e->nsteps; i++) {
		const json_t *k = e->steps[i].key;
		json_t *made = NULL;

		if (!k && !(rc = tpl__eval_defined(rx, e->steps[i].dyn, &key)))
			k = key.v;
		if (!rc)
			rc = step(rx, e, i, v, k, &p, &v, &made);
		tpl__val_own(&key, NULL);
		if (made)	/* a character: it replaces what held v */
			tpl__val_own(out, made);
	}
	core_buf_release(&p);
	if (rc || !v) {
		tpl__val_own(out, NULL);
		return rc;
	}
	out->v = v;	/* inside out->own, if the root was built */
	return 0;
}

/* ------------------------------------------------------ other operands */

static int eval_loop(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	const tpl__loop *l = &rx->loops[e->slot];
	json_t *v = NULL;

	switch ((tpl__loop_attr)e->op) {
	case TPL__LOOP_INDEX:
		v = json_integer((json_int_t)l->index0 + 1);
		break;
	case TPL__LOOP_INDEX0:
		v = json_integer((json_int_t)l->index0);
		break;
	case TPL__LOOP_FIRST:
		v = json_boolean(l->index0 == 0);
		break;
	case TPL__LOOP_LAST:
		v = json_boolean(l->index0 + 1 == l->length);
		break;
	case TPL__LOOP_LENGTH:
		v = json_integer((json_int_t)l->length);
		break;
	case TPL__LOOP_REVINDEX:
		v = json_integer((json_int_t)(l->length - l->index0));
		break;
	case TPL__LOOP_REVINDEX0:
		v = json_integer((json_int_t)(l->length - l->index0 - 1));
		break;
	}
	if (!v)
		return core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	tpl__val_own(out, v);
	return 0;
}

static int eval_list(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	json_t *list = json_array();
	tpl__val x = { 0 };
	int rc = 0;

	if (!list)
		return core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < e->nargs; i++) {
		if ((rc = tpl__eval_defined(rx, e->args[i], &x)))
			break;
		if (json_array_append(list, (json_t *)x.v))
			rc = core_err_set(rx->err, CORE_ENOMEM, "out of memory");
		tpl__val_own(&x, NULL);
	}
	if (rc) {
		json_decref(list);
		return rc;
	}
	tpl__val_own(out, list);
	return 0;
}

/* .items() .keys() .values() .get(key[, default]) of a mapping. */
static json_t *mapping_view(const json_t *o, int m)
{
	json_t *out = json_array();
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		json_t *item = m == TPL__M_KEYS ? json_string(k) :
			       m == TPL__M_VALUES ? json_incref(v) :
			       json_pack("[sO]", k, v);

		if (!out || json_array_append_new(out, item)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static int eval_method(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	tpl__val key = { 0 };
	const json_t *hit = NULL;
	json_t *v;
	int rc;

	if ((rc = tpl__eval_defined(rx, e->a, out)))
		return rc;
	if (!json_is_object(out->v)) {
		rc = core_err_set(rx->err, CORE_EDATA, "template: '%s' is %s, not "
				  "a mapping: it has no .%s()", e->a->text,
				  core_json_kind(out->v),
				  e->op == TPL__M_ITEMS ? "items" :
				  e->op == TPL__M_KEYS ? "keys" :
				  e->op == TPL__M_VALUES ? "values" : "get");
		tpl__val_own(out, NULL);
		return rc;
	}
	if (e->op != TPL__M_GET) {
		if (!(v = mapping_view(out->v, e->op)))
			rc = core_err_set(rx->err, CORE_ENOMEM, "out of memory");
		else
			tpl__val_own(out, v);
		return rc;
	}
	if ((rc = tpl__eval_defined(rx, e->args[0], &key))) {
		tpl__val_own(out, NULL);
		return rc;
	}
	if (json_is_string(key.v))
		hit = json_object_getn(out->v, json_string_value(key.v),
				       json_string_length(key.v));
	tpl__val_own(&key, NULL);
	if (hit) {
		out->v = hit;	/* out->own, if any, holds it */
		return 0;
	}
	tpl__val_own(out, NULL);
	if (e->nargs == 2)
		return tpl__eval_defined(rx, e->args[1], out);
	out->v = json_null();
	return 0;
}

static int eval_test(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	bool r;
	int rc;

	if ((rc = tpl__eval(rx, e->a, out)))
		return rc;
	r = e->op == TPL__T_DEFINED ? out->v != NULL :
	    e->op == TPL__T_UNDEFINED ? out->v == NULL :
	    out->v && json_is_null(out->v);
	tpl__val_own(out, json_boolean(r != e->flag));
	return 0;
}

/* and / or give the operand that decided, as Python does. */
static int eval_logic(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	bool is_and = e->kind == TPL__E_AND;
	int rc;

	if ((rc = tpl__eval_defined(rx, e->a, out)))
		return rc;
	if (tpl__truthy(out->v) != is_and)
		return 0;
	tpl__val_own(out, NULL);
	return tpl__eval_defined(rx, e->b, out);
}

/* ----------------------------------------------------------- comparisons */

static const char *const cmp_names[] = {
	"==", "!=", "<", "<=", ">", ">=", "in", "not in"
};

/* `needle in hay`, as Python: a substring, an item, a key. */
static int contains(tpl__rx *rx, const tpl__ex *e, const json_t *needle,
		    const json_t *hay, bool *res)
{
	size_t i;
	json_t *x;

	if (json_is_string(hay) && json_is_string(needle)) {
		*res = !json_string_length(needle) ||
		       memmem(json_string_value(hay), json_string_length(hay),
			      json_string_value(needle),
			      json_string_length(needle));
		return 0;
	}
	if (json_is_array(hay)) {
		*res = false;
		json_array_foreach(hay, i, x)
			if ((*res = tpl__py_eq(needle, x)))
				break;
		return 0;
	}
	if (json_is_object(hay) && !json_is_array(needle) &&
	    !json_is_object(needle)) {
		*res = json_is_string(needle) &&
		       json_object_getn(hay, json_string_value(needle),
					json_string_length(needle));
		return 0;
	}
	if (json_is_string(hay))
		return core_err_set(rx->err, CORE_EDATA, "template: 'in <string>' "
				    "requires a string as left operand, not '%s' "
				    "(in `%s`)", core_py_type(needle), e->text);
	if (json_is_object(hay))
		return core_err_set(rx->err, CORE_EDATA, "template: unhashable "
				    "type: '%s' (in `%s`)", core_py_type(needle),
				    e->text);
	return core_err_set(rx->err, CORE_EDATA, "template: argument of type "
			    "'%s' is not iterable (in `%s`)", core_py_type(hay),
			    e->text);
}

static int compare(tpl__rx *rx, const tpl__ex *e, const json_t *a,
		   const json_t *b, bool *res)
{
	int r;

	switch ((tpl__cmp)e->op) {
	case TPL__CMP_EQ:
	case TPL__CMP_NE:
		*res = tpl__py_eq(a, b) == (e->op == TPL__CMP_EQ);
		return 0;
	case TPL__CMP_IN:
	case TPL__CMP_NOT_IN: {
		int rc = contains(rx, e, a, b, res);

		*res = *res == (e->op == TPL__CMP_IN);
		return rc;
	}
	default:
		break;
	}
	if ((r = tpl__py_order(a, b)) == 2)
		return core_err_set(rx->err, CORE_EDATA, "template: '%s' not "
				    "supported between instances of '%s' and '%s' "
				    "(in `%s`)", cmp_names[e->op], core_py_type(a),
				    core_py_type(b), e->text);
	*res = e->op == TPL__CMP_LT ? r < 0 : e->op == TPL__CMP_LE ? r <= 0 :
	       e->op == TPL__CMP_GT ? r > 0 : r >= 0;
	return 0;
}

static int eval_cmp(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	tpl__val b = { 0 };
	bool res = false;
	int rc;

	if ((rc = tpl__eval_defined(rx, e->a, out)))
		return rc;
	if (!(rc = tpl__eval_defined(rx, e->b, &b)))
		rc = compare(rx, e, out->v, b.v, &res);
	tpl__val_own(&b, NULL);
	tpl__val_own(out, rc ? NULL : json_boolean(res));
	return rc;
}

/* ----------------------------------------------------------------- all */

static int eval(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	int rc;

	switch (e->kind) {
	case TPL__E_LIT:
		out->v = e->lit;
		return 0;
	case TPL__E_PATH:
		return eval_path(rx, e, out);
	case TPL__E_LOOP:
		return eval_loop(rx, e, out);
	case TPL__E_LIST:
		return eval_list(rx, e, out);
	case TPL__E_METHOD:
		return eval_method(rx, e, out);
	case TPL__E_FILTER:
		if ((rc = tpl__eval(rx, e->a, out)))
			return rc;
		return tpl__apply_filter(rx, e, out);
	case TPL__E_TEST:
		return eval_test(rx, e, out);
	case TPL__E_NOT:
		if ((rc = tpl__eval_defined(rx, e->a, out)))
			return rc;
		tpl__val_own(out, json_boolean(!tpl__truthy(out->v)));
		return 0;
	case TPL__E_AND:
	case TPL__E_OR:
		return eval_logic(rx, e, out);
	case TPL__E_CMP:
		return eval_cmp(rx, e, out);
	}
	return core_err_set(rx->err, CORE_EINTERNAL, "template: bad expression");
}

/* On an error, or for a missing value, out holds nothing. */
int tpl__eval(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	int rc;

	*out = (tpl__val){ 0 };
	if ((rc = eval(rx, e, out)) || !out->v)
		tpl__val_own(out, NULL);
	return rc;
}

int tpl__eval_defined(tpl__rx *rx, const tpl__ex *e, tpl__val *out)
{
	int rc = tpl__eval(rx, e, out);

	if (rc || out->v)
		return rc;
	if (rx->err)
		*rx->err = rx->miss;
	return CORE_EDATA;
}

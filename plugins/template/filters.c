/*
 * filters.c — the template filters: upper, lower, trim, length, tojson
 * and default, applied to the value an expression holds.
 */
#include <stdlib.h>

#include "plugins/template/template_internal.h"

static int filter_text(tpl__filter_kind f, tpl__val *x)
{
	core_buf b = { 0 }, o = { 0 };
	const char *p;
	size_t n;
	json_t *s;
	int rc = tpl__py_str(&b, x->v);

	p = b.data ? b.data : "";
	n = b.len;
	if (!rc && f == TPL__F_TRIM) {
		size_t k = tpl__lspace(p, n);

		p += k;
		n = tpl__rstrip(p, n - k);
	} else if (!rc) {
		rc = tpl__append_case(&o, p, n, f == TPL__F_UPPER);
		p = o.data ? o.data : "";
		n = o.len;
	}
	s = rc ? NULL : json_stringn_nocheck(p, n);
	core_buf_release(&b);
	core_buf_release(&o);
	if (!s)
		return CORE_ENOMEM;
	tpl__val_own(x, s);
	return 0;
}

static int filter_length(const tpl__ex *e, tpl__val *x, core_err *err)
{
	json_t *n;

	if (json_is_string(x->v))
		n = json_integer((json_int_t)core_utf8_count(json_string_value(x->v),
						       json_string_length(x->v)));
	else if (json_is_array(x->v))
		n = json_integer((json_int_t)json_array_size(x->v));
	else if (json_is_object(x->v))
		n = json_integer((json_int_t)json_object_size(x->v));
	else
		return core_err_set(err, CORE_EDATA, "template field '%s' | length: "
				    "%s has no length", e->disp, core_json_kind(x->v));
	if (!n)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	tpl__val_own(x, n);
	return 0;
}

static int filter_tojson(const tpl__ex *e, tpl__val *x, core_err *err)
{
	core_buf b = { 0 };
	core_err cerr = { 0 };
	json_t *s = NULL;
	int rc = core_canon_append(&b, x->v, &cerr);

	if (rc == CORE_ENOMEM)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (rc)
		rc = core_err_set(err, rc, "template field '%s' | tojson: %s",
				  e->disp, cerr.msg);
	else if (!(s = json_stringn_nocheck(b.data ? b.data : "", b.len)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	core_buf_release(&b);
	if (!rc)
		tpl__val_own(x, s);
	return rc;
}

/* default(v[, true]): v when x is missing or null (or falsy, with true).
 * Jinja replaces only undefined values; a null field usually means "no
 * value" in a row, which is what a prompt wants replaced. */
static int filter_default(tpl__rx *rx, const tpl__ex *e, tpl__val *x)
{
	if (x->v && !json_is_null(x->v) && (!e->flag || tpl__truthy(x->v)))
		return 0;
	tpl__val_own(x, NULL);
	return tpl__eval_defined(rx, e->args[0], x);
}

int tpl__apply_filter(tpl__rx *rx, const tpl__ex *e, tpl__val *x)
{
	if (e->op == TPL__F_DEFAULT)
		return filter_default(rx, e, x);
	if (!x->v) {
		if (rx->err)
			*rx->err = rx->miss;
		return CORE_EDATA;
	}
	switch ((tpl__filter_kind)e->op) {
	case TPL__F_UPPER:
	case TPL__F_LOWER:
	case TPL__F_TRIM:
		if (filter_text((tpl__filter_kind)e->op, x))
			return core_err_set(rx->err, CORE_ENOMEM, "out of memory");
		return 0;
	case TPL__F_LENGTH:
		return filter_length(e, x, rx->err);
	case TPL__F_TOJSON:
		return filter_tojson(e, x, rx->err);
	case TPL__F_DEFAULT:
		break;
	}
	return 0;
}

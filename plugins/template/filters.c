/*
 * filters.c — the template filters: upper, lower, trim, length, tojson
 * and default, applied to the value an expression holds.
 */
#include <stdlib.h>

#include "plugins/template/template_internal.h"

void tpl__val_own(tpl__val *x, json_t *own)
{
	json_decref(x->own);
	x->own = own;
	x->v = own;
}

static int filter_text(const tpl__filter *f, tpl__val *x)
{
	core_buf b = { 0 }, o = { 0 };
	const char *p;
	size_t n;
	json_t *s;
	int rc = tpl__py_str(&b, x->v);

	p = b.data ? b.data : "";
	n = b.len;
	if (!rc && f->kind == TPL__F_TRIM) {
		size_t k = tpl__lspace(p, n);

		p += k;
		n = tpl__rstrip(p, n - k);
	} else if (!rc) {
		rc = tpl__append_case(&o, p, n, f->kind == TPL__F_UPPER);
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

static int filter_length(const tpl__expr *e, tpl__val *x, core_err *err)
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
				    "%s has no length", e->path, core_json_kind(x->v));
	if (!n)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	tpl__val_own(x, n);
	return 0;
}

static int filter_tojson(const tpl__expr *e, tpl__val *x, core_err *err)
{
	core_buf b = { 0 };
	core_err cerr = { 0 };
	json_t *s = NULL;
	int rc = core_canon_append(&b, x->v, &cerr);

	if (rc == CORE_ENOMEM)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (rc)
		rc = core_err_set(err, rc, "template field '%s' | tojson: %s",
				  e->path, cerr.msg);
	else if (!(s = json_stringn_nocheck(b.data ? b.data : "", b.len)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	core_buf_release(&b);
	if (!rc)
		tpl__val_own(x, s);
	return rc;
}

int tpl__apply_filter(const tpl__expr *e, const tpl__filter *f,
		      tpl__val *x, const core_err *miss, core_err *err)
{
	if (f->kind == TPL__F_DEFAULT) {
		if (!x->v || json_is_null(x->v) || (f->falsy && !tpl__truthy(x->v))) {
			tpl__val_own(x, NULL);
			x->v = f->arg;
		}
		return 0;
	}
	if (!x->v) {
		if (err)
			*err = *miss;
		return CORE_EDATA;
	}
	switch (f->kind) {
	case TPL__F_UPPER:
	case TPL__F_LOWER:
	case TPL__F_TRIM:
		if (filter_text(f, x))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		return 0;
	case TPL__F_LENGTH:
		return filter_length(e, x, err);
	case TPL__F_TOJSON:
		return filter_tojson(e, x, err);
	case TPL__F_DEFAULT:
		break;
	}
	return 0;
}

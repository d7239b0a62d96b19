/*
 * render.c — rendering a compiled template for one row: each
 * expression's field looked up, its filters applied, its value printed as
 * Python's str() would.
 */
#include "plugins/template/template_internal.h"

/* Walks the steps. A missing step (or a null before the last step) leaves
 * x->v NULL and the message in *miss; a step into a value of the wrong
 * kind is CORE_EDATA. */
static int lookup(const tpl__expr *e, const json_t *row, tpl__val *x,
		  core_err *miss, core_err *err)
{
	const json_t *v = row;

	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "template: the row is %s, not "
				    "an object", core_json_kind(row));
	for (size_t i = 0; i < e->nsteps; i++) {
		const tpl__step *s = &e->steps[i];
		int plen = (int)s->path_len, prev = i ? (int)e->steps[i - 1].path_len : 0;
		const json_t *next = NULL;

		if (json_is_null(v)) {
			core_err_set(miss, CORE_EDATA, "template field '%.*s' is not in "
				     "the row ('%.*s' is null)", plen, e->path,
				     prev, e->path);
			return 0;
		}
		if (s->key ? !json_is_object(v) : !json_is_array(v))
			return core_err_set(err, CORE_EDATA, "template field '%.*s': "
					    "'%.*s' is %s, not %s", plen, e->path,
					    prev, e->path, core_json_kind(v),
					    s->key ? "an object" : "an array");
		if (s->key) {
			next = json_object_get(v, s->key);
		} else {
			long long n = (long long)json_array_size(v);
			long long k = s->index < 0 ? s->index + n : s->index;

			if (k >= 0 && k < n)
				next = json_array_get(v, (size_t)k);
			else {
				core_err_set(miss, CORE_EDATA, "template field '%.*s' is "
					     "not in the row ('%.*s' has %lld items)",
					     plen, e->path, prev, e->path, n);
				return 0;
			}
		}
		if (!next) {
			core_err_set(miss, CORE_EDATA, "template field '%.*s' is not "
				     "in the row", plen, e->path);
			return 0;
		}
		v = next;
	}
	x->v = v;
	return 0;
}

static int render_expr(const tpl__expr *e, const json_t *row, core_buf *out,
		       core_err *err)
{
	core_err miss = { 0 };
	tpl__val x = { e->literal, NULL };
	int rc = 0;

	if (!e->literal)
		rc = lookup(e, row, &x, &miss, err);
	for (size_t i = 0; !rc && i < e->nfilters; i++)
		rc = tpl__apply_filter(e, &e->filters[i], &x, &miss, err);
	if (!rc && !x.v) {
		if (err)
			*err = miss;
		rc = CORE_EDATA;
	}
	if (!rc && tpl__py_str(out, x.v))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	tpl__val_own(&x, NULL);
	return rc;
}

int tpl_render(const tpl_template *t, const json_t *row,
			core_buf *out, core_err *err)
{
	size_t len0 = out->len;
	int rc = 0;

	for (size_t i = 0; !rc && i < t->nsegs; i++) {
		const tpl__seg *s = &t->segs[i];

		if (s->e)
			rc = render_expr(s->e, row, out, err);
		else if (core_buf_append(out, s->text, s->len))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (rc) {
		out->len = len0;
		if (out->data)
			out->data[len0] = '\0';
	}
	return rc;
}

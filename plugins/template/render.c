/*
 * render.c — rendering a compiled template for one row: text copied,
 * {{ expressions }} printed as Python's str() would, {% if %} branches
 * chosen by Python's truthiness, {% for %} loops over lists, mappings
 * (their keys) and strings (their characters) with loop.index & co.
 *
 * A render is bounded: TPL__MAX_ITERATIONS loop iterations and
 * TPL__MAX_OUTPUT bytes, so a loop over a large row value (or loops
 * nested deep) is a row error, not a hung worker. Recursion is bounded at
 * compile time (blocks TPL__MAX_NEST deep, expressions by their height).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

static int render_block(tpl__rx *rx, const tpl__block *b, core_buf *out,
			size_t len0);

static int check_output(tpl__rx *rx, const core_buf *out, size_t len0)
{
	if (out->len - len0 <= TPL__MAX_OUTPUT)
		return 0;
	return core_err_set(rx->err, CORE_EDATA, "template: the rendered text "
			    "would exceed %u MiB", TPL__MAX_OUTPUT >> 20);
}

static int render_out(tpl__rx *rx, const tpl__node *n, core_buf *out,
		      size_t len0)
{
	tpl__val x;
	int rc;

	if ((rc = tpl__eval_defined(rx, n->e, &x)))
		return rc;
	if (tpl__py_str(out, x.v))
		rc = core_err_set(rx->err, CORE_ENOMEM, "out of memory");
	tpl__val_own(&x, NULL);
	return rc ? rc : check_output(rx, out, len0);
}

static int render_if(tpl__rx *rx, const tpl__node *n, core_buf *out,
		     size_t len0)
{
	tpl__val x;
	bool yes;
	int rc;

	for (size_t i = 0; i < n->nconds; i++) {
		if ((rc = tpl__eval_defined(rx, n->conds[i], &x)))
			return rc;
		yes = tpl__truthy(x.v);
		tpl__val_own(&x, NULL);
		if (yes)
			return render_block(rx, &n->bodies[i], out, len0);
	}
	return render_block(rx, &n->orelse, out, len0);
}

/* Where a {% for %} is, for its errors. */
static const char *where_for(const tpl__node *n, char *buf, size_t cap)
{
	snprintf(buf, cap, "{%% for %%} over '%s'", n->e->text);
	return buf;
}

/* The item'th element of the iterable: an array's item, a mapping's key
 * or a string's character; *own holds what was made for it. */
static int nth(tpl__rx *rx, const json_t *it, size_t i, void **iter,
	       size_t *at, const json_t **item, json_t **own)
{
	*own = NULL;
	if (json_is_array(it)) {
		*item = json_array_get(it, i);
		return 0;
	}
	if (json_is_object(it)) {
		*iter = i ? json_object_iter_next((json_t *)it, *iter) :
			    json_object_iter((json_t *)it);
		*own = json_stringn(json_object_iter_key(*iter),
				    json_object_iter_key_len(*iter));
	} else {
		const char *s = json_string_value(it) + *at;
		size_t k = core_utf8_prefix(s, json_string_length(it) - *at, 1);

		*own = json_stringn(s, k);
		*at += k;
	}
	*item = *own;
	return *own ? 0 : core_err_set(rx->err, CORE_ENOMEM, "out of memory");
}

/* Binds the loop's names to item: one name takes it whole; several
 * unpack a list of exactly as many items. */
static int bind(tpl__rx *rx, const tpl__node *n, const json_t *item)
{
	char where[200];

	if (n->ntargets == 1) {
		rx->vars[n->slot] = item;
		return 0;
	}
	if (!json_is_array(item))
		return core_err_set(rx->err, CORE_EDATA, "template: %s: cannot "
				    "unpack %s into %zu names",
				    where_for(n, where, sizeof(where)),
				    core_json_kind(item), n->ntargets);
	if (json_array_size(item) != n->ntargets)
		return core_err_set(rx->err, CORE_EDATA, "template: %s: cannot "
				    "unpack an array into %zu names (it has %zu "
				    "items)", where_for(n, where, sizeof(where)),
				    n->ntargets, json_array_size(item));
	for (size_t i = 0; i < n->ntargets; i++)
		rx->vars[n->slot + i] = json_array_get(item, i);
	return 0;
}

static size_t iter_length(const json_t *v)
{
	if (json_is_array(v))
		return json_array_size(v);
	if (json_is_object(v))
		return json_object_size(v);
	return core_utf8_count(json_string_value(v), json_string_length(v));
}

static int render_for(tpl__rx *rx, const tpl__node *n, core_buf *out,
		      size_t len0)
{
	tpl__loop *l = &rx->loops[n->level];
	char where[200];
	void *iter = NULL;
	size_t at = 0, len;
	tpl__val x;
	int rc;

	if ((rc = tpl__eval_defined(rx, n->e, &x)))
		return rc;
	if (!json_is_array(x.v) && !json_is_object(x.v) && !json_is_string(x.v)) {
		rc = core_err_set(rx->err, CORE_EDATA, "template: %s: %s is not "
				  "iterable", where_for(n, where, sizeof(where)),
				  core_json_kind(x.v));
		goto out_val;
	}
	/* The else of an empty loop may hold a loop of the same level. */
	if (!(len = iter_length(x.v)))
		rc = render_block(rx, &n->orelse, out, len0);
	for (size_t i = 0; !rc && i < len; i++) {
		const json_t *item;
		json_t *own;

		l->index0 = i;
		l->length = len;
		if (++rx->iterations > TPL__MAX_ITERATIONS) {
			rc = core_err_set(rx->err, CORE_EDATA, "template: more than "
					  "%llu loop iterations in one render",
					  TPL__MAX_ITERATIONS);
			break;
		}
		if (!(rc = nth(rx, x.v, i, &iter, &at, &item, &own)) &&
		    !(rc = bind(rx, n, item)))
			rc = render_block(rx, &n->body, out, len0);
		json_decref(own);
	}
out_val:
	tpl__val_own(&x, NULL);
	return rc;
}

static int render_block(tpl__rx *rx, const tpl__block *b, core_buf *out,
			size_t len0)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < b->n; i++) {
		const tpl__node *n = &b->v[i];

		switch (n->kind) {
		case TPL__N_TEXT:
			if (core_buf_append(out, n->text, n->len))
				rc = core_err_set(rx->err, CORE_ENOMEM, "out of memory");
			else
				rc = check_output(rx, out, len0);
			break;
		case TPL__N_OUT:
			rc = render_out(rx, n, out, len0);
			break;
		case TPL__N_IF:
			rc = render_if(rx, n, out, len0);
			break;
		case TPL__N_FOR:
			rc = render_for(rx, n, out, len0);
			break;
		}
	}
	return rc;
}

int tpl_render_lookup(const tpl_template *t, const json_t *row,
		      const json_t *lookup, core_buf *out, core_err *err)
{
	tpl__rx rx = { .t = t, .row = row, .lookup = lookup, .err = err };
	json_t *empty = NULL;
	size_t len0 = out->len;
	int rc;

	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "template: the row is %s, not "
				    "an object", core_json_kind(row));
	if (lookup && !json_is_object(lookup))
		return core_err_set(err, CORE_EDATA, "template: the lookup is %s, "
				    "not an object", core_json_kind(lookup));
	if (!lookup)
		rx.lookup = empty = json_object();
	rx.vars = calloc(t->nslots ? t->nslots : 1, sizeof(*rx.vars));
	rx.loops = calloc(t->nloops ? t->nloops : 1, sizeof(*rx.loops));
	if (!rx.lookup || !rx.vars || !rx.loops)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = render_block(&rx, &t->root, out, len0);
	free(rx.vars);
	free(rx.loops);
	json_decref(empty);
	if (rc) {
		out->len = len0;
		if (out->data)
			out->data[len0] = '\0';
	}
	return rc;
}

int tpl_render(const tpl_template *t, const json_t *row, core_buf *out,
	       core_err *err)
{
	return tpl_render_lookup(t, row, NULL, out, err);
}

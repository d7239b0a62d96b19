/*
 * variants.c — the options, grouping and first figures that
 * batch_effect_size and batch_experiment_compare share (variants.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aggregation/variants.h"

/* Python's str.isspace for one code point (str.strip's whitespace). */
static bool py_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || (c >= 28 && c <= 32) || c == 0x85 || c == 0xA0 ||
	       c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Whether s.strip() is empty in Python (s is UTF-8). */
static bool blank(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t c = *p;
		int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;

		if (len > 1) {
			c &= 0x3Fu >> (len - 1);
			for (int k = 1; k < len; k++) {
				if ((p[k] & 0xC0) != 0x80)
					return false; /* not UTF-8: not whitespace */
				c = c << 6 | (p[k] & 0x3Fu);
			}
		}
		if (!py_space(c))
			return false;
		p += len;
	}
	return true;
}

/* variant_field or score_field: a string that is not blank. */
static int field_opt(const core_node *opts, const char *key, const char **out,
		     core_err *err)
{
	const core_node *n = core_map_get(opts, key);
	json_t *j;
	bool str;

	if (!n)
		return core_err_missing(err, opts, key, key, "the name of a field");
	if (!(j = core_node_to_json(n)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	str = json_is_string(j);
	json_decref(j);
	if (!str)
		return core_err_at(err, CORE_ECONFIG, n, "%s must be a string (a field name)", key);
	if (blank(n->value))
		return core_err_at(err, CORE_ECONFIG, n, "%s must not be empty", key);
	*out = n->value;
	return 0;
}

static int baseline_opt(plg__variants_cfg *c, const core_node *opts, bool any,
			core_err *err)
{
	const core_node *n = core_map_get(opts, "baseline_variant");
	json_t *j;

	if (!n || core_node_is_null(n))
		return 0;
	if (!(j = c->baseline = core_node_to_json(n)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (json_is_string(j))
		return blank(json_string_value(j)) ?
			core_err_at(err, CORE_ECONFIG, n, "baseline_variant must not be empty") : 0;
	if (!any)
		return core_err_at(err, CORE_ECONFIG, n, "baseline_variant must be a string");
	if (json_is_integer(j) || json_is_boolean(j))
		return 0;
	if (json_is_real(j) && json_real_value(j) == trunc(json_real_value(j)) &&
	    fabs(json_real_value(j)) < 0x1p63) {
		/* pydantic's lax int: 2.0 is 2 */
		c->baseline = json_integer((json_int_t)json_real_value(j));
		json_decref(j);
		return c->baseline ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return core_err_at(err, CORE_ECONFIG, n,
			   "baseline_variant must be a string, an integer or a boolean");
}

int plg__variants_options(plg__variants_cfg *c, const core_node *opts,
			  const plg_option *const *tables, bool any_baseline,
			  core_err *err)
{
	int rc;

	if ((rc = plg__check_options(opts, tables, err)) ||
	    (rc = plg__schema_check(opts, true, err)) ||
	    (rc = field_opt(opts, "variant_field", &c->variant_field, err)) ||
	    (rc = field_opt(opts, "score_field", &c->score_field, err)) ||
	    (rc = baseline_opt(c, opts, any_baseline, err)))
		return rc;
	if (!strcmp(c->variant_field, c->score_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "score_field"),
				   "variant_field and score_field must differ");
	return 0;
}

void plg__variants_cfg_release(plg__variants_cfg *c)
{
	json_decref(c->baseline);
	c->baseline = NULL;
}

/* Python's repr() of a variant, as 0.7.1's messages show it. */
static void put_repr(core_buf *b, const json_t *v)
{
	if (json_is_string(v))
		core_buf_printf(b, "'%s'", json_string_value(v));
	else
		core_py_str(b, v);
}

static void put_rows(core_buf *b, const size_t *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		core_buf_printf(b, "%s%zu", i ? ", " : "", rows[i]);
}

/* CORE_EDATA with b's text as the message; b is released. */
static int fail(core_buf *b, core_err *err)
{
	int rc = core_buf_putc(b, '\0') ? core_err_set(err, CORE_ENOMEM, "out of memory") :
		 core_err_set(err, CORE_EDATA, "%s", b->data);

	core_buf_release(b);
	return rc;
}

static int absent(const char *field, size_t row, core_err *err)
{
	return core_err_set(err, CORE_EDATA, "missing_field: Field '%s' not found in row %zu",
			    field, row);
}

static int non_finite_variants(const plg__variants_cfg *c, json_t *const *members,
			       size_t n, core_err *err)
{
	core_buf b = { 0 };
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_object_get(members[i], c->variant_field);

		if (!v) { /* 0.7.1's KeyError, at once */
			core_buf_release(&b);
			return absent(c->variant_field, i, err);
		}
		if (!json_is_real(v) || isfinite(json_real_value(v)))
			continue;
		if (!bad++)
			core_buf_printf(&b, "validation_failed: non_finite_variant in field "
					"'%s' (rows ", c->variant_field);
		core_buf_printf(&b, "%s%zu", bad > 1 ? ", " : "", i);
	}
	if (!bad)
		return 0;
	core_buf_puts(&b, ")");
	return fail(&b, err);
}

static int insufficient(const plg__variants_cfg *c, size_t ng, core_err *err)
{
	return core_err_set(err, CORE_EDATA,
		"validation_failed: insufficient_variants: %zu variant of field '%s' in the "
		"batch; a comparison needs at least 2", ng, c->variant_field);
}

static int baseline_missing(const plg__variants_cfg *c, const plg__variants *v,
			    core_err *err)
{
	core_buf b = { 0 };

	core_buf_puts(&b, "validation_failed: baseline_variant_missing: Baseline variant ");
	put_repr(&b, c->baseline);
	core_buf_printf(&b, " was not present in the batch (variants of field '%s': ",
			c->variant_field);
	for (size_t j = 0; j < v->ng; j++) {
		if (j)
			core_buf_puts(&b, ", ");
		core_py_str(&b, v->g[j].value);
	}
	core_buf_puts(&b, ")");
	return fail(&b, err);
}

static int no_scores(const plg__variants_cfg *c, const plg__vgroup *g, bool baseline,
		     core_err *err)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "validation_failed: %s_has_no_finite_scores: variant ",
			baseline ? "baseline" : "variant");
	put_repr(&b, g->value);
	core_buf_printf(&b, " of field '%s' has no finite '%s' (%zu row%s", c->variant_field,
			c->score_field, g->total, g->total == 1 ? "" : "s");
	if (g->nmissing) {
		core_buf_puts(&b, "; missing in rows ");
		put_rows(&b, g->missing, g->nmissing);
	}
	if (g->nnonfin) {
		core_buf_puts(&b, "; non-finite in rows ");
		put_rows(&b, g->nonfin, g->nnonfin);
	}
	core_buf_puts(&b, ")");
	return fail(&b, err);
}

int plg__variants_overflow(const plg__variants_cfg *c, const plg__variants *v,
			   const plg__vgroup *g, const char *op, core_err *err)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "float_overflow: %s, comparing variant ", op);
	put_repr(&b, g->value);
	core_buf_puts(&b, " with baseline ");
	put_repr(&b, v->g[v->base].value);
	core_buf_printf(&b, " in field '%s'", c->score_field);
	return fail(&b, err);
}

/* The score s of member i into its group g. *bad: the first row, in
 * group order, whose score is absent or not a number (n: none yet). */
static void take_score(plg__vgroup *g, const json_t *s,
		       size_t i, const size_t *grp, size_t n, size_t *bad)
{
	if (s && json_is_null(s))
		g->missing[g->nmissing++] = i;
	else if (!s || !json_is_number(s)) {
		if (*bad == n || grp[i] < grp[*bad])
			*bad = i;
	} else if (json_is_real(s) && !isfinite(json_real_value(s)))
		g->nonfin[g->nnonfin++] = i;
	else
		g->scores[g->count++] = pynum_of(s);
}

/* Partitions the members by variant (grp[i]: member i's group). */
static void partition(const plg__variants_cfg *c, json_t *const *members, size_t n,
		      size_t *grp, plg__variants *v)
{
	for (size_t i = 0; i < n; i++) {
		const json_t *val = json_object_get(members[i], c->variant_field);
		size_t j;

		for (j = 0; j < v->ng && !plg__same_bucket(v->g[j].value, val); j++)
			;
		if (j == v->ng)
			v->g[v->ng++].value = val;
		v->g[j].total++;
		grp[i] = j;
	}
}

static int find_baseline(const plg__variants_cfg *c, plg__variants *v, bool first,
			 core_err *err)
{
	bool found = !c->baseline;

	for (size_t j = 0; !found && j < v->ng; j++)
		if (plg__same_bucket(v->g[j].value, c->baseline)) {
			v->base = j;
			found = true;
		}
	if (first && !found)
		return baseline_missing(c, v, err);
	if (v->ng < 2)
		return insufficient(c, v->ng, err);
	if (!found)
		return baseline_missing(c, v, err);
	if (!v->g[v->base].count)
		return no_scores(c, &v->g[v->base], true, err);
	return 0;
}

int plg__variants_group(const plg__variants_cfg *c, json_t *const *members, size_t n,
			bool baseline_first, plg__variants *v, core_err *err)
{
	size_t *grp = calloc(n + 1, sizeof(*grp)), off = 0, bad = n;
	int rc;

	memset(v, 0, sizeof(*v));
	v->n = n;
	v->g = calloc(n + 1, sizeof(*v->g));
	v->scores = calloc(n + 1, sizeof(*v->scores));
	v->idx = calloc(2 * n + 1, sizeof(*v->idx));
	if (!grp || !v->g || !v->scores || !v->idx) {
		free(grp);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if ((rc = non_finite_variants(c, members, n, err))) {
		free(grp);
		return rc;
	}
	partition(c, members, n, grp, v);
	for (size_t j = 0; j < v->ng; off += v->g[j++].total) {
		v->g[j].scores = v->scores + off;
		v->g[j].missing = v->idx + off;
		v->g[j].nonfin = v->idx + n + off;
	}
	for (size_t i = 0; i < n; i++)
		take_score(&v->g[grp[i]], json_object_get(members[i], c->score_field), i,
			   grp, n, &bad);
	if (bad < n && !json_object_get(members[bad], c->score_field))
		rc = absent(c->score_field, bad, err);
	else if (bad < n)
		rc = core_err_set(err, CORE_EDATA,
			"Field '%s' must be numeric (int or float), got %s in row %zu",
			c->score_field, core_py_type(json_object_get(members[bad], c->score_field)),
			bad);
	else
		rc = find_baseline(c, v, baseline_first, err);
	free(grp);
	return rc;
}

void plg__variants_release(plg__variants *v)
{
	free(v->g);
	free(v->scores);
	free(v->idx);
	memset(v, 0, sizeof(*v));
}

int plg__variants_flush(const plg__variants_cfg *c, const char *plugin,
			bool baseline_first, plg__variants_row_fn *row_of,
			json_t *const *members, size_t n, bool passthrough,
			json_t **out, core_err *err)
{
	plg__variants v;
	json_t *rows = NULL;
	int rc;

	if ((rc = plg__summary_only(plugin, passthrough, err)))
		return rc;
	rc = plg__variants_group(c, members, n, baseline_first, &v, err);
	if (!rc && !(rows = json_array()))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t j = 0; !rc && j < v.ng; j++) {
		json_t *row;

		if (j == v.base)
			continue;
		if (!v.g[j].count)
			rc = no_scores(c, &v.g[j], false, err);
		else if (!(rc = row_of(c, &v, &v.g[j], &row, err)) &&
			 json_array_append_new(rows, row))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	plg__variants_release(&v);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

bool plg__variants_square(double x, double *out)
{
	*out = pynum_square(x); /* Python's stdev ** 2 */
	return isfinite(*out);
}

/* sum(scores) / count; -1 when an int sum leaves the 64-bit range. */
static int mean_of(const plg__vgroup *g, double *out)
{
	pynum s;

	if (pynum_sum(g->scores, g->count, &s))
		return -1;
	*out = pynum_div(s, pynum_int((long long)g->count));
	return 0;
}

/* statistics.stdev, undefined (*ok false) for one score; op set when it
 * is past the largest float (Python's OverflowError). */
static int stdev_of(const plg__vgroup *g, bool *ok, double *out, const char **op)
{
	*ok = g->count > 1;
	*out = 0;
	if (!*ok)
		return 0;
	if (pynum_stdev(g->scores, g->count, out))
		return -1;
	if (!isfinite(*out))
		*op = PLG__SQRT_OVERFLOW;
	return 0;
}

static int int_overflow(const plg__variants_cfg *c, const plg__vgroup *g, core_err *err)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "Field '%s': the sum of variant ", c->score_field);
	put_repr(&b, g->value);
	core_buf_puts(&b, "'s integer scores is past the 64-bit range");
	return fail(&b, err);
}

int plg__variants_figures(const plg__variants_cfg *c, const plg__variants *v,
			  const plg__vgroup *g, plg__vfigs *f, core_err *err)
{
	const plg__vgroup *b = &v->g[v->base];
	const char *op = NULL;

	memset(f, 0, sizeof(*f));
	if (mean_of(b, &f->base_mean))
		return int_overflow(c, b, err);
	if (!isfinite(f->base_mean))
		return plg__variants_overflow(c, v, g, "baseline_mean", err);
	if (mean_of(g, &f->var_mean))
		return int_overflow(c, g, err);
	if (!isfinite(f->var_mean))
		return plg__variants_overflow(c, v, g, "variant_mean", err);
	if (stdev_of(b, &f->base_sd_ok, &f->base_sd, &op) ||
	    (!op && stdev_of(g, &f->var_sd_ok, &f->var_sd, &op)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (op)
		return plg__variants_overflow(c, v, g, op, err);
	f->delta = f->var_mean - f->base_mean;
	if (!isfinite(f->delta))
		return plg__variants_overflow(c, v, g, "mean_delta", err);
	return 0;
}

json_t *plg__variants_row(const plg__variants_cfg *c, const plg__variants *v,
			  const plg__vgroup *g)
{
	const plg__vgroup *b = &v->g[v->base];

	return json_pack("{s:s,s:s,s:O,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"variant_field", c->variant_field, "score_field", c->score_field,
		"baseline_variant", b->value, "variant", g->value,
		"batch_size", (json_int_t)v->n,
		"baseline_count", (json_int_t)b->count, "variant_count", (json_int_t)g->count,
		"baseline_total_count", (json_int_t)b->total,
		"variant_total_count", (json_int_t)g->total,
		"baseline_missing_count", (json_int_t)b->nmissing,
		"variant_missing_count", (json_int_t)g->nmissing,
		"baseline_non_finite_count", (json_int_t)b->nnonfin,
		"variant_non_finite_count", (json_int_t)g->nnonfin);
}

static int add_list(json_t *row, const char *key, const size_t *rows, size_t n)
{
	json_t *a;

	if (!n)
		return 0;
	if (!(a = json_array()))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(a, json_integer((json_int_t)rows[i]))) {
			json_decref(a);
			return -1;
		}
	return json_object_set_new(row, key, a);
}

int plg__variants_indices(json_t *row, const plg__variants *v, const plg__vgroup *g)
{
	const plg__vgroup *b = &v->g[v->base];

	return add_list(row, "baseline_missing_indices", b->missing, b->nmissing) ||
	       add_list(row, "baseline_non_finite_indices", b->nonfin, b->nnonfin) ||
	       add_list(row, "variant_missing_indices", g->missing, g->nmissing) ||
	       add_list(row, "variant_non_finite_indices", g->nonfin, g->nnonfin) ? -1 : 0;
}

json_t *plg__variants_real(bool ok, double x)
{
	return ok ? json_real(x) : json_null();
}

/*
 * batch_drift_compare.c — ELSPETH 0.7.1's "batch_drift_compare"
 * aggregation: how each cohort's distribution of a field drifts from a
 * baseline cohort's, over a batch (ADR 0045).
 *
 * Members are grouped by cohort_field (in order of first appearance,
 * bucketed by type and value: 1, 1.0, true and "1" are four cohorts). The
 * baseline is baseline_cohort, or the first cohort seen. One row per other
 * cohort, in order: its counts (total, valid, missing = null,
 * non_finite = NaN or infinity), and
 *   numeric: both means, mean_delta (cohort's minus baseline's) and the
 *     Kolmogorov-Smirnov statistic (largest distance of the empirical
 *     CDFs), over int and float values;
 *   categorical: category_shifts (per value: counts, proportions and
 *     their delta, values in order of first appearance, baseline's
 *     first), total_variation, chi_square_statistic (expected counts from
 *     the baseline's proportions) and the values the baseline lacks, over
 *     str, int and bool values.
 * Figures as 0.7.1 computes them with Python's floats (pynum.h), the same
 * operations in the same order, so they are its to the bit. The batch
 * fails, as 0.7.1's does, on: more than 4,096 rows, a non-finite cohort,
 * a value of the wrong type, a missing field, a baseline cohort absent,
 * one cohort only, a compared cohort with no valid value, a figure that
 * overflows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aggregation/pynum.h"
#include "plugins/plugins_internal.h"

#define MAX_BATCH_ROWS 4096

struct drift {
	plg_schema *schema;
	const char *cohort, *value;
	bool categorical;
	json_t *baseline;       /* or NULL: the first cohort seen */
};

static const plg_option dc_own[] = {
	{ "cohort_field", "string", true, NULL, "the field that partitions rows into baseline and current cohorts" },
	{ "value_field", "string", true, NULL, "the field whose distribution is compared" },
	{ "value_type", "string", false, "\"numeric\"",
	  "numeric (means, Kolmogorov-Smirnov distance) or categorical (total variation, chi-square)" },
	{ "baseline_cohort", "string|integer|boolean", false, NULL,
	  "the baseline cohort; the first one seen when unset" },
	{ NULL }
};
static const plg_option *const dc_opts[] = { dc_own, plg__schema_opts, plg__input_opts, NULL };

static void dc_close(void *state)
{
	struct drift *t = state;

	if (!t)
		return;
	json_decref(t->baseline);
	plg__schema_free(t->schema);
	free(t);
}

static bool blank(const char *s)
{
	return !s[strspn(s, " \t\r\n\f\v")];
}

/* A field name that is more than white space (0.7.1's "must not be empty"). */
static int opt_name(const core_node *opts, const char *key, const char **out,
		    core_err *err)
{
	int rc = plg__opt_field(opts, key, true, out, err);

	if (!rc && blank(*out))
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, key),
				 "%s must not be empty", key);
	return rc;
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct drift *t = state;
	const core_node *vt = core_map_get(opts, "value_type");
	const char *type = "numeric";
	int rc;

	if ((rc = plg__check_options(opts, dc_opts, err)) ||
	    (rc = opt_name(opts, "cohort_field", &t->cohort, err)) ||
	    (rc = opt_name(opts, "value_field", &t->value, err)) ||
	    (rc = core_opt_str(opts, "value_type", false, &type, err)) ||
	    (rc = plg__opt_scalar(opts, "baseline_cohort", &t->baseline, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (strcmp(type, "numeric") && strcmp(type, "categorical"))
		return core_err_at(err, CORE_ECONFIG, vt,
				   "value_type must be 'numeric' or 'categorical', got '%s'", type);
	t->categorical = !strcmp(type, "categorical");
	if (!strcmp(t->cohort, t->value))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "value_field"),
				   "cohort_field and value_field must differ");
	return 0;
}

static int dc_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct drift), parse_options, dc_close, options, state, err);
}

/* One cohort's values: nums (numeric) or cats (categorical), count of them. */
typedef struct cohort {
	const json_t *key;
	size_t total, missing, nonfin, count;
	pynum *nums;
	const json_t **cats;
} cohort;

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

/* Reads the values of cohort c, members[idx[0..c->total)]. */
static int cohort_values(const struct drift *t, json_t *const *members,
			 const size_t *idx, cohort *c, core_err *err)
{
	if (!(c->nums = calloc(c->total, sizeof(*c->nums))) ||
	    !(c->cats = calloc(c->total, sizeof(*c->cats))))
		return nomem(err);
	for (size_t k = 0; k < c->total; k++) {
		const json_t *v = json_object_get(members[idx[k]], t->value);

		if (!v)
			return core_err_set(err, CORE_EDATA,
				"Field '%s' is missing in row %zu", t->value, idx[k]);
		if (json_is_null(v)) {
			c->missing++;
		} else if (t->categorical) {
			if (!json_is_string(v) && !json_is_integer(v) && !json_is_boolean(v))
				return core_err_set(err, CORE_EDATA,
					"Field '%s' must be a scalar category (str, int, or bool), "
					"got %s in row %zu", t->value, core_py_type(v), idx[k]);
			c->cats[c->count++] = v;
		} else {
			if (!json_is_integer(v) && !json_is_real(v))
				return core_err_set(err, CORE_EDATA,
					"Field '%s' must be numeric (int or float), got %s in row %zu",
					t->value, core_py_type(v), idx[k]);
			if (json_is_real(v) && !isfinite(json_real_value(v)))
				c->nonfin++;
			else
				c->nums[c->count++] = pynum_of(v);
		}
	}
	return 0;
}

static int no_values(const cohort *c, size_t n, core_err *err)
{
	core_buf b = { 0 };

	core_err_set(err, CORE_EDATA,
		"validation_failed: no_valid_values in cohort %s (batch of %zu, %zu skipped)",
		plg__py_str(&b, c->key), n, c->missing + c->nonfin);
	core_buf_release(&b);
	return CORE_EDATA;
}

static int overflow(const char *op, const cohort *base, const cohort *c, core_err *err)
{
	core_buf b = { 0 }, d = { 0 };

	core_err_set(err, CORE_EDATA,
		"float_overflow: %s of cohort %s against baseline %s is not finite",
		op, plg__py_str(&b, c->key), plg__py_str(&d, base->key));
	core_buf_release(&b);
	core_buf_release(&d);
	return CORE_EDATA;
}

/* sum(float(v) for v in values) / len(values) */
static double mean_of(const cohort *c)
{
	pynum s = pynum_int(0);

	for (size_t i = 0; i < c->count; i++)
		pynum_add(s, pynum_real(pynum_float(c->nums[i])), &s); /* floats: no overflow */
	return pynum_div(s, pynum_int((long long)c->count));
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double *sorted_floats(const cohort *c)
{
	double *v = malloc((c->count ? c->count : 1) * sizeof(*v));

	for (size_t i = 0; v && i < c->count; i++)
		v[i] = pynum_float(c->nums[i]);
	if (v)
		qsort(v, c->count, sizeof(*v), by_value);
	return v;
}

/* The largest distance of the two empirical CDFs, at each distinct value
 * of either side in ascending order. -1 when out of memory. */
static int ks_statistic(const cohort *l, const cohort *r, double *out)
{
	double *lv = sorted_floats(l), *rv = sorted_floats(r);
	double *th = malloc((l->count + r->count) * sizeof(*th));
	size_t li = 0, ri = 0, nt = 0;

	*out = 0.0;
	if (!lv || !rv || !th) {
		free(lv);
		free(rv);
		free(th);
		return -1;
	}
	memcpy(th, lv, l->count * sizeof(*th));
	memcpy(th + l->count, rv, r->count * sizeof(*th));
	qsort(th, l->count + r->count, sizeof(*th), by_value);
	for (size_t i = 0; i < l->count + r->count; i++)
		if (!nt || th[i] != th[nt - 1])
			th[nt++] = th[i];
	for (size_t i = 0; i < nt; i++) {
		double dist;

		while (li < l->count && lv[li] <= th[i])
			li++;
		while (ri < r->count && rv[ri] <= th[i])
			ri++;
		dist = fabs(pynum_div(pynum_int((long long)li), pynum_int((long long)l->count)) -
			    pynum_div(pynum_int((long long)ri), pynum_int((long long)r->count)));
		if (dist > *out)
			*out = dist;
	}
	free(lv);
	free(rv);
	free(th);
	return 0;
}

/* The first fields of a comparison row. */
static json_t *base_row(const struct drift *t, const cohort *b, const cohort *c,
			size_t n)
{
	return json_pack("{s:s,s:s,s:s,s:O,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"cohort_field", t->cohort, "value_field", t->value,
		"value_type", t->categorical ? "categorical" : "numeric",
		"baseline_cohort", b->key, "cohort", c->key, "batch_size", (json_int_t)n,
		"baseline_total_count", (json_int_t)b->total,
		"cohort_total_count", (json_int_t)c->total,
		"baseline_count", (json_int_t)b->count, "cohort_count", (json_int_t)c->count,
		"baseline_missing_count", (json_int_t)b->missing,
		"cohort_missing_count", (json_int_t)c->missing,
		"baseline_non_finite_count", (json_int_t)b->nonfin,
		"cohort_non_finite_count", (json_int_t)c->nonfin);
}

static int numeric_row(const struct drift *t, const cohort *b, const cohort *c,
		       size_t n, json_t **out, core_err *err)
{
	double bm = mean_of(b), cm, delta, ks;

	if (!isfinite(bm))
		return overflow("baseline_mean", b, c, err);
	if (!isfinite(cm = mean_of(c)))
		return overflow("cohort_mean", b, c, err);
	if (!isfinite(delta = cm - bm))
		return overflow("mean_delta", b, c, err);
	if (ks_statistic(b, c, &ks))
		return nomem(err);
	if (!(*out = base_row(t, b, c, n)) ||
	    json_object_set_new(*out, "baseline_mean", json_real(bm)) ||
	    json_object_set_new(*out, "cohort_mean", json_real(cm)) ||
	    json_object_set_new(*out, "mean_delta", json_real(delta)) ||
	    json_object_set_new(*out, "ks_statistic", json_real(ks)))
		return nomem(err);
	return 0;
}

static long long count_of(const json_t *const *v, size_t n, const json_t *key)
{
	long long k = 0;

	for (size_t i = 0; i < n; i++)
		k += plg__same_bucket(v[i], key);
	return k;
}

static int categorical_row(const struct drift *t, const cohort *b, const cohort *c,
			   size_t n, json_t **out, core_err *err)
{
	const json_t **vals = malloc((b->count + c->count) * sizeof(*vals));
	json_t *shifts = json_array(), *fresh = json_array();
	double tv = 0.0, chi = 0.0;
	size_t nv = 0;
	int rc = 0;

	if (!vals || !shifts || !fresh)
		goto out_nomem;
	for (size_t i = 0; i < b->count + c->count; i++) {
		const json_t *v = i < b->count ? b->cats[i] : c->cats[i - b->count];
		size_t j;

		for (j = 0; j < nv && !plg__same_bucket(vals[j], v); j++)
			;
		if (j == nv)
			vals[nv++] = v;
	}
	for (size_t i = 0; i < nv; i++) {
		long long bc = count_of(b->cats, b->count, vals[i]);
		long long cc = count_of(c->cats, c->count, vals[i]);
		double bp = pynum_div(pynum_int(bc), pynum_int((long long)b->count));
		double cp = pynum_div(pynum_int(cc), pynum_int((long long)c->count));
		double expected = bp * (double)c->count;

		tv += fabs(bp - cp);
		if (expected > 0)
			chi += pynum_square((double)cc - expected) / expected;
		if (bc == 0 && cc > 0 && json_array_append(fresh, (json_t *)vals[i]))
			goto out_nomem;
		if (json_array_append_new(shifts, json_pack("{s:O,s:I,s:I,s:f,s:f,s:f}",
				"value", vals[i], "baseline_count", (json_int_t)bc,
				"cohort_count", (json_int_t)cc, "baseline_proportion", bp,
				"cohort_proportion", cp, "proportion_delta", cp - bp)))
			goto out_nomem;
	}
	if (!(*out = base_row(t, b, c, n)) ||
	    json_object_set(*out, "category_shifts", shifts) ||
	    json_object_set_new(*out, "total_variation", json_real(0.5 * tv)) ||
	    json_object_set_new(*out, "chi_square_statistic", json_real(chi)) ||
	    json_object_set_new(*out, "new_category_count",
				json_integer((json_int_t)json_array_size(fresh))) ||
	    json_object_set(*out, "new_categories", fresh))
		goto out_nomem;
	goto out;
out_nomem:
	rc = nomem(err);
out:
	free(vals);
	json_decref(shifts);
	json_decref(fresh);
	return rc;
}

static bool non_finite(const json_t *v)
{
	return json_is_real(v) && !isfinite(json_real_value(v));
}

/* Groups members into cohorts: *ncs of them in cs, member i's in of[i]. */
static int group(const struct drift *t, json_t *const *members, size_t n,
		 cohort *cs, size_t *ncs, size_t *of, core_err *err)
{
	*ncs = 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *k = json_object_get(members[i], t->cohort);
		size_t j;

		if (!k)
			return core_err_set(err, CORE_EDATA,
				"Field '%s' is missing in row %zu", t->cohort, i);
		for (j = 0; j < *ncs && !plg__same_bucket(cs[j].key, k); j++)
			;
		if (j == *ncs)
			cs[(*ncs)++].key = k;
		cs[j].total++;
		of[i] = j;
	}
	return 0;
}

/* The cohorts' values, cohort by cohort (0.7.1's order of type errors). */
static int all_values(const struct drift *t, json_t *const *members, size_t n,
		      cohort *cs, size_t ncs, const size_t *of, size_t *idx,
		      core_err *err)
{
	int rc = 0;

	for (size_t j = 0; j < ncs && !rc; j++) {
		size_t m = 0;

		for (size_t i = 0; i < n; i++)
			if (of[i] == j)
				idx[m++] = i;
		rc = cohort_values(t, members, idx, &cs[j], err);
	}
	return rc;
}

static int baseline_missing(const json_t *want, const cohort *cs, size_t ncs,
			    core_err *err)
{
	core_buf b = { 0 }, list = { 0 };

	core_buf_putc(&list, '[');
	for (size_t j = 0; j < ncs; j++)
		core_buf_printf(&list, "%s'%s'", j ? ", " : "", plg__py_str(&b, cs[j].key));
	core_buf_putc(&list, ']');
	core_buf_putc(&list, '\0');
	core_err_set(err, CORE_EDATA,
		"validation_failed: baseline_cohort_missing: expected %s, cohorts %s",
		plg__py_str(&b, want), list.data ? list.data : "[]");
	core_buf_release(&b);
	core_buf_release(&list);
	return CORE_EDATA;
}

/* The comparison rows, after the members' cohorts and values are read. */
static int compare(const struct drift *t, const cohort *cs, size_t ncs, size_t n,
		   json_t *rows, core_err *err)
{
	const json_t *want = t->baseline ? t->baseline : cs[0].key;
	const cohort *b = NULL;
	size_t others = 0;

	for (size_t j = 0; j < ncs && !b; j++)
		if (plg__same_bucket(cs[j].key, want))
			b = &cs[j];
	if (!b)
		return baseline_missing(want, cs, ncs, err);
	for (size_t j = 0; j < ncs; j++)
		others += !plg__same_bucket(cs[j].key, want);
	if (!others)
		return core_err_set(err, CORE_EDATA,
			"validation_failed: insufficient_cohorts (%zu cohort, nothing to compare "
			"with the baseline)", ncs);
	for (size_t j = 0; j < ncs; j++) {
		json_t *row = NULL;
		int rc;

		if (plg__same_bucket(cs[j].key, want))
			continue;
		if (!b->count)
			return no_values(b, n, err);
		if (!cs[j].count)
			return no_values(&cs[j], n, err);
		rc = t->categorical ? categorical_row(t, b, &cs[j], n, &row, err)
				    : numeric_row(t, b, &cs[j], n, &row, err);
		if (rc) {
			json_decref(row); /* a row left half-built */
			return rc;
		}
		if (json_array_append_new(rows, row))
			return nomem(err);
	}
	return 0;
}

static int dc_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct drift *t = state;
	cohort *cs = calloc(n ? n : 1, sizeof(*cs));
	size_t *of = calloc(n ? n : 1, sizeof(*of)), *idx = calloc(n ? n : 1, sizeof(*idx));
	size_t ncs = 0;
	json_t *rows = json_array();
	int rc = 0;

	if ((rc = plg__summary_only("batch_drift_compare", passthrough, err)))
		goto out;
	if (!cs || !of || !idx || !rows) {
		rc = nomem(err);
		goto out;
	}
	if (!n)
		rc = core_err_set(err, CORE_EDATA, "validation_failed: empty_batch");
	else if (n > MAX_BATCH_ROWS)
		rc = core_err_set(err, CORE_EDATA,
			"validation_failed: batch_too_large (batch of %zu, at most %d rows)",
			n, MAX_BATCH_ROWS);
	for (size_t i = 0; !rc && i < n; i++)
		if (non_finite(json_object_get(members[i], t->cohort)))
			rc = core_err_set(err, CORE_EDATA,
				"validation_failed: non_finite_group_key in field '%s' (row %zu)",
				t->cohort, i);
	if (!rc && !(rc = group(t, members, n, cs, &ncs, of, err)) &&
	    !(rc = all_values(t, members, n, cs, ncs, of, idx, err)))
		rc = compare(t, cs, ncs, n, rows, err);
out:
	for (size_t j = 0; cs && j < ncs; j++) {
		free(cs[j].nums);
		free(cs[j].cats);
	}
	free(cs);
	free(of);
	free(idx);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int dc_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const numeric[] = {
		"baseline_cohort", "baseline_count", "baseline_mean", "baseline_missing_count",
		"baseline_non_finite_count", "baseline_total_count", "batch_size", "cohort",
		"cohort_count", "cohort_field", "cohort_mean", "cohort_missing_count",
		"cohort_non_finite_count", "cohort_total_count", "ks_statistic", "mean_delta",
		"value_field", "value_type", NULL
	};
	static const char *const categorical[] = {
		"baseline_cohort", "baseline_count", "baseline_missing_count",
		"baseline_non_finite_count", "baseline_total_count", "batch_size",
		"category_shifts", "chi_square_statistic", "cohort", "cohort_count",
		"cohort_field", "cohort_missing_count", "cohort_non_finite_count",
		"cohort_total_count", "new_categories", "new_category_count",
		"total_variation", "value_field", "value_type", NULL
	};
	const char *type = "numeric";
	core_err ignored = { 0 };

	/* open refuses a bad value_type; here it only picks the list */
	core_opt_str(options, "value_type", false, &type, &ignored);
	return plg__outputs_list(out, type && !strcmp(type, "categorical") ? categorical : numeric,
				 err);
}

const plg_aggregation_ops plg__batch_drift_compare = {
	.name = "batch_drift_compare",
	.description = "How each cohort's distribution of a field drifts from a baseline cohort's "
		       "over a batch (ELSPETH 0.7.1)",
	.options = dc_opts,
	.open = dc_open,
	.flush = dc_flush,
	.close = dc_close,
	.outputs = dc_outputs,
};

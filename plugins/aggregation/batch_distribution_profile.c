/*
 * batch_distribution_profile.c — ELSPETH 0.7.1's
 * "batch_distribution_profile" aggregation: descriptive statistics of a
 * numeric field over a batch, optionally per group (ADR 0045).
 *
 * One row per group (groups in order of first appearance, bucketed by
 * type and value as 0.7.1's same_scalar_bucket_value; one group when
 * group_by is unset): {field, count, batch_size, missing_count,
 * non_finite_count, min, max, mean, median, p25, p75, stdev, summary},
 * then missing_indices and non_finite_indices when not empty (indices
 * into the whole batch), then the group_by field holding the group's
 * value. null is missing, NaN and infinities are non-finite; both are
 * left out of the figures. Percentiles interpolate linearly between
 * sorted values; stdev is the sample's, null (never 0) for one value.
 * min and max keep their type (an int stays an int).
 *
 * A batch fails (CORE_EDATA) when a member lacks value_field or group_by
 * (0.7.1 stops the run there), when a group key is NaN or infinite, when
 * a value is not an int or a float (bool included), when a group has no
 * finite value, and when a figure overflows to infinity. Figures are
 * Python's to the bit (pynum.h): the same operations in the same order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aggregation/pynum.h"
#include "plugins/plugins_internal.h"

struct profile {
	plg_schema *schema;
	const char *value_field, *group_by;
};

/* Every key a profile row may carry, sorted (group_by must be none). */
static const char *const profile_keys[] = {
	"batch_size", "count", "field", "max", "mean", "median", "min",
	"missing_count", "missing_indices", "non_finite_count",
	"non_finite_indices", "p25", "p75", "stdev", "summary", NULL
};

static const plg_option dp_own[] = {
	{ "value_field", "string", true, NULL, "the numeric field profiled" },
	{ "group_by", "string", false, NULL,
	  "a field that partitions the batch: one profile row per distinct value" },
	{ NULL }
};
static const plg_option *const dp_opts[] = { dp_own, plg__schema_opts, plg__input_opts, NULL };

static void dp_close(void *state)
{
	struct profile *t = state;

	if (!t)
		return;
	plg__schema_free(t->schema);
	free(t);
}

static bool blank(const char *s)
{
	return !s[strspn(s, " \t\n\r\f\v")];
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct profile *t = state;
	int rc;

	if ((rc = plg__check_options(opts, dp_opts, err)) ||
	    (rc = plg__opt_field(opts, "value_field", true, &t->value_field, err)) ||
	    (rc = plg__opt_field(opts, "group_by", false, &t->group_by, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (blank(t->value_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "value_field"),
				   "value_field must not be empty");
	if (!t->group_by)
		return 0;
	if (blank(t->group_by))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "group_by"),
				   "group_by must not be empty");
	for (size_t i = 0; profile_keys[i]; i++)
		if (!strcmp(t->group_by, profile_keys[i]))
			return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "group_by"),
				"group_by field '%s' collides with profile output key. Choose a "
				"group_by field name that is not one of: batch_size, count, field, "
				"max, mean, median, min, missing_count, missing_indices, "
				"non_finite_count, non_finite_indices, p25, p75, stdev, summary",
				t->group_by);
	return 0;
}

static int dp_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct profile), parse_options, dp_close, options,
			       state, err);
}

static bool non_finite(const json_t *v)
{
	return json_is_real(v) && !isfinite(json_real_value(v));
}

/* One group's members (indices into the batch) and what they hold. */
typedef struct group {
	const json_t *key;          /* the group's value (NULL: no group_by) */
	const size_t *idx;
	size_t m;
	pynum *vals;                /* its finite values, in member order */
	size_t nv;
	json_t *missing, *nonfin;   /* batch indices */
} group;

/* A float figure, or CORE_EDATA when it is not finite (0.7.1's
 * float_overflow). */
static int finite_or(double v, const char *op, const group *g, const struct profile *t,
		     core_err *err)
{
	if (isfinite(v))
		return 0;
	return core_err_set(err, CORE_EDATA,
		"float_overflow: %s of field '%s' is not finite (batch of %zu, %zu valid)%s%s",
		op, t->value_field, g->m, g->nv, t->group_by ? " in group " : "",
		t->group_by ? t->group_by : "");
}

/* The linearly interpolated quantile q of sorted[0..n) (n >= 1), as
 * float(lower + (upper - lower) * fraction): between ints the difference
 * is exact (Python's ints do not overflow) and becomes a float when
 * multiplied. */
static double percentile(const pynum *sorted, size_t n, double q)
{
	double pos, fraction;
	pynum lo, hi, d;
	size_t l, h;

	if (n == 1)
		return pynum_float(sorted[0]);
	pos = (double)(n - 1) * q;
	l = (size_t)floor(pos);
	h = (size_t)ceil(pos);
	if (l == h)
		return pynum_float(sorted[l]);
	fraction = pos - (double)l;
	lo = sorted[l];
	hi = sorted[h];
	if (lo.is_int && hi.is_int)
		d = pynum_real((double)((__int128)hi.i - lo.i) * fraction);
	else if (pynum_sub(hi, lo, &d) || pynum_mul(d, pynum_real(fraction), &d))
		return NAN; /* not reached: a float operand makes them floats */
	pynum_add(lo, d, &d); /* d is a float: no overflow */
	return pynum_float(d);
}

/* Reads the group's values: null is missing, NaN and
 * infinities non-finite; an absent field, or anything but an int or a
 * float, fails (0.7.1 stops there: KeyError, TypeError). */
static int collect(const struct profile *t, json_t *const *members, group *g,
		   core_err *err)
{
	for (size_t i = 0; i < g->m; i++) {
		size_t r = g->idx[i];
		const json_t *v = json_object_get(members[r], t->value_field);

		if (!v) {
			return core_err_set(err, CORE_EDATA, "Field '%s' is missing from row %zu",
					    t->value_field, r);
		} else if (json_is_null(v)) {
			if (json_array_append_new(g->missing, json_integer((json_int_t)r)))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		} else if (!json_is_integer(v) && !json_is_real(v)) {
			return core_err_set(err, CORE_EDATA,
				"Field '%s' must be numeric (int or float), got %s in row %zu",
				t->value_field, core_py_type(v), r);
		} else if (non_finite(v)) {
			if (json_array_append_new(g->nonfin, json_integer((json_int_t)r)))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		} else {
			g->vals[g->nv++] = pynum_of(v);
		}
	}
	return 0;
}

/* The rows skipped, for the no_finite_values error: "rows 0, 3". */
static void skipped_rows(const group *g, core_buf *b)
{
	const json_t *lists[2] = { g->missing, g->nonfin };
	const char *what[2] = { "missing", "non-finite" };

	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < json_array_size(lists[l]); i++)
			core_buf_printf(b, "%s%s row %lld", b->len ? ", " : "", what[l],
					(long long)json_integer_value(json_array_get(lists[l], i)));
}

/* str() of a group's value as 0.7.1 prints it: its rows are frozen, so
 * a list is a tuple there ("(1,)", "(1, 'x')"). */
static void put_key(core_buf *b, const json_t *key)
{
	size_t at = b->len;

	core_py_str(b, key);
	if (!json_is_array(key) || b->len < at + 2)
		return;
	b->data[at] = '(';
	b->data[b->len - 1] = ')';
	if (json_array_size(key) == 1) {
		b->len--;
		core_buf_puts(b, ",)");
	}
}

static int no_finite(const struct profile *t, const group *g, core_err *err)
{
	core_buf rows = { 0 }, key = { 0 };
	int rc;

	skipped_rows(g, &rows);
	if (t->group_by)
		put_key(&key, g->key);
	rc = core_err_set(err, CORE_EDATA,
		"validation_failed: no_finite_values in field '%s'%s%s%s%s (batch of %zu, "
		"0 valid, %zu skipped: %s)", t->value_field,
		t->group_by ? " for group " : "", t->group_by ? t->group_by : "",
		t->group_by ? "=" : "", t->group_by && key.data ? key.data : "",
		g->m, json_array_size(g->missing) + json_array_size(g->nonfin),
		rows.data ? rows.data : "");
	core_buf_release(&rows);
	core_buf_release(&key);
	return rc;
}

typedef struct figures {
	double mean, median, p25, p75, stdev;
} figures;

static int compute(const struct profile *t, const group *g, pynum *sorted, figures *f,
		   core_err *err)
{
	static const double qs[3] = { 0.5, 0.25, 0.75 };
	static const char *const qn[3] = { "median", "p25", "p75" };
	double *qv[3] = { &f->median, &f->p25, &f->p75 };
	pynum total;
	int rc;

	if (pynum_sum(g->vals, g->nv, &total))
		return core_err_set(err, CORE_EDATA, "float_overflow: the sum of field '%s' "
				    "leaves the 64-bit integer range", t->value_field);
	f->mean = pynum_div(total, pynum_int((long long)g->nv));
	if ((rc = finite_or(f->mean, "mean", g, t, err)))
		return rc;
	for (int i = 0; i < 3; i++) {
		*qv[i] = percentile(sorted, g->nv, qs[i]);
		if ((rc = finite_or(*qv[i], qn[i], g, t, err)))
			return rc;
	}
	if (g->nv == 1)
		return 0;
	if (pynum_stdev(g->vals, g->nv, &f->stdev))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return finite_or(f->stdev, "stdev", g, t, err);
}

static void put3(core_buf *b, double v)
{
	core_buf_printf(b, "%.3f", v);
}

static char *summary_of(const struct profile *t, const group *g, const figures *f,
			const pynum *sorted)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "Distribution profile for %s", t->value_field);
	if (t->group_by) {
		core_buf_printf(&b, " grouped by %s=", t->group_by);
		put_key(&b, g->key);
	}
	core_buf_printf(&b, ": %zu rows, %zu finite values, %zu missing, %zu non-finite, mean ",
			g->m, g->nv, json_array_size(g->missing), json_array_size(g->nonfin));
	put3(&b, f->mean);
	core_buf_puts(&b, ", median ");
	put3(&b, f->median);
	core_buf_puts(&b, ", range ");
	put3(&b, pynum_float(sorted[0]));
	core_buf_puts(&b, " to ");
	put3(&b, pynum_float(sorted[g->nv - 1]));
	core_buf_puts(&b, ".");
	return core_buf_steal(&b);
}

/* The profile row of one group, appended to rows. */
static int group_row(const struct profile *t, json_t *const *members, group *g,
		     json_t *rows, core_err *err)
{
	pynum *sorted = NULL;
	figures f = { 0 };
	char *summary = NULL;
	json_t *row = NULL;
	int rc;

	if ((rc = collect(t, members, g, err)))
		return rc;
	if (!g->nv)
		return no_finite(t, g, err);
	if (!(sorted = malloc(g->nv * sizeof(*sorted))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	memcpy(sorted, g->vals, g->nv * sizeof(*sorted));
	pynum_sort(sorted, g->nv);
	if ((rc = compute(t, g, sorted, &f, err)))
		goto out;
	summary = summary_of(t, g, &f, sorted);
	row = json_pack("{s:s,s:I,s:I,s:I,s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:o,s:s?}",
		"field", t->value_field, "count", (json_int_t)g->nv,
		"batch_size", (json_int_t)g->m,
		"missing_count", (json_int_t)json_array_size(g->missing),
		"non_finite_count", (json_int_t)json_array_size(g->nonfin),
		"min", pynum_json(sorted[0]), "max", pynum_json(sorted[g->nv - 1]),
		"mean", f.mean, "median", f.median, "p25", f.p25, "p75", f.p75,
		"stdev", g->nv > 1 ? json_real(f.stdev) : json_null(), "summary", summary);
	if (!summary || !row ||
	    (json_array_size(g->missing) && json_object_set(row, "missing_indices", g->missing)) ||
	    (json_array_size(g->nonfin) && json_object_set(row, "non_finite_indices", g->nonfin)) ||
	    (t->group_by && json_object_set(row, t->group_by, (json_t *)g->key)) ||
	    json_array_append(rows, row))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
out:
	json_decref(row);
	free(summary);
	free(sorted);
	return rc;
}

/* CORE_EDATA when a member lacks the group_by field (0.7.1 stops:
 * KeyError), or when group keys are NaN or infinite, naming every such
 * row. */
static int check_keys(const struct profile *t, json_t *const *members, size_t n,
		      core_err *err)
{
	core_buf rows = { 0 };
	int rc = 0;

	for (size_t i = 0; t->group_by && i < n; i++) {
		const json_t *k = json_object_get(members[i], t->group_by);

		if (!k)
			return core_err_set(err, CORE_EDATA,
				"Field '%s' (group_by) is missing from row %zu", t->group_by, i);
		if (non_finite(k))
			core_buf_printf(&rows, "%s%zu", rows.len ? ", " : "", i);
	}
	if (rows.len)
		rc = core_err_set(err, CORE_EDATA,
			"validation_failed: non_finite_group_key in field '%s' (rows %s)",
			t->group_by, rows.data);
	core_buf_release(&rows);
	return rc;
}

static int dp_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct profile *t = state;
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	pynum *vals = calloc(n ? n : 1, sizeof(*vals));
	json_t *rows = json_array();
	int rc;

	if ((rc = plg__summary_only("batch_distribution_profile", passthrough, err)))
		goto out;
	if (!idx || !done || !vals || !rows) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = check_keys(t, members, n, err)))
		goto out;
	for (size_t i = 0; !rc && i < n; i++) {
		group g = { .idx = idx, .vals = vals };

		if (done[i])
			continue;
		if (t->group_by)
			g.key = json_object_get(members[i], t->group_by);
		for (size_t j = i; j < n; j++) {
			const json_t *h = t->group_by ? json_object_get(members[j], t->group_by) : NULL;

			if (!done[j] && (!t->group_by || plg__same_bucket(g.key, h))) {
				done[j] = true;
				idx[g.m++] = j;
			}
		}
		g.missing = json_array();
		g.nonfin = json_array();
		rc = g.missing && g.nonfin ? group_row(t, members, &g, rows, err) :
			core_err_set(err, CORE_ENOMEM, "out of memory");
		json_decref(g.missing);
		json_decref(g.nonfin);
	}
out:
	free(idx);
	free(done);
	free(vals);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int dp_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"batch_size", "count", "field", "max", "mean", "median", "min",
		"missing_count", "non_finite_count", "p25", "p75", "stdev", "summary", NULL
	};
	const char *group_by = NULL;
	int rc = plg__outputs_list(out, fields, err);

	if (!rc)
		rc = core_opt_str(options, "group_by", false, &group_by, err);
	if (!rc && group_by)
		rc = plg_outputs_add(out, err, "%s", group_by);
	return rc;
}

const plg_aggregation_ops plg__batch_distribution_profile = {
	.name = "batch_distribution_profile",
	.description = "Count, min, max, mean, median, quartiles and stdev of a numeric field "
		       "over a batch, per group (ELSPETH 0.7.1)",
	.options = dp_opts,
	.open = dp_open,
	.flush = dp_flush,
	.close = dp_close,
	.outputs = dp_outputs,
};

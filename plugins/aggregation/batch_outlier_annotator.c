/*
 * batch_outlier_annotator.c — ELSPETH 0.7.1's "batch_outlier_annotator"
 * aggregation: each member with a finite value, annotated with its
 * z-score and robust z-score against the batch (ADR 0045).
 *
 * One row per member whose value_field is an int or a finite float, in
 * member order: the member's fields, then PREFIX_value_field, _value,
 * _row_index, _batch_size, _valid_count, _missing_count,
 * _non_finite_count, _skipped_count, _missing_indices and
 * _non_finite_indices (at most 128 each), _mean, _median, _stdev, _mad,
 * _z_threshold, _robust_z_threshold, _z_score, _robust_z_score,
 * _is_outlier and _reason ("z_score", "robust_z_score", both joined by
 * a comma, or ""). Members whose value is null (missing), NaN or
 * infinite are left out and counted on every row.
 *
 * Figures are over the values as floats: the mean, the median, the
 * sample stdev (0 for one value), MAD (the median of the absolute
 * deviations from the median) and their mean. z = (x - mean) / stdev,
 * null when stdev is 0; robust z = 0.6745 (x - median) / MAD, or when
 * MAD is 0 0.7979 (x - median) / mean absolute deviation, null when
 * that is 0 too. A score at or beyond its threshold makes the member an
 * outlier. Python's arithmetic to the bit (pynum.h).
 *
 * A batch fails (CORE_EDATA) above 4096 members, when a member already
 * holds an annotation field, when a value is absent or not an int or a
 * float (bool included), when no value is finite, and when a figure
 * overflows to infinity.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aggregation/pynum.h"
#include "plugins/plugins_internal.h"

#define MAX_BATCH 4096
#define MAX_INDEX_DETAILS 128

/* The annotation fields' suffixes, sorted (0.7.1's declared outputs). */
static const char *const suffixes[] = {
	"batch_size", "is_outlier", "mad", "mean", "median", "missing_count",
	"missing_indices", "non_finite_count", "non_finite_indices", "reason",
	"robust_z_score", "robust_z_threshold", "row_index", "skipped_count",
	"stdev", "valid_count", "value", "value_field", "z_score", "z_threshold",
	NULL
};
#define NSUFFIX (sizeof(suffixes) / sizeof(suffixes[0]) - 1)

struct outlier {
	plg_schema *schema;
	const char *value_field, *prefix;
	double z, robust_z;
	char *names[NSUFFIX]; /* PREFIX_suffix, in suffixes' order */
};

static const plg_option oa_own[] = {
	{ "value_field", "string", true, NULL, "the numeric field annotated" },
	{ "output_prefix", "string", false, "\"outlier\"", "the prefix of the annotation fields" },
	{ "z_threshold", "number", false, "3.0",
	  "the absolute sample z-score at which a value is an outlier (> 0)" },
	{ "robust_z_threshold", "number", false, "3.5",
	  "the absolute modified z-score (from the median absolute deviation) at which "
	  "a value is an outlier (> 0)" },
	{ NULL }
};
static const plg_option *const oa_opts[] = { oa_own, plg__schema_opts, plg__input_opts, NULL };

static void oa_close(void *state)
{
	struct outlier *t = state;

	if (!t)
		return;
	for (size_t i = 0; i < NSUFFIX; i++)
		free(t->names[i]);
	plg__schema_free(t->schema);
	free(t);
}

/* Python's str.isidentifier(): keywords are identifiers too (non-ASCII
 * letters are taken as letters). */
static bool is_identifier(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x80 && !(*p == '_' || (*p >= '0' && *p <= '9') ||
				   ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'z')))
			return false;
	return core_utf8_valid(s, strlen(s));
}

/* A threshold option: a finite number above 0 (default `def`). */
static int threshold(const core_node *opts, const char *key, double def, double *out,
		     core_err *err)
{
	int rc;

	*out = def;
	if ((rc = core_opt_double(opts, key, -HUGE_VAL, HUGE_VAL, out, err)))
		return rc;
	if (!(*out > 0))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, key),
				   "%s must be greater than 0", key);
	return 0;
}

static const char *field_name(const struct outlier *t, const char *suffix)
{
	for (size_t i = 0; i < NSUFFIX; i++)
		if (!strcmp(suffixes[i], suffix))
			return t->names[i];
	return NULL; /* not reached: every caller names a suffix */
}

/* value_field must not be an annotation field (names are sorted). */
static int check_collision(const struct outlier *t, const core_node *opts, core_err *err)
{
	core_buf list = { 0 };
	int rc = 0;

	for (size_t i = 0; i < NSUFFIX; i++)
		if (!strcmp(t->value_field, t->names[i]))
			rc = CORE_ECONFIG;
	if (!rc)
		return 0;
	for (size_t i = 0; i < NSUFFIX; i++)
		core_buf_printf(&list, "%s%s", i ? ", " : "", t->names[i]);
	rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "value_field"),
		"value_field '%s' collides with outlier annotation output key. Choose a "
		"value_field that is not one of: %s", t->value_field, list.data ? list.data : "");
	core_buf_release(&list);
	return rc;
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct outlier *t = state;
	const core_node *p;
	int rc;

	t->prefix = "outlier";
	if ((rc = plg__check_options(opts, oa_opts, err)) ||
	    (rc = plg__opt_field(opts, "value_field", true, &t->value_field, err)) ||
	    (rc = core_opt_str(opts, "output_prefix", false, &t->prefix, err)) ||
	    (rc = threshold(opts, "z_threshold", 3.0, &t->z, err)) ||
	    (rc = threshold(opts, "robust_z_threshold", 3.5, &t->robust_z, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!t->value_field[strspn(t->value_field, " \t\n\r\f\v")])
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "value_field"),
				   "value_field must not be empty");
	p = core_map_get(opts, "output_prefix");
	if (!t->prefix[strspn(t->prefix, " \t\n\r\f\v")])
		return core_err_at(err, CORE_ECONFIG, p, "output_prefix must not be empty");
	if (!is_identifier(t->prefix))
		return core_err_at(err, CORE_ECONFIG, p,
				   "output_prefix must be a valid Python identifier prefix, got '%s'",
				   t->prefix);
	for (size_t i = 0; i < NSUFFIX; i++) {
		core_buf b = { 0 };

		if (core_buf_printf(&b, "%s_%s", t->prefix, suffixes[i]))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		t->names[i] = core_buf_steal(&b);
	}
	return check_collision(t, opts, err);
}

static int oa_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct outlier), parse_options, oa_close, options,
			       state, err);
}

/* The batch's figures. */
typedef struct stats {
	size_t n, nv;           /* members; finite values */
	size_t *at;             /* the member of each finite value */
	pynum *vals;            /* the finite values as floats, in member order */
	json_t *missing, *nonfin;
	double mean, median, stdev, mad, mean_abs_dev;
} stats;

/* CORE_EDATA when a member already holds an annotation field. */
static int check_members(const struct outlier *t, json_t *const *members, size_t n,
			 core_err *err)
{
	for (size_t r = 0; r < n; r++)
		for (size_t i = 0; i < NSUFFIX; i++)
			if (json_object_get(members[r], t->names[i]))
				return core_err_set(err, CORE_EDATA,
					"batch_outlier_annotator would overwrite the existing input "
					"field '%s' in row %zu: choose a different output_prefix",
					t->names[i], r);
	return 0;
}

static int note(json_t *list, size_t r, core_err *err)
{
	return json_array_append_new(list, json_integer((json_int_t)r)) ?
		core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

static int collect(const struct outlier *t, json_t *const *members, stats *s,
		   core_err *err)
{
	int rc = 0;

	for (size_t r = 0; r < s->n && !rc; r++) {
		const json_t *v = json_object_get(members[r], t->value_field);

		if (!v)
			rc = core_err_set(err, CORE_EDATA, "Field '%s' is missing from row %zu",
					  t->value_field, r);
		else if (json_is_null(v))
			rc = note(s->missing, r, err);
		else if (!json_is_integer(v) && !json_is_real(v))
			rc = core_err_set(err, CORE_EDATA,
				"Field '%s' must be numeric (int or float), got %s in row %zu",
				t->value_field, core_py_type(v), r);
		else if (json_is_real(v) && !isfinite(json_real_value(v)))
			rc = note(s->nonfin, r, err);
		else {
			s->at[s->nv] = r;
			s->vals[s->nv++] = pynum_real(pynum_float(pynum_of(v)));
		}
	}
	return rc;
}

static int overflow(const char *op, const stats *s, core_err *err)
{
	return core_err_set(err, CORE_EDATA,
		"float_overflow: %s is not finite (batch of %zu, %zu valid)", op, s->n, s->nv);
}

/* The median of v[0..n) (n >= 1) as statistics.median: of a sorted copy. */
static int median_of(const pynum *v, size_t n, double *out, core_err *err)
{
	pynum *sorted = malloc(n * sizeof(*sorted)), m;

	if (!sorted)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	memcpy(sorted, v, n * sizeof(*sorted));
	pynum_sort(sorted, n);
	pynum_median(sorted, n, &m); /* floats: no int overflow */
	free(sorted);
	*out = pynum_float(m);
	return 0;
}

static int compute(stats *s, core_err *err)
{
	pynum total, *dev = malloc(s->nv * sizeof(*dev));
	int rc;

	if (!dev)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	pynum_sum(s->vals, s->nv, &total);
	s->mean = pynum_div(total, pynum_int((long long)s->nv));
	if (!isfinite(s->mean)) {
		rc = overflow("mean", s, err);
		goto out;
	}
	if ((rc = median_of(s->vals, s->nv, &s->median, err)))
		goto out;
	if (!isfinite(s->median)) {
		rc = overflow("median", s, err);
		goto out;
	}
	for (size_t i = 0; i < s->nv; i++)
		dev[i] = pynum_real(fabs(s->vals[i].d - s->median));
	if ((rc = median_of(dev, s->nv, &s->mad, err)))
		goto out;
	if (!isfinite(s->mad)) {
		rc = overflow("mad", s, err);
		goto out;
	}
	pynum_sum(dev, s->nv, &total);
	s->mean_abs_dev = pynum_div(total, pynum_int((long long)s->nv));
	if (!isfinite(s->mean_abs_dev)) {
		rc = overflow("mean_abs_dev", s, err);
		goto out;
	}
	s->stdev = 0;
	if (s->nv > 1 && pynum_stdev(s->vals, s->nv, &s->stdev))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (!isfinite(s->stdev))
		rc = overflow("stdev", s, err);
out:
	free(dev);
	return rc;
}

/* The first MAX_INDEX_DETAILS of a list of indices. */
static json_t *capped(const json_t *list)
{
	json_t *out = json_array();

	for (size_t i = 0; out && i < json_array_size(list) && i < MAX_INDEX_DETAILS; i++)
		if (json_array_append(out, json_array_get(list, i))) {
			json_decref(out);
			return NULL;
		}
	return out;
}

/* Member s->at[k]'s row: a copy of it with the annotation fields. */
static int annotate(const struct outlier *t, json_t *const *members, const stats *s,
		    size_t k, json_t *rows, core_err *err)
{
	size_t r = s->at[k];
	double x = s->vals[k].d, z = 0, rz = 0;
	bool has_z = s->stdev != 0, has_rz = s->mad != 0 || s->mean_abs_dev != 0;
	const char *reason;
	json_t *row, *ann;
	int rc = 0;

	if (has_z && !isfinite(z = (x - s->mean) / s->stdev))
		return overflow("z_score", s, err);
	if (s->mad != 0 && !isfinite(rz = 0.6745 * (x - s->median) / s->mad))
		return overflow("robust_z_score", s, err);
	if (s->mad == 0 && has_rz &&
	    !isfinite(rz = 0.7979 * (x - s->median) / s->mean_abs_dev))
		return overflow("robust_z_score_meanad", s, err);
	has_z = has_z && fabs(z) >= t->z;
	has_rz = has_rz && fabs(rz) >= t->robust_z;
	reason = has_z && has_rz ? "z_score,robust_z_score" : has_z ? "z_score" :
		 has_rz ? "robust_z_score" : "";
	row = json_copy(members[r]);
	ann = json_pack("{s:s,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,"
			"s:o,s:o,s:b,s:s}",
		field_name(t, "value_field"), t->value_field,
		field_name(t, "value"), json_object_get(members[r], t->value_field),
		field_name(t, "row_index"), (json_int_t)r,
		field_name(t, "batch_size"), (json_int_t)s->n,
		field_name(t, "valid_count"), (json_int_t)s->nv,
		field_name(t, "missing_count"), (json_int_t)json_array_size(s->missing),
		field_name(t, "non_finite_count"), (json_int_t)json_array_size(s->nonfin),
		field_name(t, "skipped_count"), (json_int_t)(s->n - s->nv),
		field_name(t, "missing_indices"), capped(s->missing),
		field_name(t, "non_finite_indices"), capped(s->nonfin),
		field_name(t, "mean"), s->mean, field_name(t, "median"), s->median,
		field_name(t, "stdev"), s->stdev, field_name(t, "mad"), s->mad,
		field_name(t, "z_threshold"), t->z,
		field_name(t, "robust_z_threshold"), t->robust_z,
		field_name(t, "z_score"), s->stdev != 0 ? json_real(z) : json_null(),
		field_name(t, "robust_z_score"),
		s->mad != 0 || s->mean_abs_dev != 0 ? json_real(rz) : json_null(),
		field_name(t, "is_outlier"), has_z || has_rz,
		field_name(t, "reason"), reason);
	if (!row || !ann || json_object_update(row, ann) || json_array_append(rows, row))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(ann);
	json_decref(row);
	return rc;
}

static int no_finite(const struct outlier *t, const stats *s, core_err *err)
{
	return core_err_set(err, CORE_EDATA,
		"validation_failed: no_finite_values in field '%s' (batch of %zu, 0 valid, "
		"%zu missing, %zu non-finite)", t->value_field, s->n,
		json_array_size(s->missing), json_array_size(s->nonfin));
}

static int oa_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct outlier *t = state;
	stats s = { .n = n };
	json_t *rows = NULL;
	int rc;

	if ((rc = plg__summary_only("batch_outlier_annotator", passthrough, err)))
		return rc;
	if (n > MAX_BATCH)
		return core_err_set(err, CORE_EDATA,
			"validation_failed: batch_too_large (batch of %zu, expected at most %d rows)",
			n, MAX_BATCH);
	if ((rc = check_members(t, members, n, err)))
		return rc;
	s.at = calloc(n ? n : 1, sizeof(*s.at));
	s.vals = calloc(n ? n : 1, sizeof(*s.vals));
	s.missing = json_array();
	s.nonfin = json_array();
	if (!(rows = json_array()) || !s.at || !s.vals || !s.missing || !s.nonfin)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc)
		rc = collect(t, members, &s, err);
	if (!rc && !s.nv)
		rc = no_finite(t, &s, err);
	if (!rc)
		rc = compute(&s, err);
	for (size_t k = 0; !rc && k < s.nv; k++)
		rc = annotate(t, members, &s, k, rows, err);
	free(s.at);
	free(s.vals);
	json_decref(s.missing);
	json_decref(s.nonfin);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

/* The annotation fields a member gains (its own fields pass through). */
static int oa_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const char *prefix = "outlier";
	int rc = core_opt_str(options, "output_prefix", false, &prefix, err);

	out->shape = PLG_SHAPE_ADDED;
	for (size_t i = 0; !rc && suffixes[i]; i++)
		rc = plg_outputs_add(out, err, "%s_%s", prefix, suffixes[i]);
	return rc;
}

const plg_aggregation_ops plg__batch_outlier_annotator = {
	.name = "batch_outlier_annotator",
	.description = "Each member with a finite value, annotated with its z-score and robust "
		       "z-score against the batch (ELSPETH 0.7.1)",
	.options = oa_opts,
	.open = oa_open,
	.flush = oa_flush,
	.close = oa_close,
	.outputs = oa_outputs,
};

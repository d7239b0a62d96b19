/*
 * batch_top_k.c — ELSPETH 0.7.1's "batch_top_k" aggregation: the most
 * frequent values of a field over a batch, optionally per group (ADR
 * 0045).
 *
 * One row per group (groups in order of first appearance; one group when
 * group_by is unset): {field, group_by, group_value, batch_size, count,
 * missing_count, non_finite_count, distinct_count, k, top_values}, where
 * top_values is [{value, count, rate}] for the k most frequent values,
 * ties in order of first appearance, rate = count / count of the group's
 * counted values. Values are bucketed by type and value (1, 1.0, true
 * and "1" are four values, as 0.7.1's same_scalar_bucket_value); null is
 * counted as missing and, with include_missing, as a value; NaN and
 * infinities are counted apart and are no value. A value that is not a
 * scalar, and a non-finite group key, fail the batch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct top_k {
	plg_schema *schema;
	const char *field, *group_by;
	long long k;
	bool include_missing;
};

static const plg_option tk_own[] = {
	{ "field", "string", true, NULL, "the field whose most frequent values are reported" },
	{ "k", "integer", false, "10", "how many values" },
	{ "group_by", "string", false, NULL, "a field that partitions the batch" },
	{ "include_missing", "boolean", false, "false", "count null as a value" },
	{ NULL }
};
static const plg_option *const tk_opts[] = { tk_own, plg__schema_opts, plg__input_opts, NULL };

static void tk_close(void *state)
{
	struct top_k *t = state;

	if (!t)
		return;
	plg__schema_free(t->schema);
	free(t);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct top_k *t = state;
	int rc;

	t->k = 10;
	if ((rc = plg__check_options(opts, tk_opts, err)) ||
	    (rc = plg__opt_field(opts, "field", true, &t->field, err)) ||
	    (rc = plg__opt_field(opts, "group_by", false, &t->group_by, err)) ||
	    (rc = core_opt_int(opts, "k", 1, 1e9, &t->k, err)) ||
	    (rc = core_opt_bool(opts, "include_missing", &t->include_missing, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (t->group_by && !strcmp(t->group_by, t->field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "group_by"),
				   "group_by and field must differ");
	return 0;
}

static int tk_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct top_k), parse_options, tk_close, options, state, err);
}

static bool non_finite(const json_t *v)
{
	return json_is_real(v) && !isfinite(json_real_value(v));
}

typedef struct entry {
	const json_t *value;
	long long count;
	size_t first;
} entry;

static int by_count(const void *a, const void *b)
{
	const entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The row of one group: members[idx[0..m)]. */
static json_t *group_row(const struct top_k *t, json_t *const *members,
			 const size_t *idx, size_t m, const json_t *group, core_err *err)
{
	entry *e = calloc(m ? m : 1, sizeof(*e));
	long long missing = 0, nonfin = 0, count = 0;
	size_t ne = 0;
	json_t *row = NULL, *top;

	if (!e) {
		core_err_set(err, CORE_ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < m; i++) {
		const json_t *v = json_object_get(members[idx[i]], t->field);
		size_t j;

		if (v && (json_is_object(v) || json_is_array(v))) {
			core_err_set(err, CORE_EDATA,
				"Field '%s' must be a scalar top-k value (str, int, float, bool, "
				"or None), got %s in row %zu", t->field, core_py_type(v), idx[i]);
			free(e);
			return NULL;
		}
		if (!v || json_is_null(v)) {
			missing++;
			if (!t->include_missing)
				continue;
			v = json_null();
		}
		if (non_finite(v)) {
			nonfin++;
			continue;
		}
		for (j = 0; j < ne && !plg__same_bucket(e[j].value, v); j++)
			;
		if (j == ne)
			e[ne++] = (entry){ v, 0, j };
		e[j].count++;
		count++;
	}
	qsort(e, ne, sizeof(*e), by_count);
	top = json_array();
	for (size_t i = 0; top && i < ne && (long long)i < t->k; i++)
		json_array_append_new(top, json_pack("{s:O,s:I,s:f}", "value", e[i].value,
			"count", (json_int_t)e[i].count,
			"rate", count ? (double)e[i].count / (double)count : 0.0));
	if (top)
		row = json_pack("{s:s,s:s?,s:O,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
			"field", t->field, "group_by", t->group_by,
			"group_value", group ? group : json_null(),
			"batch_size", (json_int_t)m, "count", (json_int_t)count,
			"missing_count", (json_int_t)missing,
			"non_finite_count", (json_int_t)nonfin,
			"distinct_count", (json_int_t)ne, "k", (json_int_t)t->k,
			"top_values", top);
	free(e);
	if (!row)
		core_err_set(err, CORE_ENOMEM, "out of memory");
	return row;
}

static int tk_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct top_k *t = state;
	size_t *idx = calloc(n ? n : 1, sizeof(*idx));
	bool *done = calloc(n ? n : 1, sizeof(*done));
	json_t *rows = json_array();
	int rc = 0;

	if (passthrough)
		rc = plg__summary_only("batch_top_k", passthrough, err);
	else if (!idx || !done || !rows)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && t->group_by && i < n; i++)
		if (non_finite(json_object_get(members[i], t->group_by)))
			rc = core_err_set(err, CORE_EDATA,
				"validation_failed: non_finite_group_key in field '%s' (row %zu)",
				t->group_by, i);
	for (size_t i = 0; !rc && i < n; i++) {
		const json_t *g = t->group_by ? json_object_get(members[i], t->group_by) : NULL;
		size_t m = 0;
		json_t *row;

		if (done[i])
			continue;
		if (t->group_by && !g)
			g = json_null();
		for (size_t j = i; j < n; j++) {
			const json_t *h = t->group_by ? json_object_get(members[j], t->group_by) : NULL;

			if (!done[j] && (!t->group_by || plg__same_bucket(g, h ? h : json_null()))) {
				done[j] = true;
				idx[m++] = j;
			}
		}
		if (!(row = group_row(t, members, idx, m, g, err)))
			rc = err->code;
		else if (json_array_append_new(rows, row))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	free(idx);
	free(done);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int tk_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"batch_size", "count", "distinct_count", "field", "group_by",
		"group_value", "k", "missing_count", "non_finite_count", "top_values", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_top_k = {
	.name = "batch_top_k",
	.description = "The most frequent values of a field over a batch, per group (ELSPETH 0.7.1)",
	.options = tk_opts,
	.open = tk_open,
	.flush = tk_flush,
	.close = tk_close,
	.outputs = tk_outputs,
};

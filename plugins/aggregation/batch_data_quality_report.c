/*
 * batch_data_quality_report.c — ELSPETH 0.7.1's
 * "batch_data_quality_report" aggregation: missing, blank, invalid and
 * duplicate counts of fields over a batch (ADR 0045).
 *
 * One row per field of `inspect_fields` (1 to 128, unique), in order:
 * {field, batch_size, missing_count, missing_rate, observed_count,
 * blank_string_count, blank_string_rate, non_finite_count,
 * non_scalar_count, valid_count, valid_rate, distinct_count,
 * duplicate_count, observed_type_counts}. A value is missing when absent
 * or null; otherwise its Python type is counted; a blank string (empty
 * after trimming), NaN or infinity, and a list or object are counted
 * apart; the rest are valid, distinct by type and value (1, 1.0 and true
 * are three values). Rates are over the batch's size.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

#define MAX_INSPECT 128

struct dq {
	plg_schema *schema;
	size_t n;
	const char **fields;
};

static const plg_option dq_own[] = {
	{ "inspect_fields", "array", true, NULL, "the fields profiled (1 to 128)" },
	{ NULL }
};
static const plg_option *const dq_opts[] = { dq_own, plg__schema_opts, plg__input_opts, NULL };

static void dq_close(void *state)
{
	struct dq *t = state;

	if (!t)
		return;
	free(t->fields);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct dq *t = state;
	const core_node *list = core_map_get(opts, "inspect_fields");
	int rc;

	if ((rc = plg__check_options(opts, dq_opts, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!list)
		return core_err_missing(err, opts, "inspect_fields", "inspect_fields",
					"a list of field names");
	if ((rc = core_node_str_list(list, &t->fields, &t->n, err)))
		return rc;
	if (!t->n)
		return core_err_at(err, CORE_ECONFIG, list,
				   "inspect_fields must contain at least one field");
	if (t->n > MAX_INSPECT)
		return core_err_at(err, CORE_ECONFIG, list,
				   "inspect_fields must contain at most %d fields", MAX_INSPECT);
	for (size_t i = 0; i < t->n; i++) {
		if (!t->fields[i][strspn(t->fields[i], " \t\r\n")])
			return core_err_at(err, CORE_ECONFIG, list->items[i],
					   "inspect_fields[%zu] must not be empty", i);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->fields[i], t->fields[j]))
				return core_err_at(err, CORE_ECONFIG, list->items[i],
					"Duplicate inspect_fields values: %s", t->fields[i]);
	}
	return 0;
}

static int dq_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct dq), parse_options, dq_close, options, state, err);
}

static bool blank(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && !s[strspn(s, " \t\n\r\f\v")];
}

static json_t *field_row(const char *field, json_t *const *members, size_t n)
{
	const json_t **valid = calloc(n ? n : 1, sizeof(*valid));
	size_t missing = 0, blanks = 0, nonfin = 0, nonscalar = 0, nvalid = 0, distinct = 0;
	json_t *types = json_object(), *row = NULL;

	if (!valid || !types)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_object_get(members[i], field);
		const char *type;
		json_t *c;

		if (!v || json_is_null(v)) {
			missing++;
			continue;
		}
		type = core_py_type(v);
		c = json_object_get(types, type);
		if (json_object_set_new(types, type, json_integer(c ? json_integer_value(c) + 1 : 1)))
			goto out;
		if (json_is_string(v) && blank(v))
			blanks++;
		else if (json_is_real(v) && !isfinite(json_real_value(v)))
			nonfin++;
		else if (json_is_object(v) || json_is_array(v))
			nonscalar++;
		else
			valid[nvalid++] = v;
	}
	for (size_t i = 0; i < nvalid; i++) {
		size_t j = 0;

		while (j < i && !plg__same_bucket(valid[j], valid[i]))
			j++;
		distinct += j == i;
	}
	row = json_pack("{s:s,s:I,s:I,s:f,s:I,s:I,s:f,s:I,s:I,s:I,s:f,s:I,s:I,s:O}",
		"field", field, "batch_size", (json_int_t)n,
		"missing_count", (json_int_t)missing, "missing_rate", (double)missing / (double)n,
		"observed_count", (json_int_t)(n - missing),
		"blank_string_count", (json_int_t)blanks,
		"blank_string_rate", (double)blanks / (double)n,
		"non_finite_count", (json_int_t)nonfin, "non_scalar_count", (json_int_t)nonscalar,
		"valid_count", (json_int_t)nvalid, "valid_rate", (double)nvalid / (double)n,
		"distinct_count", (json_int_t)distinct,
		"duplicate_count", (json_int_t)(nvalid - distinct),
		"observed_type_counts", types);
out:
	json_decref(types);
	free(valid);
	return row;
}

static int dq_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct dq *t = state;
	json_t *rows;

	if (passthrough)
		return plg__summary_only("batch_data_quality_report", passthrough, err);
	if (!(rows = json_array()))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < t->n; i++) {
		json_t *row = field_row(t->fields[i], members, n);

		if (!row || json_array_append_new(rows, row)) {
			json_decref(rows);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
	}
	*out = rows;
	return 0;
}

static int dq_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"batch_size", "blank_string_count", "blank_string_rate", "distinct_count",
		"duplicate_count", "field", "missing_count", "missing_rate",
		"non_finite_count", "non_scalar_count", "observed_count",
		"observed_type_counts", "valid_count", "valid_rate", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_data_quality_report = {
	.name = "batch_data_quality_report",
	.description = "Missing, blank, invalid and duplicate counts of fields over a batch (ELSPETH 0.7.1)",
	.options = dq_opts,
	.open = dq_open,
	.flush = dq_flush,
	.close = dq_close,
	.outputs = dq_outputs,
};

/*
 * batch_threshold_summary.c — ELSPETH 0.7.1's "batch_threshold_summary"
 * aggregation: how many of a batch's values meet each named threshold
 * (ADR 0045).
 *
 * `thresholds: [{name, operator: < <= > >= == !=, value}]` (1 to 128,
 * names unique, values finite; a value is a float, as 0.7.1 reads it).
 * One row per threshold, in order: {value_field, threshold_name,
 * operator, threshold, batch_size, valid_count, missing_count,
 * non_finite_count, match_count, non_match_count, match_rate}. A missing
 * or null value and NaN/infinity are counted and skipped; a value that is
 * not a number (a bool is not), and a batch with no finite value, fail
 * the batch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

#define MAX_THRESHOLDS 128

enum { OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE };
static const char *const op_names[] = { "<", "<=", ">", ">=", "==", "!=", NULL };

struct threshold {
	const char *name;
	int op;
	double value;
};

struct ts {
	plg_schema *schema;
	const char *value_field;
	size_t n;
	struct threshold *th;
};

static const plg_option ts_own[] = {
	{ "value_field", "string", true, NULL, "the numeric field evaluated" },
	{ "thresholds", "array", true, NULL,
	  "[{name, operator: < <= > >= == !=, value}], 1 to 128" },
	{ NULL }
};
static const plg_option *const ts_opts[] = { ts_own, plg__schema_opts, plg__input_opts, NULL };

static void ts_close(void *state)
{
	struct ts *t = state;

	if (!t)
		return;
	free(t->th);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_thresholds(struct ts *t, const core_node *list, core_err *err)
{
	static const char *const keys[] = { "name", "operator", "value", NULL };
	int rc;

	if (list->kind != CORE_NODE_SEQ || !list->len)
		return core_err_at(err, CORE_ECONFIG, list,
				   "thresholds must contain at least one threshold");
	if (list->len > MAX_THRESHOLDS)
		return core_err_at(err, CORE_ECONFIG, list,
				   "thresholds must contain at most %d entries", MAX_THRESHOLDS);
	if (!(t->th = calloc(list->len, sizeof(*t->th))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < list->len; i++) {
		const core_node *e = list->items[i];
		const core_node *op = core_map_get(e, "operator");
		struct threshold *th = &t->th[i];

		if (e->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, e, "expected {name, operator, value}");
		if ((rc = core_map_check_keys(e, keys, err)) ||
		    (rc = plg__opt_field(e, "name", true, &th->name, err)))
			return rc;
		if (!op || !core_map_get(e, "value"))
			return core_err_missing(err, e, op ? "value" : "operator",
						op ? "value" : "operator",
						op ? "a finite number" : "< <= > >= == !=");
		if ((rc = core_node_enum(op, op_names, &th->op, err)) ||
		    (rc = core_opt_double(e, "value", -HUGE_VAL, HUGE_VAL, &th->value, err)))
			return rc;
		if (!isfinite(th->value))
			return core_err_at(err, CORE_ECONFIG, core_map_get(e, "value"),
					   "threshold value must be finite");
		for (size_t j = 0; j < i; j++)
			if (!strcmp(t->th[j].name, th->name))
				return core_err_at(err, CORE_ECONFIG, core_map_get(e, "name"),
						   "Duplicate threshold names: %s", th->name);
		t->n++;
	}
	return 0;
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct ts *t = state;
	const core_node *list = core_map_get(opts, "thresholds");
	int rc;

	if ((rc = plg__check_options(opts, ts_opts, err)) ||
	    (rc = plg__opt_field(opts, "value_field", true, &t->value_field, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!list)
		return core_err_missing(err, opts, "thresholds", "thresholds",
					"a list of {name, operator, value}");
	return parse_thresholds(t, list, err);
}

static int ts_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct ts), parse_options, ts_close, options, state, err);
}

static bool matches(double v, const struct threshold *th)
{
	switch (th->op) {
	case OP_LT: return v < th->value;
	case OP_LE: return v <= th->value;
	case OP_GT: return v > th->value;
	case OP_GE: return v >= th->value;
	case OP_EQ: return v == th->value;
	default: return v != th->value;
	}
}

static int ts_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct ts *t = state;
	double *vals = calloc(n ? n : 1, sizeof(*vals));
	size_t nv = 0, missing = 0, nonfin = 0;
	json_t *rows = NULL;
	int rc = 0;

	if (passthrough)
		rc = plg__summary_only("batch_threshold_summary", passthrough, err);
	else if (!vals)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		const json_t *v = json_object_get(members[i], t->value_field);

		if (!v || json_is_null(v))
			missing++;
		else if (!json_is_number(v))
			rc = core_err_set(err, CORE_EDATA,
				"Field '%s' must be numeric (int or float), got %s in row %zu",
				t->value_field, core_py_type(v), i);
		else if (!isfinite(json_number_value(v)))
			nonfin++;
		else
			vals[nv++] = json_number_value(v);
	}
	if (!rc && !nv)
		rc = core_err_set(err, CORE_EDATA,
			"validation_failed: no_finite_values in field '%s' (batch of %zu: "
			"%zu missing, %zu non-finite)", t->value_field, n, missing, nonfin);
	if (!rc && !(rows = json_array()))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t k = 0; !rc && k < t->n; k++) {
		const struct threshold *th = &t->th[k];
		size_t m = 0;
		json_t *row;

		for (size_t i = 0; i < nv; i++)
			m += matches(vals[i], th);
		row = json_pack("{s:s,s:s,s:s,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:f}",
			"value_field", t->value_field, "threshold_name", th->name,
			"operator", op_names[th->op], "threshold", th->value,
			"batch_size", (json_int_t)n, "valid_count", (json_int_t)nv,
			"missing_count", (json_int_t)missing,
			"non_finite_count", (json_int_t)nonfin,
			"match_count", (json_int_t)m, "non_match_count", (json_int_t)(nv - m),
			"match_rate", (double)m / (double)nv);
		if (!row || json_array_append_new(rows, row))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	free(vals);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int ts_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"batch_size", "match_count", "match_rate", "missing_count",
		"non_finite_count", "non_match_count", "operator", "threshold",
		"threshold_name", "valid_count", "value_field", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_threshold_summary = {
	.name = "batch_threshold_summary",
	.description = "How many of a batch's values meet each named threshold (ELSPETH 0.7.1)",
	.options = ts_opts,
	.open = ts_open,
	.flush = ts_flush,
	.close = ts_close,
	.outputs = ts_outputs,
};

/*
 * t_analysis.c — the analyses of ELSPETH's mcp/analyzers/reports.py:
 * get_error_analysis, get_llm_usage_report and get_outcome_analysis.
 */
#include <string.h>

#include "mcp/mcp_internal.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The one column of each row, JSON text parsed (NULL or "": null). */
static int parsed_column(const json_t *rows, const char *column, json_t **out,
			 core_err *err)
{
	const mcp__field f[] = { { "v", column, MCP__JSON }, { NULL } };
	json_t *shaped, *list, *o;
	size_t i;
	int rc = mcp__shape_all(rows, f, &shaped, err);

	if (rc)
		return rc;
	list = json_array();
	rc = list ? 0 : mcp__oom(err);
	json_array_foreach(rc ? NULL : shaped, i, o)
		if ((rc = mcp__append(list, json_incref(json_object_get(o, "v")), err)))
			break;
	json_decref(shaped);
	if (rc)
		json_decref(list);
	else
		*out = list;
	return rc;
}

/* {"total": sum of count, by: groups, samples: parsed samples}. */
static int error_group(json_t *groups, const char *by, json_t *samples,
		       const char *sample_key, json_t **out, core_err *err)
{
	long long total = 0;
	json_t *g;
	size_t i;

	json_array_foreach(groups, i, g)
		total += json_integer_value(json_object_get(g, "count"));
	*out = json_pack("{s:I, s:o, s:o}", "total", (json_int_t)total, by, groups,
			 sample_key, samples);
	return *out ? 0 : mcp__oom(err);
}

int mcp__get_error_analysis(mcp_server *s, const json_t *a, mcp_result *r,
			    core_err *err)
{
	static const mcp__field vf[] = {
		{ "source_plugin", "plugin_name", MCP__RAW },
		{ "schema_mode", NULL, MCP__RAW }, { "count", NULL, MCP__RAW }, { NULL }
	};
	static const mcp__field tf[] = {
		{ "transform_plugin", "plugin_name", MCP__RAW },
		{ "count", NULL, MCP__RAW }, { NULL }
	};
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *rows[4] = { NULL }, *vg = NULL, *tg = NULL, *vs = NULL, *ts = NULL;
	json_t *vobj = NULL, *tobj = NULL;
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	json_decref(run);
	rc = mcp__rows(s, &rows[0], err,
		"SELECT nodes.plugin_name, validation_errors.schema_mode, "
		"count(validation_errors.error_id) AS count FROM validation_errors "
		"LEFT OUTER JOIN nodes ON validation_errors.node_id = nodes.node_id "
		"AND validation_errors.run_id = nodes.run_id WHERE validation_errors.run_id = ? "
		"GROUP BY nodes.plugin_name, validation_errors.schema_mode", "s", run_id);
	if (!rc)
		rc = mcp__rows(s, &rows[1], err,
			"SELECT nodes.plugin_name, count(transform_errors.error_id) AS count "
			"FROM transform_errors LEFT OUTER JOIN nodes ON transform_errors.transform_id "
			"= nodes.node_id AND transform_errors.run_id = nodes.run_id "
			"WHERE transform_errors.run_id = ? GROUP BY nodes.plugin_name", "s", run_id);
	if (!rc)
		rc = mcp__rows(s, &rows[2], err, "SELECT row_data_json FROM validation_errors "
			       "WHERE run_id = ? LIMIT 5 OFFSET 0", "s", run_id);
	if (!rc)
		rc = mcp__rows(s, &rows[3], err, "SELECT error_details_json FROM transform_errors "
			       "WHERE run_id = ? LIMIT 5 OFFSET 0", "s", run_id);
	if (!rc && !(rc = mcp__shape_all(rows[0], vf, &vg, err)) &&
	    !(rc = mcp__shape_all(rows[1], tf, &tg, err)) &&
	    !(rc = parsed_column(rows[2], "row_data_json", &vs, err)) &&
	    !(rc = parsed_column(rows[3], "error_details_json", &ts, err))) {
		rc = error_group(vg, "by_source", vs, "sample_data", &vobj, err);
		vg = vs = NULL;
		if (!rc)
			rc = error_group(tg, "by_transform", ts, "sample_details", &tobj, err);
		tg = ts = NULL;
	}
	if (!rc && !(r->value = json_pack("{s:s, s:o, s:o}", "run_id", run_id,
					  "validation_errors", vobj, "transform_errors", tobj)))
		rc = mcp__oom(err);
	else if (rc) {
		json_decref(vobj);
		json_decref(tobj);
	}
	for (int i = 0; i < 4; i++)
		json_decref(rows[i]);
	json_decref(vg);
	json_decref(tg);
	json_decref(vs);
	json_decref(ts);
	return rc;
}

/* ------------------------------------------------------------- LLM */

/* Adds one (plugin, call type, status) group to ELSPETH's by_plugin. */
static int llm_add(json_t *by, const json_t *row, core_err *err)
{
	const char *plugin = str(row, "plugin_name") ? str(row, "plugin_name") : "null";
	const char *status = str(row, "status");
	const char *k = status && !strcmp(status, "success") ? "successful" : "failed";
	long long n = json_integer_value(json_object_get(row, "count"));
	json_t *st = json_object_get(by, plugin);
	mcp__num lat = { 0 };

	if (!st) {
		st = json_pack("{s:i, s:i, s:i, s:f, s:i}", "total_calls", 0, "successful", 0,
			       "failed", 0, "avg_latency_ms", 0.0, "total_latency_ms", 0);
		if (mcp__set(by, plugin, st, err))
			return CORE_ENOMEM;
	}
	json_integer_set(json_object_get(st, "total_calls"),
			 json_integer_value(json_object_get(st, "total_calls")) + n);
	json_integer_set(json_object_get(st, k), json_integer_value(json_object_get(st, k)) + n);
	/* Python: total_latency_ms (an int 0 at first) += total_latency or 0 */
	mcp__num_add(&lat, json_object_get(st, "total_latency_ms"));
	mcp__num_add(&lat, json_object_get(row, "total_latency"));
	return mcp__set(st, "total_latency_ms", mcp__num_json(&lat), err);
}

/* ELSPETH's by_plugin; *calls and *latency: its totals. */
static int llm_by_plugin(const json_t *rows, json_t **out, mcp__num *calls,
			 mcp__num *latency, core_err *err)
{
	json_t *by = json_object(), *row, *st;
	const char *k;
	size_t i;
	int rc = by ? 0 : mcp__oom(err);

	json_array_foreach(rc ? NULL : rows, i, row)
		if ((rc = llm_add(by, row, err)))
			break;
	json_object_foreach(rc ? NULL : by, k, st) {
		long long n = json_integer_value(json_object_get(st, "total_calls"));
		double tot = mcp__double(json_object_get(st, "total_latency_ms"));

		if (n > 0 && (rc = mcp__set(st, "avg_latency_ms",
					    json_real(mcp__round(tot / (double)n, 2)), err)))
			break;
		calls->i += n;
		mcp__num_add(latency, json_object_get(st, "total_latency_ms"));
	}
	if (rc)
		json_decref(by);
	else
		*out = by;
	return rc;
}

/* [{call_type, count}] -> {call_type: count} */
static int type_map(const json_t *rows, json_t **out, core_err *err)
{
	json_t *m = json_object(), *t;
	size_t i;
	int rc = m ? 0 : mcp__oom(err);

	json_array_foreach(rc ? NULL : rows, i, t) {
		const char *k = str(t, "call_type");

		if ((rc = mcp__set(m, k ? k : "null",
				   json_incref(json_object_get(t, "count")), err)))
			break;
	}
	if (rc)
		json_decref(m);
	else
		*out = m;
	return rc;
}

int mcp__get_llm_usage_report(mcp_server *s, const json_t *a, mcp_result *r,
			      core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *llm = NULL, *types = NULL, *tmap = NULL, *by = NULL, *sum;
	mcp__num calls = { 0 }, latency = { 0 };
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	json_decref(run);
	rc = mcp__rows(s, &llm, err,
		"SELECT plugin_name, call_type, status, count(*) AS count, "
		"avg(latency_ms) AS avg_latency, min(latency_ms) AS min_latency, "
		"max(latency_ms) AS max_latency, sum(latency_ms) AS total_latency FROM ("
		"SELECT nodes.plugin_name AS plugin_name, calls.call_type AS call_type, "
		"calls.status AS status, calls.latency_ms AS latency_ms FROM calls "
		"JOIN node_states ON calls.state_id = node_states.state_id JOIN nodes "
		"ON node_states.node_id = nodes.node_id AND node_states.run_id = nodes.run_id "
		"WHERE node_states.run_id = ?1 AND calls.call_type = 'llm' UNION ALL "
		"SELECT nodes.plugin_name AS plugin_name, calls.call_type AS call_type, "
		"calls.status AS status, calls.latency_ms AS latency_ms FROM calls "
		"JOIN operations ON calls.operation_id = operations.operation_id JOIN nodes "
		"ON operations.node_id = nodes.node_id AND operations.run_id = nodes.run_id "
		"WHERE operations.run_id = ?1 AND calls.call_type = 'llm') AS anon_1 "
		"GROUP BY plugin_name, call_type, status", "s", run_id);
	if (!rc)
		rc = mcp__rows(s, &types, err,
			"SELECT call_type, count(*) AS count FROM ("
			"SELECT calls.call_type AS call_type FROM calls JOIN node_states "
			"ON calls.state_id = node_states.state_id WHERE node_states.run_id = ?1 "
			"UNION ALL SELECT calls.call_type AS call_type FROM calls JOIN operations "
			"ON calls.operation_id = operations.operation_id "
			"WHERE operations.run_id = ?1) AS anon_1 GROUP BY call_type", "s", run_id);
	if (!rc && !json_array_size(llm) && !json_array_size(types)) {
		r->value = json_pack("{s:s, s:s, s:{}}", "run_id", run_id, "message",
				     "No external calls found in this run", "call_types");
		rc = r->value ? 0 : mcp__oom(err);
		goto out;
	}
	if (!rc)
		rc = type_map(types, &tmap, err);
	if (!rc)
		rc = llm_by_plugin(llm, &by, &calls, &latency, err);
	if (!rc) {
		sum = json_pack("{s:I, s:o, s:o}", "total_calls", (json_int_t)calls.i,
				"total_latency_ms", mcp__num_json(&latency), "avg_latency_ms",
				calls.i > 0 ? json_real(mcp__round(mcp__num_double(&latency) /
								   (double)calls.i, 2))
					    : json_null());
		r->value = json_pack("{s:s, s:O, s:o, s:O}", "run_id", run_id, "call_types", tmap,
				     "llm_summary", sum, "by_plugin", by);
		rc = r->value ? 0 : mcp__oom(err);
	}
out:
	json_decref(llm);
	json_decref(types);
	json_decref(tmap);
	json_decref(by);
	return rc;
}

/* --------------------------------------------------------- outcomes */

static int outcome_parts(mcp_server *s, const char *run_id, json_t *out,
			 core_err *err)
{
	static const mcp__field f[] = {
		{ "outcome", NULL, MCP__RAW }, { "is_terminal", NULL, MCP__BOOL },
		{ "count", NULL, MCP__RAW }, { NULL }
	};
	json_t *rows, *dist = NULL, *sinks = json_object(), *o;
	long long forks = 0, joins = 0, term = 0, nonterm = 0;
	size_t i;
	int rc = mcp__rows(s, &rows, err, "SELECT outcome, is_terminal, count(outcome_id) AS count "
			   "FROM token_outcomes WHERE run_id = ? GROUP BY outcome, is_terminal",
			   "s", run_id);

	if (!rc)
		rc = mcp__shape_all(rows, f, &dist, err);
	json_decref(rows);
	rows = NULL;
	if (!rc)
		rc = mcp__rows(s, &rows, err, "SELECT sink_name, count(outcome_id) AS count "
			       "FROM token_outcomes WHERE run_id = ? AND sink_name IS NOT NULL "
			       "GROUP BY sink_name", "s", run_id);
	json_array_foreach(rc ? NULL : rows, i, o)
		if ((rc = mcp__set(sinks, str(o, "sink_name"),
				   json_incref(json_object_get(o, "count")), err)))
			break;
	json_decref(rows);
	if (!rc)
		rc = mcp__count(s, &forks, err, "SELECT count(DISTINCT fork_group_id) FROM "
				"token_outcomes WHERE run_id = ? AND fork_group_id IS NOT NULL",
				"s", run_id);
	if (!rc)
		rc = mcp__count(s, &joins, err, "SELECT count(DISTINCT join_group_id) FROM "
				"token_outcomes WHERE run_id = ? AND join_group_id IS NOT NULL",
				"s", run_id);
	json_array_foreach(rc ? NULL : dist, i, o) {
		long long n = json_integer_value(json_object_get(o, "count"));

		if (json_is_true(json_object_get(o, "is_terminal")))
			term += n;
		else
			nonterm += n;
	}
	if (!rc)
		rc = mcp__set(out, "summary", json_pack("{s:I, s:I, s:I, s:I}",
			"terminal_tokens", (json_int_t)term, "non_terminal_tokens",
			(json_int_t)nonterm, "fork_operations", (json_int_t)forks,
			"join_operations", (json_int_t)joins), err);
	if (!rc) {
		rc = mcp__set(out, "outcome_distribution", dist, err);
		dist = NULL;
	}
	if (!rc) {
		rc = mcp__set(out, "sink_distribution", sinks, err);
		sinks = NULL;
	}
	json_decref(dist);
	json_decref(sinks);
	return rc;
}

int mcp__get_outcome_analysis(mcp_server *s, const json_t *a, mcp_result *r,
			      core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *out;
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	json_decref(run);
	if (!(out = json_pack("{s:s}", "run_id", run_id)))
		return mcp__oom(err);
	if ((rc = outcome_parts(s, run_id, out, err)))
		json_decref(out);
	else
		r->value = out;
	return rc;
}

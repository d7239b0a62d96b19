/*
 * t_diag.c — the emergency tools of ELSPETH's mcp/analyzers/
 * diagnostics.py: diagnose, get_failure_context, get_recent_activity.
 * "Now" is the server's clock (mcp_opts.now_ns pins it); times compare as
 * the text ELSPETH's SQLite stores.
 */
#include <stdio.h>
#include <string.h>

#include "mcp/mcp_internal.h"

#define HOUR_US 3600000000LL

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The values of column `col` of rows, as a new array. */
static json_t *column(const json_t *rows, const char *col)
{
	json_t *a = json_array(), *r;
	size_t i;

	json_array_foreach(rows, i, r)
		if (!a || json_array_append(a, json_object_get(r, col))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* Adds a problem (and its recommendations) to the report. */
static int problem(json_t *problems, json_t *recs, json_t *p, core_err *err,
		   const char *rec1, const char *rec2)
{
	if (mcp__append(problems, p, err) ||
	    (rec1 && mcp__append(recs, json_string(rec1), err)) ||
	    (rec2 && mcp__append(recs, json_string(rec2), err)))
		return CORE_ENOMEM;
	return 0;
}

/* The problems' messages start with their counts: "N what". */
static void set_message(json_t *p, long long n, const char *what)
{
	char msg[128];

	snprintf(msg, sizeof(msg), "%lld %s", n, what);
	json_object_set_new(p, "message", json_string(msg));
}

/* A problem about runs: {severity, type, count, run_ids, message}. */
static json_t *runs_problem(const char *severity, const char *type,
			    const json_t *rows, const char *what)
{
	json_t *p = json_pack("{s:s, s:s, s:I, s:o, s:s}", "severity", severity,
			      "type", type, "count", (json_int_t)json_array_size(rows),
			      "run_ids", column(rows, "run_id"), "message", "");

	if (p)
		set_message(p, (long long)json_array_size(rows), what);
	return p;
}

static int failed_and_stuck(mcp_server *s, const char *stuck, json_t *problems,
			    json_t *recs, core_err *err)
{
	json_t *rows;
	int rc = mcp__rows(s, &rows, err, "SELECT run_id, started_at, completed_at FROM runs "
			   "WHERE status = 'failed' ORDER BY started_at DESC LIMIT 5 OFFSET 0", "");

	if (!rc && json_array_size(rows))
		rc = problem(problems, recs, runs_problem("CRITICAL", "failed_runs", rows,
			     "failed run(s) found"), err,
			     "Use get_run_summary(run_id) on failed runs to see error counts", NULL);
	json_decref(rows);
	if (rc || (rc = mcp__rows(s, &rows, err, "SELECT run_id, started_at FROM runs "
				  "WHERE status = 'running' AND completed_at IS NULL AND "
				  "started_at < ? ORDER BY started_at LIMIT 5 OFFSET 0", "s", stuck)))
		return rc;
	if (json_array_size(rows))
		rc = problem(problems, recs, runs_problem("WARNING", "stuck_runs", rows,
			     "run(s) still in 'running' status"), err,
			     "Check if process is still running; may need manual intervention", NULL);
	json_decref(rows);
	return rc;
}

static int stuck_operations(mcp_server *s, const char *stuck, json_t *problems,
			    json_t *recs, core_err *err)
{
	static const mcp__field f[] = {
		{ "operation_id", NULL, MCP__SHORT }, { "run_id", NULL, MCP__SHORT },
		{ "type", "operation_type", MCP__RAW }, { "started", "started_at", MCP__TIME },
		{ NULL }
	};
	json_t *rows, *ops, *p;
	size_t n;
	int rc = mcp__rows(s, &rows, err, "SELECT operation_id, run_id, operation_type, "
			   "started_at FROM operations WHERE status = 'open' AND started_at < ? "
			   "ORDER BY started_at LIMIT 5 OFFSET 0", "s", stuck);

	if (rc || !(n = json_array_size(rows)) || (rc = mcp__shape_all(rows, f, &ops, err))) {
		json_decref(rows);
		return rc;
	}
	json_decref(rows);
	p = json_pack("{s:s, s:s, s:I, s:o, s:s}", "severity", "WARNING", "type",
		      "stuck_operations", "count", (json_int_t)n, "operations", ops,
		      "message", "");
	if (p)
		set_message(p, (long long)n, "operation(s) stuck in 'open' status for > 1 hour");
	return problem(problems, recs, p, err, "Stuck operations may indicate: (1) streaming "
		       "source still active, (2) process crashed during I/O, (3) database "
		       "connection issue", "Use list_operations(run_id, status='open') to see "
		       "all open operations");
}

static int error_rates(mcp_server *s, json_t *problems, json_t *recs, core_err *err)
{
	static const mcp__field f[] = {
		{ "run_id", NULL, MCP__RAW }, { "errors", "val_errors", MCP__RAW }, { NULL }
	};
	json_t *rows, *runs, *p;
	size_t n;
	int rc = mcp__rows(s, &rows, err, "SELECT runs.run_id, count(validation_errors.error_id) "
			   "AS val_errors FROM runs LEFT OUTER JOIN validation_errors ON "
			   "runs.run_id = validation_errors.run_id WHERE runs.status = 'completed' "
			   "GROUP BY runs.run_id HAVING count(validation_errors.error_id) > 10 "
			   "ORDER BY count(validation_errors.error_id) DESC LIMIT 5 OFFSET 0", "");

	if (rc || !(n = json_array_size(rows)) || (rc = mcp__shape_all(rows, f, &runs, err))) {
		json_decref(rows);
		return rc;
	}
	json_decref(rows);
	p = json_pack("{s:s, s:s, s:o, s:s}", "severity", "WARNING", "type",
		      "high_error_rates", "runs", runs, "message", "");
	if (p)
		set_message(p, (long long)n, "run(s) with high error counts");
	return problem(problems, recs, p, err,
		       "Use get_error_analysis(run_id) to identify error patterns", NULL);
}

static int quarantined(mcp_server *s, const char *recent, json_t *problems,
		       json_t *recs, core_err *err)
{
	long long n;
	json_t *p;
	int rc = mcp__count(s, &n, err, "SELECT count(outcome_id) FROM token_outcomes "
			    "WHERE outcome = 'quarantined' AND run_id IN "
			    "(SELECT run_id FROM runs WHERE started_at >= ?)", "s", recent);

	if (rc || !n)
		return rc;
	p = json_pack("{s:s, s:s, s:I, s:s}", "severity", "INFO", "type",
		      "quarantined_rows", "count", (json_int_t)n, "message", "");
	if (p)
		set_message(p, n, "row(s) quarantined in recent runs");
	return problem(problems, recs, p, err,
		       "Quarantined rows indicate data quality issues at source", NULL);
}

static const char *overall(const json_t *problems)
{
	const json_t *p;
	size_t i;

	json_array_foreach(problems, i, p)
		if (!strcmp(str(p, "severity"), "CRITICAL"))
			return "CRITICAL";
	return json_array_size(problems) ? "WARNING" : "OK";
}

int mcp__diagnose(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	static const mcp__field f[] = {
		{ "run_id", NULL, MCP__SHORT }, { "status", NULL, MCP__RAW },
		{ "started", "started_at", MCP__TIME }, { NULL }
	};
	long long now = mcp__now_us(s);
	json_t *problems = json_array(), *recs = json_array(), *rows = NULL, *recent = NULL;
	char stuck[32], day[32];
	int rc = problems && recs ? 0 : mcp__oom(err);

	(void)a;
	mcp__time_text(now - HOUR_US, stuck);
	mcp__time_text(now - 24 * HOUR_US, day);
	if (!rc)
		rc = failed_and_stuck(s, stuck, problems, recs, err);
	if (!rc)
		rc = stuck_operations(s, stuck, problems, recs, err);
	if (!rc)
		rc = error_rates(s, problems, recs, err);
	if (!rc)
		rc = mcp__rows(s, &rows, err, "SELECT run_id, status, started_at, completed_at "
			       "FROM runs ORDER BY started_at DESC LIMIT 10 OFFSET 0", "");
	if (!rc)
		rc = quarantined(s, day, problems, recs, err);
	if (!rc)
		rc = mcp__shape_all(rows, f, &recent, err);
	if (!rc && !(r->value = json_pack("{s:s, s:O, s:o, s:O, s:[ssss]}",
		"status", overall(problems), "problems", problems, "recent_runs", recent,
		"recommendations", recs, "next_steps",
		"Use list_runs() to see all runs with their status",
		"Use get_run_summary(run_id) on a specific run for details",
		"Use get_error_analysis(run_id) to understand error patterns",
		"Use explain_token(run_id, token_id=...) to trace a specific failure")))
		rc = mcp__oom(err);
	else if (rc)
		json_decref(recent);
	json_decref(problems);
	json_decref(recs);
	json_decref(rows);
	return rc;
}

/* ------------------------------------------------ failure context */

static int failure_lists(mcp_server *s, const char *run_id, long long limit,
			 json_t **states, json_t **terrs, json_t **verrs, core_err *err)
{
	static const mcp__field sf[] = {
		{ "state_id", NULL, MCP__RAW }, { "token_id", NULL, MCP__RAW },
		{ "plugin", "plugin_name", MCP__RAW }, { "type", "node_type", MCP__RAW },
		{ "step", "step_index", MCP__RAW }, { "attempt", NULL, MCP__RAW },
		{ "started", "started_at", MCP__TIME }, { NULL }
	};
	static const mcp__field tf[] = {
		{ "token_id", NULL, MCP__RAW }, { "plugin", "plugin_name", MCP__RAW },
		{ "details", "error_details_json", MCP__JSON }, { NULL }
	};
	static const mcp__field vf[] = {
		{ "plugin", "plugin_name", MCP__RAW }, { "row_hash", NULL, MCP__SHORT },
		{ "sample_data", "row_data_json", MCP__JSON }, { NULL }
	};
	json_t *rows[3] = { NULL }, *v;
	size_t i;
	int rc = mcp__rows(s, &rows[0], err,
		"SELECT node_states.state_id, node_states.token_id, node_states.node_id, "
		"node_states.step_index, node_states.attempt, node_states.started_at, "
		"node_states.completed_at, nodes.plugin_name, nodes.node_type FROM node_states "
		"JOIN nodes ON node_states.node_id = nodes.node_id AND node_states.run_id = "
		"nodes.run_id WHERE node_states.run_id = ? AND node_states.status = 'failed' "
		"ORDER BY node_states.started_at DESC LIMIT ? OFFSET 0", "si", run_id, limit);

	if (!rc)
		rc = mcp__rows(s, &rows[1], err,
			"SELECT transform_errors.token_id, transform_errors.transform_id, "
			"transform_errors.error_details_json, nodes.plugin_name FROM transform_errors "
			"LEFT OUTER JOIN nodes ON transform_errors.transform_id = nodes.node_id AND "
			"transform_errors.run_id = nodes.run_id WHERE transform_errors.run_id = ? "
			"ORDER BY transform_errors.created_at DESC LIMIT ? OFFSET 0", "si",
			run_id, limit);
	if (!rc)
		rc = mcp__rows(s, &rows[2], err,
			"SELECT validation_errors.node_id, validation_errors.row_hash, "
			"validation_errors.row_data_json, nodes.plugin_name FROM validation_errors "
			"LEFT OUTER JOIN nodes ON validation_errors.node_id = nodes.node_id AND "
			"validation_errors.run_id = nodes.run_id WHERE validation_errors.run_id = ? "
			"ORDER BY validation_errors.created_at DESC LIMIT ? OFFSET 0", "si",
			run_id, limit);
	/* A validation error naming a node the run does not have: ELSPETH
	 * calls it Tier-1 corruption and refuses to answer. */
	json_array_foreach(rc ? NULL : rows[2], i, v)
		if (str(v, "node_id") && !str(v, "plugin_name")) {
			rc = core_err_set(err, CORE_EDATA, "Tier-1 corruption: validation_errors "
					  "row has node_id='%s' but no matching node in nodes "
					  "table for run_id='%s'", str(v, "node_id"), run_id);
			break;
		}
	*states = *terrs = *verrs = NULL;
	if (!rc && !(rc = mcp__shape_all(rows[0], sf, states, err)) &&
	    !(rc = mcp__shape_all(rows[1], tf, terrs, err)))
		rc = mcp__shape_all(rows[2], vf, verrs, err);
	for (i = 0; i < 3; i++)
		json_decref(rows[i]);
	return rc;
}

/* plugins_failing, has_retries and the counts. */
static json_t *patterns(const json_t *states, const json_t *terrs, const json_t *verrs)
{
	json_t *plugins = json_array(), *st, *p;
	bool retries = false;
	size_t i, j;

	json_array_foreach(states, i, st) {
		const char *pl = str(st, "plugin");
		bool seen = false;

		retries |= json_integer_value(json_object_get(st, "attempt")) > 0;
		if (!pl || !*pl)
			continue;
		json_array_foreach(plugins, j, p)
			seen |= !strcmp(json_string_value(p), pl);
		if (!seen)
			json_array_append_new(plugins, json_string(pl));
	}
	return json_pack("{s:o, s:b, s:I, s:I, s:I}", "plugins_failing", plugins,
			 "has_retries", retries, "failure_count",
			 (json_int_t)json_array_size(states), "transform_error_count",
			 (json_int_t)json_array_size(terrs), "validation_error_count",
			 (json_int_t)json_array_size(verrs));
}

int mcp__get_failure_context(mcp_server *s, const json_t *a, mcp_result *r,
			     core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *states, *terrs, *verrs;
	char step[256];
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	rc = failure_lists(s, run_id, mcp__arg_int(a, "limit"), &states, &terrs, &verrs, err);
	snprintf(step, sizeof(step), "Use explain_token(run_id='%s', token_id='...') to "
		 "trace a specific failure", run_id);
	if (!rc && !(r->value = json_pack("{s:s, s:O, s:O, s:O, s:O, s:o, s:[sss]}",
		"run_id", run_id, "run_status", json_object_get(run, "status"),
		"failed_node_states", states, "transform_errors", terrs,
		"validation_errors", verrs, "patterns", patterns(states, terrs, verrs),
		"next_steps", step, "Check transform error details for exception messages",
		"Look at validation errors for data quality issues at source")))
		rc = mcp__oom(err);
	json_decref(states);
	json_decref(terrs);
	json_decref(verrs);
	json_decref(run);
	return rc;
}

/* -------------------------------------------------- recent activity */

/* {run_id: count} of per-run counts from sql (runs started since). */
static int counts_by_run(mcp_server *s, const char *sql, const char *since,
			 json_t **out, core_err *err)
{
	json_t *rows, *m = NULL, *r;
	size_t i;
	int rc = mcp__rows(s, &rows, err, sql, "s", since);

	if (!rc && !(m = json_object()))
		rc = mcp__oom(err);
	json_array_foreach(rc ? NULL : rows, i, r)
		if ((rc = mcp__set(m, str(r, "run_id"), json_incref(json_object_get(r, "cnt")), err)))
			break;
	json_decref(rows);
	if (rc) {
		json_decref(m);
		m = NULL;
	}
	*out = m;
	return rc;
}

static json_t *activity_line(const json_t *run, const json_t *rows, const json_t *states)
{
	const char *id = str(run, "run_id") ? str(run, "run_id") : "";
	const json_t *nr = json_object_get(rows, id), *ns = json_object_get(states, id);

	return json_pack("{s:o, s:O, s:O, s:o, s:o, s:o, s:o}", "run_id", mcp__short(id),
			 "full_run_id", json_object_get(run, "run_id"),
			 "status", json_object_get(run, "status"),
			 "started", mcp__iso(json_object_get(run, "started_at")),
			 "duration_seconds", mcp__duration(run),
			 "rows_processed", nr ? json_incref((json_t *)nr) : json_integer(0),
			 "node_executions", ns ? json_incref((json_t *)ns) : json_integer(0));
}

static int activity(mcp_server *s, const char *since, json_t *out, core_err *err)
{
	json_t *runs, *rows = NULL, *states = NULL, *list = json_array(), *sum = json_object(), *r;
	size_t i;
	int rc = mcp__rows(s, &runs, err, "SELECT run_id, status, started_at, completed_at "
			   "FROM runs WHERE started_at >= ? ORDER BY started_at DESC", "s", since);

	if (!rc)
		rc = counts_by_run(s, "SELECT run_id, count(*) AS cnt FROM rows WHERE run_id IN "
				   "(SELECT run_id FROM runs WHERE started_at >= ?) GROUP BY run_id",
				   since, &rows, err);
	if (!rc)
		rc = counts_by_run(s, "SELECT run_id, count(*) AS cnt FROM node_states WHERE "
				   "run_id IN (SELECT run_id FROM runs WHERE started_at >= ?) "
				   "GROUP BY run_id", since, &states, err);
	json_array_foreach(rc ? NULL : runs, i, r) {
		const char *st = str(r, "status") ? str(r, "status") : "null";
		json_t *n = json_object_get(sum, st);

		if ((rc = mcp__append(list, activity_line(r, rows, states), err)) ||
		    (rc = mcp__set(sum, st, json_integer(json_integer_value(n) + 1), err)))
			break;
	}
	if (!rc && !(rc = mcp__set(out, "total_runs", json_integer((json_int_t)json_array_size(list)), err)) &&
	    !(rc = mcp__set(out, "status_summary", json_incref(sum), err)))
		rc = mcp__set(out, "runs", json_incref(list), err);
	json_decref(runs);
	json_decref(rows);
	json_decref(states);
	json_decref(list);
	json_decref(sum);
	return rc;
}

int mcp__get_recent_activity(mcp_server *s, const json_t *a, mcp_result *r,
			     core_err *err)
{
	/* datetime's range, years 1 to 9999, in microseconds since 1970 */
	static const double min_us = -62135596800e6, max_us = 253402300799e6;
	long long minutes = mcp__arg_int(a, "minutes");
	double cutoff = (double)mcp__now_us(s) - (double)minutes * 60e6;
	char since[32];
	json_t *out;
	int rc;

	if (cutoff < min_us || cutoff > max_us)
		return core_err_set(err, CORE_EDATA, "'minutes' is out of range: %lld minutes "
				    "before now is not a date", minutes);
	mcp__time_text(mcp__now_us(s) - minutes * 60000000LL, since);
	if (!(out = json_pack("{s:I}", "time_window_minutes", (json_int_t)minutes)))
		return mcp__oom(err);
	if ((rc = activity(s, since, out, err)))
		json_decref(out);
	else
		r->value = out;
	return rc;
}

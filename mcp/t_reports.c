/*
 * t_reports.c — the run reports of ELSPETH's mcp/analyzers/reports.py:
 * get_run_summary, get_dag_structure (with its Mermaid diagram) and
 * get_performance_report. Numbers follow Python: counts are ints, SQL
 * averages and sums of FLOAT columns are floats, round() is Python's.
 */
#include <string.h>

#include "mcp/mcp_internal.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* ---------------------------------------------------------- summary */

static int counts(mcp_server *s, const char *run, json_t **out, long long *verr,
		  long long *terr, core_err *err)
{
	static const struct {
		const char *name, *sql;
	} q[] = {
		{ "rows", "SELECT count(*) FROM rows WHERE run_id = ?" },
		{ "tokens", "SELECT count(*) FROM tokens JOIN rows ON tokens.row_id = rows.row_id "
			    "WHERE rows.run_id = ?" },
		{ "nodes", "SELECT count(*) FROM nodes WHERE run_id = ?" },
		{ "node_states", "SELECT count(*) FROM node_states WHERE run_id = ?" },
		{ "operations", "SELECT count(*) FROM operations WHERE run_id = ?" },
		{ "source_loads", "SELECT count(*) FROM operations WHERE run_id = ? "
				  "AND operation_type = 'source_load'" },
		{ "sink_writes", "SELECT count(*) FROM operations WHERE run_id = ? "
				 "AND operation_type = 'sink_write'" },
	};
	json_t *o = json_object();
	long long n;
	int rc = o ? 0 : mcp__oom(err);

	for (size_t i = 0; !rc && i < sizeof(q) / sizeof(q[0]); i++)
		if (!(rc = mcp__count(s, &n, err, q[i].sql, "s", run)))
			rc = mcp__set(o, q[i].name, json_integer(n), err);
	if (!rc)
		rc = mcp__count(s, verr, err, "SELECT count(*) FROM validation_errors "
				"WHERE run_id = ?", "s", run);
	if (!rc)
		rc = mcp__count(s, terr, err, "SELECT count(*) FROM transform_errors "
				"WHERE run_id = ?", "s", run);
	if (rc)
		json_decref(o);
	else
		*out = o;
	return rc;
}

/* {value of column k: value of column v} over rows. */
static int to_map(const json_t *rows, const char *k, const char *v, json_t **out,
		  core_err *err)
{
	json_t *m = json_object(), *row;
	size_t i;
	int rc = m ? 0 : mcp__oom(err);

	json_array_foreach(rows, i, row) {
		const char *key = str(row, k);

		if (rc)
			break;
		/* A NULL key is Python's None; JSON can only say "null". */
		rc = mcp__set(m, key ? key : "null", json_deep_copy(json_object_get(row, v)), err);
	}
	if (rc)
		json_decref(m);
	else
		*out = m;
	return rc;
}

static int summary(mcp_server *s, const char *run_id, json_t *out,
		   core_err *err)
{
	json_t *c, *dist, *rows, *avg;
	long long verr, terr;
	int rc;

	if ((rc = counts(s, run_id, &c, &verr, &terr, err)) ||
	    (rc = mcp__set(out, "counts", c, err)))
		return rc;
	if ((rc = mcp__set(out, "errors", json_pack("{s:I, s:I, s:I}", "validation",
		(json_int_t)verr, "transform", (json_int_t)terr, "total",
		(json_int_t)(verr + terr)), err)))
		return rc;
	if ((rc = mcp__rows(s, &rows, err, "SELECT outcome, count(*) AS count "
			    "FROM token_outcomes WHERE run_id = ? GROUP BY outcome", "s", run_id)))
		return rc;
	rc = to_map(rows, "outcome", "count", &dist, err);
	json_decref(rows);
	if (rc || (rc = mcp__set(out, "outcome_distribution", dist, err)))
		return rc;
	if ((rc = mcp__row(s, &rows, err, "SELECT avg(duration_ms) AS a FROM node_states "
			   "WHERE run_id = ?", "s", run_id)))
		return rc;
	avg = json_object_get(rows, "a");
	rc = mcp__set(out, "avg_state_duration_ms", json_is_number(avg)
		      ? json_real(mcp__round(mcp__double(avg), 2)) : json_null(), err);
	json_decref(rows);
	return rc;
}

int mcp__get_run_summary(mcp_server *s, const json_t *a, mcp_result *r,
			 core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *out;
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	out = json_pack("{s:s, s:O, s:o, s:o, s:o}", "run_id", run_id,
			"status", json_object_get(run, "status"),
			"started_at", mcp__iso(json_object_get(run, "started_at")),
			"completed_at", mcp__iso(json_object_get(run, "completed_at")),
			"run_duration_seconds", mcp__duration(run));
	rc = out ? summary(s, run_id, out, err) : mcp__oom(err);
	json_decref(run);
	if (rc)
		json_decref(out);
	else
		r->value = out;
	return rc;
}

/* -------------------------------------------------------------- DAG */

static int dag_lists(const json_t *nodes, const json_t *edges, json_t *out,
		     core_err *err)
{
	json_t *nl = json_array(), *el = json_array(), *e, *n;
	size_t i;
	int rc = nl && el ? 0 : mcp__oom(err);

	json_array_foreach(nodes, i, n) {
		if (rc || (rc = mcp__append(nl, json_pack("{s:O, s:O, s:O, s:O}",
			"node_id", json_object_get(n, "node_id"),
			"plugin_name", json_object_get(n, "plugin_name"),
			"node_type", json_object_get(n, "node_type"),
			"sequence", json_object_get(n, "sequence_in_pipeline")), err)))
			break;
	}
	json_array_foreach(edges, i, e) {
		const char *mode = str(e, "default_mode");
		bool divert = mode && !strcmp(mode, "divert");

		if (rc || (rc = mcp__append(el, json_pack("{s:O, s:O, s:O, s:O, s:s}",
			"from", json_object_get(e, "from_node_id"),
			"to", json_object_get(e, "to_node_id"),
			"label", json_object_get(e, "label"),
			"mode", json_object_get(e, "default_mode"),
			"flow_type", divert ? "divert" : "normal"), err)))
			break;
	}
	if (!rc)
		rc = mcp__set(out, "nodes", json_incref(nl), err);
	if (!rc)
		rc = mcp__set(out, "edges", json_incref(el), err);
	json_decref(nl);
	json_decref(el);
	return rc;
}

/* ELSPETH's terminal_sink_map: a node whose on_success edge moves to a
 * sink -> that sink's plugin name. */
static int sink_map(const json_t *nodes, const json_t *edges, json_t **out,
		    core_err *err)
{
	json_t *m = json_object(), *e, *n;
	size_t i, j;
	int rc = m ? 0 : mcp__oom(err);

	json_array_foreach(edges, i, e) {
		const char *label = str(e, "label"), *mode = str(e, "default_mode");
		const char *to = str(e, "to_node_id"), *from = str(e, "from_node_id");

		if (rc || !label || strcmp(label, "on_success") || !mode ||
		    strcmp(mode, "move") || !to || !from)
			continue;
		json_array_foreach(nodes, j, n) {
			const char *id = str(n, "node_id"), *type = str(n, "node_type");

			if (id && type && !strcmp(id, to) && !strcmp(type, "sink")) {
				rc = mcp__set(m, from, json_deep_copy(json_object_get(n, "plugin_name")), err);
				break;
			}
		}
	}
	if (rc)
		json_decref(m);
	else
		*out = m;
	return rc;
}

static long alias_of(const json_t *nodes, const char *id)
{
	const json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (id && str(n, "node_id") && !strcmp(str(n, "node_id"), id))
			return (long)i;
	return -1;
}

static int mermaid(const json_t *nodes, const json_t *edges, json_t **out,
		   core_err *err)
{
	core_buf b = { 0 };
	const json_t *n, *e;
	size_t i;
	int rc = core_buf_puts(&b, "graph TD");

	json_array_foreach(nodes, i, n)
		if (!rc)
			rc = core_buf_printf(&b, "\n    N%zu[\"%s[%s]\"]", i, str(n, "plugin_name"),
					     str(n, "node_type"));
	json_array_foreach(edges, i, e) {
		const char *label = str(e, "label"), *mode = str(e, "default_mode");
		long from = alias_of(nodes, str(e, "from_node_id"));
		long to = alias_of(nodes, str(e, "to_node_id"));

		if (rc)
			break;
		if (from < 0 || to < 0) {
			rc = core_err_set(err, CORE_EDATA, "edge %s joins a node the run does "
					  "not have (%s -> %s)", str(e, "edge_id"),
					  str(e, "from_node_id"), str(e, "to_node_id"));
			break;
		}
		if (mode && !strcmp(mode, "divert"))
			rc = core_buf_printf(&b, "\n    N%ld -.->|%s| N%ld", from, label, to);
		else if (label && !strcmp(label, "continue"))
			rc = core_buf_printf(&b, "\n    N%ld --> N%ld", from, to);
		else
			rc = core_buf_printf(&b, "\n    N%ld -->|%s| N%ld", from, label, to);
	}
	if (!rc && !(*out = json_string(b.data)))
		rc = mcp__oom(err);
	else if (rc == CORE_ENOMEM)
		mcp__oom(err);
	core_buf_release(&b);
	return rc;
}

int mcp__get_dag_structure(mcp_server *s, const json_t *a, mcp_result *r,
			   core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *nodes, *edges = NULL, *out = NULL, *v;
	int rc = mcp__rows(s, &nodes, err, "SELECT * FROM nodes WHERE run_id = ? "
			   "ORDER BY sequence_in_pipeline NULLS LAST, registered_at, node_id",
			   "s", run_id);

	if (!rc)
		rc = mcp__rows(s, &edges, err, "SELECT * FROM edges WHERE run_id = ? "
			       "ORDER BY created_at, edge_id", "s", run_id);
	if (!rc && !json_array_size(nodes)) {
		rc = mcp__answer_error(r, err, "Run '%s' not found or has no nodes", run_id);
		goto out;
	}
	if (!rc && !(out = json_pack("{s:s}", "run_id", run_id)))
		rc = mcp__oom(err);
	if (!rc)
		rc = dag_lists(nodes, edges, out, err);
	if (!rc)
		rc = mcp__set(out, "node_count", json_integer((json_int_t)json_array_size(nodes)), err);
	if (!rc)
		rc = mcp__set(out, "edge_count", json_integer((json_int_t)json_array_size(edges)), err);
	if (!rc && !(rc = sink_map(nodes, edges, &v, err)))
		rc = mcp__set(out, "terminal_sink_map", v, err);
	if (!rc && !(rc = mermaid(nodes, edges, &v, err)))
		rc = mcp__set(out, "mermaid", v, err);
	if (!rc) {
		r->value = out;
		out = NULL;
	}
out:
	json_decref(out);
	json_decref(nodes);
	json_decref(edges);
	return rc;
}

/* ------------------------------------------------------ performance */

/* One node's line of the report. */
static json_t *perf_line(const json_t *row, const json_t *failures, double total)
{
	const json_t *avg = json_object_get(row, "avg_ms");
	const json_t *tot = json_object_get(row, "total_ms");
	const json_t *f = json_object_get(failures, str(row, "node_id") ? str(row, "node_id") : "");
	json_t *pct;

	/* Python: ((total_ms or 0) / total * 100) if total > 0 else 0 */
	pct = total > 0 ? json_real(mcp__round(mcp__double(tot) / total * 100, 1))
			: json_integer(0);
	return json_pack("{s:O, s:O, s:O, s:O, s:o, s:O, s:O, s:O, s:o, s:o}",
			 "node_id", json_object_get(row, "node_id"),
			 "plugin", json_object_get(row, "plugin_name"),
			 "type", json_object_get(row, "node_type"),
			 "executions", json_object_get(row, "executions"),
			 "avg_ms", json_is_number(avg) ? json_real(mcp__round(mcp__double(avg), 2))
						       : json_null(),
			 "min_ms", json_object_get(row, "min_ms"),
			 "max_ms", json_object_get(row, "max_ms"),
			 "total_ms", tot,
			 "pct_of_total", pct,
			 "failures", f ? json_incref((json_t *)f) : json_integer(0));
}

static bool bottleneck(const json_t *line)
{
	return mcp__double(json_object_get(line, "pct_of_total")) > 20;
}

static bool high_variance(const json_t *line)
{
	const json_t *avg = json_object_get(line, "avg_ms"), *max = json_object_get(line, "max_ms");

	return json_is_number(avg) && json_is_number(max) &&
	       mcp__double(max) > 5 * mcp__double(avg);
}

static int perf_lists(const json_t *stats, const json_t *failures,
		      const mcp__num *total, json_t *out, core_err *err)
{
	json_t *all = json_array(), *bn = json_array(), *hv = json_array(), *row;
	size_t i;
	int rc = all && bn && hv ? 0 : mcp__oom(err);

	json_array_foreach(stats, i, row) {
		json_t *line;

		if (rc)
			break;
		if (!(line = perf_line(row, failures, mcp__num_double(total)))) {
			rc = mcp__oom(err);
			break;
		}
		if (bottleneck(line))
			json_array_append(bn, line);
		if (high_variance(line))
			json_array_append(hv, line);
		rc = mcp__append(all, line, err);
	}
	if (!rc)
		rc = mcp__set(out, "node_count", json_integer((json_int_t)json_array_size(all)), err);
	if (!rc)
		rc = mcp__set(out, "bottlenecks", json_incref(bn), err);
	if (!rc)
		rc = mcp__set(out, "high_variance_nodes", json_incref(hv), err);
	if (!rc)
		rc = mcp__set(out, "node_performance", json_incref(all), err);
	json_decref(all);
	json_decref(bn);
	json_decref(hv);
	return rc;
}

int mcp__get_performance_report(mcp_server *s, const json_t *a, mcp_result *r,
				core_err *err)
{
	const char *run_id = mcp__arg_str(a, "run_id");
	json_t *run, *stats = NULL, *fails = NULL, *fmap = NULL, *out = NULL, *row;
	mcp__num total = { 0 };
	size_t i;
	int rc = mcp__run_or_answer(s, run_id, r, &run, err);

	if (rc || !run)
		return rc;
	json_decref(run);
	rc = mcp__rows(s, &stats, err,
		"SELECT nodes.node_id, nodes.plugin_name, nodes.node_type, "
		"count(node_states.state_id) AS executions, avg(node_states.duration_ms) AS avg_ms, "
		"min(node_states.duration_ms) AS min_ms, max(node_states.duration_ms) AS max_ms, "
		"sum(node_states.duration_ms) AS total_ms FROM node_states JOIN nodes "
		"ON node_states.node_id = nodes.node_id AND node_states.run_id = nodes.run_id "
		"WHERE node_states.run_id = ? GROUP BY nodes.node_id, nodes.plugin_name, "
		"nodes.node_type ORDER BY sum(node_states.duration_ms) DESC", "s", run_id);
	if (!rc)
		rc = mcp__rows(s, &fails, err, "SELECT node_id, count(state_id) AS failures "
			       "FROM node_states WHERE run_id = ? AND status = 'failed' "
			       "GROUP BY node_id", "s", run_id);
	if (!rc)
		rc = to_map(fails, "node_id", "failures", &fmap, err);
	json_array_foreach(rc ? NULL : stats, i, row)
		mcp__num_add(&total, json_object_get(row, "total_ms"));
	if (!rc && !(out = json_pack("{s:s, s:o}", "run_id", run_id,
				     "total_processing_time_ms", mcp__num_json(&total))))
		rc = mcp__oom(err);
	if (!rc)
		rc = perf_lists(stats, fmap, &total, out, err);
	if (!rc) {
		r->value = out;
		out = NULL;
	}
	json_decref(out);
	json_decref(stats);
	json_decref(fails);
	json_decref(fmap);
	return rc;
}

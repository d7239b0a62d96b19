/*
 * t_query.c — the listing tools (ELSPETH's mcp/analyzers/queries.py):
 * list_runs, get_run, list_nodes, list_rows, list_tokens, list_operations,
 * get_operation_calls, get_node_states, get_calls, get_errors. The SQL is
 * the SQL ELSPETH's SQLAlchemy issues, so rows come in the same order
 * (also where it gives none), and each answer has its fields, in its
 * order.
 */
#include <string.h>

#include "mcp/mcp_internal.h"

/* ELSPETH's Run, Node and Call records (contracts/audit.py), field order
 * as their dataclasses declare them. Shared with t_explain.c. */
const mcp__field mcp__run_fields[] = {
	{ "run_id", NULL, MCP__RAW }, { "started_at", NULL, MCP__TIME },
	{ "config_hash", NULL, MCP__RAW }, { "settings_json", NULL, MCP__RAW },
	{ "canonical_version", NULL, MCP__RAW }, { "status", NULL, MCP__RAW },
	{ "completed_at", NULL, MCP__TIME },
	{ "reproducibility_grade", NULL, MCP__RAW },
	{ "export_status", NULL, MCP__RAW }, { "export_error", NULL, MCP__RAW },
	{ "exported_at", NULL, MCP__TIME }, { "export_format", NULL, MCP__RAW },
	{ "export_sink", NULL, MCP__RAW }, { NULL }
};

static const mcp__field node_fields[] = {
	{ "node_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
	{ "plugin_name", NULL, MCP__RAW }, { "node_type", NULL, MCP__RAW },
	{ "plugin_version", NULL, MCP__RAW }, { "determinism", NULL, MCP__RAW },
	{ "config_hash", NULL, MCP__RAW }, { "config_json", NULL, MCP__RAW },
	{ "registered_at", NULL, MCP__TIME }, { "schema_hash", NULL, MCP__RAW },
	{ "sequence_in_pipeline", NULL, MCP__RAW }, { "schema_mode", NULL, MCP__RAW },
	{ "schema_fields", "schema_fields_json", MCP__JSON }, { NULL }
};

const mcp__field mcp__call_fields[] = {
	{ "call_id", NULL, MCP__RAW }, { "call_index", NULL, MCP__RAW },
	{ "call_type", NULL, MCP__RAW }, { "status", NULL, MCP__RAW },
	{ "request_hash", NULL, MCP__RAW }, { "created_at", NULL, MCP__TIME },
	{ "state_id", NULL, MCP__RAW }, { "operation_id", NULL, MCP__RAW },
	{ "request_ref", NULL, MCP__RAW }, { "response_hash", NULL, MCP__RAW },
	{ "response_ref", NULL, MCP__RAW }, { "error_json", NULL, MCP__RAW },
	{ "latency_ms", NULL, MCP__RAW }, { NULL }
};

/* rows: SELECT ... into fields, as the answer. */
static int answer(mcp_result *r, json_t *rows, const mcp__field *f,
		  core_err *err)
{
	int rc = mcp__shape_all(rows, f, &r->value, err);

	json_decref(rows);
	return rc;
}

/* Whether v is one of choices. */
static bool one_of(const char *v, const char *const *choices)
{
	for (; *choices; choices++)
		if (!strcmp(v, *choices))
			return true;
	return false;
}

int mcp__list_runs(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	static const char *const valid[] = { "running", "completed", "failed", "interrupted", NULL };
	static const mcp__field f[] = {
		{ "run_id", NULL, MCP__RAW }, { "status", NULL, MCP__RAW },
		{ "started_at", NULL, MCP__TIME }, { "completed_at", NULL, MCP__TIME },
		{ "config_hash", NULL, MCP__RAW }, { "export_status", NULL, MCP__RAW },
		{ NULL }
	};
	const char *status = mcp__arg_str(a, "status");
	long long limit = mcp__arg_int(a, "limit");
	json_t *rows;
	int rc;

	if (status && !one_of(status, valid))
		return core_err_set(err, CORE_EDATA, "Invalid status '%s'. Valid: "
				    "['running', 'completed', 'failed', 'interrupted']", status);
	rc = status ? mcp__rows(s, &rows, err, "SELECT * FROM runs WHERE status = ? "
				"ORDER BY started_at DESC LIMIT ? OFFSET 0", "si", status, limit)
		    : mcp__rows(s, &rows, err, "SELECT * FROM runs "
				"ORDER BY started_at DESC LIMIT ? OFFSET 0", "i", limit);
	return rc ? rc : answer(r, rows, f, err);
}

int mcp__get_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	json_t *run;
	int rc = mcp__run(s, mcp__arg_str(a, "run_id"), &run, err);

	if (rc)
		return rc;
	if (!run) {
		r->value = json_null(); /* ELSPETH answers None: "null" */
		return 0;
	}
	rc = mcp__shape(run, mcp__run_fields, &r->value, err);
	json_decref(run);
	return rc;
}

int mcp__list_nodes(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	json_t *rows;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM nodes WHERE run_id = ? "
			   "ORDER BY sequence_in_pipeline NULLS LAST, registered_at, node_id",
			   "s", mcp__arg_str(a, "run_id"));

	return rc ? rc : answer(r, rows, node_fields, err);
}

int mcp__list_rows(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	static const mcp__field f[] = {
		{ "row_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
		{ "source_node_id", NULL, MCP__RAW }, { "row_index", NULL, MCP__RAW },
		{ "source_data_hash", NULL, MCP__RAW }, { "source_data_ref", NULL, MCP__RAW },
		{ "created_at", NULL, MCP__TIME }, { NULL }
	};
	json_t *rows;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM rows WHERE run_id = ? "
			   "ORDER BY row_index LIMIT ? OFFSET ?", "sii",
			   mcp__arg_str(a, "run_id"), mcp__arg_int(a, "limit"),
			   mcp__arg_int(a, "offset"));

	return rc ? rc : answer(r, rows, f, err);
}

int mcp__list_tokens(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	static const mcp__field f[] = {
		{ "token_id", NULL, MCP__RAW }, { "row_id", NULL, MCP__RAW },
		{ "branch_name", NULL, MCP__RAW }, { "fork_group_id", NULL, MCP__RAW },
		{ "join_group_id", NULL, MCP__RAW }, { "step_in_pipeline", NULL, MCP__RAW },
		{ "expand_group_id", NULL, MCP__RAW }, { "created_at", NULL, MCP__TIME },
		{ NULL }
	};
#define TOKENS_SQL "SELECT tokens.token_id, tokens.row_id, tokens.run_id, " \
	"tokens.fork_group_id, tokens.join_group_id, tokens.expand_group_id, " \
	"tokens.branch_name, tokens.step_in_pipeline, tokens.created_at " \
	"FROM tokens JOIN rows ON tokens.row_id = rows.row_id WHERE rows.run_id = ?"
	const char *run = mcp__arg_str(a, "run_id"), *row = mcp__arg_str(a, "row_id");
	long long limit = mcp__arg_int(a, "limit");
	json_t *rows;
	int rc = row ? mcp__rows(s, &rows, err, TOKENS_SQL " AND tokens.row_id = ? "
				 "LIMIT ? OFFSET 0", "ssi", run, row, limit)
		     : mcp__rows(s, &rows, err, TOKENS_SQL " LIMIT ? OFFSET 0", "si",
				 run, limit);
#undef TOKENS_SQL

	return rc ? rc : answer(r, rows, f, err);
}

int mcp__list_operations(mcp_server *s, const json_t *a, mcp_result *r,
			 core_err *err)
{
	static const char *const types[] = { "source_load", "sink_write", NULL };
	static const char *const statuses[] = { "open", "completed", "failed", "pending", NULL };
	static const mcp__field f[] = {
		{ "operation_id", NULL, MCP__RAW }, { "run_id", NULL, MCP__RAW },
		{ "node_id", NULL, MCP__RAW }, { "plugin_name", NULL, MCP__RAW },
		{ "operation_type", NULL, MCP__RAW }, { "status", NULL, MCP__RAW },
		{ "started_at", NULL, MCP__TIME }, { "completed_at", NULL, MCP__TIME },
		{ "duration_ms", NULL, MCP__RAW }, { "error_message", NULL, MCP__RAW },
		{ NULL }
	};
	const char *type = mcp__arg_str(a, "operation_type");
	const char *status = mcp__arg_str(a, "status");
	json_t *rows;
	int rc;

	if (type && !one_of(type, types))
		return core_err_set(err, CORE_EDATA, "Invalid operation_type '%s'. "
				    "Valid: source_load, sink_write", type);
	if (status && !one_of(status, statuses))
		return core_err_set(err, CORE_EDATA, "Invalid status '%s'. Valid: "
				    "('open', 'completed', 'failed', 'pending')", status);
	/* A NULL filter matches everything: "? IS NULL OR ..." keeps one
	 * statement for the four combinations. */
	rc = mcp__rows(s, &rows, err,
		       "SELECT operations.*, nodes.plugin_name FROM operations "
		       "JOIN nodes ON operations.node_id = nodes.node_id "
		       "AND operations.run_id = nodes.run_id "
		       "WHERE operations.run_id = ? "
		       "AND (?2 IS NULL OR operations.operation_type = ?2) "
		       "AND (?3 IS NULL OR operations.status = ?3) "
		       "ORDER BY operations.started_at DESC LIMIT ?4 OFFSET 0",
		       "sssi", mcp__arg_str(a, "run_id"), type, status,
		       mcp__arg_int(a, "limit"));
	return rc ? rc : answer(r, rows, f, err);
}

int mcp__get_operation_calls(mcp_server *s, const json_t *a, mcp_result *r,
			     core_err *err)
{
	static const mcp__field f[] = {
		{ "call_id", NULL, MCP__RAW }, { "operation_id", NULL, MCP__RAW },
		{ "call_index", NULL, MCP__RAW }, { "call_type", NULL, MCP__RAW },
		{ "status", NULL, MCP__RAW }, { "latency_ms", NULL, MCP__RAW },
		{ "request_hash", NULL, MCP__RAW }, { "response_hash", NULL, MCP__RAW },
		{ "created_at", NULL, MCP__TIME }, { NULL }
	};
	json_t *rows;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM calls WHERE operation_id = ? "
			   "ORDER BY call_index", "s", mcp__arg_str(a, "operation_id"));

	return rc ? rc : answer(r, rows, f, err);
}

int mcp__get_node_states(mcp_server *s, const json_t *a, mcp_result *r,
			 core_err *err)
{
	static const char *const valid[] = { "open", "pending", "completed", "failed", NULL };
	static const mcp__field f[] = {
		{ "state_id", NULL, MCP__RAW }, { "token_id", NULL, MCP__RAW },
		{ "node_id", NULL, MCP__RAW }, { "step_index", NULL, MCP__RAW },
		{ "attempt", NULL, MCP__RAW }, { "status", NULL, MCP__RAW },
		{ "input_hash", NULL, MCP__RAW }, { "output_hash", NULL, MCP__RAW },
		{ "duration_ms", NULL, MCP__RAW }, { "started_at", NULL, MCP__TIME },
		{ "completed_at", NULL, MCP__TIME }, { NULL }
	};
	const char *status = mcp__arg_str(a, "status");
	json_t *rows;
	int rc;

	if (status && !one_of(status, valid))
		return core_err_set(err, CORE_EDATA, "Invalid status '%s'. Valid: "
				    "['open', 'pending', 'completed', 'failed']", status);
	rc = mcp__rows(s, &rows, err,
		       "SELECT * FROM node_states WHERE run_id = ? "
		       "AND (?2 IS NULL OR node_id = ?2) AND (?3 IS NULL OR status = ?3) "
		       "ORDER BY step_index, attempt, token_id LIMIT ?4 OFFSET 0",
		       "sssi", mcp__arg_str(a, "run_id"), mcp__arg_str(a, "node_id"),
		       status, mcp__arg_int(a, "limit"));
	return rc ? rc : answer(r, rows, f, err);
}

int mcp__get_calls(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	json_t *rows;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM calls WHERE state_id = ? "
			   "ORDER BY call_index", "s", mcp__arg_str(a, "state_id"));

	return rc ? rc : answer(r, rows, mcp__call_fields, err);
}

static int validation_errors(mcp_server *s, const char *run, long long limit,
			     json_t *out, core_err *err)
{
	static const mcp__field f[] = {
		{ "error_id", NULL, MCP__RAW }, { "node_id", NULL, MCP__RAW },
		{ "row_hash", NULL, MCP__RAW }, { "row_data", "row_data_json", MCP__JSON },
		{ "schema_mode", NULL, MCP__RAW }, { "created_at", NULL, MCP__TIME },
		{ NULL }
	};
	json_t *rows, *list;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM validation_errors "
			   "WHERE run_id = ? ORDER BY created_at DESC LIMIT ? OFFSET 0",
			   "si", run, limit);

	if (rc)
		return rc;
	rc = mcp__shape_all(rows, f, &list, err);
	json_decref(rows);
	return rc ? rc : mcp__set(out, "validation_errors", list, err);
}

static int transform_errors(mcp_server *s, const char *run, long long limit,
			    json_t *out, core_err *err)
{
	static const mcp__field f[] = {
		{ "error_id", NULL, MCP__RAW }, { "token_id", NULL, MCP__RAW },
		{ "transform_id", NULL, MCP__RAW },
		{ "row_data", "row_data_json", MCP__JSON },
		{ "error_details", "error_details_json", MCP__JSON },
		{ "created_at", NULL, MCP__TIME }, { NULL }
	};
	json_t *rows, *list;
	int rc = mcp__rows(s, &rows, err, "SELECT * FROM transform_errors "
			   "WHERE run_id = ? ORDER BY created_at DESC LIMIT ? OFFSET 0",
			   "si", run, limit);

	if (rc)
		return rc;
	rc = mcp__shape_all(rows, f, &list, err);
	json_decref(rows);
	return rc ? rc : mcp__set(out, "transform_errors", list, err);
}

int mcp__get_errors(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const char *type = mcp__arg_str(a, "error_type");
	const char *run = mcp__arg_str(a, "run_id");
	long long limit = mcp__arg_int(a, "limit");
	bool all = !strcmp(type, "all");
	json_t *out;
	int rc;

	if (!all && strcmp(type, "validation") && strcmp(type, "transform"))
		return core_err_set(err, CORE_EDATA, "Invalid error_type '%s'. Must be "
				    "one of: all, transform, validation", type);
	if (!(out = json_pack("{s:s}", "run_id", run)))
		return mcp__oom(err);
	rc = 0;
	if (all || !strcmp(type, "validation"))
		rc = validation_errors(s, run, limit, out, err);
	if (!rc && (all || !strcmp(type, "transform")))
		rc = transform_errors(s, run, limit, out, err);
	if (rc)
		json_decref(out);
	else
		r->value = out;
	return rc;
}

/*
 * journal.c — landscape.dump_to_jsonl (ADR 0028): ELSPETH's JSONL change
 * journal (core/landscape/journal.py), one line per SQL write:
 * {"timestamp", "statement", "parameters", "executemany"}, with the
 * statement texts SQLAlchemy gives ELSPETH's writes (the columns each
 * write sets, in table order, `?` parameters) and the parameters in
 * their order, values as its SQLite stores them.
 *
 * Our trail is not SQL, so the journal is derived from the run's SQL
 * trail when the run stops (as the SQL file is): each record is written
 * as ELSPETH writes it — a node state, an operation, a batch and the run
 * inserted open and then updated to their final state — in the order of
 * ELSPETH's exporter (run, nodes, edges, the source operation, each row
 * with its tokens, then the sinks' operations, batches, artifacts, the
 * run's completion). What ELSPETH writes that we do not record (schema
 * contracts, checkpoints rows, export status) has no line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sqltrail/sqltrail_internal.h"

enum {
	J_RUN, J_NODE, J_EDGE, J_OP, J_OP_UPD, J_OP_REF, J_ROW, J_TOKEN,
	J_TOKEN_FORK, J_TOKEN_JOIN, J_TOKEN_EXP, J_PARENT, J_STATE, J_STATE_UPD,
	J_ROUTE, J_CALL, J_TERR, J_VERR, J_OUT, J_OUT_FORK, J_OUT_EXP, J_BATCH,
	J_MEMBER, J_BATCH_UPD, J_ART, J_RUN_UPD, J__COUNT
};

/* The statement, and the SELECT giving its parameters (?1: the key). */
static const struct {
	const char *sql;
	const char *select;
} js[J__COUNT] = {
	[J_RUN] = { "INSERT INTO runs (run_id, started_at, config_hash, settings_json, "
		"reproducibility_grade, canonical_version, source_schema_json, status, "
		"schema_contract_json, schema_contract_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT run_id, started_at, config_hash, settings_json, NULL, canonical_version, "
		"source_schema_json, 'running', schema_contract_json, schema_contract_hash "
		"FROM runs WHERE run_id = ?1" },
	[J_NODE] = { "INSERT INTO nodes (node_id, run_id, plugin_name, node_type, plugin_version, "
		"determinism, config_hash, config_json, schema_hash, sequence_in_pipeline, "
		"registered_at, schema_mode, schema_fields_json, input_contract_json, "
		"output_contract_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT node_id, run_id, plugin_name, node_type, plugin_version, determinism, "
		"config_hash, config_json, schema_hash, sequence_in_pipeline, registered_at, "
		"schema_mode, schema_fields_json, input_contract_json, output_contract_json "
		"FROM nodes WHERE run_id = ?1 ORDER BY registered_at, rowid" },
	[J_EDGE] = { "INSERT INTO edges (edge_id, run_id, from_node_id, to_node_id, label, "
		"default_mode, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		"SELECT edge_id, run_id, from_node_id, to_node_id, label, default_mode, created_at "
		"FROM edges WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[J_OP] = { "INSERT INTO operations (operation_id, run_id, node_id, operation_type, "
		"started_at, completed_at, status, input_data_ref, input_data_hash, "
		"output_data_ref, output_data_hash, error_message, duration_ms) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT operation_id, run_id, node_id, operation_type, started_at, NULL, 'open', "
		"input_data_ref, input_data_hash, NULL, NULL, NULL, NULL "
		"FROM operations WHERE operation_id = ?1" },
	[J_OP_UPD] = { "UPDATE operations SET completed_at=?, status=?, output_data_hash=?, "
		"error_message=?, duration_ms=? WHERE operations.operation_id = ? AND "
		"operations.status = ?",
		"SELECT completed_at, status, output_data_hash, error_message, duration_ms, "
		"operation_id, 'open' FROM operations WHERE operation_id = ?1" },
	[J_OP_REF] = { "UPDATE operations SET output_data_ref=? WHERE operations.operation_id = ?",
		"SELECT output_data_ref, operation_id FROM operations "
		"WHERE operation_id = ?1 AND output_data_ref IS NOT NULL" },
	[J_ROW] = { "INSERT INTO rows (row_id, run_id, source_node_id, row_index, "
		"source_data_hash, source_data_ref, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		"SELECT row_id, run_id, source_node_id, row_index, source_data_hash, "
		"source_data_ref, created_at FROM rows WHERE row_id = ?1" },
	[J_TOKEN] = { "INSERT INTO tokens (token_id, row_id, run_id, fork_group_id, "
		"join_group_id, branch_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		"SELECT token_id, row_id, run_id, fork_group_id, join_group_id, branch_name, "
		"created_at FROM tokens WHERE token_id = ?1" },
	[J_TOKEN_FORK] = { "INSERT INTO tokens (token_id, row_id, run_id, fork_group_id, "
		"branch_name, step_in_pipeline, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		"SELECT token_id, row_id, run_id, fork_group_id, branch_name, step_in_pipeline, "
		"created_at FROM tokens WHERE token_id = ?1" },
	[J_TOKEN_JOIN] = { "INSERT INTO tokens (token_id, row_id, run_id, join_group_id, "
		"step_in_pipeline, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		"SELECT token_id, row_id, run_id, join_group_id, step_in_pipeline, created_at "
		"FROM tokens WHERE token_id = ?1" },
	[J_TOKEN_EXP] = { "INSERT INTO tokens (token_id, row_id, run_id, expand_group_id, "
		"step_in_pipeline, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		"SELECT token_id, row_id, run_id, expand_group_id, step_in_pipeline, created_at "
		"FROM tokens WHERE token_id = ?1" },
	[J_PARENT] = { "INSERT INTO token_parents (token_id, parent_token_id, ordinal) "
		"VALUES (?, ?, ?)",
		"SELECT token_id, parent_token_id, ordinal FROM token_parents "
		"WHERE token_id = ?1 ORDER BY ordinal" },
	[J_STATE] = { "INSERT INTO node_states (state_id, token_id, run_id, node_id, "
		"step_index, attempt, status, input_hash, started_at) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT state_id, token_id, run_id, node_id, step_index, attempt, 'open', "
		"input_hash, started_at FROM node_states WHERE state_id = ?1" },
	[J_STATE_UPD] = { "UPDATE node_states SET status=?, output_hash=?, context_after_json=?, "
		"duration_ms=?, error_json=?, success_reason_json=?, completed_at=? "
		"WHERE node_states.state_id = ?",
		"SELECT status, output_hash, context_after_json, duration_ms, error_json, "
		"success_reason_json, completed_at, state_id FROM node_states "
		"WHERE state_id = ?1 AND status != 'open'" },
	[J_ROUTE] = { "INSERT INTO routing_events (event_id, state_id, edge_id, "
		"routing_group_id, ordinal, mode, reason_hash, reason_ref, created_at) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT event_id, state_id, edge_id, routing_group_id, ordinal, mode, "
		"reason_hash, reason_ref, created_at FROM routing_events "
		"WHERE state_id = ?1 ORDER BY ordinal, rowid" },
	[J_CALL] = { "INSERT INTO calls (call_id, state_id, operation_id, call_index, "
		"call_type, status, request_hash, request_ref, response_hash, response_ref, "
		"error_json, latency_ms, created_at) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT call_id, state_id, operation_id, call_index, call_type, status, "
		"request_hash, request_ref, response_hash, response_ref, error_json, "
		"latency_ms, created_at FROM calls WHERE state_id = ?1 ORDER BY call_index" },
	[J_TERR] = { "INSERT INTO transform_errors (error_id, run_id, token_id, transform_id, "
		"row_hash, row_data_json, error_details_json, destination, created_at) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT error_id, run_id, token_id, transform_id, row_hash, row_data_json, "
		"error_details_json, destination, created_at FROM transform_errors "
		"WHERE token_id = ?1 ORDER BY created_at, rowid" },
	[J_VERR] = { "INSERT INTO validation_errors (error_id, run_id, node_id, row_hash, "
		"row_data_json, error, schema_mode, destination, created_at, violation_type, "
		"original_field_name, normalized_field_name, expected_type, actual_type) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT v.error_id, v.run_id, v.node_id, v.row_hash, v.row_data_json, v.error, "
		"v.schema_mode, v.destination, v.created_at, v.violation_type, "
		"v.original_field_name, v.normalized_field_name, v.expected_type, "
		"v.actual_type FROM validation_errors v JOIN rows r ON r.run_id = v.run_id "
		"AND r.source_data_hash = v.row_hash WHERE r.row_id = ?1 ORDER BY v.rowid" },
	[J_OUT] = { "INSERT INTO token_outcomes (outcome_id, run_id, token_id, outcome, "
		"is_terminal, recorded_at, sink_name, batch_id, fork_group_id, join_group_id, "
		"expand_group_id, error_hash, context_json) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT outcome_id, run_id, token_id, outcome, is_terminal, recorded_at, "
		"sink_name, batch_id, fork_group_id, join_group_id, expand_group_id, "
		"error_hash, context_json FROM token_outcomes WHERE outcome_id = ?1" },
	[J_OUT_FORK] = { "INSERT INTO token_outcomes (outcome_id, run_id, token_id, outcome, "
		"is_terminal, recorded_at, fork_group_id, expected_branches_json) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT outcome_id, run_id, token_id, outcome, is_terminal, recorded_at, "
		"fork_group_id, expected_branches_json FROM token_outcomes WHERE outcome_id = ?1" },
	[J_OUT_EXP] = { "INSERT INTO token_outcomes (outcome_id, run_id, token_id, outcome, "
		"is_terminal, recorded_at, expand_group_id, expected_branches_json) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT outcome_id, run_id, token_id, outcome, is_terminal, recorded_at, "
		"expand_group_id, expected_branches_json FROM token_outcomes WHERE outcome_id = ?1" },
	[J_BATCH] = { "INSERT INTO batches (batch_id, run_id, aggregation_node_id, attempt, "
		"status, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		"SELECT batch_id, run_id, aggregation_node_id, attempt, 'draft', created_at "
		"FROM batches WHERE batch_id = ?1" },
	[J_MEMBER] = { "INSERT INTO batch_members (batch_id, token_id, ordinal) VALUES (?, ?, ?)",
		"SELECT batch_id, token_id, ordinal FROM batch_members WHERE batch_id = ?1 "
		"ORDER BY ordinal" },
	[J_BATCH_UPD] = { "UPDATE batches SET aggregation_state_id=?, trigger_reason=?, "
		"trigger_type=?, status=?, completed_at=? WHERE batches.batch_id = ?",
		"SELECT aggregation_state_id, trigger_reason, trigger_type, status, "
		"completed_at, batch_id FROM batches WHERE batch_id = ?1" },
	[J_ART] = { "INSERT INTO artifacts (artifact_id, run_id, produced_by_state_id, "
		"sink_node_id, artifact_type, path_or_uri, content_hash, size_bytes, "
		"idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		"SELECT artifact_id, run_id, produced_by_state_id, sink_node_id, artifact_type, "
		"path_or_uri, content_hash, size_bytes, idempotency_key, created_at "
		"FROM artifacts WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[J_RUN_UPD] = { "UPDATE runs SET completed_at=?, reproducibility_grade=?, status=? "
		"WHERE runs.run_id = ? AND (runs.status NOT IN (?, ?, ?))",
		"SELECT completed_at, reproducibility_grade, status, run_id, 'completed', "
		"'failed', 'interrupted' FROM runs WHERE run_id = ?1 AND status != 'running'" },
};

typedef struct jw {
	sqlite3 *db;
	sqlite3_stmt *st[J__COUNT];
	const core_journal_cfg *cfg;
	core_buf out;
	core_err *err;
} jw;

static json_t *column(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	default:
		return json_string((const char *)sqlite3_column_text(st, i));
	}
}

/* dump_to_jsonl_include_payloads: a calls insert carries its bodies
 * (request_ref, request_payload, response_ref, response_payload), read
 * from the trail (elspeth_payloads of the temporary SQL trail). */
static void add_payload(jw *w, json_t *line, const char *side, const json_t *ref)
{
	char k[32];
	json_t *v = json_null();

	if (json_is_string(ref)) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(w->db, "SELECT data FROM elspeth_payloads WHERE hash = ?1",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_text(st, 1, json_string_value(ref), -1, SQLITE_STATIC);
			if (sqlite3_step(st) == SQLITE_ROW)
				v = json_stringn((const char *)sqlite3_column_blob(st, 0),
						 (size_t)sqlite3_column_bytes(st, 0));
			sqlite3_finalize(st);
		}
		if (!v)
			v = json_null();
	}
	snprintf(k, sizeof(k), "%s_ref", side);
	json_object_set(line, k, (json_t *)ref);
	snprintf(k, sizeof(k), "%s_payload", side);
	json_object_set_new(line, k, v);
}

/* One line per result row of statement j for key. */
static int emit(jw *w, int j, const char *key)
{
	sqlite3_stmt *st = w->st[j];
	int s, rc = 0;

	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *line = json_object(), *params = json_array();
		char ts[64];

		sqlt__now_iso(ts);
		for (int i = 0; i < sqlite3_column_count(st); i++)
			json_array_append_new(params, column(st, i));
		json_object_set_new(line, "timestamp", json_string(ts));
		json_object_set_new(line, "statement", json_string(js[j].sql));
		json_object_set(line, "parameters", params);
		json_object_set_new(line, "executemany", json_false());
		if (j == J_CALL && w->cfg->include_payloads) {
			add_payload(w, line, "request", json_array_get(params, 7));
			add_payload(w, line, "response", json_array_get(params, 9));
		}
		sqlt__py_json(&w->out, line);
		core_buf_putc(&w->out, '\n');
		json_decref(params);
		json_decref(line);
	}
	if (!rc && s != SQLITE_DONE)
		rc = sqlt__db_error(w->db, w->err, "reading the run for the journal");
	sqlite3_reset(st);
	return rc;
}

/* The ids a query lists (first column), for the traversal. */
static int ids(jw *w, const char *sql, const char *key, json_t **out)
{
	sqlite3_stmt *st;
	int s;

	*out = json_array();
	if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK)
		return sqlt__db_error(w->db, w->err, "reading the run for the journal");
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = json_array();

		for (int i = 0; i < sqlite3_column_count(st); i++)
			json_array_append_new(row, column(st, i));
		json_array_append_new(*out, row);
	}
	sqlite3_finalize(st);
	return s == SQLITE_DONE ? 0 :
	       sqlt__db_error(w->db, w->err, "reading the run for the journal");
}

#define ID(a, i) json_string_value(json_array_get(a, i))

static int state_lines(jw *w, const char *state)
{
	int rc;

	if ((rc = emit(w, J_STATE, state)) || (rc = emit(w, J_ROUTE, state)) ||
	    (rc = emit(w, J_CALL, state)))
		return rc;
	return emit(w, J_STATE_UPD, state);
}

static int token_lines(jw *w, json_t *tok)
{
	const char *id = ID(tok, 0);
	int kind = !json_is_null(json_array_get(tok, 1)) ? J_TOKEN_FORK :
		   !json_is_null(json_array_get(tok, 2)) ? J_TOKEN_JOIN :
		   !json_is_null(json_array_get(tok, 3)) ? J_TOKEN_EXP : J_TOKEN;
	json_t *l = NULL, *x;
	size_t i;
	int rc;

	/* A source token has no parent: ELSPETH's plain insert. */
	if (kind != J_TOKEN && json_is_null(json_array_get(tok, 4)))
		kind = J_TOKEN;
	if ((rc = emit(w, kind, id)) || (rc = emit(w, J_PARENT, id)) ||
	    (rc = ids(w, "SELECT state_id FROM node_states WHERE token_id = ?1 "
		      "ORDER BY step_index, attempt", id, &l)))
		goto out;
	json_array_foreach(l, i, x)
		if ((rc = state_lines(w, ID(x, 0))))
			goto out;
	if ((rc = emit(w, J_TERR, id)))
		goto out;
	json_decref(l);
	if ((rc = ids(w, "SELECT outcome_id, outcome FROM token_outcomes WHERE token_id = ?1 "
		      "ORDER BY recorded_at, rowid", id, &l)))
		goto out;
	json_array_foreach(l, i, x) {
		const char *o = ID(x, 1);

		if ((rc = emit(w, !strcmp(o, "forked") ? J_OUT_FORK :
				   !strcmp(o, "expanded") ? J_OUT_EXP : J_OUT, ID(x, 0))))
			break;
	}
out:
	json_decref(l);
	return rc;
}

static int row_lines(jw *w, const char *row)
{
	json_t *l = NULL, *x;
	size_t i;
	int rc;

	if ((rc = emit(w, J_ROW, row)) || (rc = emit(w, J_VERR, row)) ||
	    (rc = ids(w, "SELECT token_id, fork_group_id, join_group_id, expand_group_id, "
		      "(SELECT parent_token_id FROM token_parents p WHERE p.token_id = "
		      "t.token_id LIMIT 1) FROM tokens t WHERE row_id = ?1 "
		      "ORDER BY created_at, rowid", row, &l)))
		goto out;
	json_array_foreach(l, i, x)
		if ((rc = token_lines(w, x)))
			break;
out:
	json_decref(l);
	return rc;
}

static int op_lines(jw *w, const char *op, bool open)
{
	int rc = 0;

	if (open)
		return emit(w, J_OP, op);
	if (!(rc = emit(w, J_OP_UPD, op)))
		rc = emit(w, J_OP_REF, op);
	return rc;
}

static int lines(jw *w, const char *rid)
{
	json_t *l = NULL, *x;
	size_t i;
	int rc;

	if ((rc = emit(w, J_RUN, rid)) || (rc = emit(w, J_NODE, rid)) ||
	    (rc = emit(w, J_EDGE, rid)) ||
	    (rc = ids(w, "SELECT operation_id FROM operations WHERE run_id = ?1 AND "
		      "operation_type = 'source_load' ORDER BY started_at, rowid", rid, &l)))
		goto out;
	json_array_foreach(l, i, x)
		if ((rc = op_lines(w, ID(x, 0), true)))
			goto out;
	json_t *rows = NULL;

	if ((rc = ids(w, "SELECT row_id FROM rows WHERE run_id = ?1 ORDER BY row_index",
		      rid, &rows)))
		goto out;
	json_array_foreach(rows, i, x)
		if ((rc = row_lines(w, ID(x, 0))))
			break;
	json_decref(rows);
	json_array_foreach(l, i, x)
		if (!rc && (rc = op_lines(w, ID(x, 0), false)))
			goto out;
	json_decref(l);
	l = NULL;
	if (rc || (rc = ids(w, "SELECT operation_id FROM operations WHERE run_id = ?1 AND "
			    "operation_type != 'source_load' ORDER BY started_at, rowid", rid, &l)))
		goto out;
	json_array_foreach(l, i, x)
		if ((rc = op_lines(w, ID(x, 0), true)) || (rc = op_lines(w, ID(x, 0), false)))
			goto out;
	json_decref(l);
	if ((rc = ids(w, "SELECT batch_id FROM batches WHERE run_id = ?1 "
		      "ORDER BY created_at, rowid", rid, &l)))
		goto out;
	json_array_foreach(l, i, x)
		if ((rc = emit(w, J_BATCH, ID(x, 0))) || (rc = emit(w, J_MEMBER, ID(x, 0))) ||
		    (rc = emit(w, J_BATCH_UPD, ID(x, 0))))
			goto out;
	if (!(rc = emit(w, J_ART, rid)))
		rc = emit(w, J_RUN_UPD, rid);
out:
	json_decref(l);
	return rc;
}

static int mkparents(const char *path)
{
	char d[4096];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(d, 0777) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return 0;
}

static int journal_of(void *ctx, sqlite3 *db, const char *rid, core_err *err)
{
	jw *w = ctx;
	const char *path = w->cfg->path ? w->cfg->path : w->cfg->derived;
	FILE *f;
	int rc = 0;

	w->db = db;
	w->err = err;
	for (int j = 0; j < J__COUNT; j++)
		if (sqlite3_prepare_v2(db, js[j].select, -1, &w->st[j], NULL) != SQLITE_OK) {
			rc = sqlt__db_error(db, err, "preparing the journal");
			goto out;
		}
	if ((rc = lines(w, rid)))
		goto out;
	/* Appended, as ELSPETH appends each commit's lines. */
	if (mkparents(path) || !(f = fopen(path, "ab"))) {
		rc = core_err_set(err, CORE_EIO, "opening the journal %s: %s", path,
				  strerror(errno));
		goto out;
	}
	if ((w->out.len && fwrite(w->out.data, 1, w->out.len, f) != w->out.len) ||
	    fflush(f))
		rc = core_err_set(err, CORE_EIO, "writing the journal %s: %s", path,
				  strerror(errno));
	if (fclose(f) && !rc)
		rc = core_err_set(err, CORE_EIO, "writing the journal %s: %s", path,
				  strerror(errno));
out:
	for (int j = 0; j < J__COUNT; j++)
		sqlite3_finalize(w->st[j]);
	return rc;
}

int sqlt_journal(rec_env *env, uint64_t run, const core_journal_cfg *cfg, core_err *err)
{
	jw w = { .cfg = cfg };
	int rc = sqlt__with_run_db(env, run, cfg->include_payloads, journal_of, &w, err);

	core_buf_release(&w.out);
	return rc;
}

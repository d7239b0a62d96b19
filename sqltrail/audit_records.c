/*
 * audit_records.c — a run's audit records as ELSPETH 0.4.1's
 * LandscapeExporter yields them (core/landscape/exporter.py): the same
 * record types, fields, field order and record order, read back from the
 * run's SQL trail (ELSPETH's tables; export.c wrote them), so every id
 * and value is the one `elspeth export --sqlite` shows. ADR 0028.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqltrail/sqltrail_internal.h"

/* How a column becomes a field: as stored, an ISO time (ELSPETH's
 * datetime.isoformat(): a 'T', no zone), parsed JSON, or a boolean. */
enum { C_VAL, C_TIME, C_JSON, C_BOOL };

typedef struct col {
	const char *field;
	const char *column;
	int how;
} col;

typedef struct rtype {
	const char *type;
	const col *cols;
} rtype;

#define END { NULL, NULL, 0 }

static const col run_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "status", "status", C_VAL },
	{ "started_at", "started_at", C_TIME }, { "completed_at", "completed_at", C_TIME },
	{ "canonical_version", "canonical_version", C_VAL },
	{ "config_hash", "config_hash", C_VAL }, { "settings", "settings_json", C_JSON },
	{ "reproducibility_grade", "reproducibility_grade", C_VAL }, END
};
static const col secret_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "resolution_id", "resolution_id", C_VAL },
	{ "timestamp", "timestamp", C_VAL }, { "env_var_name", "env_var_name", C_VAL },
	{ "source", "source", C_VAL }, { "vault_url", "vault_url", C_VAL },
	{ "secret_name", "secret_name", C_VAL }, { "fingerprint", "fingerprint", C_VAL },
	{ "resolution_latency_ms", "resolution_latency_ms", C_VAL }, END
};
static const col node_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "node_id", "node_id", C_VAL },
	{ "plugin_name", "plugin_name", C_VAL }, { "node_type", "node_type", C_VAL },
	{ "plugin_version", "plugin_version", C_VAL }, { "determinism", "determinism", C_VAL },
	{ "config_hash", "config_hash", C_VAL }, { "config", "config_json", C_JSON },
	{ "schema_hash", "schema_hash", C_VAL }, { "schema_mode", "schema_mode", C_VAL },
	{ "schema_fields", "schema_fields_json", C_JSON },
	{ "sequence_in_pipeline", "sequence_in_pipeline", C_VAL }, END
};
static const col edge_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "edge_id", "edge_id", C_VAL },
	{ "from_node_id", "from_node_id", C_VAL }, { "to_node_id", "to_node_id", C_VAL },
	{ "label", "label", C_VAL }, { "default_mode", "default_mode", C_VAL }, END
};
static const col op_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "operation_id", "operation_id", C_VAL },
	{ "node_id", "node_id", C_VAL }, { "operation_type", "operation_type", C_VAL },
	{ "status", "status", C_VAL }, { "started_at", "started_at", C_TIME },
	{ "completed_at", "completed_at", C_TIME }, { "duration_ms", "duration_ms", C_VAL },
	{ "error_message", "error_message", C_VAL },
	{ "input_data_ref", "input_data_ref", C_VAL }, { "input_data_hash", "input_data_hash", C_VAL },
	{ "output_data_ref", "output_data_ref", C_VAL },
	{ "output_data_hash", "output_data_hash", C_VAL }, END
};
static const col row_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "row_id", "row_id", C_VAL },
	{ "row_index", "row_index", C_VAL }, { "source_node_id", "source_node_id", C_VAL },
	{ "source_data_hash", "source_data_hash", C_VAL }, END
};
static const col token_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "token_id", "token_id", C_VAL },
	{ "row_id", "row_id", C_VAL }, { "step_in_pipeline", "step_in_pipeline", C_VAL },
	{ "branch_name", "branch_name", C_VAL }, { "fork_group_id", "fork_group_id", C_VAL },
	{ "join_group_id", "join_group_id", C_VAL },
	{ "expand_group_id", "expand_group_id", C_VAL }, END
};
static const col parent_cols[] = {
	{ "run_id", "?run", C_VAL }, { "token_id", "token_id", C_VAL },
	{ "parent_token_id", "parent_token_id", C_VAL }, { "ordinal", "ordinal", C_VAL }, END
};
static const col outcome_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "outcome_id", "outcome_id", C_VAL },
	{ "token_id", "token_id", C_VAL }, { "outcome", "outcome", C_VAL },
	{ "is_terminal", "is_terminal", C_BOOL }, { "recorded_at", "recorded_at", C_TIME },
	{ "sink_name", "sink_name", C_VAL }, { "batch_id", "batch_id", C_VAL },
	{ "fork_group_id", "fork_group_id", C_VAL }, { "join_group_id", "join_group_id", C_VAL },
	{ "expand_group_id", "expand_group_id", C_VAL }, { "error_hash", "error_hash", C_VAL },
	{ "context_json", "context_json", C_VAL },
	{ "expected_branches_json", "expected_branches_json", C_VAL }, END
};
static const col state_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "state_id", "state_id", C_VAL },
	{ "token_id", "token_id", C_VAL }, { "node_id", "node_id", C_VAL },
	{ "step_index", "step_index", C_VAL }, { "attempt", "attempt", C_VAL },
	{ "status", "status", C_VAL }, { "input_hash", "input_hash", C_VAL },
	{ "output_hash", "output_hash", C_VAL }, { "duration_ms", "duration_ms", C_VAL },
	{ "started_at", "started_at", C_TIME }, { "completed_at", "completed_at", C_TIME },
	{ "context_before_json", "context_before_json", C_VAL },
	{ "context_after_json", "context_after_json", C_VAL },
	{ "error_json", "error_json", C_VAL },
	{ "success_reason_json", "success_reason_json", C_VAL }, END
};
static const col routing_cols[] = {
	{ "run_id", "?run", C_VAL }, { "event_id", "event_id", C_VAL },
	{ "state_id", "state_id", C_VAL }, { "edge_id", "edge_id", C_VAL },
	{ "routing_group_id", "routing_group_id", C_VAL }, { "ordinal", "ordinal", C_VAL },
	{ "mode", "mode", C_VAL }, { "reason_hash", "reason_hash", C_VAL },
	{ "reason_ref", "reason_ref", C_VAL }, { "created_at", "created_at", C_TIME }, END
};
static const col call_cols[] = {
	{ "run_id", "?run", C_VAL }, { "call_id", "call_id", C_VAL },
	{ "state_id", "state_id", C_VAL }, { "operation_id", "operation_id", C_VAL },
	{ "call_index", "call_index", C_VAL }, { "call_type", "call_type", C_VAL },
	{ "status", "status", C_VAL }, { "request_hash", "request_hash", C_VAL },
	{ "response_hash", "response_hash", C_VAL }, { "latency_ms", "latency_ms", C_VAL },
	{ "request_ref", "request_ref", C_VAL }, { "response_ref", "response_ref", C_VAL },
	{ "error_json", "error_json", C_VAL }, { "created_at", "created_at", C_TIME }, END
};
static const col batch_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "batch_id", "batch_id", C_VAL },
	{ "aggregation_node_id", "aggregation_node_id", C_VAL }, { "attempt", "attempt", C_VAL },
	{ "status", "status", C_VAL }, { "trigger_type", "trigger_type", C_VAL },
	{ "trigger_reason", "trigger_reason", C_VAL }, { "created_at", "created_at", C_TIME },
	{ "completed_at", "completed_at", C_TIME }, END
};
static const col member_cols[] = {
	{ "run_id", "?run", C_VAL }, { "batch_id", "batch_id", C_VAL },
	{ "token_id", "token_id", C_VAL }, { "ordinal", "ordinal", C_VAL }, END
};
static const col artifact_cols[] = {
	{ "run_id", "run_id", C_VAL }, { "artifact_id", "artifact_id", C_VAL },
	{ "sink_node_id", "sink_node_id", C_VAL },
	{ "produced_by_state_id", "produced_by_state_id", C_VAL },
	{ "artifact_type", "artifact_type", C_VAL }, { "path_or_uri", "path_or_uri", C_VAL },
	{ "content_hash", "content_hash", C_VAL }, { "size_bytes", "size_bytes", C_VAL }, END
};

/* ELSPETH 0.7.1's record shapes (contracts/export_records.py; ADR 0053):
 * more fields, a column that no table of ours holds is null, and the
 * terminal outcome on 0.7.1's two axes (its ADR-019 table: outcome and
 * path from 0.4.1's one value). An error row's data only with
 * include_raw_error_rows (the ?raw column). */
static const col run_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "status", "status", C_VAL },
	{ "started_at", "started_at", C_TIME }, { "completed_at", "completed_at", C_TIME },
	{ "canonical_version", "canonical_version", C_VAL },
	{ "config_hash", "config_hash", C_VAL },
	{ "initiated_by_user_id", "NULL", C_VAL }, { "auth_provider_type", "NULL", C_VAL },
	{ "settings", "settings_json", C_JSON },
	{ "reproducibility_grade", "reproducibility_grade", C_VAL }, END
};
static const col node_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "node_id", "node_id", C_VAL },
	{ "plugin_name", "plugin_name", C_VAL }, { "node_type", "node_type", C_VAL },
	{ "plugin_version", "plugin_version", C_VAL }, { "source_file_hash", "NULL", C_VAL },
	{ "determinism", "determinism", C_VAL },
	{ "config_hash", "config_hash", C_VAL }, { "config", "config_json", C_JSON },
	{ "schema_hash", "schema_hash", C_VAL }, { "schema_mode", "schema_mode", C_VAL },
	{ "schema_fields", "schema_fields_json", C_JSON },
	{ "sequence_in_pipeline", "sequence_in_pipeline", C_VAL },
	{ "registered_at", "registered_at", C_TIME }, END
};
static const col edge_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "edge_id", "edge_id", C_VAL },
	{ "from_node_id", "from_node_id", C_VAL }, { "to_node_id", "to_node_id", C_VAL },
	{ "label", "label", C_VAL }, { "default_mode", "default_mode", C_VAL },
	{ "created_at", "created_at", C_TIME }, END
};
static const col op_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "operation_id", "operation_id", C_VAL },
	{ "node_id", "node_id", C_VAL }, { "operation_type", "operation_type", C_VAL },
	{ "sink_effect_id", "NULL", C_VAL },
	{ "status", "status", C_VAL }, { "started_at", "started_at", C_TIME },
	{ "completed_at", "completed_at", C_TIME }, { "duration_ms", "duration_ms", C_VAL },
	{ "error_message", "error_message", C_VAL },
	{ "input_data_ref", "input_data_ref", C_VAL }, { "input_data_hash", "input_data_hash", C_VAL },
	{ "output_data_ref", "output_data_ref", C_VAL },
	{ "output_data_hash", "output_data_hash", C_VAL }, END
};
static const col verr_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "error_id", "error_id", C_VAL },
	{ "node_id", "node_id", C_VAL }, { "row_id", "NULL", C_VAL },
	{ "row_hash", "row_hash", C_VAL }, { "row_data_json", "?raw", C_VAL },
	{ "error", "error", C_VAL }, { "schema_mode", "schema_mode", C_VAL },
	{ "destination", "destination", C_VAL }, { "created_at", "created_at", C_TIME },
	{ "violation_type", "violation_type", C_VAL },
	{ "original_field_name", "original_field_name", C_VAL },
	{ "normalized_field_name", "normalized_field_name", C_VAL },
	{ "expected_type", "expected_type", C_VAL }, { "actual_type", "actual_type", C_VAL }, END
};
static const col terr_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "error_id", "error_id", C_VAL },
	{ "token_id", "token_id", C_VAL }, { "transform_id", "transform_id", C_VAL },
	{ "row_hash", "row_hash", C_VAL }, { "row_data_json", "?raw", C_VAL },
	{ "error_details_json", "error_details_json", C_VAL },
	{ "destination", "destination", C_VAL }, { "created_at", "created_at", C_TIME }, END
};
static const col call_cols2[] = {
	{ "run_id", "?run", C_VAL }, { "call_id", "call_id", C_VAL },
	{ "state_id", "state_id", C_VAL }, { "operation_id", "operation_id", C_VAL },
	{ "call_index", "call_index", C_VAL }, { "call_type", "call_type", C_VAL },
	{ "status", "status", C_VAL }, { "request_hash", "request_hash", C_VAL },
	{ "response_hash", "response_hash", C_VAL },
	{ "resolved_prompt_template_hash", "NULL", C_VAL },
	{ "latency_ms", "latency_ms", C_VAL },
	{ "request_ref", "request_ref", C_VAL }, { "response_ref", "response_ref", C_VAL },
	{ "error_json", "error_json", C_VAL }, { "created_at", "created_at", C_TIME }, END
};
static const col row_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "row_id", "row_id", C_VAL },
	{ "row_index", "row_index", C_VAL }, { "source_row_index", "source_row_index", C_VAL },
	{ "ingest_sequence", "ingest_sequence", C_VAL },
	{ "source_node_id", "source_node_id", C_VAL },
	{ "source_data_hash", "source_data_hash", C_VAL },
	{ "source_data_ref", "source_data_ref", C_VAL },
	{ "created_at", "created_at", C_TIME }, END
};
static const col token_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "token_id", "token_id", C_VAL },
	{ "row_id", "row_id", C_VAL }, { "step_in_pipeline", "step_in_pipeline", C_VAL },
	{ "branch_name", "branch_name", C_VAL }, { "fork_group_id", "fork_group_id", C_VAL },
	{ "join_group_id", "join_group_id", C_VAL },
	{ "expand_group_id", "expand_group_id", C_VAL },
	{ "created_at", "created_at", C_TIME }, END
};
/* A routed token with an error went to its on_error sink (a failed
 * attempt that a retry made good leaves none). */
#define ON_ERROR "error_hash IS NOT NULL"
static const col outcome_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "outcome_id", "outcome_id", C_VAL },
	{ "token_id", "token_id", C_VAL },
	{ "outcome", "CASE outcome WHEN 'buffered' THEN NULL "
		"WHEN 'completed' THEN 'success' WHEN 'coalesced' THEN 'success' "
		"WHEN 'routed' THEN CASE WHEN " ON_ERROR " THEN 'failure' ELSE 'success' END "
		"WHEN 'failed' THEN 'failure' WHEN 'quarantined' THEN 'failure' "
		"WHEN 'diverted' THEN CASE WHEN sink_name IS NULL THEN 'failure' "
		"ELSE 'transient' END ELSE 'transient' END", C_VAL },
	{ "path", "CASE outcome WHEN 'completed' THEN 'default_flow' "
		"WHEN 'routed' THEN CASE WHEN " ON_ERROR " THEN 'on_error_routed' "
		"WHEN sink_name IS NULL THEN 'gate_discarded' ELSE 'gate_routed' END "
		"WHEN 'failed' THEN 'unrouted' WHEN 'quarantined' THEN 'quarantined_at_source' "
		"WHEN 'diverted' THEN CASE WHEN sink_name IS NULL THEN 'sink_discarded' "
		"ELSE 'sink_fallback_to_failsink' END WHEN 'forked' THEN 'fork_parent' "
		"WHEN 'expanded' THEN 'expand_parent' WHEN 'consumed_in_batch' THEN "
		"'batch_consumed' WHEN 'coalesced' THEN 'coalesced' ELSE 'buffered' END", C_VAL },
	{ "completed", "outcome != 'buffered'", C_BOOL },
	{ "recorded_at", "recorded_at", C_TIME },
	{ "sink_name", "sink_name", C_VAL }, { "batch_id", "batch_id", C_VAL },
	{ "fork_group_id", "fork_group_id", C_VAL }, { "join_group_id", "join_group_id", C_VAL },
	{ "expand_group_id", "expand_group_id", C_VAL }, { "error_hash", "error_hash", C_VAL },
	{ "context_json", "context_json", C_VAL },
	{ "expected_branches_json", "expected_branches_json", C_VAL }, END
};
static const col artifact_cols2[] = {
	{ "run_id", "run_id", C_VAL }, { "artifact_id", "artifact_id", C_VAL },
	{ "sink_node_id", "sink_node_id", C_VAL }, { "producer_kind", "'node_state'", C_VAL },
	{ "produced_by_state_id", "produced_by_state_id", C_VAL },
	{ "sink_effect_id", "NULL", C_VAL },
	{ "artifact_type", "artifact_type", C_VAL }, { "path_or_uri", "path_or_uri", C_VAL },
	{ "content_hash", "content_hash", C_VAL }, { "size_bytes", "size_bytes", C_VAL },
	{ "idempotency_key", "idempotency_key", C_VAL },
	{ "publication_performed", "1", C_BOOL },
	{ "publication_evidence_kind", "'legacy_returned'", C_VAL },
	{ "created_at", "created_at", C_TIME }, END
};

/* One query per record type and parent: ELSPETH's orders (created_at,
 * then its uuid; ours: then the insertion order, our ids not being
 * time-ordered). ?1 is the run, or the parent's id. */
enum {
	Q_RUN, Q_SECRET, Q_NODE, Q_EDGE, Q_OP, Q_OPCALL, Q_ROW, Q_TOKEN, Q_PARENT,
	Q_OUTCOME, Q_STATE, Q_ROUTING, Q_CALL, Q_BATCH, Q_MEMBER, Q_ARTIFACT,
	Q_VERR, Q_TERR, Q__COUNT
};
typedef struct query {
	rtype r;
	const char *from;
} query;
static const query queries[Q__COUNT] = {
	[Q_RUN] = { { "run", run_cols }, "FROM runs WHERE run_id = ?1" },
	[Q_SECRET] = { { "secret_resolution", secret_cols },
		"FROM secret_resolutions WHERE run_id = ?1 ORDER BY timestamp, rowid" },
	[Q_NODE] = { { "node", node_cols },
		"FROM nodes WHERE run_id = ?1 ORDER BY registered_at, rowid" },
	[Q_EDGE] = { { "edge", edge_cols },
		"FROM edges WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_OP] = { { "operation", op_cols },
		"FROM operations WHERE run_id = ?1 ORDER BY started_at, rowid" },
	[Q_OPCALL] = { { "call", call_cols },
		"FROM calls WHERE operation_id = ?1 ORDER BY call_index" },
	[Q_ROW] = { { "row", row_cols }, "FROM rows WHERE run_id = ?1 ORDER BY row_index" },
	[Q_TOKEN] = { { "token", token_cols },
		"FROM tokens WHERE row_id = ?1 ORDER BY created_at, rowid" },
	[Q_PARENT] = { { "token_parent", parent_cols },
		"FROM token_parents WHERE token_id = ?1 ORDER BY ordinal" },
	[Q_OUTCOME] = { { "token_outcome", outcome_cols },
		"FROM token_outcomes WHERE token_id = ?1 ORDER BY recorded_at, rowid" },
	[Q_STATE] = { { "node_state", state_cols },
		"FROM node_states WHERE token_id = ?1 ORDER BY step_index, attempt" },
	[Q_ROUTING] = { { "routing_event", routing_cols },
		"FROM routing_events WHERE state_id = ?1 ORDER BY ordinal, rowid" },
	[Q_CALL] = { { "call", call_cols },
		"FROM calls WHERE state_id = ?1 ORDER BY call_index" },
	[Q_BATCH] = { { "batch", batch_cols },
		"FROM batches WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_MEMBER] = { { "batch_member", member_cols },
		"FROM batch_members WHERE batch_id = ?1 ORDER BY ordinal" },
	[Q_ARTIFACT] = { { "artifact", artifact_cols },
		"FROM artifacts WHERE run_id = ?1 ORDER BY created_at, rowid" },
};
/* 0.7.1's: its shapes, its node order, its error records, rows by their
 * ingest sequence. */
static const query queries2[Q__COUNT] = {
	[Q_RUN] = { { "run", run_cols2 }, "FROM runs WHERE run_id = ?1" },
	[Q_SECRET] = { { "secret_resolution", secret_cols },
		"FROM secret_resolutions WHERE run_id = ?1 ORDER BY timestamp, rowid" },
	[Q_NODE] = { { "node", node_cols2 },
		"FROM nodes WHERE run_id = ?1 ORDER BY sequence_in_pipeline IS NULL, "
		"sequence_in_pipeline, registered_at, rowid" },
	[Q_EDGE] = { { "edge", edge_cols2 },
		"FROM edges WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_OP] = { { "operation", op_cols2 },
		"FROM operations WHERE run_id = ?1 ORDER BY started_at, rowid" },
	[Q_OPCALL] = { { "call", call_cols2 },
		"FROM calls WHERE operation_id = ?1 ORDER BY call_index" },
	[Q_VERR] = { { "validation_error", verr_cols2 },
		"FROM validation_errors WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_TERR] = { { "transform_error", terr_cols2 },
		"FROM transform_errors WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_ROW] = { { "row", row_cols2 },
		"FROM rows WHERE run_id = ?1 ORDER BY ingest_sequence, row_index" },
	[Q_TOKEN] = { { "token", token_cols2 },
		"FROM tokens WHERE row_id = ?1 ORDER BY created_at, rowid" },
	[Q_PARENT] = { { "token_parent", parent_cols },
		"FROM token_parents WHERE token_id = ?1 ORDER BY ordinal" },
	[Q_OUTCOME] = { { "token_outcome", outcome_cols2 },
		"FROM token_outcomes WHERE token_id = ?1 ORDER BY recorded_at, rowid" },
	[Q_STATE] = { { "node_state", state_cols },
		"FROM node_states WHERE token_id = ?1 ORDER BY step_index, attempt" },
	[Q_ROUTING] = { { "routing_event", routing_cols },
		"FROM routing_events WHERE state_id = ?1 ORDER BY ordinal, rowid" },
	[Q_CALL] = { { "call", call_cols2 },
		"FROM calls WHERE state_id = ?1 ORDER BY call_index" },
	[Q_BATCH] = { { "batch", batch_cols },
		"FROM batches WHERE run_id = ?1 ORDER BY created_at, rowid" },
	[Q_MEMBER] = { { "batch_member", member_cols },
		"FROM batch_members WHERE batch_id = ?1 ORDER BY ordinal" },
	[Q_ARTIFACT] = { { "artifact", artifact_cols2 },
		"FROM artifacts WHERE run_id = ?1 ORDER BY created_at, rowid" },
};

typedef struct rd {
	const query *q;               /* queries or queries2 */
	bool raw;                     /* error rows' data (?raw) */
	sqlite3 *db;
	sqlite3_stmt *st[Q__COUNT];
	const char *rid;
	sqlt_record_fn fn;
	void *ctx;
	core_err *err;
} rd;

static int prepare(rd *r)
{
	for (int q = 0; q < Q__COUNT; q++) {
		char sql[4096];
		size_t n = (size_t)snprintf(sql, sizeof(sql), "SELECT ");

		if (!r->q[q].r.cols)
			continue; /* not in this shape */
		for (const col *c = r->q[q].r.cols; c->field; c++)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s",
				c == r->q[q].r.cols ? "" : ", ",
				!strcmp(c->column, "?raw") && r->raw ? c->field :
				c->column[0] == '?' ? "NULL" : c->column);
		snprintf(sql + n, sizeof(sql) - n, " %s", r->q[q].from);
		if (sqlite3_prepare_v2(r->db, sql, -1, &r->st[q], NULL) != SQLITE_OK)
			return sqlt__db_error(r->db, r->err, "reading the audit records");
	}
	return 0;
}

static json_t *time_of(const char *s)
{
	char iso[SQLT_TIME_CAP];

	snprintf(iso, sizeof(iso), "%s", s);
	if (strlen(iso) > 10 && iso[10] == ' ')
		iso[10] = 'T';
	return json_string(iso);
}

static json_t *value_of(rd *r, sqlite3_stmt *st, int i, int how)
{
	const char *s;

	switch (sqlite3_column_type(st, i)) {
	case SQLITE_NULL:
		return json_null();
	case SQLITE_INTEGER:
		if (how == C_BOOL)
			return json_boolean(sqlite3_column_int64(st, i));
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	default:
		s = (const char *)sqlite3_column_text(st, i);
		if (how == C_TIME)
			return time_of(s);
		if (how == C_JSON)
			return json_loads(s, JSON_DECODE_ANY, NULL);
		return json_string(s);
	}
	(void)r;
}

/* The current row of query q as a record, passed to the callback. */
static int emit(rd *r, int q)
{
	sqlite3_stmt *st = r->st[q];
	json_t *rec = json_object();
	int i = 0, rc;

	if (!rec)
		return core_err_set(r->err, CORE_ENOMEM, "out of memory");
	json_object_set_new(rec, "record_type", json_string(r->q[q].r.type));
	for (const col *c = r->q[q].r.cols; c->field; c++, i++) {
		json_t *v = !strcmp(c->column, "?run") ? json_string(r->rid) :
			    value_of(r, st, i, c->how);

		if (!v || json_object_set_new(rec, c->field, v)) {
			json_decref(rec);
			return core_err_set(r->err, CORE_EDATA,
				"run %s: the %s's %s cannot be read back",
				r->rid, r->q[q].r.type, c->field);
		}
	}
	rc = r->fn(r->ctx, rec, r->err);
	json_decref(rec);
	return rc;
}

/* Runs query q for key, emitting each row and calling child after each
 * with the row's first column (its id) bound as the next key. */
static int each(rd *r, int q, const char *key, int (*child)(rd *r, const char *id))
{
	sqlite3_stmt *st = r->st[q];
	int rc = 0, s;

	sqlite3_reset(st);
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
		char id[256];
		/* The id: the record's second field (after run_id), or its
		 * first for tables without run_id in the query order. */
		const unsigned char *v = sqlite3_column_text(st, 1);

		snprintf(id, sizeof(id), "%s", v ? (const char *)v : "");
		if (!(rc = emit(r, q)) && child) {
			/* The child statements are separate: this one keeps
			 * its cursor. */
			rc = child(r, id);
		}
	}
	if (!rc && s != SQLITE_DONE)
		rc = sqlt__db_error(r->db, r->err, "reading the audit records");
	sqlite3_reset(st);
	return rc;
}

static int state_children(rd *r, const char *state)
{
	int rc = each(r, Q_ROUTING, state, NULL);

	return rc ? rc : each(r, Q_CALL, state, NULL);
}

static int token_children(rd *r, const char *token)
{
	int rc;

	if ((rc = each(r, Q_PARENT, token, NULL)) ||
	    (rc = each(r, Q_OUTCOME, token, NULL)))
		return rc;
	return each(r, Q_STATE, token, state_children);
}

static int row_children(rd *r, const char *row)
{
	return each(r, Q_TOKEN, row, token_children);
}

static int op_children(rd *r, const char *op)
{
	return each(r, Q_OPCALL, op, NULL);
}

static int batch_children(rd *r, const char *batch)
{
	return each(r, Q_MEMBER, batch, NULL);
}

/* The records in ELSPETH's order: run, secret resolutions, nodes, edges,
 * operations (each with its calls), 0.7.1's validation and transform
 * errors, rows (each with its tokens; a token
 * with its parents, outcomes and states; a state with its routing events
 * and calls), batches (each with its members), artifacts. */
int sqlt__audit_records(sqlite3 *db, const char *rid, const sqlt_shape *shape,
			sqlt_record_fn fn, void *ctx, core_err *err)
{
	rd r = { .q = shape && shape->v2 ? queries2 : queries,
		 .raw = shape && shape->raw_error_rows,
		 .db = db, .rid = rid, .fn = fn, .ctx = ctx, .err = err };
	int rc, found = 0;

	if ((rc = prepare(&r)))
		goto out;
	sqlite3_bind_text(r.st[Q_RUN], 1, rid, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(r.st[Q_RUN]) == SQLITE_ROW) {
		found = 1;
		rc = emit(&r, Q_RUN);
	}
	if (!rc && !found)
		rc = core_err_set(err, CORE_EDATA, "run %s is not in the SQL trail", rid);
	if (rc || (rc = each(&r, Q_SECRET, rid, NULL)) ||
	    (rc = each(&r, Q_NODE, rid, NULL)) || (rc = each(&r, Q_EDGE, rid, NULL)) ||
	    (rc = each(&r, Q_OP, rid, op_children)) ||
	    (r.q[Q_VERR].r.cols && (rc = each(&r, Q_VERR, rid, NULL))) ||
	    (r.q[Q_TERR].r.cols && (rc = each(&r, Q_TERR, rid, NULL))) ||
	    (rc = each(&r, Q_ROW, rid, row_children)) ||
	    (rc = each(&r, Q_BATCH, rid, batch_children)))
		goto out;
	rc = each(&r, Q_ARTIFACT, rid, NULL);
out:
	for (int q = 0; q < Q__COUNT; q++)
		sqlite3_finalize(r.st[q]);
	return rc;
}

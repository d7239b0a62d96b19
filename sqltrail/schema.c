/*
 * schema.c — the SQL trail's tables: ELSPETH 0.4.1's twenty, with the
 * column names, types and constraints its SQLite database has (as
 * SQLAlchemy creates them; tests/fixtures/elspeth-0.4.1-schema.sql is
 * that database's `.schema`, and a test compares the two), then ours,
 * prefixed elspeth_, for what ELSPETH does not record. Indexes are a list
 * of their own: a new file gets them after its first runs are in (bulk
 * inserts are faster without them).
 */
#include <stddef.h>

#include "sqltrail/sqltrail_internal.h"

const char *const sqlt__elspeth_tables[] = {
	"CREATE TABLE IF NOT EXISTS runs (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	started_at DATETIME NOT NULL,\n"
	"	completed_at DATETIME,\n"
	"	config_hash VARCHAR(64) NOT NULL,\n"
	"	settings_json TEXT NOT NULL,\n"
	"	reproducibility_grade VARCHAR(32),\n"
	"	canonical_version VARCHAR(64) NOT NULL,\n"
	"	source_schema_json TEXT,\n"
	"	source_field_resolution_json TEXT,\n"
	"	status VARCHAR(32) NOT NULL,\n"
	"	export_status VARCHAR(32),\n"
	"	export_error TEXT,\n"
	"	exported_at DATETIME,\n"
	"	export_format VARCHAR(16),\n"
	"	export_sink VARCHAR(128),\n"
	"	schema_contract_json TEXT,\n"
	"	schema_contract_hash VARCHAR(16),\n"
	"	PRIMARY KEY (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS nodes (\n"
	"	node_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	plugin_name VARCHAR(128) NOT NULL,\n"
	"	node_type VARCHAR(32) NOT NULL,\n"
	"	plugin_version VARCHAR(32) NOT NULL,\n"
	"	determinism VARCHAR(32) NOT NULL,\n"
	"	config_hash VARCHAR(64) NOT NULL,\n"
	"	config_json TEXT NOT NULL,\n"
	"	schema_hash VARCHAR(64),\n"
	"	sequence_in_pipeline INTEGER,\n"
	"	registered_at DATETIME NOT NULL,\n"
	"	schema_mode VARCHAR(16),\n"
	"	schema_fields_json TEXT,\n"
	"	input_contract_json TEXT,\n"
	"	output_contract_json TEXT,\n"
	"	PRIMARY KEY (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS secret_resolutions (\n"
	"	resolution_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	timestamp FLOAT NOT NULL,\n"
	"	env_var_name VARCHAR(256) NOT NULL,\n"
	"	source VARCHAR(32) NOT NULL,\n"
	"	vault_url TEXT,\n"
	"	secret_name VARCHAR(256),\n"
	"	fingerprint VARCHAR(64) NOT NULL,\n"
	"	resolution_latency_ms FLOAT,\n"
	"	PRIMARY KEY (resolution_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS preflight_results (\n"
	"	result_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	result_type VARCHAR(32) NOT NULL,\n"
	"	name VARCHAR(256) NOT NULL,\n"
	"	result_json TEXT NOT NULL,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (result_id),\n"
	"	CONSTRAINT ck_preflight_result_type CHECK (result_type IN ('dependency_run', 'commencement_gate', 'readiness_check')),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS edges (\n"
	"	edge_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	from_node_id VARCHAR(64) NOT NULL,\n"
	"	to_node_id VARCHAR(64) NOT NULL,\n"
	"	label VARCHAR(64) NOT NULL,\n"
	"	default_mode VARCHAR(16) NOT NULL,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (edge_id),\n"
	"	UNIQUE (run_id, from_node_id, label),\n"
	"	FOREIGN KEY(from_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(to_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS rows (\n"
	"	row_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	source_node_id VARCHAR(64) NOT NULL,\n"
	"	row_index INTEGER NOT NULL,\n"
	"	source_data_hash VARCHAR(64) NOT NULL,\n"
	"	source_data_ref VARCHAR(256),\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (row_id),\n"
	"	UNIQUE (run_id, row_index),\n"
	"	FOREIGN KEY(source_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS operations (\n"
	"	operation_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	node_id VARCHAR(64) NOT NULL,\n"
	"	operation_type VARCHAR(32) NOT NULL,\n"
	"	started_at DATETIME NOT NULL,\n"
	"	completed_at DATETIME,\n"
	"	status VARCHAR(16) NOT NULL,\n"
	"	input_data_ref VARCHAR(256),\n"
	"	input_data_hash VARCHAR(64),\n"
	"	output_data_ref VARCHAR(256),\n"
	"	output_data_hash VARCHAR(64),\n"
	"	error_message TEXT,\n"
	"	duration_ms FLOAT,\n"
	"	PRIMARY KEY (operation_id),\n"
	"	FOREIGN KEY(node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS validation_errors (\n"
	"	error_id VARCHAR(32) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	node_id VARCHAR(64),\n"
	"	row_hash VARCHAR(64) NOT NULL,\n"
	"	row_data_json TEXT,\n"
	"	error TEXT NOT NULL,\n"
	"	schema_mode VARCHAR(16) NOT NULL,\n"
	"	destination VARCHAR(255) NOT NULL,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	violation_type VARCHAR(32),\n"
	"	original_field_name VARCHAR(256),\n"
	"	normalized_field_name VARCHAR(256),\n"
	"	expected_type VARCHAR(32),\n"
	"	actual_type VARCHAR(32),\n"
	"	PRIMARY KEY (error_id),\n"
	"	FOREIGN KEY(node_id, run_id) REFERENCES nodes (node_id, run_id) ON DELETE RESTRICT,\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS tokens (\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	row_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	fork_group_id VARCHAR(64),\n"
	"	join_group_id VARCHAR(64),\n"
	"	expand_group_id VARCHAR(32),\n"
	"	branch_name VARCHAR(64),\n"
	"	step_in_pipeline INTEGER,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (token_id),\n"
	"	UNIQUE (token_id, run_id),\n"
	"	FOREIGN KEY(row_id) REFERENCES rows (row_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS token_parents (\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	parent_token_id VARCHAR(64) NOT NULL,\n"
	"	ordinal INTEGER NOT NULL,\n"
	"	PRIMARY KEY (token_id, parent_token_id),\n"
	"	UNIQUE (token_id, ordinal),\n"
	"	FOREIGN KEY(token_id) REFERENCES tokens (token_id),\n"
	"	FOREIGN KEY(parent_token_id) REFERENCES tokens (token_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS node_states (\n"
	"	state_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	node_id VARCHAR(64) NOT NULL,\n"
	"	step_index INTEGER NOT NULL,\n"
	"	attempt INTEGER NOT NULL,\n"
	"	status VARCHAR(32) NOT NULL,\n"
	"	input_hash VARCHAR(64) NOT NULL,\n"
	"	output_hash VARCHAR(64),\n"
	"	context_before_json TEXT,\n"
	"	context_after_json TEXT,\n"
	"	duration_ms FLOAT,\n"
	"	error_json TEXT,\n"
	"	success_reason_json TEXT,\n"
	"	started_at DATETIME NOT NULL,\n"
	"	completed_at DATETIME,\n"
	"	PRIMARY KEY (state_id),\n"
	"	UNIQUE (token_id, node_id, attempt),\n"
	"	UNIQUE (token_id, step_index, attempt),\n"
	"	FOREIGN KEY(node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(token_id) REFERENCES tokens (token_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS transform_errors (\n"
	"	error_id VARCHAR(32) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	transform_id VARCHAR(64) NOT NULL,\n"
	"	row_hash VARCHAR(64) NOT NULL,\n"
	"	row_data_json TEXT,\n"
	"	error_details_json TEXT,\n"
	"	destination VARCHAR(255) NOT NULL,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (error_id),\n"
	"	FOREIGN KEY(token_id, run_id) REFERENCES tokens (token_id, run_id) ON DELETE RESTRICT,\n"
	"	FOREIGN KEY(transform_id, run_id) REFERENCES nodes (node_id, run_id) ON DELETE RESTRICT\n"
	")",
	"CREATE TABLE IF NOT EXISTS checkpoints (\n"
	"	checkpoint_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	node_id VARCHAR(64) NOT NULL,\n"
	"	sequence_number INTEGER NOT NULL,\n"
	"	aggregation_state_json TEXT,\n"
	"	coalesce_state_json TEXT,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	upstream_topology_hash VARCHAR(64) NOT NULL,\n"
	"	checkpoint_node_config_hash VARCHAR(64) NOT NULL,\n"
	"	format_version INTEGER,\n"
	"	PRIMARY KEY (checkpoint_id),\n"
	"	FOREIGN KEY(node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id),\n"
	"	FOREIGN KEY(token_id) REFERENCES tokens (token_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS calls (\n"
	"	call_id VARCHAR(64) NOT NULL,\n"
	"	state_id VARCHAR(64),\n"
	"	operation_id VARCHAR(64),\n"
	"	call_index INTEGER NOT NULL,\n"
	"	call_type VARCHAR(32) NOT NULL,\n"
	"	status VARCHAR(32) NOT NULL,\n"
	"	request_hash VARCHAR(64) NOT NULL,\n"
	"	request_ref VARCHAR(256),\n"
	"	response_hash VARCHAR(64),\n"
	"	response_ref VARCHAR(256),\n"
	"	error_json TEXT,\n"
	"	latency_ms FLOAT,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (call_id),\n"
	"	CONSTRAINT calls_has_parent CHECK ((state_id IS NOT NULL AND operation_id IS NULL) OR (state_id IS NULL AND operation_id IS NOT NULL)),\n"
	"	FOREIGN KEY(state_id) REFERENCES node_states (state_id),\n"
	"	FOREIGN KEY(operation_id) REFERENCES operations (operation_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS artifacts (\n"
	"	artifact_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	produced_by_state_id VARCHAR(64) NOT NULL,\n"
	"	sink_node_id VARCHAR(64) NOT NULL,\n"
	"	artifact_type VARCHAR(64) NOT NULL,\n"
	"	path_or_uri VARCHAR(512) NOT NULL,\n"
	"	content_hash VARCHAR(64) NOT NULL,\n"
	"	size_bytes INTEGER NOT NULL,\n"
	"	idempotency_key VARCHAR(256),\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (artifact_id),\n"
	"	FOREIGN KEY(sink_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id),\n"
	"	FOREIGN KEY(produced_by_state_id) REFERENCES node_states (state_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS routing_events (\n"
	"	event_id VARCHAR(64) NOT NULL,\n"
	"	state_id VARCHAR(64) NOT NULL,\n"
	"	edge_id VARCHAR(64) NOT NULL,\n"
	"	routing_group_id VARCHAR(64) NOT NULL,\n"
	"	ordinal INTEGER NOT NULL,\n"
	"	mode VARCHAR(16) NOT NULL,\n"
	"	reason_hash VARCHAR(64),\n"
	"	reason_ref VARCHAR(256),\n"
	"	created_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (event_id),\n"
	"	UNIQUE (routing_group_id, ordinal),\n"
	"	FOREIGN KEY(state_id) REFERENCES node_states (state_id),\n"
	"	FOREIGN KEY(edge_id) REFERENCES edges (edge_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS batches (\n"
	"	batch_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	aggregation_node_id VARCHAR(64) NOT NULL,\n"
	"	aggregation_state_id VARCHAR(64),\n"
	"	trigger_reason VARCHAR(128),\n"
	"	trigger_type VARCHAR(32),\n"
	"	attempt INTEGER NOT NULL,\n"
	"	status VARCHAR(32) NOT NULL,\n"
	"	created_at DATETIME NOT NULL,\n"
	"	completed_at DATETIME,\n"
	"	PRIMARY KEY (batch_id),\n"
	"	FOREIGN KEY(aggregation_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id),\n"
	"	FOREIGN KEY(aggregation_state_id) REFERENCES node_states (state_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS token_outcomes (\n"
	"	outcome_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	outcome VARCHAR(32) NOT NULL,\n"
	"	is_terminal INTEGER NOT NULL,\n"
	"	recorded_at DATETIME NOT NULL,\n"
	"	sink_name VARCHAR(128),\n"
	"	batch_id VARCHAR(64),\n"
	"	fork_group_id VARCHAR(64),\n"
	"	join_group_id VARCHAR(64),\n"
	"	expand_group_id VARCHAR(64),\n"
	"	error_hash VARCHAR(64),\n"
	"	context_json TEXT,\n"
	"	expected_branches_json TEXT,\n"
	"	PRIMARY KEY (outcome_id),\n"
	"	FOREIGN KEY(token_id, run_id) REFERENCES tokens (token_id, run_id),\n"
	"	FOREIGN KEY(batch_id) REFERENCES batches (batch_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS batch_members (\n"
	"	batch_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	ordinal INTEGER NOT NULL,\n"
	"	PRIMARY KEY (batch_id, token_id),\n"
	"	UNIQUE (batch_id, ordinal),\n"
	"	FOREIGN KEY(batch_id) REFERENCES batches (batch_id),\n"
	"	FOREIGN KEY(token_id) REFERENCES tokens (token_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS batch_outputs (\n"
	"	batch_output_id VARCHAR(64) NOT NULL,\n"
	"	batch_id VARCHAR(64) NOT NULL,\n"
	"	output_type VARCHAR(32) NOT NULL,\n"
	"	output_id VARCHAR(64) NOT NULL,\n"
	"	PRIMARY KEY (batch_output_id),\n"
	"	UNIQUE (batch_id, output_type, output_id),\n"
	"	FOREIGN KEY(batch_id) REFERENCES batches (batch_id)\n"
	")",
	NULL
};

const char *const sqlt__elspeth_indexes[] = {
	"CREATE INDEX IF NOT EXISTS ix_nodes_run_id ON nodes (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_secret_resolutions_run_id ON secret_resolutions (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_secret_resolutions_run ON secret_resolutions (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_preflight_results_run ON preflight_results (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_edges_run_id ON edges (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_rows_run_id ON rows (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_operations_run_id ON operations (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_operations_node_run ON operations (node_id, run_id)",
	"CREATE INDEX IF NOT EXISTS ix_validation_errors_node ON validation_errors (node_id)",
	"CREATE INDEX IF NOT EXISTS ix_validation_errors_run ON validation_errors (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_tokens_expand_group_id ON tokens (expand_group_id)",
	"CREATE INDEX IF NOT EXISTS ix_tokens_row_id ON tokens (row_id)",
	"CREATE INDEX IF NOT EXISTS ix_token_parents_parent ON token_parents (parent_token_id)",
	"CREATE INDEX IF NOT EXISTS ix_node_states_token ON node_states (token_id)",
	"CREATE INDEX IF NOT EXISTS ix_node_states_node ON node_states (node_id)",
	"CREATE INDEX IF NOT EXISTS ix_transform_errors_run ON transform_errors (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_transform_errors_transform ON transform_errors (transform_id)",
	"CREATE INDEX IF NOT EXISTS ix_transform_errors_token ON transform_errors (token_id)",
	"CREATE INDEX IF NOT EXISTS ix_checkpoints_run ON checkpoints (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_checkpoints_run_seq ON checkpoints (run_id, sequence_number)",
	"CREATE INDEX IF NOT EXISTS ix_calls_operation ON calls (operation_id)",
	"CREATE INDEX IF NOT EXISTS ix_calls_state ON calls (state_id)",
	"CREATE UNIQUE INDEX IF NOT EXISTS ix_calls_operation_call_index_unique ON calls (operation_id, call_index) WHERE operation_id IS NOT NULL",
	"CREATE UNIQUE INDEX IF NOT EXISTS ix_calls_state_call_index_unique ON calls (state_id, call_index) WHERE state_id IS NOT NULL",
	"CREATE INDEX IF NOT EXISTS ix_artifacts_run ON artifacts (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_routing_events_state ON routing_events (state_id)",
	"CREATE INDEX IF NOT EXISTS ix_routing_events_group ON routing_events (routing_group_id)",
	"CREATE INDEX IF NOT EXISTS ix_batches_run_status ON batches (run_id, status)",
	"CREATE INDEX IF NOT EXISTS ix_token_outcomes_token_id ON token_outcomes (token_id)",
	"CREATE UNIQUE INDEX IF NOT EXISTS ix_token_outcomes_terminal_unique ON token_outcomes (token_id) WHERE is_terminal = 1",
	"CREATE INDEX IF NOT EXISTS ix_token_outcomes_run_id ON token_outcomes (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_batch_members_batch ON batch_members (batch_id)",
	"CREATE INDEX IF NOT EXISTS ix_batch_outputs_batch ON batch_outputs (batch_id)",
	NULL
};

/* Ours. Ids as in ELSPETH's tables ("tok-1-42"); times as there. */
const char *const sqlt__own_tables[] = {
	"CREATE TABLE IF NOT EXISTS elspeth_runs (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	landscape_run_id INTEGER NOT NULL,\n"
	"	topology_hash VARCHAR(64),\n"
	"	settings_path TEXT,\n"
	"	elspeth_version VARCHAR(32),\n"
	"	rows INTEGER,\n"
	"	succeeded INTEGER,\n"
	"	failed INTEGER,\n"
	"	quarantined INTEGER,\n"
	"	error TEXT,\n"
	"	metrics_json TEXT,\n"
	"	resumes INTEGER NOT NULL,\n"
	"	exported_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (run_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_rows (\n"
	"	row_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	seq INTEGER NOT NULL,\n"
	"	source_location TEXT,\n"
	"	PRIMARY KEY (row_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_calls (\n"
	"	call_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64),\n"
	"	row_id VARCHAR(64),\n"
	"	query_name VARCHAR(128),\n"
	"	http_status INTEGER,\n"
	"	error_class VARCHAR(32),\n"
	"	error TEXT,\n"
	"	submitted_at DATETIME,\n"
	"	completed_at DATETIME,\n"
	"	throttle_delay_ms FLOAT,\n"
	"	throttle_reason VARCHAR(64),\n"
	"	submit_order INTEGER,\n"
	"	complete_order INTEGER,\n"
	"	replayed_from VARCHAR(64),\n"
	"	PRIMARY KEY (call_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_artifacts (\n"
	"	artifact_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	byte_offset INTEGER NOT NULL,\n"
	"	byte_length INTEGER NOT NULL,\n"
	"	PRIMARY KEY (artifact_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_sink_files (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	sink_node_id VARCHAR(64) NOT NULL,\n"
	"	sink_name VARCHAR(128) NOT NULL,\n"
	"	path TEXT NOT NULL,\n"
	"	size_bytes INTEGER NOT NULL,\n"
	"	content_hash VARCHAR(64) NOT NULL,\n"
	"	PRIMARY KEY (run_id, sink_node_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_resumes (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	attempt INTEGER NOT NULL,\n"
	"	started_at DATETIME NOT NULL,\n"
	"	completed_at DATETIME,\n"
	"	status VARCHAR(32) NOT NULL,\n"
	"	previous_status VARCHAR(32),\n"
	"	from_released_seq INTEGER,\n"
	"	rows_reused INTEGER,\n"
	"	rows_rerun INTEGER,\n"
	"	tokens_superseded INTEGER,\n"
	"	calls_replayed INTEGER,\n"
	"	max_rows_in_flight INTEGER,\n"
	"	PRIMARY KEY (run_id, attempt)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_superseded (\n"
	"	token_id VARCHAR(64) NOT NULL,\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	row_id VARCHAR(64) NOT NULL,\n"
	"	attempt INTEGER NOT NULL,\n"
	"	reason TEXT,\n"
	"	outcome VARCHAR(32),\n"
	"	sink_name VARCHAR(128),\n"
	"	PRIMARY KEY (token_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_samples (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	attempt INTEGER NOT NULL,\n"
	"	sample_index INTEGER NOT NULL,\n"
	"	sampled_at DATETIME NOT NULL,\n"
	"	elapsed_ms FLOAT NOT NULL,\n"
	"	final INTEGER NOT NULL,\n"
	"	rows_pulled INTEGER NOT NULL,\n"
	"	rows_released INTEGER NOT NULL,\n"
	"	rows_in_flight INTEGER NOT NULL,\n"
	"	rows_waiting INTEGER NOT NULL,\n"
	"	calls INTEGER NOT NULL,\n"
	"	calls_ok INTEGER NOT NULL,\n"
	"	calls_replayed INTEGER NOT NULL,\n"
	"	outcomes_json TEXT,\n"
	"	call_classes_json TEXT,\n"
	"	PRIMARY KEY (run_id, attempt, sample_index)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_sample_upstreams (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	attempt INTEGER NOT NULL,\n"
	"	sample_index INTEGER NOT NULL,\n"
	"	node_id VARCHAR(64) NOT NULL,\n"
	"	upstream TEXT NOT NULL,\n"
	"	rate_per_second FLOAT,\n"
	"	window FLOAT,\n"
	"	ceiling INTEGER,\n"
	"	in_flight INTEGER,\n"
	"	requests INTEGER,\n"
	"	refusals INTEGER,\n"
	"	held_by VARCHAR(64),\n"
	"	PRIMARY KEY (run_id, attempt, sample_index, node_id)\n"
	")",
	"CREATE TABLE IF NOT EXISTS elspeth_payloads (\n"
	"	hash VARCHAR(64) NOT NULL,\n"
	"	data BLOB NOT NULL,\n"
	"	PRIMARY KEY (hash)\n"
	")",
	NULL
};

const char *const sqlt__own_indexes[] = {
	"CREATE INDEX IF NOT EXISTS ix_elspeth_rows_run_seq ON elspeth_rows (run_id, seq)",
	"CREATE INDEX IF NOT EXISTS ix_elspeth_calls_run ON elspeth_calls (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_elspeth_artifacts_token ON elspeth_artifacts (token_id)",
	"CREATE INDEX IF NOT EXISTS ix_elspeth_superseded_run ON elspeth_superseded (run_id)",
	NULL
};

/* ELSPETH 0.7.1's additions, made in a database when a run in its format
 * first goes in (ADR 0049): its two columns of rows (added, so nullable:
 * a 0.4.1 run's rows have none) and its run_sources table as its
 * metadata.create_all makes it on SQLite. */
const char *const sqlt__v07_columns[] = {
	"source_row_index", "ingest_sequence", NULL
};

const char *const sqlt__v07_tables[] = {
	"CREATE TABLE IF NOT EXISTS run_sources (\n"
	"	run_id VARCHAR(64) NOT NULL,\n"
	"	source_node_id VARCHAR(64) NOT NULL,\n"
	"	source_name VARCHAR(64) NOT NULL,\n"
	"	plugin_name VARCHAR(128) NOT NULL,\n"
	"	lifecycle_state VARCHAR(32) NOT NULL,\n"
	"	config_hash VARCHAR(64) NOT NULL,\n"
	"	schema_json TEXT,\n"
	"	schema_contract_json TEXT,\n"
	"	schema_contract_hash VARCHAR(32),\n"
	"	field_resolution_json TEXT,\n"
	"	recorded_at DATETIME NOT NULL,\n"
	"	PRIMARY KEY (run_id, source_node_id),\n"
	"	UNIQUE (run_id, source_name),\n"
	"	CONSTRAINT ck_run_sources_lifecycle_state CHECK (lifecycle_state IN "
	"('ready', 'loading', 'exhausted', 'loaded', 'interrupted')),\n"
	"	FOREIGN KEY(source_node_id, run_id) REFERENCES nodes (node_id, run_id),\n"
	"	FOREIGN KEY(run_id) REFERENCES runs (run_id)\n"
	")",
	"CREATE INDEX IF NOT EXISTS ix_run_sources_source_name ON run_sources (run_id, source_name)",
	"CREATE INDEX IF NOT EXISTS ix_run_sources_run ON run_sources (run_id)",
	"CREATE INDEX IF NOT EXISTS ix_rows_run_ingest_sequence ON rows (run_id, ingest_sequence)",
	"CREATE INDEX IF NOT EXISTS ix_rows_run_source_row ON rows "
	"(run_id, source_node_id, source_row_index)",
	NULL
};

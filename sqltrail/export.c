/*
 * export.c — sqlt_export(): the driver. For each run: one SQLite
 * transaction that deletes what an earlier export wrote of it, then
 * writes the run, its nodes and edges (here), its tokens and states
 * (export_tokens.c) and the rest (export_records.c), all read in one
 * LMDB read transaction, so the SQL file holds a consistent picture of
 * the trail as it was when the export began.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqltrail/export_internal.h"

const char *const sqlt__outcome_names[OUT__COUNT] = {
	"", "completed", "routed", "forked", "failed", "quarantined",
	"diverted", "consumed_in_batch", "coalesced", "expanded",
};

/* Every table the exporter writes, its columns in binding order. A
 * column whose value is always the same is fixed (ELSPETH's
 * is_terminal, output_type, artifact_type): it is not bound. */
const sqlt_table sqlt__tables[ST__COUNT] = {
	[ST_RUNS] = { "runs", 8,
		"run_id, started_at, completed_at, config_hash, "
		"settings_json, reproducibility_grade, canonical_version, "
		"status", .key = "run_id" },
	[ST_NODES] = { "nodes", 12,
		"node_id, run_id, plugin_name, node_type, plugin_version, "
		"determinism, config_hash, config_json, "
		"sequence_in_pipeline, registered_at, schema_mode, "
		"schema_fields_json" },
	[ST_EDGES] = { "edges", 7,
		"edge_id, run_id, from_node_id, to_node_id, label, "
		"default_mode, created_at" },
	[ST_ROWS] = { "rows", 7,
		"row_id, run_id, source_node_id, row_index, "
		"source_data_hash, source_data_ref, created_at" },
	[ST_TOKENS] = { "tokens", 9,
		"token_id, row_id, run_id, fork_group_id, join_group_id, "
		"expand_group_id, branch_name, step_in_pipeline, created_at" },
	[ST_TOKEN_PARENTS] = { "token_parents", 3,
		"token_id, parent_token_id, ordinal" },
	[ST_TOKEN_OUTCOMES] = { "token_outcomes", 12,
		"outcome_id, run_id, token_id, outcome, recorded_at, "
		"sink_name, batch_id, fork_group_id, join_group_id, "
		"expand_group_id, error_hash, expected_branches_json",
		.fixed_col = "is_terminal", .fixed_sql = "1",
		.fixed_copy = "1" },
	[ST_NODE_STATES] = { "node_states", 14,
		"state_id, token_id, run_id, node_id, step_index, attempt, "
		"status, input_hash, output_hash, context_after_json, "
		"duration_ms, error_json, started_at, completed_at" },
	[ST_OPERATIONS] = { "operations", 10,
		"operation_id, run_id, node_id, operation_type, started_at, "
		"completed_at, status, output_data_hash, error_message, "
		"duration_ms" },
	[ST_CALLS] = { "calls", 12,
		"call_id, state_id, call_index, call_type, status, "
		"request_hash, request_ref, response_hash, response_ref, "
		"error_json, latency_ms, created_at" },
	[ST_ROUTING_EVENTS] = { "routing_events", 9,
		"event_id, state_id, edge_id, routing_group_id, ordinal, "
		"mode, reason_hash, reason_ref, created_at" },
	[ST_BATCHES] = { "batches", 9,
		"batch_id, run_id, aggregation_node_id, trigger_reason, "
		"trigger_type, attempt, status, created_at, completed_at",
		.key = "batch_id" },
	[ST_BATCH_MEMBERS] = { "batch_members", 3,
		"batch_id, token_id, ordinal", .live_keep = true },
	[ST_BATCH_OUTPUTS] = { "batch_outputs", 3,
		"batch_output_id, batch_id, output_id",
		.keep_existing = true, .fixed_col = "output_type", .fixed_sql = "'token'",
		.fixed_copy = "token" },
	[ST_ARTIFACTS] = { "artifacts", 8,
		"artifact_id, run_id, produced_by_state_id, sink_node_id, "
		"path_or_uri, content_hash, size_bytes, created_at",
		.fixed_col = "artifact_type", .fixed_sql = "'file'",
		.fixed_copy = "file" },
	[ST_VALIDATION_ERRORS] = { "validation_errors", 14,
		"error_id, run_id, node_id, row_hash, row_data_json, error, "
		"schema_mode, destination, created_at, violation_type, "
		"original_field_name, normalized_field_name, expected_type, "
		"actual_type" },
	[ST_TRANSFORM_ERRORS] = { "transform_errors", 9,
		"error_id, run_id, token_id, transform_id, row_hash, "
		"row_data_json, error_details_json, destination, created_at" },
	[ST_CHECKPOINTS] = { "checkpoints", 10,
		"checkpoint_id, run_id, token_id, node_id, sequence_number, "
		"aggregation_state_json, created_at, "
		"upstream_topology_hash, checkpoint_node_config_hash, "
		"format_version" },
	[ST_OWN_RUNS] = { "elspeth_runs", 13,
		"run_id, landscape_run_id, topology_hash, settings_path, "
		"elspeth_version, rows, succeeded, failed, quarantined, "
		"error, metrics_json, resumes, exported_at", .key = "run_id" },
	[ST_OWN_ROWS] = { "elspeth_rows", 4,
		"row_id, run_id, seq, source_location" },
	[ST_OWN_CALLS] = { "elspeth_calls", 15,
		"call_id, run_id, token_id, row_id, query_name, "
		"http_status, error_class, error, submitted_at, "
		"completed_at, throttle_delay_ms, throttle_reason, "
		"submit_order, complete_order, replayed_from" },
	[ST_OWN_ARTIFACTS] = { "elspeth_artifacts", 5,
		"artifact_id, run_id, token_id, byte_offset, byte_length" },
	[ST_OWN_SINK_FILES] = { "elspeth_sink_files", 6,
		"run_id, sink_node_id, sink_name, path, size_bytes, "
		"content_hash" },
	[ST_OWN_RESUMES] = { "elspeth_resumes", 12,
		"run_id, attempt, started_at, completed_at, status, "
		"previous_status, from_released_seq, rows_reused, "
		"rows_rerun, tokens_superseded, calls_replayed, "
		"max_rows_in_flight" },
	[ST_OWN_SUPERSEDED] = { "elspeth_superseded", 7,
		"token_id, run_id, row_id, attempt, reason, outcome, "
		"sink_name" },
	[ST_OWN_PAYLOADS] = { "elspeth_payloads", 2,
		"hash, data",
		.keep_existing = true },
	[ST_OWN_SAMPLES] = { "elspeth_samples", 15,
		"run_id, attempt, sample_index, sampled_at, elapsed_ms, "
		"final, rows_pulled, rows_released, rows_in_flight, "
		"rows_waiting, calls, calls_ok, calls_replayed, "
		"outcomes_json, call_classes_json" },
	[ST_OWN_SAMPLE_UPSTREAMS] = { "elspeth_sample_upstreams", 12,
		"run_id, attempt, sample_index, node_id, upstream, "
		"rate_per_second, window, ceiling, in_flight, requests, "
		"refusals, held_by" },
	[ST_ROWS07] = { "rows", 9,
		"row_id, run_id, source_node_id, row_index, "
		"source_data_hash, source_data_ref, created_at, "
		"source_row_index, ingest_sequence", .v07 = true },
	[ST_RUN_SOURCES] = { "run_sources", 11,
		"run_id, source_node_id, source_name, plugin_name, "
		"lifecycle_state, config_hash, schema_json, "
		"schema_contract_json, schema_contract_hash, "
		"field_resolution_json, recorded_at",
		.key = "run_id, source_node_id", .v07 = true },
};

/* What an earlier export wrote of run ?1: tables without a run_id go by
 * their parent's. */
const char *const sqlt__delete_sql[] = {
	"DELETE FROM calls WHERE state_id IN "
		"(SELECT state_id FROM node_states WHERE run_id = ?1)",
	"DELETE FROM routing_events WHERE state_id IN "
		"(SELECT state_id FROM node_states WHERE run_id = ?1)",
	"DELETE FROM token_parents WHERE token_id IN "
		"(SELECT token_id FROM tokens WHERE run_id = ?1)",
	"DELETE FROM batch_members WHERE batch_id IN "
		"(SELECT batch_id FROM batches WHERE run_id = ?1)",
	"DELETE FROM batch_outputs WHERE batch_id IN "
		"(SELECT batch_id FROM batches WHERE run_id = ?1)",
	"DELETE FROM token_outcomes WHERE run_id = ?1",
	"DELETE FROM artifacts WHERE run_id = ?1",
	"DELETE FROM validation_errors WHERE run_id = ?1",
	"DELETE FROM transform_errors WHERE run_id = ?1",
	"DELETE FROM checkpoints WHERE run_id = ?1",
	"DELETE FROM operations WHERE run_id = ?1",
	"DELETE FROM batches WHERE run_id = ?1",
	"DELETE FROM node_states WHERE run_id = ?1",
	"DELETE FROM tokens WHERE run_id = ?1",
	"DELETE FROM rows WHERE run_id = ?1",
	"DELETE FROM edges WHERE run_id = ?1",
	"DELETE FROM nodes WHERE run_id = ?1",
	"DELETE FROM secret_resolutions WHERE run_id = ?1",
	"DELETE FROM preflight_results WHERE run_id = ?1",
	"DELETE FROM runs WHERE run_id = ?1",
	"DELETE FROM elspeth_runs WHERE run_id = ?1",
	"DELETE FROM elspeth_rows WHERE run_id = ?1",
	"DELETE FROM elspeth_calls WHERE run_id = ?1",
	"DELETE FROM elspeth_artifacts WHERE run_id = ?1",
	"DELETE FROM elspeth_sink_files WHERE run_id = ?1",
	"DELETE FROM elspeth_resumes WHERE run_id = ?1",
	"DELETE FROM elspeth_superseded WHERE run_id = ?1",
	"DELETE FROM elspeth_samples WHERE run_id = ?1",
	"DELETE FROM elspeth_sample_upstreams WHERE run_id = ?1",
	NULL
};
const char *const sqlt__delete_v07_sql[] = {
	"DELETE FROM run_sources WHERE run_id = ?1",
	NULL
};

int sqlt__conflict(int which, bool append)
{
	const sqlt_table *t = &sqlt__tables[which];

	if (t->keep_existing || (append && t->live_keep))
		return SQLT_KEEP;
	return append && t->key ? SQLT_REPLACE : SQLT_INSERT;
}

int sqlt__conflict_sql(int which, bool append, core_buf *b)
{
	const sqlt_table *t = &sqlt__tables[which];
	int rc = 0;

	switch (sqlt__conflict(which, append)) {
	case SQLT_KEEP:
		return core_buf_puts(b, " ON CONFLICT DO NOTHING") ? CORE_ENOMEM : 0;
	case SQLT_REPLACE:
		/* the key's columns, each quoted: "a", "b" */
		rc = core_buf_puts(b, " ON CONFLICT (");
		for (const char *c = t->key; *c && !rc;) {
			size_t n = strcspn(c, ",");

			rc = core_buf_printf(b, "%s\"%.*s\"", c == t->key ? "" : ", ",
					     (int)n, c);
			c += n;
			c += strspn(c, ", ");
		}
		if (!rc)
			rc = core_buf_puts(b, ") DO UPDATE SET ");
		for (const char *c = t->cols; *c && !rc;) {
			size_t n = strcspn(c, ",");

			rc = core_buf_printf(b, "%s\"%.*s\" = excluded.\"%.*s\"",
					     c == t->cols ? "" : ", ", (int)n, c, (int)n, c);
			c += n;
			c += strspn(c, ", ");
		}
		return rc ? CORE_ENOMEM : 0;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------- helpers */

int sqlt__step(xp *x, int which)
{
	xrow *r = &x->st[which];
	int rc;

	if (r->oom)
		rc = core_err_set(x->err, CORE_ENOMEM, "out of memory");
	else
		rc = x->out->ops->row(x->out, which, r, x->err);
	memset(r->kind, XV_NULL, sizeof(r->kind));
	core_buf_reset(&r->bytes);
	r->oom = false;
	if (rc)
		core_err_prefix(x->err, "run %s, table %s", x->rid,
				sqlt__tables[which].name);
	return rc;
}

static void put_bytes(xrow *s, int i, uint8_t kind, const void *v, size_t n)
{
	s->kind[i] = kind;
	s->off[i] = s->bytes.len;
	s->len[i] = n;
	if (core_buf_append(&s->bytes, v, n))
		s->oom = true;
}

void sqlt__bind_textn(xrow *s, int i, const char *v, size_t n)
{
	put_bytes(s, i, XV_TEXT, v, n);
}

void sqlt__bind_text(xrow *s, int i, const char *v)
{
	if (v)
		put_bytes(s, i, XV_TEXT, v, strlen(v));
	else
		s->kind[i] = XV_NULL;
}

void sqlt__bind_blob(xrow *s, int i, const void *v, size_t n)
{
	put_bytes(s, i, XV_BLOB, v, n);
}

void sqlt__bind_i64(xrow *s, int i, int64_t v)
{
	s->kind[i] = XV_INT;
	s->i[i] = v;
}

void sqlt__bind_f64(xrow *s, int i, double v)
{
	s->kind[i] = XV_REAL;
	s->d[i] = v;
}

void sqlt__bind_null(xrow *s, int i)
{
	s->kind[i] = XV_NULL;
}

void sqlt__bind_nz(xrow *s, int i, const char *v)
{
	sqlt__bind_text(s, i, v && *v ? v : NULL);
}

void sqlt__bind_time(xrow *s, int i, uint64_t ns)
{
	char t[SQLT_TIME_CAP];

	sqlt__time(ns, t);
	sqlt__bind_nz(s, i, t);
}

void sqlt__bind_id(xrow *s, int i, const char *fmt, ...)
{
	char b[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	sqlt__bind_textn(s, i, b, n < 0 ? 0 : (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

void sqlt__bind_ref(const xp *x, xrow *s, int i, const char *kind,
		    uint64_t id)
{
	char b[96], digits[24];
	size_t n = 0, k = strlen(kind), r = strlen(x->rid), d = 0;

	do
		digits[d++] = (char)('0' + id % 10);
	while ((id /= 10));
	memcpy(b, kind, k), n = k;
	b[n++] = '-';
	memcpy(b + n, x->rid, r), n += r;
	b[n++] = '-';
	while (d)
		b[n++] = digits[--d];
	sqlt__bind_textn(s, i, b, n);
}

void sqlt__bind_ms(xrow *s, int i, uint64_t ns)
{
	sqlt__bind_f64(s, i, (double)ns / 1e6);
}

const char *sqlt__node_id(const xp *x, uint32_t node)
{
	return node < x->nnodes ? x->nodes[node].id : "";
}

char *sqlt__json_text(json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;

	json_decref(v);
	return s;
}

uint64_t sqlt__state_at(const xp *x, uint64_t state)
{
	return state < x->nstates ? x->state_at[state] : 0;
}

int sqlt__payload(xp *x, const char *hash)
{
	const void *data;
	size_t len;
	xrow *s = &x->st[ST_OWN_PAYLOADS];

	if (!x->o || !x->o->payloads || !hash || !*hash ||
	    rec_get_payload(x->t, hash, &data, &len))
		return 0;
	sqlt__bind_text(s, 1, hash);
	sqlt__bind_blob(s, 2, data, len);
	return sqlt__step(x, ST_OWN_PAYLOADS);
}

typedef struct scan_ctx {
	xp *x;
	const ProtobufCMessageDescriptor *d;
	sqlt__scan_fn fn;
} scan_ctx;

static int scan_one(void *ctx, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	scan_ctx *c = ctx;
	ProtobufCMessage *m = protobuf_c_message_unpack(c->d, NULL, vlen, val);
	int rc;

	if (!m)
		return core_err_set(c->x->err, CORE_EDATA,
			"run %s: a record of %s cannot be decoded", c->x->rid,
			c->d->short_name);
	rc = c->fn(c->x, key, klen, m);
	protobuf_c_message_free_unpacked(m, NULL);
	return rc;
}

int sqlt__scan_rows(xp *x, const sqlt_pass *passes, size_t n)
{
	scan_ctx c[SQLT_PASSES_MAX];
	void *ctxs[SQLT_PASSES_MAX];
	rec_table tabs[SQLT_PASSES_MAX];
	int rc;

	if (n > SQLT_PASSES_MAX)
		return core_err_set(x->err, CORE_EINTERNAL, "too many passes");
	for (size_t i = 0; i < n; i++) {
		c[i] = (scan_ctx){ x, passes[i].d, passes[i].fn };
		ctxs[i] = &c[i];
		tabs[i] = passes[i].table;
	}
	rc = rec_scan_rows_multi(x->t, tabs, n, x->run, x->live ? x->row_lo : 0,
				 x->live ? x->row_hi : UINT64_MAX, scan_one, ctxs);
	if (rc && rc != REC_SCAN_STOP && !x->err->msg[0])
		core_err_set(x->err, rc, "reading the rows of run %s: %s%s%s%s",
			     x->rid, core_strerror(rc),
			     rc == CORE_EDATA ? ": the trail is damaged (" : "",
			     rc == CORE_EDATA ? rec_damage_where() : "",
			     rc == CORE_EDATA ? ")" : "");
	return rc == REC_SCAN_STOP ? 0 : rc;
}

static int scan_ids_sorted(xp *x, rec_table t, const uint64_t *ids, size_t n,
			   uint64_t from, scan_ctx *c);

static bool per_row(rec_table t)
{
	switch (t) {
	case REC_ROWS: case REC_TOKENS: case REC_TOKEN_PARENTS:
	case REC_NODE_STATES: case REC_ROUTING_EVENTS: case REC_ARTIFACTS:
	case REC_TOKEN_OUTCOMES: case REC_VALIDATION_ERRORS:
	case REC_TRANSFORM_ERRORS:
		return true;
	default:
		return false;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A live step's share of a table keyed (run, id, ...): the keys under
 * (run, id) for each id given — each once: a state a row's story holds
 * twice (opened in a checkpoint's fragment, completed in its last) is
 * listed twice, and its calls must be written once — or for every id
 * from `from` to the table's last. */
static int scan_ids(xp *x, rec_table t, const uint64_t *ids_given, size_t n,
		    uint64_t from, scan_ctx *c)
{
	uint64_t *ids = NULL;
	int rc;

	if (ids_given && n) {
		size_t m = 1;

		if (!(ids = malloc(n * sizeof(*ids))))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		memcpy(ids, ids_given, n * sizeof(*ids));
		qsort(ids, n, sizeof(*ids), cmp_u64);
		for (size_t i = 1; i < n; i++)
			if (ids[i] != ids[m - 1])
				ids[m++] = ids[i];
		n = m;
	}
	rc = scan_ids_sorted(x, t, ids_given ? ids : NULL, n, from, c);
	free(ids);
	return rc;
}

static int scan_ids_sorted(xp *x, rec_table t, const uint64_t *ids, size_t n,
			   uint64_t from, scan_ctx *c)
{
	uint64_t last = 0;
	rec_key k;
	int rc = 0;

	if (!ids) {
		const void *key, *v;
		size_t kl, vl;

		rec_key_init(&k);
		rec_key_u64(&k, x->run);
		rc = rec_last(x->t, t, &k, &key, &kl, &v, &vl);
		if (rc == REC_NOTFOUND)
			return 0;
		if (rc)
			return rc;
		last = rec_key_get_u64(key, 8);
		n = last >= from ? (size_t)(last - from + 1) : 0;
	}
	for (size_t i = 0; i < n && (!rc || rc == REC_SCAN_STOP); i++) {
		rec_key_init(&k);
		rec_key_u64(&k, x->run);
		rec_key_u64(&k, ids ? ids[i] : from + i);
		rc = rec_scan(x->t, t, &k, scan_one, c);
	}
	return rc;
}

int sqlt__scan(xp *x, rec_table t, const ProtobufCMessageDescriptor *d,
	       sqlt__scan_fn fn)
{
	scan_ctx c = { x, d, fn };
	rec_key k;
	int rc;

	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	if (x->live && per_row(t))
		rc = rec_scan_rows(x->t, t, x->run, x->row_lo, x->row_hi, scan_one, &c);
	else if (x->live && t == REC_CALLS)
		/* a step without states has no calls: no list is not "all" */
		rc = x->nstep_states ? scan_ids(x, t, x->step_states, x->nstep_states, 0, &c) : 0;
	else if (x->live && (t == REC_BATCHES || t == REC_BATCH_MEMBERS))
		rc = scan_ids(x, t, NULL, 0, x->batch_from, &c);
	else
		rc = rec_scan(x->t, t, &k, scan_one, &c);
	if (rc && rc != REC_SCAN_STOP && !x->err->msg[0])
		core_err_set(x->err, rc, "reading %s of run %s: %s%s%s%s",
			     rec_table_name(t), x->rid, core_strerror(rc),
			     rc == CORE_EDATA ? ": the trail is damaged (" : "",
			     rc == CORE_EDATA ? rec_damage_where() : "",
			     rc == CORE_EDATA ? ")" : "");
	return rc == REC_SCAN_STOP ? 0 : rc;
}

/* ------------------------------------------------------ nodes and edges */

#define NODES_MAX 65536 /* far above any pipeline: a bigger id is damage */

static const char *determinism(const xnode *n)
{
	if (!strcmp(n->kind, "source"))
		return "io_read";
	if (!strcmp(n->kind, "sink"))
		return "io_write";
	/* ELSPETH's EXTERNAL_CALL: the LLM plugins and web_scrape */
	if (strstr(n->plugin, "llm") || !strcmp(n->plugin, "web_scrape"))
		return "external_call";
	return "deterministic";
}

/* ELSPETH's node ids: kind, name (the plugin, for the source) and the
 * config hash's first 12 digits; a gate is a "config_gate". */
static void node_ident(xnode *n, const char *config_hash)
{
	const char *kind = !strcmp(n->kind, "gate") ? "config_gate" : n->kind;
	const char *name = !strcmp(n->kind, "source") ? n->plugin : n->name;

	snprintf(n->id, sizeof(n->id), "%s_%s_%.12s", kind, name, config_hash);
}

/* ELSPETH's schema_fields_json: the declared fields of a node's schema
 * as [{"name", "required", "type"}] in canonical JSON, or NULL (observed,
 * no schema). Field specs are "name: type" with a trailing "?" when
 * optional, or the {name: type} map YAML makes of an unquoted one. */
static char *schema_fields(const json_t *config)
{
	const json_t *fields = json_object_get(json_object_get(config, "schema"), "fields");
	json_t *out = json_array();
	char *text = NULL;
	core_err err = { 0 };
	bool optional;
	size_t i;
	json_t *f;

	json_array_foreach(fields, i, f) {
		char name[256], type[64];
		const char *spec = json_string_value(f), *colon;
		size_t tn;

		if (!spec && json_is_object(f) && json_object_size(f) == 1) {
			void *it = json_object_iter((json_t *)f);

			snprintf(name, sizeof(name), "%s", json_object_iter_key(it));
			snprintf(type, sizeof(type), "%s",
				 json_string_value(json_object_iter_value(it)) ?
				 json_string_value(json_object_iter_value(it)) : "");
		} else if (spec && (colon = strrchr(spec, ':'))) {
			snprintf(name, sizeof(name), "%.*s", (int)(colon - spec), spec);
			snprintf(type, sizeof(type), "%s", colon + 1 + strspn(colon + 1, " "));
		} else {
			continue;
		}
		tn = strlen(type);
		while (tn && type[tn - 1] == ' ')
			type[--tn] = 0;
		optional = tn && type[tn - 1] == '?';
		if (optional)
			type[--tn] = 0;
		json_array_append_new(out, json_pack("{s:s,s:b,s:s}", "name", name,
			"required", !optional, "type", type));
	}
	if (out && json_array_size(out) && core_canon(out, &text, NULL, &err))
		text = NULL;
	json_decref(out);
	return text;
}

static int one_node(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__NodeRecord *r = msg;
	xrow *s = &x->st[ST_NODES];
	xnode *n, *grown;
	const char *mode = NULL;
	char plugin[300], *fields;
	int rc;

	(void)key, (void)klen;
	if (r->node_id >= NODES_MAX)
		return core_err_set(x->err, CORE_EDATA, "run %s: node id %u out of range",
				    x->rid, r->node_id);
	if (r->node_id >= x->nnodes) {
		size_t want = (size_t)r->node_id + 1;

		if (!(grown = realloc(x->nodes, want * sizeof(*grown))))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		memset(grown + x->nnodes, 0, (want - x->nnodes) * sizeof(*grown));
		x->nodes = grown;
		x->nnodes = want;
	}
	n = &x->nodes[r->node_id];
	n->name = strdup(r->name);
	n->kind = strdup(r->kind);
	n->plugin = strdup(r->plugin);
	n->config_json = strdup(r->config_json);
	if (!n->name || !n->kind || !n->plugin || !n->config_json)
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	n->config = json_loads(r->config_json, 0, NULL);
	node_ident(n, r->config_hash);
	snprintf(n->config_hash, sizeof(n->config_hash), "%s", r->config_hash);
	if (!strcmp(r->kind, "source") && (!x->has_source || r->node_id < x->source)) {
		x->source = r->node_id; /* the first source */
		x->has_source = true;
	}
	if (!strcmp(r->kind, "gate") || !strcmp(r->kind, "coalesce"))
		snprintf(plugin, sizeof(plugin), "%s:%s",
			 !strcmp(r->kind, "gate") ? "config_gate" : r->kind, r->name);
	else
		snprintf(plugin, sizeof(plugin), "%s", r->plugin);
	mode = json_string_value(json_object_get(json_object_get(n->config, "schema"), "mode"));

	sqlt__bind_text(s, 1, n->id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, plugin);
	sqlt__bind_text(s, 4, r->kind);
	sqlt__bind_text(s, 5, r->plugin_version);
	sqlt__bind_text(s, 6, determinism(n));
	sqlt__bind_text(s, 7, r->config_hash);
	sqlt__bind_text(s, 8, r->config_json);
	sqlt__bind_i64(s, 9, r->node_id);
	sqlt__bind_time(s, 10, x->rr->started_at_ns);
	sqlt__bind_text(s, 11, mode);
	fields = schema_fields(n->config);
	sqlt__bind_text(s, 12, fields);
	rc = sqlt__step(x, ST_NODES);
	free(fields);
	return rc;
}

static int one_edge(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__EdgeRecord *r = msg;
	xedge *e, *grown;

	(void)key, (void)klen;
	grown = realloc(x->edges, (x->nedges + 1) * sizeof(*grown));
	if (!grown)
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	x->edges = grown;
	e = &x->edges[x->nedges++];
	memset(e, 0, sizeof(*e));
	e->from = r->from_node;
	e->to = r->to_node;
	e->label = strdup(r->label);
	if (!e->label)
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* ELSPETH's labels and modes: "continue" between nodes, "on_success"
 * into a sink, "__error_NAME__" and "__quarantine__" (divert) for error
 * and validation-failure routes, a fork's branches "copy". */
static void edge_names(xp *x, xedge *e)
{
	const xnode *from = e->from < x->nnodes ? &x->nodes[e->from] : NULL;
	const xnode *to = e->to < x->nnodes ? &x->nodes[e->to] : NULL;
	bool gate = from && from->kind && !strcmp(from->kind, "gate");

	e->mode = "move";
	if (!strcmp(e->label, "on_success")) {
		snprintf(e->elabel, sizeof(e->elabel), "%s",
			 to && to->kind && !strcmp(to->kind, "sink") ? "on_success" : "continue");
	} else if (!strcmp(e->label, "on_error")) {
		snprintf(e->elabel, sizeof(e->elabel), "__error_%s__",
			 from ? from->name : "");
		e->mode = "divert";
	} else if (!strcmp(e->label, "on_validation_failure")) {
		snprintf(e->elabel, sizeof(e->elabel), "__quarantine__");
		e->mode = "divert";
	} else {
		snprintf(e->elabel, sizeof(e->elabel), "%s", e->label);
		/* A gate's routes are keys of its config; its other edges are
		 * fork branches. */
		if (gate && !json_object_get(from->config, e->label))
			e->mode = "copy";
	}
}

static int write_edges(xp *x)
{
	xrow *s = &x->st[ST_EDGES];
	int rc = 0;

	for (size_t i = 0; i < x->nedges && !rc; i++) {
		xedge *e = &x->edges[i];

		edge_names(x, e);
		sqlt__bind_id(s, 1, "edge-%s-%zu", x->rid, i);
		sqlt__bind_text(s, 2, x->rid);
		sqlt__bind_text(s, 3, sqlt__node_id(x, e->from));
		sqlt__bind_text(s, 4, sqlt__node_id(x, e->to));
		sqlt__bind_text(s, 5, e->elabel);
		sqlt__bind_text(s, 6, e->mode);
		sqlt__bind_time(s, 7, x->rr->started_at_ns);
		rc = sqlt__step(x, ST_EDGES);
	}
	return rc;
}

/* ------------------------------------------------------------------- runs */

static int write_run(xp *x, uint32_t resumes)
{
	const Elspeth__RunRecord *r = x->rr;
	xrow *s = &x->st[ST_RUNS];
	bool replay = false;
	int rc;

	/* ELSPETH's grade: anything that reads, writes or calls out needs
	 * its recorded data to be replayed. */
	for (size_t i = 0; i < x->nnodes; i++)
		if (x->nodes[i].kind && strcmp(determinism(&x->nodes[i]), "deterministic"))
			replay = true;
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_time(s, 2, r->started_at_ns);
	sqlt__bind_time(s, 3, r->completed_at_ns);
	sqlt__bind_text(s, 4, r->config_hash);
	sqlt__bind_text(s, 5, r->settings_json);
	sqlt__bind_text(s, 6, replay ? "replay_reproducible" : "full_reproducible");
	sqlt__bind_text(s, 7, r->canonical_version);
	sqlt__bind_text(s, 8, r->status);
	if ((rc = sqlt__step(x, ST_RUNS)))
		return rc;

	s = &x->st[ST_OWN_RUNS];
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_i64(s, 2, (int64_t)r->run_id);
	sqlt__bind_nz(s, 3, r->topology_hash);
	sqlt__bind_nz(s, 4, r->settings_path);
	sqlt__bind_nz(s, 5, r->elspeth_version);
	sqlt__bind_i64(s, 6, (int64_t)r->rows);
	sqlt__bind_i64(s, 7, (int64_t)r->succeeded);
	sqlt__bind_i64(s, 8, (int64_t)r->failed);
	sqlt__bind_i64(s, 9, (int64_t)r->quarantined);
	sqlt__bind_nz(s, 10, r->error);
	sqlt__bind_nz(s, 11, r->metrics_json);
	sqlt__bind_i64(s, 12, resumes);
	sqlt__bind_time(s, 13, core_now_wall_ns());
	return sqlt__step(x, ST_OWN_RUNS);
}

void sqlt__run_reset(xp *x)
{
	for (size_t i = 0; i < x->nnodes; i++) {
		free(x->nodes[i].name);
		free(x->nodes[i].kind);
		free(x->nodes[i].plugin);
		free(x->nodes[i].config_json);
		json_decref(x->nodes[i].config);
	}
	free(x->nodes);
	for (size_t i = 0; i < x->nedges; i++) {
		free(x->edges[i].label);
		free(x->edges[i].reason);
	}
	free(x->edges);
	free(x->toks);
	free(x->batch_superseded);
	x->batch_superseded = NULL, x->nbatches = 0;
	free(x->state_at);
	x->state_at = NULL, x->nstates = 0;
	for (size_t i = 1; i < x->nbranches; i++)
		free(x->branches[i]);
	free(x->branches);
	if (x->rr)
		protobuf_c_message_free_unpacked(&x->rr->base, NULL);
	x->rr = NULL;
	x->nodes = NULL, x->nnodes = 0;
	x->edges = NULL, x->nedges = 0;
	x->toks = NULL, x->ntoks = 0;
	x->branches = NULL, x->nbranches = 0;
	x->last_row_at = 0, x->rows_read = 0;
	x->source = 0;
	x->has_source = false;
	x->v07 = x->last_source_set = false;
	x->last_source = 0;
	x->max_row = 0;
	free(x->step_states);
	x->step_states = NULL, x->nstep_states = x->cap_step_states = 0;
	x->header = false;
	x->batch_from = x->batch_open = x->batch_max = 0;
	free(x->late_rows);
	x->late_rows = NULL, x->nlate = x->cap_late = 0;
	x->late = false;
}

static int count_resume(void *ctx, const void *key, size_t klen,
			const void *val, size_t vlen)
{
	(void)key, (void)klen, (void)val, (void)vlen;
	++*(uint32_t *)ctx;
	return 0;
}

/* The run's record, read in x->t. */
static int read_run(xp *x, Elspeth__RunRecord **out)
{
	const void *v;
	size_t vl;
	rec_key k;
	int rc;

	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	if ((rc = rec_get(x->t, REC_RUNS, &k, &v, &vl)))
		return core_err_set(x->err, rc == REC_NOTFOUND ? CORE_EDATA : rc,
				    "run %s is not in the audit trail", x->rid);
	if (!(*out = elspeth__run_record__unpack(NULL, vl, v)))
		return core_err_set(x->err, CORE_EDATA,
				    "run %s: its record cannot be decoded", x->rid);
	return 0;
}

/* In a database many Landscapes write into (PostgreSQL), a run's id
 * must not be its number, which every Landscape starts at 1: it is 10
 * base-36 digits (51 bits) of SHA-256 over the host, the Landscape's
 * directory, the run's number and its start. The same run exported
 * again (its end, a resume) gets the same id; elspeth_runs keeps the
 * number. Short, because ELSPETH's narrowest ids are VARCHAR(32)
 * ("te-RUN-TOKEN-STATE"). Two runs meeting on one id is told by their
 * start (the output's begin refuses to replace a run that started at
 * another time), never by one replacing the other. */
static int shared_label(xp *x, char started[SQLT_TIME_CAP])
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	Elspeth__RunRecord *rr = NULL;
	char host[256] = "", dir[PATH_MAX];
	uint8_t d[CORE_SHA256_LEN];
	unsigned __int128 v = 0;
	core_buf b = { 0 };
	int rc;

	if ((rc = rec_read_begin(x->env, &x->t, x->err)))
		return rc;
	rc = read_run(x, &rr);
	rec_read_end(x->t);
	x->t = NULL;
	if (rc)
		return rc;
	gethostname(host, sizeof(host) - 1);
	if (!realpath(rec_env_path(x->env), dir))
		snprintf(dir, sizeof(dir), "%s", rec_env_path(x->env));
	sqlt__time(rr->started_at_ns, started);
	if (core_buf_printf(&b, "%s%c%s%c%llu%c%llu", host, 0, dir, 0,
			    (unsigned long long)x->run, 0,
			    (unsigned long long)rr->started_at_ns))
		rc = core_err_set(x->err, CORE_ENOMEM, "out of memory");
	protobuf_c_message_free_unpacked(&rr->base, NULL);
	if (rc) {
		core_buf_release(&b);
		return rc;
	}
	core_sha256(b.data, b.len, d);
	core_buf_release(&b);
	for (int i = 0; i < 8; i++)
		v = v << 8 | d[i];
	for (int i = 0; i < SQLT_SHARED_ID_LEN; i++, v /= 36)
		x->rid[i] = digits[v % 36];
	x->rid[SQLT_SHARED_ID_LEN] = '\0';
	return 0;
}

int sqlt__run_ident(xp *x, char started[SQLT_TIME_CAP])
{
	started[0] = '\0';
	if (x->o && x->o->run_label)
		snprintf(x->rid, sizeof(x->rid), "%s", x->o->run_label);
	else
		snprintf(x->rid, sizeof(x->rid), "%llu", (unsigned long long)x->run);
	return x->shared ? shared_label(x, started) : 0;
}

static bool settings_v07(const char *settings_json)
{
	json_t *s = json_loads(settings_json, 0, NULL);
	bool v07 = json_object_get(s, "sources") != NULL;

	json_decref(s);
	return v07;
}

/* ELSPETH 0.7.1's run_sources: one row per source, in the settings'
 * order (node order), its state where the run stands: the sources
 * before the newest row's exhausted, its own loading (interrupted, in a
 * run that stopped), the later ones ready; all exhausted once the run
 * completed. We keep no pydantic schema nor field resolution per
 * source: those columns are NULL. */
int sqlt__write_run_sources(xp *x)
{
	const char *status = x->rr->status;
	bool done = !strcmp(status, "completed");
	bool stopped = !done && strcmp(status, "running");
	uint32_t cur = x->last_source_set ? x->last_source : x->source;
	xrow *s = &x->st[ST_RUN_SOURCES];
	int rc = 0;

	for (uint32_t i = 0; i < x->nnodes && !rc; i++) {
		const xnode *n = &x->nodes[i];
		const char *state;

		if (!n->kind || strcmp(n->kind, "source"))
			continue;
		state = done || i < cur ? "exhausted" : i > cur ? "ready" :
			stopped ? "interrupted" : "loading";
		sqlt__bind_text(s, 1, x->rid);
		sqlt__bind_text(s, 2, n->id);
		sqlt__bind_text(s, 3, n->name);
		sqlt__bind_text(s, 4, n->plugin);
		sqlt__bind_text(s, 5, state);
		sqlt__bind_text(s, 6, n->config_hash);
		sqlt__bind_time(s, 11, x->rr->started_at_ns);
		rc = sqlt__step(x, ST_RUN_SOURCES);
	}
	return rc;
}

int sqlt__export_head(xp *x)
{
	uint32_t resumes = 0;
	rec_key k;
	int rc;

	if (x->rr)
		protobuf_c_message_free_unpacked(&x->rr->base, NULL);
	x->rr = NULL;
	if ((rc = read_run(x, &x->rr)))
		return rc;
	/* a run in ELSPETH 0.7.1's format (its settings have `sources`)
	 * gets 0.7.1's columns of rows and its run_sources (ADR 0049);
	 * learned once per run (a live export comes here every step) */
	if (!x->header) {
		x->v07 = settings_v07(x->rr->settings_json);
		if (x->v07 && (rc = x->out->ops->v07(x->out, x->err)))
			return rc;
	}
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rc = rec_scan(x->t, REC_RESUMES, &k, count_resume, &resumes);
	if (rc && rc != REC_SCAN_STOP)
		return core_err_set(x->err, rc, "reading the resumes of run %s: %s",
				    x->rid, core_strerror(rc));
	if (!x->header &&
	    ((rc = sqlt__scan(x, REC_NODES, &elspeth__node_record__descriptor, one_node)) ||
	     (rc = sqlt__scan(x, REC_EDGES, &elspeth__edge_record__descriptor, one_edge))))
		return rc;
	if ((rc = write_run(x, resumes)) || (!x->header && (rc = write_edges(x))))
		return rc;
	x->header = true;
	return 0;
}

int sqlt__run_intact(xp *x)
{
	bool intact = true;
	int rc;

	/* A completed run recorded every row it counted; fewer readable is
	 * damage that hid records, not a shorter run: nothing of it is
	 * written (verify reports the same). */
	if (!strcmp(x->rr->status, "completed") && x->rows_read < x->rr->rows)
		return core_err_set(x->err, CORE_EDATA, "the trail is damaged: run %s: %llu of "
				    "its %llu rows are readable; nothing of it was written",
				    x->rid, (unsigned long long)x->rows_read,
				    (unsigned long long)x->rr->rows);
	/* Damage that removes or adds whole records reads clean record by
	 * record: the run's chain tells (verify reports the same). */
	if ((rc = rec_txn_chain_intact(x->t, x->rr, &intact)))
		return core_err_set(x->err, rc, "reading run %s's chain: %s", x->rid,
				    core_strerror(rc));
	if (!intact)
		return core_err_set(x->err, CORE_EDATA, "the trail is damaged: run %s's records "
				    "no longer match the head of their chain; nothing of it was "
				    "written", x->rid);
	return 0;
}

/* One run in one transaction of the output. The LMDB snapshot is taken
 * once the output's transaction has begun (the SQLite file is ours, the
 * run's PostgreSQL lock held): an export that waited for another (the
 * run's own, at its end) writes what the trail holds now, never an older
 * picture over a newer one. */
static int export_run(xp *x, uint64_t run)
{
	char started[SQLT_TIME_CAP] = "";
	int rc;

	x->run = run;
	if ((rc = sqlt__run_ident(x, started)))
		return rc;
	if ((rc = x->out->ops->begin(x->out, x->rid, started, false, x->err)))
		return rc;
	if ((rc = rec_read_begin(x->env, &x->t, x->err)))
		goto fail;
	if ((rc = sqlt__export_head(x)) ||
	    (rc = sqlt__export_tokens(x)) || (rc = sqlt__export_records(x)))
		goto fail;
	if ((rc = sqlt__run_intact(x)) || (rc = x->out->ops->commit(x->out, x->err)))
		goto fail;
	rec_read_end(x->t);
	x->t = NULL;
	return 0;
fail:
	x->out->ops->rollback(x->out);
	rec_read_end(x->t);
	x->t = NULL;
	return rc;
}

typedef struct run_list {
	uint64_t *ids;
	size_t n;
} run_list;

static int list_one(void *ctx, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	run_list *l = ctx;
	uint64_t *grown = realloc(l->ids, (l->n + 1) * sizeof(*grown));

	(void)klen, (void)val, (void)vlen;
	if (!grown)
		return CORE_ENOMEM;
	l->ids = grown;
	l->ids[l->n++] = rec_key_get_u64(key, 0);
	return 0;
}

int sqlt__open_out(const char *target, bool live, sqlt_out **out, core_err *err)
{
	return core_sql_is_pg(target) ? sqlt__out_pg(target, live, out, err)
				      : sqlt__out_sqlite(target, live, out, err);
}

int sqlt_check(const char *target, bool v07, core_err *err)
{
	sqlt_out *o;
	int rc = sqlt__open_out(target, false, &o, err);

	if (rc)
		return rc;
	/* a run in 0.7.1's format: its additions made (or their rights
	 * checked) now, in a transaction of their own */
	if (v07 && !(rc = o->ops->begin(o, "", "", true, err))) {
		if ((rc = o->ops->v07(o, err)) || (rc = o->ops->commit(o, err)))
			o->ops->rollback(o);
	}
	if (rc) {
		core_err e2 = { 0 };

		o->ops->close(o, false, &e2);
		return rc;
	}
	return o->ops->close(o, true, err);
}

int sqlt_export(rec_env *env, uint64_t run, const char *path,
		const sqlt_opts *o, core_err *err)
{
	xp x = { .env = env, .o = o, .err = err };
	run_list runs = { 0 };
	rec_txn *t = NULL;
	char where[512];
	int rc, rc2;
	core_err e2 = { 0 };

	x.shared = core_sql_is_pg(path);
	rc = sqlt__open_out(path, false, &x.out, err);
	if (rc)
		return rc;
	snprintf(where, sizeof(where), "%s", x.out->where);
	if (run) {
		rc = export_run(&x, run);
		sqlt__run_reset(&x);
		goto out;
	}
	if (!(rc = rec_read_begin(env, &t, err))) {
		rc = rec_scan(t, REC_RUNS, NULL, list_one, &runs);
		if (rc)
			core_err_set(err, rc, "reading the runs: %s", core_strerror(rc));
		rec_read_end(t);
	}
	for (size_t i = 0; !rc && i < runs.n; i++) {
		rc = export_run(&x, runs.ids[i]);
		sqlt__run_reset(&x);
	}
out:
	free(runs.ids);
	for (int i = 0; i < ST__COUNT; i++)
		core_buf_release(&x.st[i].bytes);
	/* also after a failure: runs committed before it stay, and the
	 * output finishes what it put off (SQLite's indexes) */
	rc2 = x.out->ops->close(x.out, !rc, &e2);
	if (rc2 && !rc) {
		*err = e2;
		rc = rc2;
	}
	if (rc && err->msg[0])
		core_err_prefix(err, "export to %s", where);
	return rc;
}

/*
 * export_records.c — the rest of a run: outside calls, gate decisions,
 * batches, sink writes, errors, the checkpoint, the operations ELSPETH
 * keeps for a source's load and a sink's writes, and our own tables
 * (sink files, resumes, superseded tokens).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

#define ULL(v) ((unsigned long long)(v))

static char *dump(json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT) : NULL;

	json_decref(v);
	return s;
}

/* ---------------------------------------------------------------- calls */

static int one_call(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__CallRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_CALLS];
	bool ok = strcmp(r->status, "error") != 0;
	char *ej = NULL;
	int rc;

	(void)key, (void)klen;
	if (!ok) {
		json_t *e = json_pack("{s:s,s:s}", "type",
				      *r->error_class ? r->error_class : "error",
				      "message", r->error);
		if (e && r->http_status)
			json_object_set_new(e, "status_code", json_integer(r->http_status));
		if (!(ej = dump(e)))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	sqlt__bind_id(s, 1, "call-%s-%llu-%u", x->rid, ULL(r->state_id), r->call_index);
	sqlt__bind_ref(x, s, 2, "st", r->state_id);
	sqlite3_bind_int64(s, 3, r->call_index);
	sqlt__bind_text(s, 4, *r->call_type ? r->call_type : "llm");
	/* ELSPETH knows success and error; a replayed answer is a success
	 * (elspeth_calls.replayed_from says it was not sent again). */
	sqlt__bind_text(s, 5, ok ? "success" : "error");
	sqlt__bind_text(s, 6, r->request_hash);
	sqlt__bind_nz(s, 7, r->request_ref);
	sqlt__bind_nz(s, 8, r->response_hash);
	sqlt__bind_nz(s, 9, r->response_ref);
	sqlt__bind_text(s, 10, ej);
	sqlt__bind_ms(s, 11, r->latency_ns);
	sqlt__bind_time(s, 12, r->submitted_at_ns ? r->submitted_at_ns : r->completed_at_ns);
	rc = sqlt__step(x, ST_CALLS);
	free(ej);
	if (rc)
		return rc;

	s = x->st[ST_OWN_CALLS];
	sqlt__bind_id(s, 1, "call-%s-%llu-%u", x->rid, ULL(r->state_id), r->call_index);
	sqlt__bind_text(s, 2, x->rid);
	if (r->token_id)
		sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	if (r->row_id)
		sqlt__bind_ref(x, s, 4, "row", r->row_id);
	sqlt__bind_nz(s, 5, r->name);
	if (r->http_status)
		sqlite3_bind_int64(s, 6, r->http_status);
	sqlt__bind_nz(s, 7, r->error_class);
	sqlt__bind_nz(s, 8, r->error);
	sqlt__bind_time(s, 9, r->submitted_at_ns);
	sqlt__bind_time(s, 10, r->completed_at_ns);
	sqlt__bind_ms(s, 11, r->throttle_delay_ns);
	sqlt__bind_nz(s, 12, r->throttle_reason);
	sqlite3_bind_int64(s, 13, r->submit_order);
	sqlite3_bind_int64(s, 14, r->complete_order);
	if (r->replayed_from && *r->replayed_from) {
		/* "STATE/INDEX" -> that call's id */
		unsigned long long st = strtoull(r->replayed_from, NULL, 10);
		const char *slash = strchr(r->replayed_from, '/');

		sqlt__bind_id(s, 15, "call-%s-%llu-%s", x->rid, st, slash ? slash + 1 : "0");
	}
	if ((rc = sqlt__step(x, ST_OWN_CALLS)))
		return rc;
	if ((rc = sqlt__payload(x, r->request_ref)))
		return rc;
	return sqlt__payload(x, r->response_ref);
}

/* -------------------------------------------------------------- routing */

/* ELSPETH's reason for a config gate's decision is {"condition",
 * "result"}; its hash is over the canonical JSON. Ours is the same facts
 * (the gate's condition is in its node config, the result in the event),
 * so the reason and its hash are rebuilt from them and the reason is
 * kept as a payload when payloads are exported. */
static int reason_hash(xp *x, const Elspeth__RoutingEventRecord *r,
		       char hex[CORE_SHA256_HEX_LEN + 1])
{
	xedge *e = r->edge_id < x->nedges ? &x->edges[r->edge_id] : NULL;
	uint32_t from = e ? e->from : 0;
	const char *cond = from < x->nnodes ?
		json_string_value(json_object_get(x->nodes[from].config, "condition")) : NULL;
	json_t *v = json_pack("{s:s,s:s}", "condition", cond ? cond : "",
			      "result", r->reason);
	char *canon = NULL;
	size_t len = 0;
	int rc;

	/* The same edge gives the same reason, row after row: one hash. */
	if (e && e->reason && !strcmp(e->reason, r->reason)) {
		json_decref(v);
		memcpy(hex, e->reason_hash, CORE_SHA256_HEX_LEN + 1);
		return 0;
	}
	if (!v)
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	rc = core_canon(v, &canon, &len, x->err);
	json_decref(v);
	if (rc)
		return rc;
	{
		uint8_t d[CORE_SHA256_LEN];

		core_sha256(canon, len, d);
		core_hex(d, sizeof(d), hex);
	}
	if (e) {
		free(e->reason);
		if ((e->reason = strdup(r->reason)))
			memcpy(e->reason_hash, hex, CORE_SHA256_HEX_LEN + 1);
	}
	if (x->o && x->o->payloads) {
		sqlite3_stmt *s = x->st[ST_OWN_PAYLOADS];

		sqlite3_bind_text(s, 1, hex, -1, SQLITE_TRANSIENT);
		sqlite3_bind_blob64(s, 2, canon, len, SQLITE_TRANSIENT);
		rc = sqlt__step(x, ST_OWN_PAYLOADS);
	}
	free(canon);
	return rc;
}

static int one_route(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__RoutingEventRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_ROUTING_EVENTS];
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t at;
	int rc;

	(void)key, (void)klen;
	if ((rc = reason_hash(x, r, hex)))
		return rc;
	/* The decision's time: its state's end (its start if open). */
	at = sqlt__state_at(x, r->state_id);
	sqlt__bind_id(s, 1, "re-%s-%llu-%u", x->rid, ULL(r->state_id), r->ordinal);
	sqlt__bind_ref(x, s, 2, "st", r->state_id);
	sqlt__bind_id(s, 3, "edge-%s-%u", x->rid, r->edge_id);
	sqlt__bind_ref(x, s, 4, "rg", r->state_id);
	sqlite3_bind_int64(s, 5, r->ordinal);
	sqlt__bind_text(s, 6, *r->mode ? r->mode : "move");
	sqlt__bind_text(s, 7, hex);
	sqlt__bind_text(s, 8, hex);
	sqlt__bind_time(s, 9, at ? at : x->rr->started_at_ns);
	return sqlt__step(x, ST_ROUTING_EVENTS);
}

/* -------------------------------------------------------------- batches */

static int one_batch(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__BatchRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_BATCHES];

	(void)key, (void)klen;
	sqlt__bind_ref(x, s, 1, "batch", r->batch_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, sqlt__node_id(x, r->node_id));
	sqlt__bind_nz(s, 4, r->trigger);
	sqlt__bind_nz(s, 5, r->trigger);
	sqlite3_bind_int(s, 6, 0);
	/* flushed: ELSPETH's completed; superseded (a crashed attempt's
	 * flush that a resume redid) stays ours. */
	sqlt__bind_text(s, 7, !strcmp(r->status, "flushed") ? "completed" : r->status);
	sqlt__bind_time(s, 8, r->created_at_ns);
	sqlt__bind_time(s, 9, r->flushed_at_ns);
	return sqlt__step(x, ST_BATCHES);
}

/* ------------------------------------------------------------ artifacts */

static int one_artifact(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__ArtifactRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_ARTIFACTS];
	const xtok *t = r->token_id < x->ntoks ? &x->toks[r->token_id] : NULL;
	xnode *n = r->sink_node < x->nnodes ? &x->nodes[r->sink_node] : NULL;
	int rc;

	(void)key, (void)klen;
	if (t && t->superseded)
		return 0; /* its bytes were cut off the file by the resume */
	if (n) {
		if (!n->first_write || r->written_at_ns < n->first_write)
			n->first_write = r->written_at_ns;
		if (r->written_at_ns > n->last_write)
			n->last_write = r->written_at_ns;
		n->bytes += r->length;
		n->writes++;
	}
	sqlt__bind_ref(x, s, 1, "art", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	if (t && t->has_state)
		sqlt__bind_ref(x, s, 3, "st", t->last_state);
	else
		sqlt__bind_text(s, 3, "");
	sqlt__bind_text(s, 4, sqlt__node_id(x, r->sink_node));
	{
		core_buf uri = { 0 };

		if (core_buf_puts(&uri, "file://") || core_buf_puts(&uri, r->path)) {
			core_buf_release(&uri);
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		}
		sqlite3_bind_text(s, 5, uri.data, (int)uri.len, SQLITE_TRANSIENT);
		core_buf_release(&uri);
	}
	sqlt__bind_text(s, 6, r->content_hash);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)r->length);
	sqlt__bind_time(s, 8, r->written_at_ns);
	if ((rc = sqlt__step(x, ST_ARTIFACTS)))
		return rc;
	s = x->st[ST_OWN_ARTIFACTS];
	sqlt__bind_ref(x, s, 1, "art", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)r->offset);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)r->length);
	return sqlt__step(x, ST_OWN_ARTIFACTS);
}

/* --------------------------------------------------------------- errors */

/* The sink an error edge of node leads to, or "discard". */
static const char *error_destination(const xp *x, uint32_t node, const char *label)
{
	for (size_t i = 0; i < x->nedges; i++)
		if (x->edges[i].from == node && !strcmp(x->edges[i].label, label) &&
		    x->edges[i].to < x->nnodes)
			return x->nodes[x->edges[i].to].name;
	return "discard";
}

/* A payload's text (NULL when absent), malloc'd. */
static char *payload_text(xp *x, const char *hash)
{
	const void *d;
	size_t n;
	char *s;

	if (!hash || !*hash || rec_get_payload(x->t, hash, &d, &n))
		return NULL;
	if ((s = malloc(n + 1))) {
		memcpy(s, d, n);
		s[n] = '\0';
	}
	return s;
}

/* ELSPETH's violation columns, read off our schema check's messages
 * (plugins/schema.c words them one of four ways, after "line N: "):
 *   field 'F': expected T, got V        type_mismatch, T, V's type
 *   field 'F': required field is missing (expected T)   missing_field
 *   field 'F': required field is null   missing_field
 *   field 'F': not declared in the schema ...           extra_field
 * Anything else (a malformed line, say) leaves them NULL. */
typedef struct violation {
	const char *type;
	char field[256];
	char expected[32];
	const char *actual;
} violation;

static const char *value_type(const char *v)
{
	if (*v == '"')
		return "str";
	if (!strncmp(v, "null", 4))
		return "NoneType";
	if (!strncmp(v, "true", 4) || !strncmp(v, "false", 5))
		return "bool";
	if (!strncmp(v, "an object", 9))
		return "dict";
	if (!strncmp(v, "an array", 8))
		return "list";
	return strpbrk(v, ".eE") ? "float" : "int";
}

static bool parse_violation(const char *msg, violation *out)
{
	const char *f = strstr(msg, "field '"), *end, *rest;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!f)
		return false;
	f += 7;
	if (!(end = strstr(f, "': ")))
		return false;
	n = (size_t)(end - f) < sizeof(out->field) ? (size_t)(end - f) : sizeof(out->field) - 1;
	memcpy(out->field, f, n);
	rest = end + 3;
	if (!strncmp(rest, "expected ", 9)) {
		const char *comma = strstr(rest, ", got ");

		if (!comma)
			return false;
		n = (size_t)(comma - rest - 9);
		snprintf(out->expected, sizeof(out->expected), "%.*s", (int)n, rest + 9);
		out->type = "type_mismatch";
		out->actual = value_type(comma + 6);
	} else if (!strncmp(rest, "required field is missing (expected ", 36)) {
		snprintf(out->expected, sizeof(out->expected), "%.*s",
			 (int)strcspn(rest + 36, ")"), rest + 36);
		out->type = "missing_field";
	} else if (!strncmp(rest, "required field is null", 22)) {
		out->type = "missing_field";
		out->actual = "NoneType";
	} else if (!strncmp(rest, "not declared in the schema", 26)) {
		out->type = "extra_field";
	} else {
		return false;
	}
	return true;
}

static int one_validation_error(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__ValidationErrorRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_VALIDATION_ERRORS];
	const xnode *src = x->source < x->nnodes ? &x->nodes[x->source] : NULL;
	const char *mode = src ? json_string_value(json_object_get(
		json_object_get(src->config, "schema"), "mode")) : NULL;
	char *data = payload_text(x, r->data_ref);
	violation vi;
	const void *rv;
	size_t rl;
	rec_key k;
	uint64_t at = 0;
	int rc;

	(void)key, (void)klen;
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, r->row_id);
	if (!rec_get(x->t, REC_ROWS, &k, &rv, &rl)) {
		Elspeth__RowRecord *row = elspeth__row_record__unpack(NULL, rl, rv);

		if (row) {
			at = row->created_at_ns;
			elspeth__row_record__free_unpacked(row, NULL);
		}
	}
	sqlt__bind_ref(x, s, 1, "ve", r->row_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, sqlt__node_id(x, x->source));
	sqlt__bind_text(s, 4, r->data_ref);
	sqlt__bind_text(s, 5, data);
	sqlt__bind_text(s, 6, r->error);
	sqlt__bind_text(s, 7, mode ? mode : "observed");
	sqlt__bind_text(s, 8, error_destination(x, x->source, "on_validation_failure"));
	sqlt__bind_time(s, 9, at ? at : x->rr->started_at_ns);
	if (parse_violation(r->error, &vi)) {
		sqlt__bind_text(s, 10, vi.type);
		sqlt__bind_text(s, 11, vi.field);
		sqlt__bind_text(s, 12, vi.field);
		sqlt__bind_nz(s, 13, vi.expected);
		sqlt__bind_text(s, 14, vi.actual);
	}
	rc = sqlt__step(x, ST_VALIDATION_ERRORS);
	free(data);
	return rc;
}

static int one_transform_error(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TransformErrorRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_TRANSFORM_ERRORS];
	char *data = payload_text(x, r->data_ref);
	char *details = dump(json_pack("{s:s,s:b}", "message", r->error,
				       "retryable", r->retryable));
	uint64_t at;
	int rc;

	(void)key, (void)klen;
	if (!details) {
		free(data);
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	at = sqlt__state_at(x, r->state_id);
	sqlt__bind_id(s, 1, "te-%s-%llu-%llu", x->rid, ULL(r->token_id), ULL(r->state_id));
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	sqlt__bind_text(s, 4, sqlt__node_id(x, r->node_id));
	sqlt__bind_text(s, 5, r->data_ref);
	sqlt__bind_text(s, 6, data);
	sqlt__bind_text(s, 7, details);
	sqlt__bind_text(s, 8, error_destination(x, r->node_id, "on_error"));
	sqlt__bind_time(s, 9, at ? at : x->rr->started_at_ns);
	rc = sqlt__step(x, ST_TRANSFORM_ERRORS);
	free(data);
	free(details);
	return rc;
}

/* ---------------------------------------------------------- checkpoints */

typedef struct first_tok {
	uint64_t token;
} first_tok;

static int first_token_one(void *ctx, const void *key, size_t klen,
			   const void *val, size_t vlen)
{
	first_tok *f = ctx;

	(void)val, (void)vlen;
	if (klen >= 24)
		f->token = rec_key_get_u64(key, 16);
	return REC_SCAN_STOP;
}

/* The run's latest checkpoint, as ELSPETH's one row per checkpoint: its
 * token is the first token of the last row it counts released. */
static int write_checkpoint(xp *x)
{
	Elspeth__Checkpoint *c = NULL;
	sqlite3_stmt *s = x->st[ST_CHECKPOINTS];
	first_tok f = { 0 };
	const void *v;
	size_t vl;
	json_t *aggs;
	char *aj = NULL;
	rec_key k;
	int rc;

	/* In the export's own snapshot (rec_ckpt_load would take another). */
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rc = rec_get(x->t, REC_CHECKPOINTS, &k, &v, &vl);
	if (rc == REC_NOTFOUND)
		return 0;
	if (rc)
		return core_err_set(x->err, rc, "reading the checkpoint of run %s: %s",
				    x->rid, core_strerror(rc));
	if (!(c = elspeth__checkpoint__unpack(NULL, vl, v)))
		return core_err_set(x->err, CORE_EDATA,
				    "run %s: its checkpoint cannot be decoded", x->rid);
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, c->released_through_seq);
	if (c->released_through_seq)
		rec_scan(x->t, REC_TOKENS_BY_ROW, &k, first_token_one, &f);
	if (!f.token) {
		rec_ckpt_free(c);
		return 0; /* nothing released yet: no token to name */
	}
	aggs = json_array();
	for (size_t i = 0; aggs && i < c->n_aggregations; i++) {
		json_t *m;

		if (!c->aggregations[i]->n_members)
			continue;
		m = json_array();

		for (size_t j = 0; m && j < c->aggregations[i]->n_members; j++) {
			char id[64];

			snprintf(id, sizeof(id), "tok-%s-%llu", x->rid,
				 ULL(c->aggregations[i]->members[j]->token_id));
			json_array_append_new(m, json_string(id));
		}
		json_array_append_new(aggs, json_pack("{s:s,s:o}", "node",
			sqlt__node_id(x, c->aggregations[i]->node_id), "members",
			m ? m : json_array()));
	}
	if (json_array_size(aggs))
		aj = dump(aggs);
	else
		json_decref(aggs);
	sqlt__bind_id(s, 1, "ckpt-%s-%u", x->rid, c->attempt);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", f.token);
	sqlt__bind_text(s, 4, sqlt__node_id(x, x->source));
	sqlite3_bind_int64(s, 5, (sqlite3_int64)c->released_through_seq);
	sqlt__bind_text(s, 6, aj);
	sqlt__bind_time(s, 7, c->created_at_ns);
	sqlt__bind_text(s, 8, c->topology_hash);
	sqlt__bind_text(s, 9, c->config_hash);
	sqlite3_bind_int64(s, 10, c->format_version);
	rc = sqlt__step(x, ST_CHECKPOINTS);
	free(aj);
	rec_ckpt_free(c);
	return rc;
}

/* ----------------------------------------------------- ours, and the rest */

static int one_sink_file(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SinkFileRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_OWN_SINK_FILES];

	(void)key, (void)klen;
	sqlt__bind_text(s, 1, x->rid);
	sqlt__bind_text(s, 2, sqlt__node_id(x, r->sink_node));
	sqlt__bind_text(s, 3, r->sink);
	sqlt__bind_text(s, 4, r->path);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)r->size);
	sqlt__bind_text(s, 6, r->content_hash);
	return sqlt__step(x, ST_OWN_SINK_FILES);
}

static int one_resume(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__ResumeRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_OWN_RESUMES];

	(void)key, (void)klen;
	sqlt__bind_text(s, 1, x->rid);
	sqlite3_bind_int64(s, 2, r->attempt);
	sqlt__bind_time(s, 3, r->started_at_ns);
	sqlt__bind_time(s, 4, r->completed_at_ns);
	sqlt__bind_text(s, 5, r->status);
	sqlt__bind_nz(s, 6, r->previous_status);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)r->from_released_seq);
	sqlite3_bind_int64(s, 8, (sqlite3_int64)r->rows_reused);
	sqlite3_bind_int64(s, 9, (sqlite3_int64)r->rows_rerun);
	sqlite3_bind_int64(s, 10, (sqlite3_int64)r->tokens_superseded);
	sqlite3_bind_int64(s, 11, (sqlite3_int64)r->calls_replayed);
	sqlite3_bind_int64(s, 12, r->max_rows_in_flight);
	return sqlt__step(x, ST_OWN_RESUMES);
}

static int one_superseded(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SupersededRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_OWN_SUPERSEDED];
	Elspeth__TokenOutcomeRecord *o = NULL;
	const void *v;
	size_t vl;
	rec_key k;
	int rc;

	(void)key, (void)klen;
	rec_key_init(&k);
	rec_key_u64(&k, x->run);
	rec_key_u64(&k, r->token_id);
	if (!rec_get(x->t, REC_TOKEN_OUTCOMES, &k, &v, &vl))
		o = elspeth__token_outcome_record__unpack(NULL, vl, v);
	sqlt__bind_ref(x, s, 1, "tok", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "row", r->row_id);
	sqlite3_bind_int64(s, 4, r->attempt);
	sqlt__bind_nz(s, 5, r->reason);
	if (o) {
		char low[64];
		size_t i;

		for (i = 0; o->outcome[i] && i + 1 < sizeof(low); i++)
			low[i] = (char)(o->outcome[i] >= 'A' && o->outcome[i] <= 'Z' ?
					o->outcome[i] - 'A' + 'a' : o->outcome[i]);
		low[i] = '\0';
		sqlt__bind_text(s, 6, low);
		sqlt__bind_nz(s, 7, o->sink);
		elspeth__token_outcome_record__free_unpacked(o, NULL);
	}
	rc = sqlt__step(x, ST_OWN_SUPERSEDED);
	return rc;
}

/* The engine's metric samples (about one a second) and, per sample, the
 * capacity control of each LLM transform's upstream. */
static char *counts_json(ProtobufCMessage **items, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < n; i++) {
		const Elspeth__SampleCount *c = (const Elspeth__SampleCount *)items[i];

		json_object_set_new(o, c->name, json_integer((json_int_t)c->n));
	}
	return dump(o);
}

static int one_sample(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SampleRecord *r = msg;
	sqlite3_stmt *s = x->st[ST_OWN_SAMPLES];
	char *outcomes = counts_json((ProtobufCMessage **)r->outcomes, r->n_outcomes);
	char *classes = counts_json((ProtobufCMessage **)r->call_classes, r->n_call_classes);
	int rc;

	(void)key, (void)klen;
	if (!outcomes || !classes) {
		free(outcomes);
		free(classes);
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	sqlt__bind_text(s, 1, x->rid);
	sqlite3_bind_int64(s, 2, r->attempt);
	sqlite3_bind_int64(s, 3, r->index);
	sqlt__bind_time(s, 4, r->at_ns);
	sqlt__bind_ms(s, 5, r->elapsed_ns);
	sqlite3_bind_int(s, 6, r->final);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)r->pulled);
	sqlite3_bind_int64(s, 8, (sqlite3_int64)r->released);
	sqlite3_bind_int64(s, 9, (sqlite3_int64)r->in_flight);
	sqlite3_bind_int64(s, 10, (sqlite3_int64)r->waiting);
	sqlite3_bind_int64(s, 11, (sqlite3_int64)r->calls);
	sqlite3_bind_int64(s, 12, (sqlite3_int64)r->calls_ok);
	sqlite3_bind_int64(s, 13, (sqlite3_int64)r->calls_replayed);
	sqlt__bind_text(s, 14, outcomes);
	sqlt__bind_text(s, 15, classes);
	rc = sqlt__step(x, ST_OWN_SAMPLES);
	free(outcomes);
	free(classes);
	s = x->st[ST_OWN_SAMPLE_UPSTREAMS];
	for (size_t i = 0; !rc && i < r->n_upstreams; i++) {
		const Elspeth__SampleUpstream *u = r->upstreams[i];

		sqlt__bind_text(s, 1, x->rid);
		sqlite3_bind_int64(s, 2, r->attempt);
		sqlite3_bind_int64(s, 3, r->index);
		sqlt__bind_text(s, 4, sqlt__node_id(x, u->node_id));
		sqlt__bind_text(s, 5, u->upstream);
		sqlite3_bind_double(s, 6, u->rate);
		sqlite3_bind_double(s, 7, u->window);
		sqlite3_bind_int64(s, 8, u->ceiling);
		sqlite3_bind_int64(s, 9, u->in_flight);
		sqlite3_bind_int64(s, 10, (sqlite3_int64)u->requests);
		sqlite3_bind_int64(s, 11, (sqlite3_int64)u->refusals);
		sqlt__bind_nz(s, 12, u->held_by);
		rc = sqlt__step(x, ST_OWN_SAMPLE_UPSTREAMS);
	}
	return rc;
}

/* ELSPETH's operations: the source's load and each sink's writes. Ours
 * span the run: the load from its start to its last row, a sink's
 * writes from its first artifact to its last, with the sink file's hash
 * as the output (elspeth_sink_files). */
static int write_operations(xp *x)
{
	sqlite3_stmt *s = x->st[ST_OPERATIONS];
	const char *st = x->rr->status;
	bool done = !strcmp(st, "completed");
	const char *status = done ? "completed" : !strcmp(st, "running") ? "open" : "failed";
	uint64_t end = x->last_row_at ? x->last_row_at : x->rr->started_at_ns;
	int rc;

	sqlt__bind_id(s, 1, "op-%s-source_load", x->rid);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, sqlt__node_id(x, x->source));
	sqlt__bind_text(s, 4, "source_load");
	sqlt__bind_time(s, 5, x->rr->started_at_ns);
	sqlt__bind_time(s, 6, end);
	sqlt__bind_text(s, 7, status);
	if (!done)
		sqlt__bind_nz(s, 9, *x->rr->error ? x->rr->error : st);
	sqlt__bind_ms(s, 10, end - x->rr->started_at_ns);
	if ((rc = sqlt__step(x, ST_OPERATIONS)))
		return rc;
	for (size_t i = 0; i < x->nnodes; i++) {
		const xnode *n = &x->nodes[i];
		const char *file_hash = NULL;
		sqlite3_stmt *q;

		if (!n->kind || strcmp(n->kind, "sink") || !n->writes)
			continue;
		if (sqlite3_prepare_v2(x->db, "SELECT content_hash FROM elspeth_sink_files "
				       "WHERE run_id = ?1 AND sink_node_id = ?2", -1, &q,
				       NULL) != SQLITE_OK)
			return sqlt__db_error(x->db, x->err, "reading elspeth_sink_files");
		sqlite3_bind_text(q, 1, x->rid, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, n->id, -1, SQLITE_STATIC);
		if (sqlite3_step(q) == SQLITE_ROW)
			file_hash = (const char *)sqlite3_column_text(q, 0);
		sqlt__bind_id(s, 1, "op-%s-sink_write-%zu", x->rid, i);
		sqlt__bind_text(s, 2, x->rid);
		sqlt__bind_text(s, 3, n->id);
		sqlt__bind_text(s, 4, "sink_write");
		sqlt__bind_time(s, 5, n->first_write);
		sqlt__bind_time(s, 6, n->last_write);
		sqlt__bind_text(s, 7, status);
		sqlt__bind_text(s, 8, file_hash);
		if (!done)
			sqlt__bind_nz(s, 9, *x->rr->error ? x->rr->error : st);
		sqlt__bind_ms(s, 10, n->last_write - n->first_write);
		rc = sqlt__step(x, ST_OPERATIONS);
		sqlite3_finalize(q);
		if (rc)
			return rc;
	}
	return 0;
}

int sqlt__export_records(xp *x)
{
	int rc;

	if ((rc = sqlt__scan(x, REC_CALLS, &elspeth__call_record__descriptor, one_call)) ||
	    (rc = sqlt__scan(x, REC_ROUTING_EVENTS, &elspeth__routing_event_record__descriptor, one_route)) ||
	    (rc = sqlt__scan(x, REC_BATCHES, &elspeth__batch_record__descriptor, one_batch)) ||
	    (rc = sqlt__scan(x, REC_ARTIFACTS, &elspeth__artifact_record__descriptor, one_artifact)) ||
	    (rc = sqlt__scan(x, REC_VALIDATION_ERRORS, &elspeth__validation_error_record__descriptor, one_validation_error)) ||
	    (rc = sqlt__scan(x, REC_TRANSFORM_ERRORS, &elspeth__transform_error_record__descriptor, one_transform_error)) ||
	    (rc = sqlt__scan(x, REC_SINK_FILES, &elspeth__sink_file_record__descriptor, one_sink_file)) ||
	    (rc = sqlt__scan(x, REC_RESUMES, &elspeth__resume_record__descriptor, one_resume)) ||
	    (rc = sqlt__scan(x, REC_SUPERSEDED, &elspeth__superseded_record__descriptor, one_superseded)) ||
	    (rc = sqlt__scan(x, REC_SAMPLES, &elspeth__sample_record__descriptor, one_sample)) ||
	    (rc = write_checkpoint(x)))
		return rc;
	return write_operations(x);
}

/*
 * export_records.c — the records of a run's tokens besides their states:
 * outside calls, gate decisions, batches and sink writes; then its errors
 * (export_errors.c) and what the run has besides (export_run.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

#define ULL(v) ((unsigned long long)(v))

/* ---------------------------------------------------------------- calls */

static int one_call(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__CallRecord *r = msg;
	xrow *s = &x->st[ST_CALLS];
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
		if (!(ej = sqlt__json_text(e)))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	sqlt__bind_id(s, 1, "call-%s-%llu-%u", x->rid, ULL(r->state_id), r->call_index);
	sqlt__bind_ref(x, s, 2, "st", r->state_id);
	sqlt__bind_i64(s, 3, r->call_index);
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

	s = &x->st[ST_OWN_CALLS];
	sqlt__bind_id(s, 1, "call-%s-%llu-%u", x->rid, ULL(r->state_id), r->call_index);
	sqlt__bind_text(s, 2, x->rid);
	if (r->token_id)
		sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	if (r->row_id)
		sqlt__bind_ref(x, s, 4, "row", r->row_id);
	sqlt__bind_nz(s, 5, r->name);
	if (r->http_status)
		sqlt__bind_i64(s, 6, r->http_status);
	sqlt__bind_nz(s, 7, r->error_class);
	sqlt__bind_nz(s, 8, r->error);
	sqlt__bind_time(s, 9, r->submitted_at_ns);
	sqlt__bind_time(s, 10, r->completed_at_ns);
	sqlt__bind_ms(s, 11, r->throttle_delay_ns);
	sqlt__bind_nz(s, 12, r->throttle_reason);
	sqlt__bind_i64(s, 13, r->submit_order);
	sqlt__bind_i64(s, 14, r->complete_order);
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
		xrow *s = &x->st[ST_OWN_PAYLOADS];

		sqlt__bind_text(s, 1, hex);
		sqlt__bind_blob(s, 2, canon, len);
		rc = sqlt__step(x, ST_OWN_PAYLOADS);
	}
	free(canon);
	return rc;
}

static int one_route(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__RoutingEventRecord *r = msg;
	xrow *s = &x->st[ST_ROUTING_EVENTS];
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t at;
	int rc;

	(void)key, (void)klen;
	if (x->late && !sqlt__late_state(x, r->state_id))
		return 0;
	if ((rc = reason_hash(x, r, hex)))
		return rc;
	/* The decision's time: its state's end (its start if open). */
	at = sqlt__state_at(x, r->state_id);
	sqlt__bind_id(s, 1, "re-%s-%llu-%u", x->rid, ULL(r->state_id), r->ordinal);
	sqlt__bind_ref(x, s, 2, "st", r->state_id);
	sqlt__bind_id(s, 3, "edge-%s-%u", x->rid, r->edge_id);
	sqlt__bind_ref(x, s, 4, "rg", r->state_id);
	sqlt__bind_i64(s, 5, r->ordinal);
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
	xrow *s = &x->st[ST_BATCHES];

	(void)key, (void)klen;
	sqlt__bind_ref(x, s, 1, "batch", r->batch_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_text(s, 3, sqlt__node_id(x, r->node_id));
	sqlt__bind_nz(s, 4, r->trigger);
	sqlt__bind_nz(s, 5, r->trigger);
	sqlt__bind_i64(s, 6, 0);
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
	xrow *s = &x->st[ST_ARTIFACTS];
	xtok *t = r->token_id < x->ntoks ? &x->toks[r->token_id] : NULL;
	xnode *n = r->sink_node < x->nnodes ? &x->nodes[r->sink_node] : NULL;
	int rc;

	(void)key, (void)klen;
	if (t && t->superseded)
		return 0; /* its bytes were cut off the file by the resume */
	if (t && t->artifact_written)
		return 0; /* a live step's, read again by its late pass */
	if (t)
		t->artifact_written = true;
	if (n) {
		if (!n->first_write || r->written_at_ns < n->first_write)
			n->first_write = r->written_at_ns;
		if (r->written_at_ns > n->last_write)
			n->last_write = r->written_at_ns;
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
		sqlt__bind_textn(s, 5, uri.data, uri.len);
		core_buf_release(&uri);
	}
	sqlt__bind_text(s, 6, r->content_hash);
	sqlt__bind_i64(s, 7, (int64_t)r->length);
	sqlt__bind_time(s, 8, r->written_at_ns);
	if ((rc = sqlt__step(x, ST_ARTIFACTS)))
		return rc;
	s = &x->st[ST_OWN_ARTIFACTS];
	sqlt__bind_ref(x, s, 1, "art", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	sqlt__bind_i64(s, 4, (int64_t)r->offset);
	sqlt__bind_i64(s, 5, (int64_t)r->length);
	return sqlt__step(x, ST_OWN_ARTIFACTS);
}

const sqlt_pass sqlt__record_passes[2] = {
	{ REC_ROUTING_EVENTS, &elspeth__routing_event_record__descriptor, one_route },
	{ REC_ARTIFACTS, &elspeth__artifact_record__descriptor, one_artifact },
};

int sqlt__export_records(xp *x)
{
	int rc;

	if ((x->v07 && (rc = sqlt__write_run_sources(x))) ||
	    (rc = sqlt__scan(x, REC_CALLS, &elspeth__call_record__descriptor, one_call)) ||
	    (rc = sqlt__scan(x, REC_BATCHES, &elspeth__batch_record__descriptor, one_batch)))
		return rc;
	/* a live step writes rows; the run's own records come at its end */
	return x->live && !x->final ? 0 : sqlt__export_run_records(x);
}

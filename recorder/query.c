/*
 * query.c — the reads behind `elspeth runs` and `elspeth explain`: a run
 * resolved from "latest" or its id, the list of runs, and the whole story
 * of a row as one JSON document (schema in docs/audit.md).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recorder/recorder.h"

typedef void *(*unpack_fn)(ProtobufCAllocator *, size_t, const uint8_t *);

static void free_msg(void *m)
{
	if (m)
		protobuf_c_message_free_unpacked(m, NULL);
}

static rec_key key1(uint64_t run)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	return k;
}

static rec_key key2(uint64_t run, uint64_t id)
{
	rec_key k = key1(run);

	rec_key_u64(&k, id);
	return k;
}

static json_t *time_json(uint64_t ns)
{
	char buf[64];
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!ns)
		return json_null();
	gmtime_r(&s, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000u / 1000000u));
	return json_string(buf);
}

/* ------------------------------------------------ explain: its reads */

typedef struct explain {
	rec_txn *t;
	uint64_t run;
	json_t *nodes;   /* array by node id: {name, kind, plugin} */
	json_t *edges;   /* array by edge id: {from, to, label} */
	json_t *tokens;  /* output */
	int rc;          /* the first read that failed (not absence): the
			  * explanation is refused, never shown short */
} explain;

/* A read the explanation needs failed: remembered, the first one wins. */
static void x_fail(explain *x, int rc)
{
	if (rc && !x->rc)
		x->rc = rc;
}

/* Reads and unpacks one record; NULL when absent, or when it cannot be
 * read or decoded (x_fail). */
static void *x_get(explain *x, rec_table tab, const rec_key *k,
		   const ProtobufCMessageDescriptor *d)
{
	const void *v;
	size_t n;
	void *m;
	int rc = rec_get(x->t, tab, k, &v, &n);

	if (rc) {
		if (rc != REC_NOTFOUND)
			x_fail(x, rc);
		return NULL;
	}
	if (!(m = protobuf_c_message_unpack(d, NULL, n, v)))
		x_fail(x, CORE_EDATA);
	return m;
}

/* Bytes as payload JSON: {"hash": h, "data": ...} or {"hash",
 * "undecodable": true}. */
static json_t *bytes_json(const char *hash, const void *data, size_t len,
			  bool is_json)
{
	json_t *v = is_json ? json_loadb(data, len, JSON_DECODE_ANY, NULL)
			    : json_stringn(data, len);

	if (!v)
		return json_pack("{s:s,s:b}", "hash", hash, "undecodable", 1);
	return json_pack("{s:s,s:o}", "hash", hash, "data", v);
}

/* A payload as JSON: bytes_json, or {"hash", "missing": true}. */
static json_t *payload_json(explain *x, const char *hash, bool is_json)
{
	const void *data;
	size_t len;
	int rc;

	if (!hash || !hash[0])
		return json_null();
	if ((rc = rec_get_payload(x->t, hash, &data, &len))) {
		if (rc != REC_NOTFOUND)
			x_fail(x, rc);
		return rec_payload_purged(x->t, x->run, hash) ?
		       json_pack("{s:s,s:b}", "hash", hash, "purged", 1) :
		       json_pack("{s:s,s:b}", "hash", hash, "missing", 1);
	}
	return bytes_json(hash, data, len, is_json);
}

/* A call's body (an HTTP body, kept in the call's record): as JSON when it
 * is JSON, else as a string (a malformed answer is shown as received). */
static json_t *body_json(const char *hash, const ProtobufCBinaryData *b)
{
	json_t *p, *s;

	if (!hash || !hash[0])
		return json_null();
	p = bytes_json(hash, b->data, b->len, true);
	if (json_is_object(p) && json_object_get(p, "undecodable")) {
		json_decref(p);
		s = bytes_json(hash, b->data, b->len, false);
		if (json_is_object(s) && json_object_get(s, "data"))
			json_object_set_new(s, "text", json_true());
		return s;
	}
	return p;
}

/* ------------------------------------------------------------------ runs */

int rec_resolve_run(rec_env *env, const char *spec, uint64_t *run,
		    core_err *err)
{
	rec_txn *t;
	const void *k, *v;
	size_t kl, vl;
	rec_key empty, key;
	char *end;
	int rc;

	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	rec_key_init(&empty);
	if (!strcmp(spec, "latest")) {
		rc = rec_last(t, REC_RUNS, &empty, &k, &kl, &v, &vl);
		if (rc == 0)
			*run = rec_key_get_u64(k, 0);
		else if (rc == REC_NOTFOUND)
			rc = core_err_set(err, CORE_EDATA,
				"no runs recorded yet in this audit trail");
		else
			core_err_set(err, rc, "cannot read the runs of this audit "
				     "trail: %s", core_strerror(rc));
	} else {
		unsigned long long id = strtoull(spec, &end, 10);

		key = key1(id);
		if (*end || !id)
			rc = core_err_set(err, CORE_ECONFIG,
				"run id '%s' is not a number or 'latest' (see `elspeth runs`)", spec);
		else if ((rc = rec_get(t, REC_RUNS, &key, &v, &vl)) == REC_NOTFOUND)
			rc = core_err_set(err, CORE_EDATA,
				"no run %s in this audit trail (see `elspeth runs`)", spec);
		else if (rc)
			core_err_set(err, rc, "cannot read run %s of this audit "
				     "trail: %s", spec, core_strerror(rc));
		else
			*run = id;
	}
	rec_read_end(t);
	return rc;
}

static json_t *run_json(const Elspeth__RunRecord *r)
{
	json_t *j = json_pack("{s:I,s:s,s:o,s:o,s:I,s:I,s:I,s:I,s:s,s:s,s:s,s:s,s:s}",
		"run_id", (json_int_t)r->run_id, "status", r->status,
		"started_at", time_json(r->started_at_ns),
		"completed_at", time_json(r->completed_at_ns),
		"rows", (json_int_t)r->rows, "succeeded", (json_int_t)r->succeeded,
		"failed", (json_int_t)r->failed, "quarantined", (json_int_t)r->quarantined,
		"config_hash", r->config_hash, "topology_hash", r->topology_hash,
		"canonical_version", r->canonical_version,
		"settings_path", r->settings_path, "elspeth_version", r->elspeth_version);

	if (!j)
		return NULL;
	if (r->shard_count)
		json_object_set_new(j, "shard", json_pack("{s:I,s:I,s:I,s:I,s:s}",
			"index", (json_int_t)r->shard_index,
			"count", (json_int_t)r->shard_count,
			"first_row", (json_int_t)r->shard_first_seq,
			"last_row", (json_int_t)r->shard_last_seq,
			"manifest_hash", r->shard_manifest_hash ? r->shard_manifest_hash : ""));
	if (r->completed_at_ns > r->started_at_ns)
		json_object_set_new(j, "duration_seconds",
			json_real((double)(r->completed_at_ns - r->started_at_ns) / 1e9));
	if (r->error && r->error[0])
		json_object_set_new(j, "error", json_string(r->error));
	if (r->metrics_json && r->metrics_json[0])
		json_object_set_new(j, "metrics", json_loads(r->metrics_json, 0, NULL));
	return j;
}

static int list_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	Elspeth__RunRecord *r = elspeth__run_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (r) {
		json_array_insert_new(ctx, 0, run_json(r)); /* newest first */
		elspeth__run_record__free_unpacked(r, NULL);
	}
	return 0;
}

int rec_list_runs(rec_env *env, json_t **out, core_err *err)
{
	rec_txn *t;
	rec_key empty;
	int rc;

	*out = json_array();
	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	rec_key_init(&empty);
	rc = rec_scan(t, REC_RUNS, &empty, list_one, *out);
	rec_read_end(t);
	if (rc)
		core_err_set(err, rc, "cannot read the runs of this audit trail: %s",
			     core_strerror(rc));
	return rc;
}

/* --------------------------------------------------------------- explain */

/* A scan's context: the explain and the array being filled. */
typedef struct scan_ctx {
	explain *x;
	json_t *arr;
} scan_ctx;

static int load_nodes(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	explain *x = ctx;
	Elspeth__NodeRecord *n = elspeth__node_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (!n)
		return CORE_EDATA;
	json_array_append_new(x->nodes, json_pack("{s:s,s:s,s:s}", "name", n->name,
				"kind", n->kind, "plugin", n->plugin));
	elspeth__node_record__free_unpacked(n, NULL);
	return 0;
}

static int load_edges(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	explain *x = ctx;
	Elspeth__EdgeRecord *e = elspeth__edge_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (!e)
		return CORE_EDATA;
	json_array_append_new(x->edges, json_pack("{s:i,s:i,s:s}", "from",
				(int)e->from_node, "to", (int)e->to_node, "label", e->label));
	elspeth__edge_record__free_unpacked(e, NULL);
	return 0;
}

/* How many source nodes the run has (ELSPETH 0.7.1's `sources:`). */
static size_t sources_in(explain *x)
{
	size_t i, n = 0;
	json_t *v;

	json_array_foreach(x->nodes, i, v)
		n += !strcmp(json_string_value(json_object_get(v, "kind")), "source");
	return n;
}

static const char *node_field(explain *x, uint32_t id, const char *f)
{
	json_t *n = json_array_get(x->nodes, id);
	const char *s = n ? json_string_value(json_object_get(n, f)) : NULL;

	return s ? s : "?";
}

/* Scans the records of table whose key starts with (run, id). */
static void scan_by(explain *x, rec_table tab, uint64_t id, rec_scan_fn fn,
		    json_t *arr)
{
	rec_key k = key2(x->run, id);
	scan_ctx c = { x, arr };

	x_fail(x, rec_scan(x->t, tab, &k, fn, &c));
}

static int routing_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	scan_ctx *c = ctx;
	Elspeth__RoutingEventRecord *r = elspeth__routing_event_record__unpack(NULL, vl, v);
	json_t *e;
	int to;

	(void)k;
	(void)kl;
	if (!r)
		return CORE_EDATA;
	e = json_array_get(c->x->edges, r->edge_id);
	to = e ? (int)json_integer_value(json_object_get(e, "to")) : -1;
	json_array_append_new(c->arr, json_pack("{s:i,s:s,s:s,s:s,s:s}",
		"edge_id", (int)r->edge_id,
		"label", e ? json_string_value(json_object_get(e, "label")) : "?",
		"to", to >= 0 ? node_field(c->x, (uint32_t)to, "name") : "?",
		"mode", r->mode, "reason", r->reason));
	free_msg(r);
	return 0;
}

static int call_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	scan_ctx *c = ctx;
	Elspeth__CallRecord *r = elspeth__call_record__unpack(NULL, vl, v);
	json_t *j;

	(void)k;
	(void)kl;
	if (!r)
		return CORE_EDATA;
	j = json_pack(
		"{s:i,s:s,s:s,s:s,s:i,s:s,s:s,s:f,s:s,s:s,s:f,s:i,s:i,s:o,s:o,s:o}",
		"call_index", (int)r->call_index, "call_type", r->call_type,
		"name", r->name, "status", r->status, "http_status", (int)r->http_status,
		"request_hash", r->request_hash, "response_hash", r->response_hash,
		"latency_ms", (double)r->latency_ns / 1e6, "error_class", r->error_class,
		"error", r->error,
		"throttle_delay_ms", (double)r->throttle_delay_ns / 1e6,
		"submit_order", (int)r->submit_order,
		"complete_order", (int)r->complete_order,
		"submitted_at", time_json(r->submitted_at_ns),
		"request", body_json(r->request_hash, &r->request),
		"response", body_json(r->response_hash, &r->response));
	/* "STATE/INDEX": the recorded call whose answer this one reused. */
	if (j && r->replayed_from[0])
		json_object_set_new(j, "replayed_from", json_string(r->replayed_from));
	/* What drove the throttle delay; absent in trails written before
	 * the field existed, and when nothing held the call back. */
	if (j && r->throttle_reason[0])
		json_object_set_new(j, "throttle_reason", json_string(r->throttle_reason));
	json_array_append_new(c->arr, j);
	free_msg(r);
	return 0;
}

static int member_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	scan_ctx *c = ctx;
	Elspeth__BatchMemberRecord *m = elspeth__batch_member_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (!m)
		return CORE_EDATA;
	json_array_append_new(c->arr, json_integer((json_int_t)m->token_id));
	free_msg(m);
	return 0;
}

/* A batch: its trigger and all its members (token ids, in order). */
static json_t *batch_json(explain *x, uint64_t batch)
{
	rec_key k = key2(x->run, batch);
	Elspeth__BatchRecord *b = x_get(x, REC_BATCHES, &k,
		&elspeth__batch_record__descriptor);
	json_t *members = json_array(), *j;

	scan_by(x, REC_BATCH_MEMBERS, batch, member_one, members);
	if (!b)
		return json_pack("{s:I,s:b,s:o}", "batch_id", (json_int_t)batch,
				 "missing", 1, "members", members);
	j = json_pack("{s:I,s:s,s:s,s:I,s:o}", "batch_id", (json_int_t)batch,
		      "status", b->status, "trigger", b->trigger,
		      "trigger_seq", (json_int_t)b->trigger_seq, "members", members);
	free_msg(b);
	return j;
}

static json_t *state_json(explain *x, const Elspeth__NodeStateRecord *s)
{
	const char *kind = node_field(x, s->node_id, "kind");
	json_t *j = json_pack("{s:I,s:s,s:s,s:s,s:i,s:i,s:s,s:s,s:s,s:o,s:f}",
		"state_id", (json_int_t)s->state_id, "node", node_field(x, s->node_id, "name"),
		"kind", kind, "plugin", node_field(x, s->node_id, "plugin"),
		"step", (int)s->step, "attempt", (int)s->attempt, "status", s->status,
		"input_hash", s->input_hash, "output_hash", s->output_hash,
		"started_at", time_json(s->started_at_ns),
		"duration_ms", (double)s->duration_ns / 1e6);

	if (s->error && s->error[0])
		json_object_set_new(j, "error", json_string(s->error));
	if (s->context_json && s->context_json[0]) {
		json_t *ctx = json_loads(s->context_json, 0, NULL);
		json_t *b = json_object_get(ctx, "batch_id");

		json_object_set_new(j, "context", ctx);
		if (b)
			json_object_set_new(j, "batch",
				batch_json(x, (uint64_t)json_integer_value(b)));
	}
	if (!strcmp(kind, "transform") && s->output_hash[0])
		json_object_set_new(j, "output", payload_json(x, s->output_hash, true));
	if (!strcmp(kind, "gate")) {
		json_t *r = json_array();

		scan_by(x, REC_ROUTING_EVENTS, s->state_id, routing_one, r);
		json_object_set_new(j, "routing", r);
	}
	json_t *calls = json_array();

	scan_by(x, REC_CALLS, s->state_id, call_one, calls);
	json_object_set_new(j, "calls", calls);
	return j;
}

static int state_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	scan_ctx *c = ctx;
	uint64_t id = rec_key_get_u64(k, 16);
	rec_key sk = key2(c->x->run, id);
	Elspeth__NodeStateRecord *s = x_get(c->x, REC_NODE_STATES, &sk,
		&elspeth__node_state_record__descriptor);

	(void)kl;
	(void)v;
	(void)vl;
	if (s)
		json_array_append_new(c->arr, state_json(c->x, s));
	else
		json_array_append_new(c->arr, json_pack("{s:I,s:b}", "state_id",
			(json_int_t)id, "missing", 1));
	free_msg(s);
	return 0;
}

static json_t *outcome_json(explain *x, uint64_t token)
{
	rec_key k = key2(x->run, token);
	Elspeth__TokenOutcomeRecord *o = x_get(x, REC_TOKEN_OUTCOMES, &k,
		&elspeth__token_outcome_record__descriptor);
	json_t *j;

	if (!o)
		return json_null();
	j = json_pack("{s:s,s:s,s:o}", "outcome", o->outcome, "sink", o->sink,
		      "recorded_at", time_json(o->recorded_at_ns));
	if (o->error_hash[0])
		json_object_set_new(j, "error", payload_json(x, o->error_hash, false));
	free_msg(o);
	return j;
}

static json_t *artifact_json(explain *x, uint64_t token)
{
	rec_key k = key2(x->run, token);
	Elspeth__ArtifactRecord *a = x_get(x, REC_ARTIFACTS, &k,
		&elspeth__artifact_record__descriptor);
	json_t *j;

	if (!a)
		return json_null();
	j = json_pack("{s:s,s:s,s:I,s:I,s:s,s:o}", "sink", a->sink, "path", a->path,
		      "offset", (json_int_t)a->offset, "length", (json_int_t)a->length,
		      "content_hash", a->content_hash,
		      "written_at", time_json(a->written_at_ns));
	free_msg(a);
	return j;
}

static int parent_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	scan_ctx *c = ctx;
	Elspeth__TokenParentRecord *p = elspeth__token_parent_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (!p)
		return CORE_EDATA;
	json_array_append_new(c->arr, json_pack("{s:I,s:i}", "token_id",
		(json_int_t)p->parent_token_id, "ordinal", (int)p->ordinal));
	free_msg(p);
	return 0;
}

static json_t *token_json(explain *x, uint64_t token)
{
	rec_key k = key2(x->run, token);
	Elspeth__SupersededRecord *s = x_get(x, REC_SUPERSEDED, &k,
		&elspeth__superseded_record__descriptor);
	json_t *parents = json_array(), *states = json_array(), *j;

	scan_by(x, REC_TOKEN_PARENTS, token, parent_one, parents);
	scan_by(x, REC_STATES_BY_TOKEN, token, state_one, states);
	j = json_pack("{s:I,s:o,s:o,s:o,s:o}",
		"token_id", (json_int_t)token, "parents", parents, "states", states,
		"outcome", outcome_json(x, token), "artifact", artifact_json(x, token));
	if (s)
		json_object_set_new(j, "superseded", json_pack("{s:i,s:s}",
			"attempt", (int)s->attempt, "reason", s->reason));
	free_msg(s);
	return j;
}

/* A row's token ids, ascending and unique. */
typedef struct id_list {
	uint64_t *v;
	size_t n, cap;
	uint64_t row; /* superseded_one: the row whose tokens are wanted */
} id_list;

static int id_push(id_list *l, uint64_t id)
{
	uint64_t *nv;

	if (l->n == l->cap) {
		nv = realloc(l->v, (l->cap ? l->cap * 2 : 16) * sizeof(*nv));
		if (!nv)
			return CORE_ENOMEM;
		l->v = nv;
		l->cap = l->cap ? l->cap * 2 : 16;
	}
	l->v[l->n++] = id;
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int row_token_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)kl;
	(void)v;
	(void)vl;
	return id_push(ctx, rec_key_get_u64(k, 16));
}

static int superseded_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	id_list *l = ctx;
	Elspeth__SupersededRecord *s = elspeth__superseded_record__unpack(NULL, vl, v);
	int rc = 0;

	(void)kl;
	if (!s)
		return CORE_EDATA;
	if (s->row_id == l->row)
		rc = id_push(l, rec_key_get_u64(k, 8));
	free_msg(s);
	return rc;
}

/* Every token of row seq, the ones a resume abandoned included (also one
 * whose tokens_by_row entry the crash cut off), in token order. 0 or the
 * read error. */
static int row_tokens(explain *x, uint64_t seq, json_t *out)
{
	id_list l = { .row = seq };
	rec_key k = key2(x->run, seq);
	size_t i;
	int rc;

	if ((rc = rec_scan(x->t, REC_TOKENS_BY_ROW, &k, row_token_one, &l)))
		goto out_free;
	k = key1(x->run);
	if ((rc = rec_scan(x->t, REC_SUPERSEDED, &k, superseded_one, &l)))
		goto out_free;
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), id_cmp);
	for (i = 0; i < l.n; i++)
		if (!i || l.v[i] != l.v[i - 1])
			json_array_append_new(out, token_json(x, l.v[i]));
	free(l.v);
	return 0;
out_free:
	free(l.v);
	return rc;
}

static int resume_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	Elspeth__ResumeRecord *r = elspeth__resume_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	if (!r)
		return CORE_EDATA;
	json_array_append_new(ctx, json_pack(
		"{s:i,s:o,s:o,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:i}",
		"attempt", (int)r->attempt, "started_at", time_json(r->started_at_ns),
		"completed_at", time_json(r->completed_at_ns), "status", r->status,
		"previous_status", r->previous_status,
		"from_released_seq", (json_int_t)r->from_released_seq,
		"rows_reused", (json_int_t)r->rows_reused,
		"rows_rerun", (json_int_t)r->rows_rerun,
		"tokens_superseded", (json_int_t)r->tokens_superseded,
		"calls_replayed", (json_int_t)r->calls_replayed,
		"max_rows_in_flight", (int)r->max_rows_in_flight));
	free_msg(r);
	return 0;
}

static json_t *row_json(explain *x, uint64_t seq)
{
	rec_key k = key2(x->run, seq);
	Elspeth__RowRecord *r = x_get(x, REC_ROWS, &k, &elspeth__row_record__descriptor);
	Elspeth__ValidationErrorRecord *v;
	json_t *j;

	if (!r)
		return NULL;
	j = json_pack("{s:I,s:s,s:s,s:o,s:o}", "seq", (json_int_t)r->seq,
		      "source_hash", r->source_hash, "where", r->where,
		      "created_at", time_json(r->created_at_ns),
		      "source", payload_json(x, r->payload_ref, true));
	/* which source, and where in it: shown when the run has several
	 * (explain_row, once the nodes are read) */
	if (j) {
		json_object_set_new(j, "source_node_id", json_integer(r->source));
		json_object_set_new(j, "source_row_index", json_integer((json_int_t)r->source_row_index));
	}
	free_msg(r);
	v = x_get(x, REC_VALIDATION_ERRORS, &k,
		    &elspeth__validation_error_record__descriptor);
	if (v)
		json_object_set_new(j, "validation_error", json_string(v->error));
	free_msg(v);
	return j;
}

/* A read the explanation needs failed: damage names where. */
static int damaged(const explain *x, int rc, core_err *err)
{
	if (rc == CORE_EDATA)
		return core_err_set(err, rc, "the trail is damaged: run %llu: %s%s",
				    (unsigned long long)x->run, rec_damage_where()[0] ?
				    rec_damage_where() : "a record it holds cannot be decoded",
				    rec_damage_where()[0] ? " cannot be read" : "");
	if (rc == CORE_ENOMEM)
		return core_err_set(err, rc, "out of memory");
	return core_err_set(err, rc, "run %llu: reading the trail: %s",
			    (unsigned long long)x->run, core_strerror(rc));
}

static int explain_build(explain *x, uint64_t seq, json_t **out, core_err *err)
{
	rec_key rk = key1(x->run);
	int rc;
	Elspeth__RunRecord *run = x_get(x, REC_RUNS, &rk, &elspeth__run_record__descriptor);
	json_t *row, *resumes, *doc;

	if (!run)
		return x->rc ? damaged(x, x->rc, err) :
		       core_err_set(err, CORE_EDATA, "run %llu is not in the audit trail",
				    (unsigned long long)x->run);
	row = row_json(x, seq);
	if (!row) {
		rec_key k = key1(x->run);
		uint64_t counted = run->rows;

		free_msg(run);
		rec_key_u64(&k, seq);
		if ((rc = rec_get(x->t, REC_ROWS, &k, NULL, NULL)) && rc != REC_NOTFOUND)
			return damaged(x, rc, err);
		if (x->rc)
			return damaged(x, x->rc, err);
		/* a row the run counted cannot be missing: its keys are damaged
		 * (LMDB finds no key where a damaged page hides it) */
		if (seq && seq <= counted)
			return core_err_set(err, CORE_EDATA, "the trail is damaged: run %llu "
					    "counted %llu rows, but row %llu cannot be found",
					    (unsigned long long)x->run, (unsigned long long)counted,
					    (unsigned long long)seq);
		return core_err_set(err, CORE_EDATA,
			"run %llu has no row %llu (rows are numbered from 1 in source order)",
			(unsigned long long)x->run, (unsigned long long)seq);
	}
	resumes = json_array();
	if ((rc = rec_scan(x->t, REC_NODES, &rk, load_nodes, x)) ||
	    (rc = rec_scan(x->t, REC_EDGES, &rk, load_edges, x)) ||
	    (rc = rec_scan(x->t, REC_RESUMES, &rk, resume_one, resumes)) ||
	    (rc = row_tokens(x, seq, x->tokens)) || (rc = x->rc)) {
		free_msg(run);
		json_decref(row);
		json_decref(resumes);
		return damaged(x, rc, err);
	}
	if (sources_in(x) > 1)
		json_object_set_new(row, "source_node", json_string(node_field(x,
			(uint32_t)json_integer_value(json_object_get(row, "source_node_id")),
			"name")));
	else {
		json_object_del(row, "source_node_id");
		json_object_del(row, "source_row_index");
	}
	doc = json_pack("{s:s,s:o,s:o,s:o,s:O}", "schema", "elspeth-explain-1",
			"run", run_json(run), "resumes", resumes, "row", row,
			"tokens", x->tokens);
	free_msg(run);
	*out = doc;
	return doc ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
}

int rec_explain(rec_env *env, uint64_t run, uint64_t seq, uint64_t token,
		json_t **out, core_err *err)
{
	explain x = { .run = run };
	int rc;

	*out = NULL;
	if ((rc = rec_read_begin(env, &x.t, err)))
		return rc;
	x.nodes = json_array();
	x.edges = json_array();
	x.tokens = json_array();
	if (token) {
		rec_key k = key2(run, token);
		Elspeth__TokenRecord *t = x_get(&x, REC_TOKENS, &k,
			&elspeth__token_record__descriptor);

		if (t)
			seq = t->row_id;
		else if (x.rc)
			rc = damaged(&x, x.rc, err);
		else
			rc = core_err_set(err, CORE_EDATA, "run %llu has no token %llu",
					  (unsigned long long)run, (unsigned long long)token);
		free_msg(t);
	}
	if (!rc)
		rc = explain_build(&x, seq, out, err);
	json_decref(x.nodes);
	json_decref(x.edges);
	json_decref(x.tokens);
	rec_read_end(x.t);
	return rc;
}

/*
 * audit.c — what the engine records in the Landscape (docs/audit.md): the
 * run, its nodes and edges, each row with its payload, tokens, node states,
 * routing decisions, errors, outcomes (before the sink write) and
 * artifacts (after it). Every function is a no-op when audit is off.
 *
 * Records are enqueued on the recorder (it never waits for disk); an
 * enqueue failure is sticky in the recorder and surfaces at
 * eng__audit_finish(), which fails the run.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_internal.h"

#define STR(s) ((char *)((s) ? (s) : ""))

static uint64_t run_key_id(const eng_audit *a, rec_key *k)
{
	rec_key_init(k);
	rec_key_u64(k, a->run_id);
	return a->run_id;
}

/* The error of the last put: the recorder's sticky error, with its cause
 * and path, if it has one. */
static int put_err(eng_audit *a, int rc, core_err *err, const char *what)
{
	if (rec_error(a->rec, err))
		return core_err_prefix(err, "audit: cannot store %s", what);
	return core_err_set(err, rc, "audit: cannot store %s: %s", what,
			    core_strerror(rc));
}

int eng__audit_payload(eng_audit *a, uint64_t seq, const json_t *v,
		       eng_hash out, core_err *err)
{
	core_buf b = { 0 };
	int rc;

	if (!a->rec) {
		out[0] = '\0';
		return 0;
	}
	rc = core_canon_append(&b, v, err);
	if (!rc && (rc = rec_story_payload(a->rec, a->run_id, seq, b.data, b.len,
					   out))) /* hashes */
		rc = put_err(a, rc, err, "a payload");
	core_buf_release(&b);
	return rc;
}

/* Stores a text (an error message) as a payload of row seq; out receives
 * its hash. */
static void put_text(eng_audit *a, uint64_t seq, const char *text, eng_hash out)
{
	out[0] = '\0';
	if (text)
		rec_story_payload(a->rec, a->run_id, seq, text, strlen(text), out);
}

static void story_put(eng_audit *a, uint64_t seq, const ProtobufCMessage *m)
{
	/* A failure is sticky in the recorder (rec_story_put): the next
	 * checkpoint and eng__audit_finish fail on it. */
	rec_story_put(a->rec, a->run_id, seq, m);
}

void eng__audit_seal(eng_audit *a, uint64_t seq)
{
	if (a->rec)
		rec_story_seal(a->rec, a->run_id, seq);
}

/* ------------------------------------------------------------- the run */

static const char *kind_name(dag_kind k)
{
	switch (k) {
	case DAG_SOURCE:
		return "source";
	case DAG_TRANSFORM:
		return "transform";
	case DAG_GATE:
		return "gate";
	case DAG_COALESCE:
		return "coalesce";
	case DAG_AGGREGATION:
		return "aggregation";
	case DAG_SINK:
		return "sink";
	case DAG_QUEUE:
		return "queue";
	}
	return "unknown";
}

/* Canonical, secret-free JSON of a node's options (or of a gate's
 * condition and routes) and its hash. */
static int node_config(const dag_node *n, char **json, eng_hash hash,
		       core_err *err)
{
	json_t *j;
	uint8_t d[CORE_SHA256_LEN];
	int rc;

	if (n->kind == DAG_GATE) {
		j = json_pack("{s:s}", "condition", expr_source(n->cond));
		for (size_t i = 0; j && i < n->nroutes; i++)
			json_object_set_new(j, n->routes[i].key,
					    json_integer(n->routes[i].to.node));
	} else {
		j = n->options ? core_node_to_json(n->options) : json_object();
	}
	if (!j || core_redact_secrets(j)) {
		json_decref(j);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = core_canon(j, json, NULL, err);
	json_decref(j);
	if (rc)
		return rc;
	core_sha256(*json, strlen(*json), d);
	core_hex(d, sizeof(d), hash);
	return 0;
}

int eng_node_hash(const dag_node *n, char out[65], core_err *err)
{
	char *json = NULL;
	int rc = node_config(n, &json, out, err);

	free(json);
	return rc;
}

static int record_nodes(eng_audit *a, json_t *topo, bool put, core_err *err)
{
	const dag_graph *g = a->g;
	int rc = 0;

	for (size_t i = 0; i < g->nnodes && !rc; i++) {
		const dag_node *n = &g->nodes[i];
		Elspeth__NodeRecord r = ELSPETH__NODE_RECORD__INIT;
		eng_hash h;
		char *cfg = NULL;
		rec_key k;

		if ((rc = node_config(n, &cfg, h, err)))
			break;
		r.run_id = run_key_id(a, &k);
		rec_key_u32(&k, (uint32_t)i);
		r.node_id = (uint32_t)i;
		r.name = STR(n->name);
		r.kind = (char *)kind_name(n->kind);
		r.plugin = STR(n->plugin);
		r.plugin_version = ELSPETH_VERSION;
		r.config_hash = h;
		r.config_json = cfg;
		if (n->kind == DAG_SINK && n->kops->target && dag_sink_target(g, n) &&
		    n->kops->target(NULL, n->options) &&
		    strcmp(dag_sink_target(g, n), n->kops->target(NULL, n->options)))
			r.sink_path = (char *)dag_sink_target(g, n);
		if (put)
			rc = rec_put_msg(a->rec, REC_NODES, &k, &r.base);
		json_array_append_new(json_object_get(topo, "nodes"),
			json_pack("{s:s,s:s,s:s,s:s}", "name", r.name, "kind", r.kind,
				  "plugin", r.plugin, "config_hash", h));
		free(cfg);
	}
	return rc;
}

static int record_edges(eng_audit *a, json_t *topo, bool put)
{
	const dag_graph *g = a->g;
	int rc = 0;

	for (size_t i = 0; i < g->nedges && !rc; i++) {
		Elspeth__EdgeRecord r = ELSPETH__EDGE_RECORD__INIT;
		rec_key k;

		r.run_id = run_key_id(a, &k);
		rec_key_u32(&k, (uint32_t)i);
		r.edge_id = (uint32_t)i;
		r.from_node = (uint32_t)g->edges[i].from;
		r.to_node = (uint32_t)g->edges[i].to;
		r.label = STR(g->edges[i].label);
		if (put)
			rc = rec_put_msg(a->rec, REC_EDGES, &k, &r.base);
		json_array_append_new(json_object_get(topo, "edges"),
			json_pack("{s:i,s:i,s:s}", "from", g->edges[i].from,
				  "to", g->edges[i].to, "label", r.label));
	}
	return rc;
}

static void fill_run(const eng_audit *a, Elspeth__RunRecord *r,
		     const char *path, const char *topo_hash)
{
	const core_settings *s = a->g->settings;

	r->run_id = a->run_id;
	r->started_at_ns = a->started_ns;
	r->status = "running";
	r->config_hash = (char *)s->config_hash;
	r->topology_hash = (char *)topo_hash;
	r->canonical_version = CORE_CANONICAL_VERSION;
	r->settings_json = STR(s->settings_json);
	r->settings_path = STR(path);
	r->elspeth_version = ELSPETH_VERSION;
	if (a->shard) {
		r->shard_index = a->shard->index;
		r->shard_count = a->shard->count;
		r->shard_first_seq = a->shard->first_seq;
		r->shard_last_seq = a->shard->last_seq;
		r->shard_manifest_hash = (char *)STR(a->shard->manifest_hash);
	}
}

/* The run's nodes and edges, and its topology (in the payloads) with its
 * hash in a->topology_hash. */
static int record_topology(eng_audit *a, json_t *topo, core_err *err)
{
	core_buf b = { 0 };
	int rc = record_nodes(a, topo, true, err);

	if (!rc)
		rc = record_edges(a, topo, true);
	if (!rc)
		rc = core_canon_append(&b, topo, err);
	if (!rc && (rc = rec_put_payload(a->rec, b.data, b.len, a->topology_hash)))
		rc = put_err(a, rc, err, "the topology");
	core_buf_release(&b);
	return rc;
}

int eng__audit_start(eng_audit *a, rec_env *rec, dag_graph *g,
		     const char *settings_path, const eng_shard *shard,
		     core_err *err)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	json_t *topo;
	int rc;

	memset(a, 0, sizeof(*a));
	a->g = g;
	a->lock_fd = -1;
	a->shard = shard;
	atomic_init(&a->next_token, 1);
	atomic_init(&a->next_state, 1);
	atomic_init(&a->next_batch, 1);
	if (!rec)
		return 0;
	a->rec = rec;
	a->settings_path = settings_path;
	a->started_ns = core_now_wall_ns();
	topo = json_pack("{s:[],s:[]}", "nodes", "edges");
	if (!topo)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	/* The topology hash needs the nodes; the nodes need the run id. Get
	 * the id first with a provisional record, then rewrite it. */
	fill_run(a, &r, settings_path, "");
	rc = rec_new_run(rec, &r, err);
	a->run_id = r.run_id;
	/* A resume of this run must wait until it ends (or dies). */
	if (!rc)
		rc = rec_run_lock(rec, a->run_id, &a->lock_fd, err);
	if (!rc)
		rc = record_topology(a, topo, err);
	if (!rc) {
		rec_key k;

		fill_run(a, &r, settings_path, a->topology_hash);
		run_key_id(a, &k);
		rc = rec_put_msg(rec, REC_RUNS, &k, &r.base);
	}
	json_decref(topo);
	if (rc && !err->msg[0])
		core_err_set(err, rc, "audit: cannot record the run");
	return rc;
}

int eng__topology_hash(dag_graph *g, eng_hash out, core_err *err)
{
	eng_audit a = { .g = g };
	json_t *topo = json_pack("{s:[],s:[]}", "nodes", "edges");
	int rc;

	if (!topo)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = record_nodes(&a, topo, false, err);
	if (!rc)
		rc = record_edges(&a, topo, false);
	if (!rc)
		rc = core_hash_json(topo, out, err);
	json_decref(topo);
	return rc;
}

int eng__audit_resume(eng_audit *a, rec_env *rec, dag_graph *g,
		      const char *settings_path, const eng_shard *shard,
		      const Elspeth__RunRecord *run,
		      const uint64_t next[3], core_err *err)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	rec_key k;
	int rc;

	memset(a, 0, sizeof(*a));
	a->g = g;
	a->rec = rec;
	a->lock_fd = -1;
	a->run_id = run->run_id;
	a->settings_path = settings_path;
	a->shard = shard;
	a->started_ns = run->started_at_ns;
	snprintf(a->topology_hash, sizeof(a->topology_hash), "%s", run->topology_hash);
	atomic_init(&a->next_token, next[0]);
	atomic_init(&a->next_state, next[1]);
	atomic_init(&a->next_batch, next[2]);
	/* A run killed before its nodes reached the Landscape left only its
	 * provisional record (no topology): they are recorded now, so its
	 * states name their nodes. */
	if (!a->topology_hash[0]) {
		json_t *topo = json_pack("{s:[],s:[]}", "nodes", "edges");

		rc = topo ? record_topology(a, topo, err) :
			    core_err_set(err, CORE_ENOMEM, "out of memory");
		json_decref(topo);
		if (rc)
			return rc;
	}
	fill_run(a, &r, settings_path, a->topology_hash);
	run_key_id(a, &k);
	if ((rc = rec_put_msg(rec, REC_RUNS, &k, &r.base)))
		return core_err_set(err, rc, "audit: cannot record the resume of run %llu",
				    (unsigned long long)run->run_id);
	return 0;
}

/* Each sink file's size and hash at the end of the run. */
static int record_sink_files(eng_audit *a, core_err *err)
{
	for (size_t i = 0; i < a->g->nnodes; i++) {
		const dag_node *n = &a->g->nodes[i];
		const char *path = n->kind == DAG_SINK ?
				   dag_sink_target(a->g, n) : NULL;
		Elspeth__SinkFileRecord r = ELSPETH__SINK_FILE_RECORD__INIT;
		struct stat st;
		eng_hash h;
		rec_key k;
		int rc;

		if (!path)
			continue;
		/* Devices and pipes (/dev/full, /dev/stdout) have no content
		 * to hash. */
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		rc = core_sha256_file(path, UINT64_MAX, &r.size, h, err);
		if (rc)
			return rc;
		r.run_id = run_key_id(a, &k);
		rec_key_u32(&k, (uint32_t)i);
		r.sink_node = (uint32_t)i;
		r.sink = (char *)n->name;
		r.path = (char *)path;
		r.content_hash = h;
		rec_put_msg(a->rec, REC_SINK_FILES, &k, &r.base);
	}
	return 0;
}

int eng__audit_finish(eng_audit *a, const eng_summary *sum, const char *status,
		      const char *error, const char *metrics_json, core_err *err)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	rec_key k;
	int rc = 0, crc;

	if (!a->rec)
		return 0;
	if (!strcmp(status, "completed"))
		rc = record_sink_files(a, err);
	/* Rows not released (a failed or interrupted run) keep their
	 * records. */
	rec_story_flush(a->rec);
	fill_run(a, &r, a->settings_path, a->topology_hash);
	r.completed_at_ns = core_now_wall_ns();
	r.status = (char *)status;
	r.rows = sum->rows;
	r.succeeded = sum->succeeded;
	r.failed = sum->failed;
	r.quarantined = sum->quarantined;
	r.error = STR(error);
	r.metrics_json = STR(metrics_json);
	run_key_id(a, &k);
	/* Written with its chain's head in one transaction, while the run's
	 * lock is held: nothing of the run is written after this (also when
	 * the sink files could not be hashed: the run record says what the
	 * run was). Should chaining fail, the record goes in without a
	 * head. */
	crc = rec_run_end(a->rec, &r, core_signing_key(), rc ? NULL : err);
	if (crc)
		rec_put_msg(a->rec, REC_RUNS, &k, &r.base);
	if (!rc)
		rc = crc;
	/* durable before the run's lock goes, whatever went wrong */
	if (rc)
		rec_flush(a->rec, NULL);
	else
		rc = rec_flush(a->rec, err);
	if (a->lock_fd >= 0) {
		close(a->lock_fd);
		a->lock_fd = -1;
	}
	return rc;
}

/* -------------------------------------------------------------- rows */

void eng__audit_parent(eng_audit *a, uint64_t seq, uint64_t token,
		       uint64_t parent, unsigned ordinal)
{
	Elspeth__TokenParentRecord r = ELSPETH__TOKEN_PARENT_RECORD__INIT;

	if (!a->rec)
		return;
	r.run_id = a->run_id;
	r.token_id = token;
	r.parent_token_id = parent;
	r.ordinal = ordinal;
	story_put(a, seq, &r.base);
}

uint64_t eng__audit_token(eng_audit *a, uint64_t row_id, uint64_t parent,
			  unsigned ordinal, const char *branch)
{
	uint64_t id = atomic_fetch_add(&a->next_token, 1);
	Elspeth__TokenRecord r = ELSPETH__TOKEN_RECORD__INIT;

	if (!a->rec)
		return id;
	r.run_id = a->run_id;
	r.token_id = id;
	r.row_id = row_id;
	r.created_at_ns = core_now_wall_ns();
	r.branch_ordinal = ordinal;
	r.branch = STR(branch);
	story_put(a, row_id, &r.base);
	if (parent)
		eng__audit_parent(a, row_id, id, parent, ordinal);
	return id;
}

uint64_t eng__audit_batch(eng_audit *a, int node, const char *trigger,
			  uint64_t trigger_seq, const uint64_t *members,
			  size_t n, uint64_t created_ns)
{
	uint64_t id = atomic_fetch_add(&a->next_batch, 1);
	Elspeth__BatchRecord r = ELSPETH__BATCH_RECORD__INIT;
	rec_key k;

	if (!a->rec)
		return id;
	r.run_id = run_key_id(a, &k);
	rec_key_u64(&k, id);
	r.batch_id = id;
	r.node_id = (uint32_t)node;
	r.trigger = (char *)trigger;
	r.status = "flushed";
	r.created_at_ns = created_ns;
	r.flushed_at_ns = core_now_wall_ns();
	r.trigger_seq = trigger_seq;
	rec_put_msg(a->rec, REC_BATCHES, &k, &r.base);
	for (size_t i = 0; i < n; i++) {
		Elspeth__BatchMemberRecord m = ELSPETH__BATCH_MEMBER_RECORD__INIT;
		rec_key mk;

		m.run_id = run_key_id(a, &mk);
		rec_key_u64(&mk, id);
		rec_key_u32(&mk, (uint32_t)i);
		m.batch_id = id;
		m.token_id = members[i];
		m.ordinal = (uint32_t)i;
		rec_put_msg(a->rec, REC_BATCH_MEMBERS, &mk, &m.base);
	}
	return id;
}

int eng__audit_row(eng_audit *a, eng_row *row, uint64_t *token_id,
		   core_err *err)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	eng_hash h;
	int rc;

	if (!a->rec) {
		*token_id = atomic_fetch_add(&a->next_token, 1);
		row->hash[0] = '\0';
		return 0;
	}
	rc = eng__audit_payload(a, row->seq, row->data, h, err);
	if (rc)
		return core_err_prefix(err, "row %llu", (unsigned long long)row->seq);
	/* A resumed row read again has its hash from the checkpoint already
	 * (the same: reread() checked), and the next checkpoint may be
	 * reading it: it is not written again. */
	if (!row->hash[0])
		memcpy(row->hash, h, sizeof(h));
	r.run_id = a->run_id;
	r.row_id = r.seq = row->seq;
	r.source_hash = r.payload_ref = row->hash;
	r.where = STR(row->where);
	r.created_at_ns = core_now_wall_ns();
	r.source = row->source;
	r.source_row_index = a->g->nsources > 1 ? row->source_index : row->seq - 1;
	story_put(a, row->seq, &r.base);
	*token_id = eng__audit_token(a, row->seq, 0, 0, NULL);
	if (row->error) {
		Elspeth__ValidationErrorRecord v = ELSPETH__VALIDATION_ERROR_RECORD__INIT;

		v.run_id = a->run_id;
		v.row_id = row->seq;
		v.node = (char *)a->g->nodes[row->source].name;
		v.error = row->error;
		v.data_ref = row->hash;
		story_put(a, row->seq, &v.base);
	}
	return 0;
}

/* ------------------------------------------------------------ events */

void eng__event(const eng_audit *a, eng_event *ev)
{
	if (!eng__wants(a, ev->kind))
		return;
	ev->at_ns = core_now_wall_ns();
	ev->run_id = a->rec ? a->run_id : 0;
	a->opts->event(a->opts->event_ctx, ev);
}

/* ------------------------------------------------------------ states */

uint64_t eng__audit_state_id(eng_audit *a)
{
	return a->rec ? atomic_fetch_add(&a->next_state, 1) : 0;
}

/* The SHA-256 of a call body ("" when there is none). */
static void body_hash(const void *data, size_t len, eng_hash out)
{
	uint8_t d[CORE_SHA256_LEN];

	out[0] = '\0';
	if (!data)
		return;
	core_sha256(data, len, d);
	core_hex(d, sizeof(d), out);
}

void eng__audit_call(eng_audit *a, const eng_state *st, uint64_t seq,
		     unsigned index, const plg_call *call)
{
	uint64_t state_id = st->id;
	Elspeth__CallRecord r = ELSPETH__CALL_RECORD__INIT;
	eng_hash req, resp;
	rec_key k;

	if (eng__wants(a, ENG_EV_CALL)) {
		eng_event ev = { .kind = ENG_EV_CALL, .row = seq, .token = st->token_id,
				 .node = &a->g->nodes[st->node], .state = state_id,
				 .call = call, .ok = call->ok };

		eng__event(a, &ev);
	}
	if (!a->rec)
		return;
	body_hash(call->request, call->request_len, req);
	body_hash(call->response, call->response_len, resp);
	/* The bodies are in the record (packed by the recorder). */
	if (call->request) {
		r.request.data = (uint8_t *)call->request;
		r.request.len = call->request_len;
	}
	if (call->response) {
		r.response.data = (uint8_t *)call->response;
		r.response.len = call->response_len;
	}
	r.run_id = run_key_id(a, &k);
	rec_key_u64(&k, state_id);
	rec_key_u32(&k, index);
	r.state_id = state_id;
	r.call_index = index;
	r.call_type = (char *)STR(call->call_type);
	r.name = (char *)STR(call->name);
	r.status = call->replayed_from ? "replayed" : call->ok ? "success" : "error";
	r.replayed_from = (char *)STR(call->replayed_from);
	r.token_id = st->token_id;
	r.node_id = (uint32_t)st->node;
	r.row_id = seq;
	r.http_status = call->http_status;
	r.request_hash = req;
	r.response_hash = resp;
	r.error_class = (char *)STR(call->error_class);
	r.error = (char *)STR(call->error);
	r.latency_ns = call->completed_ns > call->submitted_ns ?
		       call->completed_ns - call->submitted_ns : 0;
	r.throttle_delay_ns = call->throttle_delay_ns;
	r.throttle_reason = (char *)STR(call->throttle_reason);
	r.submitted_at_ns = call->submitted_ns;
	r.completed_at_ns = call->completed_ns;
	r.submit_order = call->submit_order;
	r.complete_order = call->complete_order;
	/* An answer is paid for: committed at once (not after the group
	 * commit's gathering delay), so a crash loses as few as possible. */
	rec_put_msg_now(a->rec, REC_CALLS, &k, &r.base);
}

uint64_t eng__audit_state(eng_audit *a, const eng_state *st)
{
	Elspeth__NodeStateRecord r = ELSPETH__NODE_STATE_RECORD__INIT;
	uint64_t id;

	if (!a->rec)
		return 0;
	id = st->id ? st->id : atomic_fetch_add(&a->next_state, 1);
	r.run_id = a->run_id;
	r.state_id = id;
	r.token_id = st->token_id;
	r.node_id = (uint32_t)st->node;
	r.step = st->step;
	r.attempt = st->attempt;
	r.status = st->ok ? "completed" : "failed";
	r.input_hash = STR(st->in_hash);
	r.output_hash = STR(st->out_hash);
	r.started_at_ns = st->started_ns;
	r.completed_at_ns = st->completed_ns;
	r.duration_ns = st->completed_ns - st->started_ns;
	r.error = STR(st->error);
	r.context_json = STR(st->context_json);
	story_put(a, st->seq, &r.base);
	return id;
}

void eng__audit_route(eng_audit *a, uint64_t seq, uint64_t state_id,
		      const dag_node *gate, const char *edge, const char *reason,
		      const char *mode, unsigned ordinal)
{
	Elspeth__RoutingEventRecord r = ELSPETH__ROUTING_EVENT_RECORD__INIT;
	const dag_graph *g = a->g;

	if (!a->rec)
		return;
	for (size_t e = 0; e < g->nedges; e++) {
		if (g->edges[e].from == gate->id && !strcmp(g->edges[e].label, edge)) {
			r.edge_id = (uint32_t)e;
			break;
		}
	}
	r.run_id = a->run_id;
	r.state_id = state_id;
	r.mode = (char *)mode;
	r.reason = (char *)reason;
	r.ordinal = ordinal;
	story_put(a, seq, &r.base);
}

void eng__audit_transform_error(eng_audit *a, const eng_state *st,
				uint64_t state_id, const core_err *e)
{
	Elspeth__TransformErrorRecord r = ELSPETH__TRANSFORM_ERROR_RECORD__INIT;

	if (!a->rec)
		return;
	r.run_id = a->run_id;
	r.token_id = st->token_id;
	r.state_id = state_id;
	r.node_id = (uint32_t)st->node;
	r.error = (char *)e->msg;
	r.data_ref = STR(st->in_hash);
	r.retryable = e->retryable;
	story_put(a, st->seq, &r.base);
}

/* ---------------------------------------------------- outcomes, writes */

void eng__audit_outcome(eng_audit *a, uint64_t seq, const eng_token *t)
{
	Elspeth__TokenOutcomeRecord r = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	eng_hash eh;

	if ((t->outcome == ENG_FAILED || t->outcome == ENG_CONSUMED_IN_BATCH) &&
	    eng__wants(a, ENG_EV_TOKEN)) {
		eng_event ev = { .kind = ENG_EV_TOKEN, .row = seq, .token = t->token_id,
				 .outcome = t->outcome,
				 .discarded = t->to == ENG_TO_DISCARD };

		eng__event(a, &ev);
	}
	if (!a->rec)
		return;
	put_text(a, seq, t->error, eh);
	r.run_id = a->run_id;
	r.token_id = t->token_id;
	r.row_id = seq;
	r.outcome = (char *)eng_outcome_name(t->outcome);
	r.sink = t->to == ENG_TO_SINK && t->node >= 0 ?
		(char *)a->g->nodes[t->node].name : "";
	r.error_hash = eh;
	r.recorded_at_ns = core_now_wall_ns();
	story_put(a, seq, &r.base);
}

void eng__audit_artifact(eng_audit *a, uint64_t seq, const eng_token *t,
			 const plg_write_info *info, uint64_t started_ns)
{
	Elspeth__ArtifactRecord r = ELSPETH__ARTIFACT_RECORD__INIT;
	const dag_node *sink = &a->g->nodes[t->node];
	uint8_t d[CORE_SHA256_LEN];
	eng_hash h;
	eng_state st = {
		.seq = seq, .token_id = t->token_id, .node = t->node, .ok = true,
		.step = t->step + 1, .in_hash = t->hash, .out_hash = t->hash,
		.started_ns = started_ns,
	};

	if (!a->rec)
		return;
	st.completed_ns = core_now_wall_ns();
	eng__audit_state(a, &st);
	core_sha256(info->bytes, info->len, d);
	core_hex(d, sizeof(d), h);
	r.run_id = a->run_id;
	r.token_id = t->token_id;
	r.sink_node = (uint32_t)t->node;
	r.sink = (char *)sink->name;
	r.path = STR(dag_sink_target(a->g, sink));
	r.offset = info->offset;
	r.length = info->len;
	r.content_hash = h;
	r.written_at_ns = st.completed_ns;
	story_put(a, seq, &r.base);
}

/*
 * checkpoint.c — the engine's side of checkpoints (docs/architecture.md §9, ADR
 * 0012): when one is due, and what it holds.
 *
 * A checkpoint is taken by whoever holds the release role, so the sinks,
 * the aggregation buffers and the run's totals stand still while it is
 * read: every row up to `released` is in the sinks, the rows after it up
 * to `frontier` are in the ring (done: with their final tokens; running:
 * by their recorded source payload), and the source's position after
 * `frontier` says where reading goes on. It is enqueued on the recorder
 * without waiting (rec_put_msg_fsync): the writer fsyncs the sink files
 * and commits it with the audit records enqueued before it, so a
 * checkpoint never names a record, a payload or a sink byte that is not
 * durable. A sink that is durable by a commit instead (a database)
 * commits before its position is read (plg_sink_ops.commit). Only the latest checkpoint of a run is kept (key: run).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

bool eng__ckpt_due(const eng_ctx *c, uint64_t released, const eng_summary *sum)
{
	const eng_ckpt *k = c->ckpt;

	if (!k || released < k->last)
		return false;
	/* The last one still waits in the audit queue: a new one would
	 * replace it in the same commit, so the work of one of them would
	 * be lost. The next release pass after the writer took the queue
	 * writes it (ADR 0012). */
	if (k->written && c->audit->rec && rec_queue_gen(c->audit->rec) == k->gen)
		return false;
	switch (k->frequency) {
	case CORE_CKPT_EVERY_ROW:
		return released > k->last;
	case CORE_CKPT_EVERY_N:
		/* aggregation_boundaries: a flushed batch is a boundary too */
		return released - k->last >= k->interval ||
		       (k->boundaries && sum->batches > k->batches && released > k->last);
	case CORE_CKPT_AGGREGATION_ONLY:
		return sum->batches > k->batches;
	}
	return false;
}

/* -------------------------------------------------------------- building */

/* Every allocation of one checkpoint message, freed together. */
typedef struct arena {
	void **p;
	size_t n, cap;
	bool oom;
} arena;

/* Takes p (malloc'd) into the arena; NULL when p or room is lacking. */
static void *track(arena *a, void *p)
{
	if (!p || a->oom) {
		free(p);
		a->oom = true;
		return NULL;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void **np = realloc(a->p, cap * sizeof(*np));

		if (!np) {
			free(p);
			a->oom = true;
			return NULL;
		}
		a->p = np;
		a->cap = cap;
	}
	a->p[a->n++] = p;
	return p;
}

static void *alloc(arena *a, size_t size)
{
	return track(a, calloc(1, size ? size : 1));
}

static void arena_free(arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
}

/* by_ref: its data by its payload's hash only (data_ref). */
static Elspeth__CheckpointToken *token_msg(arena *a, const eng_token *t,
					   uint64_t seq, bool by_ref)
{
	Elspeth__CheckpointToken *m = alloc(a, sizeof(*m));

	if (!m)
		return NULL;
	elspeth__checkpoint_token__init(m);
	m->token_id = t->token_id;
	m->to = (uint32_t)t->to;
	m->node_id = t->node;
	m->outcome = (char *)eng_outcome_name(t->outcome);
	m->data_ref = (char *)t->hash;
	m->step = t->step;
	m->error = t->error ? t->error : "";
	m->branch = t->branch ? (char *)t->branch : "";
	m->seq = seq;
	m->order_key = (char *)t->order_key;
	if (t->data && !(by_ref && t->hash[0]))
		m->data_json = track(a, json_dumps(t->data, JSON_COMPACT | JSON_ENCODE_ANY));
	return m;
}

static void add_rows(arena *a, Elspeth__Checkpoint *ck, const eng_ckpt_at *at)
{
	ck->rows = alloc(a, at->nrows * sizeof(*ck->rows));
	for (size_t i = 0; ck->rows && i < at->nrows; i++) {
		const eng_ckpt_row *r = &at->rows[i];
		Elspeth__CheckpointRow *m = alloc(a, sizeof(*m));

		if (!m)
			return;
		elspeth__checkpoint_row__init(m);
		m->seq = r->row->seq;
		m->payload_ref = (char *)r->row->hash;
		m->has_after_pos = r->row->has_pos;
		m->after_offset = r->row->pos.offset;
		m->after_line = r->row->pos.line;
		m->after_source = r->row->pos.source;
		m->after_index = r->row->pos.index;
		if (r->res) {
			m->done = true;
			m->failed = r->res->failed;
			m->retries = r->res->retries;
			m->tokens = alloc(a, r->res->ntokens * sizeof(*m->tokens));
			for (size_t t = 0; m->tokens && t < r->res->ntokens; t++)
				if ((m->tokens[t] = token_msg(a, &r->res->tokens[t], m->seq, false)))
					m->n_tokens++;
		} else {
			m->has_source_pos = r->has_before;
			m->source_offset = r->before.offset;
			m->source_line = r->before.line;
			m->before_source = r->before.source;
			m->before_index = r->before.index;
		}
		ck->rows[ck->n_rows++] = m;
	}
}

static void add_aggregations(arena *a, eng_ctx *c, Elspeth__Checkpoint *ck)
{
	size_t n = eng__aggs_count(c);

	ck->aggregations = alloc(a, n * sizeof(*ck->aggregations));
	for (size_t i = 0; ck->aggregations && i < n; i++) {
		Elspeth__CheckpointAggregation *m = alloc(a, sizeof(*m));
		const eng_token *members;
		const uint64_t *seqs;
		const dag_node *node;
		size_t nm;

		if (!m)
			return;
		elspeth__checkpoint_aggregation__init(m);
		node = eng__aggs_get(c, i, &members, &seqs, &nm, &m->age_ns);
		m->node_id = (uint32_t)node->id;
		m->name = (char *)node->name;
		eng__aggs_counts(c, i, &m->accepted, &m->flushes);
		m->members = alloc(a, nm * sizeof(*m->members));
		/* A held sink's tokens (0.7.1's format, ADR 0048): each one's
		 * payload is what the sink writes (0.7.1's sinks get the
		 * canonical JSON), in the trail since its release; named only,
		 * which keeps the checkpoint small however many rows are held. */
		for (size_t j = 0; m->members && j < nm; j++)
			if ((m->members[j] = token_msg(a, &members[j], seqs[j],
						       node->kind == DAG_SINK)))
				m->n_members++;
		ck->aggregations[ck->n_aggregations++] = m;
	}
}

/* Sinks whose rows a commit makes durable (a database) commit them
 * now, before position() is read: the writer's fsync covers files only,
 * and a checkpoint must never count a row that is not durable. */
static int commit_sinks(const dag_graph *g, uint64_t released, core_err *err)
{
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		int rc;

		if (n->kind != DAG_SINK || !n->kstate || !n->kops->commit)
			continue;
		if ((rc = n->kops->commit(n->kstate, err)))
			return core_err_prefix(err, "checkpoint after row %llu: sink '%s'",
					       (unsigned long long)released, n->name);
	}
	return 0;
}

/* Sinks: positions, hashes, and the descriptors the writer fsyncs. */
static void add_sinks(arena *a, const dag_graph *g, Elspeth__Checkpoint *ck,
		      int *fds, size_t *nfds)
{
	ck->sinks = alloc(a, g->nnodes * sizeof(*ck->sinks));
	for (size_t i = 0; ck->sinks && i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		Elspeth__CheckpointSink *m;
		plg_sink_pos pos;
		char *hash;

		if (n->kind != DAG_SINK || !n->kstate)
			continue;
		if (!(m = alloc(a, sizeof(*m))) || !(hash = alloc(a, sizeof(pos.hash))))
			return;
		memset(&pos, 0, sizeof(pos));
		n->kops->position(n->kstate, &pos);
		memcpy(hash, pos.hash, sizeof(pos.hash));
		elspeth__checkpoint_sink__init(m);
		m->node_id = (uint32_t)i;
		m->name = (char *)n->name;
		m->path = (char *)dag_sink_target(g, n);
		m->start = pos.base;
		m->position = pos.pos;
		m->prefix_hash = hash;
		m->rows = pos.rows;
		ck->sinks[ck->n_sinks++] = m;
		if (pos.fd >= 0)
			fds[(*nfds)++] = pos.fd;
	}
}

/* What plugins keep across a crash: transforms' (a throttle) and
 * sources' (0.7.1's fixed field types). */
static json_t *plugin_state(const eng_ctx *c, const dag_node *n)
{
	if (n->kind == DAG_TRANSFORM)
		return n->tstate && n->tops->save ? n->tops->save(n->tstate) : NULL;
	if (n->kind == DAG_SOURCE && c->src && n->sops->save)
		return n->sops->save(eng__sources_inst(c->g, c->src, (unsigned)n->id));
	return NULL;
}

static void add_plugins(arena *a, const eng_ctx *c, Elspeth__Checkpoint *ck)
{
	const dag_graph *g = c->g;

	ck->plugins = alloc(a, g->nnodes * sizeof(*ck->plugins));
	for (size_t i = 0; ck->plugins && i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		Elspeth__CheckpointPlugin *m;
		json_t *saved;

		if (!(saved = plugin_state(c, n)))
			continue;
		if (!(m = alloc(a, sizeof(*m)))) {
			json_decref(saved);
			return;
		}
		elspeth__checkpoint_plugin__init(m);
		m->node_id = (uint32_t)i;
		m->name = (char *)n->name;
		m->state_json = track(a, json_dumps(saved, JSON_COMPACT | JSON_SORT_KEYS));
		json_decref(saved);
		ck->plugins[ck->n_plugins++] = m;
	}
}

static void add_totals(arena *a, eng_ctx *c, Elspeth__Checkpoint *ck,
		       const eng_summary *sum)
{
	const dag_graph *g = c->g;
	Elspeth__CheckpointTotals *t = alloc(a, sizeof(*t));
	uint64_t *classes = alloc(a, ENG_CALL_CLASSES * sizeof(*classes));

	if (!t || !classes)
		return;
	elspeth__checkpoint_totals__init(t);
	t->calls = atomic_load(&c->calls);
	t->calls_ok = atomic_load(&c->calls_ok);
	t->calls_replayed = atomic_load(&c->calls_replayed);
	for (size_t i = 0; i < ENG_CALL_CLASSES; i++)
		classes[i] = atomic_load(&c->calls_by_class[i]);
	t->n_calls_by_class = ENG_CALL_CLASSES;
	t->calls_by_class = classes;
#define SAVE(f) t->f = sum->f;
	ENG_CKPT_TOTALS(SAVE)
#undef SAVE
	t->n_outcomes = ENG_OUTCOME_LAST;
	t->outcomes = (uint64_t *)sum->outcomes;
	t->n_per_sink = g->nnodes;
	t->per_sink = sum->per_sink;
	ck->totals = t;
}

int eng__ckpt_write(eng_ctx *c, const eng_ckpt_at *at, const eng_summary *sum,
		    core_err *err)
{
	Elspeth__Checkpoint ck = ELSPETH__CHECKPOINT__INIT;
	const eng_audit *au = c->audit;
	arena a = { 0 };
	size_t nfds = 0;
	int *fds, rc;

	if (!c->ckpt || !au->rec)
		return 0;
	if ((rc = commit_sinks(c->g, at->released, err)))
		return rc;
	if (!(fds = calloc(c->g->nnodes + 1, sizeof(*fds))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	ck.format_version = REC_CKPT_FORMAT_VERSION;
	ck.run_id = au->run_id;
	ck.attempt = c->ckpt->attempt;
	ck.reason = (char *)at->reason;
	ck.created_at_ns = core_now_wall_ns();
	ck.released_through_seq = at->released;
	ck.pulled_through_seq = at->frontier;
	ck.has_source_pos = at->has_pos;
	ck.source_offset = at->has_pos ? at->pos.offset : 0;
	ck.source_line = at->has_pos ? at->pos.line : 0;
	ck.source_pos_source = at->has_pos ? at->pos.source : 0;
	ck.source_pos_index = at->has_pos ? at->pos.index : 0;
	ck.source_done = at->source_done;
	ck.topology_hash = (char *)au->topology_hash;
	ck.config_hash = (char *)c->g->settings->config_hash;
	ck.next_token_id = atomic_load(&au->next_token);
	ck.next_state_id = atomic_load(&au->next_state);
	ck.next_batch_id = atomic_load(&au->next_batch);
	add_rows(&a, &ck, at);
	add_aggregations(&a, c, &ck);
	add_sinks(&a, c->g, &ck, fds, &nfds);
	add_plugins(&a, c, &ck);
	add_totals(&a, c, &ck, sum);
	if (a.oom)
		rc = core_err_set(err, CORE_ENOMEM, "checkpoint: out of memory");
	else if ((rc = rec_ckpt_put(au->rec, &ck, fds, nfds, &c->ckpt->gen))) {
		/* The store's own error says why and where (a full disk). */
		if (rec_error(au->rec, err))
			core_err_prefix(err, "checkpoint after row %llu",
					(unsigned long long)at->released);
		else
			core_err_set(err, rc, "checkpoint after row %llu: cannot enqueue it: %s",
				     (unsigned long long)at->released, core_strerror(rc));
	}
	arena_free(&a);
	free(fds);
	if (!rc) {
		c->ckpt->last = at->released;
		c->ckpt->batches = sum->batches;
		c->ckpt->written++;
		atomic_fetch_add_explicit(&c->ckpts, 1, memory_order_relaxed);
	}
	return rc;
}

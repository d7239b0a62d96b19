/*
 * aggregate.c — aggregations on the release side (docs/architecture.md §7).
 *
 * Tokens reach an aggregation in release order, which is seq order in
 * every mode, so count-triggered batches hold the same rows whatever the
 * number of rows in flight. A batch flushes on `count`, on a `condition`
 * over batch_count and batch_age_seconds (checked as members arrive), on
 * `timeout_seconds` (on the monotonic clock, even when no row arrives:
 * the calling thread's supervise() fires due timeouts under the release
 * role, and sequential mode checks between rows; engine/pipeline.c), and
 * at the end of the source. Its outputs are released at once: at the
 * position of the row that triggered the flush.
 *
 * Held sinks: ELSPETH 0.7.1 writes every sink's rows at the end of its
 * run, each sink's sorted (stably) by outcome, path and error_hash, so
 * the rows an on_error route sends are in the order of their errors'
 * hashes, not the source's. In a 0.7.1-format run a sink that an
 * on_error names is held: its tokens wait in a buffer like an
 * aggregation's (in checkpoints too) and are written, sorted so, at the
 * end of the run, after the aggregations' last flushes (ADR 0048).
 *
 * Only the holder of the release role touches this state (one thread at
 * a time, not always the same one; ADR 0009).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

typedef struct agg_buf {
	dag_node *node;         /* the aggregation, or the held sink */
	bool hold;              /* a held sink's buffer */
	eng_token *members;     /* owned tokens, in seq order */
	uint64_t *seqs;
	size_t n, cap;
	uint64_t first_mono;    /* when the first member arrived */
	uint64_t accepted;      /* members taken in the run so far */
	uint64_t flushes;       /* batches flushed in the run so far */
} agg_buf;

struct eng_aggs {
	agg_buf *bufs;
	size_t nbufs;
	bool *held;             /* by node: a held sink (emit's test per token) */
};

int eng__aggs_init(eng_ctx *c, core_err *err)
{
	eng_aggs *a = calloc(1, sizeof(*a));

	if (!a)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	a->bufs = calloc(c->g->nnodes, sizeof(*a->bufs));
	a->held = calloc(c->g->nnodes, sizeof(*a->held));
	if (!a->bufs || !a->held) {
		free(a->bufs);
		free(a->held);
		free(a);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < c->g->nnodes; i++)
		if (c->g->nodes[i].kind == DAG_AGGREGATION)
			a->bufs[a->nbufs++].node = &c->g->nodes[i];
	for (size_t i = 0; i < c->g->nnodes; i++)
		if ((a->held[i] = dag_sink_held(c->g, (int)i))) {
			a->bufs[a->nbufs].node = &c->g->nodes[i];
			a->bufs[a->nbufs++].hold = true;
		}
	c->aggs = a;
	return 0;
}

static void buf_clear(agg_buf *b)
{
	for (size_t i = 0; i < b->n; i++) {
		json_decref(b->members[i].data);
		free(b->members[i].error);
	}
	b->n = 0;
}

void eng__aggs_free(eng_ctx *c)
{
	if (!c->aggs)
		return;
	for (size_t i = 0; i < c->aggs->nbufs; i++) {
		buf_clear(&c->aggs->bufs[i]);
		free(c->aggs->bufs[i].members);
		free(c->aggs->bufs[i].seqs);
	}
	free(c->aggs->bufs);
	free(c->aggs->held);
	free(c->aggs);
	c->aggs = NULL;
}

static agg_buf *buf_of(eng_ctx *c, int node)
{
	for (size_t i = 0; i < c->aggs->nbufs; i++)
		if (c->aggs->bufs[i].node->id == node)
			return &c->aggs->bufs[i];
	return NULL;
}

/* ------------------------------------------------------------- flushing */

/* A failed batch: every member goes to on_error (or fails). */
static int batch_failed(eng_ctx *c, agg_buf *b, uint64_t seq, eng_summary *sum,
			core_err *err)
{
	const dag_node *n = b->node;
	eng_result res = { .seq = seq, .batch = true };
	char msg[sizeof(err->msg)];
	int rc = 0;

	if (n->on_error == DAG_NONE)
		return core_err_prefix(err, "aggregation '%s' (batch flushed at row %llu) "
			"failed and has no on_error", n->name, (unsigned long long)seq);
	snprintf(msg, sizeof(msg), "%s", err->msg);
	for (size_t i = 0; i < b->n && !rc; i++) {
		eng_token t = b->members[i];
		const dag_node *to = n->on_error >= 0 ? &c->g->nodes[n->on_error] : NULL;
		json_t *data = to ? eng__with_error(t.data, to, n->name, msg)
				  : json_copy(t.data);

		t.data = data;
		t.error = strdup(msg);
		t.outcome = n->on_error == DAG_DISCARD ? ENG_FAILED : ENG_ROUTED;
		t.to = n->on_error == DAG_DISCARD ? ENG_TO_DISCARD : ENG_TO_SINK;
		t.node = n->on_error;
		t.step++; /* it visited the aggregation (member_states' step) */
		t.home = b->seqs[i]; /* its records stay in its row's story */
		if (c->g->settings->format == CORE_FORMAT_V07)
			eng__order_key(NULL, msg, t.order_key);
		rc = eng__audit_payload(c->audit, t.home, data, t.hash, err);
		if (!rc && (rc = eng__result_add(&res, &t)))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		if (rc) {
			json_decref(data);
			free(t.error);
		}
	}
	if (!rc)
		rc = eng__emit(c, &res, sum, err);
	eng__result_release(&res);
	return rc;
}

/* Each member's visit to the aggregation, as a node state: st[i] set up
 * (its id reserved) before the flush, recorded after it. */
static void member_states(eng_ctx *c, agg_buf *b, eng_state *st)
{
	for (size_t i = 0; i < b->n; i++) {
		eng_token *m = &b->members[i];

		st[i] = (eng_state){ .id = eng__audit_state_id(c->audit),
				     .seq = b->seqs[i], .token_id = m->token_id,
				     .node = b->node->id, .step = m->step + 1,
				     .ok = true, .in_hash = m->hash,
				     .out_hash = m->hash,
				     .started_ns = core_now_wall_ns() };
	}
}

static void record_members(eng_ctx *c, agg_buf *b, uint64_t batch,
			   const eng_state *st)
{
	char ctx[64];

	snprintf(ctx, sizeof(ctx), "{\"batch_id\":%llu}", (unsigned long long)batch);
	for (size_t i = 0; i < b->n; i++) {
		eng_state s = st[i];

		if (!s.context_json)
			s.context_json = ctx;
		s.completed_ns = core_now_wall_ns();
		eng__audit_state(c->audit, &s);
	}
}

/* What a plugin that calls out leaves in a member's context (its calls'
 * statistics), with the batch id: the member's node-state context, a
 * malloc'd string in st->context_json (NULL: none). */
static void keep_context(plg_ctx *ctx, uint64_t batch, eng_state *st)
{
	if (!ctx->context)
		return;
	json_object_set_new(ctx->context, "batch_id", json_integer((json_int_t)batch));
	st->context_json = json_dumps(ctx->context, JSON_COMPACT | JSON_SORT_KEYS |
				      JSON_REAL_PRECISION(9));
	json_decref(ctx->context);
	ctx->context = NULL;
}

/* The plugin's outputs for the batch; a plugin that calls out gets each
 * member's call context. */
static int run_flush(eng_ctx *c, agg_buf *b, uint64_t batch, json_t **rows,
		     eng_state *st, const char *trigger, json_t **outs, core_err *err)
{
	const dag_node *n = b->node;
	eng_call_ctx *cc;
	plg_ctx **ctx;
	int rc = 0;

	if (n->aops->flush_batch) {
		plg_batch info = { .flush_index = b->flushes + 1,
			.rows_seen_total = b->accepted, .batch_size = b->n,
			.row_start = b->accepted - b->n + 1, .row_end = b->accepted,
			.trigger = trigger,
			.end_of_source = !strcmp(trigger, "end_of_source") };

		return n->aops->flush_batch(n->astate, rows, b->n, n->agg->passthrough,
					    &info, outs, err);
	}
	if (!n->aops->flush_calls)
		return n->aops->flush(n->astate, rows, b->n, n->agg->passthrough,
				      outs, err);
	cc = calloc(b->n, sizeof(*cc));
	ctx = calloc(b->n, sizeof(*ctx));
	if (!cc || !ctx)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; cc && ctx && i < b->n; i++) {
		eng__call_ctx_init(&cc[i], c, &st[i], c->stop);
		ctx[i] = &cc[i].base;
	}
	if (cc && ctx)
		rc = n->aops->flush_calls(n->astate, rows, b->n, n->agg->passthrough,
					  ctx, outs, err);
	for (size_t i = 0; cc && ctx && i < b->n; i++)
		keep_context(ctx[i], batch, &st[i]);
	free(ctx);
	free(cc);
	return rc;
}

/* The outputs walk on from the aggregation and are emitted now. */
static int emit_outputs(eng_ctx *c, agg_buf *b, uint64_t seq, json_t *outs,
			eng_summary *sum, core_err *err)
{
	const dag_node *n = b->node;
	eng_result res = { .seq = seq, .batch = true };
	size_t i;
	json_t *row;
	int rc = 0;

	json_array_foreach(outs, i, row) {
		eng_hash h;
		uint64_t id, home = seq;
		unsigned step = 0;

		if (n->agg->passthrough) {
			/* a member walks on: its records stay in its row */
			id = b->members[i].token_id;
			home = b->seqs[i];
			step = b->members[i].step + 1;
		} else {
			id = eng__audit_token(c->audit, seq, 0, 0, NULL);
			for (size_t m = 0; m < b->n; m++) {
				eng__audit_parent(c->audit, seq, id, b->members[m].token_id,
						  (unsigned)m);
				if (b->members[m].step + 1 > step)
					step = b->members[m].step + 1;
			}
		}
		if ((rc = eng__audit_payload(c->audit, home, row, h, err)) ||
		    (rc = eng__walk_from(c, home, id, json_incref(row), h, step,
					 n->next, &res, err)))
			break;
	}
	if (!rc)
		rc = eng__emit(c, &res, sum, err);
	eng__result_release(&res);
	return rc;
}

static int flush(eng_ctx *c, agg_buf *b, const char *trigger, uint64_t seq,
		 eng_summary *sum, core_err *err)
{
	const dag_node *n = b->node;
	json_t **rows, *outs = NULL;
	uint64_t *ids, batch;
	eng_state *st;
	int rc;

	if (!b->n)
		return 0;
	rows = calloc(b->n, sizeof(*rows));
	ids = calloc(b->n, sizeof(*ids));
	st = calloc(b->n, sizeof(*st));
	if (!rows || !ids || !st) {
		free(rows);
		free(ids);
		free(st);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < b->n; i++) {
		rows[i] = b->members[i].data;
		ids[i] = b->members[i].token_id;
	}
	batch = eng__audit_batch(c->audit, n->id, trigger, seq, ids, b->n,
				 core_now_wall_ns());
	member_states(c, b, st);
	sum->batches++;
	rc = run_flush(c, b, batch, rows, st, trigger, &outs, err);
	b->flushes += !rc; /* a failed batch is no page (report_assemble) */
	for (size_t i = 0; rc && i < b->n; i++) {
		st[i].ok = false; /* each member's visit failed with the batch */
		st[i].error = err->msg;
		st[i].out_hash = NULL;
	}
	record_members(c, b, batch, st);
	for (size_t i = 0; n->aops->flush_calls && i < b->n; i++)
		free((char *)st[i].context_json); /* keep_context's */
	if (!rc && n->agg->passthrough && json_array_size(outs) != b->n)
		rc = core_err_set(err, CORE_EDATA,
			"aggregation '%s': passthrough gave %zu rows for %zu members",
			n->name, json_array_size(outs), b->n);
	if (rc) {
		rc = batch_failed(c, b, seq, sum, err);
	} else {
		for (size_t i = 0; i < b->n && !n->agg->passthrough; i++) {
			eng_token *m = &b->members[i];

			m->outcome = ENG_CONSUMED_IN_BATCH;
			sum->outcomes[ENG_CONSUMED_IN_BATCH]++;
			eng__audit_outcome(c->audit, b->seqs[i], m);
		}
		rc = emit_outputs(c, b, seq, outs, sum, err);
	}
	json_decref(outs);
	free(rows);
	free(ids);
	free(st);
	buf_clear(b);
	return rc;
}

/* Takes t (its data and error) as the buffer's next member; the first
 * member starts the buffer's age at age_ns (0: now). */
static int buf_push(agg_buf *b, uint64_t seq, eng_token *t, uint64_t age_ns,
		    core_err *err)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		eng_token *m = realloc(b->members, cap * sizeof(*m));
		uint64_t *s = m ? realloc(b->seqs, cap * sizeof(*s)) : NULL;

		if (m)
			b->members = m;
		if (!m || !s)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		b->seqs = s;
		b->cap = cap;
	}
	if (!b->n) {
		uint64_t now = core_now_mono_ns();

		b->first_mono = now > age_ns ? now - age_ns : 0;
	}
	b->seqs[b->n] = seq;
	b->members[b->n++] = *t;
	t->data = NULL; /* the buffer owns it now */
	t->error = NULL;
	return 0;
}

/* ---------------------------------------------------------- held sinks */

void eng__order_key(const json_t *reason, const char *msg, char key[17])
{
	uint8_t h[CORE_SHA256_LEN];
	core_buf b = { 0 };

	/* 0.7.1 hashes str(reason): a dict as its repr, in the plugin's key
	 * order; an empty message as a marker (engine/_error_hash.py) */
	if (reason && !core_py_str(&b, reason) && b.len)
		core_sha256(b.data, b.len, h);
	else if (msg && *msg)
		core_sha256(msg, strlen(msg), h);
	else
		core_sha256("<no-message:TransformError>", 27, h);
	core_buf_release(&b);
	for (int i = 0; i < 8; i++)
		snprintf(key + 2 * i, 3, "%02x", h[i]);
}

bool eng__held_sink(const eng_ctx *c, int node)
{
	return c->aggs && node >= 0 && (size_t)node < c->g->nnodes && c->aggs->held[node];
}

int eng__hold_accept(eng_ctx *c, uint64_t seq, eng_token *t, core_err *err)
{
	agg_buf *b = buf_of(c, t->node);
	int rc;

	if (!b || !b->hold)
		return core_err_set(err, CORE_EINTERNAL, "no held sink %d", t->node);
	if (!(rc = buf_push(b, seq, t, 0, err)))
		b->accepted++;
	return rc;
}

/* 0.7.1's (outcome, path) of a token that reaches a sink, as a rank in
 * its sort order: failure/on_error_routed, failure/quarantined_at_source,
 * success/default_flow, success/gate_routed. */
static int path_rank(const eng_token *t)
{
	switch (t->outcome) {
	case ENG_QUARANTINED:
		return 1;
	case ENG_COMPLETED:
		return 2;
	case ENG_ROUTED:
		return t->error ? 0 : 3;
	default:
		return 4;
	}
}

typedef struct held {
	int rank;
	const char *key;
	size_t i;
} held;

static int held_cmp(const void *pa, const void *pb)
{
	const held *x = pa, *y = pb;
	int d = x->rank - y->rank;

	if (!d)
		d = strcmp(x->key, y->key);
	return d ? d : (x->i > y->i) - (x->i < y->i); /* stable: release order */
}

/* Writes a held sink's tokens, sorted as 0.7.1 sorts them. On a failed
 * write the run fails without a last checkpoint: the resume starts from
 * the one before, which holds them all, and cuts the sink back to it. */
static int hold_flush(eng_ctx *c, agg_buf *b, eng_summary *sum, core_err *err)
{
	held *order;
	int rc = 0;

	if (!b->n)
		return 0;
	if (!(order = malloc(b->n * sizeof(*order))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->n; i++)
		order[i] = (held){ path_rank(&b->members[i]), b->members[i].order_key, i };
	qsort(order, b->n, sizeof(*order), held_cmp);
	for (size_t i = 0; i < b->n && !rc; i++)
		rc = eng__write_token(c, b->seqs[order[i].i], &b->members[order[i].i],
				      sum, err);
	free(order);
	b->flushes += !rc;
	buf_clear(b);
	return rc;
}

/* ------------------------------------------------------------- triggers */

static bool condition_fires(agg_buf *b, core_err *err, int *rc)
{
	double age = (double)(core_now_mono_ns() - b->first_mono) / 1e9;
	json_t *ctx = json_pack("{s:I,s:f}", "batch_count", (json_int_t)b->n,
				"batch_age_seconds", age);
	json_t *v = NULL;
	bool fire = false;

	*rc = expr_eval(b->node->trigger, ctx, &v, err);
	if (!*rc)
		fire = json_is_true(v);
	else
		core_err_prefix(err, "aggregation '%s': trigger condition", b->node->name);
	json_decref(v);
	json_decref(ctx);
	return fire;
}

int eng__agg_accept(eng_ctx *c, uint64_t seq, eng_token *t, eng_summary *sum,
		    core_err *err)
{
	agg_buf *b = buf_of(c, t->node);
	const core_aggregation_cfg *a;
	int rc = 0;

	if (!b)
		return core_err_set(err, CORE_EINTERNAL, "no aggregation %d", t->node);
	a = b->node->agg;
	if ((rc = buf_push(b, seq, t, 0, err)))
		return rc;
	b->accepted++;
	if (a->trigger_count && b->n >= (size_t)a->trigger_count)
		return flush(c, b, "count", seq, sum, err);
	if (b->node->trigger && condition_fires(b, err, &rc))
		return flush(c, b, "condition", seq, sum, err);
	return rc;
}

int eng__aggs_tick(eng_ctx *c, uint64_t now_ns, uint64_t seq, bool all,
		   eng_summary *sum, core_err *err)
{
	bool again = all;
	int rc = 0;

	/* At the end of the source a flush may feed an aggregation that was
	 * flushed before it in this pass: repeat until every buffer is empty
	 * (the graph is acyclic, so this ends). */
	while (again && !rc) {
		again = false;
		for (size_t i = 0; c->aggs && i < c->aggs->nbufs && !rc; i++) {
			agg_buf *b = &c->aggs->bufs[i];

			if (b->n && !b->hold) {
				rc = flush(c, b, "end_of_source", seq, sum, err);
				again = true;
			}
		}
	}
	/* The held sinks last: the flushes above may have sent them rows. */
	for (size_t i = 0; all && c->aggs && i < c->aggs->nbufs && !rc; i++)
		if (c->aggs->bufs[i].hold)
			rc = hold_flush(c, &c->aggs->bufs[i], sum, err);
	if (all)
		return rc;
	for (size_t i = 0; c->aggs && i < c->aggs->nbufs && !rc; i++) {
		agg_buf *b = &c->aggs->bufs[i];
		double t;

		if (!b->n || b->hold)
			continue;
		t = b->node->agg->trigger_timeout;
		if (t > 0 && now_ns >= b->first_mono + (uint64_t)(t * 1e9))
			rc = flush(c, b, "timeout", seq, sum, err);
	}
	return rc;
}

uint64_t eng__aggs_deadline(eng_ctx *c)
{
	uint64_t best = 0;

	for (size_t i = 0; c->aggs && i < c->aggs->nbufs; i++) {
		agg_buf *b = &c->aggs->bufs[i];
		double t = b->hold ? 0 : b->node->agg->trigger_timeout;
		uint64_t d;

		if (!b->n || t <= 0)
			continue;
		d = b->first_mono + (uint64_t)(t * 1e9);
		if (!best || d < best)
			best = d;
	}
	return best;
}

bool eng__aggs_timed(const eng_ctx *c)
{
	for (size_t i = 0; c->aggs && i < c->aggs->nbufs; i++)
		if (!c->aggs->bufs[i].hold && c->aggs->bufs[i].node->agg->trigger_timeout > 0)
			return true;
	return false;
}

/* ---------------------------------------------------------- checkpoints */

size_t eng__aggs_count(const eng_ctx *c)
{
	return c->aggs ? c->aggs->nbufs : 0;
}

const dag_node *eng__aggs_get(const eng_ctx *c, size_t i,
			      const eng_token **members, const uint64_t **seqs,
			      size_t *n, uint64_t *age_ns)
{
	const agg_buf *b = &c->aggs->bufs[i];

	*members = b->members;
	*seqs = b->seqs;
	*n = b->n;
	*age_ns = b->n ? core_now_mono_ns() - b->first_mono : 0;
	return b->node;
}

/* Puts a member back (resume), as eng__agg_accept would have, but fires
 * no trigger: the buffer held it at the checkpoint. The buffer's age is
 * age_ns (timeouts keep counting from when its first member came). */
int eng__aggs_put_back(eng_ctx *c, uint64_t seq, eng_token *t, uint64_t age_ns,
		       core_err *err)
{
	agg_buf *b = buf_of(c, t->node);

	if (!b)
		return core_err_set(err, CORE_EDATA,
			"the checkpoint names aggregation node %d, which the pipeline lacks",
			t->node);
	return buf_push(b, seq, t, age_ns, err);
}

void eng__aggs_counts(const eng_ctx *c, size_t i, uint64_t *accepted,
		      uint64_t *flushes)
{
	*accepted = c->aggs->bufs[i].accepted;
	*flushes = c->aggs->bufs[i].flushes;
}

int eng__aggs_set_counts(eng_ctx *c, int node, uint64_t accepted,
			 uint64_t flushes, core_err *err)
{
	agg_buf *b = buf_of(c, node);

	if (!b)
		return core_err_set(err, CORE_EDATA,
			"the checkpoint names aggregation node %d, which the pipeline lacks",
			node);
	b->accepted = accepted;
	b->flushes = flushes;
	return 0;
}

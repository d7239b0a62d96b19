/*
 * walk.c — stage 2: one row's tokens through the graph, in one worker.
 *
 * A token walks node to node. A transform error is retried per `retry`
 * when retryable, then routed to on_error with the error attached (ADR
 * 0003). A gate routes by its condition; a route to "fork" makes one child
 * per branch, each walked to its end, depth first in branch order — so a
 * row's terminal tokens come out in a fixed order (fork branch order, then
 * creation order) in every mode. A branch that reaches a coalesce parks
 * there; when all children of the fork have been walked, the fork's groups
 * are resolved (coalesce.c) and the merged tokens walk on. An expanding
 * transform walks each child the same way. Tokens that reach a sink or an
 * aggregation become terminal tokens for release.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/walk_internal.h"

#define MAX_HOPS 10000 /* the graph is acyclic; this guards bugs */

static int terminal(walker *w, const tok *t, eng_dest_kind to, int node,
		    eng_outcome how, json_t *data, const char *error)
{
	eng_token e = { .token_id = t->id, .to = to, .node = node,
			.outcome = how, .data = data, .step = t->step,
			.branch = t->branch, .home = w->seq };
	int rc;

	memcpy(e.hash, t->hash, sizeof(e.hash));
	e.error = error ? strdup(error) : NULL;
	rc = eng__result_add(w->res, &e);
	if (rc) {
		json_decref(data);
		free(e.error);
		return core_err_set(w->err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

/* A copy of row with the error attached as `_error_node` and `_error`,
 * unless the sink takes only its fixed schema's fields: then the row as it
 * is, as ELSPETH writes it (the error is in the audit trail either way). */
json_t *eng__with_error(const json_t *row, const dag_node *sink,
			const char *node, const char *msg)
{
	json_t *out = json_is_object(row) ? json_copy((json_t *)row) : json_object();

	if (!out || sink->bare_errors)
		return out;
	json_object_set_new(out, "_error_node", json_string(node));
	json_object_set_new(out, "_error", json_string(msg));
	return out;
}

int eng__walk_error(walker *w, tok *t, int to, eng_outcome how,
		    const char *node, const char *msg)
{
	json_t *data;

	if (to == DAG_DISCARD || to == DAG_NONE)
		return terminal(w, t, ENG_TO_DISCARD, DAG_NONE, how, NULL, msg);
	data = eng__with_error(t->data, &w->c->g->nodes[to], node, msg);
	if (!data)
		return core_err_set(w->err, CORE_ENOMEM, "out of memory");
	if (eng__audit_payload(w->c->audit, w->seq, data, t->hash, w->err)) {
		json_decref(data);
		return w->err->code;
	}
	if (terminal(w, t, ENG_TO_SINK, to, how, data, msg))
		return w->err->code;
	/* A 0.7.1-format run writes an error sink's rows in the order of
	 * their error's hash (aggregate.c, "Held sinks"). */
	if (w->c->g->settings->format == CORE_FORMAT_V07) {
		eng_token *e = &w->res->tokens[w->res->ntokens - 1];

		if (w->reason_key[0])
			memcpy(e->order_key, w->reason_key, sizeof(e->order_key));
		else if (how != ENG_QUARANTINED) /* a source's: only 0.7.1's own */
			eng__order_key(NULL, msg, e->order_key);
	}
	w->reason_key[0] = '\0';
	return 0;
}

/* Records the outcome of a token that goes no further (FORKED, EXPANDED,
 * COALESCED, or FAILED when the run stops on it). */
void eng__walk_outcome(walker *w, const tok *t, eng_outcome o, const char *error)
{
	eng_token e = { .token_id = t->id, .to = ENG_TO_DISCARD, .node = DAG_NONE,
			.outcome = o, .error = (char *)error, .branch = t->branch };

	eng__audit_outcome(w->c->audit, w->seq, &e);
}

/* ------------------------------------------------------------ transforms */

/* Debug builds: a transform that returned its input object has not
 * changed it (its output hash is taken from the input, ADR 0014). A
 * plugin that does is a programming error, like a failed assert. */
static void check_unchanged(const char *node, const json_t *v, const char *hash)
{
#ifndef NDEBUG
	char hex[CORE_SHA256_HEX_LEN + 1];

	if (core_hash_json(v, hex, NULL) || strcmp(hex, hash)) {
		fprintf(stderr, "elspeth: transform '%s' returned its input object "
			"changed; plugins must not change their input\n", node);
		abort();
	}
#else
	(void)node;
	(void)v;
	(void)hash;
#endif
}

/* Waits until the backoff of `attempt` has passed since `from` (taken
 * before the engine's blocking hook, which may do work for other rows). */
static void backoff_sleep(const core_retry_cfg *r, unsigned attempt,
			  atomic_int *stop, uint64_t seq, uint64_t from)
{
	double d = r->initial_delay_seconds * pow(r->exponential_base, attempt);
	uint64_t end, x = seq * 0x9e3779b97f4a7c15ull + attempt;

	if (d > r->max_delay_seconds)
		d = r->max_delay_seconds;
	/* Jitter: 50–100 % of the delay, so retries of many rows spread. */
	x ^= x >> 31;
	d *= 0.5 + 0.5 * (double)(x % 1000) / 1000.0;
	end = from + (uint64_t)(d * 1e9);
	while (core_now_mono_ns() < end && !(stop && *stop)) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* The stop flag this walk heeds (NULL: none). */
static atomic_int *walk_stop(const walker *w)
{
	return w->no_stop ? NULL : w->c->stop;
}

/* What a transform gets for one attempt: its calls are recorded under
 * the attempt's node state, whose id is reserved before it runs. */
typedef eng_call_ctx call_ctx;

void eng__blocking(eng_ctx *c, bool begin)
{
	if (c->blocking)
		c->blocking(c->blocking_arg, begin);
}

static void ctx_blocking(plg_ctx *ctx, bool begin)
{
	eng__blocking(((call_ctx *)ctx)->c, begin);
}

/* The failure classes of plugins.h in their order (checkpoints keep the
 * counts by index), then "other": class k counts at k - 1. */
_Static_assert(ENG_CALL_CLASSES == PLG_CLASS_LAST,
	       "eng_call_classes: one per failure class, and other");
#define CALL_CLASS_NAME(cls, name) name,
const char *const eng_call_classes[ENG_CALL_CLASSES] = {
	PLG_ERROR_CLASS_MAP(CALL_CLASS_NAME)
	"other"
};
#undef CALL_CLASS_NAME

static void count_call(eng_ctx *c, const plg_call *call)
{
	plg_error_class k;
	size_t i;

	if (call->replayed_from) { /* not sent: not a call made */
		atomic_fetch_add(&c->calls_replayed, 1);
		return;
	}
	atomic_fetch_add(&c->calls, 1);
	if (call->ok) {
		atomic_fetch_add(&c->calls_ok, 1);
		return;
	}
	k = plg_error_class_of(call->error_class);
	i = k > PLG_CLASS_OK && k < PLG_CLASS_LAST ? (size_t)k - 1
						   : ENG_CALL_CLASSES - 1;
	atomic_fetch_add(&c->calls_by_class[i], 1);
}

static unsigned record_call(plg_ctx *ctx, const plg_call *call)
{
	call_ctx *cc = (call_ctx *)ctx;
	unsigned i = atomic_fetch_add(&cc->next_call, 1);

	count_call(cc->c, call);
	eng__audit_call(cc->audit, cc->st, cc->base.seq, i, call);
	return i;
}

/* plg_ctx.halt: the run stops (run.c); any thread, while process()
 * runs — the ctx lives on the stack of attempt(). */
static void ctx_halt(plg_ctx *ctx, int exit_code, const char *msg)
{
	eng__halt(((call_ctx *)ctx)->c, exit_code, msg);
}

/* plg_ctx.replay: a resumed row's answers from the crashed attempt. */
static bool ctx_replay(plg_ctx *ctx, const void *req, size_t len, char **resp,
		       size_t *resp_len, const char **from)
{
	call_ctx *cc = (call_ctx *)ctx;

	return eng__replay_find(cc->c, cc->base.seq, cc->st->node, req, len,
				resp, resp_len, from);
}

void eng__call_ctx_init(eng_call_ctx *cc, eng_ctx *c, const eng_state *st,
			atomic_int *stop)
{
	memset(cc, 0, sizeof(*cc));
	cc->base = (plg_ctx){ .seq = st->seq, .retry = &c->g->settings->retry,
			      .stop = stop, .record_call = record_call,
			      .halt = ctx_halt };
	cc->c = c;
	cc->audit = c->audit;
	cc->st = st;
}

/* One attempt, recorded as a node state. On success *out is set and, for
 * a plain transform, t->hash is the output's. */
static int attempt(walker *w, tok *t, const dag_node *n, unsigned try,
		   json_t **out)
{
	eng_audit *a = w->c->audit;
	eng_hash oh = "";
	eng_state st = { .seq = w->seq, .token_id = t->id, .node = n->id,
			 .step = t->step, .attempt = try, .in_hash = t->hash, .out_hash = oh };
	call_ctx cc = { .base = { .seq = w->seq, .retry = &w->c->g->settings->retry,
				  .stop = walk_stop(w), .record_call = record_call,
				  .blocking = ctx_blocking, .halt = ctx_halt,
				  .replay = w->c->replay ? ctx_replay : NULL },
			.c = w->c, .audit = a, .st = &st };
	char *context = NULL;
	uint64_t sid;
	int rc;

	st.id = eng__audit_state_id(a);
	st.started_ns = core_now_wall_ns();
	w->err->retryable = false;
	w->reason_key[0] = '\0';
	rc = n->tops->process(n->tstate, t->data, out, &cc.base, w->err);
	if (cc.base.context) {
		context = json_dumps(cc.base.context, JSON_COMPACT | JSON_SORT_KEYS |
				     JSON_REAL_PRECISION(9));
		st.context_json = context;
	}
	/* A transform that passes its input on (delay, passthrough) returns
	 * the same object, unchanged (it gets it const): its hash is known. */
	if (!rc && a->rec && *out == t->data && t->hash[0]) {
		memcpy(oh, t->hash, sizeof(oh));
		check_unchanged(n->name, *out, t->hash);
	} else if (!rc && a->rec && eng__audit_payload(a, w->seq, *out, oh, w->err)) {
		json_decref(*out);
		json_decref(cc.base.context);
		free(context);
		return core_err_prefix(w->err, "row %llu: transform '%s' output",
				       (unsigned long long)w->seq, n->name);
	}
	st.completed_ns = core_now_wall_ns();
	st.ok = !rc;
	st.error = rc ? w->err->msg : NULL;
	sid = eng__audit_state(a, &st);
	eng__hist_add(w->c, n->id, st.completed_ns - st.started_ns);
	/* One event per transform, for its last attempt (run_transform's
	 * rule: a retryable failure with attempts left goes again). */
	if (eng__wants(a, ENG_EV_TRANSFORM) &&
	    (!rc || !w->err->retryable || try + 1 >= (unsigned)w->c->g->settings->retry.max_attempts ||
	     (cc.base.stop && *cc.base.stop))) {
		eng_event ev = { .kind = ENG_EV_TRANSFORM, .row = w->seq, .token = t->id,
				 .node = n, .ok = !rc, .error = rc ? w->err->msg : NULL,
				 .duration_ns = st.completed_ns - st.started_ns,
				 .in_hash = t->hash, .out_hash = rc ? NULL : oh };

		eng__event(a, &ev);
	}
	if (rc) {
		eng__audit_transform_error(a, &st, sid, w->err);
		if (w->c->g->settings->format == CORE_FORMAT_V07)
			eng__order_key(cc.base.context ? json_object_get(cc.base.context,
					"error_reason") : NULL, w->err->msg, w->reason_key);
	} else if (!n->tops->expands)
		memcpy(t->hash, oh, sizeof(oh));
	json_decref(cc.base.context);
	free(context);
	return rc;
}

static int walk(walker *w, tok *t, dag_dest at, eng_outcome how);

/* Each element of an expanding transform's output is a child token. */
static int expand(walker *w, tok *t, const dag_node *n, json_t *outs)
{
	size_t i;
	json_t *row;
	int rc = 0;

	eng__walk_outcome(w, t, ENG_EXPANDED, NULL);
	json_array_foreach(outs, i, row) {
		tok child = *t;

		child.data = json_incref(row);
		child.id = eng__audit_token(w->c->audit, w->seq, t->id, (unsigned)i, t->branch);
		if ((rc = eng__audit_payload(w->c->audit, w->seq, row, child.hash, w->err)) ||
		    (rc = walk(w, &child, n->next, ENG_COMPLETED)))
			break;
	}
	return rc;
}

/* Runs a transform with retries. *done when the token's walk ends here. */
static int run_transform(walker *w, tok *t, const dag_node *n, bool *done)
{
	const core_retry_cfg *r = &w->c->g->settings->retry;
	atomic_int *stop = walk_stop(w);
	json_t *out = NULL;
	unsigned try = 0;
	uint64_t from;
	int rc;

	t->step++;
	while ((rc = attempt(w, t, n, try, &out))) {
		if (!w->err->retryable || try + 1 >= (unsigned)r->max_attempts)
			break;
		if (stop && *stop) { /* it would have been retried */
			core_err_prefix(w->err, "interrupted before retry %u", try + 2);
			w->err->code = rc = CORE_ESTOPPED;
			break;
		}
		from = core_now_mono_ns();
		eng__blocking(w->c, true);
		backoff_sleep(r, try++, stop, w->seq, from);
		eng__blocking(w->c, false);
		w->res->retries++;
		atomic_fetch_add_explicit(&w->c->retries, 1, memory_order_relaxed);
	}
	/* After a halt (plg_ctx.halt: an exhausted account, say) a row
	 * that fails most likely failed of what halted the run, which no
	 * row can fix: it is cut short like an interrupted one, for the
	 * resume to run again, rather than sent to on_error. Not on the
	 * release side (batch outputs), which cannot leave a row. */
	if (rc && rc != CORE_ESTOPPED && stop && eng__halted(w->c)) {
		core_err_prefix(w->err, "the run was halted");
		w->err->code = rc = CORE_ESTOPPED;
	}
	if (!rc && n->tops->expands) {
		*done = true;
		rc = expand(w, t, n, out);
		json_decref(out);
		return rc;
	}
	if (!rc) {
		json_decref(t->data);
		t->data = out;
		return 0;
	}
	*done = true;
	/* Cut short by an interrupt: with checkpoints, left unfinished for
	 * the resume; without, it fails like any error (nothing would run
	 * it again). */
	if (rc == CORE_ESTOPPED && w->c->ckpt)
		return rc;
	w->res->failed = true;
	if (n->on_error == DAG_NONE)
		return core_err_prefix(w->err,
			"row %llu: transform '%s' failed and has no on_error "
			"(set on_error to a sink or 'discard' to route failing rows)",
			(unsigned long long)w->seq, n->name);
	return eng__walk_error(w, t, n->on_error,
			       n->on_error == DAG_DISCARD ? ENG_FAILED : ENG_ROUTED,
			       n->name, w->err->msg);
}

/* ----------------------------------------------------------------- gates */

/* ELSPETH's GateEvaluated: where the token went — the sink's name, the
 * fork's branches, or "continue" on to a processing node. */
static void gate_event(walker *w, const tok *t, const dag_node *n, const dag_route *r)
{
	static const char *const cont[] = { "continue" };
	const char *sink[1];
	eng_event ev = { .kind = ENG_EV_GATE, .row = w->seq, .token = t->id, .node = n,
			 .mode = "move", .dests = cont, .ndests = 1 };

	if (r->to.node == DAG_FORK) {
		ev.mode = "copy";
		ev.dests = n->fork_branches;
		ev.ndests = n->nfork;
	} else if (r->to.node >= 0 && w->c->g->nodes[r->to.node].kind == DAG_SINK) {
		sink[0] = w->c->g->nodes[r->to.node].name;
		ev.dests = sink;
	}
	eng__event(w->c->audit, &ev);
}

static int run_gate(walker *w, tok *t, const dag_node *n, dag_dest *next)
{
	eng_state st = { .seq = w->seq, .token_id = t->id, .node = n->id, .step = ++t->step,
			 .in_hash = t->hash, .out_hash = t->hash };
	const dag_route *r = NULL;
	char key[256];
	uint64_t sid;
	int rc;

	st.started_ns = core_now_wall_ns();
	rc = expr_route_key(n->cond, t->data, key, sizeof(key), w->err);
	if (rc)
		core_err_prefix(w->err, "row %llu: gate '%s'",
				(unsigned long long)w->seq, n->name);
	else if (!(r = dag_gate_route(n, key)))
		rc = core_err_set(w->err, CORE_EDATA,
			"row %llu: gate '%s': condition gave '%s' and there is no route for it "
			"(add '%s' under routes)",
			(unsigned long long)w->seq, n->name, key, key);
	st.completed_ns = core_now_wall_ns();
	st.ok = !rc;
	st.error = rc ? w->err->msg : NULL;
	sid = eng__audit_state(w->c->audit, &st);
	eng__hist_add(w->c, n->id, st.completed_ns - st.started_ns);
	if (rc)
		return rc;
	if (eng__wants(w->c->audit, ENG_EV_GATE))
		gate_event(w, t, n, r);
	if (r->to.node != DAG_FORK) {
		eng__audit_route(w->c->audit, w->seq, sid, n, key, key, "move", 0);
		*next = r->to;
		return 0;
	}
	for (size_t i = 0; i < n->nfork; i++)
		eng__audit_route(w->c->audit, w->seq, sid, n, n->fork_branches[i], key,
				 "copy", (unsigned)i);
	next->node = DAG_FORK;
	return 0;
}

/* One child per branch, walked depth first; then the fork's coalesce
 * groups are resolved and their merged tokens walk on. */
static int fork_token(walker *w, tok *t, const dag_node *n)
{
	tok_ctx ctx = { t->branch, t->fork_parent, t->outer };
	int rc = 0;

	eng__walk_outcome(w, t, ENG_FORKED, NULL);
	for (size_t i = 0; i < n->nfork && !rc; i++) {
		tok child = { .data = json_incref(t->data), .step = t->step,
			      .branch = n->fork_branches[i], .fork_parent = t->id,
			      .outer = &ctx };

		memcpy(child.hash, t->hash, sizeof(child.hash));
		child.id = eng__audit_token(w->c->audit, w->seq, t->id, (unsigned)i,
					    child.branch);
		rc = walk(w, &child, n->fork_dest[i], ENG_ROUTED);
	}
	return rc ? rc : eng__coalesce_resolve(w, t->id, &ctx);
}

/* ------------------------------------------------------------------ walk */

/* Walks t (taking its data) from at until it ends. */
static int walk(walker *w, tok *t, dag_dest at, eng_outcome how)
{
	const dag_graph *g = w->c->g;
	int rc = 0;

	for (int hops = 0; hops < MAX_HOPS && !rc; hops++) {
		const dag_node *n = &g->nodes[at.node];
		bool done = false;

		switch (n->kind) {
		case DAG_SINK:
			return terminal(w, t, ENG_TO_SINK, at.node, how, t->data, NULL);
		case DAG_AGGREGATION:
			return terminal(w, t, ENG_TO_AGG, at.node, how, t->data, NULL);
		case DAG_COALESCE:
			if (!(rc = eng__coalesce_arrive(w, t, n, at.port)))
				return 0;
			goto out_done;
		case DAG_TRANSFORM:
			rc = run_transform(w, t, n, &done);
			if (done)
				goto out_done;
			at = n->next;
			how = ENG_COMPLETED;
			break;
		case DAG_GATE:
			if ((rc = run_gate(w, t, n, &at)))
				break;
			if (at.node == DAG_FORK) {
				rc = fork_token(w, t, n);
				goto out_done;
			}
			how = ENG_ROUTED;
			break;
		case DAG_QUEUE: /* passes the token on as it came */
			at = n->next;
			break;
		case DAG_SOURCE:
			rc = core_err_set(w->err, CORE_EINTERNAL,
					  "row %llu: the walk reached the source",
					  (unsigned long long)w->seq);
			break;
		}
	}
	if (!rc)
		rc = core_err_set(w->err, CORE_EINTERNAL, "row %llu: the walk does not end",
				  (unsigned long long)w->seq);
out_done:
	if (rc && rc != CORE_ESTOPPED && !w->failed_recorded) {
		/* The run stops on this row: the token still gets its one
		 * terminal outcome (docs/architecture.md §5.3). */
		w->failed_recorded = true;
		eng__walk_outcome(w, t, ENG_FAILED, w->err->msg);
	}
	json_decref(t->data);
	t->data = NULL;
	return rc;
}

/* --------------------------------------------------------------- entries */

static void walker_done(walker *w)
{
	eng__coalesce_abandon(w);
	free(w->groups);
}

int eng__process_row(eng_ctx *c, eng_row *row, eng_result *res,
		     core_err *err)
{
	walker w = { .c = c, .seq = row->seq, .res = res, .err = err };
	tok t = { 0 };
	int rc;

	res->seq = row->seq;
	if ((rc = eng__audit_row(c->audit, row, &t.id, err)))
		return rc;
	atomic_store_explicit(&row->recorded, true, memory_order_release);
	memcpy(t.hash, row->hash, sizeof(t.hash));
	t.data = json_incref(row->data);
	if (row->error) {
		char msg[1024];
		int to = c->g->nodes[row->source].on_error;

		if (to >= 0 && eng__wants(c->audit, ENG_EV_ROW_CREATED)) {
			eng_event ev = { .kind = ENG_EV_ROW_CREATED, .row = row->seq,
					 .token = t.id, .in_hash = row->hash };

			eng__event(c->audit, &ev);
		}
		/* a 0.7.1-format run sorts its quarantine sink by the hash of
		 * 0.7.1's message, when the source gives it (ADR 0048) */
		if (row->reason && c->g->settings->format == CORE_FORMAT_V07)
			eng__order_key(NULL, row->reason, w.reason_key);
		/* Sources usually name the place in the reason already. */
		if (row->where && strncmp(row->error, row->where, strlen(row->where)))
			snprintf(msg, sizeof(msg), "%s: %s", row->where, row->error);
		else
			snprintf(msg, sizeof(msg), "%s", row->error);
		rc = eng__walk_error(&w, &t, c->g->nodes[row->source].on_error,
				     ENG_QUARANTINED,
				     c->g->nodes[row->source].name, msg);
		json_decref(t.data);
	} else {
		rc = walk(&w, &t, c->g->nodes[row->source].next, ENG_COMPLETED);
	}
	walker_done(&w);
	return rc;
}

int eng__row_run(eng_ctx *c, eng_row *row, eng_result *res, core_err *err)
{
	if (!row->ready)
		return eng__process_row(c, row, res, err);
	*res = *row->ready;
	free(row->ready);
	row->ready = NULL;
	return 0;
}

int eng__walk_from(eng_ctx *c, uint64_t seq, uint64_t token_id, json_t *data,
		   const char *hash, unsigned step, dag_dest dest,
		   eng_result *res, core_err *err)
{
	walker w = { .c = c, .seq = seq, .res = res, .err = err, .no_stop = true };
	tok t = { .id = token_id, .data = data, .step = step };
	int rc;

	snprintf(t.hash, sizeof(t.hash), "%s", hash ? hash : "");
	rc = walk(&w, &t, dest, ENG_COMPLETED);
	walker_done(&w);
	return rc;
}

/* ---------------------------------------------------------------- results */

int eng__result_add(eng_result *res, const eng_token *t)
{
	if (res->ntokens == res->cap) {
		size_t cap = res->cap ? res->cap * 2 : 2;
		eng_token *v = realloc(res->tokens, cap * sizeof(*v));

		if (!v)
			return CORE_ENOMEM;
		res->tokens = v;
		res->cap = cap;
	}
	res->tokens[res->ntokens++] = *t;
	return 0;
}

void eng__row_release(eng_row *r)
{
	json_decref(r->data);
	free(r->error);
	free(r->where);
	free(r->reason);
	if (r->ready) {
		eng__result_release(r->ready);
		free(r->ready);
	}
	memset(r, 0, sizeof(*r));
}

void eng__result_release(eng_result *r)
{
	for (size_t i = 0; i < r->ntokens; i++) {
		json_decref(r->tokens[i].data);
		free(r->tokens[i].error);
	}
	free(r->tokens);
	memset(r, 0, sizeof(*r));
}

int eng__walk_merged(walker *w, tok *t, dag_dest at)
{
	return walk(w, t, at, ENG_COMPLETED);
}

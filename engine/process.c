/*
 * process.c — stage 2: one row's token through the graph. Transforms are
 * retried per `retry` when their error is retryable; a failing row goes to
 * its transform's on_error destination with the error attached (ADR 0003).
 * Every visit is a node state in the audit trail.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"

#define MAX_HOPS 100000 /* the graph is acyclic; this guards bugs */

/* The walk of one token. */
typedef struct walk {
	eng_ctx *c;
	const eng_row *row;
	eng_result *res;
	uint64_t token_id;
	unsigned step;
	json_t *cur;       /* owned */
	eng_hash hash;     /* of cur */
} walk;

static int add_token(walk *w, int sink, eng_outcome o, json_t *data,
		     const char *error)
{
	eng_result *res = w->res;
	eng_token *t;

	if (res->ntokens == res->cap) {
		size_t cap = res->cap ? res->cap * 2 : 2;

		t = realloc(res->tokens, cap * sizeof(*t));
		if (!t) {
			json_decref(data);
			return CORE_ENOMEM;
		}
		res->tokens = t;
		res->cap = cap;
	}
	t = &res->tokens[res->ntokens++];
	*t = (eng_token){ .token_id = w->token_id, .sink = sink, .outcome = o,
			  .data = data, .step = w->step };
	memcpy(t->hash, w->hash, sizeof(t->hash));
	t->error = error ? strdup(error) : NULL;
	return 0;
}

/* A copy of row with the error attached as `_error_node` and `_error`. */
static json_t *with_error(const json_t *row, const char *node, const char *msg)
{
	json_t *out = json_is_object(row) ? json_copy((json_t *)row) : json_object();

	if (!out)
		return NULL;
	json_object_set_new(out, "_error_node", json_string(node));
	json_object_set_new(out, "_error", json_string(msg));
	return out;
}

/* Sends the error row to sink `to` (or counts a discard). */
static int route_error(walk *w, int to, eng_outcome how, const char *node,
		       const char *msg, core_err *err)
{
	json_t *data;

	if (to == DAG_DISCARD)
		return add_token(w, DAG_DISCARD, how, NULL, msg);
	data = with_error(w->cur, node, msg);
	if (!data)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (w->c->audit->rec && eng__audit_payload(w->c->audit, data, w->hash, err)) {
		json_decref(data);
		return err->code;
	}
	return add_token(w, to, how, data, msg);
}

/* Sleeps for the backoff of attempt (0-based), waking early on stop. */
static void backoff_sleep(const core_retry_cfg *r, unsigned attempt,
			  volatile sig_atomic_t *stop)
{
	double d = r->initial_delay_seconds * pow(r->exponential_base, attempt);
	uint64_t end;

	if (d > r->max_delay_seconds)
		d = r->max_delay_seconds;
	end = core_now_mono_ns() + (uint64_t)(d * 1e9);
	while (core_now_mono_ns() < end && !(stop && *stop)) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* One attempt of a transform, recorded as a node state. */
static int attempt_transform(walk *w, const dag_node *n, unsigned attempt,
			     json_t **out, core_err *err)
{
	eng_audit *a = w->c->audit;
	eng_hash oh = "";
	eng_state st = { .token_id = w->token_id, .node = n->id,
			 .step = w->step, .attempt = attempt,
			 .in_hash = w->hash, .out_hash = oh };
	uint64_t sid;
	int rc;

	st.started_ns = core_now_wall_ns();
	err->retryable = false;
	rc = n->tops->process(n->tstate, w->cur, out, err);
	if (!rc && a->rec && eng__audit_payload(a, *out, oh, err)) {
		json_decref(*out);
		return core_err_prefix(err, "row %llu: transform '%s' output",
				       (unsigned long long)w->row->seq, n->name);
	}
	st.completed_ns = core_now_wall_ns();
	st.ok = !rc;
	st.error = rc ? err->msg : NULL;
	sid = eng__audit_state(a, &st);
	if (rc)
		eng__audit_transform_error(a, &st, sid, err);
	else
		memcpy(w->hash, oh, sizeof(oh));
	return rc;
}

/* Runs a transform with retries; on final failure routes the row. *done
 * is set when the token's walk ends here. */
static int run_transform(walk *w, const dag_node *n, bool *done, core_err *err)
{
	const core_retry_cfg *r = &w->c->g->settings->retry;
	volatile sig_atomic_t *stop = w->c->stop;
	json_t *out = NULL;
	unsigned attempt = 0;
	int rc;

	w->step++;
	while ((rc = attempt_transform(w, n, attempt, &out, err))) {
		if (!err->retryable || attempt + 1 >= (unsigned)r->max_attempts ||
		    (stop && *stop))
			break;
		backoff_sleep(r, attempt++, stop);
		w->res->retries++;
	}
	if (!rc) {
		json_decref(w->cur);
		w->cur = out;
		return 0;
	}
	*done = true;
	w->res->failed = true;
	if (n->on_error == DAG_NONE)
		return core_err_prefix(err,
			"row %llu: transform '%s' failed and has no on_error "
			"(set on_error to a sink or 'discard' to route failing rows)",
			(unsigned long long)w->row->seq, n->name);
	return route_error(w, n->on_error,
			   n->on_error == DAG_DISCARD ? ENG_FAILED : ENG_ROUTED,
			   n->name, err->msg, err);
}

static int run_gate(walk *w, const dag_node *n, int *next, core_err *err)
{
	eng_state st = { .token_id = w->token_id, .node = n->id,
			 .step = ++w->step, .in_hash = w->hash,
			 .out_hash = w->hash };
	const dag_route *r = NULL;
	char key[256];
	uint64_t sid;
	int rc;

	st.started_ns = core_now_wall_ns();
	rc = dag_expr_route_key(n->cond, w->cur, key, sizeof(key), err);
	if (rc)
		core_err_prefix(err, "row %llu: gate '%s'",
				(unsigned long long)w->row->seq, n->name);
	else if (!(r = dag_gate_route(n, key)))
		rc = core_err_set(err, CORE_EDATA,
			"row %llu: gate '%s': condition gave '%s' and there is no route for it "
			"(add '%s' under routes)",
			(unsigned long long)w->row->seq, n->name, key, key);
	st.completed_ns = core_now_wall_ns();
	st.ok = !rc;
	st.error = rc ? err->msg : NULL;
	sid = eng__audit_state(w->c->audit, &st);
	if (rc)
		return rc;
	eng__audit_route(w->c->audit, sid, n, key);
	*next = r->to;
	return 0;
}

static int walk_token(walk *w, core_err *err)
{
	const dag_graph *g = w->c->g;
	eng_outcome how = ENG_COMPLETED;
	int at = g->nodes[0].next, rc = 0;

	for (int hops = 0; hops < MAX_HOPS; hops++) {
		const dag_node *n = &g->nodes[at];
		bool done = false;

		switch (n->kind) {
		case DAG_SINK:
			rc = add_token(w, at, how, json_incref(w->cur), NULL);
			return rc ? core_err_set(err, rc, "out of memory") : 0;
		case DAG_TRANSFORM:
			rc = run_transform(w, n, &done, err);
			if (rc || done)
				return rc;
			at = n->next;
			how = ENG_COMPLETED;
			break;
		case DAG_GATE:
			if ((rc = run_gate(w, n, &at, err)))
				return rc;
			how = ENG_ROUTED;
			break;
		case DAG_SOURCE:
			return core_err_set(err, CORE_EINTERNAL,
				"row %llu: the walk reached the source",
				(unsigned long long)w->row->seq);
		}
	}
	return core_err_set(err, CORE_EINTERNAL, "row %llu: the walk does not end",
			    (unsigned long long)w->row->seq);
}

int eng__process_row(eng_ctx *c, eng_row *row, eng_result *res,
		     core_err *err)
{
	walk w = { .c = c, .row = row, .res = res };
	int rc;

	res->seq = row->seq;
	rc = eng__audit_row(c->audit, row, &w.token_id, err);
	if (rc)
		return rc;
	memcpy(w.hash, row->hash, sizeof(w.hash));
	w.cur = json_incref(row->data);
	if (row->error) {
		char msg[1024];

		/* Sources usually name the place in the reason already. */
		if (row->where && strncmp(row->error, row->where, strlen(row->where)))
			snprintf(msg, sizeof(msg), "%s: %s", row->where, row->error);
		else
			snprintf(msg, sizeof(msg), "%s", row->error);
		rc = route_error(&w, c->g->nodes[0].on_error, ENG_QUARANTINED,
				 "source", msg, err);
	} else {
		rc = walk_token(&w, err);
	}
	if (rc) {
		/* The run stops on this row: its token still gets its one
		 * terminal outcome (DESIGN.md §5.3). */
		eng_token failed = { .token_id = w.token_id, .sink = DAG_DISCARD,
				     .outcome = ENG_FAILED, .error = err->msg };

		eng__audit_outcome(c->audit, row->seq, &failed);
	}
	json_decref(w.cur);
	return rc;
}

void eng__row_release(eng_row *r)
{
	json_decref(r->data);
	free(r->error);
	free(r->where);
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

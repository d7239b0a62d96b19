/*
 * process.c — stage 2: one row's token through the graph. Transforms are
 * retried per `retry` when their error is retryable; a failing row goes to
 * its transform's on_error destination with the error attached.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"

#define MAX_HOPS 100000 /* the graph is acyclic; this guards bugs */

static int add_token(eng_result *res, int sink, eng_outcome o, json_t *data)
{
	if (res->ntokens == res->cap) {
		size_t cap = res->cap ? res->cap * 2 : 2;
		eng_token *t = realloc(res->tokens, cap * sizeof(*t));

		if (!t) {
			json_decref(data);
			return CORE_ENOMEM;
		}
		res->tokens = t;
		res->cap = cap;
	}
	res->tokens[res->ntokens++] = (eng_token){ sink, o, data };
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

/* Runs a transform with retries. 0 with *out set, or the last error. */
static int run_transform(dag_graph *g, const dag_node *n, const json_t *in,
			 volatile sig_atomic_t *stop, eng_result *res,
			 json_t **out, core_err *err)
{
	const core_retry_cfg *r = &g->settings->retry;
	unsigned attempt = 0;
	int rc;

	for (;;) {
		err->retryable = false;
		rc = n->tops->process(n->tstate, in, out, err);
		if (!rc)
			return 0;
		if (!err->retryable || attempt + 1 >= (unsigned)r->max_attempts ||
		    (stop && *stop))
			return rc;
		backoff_sleep(r, attempt++, stop);
		res->retries++;
	}
}

static int transform_failed(dag_graph *g, const dag_node *n, const eng_row *row,
			    const json_t *in, eng_result *res, core_err *err)
{
	json_t *data;

	res->failed = true;
	if (n->on_error == DAG_NONE)
		return core_err_prefix(err,
			"row %llu: transform '%s' failed and has no on_error "
			"(set on_error to a sink or 'discard' to route failing rows)",
			(unsigned long long)row->seq, n->name);
	if (n->on_error == DAG_DISCARD)
		return add_token(res, DAG_DISCARD, ENG_FAILED, NULL);
	data = with_error(in, n->name, err->msg);
	if (!data)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	(void)g;
	return add_token(res, n->on_error, ENG_ROUTED, data);
}

static int gate_next(const dag_node *n, const eng_row *row, const json_t *cur,
		     int *next, core_err *err)
{
	char key[256];
	const dag_route *r;
	int rc;

	rc = dag_expr_route_key(n->cond, cur, key, sizeof(key), err);
	if (rc)
		return core_err_prefix(err, "row %llu: gate '%s'",
				       (unsigned long long)row->seq, n->name);
	r = dag_gate_route(n, key);
	if (!r)
		return core_err_set(err, CORE_EDATA,
			"row %llu: gate '%s': condition gave '%s' and there is no route for it "
			"(add '%s' under routes)",
			(unsigned long long)row->seq, n->name, key, key);
	*next = r->to;
	return 0;
}

static int quarantine(dag_graph *g, const eng_row *row, eng_result *res,
		      core_err *err)
{
	const dag_node *src = &g->nodes[0];
	char msg[1024];
	json_t *data;

	if (src->on_error == DAG_DISCARD)
		return add_token(res, DAG_DISCARD, ENG_QUARANTINED, NULL);
	/* Sources usually name the place in the reason already. */
	if (row->where && strncmp(row->error, row->where, strlen(row->where)))
		snprintf(msg, sizeof(msg), "%s: %s", row->where, row->error);
	else
		snprintf(msg, sizeof(msg), "%s", row->error);
	data = with_error(row->data, "source", msg);
	if (!data)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return add_token(res, src->on_error, ENG_QUARANTINED, data);
}

int eng__process_row(dag_graph *g, const eng_row *row,
		     volatile sig_atomic_t *stop, eng_result *res,
		     core_err *err)
{
	json_t *cur = json_incref(row->data);
	int at = g->nodes[0].next, rc = 0;
	eng_outcome how = ENG_COMPLETED;

	res->seq = row->seq;
	if (row->error) {
		json_decref(cur);
		return quarantine(g, row, res, err);
	}
	for (int hops = 0; hops < MAX_HOPS; hops++) {
		const dag_node *n = &g->nodes[at];
		json_t *out = NULL;

		if (n->kind == DAG_SINK) {
			return add_token(res, at, how, cur);
		} else if (n->kind == DAG_TRANSFORM) {
			rc = run_transform(g, n, cur, stop, res, &out, err);
			if (rc) {
				rc = transform_failed(g, n, row, cur, res, err);
				break;
			}
			json_decref(cur);
			cur = out;
			at = n->next;
			how = ENG_COMPLETED;
		} else if (n->kind == DAG_GATE) {
			if ((rc = gate_next(n, row, cur, &at, err)))
				break;
			how = ENG_ROUTED;
		} else {
			rc = core_err_set(err, CORE_EINTERNAL, "row %llu: bad node %d",
					  (unsigned long long)row->seq, at);
			break;
		}
	}
	json_decref(cur);
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
	for (size_t i = 0; i < r->ntokens; i++)
		json_decref(r->tokens[i].data);
	free(r->tokens);
	memset(r, 0, sizeof(*r));
}

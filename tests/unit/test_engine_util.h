/* test_engine_util.h — what the engine tests share: in-process test
 * plugins and a graph built from settings text with them put in.
 *
 * The settings name real plugins (dag_build checks that they exist and
 * that an expanding transform is not inside a fork/coalesce), and
 * eng_install() then swaps every node's operations for the test
 * plugins below, which read their own options:
 *
 *   source (any plugin)    tsrc: rows {"i": 1..rows}; options rows (10),
 *                          invalid_every (every k-th row fails validation),
 *                          fail_at (a fatal read error instead of row k);
 *                          position/seek by row index; the globals
 *                          tsrc_salt and tsrc_limit change the input
 *   transform              ttx: a copy of the row with `key` set to
 *                          `value` (when given) and the keys of map `set`;
 *                          delay_us (a fixed sleep); sleep_us (a random
 *                          sleep of 0..sleep_us µs, said to the engine
 *                          through plg_blocking); slow_at, slow_us (row
 *                          slow_at sleeps slow_us, said to the engine:
 *                          the head of the line); pad (a field "pad" of
 *                          that many bytes in the output); fail_mod (rows with
 *                          i % m == 0 fail, not retryable); stop_at (row i
 *                          sets the test's stop flag and fails retryably,
 *                          once per test); halt_at (row i calls
 *                          ctx->halt(halt_code, "account exhausted: ...")
 *                          once per test, or every row from i on with
 *                          halt_all, unless ttx_halt_off; from
 *                          halt_threads threads at once when non-zero,
 *                          with codes 1 and 3 in turn; then a second,
 *                          ignored call; then returns CORE_ESTOPPED as a
 *                          cut-short LLM call does, or with halt_fails
 *                          a non-retryable CORE_EDATA); cut_at (row i
 *                          returns CORE_ESTOPPED once per test, with no
 *                          stop flag set and no halt, unless
 *                          ttx_halt_off); throttle_reason
 *                          (records two calls: one that waited 120 ms
 *                          for that reason, one that did not wait);
 *                          as an expanding transform
 *                          (json_explode in the settings) it makes
 *                          `expand` (2) children with "k": 0, 1, ...
 *   sink                   tsink: keeps rows in memory under options
 *                          `name` (tsink_rows(name)); fail_mod (writes of
 *                          rows with i % m == 0 fail); position, resume
 *                          and verify, so checkpoints work
 *   aggregation            tagg: records each batch's member "i"s
 *                          (tagg_batches); transform mode gives one row
 *                          {"n", "first", "last"}, passthrough each member
 *                          with "n"; options fail, short (passthrough
 *                          gives one row too few)
 *
 * Criterion runs every test in its own process, so the globals start
 * empty in each test.
 */
#ifndef TEST_ENGINE_UTIL_H
#define TEST_ENGINE_UTIL_H

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "engine/engine_internal.h"

/* One .timeout for every test of a binary (see test_recorder_util.h:
 * Criterion leaks in its runner when timeouts differ). */
#define TIMEOUT 30

/* The stop flag the tests pass in eng_opts and eng_ctx; ttx's stop_at
 * sets it. */
static atomic_int tstop;
/* Sinks' rows by sink name (an object of arrays). */
static json_t *tsink_store;
/* Every batch an aggregation flushed: an array of arrays of "i". */
static json_t *tagg_batches;
/* Added to every source row as "v" when non-zero: the input changed. */
static int tsrc_salt;
/* When non-zero, the source ends after this many rows: the input got
 * shorter. */
static long long tsrc_limit;
/* Rows ttx processed (every attempt). */
static atomic_uint ttx_calls;
/* ttx's stop_at fired (once per test process: a resume does not stop
 * again). */
static atomic_bool ttx_stopped;
/* ttx's halt_at fired (once per test process, without halt_all). */
static atomic_bool ttx_halted;
/* No halt_at fires (a resume of a halt_all run). */
static atomic_bool ttx_halt_off;
/* ttx's cut_at fired (once per test process). */
static atomic_bool ttx_cut;

static inline long long row_i(const json_t *row)
{
	return (long long)json_integer_value(json_object_get(row, "i"));
}

static inline long long opt_ll(const core_node *o, const char *key, long long def)
{
	long long v = def;
	core_err err;

	cr_assert_eq(core_opt_int(o, key, -1000000, 1000000000, &v, &err), 0,
		     "test plugin option %s: %s", key, err.msg);
	return v;
}

/* ---------------------------------------------------------------- source */

typedef struct tsrc {
	long long n, next, invalid_every, fail_at;
} tsrc;

static inline int tsrc_open(const plg_env *env, const core_node *o,
			       void **state, core_err *err)
{
	tsrc *s = calloc(1, sizeof(*s));

	(void)env;
	(void)err;
	cr_assert_not_null(s);
	s->n = opt_ll(o, "rows", 10);
	s->invalid_every = opt_ll(o, "invalid_every", 0);
	s->fail_at = opt_ll(o, "fail_at", 0);
	*state = s;
	return 0;
}

static inline int tsrc_next(void *state, plg_source_row *out, core_err *err)
{
	tsrc *s = state;
	long long k;

	if (s->fail_at && s->next + 1 == s->fail_at)
		return core_err_set(err, CORE_EIO, "tsrc: cannot read row %lld", s->fail_at);
	if (s->next >= s->n || (tsrc_limit && s->next >= tsrc_limit))
		return 0;
	k = ++s->next;
	out->row = json_pack("{s:I}", "i", (json_int_t)k);
	if (tsrc_salt)
		json_object_set_new(out->row, "v", json_integer(tsrc_salt));
	if (s->invalid_every && k % s->invalid_every == 0) {
		char where[32];

		snprintf(where, sizeof(where), "line %lld", k + 1);
		out->error = strdup("field 'i': not wanted (test)");
		out->where = strdup(where);
	}
	return 1;
}

static inline void tsrc_close(void *state)
{
	free(state);
}

static inline void tsrc_position(void *state, plg_source_pos *out)
{
	const tsrc *s = state;

	out->offset = (uint64_t)s->next;
	out->line = (uint64_t)s->next + 1;
}

static inline int tsrc_seek(void *state, const plg_source_pos *at, core_err *err)
{
	tsrc *s = state;

	(void)err;
	s->next = (long long)at->offset;
	return 0;
}

static inline const plg_source_ops *tsrc_ops(void)
{
	static const plg_source_ops ops = {
		.name = "tsrc", .open = tsrc_open, .next = tsrc_next,
		.close = tsrc_close, .position = tsrc_position, .seek = tsrc_seek
	};
	return &ops;
}

/* The same source without position/seek: a resume skips rows one by one. */
static inline const plg_source_ops *tsrc_noseek_ops(void)
{
	static const plg_source_ops ops = {
		.name = "tsrc", .open = tsrc_open, .next = tsrc_next,
		.close = tsrc_close
	};
	return &ops;
}

/* ------------------------------------------------------------- transform */

typedef struct ttx {
	const char *key, *value;
	json_t *set;       /* keys to set, or NULL */
	long long sleep_us, delay_us, fail_mod, stop_at, expand;
	long long halt_at, halt_code, halt_threads, cut_at;
	long long slow_at, slow_us, pad;
	bool halt_all, halt_fails;
	const char *throttle_reason;
} ttx;

static inline int ttx_open(const plg_env *env, const core_node *o,
			       void **state, core_err *err)
{
	ttx *t = calloc(1, sizeof(*t));

	(void)env;
	cr_assert_not_null(t);
	cr_assert_eq(core_opt_str(o, "key", false, &t->key, err), 0);
	cr_assert_eq(core_opt_str(o, "value", false, &t->value, err), 0);
	if (core_map_get(o, "set"))
		t->set = core_node_to_json(core_map_get(o, "set"));
	t->sleep_us = opt_ll(o, "sleep_us", 0);
	t->delay_us = opt_ll(o, "delay_us", 0);
	t->fail_mod = opt_ll(o, "fail_mod", 0);
	t->stop_at = opt_ll(o, "stop_at", 0);
	t->expand = opt_ll(o, "expand", 2);
	t->halt_at = opt_ll(o, "halt_at", 0);
	t->halt_code = opt_ll(o, "halt_code", 1);
	t->halt_threads = opt_ll(o, "halt_threads", 0);
	t->cut_at = opt_ll(o, "cut_at", 0);
	t->slow_at = opt_ll(o, "slow_at", 0);
	t->slow_us = opt_ll(o, "slow_us", 0);
	t->pad = opt_ll(o, "pad", 0);
	cr_assert_leq(t->halt_threads, 8);
	cr_assert_eq(core_opt_bool(o, "halt_all", &t->halt_all, err), 0);
	cr_assert_eq(core_opt_bool(o, "halt_fails", &t->halt_fails, err), 0);
	cr_assert_eq(core_opt_str(o, "throttle_reason", false, &t->throttle_reason, err), 0);
	*state = t;
	return 0;
}

/* 0..max µs, different for each call (thread-safe). */
static inline void random_sleep(long long max_us, plg_ctx *ctx)
{
	static atomic_uint_fast64_t counter;
	uint64_t x = atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull + 12345;
	struct timespec ts;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(x % (uint64_t)(max_us + 1)) * 1000;
	plg_blocking(ctx, true);
	nanosleep(&ts, NULL);
	plg_blocking(ctx, false);
}

/* One call of ctx->halt, as an HTTP executor's thread would make it. */
typedef struct ttx_halter {
	plg_ctx *ctx;
	int code;
	char msg[128];
} ttx_halter;

static inline void *ttx_halter_main(void *arg)
{
	ttx_halter *h = arg;

	h->ctx->halt(h->ctx, h->code, h->msg);
	return NULL;
}

static inline bool ttx_halts(const ttx *t, long long i)
{
	if (!t->halt_at || i < t->halt_at || atomic_load(&ttx_halt_off))
		return false;
	if (t->halt_all)
		return true;
	return i == t->halt_at && !atomic_exchange(&ttx_halted, true);
}

/* The message says which code it came with, so a test can tell that
 * the code and message it got belong together. */
static inline void ttx_halt(const ttx *t, long long i, plg_ctx *ctx)
{
	ttx_halter h[8];
	pthread_t th[8];
	long long n = t->halt_threads ? t->halt_threads : 1;

	cr_assert_not_null(ctx->halt);
	for (long long j = 0; j < n; j++) {
		h[j].ctx = ctx;
		h[j].code = (int)(j % 2 ? 4 - t->halt_code : t->halt_code);
		snprintf(h[j].msg, sizeof(h[j].msg),
			 "account exhausted: top up, then resume (row %lld, code %d, thread %lld)",
			 i, h[j].code, j);
	}
	if (!t->halt_threads)
		ttx_halter_main(&h[0]);
	for (long long j = 0; j < t->halt_threads; j++)
		cr_assert_eq(pthread_create(&th[j], NULL, ttx_halter_main, &h[j]), 0);
	for (long long j = 0; j < t->halt_threads; j++)
		pthread_join(th[j], NULL);
	/* The first call wins: this one changes nothing. */
	ctx->halt(ctx, (int)(4 - t->halt_code), "a later halt (test): ignored");
}

/* Two calls: one held back 120 ms by the throttle for `reason`, one not
 * held back at all. */
static inline void ttx_record_calls(const char *reason, plg_ctx *ctx)
{
	uint64_t now = core_now_wall_ns();
	plg_call c = { .call_type = "llm", .ok = true, .http_status = 200,
		       .request = "{}", .request_len = 2, .response = "{}",
		       .response_len = 2, .submitted_ns = now,
		       .completed_ns = now + 1000000, .throttle_delay_ns = 120000000,
		       .throttle_reason = reason, .submit_order = 1,
		       .complete_order = 1 };

	ctx->record_call(ctx, &c);
	c.throttle_delay_ns = 0;
	c.throttle_reason = NULL;
	c.submit_order = c.complete_order = 2;
	ctx->record_call(ctx, &c);
}

static inline int ttx_fault(ttx *t, const json_t *row, plg_ctx *ctx, core_err *err)
{
	long long i = row_i(row);

	atomic_fetch_add(&ttx_calls, 1);
	if (t->sleep_us)
		random_sleep(t->sleep_us, ctx);
	if (t->delay_us) {
		struct timespec ts = { t->delay_us / 1000000, t->delay_us % 1000000 * 1000 };

		nanosleep(&ts, NULL);
	}
	if (t->slow_at && i == t->slow_at) {
		struct timespec ts = { t->slow_us / 1000000, t->slow_us % 1000000 * 1000 };

		plg_blocking(ctx, true);
		nanosleep(&ts, NULL);
		plg_blocking(ctx, false);
	}
	if (t->stop_at && i == t->stop_at && !atomic_exchange(&ttx_stopped, true)) {
		atomic_store(&tstop, 1);
		core_err_set(err, CORE_EDATA, "row %lld: a transient failure (test)", i);
		err->retryable = true;
		return CORE_EDATA;
	}
	if (t->throttle_reason)
		ttx_record_calls(t->throttle_reason, ctx);
	if (t->cut_at && i == t->cut_at && !atomic_load(&ttx_halt_off) &&
	    !atomic_exchange(&ttx_cut, true))
		return core_err_set(err, CORE_ESTOPPED, "cut short, no stop flag (test)");
	if (ttx_halts(t, i)) {
		ttx_halt(t, i, ctx);
		if (t->halt_fails)
			return core_err_set(err, CORE_EDATA, "HTTP 402: insufficient credits (test)");
		return core_err_set(err, CORE_ESTOPPED, "LLM call not finished: the run "
				    "was halted (test)");
	}
	if (t->fail_mod && i % t->fail_mod == 0)
		return core_err_set(err, CORE_EDATA, "field 'i': %lld is unwanted (test)", i);
	return 0;
}

static inline int ttx_process(void *state, const json_t *row, json_t **out,
			      plg_ctx *ctx, core_err *err)
{
	ttx *t = state;
	int rc = ttx_fault(t, row, ctx, err);

	if (rc)
		return rc;
	*out = json_copy((json_t *)row);
	if (t->key)
		json_object_set_new(*out, t->key, json_string(t->value ? t->value : ""));
	if (t->set)
		json_object_update(*out, t->set);
	if (t->pad) {
		char *pad = malloc((size_t)t->pad + 1);

		cr_assert_not_null(pad);
		memset(pad, 'x', (size_t)t->pad);
		pad[t->pad] = 0;
		json_object_set_new(*out, "pad", json_string(pad));
		free(pad);
	}
	return 0;
}

static inline int ttx_expand(void *state, const json_t *row, json_t **out,
			     plg_ctx *ctx, core_err *err)
{
	ttx *t = state;
	int rc = ttx_fault(t, row, ctx, err);

	if (rc)
		return rc;
	*out = json_array();
	for (long long j = 0; j < t->expand; j++) {
		json_t *c = json_copy((json_t *)row);

		json_object_set_new(c, "k", json_integer((json_int_t)j));
		if (t->key)
			json_object_set_new(c, t->key, json_string(t->value ? t->value : ""));
		json_array_append_new(*out, c);
	}
	return 0;
}

static inline void ttx_close(void *state)
{
	ttx *t = state;

	if (t)
		json_decref(t->set);
	free(t);
}

static inline const plg_transform_ops *ttx_ops(bool expands)
{
	static const plg_transform_ops plain = {
		.name = "ttx", .open = ttx_open, .process = ttx_process,
		.close = ttx_close
	};
	static const plg_transform_ops expanding = {
		.name = "ttx_expand", .expands = true, .open = ttx_open,
		.process = ttx_expand, .close = ttx_close
	};
	return expands ? &expanding : &plain;
}

/* ------------------------------------------------------------------ sink */

typedef struct tsink {
	json_t *rows;      /* borrowed from tsink_store */
	long long fail_mod;
	char *last;        /* the bytes of the last write */
} tsink;

/* The rows sink `name` holds (created empty); borrowed. */
static inline json_t *tsink_rows(const char *name)
{
	json_t *a;

	if (!tsink_store)
		tsink_store = json_object();
	if (!(a = json_object_get(tsink_store, name))) {
		a = json_array();
		json_object_set_new(tsink_store, name, a);
	}
	return a;
}

/* The bytes of rows[0, n) as the sink "wrote" them, and their hash. */
static inline uint64_t tsink_bytes(const json_t *rows, size_t n,
				   char hash[CORE_SHA256_HEX_LEN + 1])
{
	core_sha256_stream *h = core_sha256_stream_new();
	uint64_t len = 0;

	for (size_t i = 0; i < n; i++) {
		char *s = json_dumps(json_array_get(rows, i), JSON_COMPACT);

		core_sha256_stream_add(h, s, strlen(s));
		core_sha256_stream_add(h, "\n", 1);
		len += strlen(s) + 1;
		free(s);
	}
	core_sha256_stream_hex(h, hash);
	core_sha256_stream_free(h);
	return len;
}

static inline int tsink_open(const plg_env *env, const core_node *o,
			       void **state, core_err *err)
{
	tsink *k = calloc(1, sizeof(*k));
	const char *name = "out";

	(void)env;
	cr_assert_not_null(k);
	cr_assert_eq(core_opt_str(o, "name", false, &name, err), 0);
	k->rows = tsink_rows(name);
	k->fail_mod = opt_ll(o, "fail_mod", 0);
	*state = k;
	return 0;
}

static inline int tsink_write(void *state, const json_t *row,
			      plg_write_info *info, core_err *err)
{
	tsink *k = state;
	char hash[CORE_SHA256_HEX_LEN + 1];

	if (k->fail_mod && row_i(row) % k->fail_mod == 0)
		return core_err_set(err, CORE_EIO, "no space left on device (test)");
	info->offset = tsink_bytes(k->rows, json_array_size(k->rows), hash);
	free(k->last);
	k->last = json_dumps(row, JSON_COMPACT);
	info->len = strlen(k->last);
	info->bytes = k->last;
	json_array_append_new(k->rows, json_deep_copy(row));
	return 0;
}

static inline int tsink_flush(void *state, core_err *err)
{
	(void)state;
	(void)err;
	return 0;
}

static inline int tsink_close(void *state, core_err *err)
{
	tsink *k = state;

	(void)err;
	if (k)
		free(k->last);
	free(k);
	return 0;
}

static inline void tsink_position(void *state, plg_sink_pos *out)
{
	tsink *k = state;

	out->base = 0;
	out->rows = json_array_size(k->rows);
	out->pos = tsink_bytes(k->rows, json_array_size(k->rows), out->hash);
	out->fd = -1;
}

/* Back to the first at->rows rows (what the checkpoint counted). */
static inline int tsink_resume(const plg_env *env, const core_node *o,
			       const plg_sink_pos *at, void **state,
			       core_err *err)
{
	tsink *k;
	int rc = tsink_open(env, o, state, err);

	if (rc)
		return rc;
	k = *state;
	while (json_array_size(k->rows) > at->rows)
		json_array_remove(k->rows, json_array_size(k->rows) - 1);
	return 0;
}

static inline int tsink_verify(const plg_env *env, const core_node *o,
			       const plg_sink_pos *at, core_err *err)
{
	const char *name = "out";
	json_t *rows;
	char hash[CORE_SHA256_HEX_LEN + 1];

	(void)env;
	core_opt_str(o, "name", false, &name, err);
	rows = tsink_rows(name);
	for (size_t n = 0; n <= json_array_size(rows); n++)
		if (tsink_bytes(rows, n, hash) == at->pos && !strcmp(hash, at->hash))
			return 0;
	return core_err_set(err, CORE_EDATA, "tsink '%s' does not hold what the "
			    "checkpoint counted", name);
}

static inline const plg_sink_ops *tsink_ops(void)
{
	static const plg_sink_ops ops = {
		.name = "tsink", .open = tsink_open, .write = tsink_write,
		.flush = tsink_flush, .close = tsink_close,
		.position = tsink_position, .resume = tsink_resume,
		.verify = tsink_verify
	};
	return &ops;
}

/* ----------------------------------------------------------- aggregation */

typedef struct tagg {
	bool fail, shortfall;
} tagg;

static inline int tagg_open(const plg_env *env, const core_node *o,
			       void **state, core_err *err)
{
	tagg *a = calloc(1, sizeof(*a));

	(void)env;
	cr_assert_not_null(a);
	cr_assert_eq(core_opt_bool(o, "fail", &a->fail, err), 0);
	cr_assert_eq(core_opt_bool(o, "short", &a->shortfall, err), 0);
	*state = a;
	return 0;
}

static inline int tagg_flush(void *state, json_t *const *members, size_t n,
			     bool passthrough, json_t **out, core_err *err)
{
	tagg *a = state;
	json_t *ids = json_array();

	if (!tagg_batches)
		tagg_batches = json_array();
	for (size_t m = 0; m < n; m++)
		json_array_append_new(ids, json_integer(row_i(members[m])));
	json_array_append_new(tagg_batches, ids);
	if (a->fail)
		return core_err_set(err, CORE_EDATA, "member 0: field 'i': rejected (test)");
	*out = json_array();
	if (!passthrough) {
		json_array_append_new(*out, json_pack("{s:I,s:I,s:I}", "n", (json_int_t)n,
			"first", (json_int_t)row_i(members[0]),
			"last", (json_int_t)row_i(members[n - 1])));
		return 0;
	}
	for (size_t m = 0; m < n - (a->shortfall ? 1 : 0); m++) {
		json_t *c = json_copy(members[m]);

		json_object_set_new(c, "n", json_integer((json_int_t)n));
		json_array_append_new(*out, c);
	}
	return 0;
}

static inline void tagg_close(void *state)
{
	free(state);
}

static inline const plg_aggregation_ops *tagg_ops(void)
{
	static const plg_aggregation_ops ops = {
		.name = "tagg", .open = tagg_open, .flush = tagg_flush,
		.close = tagg_close
	};
	return &ops;
}

/* ---------------------------------------------------------------- graphs */

/* Puts the test plugins into every node of g. */
static inline void eng_install(dag_graph *g)
{
	for (size_t i = 0; i < g->nnodes; i++) {
		dag_node *n = &g->nodes[i];

		switch (n->kind) {
		case DAG_SOURCE:
			n->sops = tsrc_ops();
			break;
		case DAG_TRANSFORM:
			n->tops = ttx_ops(n->tops->expands);
			break;
		case DAG_SINK:
			n->kops = tsink_ops();
			break;
		case DAG_AGGREGATION:
			n->aops = tagg_ops();
			break;
		case DAG_GATE:
		case DAG_COALESCE:
		case DAG_QUEUE:
			break;
		}
	}
}

/* Settings text -> a graph with the test plugins. */
static inline dag_graph *eng_graph(const char *yaml, core_settings **s)
{
	core_err err = { 0 };
	dag_graph *g = NULL;

	cr_assert_eq(core_settings_parse("t.yaml", yaml, s, &err), 0,
		     "settings: %s", err.msg);
	cr_assert_eq(dag_build(*s, &g, &err), 0, "graph: %s", err.msg);
	eng_install(g);
	return g;
}

/* A graph opened with audit off, and what the stages share: for tests
 * that drive eng__process_row, eng__emit and the aggregations
 * directly. */
typedef struct tpipe {
	core_settings *s;
	dag_graph *g;
	eng_audit audit;
	eng_ctx c;
	eng_summary sum;
	core_err err;
} tpipe;

/* With rec, audit is on: a run is recorded (its lock is held until
 * tp_close). */
static inline void tp_open_rec(tpipe *p, const char *yaml, rec_env *rec)
{
	memset(p, 0, sizeof(*p));
	p->g = eng_graph(yaml, &p->s);
	cr_assert_eq(eng__audit_start(&p->audit, rec, p->g, "t.yaml", NULL, &p->err), 0,
		     "%s", p->err.msg);
	p->c = (eng_ctx){ .g = p->g, .audit = &p->audit, .stop = &tstop,
			  .t0_mono = core_now_mono_ns() };
	cr_assert_eq(dag_open(p->g, true, &p->err), 0, "%s", p->err.msg);
	cr_assert_eq(eng__aggs_init(&p->c, &p->err), 0);
	p->sum.per_sink = calloc(p->g->nnodes, sizeof(*p->sum.per_sink));
	cr_assert_not_null(p->sum.per_sink);
}

static inline void tp_open(tpipe *p, const char *yaml)
{
	tp_open_rec(p, yaml, NULL);
}

static inline void tp_close(tpipe *p)
{
	if (p->audit.lock_fd >= 0)
		close(p->audit.lock_fd);
	eng__aggs_free(&p->c);
	dag_free(p->g);
	core_settings_free(p->s);
	eng_summary_release(&p->sum);
}

/* Node id of name (any kind); fails the test when absent. */
static inline int node_id(const dag_graph *g, const char *name)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (!strcmp(g->nodes[i].name, name))
			return (int)i;
	cr_assert_fail("no node '%s'", name);
	return -1;
}

/* Walks the row {"i": i} (as the source would give it) into res. */
static inline int tp_row(tpipe *p, uint64_t seq, long long i, eng_result *res)
{
	eng_row row = { .seq = seq };
	int rc;

	memset(res, 0, sizeof(*res));
	row.data = json_pack("{s:I}", "i", (json_int_t)i);
	rc = eng__process_row(&p->c, &row, res, &p->err);
	eng__row_release(&row);
	return rc;
}

/* ------------------------------------------------------- Landscapes */

typedef struct etmp {
	char root[64];   /* the mkdtemp directory */
	char lmdb[96];   /* root/audit.lmdb */
} etmp;

static inline void etmp_make(etmp *d)
{
	snprintf(d->root, sizeof(d->root), "/tmp/elspeth-eng-XXXXXX");
	cr_assert_not_null(mkdtemp(d->root));
	snprintf(d->lmdb, sizeof(d->lmdb), "%s/audit.lmdb", d->root);
}

/* rm -r of a tree of our own (no symlinks). */
static inline void rm_tree(const char *path)
{
	struct dirent *e;
	struct stat st;
	char sub[512];
	DIR *dir;

	if (lstat(path, &st))
		return;
	if (S_ISDIR(st.st_mode) && (dir = opendir(path))) {
		while ((e = readdir(dir)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    snprintf(sub, sizeof(sub), "%s/%.200s", path, e->d_name) <
			    (int)sizeof(sub))
				rm_tree(sub);
		closedir(dir);
	}
	remove(path);
}

static inline void etmp_remove(etmp *d)
{
	rm_tree(d->root);
}

static inline rec_env *etmp_rec(etmp *d, int flags)
{
	core_err err = { 0 };
	rec_env *rec = NULL;

	cr_assert_eq(rec_open(d->lmdb, flags, &rec, &err), 0, "rec_open: %s", err.msg);
	return rec;
}

static inline void rec_done(rec_env *rec)
{
	core_err err = { 0 };

	cr_assert_eq(rec_close(rec, &err), 0, "rec_close: %s", err.msg);
}

/* The latest checkpoint of run (fails the test when there is none). */
static inline Elspeth__Checkpoint *ckpt_of(rec_env *rec, uint64_t run)
{
	Elspeth__Checkpoint *ck = NULL;
	core_err err = { 0 };

	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_ckpt_load(rec, run, &ck, &err), 0, "%s", err.msg);
	return ck;
}

/* The compact JSON text of v (malloc'd). */
static inline char *jtext(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Asserts the compact JSON of v is `want`. */
#define assert_json(v, want) do { \
	char *got_ = jtext(v); \
	cr_assert_str_eq(got_, (want)); \
	free(got_); \
} while (0)

#endif /* TEST_ENGINE_UTIL_H */

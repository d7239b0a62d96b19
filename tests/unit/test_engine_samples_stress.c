/*
 * test_engine_samples_stress.c — the metric samples (engine/sample.c)
 * under load, as a plain program (exit 0 = pass) for ThreadSanitizer
 * builds (Criterion cannot start under TSan: test_recorder_stress.c).
 *
 * Each round runs a pipelined run sampled every millisecond while rows
 * sleep and wake (plg_blocking) on many workers; the transform's
 * capacity() takes a lock its process() also takes on every row, as the
 * LLM transforms' http_get_stats shares the executor's lock with the
 * requests. Every other round is interrupted (the stop flag, from
 * another thread) and resumed. Then: each attempt's samples are numbered
 * 0, 1 ... and end with its final one, which has released every row the
 * attempt released; the sink holds every row once, in order; the trail
 * (samples included) verifies.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "test_engine_util.h"

#define ROUNDS 6
#define ROWS 400

static atomic_int failures;
static int resumed; /* rounds whose interrupt came before the end */

#define CHECK(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
	atomic_fetch_add(&failures, 1); } } while (0)

static const char *yaml =
	"retry: {max_attempts: 3, initial_delay_seconds: 0}\n"
	"source: {plugin: csv, on_success: t_in,\n"
	"         options: {rows: 400, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {key: seen, value: t, sleep_us: 2000}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* The "executor": what process() and capacity() share. */
static pthread_mutex_t up_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t up_requests;
static unsigned up_in_flight;
static plg_transform_ops ops;

static int counted_process(void *state, const json_t *row, json_t **out,
			   plg_ctx *ctx, core_err *err)
{
	int rc;

	pthread_mutex_lock(&up_lock);
	up_requests++;
	up_in_flight++;
	pthread_mutex_unlock(&up_lock);
	rc = ttx_ops(false)->process(state, row, out, ctx, err);
	pthread_mutex_lock(&up_lock);
	up_in_flight--;
	pthread_mutex_unlock(&up_lock);
	return rc;
}

static bool capacity(void *state, plg_capacity *out)
{
	(void)state;
	pthread_mutex_lock(&up_lock);
	*out = (plg_capacity){ .upstream = "http://stress:1", .rate = 100, .window = 8,
		.ceiling = 64, .in_flight = up_in_flight, .requests = up_requests };
	pthread_mutex_unlock(&up_lock);
	return true;
}

static int run(rec_env *rec, unsigned n, bool resume, eng_summary *sum)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml", .sample_ms = 1 };
	core_settings *s = NULL;
	dag_graph *g = NULL;
	core_err err = { 0 };
	int rc;

	if (core_settings_parse("t.yaml", yaml, &s, &err) || dag_build(s, &g, &err)) {
		CHECK(0, "settings: %s", err.msg);
		exit(1);
	}
	eng_install(g);
	ops = *g->nodes[1].tops;
	ops.process = counted_process;
	ops.capacity = capacity;
	g->nodes[1].tops = &ops;
	rc = resume ? eng_resume(g, &o, "latest", true, NULL, sum, &err) : eng_run(g, &o, sum, &err);
	CHECK(!rc, "%s: %s", resume ? "resume" : "run", err.msg);
	eng_summary_release(sum);
	dag_free(g);
	core_settings_free(s);
	return rc;
}

static void *interrupt_after(void *arg)
{
	struct timespec ts = { 0, (long)(intptr_t)arg * 1000 };

	nanosleep(&ts, NULL);
	atomic_store(&tstop, 1);
	return NULL;
}

typedef struct seen {
	int round;
	uint32_t attempt, next_index;
	bool final_seen[4];
	uint64_t last_released, samples;
} seen;

static int sample_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	seen *s = ctx;
	Elspeth__SampleRecord *r = elspeth__sample_record__unpack(NULL, vl, v);

	(void)k;
	(void)kl;
	CHECK(r, "round %d: a sample does not decode", s->round);
	if (!r)
		return 0;
	if (r->attempt != s->attempt) {
		CHECK(r->attempt == s->attempt + 1, "round %d: attempt %u after %u",
		      s->round, r->attempt, s->attempt);
		CHECK(s->final_seen[s->attempt], "round %d: attempt %u has no final sample",
		      s->round, s->attempt);
		s->attempt = r->attempt;
		s->next_index = 0;
	}
	CHECK(r->index == s->next_index, "round %d: sample %u/%u, want index %u",
	      s->round, r->attempt, r->index, s->next_index);
	s->next_index = r->index + 1;
	CHECK(!s->final_seen[r->attempt % 4], "round %d: a sample after attempt %u's final one",
	      s->round, r->attempt);
	s->final_seen[r->attempt % 4] |= r->final;
	CHECK(r->released <= r->pulled && r->in_flight <= 32, "round %d: sample %u/%u: "
	      "released %llu pulled %llu in flight %llu", s->round, r->attempt, r->index,
	      (unsigned long long)r->released, (unsigned long long)r->pulled,
	      (unsigned long long)r->in_flight);
	CHECK(r->n_upstreams == 1 && r->upstreams[0]->ceiling == 64,
	      "round %d: the capacity control is sampled", s->round);
	s->last_released = r->released;
	s->samples++;
	elspeth__sample_record__free_unpacked(r, NULL);
	return 0;
}

static void check_trail(rec_env *rec, uint64_t run_id, int round, uint32_t attempts)
{
	core_err err = { 0 };
	json_t *rep = NULL;
	seen s = { .round = round };
	rec_txn *t;
	rec_key k;

	CHECK(!rec_flush(rec, &err), "flush: %s", err.msg);
	CHECK(!rec_read_begin(rec, &t, &err), "read: %s", err.msg);
	rec_key_init(&k);
	rec_key_u64(&k, run_id);
	CHECK(!rec_scan(t, REC_SAMPLES, &k, sample_one, &s), "round %d: scan", round);
	rec_read_end(t);
	CHECK(s.attempt + 1 == attempts, "round %d: samples of %u attempts, want %u",
	      round, s.attempt + 1, attempts);
	CHECK(s.final_seen[s.attempt], "round %d: the last attempt has no final sample", round);
	CHECK(s.last_released == ROWS, "round %d: the final sample released %llu rows",
	      round, (unsigned long long)s.last_released);
	CHECK(!rec_verify(rec, run_id, &rep, &err), "verify: %s", err.msg);
	CHECK(json_integer_value(json_object_get(rep, "violation_count")) == 0,
	      "round %d: violations: %s", round,
	      json_string_value(json_array_get(json_object_get(rep, "violations"), 0)));
	CHECK((uint64_t)json_integer_value(json_object_get(json_object_get(rep, "checked"),
	      "samples")) == s.samples, "round %d: verify counted the samples", round);
	json_decref(rep);
}

static void check_sink(int round)
{
	json_t *out = tsink_rows("out");

	CHECK(json_array_size(out) == ROWS, "round %d: sink holds %zu rows", round,
	      json_array_size(out));
	for (size_t k = 0; k < json_array_size(out); k++)
		CHECK(row_i(json_array_get(out, k)) == (long long)k + 1,
		      "round %d: sink row %zu is %lld", round, k + 1,
		      row_i(json_array_get(out, k)));
}

static void round_once(int round)
{
	unsigned n = round % 3 == 2 ? 32 : 8;
	bool interrupt = round % 2;
	eng_summary sum;
	pthread_t th;
	etmp d;
	rec_env *rec;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	json_array_clear(tsink_rows("out"));
	if (interrupt)
		pthread_create(&th, NULL, interrupt_after, (void *)(intptr_t)(5000 + 2000 * round));
	run(rec, n, false, &sum);
	if (interrupt) {
		pthread_join(th, NULL);
		atomic_store(&tstop, 0);
		if (sum.interrupted) {
			resumed++;
			run(rec, 4, true, &sum);
		}
	}
	check_sink(round);
	check_trail(rec, sum.run_id, round, interrupt && sum.attempt ? 2 : 1);
	rec_done(rec);
	etmp_remove(&d);
}

int main(void)
{
	for (int round = 0; round < ROUNDS; round++)
		round_once(round);
	json_decref(tsink_store);
	CHECK(resumed > 0, "no round was interrupted before its end: the resumes went untested");
	if (atomic_load(&failures)) {
		fprintf(stderr, "%d failures\n", atomic_load(&failures));
		return 1;
	}
	printf("samples stress: %d rounds passed (%d interrupted and resumed)\n", ROUNDS, resumed);
	return 0;
}

/*
 * test_engine_halt_stress.c — plg_ctx.halt under load, as a plain program
 * (exit 0 = pass) for ThreadSanitizer builds: Criterion cannot start
 * under TSan (test_recorder_stress.c says why), so this file has its own
 * main() and checks with CHECK; the test plugins' own assertions only
 * run on success paths here.
 *
 * Each round runs a pipelined run in which every row from row K on halts
 * the run from four threads of its own at once (codes 1 and 3 in turn),
 * while other rows are in flight; in some rounds another thread also
 * sets the stop flag (SIGINT) at about the same time. Then: the halt
 * reported is one of those calls, whole (its code with its message); the
 * sink holds rows 1..m in order with no row failed; the trail verifies;
 * a resume (no halts) completes the run with every row once, in order.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "test_engine_util.h"

#define ROUNDS 12
#define ROWS 300

static atomic_int failures;

#define CHECK(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
	atomic_fetch_add(&failures, 1); } } while (0)

typedef struct ran {
	int rc;
	core_err err;
	eng_summary sum;
} ran;

static ran run(const char *yaml, rec_env *rec, unsigned n, bool resume)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml" };
	core_settings *s = NULL;
	dag_graph *g = NULL;
	ran r = { 0 };

	if (core_settings_parse("t.yaml", yaml, &s, &r.err) || dag_build(s, &g, &r.err)) {
		CHECK(0, "settings: %s", r.err.msg);
		exit(1);
	}
	eng_install(g);
	if (resume)
		r.rc = eng_resume(g, &o, "latest", true, NULL, &r.sum, &r.err);
	else
		r.rc = eng_run(g, &o, &r.sum, &r.err);
	eng_summary_release(&r.sum);
	dag_free(g);
	core_settings_free(s);
	atomic_store(&tstop, 0);
	return r;
}

/* SIGINT, from another thread, after about `us` µs. */
static void *interrupt_after(void *arg)
{
	struct timespec ts = { 0, (long)(intptr_t)arg * 1000 };

	nanosleep(&ts, NULL);
	atomic_store(&tstop, 1);
	return NULL;
}

/* The sink holds rows 1..n, each once, in order. */
static void check_sink(size_t n, int round)
{
	json_t *out = tsink_rows("out");

	CHECK(json_array_size(out) == n, "round %d: sink holds %zu rows, want %zu",
	      round, json_array_size(out), n);
	for (size_t k = 0; k < json_array_size(out) && k < n; k++)
		CHECK(row_i(json_array_get(out, k)) == (long long)k + 1,
		      "round %d: sink row %zu is %lld", round, k + 1,
		      row_i(json_array_get(out, k)));
}

static void check_verified(rec_env *rec, uint64_t run_id, int round)
{
	core_err err = { 0 };
	json_t *rep = NULL;

	if (rec_flush(rec, &err) || rec_verify(rec, run_id, &rep, &err)) {
		CHECK(0, "round %d: verify: %s", round, err.msg);
		return;
	}
	CHECK(json_integer_value(json_object_get(rep, "violation_count")) == 0,
	      "round %d: violations: %s", round, jtext(json_object_get(rep, "violations")));
	json_decref(rep);
}

static void round_once(int round)
{
	char yaml[1024];
	long long at = 20 + (round * 37) % 200, row = 0, thread = -1;
	unsigned n = round % 2 ? 64 : 16;
	bool sigint = round % 3 == 2;
	pthread_t th;
	etmp d;
	rec_env *rec;
	ran r;
	int code = 0;

	snprintf(yaml, sizeof(yaml),
		"source: {plugin: csv, on_success: t_in,\n"
		"         options: {rows: %d, on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
		"     options: {key: seen, value: t, sleep_us: 400, halt_at: %lld,\n"
		"               halt_all: true, halt_threads: 4, halt_code: %d}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n",
		ROWS, at, round % 4 < 2 ? 1 : 3);
	json_array_clear(tsink_rows("out"));
	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	atomic_store(&ttx_halt_off, false);
	if (sigint)
		pthread_create(&th, NULL, interrupt_after, (void *)(intptr_t)(2000 + round * 300));
	r = run(yaml, rec, n, false);
	if (sigint) {
		pthread_join(th, NULL);
		/* a run that halted before the "SIGINT" came has cleared the
		 * flag already: the late one must not stop the resume */
		atomic_store(&tstop, 0);
	}
	CHECK(r.rc == 0, "round %d: %s", round, r.err.msg);
	CHECK(r.sum.interrupted, "round %d: not interrupted", round);
	CHECK(r.sum.failed == 0, "round %d: %llu rows failed", round,
	      (unsigned long long)r.sum.failed);
	if (r.sum.halt_code) {
		CHECK(sscanf(r.sum.halt_msg, "account exhausted: top up, then resume "
			     "(row %lld, code %d, thread %lld)", &row, &code, &thread) == 3,
		      "round %d: halt message '%s'", round, r.sum.halt_msg);
		CHECK(code == r.sum.halt_code, "round %d: code %d with the message of %d",
		      round, r.sum.halt_code, code);
		CHECK(row >= at, "round %d: row %lld halted, not from %lld", round, row, at);
	} else {
		CHECK(sigint, "round %d: no halt reported", round);
		CHECK(!r.sum.halt_msg[0], "round %d: a message without a halt", round);
	}
	/* Rows before `at` never halt and are not cut short by a stop
	 * (ttx ignores it): with a halt they are all released. */
	if (!sigint)
		check_sink((size_t)at - 1, round);
	else
		check_sink(json_array_size(tsink_rows("out")), round);
	check_verified(rec, r.sum.run_id, round);

	atomic_store(&ttx_halt_off, true);
	r = run(yaml, rec, 8, true);
	CHECK(r.rc == 0, "round %d: resume: %s", round, r.err.msg);
	CHECK(!r.sum.halt_code && !r.sum.interrupted, "round %d: resume stopped", round);
	CHECK(r.sum.rows == ROWS, "round %d: resume: %llu rows", round,
	      (unsigned long long)r.sum.rows);
	check_sink(ROWS, round);
	check_verified(rec, r.sum.run_id, round);
	rec_done(rec);
	etmp_remove(&d);
}

int main(void)
{
	for (int round = 0; round < ROUNDS; round++)
		round_once(round);
	json_decref(tsink_store);
	if (atomic_load(&failures)) {
		fprintf(stderr, "%d failures\n", atomic_load(&failures));
		return 1;
	}
	printf("halt stress: %d rounds passed\n", ROUNDS);
	return 0;
}

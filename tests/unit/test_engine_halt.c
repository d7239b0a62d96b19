/* test_engine_halt.c — plg_ctx.halt: a transform stops the whole run (an
 * exhausted account: exit code 1; a provider asking to wait too long: 3)
 * from inside process(), on the worker's thread or another one. The run
 * stops as on SIGINT: the rows before the halting row are released in
 * order, that row and the ones after it are neither released nor
 * recorded as failed, the last checkpoint holds them, eng_run reports
 * the code and message (the run record keeps them), and a resume
 * finishes the run with the sinks of an uninterrupted one (its dry run
 * says why the run stopped) — in sequential and pipelined mode, and when
 * the resume itself is halted.
 * The halting transform is ttx's halt_at (test_engine_util.h). */
#include "test_engine_util.h"

TestSuite(halt, .timeout = TIMEOUT);

#define ROWS 30
#define AT 12

/* Settings with ttx options `topts` for transform t, and on_error
 * (YAML text, or ""); malloc'd. */
static char *halting(const char *on_error, const char *topts)
{
	char *yaml = malloc(2048);

	cr_assert_not_null(yaml);
	cr_assert_lt(snprintf(yaml, 2048,
		"retry: {max_attempts: 3, initial_delay_seconds: 0}\n"
		"source: {plugin: csv, on_success: t_in,\n"
		"         options: {rows: %d, on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: out,%s\n"
		"     options: {key: seen, value: t, sleep_us: 300, %s}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n",
		ROWS, on_error, topts), 2048);
	return yaml;
}

typedef struct ran {
	int rc;
	core_err err;
	eng_summary sum;  /* per_sink released */
} ran;

/* eng_run (resume: eng_resume of the latest run) of yaml with n rows in
 * flight; the stop flag is cleared after, as a new process would start. */
static ran run(const char *yaml, rec_env *rec, unsigned n, bool resume)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml" };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	ran r = { 0 };

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

/* The run record of run (from `runs`): status and error. */
static json_t *run_record(rec_env *rec, uint64_t run_id)
{
	core_err err = { 0 };
	json_t *runs = NULL, *r;
	size_t i;

	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_list_runs(rec, &runs, &err), 0, "%s", err.msg);
	json_array_foreach(runs, i, r)
		if ((uint64_t)json_integer_value(json_object_get(r, "run_id")) == run_id) {
			json_incref(r);
			json_decref(runs);
			return r;
		}
	cr_assert_fail("run %llu not recorded", (unsigned long long)run_id);
	return NULL;
}

static void assert_verified(rec_env *rec, uint64_t run_id, const char *status)
{
	core_err err = { 0 };
	json_t *rep = NULL;

	cr_assert_eq(rec_verify(rec, run_id, &rep, &err), 0, "%s", err.msg);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "violations: %s", jtext(json_object_get(rep, "violations")));
	cr_assert_str_eq(json_string_value(json_object_get(rep, "status")), status);
	json_decref(rep);
}

/* Rows 1..n of the sink, each once, in order, as t writes them. */
static void assert_prefix(size_t n)
{
	json_t *out = tsink_rows("out");

	cr_assert_eq(json_array_size(out), n, "sink holds %zu rows, want %zu: %s",
		     json_array_size(out), n, jtext(out));
	for (size_t k = 0; k < n; k++) {
		cr_assert_eq(row_i(json_array_get(out, k)), (long long)k + 1,
			     "row %zu written once, in order", k + 1);
		cr_assert_str_eq(json_string_value(json_object_get(json_array_get(out, k),
								   "seen")), "t");
	}
}

/* What every halted run shows: the code and its message, interrupted,
 * the rows before AT released and no row failed; the trail says why
 * (status and error), the last checkpoint holds row AT as in flight,
 * and verify passes. */
static void assert_halted(rec_env *rec, const ran *r, int code, const char *msg)
{
	Elspeth__Checkpoint *ck;
	json_t *rec_run;

	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	cr_assert_eq(r->sum.halt_code, code);
	cr_assert(strstr(r->sum.halt_msg, msg), "halt_msg '%s' lacks '%s'",
		  r->sum.halt_msg, msg);
	cr_assert(r->sum.interrupted, "a halt stops the run as an interrupt does");
	cr_assert_eq(r->sum.failed, 0, "no row is recorded as failed");
	cr_assert_eq(r->sum.outcomes[ENG_FAILED], 0);
	cr_assert_eq(r->sum.rows, AT - 1);
	assert_prefix(AT - 1);
	rec_run = run_record(rec, r->sum.run_id);
	cr_assert_str_eq(json_string_value(json_object_get(rec_run, "status")),
			 code == 3 ? "interrupted" : "failed");
	cr_assert_str_eq(json_string_value(json_object_get(rec_run, "error")),
			 r->sum.halt_msg);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(rec_run, "metrics"),
							"halt_exit_code")), code);
	json_decref(rec_run);
	ck = ckpt_of(rec, r->sum.run_id);
	cr_assert_str_eq(ck->reason, "interrupt");
	cr_assert_eq(ck->released_through_seq, AT - 1);
	cr_assert_geq(ck->n_rows, 1);
	cr_assert_eq(ck->rows[0]->seq, AT);
	cr_assert_not(ck->rows[0]->done, "the halting row is run again by the resume");
	for (size_t i = 0; i < ck->n_rows; i++)
		cr_assert_eq(ck->rows[i]->seq, AT + i);
	rec_ckpt_free(ck);
	assert_verified(rec, r->sum.run_id, code == 3 ? "interrupted" : "failed");
}

/* The sink of the same pipeline run without a halt, from a Landscape of
 * its own (a new copy; the test's sink is emptied for the next run). */
static json_t *uninterrupted_sink(const char *yaml, unsigned n)
{
	etmp d;
	rec_env *rec;
	ran r;
	json_t *out;

	atomic_store(&ttx_halt_off, true);
	json_array_clear(tsink_rows("out"));
	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, n, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(r.sum.halt_code, 0);
	out = json_deep_copy(tsink_rows("out"));
	json_array_clear(tsink_rows("out"));
	rec_done(rec);
	etmp_remove(&d);
	atomic_store(&ttx_halt_off, false);
	return out;
}

/* Resumes the latest run: it completes, with the sinks of a run that was
 * never halted. */
static void assert_resumes(rec_env *rec, const char *yaml, unsigned n,
			   const json_t *want)
{
	ran r = run(yaml, rec, n, true);
	char *got, *exp;

	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(r.sum.halt_code, 0);
	cr_assert_str_eq(r.sum.halt_msg, "");
	cr_assert_not(r.sum.interrupted);
	cr_assert_geq(r.sum.attempt, 1);
	cr_assert_geq(r.sum.rows_rerun, 1, "the halting row ran again");
	cr_assert_eq(r.sum.rows, ROWS);
	cr_assert_eq(r.sum.succeeded, ROWS);
	cr_assert_eq(r.sum.failed, 0);
	assert_prefix(ROWS);
	got = jtext(tsink_rows("out"));
	exp = jtext(want);
	cr_assert_str_eq(got, exp, "the sink equals an uninterrupted run's");
	free(got);
	free(exp);
	assert_verified(rec, r.sum.run_id, "completed");
}

/* The dry run of a resume says why the run stopped. */
static void assert_plan_says_why(rec_env *rec, const char *yaml, const ran *halted)
{
	eng_opts o = { .stop = &tstop, .rec = rec, .settings_path = "t.yaml" };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };
	json_t *plan = NULL;

	cr_assert_eq(eng_resume(g, &o, "latest", false, &plan, &sum, &err), 0, "%s", err.msg);
	cr_assert_str_eq(json_string_value(json_object_get(plan, "status")),
			 halted->sum.halt_code == 3 ? "interrupted" : "failed");
	cr_assert_str_eq(json_string_value(json_object_get(plan, "error")),
			 halted->sum.halt_msg);
	json_decref(plan);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

/* A halt at row AT from topts' halting transform, then a resume. */
static void halt_then_resume(const char *on_error, const char *topts, unsigned n,
			     unsigned resume_n, int code, const char *msg)
{
	char *yaml = halting(on_error, topts);
	json_t *want = uninterrupted_sink(yaml, 1);
	etmp d;
	rec_env *rec;
	ran r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, n, false);
	assert_halted(rec, &r, code, msg);
	assert_plan_says_why(rec, yaml, &r);
	assert_resumes(rec, yaml, resume_n, want);
	json_decref(want);
	free(yaml);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------------ on the worker */

Test(halt, exit_1_sequential_leaves_the_row_for_the_resume)
{
	halt_then_resume("", "halt_at: 12", 1, 1, 1,
			 "account exhausted: top up, then resume (row 12, code 1, thread 0)");
}

Test(halt, exit_1_pipelined_leaves_the_row_for_the_resume)
{
	halt_then_resume("", "halt_at: 12", 8, 4, 1,
			 "account exhausted: top up, then resume (row 12, code 1, thread 0)");
}

Test(halt, exit_3_is_an_interrupted_run)
{
	halt_then_resume("", "halt_at: 12, halt_code: 3", 1, 1, 3,
			 "account exhausted: top up, then resume (row 12, code 3, thread 0)");
}

Test(halt, exit_3_pipelined)
{
	halt_then_resume("", "halt_at: 12, halt_code: 3", 6, 1, 3, "(row 12, code 3");
}

/* ---------------------------------------------------- from other threads */

/* As an HTTP executor would: the call comes from a thread of the
 * transform's own, while process() waits for it. */
Test(halt, from_another_thread_sequential)
{
	halt_then_resume("", "halt_at: 12, halt_threads: 1", 1, 1, 1,
			 "account exhausted: top up, then resume (row 12, code 1, thread 0)");
}

Test(halt, from_another_thread_pipelined)
{
	halt_then_resume("", "halt_at: 12, halt_threads: 1", 8, 8, 1,
			 "account exhausted: top up, then resume (row 12, code 1, thread 0)");
}

/* Eight threads at once, with codes 1 and 3 in turn: one wins, whole —
 * its code with its own message. */
Test(halt, many_threads_at_once_one_wins_whole)
{
	char *yaml = halting("", "halt_at: 12, halt_threads: 8");
	etmp d;
	rec_env *rec;
	ran r;
	int code = 0;
	long long row = 0, thread = -1;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, 8, false);
	cr_assert_eq(sscanf(r.sum.halt_msg,
			    "account exhausted: top up, then resume (row %lld, code %d, thread %lld)",
			    &row, &code, &thread), 3, "%s", r.sum.halt_msg);
	cr_assert_eq(row, AT);
	cr_assert_eq(code, r.sum.halt_code, "the code came with its message");
	cr_assert_eq(code, thread % 2 ? 3 : 1);
	assert_halted(rec, &r, code, "account exhausted");
	free(yaml);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------- what the row returns */

/* The halting transform returns its own failure (HTTP 402), not
 * CORE_ESTOPPED: after a halt, a failed row is left for the resume, not
 * sent to on_error. */
Test(halt, a_row_failing_after_the_halt_is_not_failed)
{
	halt_then_resume("\n     on_error: discard,", "halt_at: 12, halt_fails: true",
			 1, 1, 1, "(row 12, code 1, thread 0)");
}

Test(halt, a_row_failing_after_the_halt_is_not_failed_pipelined)
{
	halt_then_resume("\n     on_error: discard,", "halt_at: 12, halt_fails: true",
			 8, 8, 1, "(row 12, code 1, thread 0)");
}

/* ------------------------------------------------------------- resumes */

/* The resume runs row AT again, with n rows in flight, and it halts
 * again: the resume reports it as the run did, and a second resume
 * finishes. Stopped before the first checkpoint's rows were all back in,
 * a resume keeps that checkpoint as the latest (before: its last
 * checkpoint left them out, and verify found their tokens without an
 * outcome — always with n = 1, 1 run in 12 under ASan with n = 4). */
static void resume_halted(unsigned n)
{
	char *yaml = halting("", "halt_at: 12, halt_code: 3");
	json_t *want = uninterrupted_sink(yaml, 1);
	etmp d;
	rec_env *rec;
	ran r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, 4, false);
	assert_halted(rec, &r, 3, "(row 12, code 3");
	atomic_store(&ttx_halted, false); /* row 12 halts once more */
	r = run(yaml, rec, n, true);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(r.sum.attempt, 1);
	cr_assert_eq(r.sum.halt_code, 3);
	cr_assert(strstr(r.sum.halt_msg, "(row 12, code 3"), "%s", r.sum.halt_msg);
	cr_assert(r.sum.interrupted);
	assert_prefix(AT - 1);
	assert_verified(rec, r.sum.run_id, "interrupted");
	assert_resumes(rec, yaml, 1, want);
	json_decref(want);
	free(yaml);
	rec_done(rec);
	etmp_remove(&d);
}

Test(halt, a_resume_can_be_halted_too)
{
	resume_halted(4);
}

Test(halt, a_sequential_resume_can_be_halted_too)
{
	resume_halted(1);
}

/* A row cut short before the halt's call has returned on its thread
 * (or with no halt at all): the run stops all the same, and is not
 * recorded as completed — it would then not resume. */
static void cut_short_without_a_stop(unsigned n)
{
	char *yaml = halting("", "cut_at: 12");
	json_t *want = uninterrupted_sink(yaml, 1);
	etmp d;
	rec_env *rec;
	ran r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, n, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert(r.sum.interrupted);
	cr_assert_eq(r.sum.halt_code, 0);
	cr_assert_eq(r.sum.failed, 0);
	assert_prefix(AT - 1);
	assert_verified(rec, r.sum.run_id, "interrupted");
	assert_resumes(rec, yaml, n, want);
	json_decref(want);
	free(yaml);
	rec_done(rec);
	etmp_remove(&d);
}

Test(halt, a_row_cut_short_without_a_stop_flag_stops_the_run)
{
	cut_short_without_a_stop(1);
}

Test(halt, a_row_cut_short_without_a_stop_flag_stops_the_run_pipelined)
{
	cut_short_without_a_stop(8);
}

/* --------------------------------------------------------- without audit */

/* No Landscape and no stop flag from the caller: the engine's own flag
 * stops the run. Without checkpoints nothing would run the row again,
 * so it fails as on SIGINT (here: discarded). */
Test(halt, without_a_stop_flag_or_checkpoints)
{
	char *yaml = halting("\n     on_error: discard,", "halt_at: 12");
	eng_opts o = { .max_rows_in_flight = 4 };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	json_t *out = tsink_rows("out");

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.halt_code, 1);
	cr_assert(strstr(sum.halt_msg, "(row 12, code 1, thread 0)"), "%s", sum.halt_msg);
	cr_assert(sum.interrupted);
	cr_assert_eq(sum.failed, 1, "row 12, with nothing to resume it");
	/* The rows in flight at the halt finish and are written, as on
	 * SIGINT; none is pulled after it. */
	cr_assert_lt(sum.rows, ROWS);
	cr_assert_geq(sum.rows, AT);
	cr_assert_eq(json_array_size(out), sum.rows - 1);
	for (size_t k = 0; k < json_array_size(out); k++)
		cr_assert_eq(row_i(json_array_get(out, k)), (long long)(k + 1 < AT ? k + 1 : k + 2),
			     "rows in order, without row 12: %s", jtext(out));
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	free(yaml);
}

/* A run that nobody halts says so. */
Test(halt, an_ordinary_run_reports_no_halt)
{
	char *yaml = halting("", "fail_mod: 0");
	etmp d;
	rec_env *rec;
	ran r;
	json_t *rec_run;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	r = run(yaml, rec, 4, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(r.sum.halt_code, 0);
	cr_assert_str_eq(r.sum.halt_msg, "");
	cr_assert_not(r.sum.interrupted);
	rec_run = run_record(rec, r.sum.run_id);
	cr_assert_str_eq(json_string_value(json_object_get(rec_run, "status")), "completed");
	cr_assert_null(json_object_get(rec_run, "error"));
	cr_assert_null(json_object_get(json_object_get(rec_run, "metrics"), "halt_exit_code"));
	json_decref(rec_run);
	free(yaml);
	rec_done(rec);
	etmp_remove(&d);
}

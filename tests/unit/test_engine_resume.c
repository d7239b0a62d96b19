/* test_engine_resume.c — engine/resume.c through eng_resume: the plan
 * (which rows are released from the checkpoint as they were, which are
 * run again, where the source goes on), what a resume then does (done
 * rows not recomputed, running rows read again and checked against their
 * payload hash, aggregation buffers and totals put back, sinks cut back),
 * and every refusal: completed run, other pipeline, other settings, sink
 * or source changed, no Landscape, a run still held, a checkpoint whose
 * rows are not consecutive, an append sink when no checkpoint was
 * written. */
#include "test_engine_util.h"

TestSuite(resume, .timeout = TIMEOUT);

/* Rows 1 and 2 wait in a count-3 aggregation; the others go through t. */
static const char *resumable =
	"source: {plugin: csv, on_success: g_in,\n"
	"         options: {rows: 8, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {key: seen, value: t}}\n"
	"gates:\n"
	"  - {name: early, input: g_in, condition: \"row['i'] <= 2\",\n"
	"     routes: {'true': stats_in, 'false': t_in}}\n"
	"aggregations:\n"
	"  - {name: stats, plugin: batch_stats, input: stats_in, on_success: out,\n"
	"     trigger: {count: 3}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* Row seq as the test source gives it ({"i": seq}), processed. */
static void process(tpipe *p, eng_row *row, uint64_t seq, eng_result *res)
{
	memset(row, 0, sizeof(*row));
	memset(res, 0, sizeof(*res));
	row->seq = seq;
	row->data = json_pack("{s:I}", "i", (json_int_t)seq);
	row->pos = (plg_source_pos){ seq, seq + 1 };
	row->has_pos = true;
	cr_assert_eq(eng__process_row(&p->c, row, res, &p->err), 0, "%s", p->err.msg);
}

static void release(tpipe *p, uint64_t seq)
{
	eng_row row;
	eng_result res;

	process(p, &row, seq, &res);
	p->sum.rows++;
	cr_assert_eq(eng__emit(&p->c, &res, &p->sum, &p->err), 0, "%s", p->err.msg);
	eng__result_release(&res);
	eng__row_release(&row);
}

/* A run that crashed after a checkpoint: rows 1-3 released (1 and 2
 * buffered in the aggregation, 3 in the sink), row 4 done (its token's
 * data marked "from": "checkpoint", so a recomputed row would show),
 * row `running` still running; the sink got one more write after the
 * checkpoint. Returns the run id. `keep_lock`: the run's process is
 * still alive (its lock fd is returned in *lock). */
static uint64_t crash(rec_env *rec, uint64_t running_seq, const char *yaml,
		      int *lock)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_ROW };
	eng_row done, running;
	eng_result done_res;
	eng_ckpt_row rows[2];
	eng_ckpt_at at = { .reason = "interval", .released = 3, .frontier = 5,
			   .pos = { 5, 6 }, .has_pos = true, .rows = rows, .nrows = 2 };
	uint64_t run, tok;

	tp_open_rec(&p, yaml, rec);
	p.c.ckpt = &k;
	release(&p, 1);
	release(&p, 2);
	release(&p, 3);
	process(&p, &done, 4, &done_res);
	json_object_set_new(done_res.tokens[0].data, "from", json_string("checkpoint"));
	memset(&running, 0, sizeof(running));
	running.seq = running_seq;
	running.data = json_pack("{s:I}", "i", (json_int_t)running_seq);
	cr_assert_eq(eng__audit_row(&p.audit, &running, &tok, &p.err), 0);
	rows[0] = (eng_ckpt_row){ .row = &done, .res = &done_res };
	rows[1] = (eng_ckpt_row){ .row = &running, .before = { 4, 5 }, .has_before = true };
	cr_assert_eq(eng__ckpt_write(&p.c, &at, &p.sum, &p.err), 0, "%s", p.err.msg);
	cr_assert_eq(rec_flush(rec, &p.err), 0);
	json_array_append_new(tsink_rows("out"), json_pack("{s:s}", "late", "write"));
	run = p.audit.run_id;
	if (lock) {
		*lock = p.audit.lock_fd;
		p.audit.lock_fd = -1;
	}
	eng__result_release(&done_res);
	eng__row_release(&done);
	eng__row_release(&running);
	tp_close(&p);
	return run;
}

typedef struct resumed {
	int rc;
	core_err err;
	json_t *plan;
	eng_summary sum;  /* per_sink released */
} resumed;

/* eng_resume of the latest run with yaml; noseek: the source cannot
 * seek. */
static resumed resume_run(const char *yaml, rec_env *rec, unsigned n,
			  bool execute, bool noseek)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml" };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	resumed r = { 0 };

	if (noseek)
		g->nodes[0].sops = tsrc_noseek_ops();
	r.rc = eng_resume(g, &o, "latest", execute, &r.plan, &r.sum, &r.err);
	eng_summary_release(&r.sum);
	dag_free(g);
	core_settings_free(s);
	return r;
}

static const json_t *ck_of(const json_t *plan, const char *key)
{
	return json_object_get(json_object_get(plan, "checkpoint"), key);
}

static long long ck_int(const json_t *plan, const char *key)
{
	cr_assert_not_null(ck_of(plan, key), "plan lacks checkpoint.%s", key);
	return (long long)json_integer_value(ck_of(plan, key));
}

/* ----------------------------------------------------------------- plan */

Test(resume, plan_says_what_is_reused_and_rerun_and_writes_nothing)
{
	etmp d;
	rec_env *rec;
	uint64_t run;
	uint32_t attempts = 9;
	resumed r;
	const json_t *sink, *agg;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	run = crash(rec, 5, resumable, NULL);
	r = resume_run(resumable, rec, 1, false, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(json_integer_value(json_object_get(r.plan, "run_id")), (json_int_t)run);
	cr_assert_str_eq(json_string_value(json_object_get(r.plan, "status")), "running");
	cr_assert_eq(json_integer_value(json_object_get(r.plan, "next_attempt")), 1);
	cr_assert_str_eq(json_string_value(ck_of(r.plan, "reason")), "interval");
	cr_assert_eq(ck_int(r.plan, "released_through_seq"), 3);
	cr_assert_eq(ck_int(r.plan, "completed_waiting"), 1, "row 4 is reused");
	cr_assert_eq(ck_int(r.plan, "in_flight"), 1, "row 5 is run again");
	cr_assert_eq(ck_int(r.plan, "source_continues_after_seq"), 5);
	cr_assert(json_is_false(ck_of(r.plan, "source_done")));
	cr_assert_eq(ck_int(r.plan, "source_offset"), 5);
	sink = json_array_get(json_object_get(r.plan, "sinks"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(sink, "name")), "out");
	cr_assert_eq(json_integer_value(json_object_get(sink, "rows")), 1);
	agg = json_array_get(json_object_get(r.plan, "aggregations"), 0);
	cr_assert_str_eq(json_string_value(json_object_get(agg, "name")), "stats");
	cr_assert_eq(json_integer_value(json_object_get(agg, "buffered")), 2);
	/* nothing was changed */
	cr_assert_eq(json_array_size(tsink_rows("out")), 2, "the sink was not cut back");
	cr_assert_eq(rec_resume_count(rec, run, &attempts, &r.err), 0);
	cr_assert_eq(attempts, 0, "no resume recorded");
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------------------- execute */

static void resumes_from_the_checkpoint(unsigned n, bool noseek)
{
	etmp d;
	rec_env *rec;
	resumed r;
	json_t *out;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 5, resumable, NULL);
	cr_assert_eq(ttx_calls, 2, "rows 3 and 4 went through t");
	r = resume_run(resumable, rec, n, true, noseek);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	out = tsink_rows("out");
	/* row 3 before the checkpoint; the late write cut off; row 4 as the
	 * checkpoint held it; 5 (run again) to 8 from the source; then the
	 * restored buffer (rows 1 and 2) flushed at the end */
	assert_json(out, "[{\"i\":3,\"seen\":\"t\"},"
		    "{\"i\":4,\"seen\":\"t\",\"from\":\"checkpoint\"},"
		    "{\"i\":5,\"seen\":\"t\"},{\"i\":6,\"seen\":\"t\"},"
		    "{\"i\":7,\"seen\":\"t\"},{\"i\":8,\"seen\":\"t\"},"
		    "{\"n\":2,\"first\":1,\"last\":2}]");
	assert_json(tagg_batches, "[[1,2]]");
	cr_assert_eq(ttx_calls, 2 + 4, "row 4 is not processed again");
	cr_assert_eq(r.sum.attempt, 1);
	cr_assert_eq(r.sum.rows_reused, 1);
	cr_assert_eq(r.sum.rows_rerun, 1);
	cr_assert_eq(r.sum.rows, 8, "the whole run's rows");
	cr_assert_eq(r.sum.batches, 1);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, done_rows_reused_running_rows_rerun_sequential)
{
	resumes_from_the_checkpoint(1, false);
}

Test(resume, done_rows_reused_running_rows_rerun_pipelined)
{
	resumes_from_the_checkpoint(4, false);
}

Test(resume, source_without_seek_is_read_from_the_start)
{
	resumes_from_the_checkpoint(1, true);
}

static const char *stopping =
	"retry: {max_attempts: 3, initial_delay_seconds: 0}\n"
	"source: {plugin: csv, on_success: t_in,\n"
	"         options: {rows: 30, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {stop_at: 4, sleep_us: 500}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* Runs `stopping` (until its interrupt at row 4, unless ttx_stopped is
 * already set); returns the run id. */
static uint64_t interrupted_run(rec_env *rec, unsigned n)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml" };
	core_settings *s;
	dag_graph *g = eng_graph(stopping, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.interrupted, atomic_load(&tstop) != 0);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	atomic_store(&tstop, 0);
	return sum.run_id;
}

static void interrupt_then_resume(unsigned run_n, unsigned resume_n)
{
	etmp d;
	rec_env *rec;
	resumed r;
	json_t *out, *rep = NULL;
	uint64_t run;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	run = interrupted_run(rec, run_n);
	r = resume_run(stopping, rec, resume_n, true, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_not(r.sum.interrupted);
	out = tsink_rows("out");
	cr_assert_eq(json_array_size(out), 30);
	for (size_t k = 0; k < 30; k++)
		cr_assert_eq(row_i(json_array_get(out, k)), (long long)k + 1,
			     "row %zu written once, in order", k + 1);
	cr_assert_eq(r.sum.rows, 30);
	cr_assert_eq(r.sum.succeeded, 30);
	cr_assert_geq(r.sum.rows_rerun, 1, "row 4 ran again");
	/* the audit trail of the whole run holds */
	cr_assert_eq(rec_verify(rec, run, &rep, &r.err), 0, "%s", r.err.msg);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "violations: %s", jtext(json_object_get(rep, "violations")));
	cr_assert_str_eq(json_string_value(json_object_get(rep, "status")), "completed");
	json_decref(rep);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, interrupted_run_finishes_sequential)
{
	interrupt_then_resume(1, 1);
}

Test(resume, interrupted_run_finishes_with_other_rows_in_flight)
{
	interrupt_then_resume(4, 7);
}

Test(resume, killed_while_starting_resumes_from_the_start)
{
	etmp d;
	rec_env *rec;
	tpipe p;
	resumed r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	tp_open_rec(&p, stopping, rec); /* recorded, no checkpoint yet */
	tp_close(&p);
	r = resume_run(stopping, rec, 1, false, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_str_eq(json_string_value(ck_of(r.plan, "reason")),
			 "none (stopped while starting)");
	cr_assert_eq(ck_int(r.plan, "released_through_seq"), 0);
	json_decref(r.plan);
	atomic_store(&ttx_stopped, true); /* no interrupt this time */
	r = resume_run(stopping, rec, 1, true, false);
	cr_assert_eq(r.rc, 0, "%s", r.err.msg);
	cr_assert_eq(json_array_size(tsink_rows("out")), 30);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------------------ refusals */

static void expect_refusal(resumed r, int code, const char *needle)
{
	cr_assert_eq(r.rc, code, "rc %d: %s", r.rc, r.err.msg);
	cr_assert(strstr(r.err.msg, needle), "message '%s' lacks '%s'", r.err.msg, needle);
	cr_assert_null(r.plan);
}

Test(resume, completed_run_is_refused)
{
	etmp d;
	rec_env *rec;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	atomic_store(&ttx_stopped, true);
	interrupted_run(rec, 1); /* not interrupted after all */
	expect_refusal(resume_run(stopping, rec, 1, false, false), CORE_EDATA,
		       "completed; there is nothing to resume");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, other_pipeline_is_refused)
{
	etmp d;
	rec_env *rec;
	char other[2048];
	char *at;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	interrupted_run(rec, 1);
	snprintf(other, sizeof(other), "%s", stopping);
	at = strstr(other, "sleep_us: 500");
	cr_assert_not_null(at);
	memcpy(at, "sleep_us: 501", 13); /* t's options: its config hash */
	expect_refusal(resume_run(other, rec, 1, true, false), CORE_EDATA,
		       "was run with another pipeline");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, other_settings_are_refused)
{
	etmp d;
	rec_env *rec;
	char other[2048];

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	interrupted_run(rec, 1);
	snprintf(other, sizeof(other), "%s", stopping);
	other[strlen("retry: {max_attempts: ")] = '4'; /* not in the topology */
	expect_refusal(resume_run(other, rec, 1, true, false), CORE_EDATA,
		       "the settings changed since run");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, changed_sink_is_refused_before_anything_is_cut)
{
	etmp d;
	rec_env *rec;
	json_t *out;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 5, resumable, NULL);
	out = tsink_rows("out");
	json_array_set_new(out, 0, json_pack("{s:i}", "i", 99)); /* edited */
	expect_refusal(resume_run(resumable, rec, 1, true, false), CORE_EDATA,
		       "does not hold what the checkpoint counted");
	cr_assert_eq(json_array_size(out), 2, "nothing cut back");
	rec_done(rec);
	etmp_remove(&d);
}

/* A bug these tests found (fixed): check_sink() in engine/resume.c prefixes "sink '%s': "
 * through core_err_prefix, which adds ": " itself, so the message reads
 * "sink 'out': : tsink 'out' does not hold ...". */
Test(resume, changed_sink_message_names_the_sink_once)
{
	etmp d;
	rec_env *rec;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 5, resumable, NULL);
	json_array_set_new(tsink_rows("out"), 0, json_pack("{s:i}", "i", 99));
	expect_refusal(resume_run(resumable, rec, 1, true, false), CORE_EDATA,
		       "sink 'out': tsink 'out' does not hold");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, changed_source_row_is_refused)
{
	etmp d;
	rec_env *rec;
	resumed r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	interrupted_run(rec, 1);
	tsrc_salt = 1; /* every row now differs */
	r = resume_run(stopping, rec, 1, true, false);
	cr_assert_eq(r.rc, CORE_EDATA);
	cr_assert(strstr(r.err.msg, "row 4 of the source differs from what the run read"),
		  "%s", r.err.msg);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, shorter_source_is_refused)
{
	etmp d;
	rec_env *rec;
	resumed r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 5, resumable, NULL);
	tsrc_limit = 3;
	r = resume_run(resumable, rec, 1, true, true); /* reads from the start */
	cr_assert_eq(r.rc, CORE_EDATA);
	cr_assert(strstr(r.err.msg, "the source now ends after 3 rows; the run had read 5"),
		  "%s", r.err.msg);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, checkpoint_rows_must_be_consecutive)
{
	etmp d;
	rec_env *rec;
	resumed r;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 6, resumable, NULL); /* rows 4 and 6: 5 is missing */
	r = resume_run(resumable, rec, 1, true, false);
	cr_assert_eq(r.rc, CORE_EDATA);
	cr_assert(strstr(r.err.msg, "the checkpoint's rows are not consecutive after row 3"),
		  "%s", r.err.msg);
	json_decref(r.plan);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, run_still_held_is_refused)
{
	etmp d;
	rec_env *rec;
	int lock = -1;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	crash(rec, 5, resumable, &lock);
	cr_assert_geq(lock, 0);
	expect_refusal(resume_run(resumable, rec, 1, false, false), CORE_EDATA, "pid");
	close(lock);
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, without_landscape_is_refused)
{
	expect_refusal(resume_run(resumable, NULL, 1, false, false), CORE_ECONFIG,
		       "resume needs the Landscape");
}

Test(resume, unknown_run_is_refused)
{
	etmp d;
	rec_env *rec;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	expect_refusal(resume_run(resumable, rec, 1, false, false), CORE_EDATA,
		       "no runs recorded yet");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, append_sink_without_checkpoint_is_refused)
{
	static const char *yaml =
		"source: {plugin: csv, on_success: out,\n"
		"         options: {rows: 3, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out, mode: append}}\n";
	etmp d;
	rec_env *rec;
	tpipe p;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	tp_open_rec(&p, yaml, rec);
	tp_close(&p);
	expect_refusal(resume_run(yaml, rec, 1, false, false), CORE_EDATA,
		       "sink 'out' appends to its file");
	rec_done(rec);
	etmp_remove(&d);
}

Test(resume, a_new_run_has_no_checkpoint_rows)
{
	tpipe p;
	eng_row row = { 0 };

	tp_open(&p, resumable);
	cr_assert_eq(eng__pre_next(&p.c, 1, &row), 0);
	cr_assert_eq(eng__pre_last(&p.c), 0);
	cr_assert_not(eng__replay_find(&p.c, 1, 1, "x", 1, NULL, NULL, NULL));
	tp_close(&p);
}

/* test_engine_samples.c — the run's metric samples (engine/sample.c,
 * docs/report.md): taken about every sample_ms and once at the end of
 * each attempt, numbered 0, 1 ... per attempt, holding the pipeline's
 * counters, outcomes, calls and each transform's capacity control;
 * none without the Landscape; the same sink rows whatever the sampling
 * rate; a resume samples under the same run with its attempt; verify
 * counts and checks them. */
#include "test_engine_util.h"

TestSuite(samples, .timeout = TIMEOUT);

static const char *slow =
	"source: {plugin: csv, on_success: t_in,\n"
	"         options: {rows: 40, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: u_in,\n"
	"     on_error: discard,\n"
	"     options: {key: seen, value: t, sleep_us: 4000, fail_mod: 10}}\n"
	"  - {name: u, plugin: passthrough, input: u_in, on_success: out,\n"
	"     options: {}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* The transform t reports a capacity control; u does not. */
static atomic_uint tcap_calls;

static bool tcap(void *state, plg_capacity *out)
{
	(void)state;
	atomic_fetch_add(&tcap_calls, 1);
	*out = (plg_capacity){ .upstream = "http://mock:1", .rate = 12.5,
		.window = 4, .ceiling = 8, .in_flight = 3, .requests = 77,
		.refusals = 5, .held_by = "pace" };
	return true;
}

static dag_graph *graph_with_capacity(const char *yaml, core_settings **s)
{
	static plg_transform_ops ops;
	dag_graph *g = eng_graph(yaml, s);

	ops = *g->nodes[node_id(g, "t")].tops;
	ops.capacity = tcap;
	g->nodes[node_id(g, "t")].tops = &ops;
	return g;
}

typedef struct samples {
	Elspeth__SampleRecord *v[4096];
	size_t n;
} samples;

static int sample_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	samples *s = ctx;

	(void)k;
	cr_assert_eq(kl, 16, "key: run(8), attempt(4), index(4)");
	cr_assert_lt(s->n, 4096);
	s->v[s->n] = elspeth__sample_record__unpack(NULL, vl, v);
	cr_assert_not_null(s->v[s->n], "a sample decodes");
	s->n++;
	return 0;
}

static void samples_load(rec_env *rec, uint64_t run, samples *s)
{
	core_err err = { 0 };
	rec_txn *t;
	rec_key k;

	s->n = 0;
	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_read_begin(rec, &t, &err), 0, "%s", err.msg);
	rec_key_init(&k);
	rec_key_u64(&k, run);
	cr_assert_eq(rec_scan(t, REC_SAMPLES, &k, sample_one, s), 0);
	rec_read_end(t);
}

static void samples_free(samples *s)
{
	for (size_t i = 0; i < s->n; i++)
		elspeth__sample_record__free_unpacked(s->v[i], NULL);
	s->n = 0;
}

static uint64_t count_of(Elspeth__SampleCount **c, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i]->name, name))
			return c[i]->n;
	return 0;
}

static eng_summary run_sampled(const char *yaml, rec_env *rec, unsigned n,
			       unsigned sample_ms)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml", .sample_ms = sample_ms };
	core_settings *s;
	dag_graph *g = graph_with_capacity(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	return sum;
}

/* Samples of attempt 0: numbered from 0, in time order, the last one
 * final with the run's totals. */
static void check_samples(unsigned n)
{
	etmp d;
	rec_env *rec;
	eng_summary sum;
	samples s;
	const Elspeth__SampleRecord *last;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_sampled(slow, rec, n, 5);
	samples_load(rec, sum.run_id, &s);
	/* 40 rows of ~4 ms (sequential: 160 ms; 4 in flight: ~40 ms) at a
	 * sample every 5 ms: a first one, a few more, the final one */
	cr_assert_geq(s.n, 3, "%zu samples", s.n);
	for (size_t i = 0; i < s.n; i++) {
		const Elspeth__SampleRecord *r = s.v[i];

		cr_assert_eq(r->run_id, sum.run_id);
		cr_assert_eq(r->attempt, 0);
		cr_assert_eq(r->index, i, "numbered 0, 1 ... in key order");
		cr_assert_eq(r->final, i + 1 == s.n, "only the last one is final");
		cr_assert_leq(r->released, r->pulled);
		cr_assert_leq(r->in_flight, n);
		if (i) {
			cr_assert_geq(r->at_ns, s.v[i - 1]->at_ns);
			cr_assert_geq(r->elapsed_ns, s.v[i - 1]->elapsed_ns);
			cr_assert_geq(r->released, s.v[i - 1]->released);
		}
		cr_assert_eq(r->n_upstreams, 1, "t reports its capacity, u none");
		cr_assert_eq(r->upstreams[0]->node_id, (uint32_t)1);
		cr_assert_str_eq(r->upstreams[0]->upstream, "http://mock:1");
		cr_assert_float_eq(r->upstreams[0]->rate, 12.5, 1e-12);
		cr_assert_float_eq(r->upstreams[0]->window, 4.0, 1e-12);
		cr_assert_eq(r->upstreams[0]->ceiling, 8);
		cr_assert_eq(r->upstreams[0]->in_flight, 3);
		cr_assert_eq(r->upstreams[0]->requests, 77);
		cr_assert_eq(r->upstreams[0]->refusals, 5);
		cr_assert_str_eq(r->upstreams[0]->held_by, "pace");
	}
	last = s.v[s.n - 1];
	cr_assert_eq(last->pulled, 40);
	cr_assert_eq(last->released, 40);
	cr_assert_eq(last->in_flight, 0);
	cr_assert_eq(last->waiting, 0);
	/* rows 10, 20, 30, 40 fail in t (no on_error: discarded as FAILED) */
	cr_assert_eq(count_of(last->outcomes, last->n_outcomes, "COMPLETED"), 36);
	cr_assert_eq(count_of(last->outcomes, last->n_outcomes, "FAILED"), 4);
	cr_assert_eq(count_of(last->outcomes, last->n_outcomes, "ROUTED"), 0,
		     "a count of nothing is not stored");
	cr_assert_eq(s.v[0]->released, 0, "the first sample: where the run starts");
	samples_free(&s);
	rec_done(rec);
	etmp_remove(&d);
}

Test(samples, sequential_run_is_sampled)
{
	check_samples(1);
}

Test(samples, pipelined_run_is_sampled)
{
	check_samples(4);
}

/* Without the Landscape nothing is sampled: a transform's capacity is
 * asked for once, at the end, for the run's summary (its upstream's
 * share of the server used), not about every sample_ms. */
Test(samples, none_without_the_landscape)
{
	eng_summary sum = run_sampled(slow, NULL, 4, 1);

	cr_assert_eq(atomic_load(&tcap_calls), 1, "asked once, for the summary");
	cr_assert_str_eq(sum.upstream.name, "http://mock:1");
	run_sampled(slow, NULL, 1, 1);
	cr_assert_eq(atomic_load(&tcap_calls), 2, "asked once, for the summary");
}

Test(samples, sink_rows_do_not_depend_on_sampling)
{
	etmp d;
	rec_env *rec;
	char *often, *rarely;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	run_sampled(slow, rec, 4, 1);
	often = jtext(tsink_rows("out"));
	json_array_clear(tsink_rows("out"));
	run_sampled(slow, rec, 4, 3600 * 1000);
	rarely = jtext(tsink_rows("out"));
	cr_assert_str_eq(often, rarely);
	cr_assert_gt(atomic_load(&tcap_calls), 2);
	free(often);
	free(rarely);
	rec_done(rec);
	etmp_remove(&d);
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

Test(samples, resume_samples_the_same_run_as_its_attempt)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 4,
		       .settings_path = "t.yaml", .sample_ms = 2 };
	core_settings *s;
	dag_graph *g;
	eng_summary sum;
	core_err err = { 0 };
	json_t *rep = NULL;
	samples smp;
	size_t first_resume = 0;
	etmp d;

	etmp_make(&d);
	o.rec = etmp_rec(&d, 0);
	sum = run_sampled(stopping, o.rec, 4, 2);
	cr_assert(sum.interrupted);
	atomic_store(&tstop, 0);
	g = graph_with_capacity(stopping, &s);
	cr_assert_eq(eng_resume(g, &o, "latest", true, NULL, &sum, &err), 0, "%s", err.msg);
	eng_summary_release(&sum);
	samples_load(o.rec, sum.run_id, &smp);
	while (first_resume < smp.n && smp.v[first_resume]->attempt == 0)
		first_resume++;
	cr_assert_geq(first_resume, 2, "attempt 0: a first and a final sample");
	cr_assert(smp.v[first_resume - 1]->final, "attempt 0 ends with its final sample");
	cr_assert_lt(first_resume, smp.n, "the resume sampled too");
	for (size_t i = first_resume; i < smp.n; i++) {
		cr_assert_eq(smp.v[i]->run_id, sum.run_id, "the same run");
		cr_assert_eq(smp.v[i]->attempt, 1);
		cr_assert_eq(smp.v[i]->index, i - first_resume, "numbered from 0 again");
	}
	cr_assert_eq(smp.v[smp.n - 1]->released, 30);
	cr_assert(smp.v[smp.n - 1]->final);
	cr_assert_eq(rec_verify(o.rec, sum.run_id, &rep, &err), 0, "%s", err.msg);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "violations: %s", json_string_value(json_array_get(
			     json_object_get(rep, "violations"), 0)));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(rep, "checked"),
		     "samples")), (json_int_t)smp.n, "verify counts every sample");
	json_decref(rep);
	samples_free(&smp);
	dag_free(g);
	core_settings_free(s);
	rec_done(o.rec);
	etmp_remove(&d);
}

/* A sample stored under another key, or counting backwards, is a
 * violation; verify reads each sample. */
Test(samples, verify_checks_samples)
{
	etmp d;
	rec_env *rec;
	eng_summary sum;
	core_err err = { 0 };
	json_t *rep = NULL, *v;
	char *text;
	Elspeth__SampleRecord r = ELSPETH__SAMPLE_RECORD__INIT;
	rec_key k;
	samples s;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_sampled(slow, rec, 4, 1000);
	samples_load(rec, sum.run_id, &s);
	cr_assert_eq(s.n, 2, "the first and the final sample");
	/* a third sample of attempt 0 that released fewer rows */
	r.run_id = sum.run_id;
	r.index = 2;
	r.pulled = 40;
	r.released = 10;
	cr_assert_eq(rec_sample_put(rec, &r), 0);
	/* a sample of an attempt that never was */
	r.attempt = 3;
	r.index = 0;
	cr_assert_eq(rec_sample_put(rec, &r), 0);
	/* a sample under the key of another */
	r.attempt = 0;
	r.index = 9;
	rec_key_init(&k);
	rec_key_u64(&k, sum.run_id);
	rec_key_u32(&k, 0);
	rec_key_u32(&k, 7);
	cr_assert_eq(rec_put_msg(rec, REC_SAMPLES, &k, &r.base), 0);
	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_verify(rec, sum.run_id, &rep, &err), 0, "%s", err.msg);
	v = json_object_get(rep, "violations");
	text = jtext(v);
	/* the three samples, and the run's chain they were added after */
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 4,
		     "violations: %s", text);
	cr_assert(strstr(text, "no longer match the head of their chain"), "%s", text);
	cr_assert(strstr(text, "rows released went down from 40 to 10"), "%s", text);
	cr_assert(strstr(text, "attempt 3, which was never recorded"), "%s", text);
	cr_assert(strstr(text, "sample 0/9 is stored under another key"), "%s", text);
	free(text);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(rep, "checked"),
		     "samples")), 5);
	json_decref(rep);
	samples_free(&s);
	rec_done(rec);
	etmp_remove(&d);
}

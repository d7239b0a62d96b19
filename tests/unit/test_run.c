/* The run library (run/run.h): a job on its own thread with the real
 * plugins and Landscape, its events in order, cancel, and a failure
 * before the engine. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/run.h"
#include "shard/shard.h"

static char dir[256];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_run.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* A CSV of n rows, and a pipeline through `delay` (ms per row) into a
 * CSV, its Landscape in dir/sub (sub "": dir itself). */
static dag_graph *pipeline_in(const char *sub, int n, int ms, core_settings **s)
{
	char path[400], at[300], yaml[2048];
	core_err err = { 0 };
	dag_graph *g = NULL;
	FILE *f;

	snprintf(at, sizeof(at), "%s%s%s", dir, *sub ? "/" : "", sub);
	mkdir(at, 0700);
	snprintf(path, sizeof(path), "%s/in.csv", at);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("id,text\n", f);
	for (int i = 1; i <= n; i++)
		fprintf(f, "%d,row %d\n", i, i);
	fclose(f);
	snprintf(yaml, sizeof(yaml),
		 "source: {plugin: csv, on_success: d_in, options: {path: %s/in.csv,"
		 " schema: {mode: observed}, on_validation_failure: discard}}\n"
		 "transforms:\n"
		 "  - {name: d, plugin: delay, input: d_in, on_success: out,"
		 " options: {distribution: fixed, ms: %d}}\n"
		 "sinks:\n"
		 "  out: {plugin: csv, options: {path: %s/out.csv}}\n"
		 "landscape: {url: \"lmdb://%s/state\"}\n"
		 "concurrency: {pipelining: {max_rows_in_flight: 8}}\n", at, ms, at, at);
	cr_assert_eq(core_settings_parse("t.yaml", yaml, s, &err), 0, "%s", err.msg);
	cr_assert_eq(dag_build(*s, &g, &err), 0, "%s", err.msg);
	return g;
}

static dag_graph *pipeline(int n, int ms, core_settings **s)
{
	return pipeline_in("", n, ms, s);
}

/* Lines in a file; -1 when it is not there. */
static int lines_of(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* The events a job sent, as letters: S started, C completed, E error,
 * P progress (once, however many), W warning; phases by initial. */
typedef struct seen {
	char trail[64];
	size_t n;
	int progress;
	int samples, finals;
	uint64_t last_released, last_succeeded;
} seen;

static void observe(void *ctx, const run_event *ev)
{
	seen *s = ctx;
	char c = 0;

	switch (ev->kind) {
	case RUN_EV_PHASE_STARTED:
		c = 'S';
		break;
	case RUN_EV_PHASE_COMPLETED:
		c = 'C';
		break;
	case RUN_EV_PHASE_ERROR:
		c = 'E';
		break;
	case RUN_EV_PROGRESS:
		if (s->progress++ == 0)
			c = 'P';
		break;
	case RUN_EV_SAMPLE:
		s->samples++;
		s->finals += ev->sample->final;
		s->last_released = ev->sample->released;
		s->last_succeeded = ev->sample->outcomes[ENG_COMPLETED];
		break;
	case RUN_EV_DEPENDENCY_STARTED:
		c = 'D';
		break;
	case RUN_EV_DEPENDENCY_ENDED:
		c = ev->result->rc ? 'X' : 'F';
		break;
	default:
		c = 'W';
		break;
	}
	if (c && s->n + 2 < sizeof(s->trail)) {
		s->trail[s->n++] = c;
		if (ev->phase)
			s->trail[s->n++] = ev->phase[0];
		s->trail[s->n] = 0;
	}
}

Test(run, a_job_runs_on_its_thread_and_reports_its_phases, .init = setup, .fini = teardown,
     .timeout = 30)
{
	core_settings *s;
	dag_graph *g = pipeline(200, 1, &s);
	seen obs = { 0 };
	run_cfg cfg = { .graph = g, .settings_path = "t.yaml", .observe = observe,
			.observe_ctx = &obs, .progress_ms = 10 };
	core_err err = { 0 };
	const run_result *r;
	run_job *j;

	cr_assert_eq(run_start(&cfg, &j, &err), 0, "%s", err.msg);
	r = run_wait(j);
	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	cr_assert_eq(r->sum.rows, 200);
	cr_assert(r->audit && r->sum.run_id == 1);
	cr_assert_not_null(strstr(r->landscape, "/state"), "%s", r->landscape);
	cr_assert(!r->sql_failed && !r->after_failed);
	cr_assert_str_eq(obs.trail, "SdCdSpPCp", "events: %s", obs.trail);
	/* the engine's metric samples reach the observer, the last one final */
	cr_assert_geq(obs.samples, 1);
	cr_assert_eq(obs.finals, 1);
	cr_assert_eq(obs.last_released, 200);
	cr_assert_eq(obs.last_succeeded, 200);
	run_free(j);
	dag_free(g);
	core_settings_free(s);
}

Test(run, cancel_stops_it_as_sigint_does, .init = setup, .fini = teardown, .timeout = 30)
{
	core_settings *s;
	dag_graph *g = pipeline(2000, 20, &s); /* 5 s at 8 in flight */
	run_job *j = NULL;
	seen obs = { 0 };
	run_cfg cfg = { .graph = g, .observe = observe, .observe_ctx = &obs,
			.progress_ms = 50 };
	core_err err = { 0 };
	const run_result *r;

	cr_assert_eq(run_start(&cfg, &j, &err), 0, "%s", err.msg);
	usleep(300000); /* from another thread, mid-run */
	run_cancel(j);
	r = run_wait(j);
	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	cr_assert(r->sum.interrupted, "cancelled: interrupted");
	cr_assert_lt(r->sum.rows, 2000, "stopped early (%llu rows)",
		     (unsigned long long)r->sum.rows);
	cr_assert_gt(r->sum.checkpoints, 0, "a final checkpoint: resumable");
	run_free(j);
	dag_free(g);
	core_settings_free(s);
}

Test(run, out_of_range_options_are_refused_before_a_thread_starts, .init = setup,
     .fini = teardown)
{
	core_settings *s;
	dag_graph *g = pipeline(5, 0, &s);
	run_cfg cfg = { .graph = g, .max_rows_in_flight = ENG_MAX_IN_FLIGHT + 1 };
	eng_opts o = { .max_waiting_mib = ENG_MAX_WAITING_MIB + 1 };
	eng_summary sum;
	core_err err = { 0 };
	run_job *j = (run_job *)&cfg;

	cr_assert_eq(run_start(&cfg, &j, &err), CORE_ECONFIG);
	cr_assert_null(j);
	cr_assert_not_null(strstr(err.msg, "max_rows_in_flight is at most 4096"), "%s", err.msg);
	/* the engine itself, for callers of eng_run */
	cr_assert_eq(eng_run(g, &o, &sum, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "max_waiting_mib"), "%s", err.msg);
	free(sum.per_sink);
	dag_free(g);
	core_settings_free(s);
}

Test(run, a_resume_without_a_landscape_fails_before_the_engine, .init = setup,
     .fini = teardown, .timeout = 30)
{
	core_settings *s;
	dag_graph *g = pipeline(5, 0, &s);
	seen obs = { 0 };
	run_cfg cfg = { .graph = g, .resume = "latest", .observe = observe,
			.observe_ctx = &obs };
	core_err err = { 0 };
	const run_result *r;
	run_job *j;

	cr_assert_eq(run_start(&cfg, &j, &err), 0, "%s", err.msg);
	r = run_wait(j);
	cr_assert_neq(r->rc, 0);
	cr_assert(!r->engine_ran);
	cr_assert_str_eq(obs.trail, "SdEd", "events: %s", obs.trail);
	cr_assert_eq(access(r->landscape, F_OK), -1, "no Landscape was created");
	run_free(j);
	dag_free(g);
	core_settings_free(s);
}

/* Two runs at once in one process, one of them a shard writing part
 * files: each graph's plugins see their own run (plg_env), so neither
 * writes where the other's settings say (ADR 0032). */
Test(run, two_runs_at_once_keep_their_plugin_state_apart, .init = setup,
     .fini = teardown, .timeout = 60)
{
	core_settings *sa, *sb;
	dag_graph *ga = pipeline_in("a", 400, 5, &sa); /* ~0.25 s each */
	dag_graph *gb = pipeline_in("b", 400, 5, &sb);
	run_cfg ca = { .graph = ga }, cb = { .graph = gb };
	char parts[300], path[400];
	const char *part;
	core_err err = { 0 };
	run_job *ja, *jb;
	const run_result *ra, *rb;

	snprintf(parts, sizeof(parts), "%s/a/parts", dir);
	cr_assert_eq(mkdir(parts, 0700), 0);
	cr_assert_eq(plg_env_set_part_dir(&ga->env, parts, &err), 0);
	plg_env_set_capacity_share(&ga->env, 0.5);
	cr_assert_eq(run_start(&ca, &ja, &err), 0, "%s", err.msg);
	cr_assert_eq(run_start(&cb, &jb, &err), 0, "%s", err.msg);
	ra = run_wait(ja);
	rb = run_wait(jb);
	cr_assert_eq(ra->rc, 0, "%s", ra->err.msg);
	cr_assert_eq(rb->rc, 0, "%s", rb->err.msg);
	cr_assert_eq(ra->sum.rows, 400);
	cr_assert_eq(rb->sum.rows, 400);
	/* a: its part file, not the file its options name */
	snprintf(path, sizeof(path), "%s/a/out.csv", dir);
	part = plg_part_path(&ga->env, path);
	cr_assert_not_null(strstr(part, "/a/parts/"), "%s", part);
	cr_assert_eq(lines_of(part), 401, "%s", part);
	cr_assert_eq(lines_of(path), -1, "a wrote no %s", path);
	/* b: the file its options name; no part file of its own */
	snprintf(path, sizeof(path), "%s/b/out.csv", dir);
	cr_assert_str_eq(plg_part_path(&gb->env, path), path);
	cr_assert_eq(lines_of(path), 401, "%s", path);
	cr_assert_eq(plg_env_capacity_share(&gb->env), 1.0);
	cr_assert_null(plg_env_run_key(&ga->env), "cleared when the run ended");
	run_free(ja);
	run_free(jb);
	dag_free(ga);
	dag_free(gb);
	core_settings_free(sa);
	core_settings_free(sb);
}

/* ------------------------------------------------------- depends_on */

/* dir/NAME.yaml: a CSV from IN to OUT (paths in dir), with `extra`
 * settings in front (depends_on), its Landscape in dir/NAME.state. */
static void write_pipeline(const char *name, const char *in, const char *out,
			   const char *extra)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.yaml", dir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	fprintf(f, "%s"
		"source: {plugin: csv, on_success: out, options: {path: %s/%s,"
		" schema: {mode: observed}, on_validation_failure: discard}}\n"
		"sinks:\n  out: {plugin: csv, options: {path: %s/%s}}\n"
		"landscape: {url: \"lmdb://%s/%s.state\"}\n",
		extra, dir, in, dir, out, dir, name);
	fclose(f);
}

/* Loads dir/NAME.yaml and runs it to the end through the library. */
static const run_result *run_file(const char *name, seen *obs, run_job **j,
				  core_settings **s, dag_graph **g)
{
	char path[300];
	core_err err = { 0 };
	run_cfg cfg = { .observe = observe, .observe_ctx = obs };

	snprintf(path, sizeof(path), "%s/%s.yaml", dir, name);
	cr_assert_eq(core_settings_load(path, s, &err), 0, "%s", err.msg);
	cr_assert_eq(dag_build(*s, g, &err), 0, "%s", err.msg);
	cfg.graph = *g;
	cr_assert_eq(run_start(&cfg, j, &err), 0, "%s", err.msg);
	return run_wait(*j);
}

static void input(int n)
{
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "%s/in.csv", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("id\n", f);
	for (int i = 1; i <= n; i++)
		fprintf(f, "%d\n", i);
	fclose(f);
}

Test(run, depends_on_runs_each_dependency_first_as_a_run_of_its_own, .init = setup,
     .fini = teardown, .timeout = 30)
{
	core_settings *s;
	dag_graph *g;
	seen obs = { 0 };
	run_job *j;
	const run_result *r;
	char path[300];

	input(7);
	write_pipeline("index", "in.csv", "mid.csv", "");
	write_pipeline("query", "mid.csv", "out.csv",
		       "depends_on: [{name: index, settings: index.yaml}]\n");
	r = run_file("query", &obs, &j, &s, &g);
	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	/* the dependency's phases between its two events, then the run's */
	cr_assert_str_eq(obs.trail, "DSdCdSpCpFSdCdSpCp", "events: %s", obs.trail);
	cr_assert_eq(r->sum.rows, 7, "read what the dependency wrote");
	snprintf(path, sizeof(path), "%s/index.state", dir);
	cr_assert_eq(access(path, F_OK), 0, "the dependency has its own trail");
	run_free(j);
	dag_free(g);
	core_settings_free(s);
}

Test(run, a_dependency_that_fails_stops_the_run_before_its_first_row, .init = setup,
     .fini = teardown, .timeout = 30)
{
	core_settings *s;
	dag_graph *g;
	seen obs = { 0 };
	run_job *j;
	const run_result *r;
	char path[300];

	write_pipeline("index", "missing.csv", "mid.csv", "");
	write_pipeline("query", "in.csv", "out.csv",
		       "depends_on: [{name: index, settings: index.yaml}]\n");
	input(3);
	r = run_file("query", &obs, &j, &s, &g);
	cr_assert_neq(r->rc, 0);
	cr_assert(!r->engine_ran, "the pipeline itself never started");
	cr_assert_not_null(strstr(r->err.msg, "dependency 'index'"), "%s", r->err.msg);
	cr_assert_not_null(strstr(r->err.msg, "did not complete"), "%s", r->err.msg);
	cr_assert_not_null(strstr(r->err.msg, "was not run"), "%s", r->err.msg);
	cr_assert_str_eq(obs.trail, "DSdCdSpEpX", "events: %s", obs.trail);
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	cr_assert_eq(access(path, F_OK), -1, "no output of the pipeline");
	run_free(j);
	dag_free(g);
	core_settings_free(s);
}

Test(run, a_dependency_cycle_or_chain_too_deep_runs_nothing, .init = setup,
     .fini = teardown, .timeout = 30)
{
	core_settings *s;
	dag_graph *g;
	seen obs = { 0 };
	run_job *j;
	const run_result *r;
	core_err err = { 0 };
	char path[300];

	input(3);
	write_pipeline("a", "in.csv", "a.csv", "depends_on: [{name: b, settings: b.yaml}]\n");
	write_pipeline("b", "in.csv", "b.csv", "depends_on: [{name: a, settings: a.yaml}]\n");
	r = run_file("a", &obs, &j, &s, &g);
	cr_assert_eq(r->rc, CORE_ECONFIG, "%s", r->err.msg);
	cr_assert_not_null(strstr(r->err.msg, "circular dependency"), "%s", r->err.msg);
	cr_assert_not_null(strstr(r->err.msg, "b.yaml:1:"), "names the entry: %s", r->err.msg);
	cr_assert_str_eq(obs.trail, "", "nothing ran: %s", obs.trail);
	snprintf(path, sizeof(path), "%s/b.csv", dir);
	cr_assert_eq(access(path, F_OK), -1, "b never ran");
	cr_assert_eq(run_check_dependencies(s, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "circular dependency"), "%s", err.msg);
	run_free(j);
	dag_free(g);
	core_settings_free(s);
	/* a chain of more than 3 pipelines (ELSPETH's depth) is refused */
	write_pipeline("c4", "in.csv", "c4.csv", "");
	write_pipeline("c3", "in.csv", "c3.csv", "depends_on: [{name: c4, settings: c4.yaml}]\n");
	write_pipeline("c2", "in.csv", "c2.csv", "depends_on: [{name: c3, settings: c3.yaml}]\n");
	write_pipeline("c1", "in.csv", "c1.csv", "depends_on: [{name: c2, settings: c2.yaml}]\n");
	write_pipeline("q", "in.csv", "q.csv", "depends_on: [{name: c1, settings: c1.yaml}]\n");
	snprintf(path, sizeof(path), "%s/q.yaml", dir);
	cr_assert_eq(core_settings_load(path, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(run_check_dependencies(s, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "more than 3 levels"), "%s", err.msg);
	core_settings_free(s);
	/* c2 -> c3 -> c4: three pipelines, allowed */
	snprintf(path, sizeof(path), "%s/c2.yaml", dir);
	cr_assert_eq(core_settings_load(path, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(run_check_dependencies(s, &err), 0, "%s", err.msg);
	core_settings_free(s);
}

static void count_sample(void *ctx, const eng_sample *s)
{
	seen *obs = ctx;

	obs->samples++;
	obs->finals += s->final;
	obs->last_released = s->released;
}

/* A caller of the engine gets its metric samples without a Landscape
 * too (telemetry of a run with landscape.enabled: false). */
Test(run, samples_reach_the_caller_without_a_landscape, .init = setup, .fini = teardown,
     .timeout = 30)
{
	core_settings *s;
	dag_graph *g = pipeline(50, 2, &s); /* ~0.1 s at 8 in flight */
	seen obs = { 0 };
	eng_opts o = { .sample = count_sample, .sample_ctx = &obs, .sample_ms = 20 };
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.rows, 50);
	cr_assert_geq(obs.samples, 2, "%d samples", obs.samples);
	cr_assert_eq(obs.finals, 1);
	cr_assert_eq(obs.last_released, 50);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

/* ------------------------------------------------------------ shards */

/* A plan of 2 shards of dir/p.yaml (40 rows) in dir/m.json. */
static void plan2(core_settings **s, dag_graph **g)
{
	char path[300], out[300];
	core_err err = { 0 };
	shd_plan_opts o = { .shards = 2 };

	input(40);
	write_pipeline("p", "in.csv", "out.csv", "");
	snprintf(path, sizeof(path), "%s/p.yaml", dir);
	snprintf(out, sizeof(out), "%s/m.json", dir);
	o.output = out;
	cr_assert_eq(core_settings_load(path, s, &err), 0, "%s", err.msg);
	cr_assert_eq(dag_build(*s, g, &err), 0, "%s", err.msg);
	cr_assert_eq(shd_plan(*g, path, &o, NULL, &err), 0, "%s", err.msg);
}

Test(run, a_shard_opened_runs_its_rows_once_and_then_has_nothing_to_do, .init = setup,
     .fini = teardown, .timeout = 60)
{
	char m[300];
	core_settings *s;
	dag_graph *g, *g2;
	run_shard *sh, *again;
	const run_shard_info *in;
	core_err err = { 0 };
	run_job *j;
	const run_result *r;

	plan2(&s, &g);
	snprintf(m, sizeof(m), "%s/m.json", dir);
	cr_assert_eq(run_shard_open(g, m, 2, &sh, &err), CORE_ECONFIG, "shard 2 of 2");
	cr_assert_not_null(strstr(err.msg, "has shards 0..1"), "%s", err.msg);
	cr_assert_eq(run_shard_open(g, m, 1, &sh, &err), 0, "%s", err.msg);
	in = run_shard_get(sh);
	cr_assert_eq(in->state, RUN_SHARD_NEW);
	cr_assert_eq(in->first_row, 21);
	cr_assert_eq(in->last_row, 40);
	cr_assert_null(in->resume);
	cr_assert_not_null(in->shard);
	cr_assert_eq(plg_env_capacity_share(&g->env), 0.5, "both shards run at once");
	/* a second copy of the same shard is refused while this one is open */
	cr_assert_eq(dag_build(s, &g2, &err), 0, "%s", err.msg);
	cr_assert_eq(run_shard_open(g2, m, 1, &again, &err), CORE_EIO);
	cr_assert_not_null(strstr(err.msg, "being run by another process"), "%s", err.msg);
	/* run it: its rows only, into its own Landscape and part files */
	run_cfg cfg = { .graph = g, .database = in->landscape, .shard = in->shard };
	cr_assert_eq(run_start(&cfg, &j, &err), 0, "%s", err.msg);
	r = run_wait(j);
	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	cr_assert_eq(r->sum.rows, 20);
	run_free(j);
	run_shard_close(sh);
	/* opened again: completed, nothing to do */
	cr_assert_eq(run_shard_open(g2, m, 1, &again, &err), 0, "%s", err.msg);
	cr_assert_eq(run_shard_get(again)->state, RUN_SHARD_COMPLETED);
	cr_assert_eq(run_shard_get(again)->run_id, 1);
	run_shard_close(again);
	dag_free(g);
	dag_free(g2);
	core_settings_free(s);
}

/* ------------------------------------------------------------ loading */

Test(run, a_settings_text_is_loaded_and_validated_as_validate_does, .init = setup,
     .fini = teardown)
{
	static const char *const ok =
		"source: {plugin: csv, on_success: out, options: {path: in.csv,"
		" schema: {mode: fixed, fields: [\"id: int\"]}, on_validation_failure: discard}}\n"
		"sinks:\n  out: {plugin: csv, options: {path: out.csv,"
		" schema: {mode: fixed, fields: [\"id: int\"]}}}\n";
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	char *bad;

	cr_assert_eq(run_load_text("posted.yaml", ok, &s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(run_validate(s, g, &err), 0, "%s", err.msg);
	cr_assert_eq(access("out.csv", F_OK), -1, "validating writes nothing");
	dag_free(g);
	core_settings_free(s);
	/* a sink wanting a field nobody gives: refused at load, with where */
	cr_assert_not_null(bad = strdup(ok));
	memcpy(strstr(strstr(bad, "sinks:"), "id: int"), "xx: int", 7);
	cr_assert_eq(run_load_text("posted.yaml", bad, &s, &g, &err), CORE_ECONFIG);
	cr_assert_null(s);
	cr_assert_null(g);
	cr_assert_not_null(strstr(err.msg, "posted.yaml:3:"), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "Missing fields: xx"), "%s", err.msg);
	free(bad);
	/* a misspelt option: refused by run_validate, as run would */
	cr_assert_not_null(bad = strdup(ok));
	memcpy(strstr(bad, "path: out.csv"), "pth:  out.csv", 13);
	cr_assert_eq(run_load_text("posted.yaml", bad, &s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(run_validate(s, g, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "did you mean 'path'"), "%s", err.msg);
	dag_free(g);
	core_settings_free(s);
	free(bad);
}

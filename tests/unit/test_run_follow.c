/* The live SQL trail's steps (sqltrail.h sqlt_follow_*, ADR 0041): a
 * run followed in steps at random frontiers writes, table by table, the
 * rows a whole export of it writes — none missing, none twice — also
 * when a follower starts over half way (a resume, a database that was
 * away); after its last step, every table is the export's. The pipeline has a gate, a fork and coalesce, an aggregation
 * and a failing transform, so lineage, batches and errors cross steps. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/run.h"
#include "sqltrail/sqltrail.h"

static char dir[256];
#define ROWS 240

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_follow.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Runs the pipeline over ROWS rows into dir/state; its run id. */
static uint64_t run_pipeline(void)
{
	char path[400], yaml[4096];
	core_err err = { 0 };
	core_settings *s = NULL;
	dag_graph *g = NULL;
	run_job *j;
	const run_result *r;
	uint64_t id;
	FILE *f;

	snprintf(path, sizeof(path), "%s/in.csv", dir);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("id,region,amount,text\n", f);
	for (int i = 1; i <= ROWS; i++)
		fprintf(f, "%d,r%d,%d,%s\n", i, i % 3, i * 7 % 100, i % 13 ? "fine" : "forbidden");
	fclose(f);
	snprintf(yaml, sizeof(yaml),
		"source: {plugin: csv, on_success: work_in, options: {path: %s/in.csv,"
		" schema: {mode: fixed, fields: ['id: int', 'region: str', 'amount: int',"
		" 'text: str']},"
		" on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: work, plugin: delay, input: work_in, on_success: check_in,"
		" options: {distribution: uniform, min_ms: 0, max_ms: 2, seed: 7}}\n"
		"  - {name: check, plugin: keyword_filter, input: check_in, on_success: route_in,"
		" on_error: errors, options: {fields: [text], blocked_patterns: [forbid],"
		" schema: {mode: observed}}}\n"
		"gates:\n"
		"  - {name: route, input: route_in, condition: \"row['id'] %% 5 == 0\","
		" routes: {'true': stats_in, 'false': fork}, fork_to: [a, b]}\n"
		"coalesce:\n"
		"  - {name: join, branches: [a, b], policy: require_all, merge: nested,"
		" on_success: out}\n"
		"aggregations:\n"
		"  - {name: stats, plugin: batch_stats, input: stats_in, on_success: fives,"
		" trigger: {count: 5}, options: {value_field: amount, group_by: region}}\n"
		"sinks:\n"
		"  out: {plugin: json, options: {path: %s/out.jsonl}}\n"
		"  fives: {plugin: csv, options: {path: %s/fives.csv}}\n"
		"  errors: {plugin: json, options: {path: %s/errors.jsonl}}\n"
		"landscape: {url: \"lmdb://%s/state\"}\n",
		dir, dir, dir, dir, dir);
	cr_assert_eq(core_settings_parse("t.yaml", yaml, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(dag_build(s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(run_start(&(run_cfg){ .graph = g, .max_rows_in_flight = 8 }, &j, &err), 0,
		     "%s", err.msg);
	r = run_wait(j);
	cr_assert_eq(r->rc, 0, "%s", r->err.msg);
	cr_assert_eq(r->sum.rows, ROWS);
	id = r->sum.run_id;
	run_free(j);
	dag_free(g);
	core_settings_free(s);
	return id;
}

/* Rows of table t in one file and not the other, both ways. */
static long differ(sqlite3 *db, const char *t, const char *cols)
{
	char sql[1024];
	sqlite3_stmt *st;
	long n;

	snprintf(sql, sizeof(sql),
		 "SELECT (SELECT count(*) FROM (SELECT %s FROM main.%s EXCEPT SELECT %s FROM b.%s))"
		 " + (SELECT count(*) FROM (SELECT %s FROM b.%s EXCEPT SELECT %s FROM main.%s))"
		 " + abs((SELECT count(*) FROM main.%s) - (SELECT count(*) FROM b.%s))",
		 cols, t, cols, t, cols, t, cols, t, t, t);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", t,
		     sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	n = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static long count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	long n;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	n = (long)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* The tables a step writes, compared with an export's (with `all`, the
 * run's own tables too: after the last step; but for the time each
 * wrote elspeth_runs, which differs by design). */
static void compare(const char *live, const char *whole, bool all)
{
	static const struct { const char *t, *cols; } run_tables[] = {
		{ "runs", "*" }, { "checkpoints", "*" }, { "operations", "*" },
		{ "elspeth_runs", "run_id, landscape_run_id, topology_hash, settings_path, "
		  "elspeth_version, rows, succeeded, failed, quarantined, error, metrics_json, "
		  "resumes" },
		{ "elspeth_sink_files", "*" }, { "elspeth_resumes", "*" },
		{ "elspeth_superseded", "*" }, { "elspeth_samples", "*" },
		{ "elspeth_sample_upstreams", "*" },
	};
	static const struct { const char *t, *cols; } tables[] = {
		{ "rows", "*" }, { "tokens", "*" }, { "token_parents", "*" },
		{ "token_outcomes", "*" }, { "node_states", "*" }, { "calls", "*" },
		{ "routing_events", "*" }, { "batches", "*" }, { "batch_members", "*" },
		{ "batch_outputs", "*" }, { "artifacts", "*" }, { "validation_errors", "*" },
		{ "transform_errors", "*" }, { "nodes", "*" }, { "edges", "*" },
		{ "elspeth_rows", "*" }, { "elspeth_calls", "*" }, { "elspeth_artifacts", "*" },
	};
	char attach[600];
	sqlite3 *db;

	cr_assert_eq(sqlite3_open(live, &db), SQLITE_OK);
	snprintf(attach, sizeof(attach), "ATTACH '%s' AS b", whole);
	cr_assert_eq(sqlite3_exec(db, attach, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
	cr_assert_eq(count(db, "SELECT count(*) FROM rows"), ROWS);
	cr_assert_gt(count(db, "SELECT count(*) FROM batches"), 5);
	cr_assert_gt(count(db, "SELECT count(*) FROM transform_errors"), 5);
	cr_assert_gt(count(db, "SELECT count(*) FROM token_parents"), ROWS);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		cr_expect_eq(differ(db, tables[i].t, tables[i].cols), 0,
			     "table %s: the steps wrote other rows than the export", tables[i].t);
	for (size_t i = 0; all && i < sizeof(run_tables) / sizeof(run_tables[0]); i++)
		cr_expect_eq(differ(db, run_tables[i].t, run_tables[i].cols), 0,
			     "table %s: the last step wrote other rows than the export",
			     run_tables[i].t);
	if (all)
		cr_expect_gt(count(db, "SELECT count(*) FROM operations"), 0);
	sqlite3_close(db);
}

/* Follows run `run` into `path` in steps at random frontiers; a new
 * follower (its first step replaces) after step `restart_at` (0: none);
 * with `finish`, the last step too. */
static void follow(rec_env *env, uint64_t run, const char *path, unsigned seed,
		   int restart_at, bool finish)
{
	core_err err = { 0 };
	sqlt_follow *f;
	uint64_t through = 0;
	int steps = 0;

	srand(seed);
	cr_assert_eq(sqlt_follow_open(env, run, path, &f, &err), 0, "%s", err.msg);
	while (through < ROWS) {
		through += 1 + (uint64_t)(rand() % 40);
		if (through > ROWS)
			through = ROWS;
		cr_assert_eq(sqlt_follow_step(f, through, &err), 0, "%s", err.msg);
		cr_assert_eq(sqlt_follow_through(f), through);
		cr_assert_eq(sqlt_follow_step(f, through, &err), 0, "nothing new: %s", err.msg);
		if (++steps == restart_at) {
			sqlt_follow_close(f);
			cr_assert_eq(sqlt_follow_open(env, run, path, &f, &err), 0, "%s", err.msg);
			cr_assert_eq(sqlt_follow_through(f), 0);
		}
	}
	if (finish)
		cr_assert_eq(sqlt_follow_finish(f, &err), 0, "%s", err.msg);
	sqlt_follow_close(f);
}

Test(follow, steps_at_random_frontiers_write_what_an_export_writes, .init = setup,
     .fini = teardown, .timeout = 120)
{
	char state[300], live[300], whole[300];
	core_err err = { 0 };
	rec_env *env;
	uint64_t run = run_pipeline();

	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(whole, sizeof(whole), "%s/whole.db", dir);
	cr_assert_eq(rec_open(state, REC_READONLY, &env, &err), 0, "%s", err.msg);
	cr_assert_eq(sqlt_export(env, run, whole, NULL, &err), 0, "%s", err.msg);
	for (unsigned seed = 1; seed <= 6; seed++) {
		snprintf(live, sizeof(live), "%s/live%u.db", dir, seed);
		follow(env, run, live, seed, seed % 3 == 0 ? 2 : 0, seed > 3);
		compare(live, whole, seed > 3);
	}
	rec_close(env, NULL);
}

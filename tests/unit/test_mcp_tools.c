/* test_mcp_tools.c — what the fixture alone does not show: opening (what
 * is not a trail is refused, naming what is missing), the tools that read
 * the clock (diagnose's stuck runs and operations, the 24-hour window for
 * quarantined rows, get_recent_activity's window), explain_token's
 * lineage checks on a damaged trail, and source data from our export's
 * payload table. */
#include <sys/stat.h>

#include "test_mcp_util.h"

TestSuite(mcp_tools, .timeout = 30);

#define HOUR_NS 3600000000000ULL

Test(mcp_tools, open_refuses_what_is_not_a_trail)
{
	char dir[] = "/tmp/test_mcp_dirXXXXXX", file[128];
	mcp_server *s = NULL;
	core_err err = { 0 };
	sqlite3 *db;
	FILE *f;

	cr_assert_eq(mcp_open("/nonexistent/trail.db", NULL, &s, &err), CORE_ENOTFOUND);
	cr_expect(strstr(err.msg, "no audit trail at /nonexistent/trail.db"), "%s", err.msg);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/notes.txt", dir);
	f = fopen(file, "w");
	fputs("hello\n", f);
	fclose(f);
	cr_expect_eq(mcp_open(file, NULL, &s, &err), CORE_EDATA);
	cr_expect(strstr(err.msg, "neither an SQLite audit trail nor an LMDB Landscape"),
		  "%s", err.msg);
	unlink(file);
	snprintf(file, sizeof(file), "%s/other.db", dir);
	cr_assert_eq(sqlite3_open(file, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, "CREATE TABLE runs (run_id TEXT)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	cr_expect_eq(mcp_open(file, NULL, &s, &err), CORE_EDATA);
	cr_expect(strstr(err.msg, "not an audit trail in ELSPETH's schema: it has no tables "
			 "nodes, edges, rows"), "%s", err.msg);
	cr_expect_null(s);
	unlink(file);
	rmdir(dir);
	mcp_free(NULL);
}

static json_t *diagnose(mcp_server *s)
{
	core_err err = { 0 };
	json_t *v = tmu_call(s, "diagnose", NULL, &err);

	cr_assert_not_null(v, "%s", err.msg);
	return v;
}

static const json_t *problem(const json_t *d, const char *type)
{
	const json_t *p;
	size_t i;

	json_array_foreach(json_object_get(d, "problems"), i, p)
		if (!strcmp(json_string_value(json_object_get(p, "type")), type))
			return p;
	return NULL;
}

Test(mcp_tools, diagnose_counts_quarantined_rows_of_the_last_day_only)
{
	mcp_opts o = { .now_ns = tmu_now_ns() + 30 * HOUR_NS };
	mcp_server *s = tmu_open(&o);
	json_t *d = diagnose(s);

	/* the failed run stays a problem; the day-old quarantine does not */
	cr_expect_str_eq(json_string_value(json_object_get(d, "status")), "CRITICAL");
	cr_expect_not_null(problem(d, "failed_runs"));
	cr_expect_null(problem(d, "quarantined_rows"));
	cr_expect_eq(json_array_size(json_object_get(d, "recent_runs")), 4);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(d,
		"recent_runs"), 0), "run_id")), "a607874059f6...");
	json_decref(d);
	mcp_free(s);
}

Test(mcp_tools, diagnose_finds_runs_and_operations_stuck_for_an_hour)
{
	const char *path = tmu_trail();
	mcp_opts o = { .now_ns = tmu_now_ns() + 2 * HOUR_NS };
	mcp_server *s;
	const json_t *p;
	json_t *d;

	tmu_exec(path, "UPDATE runs SET status = 'running', completed_at = NULL "
		 "WHERE run_id = '" RUN_LLM "'; UPDATE runs SET status = 'completed' "
		 "WHERE run_id = '" RUN_FAILED "'; UPDATE operations SET status = 'open', "
		 "completed_at = NULL WHERE run_id = '" RUN_LLM "' AND operation_type = 'source_load'");
	s = tmu_open_file(path, &o);
	d = diagnose(s);
	cr_expect_str_eq(json_string_value(json_object_get(d, "status")), "WARNING");
	cr_expect_null(problem(d, "failed_runs"));
	p = problem(d, "stuck_runs");
	cr_assert_not_null(p);
	cr_expect_str_eq(json_string_value(json_array_get(json_object_get(p, "run_ids"), 0)), RUN_LLM);
	cr_expect_str_eq(json_string_value(json_object_get(p, "message")),
			 "1 run(s) still in 'running' status");
	p = problem(d, "stuck_operations");
	cr_assert_not_null(p);
	cr_expect_eq(json_integer_value(json_object_get(p, "count")), 1);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(p,
		"operations"), 0), "type")), "source_load");
	/* stuck run 1, stuck operation 2, the quarantine of 2 hours ago 1 */
	cr_expect_not_null(problem(d, "quarantined_rows"));
	cr_expect_eq(json_array_size(json_object_get(d, "recommendations")), 4);
	json_decref(d);
	mcp_free(s);
}

Test(mcp_tools, diagnose_is_ok_when_nothing_is_wrong)
{
	const char *path = tmu_trail();
	mcp_opts o = { .now_ns = tmu_now_ns() + 48 * HOUR_NS };
	mcp_server *s;
	json_t *d;

	tmu_exec(path, "UPDATE runs SET status = 'completed'");
	s = tmu_open_file(path, &o);
	d = diagnose(s);
	cr_expect_str_eq(json_string_value(json_object_get(d, "status")), "OK");
	cr_expect_eq(json_array_size(json_object_get(d, "problems")), 0);
	cr_expect_eq(json_array_size(json_object_get(d, "next_steps")), 4);
	json_decref(d);
	mcp_free(s);
}

Test(mcp_tools, recent_activity_looks_back_from_now)
{
	mcp_opts o = { .now_ns = tmu_now_ns() };
	core_err err = { 0 };
	mcp_server *s = tmu_open(&o);
	json_t *v = tmu_call(s, "get_recent_activity", "{\"minutes\": 1}", &err);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_eq(json_integer_value(json_object_get(v, "total_runs")), 0);
	json_decref(v);
	v = tmu_call(s, "get_recent_activity", NULL, &err);
	cr_expect_eq(json_integer_value(json_object_get(v, "time_window_minutes")), 60);
	cr_expect_eq(json_integer_value(json_object_get(v, "total_runs")), 4);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(v, "status_summary"),
		"completed")), 3);
	json_decref(v);
	cr_expect_null(tmu_call(s, "get_recent_activity", "{\"minutes\": 9000000000}", &err));
	cr_expect(strstr(err.msg, "'minutes' is out of range"), "%s", err.msg);
	mcp_free(s);
}

static const char *first_token(const char *path, const char *sql)
{
	static char id[80];
	sqlite3 *db;
	sqlite3_stmt *st;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(id, sizeof(id), "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return id;
}

/* Damages the trail (SQL: before, a token's id, after) and expects
 * explain_token to refuse that token with needle in its message. */
static void explain_fails(const char *before, const char *after, const char *needle)
{
	const char *path = tmu_trail();
	const char *tok = first_token(path, "SELECT token_id FROM token_outcomes WHERE "
				      "sink_name = 'enterprise' ORDER BY recorded_at LIMIT 1");
	char sql[512], args[256];
	core_err err = { 0 };
	mcp_server *s;

	snprintf(sql, sizeof(sql), "%s'%s'%s", before, tok, after);
	tmu_exec(path, sql);
	s = tmu_open_file(path, NULL);
	snprintf(args, sizeof(args), "{\"run_id\": \"%s\", \"token_id\": \"%s\"}", RUN_ROUTING, tok);
	cr_expect_null(tmu_call(s, "explain_token", args, &err), "%s", sql);
	cr_expect_eq(err.code, CORE_EDATA);
	cr_expect(strstr(err.msg, needle), "%s: %s", sql, err.msg);
	mcp_free(s);
}

Test(mcp_tools, explain_token_refuses_a_damaged_lineage)
{
	explain_fails("UPDATE tokens SET join_group_id = 'j' WHERE token_id = ", "",
		      "has a join_group_id but no parents");
	explain_fails("UPDATE tokens SET fork_group_id = '' WHERE token_id = ", "",
		      "has an empty fork_group_id");
	explain_fails("UPDATE tokens SET fork_group_id = 'f', join_group_id = 'j' "
		      "WHERE token_id = ", "", "several group ids");
	explain_fails("INSERT INTO token_parents VALUES (", ", 'ghost', 0)",
		      "has parents in token_parents but no fork, join or expand");
	explain_fails("UPDATE rows SET run_id = 'elsewhere' WHERE row_id = "
		      "(SELECT row_id FROM tokens WHERE token_id = ", ")",
		      "belongs to run elsewhere, not " RUN_ROUTING);
}

Test(mcp_tools, explain_token_shows_source_data_from_the_payload_table)
{
	const char *path = tmu_trail();
	const char *tok = first_token(path, "SELECT token_id FROM token_outcomes WHERE "
				      "sink_name = 'enterprise' ORDER BY recorded_at LIMIT 1");
	char args[256], sql[512];
	core_err err = { 0 };
	mcp_server *s;
	json_t *v, *row;

	/* our export's copy of the payload store (sqltrail: elspeth_payloads) */
	snprintf(sql, sizeof(sql), "CREATE TABLE elspeth_payloads (hash VARCHAR(64) NOT NULL, "
		 "data BLOB NOT NULL, PRIMARY KEY (hash)); INSERT INTO elspeth_payloads SELECT "
		 "source_data_ref, CAST('{\"id\":1,\"customer\":\"Acme Corp\"}' AS BLOB) FROM rows "
		 "WHERE row_id = (SELECT row_id FROM tokens WHERE token_id = '%s')", tok);
	tmu_exec(path, sql);
	s = tmu_open_file(path, NULL);
	snprintf(args, sizeof(args), "{\"run_id\": \"%s\", \"token_id\": \"%s\"}", RUN_ROUTING, tok);
	v = tmu_call(s, "explain_token", args, &err);
	cr_assert_not_null(v, "%s", err.msg);
	row = json_object_get(v, "source_row");
	cr_expect(json_is_true(json_object_get(row, "payload_available")));
	cr_expect_str_eq(json_string_value(json_object_get(json_object_get(row, "source_data"),
		"customer")), "Acme Corp");
	json_decref(v);
	mcp_free(s);
}

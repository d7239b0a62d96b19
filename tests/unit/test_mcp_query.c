/* test_mcp_query.c — the query tool (mcp/query.c): statements that read
 * run, with named parameters; every kind of write is refused, whatever
 * its spelling, and leaves the file as it was; one statement at a time;
 * the time limit and the row cap. */
#include <sys/stat.h>

#include "test_mcp_util.h"

TestSuite(mcp_query, .timeout = 30);

static json_t *query(mcp_server *s, const char *sql, const char *params, core_err *err)
{
	json_t *a = json_pack("{s:s}", "sql", sql), *v = NULL;
	mcp_result r = { 0 };

	if (params)
		json_object_set_new(a, "params", tmu_json(params));
	if (!mcp_call(s, "query", a, &r, err)) {
		v = json_incref(r.value);
		cr_expect_null(r.note, "no note under the cap: %s", r.note);
		mcp_result_release(&r);
	}
	json_decref(a);
	return v;
}

Test(mcp_query, reads_rows_as_objects)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = query(s, "SELECT status, count(*) AS n FROM runs GROUP BY status "
			  "ORDER BY status", NULL, &err);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_eq(json_array_size(v), 2);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(v, 0), "status")),
			 "completed");
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(v, 0), "n")), 3);
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(v, 1), "n")), 1);
	json_decref(v);
	mcp_free(s);
}

Test(mcp_query, values_keep_their_types)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = query(s, "SELECT 1 AS i, 2.5 AS r, NULL AS n, 'text' AS t, x'00ff' AS b, "
			  "'DELETE FROM runs' AS harmless, replace('aDELETEb', 'DELETE', '') AS f",
			  NULL, &err);
	json_t *row = json_array_get(v, 0);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect(json_is_integer(json_object_get(row, "i")));
	cr_expect(json_is_real(json_object_get(row, "r")));
	cr_expect(json_is_null(json_object_get(row, "n")));
	cr_expect_str_eq(json_string_value(json_object_get(row, "b")), "00ff");
	cr_expect_str_eq(json_string_value(json_object_get(row, "harmless")), "DELETE FROM runs");
	/* a keyword list would refuse REPLACE; SQLite knows it reads */
	cr_expect_str_eq(json_string_value(json_object_get(row, "f")), "ab");
	json_decref(v);
	mcp_free(s);
}

Test(mcp_query, binds_named_parameters)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = query(s, "SELECT :s AS s, @i AS i, $r AS r, :b AS b, :n AS n, "
			  "(SELECT count(*) FROM runs WHERE status = :s) AS runs",
			  "{\"s\": \"completed\", \"i\": 7, \"r\": 0.5, \"b\": true, \"n\": null, "
			  "\"unused\": 1}", &err);
	json_t *row = json_array_get(v, 0);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_str_eq(json_string_value(json_object_get(row, "s")), "completed");
	cr_expect_eq(json_integer_value(json_object_get(row, "i")), 7);
	cr_expect(json_real_value(json_object_get(row, "r")) == 0.5);
	cr_expect_eq(json_integer_value(json_object_get(row, "b")), 1);
	cr_expect(json_is_null(json_object_get(row, "n")));
	cr_expect_eq(json_integer_value(json_object_get(row, "runs")), 3);
	json_decref(v);
	mcp_free(s);
}

Test(mcp_query, parameter_errors_name_the_parameter)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);

	cr_expect_null(query(s, "SELECT :who AS w", "{}", &err));
	cr_expect(strstr(err.msg, "'who'"), "%s", err.msg);
	cr_expect_null(query(s, "SELECT :who AS w", NULL, &err));
	cr_expect(strstr(err.msg, "'who'"), "%s", err.msg);
	cr_expect_null(query(s, "SELECT ? AS w", "{}", &err));
	cr_expect(strstr(err.msg, ":name"), "%s", err.msg);
	cr_expect_null(query(s, "SELECT :w AS w", "{\"w\": [1]}", &err));
	cr_expect(strstr(err.msg, "'w' must be"), "%s", err.msg);
	mcp_free(s);
}

/* What the file holds, to show that nothing changed it. */
static void fingerprint(const char *path, char *out, size_t cap)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	struct stat sb;

	cr_assert_eq(stat(path, &sb), 0);
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM runs) || '/' || "
		"(SELECT group_concat(status) FROM runs) || '/' || (SELECT count(*) FROM "
		"sqlite_master) || '/' || (SELECT user_version FROM pragma_user_version)",
		-1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, cap, "%lld bytes, %s", (long long)sb.st_size,
		 (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

Test(mcp_query, every_write_is_refused_and_the_file_is_unchanged)
{
	static const char *const writes[] = {
		"INSERT INTO runs (run_id) VALUES ('x')",
		"insert or replace into runs select * from runs",
		"REPLACE INTO runs SELECT * FROM runs",
		"UPDATE runs SET status = 'completed'",
		"DELETE FROM runs",
		"WITH x AS (SELECT 1) DELETE FROM runs",
		"DROP TABLE runs",
		"CREATE TABLE t (x)",
		"CREATE TEMP TABLE t (x)",
		"CREATE VIEW v AS SELECT 1",
		"ALTER TABLE runs ADD COLUMN x",
		"ATTACH DATABASE ':memory:' AS m",
		"ATTACH '/tmp/test_mcp_attached.db' AS other",
		"DETACH main",
		"PRAGMA user_version = 5",
		"PRAGMA journal_mode = DELETE",
		"PRAGMA query_only = 0",
		"PRAGMA writable_schema = ON",
		"BEGIN",
		"BEGIN IMMEDIATE",
		"COMMIT",
		"SAVEPOINT a",
		"VACUUM",
		"VACUUM INTO '/tmp/test_mcp_vacuum_copy.db'",
		"REINDEX",
		"ANALYZE",
		"/* comment */ DELETE FROM runs -- and more",
	};
	char before[256], after[256];
	core_err err = { 0 };
	const char *path = tmu_trail();
	mcp_opts o = { 0 };
	mcp_server *s = NULL;
	struct stat sb;

	fingerprint(path, before, sizeof(before));
	cr_assert_eq(mcp_open(path, &o, &s, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
		json_t *v = query(s, writes[i], NULL, &err);

		cr_expect_null(v, "ran: %s", writes[i]);
		json_decref(v);
		cr_expect_eq(err.code, CORE_EDATA, "%s: %s", writes[i], err.msg);
		cr_expect(strstr(err.msg, "Refused"), "%s: %s", writes[i], err.msg);
	}
	mcp_free(s);
	fingerprint(path, after, sizeof(after));
	cr_expect_str_eq(after, before);
	cr_expect_neq(stat("/tmp/test_mcp_vacuum_copy.db", &sb), 0, "VACUUM INTO wrote a file");
	cr_expect_neq(stat("/tmp/test_mcp_attached.db", &sb), 0, "ATTACH created a file");
	unlink(path);
}

Test(mcp_query, pragmas_that_read_are_allowed)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = query(s, "PRAGMA table_info(runs)", NULL, &err);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(v, 0), "name")), "run_id");
	json_decref(v);
	v = query(s, "PRAGMA user_version", NULL, &err);
	cr_expect_not_null(v, "%s", err.msg);
	json_decref(v);
	v = query(s, "EXPLAIN QUERY PLAN SELECT * FROM runs WHERE run_id = 'x'", NULL, &err);
	cr_expect_not_null(v, "%s", err.msg);
	json_decref(v);
	mcp_free(s);
}

Test(mcp_query, one_statement_only)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = query(s, "SELECT 1 AS one; -- fine\n;  /* also fine */ ;", NULL, &err);

	cr_expect_not_null(v, "%s", err.msg);
	json_decref(v);
	cr_expect_null(query(s, "SELECT 1; SELECT 2", NULL, &err));
	cr_expect(strstr(err.msg, "one statement"), "%s", err.msg);
	cr_expect_null(query(s, "SELECT 1; DELETE FROM runs", NULL, &err));
	cr_expect(strstr(err.msg, "one statement"), "%s", err.msg);
	cr_expect_null(query(s, "SELECT 1; garbage", NULL, &err));
	cr_expect(strstr(err.msg, "one statement"), "%s", err.msg);
	mcp_free(s);
}

Test(mcp_query, empty_and_broken_sql_say_so)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);

	cr_expect_null(query(s, "  -- nothing\n", NULL, &err));
	cr_expect_str_eq(err.msg, "Query is empty");
	cr_expect_null(query(s, "SELEC * FROM runs", NULL, &err));
	cr_expect(strstr(err.msg, "SQL error: near \"SELEC\""), "%s", err.msg);
	cr_expect_null(query(s, "SELECT * FROM nope", NULL, &err));
	cr_expect(strstr(err.msg, "no such table: nope"), "%s", err.msg);
	mcp_free(s);
}

Test(mcp_query, a_query_past_the_time_limit_is_stopped, .timeout = 20)
{
	mcp_opts o = { .query_timeout_ms = 200 };
	core_err err = { 0 };
	mcp_server *s = tmu_open(&o);
	uint64_t t0 = core_now_mono_ns();
	json_t *v = query(s, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
			  "SELECT max(x) FROM c", NULL, &err);
	double secs = (double)(core_now_mono_ns() - t0) / 1e9;

	cr_expect_null(v);
	cr_expect_eq(err.code, CORE_EIO);
	cr_expect(strstr(err.msg, "stopped after 200 ms"), "%s", err.msg);
	cr_expect_lt(secs, 5.0, "stopped after %.2f s", secs);
	/* and the server goes on */
	v = query(s, "SELECT 1 AS one", NULL, &err);
	cr_expect_not_null(v, "%s", err.msg);
	json_decref(v);
	mcp_free(s);
}

Test(mcp_query, the_default_limits_are_5_s_and_1000_rows)
{
	cr_expect_eq(MCP_QUERY_TIMEOUT_MS, 5000);
	cr_expect_eq(MCP_QUERY_MAX_ROWS, 1000);
}

static json_t *count_to(mcp_server *s, int n, char **note)
{
	char sql[160];
	json_t *a, *v = NULL;
	mcp_result r = { 0 };
	core_err err = { 0 };

	snprintf(sql, sizeof(sql), "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
		 "FROM c LIMIT %d) SELECT x FROM c", n);
	a = json_pack("{s:s}", "sql", sql);
	cr_assert_eq(mcp_call(s, "query", a, &r, &err), 0, "%s", err.msg);
	v = json_incref(r.value);
	*note = r.note ? strdup(r.note) : NULL;
	mcp_result_release(&r);
	json_decref(a);
	return v;
}

Test(mcp_query, rows_past_the_cap_are_announced_not_dropped_silently)
{
	mcp_opts o = { .query_max_rows = 10 };
	mcp_server *s = tmu_open(&o);
	char *note;
	json_t *v = count_to(s, 25, &note);

	cr_expect_eq(json_array_size(v), 10);
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(v, 9), "x")), 10);
	cr_assert_not_null(note);
	cr_expect(strstr(note, "first 10 rows"), "%s", note);
	free(note);
	json_decref(v);
	v = count_to(s, 10, &note);
	cr_expect_eq(json_array_size(v), 10);
	cr_expect_null(note, "exactly the cap is not more");
	json_decref(v);
	mcp_free(s);
}

/* 1,000 rows of 1 MB blobs (2 MB of hex each) must not come back as
 * gigabytes of JSON: the answer stops at MCP_QUERY_MAX_BYTES of it and
 * says so; one row over the limit alone is an error, not a huge answer. */
Test(mcp_query, answers_stay_under_the_byte_limit)
{
	mcp_server *s = tmu_open(NULL);
	json_t *a = json_pack("{s:s}", "sql", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL "
			      "SELECT x + 1 FROM c LIMIT 1000) SELECT x, randomblob(1000000) "
			      "AS b FROM c");
	mcp_result r = { 0 };
	core_err err = { 0 };
	size_t bytes;

	cr_assert_eq(mcp_call(s, "query", a, &r, &err), 0, "%s", err.msg);
	bytes = json_dumpb(r.value, NULL, 0, JSON_COMPACT);
	cr_expect_leq(bytes, MCP_QUERY_MAX_BYTES, "%zu bytes", bytes);
	cr_expect_geq(json_array_size(r.value), 3, "%zu rows", json_array_size(r.value));
	cr_assert_not_null(r.note);
	cr_expect(strstr(r.note, "MiB of JSON"), "%s", r.note);
	mcp_result_release(&r);
	json_decref(a);
	a = json_pack("{s:s}", "sql", "SELECT randomblob(5000000) AS b");
	cr_expect_neq(mcp_call(s, "query", a, &r, &err), 0);
	cr_expect(strstr(err.msg, "The first row alone is"), "%s", err.msg);
	json_decref(a);
	mcp_free(s);
}

/* fts3_tokenizer('simple') returns the address of a library structure
 * and its two-argument form registers any address as code to call:
 * refused, as is load_extension. */
Test(mcp_query, functions_that_pass_addresses_are_refused)
{
	static const char *const sql[] = {
		"SELECT fts3_tokenizer('simple')",
		"SELECT hex(FTS3_TOKENIZER('simple'))",
		"SELECT fts3_tokenizer('evil', x'4141414141414141')",
		"SELECT load_extension('/tmp/x.so')",
	};
	mcp_server *s = tmu_open(NULL);

	for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
		core_err err = { 0 };
		json_t *v = query(s, sql[i], NULL, &err);

		cr_expect_null(v, "%s answered", sql[i]);
		cr_expect(strstr(err.msg, "Refused: the function"), "%s: %s", sql[i], err.msg);
		json_decref(v);
	}
	mcp_free(s);
}

/* One call that runs long inside SQLite, where no progress handler is
 * called: the statement's process is killed at the limit (and a little
 * grace) and the server goes on. */
Test(mcp_query, the_time_limit_holds_inside_one_long_call, .timeout = 20)
{
	mcp_opts o = { .query_timeout_ms = 200 };
	core_err err = { 0 };
	mcp_server *s = tmu_open(&o);
	uint64_t t0 = core_now_mono_ns();
	json_t *v = query(s, "SELECT length(printf('%.*c', 1000000000, 'x'))", NULL, &err);
	double secs = (double)(core_now_mono_ns() - t0) / 1e9;

	cr_expect_null(v);
	cr_expect_eq(err.code, CORE_EIO);
	cr_expect(strstr(err.msg, "stopped after 200 ms"), "%s", err.msg);
	cr_expect_lt(secs, 2.0, "stopped after %.2f s", secs);
	v = query(s, "SELECT 1 AS one", NULL, &err);
	cr_expect_not_null(v, "%s", err.msg);
	cr_expect_eq(json_integer_value(json_object_get(json_array_get(v, 0), "one")), 1);
	json_decref(v);
	mcp_free(s);
}

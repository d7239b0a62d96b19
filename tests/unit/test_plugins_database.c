/* test_plugins_database.c — the database sink on SQLite (ADR 0023): urls,
 * options, the table ELSPETH makes, values, commits and the ledger,
 * resume and verify. PostgreSQL: tests/integration/test_database_pg.sh. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <sqlite3.h>

#include "plugins/sink/database_internal.h"

static char dir[64];
static core_doc *docs[8];
static plg_env env; /* the run the sink writes for */
static size_t ndocs;

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void setup(void)
{
	strcpy(dir, "/tmp/elspeth-dbsink-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	plg_env_init(&env, NULL);
	plg_env_set_run_key(&env, "run-7-123");
}

static void teardown(void)
{
	plg_env_release(&env);
	while (ndocs)
		core_doc_free(docs[--ndocs]);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(dbsink, .init = setup, .fini = teardown, .timeout = 20);

/* The document of a YAML text ("@/" stands for the temp dir): its root. */
static const core_node *doc(const char *yaml)
{
	char text[4096], *o = text;
	core_err err = { 0 };

	for (const char *p = yaml; *p && o < text + sizeof(text) - 64; p++) {
		if (p[0] == '@' && p[1] == '/')
			o += sprintf(o, "%s", dir);
		else
			*o++ = *p;
	}
	*o = '\0';
	cr_assert_lt(ndocs, 8);
	cr_assert_eq(core_doc_parse("test.yaml", text, strlen(text), &docs[ndocs], &err),
		     0, "%s", err.msg);
	return core_doc_root(docs[ndocs++]);
}

/* A sink's options: sinks.NAME.options of a small document. */
static const core_node *sink_opts(const char *name, const char *opts)
{
	char yaml[2048];
	const core_node *root;

	snprintf(yaml, sizeof(yaml), "sinks:\n  %s:\n    options:\n%s", name, opts);
	root = doc(yaml);
	return core_map_get(core_map_get(core_map_get(root, "sinks"), name), "options");
}

#define FIXED "      schema: {mode: fixed, fields: [\"id: int\", \"name: str\", \"score: float?\"]}\n"
#define URL "      url: sqlite:///@/out/t.db\n"

static const plg_sink_ops *ops(void)
{
	const plg_sink_ops *o = plg_find_sink("database");

	cr_assert_not_null(o);
	return o;
}

static void *open_ok(const core_node *o)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(ops()->open(&env, o, &st, &err), 0, "%s", err.msg);
	return st;
}

static void write_ok(void *st, const char *row)
{
	json_t *r = json_loads(row, 0, NULL);
	plg_write_info info;
	core_err err = { 0 };

	cr_assert_not_null(r, "%s", row);
	cr_assert_eq(ops()->write(st, r, &info, &err), 0, "%s: %s", row, err.msg);
	json_decref(r);
}

static int write_err(void *st, const char *row, core_err *err)
{
	json_t *r = json_loads(row, 0, NULL);
	plg_write_info info;
	int rc;

	cr_assert_not_null(r);
	rc = ops()->write(st, r, &info, err);
	json_decref(r);
	return rc;
}

static void close_ok(void *st)
{
	core_err err = { 0 };

	cr_assert_eq(ops()->flush(st, &err), 0, "%s", err.msg);
	cr_assert_eq(ops()->close(st, &err), 0, "%s", err.msg);
}

/* The rows of a query on the test's database, "a|b\n" each. */
static char *query(const char *sql)
{
	char path[128];
	sqlite3 *db;
	sqlite3_stmt *st;
	core_buf b = { 0 };

	snprintf(path, sizeof(path), "%s/out/t.db", dir);
	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql,
		     sqlite3_errmsg(db));
	while (sqlite3_step(st) == SQLITE_ROW) {
		for (int i = 0; i < sqlite3_column_count(st); i++)
			core_buf_printf(&b, "%s%s", i ? "|" : "",
					sqlite3_column_text(st, i) ? (const char *)sqlite3_column_text(st, i) : "NULL");
		core_buf_putc(&b, '\n');
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return b.data ? core_buf_steal(&b) : strdup("");
}

static void expect_query(const char *sql, const char *want)
{
	char *got = query(sql);

	cr_assert_str_eq(got, want, "%s", sql);
	free(got);
}

/* ---------------------------------------------------------------- urls */

static int parse_url(const char *url, dbs_url *u, core_err *err)
{
	char yaml[512];
	core_doc *d;
	int rc;

	snprintf(yaml, sizeof(yaml), "url: '%s'\n", url);
	cr_assert_eq(core_doc_parse("u.yaml", yaml, strlen(yaml), &d, err), 0);
	rc = dbs__url_parse(core_map_get(core_doc_root(d), "url"), u, err);
	core_doc_free(d);
	return rc;
}

Test(dbsink, sqlite_urls)
{
	static const char *const cases[][2] = {
		{ "sqlite:///out/a.db", "out/a.db" },
		{ "sqlite:////abs/a.db", "/abs/a.db" },
		{ "sqlite://", ":memory:" },
		{ "sqlite:///:memory:", ":memory:" },
		{ "sqlite+pysqlite:///a.db", "a.db" },
	};
	core_err err = { 0 };
	dbs_url u;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cr_assert_eq(parse_url(cases[i][0], &u, &err), 0, "%s: %s", cases[i][0], err.msg);
		cr_assert_eq(u.kind, DBS_SQLITE);
		cr_assert_str_eq(u.conninfo, cases[i][1]);
		dbs__url_release(&u);
	}
}

Test(dbsink, postgresql_urls)
{
	core_err err = { 0 };
	dbs_url u;

	cr_assert_eq(parse_url("postgresql+psycopg2://ann:p%40ss@db:5432/sales?sslmode=require",
			       &u, &err), 0, "%s", err.msg);
	cr_assert_eq(u.kind, DBS_PG);
	cr_assert_str_eq(u.conninfo, "postgresql://ann:p%40ss@db:5432/sales?sslmode=require");
	cr_assert_str_eq(u.sanitized, "postgresql+psycopg2://ann@db:5432/sales?sslmode=require");
	dbs__url_release(&u);
}

Test(dbsink, refused_urls)
{
	static const char *const cases[][2] = {
		{ "mysql+pymysql://u:pw@h/db", "u.yaml:1:6: url: database 'mysql+pymysql' is not supported" },
		{ "postgres://h/db", "write postgresql://" },
		{ "sqlite://host/a.db", "a sqlite url is sqlite:///relative/file.db" },
		{ "sqlite:///a.db?mode=ro", "query parameters are not supported" },
		{ "out/a.db", "expected a database url" },
	};
	core_err err = { 0 };
	dbs_url u;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		cr_assert_eq(parse_url(cases[i][0], &u, &err), CORE_ECONFIG, "%s", cases[i][0]);
		cr_assert_not_null(strstr(err.msg, cases[i][1]), "%s: %s", cases[i][0], err.msg);
		cr_assert_null(strstr(err.msg, "pw@"), "%s", err.msg);
	}
}

Test(dbsink, sanitize)
{
	static const char *const cases[][2] = {
		{ "postgresql://u:secret@h/db", "postgresql://u@h/db" },
		{ "postgresql://u@h/db", "postgresql://u@h/db" },
		{ "postgresql://:pw@h", "postgresql://@h" },
		{ "postgresql://u:a@b@h/db", "postgresql://u@h/db" },
		{ "sqlite:///a:b@c.db", "sqlite:///a:b@c.db" },
		{ "postgresql://h/db?user=u", "postgresql://h/db?user=u" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *s = core_url_sanitize(cases[i][0]);

		cr_assert_str_eq(s, cases[i][1], "%s", cases[i][0]);
		free(s);
	}
}

/* ------------------------------------------------- Python's json.dumps */

Test(dbsink, pyjson)
{
	static const char *const cases[][2] = {
		{ "{\"k\": 1, \"tags\": [\"a\", \"\\u00e9\"], \"x\": 1.5}",
		  "{\"k\": 1, \"tags\": [\"a\", \"\\u00e9\"], \"x\": 1.5}" },
		{ "[1.0, 1e16, 1e-05, 0.0001, -0.0, 100]", "[1.0, 1e+16, 1e-05, 0.0001, -0.0, 100]" },
		{ "{\"b\": {}, \"a\": [], \"n\": null, \"t\": true, \"f\": false}",
		  "{\"b\": {}, \"a\": [], \"n\": null, \"t\": true, \"f\": false}" },
		{ "[\"q\\\"b\\\\n\\n\\t\\u0001\\u007f\\ud83d\\ude00\"]",
		  "[\"q\\\"b\\\\n\\n\\t\\u0001\\u007f\\ud83d\\ude00\"]" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		json_t *v = json_loads(cases[i][0], JSON_DECODE_ANY, NULL);
		core_buf b = { 0 };

		cr_assert_not_null(v, "%s", cases[i][0]);
		cr_assert_eq(core_json_append_py(&b, v, -1, 0), 0);
		cr_assert_str_eq(b.data, cases[i][1]);
		core_buf_release(&b);
		json_decref(v);
	}
}

/* ------------------------------------------------------------- options */

Test(dbsink, check_names_file_line_key)
{
	static const char *const cases[][2] = {
		{ URL "      table: t\n", "test.yaml:4:7: sinks.s.options: missing required key 'schema'" },
		{ URL "      table: t\n      tabel: u\n" FIXED, "test.yaml:6:7: sinks.s.options.tabel: unknown key 'tabel' (did you mean 'table'?)" },
		{ URL "      table: ''\n" FIXED, "test.yaml:5:14: sinks.s.options.table: table name must not be empty" },
		{ URL "      table: elspeth_sink_commits\n" FIXED, "own ledger of commits" },
		{ URL "      table: t\n      if_exists: fail\n" FIXED, "test.yaml:6:18: sinks.s.options.if_exists" },
		{ URL "      table: t\n      validate_input: maybe\n" FIXED, "sinks.s.options.validate_input" },
		{ "      table: t\n" FIXED, "missing required key 'url'" },
	};
	core_err err = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const core_node *o = sink_opts("s", cases[i][0]);

		cr_assert_eq(ops()->check(o, &err), CORE_ECONFIG, "case %zu", i);
		cr_assert_not_null(strstr(err.msg, cases[i][1]), "case %zu: %s", i, err.msg);
		while (ndocs)
			core_doc_free(docs[--ndocs]);
	}
}

Test(dbsink, target_is_elspeths_uri_without_password)
{
	const core_node *o = sink_opts("s", "      url: postgresql://u:pw@h/db\n      table: deals\n" FIXED);

	cr_assert_str_eq(ops()->target(&env, o), "db://deals@postgresql://u@h/db");
	cr_assert_eq(ops()->target(&env, o), ops()->target(&env, o)); /* kept */
}

/* ---------------------------------------------------------------- table */

Test(dbsink, creates_typed_table_and_writes)
{
	const core_node *o = sink_opts("s", URL "      table: out\n"
		"      schema: {mode: fixed, fields: [\"id: int\", \"name: str\", \"score: float?\", "
		"\"ok: bool\", \"meta: any\"]}\n");
	json_t *r = json_loads("{\"id\": 1, \"name\": \"é\", \"score\": 2, \"ok\": true, "
			       "\"meta\": {\"a\": [1, 2.5]}}", 0, NULL);
	plg_write_info info;
	core_err err = { 0 };
	char *canon;
	size_t n;
	void *st = open_ok(o);

	cr_assert_eq(ops()->write(st, r, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(core_canon(r, &canon, &n, &err), 0);
	/* the artifact: the row's canonical JSON, its index among the writer's rows */
	cr_assert_eq(info.offset, 0);
	cr_assert_eq(info.len, n);
	cr_assert_eq(memcmp(info.bytes, canon, n), 0);
	free(canon);
	json_decref(r);
	write_ok(st, "{\"id\": 2, \"name\": \"b\", \"ok\": false, \"meta\": \"x\"}");
	close_ok(st);
	expect_query("SELECT name, type, \"notnull\" FROM pragma_table_info('out')",
		     "id|INTEGER|1\nname|TEXT|1\nscore|FLOAT|0\nok|BOOLEAN|1\nmeta|TEXT|1\n");
	expect_query("SELECT id, name, score, typeof(score), ok, meta FROM out ORDER BY id",
		     "1|é|2.0|real|1|{\"a\": [1, 2.5]}\n2|b|NULL|null|0|x\n");
}

Test(dbsink, observed_and_flexible_columns)
{
	void *st = open_ok(sink_opts("s", URL "      table: obs\n      schema: {mode: observed}\n"));
	void *fl = open_ok(sink_opts("f", URL "      table: flex\n"
		"      schema: {mode: flexible, fields: [\"id: int\"]}\n"));
	core_err err = { 0 };

	write_ok(st, "{\"b\": 1, \"a\": [\"x\"], \"c\": 1.5, \"d\": true}");
	cr_assert_eq(write_err(st, "{\"b\": 2, \"zz\": 1}", &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "field 'zz' is not a column of table 'obs' (b, a, c, d)"),
			   "%s", err.msg);
	write_ok(fl, "{\"id\": 1, \"extra\": \"e\"}");
	cr_assert_eq(write_err(fl, "{\"id\": \"one\"}", &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "field 'id'"), "%s", err.msg);
	close_ok(st);
	close_ok(fl);
	expect_query("SELECT group_concat(name || ' ' || type) FROM pragma_table_info('obs')",
		     "b TEXT,a TEXT,c TEXT,d TEXT\n");
	expect_query("SELECT * FROM obs", "1|[\"x\"]|1.5|1\n");
	expect_query("SELECT group_concat(name || ' ' || type) FROM pragma_table_info('flex')",
		     "id INTEGER,extra TEXT\n");
}

Test(dbsink, replace_drops_only_when_a_row_comes)
{
	const char *opts = URL "      table: t\n      if_exists: replace\n" FIXED;
	void *st = open_ok(sink_opts("s", opts));

	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	close_ok(st);
	st = open_ok(sink_opts("s", opts));
	close_ok(st); /* no row: the table stays, as ELSPETH creates it at the first row */
	expect_query("SELECT id FROM t", "1\n");
	st = open_ok(sink_opts("s", opts));
	write_ok(st, "{\"id\": 2, \"name\": \"b\"}");
	close_ok(st);
	expect_query("SELECT id FROM t", "2\n");
}

Test(dbsink, append_checks_the_existing_table)
{
	core_err err = { 0 };
	void *st = open_ok(sink_opts("s", URL "      table: t\n"
		"      schema: {mode: fixed, fields: [\"id: int\", \"other: str\"]}\n"));

	write_ok(st, "{\"id\": 1, \"other\": \"x\"}");
	close_ok(st);
	cr_assert_eq(ops()->open(&env, sink_opts("s", URL "      table: t\n" FIXED), &st, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "test.yaml:5:14: sinks.s.options.table: table 't' in "), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "(missing: name, score; extra: other)"), "%s", err.msg);
}

Test(dbsink, two_sinks_one_table_refused)
{
	core_err err = { 0 };
	void *a = open_ok(sink_opts("a", URL "      table: t\n" FIXED)), *b = NULL;

	cr_assert_eq(ops()->open(&env, sink_opts("b", URL "      table: t\n" FIXED), &b, &err), CORE_ECONFIG);
	cr_assert_not_null(strstr(err.msg, "is written by another database sink too (sinks.a.options)"),
			   "%s", err.msg);
	close_ok(a);
}

Test(dbsink, without_rowid_refused)
{
	core_err err = { 0 };
	void *st = NULL;
	char *r;

	mkdir(strcat(strcpy((char[96]){ 0 }, dir), "/out"), 0777);
	r = query("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score FLOAT) WITHOUT ROWID");
	free(r);
	cr_assert_eq(ops()->open(&env, sink_opts("s", URL "      table: t\n" FIXED), &st, &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "has no rowid"), "%s", err.msg);
}

/* ------------------------------------------------ commits and resume */

Test(dbsink, one_commit_per_checkpoint_for_every_sink_of_the_database)
{
	void *a = open_ok(sink_opts("a", URL "      table: ta\n" FIXED));
	void *b = open_ok(sink_opts("b", URL "      table: tb\n" FIXED));
	plg_sink_pos pa, pb;
	core_err err = { 0 };

	write_ok(a, "{\"id\": 1, \"name\": \"a\"}");
	write_ok(b, "{\"id\": 1, \"name\": \"b\"}");
	write_ok(a, "{\"id\": 2, \"name\": \"a\"}");
	expect_query("SELECT count(*) FROM sqlite_master WHERE name IN ('ta', 'tb')", "0\n");
	cr_assert_eq(ops()->commit(a, &err), 0, "%s", err.msg);
	cr_assert_eq(ops()->commit(b, &err), 0, "%s", err.msg);
	ops()->position(a, &pa);
	ops()->position(b, &pb);
	cr_assert_eq(pa.pos, 2);
	cr_assert_eq(pb.pos, 1);
	cr_assert_eq(pa.fd, -1);
	expect_query("SELECT writer, seq, target, rows_before, rows_after, ref FROM elspeth_sink_commits ORDER BY target",
		     "run-7-123/sinks.a.options|1|ta|0|2|1-2\n"
		     "run-7-123/sinks.b.options|1|tb|0|1|1-1\n");
	close_ok(a);
	close_ok(b);
}

Test(dbsink, resume_deletes_the_commits_after_the_checkpoint)
{
	const core_node *o = sink_opts("s", URL "      table: t\n      if_exists: replace\n" FIXED);
	void *st = open_ok(o);
	plg_sink_pos at, now;
	core_err err = { 0 };

	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	write_ok(st, "{\"id\": 2, \"name\": \"b\"}");
	cr_assert_eq(ops()->commit(st, &err), 0);
	ops()->position(st, &at);       /* the durable checkpoint */
	write_ok(st, "{\"id\": 3, \"name\": \"c\"}");
	cr_assert_eq(ops()->commit(st, &err), 0); /* committed; its checkpoint lost */
	write_ok(st, "{\"id\": 4, \"name\": \"d\"}");
	cr_assert_eq(ops()->commit(st, &err), 0);
	close_ok(st);
	expect_query("SELECT count(*) FROM t", "4\n");
	cr_assert_eq(ops()->verify(&env, o, &at, &err), 0, "%s", err.msg);

	cr_assert_eq(ops()->resume(&env, o, &at, &st, &err), 0, "%s", err.msg);
	expect_query("SELECT id FROM t ORDER BY id", "1\n2\n"); /* not replaced again */
	write_ok(st, "{\"id\": 3, \"name\": \"c\"}");
	cr_assert_eq(ops()->commit(st, &err), 0);
	ops()->position(st, &now);
	cr_assert_eq(now.pos, 3);
	close_ok(st);
	expect_query("SELECT id FROM t ORDER BY id", "1\n2\n3\n");
	expect_query("SELECT seq, rows_before, rows_after FROM elspeth_sink_commits ORDER BY seq",
		     "1|0|2\n4|2|3\n");
}

Test(dbsink, resume_from_the_start_replaces_once)
{
	const core_node *o = sink_opts("s", URL "      table: t\n      if_exists: replace\n" FIXED);
	plg_sink_pos start;
	core_err err = { 0 };
	void *st;
	char *r;

	mkdir(strcat(strcpy((char[96]){ 0 }, dir), "/out"), 0777);
	r = query("CREATE TABLE t (id INTEGER, name TEXT, score FLOAT)");
	free(r);
	free(query("INSERT INTO t VALUES (9, 'old', NULL)"));
	st = open_ok(o);
	ops()->position(st, &start);    /* the start's checkpoint: 0 rows */
	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	cr_assert_eq(ops()->commit(st, &err), 0); /* dropped, created, 1 row */
	close_ok(st);
	cr_assert_eq(ops()->resume(&env, o, &start, &st, &err), 0, "%s", err.msg);
	expect_query("SELECT count(*) FROM t", "0\n");
	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	close_ok(st);
	expect_query("SELECT id, name FROM t", "1|a\n");
}

Test(dbsink, verify_refuses_what_no_longer_matches)
{
	const core_node *o = sink_opts("s", URL "      table: t\n" FIXED);
	void *st = open_ok(o);
	plg_sink_pos at, bad;
	core_err err = { 0 };

	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	cr_assert_eq(ops()->commit(st, &err), 0);
	ops()->position(st, &at);
	close_ok(st);
	cr_assert_eq(ops()->verify(&env, o, &at, &err), 0, "%s", err.msg);
	bad = at;
	bad.hash[0] = bad.hash[0] == 'a' ? 'b' : 'a';
	cr_assert_eq(ops()->verify(&env, o, &bad, &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "differ from those the checkpoint counts"), "%s", err.msg);
	bad = at;
	bad.pos = 5;
	cr_assert_eq(ops()->verify(&env, o, &bad, &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "the checkpoint counts 5 rows"), "%s", err.msg);
	/* another run (another run key) has no record of its own */
	plg_env_set_run_key(&env, "run-8-1");
	cr_assert_eq(ops()->verify(&env, o, &at, &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "was replaced or restored"), "%s", err.msg);
}

Test(dbsink, a_refused_row_leaves_the_transaction_whole)
{
	core_err err = { 0 };
	void *st;
	char *r;

	mkdir(strcat(strcpy((char[96]){ 0 }, dir), "/out"), 0777);
	r = query("CREATE TABLE t (id INTEGER UNIQUE, name TEXT, score FLOAT)");
	free(r);
	st = open_ok(sink_opts("s", URL "      table: t\n" FIXED));
	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	cr_assert_eq(write_err(st, "{\"id\": 1, \"name\": \"again\"}", &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "UNIQUE constraint failed"), "%s", err.msg);
	cr_assert_eq(write_err(st, "{\"id\": 2}", &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "field 'name': required field is missing"), "%s", err.msg);
	cr_assert_eq(write_err(st, "{\"id\": 2.5, \"name\": \"x\"}", &err), CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "field 'id'"), "%s", err.msg);
	write_ok(st, "{\"id\": 3, \"name\": \"c\"}");
	close_ok(st);
	expect_query("SELECT id, name FROM t ORDER BY id", "1|a\n3|c\n");
	expect_query("SELECT rows_after, ref FROM elspeth_sink_commits", "2|1-2\n");
}

Test(dbsink, no_run_key_gets_a_random_writer)
{
	void *st;

	plg_env_set_run_key(&env, NULL);
	st = open_ok(sink_opts("s", URL "      table: t\n" FIXED));
	write_ok(st, "{\"id\": 1, \"name\": \"a\"}");
	close_ok(st);
	expect_query("SELECT substr(writer, 1, 5), length(writer) FROM elspeth_sink_commits",
		     "once-|53\n");
}

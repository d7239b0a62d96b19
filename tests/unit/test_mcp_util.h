/* test_mcp_util.h — the mcp tests' fixture: tests/fixtures/mcp/trail.sql
 * (four runs of the real ELSPETH 0.4.1) loaded into a fresh SQLite file,
 * and what ELSPETH's analyzer answered on it (elspeth_answers.json). */
#ifndef TEST_MCP_UTIL_H
#define TEST_MCP_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <sqlite3.h>

#include "mcp/mcp.h"

#define FIXTURE_DIR ELSPETH_SOURCE_DIR "/tests/fixtures/mcp"

/* The fixture's four runs, oldest first (make_fixture.sh). */
#define RUN_FORK "3b989e47b0ea43d3a4a3205620e75c00"
#define RUN_ROUTING "dc9b9bc05cbe425580c243a3b359bc67"
#define RUN_FAILED "8270fb5a971f4ca9b997f43528d4df3a"
#define RUN_LLM "a607874059f64ac9ae047a679d1823d5"

static inline char *tmu_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* Writes the fixture trail to a new file; returns its path (static). */
static inline const char *tmu_trail(void)
{
	static char path[64];
	char *sql = tmu_slurp(FIXTURE_DIR "/trail.sql", NULL);
	sqlite3 *db;
	char *msg = NULL;
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_mcp_XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s", msg);
	sqlite3_close(db);
	free(sql);
	return path;
}

/* "now" when ELSPETH's answers were taken (make_answers.py NOW). */
static inline uint64_t tmu_now_ns(void)
{
	struct tm tm = { .tm_year = 2026 - 1900, .tm_mon = 10, .tm_mday = 26, .tm_hour = 10 };

	return (uint64_t)timegm(&tm) * 1000000000u;
}

/* A server on the trail at path, which is then removed (the server
 * keeps reading the open file). */
static inline mcp_server *tmu_open_file(const char *path, const mcp_opts *o)
{
	mcp_opts def = { .now_ns = tmu_now_ns() };
	mcp_server *s = NULL;
	core_err err = { 0 };

	cr_assert_eq(mcp_open(path, o ? o : &def, &s, &err), 0, "%s", err.msg);
	unlink(path);
	return s;
}

/* A server on a fresh copy of the fixture. */
static inline mcp_server *tmu_open(const mcp_opts *o)
{
	return tmu_open_file(tmu_trail(), o);
}

/* Runs SQL on the trail file (to make the cases the fixture lacks). */
static inline void tmu_exec(const char *path, const char *sql)
{
	sqlite3 *db;
	char *msg = NULL;

	cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg);
	sqlite3_close(db);
}

static inline json_t *tmu_json(const char *text)
{
	json_error_t je;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &je);

	cr_assert_not_null(v, "bad JSON in the test: %s: %s", je.text, text);
	return v;
}

/* Calls a tool with arguments given as JSON text; the answer (a new
 * reference), or NULL with the error in *err. */
static inline json_t *tmu_call(mcp_server *s, const char *tool, const char *args,
			       core_err *err)
{
	json_t *a = args ? tmu_json(args) : NULL, *v = NULL;
	mcp_result r = { 0 };

	if (!mcp_call(s, tool, a, &r, err)) {
		v = json_incref(r.value);
		mcp_result_release(&r);
	}
	json_decref(a);
	return v;
}

/* Compact JSON text of v (for messages); free it. */
static inline char *tmu_text(const json_t *v)
{
	return v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(null)");
}

#endif

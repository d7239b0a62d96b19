/*
 * db.c — opening an SQL trail file: creating ELSPETH's schema (and ours)
 * in a new file, checking it in an existing one, and the small helpers
 * the exporter shares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sqltrail/sqltrail_internal.h"

void sqlt__time(uint64_t ns, char out[SQLT_TIME_CAP])
{
	/* The date and time to the second change rarely from one record to
	 * the next: kept, per thread, with the second they are of. */
	static _Thread_local time_t last = -1;
	static _Thread_local char prefix[SQLT_TIME_CAP];
	time_t s = (time_t)(ns / 1000000000u);
	unsigned us = (unsigned)(ns % 1000000000u / 1000u);
	struct tm tm;

	out[0] = '\0';
	if (!ns)
		return;
	if (s != last) {
		if (!gmtime_r(&s, &tm))
			return;
		snprintf(prefix, sizeof(prefix), "%04d-%02d-%02d %02d:%02d:%02d.",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec);
		last = s;
	}
	memcpy(out, prefix, 20);
	for (int i = 25; i >= 20; i--, us /= 10)
		out[i] = (char)('0' + us % 10);
	out[26] = '\0';
}

int sqlt__db_error(sqlite3 *db, core_err *err, const char *what)
{
	return core_err_set(err, CORE_EIO, "%s: %s", what,
			    db ? sqlite3_errmsg(db) : "out of memory");
}

static int exec_all(sqlite3 *db, const char *const *stmts, core_err *err)
{
	for (size_t i = 0; stmts[i]; i++)
		if (sqlite3_exec(db, stmts[i], NULL, NULL, NULL) != SQLITE_OK)
			return sqlt__db_error(db, err, "creating the SQL trail's schema");
	return 0;
}

/* How many of ELSPETH's tables the file has (0: a new or empty file). */
static int count_tables(sqlite3 *db, int *n, core_err *err)
{
	static const char q[] =
		"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
		"('runs','nodes','edges','rows','tokens','token_parents',"
		"'token_outcomes','node_states','operations','calls','routing_events',"
		"'batches','batch_members','batch_outputs','artifacts',"
		"'validation_errors','transform_errors','checkpoints',"
		"'secret_resolutions','preflight_results')";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
		return sqlt__db_error(db, err, "reading the file's tables");
	rc = sqlite3_step(st);
	*n = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return sqlt__db_error(db, err, "reading the file's tables");
	return 0;
}

/* The columns of every table of ours and ELSPETH's, in order, as a text:
 * of the file, or (db NULL) of a new database with our schema. */
static int shape(sqlite3 *db, char **out, core_err *err)
{
	static const char q[] =
		"SELECT group_concat(m.name || '.' || p.name || ':' || p.type, ',') "
		"FROM sqlite_master m, pragma_table_info(m.name) p "
		"WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' "
		"ORDER BY m.name, p.cid";
	sqlite3 *mem = NULL;
	sqlite3_stmt *st = NULL;
	int rc = 0;

	*out = NULL;
	if (!db) {
		if (sqlite3_open(":memory:", &mem) != SQLITE_OK)
			return sqlt__db_error(mem, err, "checking the schema");
		if ((rc = exec_all(mem, sqlt__elspeth_tables, err)) ||
		    (rc = exec_all(mem, sqlt__own_tables, err)))
			goto done;
		db = mem;
	}
	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		rc = sqlt__db_error(db, err, "checking the schema");
		goto done;
	}
	if (!(*out = strdup(sqlite3_column_text(st, 0) ?
			    (const char *)sqlite3_column_text(st, 0) : "")))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
done:
	sqlite3_finalize(st);
	sqlite3_close(mem);
	return rc;
}

/* An existing trail must have our tables' columns (ours may be missing:
 * a file ELSPETH wrote gets them). Compared per ELSPETH table. */
static int check_shape(sqlite3 *db, const char *path, core_err *err)
{
	char *want = NULL, *have = NULL, *save = NULL;
	core_buf all = { 0 }, needle = { 0 };
	int rc;

	if ((rc = shape(NULL, &want, err)) || (rc = shape(db, &have, err)))
		goto done;
	/* ",a.x:T,b.y:U," so that a column is found whole */
	if (core_buf_printf(&all, ",%s,", have)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto done;
	}
	for (char *w = strtok_r(want, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		core_buf_reset(&needle);
		if (core_buf_printf(&needle, ",%s,", w)) {
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			break;
		}
		if (!strncmp(w, "elspeth_", 8) || strstr(all.data, needle.data))
			continue;
		rc = core_err_set(err, CORE_EDATA,
			"%s is not an SQL audit trail of ELSPETH 0.4.1's schema: "
			"column %s is missing", path, w);
		break;
	}
done:
	core_buf_release(&all);
	core_buf_release(&needle);
	free(want);
	free(have);
	return rc;
}

int sqlt__open(const char *path, sqlite3 **out, bool *fresh, core_err *err)
{
	sqlite3 *db = NULL;
	int n, rc;

	*out = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX,
			    NULL) != SQLITE_OK) {
		rc = core_err_set(err, CORE_EIO, "cannot open %s: %s", path,
				  db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return rc;
	}
	sqlite3_busy_timeout(db, 10000);
	sqlite3_db_config(db, SQLITE_DBCONFIG_LOOKASIDE, NULL, 1024, 4000);
	if ((rc = count_tables(db, &n, err)))
		goto fail;
	if (n != 0 && n != 20) {
		rc = core_err_set(err, CORE_EDATA,
			"%s is not an SQL audit trail: it has %d of ELSPETH's 20 tables",
			path, n);
		goto fail;
	}
	*fresh = n == 0;
	if (!*fresh && (rc = check_shape(db, path, err)))
		goto fail;
	/* A large page cache: the text primary keys ("st-1-10" sorts before
	 * "st-1-2") make index inserts land all over their B-trees. */
	sqlite3_exec(db, "PRAGMA cache_size = -524288", NULL, NULL, NULL);
	/* A rollback journal, not WAL: a run's rows are appended, and new
	 * pages need no journal, where WAL writes every page twice (to the
	 * log, then to the file). A reader waits (busy timeout) while a
	 * run is committed. A file in WAL mode (a live trail's, ADR 0041,
	 * or a reader's) goes back unless another connection has it open:
	 * then it stays in WAL, where that reader does not hold up the
	 * export. */
	sqlite3_busy_timeout(db, 0);
	if (sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK &&
	    (sqlite3_errcode(db) & 0xff) != SQLITE_BUSY) {
		rc = sqlt__db_error(db, err, path);
		goto fail;
	}
	sqlite3_busy_timeout(db, 10000);
	/* The schema in one transaction: a process killed while making it
	 * leaves none of it, never some of ELSPETH's tables (a file the next
	 * open would refuse). Counted again inside: another process may have
	 * made it meanwhile. */
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(db, err, path);
		goto fail;
	}
	if ((rc = count_tables(db, &n, err)) ||
	    (rc = exec_all(db, sqlt__elspeth_tables, err)) ||
	    (rc = exec_all(db, sqlt__own_tables, err))) {
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	*fresh = n == 0;
	if ((*fresh && sqlite3_exec(db, "PRAGMA user_version = "
				    SQLT_STR(SQLT_SCHEMA_EPOCH), NULL, NULL,
				    NULL) != SQLITE_OK) ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(db, err, path);
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto fail;
	}
	*out = db;
	return 0;
fail:
	core_err_prefix(err, "SQL trail %s", path);
	sqlite3_close(db);
	return rc;
}

static int drop_all(sqlite3 *db, const char *const *stmts, core_err *err)
{
	for (size_t i = 0; stmts[i]; i++) {
		const char *name = strstr(stmts[i], "EXISTS ") + 7;
		char sql[256];

		snprintf(sql, sizeof(sql), "DROP INDEX IF EXISTS %.*s",
			 (int)strcspn(name, " "), name);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return sqlt__db_error(db, err, "replacing an earlier export");
	}
	return 0;
}

int sqlt__drop_indexes(sqlite3 *db, core_err *err)
{
	int rc = drop_all(db, sqlt__elspeth_indexes, err);

	return rc ? rc : drop_all(db, sqlt__own_indexes, err);
}

int sqlt__create_indexes(sqlite3 *db, core_err *err)
{
	int rc = exec_all(db, sqlt__elspeth_indexes, err);

	return rc ? rc : exec_all(db, sqlt__own_indexes, err);
}

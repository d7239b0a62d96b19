/*
 * import_pg.c — the SQL trail a PostgreSQL database holds, copied into a
 * new SQLite file in the same schema, for readers that speak SQLite
 * (the MCP server's tools, ADR 0043).
 *
 * One read-only REPEATABLE READ transaction on the database: the copy is
 * one consistent picture even while runs write into it (a live trail
 * commits whole steps, so the picture holds whole rows). Tables and
 * columns are the SQLite schema's (schema.c); a column is read with the
 * conversion that gives what our SQLite export stores: times as
 * "YYYY-MM-DD HH:MM:SS.ffffff" in UTC, bytes as blobs, booleans as 0/1,
 * numbers parsed from their text (PostgreSQL writes floats with the
 * digits that read back exactly; strtod reads them so, where SQLite's
 * own conversion is an ulp off for about one value in 20,000). A table our export adds (elspeth_*) that a database written
 * by ELSPETH itself lacks is left empty; one of ELSPETH's twenty missing
 * means the database is not an audit trail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "sqltrail/sqltrail_internal.h"

#define FETCH_ROWS 5000
#define FETCH_PAYLOADS 64

typedef struct imp {
	PGconn *pg;
	const char *shown;      /* the url without its password */
	sqlite3 *db;
	core_err *err;
} imp;

static int pg_fail(imp *m, const PGresult *res, const char *what)
{
	char msg[1024];

	core_pg_message(msg, sizeof(msg), res ? PQresultErrorMessage(res) : PQerrorMessage(m->pg));
	return core_err_set(m->err, CORE_EIO, "%s: %s: %s", m->shown, what, msg);
}

/* A command without rows. */
static int pg_exec(imp *m, const char *sql)
{
	PGresult *res = PQexec(m->pg, sql);
	int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_fail(m, res, sql);

	PQclear(res);
	return rc;
}

static int quote_ident(core_buf *b, const char *name)
{
	int bad = core_buf_putc(b, '"');

	for (const char *p = name; *p; p++) {
		if (*p == '"')
			bad |= core_buf_putc(b, '"');
		bad |= core_buf_putc(b, *p);
	}
	return bad | core_buf_putc(b, '"');
}

/* What the database holds of table: each column's data_type by name
 * (NULL: the table is not there). */
static int pg_columns(imp *m, const char *table, PGresult **out)
{
	const char *params[1] = { table };
	PGresult *res = PQexecParams(m->pg,
		"SELECT column_name, data_type FROM information_schema.columns "
		"WHERE table_schema = current_schema() AND table_name = $1",
		1, NULL, params, NULL, NULL, 0);

	*out = NULL;
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		int rc = pg_fail(m, res, "reading its tables' columns");

		PQclear(res);
		return rc;
	}
	if (!PQntuples(res)) {
		PQclear(res);
		return 0;
	}
	*out = res;
	return 0;
}

static const char *pg_type(const PGresult *cols, const char *name)
{
	for (int i = 0; i < PQntuples(cols); i++)
		if (!strcmp(PQgetvalue(cols, i, 0), name))
			return PQgetvalue(cols, i, 1);
	return NULL;
}

/* One column of the SELECT: what our SQLite export would hold. Floats
 * are parsed here (strtod rounds correctly; SQLite's own text-to-real
 * conversion is off by an ulp for some values), integers too. */
enum { COL_TEXT, COL_BLOB, COL_REAL, COL_INT };
static int select_column(core_buf *b, const char *name, const char *type, int *bad)
{
	if (!type) { /* not in this database: NULL, as an older export */
		*bad |= core_buf_puts(b, "NULL");
		return COL_TEXT;
	}
	if (!strncmp(type, "timestamp", 9)) {
		*bad |= core_buf_puts(b, "to_char(") | quote_ident(b, name) |
			core_buf_puts(b, ", 'YYYY-MM-DD HH24:MI:SS.US')");
		return COL_TEXT;
	}
	if (!strcmp(type, "bytea")) {
		*bad |= core_buf_puts(b, "encode(") | quote_ident(b, name) |
			core_buf_puts(b, ", 'hex')");
		return COL_BLOB;
	}
	if (!strcmp(type, "boolean")) {
		*bad |= quote_ident(b, name) | core_buf_puts(b, "::int");
		return COL_INT;
	}
	*bad |= quote_ident(b, name);
	if (!strcmp(type, "double precision") || !strcmp(type, "real") ||
	    !strcmp(type, "numeric"))
		return COL_REAL;
	if (!strcmp(type, "integer") || !strcmp(type, "bigint") || !strcmp(type, "smallint"))
		return COL_INT;
	return COL_TEXT;
}

static int hex_val(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* value's hex digits as bytes in b; -1 when they are not hex. */
static int unhex(core_buf *b, const char *v, size_t n)
{
	core_buf_reset(b);
	if (n % 2 || core_buf_reserve(b, n / 2 + 1))
		return -1;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hex_val(v[i]), lo = hex_val(v[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		b->data[b->len++] = (char)(hi << 4 | lo);
	}
	return 0;
}

/* Rows of one FETCH into the prepared INSERT. */
static int insert_rows(imp *m, const char *table, const PGresult *res, sqlite3_stmt *ins,
		       const int *kinds, int ncols, core_buf *bytes)
{
	for (int r = 0; r < PQntuples(res); r++) {
		for (int c = 0; c < ncols; c++) {
			const char *v = PQgetvalue(res, r, c);
			int len = PQgetlength(res, r, c), src;

			if (PQgetisnull(res, r, c)) {
				src = sqlite3_bind_null(ins, c + 1);
			} else if (kinds[c] == COL_BLOB) {
				if (unhex(bytes, v, (size_t)len))
					return core_err_set(m->err, CORE_EDATA, "%s: %s: a "
						"column's bytes did not come as hex", m->shown, table);
				src = sqlite3_bind_blob(ins, c + 1, bytes->data ? bytes->data : "",
							(int)bytes->len, SQLITE_TRANSIENT);
			} else if (kinds[c] == COL_REAL) {
				src = sqlite3_bind_double(ins, c + 1, strtod(v, NULL));
			} else if (kinds[c] == COL_INT) {
				src = sqlite3_bind_int64(ins, c + 1, strtoll(v, NULL, 10));
			} else {
				src = sqlite3_bind_text(ins, c + 1, v, len, SQLITE_TRANSIENT);
			}
			if (src != SQLITE_OK)
				return sqlt__db_error(m->db, m->err, table);
		}
		if (sqlite3_step(ins) != SQLITE_DONE) {
			int rc = sqlt__db_error(m->db, m->err, table);

			sqlite3_reset(ins);
			return rc;
		}
		sqlite3_reset(ins);
	}
	return 0;
}

/* Table `table` of the SQLite file, filled from the database's. */
static int copy_table(imp *m, const char *table, bool required)
{
	core_buf sel = { 0 }, ins = { 0 }, bytes = { 0 };
	PGresult *cols = NULL, *res = NULL;
	sqlite3_stmt *info = NULL, *put = NULL;
	int kinds[64], ncols = 0, rc = 0, bad = 0;

	if ((rc = pg_columns(m, table, &cols)))
		return rc;
	if (!cols)
		return required ? core_err_set(m->err, CORE_EDATA, "%s is not an SQL audit "
			"trail: it has no table %s (ELSPETH's schema has twenty)",
			m->shown, table) : 0;
	bad |= core_buf_puts(&sel, "DECLARE elspeth_import NO SCROLL CURSOR FOR SELECT ") |
	       core_buf_printf(&ins, "INSERT INTO \"%s\" (", table) |
	       core_buf_printf(&bytes, "PRAGMA table_info(\"%s\")", table);
	if (bad) {
		rc = core_err_set(m->err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(m->db, bytes.data, -1, &info, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(m->db, m->err, table);
		goto out;
	}
	while (sqlite3_step(info) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(info, 1);

		if (ncols == (int)(sizeof(kinds) / sizeof(kinds[0]))) {
			rc = core_err_set(m->err, CORE_EINTERNAL, "%s: more than %zu columns",
					  table, sizeof(kinds) / sizeof(kinds[0]));
			goto out;
		}
		bad |= core_buf_puts(&sel, ncols ? ", " : "");
		kinds[ncols] = select_column(&sel, name, pg_type(cols, name), &bad);
		bad |= core_buf_puts(&ins, ncols ? ", " : "") | quote_ident(&ins, name);
		ncols++;
	}
	bad |= core_buf_puts(&sel, " FROM ") | quote_ident(&sel, table) |
	       core_buf_puts(&ins, ") VALUES (");
	for (int i = 0; i < ncols; i++)
		bad |= core_buf_puts(&ins, i ? ", ?" : "?");
	bad |= core_buf_putc(&ins, ')');
	if (bad) {
		rc = core_err_set(m->err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	if (sqlite3_prepare_v2(m->db, ins.data, -1, &put, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(m->db, m->err, table);
		goto out;
	}
	if ((rc = pg_exec(m, sel.data)))
		goto out;
	for (;;) {
		/* payloads are big, and come as hex: fewer at a time */
		res = PQexec(m->pg, strcmp(table, "elspeth_payloads") ?
			     "FETCH FORWARD " SQLT_STR(FETCH_ROWS) " FROM elspeth_import" :
			     "FETCH FORWARD " SQLT_STR(FETCH_PAYLOADS) " FROM elspeth_import");
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			rc = pg_fail(m, res, table);
			break;
		}
		if (!PQntuples(res) ||
		    (rc = insert_rows(m, table, res, put, kinds, ncols, &bytes)))
			break;
		PQclear(res);
		res = NULL;
	}
	PQclear(res);
	if (!rc)
		rc = pg_exec(m, "CLOSE elspeth_import");
out:
	PQclear(cols);
	sqlite3_finalize(info);
	sqlite3_finalize(put);
	core_buf_release(&sel);
	core_buf_release(&ins);
	core_buf_release(&bytes);
	return rc;
}

/* Whether table is one of ELSPETH's twenty (not one of our own). */
static bool elspeth_table(const char *table)
{
	return strncmp(table, "elspeth_", 8) != 0;
}

static int copy_all(imp *m)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (sqlite3_prepare_v2(m->db, "SELECT name FROM sqlite_master WHERE type = 'table' "
			       "ORDER BY name", -1, &st, NULL) != SQLITE_OK)
		return sqlt__db_error(m->db, m->err, "listing the tables");
	while (!rc && sqlite3_step(st) == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(st, 0);
		char name[128];

		snprintf(name, sizeof(name), "%s", t ? t : "");
		rc = copy_table(m, name, elspeth_table(name));
	}
	sqlite3_finalize(st);
	return rc;
}

int sqlt_import_pg(const char *url, const char *file, core_err *err)
{
	imp m = { .err = err };
	char *shown = NULL, part[4200];
	struct stat st;
	bool fresh;
	int rc;

	if (!stat(file, &st))
		return core_err_set(err, CORE_ECONFIG, "%s exists: a copy of a database's "
				    "trail goes into a new file", file);
	if ((size_t)snprintf(part, sizeof(part), "%s.part", file) >= sizeof(part))
		return core_err_set(err, CORE_ECONFIG, "%s: the path is too long", file);
	unlink(part);
	if ((rc = core_pg_connect(url, true, &m.pg, &shown, err)))
		goto out;
	m.shown = shown;
	/* a table another session holds for DDL is waited for, not forever */
	if ((rc = pg_exec(&m, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")) ||
	    (rc = pg_exec(&m, "SET LOCAL TimeZone = 'UTC'")) ||
	    (rc = pg_exec(&m, "SET LOCAL lock_timeout = '30s'")))
		goto out;
	if ((rc = sqlt__open(part, &m.db, &fresh, err)))
		goto out;
	if (sqlite3_exec(m.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		rc = sqlt__db_error(m.db, err, part);
		goto out;
	}
	if ((rc = copy_all(&m)) || (rc = sqlt__create_indexes(m.db, err)))
		goto out;
	if (sqlite3_exec(m.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = sqlt__db_error(m.db, err, part);
out:
	if (m.db) {
		if (rc)
			sqlite3_exec(m.db, "ROLLBACK", NULL, NULL, NULL);
		if (sqlite3_close(m.db) != SQLITE_OK && !rc)
			rc = core_err_set(err, CORE_EIO, "closing %s", part);
	}
	/* the whole copy or nothing under the name, never over a file made
	 * meanwhile (link refuses an existing name) */
	if (!rc && link(part, file))
		rc = errno == EEXIST ? core_err_set(err, CORE_ECONFIG, "%s exists: a copy of "
						    "a database's trail goes into a new file", file)
				     : core_err_set(err, CORE_EIO, "naming the copy %s: %s",
						    file, strerror(errno));
	unlink(part);
	if (m.pg)
		PQfinish(m.pg); /* the read-only transaction ends with it */
	if (rc && shown && !strstr(err->msg, shown))
		core_err_prefix(err, "reading %s", shown);
	free(shown);
	return rc;
}

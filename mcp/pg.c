/*
 * pg.c — serving a PostgreSQL Landscape (ADR 0043). The tools read
 * SQLite, so the database's trail is first copied, in one read-only
 * snapshot, into a private SQLite file (sqlt_import_pg), opened and
 * unlinked as lmdb.c does with its export. The `query` tool is the
 * exception: it runs on the database itself, now, as the user wrote it
 * (PostgreSQL's SQL), with the same guarantees as on SQLite:
 *   1. read-only: the connection's transactions default to READ ONLY,
 *      and each statement runs in a READ ONLY transaction that is rolled
 *      back; then DISCARD ALL ends what a statement can leave in the
 *      session beyond its transaction (an advisory lock, which would hold
 *      up every writer of the trail; SET SESSION; a prepared statement);
 *   2. exactly one statement: the extended protocol (PQsendQueryParams)
 *      refuses several; a COPY is refused (its data are no rows);
 *   3. a time limit: statement_timeout and lock_timeout, for that
 *      transaction;
 *   4. the rows' and bytes' caps: rows are read one at a time (single-row
 *      mode, a row's size checked before it becomes JSON) and the
 *      statement is cancelled once the caps are reached.
 * Parameters are named as on SQLite (:name in the SQL, values in params;
 * pg_params.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "mcp/mcp_internal.h"
#include "sqltrail/sqltrail.h"

int mcp__open_pg(mcp_server *s, const char *url, core_err *err)
{
	uint64_t t0 = core_now_mono_ns();
	char *shown = core_url_sanitize(url);
	int rc;

	if (!shown)
		return mcp__oom(err);
	rc = mcp__snapshot(s, shown, sqlt_import_pg, url, err);
	if (!rc)
		fprintf(s->log, "elspeth mcp: copied the trail in %s in %.2f s (the query "
			"tool reads the database itself)\n", shown,
			(double)(core_now_mono_ns() - t0) / 1e9);
	free(shown);
	return rc;
}

/* ---------------------------------------------------------- parameters */

/* The values of p's names from params, as PostgreSQL text (NULL: NULL). */
/* A double as the shortest text that reads back to it (0.1, not
 * 0.10000000000000001): the value the user wrote. */
static char *real_text(double d)
{
	char buf[64];

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	return strdup(buf);
}

static int values(const mcp__pg_params *p, const json_t *given, char **vals, core_err *err)
{
	for (int i = 0; i < p->n; i++) {
		const json_t *v = json_object_get(given, p->names[i]);

		vals[i] = NULL;
		if (!v)
			return core_err_set(err, CORE_EDATA, "A value is required for bind "
					    "parameter '%s' (give it in params)", p->names[i]);
		switch (json_typeof(v)) {
		case JSON_STRING:
			vals[i] = strdup(json_string_value(v));
			break;
		case JSON_INTEGER:
			vals[i] = json_dumps(v, JSON_ENCODE_ANY);
			break;
		case JSON_REAL:
			vals[i] = real_text(json_real_value(v));
			break;
		case JSON_TRUE:
		case JSON_FALSE:
			vals[i] = strdup(json_is_true(v) ? "true" : "false");
			break;
		case JSON_NULL:
			continue;
		default:
			return core_err_set(err, CORE_EDATA, "Invalid arguments: 'query': "
					    "parameter '%s' must be a string, number, boolean or "
					    "null, got %s", p->names[i],
					    json_is_array(v) ? "list" : "dict");
		}
		if (!vals[i])
			return mcp__oom(err);
	}
	return 0;
}

/* --------------------------------------------------------------- values */

/* PostgreSQL's type oids (pg_type.h) that become JSON numbers/booleans. */
enum { OID_BOOL = 16, OID_BYTEA = 17, OID_INT8 = 20, OID_INT2 = 21, OID_INT4 = 23,
       OID_OID = 26, OID_FLOAT4 = 700, OID_FLOAT8 = 701, OID_NUMERIC = 1700 };

static json_t *pg_value(const PGresult *res, int r, int c)
{
	const char *v = PQgetvalue(res, r, c);
	size_t n = (size_t)PQgetlength(res, r, c);
	core_buf b = { 0 };
	json_t *o;

	if (PQgetisnull(res, r, c))
		return json_null();
	switch (PQftype(res, c)) {
	case OID_BOOL:
		return json_boolean(v[0] == 't');
	case OID_INT2: case OID_INT4: case OID_INT8: case OID_OID:
		return json_integer(strtoll(v, NULL, 10));
	case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC: {
		double d = strtod(v, NULL);

		/* NaN and the infinities are no JSON numbers: their text */
		return isfinite(d) ? json_real(d) : json_stringn(v, n);
	}
	case OID_BYTEA: /* "\x..." hex, as a BLOB is shown on SQLite */
		return n >= 2 && v[0] == '\\' && v[1] == 'x' ? json_stringn(v + 2, n - 2)
							     : json_stringn(v, n);
	default:
		if (core_utf8_valid(v, n))
			return json_stringn(v, n);
		if (core_utf8_append_lossy(&b, v, n)) {
			core_buf_release(&b);
			return NULL;
		}
		o = json_stringn(b.data ? b.data : "", b.len);
		core_buf_release(&b);
		return o;
	}
}

static json_t *pg_row(const PGresult *res)
{
	json_t *o = json_object();

	for (int c = 0; o && c < PQnfields(res); c++) {
		json_t *v = pg_value(res, 0, c);

		/* a repeated name: its first place, its last value (as on SQLite) */
		if (!v || json_object_set_new(o, PQfname(res, c), v)) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* ---------------------------------------------------------------- query */

static int pg_error(mcp_server *s, const PGresult *res, core_err *err)
{
	const char *code = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char msg[1024];

	core_pg_message(msg, sizeof(msg), res ? PQresultErrorMessage(res)
					      : PQerrorMessage(s->pg));
	if (code && !strcmp(code, "57014")) /* query_canceled: the time limit */
		return core_err_set(err, CORE_EIO, "The query was stopped after %u ms, the "
				    "query tool's time limit: narrow it down (WHERE, LIMIT) "
				    "or ask for less", s->o.query_timeout_ms);
	if (code && !strcmp(code, "25006")) /* read_only_sql_transaction */
		return core_err_set(err, CORE_EDATA, "The query tool only reads: %s", msg);
	return core_err_set(err, CORE_EDATA, "SQL error: %s", msg);
}

static int exec_simple(mcp_server *s, const char *sql, core_err *err)
{
	PGresult *res = PQexec(s->pg, sql);
	int rc = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_error(s, res, err);

	PQclear(res);
	return rc;
}

/* The database's connection, made on the first query (again after one
 * that broke). */
static int connection(mcp_server *s, core_err *err)
{
	char *shown = NULL;
	int rc;

	if (s->pg && PQstatus(s->pg) == CONNECTION_OK &&
	    PQtransactionStatus(s->pg) == PQTRANS_IDLE)
		return 0;
	if (s->pg)
		PQfinish(s->pg);
	s->pg = NULL;
	rc = core_pg_connect(s->path, true, &s->pg, &shown, err);
	free(shown);
	return rc;
}

void mcp__pg_close(mcp_server *s)
{
	if (s->pg)
		PQfinish(s->pg);
	s->pg = NULL;
}

/* The row's size as PostgreSQL sent it: a bound on its JSON before it
 * is built (a value of a gigabyte is refused, not copied three times). */
static size_t row_bytes(const PGresult *res)
{
	size_t n = 0;

	for (int c = 0; c < PQnfields(res); c++)
		n += (size_t)PQgetlength(res, 0, c);
	return n;
}

static void cancel(mcp_server *s)
{
	PGcancel *c = PQgetCancel(s->pg);
	char ebuf[256];

	if (c) {
		PQcancel(c, ebuf, sizeof(ebuf));
		PQfreeCancel(c);
	}
}

/* Reads the rows of the statement sent: at most max and the byte cap,
 * *more when there were more (the statement is then cancelled). Every
 * result is read and freed; a COPY (its data are no rows) is refused and
 * the connection dropped, as libpq cannot leave a COPY half read. */
static int read_rows(mcp_server *s, json_t *rows, bool *more, core_err *err)
{
	size_t bytes = 0;
	PGresult *res;
	int rc = 0;

	*more = false;
	while ((res = PQgetResult(s->pg))) {
		ExecStatusType st = PQresultStatus(res);

		if (st == PGRES_COPY_OUT || st == PGRES_COPY_IN || st == PGRES_COPY_BOTH) {
			PQclear(res);
			mcp__pg_close(s);
			return rc ? rc : core_err_set(err, CORE_EDATA, "The query tool returns "
				"rows: COPY is not one of its statements (SELECT the rows instead)");
		}
		if (rc || *more) {
			;       /* draining what is left after a cancel or an error */
		} else if (st == PGRES_SINGLE_TUPLE) {
			if (json_array_size(rows) == s->o.query_max_rows) {
				*more = true;
			} else {
				size_t raw = row_bytes(res), b = 0;
				json_t *row = raw > MCP_QUERY_MAX_BYTES ? NULL : pg_row(res);

				if (raw <= MCP_QUERY_MAX_BYTES && !row) {
					rc = mcp__oom(err);
				} else if (row && bytes + (b = json_dumpb(row, NULL, 0,
							JSON_COMPACT) + 1) <= MCP_QUERY_MAX_BYTES) {
					bytes += b;
					rc = mcp__append(rows, row, err); /* takes it */
					row = NULL;
				} else if (!json_array_size(rows)) {
					rc = core_err_set(err, CORE_EDATA, "The first row alone is "
						"over the query tool's %u MiB of JSON: select fewer "
						"or shorter columns (substr, length)",
						MCP_QUERY_MAX_BYTES >> 20);
				} else {
					*more = true;
				}
				json_decref(row);
			}
			if (rc || *more)
				cancel(s);
		} else if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
			rc = pg_error(s, res, err);
		}
		PQclear(res);
	}
	return rc;
}

/* Everything a statement may have left in the session beyond its
 * transaction (advisory locks, SET SESSION, prepared statements, …) goes
 * with DISCARD ALL; a connection that cannot do that is dropped. */
static void reset_session(mcp_server *s)
{
	PGresult *res;

	if (!s->pg)
		return;
	PQclear(PQexec(s->pg, "ROLLBACK"));
	res = PQexec(s->pg, "DISCARD ALL");
	if (PQresultStatus(res) != PGRES_COMMAND_OK ||
	    PQtransactionStatus(s->pg) != PQTRANS_IDLE)
		mcp__pg_close(s);
	PQclear(res);
}

static void drain(mcp_server *s)
{
	PGresult *res;

	while ((res = PQgetResult(s->pg))) {
		ExecStatusType st = PQresultStatus(res);

		PQclear(res);
		if (st == PGRES_COPY_OUT || st == PGRES_COPY_IN || st == PGRES_COPY_BOTH) {
			mcp__pg_close(s);
			return;
		}
	}
}

int mcp__query_pg(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const json_t *given = json_object_get(a, "params");
	const char *sql = mcp__arg_str(a, "sql");
	mcp__pg_params p = { 0 };
	char *vals[MCP__PG_PARAMS_MAX] = { 0 }, set[128], note[256];
	json_t *rows = NULL;
	bool more = false;
	int rc;

	if ((rc = connection(s, err)) || (rc = mcp__pg_rewrite(sql ? sql : "", &p, err)) ||
	    (rc = values(&p, json_is_object(given) ? given : NULL, vals, err)))
		goto out;
	if (!(rows = json_array())) {
		rc = mcp__oom(err);
		goto out;
	}
	/* the time limit, for the statement and for any lock it waits for */
	snprintf(set, sizeof(set), "SET LOCAL statement_timeout = %u; SET LOCAL lock_timeout "
		 "= %u", s->o.query_timeout_ms, s->o.query_timeout_ms);
	if ((rc = exec_simple(s, "BEGIN READ ONLY", err)) || (rc = exec_simple(s, set, err)))
		goto end;
	if (!PQsendQueryParams(s->pg, p.sql.data ? p.sql.data : "", p.n, NULL,
			       (const char *const *)vals, NULL, NULL, 0)) {
		rc = pg_error(s, NULL, err);
		goto end;
	}
	if (!PQsetSingleRowMode(s->pg)) {
		rc = pg_error(s, NULL, err);
		drain(s);
		goto end;
	}
	rc = read_rows(s, rows, &more, err);
end:
	reset_session(s);
	if (!rc && more) {
		snprintf(note, sizeof(note), "Only the first %zu rows are shown (at most "
			 "%u rows, %u MiB of JSON): the query returns more. Narrow it "
			 "(WHERE, LIMIT ... OFFSET ...) or aggregate.", json_array_size(rows),
			 s->o.query_max_rows, MCP_QUERY_MAX_BYTES >> 20);
		if (!(r->note = strdup(note)))
			rc = mcp__oom(err);
	}
	if (!rc) {
		r->value = rows;
		rows = NULL;
	}
out:
	json_decref(rows);
	for (int i = 0; i < p.n; i++)
		free(vals[i]);
	mcp__pg_params_free(&p);
	return rc;
}

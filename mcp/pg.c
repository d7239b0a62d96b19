/*
 * pg.c — serving a PostgreSQL Landscape (ADR 0043). The tools read
 * SQLite, so the database's trail is first copied, in one read-only
 * snapshot, into a private SQLite file (sqlt_import_pg), opened and
 * unlinked as lmdb.c does with its export. The `query` tool is the
 * exception: it runs on the database itself, now, as the user wrote it
 * (PostgreSQL's SQL), with the same guarantees as on SQLite:
 *   1. read-only: the connection's transactions default to READ ONLY,
 *      and each statement runs in a READ ONLY transaction that is rolled
 *      back (whatever the statement SET goes with it);
 *   2. exactly one statement: the extended protocol (PQsendQueryParams)
 *      refuses several;
 *   3. a time limit: statement_timeout, set for that transaction;
 *   4. the rows' and bytes' caps: rows are read one at a time (single-row
 *      mode) and the statement is cancelled once the caps are reached.
 * Parameters are named as on SQLite (:name in the SQL, values in params);
 * they become $1, $2, ... outside quotes, comments and `::` casts.
 */
#include <errno.h>
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

typedef struct params {
	core_buf sql;           /* the statement with $n for :name */
	char *names[100];       /* $n's name, n = index + 1 */
	int n;
} params;

static void params_free(params *p)
{
	core_buf_release(&p->sql);
	for (int i = 0; i < p->n; i++)
		free(p->names[i]);
}

static bool name_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

/* The end of a quoted part starting at p (its opening quote q). */
static const char *skip_quoted(const char *p, char q)
{
	for (p++; *p; p++)
		if (*p == q) {
			if (p[1] != q)
				return p + 1;
			p++; /* '' or "" inside */
		}
	return p;
}

/* A dollar-quoted string at p ($$...$$ or $tag$...$tag$), or NULL. */
static const char *skip_dollar(const char *p)
{
	const char *t = p + 1, *end;
	size_t n;

	while (name_char(*t, t == p + 1))
		t++;
	if (*t != '$')
		return NULL;
	n = (size_t)(t - p + 1);
	for (end = t + 1; *end; end++)
		if (!strncmp(end, p, n))
			return end + n;
	return end;
}

static int param_index(params *p, const char *name, size_t len, core_err *err)
{
	for (int i = 0; i < p->n; i++)
		if (strlen(p->names[i]) == len && !strncmp(p->names[i], name, len))
			return i + 1;
	if (p->n == (int)(sizeof(p->names) / sizeof(p->names[0])))
		return core_err_set(err, CORE_EDATA, "more than %zu named parameters",
				    sizeof(p->names) / sizeof(p->names[0])), -1;
	if (!(p->names[p->n] = strndup(name, len)))
		return mcp__oom(err), -1;
	return ++p->n;
}

/* sql with each :name outside quotes and comments as $n. */
static int rewrite(const char *sql, params *p, core_err *err)
{
	const char *s = sql, *e;

	while (*s) {
		if (*s == '\'' || *s == '"') {
			e = skip_quoted(s, *s);
		} else if (s[0] == '-' && s[1] == '-') {
			e = s + strcspn(s, "\n");
		} else if (s[0] == '/' && s[1] == '*') {
			e = strstr(s + 2, "*/");
			e = e ? e + 2 : s + strlen(s);
		} else if (*s == '$' && (e = skip_dollar(s))) {
			;
		} else if (s[0] == ':' && s[1] == ':') {
			e = s + 2; /* a cast */
		} else if (s[0] == ':' && name_char(s[1], true) && (s == sql || s[-1] != ':')) {
			int i;

			for (e = s + 1; name_char(*e, false); e++)
				;
			if ((i = param_index(p, s + 1, (size_t)(e - s - 1), err)) < 0)
				return err->code;
			core_buf_printf(&p->sql, "$%d", i);
			s = e;
			continue;
		} else {
			e = s + 1;
		}
		core_buf_append(&p->sql, s, (size_t)(e - s));
		s = e;
	}
	return p->sql.data || !*sql ? 0 : mcp__oom(err);
}

/* The values of p's names from params, as PostgreSQL text (NULL: NULL). */
static int values(const params *p, const json_t *given, char **vals, core_err *err)
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
		case JSON_REAL:
			vals[i] = json_dumps(v, JSON_ENCODE_ANY);
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
	case OID_FLOAT4: case OID_FLOAT8: case OID_NUMERIC:
		return json_real(strtod(v, NULL));
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

	if (s->pg && PQstatus(s->pg) == CONNECTION_OK)
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

/* Reads the rows of the statement sent: at most max and the byte cap,
 * *more when there were more (the statement is then cancelled). */
static int read_rows(mcp_server *s, json_t *rows, bool *more, core_err *err)
{
	size_t bytes = 0;
	PGresult *res;
	int rc = 0;

	*more = false;
	while ((res = PQgetResult(s->pg))) {
		ExecStatusType st = PQresultStatus(res);

		if (rc || *more) {
			;       /* draining what is left after a cancel or an error */
		} else if (st == PGRES_SINGLE_TUPLE) {
			json_t *row = pg_row(res);
			size_t b;

			if (!row) {
				rc = mcp__oom(err);
			} else if (json_array_size(rows) == s->o.query_max_rows ||
				   bytes + (b = json_dumpb(row, NULL, 0, JSON_COMPACT) + 1) >
				   MCP_QUERY_MAX_BYTES) {
				json_decref(row);
				if (!json_array_size(rows))
					rc = core_err_set(err, CORE_EDATA, "The first row alone is "
						"over the query tool's %u MiB of JSON: select fewer or "
						"shorter columns (substr, length)",
						MCP_QUERY_MAX_BYTES >> 20);
				else
					*more = true;
			} else {
				bytes += b;
				rc = mcp__append(rows, row, err);
			}
			if (rc || *more) {
				PGcancel *c = PQgetCancel(s->pg);
				char ebuf[256];

				if (c) {
					PQcancel(c, ebuf, sizeof(ebuf));
					PQfreeCancel(c);
				}
			}
		} else if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
			rc = pg_error(s, res, err);
		}
		PQclear(res);
	}
	return rc;
}

int mcp__query_pg(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const json_t *given = json_object_get(a, "params");
	const char *sql = mcp__arg_str(a, "sql");
	params p = { 0 };
	char *vals[100] = { 0 }, set[96], note[256];
	json_t *rows = NULL;
	bool more = false;
	int rc;

	if ((rc = connection(s, err)) || (rc = rewrite(sql ? sql : "", &p, err)) ||
	    (rc = values(&p, json_is_object(given) ? given : NULL, vals, err)))
		goto out;
	snprintf(set, sizeof(set), "SET LOCAL statement_timeout = %u", s->o.query_timeout_ms);
	if ((rc = exec_simple(s, "BEGIN READ ONLY", err)))
		goto out;
	if ((rc = exec_simple(s, set, err)))
		goto end;
	if (!PQsendQueryParams(s->pg, p.sql.data ? p.sql.data : "", p.n, NULL,
			       (const char *const *)vals, NULL, NULL, 0) ||
	    !PQsetSingleRowMode(s->pg)) {
		rc = pg_error(s, NULL, err);
		while (PQgetResult(s->pg))
			;
		goto end;
	}
	if (!(rows = json_array()))
		rc = mcp__oom(err);
	if (!rc)
		rc = read_rows(s, rows, &more, err);
	else
		while (PQgetResult(s->pg))
			;
end:
	/* whatever the statement did or SET ends here */
	PQclear(PQexec(s->pg, "ROLLBACK"));
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
	params_free(&p);
	return rc;
}

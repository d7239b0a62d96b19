/*
 * query.c — the query tool: one SQL statement over the trail, read-only
 * by construction rather than by keyword lists (docs/mcp.md "query"):
 *   1. the connection is SQLITE_OPEN_READONLY (and query_only);
 *   2. the statement must be one that sqlite3_stmt_readonly() says does
 *      not write; SQLite itself decides, after parsing;
 *   3. an authorizer refuses what stmt_readonly lets through although it
 *      changes the connection: ATTACH/DETACH (which would also let a
 *      query read other files), BEGIN/COMMIT/SAVEPOINT, and PRAGMAs that
 *      set a value (those that only take a table name, such as
 *      table_info, are allowed);
 *   4. exactly one statement: SQLite parses what follows the first, and
 *      anything but spaces, comments and semicolons is refused;
 *   5. a time limit (a progress handler) and caps on rows and bytes,
 *      announced when they cut the answer short;
 *   6. the statement runs in a child process (run_isolated): SQLite
 *      checks its progress handler between steps, not inside one call
 *      (printf('%.*c', 1000000000, 'x') runs ~6 s whatever the limits),
 *      so the parent kills a child that overruns the limit, and a crash
 *      inside the library ends the child, not the server.
 * ELSPETH's query tool instead strips comments and refuses keywords, and
 * has neither limit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcp/mcp_internal.h"

/* What the authorizer refused, for the message. */
typedef struct guard {
	char what[96];
} guard;

/* PRAGMAs whose argument is a table or index name, not a new value. */
static bool pragma_reads(const char *name)
{
	static const char *const reads[] = {
		"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo",
		"foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
		"table_list", NULL
	};

	for (const char *const *p = reads; *p; p++)
		if (!strcmp(*p, name))
			return true;
	return false;
}

/* Functions that hand out or take addresses, or load code: a query has
 * no use for them and they are the known ways from SQL into the server's
 * memory (fts3_tokenizer) or its file system (load_extension). */
static bool pointer_function(const char *name)
{
	return !strcasecmp(name, "fts3_tokenizer") || !strcasecmp(name, "load_extension");
}

static int authorize(void *ud, int action, const char *a1, const char *a2,
		     const char *db, const char *trigger)
{
	guard *g = ud;

	(void)db;
	(void)trigger;
	switch (action) {
	case SQLITE_ATTACH:
	case SQLITE_DETACH:
		snprintf(g->what, sizeof(g->what), "%s", action == SQLITE_ATTACH ?
			 "ATTACH" : "DETACH");
		return SQLITE_DENY;
	case SQLITE_TRANSACTION:
	case SQLITE_SAVEPOINT:
		snprintf(g->what, sizeof(g->what), "transaction control (%s)", a1 ? a1 : "");
		return SQLITE_DENY;
	case SQLITE_PRAGMA:
		if (!a2 || pragma_reads(a1))
			return SQLITE_OK;
		snprintf(g->what, sizeof(g->what), "PRAGMA %s with a value", a1);
		return SQLITE_DENY;
	case SQLITE_FUNCTION:
		if (!a2 || !pointer_function(a2))
			return SQLITE_OK;
		snprintf(g->what, sizeof(g->what), "the function %s", a2);
		return SQLITE_DENY;
	}
	return SQLITE_OK;
}

/* Whether anything but spaces, comments and ';' follows the statement. */
static bool more_statements(sqlite3 *db, const char *tail)
{
	while (tail && *tail) {
		sqlite3_stmt *st = NULL;
		const char *next = NULL;
		int rc = sqlite3_prepare_v2(db, tail, -1, &st, &next);

		sqlite3_finalize(st);
		if (rc != SQLITE_OK || st)
			return true;
		if (next == tail)
			break;
		tail = next;
	}
	return false;
}

static int refuse_write(core_err *err)
{
	return core_err_set(err, CORE_EDATA,
			    "Refused: this statement would change the database. The audit "
			    "trail is opened read-only and the query tool runs only "
			    "statements that read (SELECT, WITH ... SELECT, PRAGMA "
			    "table_info, ...).");
}

static int prepare(mcp_server *s, const char *sql, sqlite3_stmt **st, core_err *err)
{
	const char *tail = NULL;
	guard g = { "" };
	int rc;

	sqlite3_set_authorizer(s->db, authorize, &g);
	rc = sqlite3_prepare_v2(s->db, sql, -1, st, &tail);
	if (rc == SQLITE_OK && *st && more_statements(s->db, tail))
		rc = core_err_set(err, CORE_EDATA, "Only one statement at a time: the SQL "
				  "holds more after the first");
	else if (rc != SQLITE_OK && g.what[0])
		rc = core_err_set(err, CORE_EDATA, "Refused: %s is not allowed; the query "
				  "tool only reads the audit trail.", g.what);
	else if (rc != SQLITE_OK)
		rc = core_err_set(err, CORE_EDATA, "SQL error: %s", sqlite3_errmsg(s->db));
	else if (!*st)
		rc = core_err_set(err, CORE_EDATA, "Query is empty");
	else if (!sqlite3_stmt_readonly(*st))
		rc = refuse_write(err);
	sqlite3_set_authorizer(s->db, NULL, NULL);
	if (rc) {
		sqlite3_finalize(*st);
		*st = NULL;
	}
	return rc;
}

static int bind_one(sqlite3_stmt *st, int i, const char *name, const json_t *v,
		    core_err *err)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		return sqlite3_bind_text(st, i, json_string_value(v),
					 (int)json_string_length(v), SQLITE_TRANSIENT);
	case JSON_INTEGER:
		return sqlite3_bind_int64(st, i, json_integer_value(v));
	case JSON_REAL:
		return sqlite3_bind_double(st, i, json_real_value(v));
	case JSON_TRUE:
	case JSON_FALSE:
		return sqlite3_bind_int(st, i, json_is_true(v));
	case JSON_NULL:
		return sqlite3_bind_null(st, i);
	default:
		return core_err_set(err, CORE_EDATA, "Invalid arguments: 'query': parameter "
				    "'%s' must be a string, number, boolean or null, got %s",
				    name, json_is_array(v) ? "list" : "dict");
	}
}

/* Binds params by name (:name, @name or $name in the SQL). */
static int bind(sqlite3_stmt *st, const json_t *params, core_err *err)
{
	int n = sqlite3_bind_parameter_count(st);

	for (int i = 1; i <= n; i++) {
		const char *name = sqlite3_bind_parameter_name(st, i);
		const json_t *v;
		int rc;

		if (!name || name[0] == '?')
			return core_err_set(err, CORE_EDATA, "Parameter %d has no name: write "
					    ":name in the SQL and give its value in params", i);
		if (!(v = json_object_get(params, name + 1)))
			return core_err_set(err, CORE_EDATA, "A value is required for bind "
					    "parameter '%s' (give it in params)", name + 1);
		rc = bind_one(st, i, name + 1, v, err);
		if (rc < 0)
			return rc;
		if (rc != SQLITE_OK)
			return core_err_set(err, CORE_EIO, "binding '%s': %s", name + 1,
					    sqlite3_errstr(rc));
	}
	return 0;
}

/* Steps st into rows: at most max, and at most MCP_QUERY_MAX_BYTES of
 * them as compact JSON (a blob is hex: twice its bytes); *more when there
 * were more. A first row over the byte limit alone is an error. */
static int step_all(mcp_server *s, sqlite3_stmt *st, unsigned max, json_t *rows,
		    bool *more, core_err *err)
{
	size_t bytes = 0, b;
	json_t *row;
	int rc;

	*more = false;
	s->deadline_ns = core_now_mono_ns() + (uint64_t)s->o.query_timeout_ms * 1000000u;
	for (;;) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE) {
			rc = 0;
			break;
		}
		if (rc == SQLITE_INTERRUPT) {
			rc = core_err_set(err, CORE_EIO, "The query was stopped after %u ms, the "
					  "query tool's time limit: narrow it down (WHERE, LIMIT) "
					  "or ask for less", s->o.query_timeout_ms);
			break;
		}
		if (rc != SQLITE_ROW) {
			rc = core_err_set(err, CORE_EDATA, "SQL error: %s", sqlite3_errmsg(s->db));
			break;
		}
		if (json_array_size(rows) == max) {
			*more = true;
			rc = 0;
			break;
		}
		if (!(row = mcp__row_object(st))) {
			rc = mcp__oom(err);
			break;
		}
		b = json_dumpb(row, NULL, 0, JSON_COMPACT) + 1;
		if (bytes + b > MCP_QUERY_MAX_BYTES) {
			json_decref(row);
			if (!json_array_size(rows)) {
				rc = core_err_set(err, CORE_EDATA, "The first row alone is %zu "
						  "bytes of JSON, over the query tool's %u MiB: "
						  "select fewer or shorter columns (substr, length)",
						  b, MCP_QUERY_MAX_BYTES >> 20);
				break;
			}
			*more = true;
			rc = 0;
			break;
		}
		bytes += b;
		if ((rc = mcp__append(rows, row, err)))
			break;
	}
	s->deadline_ns = 0;
	return rc;
}

/* The statement, here. */
static int query_here(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	const json_t *params = json_object_get(a, "params");
	sqlite3_stmt *st;
	json_t *rows;
	bool more = false;
	char note[256];
	int rc = prepare(s, mcp__arg_str(a, "sql"), &st, err);

	if (rc)
		return rc;
	if (!(rc = bind(st, json_is_object(params) ? params : NULL, err))) {
		rows = json_array();
		rc = rows ? step_all(s, st, s->o.query_max_rows, rows, &more, err)
			  : mcp__oom(err);
		if (rc)
			json_decref(rows);
		else
			r->value = rows;
	}
	sqlite3_finalize(st);
	if (!rc && more) {
		snprintf(note, sizeof(note), "Only the first %zu rows are shown (at most "
			 "%u rows, %u MiB of JSON): the query returns more. Narrow it "
			 "(WHERE, LIMIT ... OFFSET ...) or aggregate.", json_array_size(r->value),
			 s->o.query_max_rows, MCP_QUERY_MAX_BYTES >> 20);
		if (!(r->note = strdup(note)))
			rc = mcp__oom(err);
	}
	return rc;
}

/* ------------------------------------------------------------ isolated */

/* What a child sends back may be this long: the rows' cap, and room for
 * the note and the envelope. */
#define CHILD_OUT_MAX ((size_t)MCP_QUERY_MAX_BYTES + (1u << 20))
/* The child's own progress handler stops an ordinary long statement at
 * the limit and says so; the parent waits this much longer before it
 * kills the child (a statement stuck inside one call). */
#define KILL_GRACE_MS 500

/* In the child: the statement, its answer as one JSON object on fd
 * ({"value", "note"} or {"code", "error"}), then _exit (no atexit
 * handler, no stdio buffer of the server's flushed twice). The
 * connection is the parent's, idle (no statement open, no lock held)
 * and read-only; the parent does not touch it until the child is gone. */
typedef struct query_job {
	mcp_server *s;
	const json_t *a;
} query_job;

static void child(void *ctx, int fd)
{
	query_job *q = ctx;
	mcp_result r = { 0 };
	core_err err = { 0 };
	int rc = query_here(q->s, q->a, &r, &err);
	json_t *o = rc ? json_pack("{s:i,s:s}", "code", rc, "error", err.msg)
		       : json_pack("{s:O,s:s?}", "value", r.value, "note", r.note);
	char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (txt)
		core_write_all(fd, txt, strlen(txt));
	_exit(txt ? 0 : 1);
}

/* The child's answer into *r, or its error into err. */
static int take_answer(const core_buf *b, mcp_result *r, core_err *err)
{
	json_error_t je;
	json_t *o = json_loadb(b->data ? b->data : "", b->len, 0, &je);
	const json_t *code = json_object_get(o, "code");
	const char *msg = json_string_value(json_object_get(o, "error"));
	int rc = 0;

	if (!json_is_object(o))
		rc = core_err_set(err, CORE_EIO, "the query's process sent no answer");
	else if (json_is_integer(code))
		rc = core_err_set(err, (int)json_integer_value(code), "%s", msg ? msg : "");
	else {
		const char *note = json_string_value(json_object_get(o, "note"));

		r->value = json_incref(json_object_get(o, "value"));
		if (note && !(r->note = strdup(note)))
			rc = mcp__oom(err);
	}
	json_decref(o);
	return rc;
}

static int run_isolated(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	query_job q = { .s = s, .a = a };
	core_buf b = { 0 };
	core_isolated how;
	int rc;

	rc = core_isolate(child, &q, s->o.query_timeout_ms + KILL_GRACE_MS,
			  CHILD_OUT_MAX, &b, &how, err);
	if (rc == CORE_EIO)
		core_err_prefix(err, "cannot start the query");
	else if (rc)
		rc = mcp__oom(err);
	else if (how.late)
		rc = core_err_set(err, CORE_EIO, "The query was stopped after %u ms, the "
				  "query tool's time limit (inside one call of a function): "
				  "narrow it down or ask for less", s->o.query_timeout_ms);
	else if (how.too_big)
		rc = core_err_set(err, CORE_EDATA, "The query's answer is over the query "
				  "tool's %u MiB", MCP_QUERY_MAX_BYTES >> 20);
	else if (how.signal)
		rc = core_err_set(err, CORE_EIO, "The query ended the SQLite library's "
				  "process (signal %d); the server goes on, nothing was read",
				  how.signal);
	else
		rc = take_answer(&b, r, err);
	core_buf_release(&b);
	return rc;
}

int mcp__query(mcp_server *s, const json_t *a, mcp_result *r, core_err *err)
{
	if (s->is_pg) /* on the database itself (pg.c) */
		return mcp__query_pg(s, a, r, err);
	return run_isolated(s, a, r, err);
}

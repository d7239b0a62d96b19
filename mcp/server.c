/*
 * server.c — opening the trail the tools read: an SQLite file as it is,
 * read-only and locked down (query_only, no ATTACH, defensive mode, no
 * trust in the schema's functions), or an LMDB Landscape through a
 * temporary SQL export (lmdb.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mcp/mcp_internal.h"

const char *const mcp_protocol_versions[] = {
	"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", NULL
};

/* The tables the tools read; a file without them is not a trail. */
static const char *const needed[] = {
	"runs", "nodes", "edges", "rows", "tokens", "token_parents",
	"token_outcomes", "node_states", "operations", "calls",
	"routing_events", "validation_errors", "transform_errors", NULL
};

/* Stops a statement that has run past s->deadline_ns (query.c sets it). */
static int progress(void *ud)
{
	const mcp_server *s = ud;

	return s->deadline_ns && core_now_mono_ns() > s->deadline_ns;
}

static int check_tables(mcp_server *s, const char *path, core_err *err)
{
	core_buf missing = { 0 };
	int n = 0;

	for (const char *const *t = needed; *t; t++)
		if (!mcp__has_table(s, *t))
			core_buf_printf(&missing, "%s%s", n++ ? ", " : "", *t);
	if (n)
		core_err_set(err, CORE_EDATA, "%s is an SQLite database but not an audit "
			     "trail in ELSPETH's schema: it has no table%s %s", path,
			     n > 1 ? "s" : "", missing.data ? missing.data : "");
	core_buf_release(&missing);
	return n ? CORE_EDATA : 0;
}

int mcp__open_sqlite(mcp_server *s, const char *file, const char *shown,
		     core_err *err)
{
	int rc = sqlite3_open_v2(file, &s->db, SQLITE_OPEN_READONLY, NULL);

	if (rc != SQLITE_OK)
		return core_err_set(err, CORE_EIO, "cannot open %s: %s", shown,
				    s->db ? sqlite3_errmsg(s->db) : "out of memory");
	/* Belt and braces around the read-only connection (query.c). */
	sqlite3_limit(s->db, SQLITE_LIMIT_ATTACHED, 0);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	/* Debian's SQLite lets fts3_tokenizer(name, ptr) register any
	 * address as a tokenizer; off (the query tool also refuses the
	 * function, whose one-argument form returns a library address). */
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, NULL);
	sqlite3_db_config(s->db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, NULL);
	sqlite3_busy_timeout(s->db, 5000); /* a run may be writing it */
	sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, (int)MCP_VALUE_MAX);
	sqlite3_progress_handler(s->db, 1000, progress, s);
	if (sqlite3_exec(s->db, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK)
		return core_err_set(err, CORE_EDATA, "%s is not an SQLite database (%s)",
				    shown, sqlite3_errmsg(s->db));
	if ((rc = check_tables(s, shown, err)))
		return rc;
	s->payloads = mcp__has_table(s, "elspeth_payloads");
	return 0;
}

/* Whether the file starts as every SQLite database does. */
static bool sqlite_header(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char head[16] = { 0 };
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(head, 1, sizeof(head), f);
	fclose(f);
	return n == 0 || (n == sizeof(head) && !memcmp(head, magic, sizeof(magic)));
}

static int open_path(mcp_server *s, const char *path, core_err *err)
{
	struct stat st;

	if (core_sql_is_pg(path)) {
		s->is_pg = true;
		return mcp__open_pg(s, path, err);
	}
	if (stat(path, &st))
		return core_err_set(err, errno == ENOENT ? CORE_ENOTFOUND : CORE_EIO,
				    "no audit trail at %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return mcp__open_lmdb(s, path, err);
	if (!sqlite_header(path))
		return core_err_set(err, CORE_EDATA, "%s is neither an SQLite audit trail "
				    "nor an LMDB Landscape (a directory holding data.mdb)", path);
	return mcp__open_sqlite(s, path, path, err);
}

int mcp_open(const char *path, const mcp_opts *o, mcp_server **out, core_err *err)
{
	mcp_server *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s || !(s->path = strdup(path)) || !(s->shown = core_url_sanitize(path))) {
		if (s)
			free(s->path);
		free(s);
		return mcp__oom(err);
	}
	if (o)
		s->o = *o;
	if (!s->o.query_timeout_ms)
		s->o.query_timeout_ms = MCP_QUERY_TIMEOUT_MS;
	if (!s->o.query_max_rows)
		s->o.query_max_rows = MCP_QUERY_MAX_ROWS;
	s->log = s->o.log ? s->o.log : stderr;
	if ((rc = mcp__compose_open(s, err)) ||
	    ((rc = open_path(s, path, err)) && !(rc == CORE_ENOTFOUND && s->root))) {
		mcp_free(s);
		return rc;
	}
	if (rc) /* with a root, a trail not there yet: its tools say so */
		fprintf(s->log, "elspeth mcp: %s\n", err->msg);
	*out = s;
	return 0;
}

void mcp_free(mcp_server *s)
{
	if (!s)
		return;
	mcp__compose_close(s);
	sqlite3_close(s->db);
	mcp__pg_close(s);
	free(s->path);
	free(s->shown);
	free(s);
}

long long mcp_run_count(mcp_server *s)
{
	long long n = 0;
	core_err err = { 0 };

	if (s->db)
		mcp__count(s, &n, &err, "SELECT count(*) FROM runs", "");
	return n;
}

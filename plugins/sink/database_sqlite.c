/*
 * database_sqlite.c — the database sink's SQLite backend (libsqlite3).
 *
 * Rows of a committed transaction are found again by their rowids: the
 * sink keeps the ranges it got (sqlite3_last_insert_rowid) and the ledger
 * stores them as "first-last,first-last" (ADR 0023). A write transaction
 * starts with BEGIN IMMEDIATE, so no other writer's rows fall between
 * ours; another process waits up to busy_timeout for the write lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3.h>

#include "plugins/sink/database_internal.h"

#define BUSY_TIMEOUT_MS 30000

struct dbs_conn {
	sqlite3 *db;
	const char *where;  /* the sanitized url, for messages */
	char *url;
	sqlite3_stmt *ins;  /* the last INSERT, kept while its sql is */
	char *ins_sql;
};

static int fail(dbs_conn *c, int code, core_err *err, const char *what)
{
	return core_err_set(err, code, "%s (%s): %s", c->where, what,
			    sqlite3_errmsg(c->db));
}

static const char *lite_type(plg_ftype t)
{
	switch (t) {
	case PLG_F_INT:
		return "INTEGER";
	case PLG_F_FLOAT:
		return "FLOAT";
	case PLG_F_BOOL:
		return "BOOLEAN";
	case PLG_F_STR:
	case PLG_F_ANY:
		break;
	}
	return "TEXT";
}

static void lite_disconnect(dbs_conn *c)
{
	if (!c)
		return;
	sqlite3_finalize(c->ins);
	sqlite3_close(c->db);
	free(c->ins_sql);
	free(c->url);
	free(c);
}

static int lite_connect(const dbs_url *u, bool readonly, dbs_conn **out,
			core_err *err)
{
	dbs_conn *c = calloc(1, sizeof(*c));
	int flags = readonly ? SQLITE_OPEN_READONLY :
		    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	int rc;

	if (!c || !(c->url = strdup(u->sanitized))) {
		free(c);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	c->where = c->url;
	if (!readonly && strcmp(u->conninfo, ":memory:") &&
	    (rc = core_mkdir_parents(u->conninfo, err))) {
		lite_disconnect(c);
		return core_err_prefix(err, "%s", u->sanitized);
	}
	rc = sqlite3_open_v2(u->conninfo, &c->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
	if (rc != SQLITE_OK) {
		rc = c->db ? fail(c, CORE_EIO, err, "cannot open it") :
		     core_err_set(err, CORE_ENOMEM, "out of memory");
		lite_disconnect(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Binds $1..$n by name (a name may be used more than once or not at all). */
static int bind_all(sqlite3_stmt *st, const dbs_val *p, size_t n)
{
	char name[32];
	int rc = SQLITE_OK;

	for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
		int ix;

		snprintf(name, sizeof(name), "$%zu", i + 1);
		if (!(ix = sqlite3_bind_parameter_index(st, name)))
			continue;
		switch (p[i].kind) {
		case DBS_V_NULL:
			rc = sqlite3_bind_null(st, ix);
			break;
		case DBS_V_INT:
		case DBS_V_BOOL:
			rc = sqlite3_bind_int64(st, ix, p[i].i);
			break;
		case DBS_V_REAL:
			rc = sqlite3_bind_double(st, ix, p[i].d);
			break;
		case DBS_V_TEXT:
			rc = sqlite3_bind_text64(st, ix, p[i].s, p[i].len,
						 SQLITE_STATIC, SQLITE_UTF8);
			break;
		}
	}
	return rc;
}

/* Runs st to its end, each row to fn (when given). */
static int run(dbs_conn *c, sqlite3_stmt *st, dbs_row_fn *fn, void *ctx,
	       core_err *err)
{
	const char *vals[64];
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int nc = sqlite3_column_count(st);

		if (!fn)
			continue;
		if (nc > 64)
			nc = 64;
		for (int i = 0; i < nc; i++)
			vals[i] = (const char *)sqlite3_column_text(st, i);
		if ((rc = fn(ctx, (size_t)nc, vals)))
			return rc;
	}
	return rc == SQLITE_DONE ? 0 : fail(c, CORE_EIO, err, sqlite3_sql(st));
}

static int statement(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		     dbs_row_fn *fn, void *ctx, uint64_t *changes, core_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
		return fail(c, CORE_EIO, err, sql);
	if (bind_all(st, p, n) != SQLITE_OK)
		rc = fail(c, CORE_EIO, err, sql);
	else
		rc = run(c, st, fn, ctx, err);
	if (!rc && changes)
		*changes = (uint64_t)sqlite3_changes64(c->db);
	sqlite3_finalize(st);
	return rc;
}

static int lite_exec(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		     uint64_t *changes, core_err *err)
{
	return statement(c, sql, p, n, NULL, NULL, changes, err);
}

static int lite_query(dbs_conn *c, const char *sql, const dbs_val *p,
		      size_t n, dbs_row_fn *fn, void *ctx, core_err *err)
{
	return statement(c, sql, p, n, fn, ctx, NULL, err);
}

static int lite_insert(dbs_conn *c, const char *sql, const dbs_val *p,
		       size_t n, int64_t *rowid, core_err *err)
{
	int rc;

	if (!c->ins_sql || strcmp(c->ins_sql, sql)) {
		sqlite3_finalize(c->ins);
		free(c->ins_sql);
		c->ins = NULL;
		if (!(c->ins_sql = strdup(sql)))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		if (sqlite3_prepare_v2(c->db, sql, -1, &c->ins, NULL) != SQLITE_OK) {
			free(c->ins_sql);
			c->ins_sql = NULL;
			return fail(c, CORE_EDATA, err, "INSERT");
		}
	}
	sqlite3_reset(c->ins);
	sqlite3_clear_bindings(c->ins);
	if (bind_all(c->ins, p, n) != SQLITE_OK)
		return fail(c, CORE_EDATA, err, "INSERT");
	rc = sqlite3_step(c->ins);
	if (rc != SQLITE_DONE) {
		/* The message before reset, which may replace it. */
		rc = fail(c, CORE_EDATA, err, "INSERT");
		sqlite3_reset(c->ins);
		return rc;
	}
	*rowid = sqlite3_last_insert_rowid(c->db);
	sqlite3_reset(c->ins);
	return 0;
}

static bool lite_txn_usable(dbs_conn *c)
{
	return !sqlite3_get_autocommit(c->db);
}

static bool lite_connected(dbs_conn *c)
{
	(void)c;
	return true;
}

/* "first-last,first-last": the rowid ranges of the rows to delete. */
static int lite_delete_ref(dbs_conn *c, const char *qtable, const char *rowid,
			   const char *ref, uint64_t *n, core_err *err)
{
	core_buf sql = { 0 };
	const char *p = ref;
	int rc = 0;

	*n = 0;
	if (core_buf_printf(&sql, "DELETE FROM %s WHERE %s BETWEEN $1 AND $2",
			    qtable, rowid))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	while (!rc && *p) {
		dbs_val v[2] = { { .kind = DBS_V_INT }, { .kind = DBS_V_INT } };
		uint64_t got = 0;
		char *end;

		errno = 0;
		v[0].i = strtoll(p, &end, 10);
		v[1].i = *end == '-' ? strtoll(end + 1, &end, 10) : v[0].i;
		if (errno || (*end && *end != ',') || end == p) {
			rc = core_err_set(err, CORE_EDATA,
					  "%s: the ledger's rowids '%s' are not ranges",
					  c->where, ref);
			break;
		}
		rc = lite_exec(c, sql.data, v, 2, &got, err);
		*n += got;
		p = *end ? end + 1 : end;
	}
	core_buf_release(&sql);
	return rc;
}

static int add_col(void *ctx, size_t nc, const char *const *vals)
{
	return nc < 2 || !vals[1] ? 0 : dbs__col_add(ctx, vals[1]);
}

static int lite_columns(dbs_conn *c, const char *table, char ***names,
			size_t *n, bool *exists, core_err *err)
{
	core_buf sql = { 0 };
	dbs_col_list l = { 0 };
	int rc;

	if (core_buf_puts(&sql, "PRAGMA table_info(") || dbs__quote(&sql, table) ||
	    core_buf_putc(&sql, ')'))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = lite_query(c, sql.data, NULL, 0, add_col, &l, err);
	core_buf_release(&sql);
	if ((rc = dbs__col_done(&l, rc, names, n, err)))
		return rc;
	*exists = l.n > 0;
	return 0;
}

static int lite_rowid_name(dbs_conn *c, const char *qtable, char *const *cols,
			   size_t ncols, const char **out, core_err *err)
{
	static const char *const aliases[] = { "rowid", "_rowid_", "oid" };
	core_buf sql = { 0 };
	sqlite3_stmt *st = NULL;
	int rc;

	*out = NULL;
	for (size_t a = 0; a < 3 && !*out; a++) {
		size_t i;

		for (i = 0; i < ncols && strcasecmp(cols[i], aliases[a]); i++)
			;
		if (i == ncols)
			*out = aliases[a];
	}
	if (!*out)
		return core_err_set(err, CORE_EDATA,
				    "%s: table %s has columns named rowid, _rowid_ and oid, "
				    "which hide the rowid the database sink needs to undo "
				    "rows after a crash; write to another table", c->where, qtable);
	if (core_buf_printf(&sql, "SELECT %s FROM %s LIMIT 0", *out, qtable))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = sqlite3_prepare_v2(c->db, sql.data, -1, &st, NULL);
	sqlite3_finalize(st);
	core_buf_release(&sql);
	if (rc != SQLITE_OK)
		return core_err_set(err, CORE_EDATA,
				    "%s: table %s has no rowid (WITHOUT ROWID?): the database "
				    "sink needs it to undo rows after a crash; write to a table "
				    "with rowids", c->where, qtable);
	return 0;
}

const dbs_backend dbs__sqlite = {
	.name = "SQLite",
	.type_name = lite_type,
	.begin_sql = "BEGIN IMMEDIATE",
	.connect = lite_connect,
	.disconnect = lite_disconnect,
	.exec = lite_exec,
	.query = lite_query,
	.insert = lite_insert,
	.txn_usable = lite_txn_usable,
	.connected = lite_connected,
	.txn_ref = NULL,
	.delete_ref = lite_delete_ref,
	.columns = lite_columns,
	.rowid_name = lite_rowid_name,
};

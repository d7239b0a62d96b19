/*
 * database_pg.c — the database sink's PostgreSQL backend (libpq).
 *
 * Parameters go as text with the type their JSON value has (bigint,
 * double precision, boolean; strings untyped), so the server converts
 * them to the column's type by its assignment rules, as it does the
 * literals psycopg2 sends for ELSPETH. Rows of a committed transaction
 * are found again by their xmin, the inserting transaction's id, which
 * the ledger keeps (ADR 0023): the sink uses no savepoints, so every row
 * of a transaction carries its top-level id.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "plugins/sink/database_internal.h"

/* pg_type oids (catalog/pg_type_d.h, not installed by libpq-dev) */
#define OID_BOOL 16
#define OID_INT8 20
#define OID_FLOAT8 701

struct dbs_conn {
	PGconn *pg;
	char *where;   /* the sanitized url, for messages */
	core_buf args; /* the parameters' text */
	/* the parameters as libpq takes them (cap of each) */
	Oid *types;
	const char **vals;
	size_t *offs, cap;
};

static const char *pg_type(plg_ftype t)
{
	switch (t) {
	case PLG_F_INT:
		return "BIGINT"; /* ELSPETH's INTEGER is 32 bits here (ADR 0023) */
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

/* The server's message without its trailing newline. */
static int fail(dbs_conn *c, int code, const char *msg, core_err *err)
{
	size_t n = strlen(msg);

	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		n--;
	return core_err_set(err, code, "%s: %.*s", c->where, (int)n, msg);
}

static void pg_disconnect(dbs_conn *c)
{
	if (!c)
		return;
	PQfinish(c->pg);
	core_buf_release(&c->args);
	free(c->types);
	free(c->vals);
	free(c->offs);
	free(c->where);
	free(c);
}

static int pg_connect(const dbs_url *u, bool readonly, dbs_conn **out,
		      core_err *err)
{
	dbs_conn *c = calloc(1, sizeof(*c));
	char *shown = NULL;
	int rc;

	if (!c || !(c->where = strdup(u->sanitized))) {
		free(c);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = core_pg_connect(u->conninfo, readonly, &c->pg, &shown, err);
	free(shown);
	if (rc) {
		pg_disconnect(c);
		return rc;
	}
	*out = c;
	return 0;
}

static int grow(dbs_conn *c, size_t n)
{
	Oid *t;
	const char **v;
	size_t *o;

	if (n <= c->cap)
		return 0;
	if (!(t = realloc(c->types, n * sizeof(*t))))
		return CORE_ENOMEM;
	c->types = t;
	if (!(v = realloc(c->vals, n * sizeof(*v))))
		return CORE_ENOMEM;
	c->vals = v;
	if (!(o = realloc(c->offs, n * sizeof(*o))))
		return CORE_ENOMEM;
	c->offs = o;
	c->cap = n;
	return 0;
}

/* The parameters as libpq takes them: NUL-terminated text in c->args,
 * each with its type, in c->types and c->vals. A text holding a NUL byte
 * is CORE_EDATA: no PostgreSQL text can. */
static int params(dbs_conn *c, const dbs_val *p, size_t n, core_err *err)
{
	int rc = grow(c, n);

	core_buf_reset(&c->args);
	for (size_t i = 0; i < n && !rc; i++) {
		char num[40];

		c->offs[i] = c->args.len;
		c->types[i] = 0;
		switch (p[i].kind) {
		case DBS_V_NULL:
			c->offs[i] = SIZE_MAX;
			continue;
		case DBS_V_INT:
			c->types[i] = OID_INT8;
			snprintf(num, sizeof(num), "%" PRId64, p[i].i);
			rc = core_buf_puts(&c->args, num);
			break;
		case DBS_V_REAL:
			c->types[i] = OID_FLOAT8;
			core_format_double_py(p[i].d, num, sizeof(num));
			rc = core_buf_puts(&c->args, num);
			break;
		case DBS_V_BOOL:
			c->types[i] = OID_BOOL;
			rc = core_buf_puts(&c->args, p[i].i ? "true" : "false");
			break;
		case DBS_V_TEXT:
			if (memchr(p[i].s, '\0', p[i].len))
				return core_err_set(err, CORE_EDATA,
						    "%s: a text value holds the character "
						    "U+0000, which PostgreSQL cannot store", c->where);
			rc = core_buf_append(&c->args, p[i].s, p[i].len);
			break;
		}
		if (!rc)
			rc = core_buf_putc(&c->args, '\0');
	}
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		c->vals[i] = c->offs[i] == SIZE_MAX ? NULL : c->args.data + c->offs[i];
	return 0;
}

/* Runs sql; *res is the result when it succeeded (PQclear it). */
static int run(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
	       int code, PGresult **res, core_err *err)
{
	ExecStatusType st;
	int rc;

	*res = NULL;
	if ((rc = params(c, p, n, err)))
		return rc;
	*res = PQexecParams(c->pg, sql, (int)n, c->types, c->vals, NULL, NULL, 0);
	st = *res ? PQresultStatus(*res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
		return 0;
	rc = fail(c, code, *res ? PQresultErrorMessage(*res) : PQerrorMessage(c->pg), err);
	PQclear(*res);
	*res = NULL;
	return rc;
}

static int pg_exec(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		   uint64_t *changes, core_err *err)
{
	PGresult *res;
	int rc = run(c, sql, p, n, CORE_EIO, &res, err);

	if (!rc && changes)
		*changes = strtoull(PQcmdTuples(res), NULL, 10);
	PQclear(res);
	return rc;
}

static int pg_query(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		    dbs_row_fn *fn, void *ctx, core_err *err)
{
	PGresult *res;
	int rc = run(c, sql, p, n, CORE_EIO, &res, err);
	int nc = rc ? 0 : PQnfields(res);
	const char *vals[8];

	if (nc > 8)
		nc = 8; /* the sink's queries read fewer */
	for (int r = 0; !rc && r < PQntuples(res); r++) {
		for (int i = 0; i < nc; i++)
			vals[i] = PQgetisnull(res, r, i) ? NULL : PQgetvalue(res, r, i);
		rc = fn(ctx, (size_t)nc, vals);
	}
	PQclear(res);
	return rc;
}

static int pg_insert(dbs_conn *c, const char *sql, const dbs_val *p, size_t n,
		     int64_t *rowid, core_err *err)
{
	PGresult *res;
	int rc = run(c, sql, p, n, CORE_EDATA, &res, err);

	PQclear(res);
	*rowid = 0;
	return rc;
}

static bool pg_txn_usable(dbs_conn *c)
{
	return PQtransactionStatus(c->pg) == PQTRANS_INTRANS;
}

static bool pg_connected(dbs_conn *c)
{
	return PQstatus(c->pg) == CONNECTION_OK;
}

static int first_value(void *ctx, size_t nc, const char *const *vals)
{
	core_buf *out = ctx;

	return nc && vals[0] && core_buf_puts(out, vals[0]) ? CORE_ENOMEM : 0;
}

static int pg_txn_ref(dbs_conn *c, core_buf *out, core_err *err)
{
	core_buf_reset(out);
	return pg_query(c, "SELECT txid_current()", NULL, 0, first_value, out, err);
}

/* ref: the 64-bit id of the transaction (epoch and xid); its rows have
 * its low 32 bits as xmin. An id more than 2^31 transactions old may
 * have been reused: refused. */
static int pg_delete_ref(dbs_conn *c, const char *qtable, const char *rowid,
			 const char *ref, uint64_t *n, core_err *err)
{
	core_buf now = { 0 }, sql = { 0 };
	char xid[24];
	uint64_t id, cur;
	dbs_val v = { .kind = DBS_V_TEXT, .s = xid };
	int rc;

	(void)rowid;
	*n = 0;
	id = strtoull(ref, NULL, 10);
	if ((rc = pg_txn_ref(c, &now, err)))
		goto out;
	cur = strtoull(now.data ? now.data : "0", NULL, 10);
	if (!id || cur < id || cur - id >= (UINT64_C(1) << 31)) {
		rc = core_err_set(err, CORE_EDATA,
				  "%s: transaction %s of the ledger is too old to tell its "
				  "rows (now %" PRIu64 ")", c->where, ref, cur);
		goto out;
	}
	v.len = (size_t)snprintf(xid, sizeof(xid), "%" PRIu64, id & 0xffffffffu);
	if (core_buf_printf(&sql, "DELETE FROM %s WHERE xmin = $1::xid", qtable))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = pg_exec(c, sql.data, &v, 1, n, err);
out:
	core_buf_release(&now);
	core_buf_release(&sql);
	return rc;
}

static int add_col(void *ctx, size_t nc, const char *const *vals)
{
	dbs_col_list *l = ctx;

	if (nc < 2)
		return 0;
	l->exists = vals[0] && vals[0][0] == 't';
	return vals[1] ? dbs__col_add(l, vals[1]) : 0;
}

static int pg_columns(dbs_conn *c, const char *table, char ***names,
		      size_t *n, bool *exists, core_err *err)
{
	static const char sql[] =
		"SELECT c.oid IS NOT NULL, a.attname "
		"FROM (SELECT to_regclass($1) AS oid) c "
		"LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
		"AND NOT a.attisdropped ORDER BY a.attnum";
	core_buf q = { 0 };
	dbs_col_list l = { 0 };
	dbs_val v = { .kind = DBS_V_TEXT };
	int rc;

	if (dbs__quote(&q, table))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	v.s = q.data;
	v.len = q.len;
	rc = pg_query(c, sql, &v, 1, add_col, &l, err);
	core_buf_release(&q);
	if ((rc = dbs__col_done(&l, rc, names, n, err)))
		return rc;
	*exists = l.exists;
	return 0;
}

static int pg_rowid_name(dbs_conn *c, const char *qtable, char *const *cols,
			 size_t ncols, const char **out, core_err *err)
{
	(void)c, (void)qtable, (void)cols, (void)ncols, (void)err;
	*out = NULL;
	return 0;
}

const dbs_backend dbs__pg = {
	.name = "PostgreSQL",
	.type_name = pg_type,
	.begin_sql = "BEGIN",
	.connect = pg_connect,
	.disconnect = pg_disconnect,
	.exec = pg_exec,
	.query = pg_query,
	.insert = pg_insert,
	.txn_usable = pg_txn_usable,
	.connected = pg_connected,
	.txn_ref = pg_txn_ref,
	.delete_ref = pg_delete_ref,
	.columns = pg_columns,
	.rowid_name = pg_rowid_name,
};

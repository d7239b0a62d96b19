/*
 * database_txn.c — the database sink's rows and transactions (ADR 0021).
 *
 * Rows go into one open transaction, begun by the first row after a
 * commit; it commits at each checkpoint (plg_sink_ops.commit), at flush,
 * at close, and early when it holds DBS_TXN_ROWS rows or DBS_TXN_BYTES.
 * Its ledger entry is written in it, just before COMMIT.
 *
 * A row the database refuses (a constraint, a value of the wrong type
 * for an existing column) is a row error: the engine diverts it
 * (on_write_failure) and the transaction goes on without it. SQLite
 * keeps the transaction; PostgreSQL aborts it, so the transaction is
 * rolled back and begun again with its statements and rows written
 * anew from what was kept (no savepoints: they would give rows their
 * own transaction ids, and the ledger finds a commit's rows by its id).
 * Anything else — the connection gone, a failed COMMIT — breaks the
 * sink: every later call fails with that error, so the run stops at
 * the next checkpoint at the latest, and the resume starts from the
 * last checkpoint that was durable.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/sink/database_internal.h"

static int broken(dbs_sink *s, const core_err *why, core_err *err)
{
	if (!s->broken) {
		s->broken = true;
		s->why = *why;
		s->why.code = CORE_EIO;
		core_err_prefix(&s->why, "database sink stopped (table '%s')", s->t.name);
	}
	if (err && err != &s->why)
		*err = s->why;
	return CORE_EIO;
}

int dbs__chain(dbs_sink *s, char chain[CORE_SHA256_HEX_LEN + 1],
	       const char *canon, size_t len)
{
	uint8_t d[CORE_SHA256_LEN];

	core_buf_reset(&s->tmp);
	if (core_buf_append(&s->tmp, chain, CORE_SHA256_HEX_LEN) ||
	    core_buf_append(&s->tmp, canon, len))
		return CORE_ENOMEM;
	core_sha256(s->tmp.data, s->tmp.len, d);
	core_hex(d, sizeof(d), chain);
	return 0;
}

/* ------------------------------------------------- what a replay needs */

static int put(core_buf *b, const void *p, size_t n)
{
	return core_buf_append(b, p, n);
}

/* Keeps the row just inserted: its sql and values. */
static int keep_row(dbs_sink *s, size_t n)
{
	size_t len = s->sql.len + 1;
	int rc = put(&s->replay, &len, sizeof(len)) || put(&s->replay, s->sql.data, len) ||
		 put(&s->replay, &n, sizeof(n));

	for (size_t i = 0; !rc && i < n; i++) {
		const dbs_val *v = &s->vals[i];

		rc = put(&s->replay, v, sizeof(*v));
		if (!rc && v->kind == DBS_V_TEXT)
			rc = put(&s->replay, v->s, v->len);
	}
	return rc ? CORE_ENOMEM : 0;
}

/* The next kept row at *at: its sql, values into s->vals (texts point
 * into the buffer). */
static int next_row(dbs_sink *s, size_t *at, const char **sql, size_t *n)
{
	const char *b = s->replay.data;
	size_t len;

	memcpy(&len, b + *at, sizeof(len));
	*at += sizeof(len);
	*sql = b + *at;
	*at += len;
	memcpy(n, b + *at, sizeof(*n));
	*at += sizeof(*n);
	if (*n > s->cap) {
		dbs_val *grown = realloc(s->vals, *n * sizeof(*grown));

		if (!grown)
			return CORE_ENOMEM;
		s->vals = grown;
		s->cap = *n;
	}
	for (size_t i = 0; i < *n; i++) {
		memcpy(&s->vals[i], b + *at, sizeof(s->vals[i]));
		*at += sizeof(s->vals[i]);
		if (s->vals[i].kind == DBS_V_TEXT) {
			s->vals[i].s = b + *at;
			*at += s->vals[i].len;
		}
	}
	return 0;
}

static int add_rowid(dbs_sink *s, int64_t id)
{
	if (s->nranges && s->ranges[s->nranges - 1][1] + 1 == id) {
		s->ranges[s->nranges - 1][1] = id;
		return 0;
	}
	if (s->nranges == s->capranges) {
		size_t cap = s->capranges ? 2 * s->capranges : 16;
		int64_t (*grown)[2] = realloc(s->ranges, cap * sizeof(*grown));

		if (!grown)
			return CORE_ENOMEM;
		s->ranges = grown;
		s->capranges = cap;
	}
	s->ranges[s->nranges][0] = s->ranges[s->nranges][1] = id;
	s->nranges++;
	return 0;
}

/* --------------------------------------------------------- transactions */

static void end_txn(dbs_sink *s)
{
	s->txn = false;
	s->pending = 0;
	memcpy(s->chain_txn, s->chain, sizeof(s->chain));
	core_buf_reset(&s->ddl);
	core_buf_reset(&s->replay);
	s->nranges = 0;
}

static int begin(dbs_sink *s, core_err *err)
{
	int rc;

	if (s->txn)
		return 0;
	if ((rc = s->be->exec(s->conn, s->be->begin_sql, NULL, 0, NULL, err)))
		return broken(s, err, err);
	s->txn = true;
	return 0;
}

void dbs__rollback(dbs_sink *s)
{
	core_err ignored;

	if (s->txn)
		s->be->exec(s->conn, "ROLLBACK", NULL, 0, NULL, &ignored);
	end_txn(s);
}

/* Runs a statement of the transaction before its rows, and keeps it. */
static int ddl(dbs_sink *s, const char *sql, core_err *err)
{
	int rc = s->be->exec(s->conn, sql, NULL, 0, NULL, err);

	if (rc)
		return broken(s, err, err);
	if (core_buf_append(&s->ddl, sql, strlen(sql) + 1))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* The rowid's name in the table (SQLite). */
static int find_rowid(dbs_sink *s, core_err *err)
{
	char **names;
	int rc;

	if (!s->be->rowid_name)
		return 0;
	if (!(names = calloc(s->t.ncols + 1, sizeof(*names))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < s->t.ncols; i++)
		names[i] = s->t.cols[i].name;
	rc = s->be->rowid_name(s->conn, s->t.qname, names, s->t.ncols, &s->t.rowid, err);
	free(names);
	return rc;
}

/* The table, at its first row: dropped first (if_exists: replace), then
 * created — unless another writer created it since the sink opened: then
 * its columns are taken as they are (ELSPETH's checkfirst). */
static int create_table(dbs_sink *s, const json_t *row, core_err *err)
{
	char **names = NULL;
	size_t n = 0;
	bool exists = false;
	int rc;

	if (s->replace) {
		core_buf_reset(&s->tmp);
		if (core_buf_printf(&s->tmp, "DROP TABLE IF EXISTS %s", s->t.qname))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		if ((rc = ddl(s, s->tmp.data, err)))
			return rc;
		s->replace = false;
	} else if ((rc = s->be->columns(s->conn, s->t.name, &names, &n, &exists, err))) {
		return broken(s, err, err);
	}
	if (exists)
		rc = dbs__table_set_cols(&s->t, s->schema, names, n, err);
	else if (!(rc = dbs__table_cols_for(&s->t, s->schema, row, err)) &&
		 dbs__table_create_sql(&s->t, s->be, false, &s->tmp))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (!rc && !exists)
		rc = ddl(s, s->tmp.data, err);
	if (!rc && (rc = find_rowid(s, err)))
		rc = broken(s, err, err);
	return rc;
}

/* Rolls back the transaction the database aborted and writes it again:
 * its statements, then its rows. */
static int redo(dbs_sink *s, core_err *err)
{
	size_t at = 0, done = 0;
	int rc;

	s->be->exec(s->conn, "ROLLBACK", NULL, 0, NULL, err);
	s->txn = false;
	s->nranges = 0;
	if ((rc = begin(s, err)))
		return rc;
	for (size_t i = 0; i < s->ddl.len; i += strlen(s->ddl.data + i) + 1)
		if ((rc = s->be->exec(s->conn, s->ddl.data + i, NULL, 0, NULL, err)))
			return broken(s, err, err);
	while (done < s->pending) {
		const char *sql;
		int64_t id;
		size_t n;

		if (next_row(s, &at, &sql, &n))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		if ((rc = s->be->insert(s->conn, sql, s->vals, n, &id, err)))
			return broken(s, err, err);
		if (s->be->rowid_name && add_rowid(s, id))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		done++;
	}
	return 0;
}

/* The INSERT of a row failed (err says why): a row error if the
 * transaction can go on, or once it is written again. */
static int insert_failed(dbs_sink *s, int rc, core_err *err)
{
	core_err again = { 0 };

	if (rc == CORE_ENOMEM || s->be->txn_usable(s->conn))
		return rc == CORE_ENOMEM ? rc : CORE_EDATA;
	if (!s->be->connected(s->conn))
		return broken(s, err, err);
	if (redo(s, &again))
		return broken(s, &again, err);
	err->code = CORE_EDATA;
	return CORE_EDATA;
}

/* The rowid ranges as the ledger keeps them: "1-40,42-42". */
static int ranges_ref(dbs_sink *s, core_buf *out)
{
	core_buf_reset(out);
	for (size_t i = 0; i < s->nranges; i++)
		if (core_buf_printf(out, "%s%lld-%lld", i ? "," : "",
				    (long long)s->ranges[i][0], (long long)s->ranges[i][1]))
			return CORE_ENOMEM;
	return core_buf_puts(out, "");
}

/* The transaction's ledger entry, and the entries no resume can need. */
static int put_entry(dbs_sink *s, core_err *err)
{
	dbs_entry e = { .seq = s->seq + 1, .before = s->committed,
			.after = s->committed + s->pending };
	int rc;

	memcpy(e.chain, s->chain_txn, sizeof(e.chain));
	if (s->be->txn_ref)
		rc = s->be->txn_ref(s->conn, &s->tmp, err);
	else if ((rc = ranges_ref(s, &s->tmp)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc)
		return rc;
	e.ref = s->tmp.data ? s->tmp.data : "";
	if ((rc = dbs__ledger_put(s->be, s->conn, s->writer, s->t.name, &e, err)))
		return rc;
	if (s->nrecent == DBS_RECENT)
		rc = dbs__ledger_trim(s->be, s->conn, s->writer, s->recent[0], err);
	return rc;
}

int dbs__commit(dbs_sink *s, core_err *err)
{
	bool entry = s->pending || s->ddl.len;
	int rc;

	if (s->broken)
		return broken(s, NULL, err);
	if (!s->txn)
		return 0;
	if ((entry && (rc = put_entry(s, err))) ||
	    (rc = s->be->exec(s->conn, "COMMIT", NULL, 0, NULL, err))) {
		broken(s, err, err);
		dbs__rollback(s);
		return CORE_EIO;
	}
	s->committed += s->pending;
	s->seq += entry;
	memcpy(s->chain, s->chain_txn, sizeof(s->chain));
	end_txn(s);
	return 0;
}

/* --------------------------------------------------------------- rows */

int dbs__write(dbs_sink *s, const json_t *row, plg_write_info *info,
	       core_err *err)
{
	size_t n = 0;
	int64_t id = 0;
	int rc;

	if (s->broken)
		return broken(s, NULL, err);
	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "database sink: the row is not an object");
	core_buf_reset(&s->canon);
	if ((rc = core_canon_append(&s->canon, row, err)) || (rc = begin(s, err)))
		return rc;
	if (!s->t.ncols && (rc = create_table(s, row, err)))
		return rc;
	/* Declared fields: their types (no conversion), required fields,
	 * and mode fixed's "no other field". */
	if ((rc = plg__schema_apply(s->schema, (json_t *)row, false, err)) ||
	    (rc = dbs__table_insert(&s->t, row, &s->sql, &s->vals, &s->cap, &n,
				    &s->scratch, err)))
		return rc;
	if ((rc = s->be->insert(s->conn, s->sql.data, s->vals, n, &id, err)))
		return insert_failed(s, rc, err);
	if (keep_row(s, n) || (s->be->rowid_name && add_rowid(s, id)) ||
	    dbs__chain(s, s->chain_txn, s->canon.data, s->canon.len)) {
		core_err oom;

		core_err_set(&oom, CORE_ENOMEM, "out of memory keeping a row");
		return broken(s, &oom, err);
	}
	s->pending++;
	info->offset = s->committed + s->pending - 1;
	info->len = s->canon.len;
	info->bytes = s->canon.data;
	if (s->pending >= DBS_TXN_ROWS || s->replay.len >= DBS_TXN_BYTES)
		return dbs__commit(s, err);
	return 0;
}

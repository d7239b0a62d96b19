/*
 * database_txn.c — the database sink's rows and transactions (ADR 0023).
 *
 * The sinks of one database share its transaction (database_db.c). It
 * is begun by the first row after a commit and committed at each
 * checkpoint (plg_sink_ops.commit: the first sink's call commits it, the
 * others find nothing open), at flush, at close, and early when it holds
 * DBS_TXN_ROWS rows or DBS_TXN_BYTES. Each sink that wrote in it gets
 * its ledger entry in it, just before COMMIT.
 *
 * A row the database refuses (a constraint, a value of the wrong type
 * for an existing column) is a row error: the engine diverts it
 * (on_write_failure) and the transaction goes on without it. SQLite
 * keeps the transaction; PostgreSQL aborts it, so it is rolled back and
 * begun again with its statements written anew, in order, from its log
 * (no savepoints: they would give rows their own transaction ids, and
 * the ledger finds a commit's rows by its id). Anything else — the
 * connection gone, a failed COMMIT — breaks the database: every later
 * call of its sinks fails with that error, so the run stops at the next
 * checkpoint at the latest and the resume starts from the last one that
 * was durable.
 *
 * Locking: db->lock guards the transaction (txn, log, rows, broken) and
 * the sinks' parts of it; the engine calls a sink from one thread at a
 * time, the lock keeps two sinks of one database apart all the same.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/sink/database_internal.h"

/* Marks db broken with why (first error wins); err gets the error. */
static int broken(dbs_db *db, const core_err *why, core_err *err)
{
	if (!db->broken) {
		db->broken = true;
		db->why = *why;
		db->why.code = CORE_EIO;
		core_err_prefix(&db->why, "database sink stopped");
	}
	if (err && err != &db->why)
		*err = db->why;
	return CORE_EIO;
}

int dbs__broken(dbs_sink *s, core_err *err)
{
	int rc = 0;

	pthread_mutex_lock(&s->db->lock);
	if (s->db->broken)
		rc = broken(s->db, NULL, err);
	pthread_mutex_unlock(&s->db->lock);
	return rc;
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

/* --------------------------------------------------------- the log
 * The open transaction's statements in order, each: the sink, the sql,
 * the number of values (SIZE_MAX: DDL, none), the values and their
 * texts. */

static int log_put(dbs_db *db, dbs_sink *s, const char *sql, size_t n,
		   const dbs_val *vals)
{
	size_t len = strlen(sql) + 1;
	core_buf *b = &db->log;
	int rc = core_buf_append(b, &s, sizeof(s)) || core_buf_append(b, &len, sizeof(len)) ||
		 core_buf_append(b, sql, len) || core_buf_append(b, &n, sizeof(n));

	for (size_t i = 0; !rc && vals && i < n; i++) {
		rc = core_buf_append(b, &vals[i], sizeof(vals[i]));
		if (!rc && vals[i].kind == DBS_V_TEXT)
			rc = core_buf_append(b, vals[i].s, vals[i].len);
	}
	return rc ? CORE_ENOMEM : 0;
}

/* The statement at *at: its sink, sql, and values (into s->vals, texts
 * pointing into the log); *n SIZE_MAX for DDL. */
static int log_get(dbs_db *db, size_t *at, dbs_sink **s, const char **sql,
		   size_t *n)
{
	const char *b = db->log.data;
	size_t len;

	memcpy(s, b + *at, sizeof(*s));
	*at += sizeof(*s);
	memcpy(&len, b + *at, sizeof(len));
	*at += sizeof(len);
	*sql = b + *at;
	*at += len;
	memcpy(n, b + *at, sizeof(*n));
	*at += sizeof(*n);
	if (*n == SIZE_MAX)
		return 0;
	if (*n > (*s)->cap) {
		dbs_val *grown = realloc((*s)->vals, *n * sizeof(*grown));

		if (!grown)
			return CORE_ENOMEM;
		(*s)->vals = grown;
		(*s)->cap = *n;
	}
	for (size_t i = 0; i < *n; i++) {
		dbs_val *v = &(*s)->vals[i];

		memcpy(v, b + *at, sizeof(*v));
		*at += sizeof(*v);
		if (v->kind == DBS_V_TEXT) {
			v->s = b + *at;
			*at += v->len;
		}
	}
	return 0;
}

static int add_rowid(dbs_sink *s, int64_t id)
{
	if (!s->be->rowid_name)
		return 0;
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

/* The transaction is over (committed or not): its parts are cleared;
 * each sink's chain goes back to (or on to) what is committed. */
static void end_txn(dbs_db *db)
{
	for (size_t i = 0; i < db->nsinks; i++) {
		dbs_sink *s = db->sinks[i];

		s->pending = 0;
		s->ddl = false;
		s->nranges = 0;
		memcpy(s->chain_txn, s->chain, sizeof(s->chain));
	}
	db->txn = false;
	db->rows = 0;
	core_buf_reset(&db->log);
}

static int begin(dbs_db *db, core_err *err)
{
	if (db->txn)
		return 0;
	if (db->be->exec(db->conn, db->be->begin_sql, NULL, 0, NULL, err))
		return broken(db, err, err);
	db->txn = true;
	return 0;
}

static void rollback(dbs_db *db)
{
	core_err ignored;

	if (db->txn)
		db->be->exec(db->conn, "ROLLBACK", NULL, 0, NULL, &ignored);
	end_txn(db);
}

void dbs__rollback(dbs_db *db)
{
	pthread_mutex_lock(&db->lock);
	rollback(db);
	pthread_mutex_unlock(&db->lock);
}

/* Runs a statement of s's before its rows (DDL), and logs it. */
static int ddl(dbs_sink *s, const char *sql, core_err *err)
{
	if (s->be->exec(s->db->conn, sql, NULL, 0, NULL, err))
		return broken(s->db, err, err);
	if (log_put(s->db, s, sql, SIZE_MAX, NULL))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->ddl = true;
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
	rc = s->be->rowid_name(s->db->conn, s->t.qname, names, s->t.ncols, &s->t.rowid, err);
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
	} else if (s->be->columns(s->db->conn, s->t.name, &names, &n, &exists, err)) {
		return broken(s->db, err, err);
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
	if (!rc && find_rowid(s, err))
		rc = broken(s->db, err, err);
	return rc;
}

/* Rolls back the transaction the database aborted and writes it again,
 * statement by statement. */
static int redo(dbs_db *db, core_err *err)
{
	size_t at = 0;

	db->be->exec(db->conn, "ROLLBACK", NULL, 0, NULL, err);
	db->txn = false;
	for (size_t i = 0; i < db->nsinks; i++)
		db->sinks[i]->nranges = 0;
	if (begin(db, err))
		return CORE_EIO;
	while (at < db->log.len) {
		dbs_sink *s;
		const char *sql;
		int64_t id;
		size_t n;

		if (log_get(db, &at, &s, &sql, &n))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		if (n == SIZE_MAX ? db->be->exec(db->conn, sql, NULL, 0, NULL, err) :
		    db->be->insert(db->conn, sql, s->vals, n, &id, err))
			return broken(db, err, err);
		if (n != SIZE_MAX && add_rowid(s, id))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

/* The INSERT of a row failed (err says why): a row error if the
 * transaction can go on, or once it is written again. */
static int insert_failed(dbs_sink *s, int rc, core_err *err)
{
	dbs_db *db = s->db;
	core_err again = { 0 };

	if (rc == CORE_ENOMEM || s->be->txn_usable(db->conn))
		return rc == CORE_ENOMEM ? rc : CORE_EDATA;
	if (!s->be->connected(db->conn))
		return broken(db, err, err);
	if (redo(db, &again))
		return broken(db, &again, err);
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

/* s's ledger entry for the transaction, and the removal of the entries
 * no resume can need. */
static int put_entry(dbs_sink *s, core_err *err)
{
	dbs_entry e = { .seq = s->seq + 1, .before = s->committed,
			.after = s->committed + s->pending };
	dbs_conn *c = s->db->conn;
	int rc;

	memcpy(e.chain, s->chain_txn, sizeof(e.chain));
	if (s->be->txn_ref)
		rc = s->be->txn_ref(c, &s->tmp, err);
	else if ((rc = ranges_ref(s, &s->tmp)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc)
		return rc;
	e.ref = s->tmp.data ? s->tmp.data : "";
	if ((rc = dbs__ledger_put(&s->lg, c, s->writer, s->t.name, &e, err)))
		return rc;
	if (s->nrecent == DBS_RECENT && !s->effect)
		rc = dbs__ledger_trim(s->be, c, s->writer, s->recent[0], err);
	return rc;
}

static int commit(dbs_db *db, core_err *err)
{
	int rc = 0;

	if (db->broken)
		return broken(db, NULL, err);
	if (!db->txn)
		return 0;
	for (size_t i = 0; i < db->nsinks && !rc; i++)
		if (db->sinks[i]->pending || db->sinks[i]->ddl)
			rc = put_entry(db->sinks[i], err);
	if (rc || (rc = db->be->exec(db->conn, "COMMIT", NULL, 0, NULL, err))) {
		broken(db, err, err);
		rollback(db);
		return CORE_EIO;
	}
	for (size_t i = 0; i < db->nsinks; i++) {
		dbs_sink *s = db->sinks[i];

		if (!s->pending && !s->ddl)
			continue;
		s->committed += s->pending;
		s->seq++;
		memcpy(s->chain, s->chain_txn, sizeof(s->chain));
	}
	end_txn(db);
	return 0;
}

int dbs__commit(dbs_sink *s, core_err *err)
{
	int rc;

	pthread_mutex_lock(&s->db->lock);
	rc = commit(s->db, err);
	pthread_mutex_unlock(&s->db->lock);
	return rc;
}

/* --------------------------------------------------------------- rows */

/* Effect ledger, resumed: a row an earlier attempt committed after the
 * checkpoint comes again. It is not written; the chain goes on, and where
 * one of those commits ended the chain must be the one it recorded. */
static int republished(dbs_sink *s, plg_write_info *info, core_err *err)
{
	if (dbs__chain(s, s->chain, s->canon.data, s->canon.len))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	memcpy(s->chain_txn, s->chain, sizeof(s->chain));
	s->committed++;
	for (size_t i = 0; i < s->after.n; i++)
		if (s->after.e[i].after == s->committed &&
		    strcmp(s->after.e[i].chain, s->chain))
			return core_err_set(err, CORE_EIO,
				"table '%s' in %s: rows 1..%llu differ from those commit %llu "
				"of this run published before it stopped (chain %.12s..., "
				"recorded %.12s...); the effect ledger keeps what was "
				"published, nothing was written", s->t.name, s->url.sanitized,
				(unsigned long long)s->committed,
				(unsigned long long)s->after.e[i].seq, s->chain,
				s->after.e[i].chain);
	info->offset = s->committed - 1;
	info->len = s->canon.len;
	info->bytes = s->canon.data;
	return 0;
}

static int write_row(dbs_sink *s, const json_t *row, plg_write_info *info,
		     core_err *err)
{
	dbs_db *db = s->db;
	size_t n = 0;
	int64_t id = 0;
	int rc;

	if (db->broken)
		return broken(db, NULL, err);
	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "database sink: the row is not an object");
	core_buf_reset(&s->canon);
	if ((rc = core_canon_append(&s->canon, row, err)))
		return rc;
	if (!s->pending && s->committed < s->published) {
		/* what write_row refuses before the database sees it is refused
		 * again (it was diverted, not published, the first time) */
		if ((rc = plg__schema_apply(s->schema, (json_t *)row, false, err)) ||
		    (rc = dbs__table_insert(&s->t, row, &s->sql, &s->vals, &s->cap, &n,
					    &s->scratch, err)))
			return rc;
		return republished(s, info, err);
	}
	if ((rc = begin(db, err)))
		return rc;
	if (!s->t.ncols && (rc = create_table(s, row, err)))
		return rc;
	/* Declared fields: their types (no conversion), required fields,
	 * and mode fixed's "no other field". */
	if ((rc = plg__schema_apply(s->schema, (json_t *)row, false, err)) ||
	    (rc = dbs__table_insert(&s->t, row, &s->sql, &s->vals, &s->cap, &n,
				    &s->scratch, err)))
		return rc;
	if ((rc = s->be->insert(db->conn, s->sql.data, s->vals, n, &id, err)))
		return insert_failed(s, rc, err);
	if (log_put(db, s, s->sql.data, n, s->vals) || add_rowid(s, id) ||
	    dbs__chain(s, s->chain_txn, s->canon.data, s->canon.len)) {
		core_err oom;

		core_err_set(&oom, CORE_ENOMEM, "out of memory keeping a row");
		return broken(db, &oom, err);
	}
	s->pending++;
	db->rows++;
	info->offset = s->committed + s->pending - 1;
	info->len = s->canon.len;
	info->bytes = s->canon.data;
	if (db->rows >= DBS_TXN_ROWS || db->log.len >= DBS_TXN_BYTES)
		return commit(db, err);
	return 0;
}

int dbs__write(dbs_sink *s, const json_t *row, plg_write_info *info,
	       core_err *err)
{
	int rc;

	pthread_mutex_lock(&s->db->lock);
	rc = write_row(s, row, info, err);
	pthread_mutex_unlock(&s->db->lock);
	return rc;
}

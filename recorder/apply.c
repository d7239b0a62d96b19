/*
 * apply.c — one batch into LMDB, on the writer thread (no locks held on
 * entry; map_lock is read-held by each transaction, see map.c).
 *
 * All consecutive puts of a batch go into one write transaction (group
 * commit). A rec_write_sync callback gets a transaction of its own, after
 * the puts before it are committed. A batch holding flush markers is
 * fsync'd once, after its last commit, before any flush caller wakes.
 *
 * Recoverable LMDB conditions retry the same transaction:
 *   MDB_MAP_FULL    double the map (map.c), retry;
 *   MDB_MAP_RESIZED handled by rec__txn_begin (adopt the file's size);
 *   MDB_TXN_FULL    too many dirty pages for one txn: halve the number of
 *                   puts per txn (kept for later batches), retry.
 * Anything else is returned and becomes the sticky error.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "recorder/recorder_internal.h"

/* The writer's idea of the last key of table t; a put above it is
 * appended (MDB_APPEND: LMDB fills the last page instead of splitting it
 * in half, and touches nothing else). Wrong only when another process
 * wrote the table since: the append fails, and the put goes in the usual
 * way. */
static bool after_tail(const rec__tail *tl, const MDB_val *k)
{
	size_t n = k->mv_size < tl->len ? k->mv_size : tl->len;
	int c;

	if (!tl->known)
		return false;
	if (!tl->len) /* an empty table */
		return true;
	c = memcmp(k->mv_data, tl->key, n);
	return c > 0 || (!c && k->mv_size > tl->len);
}

static void tail_set(rec__tail *tl, const MDB_val *k)
{
	memcpy(tl->key, k->mv_data, k->mv_size);
	tl->len = k->mv_size;
	tl->known = true;
}

/* The table's last key, read once per writer (and after a failed
 * append). */
static void tail_load(MDB_txn *txn, MDB_dbi dbi, rec__tail *tl)
{
	MDB_cursor *c;
	MDB_val k, v;

	int rc;

	tl->len = 0;
	tl->known = false;
	if (mdb_cursor_open(txn, dbi, &c))
		return;
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (!rc && k.mv_size <= REC_KEY_MAX)
		tail_set(tl, &k);
	else if (rc == MDB_NOTFOUND)
		tl->known = true; /* empty */
	mdb_cursor_close(c);
}

static int op_put(rec_env *env, MDB_txn *txn, const rec__batch *b,
		  const rec__op *op)
{
	char *p = b->arena.data + op->off;
	MDB_val k = { op->klen, p }, v = { op->vlen, p + op->klen };
	unsigned flags = op->kind == REC__OP_PUT_ONCE ? MDB_NOOVERWRITE : 0;
	MDB_dbi dbi = env->dbi[op->table];
	rec__tail *tl = &env->tail[op->table];
	int rc;

	if (rec__table_packed(op->table) &&
	    (rc = rec__pack(env, txn, (const uint8_t *)p, v.mv_data, v.mv_size, &v)))
		return rc;
	if (!tl->known)
		tail_load(txn, dbi, tl);
	if (after_tail(tl, &k)) {
		rc = rec__put(txn, dbi, op->table, &k, &v, flags | MDB_APPEND);
		if (rc != MDB_KEYEXIST) {
			if (!rc)
				tail_set(tl, &k);
			return rc;
		}
		tail_load(txn, dbi, tl); /* another process wrote it */
	}
	rc = rec__put(txn, dbi, op->table, &k, &v, flags);
	if (!rc && after_tail(tl, &k))
		tail_set(tl, &k);
	return rc == MDB_KEYEXIST && flags ? 0 : rc;
}

static bool is_put(const rec__op *op)
{
	return op->kind == REC__OP_PUT || op->kind == REC__OP_PUT_ONCE ||
	       op->kind == REC__OP_PUT_FSYNC;
}

#define MAX_FSYNC_FDS 64 /* distinct descriptors per transaction */

/* The descriptors a transaction must fsync before it commits. */
typedef struct fd_set_ {
	int fd[MAX_FSYNC_FDS];
	size_t n;
} fd_set_;

static void fds_add(fd_set_ *s, const rec__batch *b, const rec__op *op)
{
	const char *p = b->arena.data + op->off + op->klen + op->vlen;

	for (size_t i = 0; i < op->nfds; i++) {
		int fd;
		size_t j = 0;

		memcpy(&fd, p + i * sizeof(int), sizeof(int));
		while (j < s->n && s->fd[j] != fd)
			j++;
		if (j == s->n && s->n < MAX_FSYNC_FDS)
			s->fd[s->n++] = fd;
	}
}

/* fdatasync each; pipes and devices (EINVAL, EROFS) have nothing to do. */
static int fds_sync(const fd_set_ *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (fdatasync(s->fd[i]) && errno != EINVAL && errno != EROFS)
			return errno;
	return 0;
}

/* Puts ops from *pos up to the next non-put (at most txn_ops_max) in one
 * transaction. *pos advances past them on success; *tried says how many
 * went in before a failure. */
static int puts_commit(rec_env *env, const rec__batch *b, size_t *pos,
		       size_t *tried)
{
	MDB_txn *txn;
	size_t i = *pos;
	fd_set_ fds = { .n = 0 };
	int rc;

	*tried = 0;
	rc = rec__txn_begin(env, 0, &txn);
	if (rc)
		return rc;
	for (; i < b->nops && is_put(&b->ops[i]); i++) {
		if (i - *pos >= env->txn_ops_max)
			break;
		if ((rc = op_put(env, txn, b, &b->ops[i])))
			break;
		if (b->ops[i].kind == REC__OP_PUT_FSYNC)
			fds_add(&fds, b, &b->ops[i]);
	}
	/* Files a put depends on (a checkpoint's sinks) are durable before
	 * the put commits. An fsync failure is an I/O error (EIO), sticky. */
	if (!rc && fds.n && fds_sync(&fds))
		rc = EIO;
	/* So are the payload files its records may name (ADR 0028). */
	if (!rc && rec__payload_files_sync(env))
		rc = EIO;
	if (rc)
		mdb_txn_abort(txn);
	else
		rc = mdb_txn_commit(txn);
	rec__txn_done(env);
	rec__pack_committed(env, !rc);
	if (rc) /* the tails may name keys the abort took back */
		memset(env->tail, 0, sizeof(env->tail));
	*tried = i - *pos;
	if (rc)
		return rc;
	env->wstats.commits++;
	env->wstats.ops += *tried;
	if (*tried > env->wstats.max_ops)
		env->wstats.max_ops = *tried;
	*pos = i;
	return 0;
}

/* 0 when the failed transaction may be retried. */
static int recover(rec_env *env, int rc, size_t tried)
{
	switch (rc) {
	case MDB_MAP_FULL:
		env->wstats.grows++;
		return rec__map_grow(env);
	case MDB_TXN_FULL:
		if (tried < 2)
			return rc;
		env->txn_ops_max = tried / 2;
		return 0;
	default:
		return rc;
	}
}

static int puts_apply(rec_env *env, const rec__batch *b, size_t *pos,
		      core_err *err)
{
	size_t tried;
	int rc;

	for (;;) {
		rc = puts_commit(env, b, pos, &tried);
		if (!rc)
			return 0;
		if (recover(env, rc, tried))
			return rec__lmdb_err(err, rc, env, "writing audit records");
	}
}

/* The callback's own failure goes back to its caller only; a failure to
 * commit what it wrote is an LMDB error and becomes sticky. */
static int sync_run(rec_env *env, rec__sync *s, core_err *err)
{
	MDB_txn *txn;
	int frc, crc;

	for (;;) {
		crc = rec__txn_begin(env, 0, &txn);
		if (crc)
			return rec__lmdb_err(err, crc, env, "beginning a transaction");
		frc = s->fn(s->ctx, env, txn);
		/* Payload files its records may name are durable first. */
		crc = frc ? 0 : rec__payload_files_sync(env);
		if (frc || crc)
			mdb_txn_abort(txn);
		else
			crc = mdb_txn_commit(txn);
		rec__txn_done(env);
		if (frc != MDB_MAP_FULL && crc != MDB_MAP_FULL)
			break;
		env->wstats.grows++;
		if ((crc = rec__map_grow(env)))
			return rec__lmdb_err(err, crc, env, "growing the map");
	}
	s->ran = true;
	s->rc = frc ? frc : crc;
	if (frc && s->err && s->err->code != frc)
		core_err_set(s->err, frc, "audit trail %s: write transaction "
			     "callback failed: %s", env->path, core_strerror(frc));
	if (!crc) {
		env->wstats.commits++;
		return 0;
	}
	rec__lmdb_err(err, crc, env, "committing a synchronous transaction");
	if (s->err)
		*s->err = *err;
	return crc;
}

static int fsync_env(rec_env *env, core_err *err)
{
	int rc;

	pthread_rwlock_rdlock(&env->map_lock);
	rc = mdb_env_sync(env->mdb, 1);
	pthread_rwlock_unlock(&env->map_lock);
	env->wstats.syncs++;
	return rc ? rec__lmdb_err(err, rc, env, "fsync of the audit trail") : 0;
}

int rec__batch_apply(rec_env *env, const rec__batch *b, core_err *err)
{
	bool flush = false;
	size_t pos = 0;
	int rc = 0;

	while (!rc && pos < b->nops) {
		switch (b->ops[pos].kind) {
		case REC__OP_FLUSH:
			flush = true;
			pos++;
			break;
		case REC__OP_SYNC:
			rc = sync_run(env, b->ops[pos].sync, err);
			pos++;
			break;
		default:
			rc = puts_apply(env, b, &pos, err);
		}
	}
	return rc || !flush ? rc : fsync_env(env, err);
}

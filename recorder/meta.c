/*
 * meta.c — the named tables and the format marker.
 *
 * A new environment gets every table and REC_META "format" in one write
 * transaction, so another process sees either an empty environment or a
 * complete Landscape. A non-empty environment without our marker is not
 * ours: we never add tables to it.
 *
 * READONLY: a table that does not exist (an empty environment still being
 * created, or an older format) is remembered as absent and reads as
 * empty; rec_read_begin retries opening absent tables (refresh).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "recorder/recorder_internal.h"

#define FORMAT_KEY "format"
#define FORMAT_FAMILY "elspeth-landscape-"

/* LMDB's codes must fit the range core keeps for them (core.h). */
_Static_assert(MDB_KEYEXIST >= CORE_LMDB_FIRST &&
	       MDB_LAST_ERRCODE <= CORE_LMDB_LAST,
	       "LMDB's codes outside CORE_LMDB_FIRST..CORE_LMDB_LAST");

/* core_strerror's messages for LMDB's codes (core_strerror_lmdb). */
static const char *lmdb_strerror(int code)
{
	return mdb_strerror(code);
}

void rec__strerror_register(void)
{
	core_strerror_lmdb(lmdb_strerror);
}

/* "No space left on device: state/audit.lmdb (writing audit records)":
 * the cause first, then where, then what the store was doing. LMDB
 * reports a short write as EIO: on a full disk, it is said so. */
int rec__lmdb_err(core_err *err, int rc, const rec_env *env, const char *what)
{
	struct statvfs st;

	if (rc == EIO && !statvfs(env->path, &st) &&
	    (uint64_t)st.f_bavail * st.f_frsize < ((uint64_t)1 << 20))
		rc = ENOSPC;
	return core_err_set(err, rc, "%s: %s (audit trail: %s)", core_strerror(rc),
			    env->path, what);
}

bool rec_err_damaged(int code)
{
	return code == CORE_EDATA || code == MDB_CORRUPTED || code == MDB_PAGE_NOTFOUND ||
	       code == MDB_BAD_VALSIZE || code == MDB_INVALID || code == MDB_VERSION_MISMATCH ||
	       code == MDB_BAD_DBI || code == MDB_INCOMPATIBLE;
}

static int not_ours(rec_env *env, core_err *err)
{
	return core_err_set(err, CORE_ECONFIG,
		"%s is not an elspeth Landscape: it is an LMDB environment "
		"without the '%s' format marker; point --database (or "
		"landscape.url) at the audit trail of an elspeth run",
		env->path, REC_FORMAT);
}

static int format_check(rec_env *env, MDB_txn *txn, core_err *err)
{
	MDB_val k = { strlen(FORMAT_KEY), FORMAT_KEY }, v;
	MDB_dbi dbi;
	int rc;

	rc = mdb_dbi_open(txn, rec_table_name(REC_META), 0, &dbi);
	if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE)
		return not_ours(env, err);
	if (rc)
		return rec__lmdb_err(err, rc, env, "opening table 'meta'");
	rc = mdb_get(txn, dbi, &k, &v);
	if (rc == MDB_NOTFOUND)
		return not_ours(env, err);
	if (rc)
		return rec__lmdb_err(err, rc, env, "reading the format marker");
	if (v.mv_size == strlen(REC_FORMAT) &&
	    memcmp(v.mv_data, REC_FORMAT, v.mv_size) == 0)
		return 0;
	if (v.mv_size > strlen(FORMAT_FAMILY) && v.mv_size < 64 &&
	    memcmp(v.mv_data, FORMAT_FAMILY, strlen(FORMAT_FAMILY)) == 0) {
		char ver[64];
		long n;

		memcpy(ver, (const char *)v.mv_data + strlen(FORMAT_FAMILY),
		       v.mv_size - strlen(FORMAT_FAMILY));
		ver[v.mv_size - strlen(FORMAT_FAMILY)] = '\0';
		n = strtol(ver, NULL, 10);
		if (n > 0 && n < REC_FORMAT_VERSION)
			return core_err_set(err, CORE_ECONFIG,
				"%s holds Landscape format %ld, written by an older "
				"elspeth; this elspeth (%s) reads format %d only "
				"(docs/audit.md, \"Format versions\"): read or export "
				"it with the elspeth that wrote it, and point "
				"landscape.url at a new directory for new runs",
				env->path, n, ELSPETH_VERSION, REC_FORMAT_VERSION);
		return core_err_set(err, CORE_ECONFIG,
			"%s holds Landscape format '%s' but this elspeth (%s) "
			"reads format %d only: it was written by a newer elspeth",
			env->path, ver, ELSPETH_VERSION, REC_FORMAT_VERSION);
	}
	return not_ours(env, err);
}

static int env_is_empty(rec_env *env, MDB_txn *txn, bool *empty,
			core_err *err)
{
	MDB_dbi main_dbi;
	MDB_stat st;
	int rc;

	rc = mdb_dbi_open(txn, NULL, 0, &main_dbi);
	if (rc == 0)
		rc = mdb_stat(txn, main_dbi, &st);
	if (rc)
		return rec__lmdb_err(err, rc, env, "reading the environment");
	*empty = st.ms_entries == 0;
	return 0;
}

static int format_write(rec_env *env, MDB_txn *txn, core_err *err)
{
	MDB_val k = { strlen(FORMAT_KEY), FORMAT_KEY };
	MDB_val v = { strlen(REC_FORMAT), REC_FORMAT };
	int rc;

	rc = mdb_put(txn, env->dbi[REC_META], &k, &v, 0);
	return rc ? rec__lmdb_err(err, rc, env, "writing the format marker") : 0;
}

/* Opens every table: the existing ones (ro), or creating the absent ones
 * and the format marker. */
static int tables_load(rec_env *env, MDB_txn *txn, bool ro, core_err *err)
{
	bool empty = false;
	int rc, t;

	rc = env_is_empty(env, txn, &empty, err);
	if (rc || (empty && ro))
		return rc;
	if (!empty && (rc = format_check(env, txn, err)))
		return rc;
	for (t = 0; t < REC_TABLE_LAST; t++) {
		if (!env->absent[t])
			continue;
		if (rec__table_in_story(t)) { /* read from REC_TRAIL */
			env->absent[t] = false;
			env->nabsent--;
			continue;
		}
		rc = mdb_dbi_open(txn, rec_table_name(t), ro ? 0 : MDB_CREATE,
				  &env->dbi[t]);
		if (rc == MDB_NOTFOUND && ro)
			continue;
		if (rc)
			return rec__lmdb_err(err, rc, env, "opening a table");
		env->absent[t] = false;
		env->nabsent--;
	}
	return empty ? format_write(env, txn, err) : 0;
}

/* Table handles opened in a transaction that is aborted are closed:
 * tables_load's changes to env are undone with a saved copy. */
typedef struct tables_save {
	MDB_dbi dbi[REC_TABLE_LAST];
	bool absent[REC_TABLE_LAST];
	int nabsent;
} tables_save;

static void tables_swap(rec_env *env, tables_save *s, bool restore)
{
	if (restore) {
		memcpy(env->dbi, s->dbi, sizeof(env->dbi));
		memcpy(env->absent, s->absent, sizeof(env->absent));
		env->nabsent = s->nabsent;
		return;
	}
	memcpy(s->dbi, env->dbi, sizeof(env->dbi));
	memcpy(s->absent, env->absent, sizeof(env->absent));
	s->nabsent = env->nabsent;
}

/* One pass of tables_load in its own txn, committed (also when
 * read-only) so the table handles become shared by the environment. */
static int tables_pass(rec_env *env, bool ro, core_err *err)
{
	MDB_txn *txn;
	int rc;

	rc = rec__txn_begin(env, ro ? MDB_RDONLY : 0, &txn);
	if (rc)
		return rec__lmdb_err(err, rc, env, "beginning a transaction");
	rc = tables_load(env, txn, ro, err);
	if (rc)
		goto out_abort;
	rc = mdb_txn_commit(txn);
	rec__txn_done(env);
	return rc ? rec__lmdb_err(err, rc, env, "creating the tables") : 0;

out_abort:
	mdb_txn_abort(txn);
	rec__txn_done(env);
	return rc;
}

/* Called once from rec_open, before any other transaction exists. An
 * existing trail is opened in a read-only txn, without LMDB's writer
 * lock: a process that holds it (another run, or one stopped mid-commit
 * by SIGSTOP / Ctrl-Z) does not hold up opening the trail, so `resume`
 * gets as far as refusing a run that is still alive (rec_run_lock). Only
 * a new trail, or one lacking tables, takes a write txn to create them. */
int rec__tables_open(rec_env *env, core_err *err)
{
	int rc, t;

	for (t = 0; t < REC_TABLE_LAST; t++)
		env->absent[t] = true;
	env->nabsent = REC_TABLE_LAST;
	rc = tables_pass(env, true, err);
	if (rc || (env->flags & REC_READONLY) || !env->nabsent)
		return rc;
	return tables_pass(env, false, err);
}

/* Reopens absent tables; the map lock is write-held by the caller. */
static int tables_reload(rec_env *env, core_err *err)
{
	tables_save save;
	MDB_txn *txn;
	int rc;

	rc = mdb_txn_begin(env->mdb, NULL, MDB_RDONLY, &txn);
	if (rc == MDB_MAP_RESIZED && !(rc = mdb_env_set_mapsize(env->mdb, 0)))
		rc = mdb_txn_begin(env->mdb, NULL, MDB_RDONLY, &txn);
	if (rc)
		return rec__lmdb_err(err, rc, env, "beginning a transaction");
	tables_swap(env, &save, false);
	rc = tables_load(env, txn, true, err);
	if (rc)
		goto out_abort;
	rc = mdb_txn_commit(txn);
	if (rc) {
		rec__lmdb_err(err, rc, env, "opening the tables");
		goto out_restore;
	}
	return 0;

out_abort:
	mdb_txn_abort(txn);
out_restore:
	tables_swap(env, &save, true);
	return rc;
}

/* READONLY, from rec_read_begin when tables are absent: tries to open
 * them again, with the map lock held for writing (mdb_dbi_open must not
 * race other transactions of the process). A format error is returned
 * (the environment was empty at rec_open and is not ours now). */
int rec__tables_refresh(rec_env *env, core_err *err)
{
	int rc = 0;

	pthread_rwlock_wrlock(&env->map_lock);
	if (env->nabsent)
		rc = tables_reload(env, err);
	pthread_rwlock_unlock(&env->map_lock);
	return rc;
}

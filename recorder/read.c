/*
 * read.c — read transactions, point reads, prefix scans, payloads.
 *
 * A rec_txn holds env->map_lock for reading for its whole life (map.c), so
 * rec_read_end must run on the thread that began it; rec__wtxns counts
 * the ones a thread holds on writing envs (see put.c). An absent table
 * (READONLY env, see meta.c) reads as empty.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

struct rec_txn {
	rec_env *env;
	MDB_txn *txn;
	rec__views *views;         /* story_read.c, on first use */
	rec__unpacker *get_u;      /* packed tables: rec_get's values */
	rec__unpacker *scan_u;     /* ... and rec_scan's, rec_last's */
	void **kept;               /* payload files read (rec__txn_keep) */
	size_t nkept;
};

int rec__txn_keep(rec_txn *t, void *buf)
{
	void **k = realloc(t->kept, (t->nkept + 1) * sizeof(*k));

	if (!k) {
		free(buf);
		return CORE_ENOMEM;
	}
	t->kept = k;
	t->kept[t->nkept++] = buf;
	return 0;
}

rec__views *rec__txn_views(rec_txn *t)
{
	if (!t->views)
		t->views = rec__views_new();
	return t->views;
}

rec_env *rec__txn_env(rec_txn *t)
{
	return t->env;
}

MDB_txn *rec__txn_mdb(rec_txn *t)
{
	return t->txn;
}

_Thread_local int rec__wtxns;

static int txn_begin(rec_env *env, rec_txn *t, core_err *err)
{
	int rc;

	rc = rec__txn_begin(env, MDB_RDONLY, &t->txn);
	if (rc)
		return rec__lmdb_err(err, rc, env, "beginning a read transaction");
	return 0;
}

int rec_read_begin(rec_env *env, rec_txn **out, core_err *err)
{
	rec_txn *t;
	int rc;

	*out = NULL;
	rec__damage_clear(); /* a message names damage this read found */
	t = calloc(1, sizeof(*t));
	if (!t)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	t->env = env;
	rc = txn_begin(env, t, err);
	/* An environment that was empty at rec_open may have been created
	 * since: look for its tables again. */
	if (!rc && env->absent[REC_META]) {
		mdb_txn_abort(t->txn);
		rec__txn_done(env);
		rc = rec__tables_refresh(env, err);
		if (!rc)
			rc = txn_begin(env, t, err);
	}
	if (rc) {
		free(t);
		return rc;
	}
	if (env->has_writer)
		rec__wtxns++;
	*out = t;
	return 0;
}

void rec_read_end(rec_txn *t)
{
	if (!t)
		return;
	mdb_txn_abort(t->txn);
	rec__txn_done(t->env);
	if (t->env->has_writer)
		rec__wtxns--;
	rec__views_free(t->views);
	rec__unpacker_free(t->get_u);
	rec__unpacker_free(t->scan_u);
	for (size_t i = 0; i < t->nkept; i++)
		free(t->kept[i]);
	free(t->kept);
	free(t);
}

static void val_out(const MDB_val *v, const void **p, size_t *len)
{
	if (p)
		*p = v->mv_data;
	if (len)
		*len = v->mv_size;
}

int rec__get_raw(rec_txn *t, rec_table tab, const rec_key *k,
		 const void **val, size_t *vlen)
{
	MDB_val key = { k->len, (void *)k->b }, v;
	int rc;

	if ((unsigned)tab >= REC_TABLE_LAST)
		return CORE_EINTERNAL;
	if (t->env->absent[tab])
		return REC_NOTFOUND;
	rc = mdb_get(t->txn, t->env->dbi[tab], &key, &v);
	if (rc == MDB_NOTFOUND)
		return REC_NOTFOUND;
	if (!rc && !(rc = rec__unseal(tab, &key, &v)))
		val_out(&v, val, vlen);
	return rc;
}

int rec_get(rec_txn *t, rec_table tab, const rec_key *k, const void **val,
	    size_t *vlen)
{
	const void *p;
	size_t n;
	int rc;

	if ((unsigned)tab < REC_TABLE_LAST && rec__table_in_story(tab))
		return rec__story_get(t, tab, k, val, vlen);
	rc = rec__get_raw(t, tab, k, &p, &n);
	if (!rc && rec__table_packed(tab))
		rc = rec__unpack(t, &t->get_u, k->b, p, n, &p, &n);
	if (!rc) {
		if (val)
			*val = p;
		if (vlen)
			*vlen = n;
	}
	return rc;
}

static bool has_prefix(const MDB_val *key, const rec_key *prefix)
{
	return key->mv_size >= prefix->len &&
	       memcmp(key->mv_data, prefix->b, prefix->len) == 0;
}

static int cursor_open(rec_txn *t, rec_table tab, MDB_cursor **c)
{
	if ((unsigned)tab >= REC_TABLE_LAST)
		return CORE_EINTERNAL;
	if (t->env->absent[tab])
		return REC_NOTFOUND;
	return mdb_cursor_open(t->txn, t->env->dbi[tab], c);
}

int rec_scan(rec_txn *t, rec_table tab, const rec_key *prefix,
	     rec_scan_fn fn, void *ctx)
{
	static const rec_key empty;
	MDB_val key, v;
	MDB_cursor *c;
	int rc;

	bool packed = (unsigned)tab < REC_TABLE_LAST && rec__table_packed(tab);

	if (!prefix)
		prefix = &empty;
	if ((unsigned)tab < REC_TABLE_LAST && rec__table_in_story(tab))
		return rec__story_scan(t, tab, prefix, fn, ctx);
	rc = cursor_open(t, tab, &c);
	if (rc)
		return rc == REC_NOTFOUND ? 0 : rc;
	key.mv_size = prefix->len;
	key.mv_data = (void *)prefix->b;
	rc = mdb_cursor_get(c, &key, &v, prefix->len ? MDB_SET_RANGE : MDB_FIRST);
	while (!rc && has_prefix(&key, prefix)) {
		const void *p;
		size_t n;

		if ((rc = rec__unseal(tab, &key, &v)))
			goto out_close;
		p = v.mv_data;
		n = v.mv_size;
		if (packed && (rc = rec__unpack(t, &t->scan_u, key.mv_data, p, n, &p, &n)))
			goto out_close;
		rc = fn(ctx, key.mv_data, key.mv_size, p, n);
		if (rc)
			goto out_close;
		rc = mdb_cursor_get(c, &key, &v, MDB_NEXT);
	}
	if (rc == MDB_NOTFOUND)
		rc = 0;
out_close:
	mdb_cursor_close(c);
	return rc;
}

/* The smallest key above every key starting with prefix: prefix with its
 * trailing 0xff bytes dropped and the last byte incremented. false when
 * there is none (empty or all-0xff prefix: the bound is the table end). */
static bool prefix_successor(const rec_key *prefix, rec_key *succ)
{
	*succ = *prefix;
	while (succ->len && succ->b[succ->len - 1] == 0xff)
		succ->len--;
	if (!succ->len)
		return false;
	succ->b[succ->len - 1]++;
	return true;
}

int rec_last(rec_txn *t, rec_table tab, const rec_key *prefix,
	     const void **key, size_t *klen, const void **val, size_t *vlen)
{
	static const rec_key empty;
	MDB_val k, v;
	MDB_cursor *c;
	rec_key succ;
	int rc;

	if (!prefix)
		prefix = &empty;
	if ((unsigned)tab < REC_TABLE_LAST && rec__table_in_story(tab))
		return rec__story_last(t, tab, prefix, key, klen, val, vlen);
	rc = cursor_open(t, tab, &c);
	if (rc)
		return rc;
	if (prefix_successor(prefix, &succ)) {
		k.mv_size = succ.len;
		k.mv_data = succ.b;
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (!rc)
			rc = mdb_cursor_get(c, &k, &v, MDB_PREV);
		else if (rc == MDB_NOTFOUND) /* nothing at or above the bound */
			rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	} else {
		rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	}
	if (!rc && !has_prefix(&k, prefix))
		rc = MDB_NOTFOUND;
	if (!rc)
		rc = rec__unseal(tab, &k, &v);
	mdb_cursor_close(c);
	if (rc == MDB_NOTFOUND)
		return REC_NOTFOUND;
	if (!rc && rec__table_packed(tab)) {
		const void *p;
		size_t n;

		rc = rec__unpack(t, &t->scan_u, k.mv_data, v.mv_data, v.mv_size, &p, &n);
		v.mv_data = (void *)p;
		v.mv_size = n;
	}
	if (!rc) {
		val_out(&k, key, klen);
		val_out(&v, val, vlen);
	}
	return rc;
}

int rec_get_payload(rec_txn *t, const char *hex, const void **data,
		    size_t *len)
{
	rec_key k;

	if (!rec__unhex32(hex, true, k.b))
		return CORE_EDATA;
	k.len = CORE_SHA256_LEN;
	/* A row's payloads are in its story: the rows being read first. */
	if (!rec__story_payload(t, k.b, data, len))
		return 0;
	if (!rec_get(t, REC_PAYLOADS, &k, data, len))
		return 0;
	/* payload_store: filesystem (ADR 0028) */
	return rec__payload_file_get(t, hex, data, len);
}

/*
 * txn.c — direct access to the write transaction of a rec_write_sync
 * callback (writer thread).
 */
#include "recorder/recorder_internal.h"

int rec_txn_put(rec_env *env, void *mdb_txn, rec_table t, const rec_key *k,
		const void *val, size_t vlen)
{
	MDB_val key, v = { vlen, (void *)val };

	if (!env || !mdb_txn || (unsigned)t >= REC_TABLE_LAST || !k || !k->len)
		return CORE_EINTERNAL;
	key.mv_size = k->len;
	key.mv_data = (void *)k->b;
	return rec__put(mdb_txn, env->dbi[t], t, &key, &v, 0);
}

/* runs.c — run ids: 1, 2, 3 ... per environment, allocated atomically. */
#include <stdlib.h>

#include "recorder/recorder_internal.h"

typedef struct new_run {
	Elspeth__RunRecord *rec;
} new_run;

static int alloc_run(void *ctx, rec_env *env, void *mdb_txn)
{
	new_run *nr = ctx;
	MDB_txn *txn = mdb_txn;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t last = 0;
	rec_key key;
	uint8_t *buf;
	size_t len;
	int rc;

	rc = mdb_cursor_open(txn, env->dbi[REC_RUNS], &cur);
	if (rc)
		return rc;
	rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == 8)
		last = rec_key_get_u64(k.mv_data, 0);
	mdb_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	nr->rec->run_id = last + 1;
	rec_key_init(&key);
	rec_key_u64(&key, nr->rec->run_id);
	len = elspeth__run_record__get_packed_size(nr->rec);
	buf = malloc(len ? len : 1);
	if (!buf)
		return CORE_ENOMEM;
	elspeth__run_record__pack(nr->rec, buf);
	rc = rec_txn_put(env, txn, REC_RUNS, &key, buf, len);
	free(buf);
	return rc;
}

int rec_new_run(rec_env *env, Elspeth__RunRecord *rec, core_err *err)
{
	new_run nr = { rec };
	int rc = rec_write_sync(env, alloc_run, &nr, err);

	if (rc && err && !err->msg[0])
		core_err_set(err, rc, "cannot allocate a run id: %s",
			     core_strerror(rc));
	return rc;
}

/*
 * chain.c — each run's records chained to a head kept in its run record
 * (docs/architecture.md §8, docs/audit.md "Damage and tampering").
 *
 * The head is the SHA-256 of, in this order:
 *   "elspeth-chain-1\0";
 *   the run record as packed with its three chain fields empty
 *   (4-byte little-endian length, then the bytes);
 *   every record of the run, table by table in rec_table order (every
 *   table keyed by run but meta, runs and the shared payloads), in key
 *   order: the table number (1 byte), the key's length (2 bytes LE), the
 *   key, the stored value's length (4 bytes LE) and the stored value as
 *   it is on disk (packed, sealed).
 * It is written when a run or a resume ends, by a rec_write_sync
 * callback: in the writer's own transaction, after every put queued
 * before it is committed, so nothing of the run can slip in between the
 * reading and the rewriting of the run record. With a key
 * (ELSPETH_SIGNING_KEY) the head is also signed, HMAC-SHA256.
 * A record changed, removed, added or moved to another key changes the
 * head; an edit by someone without the key can make a new head but not a
 * new signature. A run that never ended (killed, not resumed) has no
 * head yet: only its seals (seal.c) protect it.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

#define CHAIN_TAG "elspeth-chain-1"

static void add_le(core_sha256_stream *s, uint64_t v, int bytes)
{
	uint8_t b[8];

	for (int i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	core_sha256_stream_add(s, b, (size_t)bytes);
}

/* Bytes read through the map between two rec__map_drop: the scan reads
 * the whole run once, and its pages need not stay in the resident set
 * (a run's peak memory would grow with its trail). */
#define DROP_EVERY ((size_t)16 << 20)

/* The records of one table under the run's 8-byte prefix. */
static int add_table(rec_env *env, core_sha256_stream *s, MDB_txn *txn, MDB_dbi dbi,
		     rec_table t, const rec_key *prefix, uint64_t *records,
		     size_t *unreleased)
{
	MDB_cursor *c;
	MDB_val k = { prefix->len, (void *)prefix->b }, v;
	int rc = mdb_cursor_open(txn, dbi, &c);

	if (rc)
		return rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size < prefix->len || memcmp(k.mv_data, prefix->b, prefix->len))
			break;
		add_le(s, (uint64_t)t, 1);
		add_le(s, k.mv_size, 2);
		core_sha256_stream_add(s, k.mv_data, k.mv_size);
		add_le(s, v.mv_size, 4);
		core_sha256_stream_add(s, v.mv_data, v.mv_size);
		(*records)++;
		if ((*unreleased += k.mv_size + v.mv_size) >= DROP_EVERY) {
			rec__map_drop(env);
			*unreleased = 0;
		}
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The run record as the head covers it: its chain fields empty. */
static int add_run_record(core_sha256_stream *s, const Elspeth__RunRecord *r)
{
	Elspeth__RunRecord c = *r;
	size_t len;
	uint8_t *buf;

	c.chain_head = (char *)"";
	c.chain_records = 0;
	c.chain_hmac = (char *)"";
	len = elspeth__run_record__get_packed_size(&c);
	if (!(buf = malloc(len ? len : 1)))
		return CORE_ENOMEM;
	elspeth__run_record__pack(&c, buf);
	add_le(s, len, 4);
	core_sha256_stream_add(s, buf, len);
	free(buf);
	return 0;
}

int rec__chain_head(rec_env *env, MDB_txn *txn, const Elspeth__RunRecord *r,
		    char head[CORE_SHA256_HEX_LEN + 1], uint64_t *records)
{
	core_sha256_stream *s = core_sha256_stream_new();
	size_t unreleased = 0;
	rec_key prefix;
	int rc;

	*records = 0;
	if (!s)
		return CORE_ENOMEM;
	core_sha256_stream_add(s, CHAIN_TAG, sizeof(CHAIN_TAG));
	rc = add_run_record(s, r);
	rec_key_init(&prefix);
	rec_key_u64(&prefix, r->run_id);
	for (int t = 0; !rc && t < REC_TABLE_LAST; t++) {
		if (t == REC_META || t == REC_RUNS || t == REC_PAYLOADS ||
		    rec__table_in_story((rec_table)t) || env->absent[t])
			continue;
		rc = add_table(env, s, txn, env->dbi[t], (rec_table)t, &prefix, records,
			       &unreleased);
	}
	if (!rc)
		core_sha256_stream_hex(s, head);
	core_sha256_stream_free(s);
	return rc;
}

typedef struct chain_job {
	uint64_t run;
	const char *key;
	const Elspeth__RunRecord *final; /* NULL: the stored one */
} chain_job;

/* The writer's transaction: the run record (the stored one, or the final
 * one given) chained, signed and written. Writing the final record here,
 * not as a put before, leaves no moment at which the trail holds a
 * finished run record without its head. */
static int chain_run(void *ctx, rec_env *env, void *mdb_txn)
{
	chain_job *j = ctx;
	MDB_txn *txn = mdb_txn;
	char head[CORE_SHA256_HEX_LEN + 1], mac[CORE_SHA256_HEX_LEN + 1] = "";
	Elspeth__RunRecord *r;
	MDB_val k, v;
	rec_key key;
	uint64_t records;
	uint8_t *buf;
	size_t len;
	int rc;

	rec_key_init(&key);
	rec_key_u64(&key, j->run);
	k.mv_size = key.len;
	k.mv_data = key.b;
	if (j->final)
		r = (Elspeth__RunRecord *)j->final;
	else if ((rc = mdb_get(txn, env->dbi[REC_RUNS], &k, &v)) ||
		 (rc = rec__unseal(REC_RUNS, &k, &v)))
		return rc;
	else if (!(r = elspeth__run_record__unpack(NULL, v.mv_size, v.mv_data)))
		return CORE_EDATA;
	rc = rec__chain_head(env, txn, r, head, &records);
	if (!rc && j->key)
		rc = core_hmac_sha256_hex(j->key, head, strlen(head), mac);
	if (!rc) {
		/* the strings stay the caller's or protobuf-c's: only
		 * pointers change */
		Elspeth__RunRecord w = *r;

		w.chain_records = records;
		w.chain_head = head;
		w.chain_hmac = mac;
		len = elspeth__run_record__get_packed_size(&w);
		if (!(buf = malloc(len)))
			rc = CORE_ENOMEM;
		else {
			elspeth__run_record__pack(&w, buf);
			rc = rec_txn_put(env, txn, REC_RUNS, &key, buf, len);
			free(buf);
		}
	}
	if (!j->final)
		elspeth__run_record__free_unpacked(r, NULL);
	return rc;
}

static int run_chain(rec_env *env, uint64_t run, const Elspeth__RunRecord *final,
		     const char *key, core_err *err)
{
	chain_job j = { run, key && *key ? key : NULL, final };
	int rc = rec_write_sync(env, chain_run, &j, err);

	if (rc && err && !err->msg[0])
		core_err_set(err, rc, "audit: cannot chain the records of run %llu: %s",
			     (unsigned long long)run, core_strerror(rc));
	return rc;
}

int rec_run_chain(rec_env *env, uint64_t run, const char *key, core_err *err)
{
	return run_chain(env, run, NULL, key, err);
}

int rec_run_end(rec_env *env, const Elspeth__RunRecord *r, const char *key,
		core_err *err)
{
	return run_chain(env, r->run_id, r, key, err);
}

int rec_txn_chain_intact(rec_txn *txn, const Elspeth__RunRecord *r, bool *intact)
{
	char head[CORE_SHA256_HEX_LEN + 1];
	uint64_t n = 0;
	int rc;

	*intact = true;
	if (!r->chain_head[0])
		return 0;
	if ((rc = rec__chain_head(rec__txn_env(txn), rec__txn_mdb(txn), r, head, &n)))
		return rc;
	*intact = !strcmp(head, r->chain_head) && n == r->chain_records;
	return 0;
}

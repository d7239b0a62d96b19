/*
 * recorder_internal.h — what the recorder's files share: the environment
 * struct, the write queue and the map lock. Not a published API (tests may
 * include it to read statistics).
 *
 * DESIGN (locks):
 *   env->lock      guards the producer side of the writer: queue,
 *                  queue_max, stop, writer_idle, writer_self,
 *                  writer_running, *_waiters, space_waits,
 *                  ticket_next, ticket_done, queue_gen, werr, werr_msg
 *                  and stats.
 *   env->map_lock  (rwlock) read side: held by every transaction of this
 *                  process for its whole life (rec_txn, the writer's
 *                  txns); write side: taken only to change the map size
 *                  (mdb_env_set_mapsize), which LMDB allows only while no
 *                  transaction of the process is active. Taken without
 *                  env->lock held.
 *   env->wbatch, txn_ops_max, wstats: the writer thread's (no lock).
 *   stories->s[i].lock (story.c, one per stripe of open row stories)
 *                  guards that stripe's stories; taken before env->lock
 *                  (a seal or flush enqueues), never after, and never by
 *                  the writer.
 *   env->packer, env->tail[], map_released_ns: the writer thread's.
 *   Order: map_lock (read side, an open txn) may be held while taking
 *   env->lock (a rec_put from a rec_write_sync callback, or from a thread
 *   reading); never the reverse. A thread holding a rec_txn on a writing
 *   env must not wait for the writer: the writer may need map_lock's
 *   write side to grow the map (map.c). So such a thread (rec__wtxns > 0)
 *   and the writer itself never wait for queue room, and rec_flush /
 *   rec_write_sync from them fail at once instead of deadlocking.
 *   Everything else is set in rec_open and read-only afterwards, except
 *   dbi[]/absent[] of a READONLY env, which change only under the write
 *   side of map_lock (rec__tables_refresh).
 */
#ifndef ELSPETH_RECORDER_INTERNAL_H
#define ELSPETH_RECORDER_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <lmdb.h>

#include "recorder/recorder.h"

#define REC_FORMAT "elspeth-landscape-3"
#define REC_FORMAT_VERSION 3
#define REC_MAPSIZE_DEFAULT ((size_t)64 << 20)
#define REC_MAPSIZE_ENV "ELSPETH_LMDB_MAPSIZE"
#define REC_MAXREADERS 126
/* Producers wait only while this many bytes are queued and not yet taken
 * by the writer (memory stays under ~2x this: queue + batch in flight). */
#define REC_QUEUE_MAX ((size_t)8 << 20)

enum rec__op_kind {
	REC__OP_PUT,
	REC__OP_PUT_ONCE,  /* MDB_NOOVERWRITE; an existing key is kept */
	REC__OP_FLUSH,     /* fsync once the batch is committed */
	REC__OP_SYNC,      /* run a rec_write_sync callback */
	REC__OP_PUT_FSYNC, /* a put whose txn commits only after the file
			    * descriptors stored after its value are fsync'd */
};

/* A rec_write_sync request; lives on the caller's stack until
 * ticket_done reaches its ticket. */
typedef struct rec__sync {
	rec_sync_fn fn;
	void *ctx;
	core_err *err;
	bool ran;          /* written by the writer before ticket_done moves */
	int rc;
} rec__sync;

/* One queued operation; key and value bytes live in the batch arena at
 * off (key) and off + klen (value). */
typedef struct rec__op {
	uint8_t kind;
	uint8_t table;
	uint16_t klen;
	uint16_t nfds;     /* REC__OP_PUT_FSYNC: ints after the value */
	size_t off;
	size_t vlen;
	rec__sync *sync;
} rec__op;

typedef struct rec__batch {
	core_buf arena;
	rec__op *ops;
	size_t nops, cap;
	uint64_t ticket;   /* the last flush/sync ticket in it, or 0 */
	bool urgent;       /* holds a put that should not wait (rec_put_msg_now) */
} rec__batch;

typedef struct rec__stats {
	uint64_t commits;      /* write transactions committed */
	uint64_t ops;          /* puts committed */
	uint64_t max_ops;      /* most puts in one commit */
	uint64_t batches;      /* queue swaps */
	uint64_t syncs;        /* fsyncs (rec_flush) */
	uint64_t grows;        /* map size doublings */
	uint64_t space_waits;  /* times a producer waited for queue room */
} rec__stats;

typedef struct rec__stories rec__stories;   /* story.c */
typedef struct rec__packer rec__packer;     /* pack.c, writer only */
typedef struct rec__unpacker rec__unpacker; /* pack.c, one reader */

/* The last key the writer put in a table, to append (MDB_APPEND) puts
 * that come after it. Writer only. */
typedef struct rec__tail {
	uint8_t key[REC_KEY_MAX];
	size_t len;            /* 0 and known: the table is empty */
	bool known;
} rec__tail;

struct rec_env {
	MDB_env *mdb;
	int flags;
	char path[PATH_MAX];
	MDB_dbi dbi[REC_TABLE_LAST];
	bool absent[REC_TABLE_LAST]; /* READONLY: table not (yet) created */
	int nabsent;
	pthread_rwlock_t map_lock;
	bool registered;             /* in the process-wide open list */
	dev_t dev;                   /* the directory, for the open list */
	ino_t ino;
	rec_env *reg_next;

	/* writer (not READONLY) */
	bool has_writer;
	pthread_t writer;
	pthread_mutex_t lock;
	pthread_cond_t work_cond;    /* the writer waits for work */
	pthread_cond_t done_cond;    /* flush/sync callers wait */
	pthread_cond_t space_cond;   /* producers wait for queue room */
	rec__batch queue;
	size_t queue_max;            /* REC_QUEUE_MAX; tests lower it */
	uint64_t space_waits;
	rec__batch wbatch;
	bool stop;
	bool writer_idle;
	pthread_t writer_self;       /* set by the writer itself */
	bool writer_running;
	int done_waiters, space_waiters;
	uint64_t ticket_next, ticket_done;
	uint64_t queue_gen;          /* +1 each time the writer takes the queue */
	int werr;
	core_err werr_msg;
	size_t txn_ops_max;          /* writer only: puts per txn cap */
	rec__stats wstats;           /* writer only: running counts */
	uint64_t committed_ns;       /* writer only: end of the last batch */
	uint64_t map_released_ns;    /* writer only: the last map_release */
	bool writer_gathering;       /* env->lock: waiting to grow a batch */
	rec__stats stats;            /* copy of wstats after each batch */
	rec__tail tail[REC_TABLE_LAST]; /* writer only */
	rec__packer *packer;         /* writer only */
	rec__stories *stories;       /* story.c: open row stories */
	char *payload_dir;           /* payload_store.c: files instead of stories */
	atomic_bool payloads_dirty;  /* payload files written since the
				      * writer's last rec__payload_files_sync */
};

/* payload_store.c (ADR 0028): a payload as a content-addressed file
 * (DIR/ab/abcd...; written and renamed into place, made durable by the
 * writer's next rec__payload_files_sync, before the commit that may name
 * it); reading one back from any of the environment's payload directories
 * (the bytes live until rec_read_end). */
int rec__payload_file_put(rec_env *env, const char *hex, const void *data,
			  size_t len);
/* Writer thread, before a commit: the payload files written so far are
 * durable (one syncfs of their filesystem when any was written). 0 or
 * EIO. */
int rec__payload_files_sync(rec_env *env);
int rec__payload_file_get(rec_txn *t, const char *hex, const void **data,
			  size_t *len);
/* read.c: keeps buf (malloc'd) until rec_read_end. */
int rec__txn_keep(rec_txn *t, void *buf);

/* env.c / meta.c */
int rec__tables_open(rec_env *env, core_err *err);
int rec__tables_refresh(rec_env *env, core_err *err);
int rec__lmdb_err(core_err *err, int rc, const rec_env *env, const char *what);
/* Gives core_strerror LMDB's messages (rec_open calls it). */
void rec__strerror_register(void);

/* map.c: map size changes and transaction begin with MAP_RESIZED retry.
 * rec__txn_begin returns with map_lock read-held; rec__txn_done drops it. */
int rec__txn_begin(rec_env *env, unsigned flags, MDB_txn **out);
void rec__txn_done(rec_env *env);
int rec__map_grow(rec_env *env);
int rec__map_adopt(rec_env *env);

size_t rec__mapsize_initial(void);
/* Drops the map's pages from the process's resident set (MADV_DONTNEED:
 * clean page cache, faulted back on the next read). The caller holds
 * map_lock's read side (an open transaction, or taken for it). */
void rec__map_drop(rec_env *env);

/* registry.c: one open env per directory per process (lmdb.h forbids
 * opening an environment twice in a process). */
int rec__registry_add(rec_env *env, core_err *err);
void rec__registry_remove(rec_env *env);

/* batch.c */
void rec__batch_release(rec__batch *b);
void rec__batch_reset(rec__batch *b);
int rec__batch_push(rec__batch *b, uint8_t kind, rec_table t, size_t klen,
		    size_t vlen, rec__op **out);
size_t rec__batch_bytes(const rec__batch *b);

/* read.c: rec_txns this thread holds on writing envs. */
extern _Thread_local int rec__wtxns;

/* writer.c: the thread; apply.c: one batch into LMDB (writer thread). */
int rec__writer_start(rec_env *env, core_err *err);
void rec__writer_stop(rec_env *env);
int rec__batch_apply(rec_env *env, const rec__batch *b, core_err *err);

/* keys.c: a SHA-256 in hex (64 digits; uppercase too with any_case)
 * into out; false when it is not one. */
bool rec__unhex32(const char *hex, bool any_case, uint8_t out[CORE_SHA256_LEN]);

/* story.c */
int rec__stories_init(rec_env *env);
void rec__stories_free(rec_env *env);
/* put.c: makes rc the sticky writer error (a record that could not be
 * kept: the run must not go on as if it were). */
void rec__fail(rec_env *env, int rc, const char *what);
/* put.c: enqueues a put of a packed table (the writer packs it). */
int rec__put_packed(rec_env *env, rec_table t, const rec_key *k,
		    const void *val, size_t vlen);

/* pack.c: the writer packs values of packed tables; readers unpack
 * them (*up: the reader's decompressor, created on first use). */
bool rec__table_packed(rec_table t);
int rec__packer_init(rec_env *env);
void rec__packer_free(rec_env *env);
int rec__pack(rec_env *env, MDB_txn *txn, const uint8_t *key,
	      const void *val, size_t vlen, MDB_val *out);
void rec__pack_committed(rec_env *env, bool ok);
int rec__unpack(rec_txn *t, rec__unpacker **up, const void *key,
		const void *val, size_t vlen, const void **out, size_t *outlen);
void rec__unpacker_free(rec__unpacker *u);

/* read.c: a stored value as it is (no unpacking, no story view). */
int rec__get_raw(rec_txn *t, rec_table tab, const rec_key *k,
		 const void **val, size_t *vlen);
MDB_txn *rec__txn_mdb(rec_txn *t);

/* story_read.c: the per-row tables, read from the row stories. */
bool rec__table_in_story(rec_table t);
int rec__story_get(rec_txn *t, rec_table tab, const rec_key *k,
		   const void **val, size_t *vlen);
int rec__story_scan(rec_txn *t, rec_table tab, const rec_key *prefix,
		    rec_scan_fn fn, void *ctx);
/* rec__story_scan of run's records of table tab in the rows from
 * from_seq on (a resume reads only the rows it may redo). */
int rec__story_scan_from(rec_txn *t, rec_table tab, uint64_t run, uint64_t from_seq,
			 rec_scan_fn fn, void *ctx);
int rec__story_last(rec_txn *t, rec_table tab, const rec_key *prefix,
		    const void **key, size_t *klen, const void **val,
		    size_t *vlen);
int rec__story_payload(rec_txn *t, const uint8_t hash[CORE_SHA256_LEN],
		       const void **data, size_t *len);
typedef struct rec__view rec__view;
typedef struct rec__views rec__views;
void rec__views_free(rec__views *vs);
/* read.c: the txn's views (created on first use; NULL: out of memory). */
rec__views *rec__txn_views(rec_txn *t);
rec__views *rec__views_new(void);
rec_env *rec__txn_env(rec_txn *t);

/* Statistics of a writing env (a copy, taken under env->lock). */
void rec__stats_get(rec_env *env, rec__stats *out);
/* Tests: a smaller queue bound, to make producers wait. */
void rec__queue_max_set(rec_env *env, size_t bytes);

/* seal.c: every value but REC_META's ends with a 4-byte CRC-32C of its
 * table's name, key and bytes. rec__put writes a value with its seal
 * (mdb_put's flags; MDB_RESERVE is added); rec__unseal checks one read
 * back and takes the seal off v (CORE_EDATA: damaged). */
#define REC__SEAL_LEN 4
bool rec__sealed_table(rec_table t);
int rec__put(MDB_txn *txn, MDB_dbi dbi, rec_table t, MDB_val *k, const MDB_val *v,
	     unsigned flags);
int rec__unseal(rec_table t, const MDB_val *k, MDB_val *v);
/* Forgets where this thread last found damage (a new read begins). */
void rec__damage_clear(void);
/* Says again where damage found earlier was (a read that relies on it). */
void rec__damage_set(const char *where);

/* chain.c: the head of run r's chain as txn holds it (hex) and the
 * number of records it covers; 0 or the read error. */
int rec__chain_head(rec_env *env, MDB_txn *txn, const Elspeth__RunRecord *r,
		    char head[CORE_SHA256_HEX_LEN + 1], uint64_t *records);

#endif /* ELSPETH_RECORDER_INTERNAL_H */

/*
 * recorder.h — the public contract of the Landscape's storage: one LMDB
 * environment per state directory holding the audit tables, the payload
 * store and the checkpoints (docs/architecture.md §8).
 *
 * Writing: any thread enqueues puts (rec_put*); one writer thread per
 * environment commits them in batches (group commit). A put copies its
 * key and value into the queue and returns; it waits for the writer only
 * when more than REC_QUEUE_MAX bytes (8 MiB, recorder_internal.h) are
 * queued and not yet taken by it (backpressure: the disk is slower than
 * the producers), until the writer takes the queue.
 * Each group commit syncs its data but not LMDB's meta page
 * (MDB_NOMETASYNC): a process crash (SIGKILL) loses nothing committed, an
 * OS crash may undo the last commit, and neither corrupts the environment;
 * rec_flush() waits until everything enqueued before it is committed and
 * fully synced (ADR 0004). When the map is full
 * the writer grows it and retries. A write error is sticky: later calls
 * return it.
 *
 * Reading: rec_open(..., REC_READONLY) in another process (explain,
 * verify, runs) works while a run is writing; readers see whole committed
 * batches only.
 *
 * Records are protobuf-c messages from proto/landscape.proto; keys are
 * big-endian composites built with rec_key() (layouts in docs/audit.md).
 *
 * Thread rules: rec_put* and rec_error may be called from any thread. A
 * rec_txn belongs to the thread that began it. rec_flush and
 * rec_write_sync wait for the writer, so they may not be called by a
 * thread that holds a rec_txn on an environment open for writing (the
 * writer may need that transaction ended to grow the map) or from inside
 * a rec_write_sync callback (the writer would wait for itself): there they
 * return CORE_EINTERNAL at once. Such threads may put; their puts skip
 * the queue bound instead of waiting.
 */
#ifndef ELSPETH_RECORDER_H
#define ELSPETH_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "core/core.h"
#include "proto/landscape.pb-c.h"

/* The tables. The per-row ones (marked *) are not stored as such: a
 * row's records are stored together, as its story (table REC_TRAIL,
 * docs/audit.md "Row stories"), and reads of these tables are served from
 * the stories, with the keys and protobuf values below. Index tables hold
 * empty values. */
typedef enum rec_table {
	REC_META,            /* "format" -> version string, ... */
	REC_RUNS,            /* run */
	REC_NODES,           /* run, node(4) */
	REC_EDGES,           /* run, edge(4) */
	REC_ROWS,            /* * run, seq — rows by (run, seq) */
	REC_TOKENS,          /* * run, token */
	REC_TOKENS_BY_ROW,   /* * run, row, token -> "" */
	REC_TOKEN_PARENTS,   /* * run, token, ordinal(4) */
	REC_NODE_STATES,     /* * run, state */
	REC_STATES_BY_TOKEN, /* * run, token, state -> "" */
	REC_CALLS,           /* run, state, call_index(4) — calls by state
				(packed, with their bodies) */
	REC_ROUTING_EVENTS,  /* * run, state, ordinal(4) */
	REC_BATCHES,         /* run, batch */
	REC_BATCH_MEMBERS,   /* run, batch, ordinal(4) */
	REC_ARTIFACTS,       /* * run, token */
	REC_TOKEN_OUTCOMES,  /* * run, token — outcome by token */
	REC_VALIDATION_ERRORS, /* * run, row */
	REC_TRANSFORM_ERRORS,  /* * run, token, state */
	REC_SINK_FILES,      /* run, node(4) */
	REC_CHECKPOINTS,     /* run — the latest checkpoint */
	REC_RESUMES,         /* run, attempt(4) */
	REC_SUPERSEDED,      /* run, token */
	REC_SAMPLES,         /* run, attempt(4), index(4) — metric samples */
	REC_PAYLOADS,        /* sha256(32) -> bytes: the run's own payloads
				(topology); a row's are in its story */
	REC_TRAIL,           /* run, seq, attempt(4), serial(4) -> a row's
				story fragment (packed) */
	REC_DICTS,           /* run, id(4) -> a compression dictionary */
	REC_TABLE_LAST
} rec_table;

/* The table's LMDB name ("runs", "tokens_by_row", ...). */
const char *rec_table_name(rec_table t);
/* Where the last value this thread read and found damaged (CORE_EDATA:
 * its seal does not match, docs/audit.md "Damage and tampering") was:
 * "table node_states, key (1, 42)" (its 8-byte words); "" when this
 * thread's current read (since rec_read_begin) found none. */
const char *rec_damage_where(void);

typedef struct rec_env rec_env;

enum {
	REC_READONLY = 1 << 0,  /* open for reading; no writer thread */
};

/*
 * Codes. Recorder functions return 0, a CORE_* code, an errno value or
 * one of LMDB's codes (MDB_*); core_strerror() knows all of them (rec_open
 * gives it LMDB's messages: core_strerror_lmdb). Two of core's codes have
 * a recorder name, for results that are not always errors:
 */
#define REC_NOTFOUND CORE_ENOTFOUND /* rec_get ...: no such key */
#define REC_SCAN_STOP CORE_BREAK    /* a rec_scan_fn ends the scan early */
/* Whether code says the stored bytes are damaged: a record that does not
 * decode (CORE_EDATA) or an LMDB structure that is not one (corrupted,
 * a page not found, a bad size or version). */
bool rec_err_damaged(int code);

/* Opens (creating it, and its parent directories, unless REC_READONLY)
 * the environment in directory `path`. An environment that is not an
 * elspeth Landscape (no or a foreign REC_META "format") is an error. */
int rec_open(const char *path, int flags, rec_env **out, core_err *err);
/* The directory env was opened with, as given to rec_open. */
const char *rec_env_path(const rec_env *env);
/* Commits everything enqueued, stops the writer, closes. Returns the
 * sticky writer error, if any. NULL allowed. */
int rec_close(rec_env *env, core_err *err);
/* Takes the lock that says run `run` is being run by this process (a file
 * run-RUN.lock in the environment's directory, flock'd: a crash frees
 * it). *fd receives it (close it to release; -1 when a READONLY env
 * finds no lock file: nobody runs it, and nothing is created). CORE_EDATA
 * naming the holder's pid when another process holds it. */
int rec_run_lock(rec_env *env, uint64_t run, int *fd, core_err *err);
/* The LMDB directory of a landscape url: "lmdb://./state/audit.lmdb" ->
 * "./state/audit.lmdb", "sqlite:///runs/audit.db" -> "runs/audit.db.lmdb"
 * (core_landscape_paths). */
int rec_path_from_url(const char *url, char *out, size_t cap, core_err *err);

/* ------------------------------------------------------------------ keys */

#define REC_KEY_MAX 64

/* A composite key: parts appended big-endian. */
typedef struct rec_key {
	uint8_t b[REC_KEY_MAX];
	size_t len;
} rec_key;

void rec_key_init(rec_key *k);
void rec_key_u64(rec_key *k, uint64_t v);
void rec_key_u32(rec_key *k, uint32_t v);
uint64_t rec_key_get_u64(const void *key, size_t off);
/* The reader of rec_key_u32's parts; for tests and tools (the recorder
 * itself reads no 4-byte key part back). */
uint32_t rec_key_get_u32(const void *key, size_t off);

/* -------------------------------------------------------------- writing */

/* Enqueues a copy of key/value for table t (replacing an existing value).
 * Waits while the queue is full (more than REC_QUEUE_MAX bytes; see the
 * top of this file), except on a thread holding a rec_txn or inside a
 * rec_write_sync callback. Returns the sticky writer error, if any. The
 * other rec_put_* below queue the same way. */
int rec_put(rec_env *env, rec_table t, const rec_key *k, const void *val,
	    size_t vlen);
/* Packs msg and enqueues it. */
int rec_put_msg(rec_env *env, rec_table t, const rec_key *k,
		const ProtobufCMessage *msg);
/* Like rec_put_msg, but the writer commits it without gathering more
 * puts first (it does not wait the group-commit delay): for records worth
 * an early commit, such as a paid LLM answer a resume could replay. */
int rec_put_msg_now(rec_env *env, rec_table t, const rec_key *k,
		    const ProtobufCMessage *msg);
/* Like rec_put_msg, and the writer fdatasyncs fds before it commits the
 * transaction holding this put (a checkpoint and the sink files it names:
 * the bytes it counts are durable before it is). The descriptors must
 * stay open until the put is committed (rec_flush). gen (if not NULL)
 * receives the generation of the queue the put went into (rec_queue_gen). */
int rec_put_msg_fsync(rec_env *env, rec_table t, const rec_key *k,
		      const ProtobufCMessage *msg, const int *fds, size_t nfds,
		      uint64_t *gen);
/* The generation of the queue puts go into now. It grows when the writer
 * takes the queue to commit it: while it still equals the generation of
 * an earlier put, that put is queued and a new put will be committed in
 * the same transaction (a put of the same key replaces it unread). */
uint64_t rec_queue_gen(rec_env *env);

/* What the recorder holds and has written, for metrics: records and
 * bytes queued for the writer, and the bytes of the Landscape's file in
 * use (its pages up to the last one written). Any thread; zeros for a
 * read-only environment. */
typedef struct rec_activity {
	uint64_t queued, queued_bytes;
	uint64_t trail_bytes;
} rec_activity;
void rec_activity_get(rec_env *env, rec_activity *out);
/* Stores data in the payload store under its SHA-256 (once: an existing
 * payload is not rewritten); hex receives the hash. */
int rec_put_payload(rec_env *env, const void *data, size_t len,
		    char hex[CORE_SHA256_HEX_LEN + 1]);
/* ---------------------------------------------------------- row stories
 *
 * The per-row records (the tables marked * above: RowRecord, TokenRecord,
 * TokenParentRecord, NodeStateRecord, RoutingEventRecord,
 * TransformErrorRecord, TokenOutcomeRecord, ArtifactRecord,
 * ValidationErrorRecord) and the payloads of a row are gathered in memory
 * in the row's open story and written together when the row is sealed
 * (released). Any thread; records of one row may come from several
 * threads. A record put after its row was sealed starts a new fragment.
 */

/* Adds msg (one of the record types above) to row seq's story. */
int rec_story_put(rec_env *env, uint64_t run, uint64_t seq,
		  const ProtobufCMessage *msg);
/* Adds a payload to row seq's story (once per fragment); hex receives
 * its SHA-256. */
int rec_story_payload(rec_env *env, uint64_t run, uint64_t seq,
		      const void *data, size_t len,
		      char hex[CORE_SHA256_HEX_LEN + 1]);
/* Enqueues row seq's story; later records of the row start a new one. */
int rec_story_seal(rec_env *env, uint64_t run, uint64_t seq);
/* Enqueues what every open story holds so far (before a checkpoint, which
 * must cover it, and at the end of a run); they stay open. */
int rec_story_flush(rec_env *env);
/* The attempt (0: the run, n: its n-th resume) in the keys of the
 * fragments written from now on. */
void rec_story_attempt(rec_env *env, uint32_t attempt);
/* Waits until everything enqueued before the call is committed and the
 * environment is fsync'd. CORE_EINTERNAL at once (without waiting) from
 * a thread holding a rec_txn on a writing environment or inside a
 * rec_write_sync callback, and on a READONLY environment. */
int rec_flush(rec_env *env, core_err *err);
/* The sticky writer error (0 if none), without waiting. For tests and
 * tools: the engine learns it from rec_put* and rec_flush, which return
 * it too. */
int rec_error(rec_env *env, core_err *err);

/* Runs fn inside one synchronous write transaction after everything
 * enqueued so far has been committed (e.g. to allocate the next run id
 * atomically across processes). fn gets the LMDB txn as void* and runs on
 * the writer thread; the caller waits. Same CORE_EINTERNAL cases as
 * rec_flush (so fn must not call rec_flush or rec_write_sync). */
typedef int (*rec_sync_fn)(void *ctx, rec_env *env, void *mdb_txn);
int rec_write_sync(rec_env *env, rec_sync_fn fn, void *ctx, core_err *err);
/* Inside rec_write_sync only: direct put/get on the given txn. */
int rec_txn_put(rec_env *env, void *mdb_txn, rec_table t, const rec_key *k,
		const void *val, size_t vlen);

/* Reads the trail at path (opened read-only) in a child process
 * (recorder/isolated.c, core_isolate): fn runs there with the environment
 * and leaves its answer in out and the run it read in *run. 0 with out
 * appended (at most max bytes; out may be NULL when fn answers nothing);
 * CORE_EDATA when the trail is damaged (the child died of a signal — err
 * names who read and the path — or fn's error is damage, rec_err_damaged);
 * else fn's own error, its message in err. For a process whose other
 * threads hold no lock the child needs (it forks). */
typedef int (*rec_read_fn)(rec_env *env, void *ctx, uint64_t *run, core_buf *out,
			   core_err *err);
int rec_read_isolated(const char *path, const char *who, rec_read_fn fn, void *ctx,
		      size_t max, uint64_t *run, core_buf *out, core_err *err);

/* The last write of a run or a resume that ends, whatever its status:
 * after every put queued before it is committed, in one write
 * transaction, the run record gets the head of the run's chain (the
 * SHA-256 over it and every record of the run, recorder/chain.c), the
 * number of records chained, and with a key (non-NULL, non-empty) the
 * head's HMAC-SHA256. Nothing of the run may be written after it (verify
 * would find the chain broken). Same CORE_EINTERNAL cases as rec_flush;
 * it does not fsync (rec_flush after it does). */
int rec_run_chain(rec_env *env, uint64_t run, const char *key, core_err *err);

/* rec_run_chain with the run's final record r (run_id set; its chain
 * fields are ignored): r is chained and written in that one transaction,
 * so no crash can leave a finished run record without its head. On
 * failure nothing of r is written. */
int rec_run_end(rec_env *env, const Elspeth__RunRecord *r, const char *key,
		core_err *err);

/* Allocates the next run id (1, 2, 3 ... per environment, atomically
 * across processes) and stores rec as its first RunRecord (run_id set). */
int rec_new_run(rec_env *env, Elspeth__RunRecord *rec, core_err *err);

/* Enqueues one metric sample of a run (SampleRecord, docs/report.md)
 * under the key (s->run_id, s->attempt, s->index); replaces a sample of
 * the same key. Any thread. */
int rec_sample_put(rec_env *env, const Elspeth__SampleRecord *s);

/* -------------------------------------------------------------- reading */

typedef struct rec_txn rec_txn;

int rec_read_begin(rec_env *env, rec_txn **out, core_err *err);
void rec_read_end(rec_txn *txn); /* NULL allowed */
/* 0 found (*val valid until rec_read_end), REC_NOTFOUND, or an error. */
int rec_get(rec_txn *txn, rec_table t, const rec_key *k, const void **val,
	    size_t *vlen);
/* Calls fn for every key starting with prefix (NULL: every key), in key
 * order. On a per-row table (marked * above) the prefix names a run at
 * least (else CORE_EINTERNAL), and a scan of a whole run goes row by
 * row, in key order within each row (a table keyed by token or state is
 * then not in key order across rows). fn returns 0 to go on, REC_SCAN_STOP to end the scan, or an
 * error code, which ends it too. rec_scan returns 0 when it went through
 * every key, REC_SCAN_STOP when fn ended it so, or the error (fn's, or
 * the store's). */
typedef int (*rec_scan_fn)(void *ctx, const void *key, size_t klen,
			   const void *val, size_t vlen);
int rec_scan(rec_txn *txn, rec_table t, const rec_key *prefix,
	     rec_scan_fn fn, void *ctx);
/* rec_scan of run's records in a per-row table (marked * above) for rows
 * from_seq..to_seq only (seeking to the first: a range costs its own rows,
 * not the run's); CORE_EINTERNAL for another table. */
int rec_scan_rows(rec_txn *txn, rec_table t, uint64_t run, uint64_t from_seq,
		  uint64_t to_seq, rec_scan_fn fn, void *ctx);
/* rec_scan_rows of several per-row tables in one pass: each row is read
 * once, and its records go to fn table by table in the order of tabs,
 * with ctxs[i] for tabs[i] (rows in order; within a row, tables in that
 * order, keys in order). */
int rec_scan_rows_multi(rec_txn *txn, const rec_table *tabs, size_t ntabs,
			uint64_t run, uint64_t from_seq, uint64_t to_seq,
			rec_scan_fn fn, void **ctxs);
/* The last key of table t starting with prefix (NULL: any key): 0 (the
 * pointers valid until rec_read_end), REC_NOTFOUND, or an error. */
int rec_last(rec_txn *txn, rec_table t, const rec_key *prefix,
	     const void **key, size_t *klen, const void **val, size_t *vlen);
/* Reads a payload by hex hash: 0, REC_NOTFOUND, CORE_EDATA (hex is not
 * 64 hex digits), or a read error. A row's payloads are in its story: they
 * are found while the row is being read (inside a rec_scan callback of a
 * per-row table, after a rec_get of one of its records, or after
 * rec_txn_row); the rest are in REC_PAYLOADS. */
int rec_get_payload(rec_txn *txn, const char *hex, const void **data,
		    size_t *len);

/* Decodes row seq's story for the reads that follow (its records and
 * payloads): 0 (also for a row without a story) or an error. */
int rec_txn_row(rec_txn *txn, uint64_t run, uint64_t seq);

/* Whether run r's records, as txn reads them, still match the head of
 * the chain its run record holds (the check verify makes): *intact true
 * also for a run that has not ended (it has no head yet). 0 or the read
 * error. */
int rec_txn_chain_intact(rec_txn *txn, const Elspeth__RunRecord *r, bool *intact);

/* -------------------------------------------------------------- queries
 * The reads behind `runs`, `explain` and `verify`; documents are jansson
 * values the caller releases (schemas in docs/audit.md).
 */

/* "latest" or a run id -> run id; an unknown run is CORE_EDATA. */
int rec_resolve_run(rec_env *env, const char *spec, uint64_t *run,
		    core_err *err);
/* All runs, newest first. */
int rec_list_runs(rec_env *env, json_t **out, core_err *err);
/* The whole story of row seq (or of the row of token, when token != 0). */
int rec_explain(rec_env *env, uint64_t run, uint64_t seq, uint64_t token,
		json_t **out, core_err *err);
/* Checks the audit invariants of a run; *report = {"run_id", "checked":
 * {...counts}, "violations": [strings]}. Returns 0 when the checks ran
 * (violations or not); an error (no report) when the run is unknown or
 * the trail cannot be read. */
int rec_verify(rec_env *env, uint64_t run, json_t **report, core_err *err);

/* ------------------------------------------------------------ checkpoints
 *
 * A run's latest checkpoint (ADR 0012, docs/resume.md) and what a resume
 * reads before it runs: the ids already used, the crashed attempt's work
 * marked superseded, and the answers of its calls for replay. The engine
 * builds checkpoints (engine/checkpoint.c) and restores them
 * (engine/resume.c); the recorder knows the records, not the engine.
 *
 * Thread rules: rec_ckpt_put from any thread (it enqueues); the rest on
 * the thread preparing a resume, before the run starts. A rec_replay is
 * read-only after rec_replay_load and may be shared by threads.
 */

#define REC_CKPT_FORMAT_VERSION 1

/* Enqueues c as its run's latest checkpoint; the writer fsyncs fds (the
 * sink files) before committing it. gen (if not NULL) receives the queue
 * generation it went into (rec_queue_gen). */
int rec_ckpt_put(rec_env *env, const Elspeth__Checkpoint *c, const int *fds,
	     size_t nfds, uint64_t *gen);
/* The latest checkpoint of run: 0, REC_NOTFOUND (err set, saying so), or
 * an error. Free with rec_ckpt_free. */
int rec_ckpt_load(rec_env *env, uint64_t run, Elspeth__Checkpoint **out,
	      core_err *err);
void rec_ckpt_free(Elspeth__Checkpoint *c); /* NULL allowed */

/* The first ids a resume may use: above every token, node state (calls
 * included: they are recorded before their state) and batch of the run. */
int rec_ckpt_next_ids(rec_env *env, const Elspeth__Checkpoint *c,
		  uint64_t *token, uint64_t *state, uint64_t *batch,
		  core_err *err);

/* Resumes recorded for the run so far (the next attempt is this + 1). A
 * read error is returned with its own code, its message in err. */
int rec_resume_count(rec_env *env, uint64_t run, uint32_t *n, core_err *err);

/* Marks the work of the crashed attempt that the resume redoes as
 * superseded by `attempt`: every token created after the checkpoint
 * (id >= c->next_token_id, below token_end) and every token of a row
 * after released_through_seq that the checkpoint does not hold as done;
 * batches flushed after the checkpoint get status "superseded". Enqueues
 * the records; *tokens receives the count. */
int rec_ckpt_supersede(rec_env *env, const Elspeth__Checkpoint *c,
		   uint32_t attempt, uint64_t token_end, uint64_t batch_end,
		   uint64_t *tokens, core_err *err);

/* The successful answers recorded for rows the resume runs again (rows
 * after released_through_seq not done at the checkpoint), by (row, node,
 * request hash). */
typedef struct rec_replay rec_replay;
int rec_replay_load(rec_env *env, const Elspeth__Checkpoint *c,
		     rec_replay **out, core_err *err);
size_t rec_replay_size(const rec_replay *r);
/* The answer for a request; *resp is a malloc'd copy. */
bool rec_replay_find(const rec_replay *r, uint64_t row, uint32_t node,
		      const char *request_hash, char **resp, size_t *len,
		      const char **from);
void rec_replay_free(rec_replay *r); /* NULL allowed */

/* ------------------------------------------- payload store (ADR 0028)
 *
 * payload_store.backend: filesystem. After rec_payload_store_open, a
 * row's payloads (rec_story_payload) are written to content-addressed
 * files under dir (DIR/ab/abcd..., ELSPETH's layout: written under a
 * temporary name and renamed into place before the call returns; made
 * durable by one syncfs() of their filesystem before the transaction
 * that names them commits, not one fsync each) and its story keeps only
 * the hashes its records name. dir (made absolute) is listed in REC_META
 * so that every reader of the Landscape finds the files: rec_get_payload
 * falls back to them. Call before the run starts, from one thread.
 */
int rec_payload_store_open(rec_env *env, const char *dir, core_err *err);
/* DIR/ab/abcd... for hex (out: cap bytes). */
void rec_payload_file_path(const char *dir, const char *hex, char *out, size_t cap);
/* True when `elspeth purge` deleted the payload hex of run (its hash is
 * kept): what explain and verify say of a payload rec_get_payload cannot
 * find. A later run that stored the same bytes is not covered. */
bool rec_payload_purged(rec_txn *t, uint64_t run, const char *hex);
typedef struct rec_purge_mark {
	uint64_t run;
	char hex[CORE_SHA256_HEX_LEN + 1];
} rec_purge_mark;
/* Marks payloads of runs purged (before their files are deleted); what:
 * a note stored with each mark (when, why). */
int rec_payload_mark_purged(rec_env *env, const rec_purge_mark *m, size_t n,
			    const char *what, core_err *err);

/* The payloads a purge may delete: those named by the rows of runs that
 * completed before now_ns - retention_days (failed and interrupted runs
 * are kept: a resume needs their payloads) and by no other run. */
typedef struct rec_purge_plan {
	char **hex;                  /* n SHA-256 hex strings: the files */
	size_t n;
	rec_purge_mark *marks;       /* each expired run's share of them */
	size_t nmarks;
} rec_purge_plan;
int rec_purge_find(rec_env *env, long long retention_days, uint64_t now_ns,
		   rec_purge_plan *plan, core_err *err);
void rec_purge_plan_release(rec_purge_plan *plan); /* NULL allowed */

#endif /* ELSPETH_RECORDER_H */

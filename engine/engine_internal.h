/*
 * engine_internal.h — the stages of a run, shared by the engine's files.
 *
 *   run.c            eng_run: open the graph's plugins, run, close, record
 *   pipeline.c       the workers and the calling thread of a run
 *   source_puller.c  reading rows ahead and starting them (the pull role)
 *   release_queue.c  releasing DONE rows in seq order, and checkpoints
 *                    between release passes (the release role)
 *   walk.c           one row's tokens through the graph (in a worker)
 *   coalesce.c       joining a fork's branch tokens
 *   aggregate.c      aggregation buffers, triggers and flushes
 *   emit.c           one released row's terminal tokens: outcome recorded,
 *                    sink written, artifact recorded
 *   audit.c          what is recorded in the Landscape
 *   checkpoint.c     checkpoint capture: when one is due, what it holds
 *   resume.c         eng_resume: resume planning and restore
 *
 * pipeline_internal.h holds what only the three pipeline files share
 * (pipeline.c, source_puller.c, release_queue.c); walk_internal.h what
 * only walk.c and coalesce.c share (a token on the move, coalesce groups).
 */
#ifndef ELSPETH_ENGINE_INTERNAL_H
#define ELSPETH_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/engine.h"
#include "recorder/recorder.h"

typedef char eng_hash[CORE_SHA256_HEX_LEN + 1];

struct eng_result;

/* A row as pulled from the source. */
typedef struct eng_row {
	uint64_t seq;
	/* Its source: the index of its node (graph->nodes[source]) and its
	 * 0-based index among that source's rows (ADR 0044). */
	unsigned source;
	uint64_t source_index;
	json_t *data;      /* owned */
	char *error;       /* validation failure, or NULL (owned) */
	char *where;       /* "line 17" or NULL (owned) */
	char *reason;      /* with error: 0.7.1's message for it, or NULL
			    * (owned; plg_source_row.reason) */
	eng_hash hash;     /* of data (audit on) */
	plg_source_pos pos;/* the source's position after this row */
	bool has_pos;
	plg_source_pos before; /* resume: before it (a running row) */
	bool has_before;
	/* Set (release order) once the row's record is enqueued: a
	 * checkpoint may name it from then on. */
	atomic_bool recorded;
	/* Resume: the row was done at the checkpoint; this is its result,
	 * released as it is (owned; NULL: process the row). */
	struct eng_result *ready;
} eng_row;

/* Where a terminal token goes at release. */
typedef enum eng_dest_kind {
	ENG_TO_SINK,       /* write to sink `node` */
	ENG_TO_DISCARD,    /* nothing written; outcome recorded */
	ENG_TO_AGG         /* buffer in aggregation `node` */
} eng_dest_kind;

/* One terminal token of a processed row, in release order. */
typedef struct eng_token {
	uint64_t token_id;
	eng_dest_kind to;
	int node;          /* sink or aggregation node id */
	eng_outcome outcome;
	json_t *data;      /* owned; NULL for a discard */
	eng_hash hash;     /* of data (audit on) */
	unsigned step;     /* steps taken so far */
	char *error;       /* owned; the error the token carries, or NULL */
	const char *branch;/* fork branch, for the record */
	uint64_t home;     /* the row whose story holds its records (the row
			    * it was created in); 0: the result's row */
	char order_key[17];/* ELSPETH 0.7.1's error_hash of the error that
			    * sent it to its sink ("" none): a held sink's
			    * rows are written in this order (aggregate.c) */
} eng_token;

/* Everything release needs for one row. */
typedef struct eng_result {
	uint64_t seq;
	bool batch;        /* batch outputs, not a source row */
	bool failed;       /* a transform (or batch) failed for this row */
	unsigned retries;
	size_t ntokens, cap;
	eng_token *tokens;
} eng_result;

int eng__result_add(eng_result *res, const eng_token *t);
void eng__row_release(eng_row *r);
void eng__result_release(eng_result *r);

/* --------------------------------------------------------------- audit */

/* The engine's side of the Landscape for one run. All functions are
 * no-ops returning 0 when rec is NULL (audit off). Thread-safe. */
typedef struct eng_audit {
	rec_env *rec;
	dag_graph *g;
	uint64_t run_id;
	uint64_t started_ns;
	const char *settings_path;
	eng_hash topology_hash;
	int lock_fd;             /* rec_run_lock, held while the run runs */
	const eng_shard *shard;  /* recorded with the run; NULL: none */
	atomic_uint_fast64_t next_token;
	atomic_uint_fast64_t next_state;
	atomic_uint_fast64_t next_batch;
	const eng_opts *opts;    /* the run's: its event callback */
} eng_audit;

/* Whether the run's caller wants events of kind k (eng_opts.event). */
static inline bool eng__wants(const eng_audit *a, eng_event_kind k)
{
	return a->opts && a->opts->event && (a->opts->event_mask & (1u << k));
}
/* Stamps ev (time, run) and hands it to the caller, if wanted. */
void eng__event(const eng_audit *a, eng_event *ev);

/* One visit of a token to a node. */
typedef struct eng_state {
	uint64_t id;          /* from eng__audit_state_id, or 0: a new one */
	uint64_t seq;         /* the row whose story holds it */
	uint64_t token_id;
	int node;
	unsigned step, attempt;
	bool ok;
	const char *in_hash, *out_hash;
	uint64_t started_ns, completed_ns;
	const char *error;
	const char *context_json;
} eng_state;

int eng__audit_start(eng_audit *a, rec_env *rec, dag_graph *g,
		     const char *settings_path, const eng_shard *shard,
		     core_err *err);
int eng__audit_finish(eng_audit *a, const eng_summary *sum, const char *status,
		      const char *error, const char *metrics_json,
		      core_err *err);
/* The topology hash eng__audit_start records, computed only. */
int eng__topology_hash(dag_graph *g, eng_hash out, core_err *err);
/* Continues run (a resume): status running again, ids from next[]
 * (token, state, batch). */
int eng__audit_resume(eng_audit *a, rec_env *rec, dag_graph *g,
		      const char *settings_path,
		      const eng_shard *shard, const Elspeth__RunRecord *run,
		      const uint64_t next[3], core_err *err);
/* Hashes v (and stores it as a payload of row seq's story when audit is
 * on). */
int eng__audit_payload(eng_audit *a, uint64_t seq, const json_t *v,
		       eng_hash out, core_err *err);
/* Records the row (its payload, its first token, a validation error). */
int eng__audit_row(eng_audit *a, eng_row *row, uint64_t *token_id,
		   core_err *err);
/* A new token of row_id, child of parent (0: none) at ordinal. */
uint64_t eng__audit_token(eng_audit *a, uint64_t row_id, uint64_t parent,
			  unsigned ordinal, const char *branch);
void eng__audit_parent(eng_audit *a, uint64_t seq, uint64_t token,
		       uint64_t parent, unsigned ordinal);
/* Reserves a node state id (so calls can be recorded under it before the
 * state itself); 0 when audit is off. */
uint64_t eng__audit_state_id(eng_audit *a);
uint64_t eng__audit_state(eng_audit *a, const eng_state *st);
/* One outside call made during node state state_id (plugins.h). */
void eng__audit_call(eng_audit *a, const eng_state *st, uint64_t seq,
		     unsigned index, const plg_call *call);
/* A gate decision: the edge labelled `edge` (a route key or a fork
 * branch), the condition's result as the reason. */
void eng__audit_route(eng_audit *a, uint64_t seq, uint64_t state_id,
		      const dag_node *gate,
		      const char *edge, const char *reason, const char *mode,
		      unsigned ordinal);
void eng__audit_transform_error(eng_audit *a, const eng_state *st,
				uint64_t state_id, const core_err *e);
/* The terminal (or intermediate: FORKED ...) outcome of a token. */
void eng__audit_outcome(eng_audit *a, uint64_t seq, const eng_token *t);
void eng__audit_artifact(eng_audit *a, uint64_t seq, const eng_token *t,
			 const plg_write_info *info, uint64_t started_ns);
/* Row seq is released: its story is written (docs/audit.md). */
void eng__audit_seal(eng_audit *a, uint64_t seq);
uint64_t eng__audit_batch(eng_audit *a, int node, const char *trigger,
			  uint64_t trigger_seq, const uint64_t *members,
			  size_t n, uint64_t created_ns);

/* --------------------------------------------------------------- stages */

typedef struct eng_aggs eng_aggs;
typedef struct eng_replay eng_replay;
typedef struct eng_pre eng_pre;

/* Checkpointing of a run (checkpoint.c; NULL in eng_ctx: off). */
typedef struct eng_ckpt {
	int frequency;             /* CORE_CKPT_* */
	uint64_t interval;         /* rows, every_n */
	bool boundaries;           /* also after each batch flush */
	uint64_t last;             /* rows released at the last one */
	uint64_t batches;          /* batches flushed at the last one */
	uint32_t attempt;          /* 0: a run, n: its n-th resume */
	uint64_t written;
	uint64_t gen;              /* audit queue generation of the last one */
} eng_ckpt;

/* The scalar run totals a checkpoint carries: fields of the same name in
 * eng_summary and in CheckpointTotals (saved by engine/checkpoint.c,
 * restored by engine/resume.c). */
#define ENG_CKPT_TOTALS(X) \
	X(rows) X(succeeded) X(failed) X(quarantined) X(discarded) \
	X(retries) X(diverted) X(batches)

/* One unreleased row for a checkpoint: done (res set) or running. */
typedef struct eng_ckpt_row {
	const eng_row *row;
	const struct eng_result *res; /* NULL: still being processed */
	plg_source_pos before;     /* the source before the row */
	bool has_before;
} eng_ckpt_row;

/* Where the pipeline stands, for a checkpoint. */
typedef struct eng_ckpt_at {
	const char *reason;        /* interval | aggregation | interrupt | end */
	uint64_t released;         /* rows 1..released are in the sinks */
	uint64_t frontier;         /* rows after it are read from the source */
	plg_source_pos pos;        /* the source after row `frontier` */
	bool has_pos;
	bool source_done;
	const eng_ckpt_row *rows;  /* released+1 .. frontier */
	size_t nrows;
} eng_ckpt_at;

/* The run's metric samples (sample.c, docs/report.md): the calling
 * thread's alone. */
typedef struct eng_sampler {
	uint64_t every_ns;
	uint64_t next_mono;        /* the next one is due (0: at once) */
	uint32_t attempt, index;
	size_t nups;               /* entries of ups used by a sample */
	eng_sample_upstream *ups;  /* scratch: one per node */
	Elspeth__SampleUpstream *rups;  /* their records */
	Elspeth__SampleUpstream **rupp;
	eng_sample_node *nodes;    /* scratch: one per node */
} eng_sampler;

/* One node's durations (eng_sample_node), counted by the threads that
 * run it: each bucket holds the visits that fell in it (not cumulative). */
typedef struct eng_hist {
	atomic_uint_fast64_t count, sum_ns;
	atomic_uint_fast64_t b[ENG_DURATION_BUCKETS];
} eng_hist;

/* Where the pipeline stands, for a sample. */
typedef struct eng_sample_at {
	uint64_t pulled, released; /* highest seqs */
	uint64_t in_flight, waiting;
	uint64_t waiting_bytes;
	const char *held_by;       /* static: eng__pl_hold_name() */
	uint64_t outcomes[ENG_OUTCOME_LAST];
	bool final;
} eng_sample_at;

/* What the stages share. */
typedef struct eng_ctx {
	dag_graph *g;
	eng_audit *audit;
	atomic_int *stop;
	eng_aggs *aggs;            /* release side only */
	const eng_opts *opts;      /* progress reporting; may be NULL */
	uint64_t t0_mono;
	/* A worker is about to wait / is done waiting (plg_ctx.blocking);
	 * set by the pipeline, may be NULL. */
	void (*blocking)(void *arg, bool begin);
	void *blocking_arg;
	atomic_uint_fast64_t calls, calls_ok, calls_replayed;
	atomic_uint_fast64_t retries;    /* extra attempts, for samples */
	atomic_uint_fast64_t ckpts;      /* checkpoints written, for samples */
	eng_hist *hist;                  /* per node while sampling, or NULL */
	atomic_uint_fast64_t calls_by_class[ENG_CALL_CLASSES];
	eng_ckpt *ckpt;            /* NULL: no checkpoints */
	eng_sampler *sampler;      /* NULL: no samples (audit off) */
	/* What reads the rows once the source is open (sources.c): the
	 * plugin's ops, or the chain of several sources' */
	const plg_source_ops *sops;
	void *src;                 /* its state, while the run reads it */
	/* A new run: per node, whether its sink's file did not exist before
	 * the run (sink_paths.c); NULL for a resume or a shard. */
	bool *sink_fresh;
	/* resume (resume.c): answers to reuse, the checkpoint's unreleased
	 * rows to go first, and where the pipeline starts */
	eng_replay *replay;
	eng_pre *pre;
	struct eng_resume *resume; /* NULL: a new run */
	uint64_t start_seq;        /* rows 1..start_seq were released */
	plg_source_pos start_pos;  /* the source's position there */
	bool has_start_pos;
	/* A shard (eng_opts.shard): no row after last_seq is pulled. */
	bool limited;
	uint64_t last_seq;
	/* plg_ctx.halt (run.c), called from any thread: the first call
	 * moves `halt` from ENG_HALT_NONE to ENG_HALT_WRITING, fills
	 * halt_code and halt_msg, publishes them (ENG_HALT_SET, release)
	 * and only then sets *stop. Readers load `halt` (acquire) first. */
	atomic_int halt;
	int halt_code;
	char halt_msg[1024];
	atomic_int own_stop;       /* *stop when the caller gave no flag */
} eng_ctx;

/* Counts a visit of node `node` that took ns, when the run samples. */
void eng__hist_add(eng_ctx *c, int node, uint64_t ns);

enum { ENG_HALT_NONE, ENG_HALT_WRITING, ENG_HALT_SET };

/* checkpoint.c */
/* Whether a checkpoint is due after rows up to `released` went out. */
bool eng__ckpt_due(const eng_ctx *c, uint64_t released, const eng_summary *sum);
/* Writes a checkpoint (the release role is held: sinks, aggregations and
 * sum are stable): enqueued without waiting; the writer fsyncs the sinks
 * before it commits it with the records enqueued before it. */
int eng__ckpt_write(eng_ctx *c, const eng_ckpt_at *at, const eng_summary *sum,
		    core_err *err);
/* sample.c */
/* Sets up sampling for the run of c (attempt 0, or the resume's); a
 * no-op leaving c->sampler NULL when audit is off. */
int eng__sampler_init(eng_ctx *c, eng_sampler *s, uint32_t attempt,
		      core_err *err);
void eng__sampler_release(eng_ctx *c);
/* Whether a sample is due at now (monotonic ns); false when off. */
bool eng__sample_due(const eng_ctx *c, uint64_t now);
/* Records a sample of `at`, the run's call counters and each transform's
 * capacity control (calling thread, no engine lock held: it takes the
 * plugins' locks and may wait for room in the recorder's queue). */
void eng__sample(eng_ctx *c, const eng_sample_at *at);
/* run.c: everything of a run after its audit record is started. */
int eng__shard_setup(eng_ctx *c, const eng_shard *sh, core_err *err);
/* sources.c: opens every source of g (all of them before any row is
 * read) as one: *ops reads them one after another in the settings'
 * order, tagging each row with its source (plg_source_row.source);
 * with one source, *ops are its plugin's. Close with (*ops)->close. */
int eng__sources_open(const dag_graph *g, const plg_source_ops **ops,
		      void **state, core_err *err);
/* Source i's field resolution (its plugin's `fields`: how it named its
 * fields, a new reference, or NULL: none), for the state
 * eng__sources_open gave. */
/* Source i's own state (a plugin's, inside the chain of several), of
 * the state eng__sources_open gave. */
void *eng__sources_inst(const dag_graph *g, void *state, unsigned i);
/* For ELSPETH's `headers: original` (names.c): {sink options path:
 * {field: its source's name}} for the sinks that ask, once the sources
 * are open; NULL when none asks (or out of memory: the names stay). */
json_t *eng__original_names(const dag_graph *g, void *src);
json_t *eng__sources_fields(const dag_graph *g, void *state, unsigned i,
			    const char **version);
/* sink_paths.c: the files sinks write, settled before the trail records
 * them (a resume's are those the sinks' node records name, resume.c): a
 * new run's collision_policy auto_increment picks a free sibling of an
 * existing file, fail_if_exists refuses one. */
int eng__sink_paths_new(eng_ctx *c, core_err *err);
/* After a completed run in ELSPETH 0.7.1's format: removes the file of
 * each file sink (csv, json, text; not appending) that got no row in the
 * whole run, as 0.7.1 never creates one. */
void eng__sink_paths_unused(eng_ctx *c, const eng_summary *sum);
int eng__run_ctx(eng_ctx *c, eng_summary *sum, core_err *err);
/* The rows in flight a run uses: o's, else the settings' (1 when the
 * settings do not pipeline). */
unsigned eng__rows_in_flight(const dag_graph *g, const eng_opts *o);
/* g's plg_env.run_key for run run_id started at started_ns (wall
 * clock, as its run record keeps it): the same for the run and its
 * resumes. run_id 0: not recorded (""). */
void eng__set_run_key(dag_graph *g, uint64_t run_id, uint64_t started_ns);
/* plg_ctx.halt for the run of c: thread-safe, the first call wins;
 * stops the run as SIGINT does (sets *c->stop). */
void eng__halt(eng_ctx *c, int exit_code, const char *msg);
/* Whether the run was halted (its code and message are readable). */
bool eng__halted(eng_ctx *c);

/* resume.c */
/* Sinks reopened at the checkpoint, the source moved on. */
int eng__resume_open(eng_ctx *c, void *src, core_err *err);
/* Aggregation buffers, plugin states and totals put back. */
int eng__resume_restore(eng_ctx *c, eng_summary *sum, core_err *err);
uint32_t eng__resume_attempt(const eng_ctx *c);
void eng__resume_finish(eng_ctx *c, eng_summary *sum, const char *status);
/* The next of the checkpoint's unreleased rows (seq must be the next):
 * 1, or 0 when they are all out. */
int eng__pre_next(eng_ctx *c, uint64_t seq, eng_row *row);
/* The last of them (0: none, or not a resume). */
uint64_t eng__pre_last(const eng_ctx *c);
/* plg_ctx.replay for row seq at node. */
bool eng__replay_find(eng_ctx *c, uint64_t seq, int node, const void *req,
		      size_t len, char **resp, size_t *resp_len,
		      const char **from);

/* Calls c->blocking when set. */
void eng__blocking(eng_ctx *c, bool begin);

/* What a plugin gets to make calls during node state *st of row seq: its
 * calls are recorded under st (whose id is reserved, eng__audit_state_id)
 * and counted. walk.c fills one per transform attempt; aggregate.c one
 * per member of an aggregation that calls out (flush_calls). */
typedef struct eng_call_ctx {
	plg_ctx base;           /* first: the plugin sees only this */
	eng_ctx *c;
	eng_audit *audit;
	const eng_state *st;    /* id, token, node */
	atomic_uint next_call;
} eng_call_ctx;
/* Sets up cc for st (which must outlive it): record_call and halt, the
 * settings' retry policy, stop (may be NULL); no blocking, no replay. */
void eng__call_ctx_init(eng_call_ctx *cc, eng_ctx *c, const eng_state *st,
			atomic_int *stop);

/* Stage 2 (a worker): walks the row's tokens through the graph; fills res
 * with its terminal tokens in release order. A row error with nowhere to
 * go is returned naming seq and node (the row's token is FAILED). */
int eng__process_row(eng_ctx *c, eng_row *row, eng_result *res,
		     core_err *err);
/* Walks the row (or, for a resume's done row, takes its result). */
int eng__row_run(eng_ctx *c, eng_row *row, eng_result *res, core_err *err);
/* Walks an existing token from dest (batch outputs, on the release side);
 * seq names the row for messages. */
int eng__walk_from(eng_ctx *c, uint64_t seq, uint64_t token_id, json_t *data,
		   const char *hash, unsigned step, dag_dest dest,
		   eng_result *res, core_err *err);

/* Writes one token to its sink now (audit first; a failed write goes to
 * the sink's on_write_failure or stops the run). */
int eng__write_token(eng_ctx *c, uint64_t seq, eng_token *t, eng_summary *sum,
		     core_err *err);
/* Stage 3: writes res's tokens in order (outcome before the write, the
 * artifact after), feeding aggregations; batch outputs follow at once. */
int eng__emit(eng_ctx *c, eng_result *res, eng_summary *sum,
		 core_err *err);

/* walk.c: a copy of row for the sink an error routes it to, with
 * `_error_node` and `_error` unless that sink's schema is fixed (ADR
 * 0003); NULL when out of memory. */
json_t *eng__with_error(const json_t *row, const dag_node *sink,
			const char *node, const char *msg);
/* aggregate.c (release side) */
int eng__aggs_init(eng_ctx *c, core_err *err);
void eng__aggs_free(eng_ctx *c);
/* Buffers a token; flushes when a count or condition trigger fires. */
int eng__agg_accept(eng_ctx *c, uint64_t seq, eng_token *t,
		    eng_summary *sum, core_err *err);
/* Held sinks (a 0.7.1-format run's error sinks: written at the end of
 * the run, sorted as 0.7.1 sorts them; ADR 0048): whether node is one,
 * and taking t (its data and error) into its buffer. */
bool eng__held_sink(const eng_ctx *c, int node);
int eng__hold_accept(eng_ctx *c, uint64_t seq, eng_token *t, core_err *err);
/* 0.7.1's error_hash into key: the first 16 hex digits of the SHA-256 of
 * str(reason) (a dict as Python's repr, in its key order) when reason is
 * given, else of msg. */
void eng__order_key(const json_t *reason, const char *msg, char key[17]);
/* Flushes batches whose timeout passed (now_ns), or all (end of source,
 * then the held sinks). */
int eng__aggs_tick(eng_ctx *c, uint64_t now_ns, uint64_t seq, bool all,
		   eng_summary *sum, core_err *err);
/* The earliest timeout deadline (monotonic ns), or 0. */
uint64_t eng__aggs_deadline(eng_ctx *c);
/* Whether any aggregation has a timeout trigger (fixed for a run). */
bool eng__aggs_timed(const eng_ctx *c);
/* Checkpoints: the buffers, one by one (members in seq order, the age of
 * the oldest), and putting members back on resume (no trigger fires). */
size_t eng__aggs_count(const eng_ctx *c);
const dag_node *eng__aggs_get(const eng_ctx *c, size_t i,
			      const eng_token **members, const uint64_t **seqs,
			      size_t *n, uint64_t *age_ns);
int eng__aggs_put_back(eng_ctx *c, uint64_t seq, eng_token *t, uint64_t age_ns,
		       core_err *err);
/* ... and the i-th's run-wide counts (plg_batch), kept by checkpoints. */
void eng__aggs_counts(const eng_ctx *c, size_t i, uint64_t *accepted,
		      uint64_t *flushes);
int eng__aggs_set_counts(eng_ctx *c, int node, uint64_t accepted,
			 uint64_t flushes, core_err *err);

/* pipeline.c */
/* Runs the source through the graph with at most in_flight rows being
 * processed, at most cap rows unreleased (raised to in_flight if
 * smaller) and, when budget > 0, no new row started while the rows done
 * and waiting for their turn hold budget bytes or more (ADR 0029).
 * in_flight 1 is sequential mode. */
int eng__pipeline(eng_ctx *c, void *src, unsigned in_flight, unsigned cap,
		  size_t budget, eng_summary *sum, core_err *err);

#endif

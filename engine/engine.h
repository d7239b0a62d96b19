/*
 * engine.h — the public contract of elspeth's engine: runs a validated
 * graph from its source to its sinks.
 *
 * The run is shaped as docs/architecture.md §4: a source puller numbers rows
 * (seq = 1, 2, 3 ...), up to max_rows_in_flight rows are processed at
 * once (each row's tokens walk the graph on a worker thread), and the
 * release queue hands their terminal tokens to the sinks strictly in seq
 * order. With one row in flight (--sequential) everything runs on the
 * calling thread.
 *
 * Thread rules: eng_run and eng_resume block the calling thread until the
 * run ends; with more than one row in flight they start that many worker
 * threads and join them all before returning. The calling thread calls
 * the progress callback. *stop may be set from a signal handler (or any
 * thread) to stop pulling rows. A transform may stop the run itself
 * through plg_ctx.halt, from any thread while its process() runs: the
 * engine then sets *stop as SIGINT would (an internal flag when
 * o->stop is NULL) and reports the halt in eng_summary. One run per
 * graph at a time; several graphs may run at once in one process (what
 * the plugins know of their run is the graph's env, ADR 0032). The event
 * callback (eng_opts.event) is called on the thread that did the work.
 */
#ifndef ELSPETH_ENGINE_H
#define ELSPETH_ENGINE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "dag/dag.h"
#include "recorder/recorder.h"

/* The terminal outcomes of docs/architecture.md §5 invariant 3. */
typedef enum eng_outcome {
	ENG_COMPLETED,   /* reached a sink through on_success */
	ENG_ROUTED,      /* a gate (or an on_error) sent it to a sink */
	ENG_FAILED,      /* an error with on_error: discard, a failed join,
			  * or the run stopped on it */
	ENG_QUARANTINED, /* failed source validation */
	ENG_FORKED,      /* split into one child per fork branch */
	ENG_EXPANDED,    /* split into children by an expanding transform */
	ENG_COALESCED,   /* joined into a merged token */
	ENG_CONSUMED_IN_BATCH, /* an aggregation input (transform mode) */
	ENG_DIVERTED,    /* its sink write failed; sent to on_write_failure */
	ENG_OUTCOME_LAST
} eng_outcome;

const char *eng_outcome_name(eng_outcome o);

/* A snapshot for progress displays. */
typedef struct eng_progress {
	uint64_t pulled, released;  /* rows */
	uint64_t in_flight, waiting;
	uint64_t waiting_bytes;     /* what the waiting rows hold (estimate) */
	/* What keeps the next row from starting: "rows_in_flight" (N),
	 * "waiting_rows" (max_completed_waiting), "waiting_bytes" (the
	 * waiting budget), or "" (nothing: the rows' own work). Static. */
	const char *held_by;
	uint64_t failed, quarantined;
	double elapsed_s;
	uint64_t source_done, source_total; /* bytes read / size, 0 if unknown */
	bool final;                 /* the last call of the run */
} eng_progress;

/* A shard of a sharded run (docs/scale-out.md): rows first_seq..last_seq
 * of the source, numbered as in the whole run; the source starts at
 * `start`, its position before first_seq (from the shard plan). An empty
 * range has last_seq = first_seq - 1. */
typedef struct eng_shard {
	uint32_t index, count;       /* shard index (from 0) of count */
	uint64_t first_seq, last_seq;
	plg_source_pos start;
	const char *manifest_hash;   /* sha256 hex of the manifest's plan */
} eng_shard;

/* The largest rows in flight and waiting budget a run takes (a thread
 * per row in flight; the budget in MiB). eng_run and eng_resume refuse
 * more with CORE_ECONFIG, whoever the caller is. */
#define ENG_MAX_IN_FLIGHT 4096u
#define ENG_MAX_WAITING_MIB 1048576u

typedef struct eng_sample eng_sample; /* below */
typedef struct eng_event eng_event;   /* below */

typedef struct eng_opts {
	atomic_int *stop;            /* set (from a signal handler too: it is
				      * lock-free) to stop pulling; may be NULL */
	/* 1 = sequential; 0 = from settings; at most ENG_MAX_IN_FLIGHT */
	unsigned max_rows_in_flight;
	/* The waiting budget in MiB (--max-waiting-mib); 0: from settings;
	 * at most ENG_MAX_WAITING_MIB. Ignored when the settings give
	 * max_completed_waiting (a count). */
	unsigned max_waiting_mib;
	rec_env *rec;                /* the Landscape; NULL: audit off */
	const char *settings_path;   /* recorded with the run */
	/* Called on the calling thread about every progress_ms (and once at
	 * the end, with final set) when set, with no engine lock held: a slow
	 * callback delays later reports, not the rows. */
	void (*progress)(void *ctx, const eng_progress *p);
	void *progress_ctx;
	unsigned progress_ms;
	/* The run's metrics are sampled about every sample_ms (0: 1000) and
	 * at the end of each attempt, by the calling thread, when there is a
	 * Landscape (rec: into its table samples, docs/report.md) or a
	 * callback: `sample` is called with each, with no engine lock held
	 * (a slow one delays later samples and progress, not the rows). */
	unsigned sample_ms;
	void (*sample)(void *ctx, const eng_sample *s);
	void *sample_ctx;
	/* A shard's run: only its rows, numbered as in the whole run, and
	 * the run record says which shard it is. NULL: the whole source. */
	const eng_shard *shard;
	/* What happens to the run, its rows and their calls, as they
	 * happen (ELSPETH's telemetry events; docs/observability.md): called
	 * for each kind whose bit (1u << eng_event_kind) is in event_mask,
	 * on whichever thread did it — a worker, the release or the calling
	 * thread — with no engine lock held; it must be quick (copy and
	 * queue) and must not call back into the engine. */
	void (*event)(void *ctx, const eng_event *ev);
	void *event_ctx;
	unsigned event_mask;
} eng_opts;

/* 0 if o (NULL allowed) is within the bounds above, else CORE_ECONFIG
 * naming the option; eng_run and eng_resume call it first. */
int eng_opts_check(const eng_opts *o, core_err *err);

/* The failure classes of plugins.h (PLG_ERROR_CLASS_MAP), in its order,
 * then "other". A literal, not PLG_CLASS_LAST: checkpoints keep the counts
 * by index, so a new class changes their layout (walk.c asserts the two
 * agree). */
#define ENG_CALL_CLASSES 8

/* One transform's capacity control in a sample. */
typedef struct eng_sample_upstream {
	uint32_t node;             /* its node's index in the graph */
	const char *name;          /* its node's name */
	plg_capacity cap;
} eng_sample_upstream;

/* Node durations in a sample: how many visits of a transform (each
 * attempt), a gate or a sink write took at most each bound, cumulative
 * (Prometheus' `le` buckets; the last is +Inf). */
#define ENG_DURATION_BUCKETS 14
extern const double eng_duration_bounds[ENG_DURATION_BUCKETS]; /* seconds */
typedef struct eng_sample_node {
	const char *name;          /* the node's name */
	const char *kind;          /* "transform", "gate", "sink" */
	uint64_t count;
	double sum_s;
	uint64_t le[ENG_DURATION_BUCKETS];
} eng_sample_node;

/* A metric sample: where the pipeline stands, the token outcomes and
 * outside calls so far, and each LLM transform's capacity control — what
 * the Landscape's samples table keeps (docs/report.md). Pointers are
 * valid during the callback only. */
struct eng_sample {
	uint64_t run_id;           /* 0: the run is not recorded */
	uint32_t attempt;          /* 0: the run; n: its n-th resume */
	uint32_t index;            /* of this attempt's samples, from 0 */
	uint64_t at_ns;            /* wall clock */
	uint64_t elapsed_ns;       /* since the attempt started */
	bool final;                /* the attempt's last */
	uint64_t pulled, released; /* highest seqs */
	uint64_t in_flight, waiting, waiting_bytes;
	const char *held_by;       /* as eng_progress.held_by */
	uint64_t outcomes[ENG_OUTCOME_LAST]; /* tokens, by eng_outcome */
	uint64_t calls, calls_ok, calls_replayed;
	uint64_t calls_by_class[ENG_CALL_CLASSES]; /* eng_call_classes[] */
	size_t nupstreams;
	const eng_sample_upstream *upstreams;
	uint64_t retries;          /* extra attempts of transforms so far */
	uint64_t checkpoints;      /* written by this attempt so far */
	rec_activity rec;          /* the recorder (zeros with audit off) */
	size_t nnodes;             /* transforms, gates and sinks */
	const eng_sample_node *nodes;
};

/* Events (eng_opts.event). */
typedef enum eng_event_kind {
	ENG_EV_RUN_STARTED,  /* run_id (0: not recorded), settings hash */
	ENG_EV_PHASE,        /* phase, action */
	ENG_EV_FIELDS,       /* the source's field resolution: fields, version */
	ENG_EV_ROW_CREATED,  /* a source row that failed validation, sent to
			      * a sink: row, token, in_hash (its content) */
	ENG_EV_TRANSFORM,    /* a transform's result, after its retries: row,
			      * token, node, ok, duration_ns, in/out_hash */
	ENG_EV_GATE,         /* row, token, node, mode, dests */
	ENG_EV_TOKEN,        /* a token that ends without a sink write: row,
			      * token, outcome (FAILED, CONSUMED_IN_BATCH),
			      * discarded (its error went to 'discard') */
	ENG_EV_CALL,         /* an outside call: row, token, node, state, call */
	ENG_EV_RUN_FINISHED, /* status, rows, duration_ns */
	ENG_EV_LAST
} eng_event_kind;

/* One event; pointers are valid during the callback only. */
struct eng_event {
	eng_event_kind kind;
	uint64_t at_ns;             /* wall clock */
	uint64_t run_id;            /* 0: the run is not recorded */
	const char *settings_hash;  /* RUN_STARTED */
	const char *phase, *action; /* PHASE: ELSPETH's PipelinePhase and
				     * PhaseAction values */
	const json_t *fields;       /* FIELDS: one source's, node its node */
	const char *fields_version;
	uint64_t row, token;        /* the row's seq (its id) and the token */
	const dag_node *node;
	bool ok, discarded;
	uint64_t duration_ns;
	const char *in_hash, *out_hash; /* "" or NULL: not known (audit off) */
	const char *mode;           /* GATE: "move" or "copy" */
	const char *const *dests;   /* GATE */
	size_t ndests;
	eng_outcome outcome;        /* TOKEN */
	uint64_t state;             /* CALL: the node state's id (0: none) */
	const struct plg_call *call;
	const char *error;          /* TRANSFORM, not ok: why (its message) */
	const char *status;         /* RUN_FINISHED: eng_run_status */
	uint64_t rows;              /* RUN_FINISHED: source rows */
};

/* An outside service as a run used it (eng_summary.upstream). */
typedef struct eng_upstream_use {
	char name[128];            /* scheme://host:port; "" when none */
	unsigned slots;            /* announced by the server; 0: not */
	double busy_s, span_s;     /* slot time used, first send to last answer */
	double p50_s, p99_s;       /* recent answer times */
	uint64_t tail_cuts, hedges_sent, hedges_won;
} eng_upstream_use;

typedef struct eng_summary {
	uint64_t run_id;       /* 0 when audit is off */
	uint64_t rows;         /* source records pulled */
	uint64_t succeeded;    /* rows that reached sinks without error */
	uint64_t failed;       /* rows that failed a transform */
	uint64_t quarantined;  /* rows that failed source validation */
	uint64_t discarded;    /* of failed + quarantined: sent to 'discard' */
	uint64_t outcomes[ENG_OUTCOME_LAST];
	uint64_t *per_sink;    /* rows written, indexed by graph node id */
	uint64_t retries;      /* extra attempts made */
	uint64_t diverted;     /* tokens whose sink write failed */
	uint64_t batches;      /* aggregation batches flushed */
	/* pipeline metrics */
	unsigned in_flight;    /* the max_rows_in_flight used */
	unsigned max_waiting;  /* the waiting rows' count bound used */
	uint64_t waiting_budget;     /* the byte budget used, 0: none */
	uint64_t peak_waiting_bytes; /* the most the waiting rows held */
	uint64_t pulled;       /* rows pulled from the source */
	/* from the first row pulled to the last released: the pipeline's
	 * own time, without start-up (LMDB, threads) and shutdown */
	double pipeline_seconds;
	uint64_t peak_in_flight, peak_waiting;
	double fifo_wait_mean_ms, fifo_wait_max_ms;
	double source_blocked_s;   /* puller waiting for a free slot */
	double release_blocked_s;  /* release role busy emitting rows to sinks */
	double wall_seconds;
	bool interrupted;
	/* A transform halted the run (plg_ctx.halt; the first call wins):
	 * the exit code it asked for, 1 (the run failed: recorded as
	 * "failed") or 3 (recorded as "interrupted"; any other code counts
	 * as 1), and its message, which the run record keeps as its error.
	 * 0 and "" when not halted. A halted run stopped as an interrupted
	 * one does (interrupted is set too): the rows it cut short are in
	 * its last checkpoint, and `elspeth resume` finishes it. */
	int halt_code;
	char halt_msg[1024];
	/* outside calls (LLM requests), every attempt; by error class */
	uint64_t calls, calls_ok;
	uint64_t calls_by_class[ENG_CALL_CLASSES]; /* eng_call_classes[] */
	uint64_t calls_replayed; /* answers reused by a resume, not sent */
	/* checkpoints (ADR 0012) */
	uint64_t checkpoints;    /* written by this run (or resume) */
	uint32_t attempt;        /* 0: a run; n: its n-th resume */
	uint64_t rows_reused;    /* resume: completed rows released as they were */
	uint64_t rows_rerun;     /* resume: in-flight rows run again */
	uint64_t tokens_superseded;
	uint64_t replayed_now;   /* resume: answers this resume replayed */
	/* The outside service the run kept busiest (an LLM transform's
	 * upstream, as it stood at the end; "" when none): the server's
	 * capacity used is busy_s / (slots x span_s) where it announced its
	 * slots (slots > 0), and the tail control's work. */
	eng_upstream_use upstream;
} eng_summary;

/* The error classes of calls counted in eng_summary.calls_by_class. */
extern const char *const eng_call_classes[ENG_CALL_CLASSES];

/* Opens the source and sinks of g (transforms too if not open), runs every
 * row, closes the sinks. Returns 0 (also when interrupted or halted: see
 * sum->interrupted and sum->halt_code) or an error: a fatal source error,
 * a sink write error, a row error with nowhere to go (no on_error; a gate
 * condition that fails), each message naming the row (seq) and field. With o->rec, everything is
 * recorded (docs/audit.md) and the run's status is completed, failed or
 * interrupted (a halted run: failed or interrupted by its exit code, with
 * the halt's message as the run's error). sum->per_sink is malloc'd;
 * free with eng_summary_release(). */
int eng_run(dag_graph *g, const eng_opts *o, eng_summary *sum, core_err *err);
void eng_summary_release(eng_summary *sum);
/* The status a run that returned rc with sum is recorded with:
 * "failed" (an error, or a halt with exit code 1), "interrupted" (also
 * a halt with exit code 3) or "completed". */
const char *eng_run_status(int rc, const eng_summary *sum);

/* The hash of node n's configuration a run records (its options, or a
 * gate's condition and routes, canonical and without secrets), as 64 hex
 * digits and a NUL: ELSPETH's node ids end with its first 12. */
int eng_node_hash(const dag_node *n, char out[65], core_err *err);

/* The topology hash a run of g records (its nodes with their options,
 * and its edges), as 64 hex digits and a NUL. */
int eng_topology_hash(dag_graph *g, char out[65], core_err *err);

/* Opens g's sources as the engine reads them: one source's plugin, or
 * several one after another with one sequence, their positions naming
 * the source (ADR 0044). Close with (*ops)->close(*state). */
int eng_sources_open(const dag_graph *g, const plg_source_ops **ops, void **state,
		     core_err *err);

/* Resumes run `run_spec` (an id or "latest") of the Landscape o->rec from
 * its latest checkpoint (docs/architecture.md §9, docs/resume.md). First checks —
 * the run is not completed, its topology and settings hashes equal g's,
 * every sink file still holds what the checkpoint counted — and describes
 * what a resume would do in *plan (a JSON object the caller releases;
 * NULL allowed; "error": why the run stopped, when it recorded that).
 * Without `execute` that is all: nothing is written. With it, runs the
 * rest of the run as eng_run does (o->max_rows_in_flight may differ from
 * the crashed run's); sum holds the whole run's totals. */
int eng_resume(dag_graph *g, const eng_opts *o, const char *run_spec,
	       bool execute, json_t **plan, eng_summary *sum, core_err *err);

#endif /* ELSPETH_ENGINE_H */

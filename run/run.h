/*
 * run.h — the run library: a run (or a resume) of a built pipeline with
 * everything around the engine that a run needs, on a thread of its own,
 * observed while it goes, cancellable, and summarised at the end
 * (docs/architecture.md §4b; ADR 0030). The CLI is one user of it; a
 * server, a test or a language binding are others.
 *
 * What a job does, in order, on its thread:
 *   0. for a new run that is not a shard (a shard warns), runs the
 *      pipelines of the settings' depends_on (ADR 0027): all loaded and
 *      checked first (a cycle, a chain deeper than 3 or a file that does
 *      not load runs nothing), then each a whole run of its own through
 *      the steps below, after its own dependencies, between
 *      DEPENDENCY_STARTED and DEPENDENCY_ENDED events; one that does not
 *      complete fails the job;
 *   1. opens the settings' telemetry (telemetry/telemetry.h; ADR 0037):
 *      an exporter that cannot be configured fails the job before
 *      anything is recorded; its events, samples and warnings flow
 *      until the job's end, when it is flushed and closed (what it did
 *      in run_result.tel);
 *   1b. opens the Landscape (landscape.url parsed once, at load; or the
 *      `database` the caller names) for writing — a resume only into one
 *      that exists — and checks that the SQL trail's file can be one;
 *   2. opens the payload store (payload_store);
 *   3. runs the engine (eng_run, or eng_resume of cfg.resume), with,
 *      for a sqlite:/// or postgresql:// landscape url, a thread beside
 *      it that writes the released rows into the SQL trail every 250
 *      ms (the live trail, ADR 0041; what it did in run_result.live);
 *   4. brings the SQL trail up to date (the live trail's last step, or
 *      a whole export);
 *   5. writes the landscape journal (dump_to_jsonl) and, after a run that
 *      completed, landscape.export;
 *   6. closes the Landscape.
 * Each step is reported to the observer as ELSPETH's phase events
 * (database, process, export), progress as the engine reports it.
 *
 * A shard of a plan (docs/scale-out.md) is opened with run_shard_open,
 * which says what its run is and sets what the graph's plugins need
 * (part directory, capacity share); its info fills run_cfg.
 *
 * A pipeline comes from run_load (a settings file) or run_load_text (a
 * settings text, e.g. posted to a server), checked by run_validate as
 * `elspeth validate` checks it, before run_start.
 *
 * Several jobs may run at once in one process, each on its own graph:
 * what the plugins know of their run is the graph's (dag_graph.env,
 * ADR 0032); the HTTP executor is shared by them.
 *
 * Thread rules: run_start returns once the job's thread is started; the
 * observer is called on that thread, in event order, with no lock held
 * (a slow observer delays the run's later events, not its rows).
 * run_cancel may be called from any thread at any time before run_free
 * (it is what SIGINT does: rows in flight finish, a final checkpoint is
 * written, the run can be resumed). run_wait joins the thread.
 */
#ifndef ELSPETH_RUN_H
#define ELSPETH_RUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "dag/dag.h"
#include "engine/engine.h"
#include "telemetry/telemetry.h"

typedef struct run_job run_job;

typedef enum run_event_kind {
	RUN_EV_PHASE_STARTED,    /* phase, action, target */
	RUN_EV_PHASE_COMPLETED,  /* phase, seconds */
	RUN_EV_PHASE_ERROR,      /* phase, target, error */
	RUN_EV_PROGRESS,         /* progress */
	RUN_EV_SQL_TRAIL_FAILED, /* target (the SQL file), error, run_id */
	RUN_EV_WARNING,          /* error: what went wrong that the run survives */
	RUN_EV_SAMPLE,           /* sample: the engine's metric sample, about
				  * once a second and at the end */
	RUN_EV_DEPENDENCY_STARTED, /* target (its name), path, graph */
	RUN_EV_DEPENDENCY_ENDED,   /* target, path, graph, result: how it
				    * ended (rc; sum.interrupted, halt_code) */
	RUN_EV_ROW_FAILED,       /* with run_cfg.row_failures: a transform
				  * failed a row for good — run_id, row, target
				  * (the node's name), error; called on the
				  * worker that failed it: be quick */
	RUN_EV_LAST
} run_event_kind;

/* One event. Strings and progress are valid during the callback only. */
typedef struct run_event {
	run_event_kind kind;
	const char *phase;       /* "database", "process", "export" */
	const char *action;      /* "connecting", "processing", "exporting" */
	const char *target;      /* what the phase works on; may be NULL */
	const char *error;
	double seconds;          /* PHASE_COMPLETED: the phase's duration */
	uint64_t run_id;
	const eng_progress *progress;
	const eng_sample *sample;
	const char *path;         /* a dependency's settings file */
	const dag_graph *graph;   /* a dependency's pipeline */
	const struct run_result *result; /* DEPENDENCY_ENDED */
	uint64_t row;             /* ROW_FAILED: the row's number */
} run_event;

typedef struct run_cfg {
	dag_graph *graph;         /* built and validated; borrowed until run_free */
	const char *settings_path;/* recorded with the run; may be NULL */
	const char *database;     /* a Landscape landscape.url does not name
				   * (an LMDB directory, or a SQL trail file
				   * with its Landscape beside it), or NULL */
	const char *resume;       /* a run id or "latest" to finish; NULL: a
				   * new run */
	unsigned max_rows_in_flight; /* 0: from the settings; 1: sequential */
	unsigned max_waiting_mib;    /* 0: from the settings */
	const eng_shard *shard;   /* a shard's rows only, or NULL */
	/* A stop flag the caller also sets (a signal handler: lock-free),
	 * or NULL: the job's own. run_cancel sets whichever it is. */
	atomic_int *stop;
	void (*observe)(void *ctx, const run_event *ev); /* may be NULL */
	void *observe_ctx;
	unsigned progress_ms;     /* progress events about this often; 0: none */
	bool row_failures;        /* RUN_EV_ROW_FAILED events too */
	/* Serve the run's metrics for Prometheus at this address while the
	 * job lives (GET /metrics, the text format; ADR 0033):
	 * "HOST:PORT", "[IPv6]:PORT", or "PORT" on 127.0.0.1; port 0 picks
	 * one (run_metrics_port). NULL: none. */
	const char *metrics_listen;
} run_cfg;

/* The live SQL trail of a run whose landscape url is sqlite:/// or
 * postgresql:// (ADR 0041): the engine's released rows written into it
 * about every quarter second while the run goes on. */
typedef struct run_live_stats {
	bool on;                  /* it was followed */
	uint64_t steps;           /* transactions written */
	uint64_t failures;        /* steps that failed (the database away) */
	uint64_t rows;            /* rows it held when the run stopped,
				   * before its last step */
	bool finished;            /* the last step brought it up to date
				   * (else a whole export did, or failed) */
	/* The longest a released row waited for the database, from the
	 * progress report that told of it (at most LIVE_PROGRESS_MS after
	 * its release) to the commit that wrote it. */
	double max_behind_s;
	char last_error[1024];    /* the last failure's message, or "" */
} run_live_stats;

/* How a job ended (run_wait). */
typedef struct run_result run_result;
struct run_result {
	int rc;                   /* 0, or the run's failure (err) */
	core_err err;
	bool engine_ran;          /* the engine was started (else the job
				   * failed before: the Landscape) */
	eng_summary sum;          /* the engine's; valid when rc is 0 or the
				   * run started (sum.run_id); released by
				   * run_free */
	/* The run is recorded, but bringing the SQL trail (sql) up to date
	 * failed (sql_err), or the journal (with fail_on_error) or
	 * landscape.export did (after_err). The run's own result is
	 * unchanged. */
	bool sql_failed, after_failed;
	core_err sql_err, after_err;
	/* The settings' telemetry (ADR 0037): what it did, and, when every
	 * exporter failed max_consecutive_failures times in a row with
	 * fail_on_total_exporter_failure on, tel_failed and why (ELSPETH
	 * then exits 1 though the run is recorded as it ended). */
	bool telemetry;
	tel_stats tel;
	bool tel_failed;
	core_err tel_err;
	run_live_stats live;      /* the live SQL trail, when there is one */
	bool audit;               /* the run was recorded (landscape on) */
	char landscape[4096];     /* the LMDB directory, "" with audit off */
	char sql[4096];           /* the SQL trail's file or postgresql://
				   * url (its password too), "" when none */
	char sql_shown[4096];     /* sql as messages show it: no password */
};

/* The LMDB directory of a Landscape the caller names (--database PATH):
 * PATH itself, or, when PATH is a file (the SQL trail of a sqlite:///
 * url) or a file not there yet whose PATH.lmdb is, PATH.lmdb beside it,
 * with sql receiving PATH ("" otherwise). CORE_ECONFIG: too long. */
int run_database_paths(const char *database, char *lmdb, size_t cap, char *sql,
		       size_t scap, core_err *err);

/* ------------------------------------------------------------- pipelines */

/* Loads the settings file at path (run_load) or the settings text yaml,
 * named `name` in messages (run_load_text), and builds the pipeline
 * (dag_build): keys and types, plugins, gate conditions, connections,
 * cycles, reachability and every edge's schema contract. On success *s
 * and *g are the caller's (dag_free first, then core_settings_free).
 * CORE_ECONFIG naming file:line:col and the key; CORE_EIO: unreadable. */
int run_load(const char *path, core_settings **s, dag_graph **g, core_err *err);
int run_load_text(const char *name, const char *yaml, core_settings **s, dag_graph **g,
		  core_err *err);
/* What only the plugins can tell: each one's options, checked as a run
 * opens them (nothing read, written or connected to; no plugin left
 * open), then the depends_on pipelines (run_check_dependencies). */
int run_validate(const core_settings *s, dag_graph *g, core_err *err);

/* s's landscape.export for run (which completed), as a run writes it at
 * its end: ELSPETH 0.4.1's records or 0.7.1's audit-export-v2, by the
 * format of the settings file. sql: an SQLite SQL trail already holding
 * the run (read instead of a temporary export), or NULL. */
int run_audit_export(rec_env *rec, const core_settings *s, uint64_t run,
		     const char *sql, core_err *err);
/* Confinement, for pipelines posted to a server (serve, mcp --root):
 * whether path p, relative to the working directory, which is root (a
 * realpath), stays under it — not absolute, no "..", and what exists of
 * it resolves (symbolic links followed) under root; and whether every
 * file the settings name (path, url of sqlite:/// and lmdb://, *_path,
 * *_file, settings) does. run_confine: CORE_ECONFIG naming the first that
 * does not, at its position, and *outside set; depends_on is refused the
 * same way (its pipelines' own files are not looked at). */
bool run_path_inside(const char *root, const char *p);
int run_confine(const char *root, const core_settings *s, bool *outside, core_err *err);
/* ELSPETH's ValidationResult of a validation that passed (ok) or failed
 * with `error` (its message, with file, line and column): is_valid, one
 * check, the error as its only ValidationError. */
json_t *run_validation_json(bool ok, const char *error);

/* Loads the pipelines of s's depends_on, recursively, and checks them as
 * a job does before it runs any (step 0 above), running nothing.
 * CORE_ECONFIG naming the entry (file:line:col) and the cycle. */
int run_check_dependencies(const core_settings *s, core_err *err);

/* ---------------------------------------------------------------- shards */

typedef struct run_shard run_shard;

typedef enum run_shard_state {
	RUN_SHARD_NEW,        /* never run: a new run */
	RUN_SHARD_UNFINISHED, /* its run stopped: finished from its checkpoint
			       * (resume), or, stopped before its first one,
			       * run again from its start (its Landscape
			       * cleared) */
	RUN_SHARD_COMPLETED   /* nothing to do */
} run_shard_state;

typedef struct run_shard_info {
	uint32_t index, nshards;
	const char *manifest;     /* the plan's file, as loaded */
	uint64_t first_row, last_row; /* its rows, numbered as in the whole run */
	run_shard_state state;
	uint64_t run_id;          /* its run (UNFINISHED, COMPLETED) */
	/* For run_cfg: */
	const char *landscape;    /* .database: the shard's own Landscape */
	const char *resume;       /* .resume: the run to finish, or NULL */
	const eng_shard *shard;   /* .shard: its rows (NULL when COMPLETED) */
} run_shard_info;

/* Opens shard k of the plan in the file `manifest` for graph g: checks the
 * plan was made from g's settings and k is one of its shards, makes its
 * part directory, takes its lock (held until run_shard_close: a second
 * copy of the shard is refused, CORE_EIO), and reads its Landscape. Unless
 * it completed, checks the source still holds the bytes the plan read for
 * it and gives g's plugins its part directory and capacity share
 * (dag_graph.env). The info is valid until run_shard_close, which the
 * caller calls after the job (run_free). CORE_ECONFIG: k out of range or
 * settings of another plan; CORE_EDATA: the source or the shard's
 * Landscape changed. */
int run_shard_open(dag_graph *g, const char *manifest, uint32_t k, run_shard **out,
		   core_err *err);
const run_shard_info *run_shard_get(const run_shard *s);
void run_shard_close(run_shard *s); /* NULL allowed */

/* Starts a job for cfg (copied; cfg->graph borrowed). Errors before the
 * thread starts: CORE_ENOMEM, CORE_EIO (no thread, or the metrics
 * address cannot be listened on), CORE_ECONFIG (options out of range, a
 * bad metrics address); a Landscape that cannot be opened is the job's
 * failure, seen at run_wait. */
int run_start(const run_cfg *cfg, run_job **out, core_err *err);
/* The port the metrics endpoint listens on (0: none). */
unsigned run_metrics_port(const run_job *j);
/* Stops pulling rows, as SIGINT does. Any thread; idempotent. */
void run_cancel(run_job *j);
/* Waits for the job to end and returns its result (valid until
 * run_free). Once per job. */
const run_result *run_wait(run_job *j);
/* Frees the job (waiting for it first if run_wait was not called).
 * NULL allowed. */
void run_free(run_job *j);

#endif /* ELSPETH_RUN_H */

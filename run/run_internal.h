/*
 * run_internal.h — what the run library's files share: the job, and the
 * steps around the engine (after.c).
 *
 * A job is written by its own thread only, from run_start until the
 * thread ends; run_wait reads it after pthread_join. The stop flag is
 * the one field other threads touch (atomically).
 */
#ifndef ELSPETH_RUN_INTERNAL_H
#define ELSPETH_RUN_INTERNAL_H

#include <pthread.h>

#include "recorder/recorder.h"
#include "run/run.h"
#include "telemetry/telemetry.h"

typedef struct run_metrics run_metrics;
typedef struct run_live run_live;

/* How often the engine reports progress while the SQL trail is live. */
#define LIVE_PROGRESS_MS 250

struct run_job {
	run_cfg cfg;
	run_metrics *metrics;     /* the Prometheus endpoint, or NULL */
	atomic_int own_stop;      /* cfg.stop when the caller gives none */
	pthread_t thread;
	bool started, joined;
	rec_env *rec;             /* the Landscape while the job runs */
	tel_manager *tel;         /* the run's telemetry, or NULL (off) */
	run_live *live;           /* the live SQL trail's thread, or NULL */
	struct sqlt_follow *follow; /* ... its follower, for the last step */
	uint64_t progress_told_ns;/* the observer's last progress event */
	run_result res;
};

/* ELSPETH's limit on a chain of depends_on. */
#define RUN_DEPENDS_MAX_DEPTH 3

/* Everything a job does for its own pipeline, from opening the Landscape
 * to closing it, on the calling thread; the result in j->res. */
void run__body(run_job *j);
/* depends.c: runs the dependencies of a new, unsharded run (none for a
 * resume or a shard), each through run__body. 0, or why the job stops. */
int run__dependencies(run_job *j, core_err *err);

/* metrics.c: the Prometheus endpoint at spec (HOST:PORT, [V6]:PORT or
 * PORT on loopback), listening when this returns (CORE_ECONFIG: a bad
 * address; CORE_EIO: cannot listen, e.g. the port is in use). */
int run__metrics_start(const char *spec, const char *settings, run_metrics **out,
		       core_err *err);
/* The sample, rendered, is what the next scrape gets (the job's thread). */
void run__metrics_update(run_metrics *m, const eng_sample *s);
unsigned run__metrics_port(const run_metrics *m);
void run__metrics_stop(run_metrics *m); /* NULL allowed */
/* The text exposition of sample s (appended to out); 0 or CORE_ENOMEM. */
int run__metrics_render(core_buf *out, const char *settings, const eng_sample *s);

/* live.c: the live SQL trail's thread for target (run_result.sql),
 * started before the engine, fed by run__live_progress from the job's
 * thread (run: the run's id once known, else 0; released: the engine's
 * released frontier, or UINT64_MAX when not told), stopped (joined,
 * what it did into st) before after.c's export. */
int run__live_start(rec_env *rec, const char *target, run_live **out, core_err *err);
void run__live_progress(run_live *l, uint64_t run, uint64_t released);
/* Returns the follower (the caller's to finish and close), or NULL when
 * it never connected or its last step failed (the run is then exported
 * whole). */
struct sqlt_follow *run__live_stop(run_live *l, run_live_stats *st);

/* Tells the observer (the job's thread). */
void run__emit(run_job *j, const run_event *ev);
/* Passes the telemetry's warnings on to the observer (the job's thread). */
void run__tel_warnings(run_job *j);

/* After.c: payload_store, before the engine. 0 or an error. */
int run__before(run_job *j, core_err *err);
/* After the engine stopped: the SQL trail, the journal, the export. Sets
 * res.sql_failed / sql_err and res.after_failed / after_err. */
void run__after(run_job *j, bool completed);

#endif /* ELSPETH_RUN_INTERNAL_H */

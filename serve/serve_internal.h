/* serve_internal.h — what serve.c and jobs.c share. */
#ifndef ELSPETH_SERVE_INTERNAL_H
#define ELSPETH_SERVE_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "dag/dag.h"
#include "run/run.h"
#include "serve/auth.h"
#include "serve/serve.h"

/* srv__load's error code for a path that leads out of the root (403). */
#define SRV_FORBIDDEN 1

typedef enum srv_state {
	SRV_PENDING, SRV_RUNNING, SRV_COMPLETED, SRV_FAILED, SRV_CANCELLED
} srv_state;

typedef struct srv_job {
	char id[33];               /* 32 hex digits, as ELSPETH's uuid4().hex */
	char name[PATH_MAX];       /* the settings' path, or "posted.yaml" */
	char *yaml;                /* the posted text, or NULL (a path) */
	char resume[32];           /* the Landscape run this job resumes, or "" */
	core_settings *settings;
	dag_graph *graph;
	srv_state state;           /* under srv.lock */
	atomic_int stop;           /* run_cfg.stop: cancel */
	bool cancel_asked;
	uint64_t posted_ns, started_ns, finished_ns; /* wall clock, 0: not yet */
	uint64_t rows, failed;     /* progress, then the summary's */
	uint64_t succeeded, quarantined; /* the summary's, at the end */
	uint64_t landscape_run;    /* the Landscape's run id, 0: none yet */
	char error[1024];
	json_t *live;              /* the latest metric sample (view.c), under
				    * srv.lock; NULL: none yet */
	json_t *errors;            /* the latest rows failed, newest first (at
				    * most SRV_ERRORS_KEPT), under srv.lock */
	struct srv *owner;
	struct srv_job *next;      /* the queue */
} srv_job;

typedef struct srv {
	const srv_cfg *cfg;
	char root[PATH_MAX];       /* realpath of cfg->root */
	pthread_mutex_t lock;
	pthread_cond_t work;
	srv_job **jobs;            /* every job, in posting order */
	size_t njobs, cap;
	srv_job *head, *tail;      /* pending, in order */
	bool stopping;
	pthread_t runner;
	bool runner_started;
	/* WebSockets (ws.c): one thread each, counted so the server waits
	 * for them before it stops */
	auth *auth;                /* local users; NULL: none */
	struct srv_oidc *oidc;     /* an OIDC issuer's tokens; NULL: none */
	pthread_cond_t ws_done;
	unsigned ws_count;
	atomic_bool ws_stop;
} srv;

/* A job as a WebSocket watches it (under no lock once copied). */
typedef struct srv_snap {
	srv_state state;
	uint64_t rows, failed, succeeded, quarantined, landscape_run;
	char error[1024];
} srv_snap;
bool srv__snapshot(srv *s, const char *id, srv_snap *out);
extern const char *const srv__state_names[];

/* ws.c: GET /ws/runs/{id}: the WebSocket handshake, then ELSPETH's
 * RunEvent messages on a thread of its own until the run ends. */
enum MHD_Result srv__ws(srv *s, struct MHD_Connection *c, const char *id,
		       bool authorized);
/* Stops every WebSocket and waits for their threads. */
void srv__ws_stop(srv *s);

int srv__init(srv *s, const srv_cfg *cfg, core_err *err);
void srv__release(srv *s);

/* Loads and checks a pipeline posted by path (relative to the root) or as
 * text: every path it names must stay under the root (SRV_FORBIDDEN);
 * CORE_ECONFIG and the like as run_load gives them, then run_validate's. */
int srv__load(srv *s, const char *path, const char *yaml, srv_job **out, core_err *err);
void srv__job_free(srv_job *j);
/* Queues j for the runner (which owns it from then on). */
int srv__enqueue(srv *s, srv_job *j, core_err *err);

/* What the routes read of a job that ran: its Landscape's directory
 * and run (0: none yet), and how it was posted (a resume reloads it).
 * false: no such job. */
bool srv__job_trail(srv *s, const char *id, char *lmdb, size_t cap, uint64_t *run,
		    char *path, size_t pcap, char **yaml);
/* A resume of the Landscape run `run` of the pipeline posted as path or
 * yaml (loaded and checked again), queued: its new job in *out. */
int srv__resume(srv *s, const char *path, const char *yaml, uint64_t run, srv_job **out,
		core_err *err);

/* ELSPETH's RunStatusResponse of job id, a list of all (newest first),
 * a cancel (the status it leaves; NULL: no such run). */
json_t *srv__status(srv *s, const char *id);
json_t *srv__list(srv *s);
const char *srv__cancel(srv *s, const char *id);
/* Job id, or NULL (lock held). */
srv_job *srv__find(srv *s, const char *id);

/* view.c: what the page shows besides the status, NULL for no such run.
 * A metric sample as JSON (in flight, waiting and what holds it, token
 * outcomes, calls by class, writes per sink, each LLM upstream's pace,
 * window and refusals); the job's latest ({} before the first), with the
 * latest rows failed (recent_errors: row, node, error, at); its graph
 * (nodes and edges); the settings text it was started from. */
json_t *srv__sample_json(const eng_sample *smp);
void srv__job_sample(srv *s, srv_job *j, const eng_sample *smp);
/* A row failed (RUN_EV_ROW_FAILED): kept for /live's recent_errors. */
#define SRV_ERRORS_KEPT 20
void srv__job_failure(srv *s, srv_job *j, uint64_t row, const char *node, const char *error);
json_t *srv__live(srv *s, const char *id);
json_t *srv__graph(srv *s, const char *id);
json_t *srv__settings_text(srv *s, const char *id);

#endif

/*
 * jobs.c — the runs a server was given (serve_internal.h): loading and
 * confining them to the root, the queue and its runner thread, and their
 * state as ELSPETH's web API reports it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "serve/serve_internal.h"

#define JOBS_MAX 4096              /* runs remembered */
#define PROGRESS_MS 500

const char *const srv__state_names[] = {
	"pending", "running", "completed", "failed", "cancelled"
};
#define state_names srv__state_names

/* ------------------------------------------------------------- load */

void srv__job_free(srv_job *j)
{
	if (!j)
		return;
	dag_free(j->graph);
	json_decref(j->live);
	json_decref(j->errors);
	core_settings_free(j->settings);
	free(j->yaml);
	free(j);
}

int srv__load(srv *s, const char *path, const char *yaml, srv_job **out, core_err *err)
{
	srv_job *j = calloc(1, sizeof(*j));
	uint8_t rnd[16];
	bool outside = false;
	int rc;

	*out = NULL;
	if (!j)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (path && !run_path_inside(s->root, path)) {
		free(j);
		rc = core_err_set(err, CORE_ECONFIG, "settings_path '%s' is outside the server's "
				  "root %s", path, s->root);
		err->code = SRV_FORBIDDEN;
		return rc;
	}
	j->owner = s;
	snprintf(j->name, sizeof(j->name), "%s", path ? path : "posted.yaml");
	rc = path ? run_load(path, &j->settings, &j->graph, err) :
	     run_load_text(j->name, yaml, &j->settings, &j->graph, err);
	if (!rc && (rc = run_confine(s->root, j->settings, &outside, err)) && outside)
		err->code = SRV_FORBIDDEN;
	if (!rc)
		rc = run_validate(j->settings, j->graph, err);
	if (!rc && yaml && !(j->yaml = strdup(yaml)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc) {
		srv__job_free(j);
		return rc;
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	core_hex(rnd, sizeof(rnd), j->id);
	atomic_init(&j->stop, 0);
	j->posted_ns = core_now_wall_ns();
	*out = j;
	return 0;
}

/* ------------------------------------------------------------ runner */

static void observe(void *ctx, const run_event *ev)
{
	srv_job *j = ctx;

	if (ev->kind == RUN_EV_PROGRESS && ev->progress) {
		/* atomics: the routes read them while the run goes */
		__atomic_store_n(&j->rows, ev->progress->pulled, __ATOMIC_RELAXED);
		__atomic_store_n(&j->failed, ev->progress->failed + ev->progress->quarantined,
				 __ATOMIC_RELAXED);
	}
	if (ev->kind == RUN_EV_SAMPLE && ev->sample && ev->sample->run_id)
		__atomic_store_n(&j->landscape_run, ev->sample->run_id, __ATOMIC_RELAXED);
	if (ev->kind == RUN_EV_SAMPLE && ev->sample)
		srv__job_sample(j->owner, j, ev->sample);
	if (ev->kind == RUN_EV_ROW_FAILED)
		srv__job_failure(j->owner, j, ev->row, ev->target, ev->error);
}

static void run_one(srv *s, srv_job *j)
{
	run_cfg cfg = { .graph = j->graph, .settings_path = j->name, .stop = &j->stop,
			.observe = observe, .observe_ctx = j, .progress_ms = PROGRESS_MS,
			.row_failures = true,
			.resume = j->resume[0] ? j->resume : NULL };
	const run_result *r;
	run_job *job;
	core_err err = { 0 };
	srv_state end;

	if (run_start(&cfg, &job, &err)) {
		pthread_mutex_lock(&s->lock);
		j->state = SRV_FAILED;
		j->finished_ns = core_now_wall_ns();
		snprintf(j->error, sizeof(j->error), "%s", err.msg);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	r = run_wait(job);
	end = r->rc ? SRV_FAILED : r->sum.interrupted && j->cancel_asked ? SRV_CANCELLED :
	      r->sum.interrupted || r->sum.halt_code ? SRV_FAILED : SRV_COMPLETED;
	pthread_mutex_lock(&s->lock);
	j->state = end;
	j->finished_ns = core_now_wall_ns();
	if (r->engine_ran) {
		__atomic_store_n(&j->rows, r->sum.rows, __ATOMIC_RELAXED);
		__atomic_store_n(&j->failed, r->sum.failed + r->sum.quarantined, __ATOMIC_RELAXED);
		j->succeeded = r->sum.succeeded;
		j->quarantined = r->sum.quarantined;
		if (r->sum.run_id)
			__atomic_store_n(&j->landscape_run, r->sum.run_id, __ATOMIC_RELAXED);
	}
	if (r->rc)
		snprintf(j->error, sizeof(j->error), "%s", r->err.msg);
	else if (r->sum.halt_code)
		snprintf(j->error, sizeof(j->error), "%s", r->sum.halt_msg);
	else if (r->sum.interrupted && !j->cancel_asked)
		snprintf(j->error, sizeof(j->error), "interrupted");
	pthread_mutex_unlock(&s->lock);
	if (s->cfg->log)
		fprintf(s->cfg->log, "run %s (%s): %s\n", j->id, j->name, state_names[end]);
	run_free(job);
}

static void *runner(void *arg)
{
	srv *s = arg;
	srv_job *j;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->work, &s->lock);
		if (!s->head)
			break;
		j = s->head;
		s->head = j->next;
		if (!s->head)
			s->tail = NULL;
		j->next = NULL;
		if (j->cancel_asked) {
			j->state = SRV_CANCELLED;
			j->finished_ns = core_now_wall_ns();
			continue;
		}
		j->state = SRV_RUNNING;
		j->started_ns = core_now_wall_ns();
		pthread_mutex_unlock(&s->lock);
		if (s->cfg->log)
			fprintf(s->cfg->log, "run %s (%s): started\n", j->id, j->name);
		run_one(s, j);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int srv__enqueue(srv *s, srv_job *j, core_err *err)
{
	srv_job **g;

	pthread_mutex_lock(&s->lock);
	if (s->njobs == JOBS_MAX || s->stopping) {
		pthread_mutex_unlock(&s->lock);
		return core_err_set(err, CORE_EIO, "the server takes no more runs");
	}
	if (s->njobs == s->cap) {
		if (!(g = realloc(s->jobs, (s->cap ? 2 * s->cap : 16) * sizeof(*g)))) {
			pthread_mutex_unlock(&s->lock);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		s->jobs = g;
		s->cap = s->cap ? 2 * s->cap : 16;
	}
	s->jobs[s->njobs++] = j;
	j->state = SRV_PENDING;
	if (s->tail)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

bool srv__snapshot(srv *s, const char *id, srv_snap *out)
{
	srv_job *j = NULL;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->njobs && !j; i++)
		if (!strcmp(s->jobs[i]->id, id))
			j = s->jobs[i];
	if (j) {
		out->state = j->state;
		out->rows = __atomic_load_n(&j->rows, __ATOMIC_RELAXED);
		out->failed = __atomic_load_n(&j->failed, __ATOMIC_RELAXED);
		out->succeeded = j->succeeded;
		out->quarantined = j->quarantined;
		out->landscape_run = __atomic_load_n(&j->landscape_run, __ATOMIC_RELAXED);
		snprintf(out->error, sizeof(out->error), "%s", j->error);
	}
	pthread_mutex_unlock(&s->lock);
	return j != NULL;
}

bool srv__job_trail(srv *s, const char *id, char *lmdb, size_t cap, uint64_t *run,
		    char *path, size_t pcap, char **yaml)
{
	srv_job *j;
	bool found = false;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; !found && i < s->njobs; i++) {
		if (strcmp((j = s->jobs[i])->id, id))
			continue;
		found = true;
		snprintf(lmdb, cap, "%s", j->settings->landscape_lmdb);
		*run = __atomic_load_n(&j->landscape_run, __ATOMIC_RELAXED);
		snprintf(path, pcap, "%s", j->name);
		*yaml = j->yaml ? strdup(j->yaml) : NULL;
	}
	pthread_mutex_unlock(&s->lock);
	return found;
}

int srv__resume(srv *s, const char *path, const char *yaml, uint64_t run, srv_job **out,
		core_err *err)
{
	int rc = srv__load(s, yaml ? NULL : path, yaml, out, err);

	if (rc)
		return rc;
	snprintf((*out)->resume, sizeof((*out)->resume), "%llu", (unsigned long long)run);
	if ((rc = srv__enqueue(s, *out, err))) {
		srv__job_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ----------------------------------------------------------- answers */

static json_t *iso_or_null(uint64_t ns)
{
	char b[40];

	if (!ns)
		return json_null();
	core_iso_utc(ns, b);
	return json_string(b);
}

/* lock held */
static json_t *status_of(const srv_job *j)
{
	uint64_t run = __atomic_load_n(&j->landscape_run, __ATOMIC_RELAXED);
	char rid[32];

	snprintf(rid, sizeof(rid), "%llu", (unsigned long long)run);
	return json_pack("{s:s,s:s,s:o,s:o,s:I,s:I,s:o,s:o,s:s}",
		"run_id", j->id, "status", state_names[j->state],
		"started_at", iso_or_null(j->started_ns),
		"finished_at", iso_or_null(j->finished_ns),
		"rows_processed", (json_int_t)__atomic_load_n(&j->rows, __ATOMIC_RELAXED),
		"rows_failed", (json_int_t)__atomic_load_n(&j->failed, __ATOMIC_RELAXED),
		"error", j->error[0] ? json_string(j->error) : json_null(),
		"landscape_run_id", run ? json_string(rid) : json_null(),
		"settings", j->name);
}

srv_job *srv__find(srv *s, const char *id)
{
	for (size_t i = 0; i < s->njobs; i++)
		if (!strcmp(s->jobs[i]->id, id))
			return s->jobs[i];
	return NULL;
}

json_t *srv__status(srv *s, const char *id)
{
	srv_job *j;
	json_t *out = NULL;

	pthread_mutex_lock(&s->lock);
	if ((j = srv__find(s, id)))
		out = status_of(j);
	pthread_mutex_unlock(&s->lock);
	return out;
}

json_t *srv__list(srv *s)
{
	json_t *a = json_array();

	pthread_mutex_lock(&s->lock);
	for (size_t i = s->njobs; a && i-- > 0;)
		json_array_append_new(a, status_of(s->jobs[i]));
	pthread_mutex_unlock(&s->lock);
	return a;
}

const char *srv__cancel(srv *s, const char *id)
{
	srv_job *j;
	const char *out = NULL;

	pthread_mutex_lock(&s->lock);
	if ((j = srv__find(s, id))) {
		if (j->state == SRV_PENDING || j->state == SRV_RUNNING) {
			j->cancel_asked = true;
			atomic_store(&j->stop, 1); /* as SIGINT: resumable */
		}
		out = state_names[j->state == SRV_PENDING ? SRV_CANCELLED : j->state];
	}
	pthread_mutex_unlock(&s->lock);
	return out;
}

/* ------------------------------------------------------------- life */

int srv__init(srv *s, const srv_cfg *cfg, core_err *err)
{
	int rc;

	s->cfg = cfg;
	if (!realpath(cfg->root, s->root))
		return core_err_set(err, CORE_ECONFIG, "--root %s: %s", cfg->root, strerror(errno));
	if (chdir(s->root))
		return core_err_set(err, CORE_ECONFIG, "--root %s: %s", cfg->root, strerror(errno));
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->ws_done, NULL);
	atomic_init(&s->ws_stop, false);
	if ((rc = pthread_create(&s->runner, NULL, runner, s))) {
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->work);
		return core_err_set(err, CORE_EIO, "cannot start the runner: %s", strerror(rc));
	}
	s->runner_started = true;
	return 0;
}

void srv__release(srv *s)
{
	if (!s->runner_started)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	for (size_t i = 0; i < s->njobs; i++) /* what runs stops as on SIGINT */
		if (s->jobs[i]->state == SRV_RUNNING || s->jobs[i]->state == SRV_PENDING) {
			s->jobs[i]->cancel_asked = true;
			atomic_store(&s->jobs[i]->stop, 1);
		}
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->runner, NULL);
	for (size_t i = 0; i < s->njobs; i++)
		srv__job_free(s->jobs[i]);
	free(s->jobs);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->ws_done);
}

/*
 * run.c — a job: its thread, the Landscape it writes, the engine between
 * the steps of after.c, and the observer's events (run.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/run_internal.h"
#include "sqltrail/sqltrail.h"

void run__emit(run_job *j, const run_event *ev)
{
	if (j->cfg.observe)
		j->cfg.observe(j->cfg.observe_ctx, ev);
}

void run__tel_warnings(run_job *j)
{
	char msg[600];

	while (tel_next_warning(j->tel, msg, sizeof(msg)))
		run__emit(j, &(run_event){ .kind = RUN_EV_WARNING, .error = msg });
}

static void on_progress(void *ctx, const eng_progress *p)
{
	run_job *j = ctx;
	uint64_t now = core_now_mono_ns();

	run__live_progress(j->live, 0, p->released);
	/* the live trail may want reports more often than the observer:
	 * then every report after the observer's interval (less a tenth,
	 * for the callbacks' own jitter) is the observer's */
	if (!j->cfg.progress_ms)
		return;
	if (j->live && j->cfg.progress_ms > LIVE_PROGRESS_MS && !p->final &&
	    now - j->progress_told_ns < j->cfg.progress_ms * 900000ull)
		return;
	j->progress_told_ns = now;
	run__tel_warnings(j);
	run__emit(j, &(run_event){ .kind = RUN_EV_PROGRESS, .progress = p });
}

static void on_sample(void *ctx, const eng_sample *s)
{
	run_job *j = ctx;

	run__metrics_update(j->metrics, s);
	tel_sample(j->tel, s);
	run__tel_warnings(j);
	run__emit(j, &(run_event){ .kind = RUN_EV_SAMPLE, .sample = s });
}

static bool exists_beside(const char *database)
{
	char p[4096];
	struct stat st;

	return (size_t)snprintf(p, sizeof(p), "%s.lmdb", database) < sizeof(p) &&
	       !stat(p, &st) && S_ISDIR(st.st_mode);
}

int run_database_paths(const char *database, char *lmdb, size_t cap, char *sql,
		       size_t scap, core_err *err)
{
	struct stat st;

	sql[0] = '\0';
	/* A database is not a Landscape: said so, without its password. */
	if (core_sql_is_pg(database)) {
		char *shown = core_url_sanitize(database);
		int rc = core_err_set(err, CORE_ECONFIG, "--database %s is a PostgreSQL "
			"database, not a Landscape: `elspeth runs`, `mcp` and `export` read "
			"one with -d (docs/audit.md); this command reads the Landscape that "
			"wrote it (-s SETTINGS, on the machine that ran the pipeline)",
			shown ? shown : "postgresql://…");

		free(shown);
		return rc;
	}
	/* The SQL file, or its Landscape beside it when the file is not
	 * there yet (a run killed before its first export). */
	if ((!stat(database, &st) && S_ISREG(st.st_mode)) ||
	    (stat(database, &st) && errno == ENOENT && exists_beside(database))) {
		if ((size_t)snprintf(sql, scap, "%s", database) >= scap ||
		    (size_t)snprintf(lmdb, cap, "%s.lmdb", database) >= cap)
			return core_err_set(err, CORE_ECONFIG, "--database path too long");
		return 0;
	}
	if ((size_t)snprintf(lmdb, cap, "%s", database) >= cap)
		return core_err_set(err, CORE_ECONFIG, "--database path too long");
	return 0;
}

static int shown_sql(run_result *r, core_err *err)
{
	char *shown = core_url_sanitize(r->sql);

	if (!shown)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	snprintf(r->sql_shown, sizeof(r->sql_shown), "%s", shown);
	free(shown);
	return 0;
}

/* Opens the Landscape for writing (a resume's must exist: opening it for
 * writing would create it). */
static int open_landscape(run_job *j, core_err *err)
{
	const core_settings *s = j->cfg.graph->settings;
	run_result *r = &j->res;
	rec_env *ro;
	struct stat st;
	int rc;

	if (!s->audit)
		return j->cfg.resume ? core_err_set(err, CORE_ECONFIG,
			"resume needs the Landscape, which landscape.enabled: false turns off") : 0;
	r->audit = true;
	if (j->cfg.database &&
	    (rc = run_database_paths(j->cfg.database, r->landscape,
				     sizeof(r->landscape), r->sql, sizeof(r->sql), err)))
		return rc;
	if (!j->cfg.database) {
		memcpy(r->landscape, s->landscape_lmdb, sizeof(r->landscape));
		memcpy(r->sql, s->landscape_sql, sizeof(r->sql));
	}
	/* A shard's Landscape is its own, but a PostgreSQL trail is made to
	 * be shared: each shard writes its run into it, under an id of its
	 * own (ADR 0042). An SQLite file is not shared across machines. */
	if (j->cfg.shard && core_sql_is_pg(s->landscape_sql))
		memcpy(r->sql, s->landscape_sql, sizeof(r->sql));
	if ((rc = shown_sql(r, err)))
		return rc;
	/* The SQL trail is written at the end: a path it cannot be, or a
	 * database that cannot hold it, is refused before the run, not
	 * after. */
	if (core_sql_is_pg(r->sql)) {
		if ((rc = sqlt_check(r->sql, s->format == CORE_FORMAT_V07, err)))
			return rc;
	} else if (r->sql[0] && !stat(r->sql, &st) && !S_ISREG(st.st_mode))
		return core_err_set(err, CORE_ECONFIG,
			"landscape.url: %s exists and is not a file, so it cannot "
			"hold the SQL trail", r->sql);
	if (j->cfg.resume) {
		if ((rc = rec_open(r->landscape, REC_READONLY, &ro, err)) ||
		    (rc = rec_close(ro, err)))
			return rc;
	}
	return rec_open(r->landscape, 0, &j->rec, err);
}

static void phase(run_job *j, run_event_kind k, const char *name, const char *action,
		  const char *target, uint64_t t0, const char *error)
{
	run__emit(j, &(run_event){ .kind = k, .phase = name, .action = action,
				   .target = target, .error = error,
				   .seconds = (double)(core_now_mono_ns() - t0) / 1e9 });
}

/* The engine's events: to the telemetry what it asked for, and failed
 * rows to the observer that asked for them (on the engine's thread). */
static void on_engine_event(void *ctx, const eng_event *ev)
{
	run_job *j = ctx;

	if (ev->kind == ENG_EV_RUN_STARTED)
		run__live_progress(j->live, ev->run_id, UINT64_MAX);
	if (j->tel && (tel_event_mask(j->tel) & (1u << ev->kind)))
		tel_engine_event(j->tel, ev);
	if (ev->kind == ENG_EV_TRANSFORM && !ev->ok && j->cfg.observe && j->cfg.row_failures)
		j->cfg.observe(j->cfg.observe_ctx, &(run_event){ .kind = RUN_EV_ROW_FAILED,
			.run_id = ev->run_id, .row = ev->row,
			.target = ev->node ? ev->node->name : NULL, .error = ev->error });
}

/* The engine, between the payload store and the steps after it. */
static int process(run_job *j, core_err *err)
{
	const run_cfg *c = &j->cfg;
	eng_opts o = { .stop = c->stop, .settings_path = c->settings_path,
		       .max_rows_in_flight = c->max_rows_in_flight,
		       .max_waiting_mib = c->max_waiting_mib, .shard = c->shard,
		       .rec = j->rec };
	run_result *r = &j->res;
	int rc;

	if (j->rec && r->sql[0] && (rc = run__live_start(j->rec, r->sql, &j->live, err)))
		return rc;
	if (c->progress_ms || j->live) {
		o.progress = on_progress;
		o.progress_ctx = j;
		o.progress_ms = c->progress_ms;
		if (j->live && (!o.progress_ms || o.progress_ms > LIVE_PROGRESS_MS))
			o.progress_ms = LIVE_PROGRESS_MS;
	}
	if (c->observe || j->metrics || j->tel) {
		o.sample = on_sample;
		o.sample_ctx = j;
	}
	if (j->tel || (c->observe && c->row_failures) || j->live) {
		o.event = on_engine_event;
		o.event_ctx = j;
		o.event_mask = (j->tel ? tel_event_mask(j->tel) : 0) |
			       (c->observe && c->row_failures ? 1u << ENG_EV_TRANSFORM : 0) |
			       (j->live ? 1u << ENG_EV_RUN_STARTED : 0);
	}
	r->engine_ran = true;
	rc = c->resume ? eng_resume(c->graph, &o, c->resume, true, NULL, &r->sum, err)
		       : eng_run(c->graph, &o, &r->sum, err);
	j->follow = run__live_stop(j->live, &r->live);
	j->live = NULL;
	run__after(j, !rc && !r->sum.interrupted && !r->sum.halt_code);
	return rc;
}

/* Every event exported, the exporters flushed and closed; what they did
 * into the result. */
static void end_telemetry(run_job *j)
{
	run_result *r = &j->res;

	if (!j->tel)
		return;
	if (tel_flush(j->tel, &r->tel_err))
		r->tel_failed = true;
	run__tel_warnings(j);
	tel_close(j->tel, &r->tel);
	j->tel = NULL;
}

void run__body(run_job *j)
{
	run_result *r = &j->res;
	uint64_t t0 = core_now_mono_ns();
	int rc;

	/* Telemetry first: a bad exporter stops the job before any run is
	 * recorded, as in ELSPETH. */
	if ((rc = tel_open(j->cfg.graph->settings, j->cfg.graph, &j->tel, &r->err))) {
		r->rc = rc;
		return;
	}
	r->telemetry = j->tel != NULL;
	phase(j, RUN_EV_PHASE_STARTED, "database", "connecting", NULL, t0, NULL);
	if ((rc = open_landscape(j, &r->err)) || (rc = run__before(j, &r->err))) {
		phase(j, RUN_EV_PHASE_ERROR, "database", NULL, j->cfg.database, t0, r->err.msg);
		r->rc = rc;
		rec_close(j->rec, NULL);
		j->rec = NULL;
		end_telemetry(j);
		return;
	}
	phase(j, RUN_EV_PHASE_COMPLETED, "database", NULL, NULL, t0, NULL);
	t0 = core_now_mono_ns();
	phase(j, RUN_EV_PHASE_STARTED, "process", "processing", NULL, t0, NULL);
	rc = process(j, &r->err);
	if (!rc && j->rec && rec_close(j->rec, &r->err))
		rc = r->err.code;
	else if (rc)
		rec_close(j->rec, NULL);
	j->rec = NULL;
	r->rc = rc;
	end_telemetry(j);
	phase(j, rc ? RUN_EV_PHASE_ERROR : RUN_EV_PHASE_COMPLETED, "process", NULL,
	      j->cfg.settings_path, t0, rc ? r->err.msg : NULL);
}

static void *job_main(void *arg)
{
	run_job *j = arg;

	if ((j->res.rc = run__dependencies(j, &j->res.err)))
		return NULL;
	run__body(j);
	return NULL;
}

int run_start(const run_cfg *cfg, run_job **out, core_err *err)
{
	run_job *j = calloc(1, sizeof(*j));
	eng_opts bounds = { .max_rows_in_flight = cfg->max_rows_in_flight,
			    .max_waiting_mib = cfg->max_waiting_mib };
	int rc;

	*out = NULL;
	if (!j)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = eng_opts_check(&bounds, err))) {
		free(j);
		return rc;
	}
	j->cfg = *cfg;
	if (!j->cfg.stop)
		j->cfg.stop = &j->own_stop;
	/* --metrics-listen, else the settings' metrics.listen */
	if (!j->cfg.metrics_listen && cfg->graph && cfg->graph->settings)
		j->cfg.metrics_listen = cfg->graph->settings->metrics_listen;
	if (j->cfg.metrics_listen &&
	    (rc = run__metrics_start(j->cfg.metrics_listen, cfg->settings_path,
				     &j->metrics, err))) {
		free(j);
		return rc;
	}
	if ((rc = pthread_create(&j->thread, NULL, job_main, j))) {
		run__metrics_stop(j->metrics);
		free(j);
		return core_err_set(err, CORE_EIO, "cannot start the run's thread: %s",
				    strerror(rc));
	}
	j->started = true;
	*out = j;
	return 0;
}

unsigned run_metrics_port(const run_job *j)
{
	return j ? run__metrics_port(j->metrics) : 0;
}

void run_cancel(run_job *j)
{
	if (j)
		atomic_store(j->cfg.stop, 1);
}

const run_result *run_wait(run_job *j)
{
	if (j->started && !j->joined) {
		pthread_join(j->thread, NULL);
		j->joined = true;
	}
	return &j->res;
}

void run_free(run_job *j)
{
	if (!j)
		return;
	run_wait(j);
	run__metrics_stop(j->metrics);
	eng_summary_release(&j->res.sum);
	free(j);
}

/*
 * run.c — eng_run: opens the source and sinks, records the run, runs the
 * pipeline, finishes the sinks and the run record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

const char *eng_outcome_name(eng_outcome o)
{
	switch (o) {
	case ENG_COMPLETED:
		return "COMPLETED";
	case ENG_ROUTED:
		return "ROUTED";
	case ENG_FAILED:
		return "FAILED";
	case ENG_QUARANTINED:
		return "QUARANTINED";
	case ENG_FORKED:
		return "FORKED";
	case ENG_EXPANDED:
		return "EXPANDED";
	case ENG_COALESCED:
		return "COALESCED";
	case ENG_CONSUMED_IN_BATCH:
		return "CONSUMED_IN_BATCH";
	case ENG_DIVERTED:
		return "DIVERTED";
	case ENG_OUTCOME_LAST:
		break;
	}
	return "UNKNOWN";
}

/* Flushes (fsync) and closes every sink; the first error wins. A run
 * that completed publishes first (plg_sink_ops.publish): not one that
 * failed, was interrupted or halted, whose outputs a resume finishes. */
static int close_sinks(eng_ctx *c, int rc, const eng_summary *sum, core_err *err)
{
	dag_graph *g = c->g;
	bool done = !rc && !sum->interrupted && !eng__halted(c);
	int crc;

	if (rc) {
		dag_close(g, NULL);
		return rc;
	}
	for (size_t i = 0; i < g->nnodes && !rc; i++)
		if (g->nodes[i].kind == DAG_SINK && g->nodes[i].kstate)
			rc = g->nodes[i].kops->flush(g->nodes[i].kstate, err);
	for (size_t i = 0; i < g->nnodes && !rc && done; i++)
		if (g->nodes[i].kind == DAG_SINK && g->nodes[i].kstate &&
		    g->nodes[i].kops->publish)
			rc = g->nodes[i].kops->publish(g->nodes[i].kstate, err);
	crc = dag_close(g, rc ? NULL : err);
	return rc ? rc : crc;
}

/* After the completed run's record is committed (plg_sink_ops.finished). */
static void sinks_finished(dag_graph *g)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK && g->nodes[i].kops->finished)
			g->nodes[i].kops->finished(&g->env, g->nodes[i].options);
}

unsigned eng__rows_in_flight(const dag_graph *g, const eng_opts *o)
{
	const core_settings *s = g->settings;

	if (o && o->max_rows_in_flight)
		return o->max_rows_in_flight;
	return s->pipelining ? (unsigned)s->max_rows_in_flight : 1;
}

/* The waiting bounds (ADR 0029): max_completed_waiting from the file
 * when given (a count, raised to the rows in flight); else a byte budget
 * (--max-waiting-mib, else max_waiting_mib, 64 MiB by default) with a
 * count of WAITING_ROWS_MAX as a backstop for rows of almost nothing. */
#define WAITING_ROWS_MAX 65536u

static unsigned rows_unreleased(const dag_graph *g, unsigned in_flight,
				size_t *budget, const eng_opts *o)
{
	const core_settings *s = g->settings;
	unsigned long long mib;

	*budget = 0;
	if (s->max_completed_waiting_set)
		return s->max_completed_waiting >= in_flight ?
		       (unsigned)s->max_completed_waiting : in_flight;
	if (in_flight == 1)
		return 1;
	mib = o && o->max_waiting_mib ? o->max_waiting_mib :
	      (unsigned long long)s->max_waiting_mib;
	*budget = (size_t)(mib << 20);
	return in_flight > WAITING_ROWS_MAX ? in_flight : WAITING_ROWS_MAX;
}

/* The upstream the run kept busiest, for the summary (transforms still
 * open). */
static void busiest_upstream(const dag_graph *g, eng_summary *sum)
{
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		plg_capacity cap;

		if (n->kind != DAG_TRANSFORM || !n->tstate || !n->tops->capacity ||
		    !n->tops->capacity(n->tstate, &cap) ||
		    (*sum->upstream.name && cap.busy_s <= sum->upstream.busy_s))
			continue;
		snprintf(sum->upstream.name, sizeof(sum->upstream.name), "%s",
			 cap.upstream ? cap.upstream : "");
		sum->upstream.slots = cap.slots;
		sum->upstream.busy_s = cap.busy_s;
		sum->upstream.span_s = cap.span_s;
		sum->upstream.p50_s = cap.p50_s;
		sum->upstream.p99_s = cap.p99_s;
		sum->upstream.tail_cuts = cap.tail_cuts;
		sum->upstream.hedges_sent = cap.hedges_sent;
		sum->upstream.hedges_won = cap.hedges_won;
	}
}

static void phase(eng_ctx *c, const char *phase, const char *action)
{
	eng_event ev = { .kind = ENG_EV_PHASE, .phase = phase, .action = action };

	eng__event(c->audit, &ev);
}

/* ELSPETH's FieldResolutionApplied: how each source named its fields
 * (0.7.1: one event per source, naming its plugin), in the sources'
 * order, before the first row. */
static void fields_event(eng_ctx *c, void *src)
{
	if (!eng__wants(c->audit, ENG_EV_FIELDS))
		return;
	for (unsigned i = 0; i < c->g->nsources; i++) {
		eng_event ev = { .kind = ENG_EV_FIELDS, .node = &c->g->nodes[i] };

		ev.fields = eng__sources_fields(c->g, src, i, &ev.fields_version);
		if (ev.fields)
			eng__event(c->audit, &ev);
		json_decref((json_t *)ev.fields);
	}
}

static int run_graph(eng_ctx *c, unsigned in_flight, eng_summary *sum,
		     core_err *err)
{
	dag_graph *g = c->g;
	void *src = NULL;
	int rc;

	phase(c, "source", "initializing");
	/* The source first: a missing input must not leave empty outputs. */
	if ((rc = eng__sources_open(g, &c->sops, &src, err)))
		return rc;
	c->src = src;
	/* the sources' names of the fields, for sinks that write them */
	plg_env_set_original_names(&g->env, eng__original_names(g, src));
	/* A resume reopens the sinks at their checkpointed positions and
	 * moves the source on before the rest opens as usual. */
	if (c->resume)
		rc = eng__resume_open(c, src, err);
	else if (c->limited && c->start_seq)
		rc = c->sops->seek(src, &c->start_pos, err);
	if (!rc)
		rc = dag_open(g, true, err);
	if (!rc)
		rc = eng__aggs_init(c, err);
	if (!rc && c->resume)
		rc = eng__resume_restore(c, sum, err);
	if (!rc) {
		size_t budget;
		unsigned cap = rows_unreleased(g, in_flight, &budget, c->opts);

		phase(c, "process", "processing");
		fields_event(c, src);
		rc = eng__pipeline(c, src, in_flight, cap, budget, sum, err);
		busiest_upstream(g, sum);
	}
	eng__aggs_free(c);
	c->src = NULL;
	c->sops->close(src);
	/* Queued checkpoints name the sinks' descriptors: they are committed
	 * before the sinks close. */
	if (c->ckpt && c->audit->rec) {
		core_err ferr;
		int frc = rec_flush(c->audit->rec, &ferr);

		if (!rc && frc) {
			*err = ferr;
			rc = frc;
		}
	}
	return close_sinks(c, rc, sum, err);
}

/* Checkpoints are on (audit on, checkpoint.enabled) and every sink can
 * report its position; else off, or an error naming the sink. */
static int ckpt_setup(eng_ctx *c, eng_ckpt *k, core_err *err)
{
	const core_settings *s = c->g->settings;

	if (!c->audit->rec || !s->checkpoint_enabled)
		return 0;
	for (size_t i = 0; i < c->g->nnodes; i++) {
		const dag_node *n = &c->g->nodes[i];

		if (n->kind == DAG_SINK && (!n->kops->position || !n->kops->resume))
			return core_err_set(err, CORE_ECONFIG,
				"sink '%s' (plugin %s) cannot be checkpointed; set "
				"checkpoint.enabled: false to run without checkpoints",
				n->name, n->plugin);
	}
	k->frequency = s->checkpoint_frequency;
	k->interval = (uint64_t)s->checkpoint_interval;
	k->boundaries = s->checkpoint_aggregation_boundaries;
	c->ckpt = k;
	return 0;
}

static char *metrics_json(const eng_summary *s)
{
	json_t *j = json_pack("{s:i,s:i,s:I,s:I,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:I,s:I}",
		"max_rows_in_flight", (int)s->in_flight,
		"max_completed_waiting", (int)s->max_waiting,
		"rows_pulled", (json_int_t)s->pulled, "rows_released", (json_int_t)s->rows,
		"pipeline_seconds", s->pipeline_seconds,
		"peak_in_flight", (json_int_t)s->peak_in_flight,
		"peak_waiting", (json_int_t)s->peak_waiting,
		"fifo_wait_mean_ms", s->fifo_wait_mean_ms,
		"fifo_wait_max_ms", s->fifo_wait_max_ms,
		"source_blocked_seconds", s->source_blocked_s,
		"release_blocked_seconds", s->release_blocked_s,
		"batches", (json_int_t)s->batches, "diverted", (json_int_t)s->diverted);
	if (j) {
		json_object_set_new(j, "waiting_budget_bytes", json_integer((json_int_t)s->waiting_budget));
		json_object_set_new(j, "peak_waiting_bytes", json_integer((json_int_t)s->peak_waiting_bytes));
	}
	if (j && s->checkpoints)
		json_object_set_new(j, "checkpoints", json_integer((json_int_t)s->checkpoints));
	/* A halted run's exit code (its message is the run's error). */
	if (j && s->halt_code)
		json_object_set_new(j, "halt_exit_code", json_integer(s->halt_code));
	if (j && s->attempt) {
		json_object_set_new(j, "resume_attempt", json_integer((json_int_t)s->attempt));
		json_object_set_new(j, "rows_reused", json_integer((json_int_t)s->rows_reused));
		json_object_set_new(j, "rows_rerun", json_integer((json_int_t)s->rows_rerun));
		json_object_set_new(j, "calls_replayed", json_integer((json_int_t)s->calls_replayed));
	}
	json_t *calls = json_pack("{s:I,s:I}", "total", (json_int_t)s->calls,
				  "ok", (json_int_t)s->calls_ok);
	char *out;

	for (size_t i = 0; calls && i < ENG_CALL_CLASSES; i++)
		if (s->calls_by_class[i])
			json_object_set_new(calls, eng_call_classes[i],
					    json_integer((json_int_t)s->calls_by_class[i]));
	if (j && calls && s->calls)
		json_object_set(j, "calls", calls);
	json_decref(calls);
	out = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return out;
}

/* plg_ctx.halt: a transform (or its HTTP executor's thread) stops the
 * whole run for a reason no row can fix. Any thread, any number of
 * times: a compare-and-swap lets the first call alone write the code and
 * message, which are published before *stop is set, so whoever sees the
 * run stop for the halt also sees why. The rest is SIGINT's path: no new
 * row is pulled, a row cut short (CORE_ESTOPPED) stays unreleased with
 * the rows after it, and the last checkpoint holds them for the resume. */
void eng__halt(eng_ctx *c, int exit_code, const char *msg)
{
	int none = ENG_HALT_NONE;

	if (!atomic_compare_exchange_strong(&c->halt, &none, ENG_HALT_WRITING))
		return;
	c->halt_code = exit_code == 3 ? 3 : 1; /* plugins.h: 1 or 3 */
	snprintf(c->halt_msg, sizeof(c->halt_msg), "%s",
		 msg && msg[0] ? msg : "a transform stopped the run");
	atomic_store_explicit(&c->halt, ENG_HALT_SET, memory_order_release);
	if (c->stop) /* always, once eng__run_ctx has started */
		atomic_store(c->stop, 1);
}

bool eng__halted(eng_ctx *c)
{
	return atomic_load_explicit(&c->halt, memory_order_acquire) == ENG_HALT_SET;
}

/* The run's status as recorded (docs/audit.md): a halt asking for exit
 * code 1 is a failed run, though a resumable one. */
const char *eng_run_status(int rc, const eng_summary *sum)
{
	if (rc || sum->halt_code == 1)
		return "failed";
	return sum->interrupted ? "interrupted" : "completed";
}

void eng__set_run_key(dag_graph *g, uint64_t run_id, uint64_t started_ns)
{
	char key[64];

	if (!run_id) {
		plg_env_set_run_key(&g->env, NULL);
		return;
	}
	snprintf(key, sizeof(key), "run-%llu-%llu", (unsigned long long)run_id,
		 (unsigned long long)started_ns);
	plg_env_set_run_key(&g->env, key);
}

int eng__run_ctx(eng_ctx *c, eng_summary *sum, core_err *err)
{
	const eng_opts *o = c->opts;
	eng_ckpt ckpt = { .attempt = c->resume ? eng__resume_attempt(c) : 0 };
	eng_sampler smp;
	const char *status;
	core_err ferr = { 0 };
	char *metrics;
	int rc, frc;

	ckpt.last = c->start_seq; /* a resume's or a shard's first row - 1 */
	c->audit->opts = o;
	if (eng__wants(c->audit, ENG_EV_RUN_STARTED)) {
		eng_event ev = { .kind = ENG_EV_RUN_STARTED,
				 .settings_hash = c->g->settings->config_hash };

		eng__event(c->audit, &ev);
	}
	phase(c, "graph", "building");
	/* A halt needs a flag to set even when the caller gave none. */
	if (!c->stop)
		c->stop = &c->own_stop;
	sum->run_id = c->audit->run_id;
	sum->attempt = ckpt.attempt;
	eng__set_run_key(c->g, c->audit->rec ? c->audit->run_id : 0,
			 c->audit->started_ns);
	rc = ckpt_setup(c, &ckpt, err);
	if (!rc)
		rc = eng__sampler_init(c, &smp, ckpt.attempt, err);
	if (!rc)
		rc = run_graph(c, eng__rows_in_flight(c->g, o), sum, err);
	eng__sampler_release(c);
	sum->calls = c->calls;
	sum->calls_ok = c->calls_ok;
	sum->calls_replayed = c->calls_replayed;
	for (size_t i = 0; i < ENG_CALL_CLASSES; i++)
		sum->calls_by_class[i] = c->calls_by_class[i];
	sum->checkpoints = ckpt.written;
	sum->wall_seconds = (double)(core_now_mono_ns() - c->t0_mono) / 1e9;
	/* Every thread that could halt has been joined, or is inside a
	 * process() that has returned: the halt, if any, is complete. */
	if (eng__halted(c)) {
		sum->halt_code = c->halt_code;
		snprintf(sum->halt_msg, sizeof(sum->halt_msg), "%s", c->halt_msg);
	}
	status = eng_run_status(rc, sum);
	if (!strcmp(status, "completed") && c->g->settings->format == CORE_FORMAT_V07 &&
	    !(o && o->shard))
		eng__sink_paths_unused(c, sum);
	metrics = metrics_json(sum);
	/* The resume's record first: the run record, chained, is the last
	 * write (rec_run_end). */
	if (c->resume)
		eng__resume_finish(c, sum, status);
	frc = eng__audit_finish(c->audit, sum, status,
				rc ? err->msg : sum->halt_code ? sum->halt_msg : NULL,
				metrics, &ferr);
	free(metrics);
	if (!rc && frc) {
		*err = ferr;
		rc = frc;
	}
	if (!rc && !strcmp(status, "completed") && c->audit->rec)
		sinks_finished(c->g);
	eng__set_run_key(c->g, 0, 0);
	c->ckpt = NULL;
	if (eng__wants(c->audit, ENG_EV_RUN_FINISHED)) {
		eng_event ev = { .kind = ENG_EV_RUN_FINISHED, .status = status,
				 .rows = sum->rows,
				 .duration_ns = core_now_mono_ns() - c->t0_mono };

		eng__event(c->audit, &ev);
	}
	return rc;
}

int eng_opts_check(const eng_opts *o, core_err *err)
{
	if (o && o->max_rows_in_flight > ENG_MAX_IN_FLIGHT)
		return core_err_set(err, CORE_ECONFIG,
			"max_rows_in_flight is at most %u, got %u", ENG_MAX_IN_FLIGHT,
			o->max_rows_in_flight);
	if (o && o->max_waiting_mib > ENG_MAX_WAITING_MIB)
		return core_err_set(err, CORE_ECONFIG,
			"max_waiting_mib is at most %u, got %u", ENG_MAX_WAITING_MIB,
			o->max_waiting_mib);
	return 0;
}

int eng_run(dag_graph *g, const eng_opts *o, eng_summary *sum, core_err *err)
{
	eng_audit audit;
	eng_ctx c = { .g = g, .audit = &audit, .stop = o ? o->stop : NULL,
		      .opts = o, .t0_mono = core_now_mono_ns() };
	int rc;

	memset(sum, 0, sizeof(*sum));
	if ((rc = eng_opts_check(o, err)))
		return rc;
	if (o && o->shard && (rc = eng__shard_setup(&c, o->shard, err)))
		return rc;
	if (!(o && o->shard) && (rc = eng__sink_paths_new(&c, err)))
		goto out;
	sum->per_sink = calloc(g->nnodes, sizeof(*sum->per_sink));
	if (!sum->per_sink) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	rc = eng__audit_start(&audit, o ? o->rec : NULL, g,
			      o ? o->settings_path : NULL, o ? o->shard : NULL, err);
	if (!rc)
		rc = eng__run_ctx(&c, sum, err);
out:
	free(c.sink_fresh);
	return rc;
}

/* A shard's rows: the source starts at its range (a seek, when the range
 * does not start at the first row) and stops after it. */
int eng__shard_setup(eng_ctx *c, const eng_shard *sh, core_err *err)
{
	bool seekable = true;

	/* several sources: the range's start names the source it is in,
	 * and the chain seeks there (engine/sources.c) */
	for (size_t i = 0; i < c->g->nsources; i++)
		seekable = seekable && c->g->nodes[i].sops->seek && c->g->nodes[i].sops->position;
	if (sh->first_seq < 1 || sh->last_seq + 1 < sh->first_seq)
		return core_err_set(err, CORE_ECONFIG, "shard %u: rows %llu..%llu is no range",
				    sh->index, (unsigned long long)sh->first_seq,
				    (unsigned long long)sh->last_seq);
	if (sh->first_seq > 1 && !seekable)
		return core_err_set(err, CORE_ECONFIG,
			"a source of this pipeline cannot start at a row, so it cannot be "
			"sharded");
	c->limited = true;
	c->last_seq = sh->last_seq;
	if (c->resume)
		return 0; /* the checkpoint says where the source stands */
	c->start_seq = sh->first_seq - 1;
	c->start_pos = sh->start;
	c->has_start_pos = true;
	return 0;
}

int eng_topology_hash(dag_graph *g, char out[65], core_err *err)
{
	return eng__topology_hash(g, out, err);
}

void eng_summary_release(eng_summary *sum)
{
	free(sum->per_sink);
	sum->per_sink = NULL;
}

/*
 * sample.c — the run's metric samples (docs/report.md): about once a
 * second and at the end of each attempt, the pipeline's counters (rows
 * pulled, released, in flight, waiting for in-order release), the token
 * outcomes and outside calls so far, and each LLM transform's capacity
 * control (an eng_sample), as one SampleRecord in the Landscape
 * (REC_SAMPLES) and to the caller's eng_opts.sample.
 *
 * DESIGN: only the calling thread samples (pipeline.c: supervise, the
 * sequential loop, the end of the run), so the sampler needs no lock.
 * The pipeline's counters are copied under the pipeline lock into an
 * eng_sample_at by the caller; everything else is read here with no
 * engine lock held: the call counters are atomics, and a transform's
 * capacity() takes only its own short lock. Nothing here changes what
 * the run writes to its sinks or checkpoints. A sample is not evidence:
 * one the recorder cannot take (a write error, which is sticky and meets
 * the run at its next audit write, or no memory to pack it) is dropped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

#define SAMPLE_MS_DEFAULT 1000

/* From 100 µs to 30 s, then +Inf: an LLM call is 0.1–30 s, a local
 * transform well under a millisecond. */
const double eng_duration_bounds[ENG_DURATION_BUCKETS] = {
	0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, INFINITY
};

void eng__hist_add(eng_ctx *c, int node, uint64_t ns)
{
	eng_hist *h;
	double s = (double)ns / 1e9;
	int i = 0;

	if (!c->hist || node < 0)
		return;
	h = &c->hist[node];
	while (i < ENG_DURATION_BUCKETS - 1 && s > eng_duration_bounds[i])
		i++;
	atomic_fetch_add_explicit(&h->b[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

int eng__sampler_init(eng_ctx *c, eng_sampler *s, uint32_t attempt,
		      core_err *err)
{
	const eng_opts *o = c->opts;
	size_t n = c->g->nnodes;

	c->sampler = NULL;
	if (!c->audit->rec && !(o && o->sample))
		return 0;
	*s = (eng_sampler){ .attempt = attempt,
		.every_ns = (uint64_t)(o && o->sample_ms ? o->sample_ms : SAMPLE_MS_DEFAULT) * 1000000u };
	s->ups = calloc(n, sizeof(*s->ups));
	s->rups = calloc(n, sizeof(*s->rups));
	s->rupp = calloc(n, sizeof(*s->rupp));
	s->nodes = calloc(n, sizeof(*s->nodes));
	c->hist = calloc(n, sizeof(*c->hist));
	if (!s->ups || !s->rups || !s->rupp || !s->nodes || !c->hist) {
		free(s->ups);
		free(s->rups);
		free(s->rupp);
		free(s->nodes);
		free(c->hist);
		c->hist = NULL;
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	c->sampler = s;
	return 0;
}

void eng__sampler_release(eng_ctx *c)
{
	if (!c->sampler)
		return;
	free(c->sampler->ups);
	free(c->sampler->rups);
	free(c->sampler->rupp);
	free(c->sampler->nodes);
	free(c->hist);
	c->hist = NULL;
	c->sampler = NULL;
}

bool eng__sample_due(const eng_ctx *c, uint64_t now)
{
	return c->sampler && now >= c->sampler->next_mono;
}

/* The nonzero counts of `n` named counters, as SampleCounts in cnt (and
 * their pointers in ptr); returns how many. */
static size_t counts(const uint64_t *v, size_t n, const char *(*name)(size_t),
		     Elspeth__SampleCount *cnt, Elspeth__SampleCount **ptr)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!v[i])
			continue;
		elspeth__sample_count__init(&cnt[k]);
		cnt[k].name = (char *)name(i);
		cnt[k].n = v[i];
		ptr[k] = &cnt[k];
		k++;
	}
	return k;
}

static const char *outcome_name(size_t i)
{
	return eng_outcome_name((eng_outcome)i);
}

static const char *class_name(size_t i)
{
	return eng_call_classes[i];
}

/* Each open transform's capacity control, into the sampler's scratch. */
static void upstreams(eng_ctx *c, eng_sampler *s)
{
	s->nups = 0;
	for (size_t i = 0; i < c->g->nnodes; i++) {
		const dag_node *n = &c->g->nodes[i];
		eng_sample_upstream *u = &s->ups[s->nups];

		if (n->kind != DAG_TRANSFORM || !n->tops->capacity || !n->tstate ||
		    !n->tops->capacity(n->tstate, &u->cap))
			continue;
		u->node = (uint32_t)i;
		u->name = n->name;
		s->nups++;
	}
}

/* Each transform's, gate's and sink's durations so far, cumulative. */
static size_t nodes(eng_ctx *c, eng_sampler *s)
{
	size_t k = 0;

	for (size_t i = 0; c->hist && i < c->g->nnodes; i++) {
		const dag_node *n = &c->g->nodes[i];
		eng_sample_node *o = &s->nodes[k];
		uint64_t run = 0;

		if (n->kind != DAG_TRANSFORM && n->kind != DAG_GATE && n->kind != DAG_SINK)
			continue;
		o->name = n->name;
		o->kind = n->kind == DAG_TRANSFORM ? "transform" : n->kind == DAG_GATE ? "gate" :
			  "sink";
		for (int b = 0; b < ENG_DURATION_BUCKETS; b++) {
			run += atomic_load_explicit(&c->hist[i].b[b], memory_order_relaxed);
			o->le[b] = run;
		}
		o->count = run; /* the buckets' total: consistent with them */
		o->sum_s = (double)atomic_load_explicit(&c->hist[i].sum_ns,
							memory_order_relaxed) / 1e9;
		k++;
	}
	return k;
}

/* The sample as the Landscape keeps it (a SampleRecord). */
static void record(eng_ctx *c, eng_sampler *s, const eng_sample *x)
{
	Elspeth__SampleRecord r = ELSPETH__SAMPLE_RECORD__INIT;
	Elspeth__SampleCount oc[ENG_OUTCOME_LAST], cc[ENG_CALL_CLASSES];
	Elspeth__SampleCount *ocp[ENG_OUTCOME_LAST], *ccp[ENG_CALL_CLASSES];

	for (size_t i = 0; i < x->nupstreams; i++) {
		const plg_capacity *cap = &x->upstreams[i].cap;
		Elspeth__SampleUpstream *u = &s->rups[i];

		elspeth__sample_upstream__init(u);
		u->node_id = x->upstreams[i].node;
		u->upstream = (char *)(cap->upstream ? cap->upstream : "");
		u->rate = cap->rate;
		u->window = cap->window;
		u->ceiling = cap->ceiling;
		u->in_flight = cap->in_flight;
		u->requests = cap->requests;
		u->refusals = cap->refusals;
		u->held_by = (char *)(cap->held_by ? cap->held_by : "");
		s->rupp[i] = u;
	}
	r.run_id = x->run_id;
	r.attempt = x->attempt;
	r.index = x->index;
	r.at_ns = x->at_ns;
	r.elapsed_ns = x->elapsed_ns;
	r.final = x->final;
	r.pulled = x->pulled;
	r.released = x->released;
	r.in_flight = x->in_flight;
	r.waiting = x->waiting;
	r.waiting_bytes = x->waiting_bytes;
	r.held_by = (char *)(x->held_by ? x->held_by : "");
	r.n_outcomes = counts(x->outcomes, ENG_OUTCOME_LAST, outcome_name, oc, ocp);
	r.outcomes = ocp;
	r.calls = x->calls;
	r.calls_ok = x->calls_ok;
	r.calls_replayed = x->calls_replayed;
	r.n_call_classes = counts(x->calls_by_class, ENG_CALL_CLASSES, class_name, cc, ccp);
	r.call_classes = ccp;
	r.n_upstreams = x->nupstreams;
	r.upstreams = s->rupp;
	/* A put error is sticky in the recorder: the run's next audit write
	 * (an outcome, a checkpoint, the final flush) reports it. */
	(void)rec_sample_put(c->audit->rec, &r);
}

void eng__sample(eng_ctx *c, const eng_sample_at *at)
{
	eng_sampler *s = c->sampler;
	const eng_opts *o = c->opts;
	uint64_t now = core_now_mono_ns();
	eng_sample x = { 0 };

	if (!s)
		return;
	upstreams(c, s);
	x.run_id = c->audit->run_id;
	x.attempt = s->attempt;
	x.index = s->index++;
	x.at_ns = core_now_wall_ns();
	x.elapsed_ns = now - c->t0_mono;
	x.final = at->final;
	x.pulled = at->pulled;
	x.released = at->released;
	x.in_flight = at->in_flight;
	x.waiting = at->waiting;
	x.waiting_bytes = at->waiting_bytes;
	x.held_by = at->held_by ? at->held_by : "";
	memcpy(x.outcomes, at->outcomes, sizeof(x.outcomes));
	x.calls = atomic_load_explicit(&c->calls, memory_order_relaxed);
	x.calls_ok = atomic_load_explicit(&c->calls_ok, memory_order_relaxed);
	x.calls_replayed = atomic_load_explicit(&c->calls_replayed, memory_order_relaxed);
	for (size_t i = 0; i < ENG_CALL_CLASSES; i++)
		x.calls_by_class[i] = atomic_load_explicit(&c->calls_by_class[i],
							   memory_order_relaxed);
	x.nupstreams = s->nups;
	x.upstreams = s->ups;
	x.retries = atomic_load_explicit(&c->retries, memory_order_relaxed);
	x.checkpoints = atomic_load_explicit(&c->ckpts, memory_order_relaxed);
	rec_activity_get(c->audit->rec, &x.rec);
	x.nnodes = nodes(c, s);
	x.nodes = s->nodes;
	if (c->audit->rec)
		record(c, s, &x);
	if (o && o->sample)
		o->sample(o->sample_ctx, &x);
	s->next_mono = now + s->every_ns;
}

/*
 * sample.c — the run's metric samples (docs/report.md): about once a
 * second and at the end of each attempt, the pipeline's counters (rows
 * pulled, released, in flight, waiting for in-order release), the token
 * outcomes and outside calls so far, and each LLM transform's capacity
 * control, as one SampleRecord in the Landscape (REC_SAMPLES).
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
#include <stdlib.h>

#include "engine/engine_internal.h"

#define SAMPLE_MS_DEFAULT 1000

int eng__sampler_init(eng_ctx *c, eng_sampler *s, uint32_t attempt,
		      core_err *err)
{
	const eng_opts *o = c->opts;
	size_t n = c->g->nnodes;

	c->sampler = NULL;
	if (!c->audit->rec)
		return 0;
	*s = (eng_sampler){ .attempt = attempt,
		.every_ns = (uint64_t)(o && o->sample_ms ? o->sample_ms : SAMPLE_MS_DEFAULT) * 1000000u };
	s->ups = calloc(n, sizeof(*s->ups));
	s->upp = calloc(n, sizeof(*s->upp));
	if (!s->ups || !s->upp) {
		free(s->ups);
		free(s->upp);
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
	free(c->sampler->upp);
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
		Elspeth__SampleUpstream *u = &s->ups[s->nups];
		plg_capacity cap;

		if (n->kind != DAG_TRANSFORM || !n->tops->capacity || !n->tstate ||
		    !n->tops->capacity(n->tstate, &cap))
			continue;
		elspeth__sample_upstream__init(u);
		u->node_id = (uint32_t)i;
		u->upstream = (char *)(cap.upstream ? cap.upstream : "");
		u->rate = cap.rate;
		u->window = cap.window;
		u->ceiling = cap.ceiling;
		u->in_flight = cap.in_flight;
		u->requests = cap.requests;
		u->refusals = cap.refusals;
		u->held_by = (char *)(cap.held_by ? cap.held_by : "");
		s->upp[s->nups++] = u;
	}
}

void eng__sample(eng_ctx *c, const eng_sample_at *at)
{
	eng_sampler *s = c->sampler;
	Elspeth__SampleRecord r = ELSPETH__SAMPLE_RECORD__INIT;
	Elspeth__SampleCount oc[ENG_OUTCOME_LAST], cc[ENG_CALL_CLASSES];
	Elspeth__SampleCount *ocp[ENG_OUTCOME_LAST], *ccp[ENG_CALL_CLASSES];
	uint64_t classes[ENG_CALL_CLASSES], now = core_now_mono_ns();

	if (!s)
		return;
	for (size_t i = 0; i < ENG_CALL_CLASSES; i++)
		classes[i] = atomic_load_explicit(&c->calls_by_class[i], memory_order_relaxed);
	upstreams(c, s);
	r.run_id = c->audit->run_id;
	r.attempt = s->attempt;
	r.index = s->index++;
	r.at_ns = core_now_wall_ns();
	r.elapsed_ns = now - c->t0_mono;
	r.final = at->final;
	r.pulled = at->pulled;
	r.released = at->released;
	r.in_flight = at->in_flight;
	r.waiting = at->waiting;
	r.waiting_bytes = at->waiting_bytes;
	r.held_by = (char *)(at->held_by ? at->held_by : "");
	r.n_outcomes = counts(at->outcomes, ENG_OUTCOME_LAST, outcome_name, oc, ocp);
	r.outcomes = ocp;
	r.calls = atomic_load_explicit(&c->calls, memory_order_relaxed);
	r.calls_ok = atomic_load_explicit(&c->calls_ok, memory_order_relaxed);
	r.calls_replayed = atomic_load_explicit(&c->calls_replayed, memory_order_relaxed);
	r.n_call_classes = counts(classes, ENG_CALL_CLASSES, class_name, cc, ccp);
	r.call_classes = ccp;
	r.n_upstreams = s->nups;
	r.upstreams = s->upp;
	/* A put error is sticky in the recorder: the run's next audit write
	 * (an outcome, a checkpoint, the final flush) reports it. */
	(void)rec_sample_put(c->audit->rec, &r);
	s->next_mono = now + s->every_ns;
}

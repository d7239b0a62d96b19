/*
 * pipeline.c — the three stages (DESIGN.md §4): a source puller thread, a
 * pool of worker threads and the release loop (the calling thread).
 *
 * DESIGN (one lock, p->lock, guards everything below it in struct pipe;
 * the ring slots' row/result are owned by whoever holds the slot's state:
 * READY — the ready queue; RUNNING — one worker; DONE — the release loop):
 *
 *   puller    waits while `in_flight` rows are unreleased (backpressure),
 *             pulls one row (unlocked), numbers it seq, puts it in the ring
 *             slot seq % cap as READY and signals a worker;
 *   workers   take the oldest READY row, walk it (unlocked), mark it DONE
 *             and wake the release loop if it is the next to release;
 *   release   waits for the row with the next seq to be DONE, releases it
 *             (unlocked: sinks, aggregations), frees its slot and wakes the
 *             puller. It also wakes for aggregation timeouts and for stop.
 *
 * A row whose processing failed stops the run when its turn to be
 * released comes, so the run fails at the same row in every mode. On
 * SIGINT/SIGTERM the puller stops; the rows in flight finish and are
 * released (ADR 0007). Sequential mode is the same machinery with one row
 * in flight and one worker.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_internal.h"

#define WORKER_STACK (256 * 1024)
#define POLL_NS (100 * 1000 * 1000ull) /* the release loop checks stop */

enum slot_state { SLOT_EMPTY, SLOT_READY, SLOT_RUNNING, SLOT_DONE };

typedef struct slot {
	enum slot_state state;
	eng_row row;
	eng_result res;
	int rc;
	core_err err;
	uint64_t done_ns;
	bool waited;       /* done before its predecessors were released */
} slot;

typedef struct pipe {
	eng_ctx *c;
	void *src;
	unsigned cap;             /* max rows in flight */
	pthread_mutex_t lock;
	pthread_cond_t puller_cv, worker_cv, release_cv;
	slot *ring;
	uint64_t pulled;          /* highest seq pulled */
	uint64_t next_ready;      /* lowest seq that may be READY */
	uint64_t released;        /* highest seq released */
	uint64_t running;         /* rows taken by workers, not yet done */
	bool source_done, shutdown;
	/* Who sleeps: a signal is sent only to a waiting thread, and the
	 * puller is woken only when a quarter of the ring is free, so it
	 * refills in bursts (fewer context switches per row). */
	bool puller_waiting, release_waiting;
	unsigned idle_workers;
	int source_rc;
	core_err source_err;
	/* metrics (under lock) */
	uint64_t peak_in_flight, peak_waiting, waiting;
	uint64_t wait_sum_ns, wait_max_ns, wait_n;
	uint64_t source_blocked_ns;
	uint64_t src_done, src_total; /* source progress (under lock) */
	uint64_t last_progress;   /* release thread only */
	uint64_t release_busy_ns; /* release thread only: in sinks */
} pipe;

static slot *slot_of(pipe *p, uint64_t seq)
{
	return &p->ring[seq % p->cap];
}

/* -------------------------------------------------------------- puller */

static int pull(pipe *p, uint64_t seq, eng_row *row)
{
	const plg_source_ops *ops = p->c->g->nodes[0].sops;
	plg_source_row r = { 0 };
	int rc = ops->next(p->src, &r, &p->source_err);

	if (rc <= 0)
		return rc;
	row->seq = seq;
	row->data = r.row;
	row->error = r.error;
	row->where = r.where;
	return 1;
}

/* Asks the source how far it is (puller or sequential loop only). */
static void source_progress(pipe *p)
{
	const plg_source_ops *ops = p->c->g->nodes[0].sops;

	if (ops->progress)
		ops->progress(p->src, &p->src_done, &p->src_total);
}

static bool stopping(pipe *p)
{
	return p->shutdown || (p->c->stop && *p->c->stop);
}

static void *puller_main(void *arg)
{
	pipe *p = arg;

	for (;;) {
		eng_row row = { 0 };
		uint64_t t0 = core_now_mono_ns();
		int rc;

		pthread_mutex_lock(&p->lock);
		while (p->pulled - p->released >= p->cap && !stopping(p)) {
			p->puller_waiting = true;
			pthread_cond_wait(&p->puller_cv, &p->lock);
			p->puller_waiting = false;
		}
		p->source_blocked_ns += core_now_mono_ns() - t0;
		if (stopping(p)) {
			p->source_done = true;
			pthread_cond_signal(&p->release_cv);
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		pthread_mutex_unlock(&p->lock);

		rc = pull(p, p->pulled + 1, &row);

		pthread_mutex_lock(&p->lock);
		if (rc <= 0) {
			p->source_done = true;
			p->source_rc = rc;
			pthread_cond_signal(&p->release_cv); /* may wait for the end */
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		p->pulled = row.seq;
		source_progress(p);
		*slot_of(p, row.seq) = (slot){ .state = SLOT_READY, .row = row };
		if (p->pulled - p->released > p->peak_in_flight)
			p->peak_in_flight = p->pulled - p->released;
		if (p->idle_workers)
			pthread_cond_signal(&p->worker_cv);
		pthread_mutex_unlock(&p->lock);
	}
}

/* ------------------------------------------------------------- workers */

/* The oldest READY row, or 0: rows become READY in seq order and are
 * taken in that order. Called with the lock held. */
static uint64_t take_ready(pipe *p)
{
	return p->next_ready <= p->pulled ? p->next_ready++ : 0;
}

static void *worker_main(void *arg)
{
	pipe *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		uint64_t seq;
		slot *s;

		while (!p->shutdown && !(seq = take_ready(p))) {
			p->idle_workers++;
			pthread_cond_wait(&p->worker_cv, &p->lock);
			p->idle_workers--;
		}
		if (p->shutdown)
			break;
		s = slot_of(p, seq);
		s->state = SLOT_RUNNING;
		p->running++;
		pthread_mutex_unlock(&p->lock);

		s->rc = eng__process_row(p->c, &s->row, &s->res, &s->err);

		pthread_mutex_lock(&p->lock);
		s->state = SLOT_DONE;
		s->done_ns = core_now_mono_ns();
		p->running--;
		if (seq > p->released + 1) {
			s->waited = true;
			if (++p->waiting > p->peak_waiting)
				p->peak_waiting = p->waiting;
		}
		if (seq == p->released + 1 && p->release_waiting)
			pthread_cond_signal(&p->release_cv);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ------------------------------------------------------------- release */

static void deadline_ts(uint64_t mono_deadline, struct timespec *ts)
{
	uint64_t now = core_now_mono_ns(), wait = POLL_NS;

	if (mono_deadline && mono_deadline > now && mono_deadline - now < wait)
		wait = mono_deadline - now;
	else if (mono_deadline && mono_deadline <= now)
		wait = 0;
	/* The condition variables use CLOCK_MONOTONIC (pipe_init). */
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(wait / 1000000000u);
	ts->tv_nsec += (long)(wait % 1000000000u);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Releases one DONE row (unlocked). */
static int release_row(pipe *p, slot *s, eng_summary *sum, core_err *err)
{
	uint64_t wait = core_now_mono_ns() - s->done_ns;
	int rc;

	if (s->rc) {
		*err = s->err;
		return s->rc;
	}
	p->wait_sum_ns += wait; /* release thread only */
	p->wait_n++;
	if (wait > p->wait_max_ns)
		p->wait_max_ns = wait;
	sum->rows++;
	wait = core_now_mono_ns();
	rc = eng__release(p->c, &s->res, sum, err);
	p->release_busy_ns += core_now_mono_ns() - wait;
	eng__result_release(&s->res);
	eng__row_release(&s->row);
	return rc;
}

/* Reports progress when due (or always, when final). Lock held. */
static void report(pipe *p, const eng_summary *sum, bool final)
{
	const eng_opts *o = p->c->opts;
	uint64_t now = core_now_mono_ns();
	eng_progress pr;

	if (!o || !o->progress)
		return;
	if (!final && now - p->last_progress < (uint64_t)(o->progress_ms ? o->progress_ms : 250) * 1000000u)
		return;
	p->last_progress = now;
	pr = (eng_progress){ .pulled = p->pulled, .released = p->released,
		.in_flight = p->pulled - p->released, .waiting = p->waiting,
		.failed = sum->failed, .quarantined = sum->quarantined,
		.elapsed_s = (double)(now - p->c->t0_mono) / 1e9, .final = final,
		.source_done = p->src_done, .source_total = p->src_total };
	o->progress(o->progress_ctx, &pr);
}

/* Waits for the next row; returns 1 with it, 0 at the end, or an error.
 * Fires aggregation timeouts while it waits. Called with the lock held. */
static int next_done(pipe *p, slot **out, eng_summary *sum, core_err *err)
{
	for (;;) {
		slot *s = slot_of(p, p->released + 1);
		struct timespec ts;
		uint64_t dl;
		int rc;

		if (p->released < p->pulled && s->state == SLOT_DONE) {
			*out = s;
			return 1;
		}
		if (p->source_done && p->released == p->pulled)
			return 0;
		if (p->c->stop && *p->c->stop)
			pthread_cond_signal(&p->puller_cv); /* let it see stop */
		report(p, sum, false);
		dl = eng__aggs_deadline(p->c);
		if (dl && dl <= core_now_mono_ns()) {
			pthread_mutex_unlock(&p->lock);
			rc = eng__aggs_tick(p->c, core_now_mono_ns(), p->released, false,
					    sum, err);
			pthread_mutex_lock(&p->lock);
			if (rc)
				return rc;
			continue;
		}
		deadline_ts(dl, &ts);
		p->release_waiting = true;
		pthread_cond_timedwait(&p->release_cv, &p->lock, &ts);
		p->release_waiting = false;
	}
}

static int release_loop(pipe *p, eng_summary *sum, core_err *err)
{
	slot *s = NULL;
	int rc;

	pthread_mutex_lock(&p->lock);
	while ((rc = next_done(p, &s, sum, err)) == 1) {
		if (s->waited)
			p->waiting--;
		pthread_mutex_unlock(&p->lock);
		rc = release_row(p, s, sum, err);
		pthread_mutex_lock(&p->lock);
		s->state = SLOT_EMPTY;
		p->released++;
		if (p->puller_waiting &&
		    p->cap - (p->pulled - p->released) >= (p->cap + 3) / 4)
			pthread_cond_signal(&p->puller_cv);
		report(p, sum, false);
		if (rc)
			break;
	}
	if (!rc && p->source_rc < 0) {
		*err = p->source_err;
		rc = p->source_rc;
	}
	report(p, sum, true);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* ---------------------------------------------------------- lifecycle */

static int pipe_init(pipe *p, eng_ctx *c, void *src, unsigned cap)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->c = c;
	p->src = src;
	p->cap = cap;
	p->next_ready = 1;
	p->ring = calloc(cap, sizeof(*p->ring));
	if (!p->ring)
		return CORE_ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->puller_cv, NULL);
	pthread_cond_init(&p->worker_cv, NULL);
	pthread_cond_init(&p->release_cv, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

/* Rows processed but never released (the run failed): their tokens get a
 * FAILED outcome so the trail stays complete. */
static void abandon(pipe *p, eng_summary *sum)
{
	for (unsigned i = 0; i < p->cap; i++) {
		slot *s = &p->ring[i];

		if (s->state == SLOT_DONE) {
			for (size_t t = 0; t < s->res.ntokens; t++) {
				eng_token *tok = &s->res.tokens[t];

				tok->outcome = ENG_FAILED;
				tok->to = ENG_TO_DISCARD;
				free(tok->error);
				tok->error = strdup("not released: the run stopped at an earlier row");
				eng__audit_outcome(p->c->audit, s->row.seq, tok);
			}
		}
		eng__result_release(&s->res);
		eng__row_release(&s->row);
	}
	(void)sum;
}

static void pipe_destroy(pipe *p)
{
	pthread_cond_destroy(&p->puller_cv);
	pthread_cond_destroy(&p->worker_cv);
	pthread_cond_destroy(&p->release_cv);
	pthread_mutex_destroy(&p->lock);
	free(p->ring);
}

static void metrics(pipe *p, eng_summary *sum)
{
	sum->in_flight = p->cap;
	sum->peak_in_flight = p->peak_in_flight;
	sum->peak_waiting = p->peak_waiting;
	sum->fifo_wait_mean_ms = p->wait_n ? (double)p->wait_sum_ns / (double)p->wait_n / 1e6 : 0;
	sum->fifo_wait_max_ms = (double)p->wait_max_ns / 1e6;
	sum->source_blocked_s = (double)p->source_blocked_ns / 1e9;
	sum->release_blocked_s = (double)p->release_busy_ns / 1e9;
}

/* One row in flight: the same stages, called in turn on this thread
 * (three threads handing every row to each other would cost more than
 * the work). Aggregation timeouts are checked between rows. */
static int sequential(eng_ctx *c, void *src, eng_summary *sum, core_err *err)
{
	pipe p;
	int rc = 0;

	if (pipe_init(&p, c, src, 1))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	while (!rc) {
		slot *s = &p.ring[0];
		int prc;

		if (c->stop && *c->stop)
			break;
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, false, sum, err);
		if (rc)
			break;
		prc = pull(&p, p.pulled + 1, &s->row);
		if (prc < 0) {
			*err = p.source_err;
			rc = prc;
		}
		if (prc <= 0)
			break;
		p.pulled = s->row.seq;
		p.peak_in_flight = 1;
		source_progress(&p);
		s->rc = eng__process_row(c, &s->row, &s->res, &s->err);
		s->done_ns = core_now_mono_ns();
		s->state = SLOT_DONE;
		rc = release_row(&p, s, sum, err);
		if (rc)
			break;
		s->state = SLOT_EMPTY;
		p.released++;
		pthread_mutex_lock(&p.lock);
		report(&p, sum, false);
		pthread_mutex_unlock(&p.lock);
	}
	if (rc == 0 && !(c->stop && *c->stop))
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, true, sum, err);
	pthread_mutex_lock(&p.lock);
	report(&p, sum, true);
	pthread_mutex_unlock(&p.lock);
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, sum);
	pipe_destroy(&p);
	return rc;
}

int eng__pipeline(eng_ctx *c, void *src, unsigned in_flight,
		  eng_summary *sum, core_err *err)
{
	pthread_t puller, *workers;
	pthread_attr_t attr;
	unsigned nworkers = 0;
	bool puller_up = false;
	pipe p;
	int rc;

	if (in_flight == 1)
		return sequential(c, src, sum, err);
	if (pipe_init(&p, c, src, in_flight))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	workers = calloc(in_flight, sizeof(*workers));
	if (!workers) {
		pipe_destroy(&p);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, WORKER_STACK);
	for (; nworkers < in_flight; nworkers++)
		if (pthread_create(&workers[nworkers], &attr, worker_main, &p))
			break;
	puller_up = nworkers == in_flight &&
		    !pthread_create(&puller, NULL, puller_main, &p);
	rc = puller_up ? 0 : -1;
	pthread_attr_destroy(&attr);
	if (rc) {
		rc = core_err_set(err, CORE_EIO, "cannot start the pipeline threads");
		p.shutdown = true;
	} else {
		rc = release_loop(&p, sum, err);
		if (!rc && !(c->stop && *c->stop))
			rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, true, sum, err);
	}
	pthread_mutex_lock(&p.lock);
	p.shutdown = true;
	pthread_cond_broadcast(&p.worker_cv);
	pthread_cond_broadcast(&p.puller_cv);
	pthread_mutex_unlock(&p.lock);
	if (puller_up)
		pthread_join(puller, NULL);
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	free(workers);
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, sum);
	pipe_destroy(&p);
	return rc;
}

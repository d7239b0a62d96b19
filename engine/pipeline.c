/*
 * pipeline.c — a pipelined run: the worker threads (the WorkPool of
 * docs/architecture.md §4), the calling thread that supervises them, start,
 * shutdown and sequential mode. The pull role is source_puller.c, the
 * release role release_queue.c; what they share, and the locking rule, is
 * pipeline_internal.h.
 *
 * DESIGN. The stages are roles, not threads (ADR 0009). There are N
 * worker threads (N = max_rows_in_flight); each loops:
 *
 *   release   if the oldest unreleased row is DONE and nobody holds the
 *             release role, take it and release every consecutive DONE
 *             row in seq order (sinks, aggregations), then drop it;
 *   pull      else if there is room (fewer than N rows being processed
 *             and fewer than M = max_completed_waiting rows unreleased),
 *             take the next row read ahead and process it (the WorkPool
 *             part) — first handing rows to idle workers until one
 *             worker per CPU runs;
 *   idle      else sleep until there is room again.
 *
 * Rows are read from the source ahead of the pull, up to AHEAD of them,
 * by whoever takes the pull role: a worker that finds nothing read
 * (reads up to AHEAD), or one whose row starts to wait (blocking()) and
 * finds fewer than AHEAD_LOW (reads a chunk). Taking a row read ahead
 * needs only the lock, so workers do not queue for the source (ADR
 * 0014). So the source is read up to AHEAD rows past the backpressure
 * point. Rows read ahead but never pulled (a stop, a failure) are
 * dropped unrecorded; a resume reads them again.
 *
 * So a slow transform holds only its own thread, a thread that finishes
 * its row pulls the next itself, and a row crosses no thread boundary
 * unless it has to: with fast transforms one thread does it all, as in
 * sequential mode, instead of three threads handing every row to each
 * other. One thread at a time holds each role, so the source, the sinks
 * and the aggregations still see one caller at a time, in seq order.
 *
 * One lock, p->lock, guards the counters, the roles and the ring slots'
 * states (pipeline_internal.h). The calling thread waits for the end,
 * reports progress and records the metric samples (sample.c), both with
 * no lock held (a slow terminal or a full recorder queue stalls no
 * worker), and fires aggregation timeouts (taking the release role to do
 * so).
 *
 * A row whose processing failed stops the run when its turn to be
 * released comes, so the run fails at the same row in every mode. On
 * SIGINT/SIGTERM no more rows are pulled; the rows in flight finish and
 * are released (ADR 0007) — up to a row the interrupt cut short
 * (CORE_ESTOPPED), which stays unreleased with the rows after it, for
 * `elspeth resume`. A transform's plg_ctx.halt sets the same stop flag
 * (run.c), so a halted run stops the same way. Whoever holds the
 * release role also takes the checkpoints (ADR 0012): after a release
 * pass when one is due, before the first row, and at the end.
 * Sequential mode runs the same stages inline on the calling thread.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/pipeline_internal.h"

#define WORKER_STACK (256 * 1024)
#define POLL_NS (100 * 1000 * 1000ull) /* the calling thread checks stop */

/* Set on the worker threads: blocking() counts only them. */
static _Thread_local bool is_worker;

/* Progress is reported by the calling thread only, with no lock held: the
 * callback may block on a terminal or a pipe, and no worker must wait for
 * it. progress_due() takes the snapshot under the lock; report() calls
 * the callback after the lock is dropped. */
static bool progress_due(pline *p, bool final, eng_progress *pr)
{
	const eng_opts *o = p->c->opts;
	uint64_t now = core_now_mono_ns();
	uint64_t every = (uint64_t)(o && o->progress_ms ? o->progress_ms : 250) * 1000000u;

	if (!o || !o->progress)
		return false;
	if (!final && now - p->last_progress < every)
		return false;
	p->last_progress = now;
	*pr = (eng_progress){ .pulled = p->pulled, .released = p->released,
		.in_flight = p->processing, .waiting = p->waiting,
		.waiting_bytes = p->wait_bytes,
		.held_by = p->source_done ? "" : eng__pl_hold_name(pl_held_by(p)),
		.failed = p->failed, .quarantined = p->quarantined,
		.elapsed_s = (double)(now - p->c->t0_mono) / 1e9, .final = final,
		.source_done = p->src_done, .source_total = p->src_total };
	return true;
}

/* Reports progress when due (or always, when final). Lock held on entry
 * and exit; dropped around the callback. Returns whether it was dropped. */
static bool report(pline *p, bool final)
{
	const eng_opts *o = p->c->opts;
	eng_progress pr;

	if (!progress_due(p, final, &pr))
		return false;
	pthread_mutex_unlock(&p->lock);
	o->progress(o->progress_ctx, &pr);
	pthread_mutex_lock(&p->lock);
	return true;
}

/* Metric samples (sample.c) are taken by the calling thread too, like
 * progress: the counters are copied under the lock, the sample is
 * recorded with it dropped. */
static void sample_at(pline *p, bool final, eng_sample_at *at)
{
	*at = (eng_sample_at){ .pulled = p->pulled, .released = p->released,
		.in_flight = p->processing, .waiting = p->waiting, .final = final,
		.waiting_bytes = p->wait_bytes,
		.held_by = p->source_done ? "" : eng__pl_hold_name(pl_held_by(p)) };
	memcpy(at->outcomes, p->outcomes, sizeof(at->outcomes));
}

/* Records a sample when one is due. Lock held on entry and exit; dropped
 * around the recording. Returns whether it was dropped. */
static bool sample_if_due(pline *p)
{
	eng_sample_at at;

	if (!p->c->sampler || !eng__sample_due(p->c, core_now_mono_ns()))
		return false; /* no clock read per row when nothing samples */
	sample_at(p, false, &at);
	pthread_mutex_unlock(&p->lock);
	eng__sample(p->c, &at);
	pthread_mutex_lock(&p->lock);
	return true;
}

/* The attempt's last sample, once nothing runs any more (the workers
 * are joined, or sequential mode): sum is read directly, as it stands
 * after the last batches were flushed. */
static void sample_final(pline *p)
{
	eng_sample_at at;

	if (!p->c->sampler)
		return;
	pthread_mutex_lock(&p->lock);
	eng__pl_copy_totals(p);
	sample_at(p, true, &at);
	pthread_mutex_unlock(&p->lock);
	eng__sample(p->c, &at);
}

/* The first failure ends the run: nothing more is pulled or released. */
void eng__pl_fail(pline *p, int rc, const core_err *err)
{
	if (!p->rc) {
		p->rc = rc;
		p->err = *err;
	}
	pthread_cond_broadcast(&p->work_cv);
	pthread_cond_signal(&p->main_cv);
}

/* plg_ctx.blocking: a worker waits for a timer or the network. Its row
 * needs no CPU meanwhile, so rows are pulled for idle workers: this is how
 * N rows come to be in flight. Only as many as bring the running workers
 * back to the target: each of those, when its row blocks, brings in the
 * next. Waking a batch at once (up to 32) made the woken workers queue
 * for the lock and the CPUs: at N = 256 with 20 ms rows, 2,000 rows took
 * 177-184 ms instead of 176-178 (Little's law: 156). The waiting worker
 * then tops up the rows read ahead. All of this only if the lock is free
 * at once: a worker about to wait does not queue for the lock (that was
 * a quarter of the run's futex calls), and whoever holds the lock starts
 * rows itself when it can (worker_main, release_rows). */
static void blocking(void *arg, bool begin)
{
	pline *p = arg;

	if (!is_worker) /* the calling thread (an aggregation flush): it is
			 * not counted among the workers */
		return;
	if (!begin) {
		atomic_fetch_add(&p->active, 1);
		return;
	}
	atomic_fetch_sub(&p->active, 1);
	/* The rest helps the other workers. When the lock is busy, an idle
	 * worker is woken to look for rows itself (cheap when none is idle:
	 * no waiter, no system call). */
	if (pthread_mutex_trylock(&p->lock)) {
		if (running(p) < p->target)
			pthread_cond_signal(&p->work_cv);
		return;
	}
	if (short_of_workers(p)) {
		if (can_start(p))
			eng__pl_pull_rows(p, 0);
		else if (!p->pulling) /* e.g. the release role is busy */
			pthread_cond_signal(&p->work_cv);
	}
	/* This worker waits anyway: it reads a few rows ahead for the
	 * others (a chunk, so the wait is rarely outlasted). */
	if (ahead_n(p) < AHEAD_LOW && can_read(p))
		eng__pl_read_ahead(p, READ_CHUNK);
	pthread_mutex_unlock(&p->lock);
}

/* What a DONE row holds while it waits: its slot, its input and the
 * outputs its tokens carry to the sinks (the waiting budget). */
static size_t slot_bytes(const slot *s)
{
	size_t n = sizeof(*s) + core_json_heap_bytes(s->row.data) +
		   s->res.cap * sizeof(*s->res.tokens);

	for (size_t i = 0; i < s->res.ntokens; i++)
		n += core_json_heap_bytes(s->res.tokens[i].data);
	return n;
}

/* Runs row s on this thread (unlocked) and keeps its error, if any. */
static void run_row(pline *p, slot *s)
{
	core_err e;

	s->rc = eng__row_run(p->c, &s->row, &s->res, &e);
	if (s->rc && (s->err = malloc(sizeof(*s->err))))
		*s->err = e;
	s->bytes = slot_bytes(s);
}

/* Walks row seq (unlocked) and marks it DONE. The lock is held on entry
 * and exit. */
static void process(pline *p, uint64_t seq)
{
	slot *s = slot_of(p, seq);

	pthread_mutex_unlock(&p->lock);
	run_row(p, s);
	pthread_mutex_lock(&p->lock);
	s->state = SLOT_DONE;
	s->done_ns = core_now_mono_ns();
	p->wait_bytes += s->bytes;
	if (p->wait_bytes > p->peak_wait_bytes)
		p->peak_wait_bytes = p->wait_bytes;
	p->processing--;
	if (seq > p->released + 1) {
		s->waited = true;
		if (++p->waiting > p->peak_waiting)
			p->peak_waiting = p->waiting;
	}
	eng__pl_track_blocked(p);
}

static void *worker_main(void *arg)
{
	pline *p = arg;
	uint8_t warm[CORE_SHA256_LEN];
	uint64_t seq;

	pthread_setname_np(pthread_self(), "elspeth-worker"); /* for top -H, gdb */
	is_worker = true;
	/* OpenSSL sets up its per-thread state on a thread's first digest;
	 * done here, while the threads are created, rather than by 256 rows
	 * of the first wave at once (~1 ms of a 2,000-row run at N = 256). */
	core_sha256("", 0, warm);

	pthread_mutex_lock(&p->lock);
	p->active++;
	while (!p->shutdown) {
		if (eng__rq_ready(p))
			eng__rq_drain(p);
		else if (p->hand_head < p->hand_tail)
			process(p, p->handq[p->hand_head++ % p->cap]);
		else if (can_start(p)) {
			/* Fewer workers run than there are CPUs: take one
			 * more along. A row that waits (blocking()) brings
			 * in the others. */
			if ((seq = eng__pl_pull_rows(p, 1)))
				process(p, seq);
		} else {
			/* The calling thread decides when the run is over. */
			eng__pl_wake_main(p);
			p->active--;
			p->idle++;
			pthread_cond_wait(&p->work_cv, &p->lock);
			p->idle--;
			p->active++;
		}
	}
	p->active--;
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

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

/* Fires due aggregation timeouts under the release role (lock held on
 * entry and exit); returns the deadline of the next one (0: none). */
static uint64_t aggregation_timeouts(pline *p)
{
	core_err err;
	uint64_t dl;
	int rc = 0;

	p->releasing = true;
	pthread_mutex_unlock(&p->lock);
	dl = eng__aggs_deadline(p->c);
	if (dl && dl <= core_now_mono_ns()) {
		rc = eng__aggs_tick(p->c, core_now_mono_ns(), p->released, false,
				    p->sum, &err);
		dl = eng__aggs_deadline(p->c);
	}
	pthread_mutex_lock(&p->lock);
	eng__pl_copy_totals(p); /* the batches flushed count */
	p->releasing = false;
	if (rc)
		eng__pl_fail(p, rc, &err);
	return dl;
}

/* When the calling thread must wake at the latest (monotonic; 0: no
 * deadline but the poll): the next aggregation timeout (agg) or sample. */
static uint64_t wake_at(const pline *p, uint64_t agg)
{
	const eng_sampler *s = p->c->sampler;

	if (s && (!agg || s->next_mono < agg))
		return s->next_mono;
	return agg;
}

/* The calling thread: waits for the end; meanwhile reports progress,
 * lets the workers see a stop request and fires aggregation timeouts. */
static int supervise(pline *p, core_err *err)
{
	bool timed = eng__aggs_timed(p->c);
	uint64_t dl = 0;
	int rc;

	pthread_mutex_lock(&p->lock);
	while (!eng__pl_finished(p)) {
		struct timespec ts;

		if (eng__rq_ready(p)) {
			eng__rq_drain(p); /* e.g. held back by a timeout */
			continue;
		}
		/* A checkpoint a release pass put off while the previous one
		 * waited for its commit (ADR 0012): taken here when the next
		 * row holds the line, so released rows wait at most about
		 * POLL_NS after that commit to be covered. */
		if (!p->releasing) {
			bool took;

			p->releasing = true;
			took = eng__rq_checkpoint_if_due(p);
			p->releasing = false;
			if (took)
				continue;
		}
		if (!p->releasing && timed) {
			dl = aggregation_timeouts(p);
			if (eng__rq_ready(p) || eng__pl_finished(p))
				continue;
		}
		if (report(p, false) || sample_if_due(p))
			continue;
		deadline_ts(wake_at(p, dl), &ts);
		p->main_waiting = true;
		pthread_cond_timedwait(&p->main_cv, &p->lock, &ts);
		p->main_waiting = false;
	}
	/* A source error counts once the rows read before it are pulled:
	 * a stop before then leaves them, and it, to the resume. */
	rc = p->rc;
	if (rc)
		*err = p->err;
	else if (p->source_done && p->source_rc < 0) {
		*err = p->source_err;
		rc = p->source_rc;
	}
	report(p, true);
	pthread_mutex_unlock(&p->lock);
	return rc;
}

slot *eng__pl_slot_new(pline *p)
{
	slot *s = p->free_slots;

	if (s) {
		p->free_slots = s->next_free;
		p->nfree--;
	} else if (!(s = malloc(sizeof(*s)))) {
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	return s;
}

/* Up to N + AHEAD free slots are kept: as many as a steady run reuses;
 * the rest of a burst of waiting rows goes back to the allocator. */
void eng__pl_slot_put(pline *p, slot *s)
{
	eng__result_release(&s->res);
	eng__row_release(&s->row);
	free(s->err);
	s->err = NULL;
	s->state = SLOT_EMPTY;
	if (p->nfree >= p->n + AHEAD) {
		free(s);
		return;
	}
	s->next_free = p->free_slots;
	p->free_slots = s;
	p->nfree++;
}

const char *eng__pl_hold_name(pl_hold h)
{
	switch (h) {
	case PL_HOLD_NONE:
		return "";
	case PL_HOLD_IN_FLIGHT:
		return "rows_in_flight";
	case PL_HOLD_WAITING_ROWS:
		return "waiting_rows";
	case PL_HOLD_WAITING_BYTES:
		return "waiting_bytes";
	case PL_HOLD_LAST:
		break;
	}
	return "";
}

static int pipe_init(pline *p, eng_ctx *c, void *src, unsigned n, unsigned cap,
		     size_t budget, eng_summary *sum)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->c = c;
	p->src = src;
	p->sum = sum;
	p->n = n;
	p->cap = cap;
	p->budget = budget;
	p->ring = calloc(cap, sizeof(*p->ring));
	p->handq = calloc(cap, sizeof(*p->handq));
	p->ckrows = calloc(cap, sizeof(*p->ckrows));
	p->ahead = calloc(AHEAD, sizeof(*p->ahead));
	if (!p->ring || !p->handq || !p->ckrows || !p->ahead) {
		free(p->ring);
		free(p->handq);
		free(p->ckrows);
		free(p->ahead);
		return CORE_ENOMEM;
	}
	/* A resume starts after the rows its checkpoint had released, with
	 * its totals (a sample taken now shows them, not zeros). */
	p->pulled = p->released = c->start_seq;
	eng__pl_copy_totals(p);
	p->hand_head = p->hand_tail = 0;
	p->rel_pos = c->start_pos;
	p->rel_has_pos = c->has_start_pos;
	p->pre_last = eng__pre_last(c);
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->main_cv, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

/* Rows processed but never released. When the run failed their tokens
 * get a FAILED outcome so the trail stays complete; when it was
 * interrupted they are in its last checkpoint, for the resume. */
static void abandon(pline *p, bool failed)
{
	for (unsigned i = 0; i < p->cap; i++) {
		slot *s = p->ring[i];

		if (!s)
			continue;
		if (s->state == SLOT_DONE && failed) {
			for (size_t t = 0; t < s->res.ntokens; t++) {
				eng_token *tok = &s->res.tokens[t];

				tok->outcome = ENG_FAILED;
				tok->to = ENG_TO_DISCARD;
				free(tok->error);
				tok->error = strdup("not released: the run stopped at an earlier row");
				eng__audit_outcome(p->c->audit, s->row.seq, tok);
			}
		}
		p->ring[i] = NULL;
		eng__pl_slot_put(p, s);
	}
	/* Read ahead, never pulled: a resume reads them again. */
	while (p->ahead_head < p->ahead_tail)
		eng__row_release(&p->ahead[p->ahead_head++ % AHEAD]);
}

static void pipe_destroy(pline *p)
{
	while (p->free_slots) {
		slot *s = p->free_slots;

		p->free_slots = s->next_free;
		free(s);
	}
	pthread_cond_destroy(&p->work_cv);
	pthread_cond_destroy(&p->main_cv);
	pthread_mutex_destroy(&p->lock);
	free(p->ring);
	free(p->handq);
	free(p->ckrows);
	free(p->ahead);
}

static void metrics(pline *p, eng_summary *sum)
{
	sum->in_flight = p->n;
	sum->max_waiting = p->cap;
	sum->waiting_budget = p->budget;
	sum->peak_waiting_bytes = p->peak_wait_bytes;
	sum->pulled = p->pulled;
	if (p->last_release_ns > p->first_pull_ns)
		sum->pipeline_seconds = (double)(p->last_release_ns - p->first_pull_ns) / 1e9;
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
	pline p;
	int rc = 0;

	if (pipe_init(&p, c, src, 1, 1, 0, sum))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(p.ring[0] = eng__pl_slot_new(&p))) {
		pipe_destroy(&p);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = eng__rq_first_checkpoint(&p, err);
	pthread_mutex_lock(&p.lock);
	sample_if_due(&p); /* the first: where the attempt starts */
	pthread_mutex_unlock(&p.lock);
	while (!rc) {
		slot *s = p.ring[0];
		int prc;

		if (c->stop && *c->stop)
			break;
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, false, sum, err);
		if (rc)
			break;
		prc = eng__pl_pull(&p, p.pulled + 1, &s->row);
		if (prc < 0) {
			*err = p.source_err;
			rc = prc;
		}
		if (prc <= 0) {
			p.source_done = prc == 0; /* the end checkpoint says so */
			break;
		}
		p.pulled = s->row.seq;
		if (!p.first_pull_ns)
			p.first_pull_ns = core_now_mono_ns();
		p.peak_in_flight = 1;
		eng__pl_source_progress(&p);
		run_row(&p, s);
		s->done_ns = core_now_mono_ns();
		s->state = SLOT_DONE;
		if (s->rc == CORE_ESTOPPED) { /* left for the resume */
			eng__pl_abandon(&p);
			break;
		}
		rc = eng__rq_emit_one(&p, s, err);
		if (rc)
			break;
		s->state = SLOT_EMPTY;
		p.released++;
		p.last_release_ns = core_now_mono_ns();
		pthread_mutex_lock(&p.lock);
		eng__pl_copy_totals(&p);
		report(&p, false);
		sample_if_due(&p);
		if (eng__rq_checkpoint_if_due(&p) && (rc = p.rc))
			*err = p.err;
		pthread_mutex_unlock(&p.lock);
	}
	if (rc == 0 && !(c->stop && *c->stop))
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, true, sum, err);
	rc = eng__rq_last_checkpoint(&p, rc, err);
	pthread_mutex_lock(&p.lock);
	report(&p, true);
	pthread_mutex_unlock(&p.lock);
	sample_final(&p);
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, rc != 0);
	pipe_destroy(&p);
	return rc;
}

int eng__pipeline(eng_ctx *c, void *src, unsigned in_flight, unsigned cap,
		  size_t budget, eng_summary *sum, core_err *err)
{
	pthread_t *workers;
	pthread_attr_t attr;
	unsigned nworkers = 0;
	long ncpu;
	pline p;
	int rc = 0;

	if (in_flight == 1)
		return sequential(c, src, sum, err);
	if (cap < in_flight)
		cap = in_flight;
	if (pipe_init(&p, c, src, in_flight, cap, budget, sum))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	p.target = ncpu > 2 ? (unsigned)ncpu : 2;
	c->blocking = blocking;
	c->blocking_arg = &p;
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
	pthread_attr_destroy(&attr);
	if (nworkers < in_flight) {
		core_err e;

		core_err_set(&e, CORE_EIO, "cannot start %u pipeline threads (started %u)",
			     in_flight, nworkers);
		pthread_mutex_lock(&p.lock);
		eng__pl_fail(&p, e.code, &e);
		pthread_mutex_unlock(&p.lock);
	}
	if ((rc = eng__rq_first_checkpoint(&p, err))) {
		pthread_mutex_lock(&p.lock);
		eng__pl_fail(&p, rc, err);
		pthread_mutex_unlock(&p.lock);
	}
	/* Rows start once every worker exists, so the first rows do not
	 * wait for threads still being created. */
	pthread_mutex_lock(&p.lock);
	p.started = true;
	pthread_cond_signal(&p.work_cv);
	pthread_mutex_unlock(&p.lock);
	rc = supervise(&p, err);
	if (!rc && !(c->stop && *c->stop))
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, true, sum, err);
	rc = eng__rq_last_checkpoint(&p, rc, err);
	pthread_mutex_lock(&p.lock);
	p.shutdown = true;
	pthread_cond_broadcast(&p.work_cv);
	pthread_mutex_unlock(&p.lock);
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	free(workers);
	c->blocking = NULL;
	sample_final(&p);
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, rc != 0);
	pipe_destroy(&p);
	return rc;
}

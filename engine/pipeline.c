/*
 * pipeline.c — the three stages of docs/architecture.md §4: the source puller, the
 * work pool and the release queue.
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
 * states; a slot's row/result belong to its RUNNING worker, then (DONE) to
 * whoever holds the release role. The calling thread waits for the end,
 * reports progress, and fires aggregation timeouts (taking the release
 * role to do so).
 *
 * A row whose processing failed stops the run when its turn to be
 * released comes, so the run fails at the same row in every mode. On
 * SIGINT/SIGTERM no more rows are pulled; the rows in flight finish and
 * are released (ADR 0007) — up to a row the interrupt cut short
 * (CORE_ESTOPPED), which stays unreleased with the rows after it, for
 * `elspeth resume`. Whoever holds the release role also takes the
 * checkpoints (ADR 0012): after a release pass when one is due, before
 * the first row, and at the end. Sequential mode runs the same stages
 * inline on the calling thread.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_internal.h"

#define WORKER_STACK (256 * 1024)
#define POLL_NS (100 * 1000 * 1000ull) /* the calling thread checks stop */
#define AHEAD 64     /* rows read ahead of the pull */
#define AHEAD_LOW 32 /* a worker whose row waits tops it up below this */
#define READ_CHUNK 16 /* rows read between two looks at the lock */

enum slot_state { SLOT_EMPTY, SLOT_RUNNING, SLOT_DONE };

typedef struct slot {
	enum slot_state state;
	eng_row row;
	eng_result res;
	int rc;
	core_err err;
	uint64_t done_ns;
	bool waited;       /* done before its predecessors were released */
} slot;

typedef struct pline {
	eng_ctx *c;
	void *src;
	eng_summary *sum;         /* written by the release role only */
	unsigned n;               /* max rows being processed (threads) */
	unsigned cap;             /* max rows unreleased (ring size) */
	pthread_mutex_t lock;
	pthread_cond_t work_cv;   /* idle workers */
	pthread_cond_t main_cv;   /* the calling thread */
	slot *ring;
	uint64_t pulled;          /* highest seq pulled (taken from `ahead`) */
	eng_row *ahead;           /* rows read ahead of the pull (ring) */
	uint64_t ahead_head, ahead_tail; /* [head, tail): ready to take */
	bool source_eof;          /* the source said end (or failed) */
	uint64_t released;        /* highest seq released */
	unsigned processing;      /* rows pulled, not yet DONE */
	bool pulling, releasing;  /* the roles (pulling: reading ahead) */
	uint64_t *handq;          /* rows pulled for idle workers (ring) */
	uint64_t hand_head, hand_tail;
	bool started;             /* every worker thread exists */
	bool abandoned;           /* the next row was cut short by a stop:
				   * nothing more is released (resume) */
	bool source_done, shutdown;
	unsigned idle;            /* workers waiting on work_cv */
	atomic_uint active;       /* workers neither idle nor blocked: changed
				   * without the lock by blocking() */
	unsigned target;          /* active workers wanted: the CPUs */
	int source_rc;
	core_err source_err;
	bool main_waiting;        /* the calling thread sleeps on main_cv */
	int rc;                   /* the run's failure, if any */
	core_err err;
	/* metrics and progress (under lock) */
	uint64_t peak_in_flight, peak_waiting, waiting;
	uint64_t wait_sum_ns, wait_max_ns, wait_n;
	uint64_t blocked_since, source_blocked_ns;
	uint64_t src_done, src_total; /* source progress */
	uint64_t failed, quarantined; /* copies of sum's, for progress */
	uint64_t last_progress;
	uint64_t first_pull_ns, last_release_ns;
	uint64_t release_busy_ns;
	/* checkpoints (release role) */
	plg_source_pos rel_pos;   /* the source after row `released` */
	bool rel_has_pos;
	uint64_t pre_last;        /* a resume's last checkpointed row */
	eng_ckpt_row *ckrows;     /* scratch, cap entries */
} pline;

/* Set on the worker threads: blocking() counts only them. */
static _Thread_local bool is_worker;

static slot *slot_of(pline *p, uint64_t seq)
{
	return &p->ring[seq % p->cap];
}

static bool stopping(const pline *p)
{
	return p->shutdown || p->rc || (p->c->stop && *p->c->stop);
}

/* -------------------------------------------------------------- source */

/* The next row: a resume's rows from the checkpoint first, then the
 * source's, with its position after each. */
static int pull(pline *p, uint64_t seq, eng_row *row)
{
	const plg_source_ops *ops = p->c->g->nodes[0].sops;
	plg_source_row r = { 0 };
	int rc;

	if (p->c->pre && (rc = eng__pre_next(p->c, seq, row)))
		return rc;
	if ((rc = ops->next(p->src, &r, &p->source_err)) <= 0)
		return rc;
	row->seq = seq;
	row->data = r.row;
	row->error = r.error;
	row->where = r.where;
	if (ops->position) {
		ops->position(p->src, &row->pos);
		row->has_pos = true;
	}
	return 1;
}

/* Asks the source how far it is (the pull role or the sequential loop). */
static void source_progress(pline *p)
{
	const plg_source_ops *ops = p->c->g->nodes[0].sops;

	if (ops->progress)
		ops->progress(p->src, &p->src_done, &p->src_total);
}

/* Backpressure: is there room for one more row? (lock held) */
static bool room(const pline *p)
{
	return p->processing < p->n && p->pulled - p->released < p->cap;
}

/* Opens or closes the current "source blocked by backpressure" period
 * after any change of the counters (lock held). */
static void track_blocked(pline *p)
{
	bool blocked = !room(p) && !p->source_done;

	if (blocked && !p->blocked_since)
		p->blocked_since = core_now_mono_ns();
	else if (!blocked && p->blocked_since) {
		p->source_blocked_ns += core_now_mono_ns() - p->blocked_since;
		p->blocked_since = 0;
	}
}

static unsigned running(pline *p)
{
	return atomic_load_explicit(&p->active, memory_order_relaxed);
}

static unsigned ahead_n(const pline *p)
{
	return (unsigned)(p->ahead_tail - p->ahead_head);
}

/* May this thread take the pull role and read ahead? (lock held) */
static bool can_read(const pline *p)
{
	return p->started && !p->pulling && !p->source_eof && ahead_n(p) < AHEAD &&
	       !stopping(p);
}

/* May a row be started now: taken from the read-ahead, or read first?
 * (lock held) */
static bool can_start(const pline *p)
{
	return p->started && room(p) && !stopping(p) &&
	       (ahead_n(p) || (!p->pulling && !p->source_eof));
}

/* Idle workers not already promised a handed-over row. */
static unsigned spare_workers(const pline *p)
{
	unsigned promised = (unsigned)(p->hand_tail - p->hand_head);

	return p->idle > promised ? p->idle - promised : 0;
}

/* Fewer workers run than there are CPUs, and an idle one could start a
 * row (lock held). */
static bool short_of_workers(pline *p)
{
	return running(p) < p->target && spare_workers(p);
}

/* ------------------------------------------------------------- release */

/* Reports progress when due (or always, when final). Lock held. */
static void report(pline *p, bool final)
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
		.in_flight = p->processing, .waiting = p->waiting,
		.failed = p->failed, .quarantined = p->quarantined,
		.elapsed_s = (double)(now - p->c->t0_mono) / 1e9, .final = final,
		.source_done = p->src_done, .source_total = p->src_total };
	o->progress(o->progress_ctx, &pr);
}

/* Releases one DONE row (unlocked; the release role is held). */
static int release_row(pline *p, slot *s, core_err *err)
{
	uint64_t t = core_now_mono_ns(), wait = t - s->done_ns;
	int rc;

	if (s->rc) {
		*err = s->err;
		return s->rc;
	}
	p->wait_sum_ns += wait;
	p->wait_n++;
	if (wait > p->wait_max_ns)
		p->wait_max_ns = wait;
	p->sum->rows++;
	p->rel_pos = s->row.pos;
	p->rel_has_pos = s->row.has_pos;
	rc = eng__release(p->c, &s->res, p->sum, err);
	p->release_busy_ns += core_now_mono_ns() - t;
	eng__result_release(&s->res);
	eng__row_release(&s->row);
	return rc;
}

static bool finished(pline *p);

/* Wakes the calling thread if the run may be over (lock held). */
static void wake_main(pline *p)
{
	if (p->main_waiting && finished(p))
		pthread_cond_signal(&p->main_cv);
}

/* The first failure ends the run: nothing more is pulled or released. */
static void fail(pline *p, int rc, const core_err *err)
{
	if (!p->rc) {
		p->rc = rc;
		p->err = *err;
	}
	pthread_cond_broadcast(&p->work_cv);
	pthread_cond_signal(&p->main_cv);
}

static bool can_release(pline *p)
{
	return !p->releasing && !p->rc && !p->abandoned && p->released < p->pulled &&
	       slot_of(p, p->released + 1)->state == SLOT_DONE;
}

/* Takes a checkpoint (ADR 0012): the rows after `released` that are done
 * or recorded, up to the first that is neither (the frontier: rows after
 * it are read again from the source, at the position after it). Lock and
 * release role held; the lock is dropped while it is written. */
static void checkpoint(pline *p, const char *reason)
{
	eng_ckpt_at at = { .reason = reason, .released = p->released,
			   .frontier = p->released, .pos = p->rel_pos,
			   .has_pos = p->rel_has_pos, .rows = p->ckrows };
	core_err err;
	int rc;

	/* at.pos: the source's position after row at.frontier, if known. */
	for (uint64_t seq = p->released + 1; seq <= p->pulled; seq++) {
		slot *s = slot_of(p, seq);
		eng_ckpt_row *r = &p->ckrows[at.nrows];

		if (s->state == SLOT_DONE && !s->rc)
			*r = (eng_ckpt_row){ .row = &s->row, .res = &s->res };
		else if (s->state == SLOT_DONE || /* failed or cut short: the
						   * resume runs it again */
			 atomic_load_explicit(&s->row.recorded, memory_order_acquire))
			*r = (eng_ckpt_row){ .row = &s->row,
				.before = s->row.has_before ? s->row.before : at.pos,
				.has_before = s->row.has_before || at.has_pos };
		else
			break;
		at.nrows++;
		at.frontier = seq;
		at.pos = s->row.pos;
		at.has_pos = s->row.has_pos;
	}
	at.source_done = p->source_done && at.frontier == p->pulled;
	pthread_mutex_unlock(&p->lock);
	rc = eng__ckpt_write(p->c, &at, p->sum, &err);
	pthread_mutex_lock(&p->lock);
	if (rc)
		fail(p, rc, &err);
}

/* Whether a checkpoint is due (lock held): not while a resume's rows
 * from the old checkpoint are still coming in. */
static bool ckpt_due(const pline *p)
{
	return p->c->ckpt && p->pulled >= p->pre_last &&
	       eng__ckpt_due(p->c, p->released, p->sum);
}

/* Takes a checkpoint if one is due (lock and release role held). */
static bool checkpoint_if_due(pline *p)
{
	if (p->rc || !ckpt_due(p))
		return false;
	checkpoint(p, p->c->ckpt->frequency == CORE_CKPT_AGGREGATION_ONLY ?
		   "aggregation" : "interval");
	return true;
}

/* The release role: every consecutive DONE row, in seq order. Called and
 * returns with the lock held. */
static void release_rows(pline *p)
{
	core_err err;
	slot *s;

	p->releasing = true;
	while (!p->rc && !p->abandoned && p->released < p->pulled &&
	       (s = slot_of(p, p->released + 1))->state == SLOT_DONE) {
		int rc;

		/* Cut short by SIGINT/SIGTERM: it and the rows after it stay
		 * unreleased, for the resume (ADR 0012). */
		if (s->rc == CORE_ESTOPPED) {
			p->abandoned = true;
			break;
		}
		if (s->waited)
			p->waiting--;
		pthread_mutex_unlock(&p->lock);
		rc = release_row(p, s, &err);
		pthread_mutex_lock(&p->lock);
		s->state = SLOT_EMPTY;
		p->released++;
		p->last_release_ns = core_now_mono_ns();
		p->failed = p->sum->failed;
		p->quarantined = p->sum->quarantined;
		track_blocked(p);
		if (rc)
			fail(p, rc, &err);
		report(p, false);
	}
	checkpoint_if_due(p);
	p->releasing = false;
	/* Room was made; if the calling thread released (all workers
	 * idle) or too few workers run, bring one in to pull. */
	if (short_of_workers(p) && can_start(p))
		pthread_cond_signal(&p->work_cv);
	wake_main(p);
}

/* -------------------------------------------------------------- workers */

static unsigned umin(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

/* After the last row read ahead is taken, no more rows come (lock held). */
static void check_source_done(pline *p)
{
	if (p->source_eof && !ahead_n(p) && !p->source_done) {
		p->source_done = true;
		pthread_cond_broadcast(&p->work_cv);
		wake_main(p);
	}
}

/* The pull role: reads up to `max` rows into `ahead` (no more than it
 * holds), numbering them, READ_CHUNK at a time. Called and returns with
 * the lock held, which is dropped while reading: the entries it fills
 * are outside [ahead_head, ahead_tail), so no taker sees them before
 * ahead_tail moves. After each chunk it looks at the stop flag, and
 * wakes a worker that went idle for want of rows if fewer than the
 * target run. The role must be free (can_read). */
static void read_ahead(pline *p, unsigned max)
{
	unsigned want = umin(max, AHEAD - ahead_n(p));
	int rc = 1;

	p->pulling = true;
	while (want && !stopping(p)) {
		uint64_t first = p->pulled + ahead_n(p) + 1, tail = p->ahead_tail;
		unsigned chunk = umin(want, READ_CHUNK), got = 0;

		pthread_mutex_unlock(&p->lock);
		while (got < chunk) {
			eng_row *r = &p->ahead[(tail + got) % AHEAD];

			memset(r, 0, sizeof(*r));
			if ((rc = pull(p, first + got, r)) <= 0)
				break;
			got++;
		}
		pthread_mutex_lock(&p->lock);
		p->ahead_tail += got;
		want -= got;
		if (got)
			source_progress(p);
		if (rc <= 0) {
			p->source_eof = true;
			p->source_rc = rc;
			break;
		}
		if (short_of_workers(p))
			pthread_cond_signal(&p->work_cv);
	}
	p->pulling = false;
	check_source_done(p);
}

/* Takes the next row read ahead into its ring slot: the row is pulled.
 * Lock held; ahead_n() > 0 and room(). Returns its seq. */
static uint64_t take(pline *p)
{
	eng_row *r = &p->ahead[p->ahead_head++ % AHEAD];
	uint64_t seq = r->seq;

	*slot_of(p, seq) = (slot){ .state = SLOT_RUNNING, .row = *r };
	memset(r, 0, sizeof(*r));
	p->pulled = seq;
	if (!p->first_pull_ns)
		p->first_pull_ns = core_now_mono_ns();
	if (++p->processing > p->peak_in_flight)
		p->peak_in_flight = p->processing;
	check_source_done(p);
	track_blocked(p);
	return seq;
}

/* Starts `keep` (0 or 1) rows for the calling worker and hands rows to
 * idle workers until one worker per CPU runs, reading ahead first if
 * nothing is read. Returns the seq of the kept row, or 0. Lock held on
 * entry and exit. */
static uint64_t pull_rows(pline *p, unsigned keep)
{
	uint64_t kept = 0;
	unsigned k, run;

	if (!ahead_n(p) && can_read(p))
		read_ahead(p, AHEAD);
	run = running(p); /* once: blocking() changes it without the lock */
	k = keep + umin(run < p->target ? p->target - run : 0, spare_workers(p));
	for (unsigned i = 0; i < k && ahead_n(p) && room(p) && !stopping(p); i++) {
		uint64_t seq = take(p);

		if (i < keep) {
			kept = seq;
		} else {
			p->handq[p->hand_tail++ % p->cap] = seq;
			pthread_cond_signal(&p->work_cv);
		}
	}
	return kept;
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
			pull_rows(p, 0);
		else if (!p->pulling) /* e.g. the release role is busy */
			pthread_cond_signal(&p->work_cv);
	}
	/* This worker waits anyway: it reads a few rows ahead for the
	 * others (a chunk, so the wait is rarely outlasted). */
	if (ahead_n(p) < AHEAD_LOW && can_read(p))
		read_ahead(p, READ_CHUNK);
	pthread_mutex_unlock(&p->lock);
}

/* Walks row seq (unlocked) and marks it DONE. The lock is held on entry
 * and exit. */
static void process(pline *p, uint64_t seq)
{
	slot *s = slot_of(p, seq);

	pthread_mutex_unlock(&p->lock);
	s->rc = eng__row_run(p->c, &s->row, &s->res, &s->err);
	pthread_mutex_lock(&p->lock);
	s->state = SLOT_DONE;
	s->done_ns = core_now_mono_ns();
	p->processing--;
	if (seq > p->released + 1) {
		s->waited = true;
		if (++p->waiting > p->peak_waiting)
			p->peak_waiting = p->waiting;
	}
	track_blocked(p);
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
		if (can_release(p))
			release_rows(p);
		else if (p->hand_head < p->hand_tail)
			process(p, p->handq[p->hand_head++ % p->cap]);
		else if (can_start(p)) {
			/* Fewer workers run than there are CPUs: take one
			 * more along. A row that waits (blocking()) brings
			 * in the others. */
			if ((seq = pull_rows(p, 1)))
				process(p, seq);
		} else {
			/* The calling thread decides when the run is over. */
			wake_main(p);
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

/* ------------------------------------------------------ calling thread */

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

/* Every row pulled has been released (or the run failed). Lock held. */
static bool finished(pline *p)
{
	if (p->rc)
		return true;
	return (p->source_done || stopping(p)) && !p->pulling &&
	       !p->releasing && p->processing == 0 &&
	       (p->released == p->pulled || p->abandoned);
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
	p->releasing = false;
	if (rc)
		fail(p, rc, &err);
	return dl;
}

/* The calling thread: waits for the end; meanwhile reports progress,
 * lets the workers see a stop request and fires aggregation timeouts. */
static int supervise(pline *p, core_err *err)
{
	bool timed = eng__aggs_timed(p->c);
	uint64_t dl = 0;
	int rc;

	pthread_mutex_lock(&p->lock);
	while (!finished(p)) {
		struct timespec ts;

		if (can_release(p)) {
			release_rows(p); /* e.g. held back by a timeout */
			continue;
		}
		/* A checkpoint a release pass put off while the previous one
		 * waited for its commit (ADR 0012): taken here when the next
		 * row holds the line, so released rows wait at most about
		 * POLL_NS after that commit to be covered. */
		if (!p->releasing) {
			bool took;

			p->releasing = true;
			took = checkpoint_if_due(p);
			p->releasing = false;
			if (took)
				continue;
		}
		if (!p->releasing && timed) {
			dl = aggregation_timeouts(p);
			if (can_release(p) || finished(p))
				continue;
		}
		report(p, false);
		deadline_ts(dl, &ts);
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

/* ---------------------------------------------------------- lifecycle */

static int pipe_init(pline *p, eng_ctx *c, void *src, unsigned n, unsigned cap,
		     eng_summary *sum)
{
	pthread_condattr_t ca;

	memset(p, 0, sizeof(*p));
	p->c = c;
	p->src = src;
	p->sum = sum;
	p->n = n;
	p->cap = cap;
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
	/* A resume starts after the rows its checkpoint had released. */
	p->pulled = p->released = c->start_seq;
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
		slot *s = &p->ring[i];

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
		eng__result_release(&s->res);
		eng__row_release(&s->row);
	}
	/* Read ahead, never pulled: a resume reads them again. */
	while (p->ahead_head < p->ahead_tail)
		eng__row_release(&p->ahead[p->ahead_head++ % AHEAD]);
}

static void pipe_destroy(pline *p)
{
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

/* A checkpoint taken by the calling thread outside a release pass. */
static int checkpoint_now(pline *p, const char *reason, core_err *err)
{
	int rc;

	pthread_mutex_lock(&p->lock);
	p->releasing = true;
	checkpoint(p, reason);
	p->releasing = false;
	rc = p->rc;
	if (rc)
		*err = p->err;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

/* A new run's first checkpoint, before any row: the sinks' starting
 * positions, so a run killed before its first release resumes too. */
static int first_checkpoint(pline *p, core_err *err)
{
	if (!p->c->ckpt || p->c->resume)
		return 0;
	return checkpoint_now(p, "start", err);
}

/* A checkpoint at the end of the run or at an interrupt (nothing is in
 * flight any more). Returns the run's result. */
static int last_checkpoint(pline *p, int rc, core_err *err)
{
	if (rc || !p->c->ckpt)
		return rc;
	return checkpoint_now(p, p->c->stop && *p->c->stop ? "interrupt" : "end", err);
}

/* One row in flight: the same stages, called in turn on this thread
 * (three threads handing every row to each other would cost more than
 * the work). Aggregation timeouts are checked between rows. */
static int sequential(eng_ctx *c, void *src, eng_summary *sum, core_err *err)
{
	pline p;
	int rc = 0;

	if (pipe_init(&p, c, src, 1, 1, sum))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = first_checkpoint(&p, err);
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
		if (!p.first_pull_ns)
			p.first_pull_ns = core_now_mono_ns();
		p.peak_in_flight = 1;
		source_progress(&p);
		s->rc = eng__row_run(c, &s->row, &s->res, &s->err);
		s->done_ns = core_now_mono_ns();
		s->state = SLOT_DONE;
		if (s->rc == CORE_ESTOPPED) { /* left for the resume */
			p.abandoned = true;
			break;
		}
		rc = release_row(&p, s, err);
		if (rc)
			break;
		s->state = SLOT_EMPTY;
		p.released++;
		p.last_release_ns = core_now_mono_ns();
		p.failed = sum->failed;
		p.quarantined = sum->quarantined;
		pthread_mutex_lock(&p.lock);
		report(&p, false);
		if (checkpoint_if_due(&p) && (rc = p.rc))
			*err = p.err;
		pthread_mutex_unlock(&p.lock);
	}
	if (rc == 0 && !(c->stop && *c->stop))
		rc = eng__aggs_tick(c, core_now_mono_ns(), p.released, true, sum, err);
	rc = last_checkpoint(&p, rc, err);
	pthread_mutex_lock(&p.lock);
	report(&p, true);
	pthread_mutex_unlock(&p.lock);
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, rc != 0);
	pipe_destroy(&p);
	return rc;
}

int eng__pipeline(eng_ctx *c, void *src, unsigned in_flight, unsigned cap,
		  eng_summary *sum, core_err *err)
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
	if (pipe_init(&p, c, src, in_flight, cap, sum))
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
		fail(&p, e.code, &e);
		pthread_mutex_unlock(&p.lock);
	}
	if ((rc = first_checkpoint(&p, err))) {
		pthread_mutex_lock(&p.lock);
		fail(&p, rc, err);
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
	rc = last_checkpoint(&p, rc, err);
	pthread_mutex_lock(&p.lock);
	p.shutdown = true;
	pthread_cond_broadcast(&p.work_cv);
	pthread_mutex_unlock(&p.lock);
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	free(workers);
	c->blocking = NULL;
	sum->interrupted = !rc && c->stop && *c->stop;
	metrics(&p, sum);
	abandon(&p, rc != 0);
	pipe_destroy(&p);
	return rc;
}

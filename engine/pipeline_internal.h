/*
 * pipeline_internal.h — what the three stages of a pipelined run share
 * (docs/architecture.md §4): the ring of row slots and the one lock that
 * guards it. ADR 0009 explains why the stages are roles, not threads.
 *
 *   pipeline.c       the workers, the calling thread (supervise), start
 *                    and shutdown, sequential mode, progress
 *   source_puller.c  the pull role: reads rows ahead, numbers them, starts
 *                    them (the SourcePuller)
 *   release_queue.c  the release role: releases DONE rows in seq order to
 *                    the sinks and takes checkpoints (the ReleaseQueue)
 *
 * Locking. One lock, pline.lock, guards every field of pline except those
 * marked otherwise, and every slot's `state`. A slot's row and result
 * belong to the worker that runs it (RUNNING), then, once DONE, to whoever
 * holds the release role. `active` changes without the lock (blocking()).
 * Nothing that can block — reading the source, processing a row,
 * writing a sink or a checkpoint, the progress callback — runs while it
 * is held (the one call made under it is a source's progress(), which
 * only reads a position), and no other lock is taken under it.
 */
#ifndef ELSPETH_ENGINE_PIPELINE_INTERNAL_H
#define ELSPETH_ENGINE_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "engine/engine_internal.h"

#define AHEAD 64     /* rows read ahead of the pull */
#define AHEAD_LOW 32 /* a worker whose row waits tops it up below this */
#define READ_CHUNK 16 /* rows read between two looks at the lock */

enum slot_state { SLOT_EMPTY, SLOT_RUNNING, SLOT_DONE };

/* One pulled row, from its pull to its release. Slots are allocated
 * when a row is pulled and come back to a free list at its release, so
 * the memory rows take follows the rows actually held (the waiting
 * budget), not the ring's size. */
typedef struct slot {
	enum slot_state state;
	eng_row row;
	eng_result res;
	int rc;
	core_err *err;     /* when rc != 0 (owned; NULL if out of memory) */
	uint64_t done_ns;
	size_t bytes;      /* what it holds once DONE (wait_bytes) */
	bool waited;       /* done before its predecessors were released */
	struct slot *next_free;
} slot;

/* What keeps the next row from starting (pl_held_by). */
typedef enum pl_hold {
	PL_HOLD_NONE = 0,
	PL_HOLD_IN_FLIGHT,     /* N rows are being processed */
	PL_HOLD_WAITING_ROWS,  /* max_completed_waiting rows unreleased */
	PL_HOLD_WAITING_BYTES, /* the waiting rows fill the byte budget */
	PL_HOLD_LAST
} pl_hold;

typedef struct pline {
	eng_ctx *c;
	void *src;
	eng_summary *sum;         /* written by the release role only */
	unsigned n;               /* max rows being processed (threads) */
	unsigned cap;             /* max rows unreleased (ring size) */
	size_t budget;            /* bytes the DONE rows may hold, 0: none */
	size_t wait_bytes, peak_wait_bytes; /* what the DONE rows hold */
	slot *free_slots;         /* released slots kept for reuse */
	unsigned nfree;
	pthread_mutex_t lock;
	pthread_cond_t work_cv;   /* idle workers */
	pthread_cond_t main_cv;   /* the calling thread */
	slot **ring;              /* cap entries; seq % cap; NULL: free */
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
	uint64_t outcomes[ENG_OUTCOME_LAST]; /* ... and for samples */
	uint64_t last_progress;
	uint64_t first_pull_ns, last_release_ns;
	uint64_t release_busy_ns;
	/* checkpoints (release role) */
	plg_source_pos rel_pos;   /* the source after row `released` */
	bool rel_has_pos;
	uint64_t pre_last;        /* a resume's last checkpointed row */
	eng_ckpt_row *ckrows;     /* scratch, cap entries */
} pline;

/* The slot of a row pulled and not yet released (never NULL then). */
static inline slot *slot_of(pline *p, uint64_t seq)
{
	return p->ring[seq % p->cap];
}

static inline bool stopping(const pline *p)
{
	return p->shutdown || p->rc || (p->c->stop && *p->c->stop);
}

/* Backpressure: what keeps one more row from starting (lock held).
 * The waiting bounds are checked first: when they hold, freeing a
 * worker would not help. */
static inline pl_hold pl_held_by(const pline *p)
{
	if (p->pulled - p->released >= p->cap)
		return PL_HOLD_WAITING_ROWS;
	if (p->budget && p->wait_bytes >= p->budget)
		return PL_HOLD_WAITING_BYTES;
	if (p->processing >= p->n)
		return PL_HOLD_IN_FLIGHT;
	return PL_HOLD_NONE;
}

/* Is there room for one more row? (lock held) */
static inline bool room(const pline *p)
{
	return pl_held_by(p) == PL_HOLD_NONE;
}

static inline unsigned running(pline *p)
{
	return atomic_load_explicit(&p->active, memory_order_relaxed);
}

static inline unsigned ahead_n(const pline *p)
{
	return (unsigned)(p->ahead_tail - p->ahead_head);
}

/* May this thread take the pull role and read ahead? (lock held) */
static inline bool can_read(const pline *p)
{
	return p->started && !p->pulling && !p->source_eof && ahead_n(p) < AHEAD &&
	       !stopping(p);
}

/* May a row be started now: taken from the read-ahead, or read first?
 * (lock held) */
static inline bool can_start(const pline *p)
{
	return p->started && room(p) && !stopping(p) &&
	       (ahead_n(p) || (!p->pulling && !p->source_eof));
}

/* Idle workers not already promised a handed-over row. */
static inline unsigned spare_workers(const pline *p)
{
	unsigned promised = (unsigned)(p->hand_tail - p->hand_head);

	return p->idle > promised ? p->idle - promised : 0;
}

/* Fewer workers run than there are CPUs, and an idle one could start a
 * row (lock held). */
static inline bool short_of_workers(pline *p)
{
	return running(p) < p->target && spare_workers(p);
}

static inline unsigned umin(unsigned a, unsigned b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------ pipeline.c (lock held) */

/* Small predicates every role asks, inline as they were before the
 * stages had files of their own (each is called per row, lock held). */

/* Opens or closes the current "source blocked by backpressure" period
 * after any change of the counters (lock held). */
static inline void eng__pl_track_blocked(pline *p)
{
	bool blocked = !room(p) && !p->source_done;

	if (blocked && !p->blocked_since)
		p->blocked_since = core_now_mono_ns();
	else if (!blocked && p->blocked_since) {
		p->source_blocked_ns += core_now_mono_ns() - p->blocked_since;
		p->blocked_since = 0;
	}
}

/* Copies the release role's totals for progress and samples (the
 * release role and the lock held, or sequential mode): sum is the
 * release role's, read by no other thread. */
static inline void eng__pl_copy_totals(pline *p)
{
	p->failed = p->sum->failed;
	p->quarantined = p->sum->quarantined;
	memcpy(p->outcomes, p->sum->outcomes, sizeof(p->outcomes));
}

/* Every row pulled has been released (or the run failed). Lock held. */
static inline bool eng__pl_finished(pline *p)
{
	if (p->rc)
		return true;
	return (p->source_done || stopping(p)) && !p->pulling &&
	       !p->releasing && p->processing == 0 &&
	       (p->released == p->pulled || p->abandoned);
}

/* Wakes the calling thread if the run may be over (lock held). */
static inline void eng__pl_wake_main(pline *p)
{
	if (p->main_waiting && eng__pl_finished(p))
		pthread_cond_signal(&p->main_cv);
}

static inline bool eng__rq_ready(pline *p)
{
	return !p->releasing && !p->rc && !p->abandoned && p->released < p->pulled &&
	       slot_of(p, p->released + 1)->state == SLOT_DONE;
}

/* The first failure ends the run: nothing more is pulled or released. */
void eng__pl_fail(pline *p, int rc, const core_err *err);

/* The next row to release was cut short (CORE_ESTOPPED): it and the rows
 * after it stay unreleased, for the resume. Lock held (or sequential
 * mode). A row is only cut short when the run is stopping — SIGINT, or
 * a halt (plg_ctx.halt) from a thread whose call may not have returned
 * yet — so the stop flag is set here too: without it the run would wait
 * for rows it will never release, or end as completed. */
static inline void eng__pl_abandon(pline *p)
{
	p->abandoned = true;
	if (p->c->stop)
		atomic_store(p->c->stop, 1);
}

/* A cleared slot for a row being pulled (the free list, else malloc);
 * NULL when out of memory. Lock held. */
slot *eng__pl_slot_new(pline *p);
/* Gives back a released row's slot (its row and result released). Lock
 * held. */
void eng__pl_slot_put(pline *p, slot *s);
/* "rows_in_flight", "waiting_rows", "waiting_bytes" or "" (samples,
 * progress). */
const char *eng__pl_hold_name(pl_hold h);

/* ------------------------------------------------------ source_puller.c */

/* The next row: a resume's rows from the checkpoint first, then the
 * source's, with its position after each. */
int eng__pl_pull(pline *p, uint64_t seq, eng_row *row);
/* Asks the source how far it is (the pull role or the sequential loop). */
void eng__pl_source_progress(pline *p);
/* The pull role: reads up to `max` rows into `ahead` (no more than it
 * holds), numbering them, READ_CHUNK at a time. Called and returns with
 * the lock held, which is dropped while reading: the entries it fills
 * are outside [ahead_head, ahead_tail), so no taker sees them before
 * ahead_tail moves. After each chunk it looks at the stop flag, and
 * wakes a worker that went idle for want of rows if fewer than the
 * target run. The role must be free (can_read). */
void eng__pl_read_ahead(pline *p, unsigned max);
/* Starts `keep` (0 or 1) rows for the calling worker and hands rows to
 * idle workers until one worker per CPU runs, reading ahead first if
 * nothing is read. Returns the seq of the kept row, or 0. Lock held on
 * entry and exit. */
uint64_t eng__pl_pull_rows(pline *p, unsigned keep);

/* ------------------------------------------------------ release_queue.c */

/* Releases one DONE row (unlocked; the release role is held). */
int eng__rq_emit_one(pline *p, slot *s, core_err *err);
/* Takes a checkpoint if one is due (lock and release role held). */
bool eng__rq_checkpoint_if_due(pline *p);
/* The release role: every consecutive DONE row, in seq order. Called and
 * returns with the lock held. */
void eng__rq_drain(pline *p);
/* A checkpoint taken by the calling thread outside a release pass. */
int eng__rq_checkpoint_now(pline *p, const char *reason, core_err *err);
/* A new run's first checkpoint, before any row: the sinks' starting
 * positions, so a run killed before its first release resumes too. */
int eng__rq_first_checkpoint(pline *p, core_err *err);
/* A checkpoint at the end of the run or at an interrupt (nothing is in
 * flight any more). Returns the run's result. */
int eng__rq_last_checkpoint(pline *p, int rc, core_err *err);

#endif /* ELSPETH_ENGINE_PIPELINE_INTERNAL_H */

/*
 * release_queue.c — the release role of a pipelined run (the ReleaseQueue
 * of docs/architecture.md §4): rows finish in any order; whoever holds
 * the role releases every consecutive DONE row in seq order — each row's
 * terminal tokens recorded and written to sinks (emit.c) — and takes the
 * checkpoints (ADR 0012) between release passes (pipeline_internal.h:
 * the lock).
 */
#include <string.h>

#include "engine/pipeline_internal.h"

/* Releases one DONE row (unlocked; the release role is held). */
int eng__rq_emit_one(pline *p, slot *s, core_err *err)
{
	uint64_t t = core_now_mono_ns(), wait = t - s->done_ns;
	int rc;

	if (s->rc) {
		if (s->err)
			*err = *s->err;
		else
			core_err_set(err, s->rc, "row %llu failed (no memory was left "
				     "for its message)", (unsigned long long)s->row.seq);
		return s->rc;
	}
	p->wait_sum_ns += wait;
	p->wait_n++;
	if (wait > p->wait_max_ns)
		p->wait_max_ns = wait;
	p->sum->rows++;
	p->rel_pos = s->row.pos;
	p->rel_has_pos = s->row.has_pos;
	rc = eng__emit(p->c, &s->res, p->sum, err);
	p->release_busy_ns += core_now_mono_ns() - t;
	eng__result_release(&s->res);
	eng__row_release(&s->row);
	return rc;
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
		eng__pl_fail(p, rc, &err);
}

/* Whether a checkpoint is due (lock held): not while a resume's rows
 * from the old checkpoint are still coming in. */
static bool ckpt_due(const pline *p)
{
	return p->c->ckpt && p->pulled >= p->pre_last &&
	       eng__ckpt_due(p->c, p->released, p->sum);
}

/* Takes a checkpoint if one is due (lock and release role held). */
bool eng__rq_checkpoint_if_due(pline *p)
{
	if (p->rc || !ckpt_due(p))
		return false;
	checkpoint(p, p->c->ckpt->frequency == CORE_CKPT_AGGREGATION_ONLY ||
		      (p->c->ckpt->frequency == CORE_CKPT_EVERY_N &&
		       p->released - p->c->ckpt->last < p->c->ckpt->interval) ?
		   "aggregation" : "interval");
	return true;
}

/* The release role: every consecutive DONE row, in seq order. Called and
 * returns with the lock held. */
void eng__rq_drain(pline *p)
{
	core_err err;
	slot *s;

	p->releasing = true;
	while (!p->rc && !p->abandoned && p->released < p->pulled &&
	       (s = slot_of(p, p->released + 1))->state == SLOT_DONE) {
		int rc;

		/* Cut short by SIGINT/SIGTERM or a halt: it and the rows
		 * after it stay unreleased, for the resume (ADR 0012). */
		if (s->rc == CORE_ESTOPPED) {
			eng__pl_abandon(p);
			break;
		}
		if (s->waited)
			p->waiting--;
		pthread_mutex_unlock(&p->lock);
		rc = eng__rq_emit_one(p, s, &err);
		pthread_mutex_lock(&p->lock);
		p->wait_bytes -= s->bytes;
		p->ring[(p->released + 1) % p->cap] = NULL;
		eng__pl_slot_put(p, s);
		p->released++;
		p->last_release_ns = core_now_mono_ns();
		eng__pl_copy_totals(p);
		eng__pl_track_blocked(p);
		if (rc)
			eng__pl_fail(p, rc, &err);
	}
	eng__rq_checkpoint_if_due(p);
	p->releasing = false;
	/* Room was made; if the calling thread released (all workers
	 * idle) or too few workers run, bring one in to pull. */
	if (short_of_workers(p) && can_start(p))
		pthread_cond_signal(&p->work_cv);
	eng__pl_wake_main(p);
}

/* A checkpoint taken by the calling thread outside a release pass. */
int eng__rq_checkpoint_now(pline *p, const char *reason, core_err *err)
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
int eng__rq_first_checkpoint(pline *p, core_err *err)
{
	if (!p->c->ckpt || p->c->resume)
		return 0;
	return eng__rq_checkpoint_now(p, "start", err);
}

/* A checkpoint at the end of the run or at an interrupt (nothing is in
 * flight any more). Returns the run's result. */
int eng__rq_last_checkpoint(pline *p, int rc, core_err *err)
{
	if (rc || !p->c->ckpt)
		return rc;
	/* A resume stopped before the old checkpoint's rows were all back
	 * in would write a checkpoint without those not yet in (their
	 * tokens then have neither an outcome nor a place in it): the old
	 * checkpoint stays the latest, and the next resume starts from it
	 * again, cutting the sinks back to it. */
	if (p->pulled < p->pre_last)
		return rc;
	return eng__rq_checkpoint_now(p, p->c->stop && *p->c->stop ? "interrupt" : "end", err);
}

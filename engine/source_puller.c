/*
 * source_puller.c — the pull role of a pipelined run (the SourcePuller of
 * docs/architecture.md §4): reads rows from the source ahead of the pull,
 * numbers them in source order, and starts them — for the worker that
 * took the role and for idle workers (pipeline_internal.h: the lock).
 */
#include <string.h>

#include "engine/pipeline_internal.h"

/* The next row: a resume's rows from the checkpoint first, then the
 * source's, with its position after each. */
int eng__pl_pull(pline *p, uint64_t seq, eng_row *row)
{
	const plg_source_ops *ops = p->c->sops;
	plg_source_row r = { 0 };
	int rc;

	if (p->c->pre && (rc = eng__pre_next(p->c, seq, row)))
		return rc;
	if (p->c->limited && seq > p->c->last_seq)
		return 0; /* a shard's range ends here */
	if ((rc = ops->next(p->src, &r, &p->source_err)) <= 0)
		return rc;
	row->seq = seq;
	row->source = r.source;
	row->source_index = r.source_index;
	row->data = r.row;
	row->error = r.error;
	row->where = r.where;
	row->reason = r.reason;
	if (ops->position) {
		ops->position(p->src, &row->pos);
		row->has_pos = true;
	}
	return 1;
}

/* Asks the source how far it is (the pull role or the sequential loop). */
void eng__pl_source_progress(pline *p)
{
	const plg_source_ops *ops = p->c->sops;

	if (ops->progress)
		ops->progress(p->src, &p->src_done, &p->src_total);
}

/* After the last row read ahead is taken, no more rows come (lock held). */
static void check_source_done(pline *p)
{
	if (p->source_eof && !ahead_n(p) && !p->source_done) {
		p->source_done = true;
		pthread_cond_broadcast(&p->work_cv);
		eng__pl_wake_main(p);
	}
}

/* The pull role: reads up to `max` rows into `ahead` (no more than it
 * holds), numbering them, READ_CHUNK at a time. Called and returns with
 * the lock held, which is dropped while reading: the entries it fills
 * are outside [ahead_head, ahead_tail), so no taker sees them before
 * ahead_tail moves. After each chunk it looks at the stop flag, and
 * wakes a worker that went idle for want of rows if fewer than the
 * target run. The role must be free (can_read). */
void eng__pl_read_ahead(pline *p, unsigned max)
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
			if ((rc = eng__pl_pull(p, first + got, r)) <= 0)
				break;
			got++;
		}
		pthread_mutex_lock(&p->lock);
		p->ahead_tail += got;
		want -= got;
		if (got)
			eng__pl_source_progress(p);
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

/* Takes the next row read ahead into a slot of the ring: the row is
 * pulled. Lock held; ahead_n() > 0 and room(). Returns its seq, or 0
 * when no slot could be allocated (the run fails). */
static uint64_t take(pline *p)
{
	slot *s = eng__pl_slot_new(p);
	eng_row *r;
	uint64_t seq;

	if (!s) {
		core_err e;

		core_err_set(&e, CORE_ENOMEM, "out of memory for row %llu",
			     (unsigned long long)(p->pulled + 1));
		eng__pl_fail(p, e.code, &e);
		return 0;
	}
	r = &p->ahead[p->ahead_head++ % AHEAD];
	seq = r->seq;
	s->state = SLOT_RUNNING;
	s->row = *r;
	p->ring[seq % p->cap] = s;
	memset(r, 0, sizeof(*r));
	p->pulled = seq;
	if (!p->first_pull_ns)
		p->first_pull_ns = core_now_mono_ns();
	if (++p->processing > p->peak_in_flight)
		p->peak_in_flight = p->processing;
	check_source_done(p);
	eng__pl_track_blocked(p);
	return seq;
}

/* Starts `keep` (0 or 1) rows for the calling worker and hands rows to
 * idle workers until one worker per CPU runs, reading ahead first if
 * nothing is read. Returns the seq of the kept row, or 0. Lock held on
 * entry and exit. */
uint64_t eng__pl_pull_rows(pline *p, unsigned keep)
{
	uint64_t kept = 0;
	unsigned k, run;

	if (!ahead_n(p) && can_read(p))
		eng__pl_read_ahead(p, AHEAD);
	run = running(p); /* once: blocking() changes it without the lock */
	k = keep + umin(run < p->target ? p->target - run : 0, spare_workers(p));
	for (unsigned i = 0; i < k && ahead_n(p) && room(p) && !stopping(p); i++) {
		uint64_t seq = take(p);

		if (!seq)
			break;
		if (i < keep) {
			kept = seq;
		} else {
			p->handq[p->hand_tail++ % p->cap] = seq;
			pthread_cond_signal(&p->work_cv);
		}
	}
	return kept;
}

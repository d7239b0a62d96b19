/*
 * follow.c — the live SQL trail (sqltrail.h, sqlt_follow_*): a run's
 * released rows written into its SQL trail while it goes on.
 *
 * A step is one transaction of the output over one LMDB snapshot: the
 * rows not yet written up to the released frontier the caller gives,
 * each with its tokens, lineage, states, calls, routing, outcomes,
 * artifacts and errors (the same code as a whole export, export*.c,
 * limited to those rows), the batches their tokens were consumed in,
 * and the run's record as it stands. What the follower learned of the
 * run (its nodes, each token's lineage, each state's time) is kept from
 * step to step, so a step costs its own rows, not the run's.
 *
 * The first step, and the first after a failed one, replaces the run
 * (what an earlier attempt or a failed step left, undone) and writes
 * rows 1..through: a resume's first step brings the trail up to date
 * before its rows go on, and a database that was away gets everything
 * it missed in one transaction.
 *
 * The last step (sqlt_follow_finish) takes every row the trail holds
 * and the run's own records, and checks the run for damage as an export
 * does: the database then holds what sqlt_export writes
 * (test_run_follow compares them table by table). A run with
 * aggregation batches is written whole by it: what a flush writes to
 * its members reaches the Landscape with a later checkpoint, and the
 * batch's outputs may have been written before it did.
 */
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

struct sqlt_follow {
	xp x;
	char started[SQLT_TIME_CAP];
	char *target;
	uint64_t through;     /* rows 1..through are in the database */
	bool replace;         /* the next step replaces the run */
};

static int connect_out(sqlt_follow *f, core_err *err)
{
	if (f->x.out)
		return 0;
	return sqlt__open_out(f->target, true, &f->x.out, err);
}

int sqlt_follow_open(rec_env *env, uint64_t run, const char *target,
		     sqlt_follow **out, core_err *err)
{
	sqlt_follow *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f || !(f->target = strdup(target))) {
		free(f);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	f->x.env = env;
	f->x.err = err;
	f->x.run = run;
	f->x.shared = core_sql_is_pg(target);
	f->replace = true;
	if ((rc = connect_out(f, err)) || (rc = sqlt__run_ident(&f->x, f->started))) {
		sqlt_follow_close(f);
		return rc;
	}
	*out = f;
	return 0;
}

uint64_t sqlt_follow_through(const sqlt_follow *f)
{
	return f->replace ? 0 : f->through;
}

static int late_cmp(const void *a, const void *b)
{
	uint64_t p = ((const struct xlate *)a)->row, q = ((const struct xlate *)b)->row;

	return p < q ? -1 : p > q;
}

/* The late pass: each row an earlier step wrote that a batch whole now
 * (below `whole`) wrote to after its release, read again for what is
 * new of it (export*.c skip what they wrote: x->late). The list keeps
 * its other entries (members in the step's own rows) for whole_after. */
static int late_rows(xp *x, uint64_t whole)
{
	uint64_t lo = x->row_lo, hi = x->row_hi, last = 0, tok_lo = x->tok_lo;
	int rc = 0;

	if (x->nlate)
		qsort(x->late_rows, x->nlate, sizeof(*x->late_rows), late_cmp);
	x->late = true;
	x->late_states = x->nstep_states;
	for (size_t i = 0; i < x->nlate && !rc; i++) {
		const struct xlate *l = &x->late_rows[i];

		if (l->batch >= whole || l->row >= lo || l->row == last)
			continue;
		last = x->row_lo = x->row_hi = l->row;
		rc = sqlt__export_tokens(x);
	}
	x->late = false;
	x->row_lo = lo, x->row_hi = hi;
	x->tok_lo = tok_lo; /* the step's own tokens are still to be written */
	return rc;
}

/* What the engine writes to a batch's members at its flush reaches the
 * Landscape with its next checkpoint, not with the batch's record: a
 * batch is whole once every member's outcome is written. One that is
 * not stays open, to be read again by the next step. */
static uint64_t whole_after(xp *x, uint64_t whole)
{
	for (size_t i = 0; i < x->nlate; i++) {
		const struct xlate *l = &x->late_rows[i];
		const xtok *t = l->token < x->ntoks ? &x->toks[l->token] : NULL;

		if (l->batch < whole && t && !t->outcome_written && !t->superseded)
			whole = l->batch;
	}
	x->nlate = 0;
	return whole;
}

/* The step's rows, between the output's begin and commit. */
static int step_rows(sqlt_follow *f, uint64_t through)
{
	xp *x = &f->x;
	uint64_t whole = x->batch_from;
	int rc;

	x->live = true;
	x->row_lo = f->replace ? 1 : f->through + 1;
	x->row_hi = through;
	x->nstep_states = 0;
	x->nlate = 0;
	x->batch_open = UINT64_MAX;
	if ((rc = rec_read_begin(x->env, &x->t, x->err)))
		return rc;
	if ((rc = sqlt__export_head(x)) || (rc = sqlt__export_tokens_learn(x)))
		goto out;
	/* batches before the first one still missing a member are whole */
	if (x->batch_open != UINT64_MAX)
		whole = x->batch_open;
	else if (x->batch_max >= whole)
		whole = x->batch_max + 1;
	/* the rows a whole batch wrote to after their steps first: the
	 * step's own tokens may be its outputs, whose lineage needs its
	 * members' outcomes */
	if ((rc = late_rows(x, whole)) || (rc = sqlt__export_tokens_write(x)) ||
	    (rc = sqlt__export_records(x)) ||
	    (x->final && (rc = sqlt__run_intact(x))))
		goto out;
	x->batch_from = whole_after(x, whole);
out:
	rec_read_end(x->t);
	x->t = NULL;
	return rc;
}

int sqlt_follow_step(sqlt_follow *f, uint64_t through, core_err *err)
{
	xp *x = &f->x;
	int rc;

	x->err = err;
	if (!f->replace && through <= f->through)
		return 0;
	if (f->replace)
		sqlt__run_reset(x);
	if ((rc = connect_out(f, err)))
		goto fail;
	if ((rc = x->out->ops->begin(x->out, x->rid, f->started, !f->replace, err)))
		goto fail_tx;
	if ((rc = step_rows(f, through)) || (rc = x->out->ops->commit(x->out, err)))
		goto fail_tx;
	f->through = through;
	f->replace = false;
	return 0;
fail_tx:
	x->out->ops->rollback(x->out);
fail:
	/* what the step learned is not in the database: the next one
	 * starts over, and a connection that broke is made again */
	f->replace = true;
	if (x->out) {
		core_err e2 = { 0 };

		x->out->ops->close(x->out, false, &e2);
		x->out = NULL;
	}
	core_err_prefix(err, "live SQL trail");
	return rc;
}

int sqlt_follow_finish(sqlt_follow *f, core_err *err)
{
	int rc;

	/* A batch's outputs were written with what their members' outcomes
	 * said at the time, which may have been nothing yet (whole_after):
	 * a run with batches is written whole by its last step. */
	if (f->x.batch_max)
		f->replace = true;
	f->x.final = true;
	rc = sqlt_follow_step(f, UINT64_MAX, err);
	f->x.final = false;
	return rc;
}

void sqlt_follow_close(sqlt_follow *f)
{
	core_err e2 = { 0 };

	if (!f)
		return;
	sqlt__run_reset(&f->x);
	for (int i = 0; i < ST__COUNT; i++)
		core_buf_release(&f->x.st[i].bytes);
	if (f->x.out)
		f->x.out->ops->close(f->x.out, true, &e2);
	free(f->target);
	free(f);
}

/*
 * export_tokens.c — rows, tokens, their lineage and outcomes, and node
 * states. ELSPETH's group ids are not records of ours but follow from the
 * lineage we record: the children of a FORKED token form its fork group
 * ("fork-RUN-PARENT"), those of an EXPANDED token its expand group
 * ("exp-RUN-PARENT"); the token a coalesce made and the COALESCED tokens
 * it joined share a join group ("join-RUN-MERGED"); the outputs of an
 * aggregation batch are its batch_outputs and, as ELSPETH records them,
 * an expand group ("exp-RUN-bBATCH").
 */
#include <stdlib.h>
#include <string.h>

#include "sqltrail/export_internal.h"

static int outcome_code(const char *s)
{
	static const char *const ours[OUT__COUNT] = {
		"", "COMPLETED", "ROUTED", "FORKED", "FAILED", "QUARANTINED",
		"DIVERTED", "CONSUMED_IN_BATCH", "COALESCED", "EXPANDED",
	};

	for (int i = 1; i < OUT__COUNT; i++)
		if (!strcmp(s, ours[i]))
			return i;
	return OUT_NONE;
}

static xtok *tok(xp *x, uint64_t id)
{
	return id < x->ntoks ? &x->toks[id] : NULL;
}

/* Token and state ids are counters per run: arrays indexed by id hold
 * what the export learns, grown (doubling) as ids come. */
#define IDS_MAX ((uint64_t)1 << 40) /* far above any run: damage */
static int grow(xp *x, void **a, uint64_t *n, size_t size, uint64_t id)
{
	uint64_t want = *n ? *n : 1024;
	void *g;

	if (id < *n)
		return 0;
	if (id >= IDS_MAX)
		return core_err_set(x->err, CORE_EDATA, "run %s: id %llu out of range", x->rid,
				    (unsigned long long)id);
	while (want <= id)
		want *= 2;
	if (!(g = realloc(*a, (size_t)want * size)))
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	memset((char *)g + (size_t)*n * size, 0, (size_t)(want - *n) * size);
	*a = g;
	*n = want;
	return 0;
}

static int intern_branch(xp *x, const char *name, uint16_t *out)
{
	char **grown;

	*out = 0;
	if (!name || !*name)
		return 0;
	for (size_t i = 1; i < x->nbranches; i++)
		if (!strcmp(x->branches[i], name)) {
			*out = (uint16_t)i;
			return 0;
		}
	if (x->nbranches >= UINT16_MAX)
		return core_err_set(x->err, CORE_EDATA, "run %s: too many branch names", x->rid);
	if (!x->nbranches)
		x->nbranches = 1;
	grown = realloc(x->branches, (x->nbranches + 1) * sizeof(*grown));
	if (!grown || !(grown[x->nbranches] = strdup(name))) {
		if (grown)
			x->branches = grown;
		return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	x->branches = grown;
	*out = (uint16_t)x->nbranches++;
	return 0;
}

/* The batch whose output child is, parent being one of its members: a
 * member a resume buffered again is in a superseded batch (flushed by
 * the crashed attempt, its outputs superseded too) and in a live one. */
static uint64_t output_batch(const xtok *parent, const xtok *child)
{
	if (child && child->superseded && parent->batch_old)
		return parent->batch_old;
	return parent->batch ? parent->batch : parent->batch_old;
}

/* ------------------------------------------------------- the first pass */

static int learn_batch(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__BatchRecord *r = msg;

	(void)key, (void)klen;
	if (r->batch_id > x->batch_max)
		x->batch_max = r->batch_id;
	if (x->live) {
		int rc = sqlt__late_row(x, r->batch_id, r->trigger_seq, 0);

		if (rc)
			return rc;
	}
	if (r->batch_id >= x->nbatches) {
		size_t n = (size_t)r->batch_id + 1;
		bool *grown;

		if (n > (size_t)1 << 32)
			return core_err_set(x->err, CORE_EDATA, "run %s: batch id %llu out of range",
					    x->rid, (unsigned long long)r->batch_id);
		if (!(grown = realloc(x->batch_superseded, n * sizeof(*grown))))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		memset(grown + x->nbatches, 0, (n - x->nbatches) * sizeof(*grown));
		x->batch_superseded = grown;
		x->nbatches = n;
	}
	x->batch_superseded[r->batch_id] = !strcmp(r->status, "superseded");
	return 0;
}

static int learn_token(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TokenRecord *r = msg;
	xtok *t;
	int rc;

	(void)key, (void)klen;
	if ((rc = grow(x, (void **)&x->toks, &x->ntoks, sizeof(*x->toks), r->token_id)))
		return rc;
	if (!(t = tok(x, r->token_id)) || (x->late && t->present))
		return 0;
	if (r->token_id < x->tok_lo)
		x->tok_lo = r->token_id;
	t->present = true;
	t->fresh = x->late ? 2 : 1;
	t->row = r->row_id;
	t->created = r->created_at_ns;
	return intern_branch(x, r->branch, &t->branch);
}

static int learn_outcome(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TokenOutcomeRecord *r = msg;
	xtok *t = tok(x, r->token_id);

	(void)key, (void)klen;
	if (t)
		t->outcome = (uint8_t)outcome_code(r->outcome);
	return 0;
}

static int learn_superseded(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__SupersededRecord *r = msg;
	xtok *t = tok(x, r->token_id);

	(void)key, (void)klen;
	if (t)
		t->superseded = true;
	return 0;
}

static int one_member(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__BatchMemberRecord *r = msg;
	xrow *s = &x->st[ST_BATCH_MEMBERS];
	xtok *t = tok(x, r->token_id);
	int rc;

	(void)key, (void)klen;
	/* live: a member whose row is not written yet keeps its batch
	 * open, to be written with its row */
	if (x->live && (!t || !t->present)) {
		if (r->batch_id < x->batch_open)
			x->batch_open = r->batch_id;
		return 0;
	}
	if (x->live && (rc = sqlt__late_row(x, r->batch_id, t->row, r->token_id)))
		return rc;
	if (t && r->batch_id < x->nbatches && x->batch_superseded[r->batch_id])
		t->batch_old = r->batch_id;
	else if (t)
		t->batch = r->batch_id;
	sqlt__bind_ref(x, s, 1, "batch", r->batch_id);
	sqlt__bind_ref(x, s, 2, "tok", r->token_id);
	sqlt__bind_i64(s, 3, r->ordinal);
	return sqlt__step(x, ST_BATCH_MEMBERS);
}

static int one_parent(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TokenParentRecord *r = msg;
	xrow *s = &x->st[ST_TOKEN_PARENTS];
	xtok *child = tok(x, r->token_id), *parent = tok(x, r->parent_token_id);
	uint64_t batch;
	int rc;

	(void)key, (void)klen;
	if (x->late && (!child || child->fresh != 2))
		return 0;
	if (child && (!child->parent || r->ordinal == 0))
		child->parent = r->parent_token_id;
	if (parent && parent->outcome == OUT_COALESCED)
		parent->child = r->token_id;
	sqlt__bind_ref(x, s, 1, "tok", r->token_id);
	sqlt__bind_ref(x, s, 2, "tok", r->parent_token_id);
	sqlt__bind_i64(s, 3, r->ordinal);
	if ((rc = sqlt__step(x, ST_TOKEN_PARENTS)))
		return rc;
	if (!parent || parent->outcome != OUT_CONSUMED_IN_BATCH ||
	    !(batch = output_batch(parent, child)))
		return 0;
	s = &x->st[ST_BATCH_OUTPUTS];
	sqlt__bind_id(s, 1, "bo-%s-%llu-%llu", x->rid,
		      (unsigned long long)batch, (unsigned long long)r->token_id);
	sqlt__bind_ref(x, s, 2, "batch", batch);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	return sqlt__step(x, ST_BATCH_OUTPUTS);
}

/* --------------------------------------------------------- node states */

static void bind_state(xp *x, xrow *s, const Elspeth__NodeStateRecord *r,
		       uint32_t attempt, const char *ej)
{
	sqlt__bind_ref(x, s, 1, "st", r->state_id);
	sqlt__bind_ref(x, s, 2, "tok", r->token_id);
	sqlt__bind_text(s, 3, x->rid);
	sqlt__bind_text(s, 4, sqlt__node_id(x, r->node_id));
	sqlt__bind_i64(s, 5, r->step);
	sqlt__bind_i64(s, 6, attempt);
	sqlt__bind_text(s, 7, r->status);
	sqlt__bind_text(s, 8, r->input_hash);
	sqlt__bind_nz(s, 9, r->output_hash);
	sqlt__bind_nz(s, 10, r->context_json);
	if (r->completed_at_ns)
		sqlt__bind_ms(s, 11, r->duration_ns);
	sqlt__bind_text(s, 12, ej);
	sqlt__bind_time(s, 13, r->started_at_ns);
	sqlt__bind_time(s, 14, r->completed_at_ns);
}

/* A resume can give a token a second state at the same node and step
 * with attempt 0: a member an aggregation held at the checkpoint is
 * buffered again. ELSPETH keys states by (token, node, attempt) and
 * (token, step, attempt), so the later state (states come in id order)
 * is written with the next free attempt number. */

/* The attempt a state is written with: its own, or when its token
 * already has that attempt at the same node (a re-buffered member, see
 * above), the next free one. A token's states at one node follow each
 * other (it leaves a node only forward), so the attempts taken at its
 * last node are all there is to check. */
static uint32_t free_attempt(xtok *t, const Elspeth__NodeStateRecord *r)
{
	uint32_t a = r->attempt;

	if (!t)
		return a;
	if (!t->has_state || r->node_id != t->last_node)
		t->attempts = 0;
	while (a < 64 && (t->attempts >> a & 1))
		a++;
	if (a < 64)
		t->attempts |= (uint64_t)1 << a;
	return a;
}

static int one_state(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__NodeStateRecord *r = msg;
	xrow *s = &x->st[ST_NODE_STATES];
	xtok *t = tok(x, r->token_id);
	char *ej = NULL;
	uint32_t attempt;
	int rc;

	(void)key, (void)klen;
	if ((rc = grow(x, (void **)&x->state_at, &x->nstates, sizeof(*x->state_at),
		       r->state_id)))
		return rc;
	if (x->live) {
		if (x->late && x->state_at[r->state_id])
			return 0; /* written by an earlier step */
		if (x->nstep_states == x->cap_step_states &&
		    (rc = grow(x, (void **)&x->step_states, &x->cap_step_states,
			       sizeof(*x->step_states), x->nstep_states)))
			return rc;
		x->step_states[x->nstep_states++] = r->state_id;
	}
	if (r->state_id < x->nstates)
		x->state_at[r->state_id] = r->completed_at_ns ? r->completed_at_ns
							      : r->started_at_ns;
	attempt = free_attempt(t, r);
	if (t) {
		if (!t->has_state || r->step < t->min_step)
			t->min_step = r->step;
		if (!t->has_state || r->state_id > t->last_state) {
			t->last_state = r->state_id;
			t->last_node = r->node_id;
		}
		t->has_state = true;
	}
	if (r->error && *r->error) {
		json_t *e = json_pack("{s:s}", "message", r->error);

		ej = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
		if (!ej)
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
	}
	bind_state(x, s, r, attempt, ej);
	rc = sqlt__step(x, ST_NODE_STATES);
	free(ej);
	if (rc)
		core_err_prefix(x->err, "state %llu", (unsigned long long)r->state_id);
	return rc;
}

/* --------------------------------------------------------------- tokens */

static int write_tokens(xp *x)
{
	xrow *s = &x->st[ST_TOKENS];
	int rc = 0;

	for (uint64_t id = x->tok_lo ? x->tok_lo : 1; id < x->ntoks && !rc; id++) {
		xtok *t = &x->toks[id];
		const xtok *p = t->parent ? tok(x, t->parent) : NULL;

		if (!t->present || t->fresh != (x->late ? 2 : 1))
			continue;
		t->fresh = 0;
		sqlt__bind_ref(x, s, 1, "tok", id);
		sqlt__bind_ref(x, s, 2, "row", t->row);
		sqlt__bind_text(s, 3, x->rid);
		if (p && p->outcome == OUT_FORKED)
			sqlt__bind_ref(x, s, 4, "fork", t->parent);
		if (p && p->outcome == OUT_COALESCED)
			sqlt__bind_ref(x, s, 5, "join", id);
		if (p && p->outcome == OUT_EXPANDED)
			sqlt__bind_ref(x, s, 6, "exp", t->parent);
		/* A batch's outputs: ELSPETH records them as an expansion
		 * (its lineage wants a group for every token with parents). */
		if (p && p->outcome == OUT_CONSUMED_IN_BATCH && output_batch(p, t))
			sqlt__bind_id(s, 6, "exp-%s-b%llu", x->rid,
				      (unsigned long long)output_batch(p, t));
		sqlt__bind_text(s, 7, t->branch ? x->branches[t->branch] : NULL);
		/* The step it was made at: the one before its first state. */
		if (p && t->has_state && t->min_step > 0)
			sqlt__bind_i64(s, 8, t->min_step - 1);
		sqlt__bind_time(s, 9, t->created);
		rc = sqlt__step(x, ST_TOKENS);
	}
	return rc;
}

/* A FORKED token's branches: the labels of the copy edges out of the
 * gate it forked at, as ELSPETH writes the list (Python's json.dumps). */
static char *expected_branches(const xp *x, uint32_t gate)
{
	core_buf b = { 0 };
	bool first = true;

	core_buf_putc(&b, '[');
	for (size_t i = 0; i < x->nedges; i++) {
		json_t *s;
		char *q;

		if (x->edges[i].from != gate || strcmp(x->edges[i].mode, "copy"))
			continue;
		s = json_string(x->edges[i].elabel);
		q = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII) : NULL;
		json_decref(s);
		if (q) {
			core_buf_puts(&b, first ? "" : ", ");
			core_buf_puts(&b, q);
		}
		free(q);
		first = false;
	}
	core_buf_putc(&b, ']');
	return core_buf_steal(&b);
}

static int one_outcome(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__TokenOutcomeRecord *r = msg;
	xrow *s = &x->st[ST_TOKEN_OUTCOMES];
	const xtok *t = tok(x, r->token_id);
	int code = outcome_code(r->outcome);
	char *branches = NULL;
	int rc;

	(void)key, (void)klen;
	if (t && t->superseded)
		return 0; /* elspeth_superseded holds it (export_records.c) */
	if (t && t->outcome_written)
		return 0; /* a live step's, read again by its late pass */
	if (t)
		((xtok *)t)->outcome_written = true;
	sqlt__bind_ref(x, s, 1, "out", r->token_id);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_ref(x, s, 3, "tok", r->token_id);
	sqlt__bind_text(s, 4, code ? sqlt__outcome_names[code] : r->outcome);
	sqlt__bind_time(s, 5, r->recorded_at_ns);
	sqlt__bind_nz(s, 6, r->sink);
	if (code == OUT_CONSUMED_IN_BATCH && t && (t->batch || t->batch_old))
		sqlt__bind_ref(x, s, 7, "batch", t->batch ? t->batch : t->batch_old);
	if (code == OUT_FORKED) {
		sqlt__bind_ref(x, s, 8, "fork", r->token_id);
		if (t && t->has_state && !(branches = expected_branches(x, t->last_node)))
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		sqlt__bind_text(s, 12, branches);
	}
	if (code == OUT_COALESCED && t && t->child)
		sqlt__bind_ref(x, s, 9, "join", t->child);
	if (code == OUT_EXPANDED)
		sqlt__bind_ref(x, s, 10, "exp", r->token_id);
	sqlt__bind_nz(s, 11, r->error_hash);
	rc = sqlt__step(x, ST_TOKEN_OUTCOMES);
	free(branches);
	return rc ? rc : sqlt__payload(x, r->error_hash);
}

/* ----------------------------------------------------------------- rows */

static int one_row(xp *x, const void *key, size_t klen, const void *msg)
{
	const Elspeth__RowRecord *r = msg;
	int table = x->v07 ? ST_ROWS07 : ST_ROWS;
	xrow *s = &x->st[table];
	int rc;

	(void)key, (void)klen;
	if (x->late)
		return 0;
	if (r->created_at_ns > x->last_row_at)
		x->last_row_at = r->created_at_ns;
	x->last_source = r->source; /* rows come in seq order */
	x->last_source_set = true;
	x->rows_read++;
	sqlt__bind_ref(x, s, 1, "row", r->seq);
	sqlt__bind_text(s, 2, x->rid);
	/* the row's own source (ADR 0044); row_index is unique in a run:
	 * the ingest order over all sources */
	sqlt__bind_text(s, 3, sqlt__node_id(x, r->source));
	sqlt__bind_i64(s, 4, (int64_t)r->seq - 1);
	sqlt__bind_text(s, 5, r->source_hash);
	sqlt__bind_nz(s, 6, r->payload_ref);
	sqlt__bind_time(s, 7, r->created_at_ns);
	if (x->v07) { /* 0.7.1's: its index in its source, the ingest order */
		sqlt__bind_i64(s, 8, (int64_t)r->source_row_index);
		sqlt__bind_i64(s, 9, (int64_t)r->seq - 1);
	}
	if ((rc = sqlt__step(x, table)))
		return rc;
	s = &x->st[ST_OWN_ROWS];
	sqlt__bind_ref(x, s, 1, "row", r->seq);
	sqlt__bind_text(s, 2, x->rid);
	sqlt__bind_i64(s, 3, (int64_t)r->seq);
	sqlt__bind_nz(s, 4, r->where);
	if ((rc = sqlt__step(x, ST_OWN_ROWS)))
		return rc;
	return sqlt__payload(x, r->payload_ref);
}

/* ------------------------------------------------------------- the pass */

int sqlt__export_tokens_learn(xp *x)
{
	static const sqlt_pass learn[] = {
		{ REC_TOKENS, &elspeth__token_record__descriptor, learn_token },
		{ REC_TOKEN_OUTCOMES, &elspeth__token_outcome_record__descriptor,
		  learn_outcome },
	};
	int rc;

	x->tok_lo = UINT64_MAX;
	if ((rc = sqlt__scan_rows(x, learn, 2)) || x->late)
		return rc;
	if ((rc = sqlt__scan(x, REC_SUPERSEDED, &elspeth__superseded_record__descriptor,
			     learn_superseded)) ||
	    (rc = sqlt__scan(x, REC_BATCHES, &elspeth__batch_record__descriptor, learn_batch)))
		return rc;
	return sqlt__scan(x, REC_BATCH_MEMBERS, &elspeth__batch_member_record__descriptor,
			  one_member);
}

/* Every per-row table in one pass over the rows. Within a row: a coalesce's
 * parents before its outcomes (the join group), a token's states before its
 * outcome (a fork's branches) and before its routing (a late pass's own
 * states); the tokens last, once their first states are known. */
int sqlt__export_tokens_write(xp *x)
{
	static const sqlt_pass mine[] = {
		{ REC_TOKEN_PARENTS, &elspeth__token_parent_record__descriptor, one_parent },
		{ REC_NODE_STATES, &elspeth__node_state_record__descriptor, one_state },
		{ REC_TOKEN_OUTCOMES, &elspeth__token_outcome_record__descriptor,
		  one_outcome },
		{ REC_ROWS, &elspeth__row_record__descriptor, one_row },
	};
	sqlt_pass all[SQLT_PASSES_MAX];
	int rc;

	memcpy(all, mine, sizeof(mine));
	memcpy(all + 4, sqlt__record_passes, sizeof(sqlt__record_passes));
	memcpy(all + 6, sqlt__error_passes, sizeof(sqlt__error_passes));
	if ((rc = sqlt__scan_rows(x, all, 8)))
		return rc;
	return write_tokens(x);
}

int sqlt__export_tokens(xp *x)
{
	int rc = sqlt__export_tokens_learn(x);

	return rc ? rc : sqlt__export_tokens_write(x);
}

/* ----------------------------------------------------- live: late rows */

int sqlt__late_row(xp *x, uint64_t batch, uint64_t row, uint64_t token)
{
	if (!row || (row >= x->row_lo && !token))
		return 0; /* read by this step's own rows */
	if (x->nlate == x->cap_late) {
		size_t cap = x->cap_late ? 2 * x->cap_late : 64;
		struct xlate *g = realloc(x->late_rows, cap * sizeof(*g));

		if (!g)
			return core_err_set(x->err, CORE_ENOMEM, "out of memory");
		x->late_rows = g;
		x->cap_late = cap;
	}
	x->late_rows[x->nlate++] = (struct xlate){ batch, row, token };
	return 0;
}

bool sqlt__late_state(const xp *x, uint64_t state)
{
	for (size_t i = x->late_states; i < x->nstep_states; i++)
		if (x->step_states[i] == state)
			return true;
	return false;
}

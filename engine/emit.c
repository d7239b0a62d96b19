/*
 * emit.c — a released row's terminal tokens, in order. Audit before
 * action (docs/architecture.md §5.4): a token's outcome is enqueued on the recorder
 * before its sink write; the artifact follows the write. A failed write
 * goes to the sink's on_write_failure (DIVERTED), or stops the run.
 * Tokens for an aggregation are buffered there; a batch that a token
 * triggers is flushed and its outputs released right after it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

/* The row whose story records t (a batch's passthrough or failed
 * members stay in their own rows' stories). */
static uint64_t home_of(uint64_t seq, const eng_token *t)
{
	return t->home ? t->home : seq;
}

/* ELSPETH 0.7.1 hands a sink each row as its canonical JSON read back
 * (its sink-effect snapshot): keys sorted, a float without a fraction an
 * int (149.0 -> 149). A file in 0.7.1's format gets its bytes (ADR 0044).
 * A row canonical JSON cannot hold (NaN) is the write's error. */
static int v07_row(json_t **data, core_err *err)
{
	json_error_t jerr;
	char *text;
	size_t len;
	json_t *back;
	int rc;

	if ((rc = core_canon(*data, &text, &len, err)))
		return rc;
	back = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
	free(text);
	if (!back)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(*data);
	*data = back;
	return 0;
}

/* Writes t to its sink; on failure diverts it. */
int eng__write_token(eng_ctx *c, uint64_t seq, eng_token *t, eng_summary *sum,
		     core_err *err)
{
	uint64_t home = home_of(seq, t);

	dag_node *k = &c->g->nodes[t->node];
	plg_write_info info;
	uint64_t t0;
	int rc;

	eng__audit_outcome(c->audit, home, t);
	t0 = core_now_wall_ns();
	rc = c->g->settings->format == CORE_FORMAT_V07 ? v07_row(&t->data, err) : 0;
	if (!rc)
		rc = k->kops->write(k->kstate, t->data, &info, err);
	eng__hist_add(c, k->id, core_now_wall_ns() - t0);
	if (!rc) {
		eng__audit_artifact(c->audit, home, t, &info, t0);
		sum->per_sink[t->node]++;
		return 0;
	}
	core_err_prefix(err, "row %llu: sink '%s'", (unsigned long long)seq, k->name);
	if (k->on_error == DAG_NONE)
		return err->code;
	/* Divert: the final outcome replaces the one recorded above. */
	sum->diverted++;
	free(t->error);
	t->error = strdup(err->msg);
	t->outcome = ENG_DIVERTED;
	if (k->on_error == DAG_DISCARD) {
		t->to = ENG_TO_DISCARD;
		t->node = DAG_NONE;
		eng__audit_outcome(c->audit, home, t);
		sum->discarded++;
		return 0;
	}
	t->node = k->on_error;
	eng__audit_outcome(c->audit, home, t);
	k = &c->g->nodes[t->node];
	t0 = core_now_wall_ns();
	if ((rc = k->kops->write(k->kstate, t->data, &info, err)))
		return core_err_prefix(err, "row %llu: on_write_failure sink '%s' failed too",
				       (unsigned long long)seq, k->name);
	eng__audit_artifact(c->audit, home, t, &info, t0);
	sum->per_sink[t->node]++;
	return 0;
}

static int emit_token(eng_ctx *c, uint64_t seq, eng_token *t,
		      eng_summary *sum, core_err *err)
{
	sum->outcomes[t->outcome]++;
	switch (t->to) {
	case ENG_TO_SINK:
		if (eng__held_sink(c, t->node)) /* written at the end (aggregate.c) */
			return eng__hold_accept(c, home_of(seq, t), t, err);
		return eng__write_token(c, seq, t, sum, err);
	case ENG_TO_DISCARD:
		eng__audit_outcome(c->audit, home_of(seq, t), t);
		sum->discarded++;
		return 0;
	case ENG_TO_AGG:
		sum->outcomes[t->outcome]--; /* counted when the batch flushes */
		return eng__agg_accept(c, home_of(seq, t), t, sum, err);
	}
	return CORE_EINTERNAL;
}

int eng__emit(eng_ctx *c, eng_result *res, eng_summary *sum,
		 core_err *err)
{
	bool quarantined = false;
	int rc;

	for (size_t i = 0; i < res->ntokens; i++) {
		eng_token *t = &res->tokens[i];

		quarantined |= t->outcome == ENG_QUARANTINED;
		if ((rc = emit_token(c, res->seq, t, sum, err)))
			return rc;
	}
	if (!res->batch) {
		if (res->failed)
			sum->failed++;
		else if (quarantined)
			sum->quarantined++;
		else
			sum->succeeded++;
		/* The row is released: its records are complete. */
		eng__audit_seal(c->audit, res->seq);
	}
	sum->retries += res->retries;
	return 0;
}

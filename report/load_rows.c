/*
 * load_rows.c — the rows of a run for the report (load_internal.h):
 * tokens (to find a state's row), node states (latency per node, each
 * row's span), token outcomes (counts, per sink, the rows with errors),
 * then the slowest rows. Tokens a resume abandoned (superseded) count in
 * no outcome and no row's span: their rows were run again.
 */
#include <stdlib.h>
#include <string.h>

#include "report/load_internal.h"

#define ERROR_MAX 300 /* bytes of an error kept for the table */

void rpt__row_release(rpt_row *r)
{
	free(r->outcome);
	free(r->sink);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool superseded(const rpt_load *l, uint64_t token)
{
	return l->nsup && bsearch(&token, l->superseded, l->nsup, sizeof(uint64_t), cmp_u64);
}

static int superseded_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	void *arr = l->superseded;
	int rc;

	(void)v;
	(void)vl;
	if (kl < 16)
		return 0;
	rc = rpt__grow(&arr, &l->sup_cap, sizeof(uint64_t), l->nsup);
	if (!rc) {
		l->superseded = arr;
		l->superseded[l->nsup++] = rec_key_get_u64(k, 8);
	}
	return rc; /* keys come in token order: ascending */
}

static int token_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	Elspeth__TokenRecord *t = elspeth__token_record__unpack(NULL, vl, v);
	void *arr = l->tok_row;
	uint64_t id;
	int rc = 0;

	if (!t || kl < 16) {
		if (t)
			elspeth__token_record__free_unpacked(t, NULL);
		return 0;
	}
	id = rec_key_get_u64(k, 8);
	/* ids are dense per run; a wild one (a damaged trail) is skipped */
	if (id < ((uint64_t)1 << 32) && !(rc = rpt__grow(&arr, &l->tok_cap, sizeof(uint64_t), id))) {
		l->tok_row = arr;
		l->tok_row[id] = t->row_id;
	}
	elspeth__token_record__free_unpacked(t, NULL);
	return rc;
}

static uint64_t row_of(const rpt_load *l, uint64_t token)
{
	return token < l->tok_cap ? l->tok_row[token] : 0;
}

/* A state's part in its row's span: not for superseded tokens, nor for
 * sink writes (a row is written when its turn in source order comes:
 * that wait is the release queue's, not the row's). */
static int span_add(rpt_load *l, const Elspeth__NodeStateRecord *s)
{
	uint64_t row = row_of(l, s->token_id);
	void *arr = l->spans;
	rpt_span *sp;
	int rc;

	if (!row || row >= ((uint64_t)1 << 32) || !s->completed_at_ns || superseded(l, s->token_id) ||
	    (s->node_id < l->d->nnodes && !strcmp(l->d->nodes[s->node_id].kind, "sink")))
		return 0;
	if ((rc = rpt__grow(&arr, &l->spans_cap, sizeof(rpt_span), row)))
		return rc;
	l->spans = arr;
	sp = &l->spans[row];
	if (!sp->first_ns || s->started_at_ns < sp->first_ns)
		sp->first_ns = s->started_at_ns;
	if (s->completed_at_ns > sp->last_ns)
		sp->last_ns = s->completed_at_ns;
	if ((float)s->duration_ns / 1e9f >= sp->slow_s) {
		sp->slow_s = (float)s->duration_ns / 1e9f;
		sp->slow_node = s->node_id;
	}
	return 0;
}

static int state_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	Elspeth__NodeStateRecord *s = elspeth__node_state_record__unpack(NULL, vl, v);
	int rc = 0;

	(void)k;
	(void)kl;
	if (!s)
		return 0;
	if (s->node_id < l->d->nnodes && s->completed_at_ns) {
		rpt_node *n = &l->d->nodes[s->node_id];

		rc = rpt__vec_push(&n->lat, (double)s->duration_ns / 1e9);
		n->failed += !strcmp(s->status, "failed");
	}
	if (s->completed_at_ns > l->last_state_ns)
		l->last_state_ns = s->completed_at_ns;
	if (!rc)
		rc = span_add(l, s);
	elspeth__node_state_record__free_unpacked(s, NULL);
	return rc;
}

/* ------------------------------------------------------------ outcomes */

static rpt_sink *sink_of(rpt_load *l, const char *name)
{
	rpt_data *d = l->d;
	void *arr = d->sinks;

	for (size_t i = 0; i < d->nsinks; i++)
		if (!strcmp(d->sinks[i].name, name))
			return &d->sinks[i];
	if (rpt__grow(&arr, &l->sinks_cap, sizeof(*d->sinks), d->nsinks))
		return NULL;
	d->sinks = arr;
	if (!(d->sinks[d->nsinks].name = strdup(name)))
		return NULL;
	return &d->sinks[d->nsinks++];
}

/* The error text of an outcome (its payload), cut to ERROR_MAX bytes. */
static char *error_text(rpt_load *l, const char *hash)
{
	const void *data;
	size_t len;
	char *s;

	if (!hash || !hash[0])
		return strdup("");
	if (rec_get_payload(l->txn, hash, &data, &len))
		return strdup("(the error's payload is missing)");
	if (len > ERROR_MAX)
		len = core_utf8_cut(data, ERROR_MAX);
	if ((s = malloc(len + 1))) {
		memcpy(s, data, len);
		s[len] = '\0';
	}
	return s;
}

static bool is_bad(const Elspeth__TokenOutcomeRecord *o)
{
	return !strcmp(o->outcome, "FAILED") || !strcmp(o->outcome, "QUARANTINED") ||
	       !strcmp(o->outcome, "DIVERTED") || o->error_hash[0];
}

/* A token with an error: listed (once per row, the first max_rows rows
 * by token) and counted. */
static int bad_add(rpt_load *l, const Elspeth__TokenOutcomeRecord *o, uint64_t row)
{
	rpt_data *d = l->d;
	rpt_row *r;

	d->bad_total++;
	if (d->nbad >= l->max_rows)
		return 0;
	for (size_t i = 0; i < d->nbad; i++)
		if (d->bad[i].seq == row)
			return 0;
	r = &d->bad[d->nbad];
	*r = (rpt_row){ .seq = row, .outcome = strdup(o->outcome), .sink = strdup(o->sink),
			.error = error_text(l, o->error_hash) };
	if (!r->outcome || !r->sink || !r->error) {
		rpt__row_release(r);
		return CORE_ENOMEM;
	}
	d->nbad++;
	return 0;
}

static int outcome_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	Elspeth__TokenOutcomeRecord *o = elspeth__token_outcome_record__unpack(NULL, vl, v);
	uint64_t token = kl >= 16 ? rec_key_get_u64(k, 8) : 0;
	size_t i;
	rpt_sink *s;
	int rc = 0;

	if (!o)
		return 0;
	if (!superseded(l, token)) {
		i = rpt__index_of(rpt__outcomes, RPT_OUTCOMES, o->outcome);
		l->d->outcomes[i]++;
		if (!(s = sink_of(l, o->sink)))
			rc = CORE_ENOMEM;
		else
			s->n[i]++;
		if (!rc && is_bad(o))
			rc = bad_add(l, o, o->row_id ? o->row_id : row_of(l, token));
	}
	elspeth__token_outcome_record__free_unpacked(o, NULL);
	return rc;
}

/* ------------------------------------------------------------- slowest */

/* The max_rows longest spans, longest first (insertion into a short
 * sorted list: max_rows is small). */
static int slowest(rpt_load *l)
{
	rpt_data *d = l->d;

	for (size_t row = 1; row < l->spans_cap; row++) {
		const rpt_span *sp = &l->spans[row];
		double span;
		size_t at;

		if (!sp->last_ns)
			continue;
		d->rows_timed++;
		span = (double)(sp->last_ns - sp->first_ns) / 1e9;
		if (d->nslow == l->max_rows && span <= d->slow[d->nslow - 1].span_s)
			continue;
		at = d->nslow < l->max_rows ? d->nslow++ : d->nslow - 1;
		while (at > 0 && d->slow[at - 1].span_s < span) {
			d->slow[at] = d->slow[at - 1];
			at--;
		}
		d->slow[at] = (rpt_row){ .seq = row, .span_s = span, .slow_node = sp->slow_node,
					 .slow_s = sp->slow_s };
	}
	return 0;
}

static int scan(rpt_load *l, rec_table t, rec_scan_fn fn)
{
	rec_key k;
	int rc;

	rec_key_init(&k);
	rec_key_u64(&k, l->d->run);
	rc = rec_scan(l->txn, t, &k, fn, l);
	if (rc == CORE_ENOMEM)
		core_err_set(l->err, rc, "out of memory");
	else if (rc)
		core_err_set(l->err, rc, "run %llu: cannot read table %s of the audit trail: %s%s%s",
			     (unsigned long long)l->d->run, rec_table_name(t), core_strerror(rc),
			     rc == CORE_EDATA ? ": the trail is damaged at " : "",
			     rc == CORE_EDATA ? rec_damage_where() : "");
	return rc;
}

int rpt__load_rows(rpt_load *l)
{
	rpt_data *d = l->d;
	int rc;

	d->slow = calloc(l->max_rows + 1, sizeof(*d->slow));
	d->bad = calloc(l->max_rows + 1, sizeof(*d->bad));
	if (!d->slow || !d->bad)
		return core_err_set(l->err, CORE_ENOMEM, "out of memory");
	rc = scan(l, REC_SUPERSEDED, superseded_one);
	if (!rc && l->nsup > 1)
		qsort(l->superseded, l->nsup, sizeof(uint64_t), cmp_u64);
	if (!rc)
		rc = scan(l, REC_TOKENS, token_one);
	if (!rc)
		rc = scan(l, REC_NODE_STATES, state_one);
	if (!rc)
		rc = scan(l, REC_TOKEN_OUTCOMES, outcome_one);
	if (!rc)
		rc = slowest(l);
	return rc;
}

void rpt__load_release(rpt_load *l)
{
	free(l->tok_row);
	free(l->superseded);
	free(l->spans);
}

/*
 * load.c — one run read from the Landscape for the report
 * (report_internal.h): its record and resumes, nodes and edges, metric
 * samples and calls, and the time axis the charts share; the rows and
 * outcomes are load_rows.c's. One read transaction, so the page shows
 * one committed state of a trail a run may still be writing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/load_internal.h"

const char *const rpt__outcomes[RPT_OUTCOMES] = {
	"COMPLETED", "ROUTED", "FAILED", "QUARANTINED", "DIVERTED",
	"FORKED", "EXPANDED", "COALESCED", "CONSUMED_IN_BATCH", "other",
};

const char *const rpt__classes[RPT_CLASSES] = {
	"ok", "capacity", "server", "network", "timeout", "malformed",
	"client", "gave_up", "replayed", "other",
};

size_t rpt__index_of(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (name && !strcmp(names[i], name))
			return i;
	return n - 1; /* "other" */
}

int rpt__vec_push(rpt_vec *a, double x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		double *v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return CORE_ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

void rpt__vec_release(rpt_vec *a)
{
	free(a->v);
	*a = (rpt_vec){ 0 };
}

/* Grows *arr (of *cap elements of size sz) to hold index i, zeroing the
 * new room. */
int rpt__grow(void **arr, size_t *cap, size_t sz, size_t i)
{
	size_t ncap = *cap ? *cap : 16;
	void *p;

	if (i < *cap)
		return 0;
	while (ncap <= i)
		ncap *= 2;
	if (!(p = realloc(*arr, ncap * sz)))
		return CORE_ENOMEM;
	memset((char *)p + *cap * sz, 0, (ncap - *cap) * sz);
	*arr = p;
	*cap = ncap;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void sort(rpt_vec *a)
{
	if (a->n > 1)
		qsort(a->v, a->n, sizeof(double), cmp_double);
}

static char *dup(const char *s)
{
	return strdup(s ? s : "");
}

/* ------------------------------------------------------------- scans */

static int resume_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	rpt_data *d = l->d;
	Elspeth__ResumeRecord *r = elspeth__resume_record__unpack(NULL, vl, v);
	void *arr = d->resumes;

	(void)k;
	(void)kl;
	if (!r)
		return 0;
	if (rpt__grow(&arr, &l->resumes_cap, sizeof(*d->resumes), d->nresumes)) {
		elspeth__resume_record__free_unpacked(r, NULL);
		return CORE_ENOMEM;
	}
	d->resumes = arr;
	d->resumes[d->nresumes++] = r;
	return 0;
}

static int node_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	rpt_data *d = l->d;
	Elspeth__NodeRecord *r = elspeth__node_record__unpack(NULL, vl, v);
	void *arr = d->nodes;
	rpt_node *n;
	int rc = 0;

	(void)k;
	(void)kl;
	if (!r)
		return 0;
	if (r->node_id < 4096 && !(rc = rpt__grow(&arr, &l->nodes_cap, sizeof(*d->nodes), r->node_id))) {
		d->nodes = arr;
		d->nnodes = r->node_id + 1 > d->nnodes ? r->node_id + 1 : d->nnodes;
		n = &d->nodes[r->node_id];
		free(n->name);
		free(n->kind);
		free(n->plugin);
		n->name = dup(r->name);
		n->kind = dup(r->kind);
		n->plugin = dup(r->plugin);
		if (!n->name || !n->kind || !n->plugin)
			rc = CORE_ENOMEM;
	}
	elspeth__node_record__free_unpacked(r, NULL);
	return rc;
}

static int edge_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	rpt_data *d = l->d;
	Elspeth__EdgeRecord *r = elspeth__edge_record__unpack(NULL, vl, v);
	void *arr = d->edges;
	int rc;

	(void)k;
	(void)kl;
	if (!r)
		return 0;
	rc = rpt__grow(&arr, &l->edges_cap, sizeof(*d->edges), d->nedges);
	if (!rc) {
		d->edges = arr;
		d->edges[d->nedges] = (rpt_edge){ r->from_node, r->to_node, dup(r->label) };
		rc = d->edges[d->nedges++].label ? 0 : CORE_ENOMEM;
	}
	elspeth__edge_record__free_unpacked(r, NULL);
	return rc;
}

static int sample_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	rpt_data *d = l->d;
	Elspeth__SampleRecord *r = elspeth__sample_record__unpack(NULL, vl, v);
	void *arr = d->samples;

	(void)k;
	(void)kl;
	if (!r)
		return 0;
	if (rpt__grow(&arr, &l->samples_cap, sizeof(*d->samples), d->nsamples)) {
		elspeth__sample_record__free_unpacked(r, NULL);
		return CORE_ENOMEM;
	}
	d->samples = arr;
	d->samples[d->nsamples++] = r;
	return 0;
}

static uint8_t call_class(const Elspeth__CallRecord *r)
{
	if (!strcmp(r->status, "replayed"))
		return (uint8_t)rpt__index_of(rpt__classes, RPT_CLASSES, "replayed");
	if (!strcmp(r->status, "success"))
		return 0;
	return (uint8_t)rpt__index_of(rpt__classes, RPT_CLASSES, r->error_class);
}

/* The node of a call: its own field, or, in trails written before calls
 * named it (0: the source, which makes none), its node state's. */
static uint32_t call_node(const rpt_load *l, const Elspeth__CallRecord *r)
{
	Elspeth__NodeStateRecord *s;
	const void *v;
	size_t vl;
	uint32_t node = r->node_id;
	rec_key k;

	if (node)
		return node;
	rec_key_init(&k);
	rec_key_u64(&k, l->d->run);
	rec_key_u64(&k, r->state_id);
	if (rec_get(l->txn, REC_NODE_STATES, &k, &v, &vl) ||
	    !(s = elspeth__node_state_record__unpack(NULL, vl, v)))
		return UINT32_MAX; /* unknown */
	node = s->node_id;
	elspeth__node_state_record__free_unpacked(s, NULL);
	return node;
}

static int call_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	rpt_load *l = ctx;
	rpt_data *d = l->d;
	Elspeth__CallRecord *r = elspeth__call_record__unpack(NULL, vl, v);
	void *arr = d->calls;
	uint32_t node;
	int rc;

	(void)k;
	(void)kl;
	if (!r)
		return 0;
	node = call_node(l, r);
	rc = rpt__grow(&arr, &l->calls_cap, sizeof(*d->calls), d->ncalls);
	if (!rc) {
		d->calls = arr;
		d->calls[d->ncalls++] = (rpt_call){ .at_ns = r->completed_at_ns,
			.node = node, .cls = call_class(r) };
		if (node < d->nnodes && strcmp(r->status, "replayed"))
			rc = rpt__vec_push(&d->nodes[node].call_lat,
					   (double)r->latency_ns / 1e9);
	}
	elspeth__call_record__free_unpacked(r, NULL);
	return rc;
}

/* A node id with no record (a damaged trail) still gets a name. */
static int nodes_fill(rpt_data *d)
{
	char name[32];

	for (size_t i = 0; i < d->nnodes; i++) {
		rpt_node *n = &d->nodes[i];

		if (n->name)
			continue;
		snprintf(name, sizeof(name), "node %zu", i);
		n->name = strdup(name);
		n->kind = strdup("unknown");
		n->plugin = strdup("");
		if (!n->name || !n->kind || !n->plugin)
			return CORE_ENOMEM;
	}
	return 0;
}

/* ---------------------------------------------------------- time axis */

/* Which attempt a wall time falls in: the last that started at or
 * before it (0 before the run). */
static size_t attempt_of(const rpt_data *d, uint64_t t)
{
	size_t k = 0;

	while (k + 1 < d->nattempts && d->attempts[k + 1].start_ns <= t)
		k++;
	return k;
}

static void attempt_end(rpt_data *d, uint64_t t)
{
	rpt_attempt *a;

	if (!t || !d->nattempts)
		return;
	a = &d->attempts[attempt_of(d, t)];
	if (t > a->end_ns)
		a->end_ns = t;
}

/* Each attempt from its start to the last thing recorded in it (a sample,
 * a call, a node state, its end), laid end to end. */
static int timeline(rpt_data *d, const rpt_load *l)
{
	d->nattempts = 1 + d->nresumes;
	d->attempts = calloc(d->nattempts, sizeof(*d->attempts));
	if (!d->attempts)
		return CORE_ENOMEM;
	d->attempts[0].start_ns = d->rec->started_at_ns;
	for (size_t k = 0; k < d->nresumes; k++) {
		uint32_t a = d->resumes[k]->attempt;

		if (a >= 1 && a < d->nattempts)
			d->attempts[a].start_ns = d->resumes[k]->started_at_ns;
	}
	for (size_t k = 1; k < d->nattempts; k++)
		if (d->attempts[k].start_ns < d->attempts[k - 1].start_ns)
			d->attempts[k].start_ns = d->attempts[k - 1].start_ns;
	for (size_t k = 0; k < d->nattempts; k++)
		d->attempts[k].end_ns = d->attempts[k].start_ns;
	for (size_t k = 0; k < d->nresumes; k++)
		attempt_end(d, d->resumes[k]->completed_at_ns);
	attempt_end(d, d->rec->completed_at_ns);
	for (size_t i = 0; i < d->nsamples; i++)
		attempt_end(d, d->samples[i]->at_ns);
	for (size_t i = 0; i < d->ncalls; i++)
		attempt_end(d, d->calls[i].at_ns);
	attempt_end(d, l->last_state_ns);
	for (size_t k = 0; k < d->nattempts; k++) {
		d->attempts[k].offset_s = d->active_s;
		d->active_s += (double)(d->attempts[k].end_ns - d->attempts[k].start_ns) / 1e9;
	}
	return 0;
}

double rpt__at(const rpt_data *d, uint64_t t)
{
	const rpt_attempt *a;

	if (!d->nattempts)
		return 0;
	a = &d->attempts[attempt_of(d, t)];
	if (t < a->start_ns)
		t = a->start_ns;
	if (t > a->end_ns)
		t = a->end_ns;
	return a->offset_s + (double)(t - a->start_ns) / 1e9;
}

/* ---------------------------------------------------------------- load */

static int scan(rpt_load *l, rec_table t, rec_scan_fn fn, void *ctx)
{
	rec_key k;
	int rc;

	rec_key_init(&k);
	rec_key_u64(&k, l->d->run);
	rc = rec_scan(l->txn, t, &k, fn, ctx);
	if (rc && rc != CORE_ENOMEM)
		core_err_set(l->err, rc, "run %llu: cannot read table %s of the audit trail: %s%s%s",
			     (unsigned long long)l->d->run, rec_table_name(t), core_strerror(rc),
			     rc == CORE_EDATA ? ": the trail is damaged at " : "",
			     rc == CORE_EDATA ? rec_damage_where() : "");
	else if (rc)
		core_err_set(l->err, rc, "out of memory");
	return rc;
}

static int run_record(rpt_load *l)
{
	const void *v;
	size_t vl;
	rec_key k;
	int rc;

	rec_key_init(&k);
	rec_key_u64(&k, l->d->run);
	rc = rec_get(l->txn, REC_RUNS, &k, &v, &vl);
	if (rc == REC_NOTFOUND)
		return core_err_set(l->err, CORE_EDATA, "no run %llu in this audit trail (see `elspeth runs`)",
				    (unsigned long long)l->d->run);
	if (rc)
		return core_err_set(l->err, rc, "cannot read run %llu: %s",
				    (unsigned long long)l->d->run, core_strerror(rc));
	if (!(l->d->rec = elspeth__run_record__unpack(NULL, vl, v)))
		return core_err_set(l->err, CORE_EDATA, "run %llu: its record cannot be decoded",
				    (unsigned long long)l->d->run);
	return 0;
}

int rpt__load(rec_env *env, uint64_t run, size_t max_rows, rpt_data *d,
	      core_err *err)
{
	rpt_load l = { .d = d, .err = err, .max_rows = max_rows };
	int rc;

	memset(d, 0, sizeof(*d));
	d->run = run;
	if ((rc = rec_read_begin(env, &l.txn, err)))
		return rc;
	rc = run_record(&l);
	if (!rc)
		rc = scan(&l, REC_RESUMES, resume_one, &l);
	if (!rc)
		rc = scan(&l, REC_NODES, node_one, &l);
	if (!rc && (rc = nodes_fill(d)))
		core_err_set(err, rc, "out of memory");
	if (!rc)
		rc = scan(&l, REC_EDGES, edge_one, &l);
	if (!rc)
		rc = scan(&l, REC_SAMPLES, sample_one, &l);
	if (!rc)
		rc = scan(&l, REC_CALLS, call_one, &l);
	if (!rc)
		rc = rpt__load_rows(&l);
	if (!rc && (rc = timeline(d, &l)))
		core_err_set(err, rc, "out of memory");
	for (size_t i = 0; !rc && i < d->nnodes; i++) { /* for the quantiles */
		sort(&d->nodes[i].lat);
		sort(&d->nodes[i].call_lat);
	}
	rpt__load_release(&l);
	rec_read_end(l.txn);
	if (rc) /* what was loaded before the failure */
		rpt__data_release(d);
	return rc;
}

void rpt__data_release(rpt_data *d)
{
	if (d->rec)
		elspeth__run_record__free_unpacked(d->rec, NULL);
	for (size_t i = 0; i < d->nresumes; i++)
		elspeth__resume_record__free_unpacked(d->resumes[i], NULL);
	for (size_t i = 0; i < d->nsamples; i++)
		elspeth__sample_record__free_unpacked(d->samples[i], NULL);
	for (size_t i = 0; i < d->nnodes; i++) {
		free(d->nodes[i].name);
		free(d->nodes[i].kind);
		free(d->nodes[i].plugin);
		rpt__vec_release(&d->nodes[i].lat);
		rpt__vec_release(&d->nodes[i].call_lat);
	}
	for (size_t i = 0; i < d->nedges; i++)
		free(d->edges[i].label);
	for (size_t i = 0; i < d->nsinks; i++)
		free(d->sinks[i].name);
	for (size_t i = 0; i < d->nslow; i++)
		rpt__row_release(&d->slow[i]);
	for (size_t i = 0; i < d->nbad; i++)
		rpt__row_release(&d->bad[i]);
	free(d->resumes);
	free(d->samples);
	free(d->nodes);
	free(d->edges);
	free(d->calls);
	free(d->sinks);
	free(d->slow);
	free(d->bad);
	free(d->attempts);
	memset(d, 0, sizeof(*d));
}

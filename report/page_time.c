/*
 * page_time.c — the page's charts over time (report_internal.h): rows
 * per second, rows in flight and waiting (from the metric samples), LLM
 * calls per second by class (from the calls), and each upstream's
 * capacity control against its refusals (from the samples). The x axis
 * is the run's time with the gaps between a crash and its resume left
 * out (rpt__at); each resume is a labelled mark.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define MAX_BARS 240 /* call buckets at most */
#define NO_SAMPLES "the trail holds no metric samples for this run (written before " \
	"samples were recorded, or the run stopped before its first)"

/* Resume marks: "resume 1" ... at each attempt's start. */
static rpt_mark *resume_marks(const rpt_data *d, char (*labels)[24], size_t *n)
{
	rpt_mark *m = calloc(d->nattempts + 1, sizeof(*m));

	*n = 0;
	for (size_t k = 1; m && k < d->nattempts; k++) {
		snprintf(labels[*n], 24, "resume %u", (unsigned)k);
		m[*n] = (rpt_mark){ d->attempts[k].offset_s, labels[*n] };
		(*n)++;
	}
	return m;
}

/* Arrays of n doubles, NaN-filled. */
static double *nans(size_t n)
{
	double *v = malloc((n + 1) * sizeof(*v));

	for (size_t i = 0; v && i <= n; i++)
		v[i] = NAN;
	return v;
}

/* A rate between samples i - 1 and i of the same attempt, or NaN. */
static double rate(const rpt_data *d, size_t i, uint64_t before, uint64_t now)
{
	const Elspeth__SampleRecord *a, *b;
	double dt;

	if (!i)
		return NAN;
	a = d->samples[i - 1];
	b = d->samples[i];
	dt = (double)(int64_t)(b->at_ns - a->at_ns) / 1e9;
	if (a->attempt != b->attempt || dt <= 0 || now < before)
		return NAN;
	return (double)(now - before) / dt;
}


/* What held the next row back, as the samples saw it (rows in flight,
 * the waiting budget or count, or nothing: the rows' own work), and what
 * the waiting rows held at most (ADR 0029). */
static int held_note(core_buf *b, const rpt_data *d)
{
	static const char *const names[] = { "rows_in_flight", "waiting_bytes",
					     "waiting_rows" };
	static const char *const say[] = { "rows in flight (N)", "the waiting budget",
					   "max_completed_waiting" };
	size_t cnt[3] = { 0 }, total = 0;
	uint64_t peak = 0;
	int rc;

	for (size_t i = 0; i < d->nsamples; i++) {
		const Elspeth__SampleRecord *s = d->samples[i];

		if (s->waiting_bytes > peak)
			peak = s->waiting_bytes;
		if (s->final)
			continue;
		total++;
		for (size_t k = 0; s->held_by && k < 3; k++)
			cnt[k] += !strcmp(s->held_by, names[k]);
	}
	if (!total)
		return 0;
	rc = core_buf_printf(b, "<p class=\"note\">What kept the next row from starting, "
			     "share of the samples:");
	for (size_t k = 0; !rc && k < 3; k++)
		rc = core_buf_printf(b, " %s %.0f %%%s", say[k],
				     100.0 * (double)cnt[k] / (double)total, k < 2 ? "," : ";");
	if (!rc)
		rc = core_buf_printf(b, " the rest of the time nothing did. The waiting rows "
				     "held %.1f MiB at most.</p>\n", (double)peak / 1048576.0);
	return rc;
}

static int section_open(core_buf *b, const char *id, const char *title, const char *lead)
{
	int rc = core_buf_printf(b, "<section id=\"%s\"><h2>%s</h2>\n", id, title);

	return !rc && lead ? core_buf_printf(b, "<p class=\"lead\">%s</p>\n", lead) : rc;
}

/* --------------------------------------------------------- rows/time */

int rpt__page_rows_over_time(core_buf *b, const rpt_data *d)
{
	size_t n = d->nsamples, nm = 0;
	double *x = nans(n), *xm = nans(n), *rel = nans(n), *pul = nans(n);
	double *fl = nans(n), *wt = nans(n);
	char (*labels)[24] = calloc(d->nattempts + 1, sizeof(*labels));
	rpt_mark *marks = labels ? resume_marks(d, labels, &nm) : NULL;
	int rc = x && xm && rel && pul && fl && wt && marks ? 0 : CORE_ENOMEM;

	for (size_t i = 0; !rc && i < n; i++) {
		const Elspeth__SampleRecord *s = d->samples[i];

		x[i] = rpt__at(d, s->at_ns);
		xm[i] = i ? (x[i - 1] + x[i]) / 2 : x[i];
		rel[i] = rate(d, i, i ? d->samples[i - 1]->released : 0, s->released);
		pul[i] = rate(d, i, i ? d->samples[i - 1]->pulled : 0, s->pulled);
		fl[i] = (double)s->in_flight;
		wt[i] = (double)s->waiting;
	}
	if (!rc)
		rc = section_open(b, "rows", "Rows over time",
			"From the metric samples the engine records about once a second. "
			"A row is <em>pulled</em> when it starts, <em>released</em> when its "
			"outputs go to the sinks in source order; <em>in flight</em> rows are "
			"being processed, <em>waiting</em> rows are done and wait for an "
			"earlier row to be released.");
	if (!rc) {
		rpt_series s[] = {
			{ "released / s", xm, rel, n, RPT_LINE, false, false, "#2f6fde" },
			{ "pulled / s", xm, pul, n, RPT_LINE, false, true, "#e0801b" },
		};
		rpt_chart c = { .title = "rows per second", .ylabel = "rows / s",
				.xfmt = RPT_X_SECONDS, .series = s, .nseries = 2,
				.marks = marks, .nmarks = nm, .nodata = NO_SAMPLES };

		rc = rpt__chart(b, &c);
	}
	if (!rc) {
		rpt_series s[] = {
			{ "in flight", x, fl, n, RPT_LINE, false, false, "#2a9d54" },
			{ "completed, waiting for release", x, wt, n, RPT_LINE, false, false, "#c23b3b" },
		};
		rpt_chart c = { .title = "rows in flight and waiting", .ylabel = "rows",
				.xfmt = RPT_X_SECONDS, .series = s, .nseries = 2,
				.marks = marks, .nmarks = nm, .nodata = NO_SAMPLES };

		rc = rpt__chart(b, &c);
	}
	if (!rc)
		rc = held_note(b, d);
	if (!rc)
		rc = core_buf_printf(b, "<p class=\"note\">%zu samples.</p></section>\n", n);
	free(x);
	free(xm);
	free(rel);
	free(pul);
	free(fl);
	free(wt);
	free(marks);
	free(labels);
	return rc;
}

/* ------------------------------------------------------------ calls/s */

/* A bucket width (seconds, at least 1) giving at most MAX_BARS buckets
 * over the run. */
static double bucket_width(double span)
{
	static const double w[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
				    1800, 3600, 7200, 21600, 43200, 86400 };

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		if (span / w[i] <= MAX_BARS)
			return w[i];
	return ceil(span / MAX_BARS);
}

static int calls_chart(core_buf *b, const rpt_data *d, const rpt_mark *marks, size_t nm)
{
	double bw = bucket_width(d->active_s);
	size_t nb = d->active_s > bw ? (size_t)ceil(d->active_s / bw) : 1, ns = 0;
	double *x = calloc(nb, sizeof(double)), *y = calloc(nb * RPT_CLASSES, sizeof(double));
	rpt_series s[RPT_CLASSES];
	char lead[160], w[32];
	int rc = x && y ? 0 : CORE_ENOMEM;

	for (size_t i = 0; !rc && i < nb; i++)
		x[i] = (double)i * bw;
	for (size_t i = 0; !rc && i < d->ncalls; i++) {
		size_t k = (size_t)floor(rpt__at(d, d->calls[i].at_ns) / bw);

		y[d->calls[i].cls * nb + (k < nb ? k : nb - 1)] += 1 / bw;
	}
	for (size_t c = 0; !rc && c < RPT_CLASSES; c++) {
		bool any = false;

		for (size_t i = 0; i < nb; i++)
			any |= y[c * nb + i] > 0;
		if (any)
			s[ns++] = (rpt_series){ rpt__classes[c], x, y + c * nb, nb, RPT_BARS,
						false, false, rpt__color(rpt__classes[c]) };
	}
	rpt__dur(w, sizeof(w), bw);
	snprintf(lead, sizeof(lead), "Every attempt of every call, by how it ended, "
		 "per second (buckets of %s).", w);
	if (!rc)
		rc = core_buf_printf(b, "<h3>Calls per second by outcome</h3><p class=\"lead\">%s</p>\n", lead);
	if (!rc) {
		rpt_chart c = { .title = "LLM calls per second by outcome", .ylabel = "calls / s",
				.xfmt = RPT_X_SECONDS, .series = s, .nseries = ns, .bar_width = bw,
				.marks = marks, .nmarks = nm, .nodata = "this run made no LLM calls" };

		rc = rpt__chart(b, &c);
	}
	free(x);
	free(y);
	return rc;
}

/* ------------------------------------------------------------ upstreams */

/* One upstream's samples, as series. */
typedef struct ups {
	const char *name;
	char nodes[256];        /* the transforms that use it */
	uint32_t ids[16];       /* ... their ids */
	size_t nids;
	double *x, *rate, *sent, *refused, *window, *inflight, *ceiling;
	unsigned ceil_max;
	uint64_t requests, refusals; /* the last sample's */
	const char *held_by;
} ups;

static const Elspeth__SampleUpstream *find_up(const Elspeth__SampleRecord *s, const char *name)
{
	for (size_t j = 0; j < s->n_upstreams; j++)
		if (!strcmp(s->upstreams[j]->upstream, name))
			return s->upstreams[j];
	return NULL;
}

static void ups_free(ups *u)
{
	free(u->x);
	free(u->rate);
	free(u->sent);
	free(u->refused);
	free(u->window);
	free(u->inflight);
	free(u->ceiling);
}

static void ups_node(ups *u, const rpt_data *d, uint32_t node)
{
	const char *name = node < d->nnodes ? d->nodes[node].name : "?";
	size_t len = strlen(u->nodes);

	for (size_t i = 0; i < u->nids; i++)
		if (u->ids[i] == node)
			return;
	if (u->nids == sizeof(u->ids) / sizeof(u->ids[0]))
		return;
	u->ids[u->nids++] = node;
	snprintf(u->nodes + len, sizeof(u->nodes) - len, "%s%s", len ? ", " : "", name);
}

static int ups_fill(ups *u, const rpt_data *d)
{
	size_t n = d->nsamples;
	const Elspeth__SampleUpstream *prev = NULL;
	size_t prev_i = 0;

	u->x = nans(n);
	u->rate = nans(n);
	u->sent = nans(n);
	u->refused = nans(n);
	u->window = nans(n);
	u->inflight = nans(n);
	u->ceiling = nans(n);
	if (!u->x || !u->rate || !u->sent || !u->refused || !u->window || !u->inflight || !u->ceiling)
		return CORE_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const Elspeth__SampleRecord *s = d->samples[i];
		const Elspeth__SampleUpstream *p = find_up(s, u->name);

		u->x[i] = rpt__at(d, s->at_ns);
		if (!p)
			continue;
		for (size_t j = 0; j < s->n_upstreams; j++)
			if (!strcmp(s->upstreams[j]->upstream, u->name))
				ups_node(u, d, s->upstreams[j]->node_id);
		u->rate[i] = p->rate > 0 ? p->rate : NAN;
		u->window[i] = p->window;
		u->inflight[i] = p->in_flight;
		u->ceiling[i] = p->ceiling;
		u->ceil_max = p->ceiling > u->ceil_max ? p->ceiling : u->ceil_max;
		if (prev && d->samples[prev_i]->attempt == s->attempt && i) {
			double dt = (double)(int64_t)(s->at_ns - d->samples[prev_i]->at_ns) / 1e9;

			if (dt > 0 && p->requests >= prev->requests && p->refusals >= prev->refusals) {
				u->sent[i] = (double)(p->requests - prev->requests) / dt;
				/* the bar covers the interval before the sample */
				u->refused[prev_i] = (double)(p->refusals - prev->refusals) / dt;
			}
		}
		u->requests = p->requests;
		u->refusals = p->refusals;
		u->held_by = p->held_by;
		prev = p;
		prev_i = i;
	}
	return 0;
}

/* The typical time between samples: the bars' width. */
static double sample_step(const rpt_data *d)
{
	for (size_t i = 1; i < d->nsamples; i++)
		if (d->samples[i]->attempt == d->samples[i - 1]->attempt &&
		    d->samples[i]->at_ns > d->samples[i - 1]->at_ns)
			return (double)(d->samples[i]->at_ns - d->samples[i - 1]->at_ns) / 1e9;
	return 1;
}

static int ups_charts(core_buf *b, const rpt_data *d, ups *u, const rpt_mark *marks, size_t nm)
{
	size_t n = d->nsamples;
	char title[320], req[32], ref[32], ceil_s[32];
	int rc;

	rpt__count(req, sizeof(req), u->requests);
	rpt__count(ref, sizeof(ref), u->refusals);
	rpt__count(ceil_s, sizeof(ceil_s), u->ceil_max);
	rc = core_buf_puts(b, "<h3>Capacity control: ");
	if (!rc && !(rc = rpt__esc(b, u->name)) && !(rc = core_buf_puts(b, "</h3><p class=\"lead\">Used by ")) &&
	    !(rc = rpt__esc(b, u->nodes)))
		rc = core_buf_printf(b, "; pool_size %s; %s requests sent and %s refused "
				     "(capacity errors) in the last attempt%s", ceil_s, req, ref,
				     u->held_by && u->held_by[0] ? "; dispatch last held back by " : ".");
	if (!rc && u->held_by && u->held_by[0] && !(rc = rpt__esc(b, u->held_by)))
		rc = core_buf_puts(b, ".");
	if (!rc)
		rc = core_buf_puts(b, " No pace line: not paced (as fast as the window allows).</p>\n");
	snprintf(title, sizeof(title), "pace against refusals");
	if (!rc) {
		rpt_series s[] = {
			{ "refused / s", u->x, u->refused, n, RPT_BARS, true, false, "#f0b27a" },
			{ "pace allowed (req/s)", u->x, u->rate, n, RPT_LINE, false, false, "#2f6fde" },
			{ "sent / s", u->x, u->sent, n, RPT_LINE, false, true, "#2a9d54" },
		};
		rpt_chart c = { .title = title, .ylabel = "requests / s", .y2label = "refused / s",
				.xfmt = RPT_X_SECONDS, .series = s, .nseries = 3,
				.bar_width = sample_step(d), .marks = marks, .nmarks = nm,
				.nodata = NO_SAMPLES };

		rc = rpt__chart(b, &c);
	}
	snprintf(title, sizeof(title), "concurrency against refusals");
	if (!rc) {
		rpt_series s[] = {
			{ "refused / s", u->x, u->refused, n, RPT_BARS, true, false, "#f0b27a" },
			{ "window allowed", u->x, u->window, n, RPT_STEP, false, false, "#7b4fc9" },
			{ "in flight", u->x, u->inflight, n, RPT_LINE, false, false, "#2a9d54" },
			{ "ceiling (pool_size)", u->x, u->ceiling, n, RPT_STEP, false, true, "#888888" },
		};
		rpt_chart c = { .title = title, .ylabel = "requests in flight", .y2label = "refused / s",
				.xfmt = RPT_X_SECONDS, .series = s, .nseries = 4,
				.bar_width = sample_step(d), .marks = marks, .nmarks = nm,
				.nodata = NO_SAMPLES };

		rc = rpt__chart(b, &c);
	}
	return rc;
}

/* Each upstream named by any sample, in order of appearance. */
static int upstreams(core_buf *b, const rpt_data *d, const rpt_mark *marks, size_t nm)
{
	const char *seen[64];
	size_t nseen = 0;
	int rc = 0;

	for (size_t i = 0; i < d->nsamples; i++)
		for (size_t j = 0; j < d->samples[i]->n_upstreams && nseen < 64; j++) {
			const char *name = d->samples[i]->upstreams[j]->upstream;
			size_t k = 0;

			while (k < nseen && strcmp(seen[k], name))
				k++;
			if (k == nseen)
				seen[nseen++] = name;
		}
	if (!nseen)
		return core_buf_puts(b, "<h3>Capacity control</h3><p class=\"nodata\">No data: "
				     "no metric samples of an LLM upstream in this trail (a run "
				     "without LLM transforms, or recorded before samples existed)</p>\n");
	for (size_t k = 0; k < nseen && !rc; k++) {
		ups u = { .name = seen[k] };

		rc = ups_fill(&u, d);
		if (!rc)
			rc = ups_charts(b, d, &u, marks, nm);
		ups_free(&u);
	}
	return rc;
}

int rpt__page_llm(core_buf *b, const rpt_data *d)
{
	char (*labels)[24] = calloc(d->nattempts + 1, sizeof(*labels));
	size_t nm = 0;
	rpt_mark *marks = labels ? resume_marks(d, labels, &nm) : NULL;
	int rc = marks ? 0 : CORE_ENOMEM;

	if (!rc)
		rc = section_open(b, "llm", "LLM calls", NULL);
	if (!rc)
		rc = calls_chart(b, d, marks, nm);
	if (!rc)
		rc = upstreams(b, d, marks, nm);
	if (!rc)
		rc = core_buf_puts(b, "</section>\n");
	free(marks);
	free(labels);
	return rc;
}

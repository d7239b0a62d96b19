/*
 * page.c — the page's sections that are not over time
 * (report_internal.h): the header, the graph, latency per node,
 * outcomes per sink and the tables of rows worth a look.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static int kv(core_buf *b, const char *key, const char *value)
{
	int rc = core_buf_puts(b, "<tr><th>");

	if (!rc && !(rc = rpt__esc(b, key)) && !(rc = core_buf_puts(b, "</th><td>")) &&
	    !(rc = rpt__esc(b, value)))
		rc = core_buf_puts(b, "</td></tr>\n");
	return rc;
}

static int tile(core_buf *b, const char *label, const char *value, const char *cls)
{
	return core_buf_printf(b, "<div class=\"tile%s%s\"><div class=\"v\">%s</div><div class=\"k\">%s</div></div>\n",
			       cls ? " " : "", cls ? cls : "", value, label);
}

/* --------------------------------------------------------------- header */

static int tiles(core_buf *b, const rpt_data *d)
{
	const Elspeth__RunRecord *r = d->rec;
	char v[64], w[64];
	uint64_t calls = 0, ok = 0;
	int rc;

	for (size_t i = 0; i < d->ncalls; i++) {
		calls += strcmp(rpt__classes[d->calls[i].cls], "replayed") != 0;
		ok += d->calls[i].cls == 0;
	}
	rc = core_buf_puts(b, "<div class=\"tiles\">\n");
	rpt__count(v, sizeof(v), r->rows);
	if (!rc)
		rc = tile(b, "rows", v, NULL);
	rpt__count(v, sizeof(v), r->succeeded);
	if (!rc)
		rc = tile(b, "succeeded", v, "good");
	rpt__count(v, sizeof(v), r->failed);
	if (!rc)
		rc = tile(b, "failed", v, r->failed ? "bad" : NULL);
	rpt__count(v, sizeof(v), r->quarantined);
	if (!rc)
		rc = tile(b, "quarantined", v, r->quarantined ? "warn" : NULL);
	rpt__dur(v, sizeof(v), d->active_s);
	if (!rc)
		rc = tile(b, d->nresumes ? "running time (resumes' gaps left out)" : "running time", v, NULL);
	rpt__num(w, sizeof(w), d->active_s > 0 ? (double)r->rows / d->active_s : NAN);
	snprintf(v, sizeof(v), "%s", w);
	if (!rc)
		rc = tile(b, "rows / s", v, NULL);
	rpt__count(w, sizeof(w), calls);
	snprintf(v, sizeof(v), "%s", w);
	if (!rc)
		rc = tile(b, calls ? "LLM calls" : "LLM calls (none)", v, NULL);
	snprintf(v, sizeof(v), "%.1f %%", calls ? 100.0 * (double)ok / (double)calls : 0.0);
	if (!rc && calls)
		rc = tile(b, "calls answered", v, ok == calls ? "good" : "warn");
	snprintf(v, sizeof(v), "%zu", d->nresumes);
	if (!rc)
		rc = tile(b, "resumes", v, NULL);
	return rc ? rc : core_buf_puts(b, "</div>\n");
}

static int outcome_chips(core_buf *b, const rpt_data *d)
{
	char n[32];
	int rc = core_buf_puts(b, "<p class=\"chips\">Token outcomes: ");

	for (size_t i = 0; i < RPT_OUTCOMES && !rc; i++) {
		if (!d->outcomes[i])
			continue;
		rpt__count(n, sizeof(n), d->outcomes[i]);
		rc = core_buf_printf(b, "<span class=\"chip\"><i style=\"background:%s\"></i>%s %s</span> ",
				     rpt__color(rpt__outcomes[i]), rpt__outcomes[i], n);
	}
	return rc ? rc : core_buf_puts(b, "</p>\n");
}

/* The engine's metrics of the run (runs --run N: metrics). */
static int metrics(core_buf *b, const rpt_data *d)
{
	json_t *m = d->rec->metrics_json[0] ? json_loads(d->rec->metrics_json, 0, NULL) : NULL;
	const char *key;
	json_t *v;
	int rc = 0;

	if (!json_is_object(m)) {
		json_decref(m);
		return 0;
	}
	rc = core_buf_puts(b, "<details><summary>Pipeline metrics</summary><table class=\"kv\">\n");
	json_object_foreach(m, key, v) {
		char num[32];
		core_buf t = { 0 };

		if (rc)
			break;
		if (json_is_number(v)) {
			rpt__num(num, sizeof(num), json_number_value(v));
			rc = kv(b, key, num);
		} else if (!(rc = core_json_append(&t, v, -1, 0))) {
			rc = kv(b, key, t.data);
		}
		core_buf_release(&t);
	}
	json_decref(m);
	return rc ? rc : core_buf_puts(b, "</table></details>\n");
}

static int resumes(core_buf *b, const rpt_data *d)
{
	int rc;

	if (!d->nresumes)
		return 0;
	rc = core_buf_puts(b, "<table class=\"grid\"><tr><th>resume</th><th>started</th><th>status</th>"
			   "<th>run before</th><th>from row</th><th>rows reused</th><th>rows rerun</th>"
			   "<th>tokens superseded</th><th>calls replayed</th><th>rows in flight</th></tr>\n");
	for (size_t i = 0; i < d->nresumes && !rc; i++) {
		const Elspeth__ResumeRecord *r = d->resumes[i];
		char t[64];

		rpt__time(t, sizeof(t), r->started_at_ns);
		rc = core_buf_printf(b, "<tr><td>%u</td><td>%s</td><td>", r->attempt, t);
		if (!rc && !(rc = rpt__esc(b, r->status)) && !(rc = core_buf_puts(b, "</td><td>")) &&
		    !(rc = rpt__esc(b, r->previous_status)))
			rc = core_buf_printf(b, "</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td>"
					     "<td>%llu</td><td>%u</td></tr>\n",
					     (unsigned long long)r->from_released_seq,
					     (unsigned long long)r->rows_reused,
					     (unsigned long long)r->rows_rerun,
					     (unsigned long long)r->tokens_superseded,
					     (unsigned long long)r->calls_replayed, r->max_rows_in_flight);
	}
	return rc ? rc : core_buf_puts(b, "</table>\n");
}

int rpt__page_header(core_buf *b, const rpt_data *d)
{
	const Elspeth__RunRecord *r = d->rec;
	char t0[64], t1[64];
	int rc;

	rpt__time(t0, sizeof(t0), r->started_at_ns);
	rpt__time(t1, sizeof(t1), r->completed_at_ns);
	rc = core_buf_printf(b, "<header id=\"summary\"><h1>Run %llu <span class=\"status st-",
			     (unsigned long long)d->run);
	if (!rc && !(rc = rpt__esc(b, r->status)) && !(rc = core_buf_puts(b, "\">")) &&
	    !(rc = rpt__esc(b, r->status)))
		rc = core_buf_puts(b, "</span></h1>\n<p class=\"sub\">");
	if (!rc && !(rc = rpt__esc(b, r->settings_path[0] ? r->settings_path : "(no settings path)")))
		rc = core_buf_printf(b, " \xc2\xb7 started %s \xc2\xb7 ended %s \xc2\xb7 elspeth ", t0,
				     r->completed_at_ns ? t1 : "(not yet)");
	if (!rc && !(rc = rpt__esc(b, r->elspeth_version)))
		rc = core_buf_puts(b, "</p>\n");
	if (!rc && r->error[0] && !(rc = core_buf_puts(b, "<p class=\"error\">")) &&
	    !(rc = rpt__esc(b, r->error)))
		rc = core_buf_puts(b, "</p>\n");
	if (!rc)
		rc = tiles(b, d);
	if (!rc)
		rc = outcome_chips(b, d);
	if (!rc)
		rc = resumes(b, d);
	if (!rc)
		rc = metrics(b, d);
	if (!rc && !(rc = core_buf_puts(b, "<details><summary>Hashes</summary><table class=\"kv\">\n")) &&
	    !(rc = kv(b, "config_hash", r->config_hash)) &&
	    !(rc = kv(b, "topology_hash", r->topology_hash)) &&
	    !(rc = kv(b, "canonical_version", r->canonical_version)))
		rc = core_buf_puts(b, "</table></details>\n");
	return rc ? rc : core_buf_puts(b, "</header>\n");
}

/* ------------------------------------------------------------------ dag */

int rpt__page_dag(core_buf *b, const rpt_data *d)
{
	rpt_dnode *n = calloc(d->nnodes + 1, sizeof(*n));
	rpt_dedge *e = calloc(d->nedges + 1, sizeof(*e));
	char (*notes)[96] = calloc(d->nnodes + 1, sizeof(*notes));
	int rc = n && e && notes ? 0 : CORE_ENOMEM;

	for (size_t i = 0; !rc && i < d->nnodes; i++) {
		const rpt_node *x = &d->nodes[i];
		char cnt[32], med[32];

		n[i] = (rpt_dnode){ x->name, x->kind, x->plugin, NULL };
		if (x->lat.n) {
			rpt__count(cnt, sizeof(cnt), x->lat.n);
			rpt__dur(med, sizeof(med), rpt__quantile(x->lat.v, x->lat.n, 0.5));
			snprintf(notes[i], sizeof(notes[i]), "%s states \xc2\xb7 p50 %s", cnt, med);
			n[i].note = notes[i];
		}
	}
	for (size_t i = 0; !rc && i < d->nedges; i++)
		e[i] = (rpt_dedge){ (int)d->edges[i].from, (int)d->edges[i].to, d->edges[i].label };
	if (!rc)
		rc = core_buf_puts(b, "<section id=\"graph\"><h2>Pipeline graph</h2>\n"
				   "<p class=\"lead\">Nodes left to right by depth from the source, "
				   "sinks last; each edge with its label (on_success, a route, a fork "
				   "branch, on_error). Under each node: its node states and their "
				   "median duration.</p>\n<div class=\"scroll\">");
	if (!rc)
		rc = rpt__dag(b, n, d->nnodes, e, d->nedges);
	if (!rc)
		rc = core_buf_puts(b, "</div></section>\n");
	free(n);
	free(e);
	free(notes);
	return rc;
}

/* -------------------------------------------------------------- latency */

static int latency_row(core_buf *b, const char *what, const rpt_vec *v, uint64_t failed)
{
	char p50[32], p95[32], p99[32], mx[32], n[32];
	int rc = core_buf_puts(b, "<tr><td>");

	rpt__count(n, sizeof(n), v->n);
	rpt__dur(p50, sizeof(p50), rpt__quantile(v->v, v->n, 0.5));
	rpt__dur(p95, sizeof(p95), rpt__quantile(v->v, v->n, 0.95));
	rpt__dur(p99, sizeof(p99), rpt__quantile(v->v, v->n, 0.99));
	rpt__dur(mx, sizeof(mx), v->v[v->n - 1]);
	if (!rc && !(rc = rpt__esc(b, what)))
		rc = core_buf_printf(b, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%llu</td></tr>\n",
				     n, p50, p95, p99, mx, (unsigned long long)failed);
	return rc;
}

int rpt__page_latency(core_buf *b, const rpt_data *d)
{
	rpt_box *boxes = calloc(2 * d->nnodes + 1, sizeof(*boxes));
	char (*labels)[160] = calloc(2 * d->nnodes + 1, sizeof(*labels));
	size_t nb = 0;
	int rc = boxes && labels ? 0 : CORE_ENOMEM;

	for (size_t i = 0; !rc && i < d->nnodes; i++) {
		const rpt_node *x = &d->nodes[i];

		if (x->lat.n) {
			snprintf(labels[nb], sizeof(labels[nb]), "%s (%s)", x->name, x->kind);
			rpt__box_of(x->lat.v, x->lat.n, &boxes[nb]);
			boxes[nb].label = labels[nb];
			nb++;
		}
		if (x->call_lat.n) {
			snprintf(labels[nb], sizeof(labels[nb]), "%s: LLM calls", x->name);
			rpt__box_of(x->call_lat.v, x->call_lat.n, &boxes[nb]);
			boxes[nb].label = labels[nb];
			nb++;
		}
	}
	if (!rc)
		rc = core_buf_puts(b, "<section id=\"latency\"><h2>Latency per node</h2>\n"
				   "<p class=\"lead\">How long each node took per token (its node states), "
				   "and for LLM transforms each call's latency, on a logarithmic axis: "
				   "whiskers from the fastest to the slowest, the box from the 25th to the "
				   "75th percentile, a thick line at the median, a thin one at the 95th.</p>\n");
	if (!rc)
		rc = rpt__boxes(b, "latency per node", boxes, nb, 0, "no node states recorded");
	if (!rc && nb)
		rc = core_buf_puts(b, "<table class=\"grid\"><tr><th>node</th><th>n</th><th>p50</th>"
				   "<th>p95</th><th>p99</th><th>max</th><th>failed</th></tr>\n");
	for (size_t i = 0; !rc && nb && i < d->nnodes; i++) {
		const rpt_node *x = &d->nodes[i];
		char what[160];

		snprintf(what, sizeof(what), "%s (%s)", x->name, x->kind);
		if (x->lat.n)
			rc = latency_row(b, what, &x->lat, x->failed);
		snprintf(what, sizeof(what), "%s: LLM calls", x->name);
		if (!rc && x->call_lat.n)
			rc = latency_row(b, what, &x->call_lat, 0);
	}
	if (!rc && nb)
		rc = core_buf_puts(b, "</table>\n");
	free(boxes);
	free(labels);
	return rc ? rc : core_buf_puts(b, "</section>\n");
}

/* ---------------------------------------------------------------- sinks */

int rpt__page_sinks(core_buf *b, const rpt_data *d)
{
	const char *cats[RPT_OUTCOMES], *colors[RPT_OUTCOMES], **labels;
	size_t nc = 0, idx[RPT_OUTCOMES];
	double *v;
	int rc;

	for (size_t k = 0; k < RPT_OUTCOMES; k++)
		for (size_t s = 0; s < d->nsinks; s++)
			if (d->sinks[s].n[k]) {
				idx[nc] = k;
				cats[nc] = rpt__outcomes[k];
				colors[nc++] = rpt__color(rpt__outcomes[k]);
				break;
			}
	labels = calloc(d->nsinks + 1, sizeof(*labels));
	v = calloc((d->nsinks + 1) * (nc + 1), sizeof(*v));
	if (!labels || !v) {
		free(labels);
		free(v);
		return CORE_ENOMEM;
	}
	for (size_t s = 0; s < d->nsinks; s++) {
		labels[s] = d->sinks[s].name[0] ? d->sinks[s].name : "(no sink: discarded, split or joined)";
		for (size_t c = 0; c < nc; c++)
			v[s * nc + c] = (double)d->sinks[s].n[idx[c]];
	}
	rc = core_buf_puts(b, "<section id=\"sinks\"><h2>Outcomes per sink</h2>\n"
			   "<p class=\"lead\">Every token's terminal outcome, by the sink it went "
			   "to (tokens a resume redid are left out).</p>\n");
	if (!rc) {
		rpt_hbars h = { .title = "outcomes per sink", .cats = cats, .colors = colors,
				.ncats = nc, .labels = labels, .v = v, .nrows = d->nsinks,
				.nodata = "no token outcomes recorded" };

		rc = rpt__hbars(b, &h);
	}
	free(labels);
	free(v);
	return rc ? rc : core_buf_puts(b, "</section>\n");
}

/* ----------------------------------------------------------------- rows */

static int story_link(core_buf *b, uint64_t seq)
{
	return core_buf_printf(b, "<a class=\"explain\" href=\"#row-%llu\">explain</a>",
			       (unsigned long long)seq);
}

static int slow_table(core_buf *b, const rpt_data *d)
{
	char timed[32];
	int rc;

	rpt__count(timed, sizeof(timed), d->rows_timed);
	rc = core_buf_printf(b, "<section id=\"slowest\"><h2>Slowest rows</h2>\n"
			     "<p class=\"lead\">The %zu rows (of %s) with the longest time from "
			     "their first node state's start to their last one's end, sink writes "
			     "left out: the wait for release in source order is not counted.</p>\n",
			     d->nslow, timed);
	if (!rc && !d->nslow)
		rc = core_buf_puts(b, "<p class=\"nodata\">No data: no node states recorded</p>\n");
	if (!rc && d->nslow)
		rc = core_buf_puts(b, "<table class=\"grid\"><tr><th>row</th><th>time</th>"
				   "<th>slowest node</th><th>its time</th><th></th></tr>\n");
	for (size_t i = 0; i < d->nslow && !rc; i++) {
		const rpt_row *r = &d->slow[i];
		char span[32], slow[32];

		rpt__dur(span, sizeof(span), r->span_s);
		rpt__dur(slow, sizeof(slow), r->slow_s);
		rc = core_buf_printf(b, "<tr><td>%llu</td><td>%s</td><td>", (unsigned long long)r->seq, span);
		if (!rc && !(rc = rpt__esc(b, r->slow_node < d->nnodes ? d->nodes[r->slow_node].name : "?")))
			rc = core_buf_printf(b, "</td><td>%s</td><td>", slow);
		if (!rc && !(rc = story_link(b, r->seq)))
			rc = core_buf_puts(b, "</td></tr>\n");
	}
	if (!rc && d->nslow)
		rc = core_buf_puts(b, "</table>\n");
	return rc ? rc : core_buf_puts(b, "</section>\n");
}

static int bad_table(core_buf *b, const rpt_data *d)
{
	char total[32];
	int rc;

	rpt__count(total, sizeof(total), d->bad_total);
	rc = core_buf_printf(b, "<section id=\"errors\"><h2>Failed and quarantined rows</h2>\n"
			     "<p class=\"lead\">Tokens that failed, were quarantined or diverted, or "
			     "carry an error to an on_error sink: %s in all; the first %zu rows.</p>\n",
			     total, d->nbad);
	if (!rc && !d->nbad)
		rc = core_buf_puts(b, "<p class=\"nodata\">None: no token failed, was quarantined or carries an error</p>\n");
	if (!rc && d->nbad)
		rc = core_buf_puts(b, "<table class=\"grid\"><tr><th>row</th><th>outcome</th>"
				   "<th>sink</th><th>error</th><th></th></tr>\n");
	for (size_t i = 0; i < d->nbad && !rc; i++) {
		const rpt_row *r = &d->bad[i];

		rc = core_buf_printf(b, "<tr><td>%llu</td><td>", (unsigned long long)r->seq);
		if (!rc && !(rc = rpt__esc(b, r->outcome)) && !(rc = core_buf_puts(b, "</td><td>")) &&
		    !(rc = rpt__esc(b, r->sink[0] ? r->sink : "(none)")) &&
		    !(rc = core_buf_puts(b, "</td><td class=\"err\">")) && !(rc = rpt__esc(b, r->error)) &&
		    !(rc = core_buf_puts(b, "</td><td>")) && !(rc = story_link(b, r->seq)))
			rc = core_buf_puts(b, "</td></tr>\n");
	}
	if (!rc && d->nbad)
		rc = core_buf_puts(b, "</table>\n");
	return rc ? rc : core_buf_puts(b, "</section>\n");
}

int rpt__page_rows(core_buf *b, const rpt_data *d)
{
	int rc = slow_table(b, d);

	return rc ? rc : bad_table(b, d);
}

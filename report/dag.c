/*
 * dag.c — the run's graph as an SVG (report_internal.h): nodes in columns
 * by depth (the longest path from the source, sinks in the last column),
 * ordered within a column by where their predecessors stand, edges as
 * curves with an arrow and their label (on_success, a route key, a fork
 * branch ...).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define NODE_W 176
#define NODE_H 58
#define COL_W 250
#define ROW_H 84
#define PAD 24
#define NAME_CHARS 22 /* characters of a name shown in its box */

void rpt__dag_depths(size_t nn, const rpt_dedge *e, size_t ne, int *depth)
{
	size_t *indeg = calloc(nn + 1, sizeof(*indeg)), *queue = calloc(nn + 1, sizeof(*queue));
	bool *done = calloc(nn + 1, sizeof(*done));
	size_t head = 0, tail = 0;

	for (size_t i = 0; i < nn; i++)
		depth[i] = 0;
	if (!indeg || !queue || !done)
		goto out; /* out of memory: everything in one column */
	for (size_t k = 0; k < ne; k++)
		if (e[k].from >= 0 && e[k].to >= 0 && (size_t)e[k].from < nn &&
		    (size_t)e[k].to < nn && e[k].from != e[k].to)
			indeg[e[k].to]++;
	/* Kahn's order; nodes left over sit on a cycle: taken in index
	 * order, the edges into them from nodes not yet placed ignored */
	for (size_t placed = 0; placed < nn;) {
		if (head == tail) {
			size_t i = 0;

			while (i < nn && (done[i] || indeg[i]))
				i++;
			if (i == nn)
				for (i = 0; i < nn && done[i]; i++)
					;
			done[i] = true;
			queue[tail++] = i;
		}
		size_t u = queue[head++];

		placed++;
		for (size_t k = 0; k < ne; k++) {
			size_t v;

			if (e[k].from != (int)u || e[k].to < 0 || (size_t)e[k].to >= nn)
				continue;
			v = (size_t)e[k].to;
			if (v == u || done[v]) /* a loop, or into a cycle */
				continue;
			if (depth[u] + 1 > depth[v])
				depth[v] = depth[u] + 1;
			if (indeg[v] && !--indeg[v]) {
				done[v] = true;
				queue[tail++] = v;
			}
		}
	}
out:
	free(indeg);
	free(queue);
	free(done);
}

typedef struct place {
	int col, row;
	double x, y;
	double key;  /* ordering within the column */
	size_t id;
} place;

static int by_col_key(const void *a, const void *b)
{
	const place *p = a, *q = b;

	if (p->col != q->col)
		return p->col < q->col ? -1 : 1;
	if (p->key != q->key)
		return p->key < q->key ? -1 : 1;
	return p->id < q->id ? -1 : p->id > q->id;
}

/* Columns and rows: depth, sinks last; within a column by the mean row
 * of the predecessors (one pass, left to right), else by id. */
static void layout(const rpt_dnode *n, size_t nn, const rpt_dedge *e, size_t ne,
		   place *pl, int *depth, int *ncols, int *nrows)
{
	place *sorted = malloc(nn * sizeof(*sorted));
	int maxd = 0, *rows;

	rpt__dag_depths(nn, e, ne, depth);
	for (size_t i = 0; i < nn; i++)
		maxd = depth[i] > maxd ? depth[i] : maxd;
	for (size_t i = 0; i < nn; i++) {
		pl[i] = (place){ .col = !strcmp(n[i].kind, "sink") ? maxd : depth[i],
				 .key = (double)i, .id = i };
	}
	*ncols = maxd + 1;
	rows = calloc((size_t)*ncols, sizeof(*rows));
	for (int c = 0; c < *ncols && rows && sorted; c++) {
		size_t k = 0;

		for (size_t i = 0; i < nn; i++) {
			double sum = 0;
			int cnt = 0;

			if (pl[i].col != c)
				continue;
			for (size_t j = 0; j < ne; j++)
				if (e[j].to == (int)i && e[j].from >= 0 && (size_t)e[j].from < nn &&
				    pl[e[j].from].col < c) {
					sum += pl[e[j].from].row;
					cnt++;
				}
			pl[i].key = cnt ? sum / cnt + (double)i * 1e-6 : 1e6 + (double)i;
			sorted[k++] = pl[i];
		}
		qsort(sorted, k, sizeof(*sorted), by_col_key);
		for (size_t r = 0; r < k; r++)
			pl[sorted[r].id].row = (int)r;
		rows[c] = (int)k;
	}
	*nrows = 1;
	for (int c = 0; c < *ncols && rows; c++)
		*nrows = rows[c] > *nrows ? rows[c] : *nrows;
	for (size_t i = 0; i < nn; i++) {
		int inc = rows ? rows[pl[i].col] : 1;

		pl[i].x = PAD + pl[i].col * COL_W;
		pl[i].y = PAD + 14 + pl[i].row * ROW_H + (*nrows - inc) * ROW_H / 2.0;
	}
	free(rows);
	free(sorted);
}

static const char *kind_fill(const char *kind)
{
	static const struct {
		const char *kind, *fill;
	} k[] = { { "source", "#dbe7fb" }, { "transform", "#dcf2e3" }, { "gate", "#fdf0d5" },
		  { "sink", "#ebe2f7" }, { "aggregation", "#f6e0d0" }, { "coalesce", "#d6f0f3" } };

	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (!strcmp(k[i].kind, kind))
			return k[i].fill;
	return "#eeeeee";
}

/* Text cut to max characters with an ellipsis. */
static int cut_text(core_buf *b, const char *s, size_t max)
{
	size_t len = strlen(s), cut = core_utf8_count(s, len) > max ? core_utf8_prefix(s, len, max - 1) : len;
	int rc = rpt__escn(b, s, cut);

	return !rc && cut < len ? core_buf_puts(b, "\xe2\x80\xa6") : rc;
}

static int node_box(core_buf *b, const rpt_dnode *n, const place *p)
{
	int rc = core_buf_printf(b, "<g class=\"node\"><title>");

	if (!rc && !(rc = rpt__esc(b, n->name)) && !(rc = core_buf_puts(b, " (")) &&
	    !(rc = rpt__esc(b, n->kind)) && !(rc = core_buf_puts(b, ", ")) &&
	    !(rc = rpt__esc(b, n->plugin)))
		rc = core_buf_printf(b, ")</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" rx=\"7\" fill=\"%s\"/>"
				     "<text class=\"nn\" x=\"%.1f\" y=\"%.1f\">",
				     p->x, p->y, NODE_W, NODE_H, kind_fill(n->kind), p->x + 9, p->y + 18);
	if (!rc && !(rc = cut_text(b, n->name, NAME_CHARS)))
		rc = core_buf_printf(b, "</text><text class=\"nk\" x=\"%.1f\" y=\"%.1f\">", p->x + 9, p->y + 33);
	if (!rc && !(rc = rpt__esc(b, n->kind)) && n->plugin && n->plugin[0] &&
	    !(rc = core_buf_puts(b, " \xc2\xb7 ")))
		rc = cut_text(b, n->plugin, 16);
	if (!rc)
		rc = core_buf_puts(b, "</text>");
	if (!rc && n->note && n->note[0]) {
		rc = core_buf_printf(b, "<text class=\"nk\" x=\"%.1f\" y=\"%.1f\">", p->x + 9, p->y + 48);
		if (!rc && !(rc = cut_text(b, n->note, 30)))
			rc = core_buf_puts(b, "</text>");
	}
	return rc ? rc : core_buf_puts(b, "</g>");
}

/* An edge: a curve from the right of `from` to the left of `to`,
 * sagging under the boxes of the columns it passes (or, backwards or
 * within a column, a loop under them), its label at the middle; `nth`
 * of the edges between the same two nodes, shifted. */
static int edge(core_buf *b, const rpt_dedge *e, const place *f, const place *t, int nth)
{
	double x1 = f->x + NODE_W, y1 = f->y + NODE_H / 2.0 + nth * 6;
	double x2 = t->x - 2, y2 = t->y + NODE_H / 2.0 + nth * 6;
	double c1x, c1y, c2x, c2y, mx, my;
	int rc;

	if (t->x > f->x + COL_W) { /* past other columns: under their boxes */
		c1x = x1 + 50;
		c2x = x2 - 70;
		c1y = c2y = fmax(y1, y2) + ROW_H * 0.62;
	} else if (t->x > f->x) {
		c1x = x1 + (x2 - x1) / 2;
		c2x = x2 - (x2 - x1) / 2;
		c1y = y1;
		c2y = y2;
	} else { /* loop below */
		c1x = x1 + 60;
		c2x = x2 - 60;
		c1y = c2y = fmax(y1, y2) + NODE_H;
	}
	mx = (x1 + 3 * c1x + 3 * c2x + x2) / 8;
	my = (y1 + 3 * c1y + 3 * c2y + y2) / 8 + nth * 11;
	rc = core_buf_printf(b, "<path class=\"edge\" d=\"M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f\" "
			     "marker-end=\"url(#rpt-arrow)\"/>", x1, y1, c1x, c1y, c2x, c2y, x2, y2);
	if (!rc && e->label && e->label[0]) {
		rc = core_buf_printf(b, "<text class=\"el\" x=\"%.1f\" y=\"%.1f\">", mx, my - 3);
		if (!rc && !(rc = cut_text(b, e->label, 24)))
			rc = core_buf_puts(b, "</text>");
	}
	return rc;
}

static bool valid_edge(const rpt_dedge *e, size_t nn)
{
	return e->from >= 0 && e->to >= 0 && (size_t)e->from < nn && (size_t)e->to < nn;
}

int rpt__dag(core_buf *b, const rpt_dnode *n, size_t nn, const rpt_dedge *e, size_t ne)
{
	place *pl;
	int *depth, ncols = 1, nrows = 1, rc;
	double w, h;

	if (!nn)
		return core_buf_puts(b, "<p class=\"nodata\">No data: the run recorded no graph</p>\n");
	pl = calloc(nn, sizeof(*pl));
	depth = calloc(nn, sizeof(*depth));
	if (!pl || !depth) {
		free(pl);
		free(depth);
		return CORE_ENOMEM;
	}
	layout(n, nn, e, ne, pl, depth, &ncols, &nrows);
	w = 2 * PAD + (ncols - 1) * COL_W + NODE_W;
	h = 2 * PAD + 28 + (nrows - 1) * ROW_H + NODE_H + NODE_H; /* room for loops */
	rc = rpt__svg_open(b, w, h, "the run's graph");
	if (!rc)
		rc = core_buf_puts(b, "<defs><marker id=\"rpt-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
				   "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
				   "<path d=\"M0 0L10 5L0 10z\" fill=\"#777\"/></marker></defs>");
	for (size_t k = 0; k < ne && !rc; k++) {
		int nth = 0;

		if (!valid_edge(&e[k], nn))
			continue;
		for (size_t j = 0; j < k; j++)
			nth += valid_edge(&e[j], nn) && e[j].from == e[k].from && e[j].to == e[k].to;
		rc = edge(b, &e[k], &pl[e[k].from], &pl[e[k].to], nth);
	}
	for (size_t i = 0; i < nn && !rc; i++)
		rc = node_box(b, &n[i], &pl[i]);
	free(pl);
	free(depth);
	return rc ? rc : core_buf_puts(b, "</svg>\n");
}

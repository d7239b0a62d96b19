/*
 * cats.c — charts over categories (report_internal.h): stacked
 * horizontal bars (outcomes per sink) and box plots on a logarithmic
 * time axis (latency per node).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define W_DEFAULT 880
#define ROW_H 28
#define TOP 34      /* the legend */
#define AXIS_H 30
#define CHAR_W 6.6
#define LABEL_MAX 240
#define MIN_S 1e-6  /* the box plots' floor: 1 µs */

static int nodata(core_buf *b, const char *why)
{
	int rc = core_buf_puts(b, "<p class=\"nodata\">No data");

	if (!rc && why && !(rc = core_buf_puts(b, ": ")))
		rc = rpt__esc(b, why);
	return rc ? rc : core_buf_puts(b, "</p>\n");
}

/* Room for the longest label, in pixels. */
static double label_width(const char *const *labels, size_t n)
{
	double w = 40;

	for (size_t i = 0; i < n; i++) {
		double lw = CHAR_W * (double)core_utf8_count(labels[i], strlen(labels[i])) + 14;

		w = lw > w ? lw : w;
	}
	return w < LABEL_MAX ? w : LABEL_MAX;
}

/* A row label, right-aligned before x (cut with an ellipsis when long). */
static int row_label(core_buf *b, double x, double y, const char *label)
{
	size_t max = (size_t)((LABEL_MAX - 14) / CHAR_W), len = strlen(label);
	size_t cut = core_utf8_count(label, len) > max ? core_utf8_prefix(label, len, max - 1) : len;
	int rc = core_buf_printf(b, "<text class=\"cl\" x=\"%.1f\" y=\"%.1f\">", x, y);

	if (!rc)
		rc = rpt__escn(b, label, cut);
	if (!rc && cut < len)
		rc = core_buf_puts(b, "\xe2\x80\xa6");
	return rc ? rc : core_buf_puts(b, "</text>");
}

static int swatches(core_buf *b, double x, const char *const *names,
		    const char *const *colors, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		rc = core_buf_printf(b, "<rect x=\"%.1f\" y=\"9\" width=\"12\" height=\"10\" fill=\"%s\"/>"
				     "<text class=\"lg\" x=\"%.1f\" y=\"18\">", x, colors[i], x + 16);
		if (!rc && !(rc = rpt__esc(b, names[i])))
			rc = core_buf_puts(b, "</text>");
		x += 16 + CHAR_W * (double)strlen(names[i]) + 14;
	}
	return rc;
}

/* ------------------------------------------------------------- hbars */

static double row_total(const rpt_hbars *h, size_t r)
{
	double t = 0;

	for (size_t k = 0; k < h->ncats; k++)
		if (isfinite(h->v[r * h->ncats + k]) && h->v[r * h->ncats + k] > 0)
			t += h->v[r * h->ncats + k];
	return t;
}

static int hbar_row(core_buf *b, const rpt_hbars *h, size_t r, double x0,
		    double scale, double y)
{
	char val[32];
	double x = x0;
	int rc = row_label(b, x0 - 8, y + ROW_H / 2.0 + 2, h->labels[r]);

	for (size_t k = 0; k < h->ncats && !rc; k++) {
		double v = h->v[r * h->ncats + k], w;

		if (!isfinite(v) || v <= 0)
			continue;
		w = v * scale;
		rpt__count(val, sizeof(val), (uint64_t)llround(v));
		rc = core_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>",
				     x, y + 4, w > 0.5 ? w : 0.5, ROW_H - 8, h->colors[k]);
		if (!rc && !(rc = rpt__esc(b, h->labels[r])) && !(rc = core_buf_puts(b, ", ")) &&
		    !(rc = rpt__esc(b, h->cats[k])))
			rc = core_buf_printf(b, ": %s</title></rect>", val);
		x += w;
	}
	rpt__count(val, sizeof(val), (uint64_t)llround(row_total(h, r)));
	return rc ? rc : core_buf_printf(b, "<text class=\"lg\" x=\"%.1f\" y=\"%.1f\">%s</text>",
					 x + 6, y + ROW_H / 2.0 + 4, val);
}

int rpt__hbars(core_buf *b, const rpt_hbars *h)
{
	double w = h->width > 0 ? h->width : W_DEFAULT, max = 0, ticks[24], step;
	double x0 = label_width(h->labels, h->nrows), x1 = w - 70, scale, hgt;
	size_t nt;
	char lab[32];
	int rc;

	for (size_t r = 0; r < h->nrows; r++)
		max = row_total(h, r) > max ? row_total(h, r) : max;
	if (!h->nrows || max <= 0)
		return nodata(b, h->nodata);
	nt = rpt__ticks(0, max, 5, ticks, 24, &step);
	scale = (x1 - x0) / ticks[nt - 1];
	hgt = TOP + (double)h->nrows * ROW_H + AXIS_H;
	rc = rpt__svg_open(b, w, hgt, h->title);
	for (size_t i = 0; i < nt && !rc; i++) {
		double x = x0 + ticks[i] * scale;

		rpt__num(lab, sizeof(lab), ticks[i]);
		rc = core_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\"/>"
				     "<text class=\"xl\" x=\"%.1f\" y=\"%.1f\">%s</text>",
				     x, TOP, x, hgt - AXIS_H, x, hgt - AXIS_H + 16, lab);
	}
	for (size_t r = 0; r < h->nrows && !rc; r++)
		rc = hbar_row(b, h, r, x0, scale, TOP + (double)r * ROW_H);
	if (!rc)
		rc = swatches(b, x0, h->cats, h->colors, h->ncats);
	return rc ? rc : core_buf_puts(b, "</svg>\n");
}

/* ------------------------------------------------------------- boxes */

double rpt__quantile(const double *v, size_t n, double q)
{
	double pos, frac;
	size_t lo;

	if (!n)
		return NAN;
	q = q < 0 ? 0 : q > 1 ? 1 : q;
	pos = q * (double)(n - 1);
	lo = (size_t)floor(pos);
	frac = pos - (double)lo;
	return lo + 1 < n ? v[lo] + (v[lo + 1] - v[lo]) * frac : v[lo];
}

void rpt__box_of(const double *v, size_t n, rpt_box *box)
{
	box->n = n;
	box->min = n ? v[0] : NAN;
	box->max = n ? v[n - 1] : NAN;
	box->q1 = rpt__quantile(v, n, 0.25);
	box->med = rpt__quantile(v, n, 0.5);
	box->q3 = rpt__quantile(v, n, 0.75);
	box->p95 = rpt__quantile(v, n, 0.95);
}

typedef struct logx {
	double lo, hi;   /* log10 of the axis ends */
	double x0, x1;   /* pixels */
} logx;

static double lx(const logx *a, double s)
{
	double l = log10(s > MIN_S ? s : MIN_S);

	return a->x0 + (l - a->lo) / (a->hi - a->lo) * (a->x1 - a->x0);
}

static int box_row(core_buf *b, const logx *a, const rpt_box *x, double y)
{
	double mid = y + ROW_H / 2.0;
	char p50[32], p95[32], mx[32];
	int rc = row_label(b, a->x0 - 8, mid + 4, x->label);

	rpt__dur(p50, sizeof(p50), x->med);
	rpt__dur(p95, sizeof(p95), x->p95);
	rpt__dur(mx, sizeof(mx), x->max);
	if (!rc)
		rc = core_buf_printf(b, "<g class=\"box\"><title>n=%zu, median %s, p95 %s, max %s</title>"
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>"
			"<line class=\"med\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			"<line class=\"p95\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>"
			"<text class=\"lg\" x=\"%.1f\" y=\"%.1f\">p50 %s \xc2\xb7 p95 %s</text>",
			x->n, p50, p95, mx,
			lx(a, x->min), mid, lx(a, x->max), mid,
			lx(a, x->q1), y + 6, fmax(lx(a, x->q3) - lx(a, x->q1), 1.0), ROW_H - 12,
			lx(a, x->med), y + 4, lx(a, x->med), y + ROW_H - 4,
			lx(a, x->p95), y + 8, lx(a, x->p95), y + ROW_H - 8,
			a->x1 + 10, mid + 4, p50, p95);
	return rc;
}

int rpt__boxes(core_buf *b, const char *title, const rpt_box *boxes, size_t n,
	       int width, const char *why)
{
	double w = width > 0 ? width : W_DEFAULT, lo = INFINITY, hi = 0, hgt, y;
	const char **labels = calloc(n + 1, sizeof(*labels));
	size_t shown = 0;
	logx a;
	char lab[32];
	int rc = 0;

	if (!labels)
		return CORE_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!boxes[i].n)
			continue;
		labels[shown++] = boxes[i].label;
		lo = fmin(lo, fmax(boxes[i].min, MIN_S));
		hi = fmax(hi, fmax(boxes[i].max, MIN_S));
	}
	if (!shown) {
		free(labels);
		return nodata(b, why);
	}
	a.lo = floor(log10(lo));
	a.hi = ceil(log10(hi));
	if (a.hi <= a.lo)
		a.hi = a.lo + 1;
	a.x0 = label_width(labels, shown);
	a.x1 = w - 230;
	free(labels);
	hgt = 12 + (double)shown * ROW_H + AXIS_H;
	rc = rpt__svg_open(b, w, hgt, title);
	for (double d = a.lo; d <= a.hi && !rc; d++) {
		double x = lx(&a, pow(10, d));

		rpt__dur(lab, sizeof(lab), pow(10, d));
		rc = core_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"8\" x2=\"%.1f\" y2=\"%.1f\"/>"
				     "<text class=\"xl\" x=\"%.1f\" y=\"%.1f\">%s</text>",
				     x, x, hgt - AXIS_H, x, hgt - AXIS_H + 16, lab);
	}
	y = 12;
	for (size_t i = 0; i < n && !rc; i++) {
		if (!boxes[i].n)
			continue;
		rc = box_row(b, &a, &boxes[i], y);
		y += ROW_H;
	}
	return rc ? rc : core_buf_puts(b, "</svg>\n");
}

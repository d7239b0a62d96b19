/*
 * svg.c — the x/y chart of the report (report_internal.h): a left and an
 * optional right axis from zero to a "nice" top, the x axis over the
 * series' range, lines, steps and stacked bars, labelled vertical marks,
 * a legend. Values are never negative on our charts (counts, rates,
 * concurrency), so the y axes start at 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define W_DEFAULT 880
#define H_DEFAULT 240
#define M_LEFT 60
#define M_RIGHT_Y2 60
#define M_RIGHT 20
#define M_TOP 30
#define M_BOTTOM 34
#define MAX_TICKS 24
#define CHAR_W 6.6 /* an average character of the 12 px labels */

size_t rpt__ticks(double lo, double hi, int want, double *ticks, size_t max,
		  double *step)
{
	double raw, mag, s, first;
	size_t n = 0;

	if (!isfinite(lo) || !isfinite(hi) || want < 1 || !max)
		return 0;
	if (hi <= lo)
		hi = lo + 1;
	raw = (hi - lo) / want;
	mag = pow(10, floor(log10(raw)));
	s = raw / mag <= 1 ? mag : raw / mag <= 2 ? 2 * mag : raw / mag <= 5 ? 5 * mag : 10 * mag;
	first = floor(lo / s) * s;
	for (double t = first; n < max; t = first + (double)n * s) {
		ticks[n++] = fabs(t) < s * 1e-9 ? 0 : t;
		if (t >= hi - s * 1e-9)
			break;
	}
	if (step)
		*step = s;
	return n;
}

const char *rpt__palette(size_t i)
{
	static const char *const p[] = { "#2f6fde", "#e0801b", "#2a9d54", "#c23b3b",
		"#7b4fc9", "#8c6d3f", "#d64f9a", "#5f7687", "#b5a21a", "#1ea5b8" };

	return p[i % (sizeof(p) / sizeof(p[0]))];
}

const char *rpt__color(const char *name)
{
	static const struct {
		const char *name, *color;
	} named[] = {
		{ "ok", "#2a9d54" }, { "COMPLETED", "#2a9d54" },
		{ "capacity", "#e0801b" }, { "ROUTED", "#2f6fde" },
		{ "server", "#c23b3b" }, { "FAILED", "#c23b3b" },
		{ "network", "#7b4fc9" }, { "QUARANTINED", "#b5a21a" },
		{ "timeout", "#8c6d3f" }, { "DIVERTED", "#d64f9a" },
		{ "malformed", "#d64f9a" }, { "FORKED", "#5f7687" },
		{ "client", "#b5a21a" }, { "EXPANDED", "#1ea5b8" },
		{ "gave_up", "#6b1d1d" }, { "COALESCED", "#7b4fc9" },
		{ "replayed", "#1ea5b8" }, { "CONSUMED_IN_BATCH", "#8c6d3f" },
	};

	for (size_t i = 0; name && i < sizeof(named) / sizeof(named[0]); i++)
		if (!strcmp(named[i].name, name))
			return named[i].color;
	return "#888888";
}

/* ----------------------------------------------------------------- frame */

/* The chart's scales: data to pixels. */
typedef struct frame {
	double w, h, left, right, top, bottom; /* the plot area's edges */
	double x0, x1;                         /* x range */
	double ytop[2];                        /* each axis' top */
	double yt[2][MAX_TICKS];
	size_t nyt[2];
	double xt[MAX_TICKS];
	size_t nxt;
	bool has_right;
} frame;

static double px(const frame *f, double x)
{
	return f->left + (x - f->x0) / (f->x1 - f->x0) * (f->right - f->left);
}

static double py(const frame *f, int axis, double y)
{
	return f->bottom - y / f->ytop[axis] * (f->bottom - f->top);
}

static bool finite_point(const rpt_series *s, size_t i)
{
	return isfinite(s->x[i]) && isfinite(s->y[i]);
}

/* The largest value each axis must show: lines' points, bars' stacks. */
static void y_extent(const rpt_chart *c, double top[2])
{
	size_t maxn = 0;

	top[0] = top[1] = 0;
	for (size_t k = 0; k < c->nseries; k++) {
		const rpt_series *s = &c->series[k];

		if (s->kind == RPT_BARS) {
			maxn = s->n > maxn ? s->n : maxn;
			continue;
		}
		for (size_t i = 0; i < s->n; i++)
			if (finite_point(s, i) && s->y[i] > top[s->right])
				top[s->right] = s->y[i];
	}
	for (size_t i = 0; i < maxn; i++) {
		double stack[2] = { 0, 0 };

		for (size_t k = 0; k < c->nseries; k++) {
			const rpt_series *s = &c->series[k];

			if (s->kind == RPT_BARS && i < s->n && finite_point(s, i) && s->y[i] > 0)
				stack[s->right] += s->y[i];
		}
		for (int a = 0; a < 2; a++)
			if (stack[a] > top[a])
				top[a] = stack[a];
	}
}

/* Whether any series has a point to draw; the x range. */
static bool x_extent(const rpt_chart *c, double *x0, double *x1)
{
	bool any = false;
	double bw = c->bar_width > 0 ? c->bar_width : 1;

	*x0 = INFINITY;
	*x1 = -INFINITY;
	for (size_t k = 0; k < c->nseries; k++) {
		const rpt_series *s = &c->series[k];

		for (size_t i = 0; i < s->n; i++) {
			double end;

			if (!finite_point(s, i))
				continue;
			end = s->kind == RPT_BARS ? s->x[i] + bw : s->x[i];
			*x0 = s->x[i] < *x0 ? s->x[i] : *x0;
			*x1 = end > *x1 ? end : *x1;
			any = true;
		}
	}
	return any;
}

static void frame_init(frame *f, const rpt_chart *c)
{
	double top[2], step;

	f->w = c->width > 0 ? c->width : W_DEFAULT;
	f->h = c->height > 0 ? c->height : H_DEFAULT;
	f->has_right = false;
	for (size_t k = 0; k < c->nseries; k++)
		f->has_right |= c->series[k].right;
	f->left = M_LEFT;
	f->right = f->w - (f->has_right ? M_RIGHT_Y2 : M_RIGHT);
	f->top = M_TOP;
	f->bottom = f->h - M_BOTTOM;
	x_extent(c, &f->x0, &f->x1);
	if (f->x1 <= f->x0)
		f->x1 = f->x0 + 1;
	f->nxt = rpt__ticks(f->x0, f->x1, 8, f->xt, MAX_TICKS, &step);
	y_extent(c, top);
	for (int a = 0; a < 2; a++) {
		f->nyt[a] = rpt__ticks(0, top[a] > 0 ? top[a] : 1, 4, f->yt[a], MAX_TICKS, &step);
		f->ytop[a] = f->nyt[a] ? f->yt[a][f->nyt[a] - 1] : 1;
		if (f->ytop[a] <= 0)
			f->ytop[a] = 1;
	}
}

static void x_label(char *buf, size_t cap, double v, rpt_xfmt fmt)
{
	if (fmt == RPT_X_SECONDS && v != 0)
		rpt__dur(buf, cap, v);
	else
		rpt__num(buf, cap, v);
}

static int axes(core_buf *b, const frame *f, const rpt_chart *c)
{
	char lab[48];
	int rc = 0;

	/* horizontal grid and the y labels */
	for (size_t i = 0; i < f->nyt[0] && !rc; i++) {
		double y = py(f, 0, f->yt[0][i]);

		rpt__num(lab, sizeof(lab), f->yt[0][i]);
		rc = core_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				     "<text class=\"yl\" x=\"%.1f\" y=\"%.1f\">%s</text>",
				     f->left, y, f->right, y, f->left - 6, y + 4, lab);
	}
	for (size_t i = 0; f->has_right && i < f->nyt[1] && !rc; i++) {
		rpt__num(lab, sizeof(lab), f->yt[1][i]);
		rc = core_buf_printf(b, "<text class=\"yr\" x=\"%.1f\" y=\"%.1f\">%s</text>",
				     f->right + 6, py(f, 1, f->yt[1][i]) + 4, lab);
	}
	for (size_t i = 0; i < f->nxt && !rc; i++) {
		double x = px(f, f->xt[i]);

		if (x < f->left - 0.5 || x > f->right + 0.5)
			continue;
		x_label(lab, sizeof(lab), f->xt[i], c->xfmt);
		rc = core_buf_printf(b, "<line class=\"tick\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				     "<text class=\"xl\" x=\"%.1f\" y=\"%.1f\">%s</text>",
				     x, f->bottom, x, f->bottom + 4, x, f->bottom + 17, lab);
	}
	if (!rc)
		rc = core_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>",
				     f->left, f->bottom, f->right, f->bottom);
	if (!rc && c->ylabel) {
		rc = core_buf_printf(b, "<text class=\"al\" transform=\"translate(14 %.1f) rotate(-90)\">",
				     (f->top + f->bottom) / 2);
		if (!rc && !(rc = rpt__esc(b, c->ylabel)))
			rc = core_buf_puts(b, "</text>");
	}
	if (!rc && f->has_right && c->y2label) {
		rc = core_buf_printf(b, "<text class=\"al\" transform=\"translate(%.1f %.1f) rotate(90)\">",
				     f->w - 12, (f->top + f->bottom) / 2);
		if (!rc && !(rc = rpt__esc(b, c->y2label)))
			rc = core_buf_puts(b, "</text>");
	}
	return rc;
}

/* --------------------------------------------------------------- series */

/* A path point, "M" starting a piece; step: hold the last y first. */
static int point(core_buf *b, bool *open, double x, double y, bool step,
		 double *last_y)
{
	int rc;

	if (!*open) { /* "l0 0": a piece of one point shows as a dot */
		*open = true;
		*last_y = y;
		return core_buf_printf(b, "M%.1f %.1fl0 0", x, y);
	}
	if (step && y != *last_y)
		rc = core_buf_printf(b, "H%.1fV%.1f", x, y);
	else
		rc = core_buf_printf(b, "L%.1f %.1f", x, y);
	*last_y = y;
	return rc;
}

/* The points of one pixel column [from, to): its first, lowest,
 * highest and last, in their order. */
static int column(core_buf *b, const frame *f, const rpt_series *s, size_t from,
		  size_t to, bool *open, double *last_y)
{
	size_t keep[4] = { from, from, from, to - 1 }, n = 0, prev = (size_t)-1;
	int rc = 0;

	for (size_t i = from; i < to; i++) {
		if (s->y[i] < s->y[keep[1]])
			keep[1] = i;
		if (s->y[i] > s->y[keep[2]])
			keep[2] = i;
	}
	if (keep[1] > keep[2]) {
		size_t t = keep[1];

		keep[1] = keep[2];
		keep[2] = t;
	}
	for (n = 0; n < 4 && !rc; n++) {
		if (keep[n] == prev)
			continue;
		prev = keep[n];
		rc = point(b, open, px(f, s->x[prev]), py(f, s->right, s->y[prev]),
			   s->kind == RPT_STEP, last_y);
	}
	return rc;
}

static int line(core_buf *b, const frame *f, const rpt_series *s)
{
	bool open = false;
	double last_y = 0;
	size_t i = 0;
	int rc;

	rc = core_buf_printf(b, "<path class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
			     "stroke-linecap=\"round\" stroke-linejoin=\"round\"%s d=\"",
			     s->color, s->dashed ? " stroke-dasharray=\"5 3\"" : "");
	while (i < s->n && !rc) {
		size_t j = i + 1;
		double col;

		if (!finite_point(s, i)) {
			open = false; /* a gap */
			i++;
			continue;
		}
		col = floor(px(f, s->x[i]));
		while (j < s->n && finite_point(s, j) && floor(px(f, s->x[j])) == col)
			j++;
		rc = column(b, f, s, i, j, &open, &last_y);
		i = j;
	}
	if (!rc)
		rc = core_buf_puts(b, "\"/>");
	return rc;
}

static int bars(core_buf *b, const frame *f, const rpt_chart *c, const rpt_series *s,
		double *base)
{
	double bw = c->bar_width > 0 ? c->bar_width : 1;
	char val[32];
	int rc = 0;

	for (size_t i = 0; i < s->n && !rc; i++) {
		double x0, x1, y0, y1;

		if (!finite_point(s, i) || s->y[i] <= 0)
			continue;
		x0 = px(f, s->x[i]);
		x1 = px(f, s->x[i] + bw);
		y0 = py(f, s->right, base[i]);
		y1 = py(f, s->right, base[i] + s->y[i]);
		base[i] += s->y[i];
		rpt__num(val, sizeof(val), s->y[i]);
		rc = core_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>",
				     x0, y1, x1 - x0 > 0.6 ? x1 - x0 - 0.3 : 0.3, y0 - y1, s->color);
		if (!rc && s->name)
			rc = rpt__esc(b, s->name);
		if (!rc)
			rc = core_buf_printf(b, ": %s</title></rect>", val);
	}
	return rc;
}

static int series_all(core_buf *b, const frame *f, const rpt_chart *c)
{
	size_t maxn = 0;
	double *base[2];
	int rc = 0;

	for (size_t k = 0; k < c->nseries; k++)
		if (c->series[k].kind == RPT_BARS && c->series[k].n > maxn)
			maxn = c->series[k].n;
	base[0] = calloc(maxn + 1, sizeof(double));
	base[1] = calloc(maxn + 1, sizeof(double));
	if (!base[0] || !base[1])
		rc = CORE_ENOMEM;
	/* bars first, lines over them */
	for (size_t k = 0; k < c->nseries && !rc; k++)
		if (c->series[k].kind == RPT_BARS)
			rc = bars(b, f, c, &c->series[k], base[c->series[k].right]);
	for (size_t k = 0; k < c->nseries && !rc; k++)
		if (c->series[k].kind != RPT_BARS && c->series[k].n)
			rc = line(b, f, &c->series[k]);
	free(base[0]);
	free(base[1]);
	return rc;
}

static int marks(core_buf *b, const frame *f, const rpt_chart *c)
{
	int rc = 0;

	for (size_t i = 0; i < c->nmarks && !rc; i++) {
		double x = px(f, c->marks[i].x);

		if (x < f->left - 0.5 || x > f->right + 0.5)
			continue;
		rc = core_buf_printf(b, "<line class=\"mark\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
				     "<text class=\"ml\" x=\"%.1f\" y=\"%.1f\">",
				     x, f->top, x, f->bottom, x + 3, f->top + 11);
		if (!rc && !(rc = rpt__esc(b, c->marks[i].label)))
			rc = core_buf_puts(b, "</text>");
	}
	return rc;
}

static int legend(core_buf *b, const frame *f, const rpt_chart *c)
{
	double x = f->left;
	int rc = 0;

	for (size_t k = 0; k < c->nseries && !rc; k++) {
		const rpt_series *s = &c->series[k];
		const char *side = f->has_right ? (s->right ? " (right)" : " (left)") : "";

		if (!s->name)
			continue;
		if (s->kind == RPT_BARS)
			rc = core_buf_printf(b, "<rect x=\"%.1f\" y=\"9\" width=\"12\" height=\"10\" fill=\"%s\"/>",
					     x, s->color);
		else
			rc = core_buf_printf(b, "<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"14\" stroke=\"%s\" stroke-width=\"2.5\"%s/>",
					     x, x + 14, s->color, s->dashed ? " stroke-dasharray=\"4 2\"" : "");
		if (!rc)
			rc = core_buf_printf(b, "<text class=\"lg\" x=\"%.1f\" y=\"18\">", x + 18);
		if (!rc && !(rc = rpt__esc(b, s->name)) && !(rc = rpt__esc(b, side)))
			rc = core_buf_puts(b, "</text>");
		x += 18 + CHAR_W * (double)(core_utf8_count(s->name, strlen(s->name)) +
					    strlen(side)) + 16;
	}
	return rc;
}

static int nodata(core_buf *b, const char *why)
{
	int rc = core_buf_puts(b, "<p class=\"nodata\">No data");

	if (!rc && why && !(rc = core_buf_puts(b, ": ")))
		rc = rpt__esc(b, why);
	return rc ? rc : core_buf_puts(b, "</p>\n");
}

int rpt__svg_open(core_buf *b, double w, double h, const char *title)
{
	int rc = core_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" "
				 "viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" role=\"img\" aria-label=\"",
				 w, h, w, h);

	if (!rc && !(rc = rpt__esc(b, title ? title : "chart")) &&
	    !(rc = core_buf_puts(b, "\"><title>")) && !(rc = rpt__esc(b, title ? title : "chart")))
		rc = core_buf_puts(b, "</title>");
	return rc;
}

int rpt__chart(core_buf *b, const rpt_chart *c)
{
	frame f;
	double x0, x1;
	int rc;

	if (!x_extent(c, &x0, &x1))
		return nodata(b, c->nodata);
	frame_init(&f, c);
	rc = rpt__svg_open(b, f.w, f.h, c->title);
	if (!rc)
		rc = axes(b, &f, c);
	if (!rc)
		rc = series_all(b, &f, c);
	if (!rc)
		rc = marks(b, &f, c);
	if (!rc)
		rc = legend(b, &f, c);
	return rc ? rc : core_buf_puts(b, "</svg>\n");
}

/*
 * report_internal.h — what the files of report/ share. Not a published
 * API (the unit tests include it).
 *
 *   html.c   escaping text for HTML, formatting numbers, durations, times
 *   svg.c    the x/y chart: axes and ticks, lines, steps, stacked bars,
 *            markers, legend, "no data"
 *   cats.c   charts over categories: stacked horizontal bars, box plots
 *   dag.c    the graph laid out left to right by depth
 *   load.c   one run read from the Landscape (rpt_data)
 *   story.c  a row's story (rec_explain's document) as HTML
 *   page.c   the sections of the page
 *   report.c rpt_write: the page around them
 *
 * Everything appends to a core_buf and returns 0 or CORE_ENOMEM; nothing
 * here keeps state between calls or takes a lock. Text from the trail
 * (names, labels, errors, data) reaches the page only through rpt__esc.
 * Coordinates are SVG user units (pixels at 100 %).
 */
#ifndef ELSPETH_REPORT_INTERNAL_H
#define ELSPETH_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "recorder/recorder.h"
#include "report/report.h"

/* ---------------------------------------------------------------- html.c */

/* Appends s (n bytes; rpt__esc: up to its NUL) escaped for HTML text and
 * attribute values: & < > " ' as entities, bytes that are not UTF-8 and
 * control characters other than tab and newline as U+FFFD. */
int rpt__escn(core_buf *b, const char *s, size_t n);
int rpt__esc(core_buf *b, const char *s);
/* A number for a label, at most ~4 significant digits: "0", "12", "1.5",
 * "0.25", "0.003", "1.2k", "3.4M", "1.2G", "-7"; NaN and infinities "–". */
void rpt__num(char *buf, size_t cap, double v);
/* A duration: "0 ms", "0.25 ms", "120 ms", "3.4 s", "2 min 5 s",
 * "1 h 2 min". */
void rpt__dur(char *buf, size_t cap, double seconds);
/* A wall-clock time (Unix ns): "2025-05-01 12:00:03 UTC"; 0: "–". */
void rpt__time(char *buf, size_t cap, uint64_t wall_ns);
/* A count with thousands separators: "3,000". */
void rpt__count(char *buf, size_t cap, uint64_t v);

/* ----------------------------------------------------------------- svg.c */

/* "Nice" tick positions covering [lo, hi]: about `want` steps of 1, 2 or
 * 5 times a power of ten, from a multiple of the step at or below lo to
 * one at or above hi. Returns the count (at most max), 0 when nothing
 * fits or lo/hi are not finite; *step receives the step. hi <= lo is
 * widened to [lo, lo + 1]. */
size_t rpt__ticks(double lo, double hi, int want, double *ticks, size_t max,
		  double *step);

typedef enum rpt_kind {
	RPT_LINE,   /* a polyline through the points; a NaN y breaks it */
	RPT_STEP,   /* a value held until the next point */
	RPT_BARS    /* a bar per point, bar_width wide from x; BARS series
		     * on one axis stack, point i on point i */
} rpt_kind;

typedef struct rpt_series {
	const char *name;        /* legend; NULL: none */
	const double *x, *y;     /* n points, x ascending */
	size_t n;
	rpt_kind kind;
	bool right;              /* on the right-hand axis */
	bool dashed;
	const char *color;       /* a CSS colour literal (static) */
} rpt_series;

/* A labelled vertical line (a resume). */
typedef struct rpt_mark {
	double x;
	const char *label;
} rpt_mark;

typedef enum rpt_xfmt {
	RPT_X_NUMBER,
	RPT_X_SECONDS        /* ticks read as durations: "30 s", "2 min" */
} rpt_xfmt;

typedef struct rpt_chart {
	const char *title;       /* the svg's <title> and aria-label */
	const char *ylabel, *y2label; /* left, right axis (y2: when used) */
	rpt_xfmt xfmt;
	int width, height;       /* 0: 880 x 240 */
	const rpt_series *series;
	size_t nseries;
	const rpt_mark *marks;
	size_t nmarks;
	double bar_width;        /* x units of a bar; 0: 1 */
	const char *nodata;      /* why there is nothing to draw (shown
				  * instead of the chart); NULL: generic */
} rpt_chart;

/* Appends the chart as an inline <svg>, or, when no series has a finite
 * point, a <p class="nodata"> saying "no data" and why. Lines with more
 * points than pixels keep each pixel column's first, lowest, highest
 * and last point. */
int rpt__chart(core_buf *b, const rpt_chart *c);

/* Opens an <svg> of w x h with its title (the caller closes it). */
int rpt__svg_open(core_buf *b, double w, double h, const char *title);

/* The palette: outcome and call classes by name, series by index. Never
 * NULL. */
const char *rpt__color(const char *name);
const char *rpt__palette(size_t i);

/* ---------------------------------------------------------------- cats.c */

/* Stacked horizontal bars: one per row, one segment per category. */
typedef struct rpt_hbars {
	const char *title;
	const char *const *cats;   /* ncats segment names (legend) */
	const char *const *colors; /* ncats colours */
	size_t ncats;
	const char *const *labels; /* nrows row labels */
	const double *v;           /* nrows x ncats values, row-major */
	size_t nrows;
	int width;                 /* 0: 880 */
	const char *nodata;
} rpt_hbars;

int rpt__hbars(core_buf *b, const rpt_hbars *h);

/* One distribution, for a box plot. */
typedef struct rpt_box {
	const char *label;
	size_t n;
	double min, q1, med, q3, p95, max;
} rpt_box;

/* The q-quantile (0..1) of sorted[0..n), interpolating linearly between
 * the two nearest ranks; NaN when n is 0. */
double rpt__quantile(const double *sorted, size_t n, double q);
/* The box of sorted[0..n) (label not set). */
void rpt__box_of(const double *sorted, size_t n, rpt_box *box);
/* Box plots on a logarithmic axis of seconds (values below 1 µs are
 * drawn at 1 µs): whiskers min to max, box q1 to q3, the median, a tick
 * at p95. Boxes with n 0 are left out; none left: "no data". */
int rpt__boxes(core_buf *b, const char *title, const rpt_box *boxes, size_t n,
	       int width, const char *nodata);

/* ----------------------------------------------------------------- dag.c */

typedef struct rpt_dnode {
	const char *name, *kind, *plugin; /* kind: source, transform, gate ... */
	const char *note;                 /* a second line, or NULL */
} rpt_dnode;

typedef struct rpt_dedge {
	int from, to;                     /* node indexes */
	const char *label;
} rpt_dedge;

/* Each node's column: the longest path to it from a node nothing enters
 * (0 for those), edges that would close a cycle ignored; an edge naming
 * no node is ignored. */
void rpt__dag_depths(size_t nn, const rpt_dedge *e, size_t ne, int *depth);
/* The graph left to right by depth, edges as labelled curves with
 * arrows. No nodes: "no data". */
int rpt__dag(core_buf *b, const rpt_dnode *n, size_t nn, const rpt_dedge *e,
	     size_t ne);

/* ---------------------------------------------------------------- load.c */

/* Outcome names in the order the report shows them. */
#define RPT_OUTCOMES 10 /* the nine of docs/audit.md, then "other" */
extern const char *const rpt__outcomes[RPT_OUTCOMES];
/* Call classes: "ok", the error classes of plugins.h, "replayed", "other". */
#define RPT_CLASSES 10
extern const char *const rpt__classes[RPT_CLASSES];

/* A growing array of doubles. */
typedef struct rpt_vec {
	double *v;
	size_t n, cap;
} rpt_vec;

int rpt__vec_push(rpt_vec *a, double x);
void rpt__vec_release(rpt_vec *a);

typedef struct rpt_node {
	char *name, *kind, *plugin;
	rpt_vec lat;        /* node-state durations, seconds */
	rpt_vec call_lat;   /* latencies of its calls (not replayed), seconds */
	uint64_t failed;    /* node states failed */
} rpt_node;

typedef struct rpt_edge {
	uint32_t from, to;
	char *label;
} rpt_edge;

typedef struct rpt_call {
	uint64_t at_ns;     /* completed (wall) */
	uint32_t node;
	uint8_t cls;        /* index in rpt__classes */
} rpt_call;

/* A row worth a look: one of the slowest, or one with an error. */
typedef struct rpt_row {
	uint64_t seq;
	double span_s;      /* first node state started -> last completed */
	uint32_t slow_node; /* its longest node state's node */
	double slow_s;
	char *outcome;      /* bad rows: the outcome, sink, error (owned) */
	char *sink;
	char *error;
} rpt_row;

/* An attempt of the run (0, then each resume) on the report's time axis:
 * wall times [start, end] map to seconds [offset, offset + end - start],
 * so the hours between a crash and its resume take no room. */
typedef struct rpt_attempt {
	uint64_t start_ns, end_ns;
	double offset_s;
} rpt_attempt;

typedef struct rpt_sink {
	char *name;                    /* "" for tokens that reached none */
	uint64_t n[RPT_OUTCOMES];
} rpt_sink;

typedef struct rpt_data {
	uint64_t run;
	Elspeth__RunRecord *rec;
	Elspeth__ResumeRecord **resumes;
	size_t nresumes;
	rpt_node *nodes;
	size_t nnodes;
	rpt_edge *edges;
	size_t nedges;
	Elspeth__SampleRecord **samples;  /* in key order */
	size_t nsamples;
	rpt_call *calls;                  /* in key order (by state) */
	size_t ncalls;
	uint64_t outcomes[RPT_OUTCOMES];  /* tokens, superseded ones left out */
	rpt_sink *sinks;
	size_t nsinks;
	rpt_row *slow;                    /* slowest first, at most max_rows */
	size_t nslow;
	rpt_row *bad;                     /* by token, at most max_rows */
	size_t nbad;
	uint64_t bad_total;               /* tokens with an error, all */
	uint64_t rows_timed;              /* rows with a node state */
	rpt_attempt *attempts;            /* 1 + nresumes */
	size_t nattempts;
	double active_s;                  /* the time axis' length */
} rpt_data;

/* Reads run `run` of env: records, samples, calls, node states, outcomes
 * (one read transaction). The rows listed are capped at max_rows each.
 * CORE_EDATA when the run is not in the trail. */
int rpt__load(rec_env *env, uint64_t run, size_t max_rows, rpt_data *d,
	      core_err *err);
void rpt__data_release(rpt_data *d);
/* Seconds on the time axis for a wall time (clamped into the attempt
 * it falls in). */
double rpt__at(const rpt_data *d, uint64_t wall_ns);

/* --------------------------------------------------------------- story.c */

/* A row's story: the document of rec_explain (schema elspeth-explain-1),
 * in a <section id="row-SEQ">. */
int rpt__story(core_buf *b, const json_t *doc);

/* ---------------------------------------------------------------- page.c */

int rpt__page_header(core_buf *b, const rpt_data *d);
int rpt__page_dag(core_buf *b, const rpt_data *d);
int rpt__page_rows_over_time(core_buf *b, const rpt_data *d);
int rpt__page_llm(core_buf *b, const rpt_data *d);
int rpt__page_latency(core_buf *b, const rpt_data *d);
int rpt__page_sinks(core_buf *b, const rpt_data *d);
int rpt__page_rows(core_buf *b, const rpt_data *d);

#endif /* ELSPETH_REPORT_INTERNAL_H */

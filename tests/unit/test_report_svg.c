/* test_report_svg.c — the report's drawing primitives (report/html.c,
 * svg.c, cats.c, dag.c): escaping and number formats, nice ticks, the
 * x/y chart (lines, gaps, steps, stacked bars, marks, legend, the right
 * axis, "no data", many points kept within the pixels), stacked bars
 * and box plots over categories, and the graph's depths and drawing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "report/report_internal.h"

#define TIMEOUT 30

TestSuite(report_html, .timeout = TIMEOUT);
TestSuite(report_chart, .timeout = TIMEOUT);
TestSuite(report_cats, .timeout = TIMEOUT);
TestSuite(report_dag, .timeout = TIMEOUT);

/* How often needle occurs in hay. */
static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	for (const char *p = hay; p && (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

/* The value of the first attribute `name="..."` after `from`, as text. */
static char *attr(const char *from, const char *name, char *out, size_t cap)
{
	char key[32];
	const char *p, *q;

	snprintf(key, sizeof(key), " %s=\"", name);
	p = strstr(from, key);
	cr_assert_not_null(p, "no %s in %.80s", name, from);
	p += strlen(key);
	q = strchr(p, '"');
	snprintf(out, cap, "%.*s", (int)(q - p), p);
	return out;
}

/* --------------------------------------------------------------- html */

static char *esc(const char *s, size_t n)
{
	core_buf b = { 0 };

	cr_assert_eq(rpt__escn(&b, s, n), 0);
	return b.data ? b.data : strdup("");
}

Test(report_html, escapes_markup_and_quotes)
{
	const char *s = "<script>alert('x')</script> & \"q\"";
	char *e = esc(s, strlen(s));

	cr_assert_str_eq(e, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
	free(e);
}

Test(report_html, keeps_utf8_and_replaces_what_is_not_text)
{
	/* é (2 bytes), a lone continuation byte, a NUL, a bell, a newline */
	char *e = esc("caf\xc3\xa9 \x80 x\0y\a\n", 13);

	cr_assert_str_eq(e, "caf\xc3\xa9 \xef\xbf\xbd x\xef\xbf\xbdy\xef\xbf\xbd\n");
	free(e);
	e = esc("\xe2\x82", 2); /* a sequence cut short: one U+FFFD a byte */
	cr_assert_str_eq(e, "\xef\xbf\xbd\xef\xbf\xbd");
	free(e);
}

Test(report_html, numbers_are_short)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0, "0" }, { 12, "12" }, { 1.5, "1.5" }, { 0.25, "0.25" },
		{ 1500, "1.5k" }, { 3400000, "3.4M" }, { 2e9, "2G" }, { -7, "-7" },
		{ 999.96, "1k" }, { 123.4, "123" }, { 0.0004, "4.0e-04" },
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rpt__num(buf, sizeof(buf), cases[i].v);
		cr_assert_str_eq(buf, cases[i].want, "%g", cases[i].v);
	}
	rpt__num(buf, sizeof(buf), NAN);
	cr_assert_str_eq(buf, "\xe2\x80\x93");
}

Test(report_html, durations_and_counts)
{
	char buf[32];

	rpt__dur(buf, sizeof(buf), 0.12);
	cr_assert_str_eq(buf, "120 ms");
	rpt__dur(buf, sizeof(buf), 3.4);
	cr_assert_str_eq(buf, "3.4 s");
	rpt__dur(buf, sizeof(buf), 125);
	cr_assert_str_eq(buf, "2 min 5 s");
	rpt__dur(buf, sizeof(buf), 3720);
	cr_assert_str_eq(buf, "1 h 2 min");
	rpt__dur(buf, sizeof(buf), -1);
	cr_assert_str_eq(buf, "\xe2\x80\x93");
	rpt__count(buf, sizeof(buf), 1234567);
	cr_assert_str_eq(buf, "1,234,567");
	rpt__count(buf, sizeof(buf), 999);
	cr_assert_str_eq(buf, "999");
	rpt__time(buf, sizeof(buf), 1700000000ull * 1000000000ull);
	cr_assert_str_eq(buf, "2023-11-14 22:13:20 UTC");
}

/* -------------------------------------------------------------- ticks */

Test(report_chart, ticks_are_nice_and_cover_the_range)
{
	double t[24], step;
	size_t n = rpt__ticks(0, 7.3, 4, t, 24, &step);

	cr_assert_float_eq(step, 2, 1e-12);
	cr_assert_eq(n, 5);
	cr_assert_float_eq(t[0], 0, 1e-12);
	cr_assert_float_eq(t[4], 8, 1e-12, "the last tick covers 7.3");
	n = rpt__ticks(13, 1187, 5, t, 24, &step);
	cr_assert_float_eq(step, 500, 1e-9);
	cr_assert_float_eq(t[0], 0, 1e-9);
	cr_assert_geq(t[n - 1], 1187);
	n = rpt__ticks(0.001, 0.0042, 4, t, 24, &step);
	cr_assert_float_eq(step, 0.001, 1e-15);
	cr_assert_geq(t[n - 1], 0.0042 - 1e-15);
	/* an empty range widens; nothing finite, nothing */
	n = rpt__ticks(5, 5, 4, t, 24, &step);
	cr_assert_geq(n, 2);
	cr_assert_eq(rpt__ticks(0, INFINITY, 4, t, 24, &step), 0);
	cr_assert_eq(rpt__ticks(NAN, 1, 4, t, 24, &step), 0);
}

/* -------------------------------------------------------------- chart */

static char *chart(const rpt_chart *c)
{
	core_buf b = { 0 };

	cr_assert_eq(rpt__chart(&b, c), 0);
	return b.data;
}

Test(report_chart, a_line_is_one_path_through_its_points)
{
	double x[] = { 0, 1, 2, 3 }, y[] = { 1, 3, 2, 4 };
	rpt_series s = { "rows / s", x, y, 4, RPT_LINE, false, false, "#123456" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1 };
	char *svg = chart(&c), d[512];

	cr_assert(!strncmp(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"", 39), "%s", svg);
	cr_assert_eq(count(svg, "<path class=\"series\""), 1);
	attr(strstr(svg, "<path class=\"series\""), "d", d, sizeof(d));
	cr_assert_eq(count(d, "M"), 1, "one piece: %s", d);
	cr_assert_eq(count(d, "L"), 3, "then 3 segments: %s", d);
	cr_assert_eq(count(svg, "stroke=\"#123456\""), 2, "the path and its legend line");
	cr_assert_eq(count(svg, ">rows / s<"), 1, "the legend names it");
	cr_assert(strstr(svg, "</svg>"));
	free(svg);
}

Test(report_chart, y_axis_starts_at_zero_and_tops_the_largest_value)
{
	double x[] = { 0, 1 }, y[] = { 30, 47 };
	rpt_series s = { "s", x, y, 2, RPT_LINE, false, false, "#000" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1, .width = 500, .height = 200 };
	char *svg = chart(&c);

	cr_assert(strstr(svg, ">0</text>"), "%s", svg);
	cr_assert(strstr(svg, ">60</text>"), "a nice top above 47 (steps of 20): %s", svg);
	cr_assert(strstr(svg, ">40</text>"));
	cr_assert_null(strstr(svg, ">80</text>"), "no tick beyond the top");
	cr_assert(strstr(svg, "viewBox=\"0 0 500 200\""));
	free(svg);
}

Test(report_chart, a_nan_breaks_the_line)
{
	double x[] = { 0, 1, 2, 3, 4 }, y[] = { 1, 2, NAN, 3, 4 };
	rpt_series s = { "s", x, y, 5, RPT_LINE, false, false, "#000" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1 };
	char *svg = chart(&c), d[512];

	attr(strstr(svg, "<path class=\"series\""), "d", d, sizeof(d));
	cr_assert_eq(count(d, "M"), 2, "two pieces: %s", d);
	free(svg);
}

Test(report_chart, a_step_holds_its_value)
{
	double x[] = { 0, 1, 2 }, y[] = { 1, 1, 3 };
	rpt_series s = { "s", x, y, 3, RPT_STEP, false, false, "#000" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1 };
	char *svg = chart(&c), d[512];

	attr(strstr(svg, "<path class=\"series\""), "d", d, sizeof(d));
	cr_assert_eq(count(d, "H"), 1, "one horizontal then vertical move: %s", d);
	cr_assert_eq(count(d, "V"), 1, "%s", d);
	free(svg);
}

Test(report_chart, bars_stack_and_carry_their_value)
{
	double x[] = { 0, 1, 2 }, ok[] = { 5, 0, 2 }, bad[] = { 1, 4, NAN };
	rpt_series s[] = {
		{ "ok", x, ok, 3, RPT_BARS, false, false, "#0a0" },
		{ "capacity", x, bad, 3, RPT_BARS, false, false, "#f80" },
	};
	rpt_chart c = { .title = "t", .series = s, .nseries = 2, .height = 200 };
	char *svg = chart(&c), y_ok[32], y_bad[32], h_ok[32];
	const char *r_ok, *r_bad;

	/* a rect per value above zero (4), plus the two legend swatches */
	cr_assert_eq(count(svg, "<rect"), 4 + 2, "%s", svg);
	cr_assert(strstr(svg, "<title>ok: 5</title>"));
	cr_assert(strstr(svg, "<title>capacity: 4</title>"));
	/* at x = 0 the capacity bar sits on the ok bar */
	r_ok = strstr(svg, "<rect x=\"60.0\"");
	cr_assert_not_null(r_ok, "%s", svg);
	r_bad = strstr(r_ok + 1, "<rect x=\"60.0\"");
	cr_assert_not_null(r_bad);
	attr(r_ok, "y", y_ok, sizeof(y_ok));
	attr(r_ok, "height", h_ok, sizeof(h_ok));
	attr(r_bad, "y", y_bad, sizeof(y_bad));
	cr_assert_float_eq(atof(y_bad) + 0, atof(y_ok) - atof(h_ok) / 5, 0.2,
			   "stacked: the 1 on top of the 5 (y %s, ok y %s h %s)", y_bad, y_ok, h_ok);
	/* the axis covers the stack (6), not just one bar */
	cr_assert(strstr(svg, ">6</text>") || strstr(svg, ">8</text>"), "%s", svg);
	free(svg);
}

Test(report_chart, right_axis_marks_and_legend_say_which_side)
{
	double x[] = { 0, 10 }, a[] = { 1, 2 }, r[] = { 100, 300 };
	rpt_series s[] = {
		{ "pace", x, a, 2, RPT_LINE, false, false, "#00f" },
		{ "refused <429>", x, r, 2, RPT_LINE, true, false, "#f00" },
	};
	rpt_mark m = { 5, "resume 1" };
	rpt_chart c = { .title = "t", .ylabel = "req/s", .y2label = "refused", .series = s,
			.nseries = 2, .marks = &m, .nmarks = 1, .xfmt = RPT_X_SECONDS };
	char *svg = chart(&c);

	cr_assert_geq(count(svg, "class=\"yr\""), 2, "right axis labels");
	cr_assert(strstr(svg, ">300</text>"), "%s", svg);
	cr_assert(strstr(svg, "refused &lt;429&gt; (right)"), "escaped, with its side: %s", svg);
	cr_assert(strstr(svg, "pace (left)"));
	cr_assert_eq(count(svg, "class=\"mark\""), 1);
	cr_assert(strstr(svg, ">resume 1<"));
	cr_assert(strstr(svg, ">10 s<"), "x ticks as durations: %s", svg);
	free(svg);
}

Test(report_chart, nothing_to_draw_is_no_data)
{
	double x[] = { 0, 1 }, y[] = { NAN, NAN };
	rpt_series s = { "s", x, y, 2, RPT_LINE, false, false, "#000" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1, .nodata = "no <samples>" };
	char *svg = chart(&c);

	cr_assert_str_eq(svg, "<p class=\"nodata\">No data: no &lt;samples&gt;</p>\n");
	free(svg);
	c.nseries = 0;
	svg = chart(&c);
	cr_assert(strstr(svg, "No data"));
	cr_assert_null(strstr(svg, "<svg"));
	free(svg);
}

Test(report_chart, many_points_stay_within_the_pixels)
{
	size_t n = 100000;
	double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
	char *svg;

	for (size_t i = 0; i < n; i++) {
		x[i] = (double)i;
		y[i] = i == 50000 ? 1000 : (double)(i % 7);
	}
	rpt_series s = { "s", x, y, n, RPT_LINE, false, false, "#000" };
	rpt_chart c = { .title = "t", .series = &s, .nseries = 1 };

	svg = chart(&c);
	/* at most 4 points per pixel column of an 800-pixel plot */
	cr_assert_lt(count(svg, "L"), 4 * 820, "%zu segments", count(svg, "L"));
	/* the spike is kept: the axis reaches 1000 and a point sits at its top */
	cr_assert(strstr(svg, ">1k</text>"), "the axis covers the spike");
	cr_assert(strstr(svg, " 30.0"), "a point at the plot's top (y 30)");
	free(svg);
	free(x);
	free(y);
}

/* --------------------------------------------------------------- cats */

Test(report_cats, quantiles_interpolate)
{
	double v[] = { 1, 2, 3, 4, 5 }, one[] = { 7 };
	rpt_box b;

	cr_assert_float_eq(rpt__quantile(v, 5, 0.5), 3, 1e-12);
	cr_assert_float_eq(rpt__quantile(v, 5, 0.25), 2, 1e-12);
	cr_assert_float_eq(rpt__quantile(v, 5, 0.9), 4.6, 1e-12);
	cr_assert_float_eq(rpt__quantile(v, 5, 0), 1, 1e-12);
	cr_assert_float_eq(rpt__quantile(v, 5, 1), 5, 1e-12);
	cr_assert(isnan(rpt__quantile(v, 0, 0.5)));
	rpt__box_of(one, 1, &b);
	cr_assert_float_eq(b.min, 7, 1e-12);
	cr_assert_float_eq(b.p95, 7, 1e-12);
	cr_assert_eq(b.n, 1);
}

Test(report_cats, hbars_stack_segments_per_row)
{
	const char *cats[] = { "COMPLETED", "FAILED" }, *colors[] = { "#0a0", "#a00" };
	const char *labels[] = { "out", "errors & <co>" };
	double v[] = { 90, 10, 0, 5 };
	rpt_hbars h = { .title = "t", .cats = cats, .colors = colors, .ncats = 2,
			.labels = labels, .v = v, .nrows = 2 };
	core_buf b = { 0 };

	cr_assert_eq(rpt__hbars(&b, &h), 0);
	/* 3 segments above zero, 2 legend swatches */
	cr_assert_eq(count(b.data, "<rect"), 5, "%s", b.data);
	cr_assert(strstr(b.data, "<title>out, FAILED: 10</title>"));
	cr_assert(strstr(b.data, "errors &amp; &lt;co&gt;"));
	cr_assert(strstr(b.data, ">100</text>"), "the row's total");
	core_buf_release(&b);
	v[0] = v[1] = v[3] = 0;
	cr_assert_eq(rpt__hbars(&b, &h), 0);
	cr_assert(strstr(b.data, "No data"), "all zero: %s", b.data);
	core_buf_release(&b);
}

Test(report_cats, boxes_on_a_log_axis)
{
	double fast[] = { 1e-5, 2e-5, 3e-5, 4e-5 }, slow[] = { 0.1, 0.15, 0.9 };
	rpt_box bx[3] = { { .label = "gate" }, { .label = "llm" }, { .label = "empty" } };
	core_buf b = { 0 };

	rpt__box_of(fast, 4, &bx[0]);
	rpt__box_of(slow, 3, &bx[1]);
	bx[2].n = 0;
	cr_assert_eq(rpt__boxes(&b, "t", bx, 3, 0, NULL), 0);
	cr_assert_eq(count(b.data, "<g class=\"box\">"), 2, "the empty one is left out");
	/* decades from 10 µs to 1 s */
	cr_assert(strstr(b.data, ">0.01 ms</text>"), "%s", b.data);
	cr_assert(strstr(b.data, ">1 s</text>"));
	cr_assert(strstr(b.data, "median 150 ms"), "the box's tooltip: %s", b.data);
	core_buf_release(&b);
	cr_assert_eq(rpt__boxes(&b, "t", &bx[2], 1, 0, "nothing"), 0);
	cr_assert_str_eq(b.data, "<p class=\"nodata\">No data: nothing</p>\n");
	core_buf_release(&b);
}

/* ---------------------------------------------------------------- dag */

Test(report_dag, depth_is_the_longest_path)
{
	/* 0 -> 1 -> 2 -> 4, 0 -> 3 -> 4, 1 -> 4 (on_error), 5 alone */
	rpt_dedge e[] = { { 0, 1, "" }, { 1, 2, "" }, { 2, 4, "" }, { 0, 3, "" },
			  { 3, 4, "" }, { 1, 4, "" } };
	int d[6];

	rpt__dag_depths(6, e, 6, d);
	cr_assert_eq(d[0], 0);
	cr_assert_eq(d[1], 1);
	cr_assert_eq(d[2], 2);
	cr_assert_eq(d[3], 1);
	cr_assert_eq(d[4], 3);
	cr_assert_eq(d[5], 0);
}

Test(report_dag, cycles_and_bad_edges_do_not_hang)
{
	rpt_dedge e[] = { { 0, 1, "" }, { 1, 2, "" }, { 2, 1, "" }, { 2, 2, "" },
			  { 7, 1, "" }, { -1, 0, "" } };
	int d[3];

	rpt__dag_depths(3, e, 6, d);
	cr_assert_eq(d[0], 0);
	cr_assert_geq(d[1], 1);
	cr_assert_geq(d[2], 1);
	cr_assert_lt(d[2], 4);
}

Test(report_dag, draws_every_node_and_labelled_edge)
{
	rpt_dnode n[] = { { "source", "source", "csv", NULL },
			  { "classify", "transform", "llm", "3,000 states" },
			  { "route <&>", "gate", "", NULL },
			  { "out", "sink", "csv", NULL }, { "errors", "sink", "json", NULL } };
	rpt_dedge e[] = { { 0, 1, "on_success" }, { 1, 2, "on_success" }, { 2, 3, "true" },
			  { 2, 4, "false" }, { 1, 4, "on_error" } };
	core_buf b = { 0 };
	char x_src[16], x_out[16], x_err[16];

	cr_assert_eq(rpt__dag(&b, n, 5, e, 5), 0);
	cr_assert_eq(count(b.data, "<g class=\"node\">"), 5);
	cr_assert_eq(count(b.data, "<path class=\"edge\""), 5);
	cr_assert_eq(count(b.data, "marker-end=\"url(#rpt-arrow)\""), 5);
	cr_assert(strstr(b.data, ">on_error</text>"));
	cr_assert(strstr(b.data, ">true</text>"));
	cr_assert(strstr(b.data, "route &lt;&amp;&gt;"), "names escaped");
	cr_assert(strstr(b.data, ">3,000 states</text>"), "the note");
	/* left to right: the source first, both sinks in the last column */
	attr(strstr(b.data, "<title>source ("), "x", x_src, sizeof(x_src));
	attr(strstr(b.data, "<title>out ("), "x", x_out, sizeof(x_out));
	attr(strstr(b.data, "<title>errors ("), "x", x_err, sizeof(x_err));
	cr_assert_lt(atof(x_src), atof(x_out));
	cr_assert_float_eq(atof(x_out), atof(x_err), 1e-9, "sinks share the last column");
	core_buf_release(&b);
	cr_assert_eq(rpt__dag(&b, n, 0, e, 0), 0);
	cr_assert(strstr(b.data, "No data"));
	core_buf_release(&b);
}

/*
 * story.c — a row's story on the page (report_internal.h): the document
 * of rec_explain (schema elspeth-explain-1, docs/audit.md) as HTML —
 * the row, each token's node states with their calls, routing and
 * errors, its outcome and artifact — and, folded, the document itself.
 */
#include <stdio.h>
#include <string.h>

#include "report/report_internal.h"

#define JSON_MAX (64 * 1024) /* bytes of the folded document shown */
#define DATA_MAX 2000        /* bytes of the source row shown */

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* "2025-05-01T12:00:03.123Z" -> "12:00:03.123Z" (the row's date is in
 * its heading). */
static const char *time_of_day(const char *iso)
{
	const char *t = strchr(iso, 'T');

	return t ? t + 1 : iso;
}

/* JSON text of v, at most max bytes (cut at a character), escaped. */
static int json_pre(core_buf *b, const json_t *v, int indent, size_t max)
{
	core_buf t = { 0 };
	int rc = core_json_append(&t, v, indent, 0);
	size_t len = t.len;

	if (!rc && len > max)
		len = core_utf8_cut(t.data, max);
	if (!rc && !(rc = rpt__escn(b, t.data ? t.data : "", len)) && len < t.len)
		rc = core_buf_printf(b, "\n\xe2\x80\xa6 (%zu more bytes: elspeth explain --json)", t.len - len);
	core_buf_release(&t);
	return rc;
}

/* "3 calls: 2 success 200, 1 error 429 capacity" with latencies. */
static int calls_detail(core_buf *b, const json_t *calls)
{
	size_t i;
	json_t *c;
	int rc = 0;

	if (!json_array_size(calls))
		return 0;
	rc = core_buf_printf(b, "<div class=\"calls\">%zu call%s:", json_array_size(calls),
			     json_array_size(calls) == 1 ? "" : "s");
	json_array_foreach(calls, i, c) {
		char lat[32];

		if (rc)
			break;
		rpt__dur(lat, sizeof(lat), json_number_value(json_object_get(c, "latency_ms")) / 1e3);
		rc = core_buf_puts(b, i ? "; " : " ");
		if (!rc && !(rc = rpt__esc(b, str(c, "status"))))
			rc = core_buf_printf(b, " %lld", (long long)json_integer_value(json_object_get(c, "http_status")));
		if (!rc && str(c, "error_class")[0] && !(rc = core_buf_puts(b, " ")))
			rc = rpt__esc(b, str(c, "error_class"));
		if (!rc)
			rc = core_buf_printf(b, " %s", lat);
		if (!rc && str(c, "throttle_reason")[0] && !(rc = core_buf_puts(b, " (waited: ")) &&
		    !(rc = rpt__esc(b, str(c, "throttle_reason"))))
			rc = core_buf_puts(b, ")");
	}
	return rc ? rc : core_buf_puts(b, "</div>");
}

static int routing_detail(core_buf *b, const json_t *routing)
{
	size_t i;
	json_t *r;
	int rc = 0;

	json_array_foreach(routing, i, r) {
		if (rc)
			break;
		rc = core_buf_puts(b, "<div>");
		if (!rc && !(rc = rpt__esc(b, str(r, "label"))) && !(rc = core_buf_puts(b, " \xe2\x86\x92 ")) &&
		    !(rc = rpt__esc(b, str(r, "to"))) && !(rc = core_buf_puts(b, " (")) &&
		    !(rc = rpt__esc(b, str(r, "mode"))) && !(rc = core_buf_puts(b, ", reason ")) &&
		    !(rc = rpt__esc(b, str(r, "reason"))))
			rc = core_buf_puts(b, ")</div>");
	}
	return rc;
}

static int state_row(core_buf *b, const json_t *s)
{
	char dur[32];
	const json_t *batch = json_object_get(s, "batch");
	int rc;

	if (json_object_get(s, "missing"))
		return core_buf_printf(b, "<tr><td colspan=\"6\">node state %lld: not recorded</td></tr>\n",
				       (long long)json_integer_value(json_object_get(s, "state_id")));
	rpt__dur(dur, sizeof(dur), json_number_value(json_object_get(s, "duration_ms")) / 1e3);
	rc = core_buf_printf(b, "<tr><td>%lld</td><td>", (long long)json_integer_value(json_object_get(s, "step")));
	if (!rc && !(rc = rpt__esc(b, str(s, "node"))) && !(rc = core_buf_puts(b, " <small>")) &&
	    !(rc = rpt__esc(b, str(s, "plugin"))) && !(rc = core_buf_puts(b, "</small></td><td class=\"st-")) &&
	    !(rc = rpt__esc(b, str(s, "status"))) && !(rc = core_buf_puts(b, "\">")) &&
	    !(rc = rpt__esc(b, str(s, "status"))))
		rc = core_buf_printf(b, "</td><td>%s</td><td>", dur);
	if (!rc && !(rc = rpt__esc(b, time_of_day(str(s, "started_at")))))
		rc = core_buf_puts(b, "</td><td>");
	if (!rc && str(s, "error")[0] && !(rc = core_buf_puts(b, "<div class=\"err\">")) &&
	    !(rc = rpt__esc(b, str(s, "error"))))
		rc = core_buf_puts(b, "</div>");
	if (!rc)
		rc = routing_detail(b, json_object_get(s, "routing"));
	if (!rc && batch && !(rc = core_buf_printf(b, "<div>batch %lld: ",
			(long long)json_integer_value(json_object_get(batch, "batch_id")))) &&
	    !(rc = rpt__esc(b, str(batch, "status"))) && !(rc = core_buf_puts(b, ", trigger ")) &&
	    !(rc = rpt__esc(b, str(batch, "trigger"))))
		rc = core_buf_printf(b, ", %zu members</div>", json_array_size(json_object_get(batch, "members")));
	if (!rc)
		rc = calls_detail(b, json_object_get(s, "calls"));
	return rc ? rc : core_buf_puts(b, "</td></tr>\n");
}

static int outcome_line(core_buf *b, const json_t *tok)
{
	const json_t *o = json_object_get(tok, "outcome"), *a = json_object_get(tok, "artifact");
	const json_t *err = json_object_get(o, "error");
	int rc;

	if (!json_is_object(o))
		return core_buf_puts(b, "<p class=\"outcome\">No outcome recorded.</p>\n");
	rc = core_buf_printf(b, "<p class=\"outcome\"><i style=\"background:%s\"></i><b>",
			     rpt__color(str(o, "outcome")));
	if (!rc && !(rc = rpt__esc(b, str(o, "outcome"))))
		rc = core_buf_puts(b, "</b>");
	if (!rc && str(o, "sink")[0] && !(rc = core_buf_puts(b, " to sink <b>")) &&
	    !(rc = rpt__esc(b, str(o, "sink"))))
		rc = core_buf_puts(b, "</b>");
	if (!rc && json_is_object(a) && !(rc = core_buf_puts(b, ": ")) && !(rc = rpt__esc(b, str(a, "path"))))
		rc = core_buf_printf(b, " bytes %lld+%lld", (long long)json_integer_value(json_object_get(a, "offset")),
				     (long long)json_integer_value(json_object_get(a, "length")));
	if (!rc && json_is_string(json_object_get(err, "data")) &&
	    !(rc = core_buf_puts(b, "<br><span class=\"err\">")) &&
	    !(rc = rpt__esc(b, json_string_value(json_object_get(err, "data")))))
		rc = core_buf_puts(b, "</span>");
	return rc ? rc : core_buf_puts(b, "</p>\n");
}

static int token(core_buf *b, const json_t *tok)
{
	const json_t *sup = json_object_get(tok, "superseded"), *st;
	const json_t *parents = json_object_get(tok, "parents"), *p;
	size_t i;
	int rc;

	rc = core_buf_printf(b, "<div class=\"token%s\"><h4>token %lld", sup ? " superseded" : "",
			     (long long)json_integer_value(json_object_get(tok, "token_id")));
	json_array_foreach(parents, i, p)
		if (!rc)
			rc = core_buf_printf(b, "%s%lld", i ? ", " : " \xe2\x86\x90 parent ",
					     (long long)json_integer_value(json_object_get(p, "token_id")));
	if (!rc && sup)
		rc = core_buf_printf(b, " <span class=\"tag\">superseded by resume %lld</span>",
				     (long long)json_integer_value(json_object_get(sup, "attempt")));
	if (!rc)
		rc = core_buf_puts(b, "</h4>\n<table class=\"grid states\"><tr><th>step</th><th>node</th>"
				   "<th>status</th><th>duration</th><th>started (UTC)</th><th>detail</th></tr>\n");
	json_array_foreach(json_object_get(tok, "states"), i, st)
		if (!rc)
			rc = state_row(b, st);
	if (!rc)
		rc = core_buf_puts(b, "</table>\n");
	if (!rc)
		rc = outcome_line(b, tok);
	return rc ? rc : core_buf_puts(b, "</div>\n");
}

int rpt__story(core_buf *b, const json_t *doc)
{
	const json_t *row = json_object_get(doc, "row"), *tok;
	const json_t *data = json_object_get(json_object_get(row, "source"), "data");
	long long seq = (long long)json_integer_value(json_object_get(row, "seq"));
	size_t i;
	int rc;

	rc = core_buf_printf(b, "<section class=\"story\" id=\"row-%lld\"><h3>Row %lld <small>", seq, seq);
	if (!rc && !(rc = rpt__esc(b, str(row, "where"))) && !(rc = core_buf_puts(b, " \xc2\xb7 ")) &&
	    !(rc = rpt__esc(b, str(row, "created_at"))))
		rc = core_buf_printf(b, "</small> <a class=\"up\" href=\"#slowest\">\xe2\x86\x91 rows</a></h3>\n"
				     "<p class=\"cmd\">elspeth explain --run %lld --row %lld</p>\n",
				     (long long)json_integer_value(json_object_get(json_object_get(doc, "run"), "run_id")),
				     seq);
	if (!rc && str(row, "validation_error")[0] && !(rc = core_buf_puts(b, "<p class=\"err\">validation: ")) &&
	    !(rc = rpt__esc(b, str(row, "validation_error"))))
		rc = core_buf_puts(b, "</p>\n");
	if (!rc && data && !(rc = core_buf_puts(b, "<pre class=\"data\">")) &&
	    !(rc = json_pre(b, data, -1, DATA_MAX)))
		rc = core_buf_puts(b, "</pre>\n");
	json_array_foreach(json_object_get(doc, "tokens"), i, tok)
		if (!rc)
			rc = token(b, tok);
	if (!rc && !(rc = core_buf_puts(b, "<details><summary>The whole story as JSON "
					  "(elspeth explain --json)</summary><pre>")) &&
	    !(rc = json_pre(b, doc, 2, JSON_MAX)))
		rc = core_buf_puts(b, "</pre></details>\n");
	return rc ? rc : core_buf_puts(b, "</section>\n");
}

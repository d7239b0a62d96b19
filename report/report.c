/*
 * report.c — rpt_write (report/report.h): the page around the sections
 * of page.c and page_time.c, its style sheet, and the stories of the
 * rows it lists. A Content-Security-Policy in the page forbids scripts
 * and anything fetched from elsewhere, so the page stays what it is
 * even when a browser opens it from a mail or a share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

#define MAX_ROWS_DEFAULT 20

static const char style[] =
	"*{box-sizing:border-box}"
	"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
	"color:#1d2430;background:#f4f6f9}"
	"main{max-width:960px;margin:0 auto;padding:16px 20px 60px}"
	"nav{position:sticky;top:0;background:#1d2430;padding:8px 20px;z-index:1}"
	"nav a{color:#dbe4f0;margin-right:16px;text-decoration:none;font-size:13px}"
	"nav a:hover{color:#fff}"
	"h1{font-size:24px;margin:8px 0 2px}h2{font-size:19px;margin:0 0 6px}"
	"h3{font-size:15px;margin:18px 0 4px}h4{font-size:13px;margin:10px 0 4px}"
	"section,header{background:#fff;border:1px solid #dde3ea;border-radius:8px;"
	"padding:16px 18px;margin:16px 0}"
	".sub,.lead,.note{color:#5b6675}.lead{margin:0 0 8px}.note{font-size:12px}"
	".status{font-size:13px;padding:2px 10px;border-radius:12px;vertical-align:middle;"
	"background:#e3e8ee}"
	".st-completed{background:#d5f0dd;color:#1c6b36}.st-failed{background:#f8d7d7;color:#8b1f1f}"
	".st-interrupted{background:#fdebd0;color:#8a4b08}.st-running{background:#dbe7fb;color:#1d4f9c}"
	".tiles{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}"
	".tile{flex:1 1 120px;border:1px solid #dde3ea;border-radius:8px;padding:8px 12px}"
	".tile .v{font-size:20px;font-weight:600}.tile .k{font-size:12px;color:#5b6675}"
	".tile.good .v{color:#1c6b36}.tile.bad .v{color:#b02a2a}.tile.warn .v{color:#a35c00}"
	".chips .chip{display:inline-block;margin:2px 10px 2px 0;font-size:13px}"
	".chip i,.outcome i{display:inline-block;width:10px;height:10px;border-radius:2px;"
	"margin-right:5px}"
	".error,.err{color:#b02a2a}.error{background:#fbeaea;padding:8px 10px;border-radius:6px}"
	"table{border-collapse:collapse;font-size:13px;margin:8px 0}"
	"table.grid{width:100%}table.grid th,table.grid td{border-bottom:1px solid #e6eaef;"
	"padding:4px 8px;text-align:left;vertical-align:top}"
	"table.kv th{text-align:left;padding:2px 14px 2px 0;color:#5b6675;font-weight:500}"
	"table.kv td{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all}"
	"td.err{max-width:420px;word-break:break-word}"
	"svg.chart{display:block;max-width:100%;height:auto;margin:6px 0}"
	"svg text{font-size:12px;fill:#3b4656}"
	".grid{stroke:#e6eaef}.axis{stroke:#9aa5b1}.tick{stroke:#9aa5b1}"
	"line.grid{stroke:#e6eaef}"
	"text.yl{text-anchor:end}text.yr{text-anchor:start}text.xl{text-anchor:middle}"
	"text.al{text-anchor:middle;fill:#5b6675}text.cl{text-anchor:end}"
	"line.mark{stroke:#7b4fc9;stroke-dasharray:4 3}text.ml{fill:#7b4fc9;font-size:11px}"
	".box line{stroke:#3b4656}.box rect{fill:#cfe0fa;stroke:#2f6fde}"
	".box line.med{stroke:#1d2430;stroke-width:3}.box line.p95{stroke:#c23b3b;stroke-width:1.5}"
	".node rect{stroke:#8795a6}text.nn{font-weight:600;font-size:13px}text.nk{font-size:11px;fill:#5b6675}"
	"path.edge{fill:none;stroke:#8795a6;stroke-width:1.4}text.el{font-size:11px;fill:#5b6675;"
	"text-anchor:middle;paint-order:stroke;stroke:#fff;stroke-width:3px}"
	".scroll{overflow-x:auto}"
	".nodata{color:#7a8594;background:#f6f8fa;border:1px dashed #cfd6de;border-radius:6px;"
	"padding:18px;text-align:center}"
	"a.explain{font-size:12px}"
	".story{border-left:4px solid #2f6fde}.story small{color:#5b6675;font-weight:400}"
	".story .up{font-size:12px;font-weight:400;float:right}"
	".cmd{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:#5b6675}"
	"pre{background:#f6f8fa;border-radius:6px;padding:8px;overflow-x:auto;font-size:12px;"
	"white-space:pre-wrap;word-break:break-word}"
	".token{margin:8px 0 12px}.token.superseded{opacity:.7}"
	".tag{font-size:11px;background:#fdebd0;color:#8a4b08;padding:1px 6px;border-radius:8px}"
	".calls{font-size:12px;color:#5b6675}.outcome{margin:4px 0}"
	"footer{color:#7a8594;font-size:12px;text-align:center}";

static int head(core_buf *b, uint64_t run)
{
	return core_buf_printf(b,
		"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		"style-src 'unsafe-inline'; img-src data:\">\n"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		"<meta name=\"generator\" content=\"elspeth %s\">\n"
		"<title>elspeth report: run %llu</title>\n<style>%s</style></head>\n<body>\n"
		"<nav><a href=\"#summary\">summary</a><a href=\"#graph\">graph</a>"
		"<a href=\"#rows\">rows over time</a><a href=\"#llm\">LLM calls</a>"
		"<a href=\"#latency\">latency</a><a href=\"#sinks\">sinks</a>"
		"<a href=\"#slowest\">slowest rows</a><a href=\"#errors\">errors</a></nav>\n<main>\n",
		ELSPETH_VERSION, (unsigned long long)run, style);
}

/* The rows listed (slowest, then with errors), each once. */
static bool listed_before(const rpt_data *d, size_t i)
{
	uint64_t seq = i < d->nslow ? d->slow[i].seq : d->bad[i - d->nslow].seq;

	for (size_t j = 0; j < i; j++)
		if ((j < d->nslow ? d->slow[j].seq : d->bad[j - d->nslow].seq) == seq)
			return true;
	return false;
}

/* Each listed row's story (rec_explain); a row whose story cannot be read
 * says so in its place, so its link still lands. */
static int stories(core_buf *b, rec_env *env, const rpt_data *d)
{
	int rc = core_buf_puts(b, "<section id=\"stories\"><h2>Row stories</h2>\n"
			       "<p class=\"lead\">What <code>elspeth explain</code> shows for "
			       "each row listed above.</p></section>\n");

	for (size_t i = 0; i < d->nslow + d->nbad && !rc; i++) {
		uint64_t seq = i < d->nslow ? d->slow[i].seq : d->bad[i - d->nslow].seq;
		json_t *doc = NULL;
		core_err e = { 0 };

		if (listed_before(d, i))
			continue;
		if (rec_explain(env, d->run, seq, 0, &doc, &e) == 0) {
			rc = rpt__story(b, doc);
		} else if (e.code == CORE_ENOMEM) {
			rc = CORE_ENOMEM;
		} else {
			rc = core_buf_printf(b, "<section class=\"story\" id=\"row-%llu\"><h3>Row %llu</h3>"
					     "<p class=\"err\">", (unsigned long long)seq,
					     (unsigned long long)seq);
			if (!rc && !(rc = rpt__esc(b, e.msg)))
				rc = core_buf_puts(b, "</p></section>\n");
		}
		json_decref(doc);
	}
	return rc;
}

int rpt_write(rec_env *env, uint64_t run, const rpt_opts *o, core_buf *out,
	      core_err *err)
{
	size_t max_rows = o && o->max_rows ? o->max_rows : MAX_ROWS_DEFAULT;
	rpt_data d;
	char now[64];
	int rc;

	if ((rc = rpt__load(env, run, max_rows, &d, err)))
		return rc;
	rc = head(out, run);
	if (!rc)
		rc = rpt__page_header(out, &d);
	if (!rc)
		rc = rpt__page_dag(out, &d);
	if (!rc)
		rc = rpt__page_rows_over_time(out, &d);
	if (!rc)
		rc = rpt__page_llm(out, &d);
	if (!rc)
		rc = rpt__page_latency(out, &d);
	if (!rc)
		rc = rpt__page_sinks(out, &d);
	if (!rc)
		rc = rpt__page_rows(out, &d);
	if (!rc)
		rc = stories(out, env, &d);
	rpt__time(now, sizeof(now), core_now_wall_ns());
	if (!rc)
		rc = core_buf_printf(out, "<footer>elspeth %s \xc2\xb7 report of run %llu written %s "
				     "from the audit trail</footer>\n</main></body></html>\n",
				     ELSPETH_VERSION, (unsigned long long)run, now);
	rpt__data_release(&d);
	if (rc == CORE_ENOMEM)
		core_err_set(err, rc, "out of memory writing the report");
	else if (rc)
		core_err_set(err, rc, "cannot write the report: %s", core_strerror(rc));
	return rc;
}

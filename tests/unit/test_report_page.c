/* test_report_page.c — rpt_write over a trail written here record by
 * record (report/report.h): every section is there; each "explain" link
 * lands on its row's story; text from the trail is escaped and nothing
 * is fetched from elsewhere; a run without samples or without LLM calls
 * shows "no data" where those charts would be; the hours between a
 * crash and its resume take no room on the time axis; an unknown run is
 * an error. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_recorder_util.h"

#include "report/report_internal.h"

TestSuite(report_page, .timeout = TIMEOUT);

#define T0 1700000000000000000ull /* the run's start, wall ns */
#define SEC 1000000000ull

typedef struct trail_opts {
	bool samples, calls, resume;
	bool old_calls;         /* calls without node, token, row (older trails) */
	const char *llm_name;   /* the transform's name */
} trail_opts;

static rec_key key(uint64_t run, int nparts, ...)
{
	rec_key k;
	va_list ap;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	va_start(ap, nparts);
	for (int i = 0; i < nparts; i++) {
		int width = va_arg(ap, int);
		uint64_t v = va_arg(ap, uint64_t);

		if (width == 4)
			rec_key_u32(&k, (uint32_t)v);
		else
			rec_key_u64(&k, v);
	}
	va_end(ap);
	return k;
}

#define K8(v) 8, (uint64_t)(v)
#define K4(v) 4, (uint64_t)(v)

static void put(rec_env *env, rec_table t, rec_key k, const ProtobufCMessage *m)
{
	cr_assert_eq(rec_put_msg(env, t, &k, m), 0);
}

static void node(rec_env *env, uint64_t run, uint32_t id, const char *name, const char *kind,
		 const char *plugin)
{
	Elspeth__NodeRecord n = ELSPETH__NODE_RECORD__INIT;

	n.run_id = run;
	n.node_id = id;
	n.name = (char *)name;
	n.kind = (char *)kind;
	n.plugin = (char *)plugin;
	put(env, REC_NODES, key(run, 1, K4(id)), &n.base);
}

static void edge(rec_env *env, uint64_t run, uint32_t id, uint32_t from, uint32_t to,
		 const char *label)
{
	Elspeth__EdgeRecord e = ELSPETH__EDGE_RECORD__INIT;

	e.run_id = run;
	e.edge_id = id;
	e.from_node = from;
	e.to_node = to;
	e.label = (char *)label;
	put(env, REC_EDGES, key(run, 1, K4(id)), &e.base);
}

/* Row seq: one token (id seq) through the transform (node 1), then its
 * sink; row 3 fails to the errors sink. Its records and payloads go into
 * its story, sealed; the calls (without bodies) into their table. */
static void row(rec_env *env, uint64_t run, uint64_t seq, const trail_opts *o)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	Elspeth__TokenRecord t = ELSPETH__TOKEN_RECORD__INIT;
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	Elspeth__TokenOutcomeRecord out = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	char hash[CORE_SHA256_HEX_LEN + 1], err_hash[CORE_SHA256_HEX_LEN + 1], data[64];
	uint64_t start = T0 + seq * SEC / 4, dur = seq * 100000000ull;
	bool bad = seq == 3;

	snprintf(data, sizeof(data), "{\"i\":%llu,\"note\":\"<b>\"}", (unsigned long long)seq);
	story_payload(env, run, seq, data, strlen(data), hash);
	r.run_id = run;
	r.row_id = r.seq = seq;
	r.source_hash = r.payload_ref = hash;
	r.where = "line 2";
	r.created_at_ns = start;
	story_put(env, run, seq, &r.base);
	t.run_id = run;
	t.token_id = seq;
	t.row_id = seq;
	story_put(env, run, seq, &t.base);
	for (int k = 0; k < 2; k++) {
		uint64_t id = 2 * seq - 1 + (uint64_t)k;

		s.run_id = run;
		s.state_id = id;
		s.token_id = seq;
		s.node_id = k ? (bad ? 3 : 2) : 1;
		s.step = (uint32_t)k + 1;
		s.status = (char *)(bad && !k ? "failed" : "completed");
		s.started_at_ns = k ? start + dur + 5 * SEC : start;
		s.duration_ns = k ? 20000 : dur;
		s.completed_at_ns = s.started_at_ns + s.duration_ns;
		story_put(env, run, seq, &s.base);
		if (!k && o->calls) {
			Elspeth__CallRecord c = ELSPETH__CALL_RECORD__INIT;

			c.run_id = run;
			c.state_id = id;
			c.call_type = "llm";
			c.status = (char *)(bad ? "error" : "success");
			c.error_class = (char *)(bad ? "capacity" : "");
			c.http_status = bad ? 429 : 200;
			c.latency_ns = dur - 1000;
			c.submitted_at_ns = start;
			c.completed_at_ns = start + dur;
			c.node_id = o->old_calls ? 0 : 1;
			c.token_id = o->old_calls ? 0 : seq;
			c.row_id = o->old_calls ? 0 : seq;
			put(env, REC_CALLS, key(run, 2, K8(id), K4(0)), &c.base);
		}
	}
	story_payload(env, run, seq, "boom <b>", 8, err_hash);
	out.run_id = run;
	out.token_id = seq;
	out.row_id = seq;
	out.outcome = (char *)(bad ? "ROUTED" : "COMPLETED");
	out.sink = (char *)(bad ? "errors" : "out");
	out.error_hash = bad ? err_hash : "";
	out.recorded_at_ns = start + dur + 5 * SEC;
	story_put(env, run, seq, &out.base);
	story_seal(env, run, seq);
}

static void sample(rec_env *env, uint64_t run, uint32_t attempt, uint32_t index,
		   uint64_t at, uint64_t released)
{
	Elspeth__SampleRecord s = ELSPETH__SAMPLE_RECORD__INIT;
	Elspeth__SampleUpstream u = ELSPETH__SAMPLE_UPSTREAM__INIT, *up = &u;
	Elspeth__SampleCount c = ELSPETH__SAMPLE_COUNT__INIT, *cp = &c;

	s.run_id = run;
	s.attempt = attempt;
	s.index = index;
	s.at_ns = at;
	s.pulled = released + 1;
	s.released = released;
	s.in_flight = 1;
	c.name = "COMPLETED";
	c.n = released;
	s.n_outcomes = 1;
	s.outcomes = &cp;
	u.node_id = 1;
	u.upstream = "http://mock:1";
	u.rate = 4 + index;
	u.window = 8;
	u.ceiling = 16;
	u.in_flight = 2;
	u.requests = 10 * (index + 1);
	u.refusals = index;
	s.n_upstreams = 1;
	s.upstreams = &up;
	cr_assert_eq(rec_sample_put(env, &s), 0);
}

static uint64_t trail(rec_env *env, const trail_opts *o)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	core_err err = { 0 };
	uint64_t run;

	r.status = "completed";
	r.started_at_ns = T0;
	r.completed_at_ns = o->resume ? T0 + 3602 * SEC : T0 + 8 * SEC;
	r.settings_path = "t.yaml";
	r.elspeth_version = "0.1.0";
	r.rows = 4;
	r.succeeded = 3;
	r.failed = 1;
	r.metrics_json = "{\"max_rows_in_flight\":4,\"calls\":{\"total\":4}}";
	cr_assert_eq(rec_new_run(env, &r, &err), 0, "%s", err.msg);
	run = r.run_id;
	node(env, run, 0, "source", "source", "csv");
	node(env, run, 1, o->llm_name ? o->llm_name : "classify", "transform", "llm");
	node(env, run, 2, "out", "sink", "csv");
	node(env, run, 3, "errors", "sink", "json");
	edge(env, run, 0, 0, 1, "on_success");
	edge(env, run, 1, 1, 2, "on_success");
	edge(env, run, 2, 1, 3, "on_error");
	for (uint64_t seq = 1; seq <= 4; seq++)
		row(env, run, seq, o);
	if (o->samples)
		for (uint32_t i = 0; i < 4; i++)
			sample(env, run, 0, i, T0 + i * SEC, i);
	if (o->resume) {
		Elspeth__ResumeRecord rr = ELSPETH__RESUME_RECORD__INIT;

		rr.run_id = run;
		rr.attempt = 1;
		rr.started_at_ns = T0 + 3600 * SEC;
		rr.completed_at_ns = T0 + 3602 * SEC;
		rr.status = "completed";
		rr.previous_status = "interrupted";
		put(env, REC_RESUMES, key(run, 1, K4(1)), &rr.base);
		sample(env, run, 1, 0, T0 + 3600 * SEC, 3);
		sample(env, run, 1, 1, T0 + 3602 * SEC, 4);
	}
	cr_assert_eq(rec_flush(env, &err), 0, "%s", err.msg);
	return run;
}

static char *page(rec_env *env, uint64_t run)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(rpt_write(env, run, NULL, &b, &err), 0, "%s", err.msg);
	return b.data;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	for (const char *p = hay; (p = strstr(p, needle)); p += len)
		n++;
	return n;
}

/* The text of the section with this id. */
static char *section(const char *html, const char *id)
{
	char open[64];
	const char *p, *q;

	snprintf(open, sizeof(open), "<section id=\"%s\"", id);
	p = strstr(html, open);
	cr_assert_not_null(p, "no section %s", id);
	q = strstr(p, "</section>");
	cr_assert_not_null(q);
	return strndup(p, (size_t)(q - p));
}

/* Every href="#row-N" has its id="row-N". */
static size_t links_land(const char *html)
{
	size_t n = 0;

	for (const char *p = html; (p = strstr(p, "href=\"#row-")); p++) {
		char id[48];
		unsigned long long seq = strtoull(p + 11, NULL, 10);

		snprintf(id, sizeof(id), "id=\"row-%llu\"", seq);
		cr_assert(strstr(html, id), "the link to row %llu lands nowhere", seq);
		n++;
	}
	return n;
}

static rec_env *open_trail(tdir *d)
{
	core_err err = { 0 };
	rec_env *env;

	tdir_make(d);
	cr_assert_eq(rec_open(d->path, 0, &env, &err), 0, "%s", err.msg);
	return env;
}

Test(report_page, every_section_and_every_link_lands)
{
	trail_opts o = { .samples = true, .calls = true };
	tdir d;
	rec_env *env = open_trail(&d);
	uint64_t run = trail(env, &o);
	char *html = page(env, run), *s;

	cr_assert(!strncmp(html, "<!DOCTYPE html>", 15));
	cr_assert(strstr(html, "</html>\n"));
	cr_assert(strstr(html, "<header id=\"summary\">"));
	free(section(html, "graph"));
	free(section(html, "latency"));
	free(section(html, "sinks"));
	/* rows over time: two charts from the 4 samples */
	s = section(html, "rows");
	cr_assert_eq(count(s, "<svg"), 2, "%s", s);
	cr_assert_null(strstr(s, "No data"));
	free(s);
	/* LLM: calls per second, then the upstream's two charts */
	s = section(html, "llm");
	cr_assert_eq(count(s, "<svg"), 3, "%s", s);
	cr_assert(strstr(s, "<title>ok: "), "ok calls drawn");
	cr_assert(strstr(s, "<title>capacity: "), "the refused call drawn");
	cr_assert(strstr(s, "Capacity control: http://mock:1"));
	free(s);
	/* the slowest row is 4 (400 ms); row 3 is the one with an error */
	s = section(html, "slowest");
	cr_assert(strstr(s, "<tr><td>4</td><td>400 ms</td>"), "%s", s);
	cr_assert_null(strstr(s, "5 s"), "the wait before the sink write is not the row's");
	free(s);
	s = section(html, "errors");
	cr_assert(strstr(s, "<tr><td>3</td><td>ROUTED</td><td>errors</td>"), "%s", s);
	cr_assert(strstr(s, "boom &lt;b&gt;"), "the error, escaped");
	free(s);
	cr_assert_eq(links_land(html), 4 + 1, "4 slowest rows and 1 with an error");
	cr_assert_eq(count(html, "class=\"story\" id=\"row-"), 4, "each row's story once");
	cr_assert(strstr(html, "elspeth explain --run 1 --row 3"));
	/* token outcomes in the header */
	cr_assert(strstr(html, "COMPLETED 3"));
	cr_assert(strstr(html, "ROUTED 1"));
	cr_assert_geq(count(html, "<svg"), 7);
	free(html);
	rec_close(env, NULL);
	tdir_remove(&d);
}

Test(report_page, self_contained_and_escaped)
{
	trail_opts o = { .samples = true, .calls = true,
			 .llm_name = "<img src=x onerror=alert(1)><script>x</script>" };
	tdir d;
	rec_env *env = open_trail(&d);
	uint64_t run = trail(env, &o);
	char *html = page(env, run);

	cr_assert_null(strstr(html, "<script"), "no script, not even the node's name");
	cr_assert_null(strstr(html, "<img"));
	cr_assert(strstr(html, "&lt;img src=x onerror=alert(1)&gt;"));
	cr_assert_null(strstr(html, "src=\""), "nothing loaded from anywhere");
	cr_assert_null(strstr(html, "href=\"http"));
	cr_assert_null(strstr(html, "url(http"));
	cr_assert_null(strstr(html, "@import"));
	cr_assert(strstr(html, "default-src 'none'"), "a policy forbids fetching");
	/* the source row's data, escaped in its story */
	cr_assert(strstr(html, "&quot;note&quot;:&quot;&lt;b&gt;&quot;"));
	free(html);
	rec_close(env, NULL);
	tdir_remove(&d);
}

Test(report_page, no_samples_and_no_calls_say_no_data)
{
	trail_opts o = { 0 };
	tdir d;
	rec_env *env = open_trail(&d);
	uint64_t run = trail(env, &o);
	char *html = page(env, run), *s;

	s = section(html, "rows");
	cr_assert_eq(count(s, "<svg"), 0);
	cr_assert_eq(count(s, "class=\"nodata\">No data: the trail holds no metric samples"), 2, "%s", s);
	free(s);
	s = section(html, "llm");
	cr_assert_eq(count(s, "<svg"), 0);
	cr_assert(strstr(s, "No data: this run made no LLM calls"), "%s", s);
	cr_assert(strstr(s, "No data: no metric samples of an LLM upstream"), "%s", s);
	free(s);
	/* the rest is drawn from the records themselves */
	s = section(html, "latency");
	cr_assert_eq(count(s, "<svg"), 1);
	free(s);
	s = section(html, "sinks");
	cr_assert_eq(count(s, "<svg"), 1);
	free(s);
	free(html);
	rec_close(env, NULL);
	tdir_remove(&d);
}

Test(report_page, a_resume_gap_takes_no_room)
{
	trail_opts o = { .samples = true, .calls = true, .resume = true };
	tdir d;
	rec_env *env = open_trail(&d);
	uint64_t run = trail(env, &o);
	core_err err = { 0 };
	rpt_data data;
	char *html;

	cr_assert_eq(rpt__load(env, run, 20, &data, &err), 0, "%s", err.msg);
	cr_assert_eq(data.nattempts, 2);
	/* attempt 0: its last record at ~6.4 s; attempt 1: 2 s */
	cr_assert_lt(data.active_s, 10, "an hour's gap left out: %g s", data.active_s);
	cr_assert_geq(data.active_s, 8);
	cr_assert_float_eq(rpt__at(&data, T0 + 3601 * SEC), data.attempts[1].offset_s + 1, 1e-9);
	cr_assert_float_eq(rpt__at(&data, T0 + SEC), 1, 1e-9);
	rpt__data_release(&data);
	html = page(env, run);
	cr_assert_geq(count(html, ">resume 1</text>"), 2, "marked on the charts over time");
	cr_assert(strstr(html, "<th>resume</th>"), "the resumes' table");
	free(html);
	rec_close(env, NULL);
	tdir_remove(&d);
}

Test(report_page, unknown_run_is_an_error)
{
	trail_opts o = { 0 };
	tdir d;
	rec_env *env = open_trail(&d);
	core_buf b = { 0 };
	core_err err = { 0 };

	trail(env, &o);
	cr_assert_eq(rpt_write(env, 42, NULL, &b, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "no run 42"), "%s", err.msg);
	core_buf_release(&b);
	rec_close(env, NULL);
	tdir_remove(&d);
}

Test(report_page, an_older_trail_finds_a_calls_node_through_its_state)
{
	trail_opts o = { .calls = true, .old_calls = true };
	tdir d;
	rec_env *env = open_trail(&d);
	uint64_t run = trail(env, &o);
	char *html = page(env, run), *s = section(html, "latency");

	cr_assert(strstr(s, "classify: LLM calls"), "%s", s);
	cr_assert_null(strstr(s, "source: LLM calls"), "a call is not the source's");
	free(s);
	free(html);
	rec_close(env, NULL);
	tdir_remove(&d);
}

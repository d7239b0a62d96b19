/* test_engine_release.c — release order (engine/pipeline.c, walk.c,
 * release.c): a row's tokens come out in a fixed order (fork branch
 * order, then creation order), rows in seq order, whatever the number of
 * rows in flight; failures stop the run at the same row in every mode;
 * eng__emit writes, counts, diverts and fails as documented. */
#include "test_engine_util.h"

TestSuite(release, .timeout = TIMEOUT);
TestSuite(walk, .timeout = TIMEOUT);

/* ------------------------------------------------ the whole pipeline */

/* Every row is forked into a (expanded into two children) and b; each
 * transform sleeps 0-2 ms at random, so rows finish out of order. */
static const char *forked =
	"landscape: {enabled: false}\n"
	"source: {plugin: csv, on_success: pre_in, options: {rows: 120, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: pre, plugin: passthrough, input: pre_in, on_success: g_in,\n"
	"     options: {sleep_us: 2000}}\n"
	"  - {name: ea, plugin: json_explode, input: a, on_success: out,\n"
	"     options: {key: br, value: a, expand: 2, sleep_us: 2000}}\n"
	"  - {name: tb, plugin: passthrough, input: b, on_success: out,\n"
	"     options: {key: br, value: b, sleep_us: 2000}}\n"
	"gates:\n"
	"  - {name: split, input: g_in, condition: 'True', routes: {'true': fork},\n"
	"     fork_to: [a, b]}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

static void run_forked(unsigned n)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n };
	core_settings *s;
	dag_graph *g = eng_graph(forked, &s);
	json_t *rows = tsink_rows("out");
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.rows, 120);
	cr_assert_eq(sum.succeeded, 120);
	cr_assert_eq(sum.in_flight, n);
	cr_assert_leq(sum.peak_in_flight, n, "peak %llu rows in flight > %u",
		      (unsigned long long)sum.peak_in_flight, n);
	cr_assert_eq(sum.outcomes[ENG_COMPLETED], 360);
	/* Rows did finish out of order (else the order checked below would
	 * prove nothing): with random sleeps, some row finished before an
	 * older one in every run seen (peak 1-3 at N = 2, ~100 at N = 64). */
	if (n > 1)
		cr_assert_gt(sum.peak_waiting, 0, "N=%u: no row ever waited", n);
	cr_assert_eq(json_array_size(rows), 360);
	for (long long i = 1; i <= 120; i++) {
		/* a's two children in creation order, then b */
		static const char *const br[] = { "a", "a", "b" };

		for (size_t t = 0; t < 3; t++) {
			const json_t *r = json_array_get(rows, (size_t)(i - 1) * 3 + t);

			cr_assert_eq(row_i(r), i, "token %zu of row %lld has i=%lld (N=%u)",
				     t, i, row_i(r), n);
			cr_assert_str_eq(json_string_value(json_object_get(r, "br")), br[t],
					 "row %lld token %zu (N=%u)", i, t, n);
			if (t < 2)
				cr_assert_eq(json_integer_value(json_object_get(r, "k")),
					     (json_int_t)t);
		}
	}
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(release, fork_and_expand_order_sequential)
{
	run_forked(1);
}

Test(release, fork_and_expand_order_2_in_flight)
{
	run_forked(2);
}

Test(release, fork_and_expand_order_7_in_flight)
{
	run_forked(7);
}

Test(release, fork_and_expand_order_64_in_flight)
{
	run_forked(64);
}

/* Rows routed by on_error and by a gate keep seq order in every sink. */
static const char *routed =
	"landscape: {enabled: false}\n"
	"source: {plugin: csv, on_success: pre_in,\n"
	"         options: {rows: 200, invalid_every: 7, on_validation_failure: quarantine}}\n"
	"transforms:\n"
	"  - {name: pre, plugin: passthrough, input: pre_in, on_success: g_in,\n"
	"     on_error: bad, options: {sleep_us: 2000, fail_mod: 5}}\n"
	"gates:\n"
	"  - {name: parity, input: g_in, condition: \"row['i'] % 2 == 0\",\n"
	"     routes: {'true': even, 'false': odd}}\n"
	"sinks:\n"
	"  even: {plugin: csv, options: {name: even}}\n"
	"  odd: {plugin: csv, options: {name: odd}}\n"
	"  bad: {plugin: csv, options: {name: bad}}\n"
	"  quarantine: {plugin: csv, options: {name: quarantine}}\n";

static void assert_ascending(const char *sink, size_t want)
{
	json_t *rows = tsink_rows(sink);

	cr_assert_eq(json_array_size(rows), want, "sink %s: %zu rows", sink,
		     json_array_size(rows));
	for (size_t k = 1; k < json_array_size(rows); k++)
		cr_assert_lt(row_i(json_array_get(rows, k - 1)),
			     row_i(json_array_get(rows, k)), "sink %s out of order at %zu",
			     sink, k);
}

Test(release, every_sink_sees_seq_order)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 8 };
	core_settings *s;
	dag_graph *g = eng_graph(routed, &s);
	eng_summary sum;
	core_err err = { 0 };
	/* 200 rows: 28 quarantined (i % 7), 40 failing pre (i % 5) of which
	 * 5 are quarantined first (i % 35); the rest by parity. */
	size_t quarantined = 28, bad = 40 - 5, even = 0, odd = 0;

	for (long long i = 1; i <= 200; i++)
		if (i % 7 && i % 5)
			*(i % 2 ? &odd : &even) += 1;
	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	assert_ascending("quarantine", quarantined);
	assert_ascending("bad", bad);
	assert_ascending("even", even);
	assert_ascending("odd", odd);
	cr_assert_eq(sum.quarantined, quarantined);
	cr_assert_eq(sum.failed, bad);
	cr_assert_eq(sum.succeeded, even + odd);
	cr_assert_str_eq(json_string_value(json_object_get(
		json_array_get(tsink_rows("bad"), 0), "_error_node")), "pre");
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

/* A row error with nowhere to go stops the run at that row: every earlier
 * row is written, none after — in every mode. */
static void stops_at_row_40(unsigned n)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: t_in, options: {rows: 100, on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
		"     options: {sleep_us: 1000, fail_mod: 40}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };
	json_t *rows = tsink_rows("out");

	cr_assert_eq(eng_run(g, &o, &sum, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "row 40: transform 't' failed and has no on_error"),
		  "message: %s", err.msg);
	cr_assert_eq(json_array_size(rows), 39, "N=%u: %zu rows written", n,
		     json_array_size(rows));
	for (size_t k = 0; k < 39; k++)
		cr_assert_eq(row_i(json_array_get(rows, k)), (long long)k + 1);
	cr_assert_eq(sum.rows, 39);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(release, failure_stops_at_its_row_sequential)
{
	stops_at_row_40(1);
}

Test(release, failure_stops_at_its_row_pipelined)
{
	stops_at_row_40(8);
}

/* A fatal source error after some rows: those rows are written, then the
 * run fails with the source's message. */
static void source_fails(unsigned n)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: out, options: {rows: 50, fail_at: 31,\n"
		"         on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), CORE_EIO);
	cr_assert(strstr(err.msg, "cannot read row 31"), "message: %s", err.msg);
	cr_assert_eq(json_array_size(tsink_rows("out")), 30);
	cr_assert_eq(sum.rows, 30);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(release, source_error_after_its_rows_sequential)
{
	source_fails(1);
}

Test(release, source_error_after_its_rows_pipelined)
{
	source_fails(4);
}

Test(release, stop_before_start_pulls_nothing)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: out, options: {rows: 50, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 4 };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	atomic_store(&tstop, 1);
	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert(sum.interrupted);
	cr_assert_eq(sum.rows, 0);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(release, settings_decide_rows_in_flight)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"concurrency: {pipelining: {max_rows_in_flight: 3}}\n"
		"source: {plugin: csv, on_success: out, options: {rows: 5, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.in_flight, 3);
	cr_assert_eq(sum.waiting_budget, 64u << 20, "the waiting budget defaults to 64 MiB");
	cr_assert_geq(sum.max_waiting, 3);
	eng_summary_release(&sum);
	o.max_waiting_mib = 2; /* --max-waiting-mib */
	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.waiting_budget, 2u << 20);
	eng_summary_release(&sum);
	o.max_rows_in_flight = 1; /* --sequential wins over the file */
	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.in_flight, 1);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(release, max_completed_waiting_keeps_its_meaning)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"concurrency: {pipelining: {max_rows_in_flight: 3, max_completed_waiting: 7}}\n"
		"source: {plugin: csv, on_success: out, options: {rows: 5, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_waiting_mib = 5 };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.max_waiting, 7, "a count in the file is the bound");
	cr_assert_eq(sum.waiting_budget, 0, "and no byte budget applies");
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

/* A slow row at the head of the line: the rows behind it finish and
 * wait. With a byte budget, what they hold stays within it (plus the
 * last row admitted under it), whatever their count; the rows still
 * reach the sink in order. */
static void run_head_of_line(const char *sink, const char *waiting, eng_summary *sum)
{
	char yaml[1024];
	eng_opts o = { .stop = &tstop };
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	json_t *rows;

	snprintf(yaml, sizeof(yaml),
		 "landscape: {enabled: false}\n"
		 "concurrency: {pipelining: {max_rows_in_flight: 8%s}}\n"
		 "source: {plugin: csv, on_success: t_in, options: {rows: 200, on_validation_failure: discard}}\n"
		 "transforms:\n"
		 "  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
		 "     options: {slow_at: 1, slow_us: 300000, pad: 16000}}\n"
		 "sinks:\n"
		 "  out: {plugin: csv, options: {name: %s}}\n", waiting, sink);
	g = eng_graph(yaml, &s);
	cr_assert_eq(eng_run(g, &o, sum, &err), 0, "%s", err.msg);
	rows = tsink_rows(sink);
	cr_assert_eq(json_array_size(rows), 200);
	for (size_t i = 0; i < 200; i++)
		cr_assert_eq(row_i(json_array_get(rows, i)), (long long)i + 1, "in order");
	dag_free(g);
	core_settings_free(s);
}

Test(release, waiting_budget_bounds_bytes_not_rows, .timeout = 30)
{
	eng_summary sum;

	run_head_of_line("b1", ", max_waiting_mib: 1", &sum);
	cr_assert_eq(sum.waiting_budget, 1u << 20);
	/* 16 KB rows: about 60 fit in 1 MiB; the rows in flight when it
	 * fills (at most N) may finish on top of it. */
	cr_assert_gt(sum.peak_waiting, 16, "more than 2N rows may wait");
	cr_assert_lt(sum.peak_waiting, 100, "but no more than the budget holds");
	cr_assert_leq(sum.peak_waiting_bytes, (1u << 20) + 8 * 20000u,
		      "peak %llu bytes", (unsigned long long)sum.peak_waiting_bytes);
	eng_summary_release(&sum);

	run_head_of_line("b64", "", &sum); /* 64 MiB: the slow row holds nothing back */
	cr_assert_gt(sum.peak_waiting, 150, "peak %llu", (unsigned long long)sum.peak_waiting);
	eng_summary_release(&sum);

	run_head_of_line("c16", ", max_completed_waiting: 16", &sum); /* a count */
	cr_assert_leq(sum.peak_waiting, 16);
	eng_summary_release(&sum);
}

/* ------------------------------------------------ one row's walk */

Test(walk, tokens_in_fork_order_then_creation_order)
{
	tpipe p;
	eng_result res;

	tp_open(&p, forked);
	cr_assert_eq(tp_row(&p, 1, 5, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.seq, 1);
	cr_assert_eq(res.ntokens, 3);
	cr_assert_str_eq(res.tokens[0].branch, "a");
	cr_assert_str_eq(res.tokens[1].branch, "a");
	cr_assert_str_eq(res.tokens[2].branch, "b");
	assert_json(res.tokens[0].data, "{\"i\":5,\"k\":0,\"br\":\"a\"}");
	assert_json(res.tokens[1].data, "{\"i\":5,\"k\":1,\"br\":\"a\"}");
	assert_json(res.tokens[2].data, "{\"i\":5,\"br\":\"b\"}");
	for (size_t t = 0; t < 3; t++) {
		cr_assert_eq(res.tokens[t].to, ENG_TO_SINK);
		cr_assert_eq(res.tokens[t].node, node_id(p.g, "out"));
		cr_assert_eq(res.tokens[t].outcome, ENG_COMPLETED);
		/* pre, the gate, then ea or tb: three steps */
		cr_assert_eq(res.tokens[t].step, 3, "token %zu step %u", t,
			     res.tokens[t].step);
	}
	cr_assert_not(res.failed);
	eng__result_release(&res);
	tp_close(&p);
}

#define ONE_TRANSFORM \
	"landscape: {enabled: false}\n" \
	"source: {plugin: csv, on_success: t_in, options: {on_validation_failure: %s}}\n" \
	"transforms:\n" \
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,%s\n" \
	"     options: {key: seen, value: t, fail_mod: 3}}\n" \
	"sinks:\n" \
	"  out: {plugin: csv, options: {name: out}}\n" \
	"  bad: {plugin: csv, options: {name: bad}}\n"

static void open_one(tpipe *p, const char *on_invalid, const char *on_error)
{
	char yaml[1024];

	snprintf(yaml, sizeof(yaml), ONE_TRANSFORM, on_invalid, on_error);
	tp_open(p, yaml);
}

Test(walk, transform_error_goes_to_on_error_with_the_error)
{
	tpipe p;
	eng_result res;

	open_one(&p, "discard", " on_error: bad,");
	cr_assert_eq(tp_row(&p, 9, 3, &res), 0, "%s", p.err.msg);
	cr_assert(res.failed);
	cr_assert_eq(res.ntokens, 1);
	cr_assert_eq(res.tokens[0].outcome, ENG_ROUTED);
	cr_assert_eq(res.tokens[0].node, node_id(p.g, "bad"));
	cr_assert_str_eq(json_string_value(json_object_get(res.tokens[0].data, "_error_node")), "t");
	cr_assert(strstr(json_string_value(json_object_get(res.tokens[0].data, "_error")),
			 "3 is unwanted"));
	cr_assert(strstr(res.tokens[0].error, "3 is unwanted"));
	cr_assert_null(json_object_get(res.tokens[0].data, "seen"),
		       "the failed transform's output is not used");
	eng__result_release(&res);
	tp_close(&p);
}

Test(walk, transform_error_discarded_is_failed_without_data)
{
	tpipe p;
	eng_result res;

	open_one(&p, "discard", " on_error: discard,");
	cr_assert_eq(tp_row(&p, 2, 6, &res), 0, "%s", p.err.msg);
	cr_assert(res.failed);
	cr_assert_eq(res.ntokens, 1);
	cr_assert_eq(res.tokens[0].to, ENG_TO_DISCARD);
	cr_assert_eq(res.tokens[0].outcome, ENG_FAILED);
	cr_assert_null(res.tokens[0].data);
	eng__result_release(&res);
	tp_close(&p);
}

Test(walk, transform_error_without_on_error_names_row_and_node)
{
	tpipe p;
	eng_result res;

	open_one(&p, "discard", "");
	cr_assert_eq(tp_row(&p, 12, 3, &res), CORE_EDATA);
	cr_assert(res.failed);
	cr_assert_eq(res.ntokens, 0);
	cr_assert(strstr(p.err.msg, "row 12: transform 't' failed and has no on_error"),
		  "%s", p.err.msg);
	eng__result_release(&res);
	tp_close(&p);
}

Test(walk, invalid_source_row_is_quarantined)
{
	tpipe p;
	eng_result res;
	eng_row row = { .seq = 4 };

	open_one(&p, "bad", "");
	row.data = json_pack("{s:s}", "i", "x");
	row.error = strdup("field 'i': not an integer");
	row.where = strdup("line 5");
	memset(&res, 0, sizeof(res));
	cr_assert_eq(eng__process_row(&p.c, &row, &res, &p.err), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1);
	cr_assert_eq(res.tokens[0].outcome, ENG_QUARANTINED);
	cr_assert_eq(res.tokens[0].node, node_id(p.g, "bad"));
	cr_assert_str_eq(res.tokens[0].error, "line 5: field 'i': not an integer");
	cr_assert_str_eq(json_string_value(json_object_get(res.tokens[0].data, "_error_node")),
			 "source");
	cr_assert_eq(ttx_calls, 0, "a quarantined row is not processed");
	eng__row_release(&row);
	eng__result_release(&res);
	tp_close(&p);
}

Test(walk, gate_without_a_route_for_its_key_is_an_error)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: g_in, options: {on_validation_failure: discard}}\n"
		"gates:\n"
		"  - {name: pick, input: g_in, condition: \"row['i'] * 10\",\n"
		"     routes: {'10': out, '20': out}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	tpipe p;
	eng_result res;

	tp_open(&p, yaml);
	cr_assert_eq(tp_row(&p, 1, 2, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1);
	cr_assert_eq(res.tokens[0].outcome, ENG_ROUTED);
	eng__result_release(&res);
	cr_assert_eq(tp_row(&p, 2, 3, &res), CORE_EDATA);
	cr_assert(strstr(p.err.msg, "row 2: gate 'pick': condition gave '30' and there is no route"),
		  "%s", p.err.msg);
	eng__result_release(&res);
	tp_close(&p);
}

Test(walk, resumed_done_row_is_taken_as_it_is)
{
	tpipe p;
	eng_result res = { 0 };
	eng_row row = { .seq = 7 };
	eng_token t = { .token_id = 70, .to = ENG_TO_SINK, .outcome = ENG_COMPLETED };

	open_one(&p, "discard", "");
	row.data = json_pack("{s:i}", "i", 3); /* would fail t */
	row.ready = calloc(1, sizeof(*row.ready));
	t.node = node_id(p.g, "out");
	t.data = json_pack("{s:s}", "from", "checkpoint");
	cr_assert_eq(eng__result_add(row.ready, &t), 0);
	row.ready->seq = 7;
	cr_assert_eq(eng__row_run(&p.c, &row, &res, &p.err), 0);
	cr_assert_null(row.ready, "the row's result is handed over");
	cr_assert_eq(ttx_calls, 0, "a done row is not walked again");
	cr_assert_eq(res.ntokens, 1);
	cr_assert_eq(res.tokens[0].token_id, 70);
	assert_json(res.tokens[0].data, "{\"from\":\"checkpoint\"}");
	eng__row_release(&row);
	eng__result_release(&res);
	tp_close(&p);
}

/* ------------------------------------------------ eng__emit */

#define SINKS_YAML \
	"landscape: {enabled: false}\n" \
	"source: {plugin: csv, on_success: out, options: {on_validation_failure: discard}}\n" \
	"sinks:\n" \
	"  out: {plugin: csv, options: {name: out, fail_mod: %d}%s}\n" \
	"  other: {plugin: csv, options: {name: other}}\n" \
	"  spill: {plugin: csv, options: {name: spill, fail_mod: %d}}\n"

static void open_sinks(tpipe *p, int out_fail, const char *on_write_failure,
		       int spill_fail)
{
	char yaml[1024];

	snprintf(yaml, sizeof(yaml), SINKS_YAML, out_fail, on_write_failure, spill_fail);
	tp_open(p, yaml);
}

/* Adds a token for row {"i": i} going `to` node (a sink, or DAG_NONE for
 * a discard). */
static void add_token(eng_result *res, uint64_t id, int node, long long i,
		      eng_outcome o)
{
	eng_token t = { .token_id = id, .node = node, .outcome = o,
			.to = node >= 0 ? ENG_TO_SINK : ENG_TO_DISCARD };

	if (node >= 0)
		t.data = json_pack("{s:I,s:I}", "i", (json_int_t)i, "token", (json_int_t)id);
	cr_assert_eq(eng__result_add(res, &t), 0);
}

Test(release, writes_tokens_in_result_order_and_counts)
{
	tpipe p;
	eng_result res = { .seq = 3, .retries = 2 };
	int out, other;

	open_sinks(&p, 0, "", 0);
	out = node_id(p.g, "out");
	other = node_id(p.g, "other");
	add_token(&res, 11, out, 1, ENG_COMPLETED);
	add_token(&res, 12, other, 1, ENG_ROUTED);
	add_token(&res, 13, DAG_NONE, 1, ENG_FAILED);
	add_token(&res, 14, out, 1, ENG_ROUTED);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), 0, "%s", p.err.msg);
	assert_json(tsink_rows("out"), "[{\"i\":1,\"token\":11},{\"i\":1,\"token\":14}]");
	assert_json(tsink_rows("other"), "[{\"i\":1,\"token\":12}]");
	cr_assert_eq(p.sum.per_sink[out], 2);
	cr_assert_eq(p.sum.per_sink[other], 1);
	cr_assert_eq(p.sum.outcomes[ENG_COMPLETED], 1);
	cr_assert_eq(p.sum.outcomes[ENG_ROUTED], 2);
	cr_assert_eq(p.sum.outcomes[ENG_FAILED], 1);
	cr_assert_eq(p.sum.discarded, 1);
	cr_assert_eq(p.sum.succeeded, 1, "a row counts once, not per token");
	cr_assert_eq(p.sum.retries, 2);
	eng__result_release(&res);
	tp_close(&p);
}

Test(release, row_counts_failed_quarantined_and_not_batches)
{
	tpipe p;
	eng_result failed = { .seq = 1, .failed = true };
	eng_result quarantined = { .seq = 2 };
	eng_result batch = { .seq = 2, .batch = true };
	int out;

	open_sinks(&p, 0, "", 0);
	out = node_id(p.g, "out");
	add_token(&failed, 1, out, 1, ENG_ROUTED);
	add_token(&quarantined, 2, out, 2, ENG_QUARANTINED);
	add_token(&batch, 3, out, 3, ENG_COMPLETED);
	cr_assert_eq(eng__emit(&p.c, &failed, &p.sum, &p.err), 0);
	cr_assert_eq(eng__emit(&p.c, &quarantined, &p.sum, &p.err), 0);
	cr_assert_eq(eng__emit(&p.c, &batch, &p.sum, &p.err), 0);
	cr_assert_eq(p.sum.failed, 1);
	cr_assert_eq(p.sum.quarantined, 1);
	cr_assert_eq(p.sum.succeeded, 0, "batch outputs are not rows");
	cr_assert_eq(p.sum.per_sink[out], 3);
	eng__result_release(&failed);
	eng__result_release(&quarantined);
	eng__result_release(&batch);
	tp_close(&p);
}

Test(release, failed_write_is_diverted_to_on_write_failure)
{
	tpipe p;
	eng_result res = { .seq = 4 };
	int out, spill;

	open_sinks(&p, 2, ", on_write_failure: spill", 0);
	out = node_id(p.g, "out");
	spill = node_id(p.g, "spill");
	add_token(&res, 1, out, 1, ENG_COMPLETED);
	add_token(&res, 2, out, 2, ENG_COMPLETED); /* fails: 2 % 2 */
	add_token(&res, 3, out, 3, ENG_COMPLETED);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), 0, "%s", p.err.msg);
	assert_json(tsink_rows("out"), "[{\"i\":1,\"token\":1},{\"i\":3,\"token\":3}]");
	assert_json(tsink_rows("spill"), "[{\"i\":2,\"token\":2}]");
	cr_assert_eq(res.tokens[1].outcome, ENG_DIVERTED);
	cr_assert_eq(res.tokens[1].node, spill);
	cr_assert(strstr(res.tokens[1].error, "row 4: sink 'out': no space left"),
		  "%s", res.tokens[1].error);
	cr_assert_null(json_object_get(json_array_get(tsink_rows("spill"), 0), "_error"),
		       "the diverted row is written unchanged");
	cr_assert_eq(p.sum.diverted, 1);
	cr_assert_eq(p.sum.per_sink[out], 2);
	cr_assert_eq(p.sum.per_sink[spill], 1);
	eng__result_release(&res);
	tp_close(&p);
}

Test(release, failed_write_with_discard_is_diverted_and_discarded)
{
	tpipe p;
	eng_result res = { .seq = 4 };

	open_sinks(&p, 2, ", on_write_failure: discard", 0);
	add_token(&res, 2, node_id(p.g, "out"), 2, ENG_COMPLETED);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), 0, "%s", p.err.msg);
	cr_assert_eq(res.tokens[0].outcome, ENG_DIVERTED);
	cr_assert_eq(res.tokens[0].to, ENG_TO_DISCARD);
	cr_assert_eq(p.sum.diverted, 1);
	cr_assert_eq(p.sum.discarded, 1);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0);
	eng__result_release(&res);
	tp_close(&p);
}

Test(release, failed_write_without_on_write_failure_stops)
{
	tpipe p;
	eng_result res = { .seq = 7 };

	open_sinks(&p, 2, "", 0);
	add_token(&res, 1, node_id(p.g, "out"), 2, ENG_COMPLETED);
	add_token(&res, 2, node_id(p.g, "out"), 3, ENG_COMPLETED);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), CORE_EIO);
	cr_assert(strstr(p.err.msg, "row 7: sink 'out': no space left on device"),
		  "%s", p.err.msg);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0,
		     "no token after the failed one is written");
	eng__result_release(&res);
	tp_close(&p);
}

Test(release, failed_divert_names_both_sinks)
{
	tpipe p;
	eng_result res = { .seq = 8 };

	open_sinks(&p, 2, ", on_write_failure: spill", 2);
	add_token(&res, 1, node_id(p.g, "out"), 4, ENG_COMPLETED);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), CORE_EIO);
	cr_assert(strstr(p.err.msg, "row 8: on_write_failure sink 'spill' failed too"),
		  "%s", p.err.msg);
	eng__result_release(&res);
	tp_close(&p);
}

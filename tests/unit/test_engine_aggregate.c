/* test_engine_aggregate.c — engine/aggregate.c: buffers filled in release
 * order, count / condition / timeout triggers, the end-of-source flush
 * (also through a chain of aggregations), transform vs passthrough
 * outputs, failed batches (on_error sink, discard, none), the checkpoint
 * view of a buffer and putting members back on resume; and, through
 * eng_run, count batches that are the same for any rows in flight. */
#include "test_engine_util.h"

TestSuite(aggregate, .timeout = TIMEOUT);

#define AGG_YAML \
	"landscape: {enabled: false}\n" \
	"source: {plugin: csv, on_success: stats_in, options: {on_validation_failure: discard}}\n" \
	"aggregations:\n" \
	"  - {name: stats, plugin: batch_stats, input: stats_in, on_success: out,\n" \
	"     trigger: {%s}, output_mode: %s%s, options: {%s}}\n" \
	"sinks:\n" \
	"  out: {plugin: csv, options: {name: out}}\n" \
	"  bad: {plugin: csv, options: {name: bad}}\n"

static int stats;

static void open_agg(tpipe *p, const char *trigger, const char *mode,
		     const char *on_error, const char *options)
{
	char yaml[2048];

	snprintf(yaml, sizeof(yaml), AGG_YAML, trigger, mode, on_error, options);
	tp_open(p, yaml);
	stats = node_id(p->g, "stats");
}

/* Releases row seq {"i": seq}'s token into the aggregation. */
static int accept(tpipe *p, uint64_t seq)
{
	eng_token t = { .token_id = 100 + seq, .to = ENG_TO_AGG, .node = stats,
			.outcome = ENG_COMPLETED, .step = 1 };
	int rc;

	t.data = json_pack("{s:I}", "i", (json_int_t)seq);
	rc = eng__agg_accept(&p->c, seq, &t, &p->sum, &p->err);
	json_decref(t.data); /* NULL when the buffer took it */
	free(t.error);
	return rc;
}

static size_t buffered(tpipe *p)
{
	const eng_token *members;
	const uint64_t *seqs;
	uint64_t age;
	size_t n;

	cr_assert_eq(eng__aggs_count(&p->c), 1);
	cr_assert_eq(eng__aggs_get(&p->c, 0, &members, &seqs, &n, &age)->id, stats);
	return n;
}

Test(aggregate, count_trigger_flushes_at_the_count)
{
	tpipe p;

	open_agg(&p, "count: 3", "transform", "", "");
	cr_assert_eq(accept(&p, 1), 0, "%s", p.err.msg);
	cr_assert_eq(accept(&p, 2), 0);
	cr_assert_null(tagg_batches, "no flush before the count");
	cr_assert_eq(buffered(&p), 2);
	cr_assert_eq(accept(&p, 3), 0, "%s", p.err.msg);
	assert_json(tagg_batches, "[[1,2,3]]");
	assert_json(tsink_rows("out"), "[{\"n\":3,\"first\":1,\"last\":3}]");
	cr_assert_eq(buffered(&p), 0);
	cr_assert_eq(p.sum.batches, 1);
	cr_assert_eq(p.sum.outcomes[ENG_CONSUMED_IN_BATCH], 3);
	cr_assert_eq(p.sum.outcomes[ENG_COMPLETED], 1, "the batch's output");
	cr_assert_eq(p.sum.succeeded, 0, "batch outputs are not source rows");
	cr_assert_eq(accept(&p, 4), 0);
	cr_assert_eq(buffered(&p), 1, "the next batch starts");
	tp_close(&p);
}

Test(aggregate, end_of_source_flushes_what_is_left)
{
	tpipe p;

	open_agg(&p, "count: 3", "transform", "", "");
	for (uint64_t s = 1; s <= 5; s++)
		cr_assert_eq(accept(&p, s), 0);
	cr_assert_eq(eng__aggs_tick(&p.c, core_now_mono_ns(), 5, false, &p.sum, &p.err), 0);
	/* no timeout trigger: a tick alone flushes nothing */
	assert_json(tagg_batches, "[[1,2,3]]");
	cr_assert_eq(eng__aggs_tick(&p.c, core_now_mono_ns(), 5, true, &p.sum, &p.err), 0);
	assert_json(tagg_batches, "[[1,2,3],[4,5]]");
	cr_assert_eq(buffered(&p), 0);
	cr_assert_eq(eng__aggs_tick(&p.c, core_now_mono_ns(), 5, true, &p.sum, &p.err), 0);
	cr_assert_eq(json_array_size(tagg_batches), 2, "an empty buffer is not flushed");
	tp_close(&p);
}

Test(aggregate, passthrough_enriches_each_member)
{
	tpipe p;

	open_agg(&p, "count: 2", "passthrough", "", "");
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(accept(&p, 2), 0, "%s", p.err.msg);
	assert_json(tsink_rows("out"), "[{\"i\":1,\"n\":2},{\"i\":2,\"n\":2}]");
	cr_assert_eq(p.sum.outcomes[ENG_CONSUMED_IN_BATCH], 0,
		     "passthrough members go on, they are not consumed");
	cr_assert_eq(p.sum.outcomes[ENG_COMPLETED], 2);
	tp_close(&p);
}

Test(aggregate, passthrough_with_a_row_missing_is_a_batch_error)
{
	tpipe p;

	open_agg(&p, "count: 2", "passthrough", "", "short: true");
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(accept(&p, 2), CORE_EDATA);
	cr_assert(strstr(p.err.msg, "aggregation 'stats' (batch flushed at row 2) failed "
			 "and has no on_error"), "%s", p.err.msg);
	cr_assert(strstr(p.err.msg, "passthrough gave 1 rows for 2 members"), "%s", p.err.msg);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0);
	tp_close(&p);
}

Test(aggregate, failed_batch_goes_to_on_error_with_the_error)
{
	tpipe p;
	json_t *bad;

	open_agg(&p, "count: 2", "transform", ", on_error: bad", "fail: true");
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(accept(&p, 2), 0, "%s", p.err.msg);
	bad = tsink_rows("bad");
	cr_assert_eq(json_array_size(bad), 2, "every member");
	cr_assert_eq(row_i(json_array_get(bad, 1)), 2);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(bad, 0), "_error_node")),
			 "stats");
	cr_assert(strstr(json_string_value(json_object_get(json_array_get(bad, 0), "_error")),
			 "rejected (test)"));
	cr_assert_eq(p.sum.outcomes[ENG_ROUTED], 2);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0);
	cr_assert_eq(buffered(&p), 0);
	tp_close(&p);
}

Test(aggregate, failed_batch_discarded_fails_its_members)
{
	tpipe p;

	open_agg(&p, "count: 2", "transform", ", on_error: discard", "fail: true");
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(accept(&p, 2), 0, "%s", p.err.msg);
	cr_assert_eq(p.sum.outcomes[ENG_FAILED], 2);
	cr_assert_eq(p.sum.discarded, 2);
	cr_assert_eq(json_array_size(tsink_rows("bad")), 0);
	tp_close(&p);
}

Test(aggregate, failed_batch_without_on_error_stops)
{
	tpipe p;

	open_agg(&p, "count: 2", "transform", "", "fail: true");
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(accept(&p, 2), CORE_EDATA);
	cr_assert(strstr(p.err.msg, "aggregation 'stats' (batch flushed at row 2) failed "
			 "and has no on_error: member 0: field 'i': rejected"), "%s", p.err.msg);
	tp_close(&p);
}

Test(aggregate, condition_trigger_sees_the_batch_count)
{
	tpipe p;

	open_agg(&p, "condition: \"row['batch_count'] >= 2\"", "transform", "", "");
	cr_assert_eq(accept(&p, 1), 0, "%s", p.err.msg);
	cr_assert_null(tagg_batches);
	cr_assert_eq(accept(&p, 2), 0, "%s", p.err.msg);
	assert_json(tagg_batches, "[[1,2]]");
	tp_close(&p);
}

Test(aggregate, condition_error_names_the_aggregation)
{
	tpipe p;

	open_agg(&p, "condition: \"row['nope'] > 1\"", "transform", "", "");
	cr_assert_eq(accept(&p, 1), CORE_EEXPR);
	cr_assert(strstr(p.err.msg, "aggregation 'stats': trigger condition"), "%s", p.err.msg);
	tp_close(&p);
}

Test(aggregate, timeout_fires_at_its_deadline)
{
	tpipe p;
	uint64_t before, dl;

	open_agg(&p, "timeout_seconds: 0.5", "transform", "", "");
	cr_assert(eng__aggs_timed(&p.c));
	cr_assert_eq(eng__aggs_deadline(&p.c), 0, "nothing buffered: no deadline");
	before = core_now_mono_ns();
	cr_assert_eq(accept(&p, 1), 0);
	dl = eng__aggs_deadline(&p.c);
	cr_assert_geq(dl, before + 500000000ull);
	cr_assert_leq(dl, core_now_mono_ns() + 500000000ull);
	cr_assert_eq(eng__aggs_tick(&p.c, dl - 1, 1, false, &p.sum, &p.err), 0);
	cr_assert_null(tagg_batches, "not before the deadline");
	cr_assert_eq(eng__aggs_tick(&p.c, dl, 1, false, &p.sum, &p.err), 0);
	assert_json(tagg_batches, "[[1]]");
	cr_assert_eq(eng__aggs_deadline(&p.c), 0);
	tp_close(&p);
}

Test(aggregate, untimed_aggregation_has_no_deadline)
{
	tpipe p;

	open_agg(&p, "count: 5", "transform", "", "");
	cr_assert_not(eng__aggs_timed(&p.c));
	cr_assert_eq(accept(&p, 1), 0);
	cr_assert_eq(eng__aggs_deadline(&p.c), 0);
	tp_close(&p);
}

Test(aggregate, checkpoint_view_and_put_back)
{
	tpipe p;
	eng_token t = { .token_id = 7, .to = ENG_TO_AGG, .outcome = ENG_COMPLETED };
	const eng_token *members;
	const uint64_t *seqs;
	uint64_t age;
	size_t n;

	open_agg(&p, "count: 3", "transform", "", "");
	t.node = stats;
	for (uint64_t s = 4; s <= 5; s++) {
		t.data = json_pack("{s:I}", "i", (json_int_t)s);
		cr_assert_eq(eng__aggs_put_back(&p.c, s, &t, 5000000000ull, &p.err), 0);
		cr_assert_null(t.data, "the buffer owns it");
	}
	cr_assert_null(tagg_batches, "putting back fires no trigger");
	eng__aggs_get(&p.c, 0, &members, &seqs, &n, &age);
	cr_assert_eq(n, 2);
	cr_assert_eq(seqs[0], 4);
	cr_assert_eq(seqs[1], 5);
	cr_assert_eq(row_i(members[1].data), 5);
	cr_assert_geq(age, 5000000000ull, "the age goes on from the checkpoint's");
	cr_assert_eq(accept(&p, 6), 0, "%s", p.err.msg);
	assert_json(tagg_batches, "[[4,5,6]]");
	tp_close(&p);
}

Test(aggregate, unknown_node_is_refused)
{
	tpipe p;
	eng_token t = { .token_id = 7, .to = ENG_TO_AGG, .node = 0 };

	open_agg(&p, "count: 3", "transform", "", "");
	cr_assert_eq(eng__aggs_put_back(&p.c, 1, &t, 0, &p.err), CORE_EDATA);
	cr_assert(strstr(p.err.msg, "the checkpoint names aggregation node 0, which the "
			 "pipeline lacks"), "%s", p.err.msg);
	cr_assert_eq(eng__agg_accept(&p.c, 1, &t, &p.sum, &p.err), CORE_EINTERNAL);
	tp_close(&p);
}

/* ------------------------------------------------------------ runs */

/* Count batches hold the same rows for any number of rows in flight. */
static void batches_for(unsigned n)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: t_in,\n"
		"         options: {rows: 30, on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: stats_in,\n"
		"     options: {sleep_us: 2000}}\n"
		"aggregations:\n"
		"  - {name: stats, plugin: batch_stats, input: stats_in, on_success: out,\n"
		"     trigger: {count: 4}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	assert_json(tagg_batches, "[[1,2,3,4],[5,6,7,8],[9,10,11,12],[13,14,15,16],"
		    "[17,18,19,20],[21,22,23,24],[25,26,27,28],[29,30]]");
	cr_assert_eq(json_array_size(tsink_rows("out")), 8);
	cr_assert_eq(sum.batches, 8);
	cr_assert_eq(sum.succeeded, 30);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

Test(aggregate, count_batches_in_seq_order_sequential)
{
	batches_for(1);
}

Test(aggregate, count_batches_in_seq_order_pipelined)
{
	batches_for(8);
}

Test(aggregate, end_of_source_flush_feeds_the_next_aggregation)
{
	static const char *yaml =
		"landscape: {enabled: false}\n"
		"source: {plugin: csv, on_success: first_in,\n"
		"         options: {rows: 5, on_validation_failure: discard}}\n"
		"aggregations:\n"
		"  - {name: first, plugin: batch_stats, input: first_in, on_success: second_in,\n"
		"     trigger: {count: 100}}\n"
		"  - {name: second, plugin: batch_stats, input: second_in, on_success: out,\n"
		"     trigger: {count: 100}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 1 };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	core_err err = { 0 };

	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	/* the first's output row has no "i" (0) */
	assert_json(tagg_batches, "[[1,2,3,4,5],[0]]");
	assert_json(tsink_rows("out"), "[{\"n\":1,\"first\":0,\"last\":0}]");
	cr_assert_eq(sum.batches, 2);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
}

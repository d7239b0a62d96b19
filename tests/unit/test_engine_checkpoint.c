/* test_engine_checkpoint.c — engine/checkpoint.c: when a checkpoint is
 * due (every_row, every_n, aggregation_only, put off while the last one
 * is queued) and what eng__ckpt_write builds (read back with
 * rec_ckpt_load); and the checkpoints a run takes (start, end,
 * interrupt, refused for a sink that cannot report its position). */
#include "test_engine_util.h"

TestSuite(ckpt_due, .timeout = TIMEOUT);
TestSuite(ckpt_write, .timeout = TIMEOUT);
TestSuite(ckpt_run, .timeout = TIMEOUT);

/* ------------------------------------------------------------ due */

static const char *plain =
	"landscape: {enabled: false}\n"
	"source: {plugin: csv, on_success: out, options: {on_validation_failure: discard}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

Test(ckpt_due, never_without_checkpoints)
{
	tpipe p;

	tp_open(&p, plain);
	cr_assert_null(p.c.ckpt);
	cr_assert_not(eng__ckpt_due(&p.c, 100, &p.sum));
	tp_close(&p);
}

Test(ckpt_due, every_row_after_any_new_release)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_ROW, .last = 5 };

	tp_open(&p, plain);
	p.c.ckpt = &k;
	cr_assert_not(eng__ckpt_due(&p.c, 5, &p.sum), "nothing released since");
	cr_assert(eng__ckpt_due(&p.c, 6, &p.sum));
	cr_assert(eng__ckpt_due(&p.c, 60, &p.sum));
	cr_assert_not(eng__ckpt_due(&p.c, 4, &p.sum), "behind the last one");
	tp_close(&p);
}

Test(ckpt_due, every_n_after_the_interval)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_N, .interval = 3, .last = 5 };

	tp_open(&p, plain);
	p.c.ckpt = &k;
	cr_assert_not(eng__ckpt_due(&p.c, 6, &p.sum));
	cr_assert_not(eng__ckpt_due(&p.c, 7, &p.sum));
	cr_assert(eng__ckpt_due(&p.c, 8, &p.sum));
	cr_assert(eng__ckpt_due(&p.c, 20, &p.sum));
	k.interval = 1;
	cr_assert_not(eng__ckpt_due(&p.c, 5, &p.sum));
	cr_assert(eng__ckpt_due(&p.c, 6, &p.sum));
	tp_close(&p);
}

/* checkpoint.aggregation_boundaries (ELSPETH's, default true): every_n
 * also checkpoints after a batch flush, once a row was released since. */
Test(ckpt_due, every_n_also_at_aggregation_boundaries)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_N, .interval = 100, .last = 5,
		       .batches = 2, .boundaries = true };

	tp_open(&p, plain);
	p.c.ckpt = &k;
	p.sum.batches = 2;
	cr_assert_not(eng__ckpt_due(&p.c, 9, &p.sum), "no batch flushed since");
	p.sum.batches = 3;
	cr_assert_not(eng__ckpt_due(&p.c, 5, &p.sum), "nothing released since");
	cr_assert(eng__ckpt_due(&p.c, 6, &p.sum));
	k.boundaries = false;
	cr_assert_not(eng__ckpt_due(&p.c, 6, &p.sum), "boundaries off: the interval only");
	tp_close(&p);
}

Test(ckpt_due, aggregation_only_after_a_batch)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_AGGREGATION_ONLY, .last = 5,
		       .batches = 2 };

	tp_open(&p, plain);
	p.c.ckpt = &k;
	p.sum.batches = 2;
	cr_assert_not(eng__ckpt_due(&p.c, 50, &p.sum), "rows alone do not make it due");
	p.sum.batches = 3;
	cr_assert(eng__ckpt_due(&p.c, 5, &p.sum));
	cr_assert(eng__ckpt_due(&p.c, 9, &p.sum));
	tp_close(&p);
}

Test(ckpt_due, put_off_while_the_last_one_is_queued)
{
	etmp d;
	rec_env *rec;
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_ROW, .last = 5 };

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	tp_open_rec(&p, plain, rec);
	cr_assert_eq(rec_flush(rec, &p.err), 0);
	p.c.ckpt = &k;
	cr_assert(eng__ckpt_due(&p.c, 6, &p.sum), "none written yet: not put off");
	k.written = 1;
	k.gen = rec_queue_gen(rec);
	cr_assert_not(eng__ckpt_due(&p.c, 6, &p.sum),
		      "the last one is still in the queue of generation %llu",
		      (unsigned long long)k.gen);
	k.gen = rec_queue_gen(rec) - 1; /* the writer took its queue */
	cr_assert(eng__ckpt_due(&p.c, 6, &p.sum));
	tp_close(&p);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------------------ write */

Test(ckpt_write, nothing_without_checkpoints_or_audit)
{
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_ROW };
	eng_ckpt_at at = { .reason = "interval", .released = 4, .frontier = 4 };

	tp_open(&p, plain);
	cr_assert_eq(eng__ckpt_write(&p.c, &at, &p.sum, &p.err), 0);
	p.c.ckpt = &k; /* on, but audit is off */
	cr_assert_eq(eng__ckpt_write(&p.c, &at, &p.sum, &p.err), 0);
	cr_assert_eq(k.written, 0);
	cr_assert_eq(k.last, 0);
	tp_close(&p);
}

/* Odd rows go through t to out; even rows into a count-10 aggregation. */
static const char *mixed =
	"source: {plugin: csv, on_success: g_in, options: {on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {key: seen, value: t}}\n"
	"gates:\n"
	"  - {name: parity, input: g_in, condition: \"row['i'] % 2 == 0\",\n"
	"     routes: {'true': stats_in, 'false': t_in}}\n"
	"aggregations:\n"
	"  - {name: stats, plugin: batch_stats, input: stats_in, on_success: out,\n"
	"     trigger: {count: 10}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* Processes row seq {"i": i} (recorded) into res. */
static void process(tpipe *p, eng_row *row, uint64_t seq, long long i,
		    eng_result *res)
{
	memset(row, 0, sizeof(*row));
	memset(res, 0, sizeof(*res));
	row->seq = seq;
	row->data = json_pack("{s:I}", "i", (json_int_t)i);
	row->pos = (plg_source_pos){ seq, seq + 1 };
	row->has_pos = true;
	cr_assert_eq(eng__process_row(&p->c, row, res, &p->err), 0, "%s", p->err.msg);
}

static void release(tpipe *p, uint64_t seq, long long i)
{
	eng_row row;
	eng_result res;

	process(p, &row, seq, i, &res);
	p->sum.rows++;
	cr_assert_eq(eng__emit(&p->c, &res, &p->sum, &p->err), 0, "%s", p->err.msg);
	eng__result_release(&res);
	eng__row_release(&row);
}

Test(ckpt_write, holds_rows_sinks_buffers_and_totals)
{
	etmp d;
	rec_env *rec;
	tpipe p;
	eng_ckpt k = { .frequency = CORE_CKPT_EVERY_ROW, .attempt = 0 };
	eng_row done, running = { .seq = 5 };
	eng_result done_res;
	eng_ckpt_row rows[2];
	eng_ckpt_at at = { .reason = "interval", .released = 3, .frontier = 5,
			   .pos = { 5, 6 }, .has_pos = true, .rows = rows, .nrows = 2 };
	Elspeth__Checkpoint *ck;
	uint64_t tok;
	int out;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	tp_open_rec(&p, mixed, rec);
	p.c.ckpt = &k;
	out = node_id(p.g, "out");
	release(&p, 1, 1); /* out */
	release(&p, 2, 2); /* buffered */
	release(&p, 3, 4); /* buffered */
	process(&p, &done, 4, 5, &done_res); /* done, not released */
	running.data = json_pack("{s:i}", "i", 7);
	cr_assert_eq(eng__audit_row(&p.audit, &running, &tok, &p.err), 0);
	rows[0] = (eng_ckpt_row){ .row = &done, .res = &done_res };
	rows[1] = (eng_ckpt_row){ .row = &running, .before = { 4, 5 }, .has_before = true };

	cr_assert_eq(eng__ckpt_write(&p.c, &at, &p.sum, &p.err), 0, "%s", p.err.msg);
	cr_assert_eq(k.written, 1);
	cr_assert_eq(k.last, 3);
	cr_assert_not(eng__ckpt_due(&p.c, 3, &p.sum), "just taken");

	ck = ckpt_of(rec, p.audit.run_id);
	cr_assert_eq(ck->format_version, REC_CKPT_FORMAT_VERSION);
	cr_assert_eq(ck->run_id, p.audit.run_id);
	cr_assert_str_eq(ck->reason, "interval");
	cr_assert_eq(ck->released_through_seq, 3);
	cr_assert_eq(ck->pulled_through_seq, 5);
	cr_assert(ck->has_source_pos);
	cr_assert_eq(ck->source_offset, 5);
	cr_assert_eq(ck->source_line, 6);
	cr_assert_not(ck->source_done);
	cr_assert_str_eq(ck->topology_hash, p.audit.topology_hash);
	cr_assert_str_eq(ck->config_hash, p.s->config_hash);
	cr_assert_eq(ck->next_token_id, atomic_load(&p.audit.next_token));
	cr_assert_eq(ck->next_batch_id, 1, "no batch flushed");

	/* the done row: its final tokens with their data as JSON text */
	cr_assert_eq(ck->n_rows, 2);
	cr_assert_eq(ck->rows[0]->seq, 4);
	cr_assert(ck->rows[0]->done);
	cr_assert_str_eq(ck->rows[0]->payload_ref, done.hash);
	cr_assert(ck->rows[0]->has_after_pos);
	cr_assert_eq(ck->rows[0]->after_offset, 4);
	cr_assert_eq(ck->rows[0]->n_tokens, 1);
	cr_assert_eq(ck->rows[0]->tokens[0]->token_id, done_res.tokens[0].token_id);
	cr_assert_eq(ck->rows[0]->tokens[0]->node_id, out);
	cr_assert_eq(ck->rows[0]->tokens[0]->to, ENG_TO_SINK);
	cr_assert_str_eq(ck->rows[0]->tokens[0]->outcome, "COMPLETED");
	cr_assert_str_eq(ck->rows[0]->tokens[0]->data_json, "{\"i\":5,\"seen\":\"t\"}");
	cr_assert_str_eq(ck->rows[0]->tokens[0]->data_ref, done_res.tokens[0].hash);
	/* the running row: by payload hash and the source position before it */
	cr_assert_eq(ck->rows[1]->seq, 5);
	cr_assert_not(ck->rows[1]->done);
	cr_assert_eq(ck->rows[1]->n_tokens, 0);
	cr_assert_str_eq(ck->rows[1]->payload_ref, running.hash);
	cr_assert_neq(running.hash[0], '\0');
	cr_assert(ck->rows[1]->has_source_pos);
	cr_assert_eq(ck->rows[1]->source_offset, 4);
	cr_assert_eq(ck->rows[1]->source_line, 5);

	/* the aggregation's buffer, members in seq order */
	cr_assert_eq(ck->n_aggregations, 1);
	cr_assert_str_eq(ck->aggregations[0]->name, "stats");
	cr_assert_eq(ck->aggregations[0]->node_id, (uint32_t)node_id(p.g, "stats"));
	cr_assert_eq(ck->aggregations[0]->n_members, 2);
	cr_assert_eq(ck->aggregations[0]->members[0]->seq, 2);
	cr_assert_eq(ck->aggregations[0]->members[1]->seq, 3);
	cr_assert_str_eq(ck->aggregations[0]->members[1]->data_json, "{\"i\":4}");

	/* the sink: what it holds now */
	cr_assert_eq(ck->n_sinks, 1);
	cr_assert_str_eq(ck->sinks[0]->name, "out");
	cr_assert_eq(ck->sinks[0]->rows, 1);
	cr_assert_eq(ck->sinks[0]->position, strlen("{\"i\":1,\"seen\":\"t\"}\n"));

	/* the totals */
	cr_assert_not_null(ck->totals);
	cr_assert_eq(ck->totals->rows, 3);
	cr_assert_eq(ck->totals->succeeded, 3);
	cr_assert_eq(ck->totals->n_per_sink, p.g->nnodes);
	cr_assert_eq(ck->totals->per_sink[out], 1);
	cr_assert_eq(ck->totals->n_outcomes, ENG_OUTCOME_LAST);
	cr_assert_eq(ck->totals->outcomes[ENG_COMPLETED], 1,
		     "buffered tokens are counted when their batch flushes");

	rec_ckpt_free(ck);
	eng__result_release(&done_res);
	eng__row_release(&done);
	eng__row_release(&running);
	tp_close(&p);
	rec_done(rec);
	etmp_remove(&d);
}

/* ------------------------------------------------------------ runs */

static eng_summary run_audited(const char *yaml, rec_env *rec, unsigned n,
			       int want_rc, core_err *err)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = n, .rec = rec,
		       .settings_path = "t.yaml" };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	eng_summary sum;
	int rc = eng_run(g, &o, &sum, err);

	cr_assert_eq(rc, want_rc, "rc %d: %s", rc, err->msg);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	return sum;
}

/* With no batch, aggregation_only takes only the start and end ones; the
 * end one has released everything and says the source ended. */
static void start_and_end_only(unsigned n)
{
	static const char *yaml =
		"checkpoint: {frequency: aggregation_only}\n"
		"source: {plugin: csv, on_success: out,\n"
		"         options: {rows: 20, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	etmp d;
	rec_env *rec;
	core_err err = { 0 };
	eng_summary sum;
	Elspeth__Checkpoint *ck;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_audited(yaml, rec, n, 0, &err);
	cr_assert_eq(sum.checkpoints, 2, "%llu checkpoints", (unsigned long long)sum.checkpoints);
	ck = ckpt_of(rec, sum.run_id);
	cr_assert_str_eq(ck->reason, "end");
	cr_assert_eq(ck->released_through_seq, 20);
	cr_assert_eq(ck->pulled_through_seq, 20);
	cr_assert_eq(ck->n_rows, 0);
	cr_assert_eq(ck->totals->rows, 20);
	cr_assert_eq(ck->sinks[0]->rows, 20);
	cr_assert(ck->source_done, "N=%u: the end checkpoint says the source "
		  "has not ended", n);
	rec_ckpt_free(ck);
	rec_done(rec);
	etmp_remove(&d);
}

Test(ckpt_run, start_and_end_only_without_batches_pipelined)
{
	start_and_end_only(4);
}

/* A bug these tests found (fixed): sequential mode never sets the pipeline's source_done
 * (engine/pipeline.c sequential() leaves its loop on prc == 0 without
 * it), so its end checkpoint says source_done: false where the pipelined
 * engine's says true, and `elspeth resume` (dry run) of such a run does
 * not say "(it had ended)". */
Test(ckpt_run, start_and_end_only_without_batches_sequential)
{
	start_and_end_only(1);
}

static void every_n(unsigned n)
{
	static const char *yaml =
		"checkpoint: {frequency: every_n, checkpoint_interval: 5}\n"
		"source: {plugin: csv, on_success: t_in,\n"
		"         options: {rows: 40, on_validation_failure: discard}}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
		"     options: {sleep_us: 300}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	etmp d;
	rec_env *rec;
	core_err err = { 0 };
	eng_summary sum;
	Elspeth__Checkpoint *ck;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_audited(yaml, rec, n, 0, &err);
	/* start + end + at most one per 5 rows (fewer when put off) */
	cr_assert_geq(sum.checkpoints, 2);
	cr_assert_leq(sum.checkpoints, 2 + 40 / 5, "%llu checkpoints for 40 rows",
		      (unsigned long long)sum.checkpoints);
	ck = ckpt_of(rec, sum.run_id);
	cr_assert_str_eq(ck->reason, "end");
	cr_assert_eq(ck->released_through_seq, 40);
	rec_ckpt_free(ck);
	rec_done(rec);
	etmp_remove(&d);
}

Test(ckpt_run, every_n_at_most_once_per_interval_sequential)
{
	every_n(1);
}

Test(ckpt_run, every_n_at_most_once_per_interval_pipelined)
{
	every_n(4);
}

Test(ckpt_run, none_when_disabled)
{
	static const char *yaml =
		"checkpoint: {enabled: false}\n"
		"source: {plugin: csv, on_success: out,\n"
		"         options: {rows: 3, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	etmp d;
	rec_env *rec;
	core_err err = { 0 };
	eng_summary sum;
	Elspeth__Checkpoint *ck = NULL;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_audited(yaml, rec, 1, 0, &err);
	cr_assert_eq(sum.checkpoints, 0);
	cr_assert_eq(rec_ckpt_load(rec, sum.run_id, &ck, &err), REC_NOTFOUND);
	rec_done(rec);
	etmp_remove(&d);
}

static const char *stopping =
	"retry: {max_attempts: 3, initial_delay_seconds: 0}\n"
	"source: {plugin: csv, on_success: t_in,\n"
	"         options: {rows: 30, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {stop_at: 4, sleep_us: 500}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

Test(ckpt_run, interrupt_lists_the_row_cut_short_as_running)
{
	etmp d;
	rec_env *rec;
	core_err err = { 0 };
	eng_summary sum;
	Elspeth__Checkpoint *ck;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_audited(stopping, rec, 1, 0, &err);
	cr_assert(sum.interrupted);
	cr_assert_eq(sum.rows, 3);
	cr_assert_eq(json_array_size(tsink_rows("out")), 3);
	ck = ckpt_of(rec, sum.run_id);
	cr_assert_str_eq(ck->reason, "interrupt");
	cr_assert_eq(ck->released_through_seq, 3);
	cr_assert_eq(ck->pulled_through_seq, 4);
	cr_assert_eq(ck->n_rows, 1);
	cr_assert_eq(ck->rows[0]->seq, 4);
	cr_assert_not(ck->rows[0]->done, "a row cut short is run again");
	cr_assert(ck->rows[0]->has_source_pos);
	cr_assert_eq(ck->rows[0]->source_offset, 3, "the source before row 4");
	cr_assert_eq(ck->source_offset, 4, "the source after row 4");
	cr_assert_not(ck->source_done);
	rec_ckpt_free(ck);
	rec_done(rec);
	etmp_remove(&d);
}

Test(ckpt_run, interrupt_pipelined_lists_consecutive_rows_from_the_cut)
{
	etmp d;
	rec_env *rec;
	core_err err = { 0 };
	eng_summary sum;
	Elspeth__Checkpoint *ck;

	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	sum = run_audited(stopping, rec, 4, 0, &err);
	cr_assert(sum.interrupted);
	ck = ckpt_of(rec, sum.run_id);
	cr_assert_str_eq(ck->reason, "interrupt");
	cr_assert_eq(ck->released_through_seq, 3, "rows before the cut are released");
	cr_assert_geq(ck->n_rows, 1);
	cr_assert_eq(ck->rows[0]->seq, 4);
	cr_assert_not(ck->rows[0]->done);
	for (size_t i = 0; i < ck->n_rows; i++)
		cr_assert_eq(ck->rows[i]->seq, 4 + i);
	cr_assert_eq(ck->pulled_through_seq, 3 + ck->n_rows);
	cr_assert_eq(json_array_size(tsink_rows("out")), 3);
	rec_ckpt_free(ck);
	rec_done(rec);
	etmp_remove(&d);
}

Test(ckpt_run, sink_without_position_is_refused)
{
	static const char *yaml =
		"source: {plugin: csv, on_success: out,\n"
		"         options: {rows: 3, on_validation_failure: discard}}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {name: out}}\n";
	static plg_sink_ops nopos;
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 1 };
	core_settings *s;
	dag_graph *g = eng_graph(yaml, &s);
	core_err err = { 0 };
	eng_summary sum;
	etmp d;

	etmp_make(&d);
	o.rec = etmp_rec(&d, 0);
	nopos = *tsink_ops();
	nopos.position = NULL;
	nopos.resume = NULL;
	g->nodes[node_id(g, "out")].kops = &nopos;
	cr_assert_eq(eng_run(g, &o, &sum, &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "sink 'out' (plugin csv) cannot be checkpointed; "
			 "set checkpoint.enabled: false"), "%s", err.msg);
	cr_assert_eq(json_array_size(tsink_rows("out")), 0, "refused before any row");
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	rec_done(o.rec);
	etmp_remove(&d);
}

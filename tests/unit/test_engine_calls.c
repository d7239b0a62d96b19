/* test_engine_calls.c — outside calls a transform records through
 * plg_ctx.record_call, as the audit trail keeps them and explain returns
 * them: what drove a call's throttle wait (plg_call.throttle_reason) is
 * recorded and returned as "throttle_reason", and absent for a call
 * that did not wait — as for every call recorded before the field
 * existed (proto3: an empty string is not on the wire). */
#include "test_engine_util.h"

TestSuite(calls, .timeout = TIMEOUT);

static const char *recording =
	"source: {plugin: csv, on_success: t_in,\n"
	"         options: {rows: 2, on_validation_failure: discard}}\n"
	"transforms:\n"
	"  - {name: t, plugin: passthrough, input: t_in, on_success: out,\n"
	"     options: {throttle_reason: retry-after-ms}}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

/* The calls of row seq's transform state (explain). */
static json_t *calls_of_row(rec_env *rec, uint64_t run, uint64_t seq)
{
	core_err err = { 0 };
	json_t *doc = NULL, *states, *calls;

	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_explain(rec, run, seq, 0, &doc, &err), 0, "%s", err.msg);
	states = json_object_get(json_array_get(json_object_get(doc, "tokens"), 0), "states");
	calls = json_object_get(json_array_get(states, 0), "calls");
	cr_assert_eq(json_array_size(calls), 2, "explain: %s", jtext(doc));
	json_incref(calls);
	json_decref(doc);
	return calls;
}

Test(calls, throttle_reason_is_recorded_and_explained)
{
	eng_opts o = { .stop = &tstop, .max_rows_in_flight = 1 };
	core_settings *s;
	dag_graph *g = eng_graph(recording, &s);
	eng_summary sum;
	core_err err = { 0 };
	json_t *calls, *waited, *not_waited;
	etmp d;

	etmp_make(&d);
	o.rec = etmp_rec(&d, 0);
	cr_assert_eq(eng_run(g, &o, &sum, &err), 0, "%s", err.msg);
	cr_assert_eq(sum.calls, 4);
	calls = calls_of_row(o.rec, sum.run_id, 2);
	waited = json_array_get(calls, 0);
	not_waited = json_array_get(calls, 1);
	cr_assert_str_eq(json_string_value(json_object_get(waited, "throttle_reason")),
			 "retry-after-ms");
	cr_assert_float_eq(json_real_value(json_object_get(waited, "throttle_delay_ms")),
			   120.0, 1e-9);
	cr_assert_null(json_object_get(not_waited, "throttle_reason"),
		       "no key for a call that did not wait: %s", jtext(not_waited));
	cr_assert_float_eq(json_real_value(json_object_get(not_waited, "throttle_delay_ms")),
			   0.0, 1e-9);
	json_decref(calls);
	eng_summary_release(&sum);
	dag_free(g);
	core_settings_free(s);
	rec_done(o.rec);
	etmp_remove(&d);
}

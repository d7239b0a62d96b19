/* test_engine_coalesce.c — engine/coalesce.c through one row's walk
 * (eng__process_row): the policies require_all, quorum, best_effort and
 * first; the merges union (collisions: the later declared branch wins),
 * nested and select; a join that cannot be made fails its arrivals; a
 * nested fork's merged token returns to its outer branch; with audit on,
 * every branch token gets its outcome and the merge is described. */
#include "test_engine_util.h"

TestSuite(coalesce, .timeout = TIMEOUT);

/* A fork into a, b and c, each through its own transform (a failing one
 * is discarded: its branch does not arrive), joined by `join`. */
#define JOIN_YAML \
	"landscape: {enabled: false}\n" \
	"source: {plugin: csv, on_success: g_in, options: {on_validation_failure: discard}}\n" \
	"gates:\n" \
	"  - {name: split, input: g_in, condition: 'True', routes: {'true': fork},\n" \
	"     fork_to: [a, b, c]}\n" \
	"transforms:\n" \
	"  - {name: ta, plugin: passthrough, input: a, on_success: a_done,\n" \
	"     on_error: discard, options: {key: x, value: a, set: {from_a: 1}, %s}}\n" \
	"  - {name: tb, plugin: passthrough, input: b, on_success: b_done,\n" \
	"     on_error: discard, options: {key: x, value: b, set: {from_b: 1}, %s}}\n" \
	"  - {name: tc, plugin: passthrough, input: c, on_success: c_done,\n" \
	"     on_error: discard, options: {key: x, value: c, set: {from_c: 1}, %s}}\n" \
	"coalesce:\n" \
	"  - {name: join, branches: %s, on_success: out, %s}\n" \
	"sinks:\n" \
	"  out: {plugin: csv, options: {name: out}}\n"

#define ABC "{a: a_done, b: b_done, c: c_done}"
#define CBA "{c: c_done, b: b_done, a: a_done}"
#define FAIL "fail_mod: 1" /* every row fails: the branch does not arrive */
#define OK "fail_mod: 0"

static const char *row_a = "{\"i\":1,\"x\":\"a\",\"from_a\":1}";
static const char *row_b = "{\"i\":1,\"x\":\"b\",\"from_b\":1}";

static void open_join(tpipe *p, const char *branches, const char *join,
		      const char *a, const char *b, const char *c)
{
	char yaml[4096];

	snprintf(yaml, sizeof(yaml), JOIN_YAML, a, b, c, branches, join);
	tp_open(p, yaml);
}

/* Equal as JSON (key order aside). */
static void assert_same(const json_t *v, const char *want)
{
	json_error_t je;
	json_t *w = json_loads(want, 0, &je);
	char *got = jtext(v);

	cr_assert_not_null(w, "bad test JSON: %s", je.text);
	cr_assert(json_equal((json_t *)v, w), "got %s, want %s", got, want);
	free(got);
	json_decref(w);
}

/* The one token that reached `out`, or NULL. */
static const eng_token *merged(const eng_result *res)
{
	const eng_token *m = NULL;

	for (size_t i = 0; i < res->ntokens; i++)
		if (res->tokens[i].to == ENG_TO_SINK) {
			cr_assert_null(m, "two tokens reached the sink");
			m = &res->tokens[i];
		}
	return m;
}

/* Tokens FAILED with an error containing `why`. */
static size_t failed_with(const eng_result *res, const char *why)
{
	size_t n = 0;

	for (size_t i = 0; i < res->ntokens; i++)
		n += res->tokens[i].outcome == ENG_FAILED && res->tokens[i].error &&
		     strstr(res->tokens[i].error, why);
	return n;
}

Test(coalesce, require_all_union_merges_every_branch)
{
	tpipe p;
	eng_result res;
	const eng_token *m;

	open_join(&p, ABC, "policy: require_all, merge: union", OK, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1);
	cr_assert_not(res.failed);
	m = merged(&res);
	cr_assert_not_null(m);
	/* x collides: c, declared last, wins */
	assert_same(m->data, "{\"i\":1,\"x\":\"c\",\"from_a\":1,\"from_b\":1,\"from_c\":1}");
	cr_assert_eq(m->outcome, ENG_COMPLETED);
	cr_assert_null(m->branch, "the merged token is back outside the fork");
	cr_assert_eq(m->step, 3, "gate, transform, then the coalesce");
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, union_collision_goes_to_the_later_declared_branch)
{
	tpipe p;
	eng_result res;

	open_join(&p, CBA, "merge: union", OK, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	assert_same(merged(&res)->data,
		    "{\"i\":1,\"x\":\"a\",\"from_a\":1,\"from_b\":1,\"from_c\":1}");
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, require_all_missing_branch_fails_the_arrivals)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: require_all", OK, FAIL, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert(res.failed);
	cr_assert_null(merged(&res), "no merged token");
	cr_assert_eq(res.ntokens, 3);
	/* depth first: b's own failure, then a and c when the fork resolves */
	cr_assert(strstr(res.tokens[0].error, "unwanted"), "%s", res.tokens[0].error);
	cr_assert_eq(failed_with(&res, "coalesce 'join': not every branch arrived "
				 "(policy require_all)"), 2);
	cr_assert_str_eq(res.tokens[1].branch, "a");
	cr_assert_str_eq(res.tokens[2].branch, "c");
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, quorum_met_merges_the_arrivals)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: quorum, quorum_count: 2", OK, FAIL, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 2, "b's failure and the merged token");
	assert_same(merged(&res)->data, "{\"i\":1,\"x\":\"c\",\"from_a\":1,\"from_c\":1}");
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, quorum_not_met_fails_the_arrivals)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: quorum, quorum_count: 2", OK, FAIL, FAIL);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert(res.failed);
	cr_assert_null(merged(&res));
	cr_assert_eq(failed_with(&res, "coalesce 'join': too few branches arrived for the quorum"), 1);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, best_effort_late_branch_fails_the_rest_merge)
{
	tpipe p;
	eng_result res;

	/* c arrives 150 ms after a: past the 50 ms timeout */
	open_join(&p, ABC, "policy: best_effort, timeout_seconds: 0.05", OK, OK,
		  "delay_us: 150000");
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	assert_same(merged(&res)->data, "{\"i\":1,\"x\":\"b\",\"from_a\":1,\"from_b\":1}");
	cr_assert_eq(failed_with(&res, "arrived after the best_effort timeout"), 1);
	cr_assert_eq(res.ntokens, 2);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, best_effort_in_time_merges_every_branch)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: best_effort, timeout_seconds: 30", OK, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1);
	assert_same(merged(&res)->data,
		    "{\"i\":1,\"x\":\"c\",\"from_a\":1,\"from_b\":1,\"from_c\":1}");
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, first_takes_the_first_arrival_not_the_first_declared)
{
	tpipe p;
	eng_result res;

	open_join(&p, CBA, "policy: first", OK, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1, "the unused arrivals are COALESCED, not released");
	assert_same(merged(&res)->data, row_a);
	cr_assert_not(res.failed);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, first_skips_a_branch_that_did_not_arrive)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: first", FAIL, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	assert_same(merged(&res)->data, row_b);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, nested_keeps_each_branch_under_its_name)
{
	tpipe p;
	eng_result res;
	char want[512];

	open_join(&p, ABC, "policy: quorum, quorum_count: 2, merge: nested", OK, OK, FAIL);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	snprintf(want, sizeof(want), "{\"a\":%s,\"b\":%s}", row_a, row_b);
	assert_same(merged(&res)->data, want);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, select_takes_the_selected_branch)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: require_all, merge: select, select_branch: b",
		  OK, OK, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	assert_same(merged(&res)->data, row_b);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, select_branch_missing_fails_the_arrivals)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: best_effort, timeout_seconds: 30, merge: select, "
		  "select_branch: b", OK, FAIL, OK);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_null(merged(&res));
	cr_assert(res.failed);
	cr_assert_eq(failed_with(&res, "coalesce 'join': select_branch did not arrive"), 2);
	eng__result_release(&res);
	tp_close(&p);
}

Test(coalesce, nothing_arrived_makes_no_token)
{
	tpipe p;
	eng_result res;

	open_join(&p, ABC, "policy: best_effort, timeout_seconds: 30", FAIL, FAIL, FAIL);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_null(merged(&res));
	cr_assert_eq(res.ntokens, 3, "each branch's own failure only");
	cr_assert_eq(failed_with(&res, "unwanted"), 3);
	eng__result_release(&res);
	tp_close(&p);
}

/* A fork inside branch a of an outer fork: the inner join's merged token
 * goes on as branch a to the outer join. */
static const char *nested_forks =
	"landscape: {enabled: false}\n"
	"source: {plugin: csv, on_success: g_in, options: {on_validation_failure: discard}}\n"
	"gates:\n"
	"  - {name: outer, input: g_in, condition: 'True', routes: {'true': fork},\n"
	"     fork_to: [a, b]}\n"
	"  - {name: inner, input: a, condition: 'True', routes: {'true': fork},\n"
	"     fork_to: [a1, a2]}\n"
	"transforms:\n"
	"  - {name: t1, plugin: passthrough, input: a1, on_success: a1_done,\n"
	"     options: {set: {from_a1: 1}}}\n"
	"  - {name: t2, plugin: passthrough, input: a2, on_success: a2_done,\n"
	"     options: {set: {from_a2: 1}}}\n"
	"  - {name: tb, plugin: passthrough, input: b, on_success: b_done,\n"
	"     options: {set: {from_b: 1}}}\n"
	"  - {name: post, plugin: passthrough, input: joined, on_success: out,\n"
	"     options: {set: {post: 1}}}\n"
	"coalesce:\n"
	"  - {name: inner_join, branches: {a1: a1_done, a2: a2_done}, on_success: a_done}\n"
	"  - {name: outer_join, branches: {a: a_done, b: b_done}, merge: nested,\n"
	"     on_success: joined}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {name: out}}\n";

Test(coalesce, nested_fork_joins_inside_out)
{
	tpipe p;
	eng_result res;

	tp_open(&p, nested_forks);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(res.ntokens, 1);
	assert_same(res.tokens[0].data, "{\"a\":{\"i\":1,\"from_a1\":1,\"from_a2\":1},"
		    "\"b\":{\"i\":1,\"from_b\":1},\"post\":1}");
	cr_assert_null(res.tokens[0].branch);
	eng__result_release(&res);
	tp_close(&p);
}

/* ------------------------------------------------------- with audit */

/* The row's tokens' outcomes from explain, and the join's context. */
static void explain_row(rec_env *rec, uint64_t run, json_t **outcomes,
			json_t **context)
{
	json_t *doc = NULL, *t, *st;
	core_err err = { 0 };
	size_t i, j;

	cr_assert_eq(rec_flush(rec, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_explain(rec, run, 1, 0, &doc, &err), 0, "%s", err.msg);
	*outcomes = json_array();
	*context = NULL;
	json_array_foreach(json_object_get(doc, "tokens"), i, t) {
		json_array_append(*outcomes, json_object_get(json_object_get(t, "outcome"), "outcome"));
		json_array_foreach(json_object_get(t, "states"), j, st)
			if (!strcmp(json_string_value(json_object_get(st, "node")), "join"))
				*context = json_incref(json_object_get(st, "context"));
	}
	json_decref(doc);
}

static void audited_join(const char *join, json_t **outcomes, json_t **context)
{
	char yaml[4096];
	etmp d;
	rec_env *rec;
	tpipe p;
	eng_result res;
	json_t *rep = NULL;

	snprintf(yaml, sizeof(yaml), JOIN_YAML, OK, OK, OK, ABC, join);
	etmp_make(&d);
	rec = etmp_rec(&d, 0);
	tp_open_rec(&p, yaml + strlen("landscape: {enabled: false}\n"), rec);
	cr_assert_eq(tp_row(&p, 1, 1, &res), 0, "%s", p.err.msg);
	cr_assert_eq(eng__emit(&p.c, &res, &p.sum, &p.err), 0, "%s", p.err.msg);
	explain_row(rec, p.audit.run_id, outcomes, context);
	cr_assert_eq(rec_verify(rec, p.audit.run_id, &rep, &p.err), 0, "%s", p.err.msg);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "violations: %s", jtext(json_object_get(rep, "violations")));
	json_decref(rep);
	eng__result_release(&res);
	tp_close(&p);
	rec_done(rec);
	etmp_remove(&d);
}

Test(coalesce, audit_records_merged_inputs_and_collisions)
{
	json_t *outcomes, *ctx;

	audited_join("merge: union", &outcomes, &ctx);
	/* the row's token, three branches, the merged token */
	assert_json(outcomes, "[\"FORKED\",\"COALESCED\",\"COALESCED\",\"COALESCED\",\"COMPLETED\"]");
	cr_assert_not_null(ctx);
	assert_same(ctx, "{\"policy\":\"require_all\",\"merge\":\"union\","
		    "\"merged\":[\"a\",\"b\",\"c\"],\"missing\":[],\"not_used\":[],"
		    "\"collisions\":{\"x\":\"c\"}}");
	json_decref(outcomes);
	json_decref(ctx);
}

Test(coalesce, audit_records_first_unused_as_coalesced)
{
	json_t *outcomes, *ctx;

	audited_join("policy: first", &outcomes, &ctx);
	assert_json(outcomes, "[\"FORKED\",\"COALESCED\",\"COALESCED\",\"COALESCED\",\"COMPLETED\"]");
	cr_assert_not_null(ctx);
	assert_json(json_object_get(ctx, "merged"), "[\"a\"]");
	assert_json(json_object_get(ctx, "not_used"), "[\"b\",\"c\"]");
	json_decref(outcomes);
	json_decref(ctx);
}

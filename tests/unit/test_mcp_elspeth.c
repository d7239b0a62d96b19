/* test_mcp_elspeth.c — every tool answers as ELSPETH 0.4.1's own MCP
 * analyzer answered on the same trail: tests/fixtures/mcp/
 * elspeth_answers.json holds 103 calls (arguments, and the answer or the
 * error) recorded by make_answers.py; each is replayed through mcp_call
 * and compared value for value (an int is not a float, key order aside).
 * Where ELSPETH answers with an exception, we answer with a tool error.
 * Known differences, each checked here for what we do instead:
 *   - list_nodes: ELSPETH's json.dumps fails on schema_fields (a
 *     mappingproxy); we answer the lists it holds;
 *   - get_failure_context's plugins_failing is a Python set (its order
 *     varies between runs of ELSPETH): compared as a set. */
#include "test_mcp_util.h"

TestSuite(mcp_elspeth, .timeout = 60);

/* Whether a and b hold the same strings in any order. */
static bool same_set(const json_t *a, const json_t *b)
{
	size_t i, j;
	const json_t *x, *y;

	if (json_array_size(a) != json_array_size(b))
		return false;
	json_array_foreach(a, i, x) {
		bool found = false;

		json_array_foreach(b, j, y)
			found |= json_equal(x, y);
		if (!found)
			return false;
	}
	return true;
}

/* Compares our answer with ELSPETH's after taking out the set. */
static bool same_answer(const char *tool, json_t *ours, json_t *theirs)
{
	if (!strcmp(tool, "get_failure_context") && json_is_object(theirs)) {
		json_t *po = json_object_get(json_object_get(ours, "patterns"), "plugins_failing");
		json_t *pt = json_object_get(json_object_get(theirs, "patterns"), "plugins_failing");

		if (!same_set(po, pt))
			return false;
		json_array_clear(po);
		json_array_clear(pt);
	}
	return json_equal(ours, theirs);
}

/* Writes both answers for a failing call, to study the difference. */
static void show(const char *tool, const json_t *args, const json_t *ours,
		 const json_t *theirs, const char *msg)
{
	char *a = tmu_text(args), *o = tmu_text(ours), *t = tmu_text(theirs);

	cr_log_error("%s %s:\n  ours:    %.3000s\n  ELSPETH: %.3000s\n  %s", tool, a, o, t,
		     msg ? msg : "");
	free(a);
	free(o);
	free(t);
}

Test(mcp_elspeth, every_recorded_call_answers_as_elspeth)
{
	char *text = tmu_slurp(FIXTURE_DIR "/elspeth_answers.json", NULL);
	json_t *gold = tmu_json(text), *call;
	mcp_server *s = tmu_open(NULL);
	size_t i, same = 0, n = json_array_size(json_object_get(gold, "calls"));

	cr_assert_geq(n, 100);
	json_array_foreach(json_object_get(gold, "calls"), i, call) {
		const char *tool = json_string_value(json_object_get(call, "tool"));
		json_t *args = json_object_get(call, "arguments");
		json_t *want = json_object_get(call, "answer");
		const char *want_err = json_string_value(json_object_get(call, "error"));
		mcp_result r = { 0 };
		core_err err = { 0 };
		int rc = mcp_call(s, tool, args, &r, &err);

		if (want_err && rc == CORE_EDATA) {
			same++;
		} else if (want && !rc && same_answer(tool, r.value, want)) {
			same++;
		} else {
			show(tool, args, r.value, want ? want : json_object_get(call, "error"),
			     rc ? err.msg : NULL);
		}
		mcp_result_release(&r);
	}
	cr_expect_eq(same, n, "%zu of %zu calls answered as ELSPETH did", same, n);
	mcp_free(s);
	json_decref(gold);
	free(text);
}

/* The error messages we took over from ELSPETH, word for word. */
Test(mcp_elspeth, refusals_say_what_elspeth_says)
{
	char *text = tmu_slurp(FIXTURE_DIR "/elspeth_answers.json", NULL);
	json_t *gold = tmu_json(text), *call;
	mcp_server *s = tmu_open(NULL);
	size_t i, checked = 0;

	json_array_foreach(json_object_get(gold, "calls"), i, call) {
		const char *tool = json_string_value(json_object_get(call, "tool"));
		const char *want = json_string_value(json_object_get(call, "error"));
		mcp_result r = { 0 };
		core_err err = { 0 };

		/* The query error is SQLAlchemy's text around SQLite's. */
		if (!want || !strcmp(tool, "query"))
			continue;
		cr_expect_eq(mcp_call(s, tool, json_object_get(call, "arguments"), &r, &err),
			     CORE_EDATA, "%s", tool);
		cr_expect_str_eq(err.msg, want, "%s", tool);
		mcp_result_release(&r);
		checked++;
	}
	cr_expect_geq(checked, 6);
	mcp_free(s);
	json_decref(gold);
	free(text);
}

Test(mcp_elspeth, list_nodes_answers_where_elspeth_cannot)
{
	core_err err = { 0 };
	mcp_server *s = tmu_open(NULL);
	json_t *v = tmu_call(s, "list_nodes", "{\"run_id\": \"" RUN_ROUTING "\"}", &err);
	json_t *src = json_array_get(v, 0);
	json_t *fields = json_object_get(src, "schema_fields");

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_eq(json_array_size(v), 9);
	cr_expect_str_eq(json_string_value(json_object_get(src, "node_type")), "source");
	cr_expect_eq(json_array_size(fields), 5);
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(fields, 2), "name")),
			 "amount");
	json_decref(v);
	mcp_free(s);
}

/* test_plugins_keyword_filter.c — the keyword_filter transform and the
 * Python `re` patterns it compiles with PCRE2 (ADR 0026).
 *
 * elspeth_cases replays tests/fixtures/keyword_filter/cases.json: what
 * ELSPETH 0.4.1's own KeywordFilter did on each case (recorded by
 * tests/reference/keyword_filter_cases.py). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/pyre_internal.h"

static core_doc *docs[8];
static size_t ndocs;

static void teardown(void)
{
	while (ndocs)
		core_doc_free(docs[--ndocs]);
}

TestSuite(keyword_filter, .fini = teardown, .timeout = 30);
TestSuite(pyre, .timeout = 30);

static const core_node *opts(const char *yaml)
{
	core_err err = { 0 };

	cr_assert_lt(ndocs, 8);
	cr_assert_eq(core_doc_parse("kf.yaml", yaml, strlen(yaml), &docs[ndocs],
				    &err), 0, "%s", err.msg);
	return core_doc_root(docs[ndocs++]);
}

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_ALLOW_NUL, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* ---------------------------------------------- ELSPETH's recorded cases */

typedef struct outcome {
	int open_rc;
	int rc;
	char msg[1024];
	json_t *context;
} outcome;

/* Opens keyword_filter on the case's options (written as YAML flow, which
 * JSON is) and runs its row through. */
static void run_case(const json_t *c, outcome *o)
{
	json_t *opt = json_pack("{s:O,s:O,s:{s:s}}", "fields", json_object_get(c, "fields"),
				"blocked_patterns", json_object_get(c, "blocked_patterns"),
				"schema", "mode", "observed");
	char *yaml = json_dumps(opt, JSON_COMPACT);
	core_doc *doc = NULL;
	core_err err = { 0 };
	void *st = NULL;

	memset(o, 0, sizeof(*o));
	cr_assert_eq(core_doc_parse("case.yaml", yaml, strlen(yaml), &doc, &err), 0,
		     "%s: %s", yaml, err.msg);
	o->open_rc = plg__keyword_filter.open(NULL, core_doc_root(doc), &st, &err);
	if (!o->open_rc) {
		plg_ctx ctx = { .seq = 1 };
		json_t *out = NULL, *row = json_object_get(c, "row");

		o->rc = plg__keyword_filter.process(st, row, &out, &ctx, &err);
		if (!o->rc)
			cr_assert(json_equal(out, row), "the row changed: %s", yaml);
		json_decref(out);
		o->context = ctx.context;
		plg__keyword_filter.close(st);
	}
	snprintf(o->msg, sizeof(o->msg), "%s", err.msg);
	core_doc_free(doc);
	free(yaml);
	json_decref(opt);
}

/* NULL when ours did what ELSPETH did; else what differs (static). */
static const char *compare(const json_t *c, const outcome *o)
{
	const char *want = json_string_value(json_object_get(c, "result"));
	const char *ours = json_string_value(json_object_get(c, "ours"));
	static char why[1200];
	json_t *got;

	if ((ours && !strcmp(ours, "refused")) || !strcmp(want, "config_error"))
		want = ours && !strcmp(ours, "accepted") ? NULL : "config_error";
	if (!want)
		return o->open_rc ? "accepted on purpose, but refused" : NULL;
	if (!strcmp(want, "config_error"))
		return o->open_rc == CORE_ECONFIG ? NULL : "ELSPETH refuses it; opened";
	if (o->open_rc) {
		snprintf(why, sizeof(why), "refused: %s", o->msg);
		return why;
	}
	if (!strcmp(want, "ok"))
		return o->rc ? "ELSPETH passes the row; failed" : NULL;
	if (!o->rc)
		return "ELSPETH fails the row; passed";
	got = json_loads(o->msg, JSON_ALLOW_NUL, NULL);
	if (!got || !json_equal(got, json_object_get(c, "reason"))) {
		json_decref(got);
		snprintf(why, sizeof(why), "reason %s", o->msg);
		return why;
	}
	json_decref(got);
	if (!json_equal(json_object_get(o->context, "error_reason"), json_object_get(c, "reason")))
		return "the node state's context lacks the reason";
	return NULL;
}

Test(keyword_filter, elspeth_cases)
{
	json_error_t jerr;
	json_t *all = json_load_file(ELSPETH_SOURCE_DIR "/tests/fixtures/keyword_filter/cases.json",
				     JSON_ALLOW_NUL, &jerr);
	json_t *cases = json_object_get(all, "cases"), *c;
	size_t i, bad = 0, ok = 0, refused = 0;

	cr_assert_not_null(all, "%s", jerr.text);
	cr_assert_gt(json_array_size(cases), 100);
	json_array_foreach(cases, i, c) {
		outcome o;
		const char *why;

		run_case(c, &o);
		why = compare(c, &o);
		refused += o.open_rc != 0;
		if (why && bad++ < 10)
			cr_log_error("case %zu %s: %s", i,
				     json_string_value(json_array_get(
					     json_object_get(c, "blocked_patterns"), 0)), why);
		ok += !why;
		json_decref(o.context);
	}
	cr_assert_eq(bad, 0, "%zu of %zu cases differ from ELSPETH", bad, json_array_size(cases));
	cr_assert_gt(refused, 30);
	json_decref(all);
}

/* ---------------------------------------------------- options, messages */

static int open_err(const char *yaml, core_err *err)
{
	void *st = NULL;
	int rc = plg__keyword_filter.open(NULL, opts(yaml), &st, err);

	cr_assert_null(st);
	return rc;
}

Test(keyword_filter, bad_pattern_names_position_and_key)
{
	core_err err = { 0 };

	cr_assert_eq(open_err("fields: [notes]\n"
			      "blocked_patterns:\n"
			      "  - ok\n"
			      "  - '\\p{L}+'\n"
			      "schema: {mode: observed}\n", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "kf.yaml:4:5: blocked_patterns[1]: blocked_patterns[1] "
			 "is not a valid regex: bad escape \\p"), "%s", err.msg);
	cr_assert(strstr(err.msg, "at position 0"), "%s", err.msg);
}

Test(keyword_filter, elspeth_checks_in_its_words)
{
	core_err err = { 0 };

	cr_assert_eq(open_err("fields: all\nblocked_patterns: ['(a+)+']\n"
			      "schema: {mode: observed}\n", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "nested quantifiers (ReDoS risk): (a+)+"), "%s", err.msg);
	cr_assert_eq(open_err("fields: all\nblocked_patterns: []\n"
			      "schema: {mode: observed}\n", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "blocked_patterns cannot be empty"), "%s", err.msg);
	cr_assert_eq(open_err("fields: all\nblocked_patterns: ['x']\n", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "missing required key 'schema'"), "%s", err.msg);
	cr_assert_eq(open_err("blocked_patterns: ['x']\nschema: {mode: observed}\n", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "missing required key 'fields'"), "%s", err.msg);
	cr_assert_eq(open_err("fields: all\nblocked_patterns: ['x']\nschema: {mode: observed}\n"
			      "blocked: 1\n", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "blocked"), "%s", err.msg);
	cr_assert_eq(open_err("fields: {a: 1}\nblocked_patterns: ['x']\n"
			      "schema: {mode: observed}\n", &err), CORE_ECONFIG);
	cr_assert_eq(open_err("fields: all\nblocked_patterns: [[x]]\n"
			      "schema: {mode: observed}\n", &err), CORE_ECONFIG);
}

Test(keyword_filter, success_reason_and_not_retryable)
{
	core_err err = { 0 };
	void *st = NULL;
	plg_ctx ctx = { .seq = 3 };
	json_t *row = js("{\"notes\": \"all clear\"}"), *bad = js("{\"notes\": \"a SECRET\"}");
	json_t *out = NULL;

	cr_assert_eq(plg__keyword_filter.open(NULL, opts("fields: notes\nblocked_patterns: ['(?i)secret']\n"
						   "schema: {mode: observed}\n"), &st, &err), 0, "%s", err.msg);
	cr_assert_eq(plg__keyword_filter.process(st, row, &out, &ctx, &err), 0);
	cr_assert_eq(out, row, "the row passes as it is");
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ctx.context,
		"success_reason"), "action")), "filtered");
	json_decref(ctx.context);
	json_decref(out);
	ctx.context = NULL;
	err.retryable = true;
	cr_assert_eq(plg__keyword_filter.process(st, bad, &out, &ctx, &err), CORE_EDATA);
	cr_assert_not(err.retryable);
	cr_assert_str_eq(err.msg, "{\"field\":\"notes\",\"field_length\":8,\"match_length\":6,"
			 "\"match_position\":2,\"matched_pattern\":\"(?i)secret\","
			 "\"reason\":\"blocked_content\"}");
	json_decref(ctx.context);
	/* No context to fill: the message alone. */
	cr_assert_eq(plg__keyword_filter.process(st, bad, &out, NULL, &err), CORE_EDATA);
	plg__keyword_filter.close(st);
	json_decref(row);
	json_decref(bad);
}

Test(keyword_filter, required_input_fields)
{
	core_err err = { 0 };
	void *st = NULL;
	json_t *row = js("{\"other\": \"x\"}"), *out = NULL;

	cr_assert_eq(plg__keyword_filter.open(NULL, opts("fields: [notes]\nblocked_patterns: [x]\n"
						   "required_input_fields: [notes]\n"
						   "schema: {mode: observed}\n"), &st, &err), 0, "%s", err.msg);
	cr_assert_eq(plg__keyword_filter.process(st, row, &out, NULL, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "'notes'"), "%s", err.msg);
	plg__keyword_filter.close(st);
	json_decref(row);
}

Test(keyword_filter, registered)
{
	cr_assert_eq(plg_find_transform("keyword_filter"), &plg__keyword_filter);
}

/* ------------------------------------------------------- the translation */

static void tr(const char *py, const char *want)
{
	char why[256] = "", *out = NULL;

	cr_assert_eq(plg__pyre_translate(py, &out, why, sizeof(why)), 0, "%s: %s", py, why);
	cr_assert_str_eq(out, want, "%s", py);
	free(out);
}

static void tr_refused(const char *py, const char *needle)
{
	char why[256] = "", *out = NULL;

	cr_assert_eq(plg__pyre_translate(py, &out, why, sizeof(why)), -1, "%s accepted", py);
	cr_assert_null(out);
	cr_assert(strstr(why, needle), "%s: %s", py, why);
}

Test(pyre, rewrites_what_pcre2_reads_otherwise)
{
	tr("a\\Z", "a\\z");
	tr("\\v", "\\x0b");
	tr("\\u00e9\\U0001F600\\x41", "\\x{e9}\\x{1f600}\\x{41}");
	tr("\\101[\\101]\\0", "\\o{101}[\\o{101}]\\o{0}");
	tr("(a)\\1", "(a)\\g{1}");
	tr("[[:alpha:]]", "[\\[:alpha:]]");
	tr("[]a][^]b]", "[\\]a][^\\]b]");
	tr("x{,2}y{,}z{2}", "x{0,2}y{0,}z{2}");
	tr("(?u)\\w(?u:x)", "\\w(?:x)");
	tr("(?x) a b # c [", "(?x)ab");
	tr("(?i)(?#c)(?P<n>a)(?P=n)", "(?i)(?P<n>a)(?P=n)");
	tr("[\\b]\\b", "[\\x08]\\b");
}

Test(pyre, refuses_with_python_positions)
{
	tr_refused("ab\\p{L}", "bad escape \\p (Python's re does not have it) at position 2");
	tr_refused("\u00e9\u00e9\\K", "at position 2");
	tr_refused("\\N{DIGIT ONE}", "named characters are not supported");
	tr_refused("(?a)x", "not supported (matching is always Unicode)");
	tr_refused("x(?i)", "global flags not at the start");
	tr_refused("(?<n>a)", "(?P<name>...)");
	tr_refused("(?(DEFINE)a)", "DEFINE");
	tr_refused("(*UTF)", "(*VERB)");
	tr_refused("[ab", "unterminated character set at position 0");
	tr_refused("\\x4", "incomplete escape \\x");
	tr_refused("\\400", "outside of range");
}

Test(pyre, compiled_pattern_is_unicode)
{
	char why[256];
	pcre2_code *re = plg__pyre_compile("(?i)\\bstra\\u00dfe\\b", why, sizeof(why));
	pcre2_match_data *md;
	const char *s = "Die STRA\xc3\x9f" "E";

	cr_assert_not_null(re, "%s", why);
	md = pcre2_match_data_create_from_pattern(re, NULL);
	cr_assert_gt(pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL), 0);
	pcre2_match_data_free(md);
	pcre2_code_free(re);
	cr_assert_null(plg__pyre_compile("(a", why, sizeof(why)));
	cr_assert(strstr(why, "PCRE2"), "%s", why);
}

/* test_plugins_llm_queries.c — the settings of `llm` with `queries:`
 * (plugins/llm/queries.c) and of the openrouter_batch_llm aggregation:
 * what opens, and the errors that name file:line:column and key. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

static core_doc *doc;

static void teardown(void)
{
	core_doc_free(doc);
	doc = NULL;
}

TestSuite(llm_queries, .fini = teardown, .timeout = 20);
TestSuite(openrouter_batch_llm, .fini = teardown, .timeout = 20);

#define HEAD "provider: openrouter\nmodel: m\nbase_url: http://127.0.0.1:9/v1\n" \
	"template: 'x {{ row.a }}'\n"

/* Opens plugin `llm` (or the aggregation) on yaml: 0, or the error. */
static int open_llm(const char *yaml, core_err *err)
{
	const plg_transform_ops *ops = plg_find_transform("llm");
	void *st = NULL;
	int rc;

	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &doc, err), 0, "%s", err->msg);
	rc = ops->open(NULL, core_doc_root(doc), &st, err);
	if (!rc)
		ops->close(st);
	return rc;
}

static int open_batch(const char *yaml, core_err *err)
{
	const plg_aggregation_ops *ops = plg_find_aggregation("openrouter_batch_llm");
	void *st = NULL;
	int rc;

	cr_assert_not_null(ops);
	cr_assert_not_null(ops->flush_calls);
	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &doc, err), 0, "%s", err->msg);
	rc = ops->open(NULL, core_doc_root(doc), &st, err);
	if (!rc)
		ops->close(st);
	return rc;
}

#define ERR_HAS(e, s) cr_assert(strstr((e).msg, s), "message: %s", (e).msg)

Test(llm_queries, map_and_list_forms_open)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q1:\n    input_fields: {a: text}\n"
			      "    output_fields: [{suffix: s, type: integer}]\n", &e), 0, "%s", e.msg);
	teardown();
	cr_assert_eq(open_llm(HEAD "pool_size: 4\nqueries:\n  - name: q1\n    input_fields: {a: text}\n"
			      "    response_format: structured\n    max_tokens: 5\n"
			      "    output_fields: [{suffix: s, type: enum, values: [x, y]}]\n"
			      "  - name: q2\n    input_fields: {a: text}\n", &e), 0, "%s", e.msg);
}

Test(llm_queries, input_fields_must_be_a_mapping)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q1:\n    input_fields: [text]\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "t.yaml:7:19: queries.q1.input_fields: input_fields must be a non-empty mapping");
}

Test(llm_queries, input_fields_required)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q1:\n    template: y\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "query 'q1' needs input_fields");
}

Test(llm_queries, positional_variables_refused)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q1:\n    input_fields: {a: t}\n"
			      "    template: 'see {{ input_1 }}'\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "t.yaml:8:15: queries.q1.template: query 'q1' template uses positional variables");
}

Test(llm_queries, duplicate_names_refused)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  - {name: q, input_fields: {a: t}}\n"
			      "  - {name: q, input_fields: {a: t}}\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "t.yaml:7:5: queries[1]: duplicate query name 'q'");
}

Test(llm_queries, column_collision_across_queries_refused)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n"
			      "  a: {input_fields: {x: t}, output_fields: [{suffix: b_c, type: string}]}\n"
			      "  a_b: {input_fields: {x: t}, output_fields: [{suffix: c, type: string}]}\n",
			      &e), CORE_ECONFIG);
	ERR_HAS(e, "column 'a_b_c' is given by query 'a' and query 'a_b'");
}

Test(llm_queries, unknown_query_key_and_bad_format_named)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q: {input_fields: {x: t}, temprature: 1}\n", &e),
		     CORE_ECONFIG);
	ERR_HAS(e, "temprature");
	teardown();
	cr_assert_eq(open_llm(HEAD "queries:\n  q: {input_fields: {x: t}, response_format: json}\n", &e),
		     CORE_ECONFIG);
	ERR_HAS(e, "queries.q.response_format");
}

Test(llm_queries, enum_needs_values)
{
	core_err e = { 0 };

	cr_assert_eq(open_llm(HEAD "queries:\n  q: {input_fields: {x: t}, output_fields: [{suffix: s, type: enum}]}\n",
			      &e), CORE_ECONFIG);
	ERR_HAS(e, "an enum output field needs `values`");
}

Test(openrouter_batch_llm, opens_with_elspeth_options)
{
	core_err e = { 0 };

	cr_assert_eq(open_batch("model: m\napi_key: k\nbase_url: http://127.0.0.1:9/v1\n"
				"template: 'x {{ row.a }}'\nresponse_field: r\npool_size: 3\n"
				"required_input_fields: [a]\nschema: {mode: observed}\n", &e), 0, "%s", e.msg);
}

Test(openrouter_batch_llm, provider_api_key_template_checked)
{
	core_err e = { 0 };

	cr_assert_eq(open_batch("provider: azure\nmodel: m\napi_key: k\ntemplate: x\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "t.yaml:1:11: provider");
	teardown();
	cr_assert_eq(open_batch("model: m\ntemplate: x\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "api_key");
	teardown();
	cr_assert_eq(open_batch("model: m\napi_key: k\n", &e), CORE_ECONFIG);
	ERR_HAS(e, "template");
}

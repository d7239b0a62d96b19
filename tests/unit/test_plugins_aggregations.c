/* test_plugins_aggregations.c — json_explode (the expanding transform) and
 * the batch_stats and batch_replicate aggregations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

static core_doc *docs[16];
static size_t ndocs;

static void teardown(void)
{
	while (ndocs)
		core_doc_free(docs[--ndocs]);
}

TestSuite(json_explode, .fini = teardown, .timeout = 10);
TestSuite(batch_stats, .fini = teardown, .timeout = 10);
TestSuite(batch_replicate, .fini = teardown, .timeout = 10);

static const core_node *opts(const char *yaml)
{
	core_err err = { 0 };

	cr_assert_lt(ndocs, 16);
	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &docs[ndocs],
				    &err), 0, "%s", err.msg);
	return core_doc_root(docs[ndocs++]);
}

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* The compact text of JSON text, so reals print as the plugin's do. */
static char *norm(const char *text)
{
	json_t *v = js(text);
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	json_decref(v);
	return s;
}

static void same_json(json_t *got, const char *want)
{
	char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
	char *w = norm(want);

	cr_assert_str_eq(g, w);
	free(g);
	free(w);
}

static void has(const core_err *err, const char *needle)
{
	cr_assert(strstr(err->msg, needle), "'%s' not in: %s", needle, err->msg);
}

/* ---------------------------------------------------- json_explode glue */

static void *open_ex(const char *yaml)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(plg__json_explode.open(NULL, opts(yaml), &st, &err), 0, "%s",
		     err.msg);
	return st;
}

static int ex_open_err(const char *yaml, core_err *err)
{
	void *st = NULL;
	int rc = plg__json_explode.open(NULL, opts(yaml), &st, err);

	cr_assert_null(st);
	return rc;
}

/* Runs one row; on success *out is the array of rows (caller frees). */
static int ex_run(void *st, const char *in, json_t **out, core_err *err)
{
	json_t *row = js(in), *before = json_deep_copy(row);
	int rc;

	*out = NULL;
	rc = plg__json_explode.process(st, row, out, NULL, err);
	cr_assert(json_equal(row, before), "the input row was modified");
	if (!rc)
		cr_assert(json_is_array(*out));
	else
		cr_assert_null(*out);
	json_decref(before);
	json_decref(row);
	return rc;
}

static void ex_expect(void *st, const char *in, const char *want)
{
	core_err err = { 0 };
	json_t *out;

	cr_assert_eq(ex_run(st, in, &out, &err), 0, "%s", err.msg);
	same_json(out, want);
	json_decref(out);
}

static void ex_expect_err(void *st, const char *in, const char *needle)
{
	core_err err = { 0 };
	json_t *out;

	cr_assert_eq(ex_run(st, in, &out, &err), CORE_EDATA);
	has(&err, needle);
}

/* ----------------------------------------------------- aggregation glue */

static void *open_agg(const plg_aggregation_ops *ops, const char *yaml)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(ops->open(NULL, opts(yaml), &st, &err), 0, "%s", err.msg);
	return st;
}

static int agg_open_err(const plg_aggregation_ops *ops, const char *yaml,
			core_err *err)
{
	void *st = NULL;
	int rc = ops->open(NULL, opts(yaml), &st, err);

	cr_assert_null(st);
	cr_assert_neq(rc, 0);
	return rc;
}

/* Flushes the members given as a JSON array; *out as ex_run. */
static int flush(const plg_aggregation_ops *ops, void *st, const char *batch,
		 bool passthrough, json_t **out, core_err *err)
{
	json_t *arr = js(batch), *before = json_deep_copy(arr);
	size_t n = json_array_size(arr);
	json_t **m = calloc(n ? n : 1, sizeof(*m));
	int rc;

	cr_assert_not_null(m);
	for (size_t i = 0; i < n; i++)
		m[i] = json_array_get(arr, i);
	*out = NULL;
	rc = ops->flush(st, m, n, passthrough, out, err);
	cr_assert(json_equal(arr, before), "a member was modified");
	if (!rc) {
		cr_assert(json_is_array(*out));
		if (passthrough)
			cr_assert_eq(json_array_size(*out), n,
				     "passthrough must give one row per member");
	} else {
		cr_assert_null(*out);
	}
	free(m);
	json_decref(before);
	json_decref(arr);
	return rc;
}

static void agg_expect(const plg_aggregation_ops *ops, void *st,
		       const char *batch, bool passthrough, const char *want)
{
	core_err err = { 0 };
	json_t *out;

	cr_assert_eq(flush(ops, st, batch, passthrough, &out, &err), 0, "%s",
		     err.msg);
	same_json(out, want);
	json_decref(out);
}

static void agg_expect_err(const plg_aggregation_ops *ops, void *st,
			   const char *batch, bool passthrough,
			   const char *needle1, const char *needle2)
{
	core_err err = { 0 };
	json_t *out;

	cr_assert_eq(flush(ops, st, batch, passthrough, &out, &err), CORE_EDATA,
		     "%s", err.msg);
	has(&err, needle1);
	if (needle2)
		has(&err, needle2);
}

/* The single output row of a batch_stats flush (caller frees). */
static json_t *stats_row(void *st, const char *batch)
{
	core_err err = { 0 };
	json_t *out, *row;

	cr_assert_eq(flush(&plg__batch_stats, st, batch, false, &out, &err), 0,
		     "%s", err.msg);
	cr_assert_eq(json_array_size(out), 1);
	row = json_incref(json_array_get(out, 0));
	json_decref(out);
	return row;
}

/* ================================================================ explode */

Test(json_explode, ops_identity)
{
	cr_assert_str_eq(plg__json_explode.name, "json_explode");
	cr_assert(plg__json_explode.expands);
	cr_assert_not_null(plg__json_explode.description);
	plg__json_explode.close(NULL);
}

Test(json_explode, explodes_with_index_and_output_field)
{
	void *st = open_ex("array_field: items\noutput_field: item");

	ex_expect(st, "{\"id\":1,\"items\":[{\"n\":\"a\"},{\"n\":\"b\"}],\"z\":2}",
		  "[{\"id\":1,\"z\":2,\"item\":{\"n\":\"a\"},\"item_index\":0},"
		  "{\"id\":1,\"z\":2,\"item\":{\"n\":\"b\"},\"item_index\":1}]");
	plg__json_explode.close(st);
}

Test(json_explode, default_output_field_takes_the_arrays_place)
{
	void *st = open_ex("array_field: tags");

	ex_expect(st, "{\"id\":7,\"tags\":[\"x\",2,null],\"z\":true}",
		  "[{\"id\":7,\"tags\":\"x\",\"z\":true,\"item_index\":0},"
		  "{\"id\":7,\"tags\":2,\"z\":true,\"item_index\":1},"
		  "{\"id\":7,\"tags\":null,\"z\":true,\"item_index\":2}]");
	plg__json_explode.close(st);
}

Test(json_explode, include_index_false)
{
	void *st = open_ex("array_field: a\ninclude_index: false");

	ex_expect(st, "{\"a\":[1,2],\"item_index\":9}",
		  "[{\"a\":1,\"item_index\":9},{\"a\":2,\"item_index\":9}]");
	plg__json_explode.close(st);
}

Test(json_explode, empty_array_gives_no_rows)
{
	void *st = open_ex("array_field: a");

	ex_expect(st, "{\"id\":1,\"a\":[]}", "[]");
	ex_expect(st, "{\"id\":1,\"a\":\"[]\"}", "[]");
	plg__json_explode.close(st);
}

Test(json_explode, string_holding_an_array_is_parsed)
{
	void *st = open_ex("array_field: a\noutput_field: v");

	ex_expect(st, "{\"id\":\"1\",\"a\":\" [1, {\\\"k\\\": 2.5}, \\\"s\\\"] \"}",
		  "[{\"id\":\"1\",\"v\":1,\"item_index\":0},"
		  "{\"id\":\"1\",\"v\":{\"k\":2.5},\"item_index\":1},"
		  "{\"id\":\"1\",\"v\":\"s\",\"item_index\":2}]");
	plg__json_explode.close(st);
}

Test(json_explode, string_not_an_array_is_a_row_error)
{
	void *st = open_ex("array_field: a");

	ex_expect_err(st, "{\"a\":\"hello\"}", "field 'a' is a string that is not a JSON array");
	ex_expect_err(st, "{\"a\":\"{\\\"k\\\":1}\"}", "not a JSON array (it holds an object)");
	ex_expect_err(st, "{\"a\":\"[1,\"}", "field 'a'");
	ex_expect_err(st, "{\"a\":\"\"}", "field 'a'");
	ex_expect_err(st, "{\"a\":\"[{\\\"k\\\":1,\\\"k\\\":2}]\"}", "duplicate");
	plg__json_explode.close(st);
}

Test(json_explode, missing_field_is_a_row_error)
{
	void *st = open_ex("array_field: items");

	ex_expect_err(st, "{\"id\":1}", "field 'items' is not in the row");
	plg__json_explode.close(st);
}

Test(json_explode, non_array_is_a_row_error_naming_what_was_found)
{
	void *st = open_ex("array_field: items");

	ex_expect_err(st, "{\"items\":3}", "field 'items' is not a JSON array: got an integer");
	ex_expect_err(st, "{\"items\":{\"a\":1}}", "got an object");
	ex_expect_err(st, "{\"items\":null}", "got null");
	ex_expect_err(st, "{\"items\":1.5}", "got a real number");
	ex_expect_err(st, "{\"items\":false}", "got a boolean");
	plg__json_explode.close(st);
}

Test(json_explode, never_overwrites_a_field)
{
	void *st = open_ex("array_field: items\noutput_field: item");

	ex_expect_err(st, "{\"items\":[1],\"item\":0}",
		      "field 'item' is already in the row");
	ex_expect_err(st, "{\"items\":[1],\"item_index\":0}",
		      "field 'item_index' is already in the row");
	plg__json_explode.close(st);
}

Test(json_explode, shares_values_and_leaves_input_alone)
{
	void *st = open_ex("array_field: a");
	json_t *row = js("{\"a\":[{\"deep\":[1]}],\"b\":{\"c\":1}}"), *out = NULL;
	core_err err = { 0 };

	cr_assert_eq(plg__json_explode.process(st, row, &out, NULL, &err), 0);
	cr_assert_eq(json_object_get(json_array_get(out, 0), "b"),
		     json_object_get(row, "b"));
	cr_assert_eq(json_object_get(json_array_get(out, 0), "a"),
		     json_array_get(json_object_get(row, "a"), 0));
	json_decref(out);
	cr_assert_eq(row->refcount, 1);
	json_decref(row);
	plg__json_explode.close(st);
}

Test(json_explode, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(ex_open_err("aray_field: a", &err), CORE_ECONFIG);
	has(&err, "did you mean 'array_field'");
	has(&err, "t.yaml:1:1");
	cr_assert_eq(ex_open_err("output_field: a", &err), CORE_ECONFIG);
	has(&err, "missing required key 'array_field'");
	cr_assert_eq(ex_open_err("array_field: a\ninclude_index: sometimes", &err),
		     CORE_ECONFIG);
	has(&err, "t.yaml:2:16: include_index: expected true or false");
	cr_assert_eq(ex_open_err("array_field: [a, b]", &err), CORE_ECONFIG);
	has(&err, "expected a string");
	cr_assert_eq(ex_open_err("array_field: ''", &err), CORE_ECONFIG);
	has(&err, "empty");
	cr_assert_eq(ex_open_err("array_field: a\noutput_field: item_index", &err),
		     CORE_ECONFIG);
	has(&err, "collides");
	cr_assert_eq(ex_open_err("array_field: a\nschema: {mode: sometimes}", &err),
		     CORE_ECONFIG);
	cr_assert_eq(ex_open_err("[a]", &err), CORE_ECONFIG);
}

Test(json_explode, accepts_schema_and_index_named_array)
{
	void *st = open_ex("array_field: item_index\noutput_field: v\n"
			   "schema:\n  mode: flexible\n  fields: ['v: any']");

	ex_expect(st, "{\"item_index\":[\"a\"]}", "[{\"v\":\"a\",\"item_index\":0}]");
	plg__json_explode.close(st);
	st = open_ex("array_field: item_index\ninclude_index: false");
	ex_expect(st, "{\"item_index\":[5]}", "[{\"item_index\":5}]");
	plg__json_explode.close(st);
}

/* ============================================================ batch_stats */

Test(batch_stats, ops_identity)
{
	cr_assert_str_eq(plg__batch_stats.name, "batch_stats");
	cr_assert_not_null(plg__batch_stats.description);
	plg__batch_stats.close(NULL);
}

Test(batch_stats, integer_figures)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect(&plg__batch_stats, st,
		   "[{\"v\":3,\"x\":\"a\"},{\"v\":1},{\"v\":2}]", false,
		   "[{\"count\":3,\"sum\":6,\"batch_size\":3,\"mean\":2.0}]");
	agg_expect(&plg__batch_stats, st, "[{\"v\":-5}]", false,
		   "[{\"count\":1,\"sum\":-5,\"batch_size\":1,\"mean\":-5.0}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, reals_and_mixed)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect(&plg__batch_stats, st, "[{\"v\":1},{\"v\":2.5}]", false,
		   "[{\"count\":2,\"sum\":3.5,\"batch_size\":2,\"mean\":1.75}]");
	agg_expect(&plg__batch_stats, st, "[{\"v\":2.0},{\"v\":2}]", false,
		   "[{\"count\":2,\"sum\":4.0,\"batch_size\":2,\"mean\":2.0}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, real_sum_is_compensated)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");
	json_t *r = stats_row(st, "[{\"v\":0.1},{\"v\":0.2},{\"v\":0.3}]");

	/* A naive left-to-right sum gives 0.6000000000000001. */
	cr_assert(json_real_value(json_object_get(r, "sum")) == 0.6);
	json_decref(r);
	r = stats_row(st, "[{\"v\":1e16},{\"v\":1.0},{\"v\":-1e16}]");
	cr_assert(json_real_value(json_object_get(r, "sum")) == 1.0);
	json_decref(r);
	plg__batch_stats.close(st);
}

Test(batch_stats, integer_sum_beyond_2_53_becomes_real)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");
	json_t *r = stats_row(st, "[{\"v\":9007199254740990},{\"v\":1}]");

	cr_assert(json_is_integer(json_object_get(r, "sum")));
	cr_assert_eq(json_integer_value(json_object_get(r, "sum")),
		     9007199254740991LL);
	json_decref(r);
	r = stats_row(st, "[{\"v\":9007199254740991},{\"v\":1}]");
	cr_assert(json_is_real(json_object_get(r, "sum")));
	cr_assert(json_real_value(json_object_get(r, "sum")) == 9007199254740992.0);
	json_decref(r);
	plg__batch_stats.close(st);
}

Test(batch_stats, int64_overflow_falls_back_to_real)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");
	json_t *r = stats_row(st, "[{\"v\":9223372036854775807},"
			      "{\"v\":9223372036854775807},{\"v\":-5}]");
	json_t *sum = json_object_get(r, "sum");

	cr_assert(json_is_real(sum));
	cr_assert(fabs(json_real_value(sum) - 18446744073709551609.0) < 1e4,
		  "sum %g", json_real_value(sum));
	cr_assert_eq(json_integer_value(json_object_get(r, "count")), 3);
	json_decref(r);
	r = stats_row(st, "[{\"v\":-9223372036854775807},{\"v\":-10}]");
	cr_assert(json_real_value(json_object_get(r, "sum")) < -9.2e18);
	json_decref(r);
	plg__batch_stats.close(st);
}

Test(batch_stats, double_overflow_is_a_batch_error)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ngroup_by: g");

	agg_expect_err(&plg__batch_stats, st,
		       "[{\"g\":\"big\",\"v\":1e308},{\"g\":\"big\",\"v\":1e308}]",
		       false, "field 'v'", "group where g is \"big\"");
	plg__batch_stats.close(st);
}

Test(batch_stats, numeric_strings_are_numbers)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect(&plg__batch_stats, st, "[{\"v\":\"12\"},{\"v\":\" 3 \"}]", false,
		   "[{\"count\":2,\"sum\":15,\"batch_size\":2,\"mean\":7.5}]");
	agg_expect(&plg__batch_stats, st,
		   "[{\"v\":\"12.5\"},{\"v\":\"1e3\"},{\"v\":\"-0.5\"}]", false,
		   "[{\"count\":3,\"sum\":1012.0,\"batch_size\":3,"
		   "\"mean\":337.3333333333333}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, huge_integer_string_is_a_real)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");
	json_t *r = stats_row(st, "[{\"v\":\"123456789012345678901234567890\"}]");

	cr_assert(json_is_real(json_object_get(r, "sum")));
	cr_assert(json_real_value(json_object_get(r, "sum")) > 1.2e29);
	json_decref(r);
	plg__batch_stats.close(st);
}

Test(batch_stats, missing_null_and_empty_are_skipped)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect(&plg__batch_stats, st,
		   "[{\"v\":4},{\"v\":null},{},{\"v\":\"\"},{\"v\":2}]", false,
		   "[{\"count\":2,\"sum\":6,\"batch_size\":5,\"mean\":3.0}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, nothing_to_use_gives_nulls_not_zeros)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect(&plg__batch_stats, st, "[{\"v\":null},{}]", false,
		   "[{\"count\":0,\"sum\":null,\"batch_size\":2,\"mean\":null}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, non_numeric_values_fail_naming_member_and_field)
{
	void *st = open_agg(&plg__batch_stats, "value_field: amount");

	agg_expect_err(&plg__batch_stats, st,
		       "[{\"amount\":1},{\"amount\":2},{\"amount\":\"abc\"}]", false,
		       "batch member 2", "field 'amount' is not a number: got a string");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":true}]", false,
		       "batch member 0", "got a boolean");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":1},{\"amount\":[1]}]",
		       true, "batch member 1", "got an array");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":{}}]", false,
		       "got an object", NULL);
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":\"NaN\"}]", false,
		       "batch member 0", "'amount'");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":\"1e999\"}]", false,
		       "batch member 0", "'amount'");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":\" \"}]", false,
		       "batch member 0", "'amount'");
	agg_expect_err(&plg__batch_stats, st, "[{\"amount\":\"12abc\"}]", false,
		       "batch member 0", "'amount'");
	plg__batch_stats.close(st);
}

Test(batch_stats, group_by_in_order_of_first_appearance)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ngroup_by: cat");

	agg_expect(&plg__batch_stats, st,
		   "[{\"cat\":\"b\",\"v\":1},{\"cat\":\"a\",\"v\":10},"
		   "{\"cat\":\"b\",\"v\":3},{\"cat\":\"c\",\"v\":null},"
		   "{\"cat\":\"a\",\"v\":20}]", false,
		   "[{\"count\":2,\"sum\":4,\"batch_size\":2,\"mean\":2.0,"
		   "\"cat\":\"b\"},"
		   "{\"count\":2,\"sum\":30,\"batch_size\":2,\"mean\":15.0,"
		   "\"cat\":\"a\"},"
		   "{\"count\":0,\"sum\":null,\"batch_size\":1,\"mean\":null,"
		   "\"cat\":\"c\"}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, group_values_are_typed_json)
{
	void *st = open_agg(&plg__batch_stats,
			    "value_field: v\ngroup_by: g\ncompute_mean: false");

	agg_expect(&plg__batch_stats, st,
		   "[{\"g\":1,\"v\":1},{\"g\":\"1\",\"v\":2},{\"g\":1.0,\"v\":3},"
		   "{\"g\":null,\"v\":4},{\"g\":{\"a\":1,\"b\":2},\"v\":5},"
		   "{\"g\":{\"b\":2,\"a\":1},\"v\":6},{\"g\":1,\"v\":7}]", false,
		   "[{\"count\":2,\"sum\":8,\"batch_size\":2,\"g\":1},"
		   "{\"count\":1,\"sum\":2,\"batch_size\":1,\"g\":\"1\"},"
		   "{\"count\":1,\"sum\":3,\"batch_size\":1,\"g\":1.0},"
		   "{\"count\":1,\"sum\":4,\"batch_size\":1,\"g\":null},"
		   "{\"count\":2,\"sum\":11,\"batch_size\":2,"
		   "\"g\":{\"a\":1,\"b\":2}}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, missing_group_by_field_fails_naming_member)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ngroup_by: cat");

	agg_expect_err(&plg__batch_stats, st,
		       "[{\"cat\":\"a\",\"v\":1},{\"v\":2}]", false,
		       "batch member 1", "group_by field 'cat'");
	plg__batch_stats.close(st);
}

/* ELSPETH 0.4.1's fields, in its order (plugins/transforms/batch_stats.py
 * l. 191-218): what its run wrote for a batch of 2.5 and 10.0 of region
 * "south" (CSV header count,sum,batch_size,mean,region). */
Test(batch_stats, elspeth_fields_and_order)
{
	void *st = open_agg(&plg__batch_stats,
			    "value_field: amount\ngroup_by: region\n"
			    "compute_mean: true\nschema: {mode: observed}");
	void *nomean = open_agg(&plg__batch_stats,
				"value_field: amount\ncompute_mean: false");

	agg_expect(&plg__batch_stats, st,
		   "[{\"id\":1,\"region\":\"south\",\"amount\":10.0},"
		   "{\"id\":2,\"region\":\"south\",\"amount\":2.5}]", false,
		   "[{\"count\":2,\"sum\":12.5,\"batch_size\":2,\"mean\":6.25,"
		   "\"region\":\"south\"}]");
	agg_expect(&plg__batch_stats, nomean, "[{\"amount\":1},{\"amount\":1.0}]",
		   false, "[{\"count\":2,\"sum\":2.0,\"batch_size\":2}]");
	plg__batch_stats.close(st);
	plg__batch_stats.close(nomean);
}

Test(batch_stats, passthrough_attaches_group_figures)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ngroup_by: g");

	agg_expect(&plg__batch_stats, st,
		   "[{\"id\":1,\"g\":\"x\",\"v\":2},{\"id\":2,\"g\":\"y\",\"v\":5},"
		   "{\"id\":3,\"g\":\"x\",\"v\":null}]", true,
		   "[{\"id\":1,\"g\":\"x\",\"v\":2,\"batch_count\":1,\"batch_sum\":2,"
		   "\"batch_size\":2,\"batch_mean\":2.0},"
		   "{\"id\":2,\"g\":\"y\",\"v\":5,\"batch_count\":1,\"batch_sum\":5,"
		   "\"batch_size\":1,\"batch_mean\":5.0},"
		   "{\"id\":3,\"g\":\"x\",\"v\":null,\"batch_count\":1,\"batch_sum\":2,"
		   "\"batch_size\":2,\"batch_mean\":2.0}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, passthrough_ungrouped_without_mean)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ncompute_mean: false");

	agg_expect(&plg__batch_stats, st, "[{\"v\":1,\"batch_mean\":\"mine\"},{\"v\":3}]",
		   true,
		   "[{\"v\":1,\"batch_mean\":\"mine\",\"batch_count\":2,\"batch_sum\":4,"
		   "\"batch_size\":2},"
		   "{\"v\":3,\"batch_count\":2,\"batch_sum\":4,\"batch_size\":2}]");
	plg__batch_stats.close(st);
}

Test(batch_stats, passthrough_never_overwrites)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v");

	agg_expect_err(&plg__batch_stats, st,
		       "[{\"v\":1},{\"v\":2,\"batch_sum\":0}]", true,
		       "batch member 1", "field 'batch_sum' is already in the row");
	agg_expect_err(&plg__batch_stats, st, "[{\"v\":1,\"batch_size\":9}]", true,
		       "batch member 0", "field 'batch_size' is already in the row");
	plg__batch_stats.close(st);
}

Test(batch_stats, output_rows_are_new)
{
	void *st = open_agg(&plg__batch_stats, "value_field: v\ngroup_by: g");
	json_t *m = js("{\"g\":{\"k\":[1]},\"v\":1}"), *out = NULL;
	core_err err = { 0 };

	cr_assert_eq(plg__batch_stats.flush(st, &m, 1, false, &out, &err), 0);
	cr_assert_eq(json_object_get(json_array_get(out, 0), "g"),
		     json_object_get(m, "g"), "the group value is shared");
	json_decref(out);
	cr_assert_eq(m->refcount, 1);
	cr_assert_eq(plg__batch_stats.flush(st, &m, 1, true, &out, &err), 0);
	cr_assert_neq(json_array_get(out, 0), m, "the member is copied");
	json_decref(out);
	cr_assert_eq(m->refcount, 1);
	json_decref(m);
	plg__batch_stats.close(st);
}

Test(batch_stats, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(agg_open_err(&plg__batch_stats, "group_by: g", &err),
		     CORE_ECONFIG);
	has(&err, "missing required key 'value_field'");
	cr_assert_eq(agg_open_err(&plg__batch_stats, "value_feild: v", &err),
		     CORE_ECONFIG);
	has(&err, "t.yaml:1:1");
	has(&err, "did you mean 'value_field'");
	cr_assert_eq(agg_open_err(&plg__batch_stats,
				  "value_field: v\ncompute_mean: 2", &err),
		     CORE_ECONFIG);
	has(&err, "compute_mean: expected true or false");
	cr_assert_eq(agg_open_err(&plg__batch_stats,
				  "value_field: v\ngroup_by: count", &err),
		     CORE_ECONFIG);
	has(&err, "t.yaml:2:11: group_by: group_by 'count' collides");
	cr_assert_eq(agg_open_err(&plg__batch_stats,
				  "value_field: v\ngroup_by: mean", &err),
		     CORE_ECONFIG);
	cr_assert_eq(agg_open_err(&plg__batch_stats,
				  "value_field: v\ngroup_by: batch_size", &err),
		     CORE_ECONFIG);
	has(&err, "(count, sum, batch_size, mean)");
	cr_assert_eq(agg_open_err(&plg__batch_stats, "value_field: {a: 1}", &err),
		     CORE_ECONFIG);
	has(&err, "expected a string");
	cr_assert_eq(agg_open_err(&plg__batch_stats, "value_field: \"\"", &err),
		     CORE_ECONFIG);
	cr_assert_eq(agg_open_err(&plg__batch_stats,
				  "value_field: v\nschema: {mode: fixed, fields: 3}",
				  &err), CORE_ECONFIG);
}

Test(batch_stats, group_by_mean_allowed_without_mean)
{
	void *st = open_agg(&plg__batch_stats,
			    "value_field: v\ngroup_by: mean\ncompute_mean: false\n"
			    "schema: {mode: observed}");

	agg_expect(&plg__batch_stats, st, "[{\"mean\":\"m\",\"v\":1}]", false,
		   "[{\"count\":1,\"sum\":1,\"batch_size\":1,\"mean\":\"m\"}]");
	plg__batch_stats.close(st);
}

/* ======================================================== batch_replicate */

Test(batch_replicate, ops_identity)
{
	cr_assert_str_eq(plg__batch_replicate.name, "batch_replicate");
	cr_assert_not_null(plg__batch_replicate.description);
	plg__batch_replicate.close(NULL);
}

/* ELSPETH 0.4.1's defaults (plugins/transforms/batch_replicate.py l. 36-56,
 * 182-189): copies_field "copies", copy_index added, nothing else; what its
 * run wrote for ids 1, 2, 3 with copies 2, 1, 0. */
Test(batch_replicate, elspeth_defaults)
{
	void *st = open_agg(&plg__batch_replicate, "schema: {mode: observed}");

	agg_expect(&plg__batch_replicate, st,
		   "[{\"id\":1,\"copies\":2},{\"id\":2,\"copies\":1},"
		   "{\"id\":3,\"copies\":0}]", false,
		   "[{\"id\":1,\"copies\":2,\"copy_index\":0},"
		   "{\"id\":1,\"copies\":2,\"copy_index\":1},"
		   "{\"id\":2,\"copies\":1,\"copy_index\":0}]");
	agg_expect(&plg__batch_replicate, st, "[{\"a\":1},{\"a\":2}]", false,
		   "[{\"a\":1,\"copy_index\":0},{\"a\":2,\"copy_index\":0}]");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, batch_info_when_asked)
{
	void *st = open_agg(&plg__batch_replicate, "attach_batch_info: true\n"
			    "include_copy_index: false");

	agg_expect(&plg__batch_replicate, st, "[{\"a\":1},{\"a\":2}]", false,
		   "[{\"a\":1,\"batch_size\":2,\"batch_index\":0},"
		   "{\"a\":2,\"batch_size\":2,\"batch_index\":1}]");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, copies_field_with_copy_index)
{
	void *st = open_agg(&plg__batch_replicate,
			    "copies_field: n");

	agg_expect(&plg__batch_replicate, st,
		   "[{\"id\":\"a\",\"n\":2},{\"id\":\"b\",\"n\":0},{\"id\":\"c\",\"n\":3}]",
		   false,
		   "[{\"id\":\"a\",\"n\":2,\"copy_index\":0},"
		   "{\"id\":\"a\",\"n\":2,\"copy_index\":1},"
		   "{\"id\":\"c\",\"n\":3,\"copy_index\":0},"
		   "{\"id\":\"c\",\"n\":3,\"copy_index\":1},"
		   "{\"id\":\"c\",\"n\":3,\"copy_index\":2}]");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, string_null_and_missing_copies)
{
	void *st = open_agg(&plg__batch_replicate,
			    "copies_field: n\ndefault_copies: 2\n"
			    "include_copy_index: false");

	agg_expect(&plg__batch_replicate, st,
		   "[{\"id\":1,\"n\":\" 3 \"},{\"id\":2},{\"id\":3,\"n\":null},"
		   "{\"id\":4,\"n\":\"\"},{\"id\":5,\"n\":\"+1\"}]", false,
		   "[{\"id\":1,\"n\":\" 3 \"},{\"id\":1,\"n\":\" 3 \"},"
		   "{\"id\":1,\"n\":\" 3 \"},{\"id\":2},{\"id\":2},"
		   "{\"id\":3,\"n\":null},{\"id\":3,\"n\":null},"
		   "{\"id\":4,\"n\":\"\"},{\"id\":4,\"n\":\"\"},{\"id\":5,\"n\":\"+1\"}]");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, default_copies_without_copies_field)
{
	void *zero = open_agg(&plg__batch_replicate, "default_copies: 0");
	void *two = open_agg(&plg__batch_replicate,
			     "default_copies: 2\nattach_batch_info: true");

	agg_expect(&plg__batch_replicate, zero, "[{\"n\":5},{}]", false, "[]");
	agg_expect(&plg__batch_replicate, two, "[{\"n\":5}]", false,
		   "[{\"n\":5,\"batch_size\":1,\"batch_index\":0,\"copy_index\":0},"
		   "{\"n\":5,\"batch_size\":1,\"batch_index\":0,\"copy_index\":1}]");
	plg__batch_replicate.close(zero);
	plg__batch_replicate.close(two);
}

Test(batch_replicate, bad_copies_fail_naming_member_and_field)
{
	void *st = open_agg(&plg__batch_replicate, "copies_field: qty");
	const plg_aggregation_ops *o = &plg__batch_replicate;

	agg_expect_err(o, st, "[{\"qty\":1},{\"qty\":-2}]", false,
		       "batch member 1", "field 'qty' is negative (-2)");
	agg_expect_err(o, st, "[{\"qty\":2.0}]", false, "batch member 0",
		       "field 'qty' is not an integer (a real number)");
	agg_expect_err(o, st, "[{\"qty\":true}]", false, "batch member 0",
		       "'qty' is not an integer");
	agg_expect_err(o, st, "[{\"qty\":1},{\"qty\":1},{\"qty\":\"2x\"}]", false,
		       "batch member 2", "'qty' is a string that is not an integer");
	agg_expect_err(o, st, "[{\"qty\":\"-\"}]", false, "batch member 0", "'qty'");
	agg_expect_err(o, st, "[{\"qty\":\"-3\"}]", false, "batch member 0",
		       "is negative (-3)");
	agg_expect_err(o, st, "[{\"qty\":10001}]", false, "batch member 0",
		       "above max_copies (10001)");
	agg_expect_err(o, st, "[{\"qty\":\"99999999999999999999999\"}]", false,
		       "batch member 0", "above max_copies");
	agg_expect_err(o, st, "[{\"qty\":[1]}]", false, "batch member 0",
		       "'qty' is not an integer");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, max_copies_bounds_each_member)
{
	const plg_aggregation_ops *o = &plg__batch_replicate;
	void *st = open_agg(o, "copies_field: qty\nmax_copies: 3");
	core_err err = { 0 };

	agg_expect(o, st, "[{\"qty\":3}]", false,
		   "[{\"qty\":3,\"copy_index\":0},{\"qty\":3,\"copy_index\":1},"
		   "{\"qty\":3,\"copy_index\":2}]");
	agg_expect_err(o, st, "[{\"qty\":1},{\"qty\":4}]", false, "batch member 1",
		       "above max_copies (4)");
	plg__batch_replicate.close(st);
	cr_assert_eq(agg_open_err(o, "max_copies: 2\ndefault_copies: 3", &err), CORE_ECONFIG);
	has(&err, "default_copies (3) exceeds max_copies (2)");
	cr_assert_eq(agg_open_err(o, "max_copies: 0", &err), CORE_ECONFIG);
	has(&err, "max_copies: expected an integer from 1 to 10000");
}

Test(batch_replicate, passthrough_ignores_copies)
{
	void *st = open_agg(&plg__batch_replicate,
			    "copies_field: n\ndefault_copies: 0\n"
			    "attach_batch_info: true");

	agg_expect(&plg__batch_replicate, st,
		   "[{\"n\":3},{\"n\":\"bad\"},{}]", true,
		   "[{\"n\":3,\"batch_size\":3,\"batch_index\":0,\"copy_index\":0},"
		   "{\"n\":\"bad\",\"batch_size\":3,\"batch_index\":1,\"copy_index\":0},"
		   "{\"batch_size\":3,\"batch_index\":2,\"copy_index\":0}]");
	plg__batch_replicate.close(st);
}

Test(batch_replicate, never_overwrites)
{
	void *st = open_agg(&plg__batch_replicate, "attach_batch_info: true");
	void *lax = open_agg(&plg__batch_replicate, "include_copy_index: false");

	agg_expect_err(&plg__batch_replicate, st,
		       "[{\"a\":1},{\"batch_index\":7}]", false,
		       "batch member 1", "field 'batch_index' is already in the row");
	agg_expect_err(&plg__batch_replicate, st, "[{\"copy_index\":7}]", true,
		       "batch member 0", "'copy_index'");
	agg_expect(&plg__batch_replicate, lax,
		   "[{\"batch_index\":7,\"copy_index\":1}]", false,
		   "[{\"batch_index\":7,\"copy_index\":1}]");
	plg__batch_replicate.close(st);
	plg__batch_replicate.close(lax);
}

Test(batch_replicate, copies_are_distinct_rows_sharing_values)
{
	void *st = open_agg(&plg__batch_replicate, "default_copies: 2");
	json_t *m = js("{\"deep\":{\"k\":[1]}}"), *out = NULL;
	core_err err = { 0 };

	cr_assert_eq(plg__batch_replicate.flush(st, &m, 1, false, &out, &err), 0);
	cr_assert_eq(json_array_size(out), 2);
	cr_assert_neq(json_array_get(out, 0), json_array_get(out, 1));
	cr_assert_eq(json_object_get(json_array_get(out, 1), "deep"),
		     json_object_get(m, "deep"));
	json_decref(out);
	cr_assert_eq(m->refcount, 1);
	json_decref(m);
	plg__batch_replicate.close(st);
}

Test(batch_replicate, bad_options)
{
	const plg_aggregation_ops *o = &plg__batch_replicate;
	core_err err = { 0 };

	cr_assert_eq(agg_open_err(o, "copies_feild: n", &err), CORE_ECONFIG);
	has(&err, "did you mean 'copies_field'");
	cr_assert_eq(agg_open_err(o, "default_copies: -1", &err), CORE_ECONFIG);
	has(&err, "t.yaml:1:17: default_copies: expected an integer from 0 to 10000");
	cr_assert_eq(agg_open_err(o, "default_copies: two", &err), CORE_ECONFIG);
	has(&err, "expected an integer");
	cr_assert_eq(agg_open_err(o, "include_copy_index: 1", &err), CORE_ECONFIG);
	has(&err, "include_copy_index: expected true or false");
	cr_assert_eq(agg_open_err(o, "attach_batch_info: [x]", &err), CORE_ECONFIG);
	cr_assert_eq(agg_open_err(o, "copies_field: batch_size\n"
				  "attach_batch_info: true", &err), CORE_ECONFIG);
	has(&err, "collides");
	cr_assert_eq(agg_open_err(o, "copies_field: copy_index", &err),
		     CORE_ECONFIG);
	cr_assert_eq(agg_open_err(o, "copies_field: ''", &err), CORE_ECONFIG);
	cr_assert_eq(agg_open_err(o, "schema: [1]", &err), CORE_ECONFIG);
	cr_assert_eq(agg_open_err(o, "- a", &err), CORE_ECONFIG);
}

Test(batch_replicate, copies_field_named_like_batch_info_when_off)
{
	void *st = open_agg(&plg__batch_replicate,
			    "copies_field: batch_size\ninclude_copy_index: false");

	agg_expect(&plg__batch_replicate, st, "[{\"batch_size\":2}]", false,
		   "[{\"batch_size\":2},{\"batch_size\":2}]");
	plg__batch_replicate.close(st);
}

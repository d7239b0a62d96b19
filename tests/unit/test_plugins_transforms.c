/* test_plugins_transforms.c — passthrough, field_mapper, truncate, the
 * registry and plg_source_row_release. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

static core_doc *docs[8];
static size_t ndocs;

static void teardown(void)
{
	while (ndocs)
		core_doc_free(docs[--ndocs]);
}

TestSuite(passthrough, .fini = teardown, .timeout = 10);
TestSuite(field_mapper, .fini = teardown, .timeout = 10);
TestSuite(truncate, .fini = teardown, .timeout = 10);
TestSuite(registry, .timeout = 10);

static const core_node *opts(const char *yaml)
{
	core_err err = { 0 };

	cr_assert_lt(ndocs, 8);
	cr_assert_eq(core_doc_parse("test.yaml", yaml, strlen(yaml), &docs[ndocs],
				    &err), 0, "%s", err.msg);
	return core_doc_root(docs[ndocs++]);
}

static void *open_tf(const plg_transform_ops *ops, const char *yaml)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(ops->open(NULL, opts(yaml), &st, &err), 0, "%s", err.msg);
	return st;
}

static int open_err(const plg_transform_ops *ops, const char *yaml,
		    core_err *err)
{
	void *st = NULL;
	int rc = ops->open(NULL, opts(yaml), &st, err);

	cr_assert_null(st);
	return rc;
}

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* Runs one row through; returns the result, *out the compact output. */
static int run(const plg_transform_ops *ops, void *st, const char *in,
	       char **out, core_err *err)
{
	json_t *row = js(in), *before = json_deep_copy(row), *o = NULL;
	int rc = ops->process(st, row, &o, NULL, err);

	cr_assert(json_equal(row, before), "the input row was modified");
	*out = NULL;
	if (!rc) {
		cr_assert_not_null(o);
		*out = json_dumps(o, JSON_COMPACT);
		json_decref(o);
	}
	json_decref(before);
	json_decref(row);
	return rc;
}

static void expect(const plg_transform_ops *ops, void *st, const char *in,
		   const char *want)
{
	core_err err = { 0 };
	char *got;

	cr_assert_eq(run(ops, st, in, &got, &err), 0, "%s", err.msg);
	cr_assert_str_eq(got, want);
	free(got);
}

static void expect_err(const plg_transform_ops *ops, void *st, const char *in,
		       const char *needle)
{
	core_err err = { 0 };
	char *got;

	cr_assert_eq(run(ops, st, in, &got, &err), CORE_EDATA, "got %s", got);
	cr_assert(strstr(err.msg, needle), "'%s' not in: %s", needle, err.msg);
}

/* --------------------------------------------------------- passthrough */

Test(passthrough, returns_the_row)
{
	void *st = open_tf(&plg__passthrough, "{}");
	json_t *row = js("{\"b\":1,\"a\":[2]}"), *out = NULL;
	core_err err = { 0 };

	cr_assert_eq(plg__passthrough.process(st, row, &out, NULL, &err), 0);
	cr_assert(json_equal(out, row));
	json_decref(out);
	cr_assert_eq(row->refcount, 1, "the output reference was released");
	json_decref(row);
	plg__passthrough.close(st);
	plg__passthrough.close(NULL);
}

Test(passthrough, validate_input_checks_schema)
{
	void *st = open_tf(&plg__passthrough,
			   "validate_input: true\nschema:\n  mode: fixed\n"
			   "  fields: ['id: int', 'name: str']");

	expect(&plg__passthrough, st, "{\"id\":1,\"name\":\"x\"}",
	       "{\"id\":1,\"name\":\"x\"}");
	expect_err(&plg__passthrough, st, "{\"id\":\"1\",\"name\":\"x\"}", "id");
	expect_err(&plg__passthrough, st, "{\"id\":1,\"name\":\"x\",\"z\":0}", "z");
	plg__passthrough.close(st);
}

Test(passthrough, no_validation_by_default)
{
	void *st = open_tf(&plg__passthrough,
			   "schema:\n  mode: fixed\n  fields: ['id: int']");

	expect(&plg__passthrough, st, "{\"id\":\"nope\",\"x\":1}",
	       "{\"id\":\"nope\",\"x\":1}");
	plg__passthrough.close(st);
}

Test(passthrough, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(open_err(&plg__passthrough, "validate_inptu: true", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "validate_input"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__passthrough, "validate_input: maybe", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "test.yaml:1:"), "%s", err.msg);
}

/* -------------------------------------------------------- field_mapper */

Test(field_mapper, rename_keeps_positions)
{
	void *st = open_tf(&plg__field_mapper, "mapping:\n  b: beta\n  d: delta");

	expect(&plg__field_mapper, st, "{\"a\":1,\"b\":2,\"c\":3,\"d\":4}",
	       "{\"a\":1,\"beta\":2,\"c\":3,\"delta\":4}");
	plg__field_mapper.close(st);
}

Test(field_mapper, select_only_in_mapping_order)
{
	void *st = open_tf(&plg__field_mapper,
			   "mapping:\n  c: x\n  a: y\nselect_only: true");

	expect(&plg__field_mapper, st, "{\"a\":1,\"b\":2,\"c\":3}",
	       "{\"x\":3,\"y\":1}");
	expect(&plg__field_mapper, st, "{\"a\":1}", "{\"y\":1}");
	plg__field_mapper.close(st);
}

Test(field_mapper, missing_source_skipped_unless_strict)
{
	void *lax = open_tf(&plg__field_mapper, "mapping:\n  gone: g\n  a: b");
	void *strict = open_tf(&plg__field_mapper,
			       "mapping:\n  gone: g\n  a: b\nstrict: true");

	expect(&plg__field_mapper, lax, "{\"a\":1}", "{\"b\":1}");
	expect_err(&plg__field_mapper, strict, "{\"a\":1}", "'gone'");
	expect(&plg__field_mapper, strict, "{\"gone\":0,\"a\":1}", "{\"g\":0,\"b\":1}");
	plg__field_mapper.close(lax);
	plg__field_mapper.close(strict);
}

Test(field_mapper, nested_source)
{
	void *st = open_tf(&plg__field_mapper,
			   "mapping:\n  meta.author: author\n  meta.x.y: deep\n"
			   "strict: true");

	expect(&plg__field_mapper, st,
	       "{\"id\":1,\"meta\":{\"author\":\"ann\",\"x\":{\"y\":[1]}}}",
	       "{\"id\":1,\"meta\":{\"author\":\"ann\",\"x\":{\"y\":[1]}},"
	       "\"author\":\"ann\",\"deep\":[1]}");
	expect_err(&plg__field_mapper, st, "{\"meta\":{\"author\":\"ann\",\"x\":1}}",
		   "'meta.x.y'");
	plg__field_mapper.close(st);
}

Test(field_mapper, nested_select_only)
{
	void *st = open_tf(&plg__field_mapper,
			   "mapping:\n  id: id\n  meta.author: author\nselect_only: true");

	expect(&plg__field_mapper, st,
	       "{\"id\":1,\"meta\":{\"author\":\"ann\"},\"z\":0}",
	       "{\"id\":1,\"author\":\"ann\"}");
	plg__field_mapper.close(st);
}

Test(field_mapper, dotted_top_level_key_wins)
{
	void *st = open_tf(&plg__field_mapper, "mapping:\n  a.b: ab");

	expect(&plg__field_mapper, st, "{\"a.b\":1,\"a\":{\"b\":2}}",
	       "{\"ab\":1,\"a\":{\"b\":2}}");
	plg__field_mapper.close(st);
}

Test(field_mapper, target_collision_and_swap)
{
	void *st = open_tf(&plg__field_mapper, "mapping:\n  a: b");
	void *swap = open_tf(&plg__field_mapper, "mapping:\n  a: b\n  b: a");

	expect(&plg__field_mapper, st, "{\"a\":1,\"b\":2,\"c\":3}", "{\"b\":1,\"c\":3}");
	expect(&plg__field_mapper, st, "{\"b\":2,\"a\":1}", "{\"b\":1}");
	expect(&plg__field_mapper, swap, "{\"a\":1,\"b\":2}", "{\"b\":1,\"a\":2}");
	plg__field_mapper.close(st);
	plg__field_mapper.close(swap);
	/* a chain shifts the values; ELSPETH would lose a's (ADR 0054) */
	st = open_tf(&plg__field_mapper, "mapping:\n  a: b\n  b: c");
	expect(&plg__field_mapper, st, "{\"a\":1,\"b\":2,\"d\":4}", "{\"b\":1,\"c\":2,\"d\":4}");
	plg__field_mapper.close(st);
}

/* A 0.7.1-format pipeline refuses what 0.7.1's FieldMapperConfig
 * refuses, with its messages (checked against 0.7.1's own model). */
Test(field_mapper, v07_refuses_overlaps_and_duplicate_targets)
{
	static const struct {
		const char *yaml, *msg;
	} cases[] = {
		{ "mapping:\n  a: x\n  b: x", "Mapping has duplicate target field names: "
		  "'x' <- ['a', 'b']. Multiple sources mapping to the same target causes "
		  "silent data loss." },
		{ "mapping:\n  a: b\n  b: a", "Mapping contains an overlapping rename graph: "
		  "'a' is both target for ['b'] and source, 'b' is both target for ['a'] and "
		  "source. Targets that are also sources are order-dependent and can cause "
		  "silent data loss." },
		{ "mapping:\n  a: b\n  b: c", "'b' is both target for ['a'] and source." },
	};
	plg_env v07 = { .v07 = true };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		core_err err = { 0 };
		void *st = NULL;

		cr_assert_neq(plg__field_mapper.open(&v07, opts(cases[i].yaml), &st, &err), 0,
			      "case %zu accepted", i);
		cr_assert_null(st);
		cr_assert(strstr(err.msg, cases[i].msg), "case %zu: %s", i, err.msg);
		/* 0.4.1's format runs them (ADR 0054) */
		st = open_tf(&plg__field_mapper, cases[i].yaml);
		plg__field_mapper.close(st);
	}
	plg__field_mapper.close(open_tf(&plg__field_mapper, "mapping:\n  a: a\n  b: c"));
	{
		core_err err = { 0 };
		void *st = NULL;

		cr_assert_eq(plg__field_mapper.open(&v07, opts("mapping:\n  a: a\n  b: c"), &st,
						    &err), 0, "an identity is no overlap: %s", err.msg);
		plg__field_mapper.close(st);
	}
}

Test(field_mapper, output_is_a_new_object)
{
	void *st = open_tf(&plg__field_mapper, "mapping: {}");
	json_t *row = js("{\"a\":1}"), *out = NULL;
	core_err err = { 0 };

	cr_assert_eq(plg__field_mapper.process(st, row, &out, NULL, &err), 0);
	cr_assert_neq(out, row);
	cr_assert(json_equal(out, row));
	json_decref(out);
	json_decref(row);
	plg__field_mapper.close(st);
}

Test(field_mapper, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(open_err(&plg__field_mapper, "mapping: [a, b]", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "mapping"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__field_mapper, "mapping:\n  a: {x: 1}", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "mapping.a"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__field_mapper, "mapping: {}\nselct_only: true", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "select_only"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__field_mapper, "mapping:\n  a: ''", &err),
		     CORE_ECONFIG);
}

/* ------------------------------------------------------------ truncate */

Test(truncate, cuts_ascii)
{
	void *st = open_tf(&plg__truncate, "fields:\n  s: 3\n  t: 10");

	expect(&plg__truncate, st, "{\"s\":\"abcdef\",\"t\":\"short\",\"u\":\"abcdef\"}",
	       "{\"s\":\"abc\",\"t\":\"short\",\"u\":\"abcdef\"}");
	expect(&plg__truncate, st, "{\"s\":\"abc\"}", "{\"s\":\"abc\"}");
	plg__truncate.close(st);
}

Test(truncate, counts_code_points_not_bytes)
{
	void *st = open_tf(&plg__truncate, "fields:\n  s: 3");
	json_t *row = js("{\"s\":\"\\u00e9\\u65e5\\ud83d\\ude00x\"}"), *out = NULL;
	core_err err = { 0 };

	/* é (2 bytes), 日 (3 bytes), 😀 (4 bytes), x */
	cr_assert_eq(plg__truncate.process(st, row, &out, NULL, &err), 0, "%s", err.msg);
	cr_assert_str_eq(json_string_value(json_object_get(out, "s")),
			 "\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
	json_decref(out);
	json_decref(row);
	row = js("{\"s\":\"\\u00e9\\u65e5\\ud83d\\ude00\"}");
	cr_assert_eq(plg__truncate.process(st, row, &out, NULL, &err), 0);
	cr_assert(json_equal(out, row), "exactly max characters is kept");
	json_decref(out);
	json_decref(row);
	plg__truncate.close(st);
}

Test(truncate, suffix_counts_within_max)
{
	void *st = open_tf(&plg__truncate, "fields:\n  s: 6\nsuffix: '...'");
	void *uni = open_tf(&plg__truncate, "fields:\n  s: 4\nsuffix: \"\xe2\x80\xa6\"");

	expect(&plg__truncate, st, "{\"s\":\"abcdefgh\"}", "{\"s\":\"abc...\"}");
	expect(&plg__truncate, st, "{\"s\":\"abcdef\"}", "{\"s\":\"abcdef\"}");
	expect(&plg__truncate, uni, "{\"s\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}",
	       "{\"s\":\"\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x80\xa6\"}");
	plg__truncate.close(st);
	plg__truncate.close(uni);
}

Test(truncate, suffix_not_shorter_than_max_just_cuts)
{
	void *st = open_tf(&plg__truncate, "fields:\n  s: 3\nsuffix: '[more]'");
	void *eq = open_tf(&plg__truncate, "fields:\n  s: 3\nsuffix: '...'");

	expect(&plg__truncate, st, "{\"s\":\"abcdef\"}", "{\"s\":\"abc\"}");
	expect(&plg__truncate, eq, "{\"s\":\"abcdef\"}", "{\"s\":\"abc\"}");
	plg__truncate.close(st);
	plg__truncate.close(eq);
}

Test(truncate, missing_and_non_string_fields)
{
	void *lax = open_tf(&plg__truncate, "fields:\n  s: 2");
	void *strict = open_tf(&plg__truncate, "fields:\n  s: 2\nstrict: true");

	expect(&plg__truncate, lax, "{\"a\":1}", "{\"a\":1}");
	expect(&plg__truncate, lax, "{\"s\":12345}", "{\"s\":12345}");
	expect(&plg__truncate, lax, "{\"s\":null}", "{\"s\":null}");
	expect_err(&plg__truncate, strict, "{\"a\":1}", "'s'");
	expect_err(&plg__truncate, strict, "{\"s\":12345}", "not a string");
	expect(&plg__truncate, strict, "{\"s\":\"xyz\",\"a\":1}", "{\"s\":\"xy\",\"a\":1}");
	plg__truncate.close(lax);
	plg__truncate.close(strict);
}

Test(truncate, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(open_err(&plg__truncate, "suffix: x", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "fields"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__truncate, "fields:\n  s: 0", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "fields.s"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__truncate, "fields:\n  s: long", &err),
		     CORE_ECONFIG);
	cr_assert_eq(open_err(&plg__truncate, "fields: [s]", &err), CORE_ECONFIG);
	cr_assert_eq(open_err(&plg__truncate, "fields: {s: 1}\nstrcit: true", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "strict"), "%s", err.msg);
}

/* ------------------------------------------------ registry, row release */

Test(registry, finds_every_plugin_by_name)
{
	cr_assert_eq(plg_find_source("csv"), &plg__csv_source);
	cr_assert_eq(plg_find_source("json"), &plg__json_source);
	cr_assert_eq(plg_find_transform("passthrough"), &plg__passthrough);
	cr_assert_eq(plg_find_transform("field_mapper"), &plg__field_mapper);
	cr_assert_eq(plg_find_transform("truncate"), &plg__truncate);
	cr_assert_eq(plg_find_sink("csv"), &plg__csv_sink);
	cr_assert_eq(plg_find_sink("json"), &plg__json_sink);
	cr_assert_null(plg_find_sink("parquet"));
	cr_assert_null(plg_find_transform("csv"));
	cr_assert_null(plg_find_source(NULL));
}

Test(registry, describe_lists_each_kind)
{
	const plg_kind kinds[] = { PLG_SOURCE, PLG_TRANSFORM, PLG_SINK, PLG_AGGREGATION };
	const size_t want[] = { 4, 14, 5, 14 };
	const char *name, *desc;

	for (size_t k = 0; k < 4; k++) {
		size_t i = 0;

		while (plg_describe(kinds[k], i, &name, &desc)) {
			cr_assert(name && name[0]);
			cr_assert(desc && desc[0], "%s has a description", name);
			i++;
		}
		cr_assert_eq(i, want[k]);
	}
	cr_assert(plg_describe(PLG_TRANSFORM, 1, &name, NULL));
	cr_assert_str_eq(name, "field_mapper");
}

Test(registry, source_row_release_frees_and_zeroes)
{
	plg_source_row r = { json_object(), strdup("bad"), strdup("line 3") };

	plg_source_row_release(&r);
	cr_assert_null(r.row);
	cr_assert_null(r.error);
	cr_assert_null(r.where);
	plg_source_row_release(&r);
}

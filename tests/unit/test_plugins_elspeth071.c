/* test_plugins_elspeth071.c — ELSPETH 0.7.1's plugins (ADR 0045):
 * type_coerce, value_transform, line_explode, report_assemble, and the
 * text source and sink. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"
#include "plg_test.h"

static char dir[] = "/tmp/elspeth071-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[64];

	plgt_free_docs();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	strcpy(dir, "/tmp/elspeth071-XXXXXX");
}

TestSuite(v071, .init = setup, .fini = teardown, .timeout = 10);

/* Runs transform `name` with options yaml on row; *got is its output (or
 * NULL) and the return its rc; err->msg the reason. */
static int transform(const char *name, const char *yaml, const char *row,
		     json_t **got, core_err *err)
{
	const plg_transform_ops *ops = plg_find_transform(name);
	void *st = NULL;
	json_t *in = js(row);
	int rc;

	cr_assert_not_null(ops, "%s", name);
	memset(err, 0, sizeof(*err));
	cr_assert_eq(ops->open(NULL, opts(yaml), &st, err), 0, "%s", err->msg);
	*got = NULL;
	rc = ops->process(st, in, got, NULL, err);
	ops->close(st);
	json_decref(in);
	return rc;
}

static void transform_ok(const char *name, const char *yaml, const char *row,
			 const char *want)
{
	json_t *got;
	core_err err;

	cr_assert_eq(transform(name, yaml, row, &got, &err), 0, "%s", err.msg);
	same(got, want);
	json_decref(got);
}

static void transform_fails(const char *name, const char *yaml, const char *row,
			    const char *needle)
{
	json_t *got;
	core_err err;

	cr_assert_eq(transform(name, yaml, row, &got, &err), CORE_EDATA, "%s", row);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

static void bad_options(plg_kind kind, const char *name, const char *yaml,
			const char *needle)
{
	core_err err = { 0 };
	void *st = NULL;
	int rc = kind == PLG_TRANSFORM ?
		plg_find_transform(name)->open(NULL, opts(yaml), &st, &err) :
		plg_find_aggregation(name)->open(NULL, opts(yaml), &st, &err);

	cr_assert_eq(rc, CORE_ECONFIG, "%s: %s", yaml, err.msg);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

#define TC "schema: {mode: observed}\nconversions:\n"

Test(v071, type_coerce_converts_strictly)
{
	transform_ok("type_coerce", TC "- {field: p, to: float}\n- {field: q, to: int}\n"
		     "- {field: s, to: bool}\n- {field: n, to: str}\n",
		     "{\"p\": \" 1e3 \", \"q\": \"-1_000\", \"s\": \" Yes\", \"n\": 3.0, \"x\": 1}",
		     "{\"p\": 1000.0, \"q\": -1000, \"s\": true, \"n\": \"3.0\", \"x\": 1}");
	transform_ok("type_coerce", TC "- {field: a, to: int}\n- {field: b, to: bool}\n"
		     "- {field: c, to: str}\n- {field: d, to: float}\n",
		     "{\"a\": 4.0, \"b\": 0, \"c\": true, \"d\": 7}",
		     "{\"a\": 4, \"b\": false, \"c\": \"True\", \"d\": 7.0}");
	transform_fails("type_coerce", TC "- {field: a, to: int}\n", "{\"a\": 3.5}",
			"float 3.5 has fractional part");
	transform_fails("type_coerce", TC "- {field: a, to: int}\n", "{\"a\": \"1e3\"}",
			"'1e3' is not a valid integer string");
	transform_fails("type_coerce", TC "- {field: a, to: int}\n", "{\"a\": true}",
			"bool cannot be converted to int");
	transform_fails("type_coerce", TC "- {field: a, to: float}\n", "{\"a\": \"nan\"}",
			"'nan' produces non-finite value");
	transform_fails("type_coerce", TC "- {field: a, to: bool}\n", "{\"a\": 2}",
			"only 0 and 1 can be converted to bool, got 2");
	transform_fails("type_coerce", TC "- {field: a, to: bool}\n", "{\"a\": \"maybe\"}",
			"'maybe' is not a valid boolean string");
	transform_fails("type_coerce", TC "- {field: a, to: str}\n", "{\"a\": [1]}",
			"list is not a scalar type");
	transform_fails("type_coerce", TC "- {field: a, to: str}\n", "{\"a\": null}",
			"field 'a' is None");
	transform_fails("type_coerce", TC "- {field: z, to: str}\n", "{\"a\": 1}",
			"missing_field: Field 'z' not found in row");
	bad_options(PLG_TRANSFORM, "type_coerce", TC "- {field: a, to: decimal}\n", "decimal");
	bad_options(PLG_TRANSFORM, "type_coerce", "schema: {mode: observed}\nconversions: []\n",
		    "at least one conversion");
}

#define VT "schema: {mode: observed}\noperations:\n"

Test(v071, value_transform_sees_earlier_operations)
{
	transform_ok("value_transform", VT "- {target: total, expression: \"row['p'] * row['q']\"}\n"
		     "- {target: p, expression: \"row['p'] * 0.5\"}\n"
		     "- {target: half_total, expression: \"row['p'] * row['q']\"}\n",
		     "{\"p\": 3.0, \"q\": 4}",
		     "{\"p\": 1.5, \"q\": 4, \"total\": 12.0, \"half_total\": 6.0}");
	transform_fails("value_transform", VT "- {target: t, expression: \"row['nope'] + 1\"}\n",
			"{\"p\": 1}", "invalid_input: operation for 't' failed");
	bad_options(PLG_TRANSFORM, "value_transform", VT "- {target: t, expression: \"row[\"}\n",
		    "Expression syntax error");
	bad_options(PLG_TRANSFORM, "value_transform", VT "- {target: t, expression: \"  \"}\n",
		    "expression must not be empty");
}

#define LE "schema: {mode: observed}\nsource_field: text\n"

Test(v071, line_explode_splits_as_python)
{
	json_t *got;
	core_err err;

	/* LF, CRLF, lone CR, VT, U+2028; no row after the final LF */
	cr_assert_eq(transform("line_explode", LE, "{\"id\": 1, \"text\": \"a\\nb\\r\\nc\\rd\\u000be\\u2028f\\n\"}",
			       &got, &err), 0, "%s", err.msg);
	cr_assert_eq(json_array_size(got), 6);
	same(json_array_get(got, 0), "{\"id\": 1, \"line\": \"a\", \"line_index\": 0}");
	same(json_array_get(got, 5), "{\"id\": 1, \"line\": \"f\", \"line_index\": 5}");
	json_decref(got);
	transform_ok("line_explode", LE "include_index: false\noutput_field: l\n",
		     "{\"text\": \"one\\n\\ntwo\"}",
		     "[{\"l\": \"one\"}, {\"l\": \"\"}, {\"l\": \"two\"}]");
	transform_fails("line_explode", LE, "{\"text\": \"\"}", "empty string");
	transform_fails("line_explode", LE "max_lines: 2\n", "{\"text\": \"a\\nb\\nc\"}",
			"too_many_lines");
	bad_options(PLG_TRANSFORM, "line_explode", LE "output_field: text\n",
		    "output_field and source_field must differ");
	bad_options(PLG_TRANSFORM, "line_explode", LE "max_lines: 100001\n", "max_lines");
}

Test(v071, report_assemble_renders_a_page)
{
	const plg_aggregation_ops *ops = plg_find_aggregation("report_assemble");
	json_t *rows[2] = { js("{\"t\": \"a < b\"}"), js("{\"t\": \"c & 'd'\"}") };
	plg_batch b = { .flush_index = 2, .rows_seen_total = 4, .row_start = 3,
			.row_end = 4, .batch_size = 2, .trigger = "count" };
	core_err err = { 0 };
	json_t *out = NULL;
	void *st;

	cr_assert_eq(ops->open(NULL, opts("schema: {mode: observed}\ntext_field: t\n"
					  "format: html_fragment\ntitle: R&D\njoin_with: \"|\"\n"),
			       &st, &err), 0, "%s", err.msg);
	cr_assert_eq(ops->flush_batch(st, rows, 2, false, &b, &out, &err), 0, "%s", err.msg);
	same(out, "[{\"report_body\": \"<h1>R&amp;D</h1>\\n<p>a &lt; b</p>|<p>c &amp; &#x27;d&#x27;</p>\","
		  "\"report_format\": \"html_fragment\", \"report_index\": 2, \"line_start\": 3,"
		  "\"line_end\": 4, \"line_count\": 2, \"lines_seen_total\": 4,"
		  "\"flush_trigger\": \"count\", \"is_end_of_source_report\": false}]");
	json_decref(out);
	ops->close(st);
	cr_assert_eq(ops->open(NULL, opts("schema: {mode: observed}\ntext_field: t\n"
					  "format: markdown\ntitle: T\n"), &st, &err), 0);
	cr_assert_eq(ops->flush_batch(st, rows, 2, false, &b, &out, &err), 0, "%s", err.msg);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 0), "report_body")),
			 "# T\n\na < b\nc & 'd'");
	json_decref(out);
	ops->close(st);
	bad_options(PLG_AGGREGATION, "report_assemble",
		    "schema: {mode: observed}\ntext_field: t\noutput_field: line_count\n",
		    "collides with a reserved report metadata field");
	json_decref(rows[0]);
	json_decref(rows[1]);
}

Test(v071, text_source_and_sink)
{
	const plg_source_ops *src = plg_find_source("text");
	const plg_sink_ops *snk = plg_find_sink("text");
	char in[128], out[128], yaml[512], buf[256];
	plg_source_row r;
	plg_write_info info;
	core_err err = { 0 };
	void *s, *k;
	FILE *f;
	int n = 0;
	const char *want[] = { "one", "two  x", "\xef\xbb\xbf" "three", "four" };

	snprintf(in, sizeof(in), "%s/in.txt", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	f = fopen(in, "wb");
	/* CRLF, a lone CR, a blank line, spaces, a BOM kept by utf-8, bad UTF-8 */
	fputs("one\r\n  two  x \r\n\n\xef\xbb\xbfthree\rfour\n\xff\n", f);
	fclose(f);
	snprintf(yaml, sizeof(yaml), "path: %s\ncolumn: line\non_validation_failure: discard\n", in);
	cr_assert_eq(src->open(NULL, opts(yaml), &s, &err), 0, "%s", err.msg);
	snprintf(yaml, sizeof(yaml), "path: %s\nfield: line\nencoding: latin-1\n", out);
	cr_assert_eq(snk->open(NULL, opts(yaml), &k, &err), 0, "%s", err.msg);
	while (src->next(s, &r, &err) == 1) {
		if (n < 4) {
			cr_assert_null(r.error, "%s", r.error);
			cr_assert_str_eq(json_string_value(json_object_get(r.row, "line")), want[n]);
			if (n == 2) /* U+FEFF has no latin-1 byte */
				cr_assert_eq(snk->write(k, r.row, &info, &err), CORE_EDATA);
			else
				cr_assert_eq(snk->write(k, r.row, &info, &err), 0, "%s", err.msg);
		} else {
			cr_assert_not_null(r.error);
			cr_assert(strstr(r.error, "invalid utf-8 encoding"), "%s", r.error);
			cr_assert_str_eq(json_string_value(json_object_get(r.row, "__raw_bytes_hex__")), "ff");
		}
		plg_source_row_release(&r);
		n++;
	}
	cr_assert_eq(n, 5);
	r.row = js("{\"line\": 3}");
	cr_assert_eq(snk->write(k, r.row, &info, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "must be a string"));
	json_decref(r.row);
	r.row = js("{\"line\": \"a\\nb\"}");
	cr_assert_eq(snk->write(k, r.row, &info, &err), CORE_EDATA);
	json_decref(r.row);
	src->close(s);
	cr_assert_eq(snk->close(k, &err), 0, "%s", err.msg);
	f = fopen(out, "rb");
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
	fclose(f);
	cr_assert_str_eq(buf, "one\ntwo  x\nfour\n");
}

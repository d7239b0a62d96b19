/* test_plugins_sinks.c — the csv and json sinks. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

static char dir[64];
static core_doc *docs[8];
static size_t ndocs;

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void setup(void)
{
	strcpy(dir, "/tmp/elspeth-sink-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	while (ndocs)
		core_doc_free(docs[--ndocs]);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(csv_sink, .init = setup, .fini = teardown, .timeout = 10);
TestSuite(json_sink, .init = setup, .fini = teardown, .timeout = 10);

/* The options map of a YAML text; "@" in it stands for the temp dir. */
static const core_node *opts(const char *yaml)
{
	char text[4096], *o = text;
	core_err err = { 0 };

	for (const char *p = yaml; *p && o < text + sizeof(text) - 64; p++) {
		if (*p == '@')
			o += sprintf(o, "%s", dir);
		else
			*o++ = *p;
	}
	*o = '\0';
	cr_assert_lt(ndocs, 8);
	cr_assert_eq(core_doc_parse("test.yaml", text, strlen(text), &docs[ndocs],
				    &err), 0, "%s", err.msg);
	return core_doc_root(docs[ndocs++]);
}

static char *path_in(const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static char *slurp(const char *name, size_t *len)
{
	FILE *fp = fopen(path_in(name), "rb");
	char *buf;
	long n;

	cr_assert_not_null(fp, "cannot open %s", name);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	if (len)
		*len = (size_t)n;
	return buf;
}

static void spit(const char *name, const char *text)
{
	FILE *fp = fopen(path_in(name), "wb");

	cr_assert_not_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void *open_sink(const plg_sink_ops *ops, const char *yaml)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(ops->open(NULL, opts(yaml), &st, &err), 0, "%s", err.msg);
	return st;
}

static int open_err(const plg_sink_ops *ops, const char *yaml, core_err *err)
{
	void *st = NULL;
	int rc = ops->open(NULL, opts(yaml), &st, err);

	cr_assert_null(st);
	return rc;
}

/* Writes a row given as JSON text; returns the write's result. */
static int put(const plg_sink_ops *ops, void *st, const char *json,
	       uint64_t *off, uint64_t *len, core_err *err)
{
	json_error_t jerr;
	json_t *row = json_loads(json, JSON_DECODE_ANY, &jerr);
	plg_write_info info = { 0 };
	int rc;

	cr_assert_not_null(row, "bad test JSON %s: %s", json, jerr.text);
	rc = ops->write(st, row, &info, err);
	if (!rc && off)
		*off = info.offset;
	if (!rc && len)
		*len = info.len;
	json_decref(row);
	return rc;
}

static void put_ok(const plg_sink_ops *ops, void *st, const char *json)
{
	core_err err = { 0 };

	cr_assert_eq(put(ops, st, json, NULL, NULL, &err), 0, "%s", err.msg);
}

static void close_ok(const plg_sink_ops *ops, void *st)
{
	core_err err = { 0 };

	cr_assert_eq(ops->close(st, &err), 0, "%s", err.msg);
}

static void assert_file(const char *name, const char *want)
{
	char *got = slurp(name, NULL);

	cr_assert_str_eq(got, want);
	free(got);
}

/* ----------------------------------------------------------------- csv */

Test(csv_sink, quotes_every_special_character)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");

	put_ok(&plg__csv_sink, st,
	       "{\"plain\":\"abc\",\"comma\":\"a,b\",\"quote\":\"say \\\"hi\\\"\","
	       "\"cr\":\"a\\rb\",\"lf\":\"a\\nb\",\"lead\":\" x\",\"trail\":\"x \","
	       "\"tab\":\"\\tx\",\"inner\":\"a b\",\"empty\":\"\"}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv",
		    "plain,comma,quote,cr,lf,lead,trail,tab,inner,empty\r\n"
		    "abc,\"a,b\",\"say \"\"hi\"\"\",\"a\rb\",\"a\nb\", x,x ,"
		    "\tx,a b,\r\n");
}

Test(csv_sink, quotes_header_names_too)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");

	put_ok(&plg__csv_sink, st, "{\"a,b\":1,\"c\\\"d\":2}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "\"a,b\",\"c\"\"d\"\r\n1,2\r\n");
}

Test(csv_sink, formats_values)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");

	put_ok(&plg__csv_sink, st,
	       "{\"n\":null,\"i\":-42,\"r\":0.1,\"big\":1e21,\"whole\":2.0,"
	       "\"t\":true,\"f\":false,\"o\":{\"k\":[1,2.5]},\"a\":[],"
	       "\"u\":\"h\\u00e9llo \\u65e5\\u672c\"}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv",
		    "n,i,r,big,whole,t,f,o,a,u\r\n"
		    ",-42,0.1,1e+21,2.0,True,False,\"{'k': [1, 2.5]}\",[],"
		    "h\xc3\xa9llo \xe6\x97\xa5\xe6\x9c\xac\r\n");
}

Test(csv_sink, other_delimiter)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv\ndelimiter: ';'");

	put_ok(&plg__csv_sink, st, "{\"a\":\"x,y\",\"b\":\"p;q\"}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a;b\r\nx,y;\"p;q\"\r\n");
}

Test(csv_sink, header_from_first_row_in_its_order)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");

	put_ok(&plg__csv_sink, st, "{\"b\":1,\"a\":2}");
	put_ok(&plg__csv_sink, st, "{\"a\":3,\"b\":4}");
	put_ok(&plg__csv_sink, st, "{\"a\":5}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "b,a\r\n1,2\r\n4,3\r\n,5\r\n");
}

Test(csv_sink, header_from_schema_even_without_rows)
{
	void *st = open_sink(&plg__csv_sink,
			     "path: @/o.csv\nschema:\n  mode: fixed\n"
			     "  fields: ['id: int', 'name: str', 'score: float?']");

	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "id,name,score\r\n");
}

Test(csv_sink, header_from_schema_orders_and_fills_rows)
{
	void *st = open_sink(&plg__csv_sink,
			     "path: @/o.csv\nschema:\n  mode: flexible\n"
			     "  fields: ['id: int', 'name: str', 'score: float?']");

	put_ok(&plg__csv_sink, st, "{\"name\":\"x\",\"id\":1}");
	put_ok(&plg__csv_sink, st, "{\"score\":1.5,\"id\":2,\"name\":\"y\"}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "id,name,score\r\n1,x,\r\n2,y,1.5\r\n");
}

Test(csv_sink, observed_schema_takes_header_from_row)
{
	void *st = open_sink(&plg__csv_sink,
			     "path: @/o.csv\nschema:\n  mode: observed");

	put_ok(&plg__csv_sink, st, "{\"z\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "z\r\n1\r\n");
}

Test(csv_sink, extra_field_is_a_row_error_and_writes_nothing)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");
	core_err err = { 0 };

	put_ok(&plg__csv_sink, st, "{\"a\":1,\"b\":2}");
	cr_assert_eq(put(&plg__csv_sink, st, "{\"a\":1,\"surprise\":3,\"b\":2}",
			 NULL, NULL, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "'surprise'"), "%s", err.msg);
	put_ok(&plg__csv_sink, st, "{\"a\":5,\"b\":6}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a,b\r\n1,2\r\n5,6\r\n");
}

Test(csv_sink, extra_field_against_schema_header)
{
	void *st = open_sink(&plg__csv_sink,
			     "path: @/o.csv\nschema:\n  mode: fixed\n  fields: ['a: int']");
	core_err err = { 0 };

	cr_assert_eq(put(&plg__csv_sink, st, "{\"a\":1,\"b\":2}", NULL, NULL, &err),
		     CORE_EDATA);
	cr_assert(strstr(err.msg, "'b'"), "%s", err.msg);
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a\r\n");
}

Test(csv_sink, failed_first_row_leaves_header_open)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");
	core_err err = { 0 };

	cr_assert_eq(put(&plg__csv_sink, st, "{}", NULL, NULL, &err), CORE_EDATA);
	put_ok(&plg__csv_sink, st, "{\"x\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "x\r\n1\r\n");
}

Test(csv_sink, lone_empty_field_is_quoted)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");

	put_ok(&plg__csv_sink, st, "{\"a\":\"\"}");
	put_ok(&plg__csv_sink, st, "{\"a\":null}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a\r\n\"\"\r\n\"\"\r\n");
}

Test(csv_sink, byte_ranges_match_the_file)
{
	const char *rows[] = { "{\"a\":\"x\",\"b\":1}", "{\"a\":\"q,\\\"r\",\"b\":22}",
			       "{\"a\":\"\\u00e9\\n\",\"b\":null}" };
	const char *want[] = { "x,1\r\n", "\"q,\"\"r\",22\r\n", "\"\xc3\xa9\n\",\r\n" };
	uint64_t off[3], len[3];
	core_err err = { 0 };
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");
	char *file;

	for (int i = 0; i < 3; i++)
		cr_assert_eq(put(&plg__csv_sink, st, rows[i], &off[i], &len[i], &err),
			     0, "%s", err.msg);
	close_ok(&plg__csv_sink, st);
	file = slurp("o.csv", NULL);
	cr_assert_eq(off[0], 5, "the header is not part of the first row");
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(len[i], strlen(want[i]));
		cr_assert_eq(memcmp(file + off[i], want[i], len[i]), 0, "row %d", i);
	}
	free(file);
}

Test(csv_sink, append_keeps_header_and_continues_offsets)
{
	uint64_t off = 0, len = 0;
	core_err err = { 0 };
	void *st;

	spit("o.csv", "a,b\r\n1,2\r\n");
	st = open_sink(&plg__csv_sink, "path: @/o.csv\nmode: append");
	cr_assert_eq(put(&plg__csv_sink, st, "{\"b\":4,\"a\":3}", &off, &len, &err),
		     0, "%s", err.msg);
	cr_assert_eq(off, 10);
	cr_assert_eq(len, 5);
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a,b\r\n1,2\r\n3,4\r\n");
}

Test(csv_sink, append_rejects_fields_not_in_existing_header)
{
	core_err err = { 0 };
	void *st;

	spit("o.csv", "a,b\r\n1,2\r\n");
	st = open_sink(&plg__csv_sink, "path: @/o.csv\nmode: append");
	cr_assert_eq(put(&plg__csv_sink, st, "{\"a\":1,\"c\":2}", NULL, NULL, &err),
		     CORE_EDATA);
	cr_assert(strstr(err.msg, "'c'"), "%s", err.msg);
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a,b\r\n1,2\r\n");
}

Test(csv_sink, append_with_schema_that_differs_is_a_config_error)
{
	core_err err = { 0 };

	spit("o.csv", "a,b\r\n1,2\r\n");
	cr_assert_eq(open_err(&plg__csv_sink,
			      "path: @/o.csv\nmode: append\nschema:\n  mode: fixed\n"
			      "  fields: ['b: int', 'a: int']", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "a, b"), "%s", err.msg);
	assert_file("o.csv", "a,b\r\n1,2\r\n");
}

Test(csv_sink, append_with_matching_schema)
{
	void *st;

	spit("o.csv", "a,\"b c\"\r\n1,2\r\n");
	st = open_sink(&plg__csv_sink,
		       "path: @/o.csv\nmode: append\nschema:\n  mode: fixed\n"
		       "  fields: ['a: int', 'b c: int']");
	put_ok(&plg__csv_sink, st, "{\"a\":3,\"b c\":4}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a,\"b c\"\r\n1,2\r\n3,4\r\n");
}

Test(csv_sink, append_to_missing_or_empty_file_writes_header)
{
	void *st = open_sink(&plg__csv_sink, "path: @/new.csv\nmode: append");

	put_ok(&plg__csv_sink, st, "{\"a\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("new.csv", "a\r\n1\r\n");
	spit("empty.csv", "");
	st = open_sink(&plg__csv_sink, "path: @/empty.csv\nmode: append");
	put_ok(&plg__csv_sink, st, "{\"a\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("empty.csv", "a\r\n1\r\n");
}

Test(csv_sink, append_adds_missing_final_line_end)
{
	void *st;

	spit("o.csv", "a\r\n1");
	st = open_sink(&plg__csv_sink, "path: @/o.csv\nmode: append");
	put_ok(&plg__csv_sink, st, "{\"a\":2}");
	close_ok(&plg__csv_sink, st);
	/* the missing line end is added as "\n" (the file's own is not known) */
	assert_file("o.csv", "a\r\n1\n2\r\n");
}

Test(csv_sink, write_mode_truncates)
{
	void *st;

	spit("o.csv", "old,stuff\r\n1,2\r\n3,4\r\n");
	st = open_sink(&plg__csv_sink, "path: @/o.csv\nmode: write");
	put_ok(&plg__csv_sink, st, "{\"a\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("o.csv", "a\r\n1\r\n");
}

Test(csv_sink, creates_missing_parent_directories)
{
	void *st = open_sink(&plg__csv_sink, "path: @/x/y/z/o.csv");

	put_ok(&plg__csv_sink, st, "{\"a\":1}");
	close_ok(&plg__csv_sink, st);
	assert_file("x/y/z/o.csv", "a\r\n1\r\n");
}

Test(csv_sink, unwritable_path_fails_at_open)
{
	core_err err = { 0 };

	spit("file.txt", "not a directory");
	cr_assert_eq(open_err(&plg__csv_sink, "path: @/file.txt/out.csv", &err),
		     CORE_EIO);
	cr_assert(strstr(err.msg, "file.txt/out.csv"), "%s", err.msg);
	cr_assert(strstr(err.msg, strerror(ENOTDIR)), "%s", err.msg);
	cr_assert_eq(open_err(&plg__csv_sink, "path: @/file.txt/sub/out.csv", &err),
		     CORE_EIO);
	cr_assert(strstr(err.msg, strerror(ENOTDIR)), "%s", err.msg);
}

Test(csv_sink, flush_makes_rows_visible)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv");
	core_err err = { 0 };

	put_ok(&plg__csv_sink, st, "{\"a\":1}");
	cr_assert_eq(plg__csv_sink.flush(st, &err), 0, "%s", err.msg);
	assert_file("o.csv", "a\r\n1\r\n");
	close_ok(&plg__csv_sink, st);
	cr_assert_eq(plg__csv_sink.close(NULL, &err), 0);
}

Test(csv_sink, bad_options)
{
	core_err err = { 0 };

	cr_assert_eq(open_err(&plg__csv_sink, "path: @/o.csv\ndelimter: ';'", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "test.yaml:2:1"), "%s", err.msg);
	cr_assert(strstr(err.msg, "delimiter"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__csv_sink, "delimiter: ';'", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "path"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__csv_sink, "path: @/o.csv\nmode: apend", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "append"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__csv_sink, "path: @/o.csv\ndelimiter: ';;'", &err),
		     CORE_ECONFIG);
	cr_assert_eq(open_err(&plg__csv_sink, "path: @/o.csv\nencoding: latin-1", &err),
		     CORE_EUNSUPPORTED);
	cr_assert(strstr(err.msg, "latin-1"), "%s", err.msg);
	cr_assert_eq(access(path_in("o.csv"), F_OK), -1, "no file on a config error");
}

Test(csv_sink, accepts_utf8_encoding)
{
	void *st = open_sink(&plg__csv_sink, "path: @/o.csv\nencoding: UTF-8");

	close_ok(&plg__csv_sink, st);
}

/* ---------------------------------------------------------------- json */

Test(json_sink, jsonl_one_python_json_dumps_line_per_row)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.jsonl");

	put_ok(&plg__json_sink, st, "{\"z\":1,\"a\":{\"b\":[1,\"x\"]},\"u\":\"\\u00e9\"}");
	put_ok(&plg__json_sink, st, "{\"n\":null,\"t\":true}");
	close_ok(&plg__json_sink, st);
	assert_file("o.jsonl", "{\"z\": 1, \"a\": {\"b\": [1, \"x\"]}, \"u\": \"\\u00e9\"}\n"
		    "{\"n\": null, \"t\": true}\n");
}

Test(json_sink, jsonl_byte_ranges)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.jsonl");
	uint64_t off[2], len[2];
	core_err err = { 0 };
	char *file;

	cr_assert_eq(put(&plg__json_sink, st, "{\"a\":1}", &off[0], &len[0], &err), 0);
	cr_assert_eq(put(&plg__json_sink, st, "{\"b\":\"\\u65e5\"}", &off[1], &len[1],
			 &err), 0);
	close_ok(&plg__json_sink, st);
	file = slurp("o.jsonl", NULL);
	cr_assert_eq(off[0], 0);
	cr_assert_eq(len[0], 9);
	cr_assert_eq(off[1], 9);
	cr_assert_eq(memcmp(file + off[1], "{\"b\": \"\\u65e5\"}\n", len[1]), 0);
	cr_assert_eq(len[1], strlen("{\"b\": \"\\u65e5\"}\n"));
	free(file);
}

Test(json_sink, jsonl_append)
{
	uint64_t off = 0, len = 0;
	core_err err = { 0 };
	void *st;

	spit("o.jsonl", "{\"a\": 1}\n");
	st = open_sink(&plg__json_sink, "path: @/o.jsonl\nmode: append");
	cr_assert_eq(put(&plg__json_sink, st, "{\"a\":2}", &off, &len, &err), 0);
	cr_assert_eq(off, 9);
	close_ok(&plg__json_sink, st);
	assert_file("o.jsonl", "{\"a\": 1}\n{\"a\": 2}\n");
}

Test(json_sink, json_array_open_and_close)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json");
	json_error_t jerr;
	json_t *all;

	put_ok(&plg__json_sink, st, "{\"a\":1,\"b\":\"x\"}");
	put_ok(&plg__json_sink, st, "{\"a\":2}");
	close_ok(&plg__json_sink, st);
	assert_file("o.json", "[{\"a\": 1, \"b\": \"x\"}, {\"a\": 2}]");
	all = json_load_file(path_in("o.json"), 0, &jerr);
	cr_assert_not_null(all, "%s", jerr.text);
	cr_assert_eq(json_array_size(all), 2);
	json_decref(all);
}

Test(json_sink, json_empty_run_is_empty_array)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json");

	close_ok(&plg__json_sink, st);
	assert_file("o.json", "[]");
}

Test(json_sink, json_indent_like_python)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json\nindent: 2");

	put_ok(&plg__json_sink, st, "{\"a\":1,\"b\":{\"c\":[1,2],\"d\":{}},\"e\":[]}");
	put_ok(&plg__json_sink, st, "{\"f\":null}");
	close_ok(&plg__json_sink, st);
	assert_file("o.json",
		    "[\n"
		    "  {\n"
		    "    \"a\": 1,\n"
		    "    \"b\": {\n"
		    "      \"c\": [\n"
		    "        1,\n"
		    "        2\n"
		    "      ],\n"
		    "      \"d\": {}\n"
		    "    },\n"
		    "    \"e\": []\n"
		    "  },\n"
		    "  {\n"
		    "    \"f\": null\n"
		    "  }\n"
		    "]");
}

Test(json_sink, json_indent_zero_is_newlines_only)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json\nindent: 0");

	put_ok(&plg__json_sink, st, "{\"a\":[1]}");
	close_ok(&plg__json_sink, st);
	assert_file("o.json", "[\n{\n\"a\": [\n1\n]\n}\n]");
}

Test(json_sink, json_byte_ranges_hold_each_element)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json\nindent: 4");
	const char *rows[] = { "{\"a\":1}", "{\"b\":[true,0.5]}", "{\"c\":\"\\\"\"}" };
	uint64_t off[3], len[3];
	core_err err = { 0 };
	char *file;

	for (int i = 0; i < 3; i++)
		cr_assert_eq(put(&plg__json_sink, st, rows[i], &off[i], &len[i], &err),
			     0, "%s", err.msg);
	close_ok(&plg__json_sink, st);
	file = slurp("o.json", NULL);
	cr_assert_eq(off[0], 2, "after \"[\\n\"");
	for (int i = 0; i < 3; i++) {
		json_t *want = json_loads(rows[i], 0, NULL);
		json_t *got = json_loadb(file + off[i], len[i], 0, NULL);

		cr_assert_not_null(got, "row %d: %.*s", i, (int)len[i], file + off[i]);
		cr_assert(json_equal(want, got), "row %d", i);
		cr_assert_eq(memcmp(file + off[i], "    {", 5), 0);
		cr_assert_eq(file[off[i] + len[i] - 1], '}');
		json_decref(want);
		json_decref(got);
	}
	free(file);
}

Test(json_sink, format_by_extension_or_option)
{
	void *st = open_sink(&plg__json_sink, "path: @/a.jsonl");

	put_ok(&plg__json_sink, st, "{\"a\":1}");
	close_ok(&plg__json_sink, st);
	assert_file("a.jsonl", "{\"a\": 1}\n");
	st = open_sink(&plg__json_sink, "path: @/b.txt");
	put_ok(&plg__json_sink, st, "{\"a\":1}");
	close_ok(&plg__json_sink, st);
	assert_file("b.txt", "[{\"a\": 1}]");
	st = open_sink(&plg__json_sink, "path: @/c.json\nformat: jsonl\nindent: 2");
	put_ok(&plg__json_sink, st, "{\"a\":1}");
	close_ok(&plg__json_sink, st);
	assert_file("c.json", "{\"a\": 1}\n");
}

Test(json_sink, json_append_is_a_config_error)
{
	core_err err = { 0 };

	cr_assert_eq(open_err(&plg__json_sink, "path: @/o.json\nmode: append", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "jsonl"), "%s", err.msg);
	cr_assert(strstr(err.msg, "test.yaml:2:"), "%s", err.msg);
	cr_assert_eq(open_err(&plg__json_sink, "path: @/o.json\nindent: -1", &err),
		     CORE_ECONFIG);
	cr_assert_eq(open_err(&plg__json_sink, "path: @/o.json\nformat: xml", &err),
		     CORE_ECONFIG);
	cr_assert_eq(open_err(&plg__json_sink, "path: @/o.json\nindnet: 2", &err),
		     CORE_ECONFIG);
	cr_assert(strstr(err.msg, "indent"), "%s", err.msg);
}

Test(json_sink, reals_as_python_repr)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.jsonl");

	put_ok(&plg__json_sink, st,
	       "{\"a\":0.1,\"b\":1.0,\"c\":-2.5e-7,\"d\":1e21,\"e\":123456789012.0,"
	       "\"f\":9007199254740993}");
	close_ok(&plg__json_sink, st);
	assert_file("o.jsonl", "{\"a\": 0.1, \"b\": 1.0, \"c\": -2.5e-07, \"d\": 1e+21, "
		    "\"e\": 123456789012.0, \"f\": 9007199254740993}\n");
}

Test(json_sink, escapes_round_trip)
{
	const char *row = "{\"s\":\"q\\\" b\\\\ n\\n t\\t c\\u0001 \\u007f / \\u2028\","
			  "\"k\\u0001ey\":1}";
	void *st = open_sink(&plg__json_sink, "path: @/o.jsonl");
	json_t *want = json_loads(row, 0, NULL), *got;
	char *file;

	put_ok(&plg__json_sink, st, row);
	close_ok(&plg__json_sink, st);
	file = slurp("o.jsonl", NULL);
	cr_assert(strstr(file, "\\u0001"), "%s", file);
	cr_assert(strstr(file, " / "), "no slash escaping: %s", file);
	got = json_loads(file, 0, NULL);
	cr_assert_not_null(got, "%s", file);
	cr_assert(json_equal(want, got), "%s", file);
	json_decref(want);
	json_decref(got);
	free(file);
}

Test(json_sink, unwritable_path_fails_at_open)
{
	core_err err = { 0 };

	spit("file.txt", "x");
	cr_assert_eq(open_err(&plg__json_sink, "path: @/file.txt/o.json", &err),
		     CORE_EIO);
	cr_assert(strstr(err.msg, "file.txt/o.json"), "%s", err.msg);
	cr_assert(strstr(err.msg, strerror(ENOTDIR)), "%s", err.msg);
}

Test(json_sink, creates_missing_parent_directories)
{
	void *st = open_sink(&plg__json_sink, "path: @/deep/er/o.jsonl");

	put_ok(&plg__json_sink, st, "{\"a\":1}");
	close_ok(&plg__json_sink, st);
	assert_file("deep/er/o.jsonl", "{\"a\": 1}\n");
}

Test(json_sink, flush_then_close)
{
	void *st = open_sink(&plg__json_sink, "path: @/o.json");
	core_err err = { 0 };

	put_ok(&plg__json_sink, st, "{\"a\":1}");
	cr_assert_eq(plg__json_sink.flush(st, &err), 0, "%s", err.msg);
	assert_file("o.json", "[{\"a\": 1}");
	close_ok(&plg__json_sink, st);
	assert_file("o.json", "[{\"a\": 1}]");
	cr_assert_eq(plg__json_sink.close(NULL, &err), 0);
}

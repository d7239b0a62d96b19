/*
 * test_plugins_blob_csv.c — ELSPETH 0.7.1's blob_csv_expand
 * (plugins/transform/blob_csv_expand.c): blobs read from a payload store
 * in a temporary directory, parsed as Python's csv.reader(strict=True)
 * parses them (the expected records were taken from Python 3.11), and
 * every row error with 0.7.1's reason.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

static char dir[] = "/tmp/blobcsv-XXXXXX";
static core_doc *doc;
static plg_env env;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	plg_env_init(&env, NULL);
	env.payload_dir = dir;
}

static void teardown(void)
{
	char cmd[64];

	core_doc_free(doc);
	doc = NULL;
	plg_env_release(&env);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	strcpy(dir, "/tmp/blobcsv-XXXXXX");
}

TestSuite(blob_csv, .init = setup, .fini = teardown, .timeout = 10);

/* Stores n bytes as a blob; its hash into ref. */
static void store(const char *bytes, size_t n, char ref[CORE_SHA256_HEX_LEN + 1])
{
	uint8_t d[CORE_SHA256_LEN];
	char path[256];
	FILE *f;

	core_sha256(bytes, n, d);
	core_hex(d, sizeof(d), ref);
	snprintf(path, sizeof(path), "%s/%.2s", dir, ref);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%.2s/%s", dir, ref, ref);
	cr_assert_not_null(f = fopen(path, "wb"));
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

/* Runs blob_csv_expand (options yaml) on {"name": "n", "blob_ref": REF}
 * for a blob of the bytes given; *got its rows. */
static int expand(const char *yaml, const char *bytes, size_t n, json_t **got,
		  core_err *err)
{
	const plg_transform_ops *ops = plg_find_transform("blob_csv_expand");
	char ref[CORE_SHA256_HEX_LEN + 1];
	void *st = NULL;
	json_t *in;
	int rc;

	store(bytes, n, ref);
	in = json_pack("{s:s,s:s}", "name", "n", "blob_ref", ref);
	memset(err, 0, sizeof(*err));
	core_doc_free(doc);
	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &doc, err), 0, "%s", err->msg);
	cr_assert_eq(ops->open(&env, core_doc_root(doc), &st, err), 0, "%s", err->msg);
	*got = NULL;
	rc = ops->process(st, in, got, NULL, err);
	ops->close(st);
	json_decref(in);
	return rc;
}

#define O "schema: {mode: observed}\n"

/* The rows' fields other than name and blob_ref, compact JSON. */
static void rows_are(const char *yaml, const char *csv, const char *want)
{
	json_t *got, *w;
	core_err err;
	size_t i;
	json_t *row;
	char *g, *ws;

	cr_assert_eq(expand(yaml, csv, strlen(csv), &got, &err), 0, "%s", err.msg);
	json_array_foreach(got, i, row) {
		cr_assert_str_eq(json_string_value(json_object_get(row, "name")), "n");
		json_object_del(row, "name");
		json_object_del(row, "blob_ref");
	}
	w = json_loads(want, 0, NULL);
	cr_assert_not_null(w, "bad want %s", want);
	g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	ws = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert_str_eq(g, ws, "%s", csv);
	free(g);
	free(ws);
	json_decref(w);
	json_decref(got);
}

static void fails(const char *yaml, const char *bytes, size_t n, const char *needle)
{
	json_t *got;
	core_err err;

	cr_assert_eq(expand(yaml, bytes, n, &got, &err), CORE_EDATA, "%s", bytes);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}
#define FAILS(yaml, csv, needle) fails(yaml, csv, strlen(csv), needle)

Test(blob_csv, records_as_python_csv_reads_them)
{
	rows_are(O, "id,text\r\n1,\"a,b\"\r\n2,\"say \"\"hi\"\"\"\r\n",
		 "[{\"id\":\"1\",\"text\":\"a,b\",\"csv_row_index\":0},"
		 "{\"id\":\"2\",\"text\":\"say \\\"hi\\\"\",\"csv_row_index\":1}]");
	/* blank lines are empty records, skipped; the index counts data rows */
	rows_are(O, "id,text\n\n1,x\n\n2,y\n",
		 "[{\"id\":\"1\",\"text\":\"x\",\"csv_row_index\":0},"
		 "{\"id\":\"2\",\"text\":\"y\",\"csv_row_index\":1}]");
	rows_are(O, "id,text\n1,\"l1\nl2\"\n", "[{\"id\":\"1\",\"text\":\"l1\\nl2\",\"csv_row_index\":0}]");
	rows_are(O, "id,text\r1,x\r2,y", "[{\"id\":\"1\",\"text\":\"x\",\"csv_row_index\":0},"
		 "{\"id\":\"2\",\"text\":\"y\",\"csv_row_index\":1}]");
	/* a quote inside an unquoted field is a character */
	rows_are(O, "id,text\n1,a\"b\n", "[{\"id\":\"1\",\"text\":\"a\\\"b\",\"csv_row_index\":0}]");
	rows_are(O "delimiter: \";\"\ninclude_row_index: false\n", "a;b\n1;2,3\n",
		 "[{\"a\":\"1\",\"b\":\"2,3\"}]");
}

Test(blob_csv, headers_skip_rows_columns_and_mapping)
{
	/* skip_rows counts records, blank ones too */
	rows_are(O "skip_rows: 2\n", "junk\n\nid,text\n1,x\n",
		 "[{\"id\":\"1\",\"text\":\"x\",\"csv_row_index\":0}]");
	rows_are(O "skip_rows: 1\n", "junk\n\nid,text\n1,x\n",
		 "[{\"id\":\"1\",\"text\":\"x\",\"csv_row_index\":0}]");
	/* headers normalized as the csv source's */
	rows_are(O, "Customer ID,Amount $\n7,9\n",
		 "[{\"customer_id\":\"7\",\"amount\":\"9\",\"csv_row_index\":0}]");
	rows_are(O "field_mapping: {customer_id: cid}\nrow_index_field: i\n", "Customer ID,x\n7,9\n",
		 "[{\"cid\":\"7\",\"x\":\"9\",\"i\":0}]");
	rows_are(O "columns: [p, q]\n", "1,2\n3,4\n",
		 "[{\"p\":\"1\",\"q\":\"2\",\"csv_row_index\":0},{\"p\":\"3\",\"q\":\"4\",\"csv_row_index\":1}]");
	rows_are(O "encoding: latin-1\n", "id,city\n1,caf\xe9\n",
		 "[{\"id\":\"1\",\"city\":\"caf\\u00e9\",\"csv_row_index\":0}]");
	rows_are(O "encoding: utf-8-sig\n", "\xef\xbb\xbfid\n1\n", "[{\"id\":\"1\",\"csv_row_index\":0}]");
}

Test(blob_csv, row_errors_carry_0_7_1_reasons)
{
	FAILS(O, "id,text\n1,\"a\"b\n", "csv_parse_error: data, row 1 (line 2): ',' expected after '\"'");
	FAILS(O, "id,text\n1,\"abc", "csv_parse_error: data, row 1 (line 2): unexpected end of data");
	fails(O, "a,b\n1,x\0y\n", 10, "line contains NUL");
	FAILS(O "skip_rows: 5\n", "a\nb\n", "csv_exhausted_during_skip_rows: skip_rows 5, 2 rows skipped");
	FAILS(O "skip_rows: 3\n", "junk\n\nid,text\n1,x\n", "empty_csv");
	FAILS(O, "id,text\n", "empty_csv: field 'blob_ref'");
	FAILS(O, "a,b\n1\n", "csv_column_count_mismatch: row 1 (line 2) has 1 fields, the header 2");
	FAILS(O "max_output_rows: 1\n", "a\n1\n2\n", "too_many_rows");
	FAILS(O, "A b,a_b\n1,2\n", "csv_header_error: Field name collision after normalization: 'a_b'");
	FAILS(O, "!!,x\n1,2\n", "csv_header_error: Header '!!' normalizes to empty string");
	FAILS(O "field_mapping: {nope: x}\n", "a\n1\n", "csv_config_error: field_mapping key 'nope'");
	FAILS(O "field_mapping: {a: b}\n", "a,b\n1,2\n", "field_mapping creates collision: 'b'");
	FAILS(O, "name,x\n1,2\n", "field_collision: CSV output fields collide with existing input fields: 'name'");
	FAILS(O, "id,csv_row_index\n1,2\n", "field_collision");
	FAILS(O, "id\n1,\xff\n", "decode_failed");
	FAILS(O "encoding: ascii\n", "id\n\xc3\xa9\n", "decode_failed");
	FAILS(O "max_blob_bytes: 3\n", "id\n1\n", "blob_too_large");
}

Test(blob_csv, refs_that_name_no_blob)
{
	const plg_transform_ops *ops = plg_find_transform("blob_csv_expand");
	const char *refs[] = { "abc", "0D1A7C720BAAE0ADF242F98E35A1F239E37D3DAC1D2F5250CB315EED545A5659" };
	core_err err = { 0 };
	json_t *got = NULL, *in;
	void *st = NULL;

	cr_assert_eq(core_doc_parse("t.yaml", O, strlen(O), &doc, &err), 0);
	cr_assert_eq(ops->open(&env, core_doc_root(doc), &st, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < 2; i++) {
		in = json_pack("{s:s}", "blob_ref", refs[i]);
		cr_assert_eq(ops->process(st, in, &got, NULL, &err), CORE_EDATA);
		cr_assert(strstr(err.msg, "invalid_blob_ref"), "%s", err.msg);
		json_decref(in);
	}
	in = json_pack("{s:s}", "blob_ref",
		       "0d1a7c720baae0adf242f98e35a1f239e37d3dac1d2f5250cb315eed545a5659");
	cr_assert_eq(ops->process(st, in, &got, NULL, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "blob_not_found"), "%s", err.msg);
	json_decref(in);
	in = json_pack("{s:i}", "blob_ref", 7);
	cr_assert_eq(ops->process(st, in, &got, NULL, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "must be a string payload-store hash, got int"), "%s", err.msg);
	json_decref(in);
	ops->close(st);
}

Test(blob_csv, a_damaged_store_is_not_a_row_error)
{
	char ref[CORE_SHA256_HEX_LEN + 1], path[256];
	json_t *got;
	core_err err;
	FILE *f;

	store("id\n1\n", 5, ref);
	snprintf(path, sizeof(path), "%s/%.2s/%s", dir, ref, ref);
	cr_assert_not_null(f = fopen(path, "wb"));
	fputs("id\n2\n", f);
	fclose(f);
	cr_assert_eq(expand(O, "x", 1, &got, &err), CORE_EDATA); /* another blob: fine */
	{
		const plg_transform_ops *ops = plg_find_transform("blob_csv_expand");
		json_t *in = json_pack("{s:s}", "blob_ref", ref);
		void *st = NULL;

		cr_assert_eq(ops->open(&env, core_doc_root(doc), &st, &err), 0);
		cr_assert_eq(ops->process(st, in, &got, NULL, &err), CORE_EIO);
		cr_assert(strstr(err.msg, "the store is damaged"), "%s", err.msg);
		ops->close(st);
		json_decref(in);
	}
}

Test(blob_csv, bad_options)
{
	static const struct { const char *yaml, *needle; } cases[] = {
		{ O "delimiter: \";;\"\n", "delimiter must be a single character" },
		{ O "encoding: ebcdic\n", "encoding 'ebcdic' is not supported here" },
		{ O "row_index_field: 1x\n", "row_index_field must be a valid Python identifier" },
		{ O "row_index_field: blob_ref\n", "collides with blob_ref_field" },
		{ O "columns: [ok, not-ok]\n", "'not-ok' is not a valid Python identifier" },
		{ O "skip_rows: -1\n", "skip_rows" },
		{ O "max_output_rows: 0\n", "max_output_rows" },
		{ O "blob_rev_field: x\n", "unknown key 'blob_rev_field'" },
	};
	const plg_transform_ops *ops = plg_find_transform("blob_csv_expand");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		core_err err = { 0 };
		void *st = NULL;

		core_doc_free(doc);
		cr_assert_eq(core_doc_parse("t.yaml", cases[i].yaml, strlen(cases[i].yaml), &doc, &err), 0);
		cr_assert_eq(ops->open(&env, core_doc_root(doc), &st, &err), CORE_ECONFIG, "%s", cases[i].yaml);
		cr_assert(strstr(err.msg, cases[i].needle), "'%s' lacks '%s'", err.msg, cases[i].needle);
	}
}

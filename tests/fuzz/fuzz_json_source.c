/*
 * fuzz_json_source.c — libFuzzer harness for the `json` source (a JSON
 * array, optionally under data_key, or JSON Lines).
 *
 * The first byte picks the format, data_key and the schema (observed, or
 * fixed with two typed fields); the rest is the file. Checks the source's
 * promises: open either succeeds or fails with a message; every record is
 * a JSON object with a `where`, and a row error has a message; skip()
 * passes over exactly as many records as next() reads; a new open that
 * seeks to the position after the first record reads the same second
 * record again (what a resume does).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/plugins_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static core_doc *docs[8];

/* The options for selector sel (built once each). */
static const core_node *options(unsigned sel)
{
	core_err err = { 0 };
	char yaml[512];

	sel &= 7;
	if (!docs[sel]) {
		snprintf(yaml, sizeof(yaml), "path: %s\nformat: %s\n%s%s", path,
			 sel & 1 ? "jsonl" : "json",
			 !(sel & 1) && sel & 2 ? "data_key: rows\n" : "",
			 sel & 4 ? "schema: {mode: fixed, fields: [\"a: int\", \"b: str\"]}\n"
				 : "schema: {mode: observed}\n");
		if (core_doc_parse("fuzz.yaml", yaml, strlen(yaml), &docs[sel], &err))
			abort();
	}
	return core_doc_root(docs[sel]);
}

static void row_free(plg_source_row *r)
{
	json_decref(r->row);
	free(r->error);
	free(r->where);
	memset(r, 0, sizeof(*r));
}

static void check_row(const plg_source_row *r)
{
	if (!json_is_object(r->row) || !r->where || !r->where[0] ||
	    (r->error && !r->error[0]))
		abort();
}

static void run(const core_node *opts, size_t size)
{
	const plg_source_ops *ops = &plg__json_source;
	plg_source_row r = { 0 }, second = { 0 };
	plg_source_pos pos = { 0 };
	size_t nread = 0, nskip = 0;
	core_err err = { 0 };
	void *st = NULL;
	int rc;

	if (ops->open(NULL, opts, &st, &err)) {
		if (!err.msg[0])
			abort();
		return;
	}
	while ((rc = ops->next(st, &r, &err)) == 1) {
		check_row(&r);
		if (++nread == 1)
			ops->position(st, &pos);
		else if (nread == 2)
			second = r, memset(&r, 0, sizeof(r));
		row_free(&r);
		if (nread > size + 1) /* more records than bytes */
			abort();
	}
	ops->close(st);
	if (rc < 0) { /* a fatal read error ends the checks */
		row_free(&second);
		return;
	}
	if (ops->open(NULL, opts, &st, &err))
		abort(); /* it opened a moment ago */
	while ((rc = ops->skip(st, &err)) == 1)
		nskip++;
	ops->close(st);
	if (rc < 0 || nskip != nread)
		abort();
	if (nread >= 2) {
		if (ops->open(NULL, opts, &st, &err) || ops->seek(st, &pos, &err) ||
		    ops->next(st, &r, &err) != 1)
			abort();
		if (!json_equal(r.row, second.row) || strcmp(r.where, second.where) ||
		    !r.error != !second.error)
			abort();
		row_free(&r);
		ops->close(st);
	}
	row_free(&second);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f;

	if (size < 1)
		return 0;
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_json_source.%d", (int)getpid());
	if (!(f = fopen(path, "wb")))
		abort();
	if (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1)
		abort();
	fclose(f);
	run(options(data[0]), size);
	return 0;
}

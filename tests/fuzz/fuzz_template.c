/*
 * fuzz_template.c — libFuzzer harness for prompt templates.
 *
 * Compiles the input as a template; a failure must be CORE_ECONFIG
 * "template line L, column C: ..." (or out of memory) and leave no
 * template. When it compiles, its hash must be well formed, and it is
 * rendered twice against a fixed row and lookup: both renders must agree,
 * an error must be a "template ..." CORE_EDATA that leaves the output as
 * it was, and valid UTF-8 in must give valid UTF-8 out. Leaks and memory
 * errors are left to the sanitizers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *row_json =
	"{\"a\": 1, \"r\": 2.5e-7, \"s\": \" h\\u00e9llo \\u0130\\u0390 \", \"t\": true,"
	" \"n\": null, \"l\": [1, \"x\", [2, 3], {\"k\": null}], \"e\": \"\","
	" \"o\": {\"x\": {\"y\": [0, -1]}, \"z\": \"7\", \"my key\": \"\\u00df\"},"
	" \"big\": 9223372036854775807, \"f\": 1e300, \"el\": [], \"eo\": {}}";

static const char *lookup_json =
	"{\"c\": {\"a\": {\"n\": \"A\"}, \"1\": [1, 2]}, \"l\": [\"x\", \"y\"],"
	" \"items\": {\"k\": 1}, \"s\": \"\u00e9t\u00e9\"}";

static const json_t *fixed_row(void)
{
	static json_t *row;

	if (!row)
		row = json_loads(row_json, 0, NULL);
	if (!row)
		abort();
	return row;
}

static const json_t *fixed_lookup(void)
{
	static json_t *lookup;

	if (!lookup)
		lookup = json_loads(lookup_json, 0, NULL);
	if (!lookup)
		abort();
	return lookup;
}

static bool utf8_ok(const char *s, size_t n)
{
	json_t *v = json_stringn(s ? s : "", n);
	bool ok = v != NULL;

	json_decref(v);
	return ok;
}

static void check_template(const tpl_template *t)
{
	const char *h = tpl_hash(t);

	if (strncmp(h, "sha256:", 7) || strlen(h) != 7 + 64)
		abort();
}

static void render(const tpl_template *t, bool utf8_in)
{
	core_buf a = { 0 }, b = { 0 };
	core_err ea = { 0 }, eb = { 0 };
	int ra, rb;

	core_buf_puts(&a, "pre");
	core_buf_puts(&b, "pre");
	ra = tpl_render_lookup(t, fixed_row(), fixed_lookup(), &a, &ea);
	rb = tpl_render_lookup(t, fixed_row(), fixed_lookup(), &b, &eb);
	if (ra != rb || a.len != b.len || (a.len && memcmp(a.data, b.data, a.len)))
		abort();
	if (ra && ra != CORE_ENOMEM) {
		if (ra != CORE_EDATA || strncmp(ea.msg, "template", 8) ||
		    strcmp(ea.msg, eb.msg) || a.len != 3)
			abort();
	}
	if (!ra && utf8_in && !utf8_ok(a.data, a.len))
		abort();
	core_buf_release(&a);
	core_buf_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = malloc(size + 1);
	core_err err = { 0 };
	tpl_template *t = NULL;
	int rc;

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	rc = tpl_compile(src, &t, &err);
	if (rc) {
		if (t || (rc != CORE_ENOMEM && (rc != CORE_ECONFIG ||
		    strncmp(err.msg, "template line ", 14))))
			abort();
	} else {
		check_template(t);
		render(t, strlen(src) == size && utf8_ok(src, size));
	}
	tpl_free(t);
	free(src);
	return 0;
}

/*
 * fuzz_expr.c — libFuzzer harness for gate expressions.
 *
 * Compiles the input as an expression; a failure must be a CORE_EEXPR
 * "column N: ..." message (or out of memory). When it compiles, it is
 * evaluated against a fixed row both to JSON and to a route key; either
 * may fail only with a message. Leaks and memory errors are left to the
 * sanitizers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *row_json =
	"{\"a\": 1, \"b\": 2.5, \"s\": \"h\\u00e9llo\", \"t\": true, \"f\": false,"
	" \"n\": null, \"l\": [1, \"x\", [2, 3], {\"k\": null}], \"e\": \"\","
	" \"d\": {\"x\": {\"y\": [0, -1]}, \"z\": \"7\"}, \"z\": 0,"
	" \"big\": 9223372036854775807, \"neg\": -9223372036854775808,"
	" \"num\": \" 42 \", \"fl\": \"1e3\", \"el\": [], \"eo\": {}}";

static const json_t *fixed_row(void)
{
	static json_t *row;

	if (!row)
		row = json_loads(row_json, 0, NULL);
	if (!row)
		abort();
	return row;
}

static void check_error(int rc, const core_err *err, bool compile)
{
	if (rc == CORE_ENOMEM)
		return;
	if (rc != CORE_EEXPR || err->code != CORE_EEXPR || !err->msg[0])
		abort();
	if (compile && strncmp(err->msg, "column ", 7))
		abort();
}

static void run(const expr_code *e, const json_t *row)
{
	core_err err = { 0 };
	json_t *res = NULL;
	char key[64];
	int rc;

	rc = expr_eval(e, row, &res, &err);
	if (rc)
		check_error(rc, &err, false);
	else if (!res)
		abort();
	json_decref(res);
	memset(&err, 0, sizeof(err));
	rc = expr_route_key(e, row, key, sizeof(key), &err);
	if (rc)
		check_error(rc, &err, false);
	else if (strlen(key) >= sizeof(key))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *src = malloc(size + 1);
	core_err err = { 0 };
	expr_code *e = NULL;
	int rc;

	if (!src)
		return 0;
	memcpy(src, data, size);
	src[size] = '\0';
	rc = expr_compile(src, &e, &err);
	if (rc) {
		if (e)
			abort();
		check_error(rc, &err, true);
	} else {
		if (strcmp(expr_source(e), src))
			abort();
		run(e, fixed_row());
	}
	expr_free(e);
	free(src);
	return 0;
}

/*
 * ELSPETH 0.4.1's own expression-parser test cases, replayed against ours.
 *
 * tests/fixtures/elspeth_expr_cases.json is what ELSPETH's ExpressionParser
 * did on every call its unit tests make (recorded once by
 * tests/reference/expr_cases.py from ELSPETH's source; no Python here):
 * each expression was compiled or refused, and each evaluation gave a
 * result (its Python type, str() and JSON form) or an error. We must
 * refuse what it refuses, accept what it accepts, fail where it fails and
 * give the same result, except for the differences listed in `known`
 * below, each with its reason (docs/settings.md, "Expressions").
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "dag/dag.h"

#define FIXTURE ELSPETH_SOURCE_DIR "/tests/fixtures/elspeth_expr_cases.json"

/* Where we differ from ELSPETH on purpose. `expr` is matched exactly. */
static const struct {
	const char *expr;
	const char *why;
} known[] = {
	/* ELSPETH allows subscripts only on row-derived values; the others
	 * are refused there although Python evaluates them the same. Ours
	 * accepts them: a superset, no different result. */
	{ "{'a': 1}['a'] == 1", "subscript of a literal: accepted" },
	{ "'abc'[0] == 'a'", "subscript of a literal: accepted" },
	{ "[1, 2, 3][0] == 1", "subscript of a literal: accepted" },
};

static const char *known_reason(const char *expr)
{
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i].expr, expr))
			return known[i].why;
	return NULL;
}

typedef struct report {
	char *text;
	size_t len, cap;
	unsigned failures;
} report;

static void fail(report *r, const char *test, const char *expr,
		 const char *fmt, ...) CORE_PRINTF(4, 5);

static void fail(report *r, const char *test, const char *expr,
		 const char *fmt, ...)
{
	char msg[600];
	int n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->failures++ >= 80)
		return;
	n = snprintf(NULL, 0, "\n  %s: `%.120s`: %s", test, expr, msg);
	if (r->len + (size_t)n + 1 > r->cap) {
		r->cap = (r->len + (size_t)n + 1) * 2;
		r->text = realloc(r->text, r->cap);
		cr_assert_not_null(r->text);
	}
	snprintf(r->text + r->len, r->cap - r->len, "\n  %s: `%.120s`: %s",
		 test, expr, msg);
	r->len += (size_t)n;
}

/* Python's str() of the result, as our route key gives it, except that a
 * boolean keys as "true"/"false". */
static const char *want_key(const json_t *ev, char *buf, size_t cap)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *str = json_string_value(json_object_get(ev, "str"));

	if (type && !strcmp(type, "bool"))
		return !strcmp(str, "True") ? "true" : "false";
	snprintf(buf, cap, "%s", str ? str : "");
	return buf;
}

static void check_eval(report *r, const char *test, const char *expr,
		       const expr_code *e, const json_t *ev)
{
	const json_t *row = json_object_get(ev, "row");
	const json_t *want_json = json_object_get(ev, "json");
	const char *want_err = json_string_value(json_object_get(ev, "error"));
	const char *type = json_string_value(json_object_get(ev, "type"));
	char key[4096], wbuf[4096], *gs, *ws;
	core_err err = { 0 };
	json_t *got = NULL;
	int rc;

	rc = expr_route_key(e, row, key, sizeof(key), &err);
	if (want_err) {
		if (!rc)
			fail(r, test, expr, "evaluated to '%s' where ELSPETH failed: %s",
			     key, want_err);
		return;
	}
	if (rc) {
		fail(r, test, expr, "failed (%s) where ELSPETH gave %s %s",
		     err.msg, type, json_string_value(json_object_get(ev, "str")));
		return;
	}
	if (strcmp(key, want_key(ev, wbuf, sizeof(wbuf))))
		fail(r, test, expr, "keyed '%s', ELSPETH's str() is '%s'", key,
		     wbuf);
	if (!want_json)
		return;
	if ((rc = expr_eval(e, row, &got, &err))) {
		fail(r, test, expr, "eval failed: %s", err.msg);
		return;
	}
	if (!json_equal(got, want_json)) {
		gs = json_dumps(got, JSON_ENCODE_ANY);
		ws = json_dumps(want_json, JSON_ENCODE_ANY);
		fail(r, test, expr, "gave %s, ELSPETH %s", gs, ws);
		free(gs);
		free(ws);
	}
	json_decref(got);
}

static void check_case(report *r, const json_t *c, unsigned *evals)
{
	const char *test = json_string_value(json_object_get(c, "test"));
	const char *expr = json_string_value(json_object_get(c, "expr"));
	const char *refused = json_string_value(json_object_get(c, "refused"));
	const json_t *evs = json_object_get(c, "evals"), *ev;
	core_err err = { 0 };
	expr_code *e = NULL;
	size_t i;
	int rc;

	cr_assert_not_null(expr);
	if (strlen(expr) != json_string_length(json_object_get(c, "expr"))) {
		/* A NUL byte: settings text cannot hold one; Python refuses
		 * it ("source code string cannot contain null bytes"). */
		cr_assert(refused, "ELSPETH accepted a NUL byte in `%s`", expr);
		return;
	}
	rc = expr_compile(expr, &e, &err);
	if (known_reason(expr)) {
		if (!refused || rc)
			fail(r, test, expr, "listed as a known difference (%s) but %s",
			     known_reason(expr), rc ? "we refuse it too" :
			     "ELSPETH accepts it");
		expr_free(e);
		return;
	}
	if (refused) {
		if (!rc)
			fail(r, test, expr, "compiled; ELSPETH refuses it (%s: %.200s)",
			     refused, json_string_value(json_object_get(c, "message")));
		else if (rc != CORE_EEXPR)
			fail(r, test, expr, "refused with code %d, not CORE_EEXPR", rc);
		return;
	}
	if (rc) {
		fail(r, test, expr, "refused (%s); ELSPETH accepts it", err.msg);
		return;
	}
	json_array_foreach(evs, i, ev) {
		check_eval(r, test, expr, e, ev);
		(*evals)++;
	}
	expr_free(e);
}

Test(expr_elspeth, its_parser_tests_agree, .timeout = 120)
{
	json_error_t jerr;
	json_t *doc = json_load_file(FIXTURE, JSON_ALLOW_NUL, &jerr), *c;
	report r = { 0 };
	unsigned evals = 0;
	size_t i, n;

	cr_assert_not_null(doc, "%s: %s (line %d)", FIXTURE, jerr.text, jerr.line);
	n = json_array_size(json_object_get(doc, "cases"));
	/* The recording holds them all: a truncated file fails here. */
	cr_assert_gt(n, 1300, "only %zu cases in %s", n, FIXTURE);
	json_array_foreach(json_object_get(doc, "cases"), i, c)
		check_case(&r, c, &evals);
	cr_assert_eq(r.failures, 0, "%u of %zu cases differ from ELSPETH:%s",
		     r.failures, n, r.text ? r.text : "");
	cr_assert_gt(evals, 350, "only %u evaluations replayed", evals);
	free(r.text);
	json_decref(doc);
}

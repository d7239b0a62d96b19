/*
 * plg_test.h — what the plugin unit tests share: options parsed from YAML
 * text (kept until plgt_free_docs, a suite's .fini), JSON test values
 * and their comparison.
 */
#ifndef ELSPETH_TESTS_PLG_TEST_H
#define ELSPETH_TESTS_PLG_TEST_H

#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"

#define PLGT_DOCS 64
static core_doc *plgt_docs[PLGT_DOCS];
static size_t plgt_ndocs;

static inline void plgt_free_docs(void)
{
	while (plgt_ndocs)
		core_doc_free(plgt_docs[--plgt_ndocs]);
}

/* The options of yaml (a mapping). */
static inline const core_node *opts(const char *yaml)
{
	core_err err = { 0 };

	cr_assert_lt(plgt_ndocs, PLGT_DOCS);
	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &plgt_docs[plgt_ndocs], &err),
		     0, "%s", err.msg);
	return core_doc_root(plgt_docs[plgt_ndocs++]);
}

/* A new JSON value from test text (any type). */
static inline json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* got equals the JSON text want: field order, types and every bit of
 * every real (jansson writes 17 significant digits). */
static inline void same(json_t *got, const char *want)
{
	size_t fl = JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17);
	json_t *w = js(want);
	char *g = json_dumps(got, fl), *ws = json_dumps(w, fl);

	cr_assert_str_eq(g, ws);
	free(g);
	free(ws);
	json_decref(w);
}

#endif

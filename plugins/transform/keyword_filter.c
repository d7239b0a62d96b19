/*
 * keyword_filter.c — ELSPETH 0.4.1's "keyword_filter" transform: a row
 * whose scanned fields match a blocked pattern is a row error (to
 * on_error), any other row passes unchanged.
 *
 *   fields            a field name, a list of them, or "all" (every
 *                     string field of the row, in the row's order)
 *   blocked_patterns  Python `re` patterns, tried in order (ADR 0026)
 *   schema            required, as for every ELSPETH data plugin
 *
 * As ELSPETH: a named field missing from the row is skipped; a named
 * field holding a non-string fails the row (`non_string_field`, fail
 * closed); in "all" mode non-strings are not scanned. The first match
 * (fields in order, then patterns in order) fails the row with
 * ELSPETH's reason (`blocked_content`, the field, the pattern, the
 * match's position and length and the field's length, in characters).
 * The row error's message is that reason as ELSPETH records it: compact
 * JSON, keys sorted. Patterns are checked as ELSPETH checks them (not
 * empty, at most 1000 characters, no nested quantifier) and compiled
 * once, at open (validate): a bad one is a config error at its position.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/pyre_internal.h"

#define MAX_PATTERN_CHARS 1000

typedef struct kw_pattern {
	const char *text;  /* as written (the settings document's) */
	pcre2_code *re;
} kw_pattern;

typedef struct kw {
	bool all;
	const char **fields;   /* into the settings document */
	size_t nfields;
	kw_pattern *pat;
	size_t npat;
	const char **required; /* required_input_fields */
	size_t nrequired;
} kw;

static void kw_close(void *state)
{
	kw *k = state;

	if (!k)
		return;
	for (size_t i = 0; i < k->npat; i++)
		pcre2_code_free(k->pat[i].re);
	free(k->pat);
	free(k->fields);
	free(k->required);
	free(k);
}

/* ------------------------------------------------------------ options */

static bool blank(const char *s)
{
	return !s[strspn(s, " \t\n\r\f\v")];
}

static int parse_fields(kw *k, const core_node *n, core_err *err)
{
	int rc;

	if (n->kind == CORE_NODE_SCALAR && !core_node_is_null(n)) {
		if (blank(n->value))
			return core_err_at(err, CORE_ECONFIG, n, "fields cannot be empty");
		k->all = !strcmp(n->value, "all");
		if (!(k->fields = malloc(sizeof(*k->fields))))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		k->fields[0] = n->value;
		k->nfields = 1;
		return 0;
	}
	if (n->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, n, "expected a field name, a list "
				   "of field names, or 'all'");
	if ((rc = core_node_str_list(n, &k->fields, &k->nfields, err)))
		return rc;
	if (!k->nfields)
		return core_err_at(err, CORE_ECONFIG, n, "fields list cannot be empty "
				   "— security transform must scan at least one field");
	for (size_t i = 0; i < k->nfields; i++)
		if (blank(k->fields[i]))
			return core_err_at(err, CORE_ECONFIG, n->items[i],
					   "fields[%zu] cannot be empty", i);
	return 0;
}

/* ELSPETH's ReDoS guard (_NESTED_QUANTIFIER_RE), the same expression. */
static const char nested_quantifier[] =
	"[+*]\\)[+*{]|\\([^)]*[+*][^)]*\\)[+*{]";

static int nested(const pcre2_code *guard, const char *s, bool *hit)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(guard, NULL);
	int rc;

	if (!md)
		return CORE_ENOMEM;
	rc = pcre2_match(guard, (PCRE2_SPTR)s, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
	pcre2_match_data_free(md);
	*hit = rc > 0;
	return rc > 0 || rc == PCRE2_ERROR_NOMATCH ? 0 : CORE_EINTERNAL;
}

static int check_pattern(kw *k, const pcre2_code *guard, const core_node *n,
			 size_t i, core_err *err)
{
	const char *p = n->value;
	char why[512];
	bool hit;

	if (!*p)
		return core_err_at(err, CORE_ECONFIG, n, "blocked_patterns[%zu] cannot be "
				   "empty (empty regex matches everything)", i);
	if (core_utf8_count(p, strlen(p)) > MAX_PATTERN_CHARS)
		return core_err_at(err, CORE_ECONFIG, n, "Regex pattern exceeds maximum "
				   "length (%d chars): %.*s...", MAX_PATTERN_CHARS,
				   (int)core_utf8_prefix(p, strlen(p), 50), p);
	if (nested(guard, p, &hit))
		return core_err_set(err, CORE_EINTERNAL, "the ReDoS check failed");
	if (hit)
		return core_err_at(err, CORE_ECONFIG, n, "Regex pattern contains nested "
				   "quantifiers (ReDoS risk): %.200s", p);
	k->pat[i].text = p;
	k->pat[i].re = plg__pyre_compile(p, why, sizeof(why));
	if (!k->pat[i].re)
		return core_err_at(err, CORE_ECONFIG, n, "blocked_patterns[%zu] is not a "
				   "valid regex: %s", i, why);
	return 0;
}

static int parse_patterns(kw *k, const core_node *n, core_err *err)
{
	pcre2_code *guard;
	int code, rc = 0;
	PCRE2_SIZE off;

	if (n->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, n, "expected a list of regular expressions");
	if (!n->len)
		return core_err_at(err, CORE_ECONFIG, n, "blocked_patterns cannot be empty");
	for (size_t i = 0; i < n->len; i++)
		if (n->items[i]->kind != CORE_NODE_SCALAR || core_node_is_null(n->items[i]))
			return core_node_str(n->items[i], &(const char *){ NULL }, err);
	if (!(k->pat = calloc(n->len, sizeof(*k->pat))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	guard = pcre2_compile((PCRE2_SPTR)nested_quantifier, PCRE2_ZERO_TERMINATED,
			      PCRE2_UTF, &code, &off, NULL);
	if (!guard)
		return core_err_set(err, CORE_EINTERNAL, "the ReDoS check does not compile");
	for (size_t i = 0; !rc && i < n->len; i++, k->npat++)
		rc = check_pattern(k, guard, n->items[i], i, err);
	pcre2_code_free(guard);
	return rc;
}

static const plg_option kw_own[] = {
	{ "fields", "string|array", true, NULL,
	  "the fields to scan, or all" },
	{ "blocked_patterns", "array", true, NULL,
	  "regular expressions (Python re syntax); a row matching one fails" },
	{ NULL }
};
static const plg_option *const kw_opts[] = { kw_own, plg__input_opts, plg__schema_opts, NULL };

static int parse(void *state, const core_node *o, core_err *err)
{
	kw *k = state;
	const core_node *n;
	int rc;

	if ((rc = plg__check_options(o, kw_opts, err)) ||
	    (rc = plg__schema_check(o, true, err)))
		return rc;
	if (!(n = core_map_get(o, "fields")))
		return core_err_at(err, CORE_ECONFIG, o, "missing required key 'fields' "
				   "(field names to scan, or 'all')");
	if ((rc = parse_fields(k, n, err)))
		return rc;
	if (!(n = core_map_get(o, "blocked_patterns")))
		return core_err_at(err, CORE_ECONFIG, o, "missing required key "
				   "'blocked_patterns' (regular expressions that block a row)");
	if ((rc = parse_patterns(k, n, err)))
		return rc;
	if ((n = core_map_get(o, "required_input_fields")) && !core_node_is_null(n))
		rc = core_node_str_list(n, &k->required, &k->nrequired, err);
	return rc;
}

static int kw_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(kw), parse, kw_close, options, state, err);
}

/* ------------------------------------------------------------- process */

/* Fails the row with ELSPETH's reason, as its audit trail records it
 * (compact, keys sorted); the reason goes in the node state's context
 * too, whole even when the message had to be cut. */
static int fail(json_t *reason, plg_ctx *ctx, core_err *err)
{
	char *text = reason ? json_dumps(reason, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	if (!text) {
		json_decref(reason);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	core_err_set(err, CORE_EDATA, "%s", text);
	err->retryable = false;
	free(text);
	if (ctx && !ctx->context)
		ctx->context = json_pack("{s:o}", "error_reason", reason);
	else
		json_decref(reason);
	return CORE_EDATA;
}

/* 0: no pattern matched; else the row fails (CORE_EDATA, err set). */
static int scan(const kw *k, const char *field, const json_t *v, plg_ctx *ctx,
		core_err *err)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	for (size_t i = 0; i < k->npat; i++) {
		pcre2_match_data *md = pcre2_match_data_create_from_pattern(k->pat[i].re, NULL);
		PCRE2_SIZE *ov;
		int rc;

		if (!md)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		rc = pcre2_match(k->pat[i].re, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
		if (rc == PCRE2_ERROR_NOMATCH) {
			pcre2_match_data_free(md);
			continue;
		}
		if (rc < 0) {
			/* Backtracking past PCRE2's limits: fail closed. */
			PCRE2_UCHAR msg[128];

			pcre2_match_data_free(md);
			pcre2_get_error_message(rc, msg, sizeof(msg));
			return fail(json_pack("{s:s,s:s,s:s,s:s}", "reason", "pattern_match_failed",
					      "field", field, "matched_pattern", k->pat[i].text,
					      "error", (const char *)msg), ctx, err);
		}
		ov = pcre2_get_ovector_pointer(md);
		rc = fail(json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "reason", "blocked_content",
			       "field", field, "matched_pattern", k->pat[i].text,
			       "match_position", (json_int_t)core_utf8_count(s, ov[0]),
			       "match_length", (json_int_t)core_utf8_count(s + ov[0], ov[1] - ov[0]),
			       "field_length", (json_int_t)core_utf8_count(s, n)), ctx, err);
		pcre2_match_data_free(md);
		return rc;
	}
	return 0;
}

/* One field: skipped when missing; nonzero when the row fails. */
static int scan_field(const kw *k, const json_t *row, const char *field,
		      plg_ctx *ctx, core_err *err)
{
	const json_t *v = json_object_get(row, field);

	if (!v)
		return 0;
	if (!json_is_string(v)) {
		if (k->all)
			return 0;
		return fail(json_pack("{s:s,s:s,s:s}", "reason", "non_string_field",
				      "field", field, "actual_type", core_py_type(v)), ctx, err);
	}
	return scan(k, field, v, ctx, err);
}

static int kw_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const kw *k = state;
	int rc = 0;

	for (size_t i = 0; i < k->nrequired; i++)
		if (!json_object_get(row, k->required[i]))
			return core_err_set(err, CORE_EDATA, "required input field '%s' "
					    "is missing from the row", k->required[i]);
	if (k->all) {
		const char *key;
		json_t *v;

		json_object_foreach((json_t *)row, key, v)
			if (json_is_string(v) && (rc = scan_field(k, row, key, ctx, err)))
				break;
	} else {
		for (size_t i = 0; !rc && i < k->nfields; i++)
			rc = scan_field(k, row, k->fields[i], ctx, err);
	}
	if (rc)
		return rc;
	if (ctx && !ctx->context)
		ctx->context = json_pack("{s:{s:s}}", "success_reason", "action", "filtered");
	*out = json_incref((json_t *)row);
	return 0;
}

const plg_transform_ops plg__keyword_filter = {
	.name = "keyword_filter",
	.description = "Fail rows whose fields match a blocked regular expression (Python re syntax)",
	.options = kw_opts,
	.open = kw_open,
	.process = kw_process,
	.close = kw_close,
};

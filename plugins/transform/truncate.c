/*
 * transform_truncate.c — the "truncate" transform: cuts string fields to a
 * maximum length in characters (Unicode code points; a UTF-8 sequence is
 * never split).
 *
 * As ELSPETH: a value longer than max becomes its first (max - len(suffix))
 * characters plus the suffix, so the result is at most max characters; when
 * the suffix is not shorter than max, the value is just cut to max. With
 * `strict`, a listed field missing from the row, or holding a non-string,
 * is a row error; otherwise such fields are left alone. The output is a new
 * object (sharing the untouched values); the input is not modified.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct limit {
	char *field;
	size_t max;
};

struct truncate {
	plg_schema *schema;
	char *suffix;
	size_t suffix_len;   /* bytes */
	size_t suffix_chars; /* code points */
	bool strict;
	size_t n;
	struct limit *lim;
};

/* ------------------------------------------------------------ options */

static int parse_fields(struct truncate *t, const core_node *map,
			core_err *err)
{
	if (map->kind != CORE_NODE_MAP || !map->len)
		return core_err_at(err, CORE_ECONFIG, map,
				   "expected a map of field: max_length (at least one)");
	t->lim = calloc(map->len, sizeof(*t->lim));
	if (!t->lim)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < map->len; i++) {
		long long max;
		int rc = core_node_int(map->items[i], 1, 1LL << 40, &max, err);

		if (rc)
			return rc;
		t->lim[i].max = (size_t)max;
		t->lim[i].field = strdup(map->keys[i]->value);
		t->n++;
		if (!t->lim[i].field)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

static const plg_option tr_own[] = {
	{ "fields", "object", true, NULL,
	  "field -> the most characters it keeps" },
	{ "suffix", "string", false, "\"\"",
	  "appended to a cut value, within its limit" },
	{ "strict", "boolean", false, "false",
	  "a row lacking one of the fields is a row error" },
	{ NULL }
};
static const plg_option *const tr_opts[] = { tr_own, plg__schema_opts, plg__input_opts, NULL };

static int parse_options(struct truncate *t, const core_node *opts,
			 core_err *err)
{
	const char *suffix = "";
	int rc;

	rc = plg__check_options(opts, tr_opts, err);
	if (!rc && !core_map_get(opts, "fields"))
		rc = core_err_at(err, CORE_ECONFIG, opts, "missing required key 'fields'");
	if (!rc)
		rc = parse_fields(t, core_map_get(opts, "fields"), err);
	if (!rc)
		rc = core_opt_str(opts, "suffix", false, &suffix, err);
	if (!rc)
		rc = core_opt_bool(opts, "strict", &t->strict, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err);
	if (!rc && !(t->suffix = strdup(suffix)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc) {
		t->suffix_len = strlen(suffix);
		t->suffix_chars = core_utf8_count(suffix, t->suffix_len);
	}
	return rc;
}

static void tr_close(void *state);

static int tr_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct truncate *t = calloc(1, sizeof(*t));
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!t)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(t, options, err);
	if (rc) {
		tr_close(t);
		return rc;
	}
	*state = t;
	return 0;
}

/* ------------------------------------------------------------- process */

/* A new reference: v itself when short enough, else its cut copy; NULL
 * when out of memory. */
static json_t *cut(const struct truncate *t, const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), keep;
	json_t *out;
	char *buf;

	if (core_utf8_count(s, n) <= max)
		return json_incref((json_t *)v);
	if (!t->suffix_len || t->suffix_chars >= max)
		return json_stringn(s, core_utf8_prefix(s, n, max));
	keep = core_utf8_prefix(s, n, max - t->suffix_chars);
	buf = malloc(keep + t->suffix_len);
	if (!buf)
		return NULL;
	memcpy(buf, s, keep);
	memcpy(buf + keep, t->suffix, t->suffix_len);
	out = json_stringn(buf, keep + t->suffix_len);
	free(buf);
	return out;
}

static int apply_limit(const struct truncate *t, const struct limit *l,
		       json_t *out, core_err *err)
{
	json_t *v = json_object_get(out, l->field), *nv;

	if (!v || !json_is_string(v)) {
		if (!t->strict)
			return 0;
		return core_err_set(err, CORE_EDATA, v
				    ? "field '%s' is not a string (truncate has strict: true)"
				    : "field '%s' is not in the row (truncate has strict: true)",
				    l->field);
	}
	nv = cut(t, v, l->max);
	if (!nv || json_object_set_new(out, l->field, nv))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

static int tr_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct truncate *t = state;
	json_t *o = json_copy((json_t *)row);
	int rc = 0;

	(void)ctx;

	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < t->n; i++)
		rc = apply_limit(t, &t->lim[i], o, err);
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

static void tr_close(void *state)
{
	struct truncate *t = state;

	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		free(t->lim[i].field);
	free(t->lim);
	free(t->suffix);
	plg__schema_free(t->schema);
	free(t);
}

const plg_transform_ops plg__truncate = {
	.name = "truncate",
	.description = "Cut string fields to a maximum number of characters, with an optional suffix",
	.options = tr_opts,
	.open = tr_open,
	.process = tr_process,
	.close = tr_close,
};

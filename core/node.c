/*
 * node.c — typed access to settings nodes. Every error names the file,
 * line, column and key path of the node and says what was expected.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/core.h"

static const char *kind_name(const core_node *n)
{
	if (n->kind == CORE_NODE_MAP)
		return "a map";
	if (n->kind == CORE_NODE_SEQ)
		return "a list";
	return core_node_is_null(n) ? "null" : "a scalar";
}

int core_err_at(core_err *err, int code, const core_node *n, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!n)
		return core_err_set(err, code, "%s", msg);
	return core_err_set(err, code, "%s:%d:%d: %s: %s", n->file, n->line,
			    n->col, n->path[0] ? n->path : "(top level)", msg);
}

const core_node *core_map_get(const core_node *map, const char *key)
{
	if (!map || map->kind != CORE_NODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->len; i++)
		if (strcmp(map->keys[i]->value, key) == 0)
			return map->items[i];
	return NULL;
}

/* Levenshtein distance, capped for long strings. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(size_t));
	}
	return prev[lb];
}

/* The closest of the NULL-terminated candidates, or NULL if none is near. */
static const char *near_match(const char *word, const char *const *cands)
{
	const char *best = NULL;
	size_t bestd = 99, limit = strlen(word) / 3 + 1;

	if (limit > 3)
		limit = 3;
	for (size_t i = 0; cands[i]; i++) {
		size_t d = edit_distance(word, cands[i]);

		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	return bestd <= limit ? best : NULL;
}

int core_map_check_keys(const core_node *map, const char *const *allowed,
			core_err *err)
{
	if (!map || map->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, map, "expected a map, got %s",
				   map ? kind_name(map) : "nothing");
	for (size_t i = 0; i < map->len; i++) {
		const char *k = map->keys[i]->value, *hint;
		size_t j;

		for (j = 0; allowed[j]; j++)
			if (strcmp(allowed[j], k) == 0)
				break;
		if (allowed[j])
			continue;
		hint = near_match(k, allowed);
		if (hint)
			return core_err_at(err, CORE_ECONFIG, map->keys[i],
					   "unknown key '%s' (did you mean '%s'?)", k, hint);
		return core_err_at(err, CORE_ECONFIG, map->keys[i],
				   "unknown key '%s' (expected one of the documented keys; see docs/settings.md)", k);
	}
	return 0;
}

bool core_node_is_null(const core_node *n)
{
	if (!n || n->kind != CORE_NODE_SCALAR || !n->plain)
		return false;
	return !n->value[0] || !strcmp(n->value, "null") || !strcmp(n->value, "~") ||
	       !strcmp(n->value, "Null") || !strcmp(n->value, "NULL");
}

int core_node_str(const core_node *n, const char **out, core_err *err)
{
	if (n->kind != CORE_NODE_SCALAR || core_node_is_null(n))
		return core_err_at(err, CORE_ECONFIG, n, "expected a string, got %s",
				   kind_name(n));
	*out = n->value;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
		*out = false;
		return 0;
	}
	return -1;
}

int core_node_bool(const core_node *n, bool *out, core_err *err)
{
	if (n->kind != CORE_NODE_SCALAR || !n->plain || parse_bool(n->value, out))
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected true or false, got %s%s%s%s",
				   n->kind == CORE_NODE_SCALAR ? "'" : kind_name(n),
				   n->kind == CORE_NODE_SCALAR ? n->value : "",
				   n->kind == CORE_NODE_SCALAR ? "'" : "",
				   n->kind == CORE_NODE_SCALAR && !n->plain ? " (quoted)" : "");
	return 0;
}

int core_node_int(const core_node *n, long long min, long long max,
		  long long *out, core_err *err)
{
	char *end;
	long long v;

	if (n->kind != CORE_NODE_SCALAR || !n->value[0])
		return core_err_at(err, CORE_ECONFIG, n, "expected an integer, got %s",
				   kind_name(n));
	errno = 0;
	v = strtoll(n->value, &end, 10);
	if (*end || errno)
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected an integer, got '%s'", n->value);
	if (v < min || v > max)
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected an integer from %lld to %lld, got %lld",
				   min, max, v);
	*out = v;
	return 0;
}

int core_node_double(const core_node *n, double min, double max, double *out,
		     core_err *err)
{
	char *end;
	double v;

	if (n->kind != CORE_NODE_SCALAR || !n->value[0])
		return core_err_at(err, CORE_ECONFIG, n, "expected a number, got %s",
				   kind_name(n));
	errno = 0;
	v = strtod(n->value, &end);
	if (*end || errno || !isfinite(v))
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected a number, got '%s'", n->value);
	if (v < min || v > max)
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected a number from %g to %g, got %g", min, max, v);
	*out = v;
	return 0;
}

int core_node_enum(const core_node *n, const char *const *choices, int *index,
		   core_err *err)
{
	core_buf list;
	const char *hint;
	int rc;

	if (n->kind == CORE_NODE_SCALAR) {
		for (int i = 0; choices[i]; i++) {
			if (strcmp(choices[i], n->value) == 0) {
				*index = i;
				return 0;
			}
		}
	}
	core_buf_init(&list);
	for (int i = 0; choices[i]; i++)
		core_buf_printf(&list, "%s%s", i ? ", " : "", choices[i]);
	hint = n->kind == CORE_NODE_SCALAR ? near_match(n->value, choices) : NULL;
	rc = core_err_at(err, CORE_ECONFIG, n, "expected one of %s, got %s%s%s%s%s%s",
			 list.data ? list.data : "",
			 n->kind == CORE_NODE_SCALAR ? "'" : kind_name(n),
			 n->kind == CORE_NODE_SCALAR ? n->value : "",
			 n->kind == CORE_NODE_SCALAR ? "'" : "",
			 hint ? " (did you mean '" : "", hint ? hint : "",
			 hint ? "'?)" : "");
	core_buf_release(&list);
	return rc;
}

int core_node_str_list(const core_node *n, const char ***out, size_t *len,
		       core_err *err)
{
	const char **v;

	if (n->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, n,
				   "expected a list of strings, got %s", kind_name(n));
	v = calloc(n->len ? n->len : 1, sizeof(*v));
	if (!v)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n->len; i++) {
		if (core_node_str(n->items[i], &v[i], err)) {
			free(v);
			return CORE_ECONFIG;
		}
	}
	*out = v;
	*len = n->len;
	return 0;
}

static json_t *scalar_to_json(const core_node *n)
{
	char *end;
	bool b;

	if (!n->plain)
		return json_string(n->value);
	if (core_node_is_null(n))
		return json_null();
	if (!parse_bool(n->value, &b))
		return json_boolean(b);
	errno = 0;
	long long i = strtoll(n->value, &end, 10);
	if (!*end && !errno)
		return json_integer(i);
	double d = strtod(n->value, &end);
	if (!*end && isfinite(d) && strcasecmp(n->value, "nan") &&
	    strpbrk(n->value, "0123456789"))
		return json_real(d);
	return json_string(n->value);
}

json_t *core_node_to_json(const core_node *n)
{
	json_t *v;

	if (n->kind == CORE_NODE_SCALAR)
		return scalar_to_json(n);
	v = n->kind == CORE_NODE_MAP ? json_object() : json_array();
	for (size_t i = 0; v && i < n->len; i++) {
		json_t *item = core_node_to_json(n->items[i]);

		if (!item ||
		    (n->kind == CORE_NODE_MAP
			     ? json_object_set_new(v, n->keys[i]->value, item)
			     : json_array_append_new(v, item))) {
			json_decref(v);
			return NULL;
		}
	}
	return v;
}

int core_err_missing(core_err *err, const core_node *map, const char *key,
		     const char *shown, const char *what)
{
	const char *cand[2] = { key, NULL };
	const core_node *typo = NULL;

	for (size_t i = 0; map && map->kind == CORE_NODE_MAP && i < map->len && !typo; i++)
		if (strcmp(map->keys[i]->value, key) && near_match(map->keys[i]->value, cand))
			typo = map->keys[i];
	if (typo)
		return core_err_at(err, CORE_ECONFIG, typo, "missing required key '%s'%s%s%s: "
				   "'%s' is not a key here (did you mean '%s'?)", shown,
				   what ? " (" : "", what ? what : "", what ? ")" : "",
				   typo->value, key);
	return core_err_at(err, CORE_ECONFIG, map, "missing required key '%s'%s%s%s", shown,
			   what ? " (" : "", what ? what : "", what ? ")" : "");
}

int core_opt_str(const core_node *map, const char *key, bool required,
		 const char **out, core_err *err)
{
	const core_node *n = core_map_get(map, key);

	if (!n || core_node_is_null(n)) {
		if (required)
			return core_err_missing(err, map, key, key, NULL);
		return 0;
	}
	return core_node_str(n, out, err);
}

int core_opt_bool(const core_node *map, const char *key, bool *out,
		  core_err *err)
{
	const core_node *n = core_map_get(map, key);

	return n ? core_node_bool(n, out, err) : 0;
}

int core_opt_int(const core_node *map, const char *key, long long min,
		 long long max, long long *out, core_err *err)
{
	const core_node *n = core_map_get(map, key);

	return n ? core_node_int(n, min, max, out, err) : 0;
}

int core_opt_double(const core_node *map, const char *key, double min,
		    double max, double *out, core_err *err)
{
	const core_node *n = core_map_get(map, key);

	return n ? core_node_double(n, min, max, out, err) : 0;
}

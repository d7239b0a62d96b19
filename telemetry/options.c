/*
 * options.c — exporter options checked as ELSPETH's exporters check them
 * (their configure()), in its words, with the position of the option in
 * the settings file: "file:line:col: telemetry.exporters[0].options.
 * format: Exporter 'console' failed: 'format' must be a string, got int".
 * Values are typed as YAML 1.2's core schema types them (core_node_to_json).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "telemetry/tel_internal.h"

int tel__fail(const tel_opts *o, const char *key, core_err *err, const char *fmt, ...)
{
	const core_node *at = key ? core_map_get(o->map, key) : NULL;
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!at)
		at = o->map ? o->map : o->at;
	return core_err_at(err, CORE_ECONFIG, at, "Exporter '%s' failed: %s", o->exporter, msg);
}

/* The option's value as JSON (a new reference), or NULL when absent. */
static json_t *value(const tel_opts *o, const char *key)
{
	const core_node *n = core_map_get(o->map, key);

	return n ? core_node_to_json(n) : NULL;
}

int tel__opt_str(const tel_opts *o, const char *key, const char *missing,
		 bool nullable, const char **out, core_err *err)
{
	json_t *v = value(o, key);
	int rc = 0;

	if (!v || json_is_null(v)) {
		if (missing && !(nullable && v))
			rc = tel__fail(o, key, err, "%s", missing);
		else if (v)
			*out = NULL;
	} else if (!json_is_string(v)) {
		rc = tel__fail(o, key, err, "'%s' must be a string%s, got %s", key,
			       nullable ? " or null" : "", core_py_type(v));
	} else {
		*out = core_map_get(o->map, key)->value;
	}
	json_decref(v);
	return rc;
}

int tel__opt_int(const tel_opts *o, const char *key, const char *missing,
		 long long min, long long *out, core_err *err)
{
	json_t *v = value(o, key);
	long long n;
	int rc = 0;

	if (!v) {
		if (missing)
			rc = tel__fail(o, key, err, "%s", missing);
		return rc;
	}
	if (!json_is_integer(v) && !json_is_boolean(v)) {
		rc = tel__fail(o, key, err, "'%s' must be an integer, got %s", key,
			       core_py_type(v));
	} else {
		n = json_is_boolean(v) ? json_is_true(v) : (long long)json_integer_value(v);
		if (n < min)
			rc = tel__fail(o, key, err, "%s must be >= %lld, got %lld", key, min, n);
		else
			*out = n;
	}
	json_decref(v);
	return rc;
}

int tel__opt_headers(const tel_opts *o, const char *key, json_t **out, core_err *err)
{
	json_t *v = value(o, key), *item;
	const char *k;
	int rc = 0;

	*out = NULL;
	if (!v || json_is_null(v)) {
		json_decref(v);
		return 0;
	}
	if (!json_is_object(v)) {
		rc = tel__fail(o, key, err, "'%s' must be a dictionary or null, got %s", key,
			       core_py_type(v));
		json_decref(v);
		return rc;
	}
	json_object_foreach(v, k, item)
		if (!json_is_string(item)) {
			rc = tel__fail(o, key, err, "'%s[%s]' must be a string, got %s", key, k,
				       core_py_type(item));
			json_decref(v);
			return rc;
		}
	*out = v;
	return 0;
}

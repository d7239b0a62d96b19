/*
 * catalog.c — a plugin's option tables (plugins.h: plg_option) as the
 * catalog shows them: ELSPETH's ConfigFieldSummary list and a JSON Schema
 * (its config model's model_json_schema(), in spirit).
 */
#include <stdio.h>
#include <string.h>

#include "plugins/plugins.h"

/* The default as JSON, or NULL (none). A table's default is JSON text
 * by contract (test_plugins_catalog checks every one parses). */
static json_t *default_of(const plg_option *o)
{
	return o->def ? json_loads(o->def, JSON_DECODE_ANY, NULL) : NULL;
}

/* The first of a '|' union (ELSPETH picks an anyOf's first branch). */
static json_t *first_type(const char *type)
{
	const char *bar = strchr(type, '|');

	return bar ? json_stringn(type, (size_t)(bar - type)) : json_string(type);
}

json_t *plg_option_fields(const plg_option *const *tables)
{
	json_t *a = json_array();

	for (size_t t = 0; a && tables && tables[t]; t++)
		for (const plg_option *o = tables[t]; o->name; o++) {
			json_t *d = default_of(o);

			json_array_append_new(a, json_pack("{s:s,s:o,s:b,s:s,s:o}", "name", o->name,
				"type", first_type(o->type), "required", o->required,
				"description", o->desc, "default", d ? d : json_null()));
		}
	return a;
}

static json_t *type_schema(const char *type)
{
	json_t *any;
	const char *p = type, *bar;

	if (!strchr(type, '|'))
		return json_pack("{s:s}", "type", type);
	any = json_array();
	while (any) {
		bar = strchr(p, '|');
		json_array_append_new(any, json_pack("{s:s%}", "type", p,
			bar ? (size_t)(bar - p) : strlen(p)));
		if (!bar)
			break;
		p = bar + 1;
	}
	return json_pack("{s:o}", "anyOf", any);
}

json_t *plg_option_schema(const char *title, const plg_option *const *tables)
{
	json_t *props = json_object(), *req = json_array();

	for (size_t t = 0; props && req && tables && tables[t]; t++)
		for (const plg_option *o = tables[t]; o->name; o++) {
			json_t *p = type_schema(o->type), *d = default_of(o);

			if (!p)
				continue;
			json_object_set_new(p, "description", json_string(o->desc));
			if (d)
				json_object_set_new(p, "default", d);
			json_object_set_new(props, o->name, p);
			if (o->required)
				json_array_append_new(req, json_string(o->name));
		}
	return json_pack("{s:s,s:s,s:o,s:o,s:b}", "title", title, "type", "object",
			 "properties", props ? props : json_object(),
			 "required", req ? req : json_array(),
			 "additionalProperties", 0);
}

/* ------------------------------------------------------------ catalog */

/* ELSPETH's three types; aggregations are transforms in its catalog. */
static const struct { const char *type; plg_kind kind, also; } types[] = {
	{ "source", PLG_SOURCE, PLG_SOURCE },
	{ "transform", PLG_TRANSFORM, PLG_AGGREGATION },
	{ "sink", PLG_SINK, PLG_SINK },
};

static int type_index(const char *type)
{
	for (int t = 0; type && t < 3; t++)
		if (!strcmp(types[t].type, type))
			return t;
	return -1;
}

json_t *plg_catalog_list(const char *type)
{
	int t = type_index(type);
	const char *name, *desc;
	json_t *a;

	if (t < 0 || !(a = json_array()))
		return NULL;
	for (int k = 0; k < 2; k++) {
		plg_kind kd = k ? types[t].also : types[t].kind;

		if (k && kd == types[t].kind)
			break;
		for (size_t i = 0; a && plg_describe(kd, i, &name, &desc); i++)
			json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:o}", "name", name,
				"description", desc ? desc : "", "plugin_type", types[t].type,
				"config_fields", plg_option_fields(plg_options_of(kd, name))));
	}
	return a;
}

json_t *plg_catalog_schema(const char *type, const char *name, char *msg, size_t cap)
{
	int t = type_index(type);
	const char *n, *desc = NULL;
	size_t len;

	if (t < 0) {
		snprintf(msg, cap, "Unknown plugin type: %.100s. Must be one of: "
			 "['sink', 'source', 'transform']", type ? type : "");
		return NULL;
	}
	for (int k = 0; k < 2; k++) {
		plg_kind kd = k ? types[t].also : types[t].kind;

		for (size_t i = 0; name && plg_describe(kd, i, &n, &desc); i++)
			if (!strcmp(n, name))
				return json_pack("{s:s,s:s,s:s,s:o}", "name", n, "plugin_type",
					types[t].type, "description", desc ? desc : "",
					"json_schema", plg_option_schema(n, plg_options_of(kd, n)));
	}
	len = (size_t)snprintf(msg, cap, "Unknown %s plugin: %.100s. Available: [",
			       types[t].type, name ? name : "");
	for (int k = 0; k < 2 && len < cap; k++) {
		plg_kind kd = k ? types[t].also : types[t].kind;

		if (k && kd == types[t].kind)
			break;
		for (size_t i = 0; plg_describe(kd, i, &n, NULL) && len + 64 < cap; i++)
			len += (size_t)snprintf(msg + len, cap - len, "%s'%s'",
						msg[len - 1] != '[' ? ", " : "", n);
	}
	if (len + 2 < cap)
		snprintf(msg + len, cap - len, "]");
	return NULL;
}

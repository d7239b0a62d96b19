/* The plugins' option tables (plugins.h: plg_option), what the catalog
 * of `elspeth serve` and `mcp`'s plugin_schema show of them, and that a
 * plugin refuses a key its tables do not list (plugins/catalog.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "plugins/plugins.h"

static const char *const kinds[] = { "source", "transform", "sink", "aggregation" };

static bool type_ok(const char *t)
{
	static const char *const ok[] = { "string", "integer", "number", "boolean",
					   "object", "array", NULL };
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", t);
	for (char *save = NULL, *p = strtok_r(buf, "|", &save); p; p = strtok_r(NULL, "|", &save)) {
		size_t i;

		for (i = 0; ok[i] && strcmp(ok[i], p); i++)
			;
		if (!ok[i])
			return false;
	}
	return t[0] != '\0';
}

Test(catalog, every_plugin_has_well_formed_option_tables)
{
	const char *name;

	for (int k = PLG_SOURCE; k <= PLG_AGGREGATION; k++)
		for (size_t i = 0; plg_describe((plg_kind)k, i, &name, NULL); i++) {
			const plg_option *const *t = plg_options_of((plg_kind)k, name);
			size_t n = 0;

			cr_assert_not_null(t, "%s %s has no option tables", kinds[k], name);
			for (size_t a = 0; t[a]; a++)
				for (const plg_option *o = t[a]; o->name; o++, n++) {
					cr_assert(type_ok(o->type), "%s.%s: type '%s'", name, o->name, o->type);
					cr_assert(o->desc && o->desc[0], "%s.%s: no description", name, o->name);
					if (o->def) {
						json_t *d = json_loads(o->def, JSON_DECODE_ANY, NULL);

						cr_assert_not_null(d, "%s.%s: default %s is not JSON", name,
								   o->name, o->def);
						json_decref(d);
					}
					/* no key twice */
					for (size_t b = 0; t[b]; b++)
						for (const plg_option *p = t[b]; p->name; p++)
							cr_assert(p == o || strcmp(p->name, o->name),
								  "%s: '%s' twice", name, o->name);
				}
			cr_assert_gt(n, 0, "%s %s: no options", kinds[k], name);
		}
	cr_assert_null(plg_options_of(PLG_SINK, "no_such_sink"));
}

Test(catalog, fields_and_schema_follow_the_tables)
{
	const plg_option *const *t = plg_options_of(PLG_TRANSFORM, "llm");
	json_t *f = plg_option_fields(t), *s = plg_option_schema("llm", t), *p, *hedge = NULL;
	size_t i;
	json_t *v;

	cr_assert(json_is_array(f) && json_is_object(s));
	p = json_object_get(s, "properties");
	cr_assert_eq(json_array_size(f), json_object_size(p));
	json_array_foreach(f, i, v) {
		cr_assert_eq(json_object_size(v), 5, "ELSPETH's ConfigFieldSummary: 5 keys");
		if (!strcmp(json_string_value(json_object_get(v, "name")), "hedge"))
			hedge = v;
	}
	cr_assert_not_null(hedge);
	cr_assert_str_eq(json_string_value(json_object_get(hedge, "type")), "boolean",
			 "a union shows its first member, as ELSPETH's catalog");
	cr_assert_str_eq(json_string_value(json_object_get(hedge, "default")), "idle");
	cr_assert_eq(json_array_size(json_object_get(json_object_get(p, "hedge"), "anyOf")), 2);
	cr_assert(json_is_false(json_object_get(s, "additionalProperties")));
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(p, "pool_size"), "default")), 32);
	json_decref(f);
	json_decref(s);

	t = plg_options_of(PLG_SOURCE, "csv");
	s = plg_option_schema("csv", t);
	p = json_object_get(s, "required");
	cr_assert_eq(json_array_size(p), 2);
	cr_assert_str_eq(json_string_value(json_array_get(p, 0)), "path");
	cr_assert_str_eq(json_string_value(json_array_get(p, 1)), "on_validation_failure");
	json_decref(s);
}

/* Each plugin checks its options' keys against its own tables: a key
 * they do not list is refused, by name. */
Test(catalog, a_key_outside_the_tables_is_refused)
{
	static const char yaml[] = "zz_not_an_option: 1\n";
	core_doc *doc = NULL;
	core_err err = { 0 };
	const char *name;

	cr_assert_eq(core_doc_parse("o.yaml", yaml, strlen(yaml), &doc, &err), 0, "%s", err.msg);
	for (int k = PLG_SOURCE; k <= PLG_AGGREGATION; k++)
		for (size_t i = 0; plg_describe((plg_kind)k, i, &name, NULL); i++) {
			const core_node *o = core_doc_root(doc);
			void *st = NULL;
			int rc;

			memset(&err, 0, sizeof(err));
			switch (k) {
			case PLG_SOURCE: rc = plg_find_source(name)->check(o, &err); break;
			case PLG_SINK: rc = plg_find_sink(name)->check(o, &err); break;
			case PLG_TRANSFORM: rc = plg_find_transform(name)->open(NULL, o, &st, &err); break;
			default: rc = plg_find_aggregation(name)->open(NULL, o, &st, &err); break;
			}
			cr_assert_neq(rc, 0, "%s %s accepted an unknown key", kinds[k], name);
			cr_assert(strstr(err.msg, "unknown key 'zz_not_an_option'"),
				  "%s %s: %s", kinds[k], name, err.msg);
		}
	core_doc_free(doc);
}

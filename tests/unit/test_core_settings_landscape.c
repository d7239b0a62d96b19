/* The landscape and payload_store sections (core/settings_landscape.c,
 * ADR 0028): ELSPETH 0.4.1's keys and defaults, the export's sink taken
 * out of the graph, clear refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

static const char *base =
	"source:\n"
	"  plugin: csv\n"
	"  on_success: out\n"
	"  options: {path: in.csv, on_validation_failure: discard}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {path: out.csv}}\n"
	"  audit: {plugin: json, options: {path: audit.json}}\n";

static int load(const char *extra, core_settings **s, core_err *err)
{
	char text[2048];

	snprintf(text, sizeof(text), "%s%s", base, extra);
	memset(err, 0, sizeof(*err));
	return core_settings_parse("p.yaml", text, s, err);
}

static void refused(const char *extra, const char *needle)
{
	core_settings *s = NULL;
	core_err err;
	int rc = load(extra, &s, &err);

	cr_assert_eq(rc, CORE_ECONFIG, "rc %d: %s", rc, err.msg);
	cr_assert_null(s);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

Test(settings_landscape, defaults_are_elspeths)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("", &s, &err), 0, "%s", err.msg);
	cr_assert_not(s->audit_export.enabled);
	cr_assert_not(s->journal.enabled);
	cr_assert_not(s->payload_store.set);
	cr_assert_str_eq(s->payload_store.base_path, ".elspeth/payloads");
	cr_assert_eq(s->payload_store.retention_days, 90);
	cr_assert_eq(s->nsinks, 2);
	core_settings_free(s);
}

Test(settings_landscape, export_takes_its_sink_out_of_the_graph)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("landscape:\n  export: {enabled: true, sink: audit, format: json, sign: true}\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert(s->audit_export.enabled && s->audit_export.json && s->audit_export.sign);
	cr_assert_str_eq(s->audit_export.target.name, "audit");
	cr_assert_str_eq(s->audit_export.target.plugin, "json");
	cr_assert_eq(s->nsinks, 1);
	cr_assert_str_eq(s->sinks[0].name, "out");
	core_settings_free(s);
}

Test(settings_landscape, export_disabled_keeps_the_sink_and_format_defaults_to_csv)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("landscape:\n  export: {sink: audit}\n", &s, &err), 0, "%s", err.msg);
	cr_assert_not(s->audit_export.enabled);
	cr_assert_not(s->audit_export.json);
	cr_assert_eq(s->nsinks, 2);
	core_settings_free(s);
}

Test(settings_landscape, export_errors)
{
	refused("landscape:\n  export: {enabled: true}\n",
		"landscape.export.sink is required when export is enabled");
	refused("landscape:\n  export: {enabled: true, sink: nope}\n",
		"landscape.export.sink 'nope' not found in sinks. Available sinks: ['out', 'audit']");
	refused("landscape:\n  export: {enabled: true, sink: audit, format: xml}\n", "format");
	refused("landscape:\n  export: {enabled: true, sink: audit, compress: true}\n", "compress");
}

Test(settings_landscape, journal_path_derived_from_the_sqlite_url)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("landscape:\n  url: sqlite:///runs/audit.db\n  dump_to_jsonl: true\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert(s->journal.enabled);
	cr_assert_null(s->journal.path);
	cr_assert_str_eq(s->journal.derived, "runs/audit.journal.jsonl");
	core_settings_free(s);
	cr_assert_eq(load("landscape:\n  url: sqlite:///a.b/audit\n  dump_to_jsonl: true\n"
			  "  dump_to_jsonl_fail_on_error: true\n  dump_to_jsonl_include_payloads: true\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(s->journal.derived, "a.b/audit.journal.jsonl");
	cr_assert(s->journal.fail_on_error && s->journal.include_payloads);
	core_settings_free(s);
}

Test(settings_landscape, journal_needs_a_path_without_sqlite)
{
	refused("landscape:\n  url: lmdb://state\n  dump_to_jsonl: true\n",
		"dump_to_jsonl requires dump_to_jsonl_path for non-SQLite databases");
	core_settings *s;
	core_err err;

	cr_assert_eq(load("landscape:\n  url: lmdb://state\n  dump_to_jsonl: true\n"
			  "  dump_to_jsonl_path: j.jsonl\n", &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(s->journal.path, "j.jsonl");
	core_settings_free(s);
}

Test(settings_landscape, backends)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("landscape: {backend: sqlite, encryption_key_env: K}\n", &s, &err), 0,
		     "%s", err.msg);
	core_settings_free(s);
	refused("landscape: {backend: sqlcipher}\n", "landscape.backend 'sqlcipher' is not supported");
	refused("landscape: {backend: oracle}\n", "backend");
}

Test(settings_landscape, payload_store)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("payload_store: {backend: filesystem, base_path: p, retention_days: 7}\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert(s->payload_store.set);
	cr_assert_str_eq(s->payload_store.base_path, "p");
	cr_assert_eq(s->payload_store.retention_days, 7);
	core_settings_free(s);
	refused("payload_store: {backend: s3}\n", "Unsupported payload store backend 's3'");
	refused("payload_store: {retention_days: 0}\n", "retention_days");
	refused("payload_store: {where: x}\n", "where");
}

/* landscape.url is parsed once, at load: what it names is in the
 * settings, and nobody parses the url again. */
Test(settings_landscape, the_url_is_parsed_once_at_load)
{
	core_settings *s;
	core_err err;

	cr_assert_eq(load("", &s, &err), 0, "%s", err.msg);
	cr_assert_str_eq(s->landscape_lmdb, "./state/audit.lmdb");
	cr_assert_str_eq(s->landscape_sql, "");
	core_settings_free(s);
	cr_assert_eq(load("landscape:\n  url: sqlite:///runs/audit.db\n", &s, &err), 0,
		     "%s", err.msg);
	cr_assert_str_eq(s->landscape_lmdb, "runs/audit.db.lmdb");
	cr_assert_str_eq(s->landscape_sql, "runs/audit.db");
	core_settings_free(s);
	cr_assert_eq(load("landscape:\n  url: lmdb:///var/lib/e/trail\n", &s, &err), 0,
		     "%s", err.msg);
	cr_assert_str_eq(s->landscape_lmdb, "/var/lib/e/trail");
	cr_assert_str_eq(s->landscape_sql, "");
	core_settings_free(s);
}

/*
 * settings_landscape.c — the `landscape` and `payload_store` sections
 * (docs/settings.md; ADR 0019 for the url, ADR 0028 for export, the
 * journal and the payload store). Keys and defaults are ELSPETH 0.4.1's
 * LandscapeSettings, LandscapeExportSettings and PayloadStoreSettings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/core_internal.h"

static const char *const backends[] = { "sqlite", "sqlcipher", "postgresql", NULL };
static const char *const formats[] = { "csv", "json", NULL };

static const key_spec landscape_keys[] = {
	{ "url", K_STR, false }, { "enabled", K_BOOL, false },
	{ "backend", K_ENUM, false, 0, 0, backends },
	{ "encryption_key_env", K_STR, false },
	{ "export", K_MAP, false },
	{ "dump_to_jsonl", K_BOOL, false },
	{ "dump_to_jsonl_path", K_STR, false },
	{ "dump_to_jsonl_fail_on_error", K_BOOL, false },
	{ "dump_to_jsonl_include_payloads", K_BOOL, false },
	{ "dump_to_jsonl_payload_base_path", K_STR, false }, { NULL }
};
static const key_spec export_keys[] = {
	{ "enabled", K_BOOL, false }, { "sink", K_STR, false },
	{ "format", K_ENUM, false, 0, 0, formats },
	{ "sign", K_BOOL, false }, { NULL }
};
static const key_spec payload_store_keys[] = {
	{ "backend", K_STR, false }, { "base_path", K_STR, false },
	{ "retention_days", K_INT, false, 1, 1e9 }, { NULL }
};

/* The export's sink leaves the graph (ELSPETH builds the graph without
 * it: it receives the audit records after the run, not rows). */
static int take_export_sink(core_settings *s, const core_node *n, core_err *err)
{
	core_audit_export_cfg *x = &s->audit_export;
	char names[1024] = "";
	size_t used = 0;

	for (size_t i = 0; i < s->nsinks; i++) {
		if (strcmp(s->sinks[i].name, x->sink))
			continue;
		x->target = s->sinks[i];
		memmove(&s->sinks[i], &s->sinks[i + 1],
			(s->nsinks - i - 1) * sizeof(*s->sinks));
		s->nsinks--;
		return 0;
	}
	for (size_t i = 0; i < s->nsinks && used < sizeof(names); i++)
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s'%s'",
					 i ? ", " : "", s->sinks[i].name);
	return core_err_at(err, CORE_ECONFIG, core_map_get(n, "sink"),
		"landscape.export.sink '%s' not found in sinks. Available sinks: [%s]",
		x->sink, names);
}

static int load_export(core_settings *s, const core_node *n, core_err *err)
{
	core_audit_export_cfg *x = &s->audit_export;
	const core_node *f = core_map_get(n, "format");
	int fmt = 0, rc;

	if ((rc = core__check_section(n, export_keys, err)) ||
	    (rc = core_opt_bool(n, "enabled", &x->enabled, err)) ||
	    (rc = core_opt_bool(n, "sign", &x->sign, err)) ||
	    (f && (rc = core_node_enum(f, formats, &fmt, err))))
		return rc;
	x->json = fmt == 1;
	x->sink = core__str_of(n, "sink");
	if (!x->enabled)
		return 0;
	if (!x->sink)
		return core_err_at(err, CORE_ECONFIG, n,
			"landscape.export.sink is required when export is enabled");
	return take_export_sink(s, n, err);
}

/* ELSPETH's default journal path: the SQLite file with the suffix
 * .journal.jsonl (Path.with_suffix). Only a sqlite:/// url has one. */
static int derive_journal_path(core_settings *s, const core_node *n, core_err *err)
{
	core_journal_cfg *j = &s->journal;
	const char *sql = s->landscape_sql, *slash, *dot;
	size_t stem;

	if (!sql[0])
		return core_err_at(err, CORE_ECONFIG, n,
			"dump_to_jsonl requires dump_to_jsonl_path for non-SQLite databases "
			"(landscape.url is %s)", s->landscape_url);
	slash = strrchr(sql, '/');
	dot = strrchr(slash ? slash + 1 : sql, '.');
	stem = dot && dot != (slash ? slash + 1 : sql) ? (size_t)(dot - sql) : strlen(sql);
	if ((size_t)snprintf(j->derived, sizeof(j->derived), "%.*s.journal.jsonl",
			     (int)stem, sql) >= sizeof(j->derived))
		return core_err_at(err, CORE_ECONFIG, n, "the journal's path is too long");
	return 0;
}

static int load_journal(core_settings *s, const core_node *n, core_err *err)
{
	core_journal_cfg *j = &s->journal;
	int rc;

	if ((rc = core_opt_bool(n, "dump_to_jsonl", &j->enabled, err)) ||
	    (rc = core_opt_bool(n, "dump_to_jsonl_fail_on_error", &j->fail_on_error, err)) ||
	    (rc = core_opt_bool(n, "dump_to_jsonl_include_payloads",
				&j->include_payloads, err)))
		return rc;
	j->path = core__str_of(n, "dump_to_jsonl_path");
	j->payload_base_path = core__str_of(n, "dump_to_jsonl_payload_base_path");
	if (!j->enabled || j->path)
		return 0;
	return derive_journal_path(s, core_map_get(n, "dump_to_jsonl"), err);
}

static int load_landscape(core_settings *s, const core_node *n, core_err *err)
{
	const char *backend = core__str_of(n, "backend");
	int rc;

	if ((rc = core__check_section(n, landscape_keys, err)) ||
	    (rc = core_opt_bool(n, "enabled", &s->audit, err)))
		return rc;
	if (core__str_of(n, "url")) {
		s->landscape_url = core__str_of(n, "url");
		if (core_landscape_paths(s->landscape_url, s->landscape_lmdb,
					 sizeof(s->landscape_lmdb), s->landscape_sql,
					 sizeof(s->landscape_sql), err))
			return core_err_at(err, CORE_ECONFIG,
				core_map_get(n, "url"), "%s", err->msg);
	}
	/* The url says where the trail goes; backend may only agree. */
	if (backend && !strcmp(backend, "sqlcipher"))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "backend"),
			"landscape.backend 'sqlcipher' is not supported: the trail is "
			"LMDB, written to SQLite or PostgreSQL in the clear (docs/audit.md)");
	if (backend && !strcmp(backend, "postgresql") && !core_sql_is_pg(s->landscape_sql))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "backend"),
			"landscape.backend 'postgresql' needs a landscape.url "
			"postgresql://USER@HOST/DB (the url is %s)", s->landscape_url);
	if (core_map_get(n, "export") &&
	    (rc = load_export(s, core_map_get(n, "export"), err)))
		return rc;
	return load_journal(s, n, err);
}

static int load_payload_store(core_settings *s, const core_node *n, core_err *err)
{
	core_payload_store_cfg *p = &s->payload_store;
	const char *backend = core__str_of(n, "backend");
	int rc;

	if ((rc = core__check_section(n, payload_store_keys, err)) ||
	    (rc = core_opt_int(n, "retention_days", 1, 1000000000,
			       &p->retention_days, err)))
		return rc;
	if (backend && strcmp(backend, "filesystem"))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "backend"),
			"Unsupported payload store backend '%s'. Only 'filesystem' is "
			"currently supported.", backend);
	if (core__str_of(n, "base_path"))
		p->base_path = core__str_of(n, "base_path");
	p->set = true;
	return 0;
}

int core__load_landscape(core_settings *s, const core_node *root, core_err *err)
{
	const core_node *n;
	int rc;

	s->payload_store.base_path = ".elspeth/payloads";
	s->payload_store.retention_days = 90;
	if ((n = core_map_get(root, "landscape")) && (rc = load_landscape(s, n, err)))
		return rc;
	if ((n = core_map_get(root, "payload_store")) &&
	    (rc = load_payload_store(s, n, err)))
		return rc;
	return 0;
}

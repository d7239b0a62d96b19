/*
 * settings_landscape.c — the `landscape` and `payload_store` sections
 * (docs/settings.md; ADR 0019 for the url, ADR 0028 for export, the
 * journal and the payload store). Keys and defaults are ELSPETH 0.4.1's
 * LandscapeSettings, LandscapeExportSettings and PayloadStoreSettings.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
/* 0.7.1's LandscapeExportSettings (ADR 0053). */
static const char *const signing_modes[] = { "unsigned", "hmac_sha256", NULL };
static const char *const rotations[] = { "multi_version", "single_export", NULL };
static const char *const durabilities[] = { "fsync", "replicated", NULL };
static const key_spec export_keys_v07[] = {
	{ "enabled", K_BOOL, false }, { "sink", K_STR, false },
	{ "format", K_ENUM, false, 0, 0, formats },
	{ "signing_mode", K_ENUM, false, 0, 0, signing_modes },
	{ "signer_key_id", K_STR, false }, { "signing_secret_ref", K_STR, false },
	{ "signer_rotation_policy", K_ENUM, false, 0, 0, rotations },
	{ "exporter_version", K_STR, false }, { "serialization_version", K_STR, false },
	{ "chunking_algorithm_version", K_STR, false },
	{ "include_raw_error_rows", K_BOOL, false },
	{ "total_record_limit", K_INT, false, 1, 100000000 },
	{ "total_byte_limit", K_INT, false, 1, 1099511627776.0 },
	{ "chunk_limit", K_INT, false, 1, 100000 },
	{ "per_chunk_record_limit", K_INT, false, 1, 1000000 },
	{ "per_chunk_byte_limit", K_INT, false, 1, 67108864 },
	{ "spool_root", K_STR, false }, { "content_store", K_MAP, false }, { NULL }
};
static const key_spec content_store_keys[] = {
	{ "content_store_id", K_STR, true }, { "namespace", K_STR, true },
	{ "root", K_STR, true }, { "policy_version", K_STR, true },
	{ "retention_days", K_INT, true, 1, 36500 },
	{ "durability", K_ENUM, true, 0, 0, durabilities }, { NULL }
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

/* 0.7.1's credential-free identifier: [A-Za-z0-9][A-Za-z0-9._:-]{0,127}
 * (extra: '/' for a namespace, 255 more characters). */
static bool identifier(const char *v, const char *extra, size_t max)
{
	size_t n = strlen(v);

	if (!n || n > max || !isalnum((unsigned char)v[0]) || !isascii((unsigned char)v[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isascii((unsigned char)v[i]) ||
		    !(isalnum((unsigned char)v[i]) || strchr(extra, v[i])))
			return false;
	return true;
}

/* Whether a '/'-separated path has a '..' segment. */
static bool dotdot(const char *v)
{
	for (const char *p = v; *p;) {
		size_t len = strcspn(p, "/");

		if (len == 2 && !strncmp(p, "..", 2))
			return true;
		p += len + (p[len] == '/');
	}
	return false;
}

/* An environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
static bool env_name(const char *v)
{
	if (!*v || isdigit((unsigned char)*v))
		return false;
	for (; *v; v++)
		if (!isascii((unsigned char)*v) || !(isalnum((unsigned char)*v) || *v == '_'))
			return false;
	return true;
}

/* A relative path under .elspeth/WHERE without '..' (0.7.1 compares
 * pathlib parts, which drop '.' and empty components). */
static bool private_root(const char *v, const char *where)
{
	char parts[2][64];
	int np = 0;

	if (v[0] == '/' || dotdot(v))
		return false;
	for (const char *p = v; *p;) {
		size_t len = strcspn(p, "/");

		if (len && !(len == 1 && *p == '.') && np < 2) {
			snprintf(parts[np], sizeof(parts[np]), "%.*s", (int)len, p);
			np++;
		}
		p += len + (p[len] == '/');
	}
	return np == 2 && !strcmp(parts[0], ".elspeth") && !strcmp(parts[1], where);
}

/* An existing root must be a private directory (0.7.1 checks at load). */
static int check_root(const core_node *v, const char *path, const char *what,
		      const char *where, core_err *err)
{
	struct stat st;

	if (!private_root(path, where))
		return core_err_at(err, CORE_ECONFIG, v, "%s must be inside the code-owned "
				   "%s.elspeth/%s root", what,
				   strcmp(where, "audit-export-spool") ? "" : "private ", where);
	if (stat(path, &st))
		return 0;
	if (!S_ISDIR(st.st_mode))
		return core_err_at(err, CORE_ECONFIG, v, "%s must be a directory", what);
	if (st.st_mode & 077)
		return core_err_at(err, CORE_ECONFIG, v,
				   "%s must be private (no group/world permissions)", what);
	return 0;
}

static int load_content_store(core_audit_export_v2 *v, const core_node *n, core_err *err)
{
	int dur = 0, rc;

	if ((rc = core__check_section(n, content_store_keys, err)) ||
	    (rc = core_opt_int(n, "retention_days", 1, 36500, &v->store_retention_days, err)) ||
	    (rc = core_node_enum(core_map_get(n, "durability"), durabilities, &dur, err)))
		return rc;
	v->store_replicated = dur == 1;
	v->store_id = core__str_of(n, "content_store_id");
	v->store_namespace = core__str_of(n, "namespace");
	v->store_root = core__str_of(n, "root");
	v->store_policy = core__str_of(n, "policy_version");
	if (!identifier(v->store_id, "._:-", 128))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "content_store_id"),
			"content_store_id must be a bounded credential-free identifier");
	if (!identifier(v->store_namespace, "._/-", 256) || dotdot(v->store_namespace))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "namespace"),
			"namespace must be a bounded credential-free relative namespace");
	if (!*v->store_policy || strlen(v->store_policy) > 64)
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "policy_version"),
			"policy_version must have 1 to 64 characters");
	return check_root(core_map_get(n, "root"), v->store_root, "content store root",
			  "audit-export-content-store", err);
}

static int label(const core_node *n, const char *key, const char *dflt,
		 const char **out, core_err *err)
{
	const char *v = core__str_of(n, key);

	*out = v ? v : dflt;
	if (**out && strlen(*out) <= 64)
		return 0;
	return core_err_at(err, CORE_ECONFIG, core_map_get(n, key),
			   "%s must have 1 to 64 characters", key);
}

/* 0.7.1's validate_snapshot_policy, its messages and its order. */
static int export_policy(core_audit_export_v2 *v, const core_node *n, bool enabled,
			 core_err *err)
{
	static const char *const required[] = {
		"total_record_limit", "total_byte_limit", "chunk_limit",
		"per_chunk_record_limit", "per_chunk_byte_limit", "spool_root",
		"content_store", NULL
	};
	char missing[256] = "";
	size_t used = 0;

	if (!v->hmac && strcmp(v->signer_key_id, "UNSIGNED"))
		return core_err_at(err, CORE_ECONFIG, n,
			"unsigned signing requires the typed UNSIGNED signer identity");
	if (!v->hmac && v->signing_secret_ref)
		return core_err_at(err, CORE_ECONFIG, n,
			"unsigned signing forbids signing secret resolution");
	if (v->hmac && !strcmp(v->signer_key_id, "UNSIGNED"))
		return core_err_at(err, CORE_ECONFIG, n,
			"hmac_sha256 signer_key_id cannot use the reserved UNSIGNED identity");
	if (v->hmac && !v->signing_secret_ref)
		return core_err_at(err, CORE_ECONFIG, n,
			"hmac_sha256 signing requires a signing secret reference");
	for (size_t i = 0; required[i]; i++) {
		const core_node *k = core_map_get(n, required[i]);

		if (!k || core_node_is_null(k))
			used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%s",
						 used ? ", " : "", required[i]);
	}
	if (used && enabled)
		return core_err_at(err, CORE_ECONFIG, n,
			"enabled audit export requires explicit fields: %s", missing);
	if (used)
		return 0;
	if (v->chunk_records > v->total_records)
		return core_err_at(err, CORE_ECONFIG, n,
			"per_chunk_record_limit cannot exceed total_record_limit");
	if (v->chunk_bytes > v->total_bytes)
		return core_err_at(err, CORE_ECONFIG, n,
			"per_chunk_byte_limit cannot exceed total_byte_limit");
	if (v->total_records > v->chunk_limit * v->chunk_records)
		return core_err_at(err, CORE_ECONFIG, n,
			"total_record_limit exceeds configured chunk record capacity");
	if (v->total_bytes > v->chunk_limit * v->chunk_bytes)
		return core_err_at(err, CORE_ECONFIG, n,
			"total_byte_limit exceeds configured chunk byte capacity");
	if (v->total_bytes < v->total_records)
		return core_err_at(err, CORE_ECONFIG, n,
			"total_byte_limit must allow at least one byte per accepted record");
	return 0;
}

/* The sink an export writes: json for format json, csv for csv (0.7.1's
 * declared audit-export formats), a file sink that replaces its file. */
static int export_target(const core_audit_export_cfg *x, const core_node *n, core_err *err)
{
	const char *want = x->json ? "json" : "csv";
	const core_node *o = x->target.options;
	const char *mode = core__str_of(o, "mode");
	const char *cp = core__str_of(o, "collision_policy");

	if (strcmp(x->target.plugin, want))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "format"),
			"Sink '%s' does not support audit export format '%s'; declared "
			"formats: [%s]", x->sink, want,
			!strcmp(x->target.plugin, "json") ? "'json'" :
			!strcmp(x->target.plugin, "csv") ? "'csv'" : "");
	if (x->json && ((mode && strcmp(mode, "write")) ||
			(cp && strcmp(cp, "fail_if_exists"))))
		return core_err_at(err, CORE_ECONFIG, n,
			"JSON audit export requires mode='write' and collision policy "
			"'fail_if_exists' or null");
	if (!core__str_of(o, "path"))
		return core_err_at(err, CORE_ECONFIG, n,
			"audit export sink '%s' has no path", x->sink);
	return 0;
}

static int load_export_v07(core_settings *s, const core_node *n, core_err *err)
{
	core_audit_export_cfg *x = &s->audit_export;
	core_audit_export_v2 *v = &x->v2;
	const core_node *f = core_map_get(n, "format"), *k;
	int fmt = 0, mode = 0, rot = 0, rc;

	static const char *const not_null[] = {
		"signing_mode", "signer_key_id", "signer_rotation_policy", "exporter_version",
		"serialization_version", "chunking_algorithm_version", "format",
		"include_raw_error_rows", NULL
	};

	if (core_map_get(n, "sign"))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "sign"),
			"unknown key 'sign': ELSPETH 0.7.1 signs its export with "
			"signing_mode: hmac_sha256");
	/* a default is not what null means (0.7.1's model refuses it) */
	for (size_t i = 0; not_null[i]; i++)
		if ((k = core_map_get(n, not_null[i])) && core_node_is_null(k))
			return core_err_at(err, CORE_ECONFIG, k, "%s: a value is required, "
					   "not null", not_null[i]);
	if ((rc = core__check_section(n, export_keys_v07, err)) ||
	    (rc = core_opt_bool(n, "enabled", &x->enabled, err)) ||
	    (rc = core_opt_bool(n, "include_raw_error_rows", &v->include_raw_error_rows, err)) ||
	    (f && (rc = core_node_enum(f, formats, &fmt, err))) ||
	    ((k = core_map_get(n, "signing_mode")) &&
	     (rc = core_node_enum(k, signing_modes, &mode, err))) ||
	    ((k = core_map_get(n, "signer_rotation_policy")) &&
	     (rc = core_node_enum(k, rotations, &rot, err))) ||
	    (rc = core_opt_int(n, "total_record_limit", 1, 100000000, &v->total_records, err)) ||
	    (rc = core_opt_int(n, "total_byte_limit", 1, 1099511627776LL, &v->total_bytes, err)) ||
	    (rc = core_opt_int(n, "chunk_limit", 1, 100000, &v->chunk_limit, err)) ||
	    (rc = core_opt_int(n, "per_chunk_record_limit", 1, 1000000, &v->chunk_records, err)) ||
	    (rc = core_opt_int(n, "per_chunk_byte_limit", 1, 67108864, &v->chunk_bytes, err)) ||
	    (rc = label(n, "exporter_version", "landscape-exporter-v1", &v->exporter_version, err)) ||
	    (rc = label(n, "serialization_version", "audit-export-v2",
			&v->serialization_version, err)) ||
	    (rc = label(n, "chunking_algorithm_version", "record-framing-v1",
			&v->chunking_version, err)))
		return rc;
	v->on = true;
	x->json = fmt == 1;
	v->hmac = mode == 1;
	v->single_export = rot == 1;
	x->sink = core__str_of(n, "sink");
	v->signer_key_id = core__str_of(n, "signer_key_id");
	if (!v->signer_key_id)
		v->signer_key_id = "UNSIGNED";
	v->signing_secret_ref = core__str_of(n, "signing_secret_ref");
	v->spool_root = core__str_of(n, "spool_root");
	if (strcmp(v->signer_key_id, "UNSIGNED") && !identifier(v->signer_key_id, "._:-", 128))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "signer_key_id"),
			"signer_key_id must be a bounded credential-free identifier");
	if (v->signing_secret_ref && !env_name(v->signing_secret_ref))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "signing_secret_ref"),
			"signing_secret_ref must be an exact environment secret reference name");
	if (v->spool_root && (rc = check_root(core_map_get(n, "spool_root"), v->spool_root,
					      "spool_root", "audit-export-spool", err)))
		return rc;
	if ((k = core_map_get(n, "content_store")) && !core_node_is_null(k) &&
	    (rc = load_content_store(v, k, err)))
		return rc;
	if ((rc = export_policy(v, n, x->enabled, err)) || !x->enabled)
		return rc;
	if (!x->sink)
		return core_err_at(err, CORE_ECONFIG, n,
			"landscape.export.sink is required when export is enabled");
	if ((rc = take_export_sink(s, n, err)))
		return rc;
	return export_target(x, n, err);
}

static int load_export(core_settings *s, const core_node *n, core_err *err)
{
	core_audit_export_cfg *x = &s->audit_export;
	const core_node *f = core_map_get(n, "format");
	int fmt = 0, rc;

	if (s->format == CORE_FORMAT_V07)
		return load_export_v07(s, n, err);
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

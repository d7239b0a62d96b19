/* cmd_export.c — `elspeth export`: the audit trail as an SQLite database
 * in ELSPETH 0.4.1's schema (sqltrail/sqltrail.h, docs/audit.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "run/run.h"
#include "sqltrail/sqltrail.h"

/* The export reads the trail in the trail reader's child
 * (rec_read_isolated): a damaged page that crashes liblmdb ends the child,
 * whose SQLite transaction then never commits. */
typedef struct export_job {
	const char *run;       /* ID, latest or all */
	const char *sqlite;
	sqlt_opts o;
} export_job;

static int export_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	export_job *j = ctx;
	int rc = strcmp(j->run, "all") ? rec_resolve_run(env, j->run, run, err) : 0;

	(void)out;
	return rc ? rc : sqlt_export(env, *run, j->sqlite, &j->o, err);
}

/* -d postgresql://…: the database's trail copied into a new SQLite file. */
static int copy_pg(const cli_read_args *a)
{
	core_err err = { 0 };
	char *shown;
	int rc;

	if (strcmp(a->run, "all") || a->payloads || core_sql_is_pg(a->sqlite))
		return cli_usage_error("export", "from a postgresql:// database, export "
				       "copies every run, with the payloads it holds, into a "
				       "new SQLite file: it takes no --run, --payloads or url");
	if ((rc = sqlt_import_pg(a->database, a->sqlite, &err))) {
		cli_error(&err);
		return CLI_ERROR;
	}
	shown = core_url_sanitize(a->database);
	fprintf(stderr, "copied the trail in %s to %s\n", shown ? shown : "the database",
		a->sqlite);
	free(shown);
	return CLI_OK;
}

/* --audit: the settings' landscape.export, written again for a run that
 * completed (after an export that failed, or to a new target). */
typedef struct audit_job {
	const char *run;
	const core_settings *s;
} audit_job;

static int completed(rec_env *env, uint64_t run, core_err *err)
{
	json_t *runs = NULL, *r;
	const char *status = NULL;
	size_t i;
	int rc = rec_list_runs(env, &runs, err);

	json_array_foreach(runs, i, r)
		if ((uint64_t)json_integer_value(json_object_get(r, "run_id")) == run)
			status = json_string_value(json_object_get(r, "status"));
	if (!rc && (!status || strcmp(status, "completed")))
		rc = core_err_set(err, CORE_ECONFIG, "run %llu is %s: only a completed run is "
				  "exported (a resume finishes an unfinished one and exports it)",
				  (unsigned long long)run, status ? status : "not in the trail");
	json_decref(runs);
	return rc;
}

static int audit_fn(rec_env *env, const audit_job *j, uint64_t *run, core_err *err)
{
	int rc = rec_resolve_run(env, j->run, run, err);

	if (!rc)
		rc = completed(env, *run, err);
	return rc ? rc : run_audit_export(env, j->s, *run, NULL, err);
}

static int audit_export(const cli_read_args *a)
{
	audit_job job = { .run = strcmp(a->run, "all") ? a->run : "latest" };
	core_settings *s = NULL;
	rec_env *env = NULL;
	core_err err = { 0 };
	uint64_t run = 0;
	int rc;

	if (!a->settings || a->sqlite || a->payloads || a->database || a->manifest)
		return cli_usage_error("export", "--audit writes the landscape.export of the "
				       "settings (-s): it takes no -d, --sqlite, --payloads "
				       "or --manifest");
	if ((rc = core_settings_load(a->settings, &s, &err)))
		goto out;
	if (!s->audit_export.enabled) {
		rc = core_err_set(&err, CORE_ECONFIG, "%s: landscape.export is not enabled",
				  a->settings);
		goto out;
	}
	/* 0.7.1 refuses a second export of a run by another signer under
	 * single_export, from its registry of snapshots; we keep none, so
	 * cannot tell, and do not export again (ADR 0053) */
	if (s->audit_export.v2.on && s->audit_export.v2.single_export) {
		rc = core_err_set(&err, CORE_ECONFIG, "%s: signer_rotation_policy: "
				  "single_export allows one signer per run, and this build keeps "
				  "no record of earlier exports to check it against; use "
				  "multi_version to export a run again", a->settings);
		goto out;
	}
	job.s = s;
	/* not in the isolated reader: the export's own errors are not damage */
	if (!(rc = rec_open(s->landscape_lmdb, REC_READONLY, &env, &err))) {
		rc = audit_fn(env, &job, &run, &err);
		rec_close(env, NULL);
	}
	if (!rc)
		fprintf(stderr, "exported the audit records of run %llu to %s\n",
			(unsigned long long)run, s->audit_export.sink);
out:
	if (rc)
		cli_error(&err);
	core_settings_free(s);
	return rc ? CLI_ERROR : CLI_OK;
}

int cli_export(int argc, char **argv)
{
	static const char usage[] =
		"usage: elspeth export [-s SETTINGS | -d PATH] [-r ID|latest|all]\n"
		"                      --sqlite FILE|URL [--payloads]\n"
		"       elspeth export -d postgresql://… --sqlite NEWFILE\n"
		"       elspeth export -s SETTINGS [-r ID|latest] --audit\n\n"
		"Writes runs of the audit trail into an SQLite database with ELSPETH\n"
		"0.4.1's twenty tables (runs, nodes, edges, rows, tokens, node_states,\n"
		"calls, ...) and ours (elspeth_*), creating FILE when missing; or into\n"
		"the PostgreSQL database of a postgresql:// URL (docs/audit.md). A run\n"
		"already there is replaced, so exporting again is safe. From a\n"
		"postgresql:// database (-d), its whole trail is copied into a new\n"
		"SQLite file, in one read-only snapshot.\n\n"
		"  -r, --run ID|latest|all  the run (default: all)\n"
		"      --sqlite FILE|URL    the database to write\n"
		"      --payloads           also copy the payloads the runs refer to\n"
		"                           (source rows, errors, LLM bodies) into\n"
		"                           elspeth_payloads\n"
		"      --audit              write the settings' landscape.export for a\n"
		"                           run that completed (default: the latest),\n"
		"                           as the run wrote it at its end: ELSPETH\n"
		"                           0.4.1's records or 0.7.1's signed export\n";
	cli_read_args a = { .run = "all" };
	export_job job = { 0 };
	core_err err = { 0 };
	char path[4096], *shown;
	uint64_t run = 0;
	int rc;

	if ((rc = cli_parse_read_args("export", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (a.audit)
		return audit_export(&a);
	if (!a.sqlite || !*a.sqlite)
		return cli_usage_error("export", "--sqlite FILE is required");
	if (a.manifest)
		return cli_export_manifest(&a);
	if (a.database && core_sql_is_pg(a.database))
		return copy_pg(&a);
	job.o.payloads = a.payloads;
	job.run = a.run;
	job.sqlite = a.sqlite;
	if ((rc = cli_landscape_path(a.settings, a.database, path, sizeof(path))))
		return rc;
	if (!(shown = core_url_sanitize(a.sqlite)))
		return CLI_ERROR;
	rc = rec_read_isolated(path, "the exporter", export_fn, &job, 1 << 20, &run, NULL, &err);
	if (rc) {
		cli_error(&err);
		if (rc == CORE_EDATA)
			fprintf(stderr, "export: nothing of the run it was reading was written "
				"to %s\n", shown);
	} else if (run) {
		fprintf(stderr, "exported run %llu to %s\n", (unsigned long long)run, shown);
	} else {
		fprintf(stderr, "exported every run to %s\n", shown);
	}
	free(shown);
	return rc ? CLI_ERROR : CLI_OK;
}

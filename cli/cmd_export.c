/* cmd_export.c — `elspeth export`: the audit trail as an SQLite database
 * in ELSPETH 0.4.1's schema (sqltrail/sqltrail.h, docs/audit.md). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sqltrail/sqltrail.h"

/* The export reads the trail in a child process (core_isolate), as
 * verify does: a damaged page that crashes liblmdb ends the child, whose
 * SQLite transaction then never commits, and the parent reports the
 * damage instead of crashing. */
typedef struct export_job {
	char path[4096];
	const char *run;       /* ID, latest or all */
	const char *sqlite;
	sqlt_opts o;
} export_job;

/* The child: {"run"} or {"run", "code", "error"} on fd. */
static void export_child(void *ctx, int fd)
{
	export_job *j = ctx;
	core_err err = { 0 };
	uint64_t run = 0;
	rec_env *env;
	json_t *o;
	char *txt;
	int rc = rec_open(j->path, REC_READONLY, &env, &err);

	if (!rc) {
		rc = strcmp(j->run, "all") ? rec_resolve_run(env, j->run, &run, &err) : 0;
		if (!rc)
			rc = sqlt_export(env, run, j->sqlite, &j->o, &err);
		rec_close(env, NULL);
	}
	o = rc ? json_pack("{s:I,s:i,s:s}", "run", (json_int_t)run, "code", rc, "error", err.msg)
	       : json_pack("{s:I}", "run", (json_int_t)run);
	if ((txt = o ? json_dumps(o, JSON_COMPACT) : NULL))
		core_write_all(fd, txt, strlen(txt));
	_exit(txt ? 0 : 1);
}

static int export_isolated(export_job *j, uint64_t *run, core_err *err)
{
	core_buf b = { 0 };
	core_isolated how;
	json_t *o = NULL;
	int rc = core_isolate(export_child, j, 0, 1 << 20, &b, &how, err);

	*run = 0;
	if (!rc && how.signal)
		rc = core_err_set(err, CORE_EDATA, "the trail is damaged: reading it stopped "
				  "the exporter (signal %d, %s): a page of %s cannot be read; "
				  "nothing of the run it was reading was written to %s",
				  how.signal, strsignal(how.signal), j->path, j->sqlite);
	else if (!rc && !(o = json_loadb(b.data ? b.data : "", b.len, 0, NULL)))
		rc = core_err_set(err, CORE_EIO, "the exporter ended without an answer "
				  "(exit %d)", how.status);
	if (o) {
		*run = (uint64_t)json_integer_value(json_object_get(o, "run"));
		if ((rc = (int)json_integer_value(json_object_get(o, "code"))))
			core_err_set(err, rc, "%s", json_string_value(json_object_get(o, "error")) ?
				     json_string_value(json_object_get(o, "error")) : "?");
	}
	json_decref(o);
	core_buf_release(&b);
	return rc;
}

int cli_export(int argc, char **argv)
{
	static const char usage[] =
		"usage: elspeth export [-s SETTINGS | -d PATH] [-r ID|latest|all]\n"
		"                      --sqlite FILE [--payloads]\n\n"
		"Writes runs of the audit trail into an SQLite database with ELSPETH\n"
		"0.4.1's twenty tables (runs, nodes, edges, rows, tokens, node_states,\n"
		"calls, ...) and ours (elspeth_*), creating FILE when missing. A run\n"
		"already in FILE is replaced, so exporting again is safe.\n\n"
		"  -r, --run ID|latest|all  the run (default: all)\n"
		"      --sqlite FILE        the database to write\n"
		"      --payloads           also copy the payloads the runs refer to\n"
		"                           (source rows, errors, LLM bodies) into\n"
		"                           elspeth_payloads\n";
	cli_read_args a = { .run = "all" };
	export_job job = { 0 };
	core_err err = { 0 };
	uint64_t run = 0;
	int rc;

	if ((rc = cli_parse_read_args("export", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (!a.sqlite)
		return cli_usage_error("export", "--sqlite FILE is required");
	if (a.manifest)
		return cli_export_manifest(&a);
	job.o.payloads = a.payloads;
	job.run = a.run;
	job.sqlite = a.sqlite;
	if ((rc = cli_landscape_path(a.settings, a.database, job.path, sizeof(job.path))))
		return rc;
	if ((rc = export_isolated(&job, &run, &err))) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (run)
		fprintf(stderr, "exported run %llu to %s\n", (unsigned long long)run, a.sqlite);
	else
		fprintf(stderr, "exported every run to %s\n", a.sqlite);
	return CLI_OK;
}

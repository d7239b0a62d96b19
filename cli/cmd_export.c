/* cmd_export.c — `elspeth export`: the audit trail as an SQLite database
 * in ELSPETH 0.4.1's schema (sqltrail/sqltrail.h, docs/audit.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "sqltrail/sqltrail.h"

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
	sqlt_opts o = { 0 };
	rec_env *env;
	core_err err = { 0 };
	uint64_t run = 0;
	int rc;

	if ((rc = cli_parse_read_args("export", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (!a.sqlite)
		return cli_usage_error("export", "--sqlite FILE is required");
	if (a.manifest)
		return cli_export_manifest(&a);
	o.payloads = a.payloads;
	if ((rc = cli_open_landscape(a.settings, a.database, REC_READONLY, &env)))
		return rc;
	rc = strcmp(a.run, "all") ? rec_resolve_run(env, a.run, &run, &err) : 0;
	if (!rc)
		rc = sqlt_export(env, run, a.sqlite, &o, &err);
	rec_close(env, NULL);
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (run)
		fprintf(stderr, "exported run %llu to %s\n", (unsigned long long)run, a.sqlite);
	else
		fprintf(stderr, "exported every run to %s\n", a.sqlite);
	return CLI_OK;
}

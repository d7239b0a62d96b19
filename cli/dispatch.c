/* dispatch.c — `elspeth COMMAND ...`: dispatches to the subcommands
 * (main.c calls it; in the elspeth_cli library for the tests). */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "cli/cli.h"

static const char usage[] =
	"usage: elspeth COMMAND [OPTIONS]\n"
	"\n"
	"An auditable data-pipeline engine.\n"
	"\n"
	"Commands:\n"
	"  validate -s SETTINGS          check a pipeline without running it\n"
	"  run -s SETTINGS [-x|-n] [-v] [-f console|json]\n"
	"                                run a pipeline (validates only without -x/--execute)\n"
	"  resume RUN_ID -s SETTINGS [-d PATH] [-x]\n"
	"                                finish a run that stopped, from its checkpoint\n"
	"  runs                          list recorded runs, newest first\n"
	"  explain -r ID|latest --row SEQ  the whole story of one row\n"
	"  verify -r ID|latest           check a run's audit invariants (exit 4 on violations)\n"
	"  export -r ID|all --sqlite FILE  the trail in ELSPETH's SQL schema (SQLite)\n"
	"  report -r ID|latest -o FILE   one run as a self-contained HTML page with charts\n"
	"  shard plan -s SETTINGS --shards N -o MANIFEST\n"
	"                                split the source into row ranges for array jobs\n"
	"  run --manifest MANIFEST --shard K -x\n"
	"                                run one shard (K from SLURM_ARRAY_TASK_ID if omitted)\n"
	"  merge --manifest MANIFEST     the sinks' files from every shard, in source order\n"
	"  purge [-d PATH] [-r DAYS] [--dry-run] [-y]\n"
	"                                delete old payload files, keeping their hashes\n"
	"  plugins list [-t TYPE]        list the available plugins\n"
	"  mcp [-d PATH | -s SETTINGS]   serve the audit trail to AI assistants (MCP over stdio)\n"
	"  serve --root DIR --no-auth    runs started, watched and cancelled over HTTP\n"
	"  health [--json] [-v]          check that elspeth can run here (DATABASE_URL, folders)\n"
	"\n"
	"Options:\n"
	"  -h, --help                    show help (also: elspeth COMMAND --help)\n"
	"  --version                     show the version\n"
	"\n"
	"Exit codes: 0 success, 1 error, 2 usage, 3 interrupted, 4 audit-integrity failure.\n";

int cli_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	/* SQLite (the SQL trail, mcp) keeps no allocation statistics: they
	 * cost a mutex and counters per malloc, a tenth of an export's time.
	 * Only possible before SQLite's first use, so here, once. */
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (!cmd) {
		fputs(usage, stderr);
		return CLI_USAGE;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("elspeth %s (canonical hashing %s)\n", ELSPETH_VERSION,
		       CORE_CANONICAL_VERSION);
		return CLI_OK;
	}
	if (!strcmp(cmd, "validate"))
		return cli_validate(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cli_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "resume"))
		return cli_resume(argc - 1, argv + 1);
	if (!strcmp(cmd, "runs"))
		return cli_runs(argc - 1, argv + 1);
	if (!strcmp(cmd, "explain"))
		return cli_explain(argc - 1, argv + 1);
	if (!strcmp(cmd, "verify"))
		return cli_verify(argc - 1, argv + 1);
	if (!strcmp(cmd, "export"))
		return cli_export(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cli_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "plugins"))
		return cli_plugins(argc - 1, argv + 1);
	if (!strcmp(cmd, "mcp"))
		return cli_mcp(argc - 1, argv + 1);
	if (!strcmp(cmd, "serve"))
		return cli_serve(argc - 1, argv + 1);
	if (!strcmp(cmd, "shard"))
		return cli_shard(argc - 1, argv + 1);
	if (!strcmp(cmd, "purge"))
		return cli_purge(argc - 1, argv + 1);
	if (!strcmp(cmd, "merge"))
		return cli_merge(argc - 1, argv + 1);
	if (!strcmp(cmd, "health"))
		return cli_health(argc - 1, argv + 1);
	fprintf(stderr, "elspeth: unknown command '%s'\n\n%s", cmd, usage);
	return CLI_USAGE;
}

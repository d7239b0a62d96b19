/* cmd_mcp.c — `elspeth mcp`: the MCP server over stdio (mcp/, docs/mcp.md). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "mcp/mcp.h"

#define DEFAULT_URL "lmdb://./state/audit.lmdb"

static const char usage[] =
	"usage: elspeth mcp [-d PATH | -s SETTINGS] [--root DIR]\n\n"
	"Serves the audit trail to AI assistants and other MCP clients: the Model\n"
	"Context Protocol (JSON-RPC 2.0, one message per line) on stdin and stdout,\n"
	"with ELSPETH's read-only analysis tools (list_runs, explain_token, diagnose,\n"
	"query, ...). Notes go to stderr. Register it with a client as the command\n"
	"'elspeth' with the arguments [\"mcp\", \"--database\", PATH] (docs/mcp.md).\n\n"
	"  -d, --database PATH   the trail: an SQLite file in ELSPETH's schema, or an\n"
	"                        LMDB Landscape directory (exported to a temporary\n"
	"                        SQLite file first); also sqlite:///FILE or lmdb://DIR\n"
	"  -s, --settings FILE   ... or the one the settings' landscape.url names (its\n"
	"                        SQLite file for sqlite:///FILE)\n"
	"                        (default: ./state/audit.lmdb)\n"
	"      --root DIR        also run pipelines (run_pipeline, get_pipeline_run,\n"
	"                        cancel_pipeline_run) whose files stay under DIR, the\n"
	"                        server's working directory from then on; the catalog\n"
	"                        and validate_settings work without it. With it, a\n"
	"                        trail not there yet is no error (its tools say so)\n";

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* The trail to serve: -d PATH as it is (mcp_open tells a file from a
 * directory), a URL (-d, -s's landscape.url, the default) as
 * core_landscape_paths reads it: sqlite:///FILE serves FILE (brought up
 * to date after every run), lmdb://DIR the Landscape. */
static int trail_path(const char *settings, const char *database, char *path,
		      size_t cap)
{
	core_settings *s = NULL;
	core_err err = { 0 };
	char lmdb[4096], sql[4096];
	int rc = 0;

	if (database && !strstr(database, "://")) {
		if ((size_t)snprintf(lmdb, sizeof(lmdb), "%s", database) >= sizeof(lmdb))
			rc = core_err_set(&err, CORE_ECONFIG, "--database path too long");
		sql[0] = '\0';
	} else if (!database && settings) {
		/* the settings' landscape.url, parsed at load */
		if (!(rc = core_settings_load(settings, &s, &err))) {
			memcpy(lmdb, s->landscape_lmdb, sizeof(lmdb));
			memcpy(sql, s->landscape_sql, sizeof(sql));
		}
	} else {
		rc = core_landscape_paths(database ? database : DEFAULT_URL, lmdb,
					  sizeof(lmdb), sql, sizeof(sql), &err);
	}
	if (!rc && (size_t)snprintf(path, cap, "%s", sql[0] ? sql : lmdb) >= cap)
		rc = core_err_set(&err, CORE_ECONFIG, "the trail's path is too long");
	core_settings_free(s);
	if (rc)
		cli_error(&err);
	return rc ? CLI_ERROR : CLI_OK;
}

static int parse(int argc, char **argv, const char **settings, const char **database,
		 const char **root)
{
	static const struct option longopts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "database", required_argument, NULL, 'd' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:d:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': *settings = optarg; break;
		case 'd': *database = optarg; break;
		case 'r': *root = optarg; break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_bad_option("mcp", c, argc, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("mcp", "unexpected argument '%s'", argv[optind]);
	if (*settings && *database)
		return cli_usage_error("mcp", "give -d/--database or -s/--settings, not both");
	return 0;
}

int cli_mcp(int argc, char **argv)
{
	const char *settings = NULL, *database = NULL, *root = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	mcp_opts o = { 0 };
	char path[4096];
	mcp_server *s;
	core_err err = { 0 };
	int rc;

	if ((rc = parse(argc, argv, &settings, &database, &root)))
		return rc < 0 ? CLI_OK : rc;
	if ((rc = trail_path(settings, database, path, sizeof(path))))
		return rc;
	o.root = root;
	if (mcp_open(path, &o, &s, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (root && chdir(root)) { /* the trail is open: its path was ours */
		fprintf(stderr, "elspeth mcp: --root %s: %s\n", root, strerror(errno));
		mcp_free(s);
		return CLI_ERROR;
	}
	/* No SA_RESTART: a signal ends the read the server waits in. A
	 * client that goes away is a write error, not a SIGPIPE death. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	{
		char *shown = core_url_sanitize(path);

		fprintf(stderr, "elspeth mcp: serving %s (%lld runs) on stdin/stdout\n",
			shown ? shown : "the trail", mcp_run_count(s));
		free(shown);
	}
	rc = mcp_serve(s, stdin, stdout, &stop, &err);
	if (rc)
		cli_error(&err);
	mcp_free(s);
	return rc ? CLI_ERROR : CLI_OK;
}

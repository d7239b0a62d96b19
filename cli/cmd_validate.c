/* cmd_validate.c — `elspeth validate -s SETTINGS`. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "run/run.h"

static const char validate_usage[] =
	"usage: elspeth validate -s SETTINGS\n"
	"\n"
	"Loads the settings, builds the graph and checks it without running it:\n"
	"keys and types, plugins and their options, gate conditions, connections,\n"
	"cycles, reachability, and the pipelines of depends_on (loaded, no cycle,\n"
	"at most 3 deep). Nothing is read from the source or written.\n"
	"\n"
	"  -s, --settings FILE   the pipeline settings (YAML)\n"
	"  -h, --help            this help\n";

int cli_validate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *path = NULL;
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
		if (c == 's')
			path = optarg;
		else if (c == 'h') {
			fputs(validate_usage, stdout);
			return CLI_OK;
		} else
			return cli_bad_option("validate", c, argc, argv);
	}
	if (!path || optind != argc)
		return cli_usage_error("validate", "expected -s SETTINGS");
	if ((rc = cli_load(path, &s, &g)))
		return rc;
	rc = dag_open(g, false, &err);
	if (!rc)
		rc = run_check_dependencies(s, &err);
	if (rc) {
		cli_error(&err);
		rc = CLI_ERROR;
	} else {
		cli_print_pipeline(stdout, g);
		printf("Settings valid: %s\n", path);
	}
	dag_free(g);
	core_settings_free(s);
	return rc;
}

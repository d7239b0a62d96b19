/* cmd_plugins.c — `elspeth plugins list [-t TYPE]`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
	"usage: elspeth plugins list [-t source|transform|sink|aggregation]\n"
	"\n"
	"Lists every plugin with a one-line description.\n"
	"\n"
	"  -t, --type TYPE   only this kind: source, transform (with the\n"
	"                    aggregations, which ELSPETH counts as transforms),\n"
	"                    sink, or aggregation\n"
	"  -h, --help        this help\n";

/* The kinds --type TYPE shows, as a bit per plg_kind; 0 if TYPE is none. */
static unsigned kinds_of(const char *type)
{
	if (!strcmp(type, "source"))
		return 1u << PLG_SOURCE;
	if (!strcmp(type, "transform"))
		return 1u << PLG_TRANSFORM | 1u << PLG_AGGREGATION;
	if (!strcmp(type, "sink"))
		return 1u << PLG_SINK;
	if (!strcmp(type, "aggregation"))
		return 1u << PLG_AGGREGATION;
	return 0;
}

int cli_plugins(int argc, char **argv)
{
	static const char *const titles[] = { "Sources", "Transforms", "Sinks",
					       "Aggregations" };
	static const struct option longopts[] = {
		{ "type", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	unsigned all = 1u << PLG_SOURCE | 1u << PLG_TRANSFORM | 1u << PLG_SINK |
		       1u << PLG_AGGREGATION;
	unsigned show = all;
	const char *name, *desc;
	int c;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return CLI_OK;
	}
	if (argc < 2 || strcmp(argv[1], "list"))
		return cli_usage_error("plugins", "expected 'list'");
	/* The options follow 'list' (they are its own, as in ELSPETH). */
	argc--;
	argv++;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!(show = kinds_of(optarg)))
				return cli_usage_error("plugins",
					"--type is source, transform, sink or aggregation, got '%s'",
					optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return CLI_OK;
		default:
			return cli_bad_option("plugins", c, argc, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("plugins", "unexpected argument '%s'", argv[optind]);
	for (int k = PLG_SOURCE; k <= PLG_AGGREGATION; k++) {
		if (!(show & 1u << k))
			continue;
		printf("%s:\n", titles[k]);
		for (size_t i = 0; plg_describe((plg_kind)k, i, &name, &desc); i++)
			printf("  %-16s %s\n", name, desc);
	}
	if (show == all)
		puts("Gates, forks and coalesce are built in (gates:, coalesce: in the settings).");
	return CLI_OK;
}

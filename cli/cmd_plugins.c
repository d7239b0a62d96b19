/* cmd_plugins.c — `elspeth plugins list`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int cli_plugins(int argc, char **argv)
{
	static const char *const titles[] = { "Sources", "Transforms", "Sinks",
					       "Aggregations" };
	const char *name, *desc;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		puts("usage: elspeth plugins list\n\nLists every plugin with a one-line description.");
		return CLI_OK;
	}
	if (argc != 2 || strcmp(argv[1], "list"))
		return cli_usage_error("plugins", "expected 'list'");
	for (int k = PLG_SOURCE; k <= PLG_AGGREGATION; k++) {
		printf("%s:\n", titles[k]);
		for (size_t i = 0; plg_describe((plg_kind)k, i, &name, &desc); i++)
			printf("  %-16s %s\n", name, desc);
	}
	puts("Gates, forks and coalesce are built in (gates:, coalesce: in the settings).");
	return CLI_OK;
}

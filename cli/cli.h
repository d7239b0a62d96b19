/* cli.h — the subcommands of the elspeth binary (internal to cli/). */
#ifndef ELSPETH_CLI_H
#define ELSPETH_CLI_H

#include "engine/engine.h"

/* Exit codes (DESIGN.md §2). */
enum {
	CLI_OK = 0,
	CLI_ERROR = 1,      /* bad config, failed run */
	CLI_USAGE = 2,
	CLI_INTERRUPTED = 3,
	CLI_AUDIT = 4       /* audit-integrity failure */
};

int cli_validate(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_plugins(int argc, char **argv);

/* Loads settings and builds the graph; prints the error and returns
 * CLI_ERROR on failure. */
int cli_load(const char *path, core_settings **s, dag_graph **g);
/* Prints the pipeline as `validate` shows it. */
void cli_print_pipeline(FILE *f, const dag_graph *g);
/* Prints "error: msg" to stderr. */
void cli_error(const core_err *err);
int cli_usage_error(const char *cmd, const char *fmt, ...) CORE_PRINTF(2, 3);

#endif

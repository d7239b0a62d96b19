/* cli.h — the subcommands of the elspeth binary (internal to cli/). */
#ifndef ELSPETH_CLI_H
#define ELSPETH_CLI_H

#include "engine/engine.h"

/* Exit codes (docs/architecture.md §2). */
enum {
	CLI_OK = 0,
	CLI_ERROR = 1,      /* bad config, failed run */
	CLI_USAGE = 2,
	CLI_INTERRUPTED = 3,
	CLI_AUDIT = 4       /* audit-integrity failure */
};

/* `elspeth COMMAND ...` (argv[0] the program): dispatches to the
 * subcommands; returns the exit code. */
int cli_main(int argc, char **argv);

int cli_validate(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_resume(int argc, char **argv);
int cli_plugins(int argc, char **argv);
int cli_runs(int argc, char **argv);
int cli_explain(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_export(int argc, char **argv);
int cli_mcp(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_shard(int argc, char **argv);
int cli_merge(int argc, char **argv);
int cli_report(int argc, char **argv);
int cli_health(int argc, char **argv);
int cli_purge(int argc, char **argv);

/* The options of `run` and `resume` (cmd_run.c). */
typedef struct cli_run_args {
	const char *path;     /* -s */
	bool execute;         /* -x */
	bool json;            /* -f/--format json (console or text: false) */
	long max_in_flight;   /* --sequential: 1; 0: from the settings */
	unsigned max_waiting_mib; /* --max-waiting-mib; 0: from the settings */
	const char *resume;   /* resume: the run (id or latest) */
	bool dry_run;         /* run -n: validate only, even with -x */
	bool verbose;         /* run -v: the pipeline before, metrics after */
	const char *database; /* resume -d: the Landscape, not landscape.url's */
	const char *manifest; /* run --manifest: run one shard of its plan */
	long shard;           /* run --shard K; -1: from the environment */
	const char *metrics_listen; /* --metrics-listen ADDR (run.h) */
	/* Set by cli_run_shard for execute(): the shard the engine runs and
	 * the command that finishes it when it stops. */
	const eng_shard *eshard;
	const char *rerun;
} cli_run_args;

/* The options of the read commands `runs`, `explain`, `verify`,
 * `export` (cmd_read.c). */
typedef struct cli_read_args {
	const char *settings, *database, *run, *sink;
	unsigned long long row, token;
	bool json;
	bool no_tui;          /* explain --no-tui: text (always, we have no TUI) */
	const char *sqlite;   /* export --sqlite FILE */
	bool payloads;        /* export --payloads */
	bool audit;           /* export --audit: the settings' landscape.export */
	const char *manifest; /* --manifest: every shard of a plan */
} cli_read_args;

/* runs, explain, verify and export over the shards of a plan
 * (cmd_manifest.c); the caller parsed a->manifest. */
int cli_runs_manifest(const cli_read_args *a);
int cli_explain_manifest(const cli_read_args *a);
int cli_verify_manifest(const cli_read_args *a);
int cli_export_manifest(const cli_read_args *a);

/* The options of `report` (cmd_report.c). */
typedef struct cli_report_args {
	const char *settings, *database, *run;
	const char *output;       /* a file, or "-" for stdout */
	unsigned long long rows;  /* rows listed, each kind; 0: the default */
} cli_report_args;

/* `run --manifest M [--shard K] --execute` (cmd_shard.c): runs shard K
 * of a plan — afresh, or finishing its unfinished run, or nothing when it
 * completed — through cli_execute. */
int cli_run_shard(dag_graph *g, cli_run_args *a);
/* Runs (or with a->resume resumes) and reports as `run` does. */
int cli_execute(dag_graph *g, const cli_run_args *a);

/* Parse argv (argv[0] is the command, cmd its name) into *a, which the
 * caller initialises with the defaults; strings point into argv. The
 * options are ELSPETH's (docs/adr/0017-cli-flags.md): run takes -n and -v,
 * resume -d and RUN_ID, explain --no-tui. Return
 * 0, -1 after printing `usage` (--help), or CLI_USAGE after printing
 * what is wrong to stderr. They use getopt_long: a second parse in the
 * same process needs optind reset (to 0 for glibc) first. */
int cli_parse_run_args(const char *cmd, const char *usage, int argc,
		       char **argv, cli_run_args *a);
int cli_parse_read_args(const char *cmd, const char *usage, int argc,
			char **argv, cli_read_args *a);
/* `report`'s options, as above (the caller sets the defaults: run
 * "latest", output "report.html"); -s and -d together are a usage
 * error. */
int cli_parse_report_args(int argc, char **argv, cli_report_args *a);

/* The LMDB directory of --database PATH: PATH itself, or, when PATH is
 * a file (the SQL trail of a sqlite:/// landscape url), PATH.lmdb beside
 * it, with sql receiving PATH ("" otherwise). */
int cli_landscape_of(const char *database, char *lmdb, size_t cap, char *sql,
		     size_t scap, core_err *err);
/* The LMDB directory of the audit trail named by -s SETTINGS (its
 * landscape.url), else --database PATH, else ./state/audit.lmdb; prints
 * the error. */
int cli_landscape_path(const char *settings, const char *database, char *path,
		       size_t cap);
/* Opens that trail; prints the error. */
int cli_open_landscape(const char *settings, const char *database,
		       int flags, rec_env **env);
void cli_print_json(const json_t *doc);
/* One compact JSON document and a newline (JSON-lines events). */
void cli_print_json_line(const json_t *doc);
/* ELSPETH's phase events for -f json: phase_started (phase, action,
 * target), phase_completed (phase, duration_seconds) on stdout,
 * phase_error (phase, error, target) on stderr; event names which. */
void cli_phase_json(const char *event, const char *phase, const char *action,
		    const char *target, double seconds, const char *error);
/* Renders an explain document for people; with several terminal tokens
 * and no sink, says to pick one (CLI_USAGE). */
int cli_explain_text(FILE *f, const json_t *doc, const char *sink);

/* Loads settings and builds the graph; prints the error and returns
 * CLI_ERROR on failure. */
int cli_load(const char *path, core_settings **s, dag_graph **g);
/* Prints the pipeline as `validate` shows it. */
void cli_print_pipeline(FILE *f, const dag_graph *g);
/* Prints "error: msg" to stderr. */
void cli_error(const core_err *err);
int cli_usage_error(const char *cmd, const char *fmt, ...) CORE_PRINTF(2, 3);
/* The usage error for what getopt_long (optstring starting with ':') just
 * refused, c being what it returned: an unknown option ('?'), also one
 * inside a cluster such as -qx, or one missing its value (':'). Names it. */
int cli_bad_option(const char *cmd, int c, int argc, char **argv);
/* A whole number in [1, max] written with digits only (no sign or space):
 * 0 and *out set; 1 when it is above max (however large); -1 when it is
 * not such a number. */
int cli_parse_count(const char *s, unsigned long long max, unsigned long long *out);

#endif

/* cmd_report.c — `elspeth report`: one run as a self-contained HTML page
 * (report/report.h, docs/report.md). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "report/report.h"

#define ROWS_MAX 1000

static const char usage[] =
	"usage: elspeth report [-r ID|latest] [-o FILE] [--rows N] [-s SETTINGS | -d PATH]\n\n"
	"Writes one run of the audit trail as one HTML file that needs nothing else\n"
	"(no script, no network): the run's summary, its graph, rows per second and\n"
	"rows in flight over time, LLM calls per second by outcome and each upstream's\n"
	"capacity control (pace, window) against its refusals, latency per node,\n"
	"outcomes per sink, the slowest rows and the rows with errors, each with its\n"
	"story (what explain --row shows). Charts over time come from the metric\n"
	"samples a run records about once a second (docs/report.md).\n\n"
	"  -r, --run ID|latest   the run (default: latest)\n"
	"  -o, --output FILE     where to write it (default: report.html; - for stdout)\n"
	"      --rows N          slowest rows and rows with errors listed, each\n"
	"                        (default 20, at most 1000)\n"
	"  -s, --settings FILE   find the audit trail from the settings' landscape.url\n"
	"  -d, --database PATH   ... or from this LMDB directory\n"
	"                        (default: ./state/audit.lmdb)\n";

int cli_parse_report_args(int argc, char **argv, cli_report_args *a)
{
	static const struct option longopts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "database", required_argument, NULL, 'd' },
		{ "run", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "rows", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:d:r:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': a->settings = optarg; break;
		case 'd': a->database = optarg; break;
		case 'r': a->run = optarg; break;
		case 'o':
			if (!optarg[0])
				return cli_usage_error("report", "--output needs a file name (or - for stdout)");
			a->output = optarg;
			break;
		case 'n':
			if (cli_parse_count(optarg, ROWS_MAX, &a->rows))
				return cli_usage_error("report", "--rows needs a number from 1 to %d, got '%s'",
						       ROWS_MAX, optarg);
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_bad_option("report", c, argc, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error("report", "unexpected argument '%s'", argv[optind]);
	if (a->settings && a->database)
		return cli_usage_error("report", "give -s SETTINGS or -d PATH, not both");
	return 0;
}

/* Writes the page to path through a temporary file renamed over it, so
 * a reader never sees half a report. */
static int write_file(const char *path, const core_buf *page, core_err *err)
{
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	FILE *f;
	int rc = 0;

	if (!tmp)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
	if (!(f = fopen(tmp, "w")))
		rc = core_err_set(err, CORE_EIO, "cannot write '%s': %s", tmp, strerror(errno));
	else if (fwrite(page->data, 1, page->len, f) != page->len || fflush(f) || ferror(f))
		rc = core_err_set(err, CORE_EIO, "cannot write '%s': %s", tmp, strerror(errno));
	if (f && fclose(f) && !rc)
		rc = core_err_set(err, CORE_EIO, "cannot write '%s': %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = core_err_set(err, CORE_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (rc && f)
		remove(tmp);
	free(tmp);
	return rc;
}

/* The page is made in the trail reader's child (rec_read_isolated). */
typedef struct report_job {
	const char *run;
	const rpt_opts *o;
} report_job;

static int report_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	const report_job *j = ctx;
	int rc = rec_resolve_run(env, j->run, run, err);

	return rc ? rc : rpt_write(env, *run, j->o, out, err);
}

int cli_report(int argc, char **argv)
{
	cli_report_args a = { .run = "latest", .output = "report.html" };
	rpt_opts o = { 0 };
	core_buf page = { 0 };
	core_err err = { 0 };
	report_job job;
	char path[4096];
	uint64_t run;
	int rc;

	if ((rc = cli_parse_report_args(argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_landscape_path(a.settings, a.database, path, sizeof(path))))
		return rc;
	o.max_rows = (size_t)a.rows;
	job.run = a.run;
	job.o = &o;
	rc = rec_read_isolated(path, "the report's reader", report_fn, &job, (size_t)1 << 30,
			    &run, &page, &err);
	if (!rc && !strcmp(a.output, "-")) {
		if (fwrite(page.data, 1, page.len, stdout) != page.len || fflush(stdout))
			rc = core_err_set(&err, CORE_EIO, "cannot write the report to stdout");
	} else if (!rc && !(rc = write_file(a.output, &page, &err))) {
		fprintf(stderr, "report: run %llu written to %s (%zu KiB)\n",
			(unsigned long long)run, a.output, (page.len + 1023) / 1024);
	}
	core_buf_release(&page);
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	return CLI_OK;
}

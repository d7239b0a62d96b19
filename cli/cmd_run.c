/* cmd_run.c — `elspeth run -s SETTINGS [--execute]` and `elspeth resume`. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "cli/cli.h"
#include "run/run.h"
#include "shard/shard.h"
#include "sqltrail/sqltrail.h"

static const char run_usage[] =
	"usage: elspeth run -s SETTINGS [-x | -n] [-v] [-f console|json]\n"
	"                   [--sequential | --max-rows-in-flight N]\n"
	"                   [--max-waiting-mib M] [--manifest FILE [--shard K]]\n"
	"                   [--metrics-listen [HOST:]PORT]\n"
	"\n"
	"Without --execute: validates the pipeline and says how to run it; nothing\n"
	"is read or written. With --execute: runs every source row through the\n"
	"pipeline and prints a summary.\n"
	"\n"
	"  -s, --settings FILE        the pipeline settings (YAML)\n"
	"  -x, --execute              really run it\n"
	"  -n, --dry-run              validate and show the pipeline; nothing is run,\n"
	"                             even with --execute\n"
	"  -v, --verbose              with --execute and console output: the pipeline\n"
	"                             before the run, its metrics and outcomes after\n"
	"  -f, --format console|json  console (also: text): a live progress line on a\n"
	"                             terminal and a summary; json: ELSPETH's JSON-lines\n"
	"                             events on stdout (phase_started, phase_completed,\n"
	"                             progress, run_completed; phase_error on stderr)\n"
	"      --sequential           one row at a time (same as --max-rows-in-flight 1)\n"
	"      --max-rows-in-flight N rows processed at once (1..4096; default from\n"
	"                             concurrency.pipelining, else 1)\n"
	"      --max-waiting-mib M    rows done but waiting for an earlier one may hold\n"
	"                             M MiB (1..1048576; default max_waiting_mib, 64);\n"
	"                             not with max_completed_waiting in the settings\n"
	"      --manifest FILE        run one shard of the plan FILE (elspeth shard\n"
	"                             plan): afresh, or finishing it after a crash, or\n"
	"                             nothing when it completed (docs/scale-out.md)\n"
	"      --shard K              which shard (0..N-1); default SLURM_ARRAY_TASK_ID\n"
	"                             or JOB_COMPLETION_INDEX\n"
	"      --metrics-listen ADDR  serve the run's metrics for Prometheus at\n"
	"                             http://ADDR/metrics while it runs: HOST:PORT,\n"
	"                             [IPv6]:PORT, or PORT on 127.0.0.1\n"
	"                             (docs/observability.md)\n"
	"  -h, --help                 this help\n"
	"\n"
	"Exit codes: 0 success, 1 error (also: a transform stopped the run, e.g. an\n"
	"exhausted account; resumable), 2 usage, 3 interrupted (SIGINT/SIGTERM, or a\n"
	"transform asked to stop, e.g. a provider asking to wait too long).\n";

static atomic_int stop_flag; /* lock-free: safe to set from a signal handler */

static void on_signal(int sig)
{
	(void)sig;
	atomic_store(&stop_flag, 1);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A file-size limit must fail the write (EFBIG, diverted or
	 * reported), not kill the process. */
	signal(SIGXFSZ, SIG_IGN);
}

/* The server's capacity used, where the server announced its slots,
 * and what the tail control did (ADR 0029). */
static void print_upstream(const eng_summary *sum)
{
	const eng_upstream_use *u = &sum->upstream;

	if (!*u->name)
		return;
	if (u->slots && u->span_s > 0)
		printf("  server capacity used: %.3f (%s announced %u slots; "
		       "%.1f slot-seconds busy over %.2f s)\n",
		       u->busy_s / ((double)u->slots * u->span_s), u->name, u->slots,
		       u->busy_s, u->span_s);
	if (u->p99_s > 0)
		printf("  answers: p50 %.3f s, p99 %.3f s; %llu cut at the tail deadline, "
		       "%llu hedged (%llu won)\n", u->p50_s, u->p99_s,
		       (unsigned long long)u->tail_cuts, (unsigned long long)u->hedges_sent,
		       (unsigned long long)u->hedges_won);
}

static void print_summary(const dag_graph *g, const eng_summary *sum)
{
	double rate = sum->wall_seconds > 0 ? (double)sum->rows / sum->wall_seconds : 0;

	printf("Run %s: %llu rows in %.2f s (%.0f rows/s)\n", eng_run_status(0, sum),
	       (unsigned long long)sum->rows, sum->wall_seconds, rate);
	printf("  succeeded %llu, failed %llu, quarantined %llu",
	       (unsigned long long)sum->succeeded, (unsigned long long)sum->failed,
	       (unsigned long long)sum->quarantined);
	if (sum->discarded)
		printf(" (%llu discarded)", (unsigned long long)sum->discarded);
	if (sum->retries)
		printf(", %llu retries", (unsigned long long)sum->retries);
	printf("\n  routed per sink:");
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK)
			printf(" %s=%llu", g->nodes[i].name,
			       (unsigned long long)sum->per_sink[i]);
	putchar('\n');
	if (sum->calls) {
		printf("  calls: %llu (%llu ok", (unsigned long long)sum->calls,
		       (unsigned long long)sum->calls_ok);
		for (size_t i = 0; i < ENG_CALL_CLASSES; i++)
			if (sum->calls_by_class[i])
				printf(", %llu %s", (unsigned long long)sum->calls_by_class[i],
				       eng_call_classes[i]);
		printf(")\n");
	}
	print_upstream(sum);
}

/* -------------------------------------------------------------- progress */

static void progress_text(void *ctx, const eng_progress *p)
{
	double rate = p->elapsed_s > 0 ? (double)p->released / p->elapsed_s : 0;

	char eta[48] = "";

	(void)ctx;
	if (!p->final && p->source_total && p->source_done > 0 &&
	    p->source_done <= p->source_total)
		snprintf(eta, sizeof(eta), " | ETA %.0fs",
			 p->elapsed_s * (double)(p->source_total - p->source_done) /
			 (double)p->source_done);
	fprintf(stderr, "\r\033[Krows pulled %llu released %llu | in flight %llu waiting %llu "
		"(%.1f MiB)%s%s | %.0f rows/s | failed %llu quarantined %llu | %.1fs%s",
		(unsigned long long)p->pulled, (unsigned long long)p->released,
		(unsigned long long)p->in_flight, (unsigned long long)p->waiting,
		(double)p->waiting_bytes / 1048576.0,
		p->held_by && *p->held_by ? " held by " : "", p->held_by ? p->held_by : "",
		rate, (unsigned long long)p->failed, (unsigned long long)p->quarantined,
		p->elapsed_s, eta);
	if (p->final)
		fputc('\n', stderr);
	fflush(stderr);
}

static void progress_json(void *ctx, const eng_progress *p)
{
	uint64_t bad = p->failed + p->quarantined;
	json_t *e = json_pack("{s:s,s:I,s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
		"event", "progress", "rows_processed", (json_int_t)p->released,
		"rows_succeeded", (json_int_t)(p->released > bad ? p->released - bad : 0),
		"rows_failed", (json_int_t)p->failed,
		"rows_quarantined", (json_int_t)p->quarantined,
		"elapsed_seconds", p->elapsed_s,
		"rows_per_second", p->elapsed_s > 0 ? (double)p->released / p->elapsed_s : 0.0,
		"rows_pulled", (json_int_t)p->pulled,
		"rows_released", (json_int_t)p->released,
		"in_flight", (json_int_t)p->in_flight, "waiting", (json_int_t)p->waiting,
		"failed", (json_int_t)p->failed, "quarantined", (json_int_t)p->quarantined,
		"source_bytes_read", (json_int_t)p->source_done,
		"source_bytes_total", (json_int_t)p->source_total);

	(void)ctx;
	if (e) {
		json_object_set_new(e, "waiting_bytes", json_integer((json_int_t)p->waiting_bytes));
		json_object_set_new(e, "held_by", json_string(p->held_by ? p->held_by : ""));
	}
	cli_print_json_line(e);
	json_decref(e);
}

/* -f/--format: ELSPETH's console or json; text is our older name for
 * console. */
static int parse_format(const char *cmd, const char *v, bool *json)
{
	if (strcmp(v, "console") && strcmp(v, "text") && strcmp(v, "json"))
		return cli_usage_error(cmd, "--format is console, text or json, got '%s'", v);
	*json = !strcmp(v, "json");
	return 0;
}

int cli_parse_run_args(const char *cmd, const char *usage, int argc, char **argv,
		       cli_run_args *a)
{
	/* ELSPETH's run: -s -n -x -v -f; its resume: -d -s -x -f (cli.py). */
	static const struct option run_opts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "execute", no_argument, NULL, 'x' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "format", required_argument, NULL, 'f' },
		{ "sequential", no_argument, NULL, 'S' },
		{ "max-rows-in-flight", required_argument, NULL, 'N' },
		{ "max-waiting-mib", required_argument, NULL, 'W' },
		{ "manifest", required_argument, NULL, 'M' },
		{ "shard", required_argument, NULL, 'K' },
		{ "metrics-listen", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	static const struct option resume_opts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "database", required_argument, NULL, 'd' },
		{ "execute", no_argument, NULL, 'x' },
		{ "format", required_argument, NULL, 'f' },
		{ "sequential", no_argument, NULL, 'S' },
		{ "max-rows-in-flight", required_argument, NULL, 'N' },
		{ "max-waiting-mib", required_argument, NULL, 'W' },
		{ "metrics-listen", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	bool resume = !strcmp(cmd, "resume");
	unsigned long long n;
	int prc;
	int c;

	a->shard = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, resume ? ":s:d:xf:h" : ":s:xnvf:h",
				resume ? resume_opts : run_opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->path = optarg;
			break;
		case 'd':
			a->database = optarg;
			break;
		case 'x':
			a->execute = true;
			break;
		case 'n':
			a->dry_run = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'S':
			a->max_in_flight = 1;
			break;
		case 'N':
			if ((prc = cli_parse_count(optarg, ENG_MAX_IN_FLIGHT, &n)) < 0)
				return cli_usage_error(cmd, "--max-rows-in-flight needs a positive integer, got '%s'", optarg);
			if (prc > 0)
				return cli_usage_error(cmd, "--max-rows-in-flight is at most %u, got %s",
						       ENG_MAX_IN_FLIGHT, optarg);
			a->max_in_flight = (long)n;
			break;
		case 'W':
			if (cli_parse_count(optarg, ENG_MAX_WAITING_MIB, &n))
				return cli_usage_error(cmd, "--max-waiting-mib needs an integer "
						       "1..%u, got '%s'", ENG_MAX_WAITING_MIB, optarg);
			a->max_waiting_mib = (unsigned)n;
			break;
		case 'f':
			if (parse_format(cmd, optarg, &a->json))
				return CLI_USAGE;
			break;
		case 'M':
			a->manifest = optarg;
			break;
		case 'L':
			a->metrics_listen = optarg;
			break;
		case 'K':
			if (!strcmp(optarg, "0"))
				n = 0;
			else if (cli_parse_count(optarg, 99999, &n))
				return cli_usage_error(cmd, "--shard needs a shard number (0..N-1), got '%s'", optarg);
			a->shard = (long)n;
			break;
		case 'h':
			fputs(usage, stdout);
			return -1;
		default:
			return cli_bad_option(cmd, c, argc, argv);
		}
	}
	if (resume) {
		if (optind != argc - 1)
			return cli_usage_error(cmd, "expected RUN_ID (a run id or 'latest') and -s SETTINGS");
		a->resume = argv[optind++];
	}
	if ((!a->path && !a->manifest) || optind != argc)
		return cli_usage_error(cmd, "expected -s SETTINGS");
	if (a->shard >= 0 && !a->manifest)
		return cli_usage_error(cmd, "--shard needs --manifest FILE (elspeth shard plan)");
	return 0;
}

/* Where the Landscape is: resume -d PATH (as for the read commands),
 * else the settings' landscape.url; sql receives the SQL trail's file
 * when there is one (sqlite:///FILE, or -d naming that file). */
static int landscape_path(const core_settings *s, const char *database, char *path,
			  size_t cap, char *sql, size_t scap, core_err *err)
{
	if (database)
		return cli_landscape_of(database, path, cap, sql, scap, err);
	if ((size_t)snprintf(path, cap, "%s", s->landscape_lmdb) >= cap ||
	    (size_t)snprintf(sql, scap, "%s", s->landscape_sql) >= scap)
		return core_err_set(err, CORE_ECONFIG, "the Landscape's path is too long");
	return 0;
}

/* The Landscape, read-only (a resume's checks and dry run: opening it
 * for writing would create it). */
static int open_readonly(const core_settings *s, const char *database, rec_env **rec,
			 core_err *err)
{
	char path[4096], sql[4096];
	int rc;

	*rec = NULL;
	if (!s->audit)
		return core_err_set(err, CORE_ECONFIG,
			"resume needs the Landscape, which landscape.enabled: false turns off");
	if ((rc = landscape_path(s, database, path, sizeof(path), sql, sizeof(sql), err)))
		return rc;
	return rec_open(path, REC_READONLY, rec, err);
}

/* The live SQL trail's figures as run_completed's "sql_trail_live". */
static json_t *live_json(const run_result *r)
{
	const run_live_stats *l = &r->live;
	json_t *e = json_pack("{s:s,s:I,s:I,s:I,s:f,s:b}", "target", r->sql_shown,
			      "steps", (json_int_t)l->steps, "rows", (json_int_t)l->rows,
			      "failures", (json_int_t)l->failures,
			      "max_behind_seconds", l->max_behind_s,
			      "finished_by_last_step", l->finished);

	if (e && l->failures)
		json_object_set_new(e, "last_error", json_string(l->last_error));
	return e;
}

/* ELSPETH's run_completed event (its status says whether the run failed),
 * with our counts and timings after its fields. */
static void summary_json(const dag_graph *g, const run_result *r,
			 const char *error, int exit_code)
{
	const eng_summary *sum = &r->sum;
	json_t *sinks = json_object();
	json_t *e;

	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK)
			json_object_set_new(sinks, g->nodes[i].name,
					    json_integer((json_int_t)sum->per_sink[i]));
	e = json_pack("{s:s,s:I,s:s,s:I,s:I,s:I,s:I,s:f,s:i,s:I,s:I,s:o,s:f,s:f,s:I,s:I,s:f}",
		"event", "run_completed", "run_id", (json_int_t)sum->run_id,
		"status", eng_run_status(error != NULL, sum),
		"total_rows", (json_int_t)sum->rows, "succeeded", (json_int_t)sum->succeeded,
		"failed", (json_int_t)sum->failed, "quarantined", (json_int_t)sum->quarantined,
		"duration_seconds", sum->wall_seconds, "exit_code", exit_code,
		"rows", (json_int_t)sum->rows,
		"discarded", (json_int_t)sum->discarded, "sinks", sinks,
		"wall_seconds", sum->wall_seconds, "pipeline_seconds", sum->pipeline_seconds,
		"max_rows_in_flight", (json_int_t)sum->in_flight,
		"peak_in_flight", (json_int_t)sum->peak_in_flight,
		"fifo_wait_max_ms", sum->fifo_wait_max_ms);
	if (e && sum->upstream.slots && sum->upstream.span_s > 0)
		json_object_set_new(e, "server_capacity_used", json_real(sum->upstream.busy_s /
			((double)sum->upstream.slots * sum->upstream.span_s)));
	if (r->live.on)
		json_object_set_new(e, "sql_trail_live", live_json(r));
	if (error)
		json_object_set_new(e, "error", json_string(error));
	/* A transform stopped the run (plg_ctx.halt): why, and the exit
	 * code it asked for. */
	if (sum->halt_code)
		json_object_set_new(e, "halt", json_pack("{s:i,s:s}",
			"exit_code", sum->halt_code, "message", sum->halt_msg));
	cli_print_json_line(e);
	json_decref(e);
}

/* A run that stopped before its end (SIGINT/SIGTERM, or a halt): why, on
 * stderr, then where the sinks stand and the command that finishes it.
 * A halt's message comes first, as `error: MSG` for exit code 1 — the
 * run failed, say an exhausted account, and resumes once that is fixed —
 * or as the reason of the interrupt for exit code 3. Returns the exit
 * code. */
static int report_stop(const eng_summary *sum, bool audit, const cli_run_args *a)
{
	/* A shard's rows are numbered as in the whole run: its first is
	 * not row 1. */
	uint64_t first = a->eshard ? a->eshard->first_seq : 1;

	if (sum->halt_code == CLI_ERROR)
		fprintf(stderr, "error: %s\n", sum->halt_msg);
	else if (sum->halt_code)
		fprintf(stderr, "Interrupted: %s\n", sum->halt_msg);
	fprintf(stderr, "%s after row %llu; sinks hold rows %llu..%llu",
		sum->halt_code ? "Stopped" : "Interrupted: stopped",
		(unsigned long long)(first - 1 + sum->rows), (unsigned long long)first,
		(unsigned long long)(first - 1 + sum->rows));
	if (audit && sum->checkpoints && a->rerun)
		fprintf(stderr, ". To finish the shard%s:\n  %s\n",
			sum->halt_code == CLI_ERROR ? " once that is fixed" : "", a->rerun);
	else if (audit && sum->checkpoints)
		fprintf(stderr, ". To finish the run%s:\n  elspeth resume %llu -s %s%s%s --execute\n",
			sum->halt_code == CLI_ERROR ? " once that is fixed" : "",
			(unsigned long long)sum->run_id, a->path,
			a->database ? " -d " : "", a->database ? a->database : "");
	else
		fprintf(stderr, " (checkpoints are off: it cannot be resumed).\n");
	return sum->halt_code ? sum->halt_code : CLI_INTERRUPTED;
}

static void print_resumed(const eng_summary *sum)
{
	printf("  resumed run %llu (attempt %u): %llu completed rows reused, %llu in-flight "
	       "rows run again, %llu LLM answers replayed, %llu abandoned tokens marked superseded\n",
	       (unsigned long long)sum->run_id, sum->attempt,
	       (unsigned long long)sum->rows_reused, (unsigned long long)sum->rows_rerun,
	       (unsigned long long)sum->replayed_now,
	       (unsigned long long)sum->tokens_superseded);
}

/* run -v: the pipeline's own metrics after the summary (those `runs
 * --run` shows, and the outcomes). */
static void print_metrics(const eng_summary *sum)
{
	const char *sep = "";

	printf("  pipeline: %llu rows pulled in %.2f s; in flight at most %u (peak %llu), "
	       "waiting at most %u (peak %llu)\n",
	       (unsigned long long)sum->pulled, sum->pipeline_seconds, sum->in_flight,
	       (unsigned long long)sum->peak_in_flight, sum->max_waiting,
	       (unsigned long long)sum->peak_waiting);
	if (sum->waiting_budget)
		printf("  waiting budget %.0f MiB (peak held %.1f MiB)\n",
		       (double)sum->waiting_budget / 1048576.0,
		       (double)sum->peak_waiting_bytes / 1048576.0);
	printf("  FIFO wait %.1f ms mean, %.1f ms max; source blocked %.2f s, "
	       "release blocked %.2f s\n", sum->fifo_wait_mean_ms, sum->fifo_wait_max_ms,
	       sum->source_blocked_s, sum->release_blocked_s);
	printf("  outcomes:");
	for (int i = 0; i < ENG_OUTCOME_LAST; i++)
		if (sum->outcomes[i]) {
			printf("%s %s %llu", sep, eng_outcome_name((eng_outcome)i),
			       (unsigned long long)sum->outcomes[i]);
			sep = ",";
		}
	printf("%s\n  batches %llu, diverted %llu, checkpoints %llu\n", *sep ? "" : " none",
	       (unsigned long long)sum->batches, (unsigned long long)sum->diverted,
	       (unsigned long long)sum->checkpoints);
}

/* What the CLI shows of a job's events: ELSPETH's phase and progress
 * events with -f json, the live line on a terminal otherwise; warnings
 * on stderr. */
typedef struct watch {
	bool json, tty;
	const cli_run_args *a; /* the pipeline's; a dependency's are derived */
} watch;

static void report_dependency(const watch *w, const run_event *ev);

static void observe(void *ctx, const run_event *ev)
{
	const watch *w = ctx;
	static const char *const names[] = { "phase_started", "phase_completed",
					     "phase_error" };
	json_t *e;

	switch (ev->kind) {
	case RUN_EV_PHASE_STARTED:
	case RUN_EV_PHASE_COMPLETED:
	case RUN_EV_PHASE_ERROR:
		if (w->json)
			cli_phase_json(names[ev->kind], ev->phase, ev->action, ev->target,
				       ev->seconds, ev->error);
		break;
	case RUN_EV_PROGRESS:
		if (w->json)
			progress_json(NULL, ev->progress);
		else if (w->tty)
			progress_text(NULL, ev->progress);
		break;
	case RUN_EV_SQL_TRAIL_FAILED:
		if (!w->json)
			break;
		e = json_pack("{s:s,s:I,s:s,s:s}", "event", "sql_trail_failed",
			      "run_id", (json_int_t)ev->run_id, "file", ev->target,
			      "error", ev->error);
		cli_print_json_line(e);
		json_decref(e);
		break;
	case RUN_EV_WARNING:
		fprintf(stderr, "warning: %s\n", ev->error);
		break;
	case RUN_EV_DEPENDENCY_STARTED:
		if (w->json) {
			e = json_pack("{s:s,s:s,s:s}", "event", "dependency_started",
				      "name", ev->target, "settings", ev->path);
			cli_print_json_line(e);
			json_decref(e);
		} else {
			printf("Running dependency '%s': %s\n", ev->target, ev->path);
			fflush(stdout);
		}
		break;
	case RUN_EV_DEPENDENCY_ENDED:
		report_dependency(w, ev);
		break;
	case RUN_EV_SAMPLE: /* the Landscape keeps them (elspeth report) */
	case RUN_EV_ROW_FAILED: /* not asked for: the summary counts them */
	case RUN_EV_LAST:
		break;
	}
}

/* What failed after the run (the SQL trail of a sqlite:/// url, the
 * journal, the export), and how to mend the SQL trail. The run itself
 * is recorded whole: the caller still reports how it ended, and exits 1
 * only where it would have exited 0. */
static int report_after(const run_result *r, const cli_run_args *a)
{
	if (r->sql_failed) {
		cli_error(&r->sql_err);
		fprintf(stderr, "The run is recorded in the Landscape, but the SQL trail %s "
			"does not show it yet. To bring it up to date:\n"
			"  elspeth export %s %s --run %llu --sqlite %s\n",
			r->sql_shown, a->database ? "-d" : "-s", a->database ? a->database : a->path,
			(unsigned long long)r->sum.run_id, r->sql_shown);
	}
	if (r->after_failed)
		cli_error(&r->after_err);
	return r->sql_failed || r->after_failed ? CLI_ERROR : CLI_OK;
}

/* The summary's last line: where the run is recorded, and how to
 * explain a row. */
static void print_where(const run_result *r, const cli_run_args *a)
{
	const eng_summary *sum = &r->sum;

	if (!r->audit)
		return;
	if (a->eshard)
		printf("  audit: shard %u's run %llu in %s (rows %llu..%llu); once every shard\n"
		       "  has run: elspeth merge -s %s --manifest %s\n", a->eshard->index,
		       (unsigned long long)sum->run_id, r->landscape,
		       (unsigned long long)a->eshard->first_seq,
		       (unsigned long long)a->eshard->last_seq, a->path, a->manifest);
	else if (a->database)
		printf("  audit: run %llu in %s — explain a row with:\n"
		       "    elspeth explain -d %s --run %llu --row 1\n",
		       (unsigned long long)sum->run_id, r->landscape, a->database,
		       (unsigned long long)sum->run_id);
	else if (r->sql[0])
		printf("  audit: run %llu in %s (the SQL trail; its Landscape: %s) — "
		       "explain a row with:\n"
		       "    elspeth explain -s %s --run %llu --row 1\n",
		       (unsigned long long)sum->run_id, r->sql_shown, r->landscape, a->path,
		       (unsigned long long)sum->run_id);
	else
		printf("  audit: run %llu in %s — explain a row with:\n"
		       "    elspeth explain -s %s --run %llu --row 1\n",
		       (unsigned long long)sum->run_id, r->landscape, a->path,
		       (unsigned long long)sum->run_id);
}

/* A run that failed: why, and what its outputs are. */
static int report_failure(const dag_graph *g, const run_result *r, const cli_run_args *a)
{
	const eng_summary *sum = &r->sum;

	if (a->json && r->engine_ran)
		summary_json(g, r, r->err.msg, CLI_ERROR);
	cli_error(&r->err);
	/* The halt may be what made the row fail (no checkpoints: nothing
	 * left it for a resume). */
	if (sum->halt_code)
		fprintf(stderr, "The run had been halted: %s\n", sum->halt_msg);
	if (sum->run_id)
		fprintf(stderr, "Run %llu failed after %llu rows; outputs written so far are incomplete.\n",
			(unsigned long long)sum->run_id, (unsigned long long)sum->rows);
	return CLI_ERROR;
}

/* How a run that did not fail ended, as the CLI reports it. */
static int report_end(const dag_graph *g, const run_result *r, const cli_run_args *a,
		      int after_rc)
{
	const eng_summary *sum = &r->sum;
	int rc;

	if (a->json) {
		rc = sum->halt_code ? report_stop(sum, r->audit, a) :
		     sum->interrupted ? CLI_INTERRUPTED : CLI_OK;
		rc = rc == CLI_OK ? after_rc : rc;
		/* A halt with exit code 1 failed the run: status failed, with
		 * the halt's message as its error. */
		summary_json(g, r, sum->halt_code == CLI_ERROR ? sum->halt_msg : NULL, rc);
		return rc;
	}
	print_summary(g, sum);
	if (a->verbose)
		print_metrics(sum);
	if (a->resume)
		print_resumed(sum);
	print_where(r, a);
	rc = CLI_OK;
	if (sum->interrupted || sum->halt_code)
		rc = report_stop(sum, r->audit, a);
	return rc == CLI_OK ? after_rc : rc;
}

/* What the live SQL trail did while the run went on (ADR 0041): its
 * steps, the rows it held before the whole export at the end, the
 * longest a released row waited for the database, and its failures. */
static void report_live(const run_result *r, const cli_run_args *a)
{
	const run_live_stats *l = &r->live;

	if (!l->on || a->json) /* JSON: in run_completed (live_json) */
		return;
	if (!l->steps && !l->failures) {
		/* a short run: the whole export at the end wrote it all */
		printf("  SQL trail while running: nothing before the end of the run\n");
		return;
	}
	printf("  SQL trail while running: %llu transactions, rows 1..%llu, a released row "
	       "waited at most %.2f s", (unsigned long long)l->steps,
	       (unsigned long long)l->rows, l->max_behind_s);
	if (l->failures)
		printf("; %llu failed (the last: %s)", (unsigned long long)l->failures,
		       l->last_error);
	putchar('\n');
}

/* What the run's telemetry did (ELSPETH's "Telemetry manager closing"
 * line), and its failure: every exporter failing max_consecutive_failures
 * times in a row with fail_on_total_exporter_failure on makes the exit
 * code 1, as in ELSPETH, though the run is recorded as it ended. True
 * then. */
static bool report_telemetry(const run_result *r, const cli_run_args *a)
{
	const tel_stats *t = &r->tel;

	if (!r->telemetry)
		return false;
	if (a->json) {
		json_t *f = json_object(), *e;

		for (size_t i = 0; f && i < t->nexporters; i++)
			if (t->exporters[i].failures)
				json_object_set_new(f, t->exporters[i].name,
					json_integer((json_int_t)t->exporters[i].failures));
		e = json_pack("{s:s,s:I,s:I,s:o,s:I,s:b}", "event", "telemetry_closed",
			      "events_emitted", (json_int_t)t->emitted,
			      "events_dropped", (json_int_t)t->dropped,
			      "exporter_failures", f,
			      "consecutive_total_failures", (json_int_t)t->consecutive_failures,
			      "disabled", t->disabled);
		cli_print_json_line(e);
		json_decref(e);
	} else {
		printf("  telemetry: %llu events emitted, %llu dropped", (unsigned long long)t->emitted,
		       (unsigned long long)t->dropped);
		for (size_t i = 0; i < t->nexporters; i++)
			if (t->exporters[i].failures)
				printf("%s%s failed %llu times", i ? ", " : "; ", t->exporters[i].name,
				       (unsigned long long)t->exporters[i].failures);
		printf("%s\n", t->disabled ? "; switched off after repeated failures" : "");
		fflush(stdout);
	}
	if (r->tel_failed)
		cli_error(&r->tel_err);
	return r->tel_failed;
}

/* A dependency's run, reported as a run of its own (ADR 0027). */
static void report_dependency(const watch *w, const run_event *ev)
{
	const run_result *r = ev->result;
	cli_run_args da = { .path = ev->path, .execute = true, .json = w->a->json,
			    .max_in_flight = w->a->max_in_flight,
			    .max_waiting_mib = w->a->max_waiting_mib };
	int after_rc = r->sum.run_id ? report_after(r, &da) : CLI_OK;

	if (r->rc)
		report_failure(ev->graph, r, &da);
	else
		report_end(ev->graph, r, &da, after_rc);
	fflush(stdout);
}

int cli_execute(dag_graph *g, const cli_run_args *a)
{
	watch w = { .json = a->json, .tty = isatty(STDERR_FILENO), .a = a };
	run_cfg cfg = { .graph = g, .settings_path = a->path, .database = a->database,
			.resume = a->resume,
			.max_rows_in_flight = (unsigned)a->max_in_flight,
			.max_waiting_mib = a->max_waiting_mib, .shard = a->eshard,
			.stop = &stop_flag, .observe = observe, .observe_ctx = &w,
			.metrics_listen = a->metrics_listen,
			.progress_ms = a->json ? 1000 : w.tty ? 200 : 0 };
	const run_result *r;
	run_job *job;
	core_err err = { 0 };
	int rc, after_rc;

	if (a->verbose && !a->json) {
		cli_print_pipeline(stdout, g);
		puts("Starting pipeline execution...");
		fflush(stdout);
	}
	install_signals();
	if (run_start(&cfg, &job, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	r = run_wait(job);
	after_rc = r->sum.run_id ? report_after(r, a) : CLI_OK;
	rc = r->rc ? report_failure(g, r, a) : report_end(g, r, a, after_rc);
	report_live(r, a);
	if (report_telemetry(r, a) && rc == CLI_OK)
		rc = CLI_ERROR;
	run_free(job);
	return rc;
}

/* run --manifest without -s: the settings the plan was made from. */
static int manifest_settings(cli_run_args *a)
{
	static char path[4096];
	shd_manifest *m;
	core_err err = { 0 };

	if (shd_load(a->manifest, &m, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	snprintf(path, sizeof(path), "%s", m->settings_path);
	shd_free(m);
	a->path = path;
	return 0;
}

int cli_run(int argc, char **argv)
{
	cli_run_args a = { 0 };
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	int rc;

	if ((rc = cli_parse_run_args("run", run_usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (!a.path && (rc = manifest_settings(&a)))
		return rc;
	if ((rc = cli_load(a.path, &s, &g)))
		return rc;
	/* -n wins over -x, as in ELSPETH (its dry-run check comes first). */
	if (!a.execute || a.dry_run) {
		if ((rc = run_validate(s, g, &err))) {
			cli_error(&err);
			rc = CLI_ERROR;
		} else {
			cli_print_pipeline(stdout, g);
			if (a.dry_run)
				puts("Dry run (--dry-run): validation passed; nothing was run.");
			else if (a.manifest)
				printf("Validation passed; nothing was run. To run a shard:\n"
				       "  elspeth run -s %s --manifest %s --shard K --execute\n",
				       a.path, a.manifest);
			else
				printf("Validation passed; nothing was run. To run it:\n"
				       "  elspeth run -s %s --execute\n", a.path);
		}
	} else {
		rc = a.manifest ? cli_run_shard(g, &a) : cli_execute(g, &a);
	}
	dag_free(g);
	core_settings_free(s);
	return rc;
}

/* ------------------------------------------------------------- resume */

static const char resume_usage[] =
	"usage: elspeth resume RUN_ID -s SETTINGS [-d PATH] [-x] [-f console|json]\n"
	"                      [--sequential | --max-rows-in-flight N]\n"
	"                      [--max-waiting-mib M] [--metrics-listen ADDR]\n"
	"\n"
	"Finishes a run that stopped (crash, kill, Ctrl-C, failure) from its latest\n"
	"checkpoint: the sinks end as an uninterrupted run would have written them\n"
	"(docs/resume.md). RUN_ID is a run id or 'latest'; SETTINGS must be the\n"
	"settings the run used. Without --execute: checks the run, the settings and\n"
	"the sink files, and says what a resume would do; nothing is written.\n"
	"\n"
	"  -s, --settings FILE        the pipeline settings (YAML) of the run\n"
	"  -d, --database PATH        the Landscape (LMDB directory, or the SQL trail\n"
	"                             file of a sqlite:/// url) holding the run,\n"
	"                             instead of the settings' landscape.url; it must\n"
	"                             exist\n"
	"  -x, --execute              really resume it\n"
	"  -f, --format console|json  as for run\n"
	"      --sequential           one row at a time\n"
	"      --max-rows-in-flight N rows processed at once (may differ from the run's)\n"
	"      --max-waiting-mib M    the waiting budget in MiB, as for run\n"
	"      --metrics-listen ADDR  serve its metrics for Prometheus, as for run\n"
	"  -h, --help                 this help\n"
	"\n"
	"Exit codes: 0 success, 1 error (also: nothing to resume; halted again, e.g. the\n"
	"account is still exhausted), 2 usage, 3 interrupted (also: halted again, e.g.\n"
	"the provider asks to wait too long).\n";

static void print_plan(const json_t *p, const cli_run_args *a)
{
	const json_t *ck = json_object_get(p, "checkpoint"), *v;
	size_t i;

	printf("Run %lld (%s) can be resumed (attempt %lld) from its checkpoint (%s):\n",
	       (long long)json_integer_value(json_object_get(p, "run_id")),
	       json_string_value(json_object_get(p, "status")),
	       (long long)json_integer_value(json_object_get(p, "next_attempt")),
	       json_string_value(json_object_get(ck, "reason")));
	if (json_object_get(p, "error"))
		printf("  it stopped on: %s\n", json_string_value(json_object_get(p, "error")));
	printf("  released through row %lld; %lld completed rows waiting (released as they are), "
	       "%lld in flight (run again)\n",
	       (long long)json_integer_value(json_object_get(ck, "released_through_seq")),
	       (long long)json_integer_value(json_object_get(ck, "completed_waiting")),
	       (long long)json_integer_value(json_object_get(ck, "in_flight")));
	printf("  the source continues after row %lld%s\n",
	       (long long)json_integer_value(json_object_get(ck, "source_continues_after_seq")),
	       json_is_true(json_object_get(ck, "source_done")) ? " (it had ended)" : "");
	json_array_foreach(json_object_get(p, "sinks"), i, v) {
		const char *path = json_string_value(json_object_get(v, "path"));

		/* A table (the database sink): its position counts rows. */
		printf(path && !strncmp(path, "db://", 5) ?
		       "  sink %s: %s cut back to %lld rows (%lld rows; rows committed after them are deleted)\n" :
		       "  sink %s: %s cut back to %lld bytes (%lld rows)\n",
		       json_string_value(json_object_get(v, "name")), path ? path : "",
		       (long long)json_integer_value(json_object_get(v, "position")),
		       (long long)json_integer_value(json_object_get(v, "rows")));
	}
	json_array_foreach(json_object_get(p, "aggregations"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		long long n = (long long)json_integer_value(json_object_get(v, "buffered"));

		if (json_is_true(json_object_get(v, "held_sink")))
			printf("  sink %s: %lld rows held, written at the end of the run "
			       "(ELSPETH 0.7.1's order)\n", name, n);
		else
			printf("  aggregation %s: %lld rows buffered (oldest %.1f s)\n", name, n,
			       json_real_value(json_object_get(v, "age_seconds")));
	}
	printf("  coalesce: nothing pending (a row's branches are joined within the row)\n");
	printf("Nothing was changed. To resume:\n  elspeth resume %lld -s %s%s%s --execute\n",
	       (long long)json_integer_value(json_object_get(p, "run_id")), a->path,
	       a->database ? " -d " : "", a->database ? a->database : "");
}

static int resume_dry(dag_graph *g, const cli_run_args *a)
{
	eng_opts o = { .settings_path = a->path };
	core_err err = { 0 };
	eng_summary sum;
	json_t *plan = NULL;
	int rc;

	if (open_readonly(g->settings, a->database, &o.rec, &err)) { /* a dry run reads only */
		cli_error(&err);
		return CLI_ERROR;
	}
	rc = eng_resume(g, &o, a->resume, false, &plan, &sum, &err);
	rec_close(o.rec, NULL);
	eng_summary_release(&sum);
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (a->json)
		cli_print_json(plan);
	else
		print_plan(plan, a);
	json_decref(plan);
	return CLI_OK;
}

int cli_resume(int argc, char **argv)
{
	cli_run_args a = { 0 };
	core_settings *s;
	dag_graph *g;
	int rc;

	if ((rc = cli_parse_run_args("resume", resume_usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if ((rc = cli_load(a.path, &s, &g)))
		return rc;
	rc = a.execute ? cli_execute(g, &a) : resume_dry(g, &a);
	dag_free(g);
	core_settings_free(s);
	return rc;
}

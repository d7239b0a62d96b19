/* cmd_read.c — the read commands: `runs`, `explain`, `verify`. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "sqltrail/sqltrail.h"

static const char where_help[] =
	"  -s, --settings FILE   find the audit trail from the settings' landscape.url\n"
	"  -d, --database PATH   ... or from this LMDB directory, or SQL trail file\n"
	"                        (sqlite:///FILE: the LMDB directory FILE.lmdb)\n"
	"                        (default: ./state/audit.lmdb)\n"
	"      --manifest FILE   ... or every shard of this plan (elspeth shard plan)\n";

int cli_parse_read_args(const char *cmd, const char *usage, int argc,
			char **argv, cli_read_args *a)
{
	static const struct option longopts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "database", required_argument, NULL, 'd' },
		{ "run", required_argument, NULL, 'r' },
		{ "row", required_argument, NULL, 'w' },
		{ "token", required_argument, NULL, 't' },
		{ "sink", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-tui", no_argument, NULL, 'T' },
		{ "sqlite", required_argument, NULL, 'Q' },
		{ "payloads", no_argument, NULL, 'P' },
		{ "audit", no_argument, NULL, 'A' },
		{ "manifest", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	/* ELSPETH's explain: -r/--run, -t/--token, -d/--database,
	 * -s/--settings; runs and verify share them. */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:d:r:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': a->settings = optarg; break;
		case 'd': a->database = optarg; break;
		case 'r': a->run = optarg; break;
		case 'k': a->sink = optarg; break;
		case 'M': a->manifest = optarg; break;
		case 'j': a->json = true; break;
		case 'T':
			/* ELSPETH's explain: text instead of its TUI. We
			 * have no TUI: text is what explain prints anyway. */
			if (strcmp(cmd, "explain"))
				return cli_usage_error(cmd, "bad option '--no-tui' (explain only)");
			a->no_tui = true;
			break;
		case 'Q':
		case 'P':
		case 'A':
			if (strcmp(cmd, "export"))
				return cli_usage_error(cmd, "bad option '--%s' (export only)",
						       c == 'Q' ? "sqlite" : c == 'P' ? "payloads" :
						       "audit");
			if (c == 'Q')
				a->sqlite = optarg;
			else if (c == 'P')
				a->payloads = true;
			else
				a->audit = true;
			break;
		case 'w':
		case 't':
			if (cli_parse_count(optarg, ULLONG_MAX, c == 'w' ? &a->row : &a->token))
				return cli_usage_error(cmd, "--%s needs a positive number, got '%s'",
						       c == 'w' ? "row" : "token", optarg);
			break;
		case 'h':
			printf("%s%s", usage, where_help);
			return -1;
		default:
			return cli_bad_option(cmd, c, argc, argv);
		}
	}
	if (optind != argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (a->manifest && (a->settings || a->database))
		return cli_usage_error(cmd, "--manifest reads every shard's own trail: "
				       "it takes no -s or -d");
	return 0;
}

/* ------------------------------------------------------------------ runs */

/* A run recorded as running that no process holds (its run lock is
 * free) ended without recording its end: killed, crashed, or stopped by
 * a full disk that left no room to record it. Such a run gets "live":
 * false and, when it has a checkpoint, "resume_after_row" (the rows it
 * released: what a resume keeps) and "rows" from it; the text views say
 * "stopped". A run whose lock cannot be read is left as it is. */
static void mark_stopped(rec_env *env, json_t *runs)
{
	size_t i;
	json_t *r;

	json_array_foreach(runs, i, r) {
		const char *st = json_string_value(json_object_get(r, "status"));
		uint64_t id = (uint64_t)json_integer_value(json_object_get(r, "run_id"));
		Elspeth__Checkpoint *ck = NULL;
		core_err e = { 0 };
		int fd = -1;

		if (!st || strcmp(st, "running") || rec_run_lock(env, id, &fd, &e))
			continue; /* a live run holds its lock: CORE_EDATA */
		if (fd >= 0)
			close(fd);
		json_object_set_new(r, "live", json_false());
		if (rec_ckpt_load(env, id, &ck, &e) == 0 && ck) {
			json_object_set_new(r, "resume_after_row",
					    json_integer((json_int_t)ck->released_through_seq));
			if (!json_integer_value(json_object_get(r, "rows")))
				json_object_set_new(r, "rows",
					json_integer((json_int_t)ck->released_through_seq));
		}
		rec_ckpt_free(ck);
	}
}

/* The status the text views show: "stopped" for a run no process runs. */
static const char *shown_status(const json_t *r)
{
	const json_t *live = json_object_get(r, "live");

	return live && json_is_false(live) ? "stopped" :
	       json_string_value(json_object_get(r, "status"));
}

/* A run's line after its id: start, duration, status, counts. */
static void print_run_tail(const json_t *r)
{
	const json_t *d = json_object_get(r, "duration_seconds");
	const char *start = json_string_value(json_object_get(r, "started_at"));
	char dur[32] = "-";

	if (d)
		snprintf(dur, sizeof(dur), "%.2fs", json_real_value(d));
	printf("%-24s %9s  %-11s %9lld %9lld %7lld %11lld\n",
	       start ? start : "-", dur, shown_status(r),
	       (long long)json_integer_value(json_object_get(r, "rows")),
	       (long long)json_integer_value(json_object_get(r, "succeeded")),
	       (long long)json_integer_value(json_object_get(r, "failed")),
	       (long long)json_integer_value(json_object_get(r, "quarantined")));
}

static void print_run_line(const json_t *r)
{
	printf("%6lld  ", (long long)json_integer_value(json_object_get(r, "run_id")));
	print_run_tail(r);
}

/* Keeps only the run named by spec in runs. */
static int pick_run(rec_env *env, json_t *runs, const char *spec, core_err *err)
{
	uint64_t id;
	json_t *r;
	size_t i;
	int rc = rec_resolve_run(env, spec, &id, err);

	if (rc)
		return rc;
	json_array_foreach(runs, i, r) {
		if ((uint64_t)json_integer_value(json_object_get(r, "run_id")) == id) {
			json_incref(r);
			json_array_clear(runs);
			json_array_append_new(runs, r);
			return 0;
		}
	}
	return core_err_set(err, CORE_EDATA, "run %s not found", spec);
}

static void print_run_detail(const json_t *r, bool json)
{
	const char *k;
	json_t *v;

	if (json) {
		cli_print_json(r);
		return;
	}
	json_object_foreach((json_t *)r, k, v) {
		core_buf b = { 0 };

		if (!strcmp(k, "metrics"))
			continue;
		core_json_append(&b, v, -1, 0);
		printf("%-20s %s\n", k, b.data ? b.data : "");
		core_buf_release(&b);
	}
	json_object_foreach(json_object_get(r, "metrics"), k, v) {
		core_buf b = { 0 };

		core_json_append(&b, v, -1, 0);
		printf("metrics.%-12s %s\n", k, b.data ? b.data : "");
		core_buf_release(&b);
	}
	if (json_is_false(json_object_get(r, "live"))) {
		const json_t *after = json_object_get(r, "resume_after_row");
		const char *sp;

		printf("stopped: no process runs it; it ended without recording its "
		       "end (killed, crashed, or a full disk)");
		if (after)
			printf("; a resume continues after row %lld",
			       (long long)json_integer_value(after));
		sp = json_string_value(json_object_get(r, "settings_path"));
		printf("\n  resume it with: elspeth resume %lld -s %s --execute\n",
		       (long long)json_integer_value(json_object_get(r, "run_id")),
		       sp && *sp ? sp : "SETTINGS");
	}
}

/* runs -d postgresql://…: the database's runs, read from it (ADR 0043):
 * every Landscape's that writes into it, by their ids there. */
static int runs_pg(const cli_read_args *a)
{
	json_t *runs = NULL, *r, *one = NULL;
	core_err err = { 0 };
	size_t i;

	if (sqlt_runs_pg(a->database, &runs, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if (a->run) {
		json_array_foreach(runs, i, r)
			if (!one && (!strcmp(a->run, "latest") ||
				     !strcmp(a->run, json_string_value(json_object_get(r, "run_id")))))
				one = r;
		if (!one) {
			fprintf(stderr, "Error: run %s not found in the database\n", a->run);
			json_decref(runs);
			return CLI_ERROR;
		}
		print_run_detail(one, a->json);
	} else if (a->json) {
		cli_print_json(runs);
	} else {
		printf("%-12s %5s  %-24s %9s  %-11s %9s %9s %7s %11s\n", "run", "local",
		       "started (UTC)", "duration", "status", "rows", "succeeded", "failed",
		       "quarantined");
		json_array_foreach(runs, i, r) {
			printf("%-12s %5lld  ", json_string_value(json_object_get(r, "run_id")),
			       (long long)json_integer_value(json_object_get(r, "landscape_run_id")));
			print_run_tail(r);
		}
		if (!json_array_size(runs))
			puts("(no runs yet)");
	}
	json_decref(runs);
	return CLI_OK;
}

int cli_runs(int argc, char **argv)
{
	static const char usage[] =
		"usage: elspeth runs [-s SETTINGS | -d PATH|URL] [-r ID|latest] [--json]\n\n"
		"Lists the recorded runs, newest first; with --run, one run in detail\n"
		"with its pipeline metrics (rows in flight, peak waiting, FIFO wait,\n"
		"time the source was blocked by backpressure, batches, diverted).\n"
		"With -d postgresql://…, the runs that database holds (every Landscape\n"
		"that writes into it), by their ids there; 'local' is the run's number\n"
		"in its own Landscape.\n\n";
	cli_read_args a = { 0 };
	rec_env *env;
	json_t *runs;
	core_err err = { 0 };
	size_t i;
	json_t *r;
	int rc;

	if ((rc = cli_parse_read_args("runs", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (a.manifest)
		return cli_runs_manifest(&a);
	if (a.database && core_sql_is_pg(a.database))
		return runs_pg(&a);
	if ((rc = cli_open_landscape(a.settings, a.database, REC_READONLY, &env)))
		return rc;
	rc = rec_list_runs(env, &runs, &err);
	if (!rc)
		mark_stopped(env, runs);
	if (!rc && a.run)
		rc = pick_run(env, runs, a.run, &err);
	if (rc) {
		cli_error(&err);
	} else if (a.run) {
		print_run_detail(json_array_get(runs, 0), a.json);
	} else if (a.json) {
		cli_print_json(runs);
	} else {
		printf("%6s  %-24s %9s  %-11s %9s %9s %7s %11s\n", "run", "started (UTC)",
		       "duration", "status", "rows", "succeeded", "failed", "quarantined");
		json_array_foreach(runs, i, r)
			print_run_line(r);
		if (!json_array_size(runs))
			puts("(no runs yet)");
	}
	json_decref(runs);
	rec_close(env, NULL);
	return rc ? CLI_ERROR : CLI_OK;
}

/* --------------------------------------------------------------- explain */

/* explain, in the trail reader's child (rec_read_isolated): the story as
 * JSON. */
static int explain_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	const cli_read_args *a = ctx;
	json_t *doc = NULL;
	int rc = rec_resolve_run(env, a->run, run, err);

	if (!rc)
		rc = rec_explain(env, *run, a->row, a->token, &doc, err);
	if (!rc && core_json_append(out, doc, -1, 0))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(doc);
	return rc;
}

int cli_explain(int argc, char **argv)
{
	static const char usage[] =
		"usage: elspeth explain [-r ID|latest] (--row SEQ | -t ID) [--sink NAME]\n"
		"                       [--json | --no-tui]\n\n"
		"The whole story of one source row: its data and hash, every token, each\n"
		"node state with hashes, duration and error, each routing decision with\n"
		"its reason, each external call, the terminal outcome, and where the\n"
		"output landed (sink, byte range). --json prints the document whose\n"
		"schema is in docs/audit.md.\n\n"
		"  -r, --run ID|latest   the run (default: latest)\n"
		"      --row SEQ         the source row (1 is the first)\n"
		"  -t, --token ID        ... or one token\n"
		"      --sink NAME       the token that reached this sink, when the row\n"
		"                        has several\n"
		"      --json            the JSON document instead of text\n"
		"      --no-tui          text (what explain prints without --json; for\n"
		"                        ELSPETH's users, whose explain has a TUI)\n";
	cli_read_args a = { .run = "latest" };
	json_t *doc = NULL;
	core_err err = { 0 };
	core_buf b = { 0 };
	char path[4096];
	uint64_t run;
	int rc;

	if ((rc = cli_parse_read_args("explain", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (!a.row == !a.token)
		return cli_usage_error("explain", "give exactly one of --row SEQ or --token ID");
	if (a.manifest)
		return cli_explain_manifest(&a);
	if ((rc = cli_landscape_path(a.settings, a.database, path, sizeof(path))))
		return rc;
	rc = rec_read_isolated(path, "explain's reader", explain_fn, &a, (size_t)1 << 30,
			    &run, &b, &err);
	if (!rc && !(doc = json_loadb(b.data ? b.data : "", b.len, 0, NULL)))
		rc = core_err_set(&err, CORE_EIO, "explain's reader gave no story");
	core_buf_release(&b);
	if (rc)
		cli_error(&err);
	else if (a.json)
		cli_print_json(doc);
	else
		rc = cli_explain_text(stdout, doc, a.sink);
	json_decref(doc);
	return rc == CLI_USAGE ? rc : rc ? CLI_ERROR : CLI_OK;
}

/* ---------------------------------------------------------------- verify */

/* What verify saw of resumes; nothing for a run never resumed. */
static void print_resume_counts(const json_t *checked)
{
	long long resumes = json_integer_value(json_object_get(checked, "resumes"));
	long long sup = json_integer_value(json_object_get(checked, "superseded"));
	long long rep = json_integer_value(json_object_get(checked, "replayed_calls"));

	if (resumes || sup || rep)
		printf("resumes %lld: %lld superseded tokens, %lld replayed calls\n",
		       resumes, sup, rep);
}

/* verify, in the trail reader's child (rec_read_isolated): its report as
 * JSON. */
static int verify_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	const cli_read_args *a = ctx;
	json_t *rep = NULL;
	int rc = rec_resolve_run(env, a->run, run, err);

	if (!rc)
		rc = rec_verify(env, *run, &rep, err);
	if (!rc && core_json_append(out, rep, -1, 0))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(rep);
	return rc;
}

/* verify's line on the run's chain (recorder/chain.c). */
static void print_chain(const json_t *c)
{
	const char *head = json_string_value(json_object_get(c, "head"));

	if (!head) {
		printf("chain: %s\n", json_string_value(json_object_get(c, "status")));
		return;
	}
	printf("chain: %s, %lld records, head %.16s…, signature %s\n",
	       json_string_value(json_object_get(c, "status")),
	       (long long)json_integer_value(json_object_get(c, "records")), head,
	       json_string_value(json_object_get(c, "signature")));
}

/* err's message without the "the trail is damaged: " verify puts first. */
static const char *damage_msg(const core_err *err)
{
	static const char pre[] = "the trail is damaged: ";

	return strncmp(err->msg, pre, sizeof(pre) - 1) ? err->msg : err->msg + sizeof(pre) - 1;
}

/* A trail verify could not read whole: an audit failure (exit 4). */
static int report_damage(const cli_read_args *a, uint64_t run, const core_err *err)
{
	if (a->json) {
		json_t *o = json_pack("{s:I,s:s,s:I,s:[s]}", "run_id", (json_int_t)run,
				      "status", "unreadable", "violation_count", (json_int_t)1,
				      "violations", damage_msg(err));

		cli_print_json(o);
		json_decref(o);
	} else {
		if (run)
			printf("run %llu: the audit trail cannot be read whole\n",
			       (unsigned long long)run);
		printf("VIOLATION: the trail is damaged: %s\n", damage_msg(err));
		puts("verify: FAILED");
	}
	return CLI_AUDIT;
}

int cli_verify(int argc, char **argv)
{
	static const char usage[] =
		"usage: elspeth verify [-r ID|latest] [--json]\n\n"
		"Checks a run's audit trail: every token has exactly one terminal outcome,\n"
		"every node state is closed, every COMPLETED/ROUTED token has an artifact,\n"
		"every stored hash matches its payload (canonical JSON, sha256-rfc8785-v1),\n"
		"and artifact byte ranges match the sink files when they are present.\n"
		"A resumed run's superseded tokens and batches (work the resume redid)\n"
		"need no outcome, and each replayed call must name a successful call\n"
		"with the same request.\n"
		"Exit 0 when all hold, 4 with the list of violations.\n\n";
	cli_read_args a = { .run = "latest" };
	json_t *rep = NULL, *v;
	core_err err = { 0 };
	core_buf b = { 0 };
	char path[4096];
	uint64_t run;
	size_t i, n;
	int rc;

	if ((rc = cli_parse_read_args("verify", usage, argc, argv, &a)))
		return rc < 0 ? CLI_OK : rc;
	if (a.manifest)
		return cli_verify_manifest(&a);
	if ((rc = cli_landscape_path(a.settings, a.database, path, sizeof(path))))
		return rc;
	rc = rec_read_isolated(path, "verify's reader", verify_fn, &a, (size_t)1 << 30,
			    &run, &b, &err);
	if (!rc && !(rep = json_loadb(b.data ? b.data : "", b.len, 0, NULL)))
		rc = core_err_set(&err, CORE_EIO, "verify's reader gave no report");
	core_buf_release(&b);
	if (rc == CORE_EDATA)
		return report_damage(&a, run, &err);
	if (rc) {
		cli_error(&err);
		return CLI_ERROR;
	}
	n = (size_t)json_integer_value(json_object_get(rep, "violation_count"));
	if (a.json) {
		cli_print_json(rep);
	} else {
		json_t *c = json_object_get(rep, "checked");

		printf("run %llu (%s): checked %lld rows, %lld tokens, %lld node states, "
		       "%lld artifacts, %lld payloads, %lld sink files, %lld batches, %lld calls\n",
		       (unsigned long long)run, json_string_value(json_object_get(rep, "status")),
		       (long long)json_integer_value(json_object_get(c, "rows")),
		       (long long)json_integer_value(json_object_get(c, "tokens")),
		       (long long)json_integer_value(json_object_get(c, "node_states")),
		       (long long)json_integer_value(json_object_get(c, "artifacts")),
		       (long long)json_integer_value(json_object_get(c, "payloads")),
		       (long long)json_integer_value(json_object_get(c, "sink_files")),
		       (long long)json_integer_value(json_object_get(c, "batches")),
		       (long long)json_integer_value(json_object_get(c, "calls")));
		print_resume_counts(c);
		print_chain(json_object_get(rep, "chain"));
		if ((v = json_object_get(rep, "stopped")))
			printf("%s\n", json_string_value(json_object_get(v, "message")));
		json_array_foreach(json_object_get(rep, "violations"), i, v)
			printf("VIOLATION: %s\n", json_string_value(v));
		if (n > json_array_size(json_object_get(rep, "violations")))
			printf("... and %zu more\n", n - json_array_size(json_object_get(rep, "violations")));
		puts(n ? "verify: FAILED" : "verify: OK — all audit invariants hold");
	}
	json_decref(rep);
	return n ? CLI_AUDIT : CLI_OK;
}

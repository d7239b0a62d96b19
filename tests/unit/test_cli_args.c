/* test_cli_args.c — the CLI's argument handling (cli/): the options of
 * run/resume and of the read commands, the dispatch of `elspeth COMMAND`,
 * usage errors (exit 2, a message on stderr) before anything is opened,
 * and, end to end through cli_main, that --sequential,
 * --max-rows-in-flight and --format json reach the run. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cli/cli.h"
#include "test_cli_util.h"

#define TIMEOUT 30

TestSuite(cli_run_args, .timeout = TIMEOUT);
TestSuite(cli_read_args, .timeout = TIMEOUT);
TestSuite(cli_main, .timeout = TIMEOUT);

/* What a descriptor (1 or 2) gets between begin and end. */
typedef struct capture {
	int fd, saved;
	char path[64];
} capture;

static void capture_begin(capture *c, int fd)
{
	int t;

	fflush(fd == 1 ? stdout : stderr);
	c->fd = fd;
	snprintf(c->path, sizeof(c->path), "/tmp/elspeth-cli-XXXXXX");
	cr_assert_geq(t = mkstemp(c->path), 0);
	c->saved = dup(fd);
	dup2(t, fd);
	close(t);
}

/* The text written (malloc'd). */
static char *capture_end(capture *c)
{
	FILE *f;
	char *text;
	long n;

	fflush(c->fd == 1 ? stdout : stderr);
	dup2(c->saved, c->fd);
	close(c->saved);
	f = fopen(c->path, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(c->path);
	return text;
}

static const char *usage = "usage: test\n";

/* Parses run/resume options with stderr and stdout captured. */
static int parse_run(const char *cmd, targv *a, cli_run_args *out, char **err_text,
		     char **out_text)
{
	capture ce, co;
	int rc;

	memset(out, 0, sizeof(*out));
	capture_begin(&ce, 2);
	capture_begin(&co, 1);
	rc = cli_parse_run_args(cmd, usage, a->argc, a->argv, out);
	*out_text = capture_end(&co);
	*err_text = capture_end(&ce);
	return rc;
}

/* A usage error: CLI_USAGE and a message naming the command. */
static void expect_run_usage(targv *a, const char *cmd, const char *needle)
{
	cli_run_args r;
	char *err, *out;

	cr_assert_eq(parse_run(cmd, a, &r, &err, &out), CLI_USAGE, "stderr: %s", err);
	cr_assert(strstr(err, needle), "stderr '%s' lacks '%s'", err, needle);
	cr_assert(strstr(err, "(see 'elspeth "), "%s", err);
	cr_assert_str_eq(out, "", "usage errors go to stderr");
	free(err);
	free(out);
}

/* ------------------------------------------------------------ run args */

Test(cli_run_args, settings_and_execute)
{
	targv a;
	cli_run_args r;
	char *err, *out;

	ARGV(a, "run", "-s", "p.yaml", "--execute");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_str_eq(r.path, "p.yaml");
	cr_assert(r.execute);
	cr_assert_not(r.json);
	cr_assert_eq(r.max_in_flight, 0, "from the settings unless given");
	cr_assert_null(r.resume);
	free(err);
	free(out);
	ARGV(a, "run", "--settings=q.yaml", "-x");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_str_eq(r.path, "q.yaml");
	cr_assert(r.execute);
	free(err);
	free(out);
}

Test(cli_run_args, sequential_is_one_row_in_flight)
{
	targv a;
	cli_run_args r;
	char *err, *out;

	ARGV(a, "run", "--sequential", "-s", "p.yaml");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_eq(r.max_in_flight, 1);
	cr_assert_not(r.execute);
	free(err);
	free(out);
}

Test(cli_run_args, max_rows_in_flight_from_1_to_4096)
{
	static const char *const ok[] = { "1", "16", "4096" };
	static const long want[] = { 1, 16, 4096 };
	targv a;
	cli_run_args r;
	char *err, *out;

	for (size_t i = 0; i < 3; i++) {
		ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight", ok[i]);
		cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s: %s", ok[i], err);
		cr_assert_eq(r.max_in_flight, want[i]);
		free(err);
		free(out);
	}
	ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight=7");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_eq(r.max_in_flight, 7);
	free(err);
	free(out);
}

Test(cli_run_args, max_rows_in_flight_not_a_positive_integer)
{
	static const char *const bad[] = { "0", "-3", "abc", "12x", "", "1.5" };
	targv a;
	char want[96];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight", bad[i]);
		snprintf(want, sizeof(want), "elspeth run: --max-rows-in-flight needs a "
			 "positive integer, got '%s'", bad[i]);
		expect_run_usage(&a, "run", want);
	}
}

Test(cli_run_args, max_rows_in_flight_above_4096)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight", "4097");
	expect_run_usage(&a, "run", "--max-rows-in-flight is at most 4096, got 4097");
	ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight", "99999999999999999999");
	expect_run_usage(&a, "run", "--max-rows-in-flight is at most 4096");
}

Test(cli_run_args, max_rows_in_flight_needs_a_value)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight");
	expect_run_usage(&a, "run", "option '--max-rows-in-flight' needs a value");
}

Test(cli_run_args, format_text_or_json)
{
	targv a;
	cli_run_args r;
	char *err, *out;

	ARGV(a, "run", "-s", "p.yaml", "--format", "json");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert(r.json);
	free(err);
	free(out);
	ARGV(a, "run", "-s", "p.yaml", "--format", "json", "--format", "text");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_not(r.json, "the last --format wins");
	free(err);
	free(out);
	ARGV(a, "run", "-s", "p.yaml", "--format", "xml");
	expect_run_usage(&a, "run", "--format is console, text or json, got 'xml'");
}

Test(cli_run_args, unknown_flags_are_usage_errors)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "--bogus");
	expect_run_usage(&a, "run", "elspeth run: bad option '--bogus'");
	ARGV(a, "run", "-q", "-s", "p.yaml");
	expect_run_usage(&a, "run", "bad option '-q'");
	ARGV(a, "run", "-s", "p.yaml", "--execute=yes");
	expect_run_usage(&a, "run", "bad option '--execute=yes'");
}

/* A bug these tests found (fixed): an unknown option inside a cluster (-qx) leaves
 * optind on that argument, and the message names argv[optind - 1], the
 * argument before it: "bad option 'run'". optopt holds the option. */
Test(cli_run_args, unknown_clustered_flag_is_named)
{
	targv a;

	ARGV(a, "run", "-qx", "-s", "p.yaml");
	expect_run_usage(&a, "run", "bad option '-q");
}

/* A bug these tests found (fixed): strtol saturates at LONG_MAX without a range check,
 * so the message quotes 9223372036854775807 instead of what was given. */
Test(cli_run_args, huge_max_rows_in_flight_is_quoted_as_given)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "--max-rows-in-flight", "99999999999999999999");
	expect_run_usage(&a, "run", "99999999999999999999");
}

Test(cli_run_args, settings_are_required)
{
	targv a;

	ARGV(a, "run", "--execute");
	expect_run_usage(&a, "run", "expected -s SETTINGS");
	ARGV(a, "run", "-s");
	expect_run_usage(&a, "run", "option '-s' needs a value");
	ARGV(a, "run", "-s", "p.yaml", "extra");
	expect_run_usage(&a, "run", "expected -s SETTINGS");
}

Test(cli_run_args, help_prints_usage_to_stdout)
{
	targv a;
	cli_run_args r;
	char *err, *out;

	ARGV(a, "run", "--help");
	cr_assert_eq(parse_run("run", &a, &r, &err, &out), -1);
	cr_assert_str_eq(out, usage);
	cr_assert_str_eq(err, "");
	free(err);
	free(out);
}

Test(cli_run_args, resume_takes_one_run)
{
	targv a;
	cli_run_args r;
	char *err, *out;

	/* options may come after the run (GNU getopt permutes) */
	ARGV(a, "resume", "-s", "p.yaml", "latest", "--execute", "--sequential");
	cr_assert_eq(parse_run("resume", &a, &r, &err, &out), 0, "%s", err);
	cr_assert_str_eq(r.resume, "latest");
	cr_assert_str_eq(r.path, "p.yaml");
	cr_assert(r.execute);
	cr_assert_eq(r.max_in_flight, 1);
	free(err);
	free(out);
	ARGV(a, "resume", "-s", "p.yaml");
	expect_run_usage(&a, "resume", "elspeth resume: expected RUN_ID");
	ARGV(a, "resume", "7", "8", "-s", "p.yaml");
	expect_run_usage(&a, "resume", "expected RUN_ID");
	ARGV(a, "resume", "7");
	expect_run_usage(&a, "resume", "expected -s SETTINGS");
}

/* ------------------------------------------- ELSPETH's short flags (run) */

/* Parses argv as cmd and returns the options; fails on any error. */
static cli_run_args run_ok(const char *cmd, targv *a)
{
	cli_run_args r;
	char *err, *out;

	cr_assert_eq(parse_run(cmd, a, &r, &err, &out), 0, "%s: %s", a->argv[1], err);
	cr_assert_str_eq(err, "");
	free(err);
	free(out);
	return r;
}

static void expect_same_run_args(const cli_run_args *x, const cli_run_args *y)
{
	cr_assert_str_eq(x->path, y->path);
	cr_assert_eq(x->execute, y->execute);
	cr_assert_eq(x->json, y->json);
	cr_assert_eq(x->max_in_flight, y->max_in_flight);
	cr_assert_eq(x->dry_run, y->dry_run);
	cr_assert_eq(x->verbose, y->verbose);
	if (x->database || y->database)
		cr_assert_str_eq(x->database, y->database);
	if (x->resume || y->resume)
		cr_assert_str_eq(x->resume, y->resume);
}

/* cli.py, run: -s --settings, -n --dry-run, -x --execute, -v --verbose,
 * -f --format. */
Test(cli_run_args, short_flags_are_the_long_options)
{
	targv a, b; /* the options point into them */
	cli_run_args s, l;

	ARGV(a, "run", "-s", "p.yaml", "-x", "-n", "-v", "-f", "json");
	s = run_ok("run", &a);
	ARGV(b, "run", "--settings", "p.yaml", "--execute", "--dry-run", "--verbose",
	     "--format", "json");
	l = run_ok("run", &b);
	expect_same_run_args(&s, &l);
	cr_assert(s.execute && s.dry_run && s.verbose && s.json);
	cr_assert_null(s.database);

	/* clustered, and a value glued to its flag */
	ARGV(b, "run", "-xnvfjson", "-sp.yaml");
	l = run_ok("run", &b);
	expect_same_run_args(&s, &l);
}

Test(cli_run_args, flags_default_off)
{
	targv a;
	cli_run_args r;

	ARGV(a, "run", "-s", "p.yaml");
	r = run_ok("run", &a);
	cr_assert_not(r.execute || r.dry_run || r.verbose || r.json);
}

/* ELSPETH's values are console and json; text is ours for console. */
Test(cli_run_args, format_console_text_or_json)
{
	static const char *const vals[] = { "console", "text", "json" };
	targv a;
	cli_run_args r;

	for (size_t i = 0; i < 3; i++) {
		ARGV(a, "run", "-s", "p.yaml", "-f", vals[i]);
		r = run_ok("run", &a);
		cr_assert_eq(r.json, i == 2, "-f %s", vals[i]);
		ARGV(a, "run", "-s", "p.yaml", "--format", "json", "-f", vals[i]);
		r = run_ok("run", &a);
		cr_assert_eq(r.json, i == 2, "the last of --format json -f %s wins", vals[i]);
	}
	ARGV(a, "run", "-s", "p.yaml", "--format=console");
	r = run_ok("run", &a);
	cr_assert_not(r.json);
}

Test(cli_run_args, bad_format_values)
{
	static const char *const bad[] = { "xml", "JSON", "", "console ", "jsonl" };
	targv a;
	char want[96];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ARGV(a, "run", "-s", "p.yaml", "-f", bad[i]);
		snprintf(want, sizeof(want),
			 "elspeth run: --format is console, text or json, got '%s'", bad[i]);
		expect_run_usage(&a, "run", want);
	}
	ARGV(a, "resume", "latest", "-s", "p.yaml", "-f", "yaml");
	expect_run_usage(&a, "resume", "elspeth resume: --format is console, text or json, got 'yaml'");
}

Test(cli_run_args, missing_values_are_named)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "-f");
	expect_run_usage(&a, "run", "elspeth run: option '-f' needs a value");
	ARGV(a, "run", "-s", "p.yaml", "--format");
	expect_run_usage(&a, "run", "option '--format' needs a value");
	ARGV(a, "run", "-s", "p.yaml", "-xf");
	expect_run_usage(&a, "run", "option '-f' needs a value");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "-d");
	expect_run_usage(&a, "resume", "elspeth resume: option '-d' needs a value");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "--database");
	expect_run_usage(&a, "resume", "option '--database' needs a value");
}

Test(cli_run_args, flags_take_no_value)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "--dry-run=yes");
	expect_run_usage(&a, "run", "bad option '--dry-run=yes'");
	ARGV(a, "run", "-s", "p.yaml", "--verbose=1");
	expect_run_usage(&a, "run", "bad option '--verbose=1'");
	ARGV(a, "run", "-s", "p.yaml", "-vq");
	expect_run_usage(&a, "run", "bad option '-q'");
}

/* cli.py, resume: -d --database, -s --settings, -x --execute,
 * -f --format. */
Test(cli_run_args, resume_short_flags_are_the_long_options)
{
	targv a, b;
	cli_run_args s, l;

	ARGV(a, "resume", "7", "-d", "other.lmdb", "-s", "p.yaml", "-x", "-f", "json");
	s = run_ok("resume", &a);
	ARGV(b, "resume", "--database=other.lmdb", "7", "--settings", "p.yaml", "--execute",
	     "--format", "json");
	l = run_ok("resume", &b);
	expect_same_run_args(&s, &l);
	cr_assert_str_eq(s.database, "other.lmdb");
	cr_assert_str_eq(s.resume, "7");
	cr_assert(s.execute && s.json);
	cr_assert_not(s.dry_run || s.verbose);
}

/* Each command takes ELSPETH's options for it only: run has no
 * --database, resume no --dry-run or --verbose (a resume without -x is
 * already a dry run). */
Test(cli_run_args, options_of_the_other_command_are_refused)
{
	targv a;

	ARGV(a, "run", "-s", "p.yaml", "-d", "x.lmdb");
	expect_run_usage(&a, "run", "elspeth run: bad option '-d'");
	ARGV(a, "run", "-s", "p.yaml", "--database", "x.lmdb");
	expect_run_usage(&a, "run", "bad option '--database'");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "-n");
	expect_run_usage(&a, "resume", "elspeth resume: bad option '-n'");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "--dry-run");
	expect_run_usage(&a, "resume", "bad option '--dry-run'");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "-v");
	expect_run_usage(&a, "resume", "bad option '-v'");
	ARGV(a, "resume", "latest", "-s", "p.yaml", "--verbose");
	expect_run_usage(&a, "resume", "bad option '--verbose'");
}

/* ----------------------------------------------------------- read args */

static int parse_read(const char *cmd, targv *a, cli_read_args *r, char **err_text)
{
	capture ce;
	int rc;

	capture_begin(&ce, 2);
	rc = cli_parse_read_args(cmd, usage, a->argc, a->argv, r);
	*err_text = capture_end(&ce);
	return rc;
}

Test(cli_read_args, every_option)
{
	targv a;
	cli_read_args r = { .run = "latest" };
	char *err;

	ARGV(a, "explain", "--database", "db", "--run", "3", "--row", "42", "--sink",
	     "out", "--json");
	cr_assert_eq(parse_read("explain", &a, &r, &err), 0, "%s", err);
	cr_assert_str_eq(r.database, "db");
	cr_assert_str_eq(r.run, "3");
	cr_assert_eq(r.row, 42);
	cr_assert_eq(r.token, 0);
	cr_assert_str_eq(r.sink, "out");
	cr_assert(r.json);
	cr_assert_null(r.settings);
	free(err);
	memset(&r, 0, sizeof(r));
	ARGV(a, "explain", "-s", "p.yaml", "--token", "9");
	cr_assert_eq(parse_read("explain", &a, &r, &err), 0, "%s", err);
	cr_assert_str_eq(r.settings, "p.yaml");
	cr_assert_eq(r.token, 9);
	free(err);
}

Test(cli_read_args, row_and_token_are_positive_numbers)
{
	static const char *const bad[] = { "-1", "x", "", "3rd" };
	targv a;
	cli_read_args r;
	char *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0, sizeof(r));
		ARGV(a, "explain", "--row", bad[i]);
		cr_assert_eq(parse_read("explain", &a, &r, &err), CLI_USAGE, "'%s'", bad[i]);
		cr_assert(strstr(err, "--row needs a positive number"), "%s", err);
		free(err);
	}
	ARGV(a, "explain", "--token", "-5");
	cr_assert_eq(parse_read("explain", &a, &r, &err), CLI_USAGE);
	cr_assert(strstr(err, "--token needs a positive number, got '-5'"), "%s", err);
	free(err);
}

Test(cli_read_args, unexpected_argument_and_unknown_flag)
{
	targv a;
	cli_read_args r = { 0 };
	char *err;

	ARGV(a, "runs", "extra");
	cr_assert_eq(parse_read("runs", &a, &r, &err), CLI_USAGE);
	cr_assert(strstr(err, "elspeth runs: unexpected argument 'extra'"), "%s", err);
	free(err);
	ARGV(a, "verify", "--rows", "3");
	cr_assert_eq(parse_read("verify", &a, &r, &err), CLI_USAGE);
	cr_assert(strstr(err, "bad option '--rows'"), "%s", err);
	free(err);
}

/* cli.py, explain: -r --run, -t --token, -d --database, -s --settings,
 * --no-tui. */
Test(cli_read_args, short_flags_are_the_long_options)
{
	targv a, b; /* the options point into them */
	cli_read_args s = { .run = "latest" }, l = { .run = "latest" };
	char *err;

	ARGV(a, "explain", "-r", "3", "-t", "9", "-d", "db", "--no-tui");
	cr_assert_eq(parse_read("explain", &a, &s, &err), 0, "%s", err);
	free(err);
	ARGV(b, "explain", "--run", "3", "--token", "9", "--database", "db", "--no-tui");
	cr_assert_eq(parse_read("explain", &b, &l, &err), 0, "%s", err);
	free(err);
	cr_assert_str_eq(s.run, "3");
	cr_assert_str_eq(l.run, "3");
	cr_assert_eq(s.token, 9);
	cr_assert_eq(l.token, 9);
	cr_assert_str_eq(s.database, "db");
	cr_assert_str_eq(l.database, "db");
	cr_assert(s.no_tui && l.no_tui);
	cr_assert_not(s.json);
	cr_assert_eq(s.row, 0);

	/* glued values; runs and verify share -r and -d */
	memset(&s, 0, sizeof(s));
	ARGV(a, "verify", "-rlatest", "-ddb");
	cr_assert_eq(parse_read("verify", &a, &s, &err), 0, "%s", err);
	cr_assert_str_eq(s.run, "latest");
	cr_assert_str_eq(s.database, "db");
	free(err);
}

Test(cli_read_args, short_flag_errors)
{
	static const char *const flags[] = { "-r", "-t", "-d" };
	targv a;
	cli_read_args r;
	char *err;
	char want[64];

	for (size_t i = 0; i < 3; i++) {
		memset(&r, 0, sizeof(r));
		ARGV(a, "explain", "--row", "1", flags[i]);
		cr_assert_eq(parse_read("explain", &a, &r, &err), CLI_USAGE, "%s", flags[i]);
		snprintf(want, sizeof(want), "option '%s' needs a value", flags[i]);
		cr_assert(strstr(err, want), "%s", err);
		free(err);
	}
	memset(&r, 0, sizeof(r));
	ARGV(a, "explain", "-t", "tok-1");
	cr_assert_eq(parse_read("explain", &a, &r, &err), CLI_USAGE);
	cr_assert(strstr(err, "--token needs a positive number, got 'tok-1'"), "%s", err);
	free(err);
	ARGV(a, "explain", "--row", "1", "--no-tui=yes");
	cr_assert_eq(parse_read("explain", &a, &r, &err), CLI_USAGE);
	cr_assert(strstr(err, "bad option '--no-tui=yes'"), "%s", err);
	free(err);
}

/* --no-tui is explain's (ELSPETH has it nowhere else). */
Test(cli_read_args, no_tui_is_explain_only)
{
	static const char *const cmds[] = { "runs", "verify" };
	targv a;
	cli_read_args r;
	char *err;

	for (size_t i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		ARGV(a, cmds[i], "--no-tui");
		cr_assert_eq(parse_read(cmds[i], &a, &r, &err), CLI_USAGE, "%s", cmds[i]);
		cr_assert(strstr(err, "bad option '--no-tui'"), "%s", err);
		free(err);
	}
}

/* ---------------------------------------------------------------- main */

typedef struct ran {
	int rc;
	char *out, *err;
} ran;

static ran run_main(targv *a)
{
	capture ce, co;
	ran r;

	capture_begin(&ce, 2);
	capture_begin(&co, 1);
	r.rc = cli_main(a->argc, a->argv);
	r.out = capture_end(&co);
	r.err = capture_end(&ce);
	return r;
}

static void expect_main(targv *a, int rc, const char *out_needle, const char *err_needle)
{
	ran r = run_main(a);

	cr_assert_eq(r.rc, rc, "%s: exit %d, stderr: %s", a->argv[1], r.rc, r.err);
	if (out_needle)
		cr_assert(strstr(r.out, out_needle), "stdout '%s' lacks '%s'", r.out, out_needle);
	if (err_needle)
		cr_assert(strstr(r.err, err_needle), "stderr '%s' lacks '%s'", r.err, err_needle);
	free(r.out);
	free(r.err);
}

Test(cli_main, no_command_is_a_usage_error)
{
	targv a;

	mkargv(&a, "elspeth", (const char *)NULL);
	expect_main(&a, CLI_USAGE, NULL, "usage: elspeth COMMAND");
}

Test(cli_main, unknown_command_is_a_usage_error)
{
	targv a;

	ARGV(a, "elspeth", "frobnicate");
	expect_main(&a, CLI_USAGE, NULL, "elspeth: unknown command 'frobnicate'");
}

Test(cli_main, help_and_version)
{
	targv a;

	ARGV(a, "elspeth", "--help");
	expect_main(&a, CLI_OK, "Exit codes: 0 success, 1 error, 2 usage", NULL);
	ARGV(a, "elspeth", "--version");
	expect_main(&a, CLI_OK, "elspeth " ELSPETH_VERSION " (canonical hashing", NULL);
	ARGV(a, "elspeth", "run", "--help");
	expect_main(&a, CLI_OK, "usage: elspeth run -s SETTINGS", NULL);
	ARGV(a, "elspeth", "resume", "-h");
	expect_main(&a, CLI_OK, "usage: elspeth resume RUN_ID", NULL);
}

Test(cli_main, usage_errors_exit_2_before_anything_is_opened)
{
	targv a;

	/* the settings file does not exist: a usage error wins */
	ARGV(a, "elspeth", "run", "-s", "/nonexistent/p.yaml", "--max-rows-in-flight", "0");
	expect_main(&a, CLI_USAGE, NULL, "--max-rows-in-flight needs a positive integer");
	ARGV(a, "elspeth", "run", "-s", "/nonexistent/p.yaml", "--max-rows-in-flight", "5000");
	expect_main(&a, CLI_USAGE, NULL, "at most 4096, got 5000");
	ARGV(a, "elspeth", "run", "-s", "/nonexistent/p.yaml", "--format", "yaml");
	expect_main(&a, CLI_USAGE, NULL, "--format is console, text or json");
	ARGV(a, "elspeth", "validate");
	expect_main(&a, CLI_USAGE, NULL, "elspeth validate: expected -s SETTINGS");
	ARGV(a, "elspeth", "validate", "-s", "p.yaml", "--execute");
	expect_main(&a, CLI_USAGE, NULL, "bad option '--execute'");
	ARGV(a, "elspeth", "plugins");
	expect_main(&a, CLI_USAGE, NULL, "elspeth plugins: expected 'list'");
	ARGV(a, "elspeth", "explain", "--database", "/nonexistent");
	expect_main(&a, CLI_USAGE, NULL, "give exactly one of --row SEQ or --token ID");
	ARGV(a, "elspeth", "explain", "--database", "/nonexistent", "--row", "1", "--token", "2");
	expect_main(&a, CLI_USAGE, NULL, "give exactly one of --row SEQ or --token ID");
	ARGV(a, "elspeth", "verify", "--bogus");
	expect_main(&a, CLI_USAGE, NULL, "elspeth verify: bad option '--bogus'");
}

Test(cli_main, missing_settings_file_is_an_error_not_usage)
{
	targv a;

	ARGV(a, "elspeth", "run", "-s", "/nonexistent/p.yaml");
	expect_main(&a, CLI_ERROR, NULL, "error: ");
	ARGV(a, "elspeth", "validate", "-s", "/nonexistent/p.yaml");
	expect_main(&a, CLI_ERROR, NULL, "error: ");
}

Test(cli_main, plugins_list)
{
	targv a;

	ARGV(a, "elspeth", "plugins", "list");
	expect_main(&a, CLI_OK, "Transforms:\n  passthrough", NULL);
}

/* cli.py, plugins list: -t --type. Ours also has aggregation, which
 * ELSPETH lists among the transforms. */
Test(cli_main, plugins_list_by_type)
{
	targv a;
	ran r;

	ARGV(a, "elspeth", "plugins", "list", "-t", "source");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "%s", r.err);
	cr_assert(strstr(r.out, "Sources:\n  csv"), "%s", r.out);
	cr_assert_null(strstr(r.out, "Transforms:"), "%s", r.out);
	cr_assert_null(strstr(r.out, "Sinks:"), "%s", r.out);
	cr_assert_null(strstr(r.out, "Gates,"), "%s", r.out);
	free(r.out);
	free(r.err);
	ARGV(a, "elspeth", "plugins", "list", "--type", "transform");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "%s", r.err);
	cr_assert(strstr(r.out, "Transforms:\n  passthrough"), "%s", r.out);
	cr_assert(strstr(r.out, "Aggregations:\n  batch_stats"), "%s", r.out);
	cr_assert_null(strstr(r.out, "Sources:"), "%s", r.out);
	free(r.out);
	free(r.err);
	ARGV(a, "elspeth", "plugins", "list", "--type=sink");
	expect_main(&a, CLI_OK, "Sinks:\n  csv", NULL);
	ARGV(a, "elspeth", "plugins", "list", "-taggregation");
	expect_main(&a, CLI_OK, "Aggregations:\n  batch_stats", NULL);
	ARGV(a, "elspeth", "plugins", "list", "-t", "gate");
	expect_main(&a, CLI_USAGE, NULL,
		    "elspeth plugins: --type is source, transform, sink or aggregation, got 'gate'");
	ARGV(a, "elspeth", "plugins", "list", "-t");
	expect_main(&a, CLI_USAGE, NULL, "option '-t' needs a value");
	ARGV(a, "elspeth", "plugins", "list", "--bogus");
	expect_main(&a, CLI_USAGE, NULL, "bad option '--bogus'");
	ARGV(a, "elspeth", "plugins", "list", "extra");
	expect_main(&a, CLI_USAGE, NULL, "unexpected argument 'extra'");
	ARGV(a, "elspeth", "plugins", "list", "--help");
	expect_main(&a, CLI_OK, "-t, --type TYPE", NULL);
}

Test(cli_main, explain_no_tui_is_usage_checked_like_text)
{
	targv a;

	ARGV(a, "elspeth", "explain", "-d", "/nonexistent", "--no-tui");
	expect_main(&a, CLI_USAGE, NULL, "give exactly one of --row SEQ or --token ID");
	ARGV(a, "elspeth", "explain", "-d", "/nonexistent", "-r", "1", "-t", "2", "--no-tui");
	expect_main(&a, CLI_ERROR, NULL, "error: ");
}

/* ------------------------------------------------- options reach the run */

typedef struct tree {
	char root[64], settings[128];
} tree;

/* A CSV of 5 rows through passthrough into a CSV sink; audit off. */
static void make_tree(tree *t)
{
	char path[160];
	FILE *f;

	snprintf(t->root, sizeof(t->root), "/tmp/elspeth-cli-XXXXXX");
	cr_assert_not_null(mkdtemp(t->root));
	snprintf(path, sizeof(path), "%s/in.csv", t->root);
	cr_assert_not_null(f = fopen(path, "w"));
	fputs("id,name\n1,a\n2,b\n3,c\n4,d\n5,e\n", f);
	fclose(f);
	snprintf(t->settings, sizeof(t->settings), "%s/p.yaml", t->root);
	cr_assert_not_null(f = fopen(t->settings, "w"));
	fprintf(f, "landscape: {enabled: false}\n"
		"concurrency: {pipelining: {max_rows_in_flight: 5}}\n"
		"source:\n"
		"  plugin: csv\n"
		"  on_success: t_in\n"
		"  options: {path: %s/in.csv, schema: {mode: fixed, fields: ['id: int', 'name: str']},\n"
		"            on_validation_failure: discard}\n"
		"transforms:\n"
		"  - {name: t, plugin: passthrough, input: t_in, on_success: out}\n"
		"sinks:\n"
		"  out: {plugin: csv, options: {path: %s/out.csv}}\n", t->root, t->root);
	fclose(f);
}

static void remove_tree(tree *t)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/in.csv", t->root);
	unlink(path);
	snprintf(path, sizeof(path), "%s/out.csv", t->root);
	unlink(path);
	unlink(t->settings);
	rmdir(t->root);
}

/* The run_completed event of a --format json run. */
static json_t *completed_event(const char *out)
{
	const char *line = strstr(out, "{\"event\":\"run_completed\"");
	json_error_t je;
	json_t *e;

	cr_assert_not_null(line, "no run_completed event in: %s", out);
	e = json_loads(line, JSON_DISABLE_EOF_CHECK, &je);
	cr_assert_not_null(e, "%s", je.text);
	return e;
}

static long long rows_in_flight_used(tree *t, const char *flag, const char *value)
{
	targv a;
	ran r;
	json_t *e;
	long long n;

	if (value)
		ARGV(a, "elspeth", "run", "-s", t->settings, "--execute", "--format", "json",
		     flag, value);
	else if (flag)
		ARGV(a, "elspeth", "run", "-s", t->settings, "--execute", "--format", "json",
		     flag);
	else
		ARGV(a, "elspeth", "run", "-s", t->settings, "--execute", "--format", "json");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "{\"event\":\"phase_started\""), "%s", r.out);
	e = completed_event(r.out);
	cr_assert_eq(json_integer_value(json_object_get(e, "rows")), 5);
	cr_assert_str_eq(json_string_value(json_object_get(e, "status")), "completed");
	n = (long long)json_integer_value(json_object_get(e, "max_rows_in_flight"));
	json_decref(e);
	free(r.out);
	free(r.err);
	return n;
}

Test(cli_main, rows_in_flight_options_reach_the_run)
{
	tree t;

	make_tree(&t);
	cr_assert_eq(rows_in_flight_used(&t, NULL, NULL), 5, "from the settings");
	cr_assert_eq(rows_in_flight_used(&t, "--sequential", NULL), 1);
	cr_assert_eq(rows_in_flight_used(&t, "--max-rows-in-flight", "3"), 3);
	remove_tree(&t);
}

Test(cli_main, without_execute_nothing_runs)
{
	tree t;
	targv a;
	char out[160];

	make_tree(&t);
	ARGV(a, "elspeth", "run", "-s", t.settings, "--sequential");
	expect_main(&a, CLI_OK, "Validation passed; nothing was run", NULL);
	snprintf(out, sizeof(out), "%s/out.csv", t.root);
	cr_assert_neq(access(out, F_OK), 0, "no output written");
	remove_tree(&t);
}

/* -x -f json is --execute --format json: the same events. */
Test(cli_main, short_flags_reach_the_run)
{
	tree t;
	targv a;
	ran r;
	json_t *e;

	make_tree(&t);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-x", "-f", "json");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "{\"event\":\"phase_started\""), "%s", r.out);
	e = completed_event(r.out);
	cr_assert_eq(json_integer_value(json_object_get(e, "rows")), 5);
	cr_assert_eq(json_integer_value(json_object_get(e, "max_rows_in_flight")), 5);
	json_decref(e);
	free(r.out);
	free(r.err);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-x", "-f", "console");
	expect_main(&a, CLI_OK, "Run completed: 5 rows", NULL);
	remove_tree(&t);
}

/* -n wins over -x: the pipeline is shown, nothing runs (ELSPETH checks
 * dry_run before execute). */
Test(cli_main, dry_run_runs_nothing_even_with_execute)
{
	tree t;
	targv a;
	char out[160];

	make_tree(&t);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-n", "-x");
	expect_main(&a, CLI_OK, "Dry run (--dry-run): validation passed; nothing was run.", NULL);
	ARGV(a, "elspeth", "run", "-s", t.settings, "--dry-run", "--execute", "-v");
	expect_main(&a, CLI_OK, "Transform: t [passthrough] -> out", NULL);
	snprintf(out, sizeof(out), "%s/out.csv", t.root);
	cr_assert_neq(access(out, F_OK), 0, "no output written");
	remove_tree(&t);
}

/* -v: the pipeline before the run, its metrics and outcomes after; the
 * JSON stream stays JSON. */
Test(cli_main, verbose_shows_the_pipeline_and_its_metrics)
{
	tree t;
	targv a;
	ran r;

	make_tree(&t);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-x", "-v");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "stderr: %s", r.err);
	cr_assert(strstr(r.out, "Graph: 3 nodes, 2 edges\nStarting pipeline execution...\n"
			 "Run completed: 5 rows"), "%s", r.out);
	cr_assert(strstr(r.out, "  pipeline: 5 rows pulled in "), "%s", r.out);
	cr_assert(strstr(r.out, "in flight at most 5 (peak "), "%s", r.out);
	cr_assert(strstr(r.out, "  outcomes: COMPLETED 5\n"), "%s", r.out);
	free(r.out);
	free(r.err);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-x");
	r = run_main(&a);
	cr_assert_null(strstr(r.out, "Starting pipeline execution"), "%s", r.out);
	cr_assert_null(strstr(r.out, "outcomes:"), "%s", r.out);
	free(r.out);
	free(r.err);
	ARGV(a, "elspeth", "run", "-s", t.settings, "-x", "-v", "-f", "json");
	r = run_main(&a);
	cr_assert_eq(r.rc, CLI_OK, "stderr: %s", r.err);
	for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n"))
		cr_assert_eq(line[0], '{', "not JSON: %s", line);
	free(r.out);
	free(r.err);
	remove_tree(&t);
}

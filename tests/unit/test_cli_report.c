/* test_cli_report.c — `elspeth report`'s options (cli/cmd_report.c):
 * each option, the defaults the caller sets kept, --rows from 1 to
 * 1000, -s with -d refused, stray arguments and missing values are
 * usage errors, --help; and through cli_main, a trail that is not there
 * is an error (exit 1), not a page. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cli/cli.h"
#include "test_cli_util.h"

TestSuite(cli_report, .timeout = 30);

static int parse(targv *t, cli_report_args *a)
{
	*a = (cli_report_args){ .run = "latest", .output = "report.html" };
	return cli_parse_report_args(t->argc, t->argv, a);
}

Test(cli_report, every_option)
{
	cli_report_args a;
	targv t;

	ARGV(t, "report", "-r", "7", "-o", "out.html", "--rows", "50", "-d", "state/x");
	cr_assert_eq(parse(&t, &a), 0);
	cr_assert_str_eq(a.run, "7");
	cr_assert_str_eq(a.output, "out.html");
	cr_assert_eq(a.rows, 50);
	cr_assert_str_eq(a.database, "state/x");
	cr_assert_null(a.settings);
	ARGV(t, "report", "--run", "latest", "--output", "-", "--settings", "p.yaml");
	cr_assert_eq(parse(&t, &a), 0);
	cr_assert_str_eq(a.output, "-");
	cr_assert_str_eq(a.settings, "p.yaml");
	cr_assert_eq(a.rows, 0, "the default is the report's");
}

Test(cli_report, defaults_are_kept)
{
	cli_report_args a;
	targv t;

	ARGV(t, "report");
	cr_assert_eq(parse(&t, &a), 0);
	cr_assert_str_eq(a.run, "latest");
	cr_assert_str_eq(a.output, "report.html");
}

Test(cli_report, usage_errors)
{
	static const char *const bad[][6] = {
		{ "report", "--rows", "0" },
		{ "report", "--rows", "1001" },
		{ "report", "--rows", "ten" },
		{ "report", "-s", "p.yaml", "-d", "state" },
		{ "report", "extra" },
		{ "report", "-o" },
		{ "report", "-o", "" },
		{ "report", "--format", "json" },
	};
	cli_report_args a;
	targv t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mkargv(&t, bad[i][0], bad[i][1], bad[i][2], bad[i][3], bad[i][4], bad[i][5]);
		cr_assert_eq(parse(&t, &a), CLI_USAGE, "case %zu", i);
	}
	ARGV(t, "report", "--rows", "1000");
	cr_assert_eq(parse(&t, &a), 0);
	cr_assert_eq(a.rows, 1000);
}

Test(cli_report, help_is_not_an_error)
{
	cli_report_args a;
	targv t;

	ARGV(t, "report", "--help");
	cr_assert_eq(parse(&t, &a), -1);
}

Test(cli_report, a_missing_trail_is_an_error)
{
	targv t;

	ARGV(t, "elspeth", "report", "-d", "/nonexistent/elspeth-trail", "-o", "/tmp/never.html");
	cr_assert_eq(cli_main(t.argc, t.argv), CLI_ERROR);
	cr_assert_neq(access("/tmp/never.html", F_OK), 0, "no page written");
}

/* test_cli_util.h — argv for the CLI's unit tests: a mutable,
 * NULL-terminated copy (getopt_long permutes it), getopt reset. */
#ifndef ELSPETH_TEST_CLI_UTIL_H
#define ELSPETH_TEST_CLI_UTIL_H

#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#include <criterion/criterion.h>

typedef struct targv {
	int argc;
	char *argv[24];
	char buf[2048];
} targv;

static inline char **mkargv(targv *a, const char *first, ...)
{
	size_t used = 0;
	const char *s;
	va_list ap;

	a->argc = 0;
	va_start(ap, first);
	for (s = first; s; s = va_arg(ap, const char *)) {
		size_t n = strlen(s) + 1;

		cr_assert_lt(a->argc, 23);
		cr_assert_leq(used + n, sizeof(a->buf));
		memcpy(a->buf + used, s, n);
		a->argv[a->argc++] = a->buf + used;
		used += n;
	}
	va_end(ap);
	a->argv[a->argc] = NULL;
	optind = 0; /* glibc: start getopt afresh */
	return a->argv;
}

#define ARGV(a, ...) mkargv(&(a), __VA_ARGS__, (const char *)NULL)

#endif

/*
 * failread.c — a test shim (LD_PRELOAD) for a read error in the middle of
 * a source file, which no real file can be made to produce on demand.
 *
 * With ELSPETH_TEST_GETDELIM_FAIL=N set, the Nth call of getdelim(3) in
 * the process (the CSV reader's; the header is call 1) and every later
 * one fail with EIO, and ferror(3) then reports an error on that stream.
 * Unset, both pass straight through. The CSV source has one caller at a
 * time (the pull role, handed over under the pipeline lock), so the
 * counter needs no lock of its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

static FILE *failed;

ssize_t getdelim(char **line, size_t *cap, int delim, FILE *fp)
{
	static ssize_t (*real)(char **, size_t *, int, FILE *);
	static long calls, fail_at = -1;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "getdelim");
	if (fail_at < 0) {
		const char *e = getenv("ELSPETH_TEST_GETDELIM_FAIL");

		fail_at = e ? atol(e) : 0;
	}
	if (fail_at > 0 && ++calls >= fail_at) {
		failed = fp;
		errno = EIO;
		return -1;
	}
	return real(line, cap, delim, fp);
}

int ferror(FILE *fp)
{
	static int (*real)(FILE *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ferror");
	return fp && fp == failed ? 1 : real(fp);
}

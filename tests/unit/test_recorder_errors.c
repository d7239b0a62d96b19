/* test_recorder_errors.c — the codes the recorder can return: each has a
 * range of its own and a message from core_strerror (ours, LMDB's once an
 * environment is open, errno's), and "not found", "stopped early" and an
 * error are three different answers of rec_get and rec_scan. */
#include <errno.h>
#include <limits.h>

#include <lmdb.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_util.h"

/* The message of code, checked to be a usable string. */
static const char *message(int code)
{
	const char *s = core_strerror(code);

	cr_assert_not_null(s, "core_strerror(%d) is NULL", code);
	cr_assert(s[0], "core_strerror(%d) is empty", code);
	return s;
}

/* strerror's text for a number, copied (strerror may reuse a buffer). */
static void errno_text(int code, char *buf, size_t n)
{
	snprintf(buf, n, "%s", strerror(code));
}

Test(errors, ranges_do_not_meet)
{
	cr_assert_lt(CORE_ERR_FIRST, CORE_ERR_LAST);
	cr_assert_leq(CORE_ERR_LAST, CORE_LMDB_FIRST, "ours reach LMDB's");
	cr_assert_geq(MDB_KEYEXIST, CORE_LMDB_FIRST);
	cr_assert_leq(MDB_LAST_ERRCODE, CORE_LMDB_LAST);
	cr_assert_lt(CORE_LMDB_LAST, 0, "LMDB's reach errno's");
	/* Not found and stop are ours, two values, neither 1 (EPERM). */
	cr_assert_neq(REC_NOTFOUND, REC_SCAN_STOP);
	cr_assert_neq(REC_NOTFOUND, 1);
	cr_assert_neq(REC_SCAN_STOP, 1);
	cr_assert(REC_NOTFOUND >= CORE_ERR_FIRST && REC_NOTFOUND < CORE_ERR_LAST);
	cr_assert(REC_SCAN_STOP >= CORE_ERR_FIRST && REC_SCAN_STOP < CORE_ERR_LAST);
}

Test(errors, every_core_code_has_its_own_message)
{
	char err_text[256];

	for (int c = CORE_ERR_FIRST; c < CORE_ERR_LAST; c++) {
		const char *s = message(c);

		errno_text(c, err_text, sizeof(err_text));
		cr_assert_str_neq(s, err_text, "code %d reads like errno %d", c, c);
		cr_assert_str_neq(s, "unknown error", "code %d has no case", c);
		cr_assert_str_neq(s, message(CORE_OK), "code %d reads like success", c);
		for (int d = CORE_ERR_FIRST; d < c; d++)
			cr_assert_str_neq(s, core_strerror(d), "codes %d and %d "
					  "read alike: %s", d, c, s);
	}
	cr_assert_str_eq(message(CORE_OK), "success");
	cr_assert_str_eq(message(REC_NOTFOUND), "not found");
}

Test(errors, errno_values_read_as_strerror)
{
	char want[256];

	for (int e = 1; e < 134; e++) {
		errno_text(e, want, sizeof(want));
		cr_assert_str_eq(message(e), want, "errno %d", e);
	}
	errno_text(EPERM, want, sizeof(want));
	cr_assert_str_neq(message(REC_NOTFOUND), want, "not found is not EPERM");
}

Test(errors, values_in_no_range_are_unknown)
{
	static const int none[] = { -1, -2, -30800, CORE_LMDB_LAST + 1, CORE_ERR_LAST,
				    CORE_ERR_FIRST - 1, -30850, INT_MIN };

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		cr_assert_str_eq(message(none[i]), "unknown error", "%d", none[i]);
}

/* Each test runs in its own process: here no environment was opened, so
 * LMDB's messages are not registered, and its codes still read as
 * something. */
Test(errors, lmdb_codes_read_before_any_open)
{
	for (int c = MDB_KEYEXIST; c <= MDB_LAST_ERRCODE; c++)
		cr_assert_str_eq(message(c), "audit trail storage (LMDB) error",
				 "%d", c);
}

Test(errors, lmdb_codes_read_as_lmdb_once_open, .timeout = TIMEOUT)
{
	char err_text[256];
	rec_env *env;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (int c = MDB_KEYEXIST; c <= MDB_LAST_ERRCODE; c++) {
		errno_text(c, err_text, sizeof(err_text));
		cr_assert_str_eq(message(c), mdb_strerror(c), "%d", c);
		cr_assert_str_neq(message(c), err_text, "%d", c);
		for (int o = CORE_ERR_FIRST; o < CORE_ERR_LAST; o++)
			cr_assert_str_neq(message(c), core_strerror(o), "%d, %d", c, o);
	}
	/* Still errno's and ours. */
	errno_text(ENOSPC, err_text, sizeof(err_text));
	cr_assert_str_eq(message(ENOSPC), err_text);
	cr_assert_str_eq(message(CORE_ENOMEM), "out of memory");
	env_close(env);
	tdir_remove(&d);
}

Test(errors, get_says_found_not_found_or_error, .timeout = TIMEOUT)
{
	rec_key k = key2(1, 1), absent = key2(1, 2), empty = { .len = 0 };
	const void *v;
	rec_env *env;
	rec_txn *t;
	size_t n;
	int rc;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, "one", 3), 0);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_BATCHES, &k, &v, &n), 0);
	cr_assert_eq(rec_get(t, REC_BATCHES, &absent, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_BATCHES, &absent, &v, &n, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_get_payload(t, "00000000000000000000000000000000"
				     "00000000000000000000000000000000", &v, &n),
		     REC_NOTFOUND);
	cr_assert_eq(rec_get(t, REC_TABLE_LAST, &k, &v, &n), CORE_EINTERNAL);
	/* LMDB refuses an empty key: its code, which core_strerror knows. */
	rc = rec_get(t, REC_BATCHES, &empty, &v, &n);
	cr_assert(rc != 0 && rc != REC_NOTFOUND, "%d", rc);
	cr_assert_str_eq(message(rc), mdb_strerror(rc));
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

typedef struct scan_state {
	int at;       /* keys seen */
	int stop_at;  /* return `ret` at this key (from 1) */
	int ret;
} scan_state;

static int scan_fn(void *ctx, const void *k, size_t kl, const void *v,
		   size_t vl)
{
	scan_state *s = ctx;

	(void)k, (void)kl, (void)v, (void)vl;
	return ++s->at == s->stop_at ? s->ret : 0;
}

static int scan_table(rec_txn *t, rec_table tab, const rec_key *prefix,
		      int stop_at, int ret, int *seen)
{
	scan_state s = { .stop_at = stop_at, .ret = ret };
	int rc = rec_scan(t, tab, prefix, scan_fn, &s);

	*seen = s.at;
	return rc;
}

static int scan(rec_txn *t, const rec_key *prefix, int stop_at, int ret,
		int *seen)
{
	return scan_table(t, REC_BATCHES, prefix, stop_at, ret, seen);
}

Test(errors, scan_says_end_stop_or_error, .timeout = TIMEOUT)
{
	rec_key k, none = key1(9);
	rec_env *env;
	rec_txn *t;
	int seen;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (uint64_t i = 1; i <= 5; i++) {
		k = key2(1, i);
		cr_assert_eq(rec_put(env, REC_BATCHES, &k, "x", 1), 0);
	}
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(scan(t, NULL, 0, 0, &seen), 0, "the end");
	cr_assert_eq(seen, 5);
	cr_assert_eq(scan(t, &none, 0, 0, &seen), 0, "nothing to scan");
	cr_assert_eq(seen, 0);
	cr_assert_eq(scan(t, NULL, 2, REC_SCAN_STOP, &seen), REC_SCAN_STOP);
	cr_assert_eq(seen, 2, "stopped at once");
	cr_assert_eq(scan(t, NULL, 3, CORE_ENOMEM, &seen), CORE_ENOMEM);
	cr_assert_eq(seen, 3);
	cr_assert_eq(scan(t, NULL, 1, EIO, &seen), EIO);
	cr_assert_eq(seen, 1);
	cr_assert_eq(scan(t, NULL, 5, REC_SCAN_STOP, &seen), REC_SCAN_STOP,
		     "a stop at the last key is still a stop");
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

/* The same three answers from a per-row table, read from the row
 * stories: 5 rows of run 1, each in its own story. */
Test(errors, story_reads_say_found_not_found_stop_or_error, .timeout = TIMEOUT)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	rec_key run = key1(1), none = key1(9), k = key2(1, 3), absent = key2(1, 6);
	const void *v;
	rec_env *env;
	rec_txn *t;
	size_t n;
	int seen;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (uint64_t i = 1; i <= 5; i++) {
		r.run_id = 1;
		r.row_id = r.seq = i;
		story_put(env, 1, i, &r.base);
		story_seal(env, 1, i);
	}
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_ROWS, &k, &v, &n), 0);
	cr_assert_eq(rec_get(t, REC_ROWS, &absent, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_get(t, REC_TOKENS, &k, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_ROWS, &absent, &v, &n, &v, &n), REC_NOTFOUND);
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 0, 0, &seen), 0, "the end");
	cr_assert_eq(seen, 5);
	cr_assert_eq(scan_table(t, REC_ROWS, &none, 0, 0, &seen), 0, "nothing to scan");
	cr_assert_eq(seen, 0);
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 2, REC_SCAN_STOP, &seen), REC_SCAN_STOP);
	cr_assert_eq(seen, 2, "stopped at once");
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 3, CORE_ENOMEM, &seen), CORE_ENOMEM);
	cr_assert_eq(seen, 3);
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 1, EIO, &seen), EIO);
	cr_assert_eq(seen, 1);
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 5, REC_SCAN_STOP, &seen), REC_SCAN_STOP,
		     "a stop at the last key is still a stop");
	cr_assert_eq(scan_table(t, REC_ROWS, &run, 5, EIO, &seen), EIO,
		     "an error at the last row is still an error");
	/* A prefix naming one row. */
	cr_assert_eq(scan_table(t, REC_ROWS, &k, 1, REC_SCAN_STOP, &seen), REC_SCAN_STOP);
	cr_assert_eq(seen, 1);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(errors, checkpoint_not_found_is_said, .timeout = TIMEOUT)
{
	Elspeth__Checkpoint *c = NULL;
	core_err err = { 0 };
	rec_env *env;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_ckpt_load(env, 1, &c, &err), REC_NOTFOUND);
	cr_assert_null(c);
	cr_assert_eq(err.code, REC_NOTFOUND);
	cr_assert(strstr(err.msg, "has no checkpoint"), "%s", err.msg);
	env_close(env);
	tdir_remove(&d);
}

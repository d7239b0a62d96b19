/* test_recorder_crash.c — SIGKILL durability: a writer killed at a random
 * moment leaves an environment that opens cleanly and holds every record
 * up to its last rec_flush, intact. */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_util.h"

#define KILLS 5
#define FLUSH_EVERY 1000

/* Record n: 24..535 bytes derived from n. */
static size_t record(uint64_t n, uint8_t *buf)
{
	size_t len = 24 + (size_t)(n * 2654435761u % 512);

	fill_bytes(n, buf, len);
	return len;
}

/* Writes records 1, 2, ... forever; after each FLUSH_EVERY-th record,
 * flushes and reports its number on fd. */
static int crash_child(const char *path, int fd)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t buf[600];
	core_err err = { 0 };
	rec_env *env;
	uint64_t n;
	size_t len;
	rec_key k;

	if (rec_open(path, 0, &env, &err))
		return 10;
	for (n = 1;; n++) {
		len = record(n, buf);
		k = key2(1, n);
		if (rec_put(env, REC_ROWS, &k, buf, len) ||
		    rec_put(env, REC_TOKENS, &k, &n, sizeof(n)) ||
		    rec_put_payload(env, buf, len, hex))
			return 11;
		if (n % FLUSH_EVERY)
			continue;
		if (rec_flush(env, &err))
			return 12;
		if (write(fd, &n, sizeof(n)) != sizeof(n))
			return 13;
	}
}

static int intact_fn(void *ctx, const void *k, size_t kl, const void *v,
		     size_t vl)
{
	uint8_t want[600];
	uint64_t n;

	(void)ctx;
	cr_assert_eq(kl, 16);
	n = rec_key_get_u64(k, 8);
	cr_assert_eq(vl, record(n, want), "record %llu: length",
		     (unsigned long long)n);
	cr_assert_eq(memcmp(v, want, vl), 0, "record %llu: content",
		     (unsigned long long)n);
	return 0;
}

/* Opens the killed writer's environment and checks it; returns how many
 * rows it holds. */
static uint64_t check_after_kill(const char *path, uint64_t flushed)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t want[600], sum[CORE_SHA256_LEN];
	const void *v;
	uint64_t n, rows;
	size_t len, vl;
	MDB_stat st;
	rec_env *env;
	rec_txn *t;
	rec_key k;
	int tab;

	env = env_open(path, 0);
	cr_assert_eq(mdb_env_stat(env->mdb, &st), 0);
	t = txn_begin(env);
	for (tab = 0; tab < REC_TABLE_LAST; tab++)
		count_keys(t, tab, NULL);
	rows = count_keys(t, REC_ROWS, NULL);
	cr_assert_geq(rows, flushed, "rows %llu < flushed %llu",
		      (unsigned long long)rows, (unsigned long long)flushed);
	cr_assert_eq(rec_scan(t, REC_ROWS, NULL, intact_fn, NULL), 0);
	for (n = 1; n <= flushed; n++) {
		k = key2(1, n);
		len = record(n, want);
		cr_assert_eq(rec_get(t, REC_ROWS, &k, &v, &vl), 0, "row %llu",
			     (unsigned long long)n);
		cr_assert_eq(rec_get(t, REC_TOKENS, &k, &v, &vl), 0);
		cr_assert_eq(vl, 8);
		core_sha256(want, len, sum);
		core_hex(sum, sizeof(sum), hex);
		cr_assert_eq(rec_get_payload(t, hex, &v, &vl), 0);
		cr_assert_eq(vl, len);
		cr_assert_eq(memcmp(v, want, len), 0);
	}
	rec_read_end(t);
	env_close(env);
	return rows;
}

static uint64_t last_reported(int fd)
{
	uint64_t n, last = 0;

	while (read(fd, &n, sizeof(n)) == sizeof(n))
		last = n;
	return last;
}

Test(recorder, sigkill_loses_nothing_flushed, .timeout = TIMEOUT)
{
	int fds[2], status, i;
	uint64_t flushed, rows;
	const char *s = getenv("ELSPETH_TEST_SEED");
	unsigned seed = s ? (unsigned)atoi(s) : (unsigned)time(NULL);
	pid_t pid;
	tdir d;

	fprintf(stderr, "sigkill test seed %u (ELSPETH_TEST_SEED)\n", seed);
	srand(seed);
	for (i = 0; i < KILLS; i++) {
		tdir_make(&d);
		cr_assert_eq(pipe(fds), 0);
		pid = fork();
		cr_assert_neq(pid, -1);
		if (pid == 0) {
			close(fds[0]);
			_exit(crash_child(d.path, fds[1]));
		}
		close(fds[1]);
		usleep(100000 + (useconds_t)(rand() % 700000));
		cr_assert_eq(kill(pid, SIGKILL), 0);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
			  "the writer stopped before the kill: status %d", status);
		flushed = last_reported(fds[0]);
		close(fds[0]);
		rows = check_after_kill(d.path, flushed);
		fprintf(stderr, "kill %d: last flushed %llu, rows present %llu\n",
			i, (unsigned long long)flushed, (unsigned long long)rows);
		tdir_remove(&d);
	}
}

/* test_recorder_crash.c — SIGKILL durability: a writer killed at a random
 * moment leaves an environment that opens cleanly and holds every record
 * up to its last rec_flush, intact: the records of a table (`batches`),
 * the payloads and the row stories (each row's record and payload, sealed
 * before the flush). */
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

/* Row n's payload in its story: other bytes than record n's (which is
 * in the payload table), so that finding it proves the story has it. */
static size_t story_bytes(uint64_t n, uint8_t *buf)
{
	size_t len = 16 + (size_t)(n * 40503u % 256);

	fill_bytes(n | (uint64_t)1 << 40, buf, len);
	return len;
}

/* Row n's story: its RowRecord naming its payload, sealed. */
static int story_write(rec_env *env, uint64_t n)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t buf[300];
	size_t len = story_bytes(n, buf);

	if (rec_story_payload(env, 1, n, buf, len, hex))
		return 1;
	r.run_id = 1;
	r.row_id = r.seq = n;
	r.source_hash = r.payload_ref = hex;
	r.where = "line";
	return rec_story_put(env, 1, n, &r.base) || rec_story_seal(env, 1, n);
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
		if (rec_put(env, REC_BATCHES, &k, buf, len) ||
		    rec_put(env, REC_SUPERSEDED, &k, &n, sizeof(n)) ||
		    rec_put_payload(env, buf, len, hex) || story_write(env, n))
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

/* Row n's story holds its RowRecord and, while it is read, its payload. */
static void story_check(rec_txn *t, uint64_t n, const void *v, size_t vl)
{
	Elspeth__RowRecord *r = elspeth__row_record__unpack(NULL, vl, v);
	uint8_t want[300], sum[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];
	size_t len = story_bytes(n, want), pl;
	const void *p;

	cr_assert_not_null(r, "row %llu: undecodable", (unsigned long long)n);
	cr_assert_eq(r->seq, n);
	core_sha256(want, len, sum);
	core_hex(sum, sizeof(sum), hex);
	cr_assert_str_eq(r->payload_ref, hex);
	cr_assert_eq(rec_get_payload(t, hex, &p, &pl), 0, "row %llu: payload",
		     (unsigned long long)n);
	cr_assert_eq(pl, len);
	cr_assert_eq(memcmp(p, want, len), 0);
	elspeth__row_record__free_unpacked(r, NULL);
}

static int story_fn(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	cr_assert_eq(kl, 16);
	story_check(ctx, rec_key_get_u64(k, 8), v, vl);
	return 0;
}

/* Opens the killed writer's environment and checks it; returns how many
 * records it holds. */
static uint64_t check_after_kill(const char *path, uint64_t flushed)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t want[600], sum[CORE_SHA256_LEN];
	const void *v;
	rec_key k, run = key1(1);
	uint64_t n, rows, stories;
	size_t len, vl;
	MDB_stat st;
	rec_env *env;
	rec_txn *t;
	int tab;

	env = env_open(path, 0);
	cr_assert_eq(mdb_env_stat(env->mdb, &st), 0);
	t = txn_begin(env);
	for (tab = 0; tab < REC_TABLE_LAST; tab++) /* every table reads */
		count_keys(t, tab, rec__table_in_story(tab) ? &run : NULL);
	rows = count_keys(t, REC_BATCHES, NULL);
	cr_assert_geq(rows, flushed, "records %llu < flushed %llu",
		      (unsigned long long)rows, (unsigned long long)flushed);
	cr_assert_eq(rec_scan(t, REC_BATCHES, NULL, intact_fn, NULL), 0);
	stories = count_keys(t, REC_ROWS, &run);
	cr_assert_geq(stories, flushed, "stories %llu < flushed %llu",
		      (unsigned long long)stories, (unsigned long long)flushed);
	cr_assert_eq(rec_scan(t, REC_ROWS, &run, story_fn, t), 0);
	for (n = 1; n <= flushed; n++) {
		k = key2(1, n);
		len = record(n, want);
		cr_assert_eq(rec_get(t, REC_BATCHES, &k, &v, &vl), 0, "record %llu",
			     (unsigned long long)n);
		cr_assert_eq(rec_get(t, REC_SUPERSEDED, &k, &v, &vl), 0);
		cr_assert_eq(vl, 8);
		core_sha256(want, len, sum);
		core_hex(sum, sizeof(sum), hex);
		cr_assert_eq(rec_get_payload(t, hex, &v, &vl), 0);
		cr_assert_eq(vl, len);
		cr_assert_eq(memcmp(v, want, len), 0);
		cr_assert_eq(rec_get(t, REC_ROWS, &k, &v, &vl), 0, "row %llu",
			     (unsigned long long)n);
		story_check(t, n, v, vl);
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
		fprintf(stderr, "kill %d: last flushed %llu, records present %llu\n",
			i, (unsigned long long)flushed, (unsigned long long)rows);
		tdir_remove(&d);
	}
}

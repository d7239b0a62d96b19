/* test_recorder_writer.c — the writer thread: group commit under many
 * producers, map growth, and a reader process while writing. */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_util.h"

#define PRODUCERS 8
#define PUTS_EACH 20000
#define VLEN 40

typedef struct producer {
	rec_env *env;
	uint32_t id;
	int rc;
} producer;

static void *produce(void *arg)
{
	producer *p = arg;
	uint8_t v[VLEN];
	core_err err;
	uint64_t i;
	rec_key k;

	for (i = 0; i < PUTS_EACH && !p->rc; i++) {
		rec_key_init(&k);
		rec_key_u32(&k, p->id);
		rec_key_u64(&k, i);
		fill_bytes((uint64_t)p->id << 32 | i, v, sizeof(v));
		p->rc = rec_put(p->env, REC_SAMPLES, &k, v, sizeof(v));
		if (i % 5000 == 4999 && !p->rc)
			p->rc = rec_flush(p->env, &err);
	}
	return NULL;
}

static int check_fn(void *ctx, const void *k, size_t kl, const void *v,
		    size_t vl)
{
	uint8_t want[VLEN];
	uint32_t id = rec_key_get_u32(k, 0);

	(void)ctx;
	if (kl != 12 || vl != VLEN)
		return CORE_EDATA;
	fill_bytes((uint64_t)id << 32 | rec_key_get_u64(k, 4), want, VLEN);
	return memcmp(v, want, VLEN) ? CORE_EDATA : 0;
}

Test(recorder, group_commit_many_producers, .timeout = TIMEOUT)
{
	pthread_t th[PRODUCERS];
	producer p[PRODUCERS];
	rec__stats st;
	uint64_t t0, t1;
	rec_env *env;
	rec_txn *t;
	rec_key pre;
	int i;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	t0 = core_now_mono_ns();
	for (i = 0; i < PRODUCERS; i++) {
		p[i] = (producer){ .env = env, .id = (uint32_t)i };
		cr_assert_eq(pthread_create(&th[i], NULL, produce, &p[i]), 0);
	}
	for (i = 0; i < PRODUCERS; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(p[i].rc, 0, "producer %d: %d", i, p[i].rc);
	}
	env_flush(env);
	t1 = core_now_mono_ns();
	rec__stats_get(env, &st);
	fprintf(stderr, "group commit: %d puts in %.3f s = %.0f puts/s; %llu "
		    "commits (avg %.0f, max %llu puts each), %llu fsyncs\n",
		    PRODUCERS * PUTS_EACH, (double)(t1 - t0) / 1e9,
		    PRODUCERS * PUTS_EACH / ((double)(t1 - t0) / 1e9),
		    (unsigned long long)st.commits,
		    (double)st.ops / (double)(st.commits ? st.commits : 1),
		    (unsigned long long)st.max_ops,
		    (unsigned long long)st.syncs);
	cr_assert_eq(st.ops, PRODUCERS * PUTS_EACH);
	cr_assert_lt(st.commits, st.ops, "puts must be grouped into commits");

	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_SAMPLES, NULL), PRODUCERS * PUTS_EACH);
	rec_key_init(&pre);
	rec_key_u32(&pre, 3);
	cr_assert_eq(count_keys(t, REC_SAMPLES, &pre), PUTS_EACH);
	cr_assert_eq(rec_scan(t, REC_SAMPLES, NULL, check_fn, NULL), 0);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

#define PAYLOAD_LEN (128 << 10)
#define PAYLOADS 400 /* 50 MiB */

Test(recorder, map_grows_from_tiny, .timeout = TIMEOUT)
{
	static uint8_t buf[PAYLOAD_LEN];
	static char hex[PAYLOADS][CORE_SHA256_HEX_LEN + 1];
	MDB_envinfo info;
	rec__stats st;
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	int i;
	tdir d;

	setenv(REC_MAPSIZE_ENV, "1M", 1);
	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(mdb_env_info(env->mdb, &info), 0);
	cr_assert_eq(info.me_mapsize, 1 << 20);
	for (i = 0; i < PAYLOADS; i++) {
		fill_bytes((uint64_t)i, buf, sizeof(buf));
		cr_assert_eq(rec_put_payload(env, buf, sizeof(buf), hex[i]), 0);
		if (i % 100 == 99)
			env_flush(env);
	}
	env_flush(env);
	rec__stats_get(env, &st);
	cr_assert_eq(mdb_env_info(env->mdb, &info), 0);
	fprintf(stderr, "map growth: %llu doublings, map now %zu MiB\n",
		    (unsigned long long)st.grows, info.me_mapsize >> 20);
	cr_assert_geq(st.grows, 6);
	cr_assert_geq(info.me_mapsize, (size_t)PAYLOADS * PAYLOAD_LEN);

	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_PAYLOADS, NULL), PAYLOADS);
	for (i = 0; i < PAYLOADS; i++) {
		fill_bytes((uint64_t)i, buf, sizeof(buf));
		cr_assert_eq(rec_get_payload(t, hex[i], &v, &n), 0);
		cr_assert_eq(n, PAYLOAD_LEN);
		cr_assert_eq(memcmp(v, buf, n), 0, "payload %d", i);
	}
	rec_read_end(t);
	env_close(env);

	/* The grown size is recorded in the file. */
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_PAYLOADS, NULL), PAYLOADS);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, single_put_larger_than_queue_bound, .timeout = TIMEOUT)
{
	size_t len = REC_QUEUE_MAX + (1 << 20);
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t *big = malloc(len);
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	rec_key k = key1(1);
	tdir d;

	cr_assert_not_null(big);
	memset(big, 0x5a, len);
	setenv(REC_MAPSIZE_ENV, "1M", 1);
	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_RUNS, &k, "before", 6), 0);
	cr_assert_eq(rec_put_payload(env, big, len, hex), 0);
	cr_assert_eq(rec_put(env, REC_RUNS, &k, "after", 5), 0);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get_payload(t, hex, &v, &n), 0);
	cr_assert_eq(n, len);
	cr_assert_eq(memcmp(v, big, len), 0);
	cr_assert_eq(rec_get(t, REC_RUNS, &k, &v, &n), 0);
	cr_assert_eq(n, 5, "puts keep their order");
	rec_read_end(t);
	env_close(env);
	free(big);
	tdir_remove(&d);
}

typedef struct bounded {
	rec_env *env;
	uint32_t id;
	int rc;
} bounded;

static void *bounded_produce(void *arg)
{
	bounded *b = arg;
	uint8_t v[1024];
	uint64_t i;
	rec_key k;

	for (i = 0; i < 2000 && !b->rc; i++) {
		k = key2(b->id, i);
		fill_bytes(i, v, sizeof(v));
		b->rc = rec_put(b->env, REC_CALLS, &k, v, sizeof(v));
	}
	return NULL;
}

/* A writer slower than its producers (here: a 64 KiB queue bound) makes
 * producers wait instead of queueing without limit. */
Test(recorder, producers_wait_when_queue_is_full, .timeout = TIMEOUT)
{
	pthread_t th[4];
	bounded b[4];
	rec__stats st;
	rec_env *env;
	rec_txn *t;
	int i;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	rec__queue_max_set(env, 64 << 10);
	for (i = 0; i < 4; i++) {
		b[i] = (bounded){ .env = env, .id = (uint32_t)i };
		cr_assert_eq(pthread_create(&th[i], NULL, bounded_produce, &b[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(b[i].rc, 0);
	}
	env_flush(env);
	rec__stats_get(env, &st);
	fprintf(stderr, "queue bound 64 KiB: %llu producer waits, %llu commits\n",
		(unsigned long long)st.space_waits,
		(unsigned long long)st.commits);
	cr_assert_gt(st.space_waits, 0);
	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_CALLS, NULL), 8000);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

#define ROUNDS 25
#define ROWS_PER_ROUND 2000

typedef struct scan_state {
	int bad;
} scan_state;

static int row_check_fn(void *ctx, const void *k, size_t kl, const void *v,
			size_t vl)
{
	scan_state *s = ctx;
	uint8_t want[64];

	if (kl != 16 || vl != sizeof(want)) {
		s->bad++;
		return 0;
	}
	fill_bytes(rec_key_get_u64(k, 8), want, sizeof(want));
	if (memcmp(v, want, sizeof(want)))
		s->bad++;
	return 0;
}

/* Row seq's `where`. */
static void where_of(uint64_t seq, char *buf, size_t n)
{
	snprintf(buf, n, "line %llu", (unsigned long long)seq);
}

static int story_check_fn(void *ctx, const void *k, size_t kl, const void *v,
			  size_t vl)
{
	Elspeth__RowRecord *r = elspeth__row_record__unpack(NULL, vl, v);
	scan_state *s = ctx;
	char want[32];

	if (kl != 16 || !r) {
		s->bad++;
	} else {
		where_of(rec_key_get_u64(k, 8), want, sizeof(want));
		if (r->seq != rec_key_get_u64(k, 8) || strcmp(r->where, want))
			s->bad++;
	}
	if (r)
		elspeth__row_record__free_unpacked(r, NULL);
	return 0;
}

/* Reads until told to stop; exit status 0 when counts only grew, every
 * record was intact and no call failed. Writes the final counts (records,
 * row stories) and the number of distinct counts seen to out. */
static int reader_child(const char *path, int stop_fd, int out_fd)
{
	uint64_t res[3] = { 0, 0, 0 }, prev = 0, prev_rows = 0;
	struct pollfd pfd = { stop_fd, POLLIN, 0 };
	rec_key run = key1(1);
	scan_state s = { 0 };
	core_err err = { 0 };
	bool last = false;
	size_t n, rows;
	rec_env *env;
	rec_txn *t;

	if (rec_open(path, REC_READONLY, &env, &err))
		return 10;
	while (!last) {
		last = poll(&pfd, 1, 0) == 1;
		if (rec_read_begin(env, &t, &err))
			return 11;
		n = rows = 0;
		if (rec_scan(t, REC_BATCHES, NULL, count_fn, &n) ||
		    rec_scan(t, REC_BATCHES, NULL, row_check_fn, &s))
			return 12;
		if (rec_scan(t, REC_ROWS, &run, count_fn, &rows) ||
		    rec_scan(t, REC_ROWS, &run, story_check_fn, &s))
			return 17;
		rec_read_end(t);
		if (n < prev || rows < prev_rows)
			return 13;
		if (s.bad)
			return 14;
		if (n != prev)
			res[1]++;
		prev = n;
		prev_rows = rows;
	}
	res[0] = prev;
	res[2] = prev_rows;
	if (write(out_fd, res, sizeof(res)) != sizeof(res))
		return 15;
	return rec_close(env, NULL) ? 16 : 0;
}

/* Records from .. from + n - 1 (table `batches`) and the row stories of
 * the same numbers (seq i + 1), sealed. */
static void rows_write(rec_env *env, uint64_t from, uint64_t n)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1], where[32];
	static uint8_t pay[32 << 10];
	uint8_t v[64];
	uint64_t i;
	rec_key k;

	for (i = from; i < from + n; i++) {
		k = key2(1, i);
		fill_bytes(i, v, sizeof(v));
		cr_assert_eq(rec_put(env, REC_BATCHES, &k, v, sizeof(v)), 0);
		if (i % 50 == 0) { /* payloads make the map grow */
			fill_bytes(i, pay, sizeof(pay));
			cr_assert_eq(rec_put_payload(env, pay, sizeof(pay), hex), 0);
		}
		where_of(i + 1, where, sizeof(where));
		r.run_id = 1;
		r.row_id = r.seq = i + 1;
		r.where = where;
		story_put(env, 1, i + 1, &r.base);
		story_seal(env, 1, i + 1);
	}
}

static void empty_env(const char *path)
{
	char parent[128];
	MDB_env *e;

	snprintf(parent, sizeof(parent), "%s", path);
	*strrchr(parent, '/') = '\0';
	cr_assert_eq(mkdir(parent, 0777), 0);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(mdb_env_create(&e), 0);
	cr_assert_eq(mdb_env_open(e, path, 0, 0664), 0);
	mdb_env_close(e);
}

Test(recorder, reader_process_sees_growing_counts, .timeout = TIMEOUT)
{
	int stop[2], out[2], status;
	uint64_t res[3];
	rec_env *env;
	pid_t pid;
	int r;
	tdir d;

	setenv(REC_MAPSIZE_ENV, "1M", 1);
	tdir_make(&d);
	/* The reader starts on an empty LMDB environment (as when `explain`
	 * races the first run) and must pick the tables up once they exist. */
	empty_env(d.path);
	cr_assert_eq(pipe(stop), 0);
	cr_assert_eq(pipe(out), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(reader_child(d.path, stop[0], out[1]));
	usleep(50000);
	env = env_open(d.path, 0);
	rows_write(env, 0, 10);
	for (r = 0; r < ROUNDS; r++) {
		rows_write(env, 10 + (uint64_t)r * ROWS_PER_ROUND, ROWS_PER_ROUND);
		env_flush(env);
		usleep(10000);
	}
	cr_assert_eq(write(stop[1], "x", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "reader died: status %d", status);
	cr_assert_eq(WEXITSTATUS(status), 0, "reader check %d failed",
		     WEXITSTATUS(status));
	cr_assert_eq(read(out[0], res, sizeof(res)), sizeof(res));
	fprintf(stderr, "reader saw %llu distinct counts, final %llu, %llu rows\n",
		    (unsigned long long)res[1], (unsigned long long)res[0],
		    (unsigned long long)res[2]);
	cr_assert_eq(res[0], 10 + ROUNDS * ROWS_PER_ROUND);
	cr_assert_eq(res[2], 10 + ROUNDS * ROWS_PER_ROUND);
	cr_assert_geq(res[1], 3, "the reader should see the data grow");
	env_close(env);
	tdir_remove(&d);
}

/* rec_queue_gen: unchanged while a put still waits in the queue, moved
 * once the writer has taken it (engine/checkpoint.c builds no checkpoint
 * while the last one is queued, relying on this). */
Test(recorder, queue_gen_moves_when_the_writer_takes_the_queue, .timeout = TIMEOUT)
{
	Elspeth__RunRecord run = ELSPETH__RUN_RECORD__INIT;
	uint64_t g1 = 0, g2 = 0;
	rec_env *env;
	rec_key k;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	run.run_id = 1;
	k = key1(1);
	cr_assert_eq(rec_put_msg_fsync(env, REC_RUNS, &k, &run.base, NULL, 0, &g1), 0);
	cr_assert_geq(rec_queue_gen(env), g1, "the generation never goes back");
	env_flush(env); /* committed: the writer took the queue holding it */
	cr_assert_gt(rec_queue_gen(env), g1);
	cr_assert_eq(rec_put_msg_fsync(env, REC_RUNS, &k, &run.base, NULL, 0, &g2), 0);
	cr_assert_gt(g2, g1, "a put after the commit goes into a later queue");
	env_close(env);
	tdir_remove(&d);
}

/* The child: holds LMDB's writer lock on an existing trail (a write txn,
 * as a run stopped mid-commit does) until told to stop or for 3 s. */
static int lock_holder_child(const char *path, int ready_fd, int stop_fd)
{
	struct pollfd pfd = { .fd = stop_fd, .events = POLLIN };
	core_err err = { 0 };
	rec_env *env = NULL;
	MDB_txn *txn;

	if (rec_open(path, 0, &env, &err) || rec__txn_begin(env, 0, &txn))
		return 1;
	if (write(ready_fd, "h", 1) != 1)
		return 2;
	poll(&pfd, 1, 3000);
	mdb_txn_abort(txn);
	rec__txn_done(env);
	return rec_close(env, &err) ? 3 : 0;
}

/* Opening an existing trail for writing does not wait for LMDB's writer
 * lock: `elspeth resume` must get as far as refusing a run that another
 * process still holds, also when that process is stopped (SIGSTOP,
 * Ctrl-Z) inside a write txn. Before, rec_open's table setup took a write
 * txn and hung until the holder went on. */
Test(recorder, open_does_not_wait_for_the_writer_lock, .timeout = TIMEOUT)
{
	int ready[2], stop[2], status;
	struct pollfd pfd;
	struct timespec t0, t1;
	double secs;
	rec_env *env;
	char c;
	pid_t pid;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0); /* the trail exists, with its tables */
	rows_write(env, 0, 10);
	env_flush(env);
	env_close(env);
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(stop), 0);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(lock_holder_child(d.path, ready[1], stop[0]));
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the child never took the lock");
	cr_assert_eq(read(ready[0], &c, 1), 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	env = env_open(d.path, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert_lt(secs, 1.5, "rec_open waited %.2f s for another process's write txn", secs);
	cr_assert_eq(write(stop[1], "x", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	env_close(env);
	tdir_remove(&d);
}

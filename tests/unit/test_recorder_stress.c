/*
 * test_recorder_stress.c — the writer under producers, flushes, sync
 * transactions, map growth and in-process readers at once, as a plain
 * program (exit 0 = pass) for ThreadSanitizer builds.
 *
 * Why not Criterion: Criterion 2.4 cannot start under TSan (its sandbox
 * arena finds no free address range: "Could not initialize inheritable
 * arena", Snaipe/Criterion#274), so this file defines main() and the
 * Criterion runner is not used. It runs (in about a second) in every
 * build; in a -DELSPETH_TSAN=ON build it is the recorder's race test.
 *
 * Phase 1: producers (puts, messages, payloads, row stories, flushes,
 * sync txns) and readers on one env with a tiny map (growth) and a small
 * queue bound (producers wait). Each producer writes the stories of its
 * own run; rows of the same seq meet in the same stripe of open stories. Phase 2: a write error (file size limit) while
 * producers run and wait: every thread must get the sticky error, none
 * may hang.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_util.h"

#define PRODUCERS 4
#define READERS 2
#define PUTS 30000

static atomic_int failures;
static atomic_bool producing = true;

#define CHECK(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
	atomic_fetch_add(&failures, 1); } } while (0)

typedef struct worker {
	rec_env *env;
	uint32_t id;
	uint64_t syncs;
} worker;

/* Bumps a counter in REC_META: a read-modify-write that must see every
 * earlier one (sync transactions run one at a time, in order). */
static int bump_fn(void *ctx, rec_env *env, void *mdb_txn)
{
	rec_key k;
	MDB_val mk, mv;
	uint64_t n = 0;
	int rc;

	(void)ctx;
	rec_key_init(&k);
	memcpy(k.b, "stress", 6);
	k.len = 6;
	mk.mv_size = k.len;
	mk.mv_data = k.b;
	rc = mdb_get(mdb_txn, env->dbi[REC_META], &mk, &mv);
	if (rc == 0 && mv.mv_size == sizeof(n))
		memcpy(&n, mv.mv_data, sizeof(n));
	n++;
	return rec_txn_put(env, mdb_txn, REC_META, &k, &n, sizeof(n));
}

/* Row seq of run w->id: its record naming its payload, and a token;
 * sealed. */
static void story_one(worker *w, uint64_t seq)
{
	Elspeth__RowRecord row = ELSPETH__ROW_RECORD__INIT;
	Elspeth__TokenRecord tok = ELSPETH__TOKEN_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint8_t pay[48];

	fill_bytes((uint64_t)w->id << 40 | seq, pay, sizeof(pay));
	CHECK(rec_story_payload(w->env, w->id, seq, pay, sizeof(pay), hex) == 0,
	      "story payload");
	row.run_id = w->id;
	row.row_id = row.seq = seq;
	row.source_hash = row.payload_ref = hex;
	CHECK(rec_story_put(w->env, w->id, seq, &row.base) == 0, "story row");
	tok.run_id = w->id;
	tok.token_id = tok.row_id = seq;
	CHECK(rec_story_put(w->env, w->id, seq, &tok.base) == 0, "story token");
	CHECK(rec_story_seal(w->env, w->id, seq) == 0, "seal");
}

static void put_one(worker *w, uint64_t i)
{
	Elspeth__TokenRecord tok = ELSPETH__TOKEN_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1];
	static _Thread_local uint8_t pay[4096];
	uint8_t v[64];
	rec_key k = key2(w->id, i);

	fill_bytes((uint64_t)w->id << 32 | i, v, sizeof(v));
	CHECK(rec_put(w->env, REC_BATCHES, &k, v, sizeof(v)) == 0, "put");
	if (i % 10 == 0) {
		tok.run_id = w->id;
		tok.token_id = i;
		CHECK(rec_put_msg(w->env, REC_SUPERSEDED, &k, &tok.base) == 0, "msg");
		story_one(w, i / 10 + 1);
	}
	if (i % 100 == 0) {
		fill_bytes((uint64_t)w->id << 32 | i, pay, sizeof(pay));
		CHECK(rec_put_payload(w->env, pay, sizeof(pay), hex) == 0, "payload");
	}
}

static void *produce(void *arg)
{
	worker *w = arg;
	core_err err = { 0 };
	uint64_t i;

	for (i = 0; i < PUTS; i++) {
		put_one(w, i);
		if (i % 3000 == 2999)
			CHECK(rec_flush(w->env, &err) == 0, "flush: %s", err.msg);
		if (i % 1000 == 500) /* the open stories of every thread */
			CHECK(rec_story_flush(w->env) == 0, "story flush");
		if (i % 2500 == 0) {
			CHECK(rec_write_sync(w->env, bump_fn, NULL, &err) == 0,
			      "sync: %s", err.msg);
			w->syncs++;
		}
	}
	return NULL;
}

static void *read_loop(void *arg)
{
	worker *w = arg;
	core_err err = { 0 };
	size_t n, rows, prev = 0, prev_rows = 0;
	rec_key run = key1(1);
	const void *k, *v;
	size_t kl, vl;
	rec_txn *t;
	int rc;

	while (atomic_load(&producing)) {
		if (rec_read_begin(w->env, &t, &err)) {
			CHECK(0, "read_begin: %s", err.msg);
			break;
		}
		n = rows = 0;
		CHECK(rec_scan(t, REC_BATCHES, NULL, count_fn, &n) == 0, "scan");
		rc = rec_last(t, REC_BATCHES, NULL, &k, &kl, &v, &vl);
		CHECK(rc == 0 || (rc == REC_NOTFOUND && n == 0), "last %d", rc);
		CHECK(rec_scan(t, REC_ROWS, &run, count_fn, &rows) == 0, "story scan");
		rc = rec_last(t, REC_TOKENS, &run, &k, &kl, &v, &vl);
		CHECK(rc == 0 || (rc == REC_NOTFOUND && rows == 0), "story last %d", rc);
		rec_read_end(t);
		CHECK(n >= prev, "count went down: %zu < %zu", n, prev);
		CHECK(rows >= prev_rows, "rows went down: %zu < %zu", rows, prev_rows);
		prev_rows = rows;
		CHECK(rec_error(w->env, NULL) == 0, "sticky error");
		prev = n;
		usleep(2000);
	}
	return NULL;
}

/* A story's row record names a payload the story holds. */
static int row_fn(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	Elspeth__RowRecord *r = elspeth__row_record__unpack(NULL, vl, v);
	const void *p;
	size_t n;

	(void)kl;
	CHECK(r && r->seq == rec_key_get_u64(k, 8), "row record");
	if (r) {
		CHECK(rec_get_payload(ctx, r->payload_ref, &p, &n) == 0 && n == 48,
		      "row %llu: payload", (unsigned long long)r->seq);
		elspeth__row_record__free_unpacked(r, NULL);
	}
	return 0;
}

static void verify(rec_env *env, uint64_t syncs)
{
	rec_key k;
	const void *v;
	uint64_t n = 0;
	size_t vl;
	rec_txn *t;

	CHECK(rec_read_begin(env, &t, NULL) == 0, "read_begin");
	CHECK(count_keys(t, REC_BATCHES, NULL) == PRODUCERS * PUTS, "records");
	CHECK(count_keys(t, REC_SUPERSEDED, NULL) == PRODUCERS * PUTS / 10, "messages");
	for (uint64_t id = 1; id <= PRODUCERS; id++) {
		k = key1(id);
		CHECK(count_keys(t, REC_ROWS, &k) == PUTS / 10, "rows of run %llu",
		      (unsigned long long)id);
		CHECK(count_keys(t, REC_TOKENS, &k) == PUTS / 10, "tokens of run %llu",
		      (unsigned long long)id);
		CHECK(rec_scan(t, REC_ROWS, &k, row_fn, t) == 0, "scan of run %llu",
		      (unsigned long long)id);
	}
	CHECK(count_keys(t, REC_PAYLOADS, NULL) == PRODUCERS * PUTS / 100,
	      "payloads");
	rec_key_init(&k);
	memcpy(k.b, "stress", 6);
	k.len = 6;
	CHECK(rec_get(t, REC_META, &k, &v, &vl) == 0 && vl == sizeof(n), "meta");
	if (vl == sizeof(n))
		memcpy(&n, v, sizeof(n));
	CHECK(n == syncs, "sync counter %llu, want %llu",
	      (unsigned long long)n, (unsigned long long)syncs);
	rec_read_end(t);
}

static void *fail_produce(void *arg)
{
	worker *w = arg;
	char hex[CORE_SHA256_HEX_LEN + 1];
	static _Thread_local uint8_t pay[64 << 10];
	uint64_t i;
	int rc = 0;

	for (i = 0; i < 1000 && !rc; i++) {
		fill_bytes((uint64_t)w->id << 32 | i, pay, sizeof(pay));
		rc = rec_put_payload(w->env, pay, sizeof(pay), hex);
		if (!rc) /* a row story of the same size */
			rc = rec_story_payload(w->env, w->id, i + 1, pay + 1,
					       sizeof(pay) - 1, hex);
		if (!rc)
			rc = rec_story_seal(w->env, w->id, i + 1);
		if (!rc && i % 20 == 19)
			rc = rec_flush(w->env, NULL);
	}
	CHECK(rc != 0, "producer %u never saw the write error", w->id);
	CHECK(rc == rec_error(w->env, NULL), "error %d is not the sticky one", rc);
	return NULL;
}

/* 64 MiB of payloads into a file limited to 4 MiB. */
static void phase_error(const char *root)
{
	struct rlimit old, rl;
	pthread_t pt[PRODUCERS];
	worker pw[PRODUCERS];
	core_err err = { 0 };
	char path[128];
	rec_env *env;
	int i, rc;

	snprintf(path, sizeof(path), "%s/failing.lmdb", root);
	signal(SIGXFSZ, SIG_IGN);
	if (rec_open(path, 0, &env, &err)) {
		CHECK(0, "rec_open: %s", err.msg);
		return;
	}
	rec__queue_max_set(env, 256 << 10);
	getrlimit(RLIMIT_FSIZE, &old);
	rl = old;
	rl.rlim_cur = 4 << 20;
	setrlimit(RLIMIT_FSIZE, &rl);
	for (i = 0; i < PRODUCERS; i++) {
		pw[i] = (worker){ .env = env, .id = (uint32_t)i + 1 };
		pthread_create(&pt[i], NULL, fail_produce, &pw[i]);
	}
	for (i = 0; i < PRODUCERS; i++)
		pthread_join(pt[i], NULL);
	rc = rec_close(env, &err);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(rc != 0, "rec_close must return the sticky error");
	fprintf(stderr, "stress: sticky error as expected: %s\n", err.msg);
}

int main(void)
{
	pthread_t pt[PRODUCERS], rt[READERS];
	worker pw[PRODUCERS], rw[READERS];
	uint64_t syncs = 0, t0;
	rec__stats st;
	core_err err = { 0 };
	rec_env *env;
	tdir d;
	int i;

	setenv(REC_MAPSIZE_ENV, "1M", 1);
	snprintf(d.root, sizeof(d.root), "/tmp/elspeth-rec-XXXXXX");
	if (!mkdtemp(d.root))
		return 2;
	snprintf(d.path, sizeof(d.path), "%s/audit.lmdb", d.root);
	if (rec_open(d.path, 0, &env, &err)) {
		fprintf(stderr, "FAIL rec_open: %s\n", err.msg);
		return 1;
	}
	rec__queue_max_set(env, 256 << 10);
	t0 = core_now_mono_ns();
	for (i = 0; i < READERS; i++) {
		rw[i] = (worker){ .env = env };
		pthread_create(&rt[i], NULL, read_loop, &rw[i]);
	}
	for (i = 0; i < PRODUCERS; i++) {
		pw[i] = (worker){ .env = env, .id = (uint32_t)i + 1 };
		pthread_create(&pt[i], NULL, produce, &pw[i]);
	}
	for (i = 0; i < PRODUCERS; i++) {
		pthread_join(pt[i], NULL);
		syncs += pw[i].syncs;
	}
	CHECK(rec_flush(env, &err) == 0, "final flush: %s", err.msg);
	atomic_store(&producing, false);
	for (i = 0; i < READERS; i++)
		pthread_join(rt[i], NULL);
	rec__stats_get(env, &st);
	fprintf(stderr, "stress: %.2f s, %llu commits, max %llu puts/commit, "
		"%llu fsyncs, %llu map doublings, %llu producer waits\n",
		(double)(core_now_mono_ns() - t0) / 1e9,
		(unsigned long long)st.commits, (unsigned long long)st.max_ops,
		(unsigned long long)st.syncs, (unsigned long long)st.grows,
		(unsigned long long)st.space_waits);
	CHECK(st.grows > 0, "the map should have grown");
	verify(env, syncs);
	CHECK(rec_close(env, &err) == 0, "close: %s", err.msg);
	phase_error(d.root);
	tdir_remove(&d);
	fprintf(stderr, "stress: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}

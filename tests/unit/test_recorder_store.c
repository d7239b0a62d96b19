/* test_recorder_store.c — put/flush/get, messages, payloads, scans,
 * synchronous transactions, and opening foreign or missing directories. */
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <lmdb.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_util.h"

static void get_ok(rec_txn *t, rec_table tab, const rec_key *k,
		   const char *want)
{
	const void *v;
	size_t n;
	int rc = rec_get(t, tab, k, &v, &n);

	cr_assert_eq(rc, 0, "rec_get: %d", rc);
	cr_assert_eq(n, strlen(want));
	cr_assert_eq(memcmp(v, want, n), 0);
}

Test(recorder, put_flush_get_round_trip, .timeout = TIMEOUT)
{
	rec_key k1 = key2(1, 1), k2 = key2(1, 2), k3 = key2(7, 1);
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k1, "one", 3), 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k2, "two", 3), 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k3, "first", 5), 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k3, "replaced", 8), 0);
	cr_assert_eq(rec_put(env, REC_SUPERSEDED, &k1, NULL, 0), 0);
	env_flush(env);
	t = txn_begin(env);
	get_ok(t, REC_BATCHES, &k1, "one");
	get_ok(t, REC_BATCHES, &k2, "two");
	get_ok(t, REC_BATCHES, &k3, "replaced");
	get_ok(t, REC_SUPERSEDED, &k1, "");
	cr_assert_eq(rec_get(t, REC_BATCHES, &(rec_key){ .len = 0 }, &v, &n) != 0, 1);
	k1 = key2(1, 3);
	cr_assert_eq(rec_get(t, REC_BATCHES, &k1, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_get(t, REC_SAMPLES, &k2, &v, &n), REC_NOTFOUND);
	rec_read_end(t);
	rec_read_end(NULL);
	env_close(env);

	/* Reopened (read-only), the data is there. */
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	get_ok(t, REC_BATCHES, &k2, "two");
	rec_read_end(t);
	env_close(env);
	cr_assert_eq(rec_close(NULL, NULL), 0);
	tdir_remove(&d);
}

Test(recorder, bad_puts_are_refused_at_once, .timeout = TIMEOUT)
{
	static const rec_table per_row[] = {
		REC_ROWS, REC_TOKENS, REC_TOKENS_BY_ROW, REC_TOKEN_PARENTS,
		REC_NODE_STATES, REC_STATES_BY_TOKEN, REC_ROUTING_EVENTS,
		REC_ARTIFACTS, REC_TOKEN_OUTCOMES, REC_VALIDATION_ERRORS,
		REC_TRANSFORM_ERRORS,
	};
	Elspeth__RowRecord row = ELSPETH__ROW_RECORD__INIT;
	rec_key k = key1(1), k2 = key2(1, 1), empty;
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	rec_key_init(&empty);
	cr_assert_eq(rec_put(env, REC_BATCHES, &empty, "x", 1), CORE_EINTERNAL);
	cr_assert_eq(rec_put(env, REC_TABLE_LAST, &k, "x", 1), CORE_EINTERNAL);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, NULL, 4), CORE_EINTERNAL);
	/* The per-row tables are written through the row stories only. */
	row.run_id = row.row_id = row.seq = 1;
	for (size_t i = 0; i < sizeof(per_row) / sizeof(per_row[0]); i++) {
		cr_assert_eq(rec_put(env, per_row[i], &k2, "x", 1), CORE_EINTERNAL,
			     "rec_put to %s", rec_table_name(per_row[i]));
		cr_assert_eq(rec_put_msg(env, per_row[i], &k2, &row.base), CORE_EINTERNAL,
			     "rec_put_msg to %s", rec_table_name(per_row[i]));
	}
	cr_assert_eq(rec_put_msg_now(env, REC_ROWS, &k2, &row.base), CORE_EINTERNAL);
	cr_assert_eq(rec_put_msg_fsync(env, REC_ROWS, &k2, &row.base, NULL, 0, NULL),
		     CORE_EINTERNAL);
	/* Only the per-row record types go into a story. */
	{
		Elspeth__RunRecord run = ELSPETH__RUN_RECORD__INIT;

		cr_assert_eq(rec_story_put(env, 1, 1, &run.base), CORE_EINTERNAL);
	}
	cr_assert_eq(rec_error(env, NULL), 0, "refused puts are not sticky");
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_ROWS, &k2, &v, &n), REC_NOTFOUND,
		     "nothing of the refused puts was stored");
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, protobuf_message_round_trip, .timeout = TIMEOUT)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT, *got;
	rec_key k = key1(42);
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	r.run_id = 42;
	r.started_at_ns = 1700000000123456789ull;
	r.status = "completed";
	r.config_hash = "ab12";
	r.rows = 100000;
	r.quarantined = 3;
	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put_msg(env, REC_RUNS, &k, &r.base), 0);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_RUNS, &k, &v, &n), 0);
	got = elspeth__run_record__unpack(NULL, n, v);
	cr_assert_not_null(got);
	cr_assert_eq(got->run_id, 42);
	cr_assert_eq(got->started_at_ns, r.started_at_ns);
	cr_assert_str_eq(got->status, "completed");
	cr_assert_str_eq(got->config_hash, "ab12");
	cr_assert_eq(got->rows, 100000);
	cr_assert_eq(got->quarantined, 3);
	elspeth__run_record__free_unpacked(got, NULL);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, payload_is_content_addressed_and_stored_once, .timeout = TIMEOUT)
{
	char h1[CORE_SHA256_HEX_LEN + 1], h2[CORE_SHA256_HEX_LEN + 1];
	char h3[CORE_SHA256_HEX_LEN + 1], want[CORE_SHA256_HEX_LEN + 1];
	uint8_t sum[CORE_SHA256_LEN];
	const char *a = "{\"id\":1}", *b = "{\"id\":2}";
	MDB_stat st;
	MDB_txn *mt;
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put_payload(env, a, strlen(a), h1), 0);
	cr_assert_eq(rec_put_payload(env, a, strlen(a), h2), 0);
	cr_assert_eq(rec_put_payload(env, b, strlen(b), h3), 0);
	env_flush(env);
	cr_assert_eq(rec_put_payload(env, a, strlen(a), h2), 0);
	env_flush(env);
	core_sha256(a, strlen(a), sum);
	core_hex(sum, sizeof(sum), want);
	cr_assert_str_eq(h1, want);
	cr_assert_str_eq(h1, h2);
	cr_assert_str_neq(h1, h3);

	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_PAYLOADS, NULL), 2);
	cr_assert_eq(rec_get_payload(t, h1, &v, &n), 0);
	cr_assert_eq(n, strlen(a));
	cr_assert_eq(memcmp(v, a, n), 0);
	cr_assert_eq(rec_get_payload(t, "00", &v, &n), CORE_EDATA);
	want[0] = want[0] == '0' ? '1' : '0';
	cr_assert_eq(rec_get_payload(t, want, &v, &n), REC_NOTFOUND);
	want[5] = 'x';
	cr_assert_eq(rec_get_payload(t, want, &v, &n), CORE_EDATA);
	rec_read_end(t);

	cr_assert_eq(mdb_txn_begin(env->mdb, NULL, MDB_RDONLY, &mt), 0);
	cr_assert_eq(mdb_stat(mt, env->dbi[REC_PAYLOADS], &st), 0);
	cr_assert_eq(st.ms_entries, 2);
	mdb_txn_abort(mt);
	env_close(env);
	tdir_remove(&d);
}

/* 3 runs x 300 keys (crossing the 255/256 byte boundary), plus keys
 * whose first part is all 0xff, in a table keyed (run, token). */
static void tokens_fill(rec_env *env)
{
	uint64_t r, i;
	rec_key k;

	for (r = 1; r <= 3; r++) {
		for (i = 0; i < 300; i++) {
			k = key2(r, i);
			cr_assert_eq(rec_put(env, REC_SUPERSEDED, &k, &i, sizeof(i)), 0);
		}
	}
	k = key2(UINT64_MAX, 5);
	cr_assert_eq(rec_put(env, REC_SUPERSEDED, &k, "a", 1), 0);
	k = key2(UINT64_MAX, 7);
	cr_assert_eq(rec_put(env, REC_SUPERSEDED, &k, "b", 1), 0);
}

typedef struct ordered {
	uint64_t run, next;
	int stop_at;
} ordered;

static int ordered_fn(void *ctx, const void *k, size_t kl, const void *v,
		      size_t vl)
{
	ordered *o = ctx;

	(void)v;
	cr_assert_eq(kl, 16);
	cr_assert_eq(vl, 8);
	cr_assert_eq(rec_key_get_u64(k, 0), o->run);
	cr_assert_eq(rec_key_get_u64(k, 8), o->next, "out of order");
	o->next++;
	return o->stop_at && (int)o->next == o->stop_at ? REC_SCAN_STOP : 0;
}

static void last_is(rec_txn *t, const rec_key *prefix, uint64_t run,
		    uint64_t id)
{
	const void *k, *v;
	size_t kl, vl;
	int rc = rec_last(t, REC_SUPERSEDED, prefix, &k, &kl, &v, &vl);

	cr_assert_eq(rc, 0, "rec_last: %d", rc);
	cr_assert_eq(kl, 16);
	cr_assert_eq(rec_key_get_u64(k, 0), run);
	cr_assert_eq(rec_key_get_u64(k, 8), id);
}

Test(recorder, scan_by_prefix_and_last, .timeout = TIMEOUT)
{
	rec_key p2 = key1(2), p9 = key1(9), p0 = key1(0), pmax = key1(UINT64_MAX);
	rec_key p2_1 = key2(2, 1), none;
	ordered o = { .run = 2 };
	const void *k, *v;
	size_t kl, vl;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	tokens_fill(env);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_scan(t, REC_SUPERSEDED, &p2, ordered_fn, &o), 0);
	cr_assert_eq(o.next, 300);
	o = (ordered){ .run = 2, .stop_at = 10 };
	cr_assert_eq(rec_scan(t, REC_SUPERSEDED, &p2, ordered_fn, &o), REC_SCAN_STOP);
	cr_assert_eq(o.next, 10);
	cr_assert_eq(count_keys(t, REC_SUPERSEDED, NULL), 902);
	cr_assert_eq(count_keys(t, REC_SUPERSEDED, &p9), 0);
	cr_assert_eq(count_keys(t, REC_SUPERSEDED, &p2_1), 1);
	cr_assert_eq(count_keys(t, REC_NODES, NULL), 0);

	last_is(t, &p2, 2, 299);
	last_is(t, &p2_1, 2, 1);
	last_is(t, &pmax, UINT64_MAX, 7);
	last_is(t, NULL, UINT64_MAX, 7);
	cr_assert_eq(rec_last(t, REC_SUPERSEDED, &p9, &k, &kl, &v, &vl), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_SUPERSEDED, &p0, &k, &kl, &v, &vl), REC_NOTFOUND);
	rec_key_init(&none);
	cr_assert_eq(rec_last(t, REC_NODES, &none, &k, &kl, &v, &vl), REC_NOTFOUND);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, last_with_prefix_below_other_keys, .timeout = TIMEOUT)
{
	rec_key a = key2(1, 0x00ffffffffffffffull), b = key2(1, 0x0100000000000000ull);
	rec_key pre, kk;
	const void *k, *v;
	size_t kl, vl;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_CALLS, &a, "a", 1), 0);
	cr_assert_eq(rec_put(env, REC_CALLS, &b, "b", 1), 0);
	env_flush(env);
	t = txn_begin(env);
	/* prefix (1, 0x00) ends below b: the last of it is a. */
	kk = key1(1);
	pre = kk;
	pre.b[pre.len++] = 0x00;
	cr_assert_eq(rec_last(t, REC_CALLS, &pre, &k, &kl, &v, &vl), 0);
	cr_assert_eq(memcmp(v, "a", 1), 0);
	/* prefix (1, 0x01) is the last key of the table. */
	pre.b[pre.len - 1] = 0x01;
	cr_assert_eq(rec_last(t, REC_CALLS, &pre, &k, &kl, &v, &vl), 0);
	cr_assert_eq(memcmp(v, "b", 1), 0);
	/* prefix (0, ...) is below every key. */
	kk = key1(0);
	cr_assert_eq(rec_last(t, REC_CALLS, &kk, &k, &kl, &v, &vl), REC_NOTFOUND);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

/* Runs on the writer thread: no cr_assert here (Criterion's asserts
 * belong to the test's thread); the test checks what it recorded. */
typedef struct sync_ctx {
	rec_env *env;
	bool saw_prior, right_env;
	int fail_with;
	int calls;
} sync_ctx;

static int sync_fn(void *arg, rec_env *env, void *mdb_txn)
{
	sync_ctx *c = arg;
	rec_key k = key1(1), k2 = key1(2);
	MDB_val mk = { k.len, k.b }, mv;

	c->calls++;
	c->right_env = env == c->env;
	c->saw_prior = mdb_get(mdb_txn, env->dbi[REC_RUNS], &mk, &mv) == 0;
	if (rec_txn_put(env, mdb_txn, REC_RUNS, &k2, "sync", 4))
		return CORE_EINTERNAL;
	return c->fail_with;
}

Test(recorder, write_sync_runs_after_prior_puts, .timeout = TIMEOUT)
{
	rec_key k1 = key1(1), k2 = key1(2);
	sync_ctx c = { 0 };
	core_err err = { 0 };
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	c.env = env;
	cr_assert_eq(rec_put(env, REC_RUNS, &k1, "prior", 5), 0);
	cr_assert_eq(rec_write_sync(env, sync_fn, &c, &err), 0, "%s", err.msg);
	cr_assert_eq(c.calls, 1);
	cr_assert(c.right_env);
	cr_assert(c.saw_prior, "the callback must see puts enqueued before it");
	t = txn_begin(env); /* no flush: committed is enough to be visible */
	get_ok(t, REC_RUNS, &k1, "prior");
	get_ok(t, REC_RUNS, &k2, "sync");
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, write_sync_failure_rolls_back_and_is_not_sticky, .timeout = TIMEOUT)
{
	rec_key k2 = key1(2);
	sync_ctx c = { 0 };
	core_err err = { 0 };
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	c.env = env;
	c.fail_with = CORE_EDATA;
	cr_assert_eq(rec_write_sync(env, sync_fn, &c, &err), CORE_EDATA);
	cr_assert_eq(err.code, CORE_EDATA);
	cr_assert_not_null(strstr(err.msg, "callback failed"), "%s", err.msg);
	cr_assert_eq(rec_error(env, NULL), 0);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_RUNS, &k2, &v, &n), REC_NOTFOUND);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

typedef struct reentry {
	int flush_rc, put_rc;
} reentry;

static int reentry_fn(void *arg, rec_env *env, void *mdb_txn)
{
	reentry *r = arg;
	rec_key k = key1(5);

	(void)mdb_txn;
	r->flush_rc = rec_flush(env, NULL);
	r->put_rc = rec_put(env, REC_RUNS, &k, "queued", 6);
	return 0;
}

Test(recorder, write_sync_callback_cannot_wait_for_itself, .timeout = TIMEOUT)
{
	reentry r = { -1, -1 };
	core_err err = { 0 };
	rec_key k = key1(5);
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	rec__queue_max_set(env, 1); /* a put from the writer must not wait */
	cr_assert_eq(rec_write_sync(env, reentry_fn, &r, &err), 0, "%s", err.msg);
	cr_assert_eq(r.flush_rc, CORE_EINTERNAL, "no deadlock, an error");
	cr_assert_eq(r.put_rc, 0, "a put is only queued");
	env_flush(env);
	t = txn_begin(env);
	get_ok(t, REC_RUNS, &k, "queued");
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, flush_while_holding_a_read_txn_fails_fast, .timeout = TIMEOUT)
{
	core_err err = { 0 };
	rec_key k = key1(9);
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	rec__queue_max_set(env, 1);
	t = txn_begin(env);
	cr_assert_eq(rec_put(env, REC_RUNS, &k, "a", 1), 0);
	cr_assert_eq(rec_put(env, REC_RUNS, &k, "b", 1), 0, "no wait for room");
	cr_assert_eq(rec_flush(env, &err), CORE_EINTERNAL);
	cr_assert_not_null(strstr(err.msg, "read transaction"), "%s", err.msg);
	rec_read_end(t);
	env_flush(env);
	t = txn_begin(env);
	get_ok(t, REC_RUNS, &k, "b");
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, readonly_env_refuses_writes, .timeout = TIMEOUT)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	core_err err = { 0 };
	rec_key k = key1(1);
	rec_env *env;
	tdir d;

	tdir_make(&d);
	env_close(env_open(d.path, 0));
	env = env_open(d.path, REC_READONLY);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, "x", 1), CORE_EINTERNAL);
	cr_assert_eq(rec_story_payload(env, 1, 1, "x", 1, hex), CORE_EINTERNAL);
	cr_assert_eq(rec_story_seal(env, 1, 1), CORE_EINTERNAL);
	cr_assert_eq(rec_flush(env, &err), CORE_EINTERNAL);
	cr_assert_not_null(strstr(err.msg, "read-only"), "%s", err.msg);
	cr_assert_eq(rec_error(env, NULL), 0);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, second_open_in_one_process_is_refused, .timeout = TIMEOUT)
{
	core_err err = { 0 };
	rec_env *env, *env2 = NULL;
	char other[160];
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	snprintf(other, sizeof(other), "%s/state/../state/audit.lmdb", d.root);
	cr_assert_neq(rec_open(other, REC_READONLY, &env2, &err), 0);
	cr_assert_null(env2);
	cr_assert_not_null(strstr(err.msg, "already open"), "%s", err.msg);
	env_close(env);
	env = env_open(other, REC_READONLY);
	env_close(env);
	tdir_remove(&d);
}

/* A plain LMDB environment with one key in its main database. */
static void raw_env(const char *path, bool named_meta)
{
	MDB_val k = { 3, "key" }, v = { 5, "value" };
	MDB_env *e;
	MDB_txn *t;
	MDB_dbi dbi;

	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(mdb_env_create(&e), 0);
	cr_assert_eq(mdb_env_set_maxdbs(e, 4), 0);
	cr_assert_eq(mdb_env_open(e, path, 0, 0664), 0);
	cr_assert_eq(mdb_txn_begin(e, NULL, 0, &t), 0);
	cr_assert_eq(mdb_dbi_open(t, named_meta ? "meta" : NULL,
				  named_meta ? MDB_CREATE : 0, &dbi), 0);
	cr_assert_eq(mdb_put(t, dbi, &k, &v, 0), 0);
	cr_assert_eq(mdb_txn_commit(t), 0);
	mdb_env_close(e);
}

static void assert_not_ours(const char *path, int flags)
{
	core_err err = { 0 };
	rec_env *env = NULL;

	cr_assert_eq(rec_open(path, flags, &env, &err), CORE_ECONFIG,
		     "flags %d: %s", flags, err.msg);
	cr_assert_null(env);
	cr_assert_not_null(strstr(err.msg, "not an elspeth Landscape"),
			   "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, path), "%s", err.msg);
}

Test(recorder, foreign_lmdb_env_is_refused, .timeout = TIMEOUT)
{
	char p1[160], p2[160];
	tdir d;

	tdir_make(&d);
	snprintf(p1, sizeof(p1), "%s/plain", d.root);
	snprintf(p2, sizeof(p2), "%s/named", d.root);
	raw_env(p1, false);
	raw_env(p2, true);
	assert_not_ours(p1, 0);
	assert_not_ours(p1, REC_READONLY);
	assert_not_ours(p2, 0);
	assert_not_ours(p2, REC_READONLY);
	tdir_remove(&d);
}

/* Writes `marker` as the trail's format marker (ctx). */
static int marker_fn(void *ctx, rec_env *env, void *mdb_txn)
{
	const char *marker = ctx;
	rec_key k;

	rec_key_init(&k);
	memcpy(k.b, "format", 6);
	k.len = 6;
	return rec_txn_put(env, mdb_txn, REC_META, &k, marker, strlen(marker));
}

/* A trail of this format, with a record, its marker then replaced. */
static void trail_with_marker(const tdir *d, const char *marker)
{
	core_err err = { 0 };
	rec_key k = key1(1);
	rec_env *env;

	env = env_open(d->path, 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, "b", 1), 0);
	cr_assert_eq(rec_write_sync(env, marker_fn, (void *)marker, &err), 0,
		     "%s", err.msg);
	env_close(env);
}

/* rec_open refuses d's trail, for reading and for writing, with a
 * message holding each of want[] (NULL-terminated) and the path. */
static void assert_refused(const tdir *d, const char *const *want)
{
	static const int flags[] = { REC_READONLY, 0 };

	for (size_t i = 0; i < 2; i++) {
		core_err err = { 0 };
		rec_env *env = NULL;

		cr_assert_eq(rec_open(d->path, flags[i], &env, &err), CORE_ECONFIG,
			     "flags %d: %s", flags[i], err.msg);
		cr_assert_null(env);
		cr_assert_not_null(strstr(err.msg, d->path), "%s", err.msg);
		for (const char *const *w = want; *w; w++)
			cr_assert_not_null(strstr(err.msg, *w), "no '%s' in: %s", *w,
					   err.msg);
	}
}

Test(recorder, current_format_marker_is_3, .timeout = TIMEOUT)
{
	const void *v;
	size_t n;
	rec_key k;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env_close(env_open(d.path, 0));
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	rec_key_init(&k);
	memcpy(k.b, "format", 6);
	k.len = 6;
	cr_assert_eq(rec_get(t, REC_META, &k, &v, &n), 0);
	cr_assert_eq(n, strlen("elspeth-landscape-3"));
	cr_assert_eq(memcmp(v, "elspeth-landscape-3", n), 0, "%.*s", (int)n,
		     (const char *)v);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

Test(recorder, newer_format_is_refused, .timeout = TIMEOUT)
{
	static const char *const want[] = { "format '9'", "newer", NULL };
	static const char *const want4[] = { "format '4'", "newer", NULL };
	tdir d;

	tdir_make(&d);
	trail_with_marker(&d, "elspeth-landscape-9");
	assert_refused(&d, want);
	tdir_remove(&d);
	/* The next format (this one plus 1) is newer too. */
	tdir_make(&d);
	trail_with_marker(&d, "elspeth-landscape-4");
	assert_refused(&d, want4);
	tdir_remove(&d);
}

/* Trails of format 1 (per-row tables, before the row stories) and 2
 * (values without seals) are not read as if they were empty or damaged:
 * they are refused, saying why and what to do. */
Test(recorder, older_format_is_refused, .timeout = TIMEOUT)
{
	static const char *const want1[] = { "format 1", "older elspeth",
					     "reads format 3 only", NULL };
	static const char *const want2[] = { "format 2", "older elspeth",
					     "reads format 3 only", NULL };
	tdir d;

	tdir_make(&d);
	trail_with_marker(&d, "elspeth-landscape-1");
	assert_refused(&d, want1);
	tdir_remove(&d);
	tdir_make(&d);
	trail_with_marker(&d, "elspeth-landscape-2");
	assert_refused(&d, want2);
	tdir_remove(&d);
}

Test(recorder, readonly_open_of_missing_trail_says_so, .timeout = TIMEOUT)
{
	core_err err = { 0 };
	rec_env *env = NULL;
	char p[160];
	tdir d;

	tdir_make(&d);
	cr_assert_neq(rec_open(d.path, REC_READONLY, &env, &err), 0);
	cr_assert_null(env);
	cr_assert_not_null(strstr(err.msg, "no audit trail at"), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, d.path), "%s", err.msg);
	cr_assert_not_null(strstr(err.msg, "--database"), "%s", err.msg);
	/* An existing directory without data.mdb: the same. */
	memset(&err, 0, sizeof(err));
	cr_assert_neq(rec_open(d.root, REC_READONLY, &env, &err), 0);
	cr_assert_not_null(strstr(err.msg, "no audit trail at"), "%s", err.msg);
	/* A file is not a directory. */
	snprintf(p, sizeof(p), "%s/file", d.root);
	fclose(fopen(p, "w"));
	memset(&err, 0, sizeof(err));
	cr_assert_neq(rec_open(p, 0, &env, &err), 0);
	cr_assert_not_null(strstr(err.msg, "not a directory"), "%s", err.msg);
	tdir_remove(&d);
}

Test(recorder, readonly_empty_env_reads_as_empty, .timeout = TIMEOUT)
{
	MDB_env *e;
	const void *v;
	size_t n;
	rec_key k = key1(1), k2 = key2(1, 1);
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	snprintf(d.path, sizeof(d.path), "%s/empty", d.root);
	cr_assert_eq(mkdir(d.path, 0777), 0);
	cr_assert_eq(mdb_env_create(&e), 0);
	cr_assert_eq(mdb_env_open(e, d.path, 0, 0664), 0);
	mdb_env_close(e);
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_BATCHES, NULL), 0);
	cr_assert_eq(rec_get(t, REC_BATCHES, &k, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_BATCHES, NULL, &v, &n, &v, &n), REC_NOTFOUND);
	/* The per-row tables too (no trail table yet). */
	cr_assert_eq(count_keys(t, REC_ROWS, &k), 0);
	cr_assert_eq(rec_get(t, REC_ROWS, &k2, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_TOKENS, &k, &v, &n, &v, &n), REC_NOTFOUND);
	rec_read_end(t);
	env_close(env);
	/* A writer makes it a Landscape. */
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, "r", 1), 0);
	env_close(env);
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(count_keys(t, REC_BATCHES, NULL), 1);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

/* In a child (the file size limit must not touch the test runner): a
 * write error is sticky. Exit status: 0 ok, else the failed check. */
static int sticky_child(const char *path)
{
	Elspeth__RowRecord row = ELSPETH__ROW_RECORD__INIT;
	struct rlimit rl = { 2 << 20, 2 << 20 };
	static uint8_t buf[64 << 10];
	char hex[CORE_SHA256_HEX_LEN + 1];
	core_err err = { 0 }, err2 = { 0 };
	rec_key k = key1(1);
	rec_env *env;
	int i, rc;

	signal(SIGXFSZ, SIG_IGN);
	if (rec_open(path, 0, &env, &err))
		return 10;
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 11;
	for (i = 0; i < 128; i++) { /* 8 MiB */
		fill_bytes((uint64_t)i, buf, sizeof(buf));
		if (rec_put_payload(env, buf, sizeof(buf), hex) &&
		    rec_error(env, NULL) == 0)
			return 12;
	}
	rc = rec_flush(env, &err);
	if (!rc || err.code != rc || !strstr(err.msg, path))
		return 13;
	if (rec_error(env, &err2) != rc || strcmp(err.msg, err2.msg))
		return 14;
	if (rec_put(env, REC_BATCHES, &k, "x", 1) != rc)
		return 15;
	if (rec_flush(env, NULL) != rc)
		return 16;
	/* A row's story gathers in memory; enqueueing it gives the error. */
	row.run_id = 1;
	row.row_id = row.seq = 1;
	i = rec_story_put(env, 1, 1, &row.base);
	if (i && i != rc)
		return 18;
	if (rec_story_flush(env) != rc)
		return 19;
	i = rec_story_put(env, 1, 1, &row.base);
	if (i && i != rc)
		return 20;
	if (rec_story_seal(env, 1, 1) != rc)
		return 21;
	if (rec_close(env, &err2) != rc)
		return 17;
	fprintf(stderr, "sticky error (expected): %s\n", err.msg);
	return 0;
}

Test(recorder, write_error_is_sticky, .timeout = TIMEOUT)
{
	int status;
	pid_t pid;
	tdir d;

	tdir_make(&d);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		_exit(sticky_child(d.path));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child died: status %d", status);
	cr_assert_eq(WEXITSTATUS(status), 0, "check %d failed",
		     WEXITSTATUS(status));
	tdir_remove(&d);
}

/* Every stored value carries a seal: one flipped bit in a value, read
 * back by rec_get or rec_scan, is damage (CORE_EDATA), not data. */
static int count_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	(void)key, (void)kl, (void)val, (void)vl;
	(*(int *)ctx)++;
	return 0;
}

Test(recorder, a_flipped_bit_in_a_value_is_damage, .timeout = TIMEOUT)
{
	static const char value[] = "a value with a unique marker QZXJ-7741";
	char path[300];
	rec_key k = key1(7);
	const void *v;
	size_t n;
	int count = 0;
	rec_env *env;
	rec_txn *t;
	FILE *f;
	char *buf, *at;
	long len;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	cr_assert_eq(rec_put(env, REC_BATCHES, &k, value, sizeof(value)), 0);
	env_close(env);
	/* intact: read back as written, without its seal */
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_BATCHES, &k, &v, &n), 0);
	cr_assert_eq(n, sizeof(value));
	cr_assert_eq(memcmp(v, value, n), 0);
	rec_read_end(t);
	env_close(env);
	/* one bit of the value flipped in the file */
	snprintf(path, sizeof(path), "%s/data.mdb", d.path);
	cr_assert_not_null(f = fopen(path, "r+b"));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	cr_assert_not_null(buf = malloc((size_t)len));
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	at = NULL;
	for (long i = 0; !at && i + 4 <= len; i++)
		if (!memcmp(buf + i, "QZXJ", 4))
			at = buf + i;
	cr_assert_not_null(at);
	fseek(f, at - buf, SEEK_SET);
	fputc(at[0] ^ 0x04, f);
	fclose(f);
	free(buf);
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_BATCHES, &k, &v, &n), CORE_EDATA);
	cr_assert_eq(rec_scan(t, REC_BATCHES, NULL, count_one, &count), CORE_EDATA);
	cr_assert_eq(count, 0, "the damaged value reached no caller");
	cr_assert(rec_err_damaged(CORE_EDATA));
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

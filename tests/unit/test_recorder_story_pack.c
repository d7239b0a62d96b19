/* test_recorder_story_pack.c — the stored form of the row stories: a
 * damaged fragment is an error (CORE_EDATA), never a crash or a silent
 * "not found"; the three packings (ELSPETH_TRAIL_PACK=raw|zstd|dict) read
 * back the same records, and the dictionary is needed to read. */
#include <lmdb.h>

#include "recorder/recorder_internal.h"
#include "test_recorder_story_util.h"

TestSuite(story_pack, .timeout = TIMEOUT);

/* ------------------------------------------------------- damage */

/* The first value of table t in the closed environment at path (a
 * malloc'd copy) and its key. */
static uint8_t *raw_first(const char *path, rec_table t, rec_key *key, size_t *len)
{
	MDB_env *e;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t *out;

	cr_assert_eq(mdb_env_create(&e), 0);
	cr_assert_eq(mdb_env_set_maxdbs(e, 64), 0);
	cr_assert_eq(mdb_env_open(e, path, MDB_RDONLY, 0664), 0);
	cr_assert_eq(mdb_txn_begin(e, NULL, MDB_RDONLY, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, rec_table_name(t), 0, &dbi), 0);
	cr_assert_eq(mdb_cursor_open(txn, dbi, &c), 0);
	cr_assert_eq(mdb_cursor_get(c, &k, &v, MDB_FIRST), 0);
	cr_assert_leq(k.mv_size, REC_KEY_MAX);
	memcpy(key->b, k.mv_data, k.mv_size);
	key->len = k.mv_size;
	out = malloc(v.mv_size + 1);
	cr_assert_not_null(out);
	memcpy(out, v.mv_data, v.mv_size);
	*len = v.mv_size;
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(e);
	return out;
}

/* Stores val under key in table t (NULL: deletes the key), with LMDB
 * alone, in the closed environment at path. */
static void raw_put(const char *path, rec_table t, const rec_key *key,
		    const void *val, size_t len)
{
	MDB_val k = { key->len, (void *)key->b }, v = { len, (void *)val };
	MDB_env *e;
	MDB_txn *txn;
	MDB_dbi dbi;

	cr_assert_eq(mdb_env_create(&e), 0);
	cr_assert_eq(mdb_env_set_maxdbs(e, 64), 0);
	cr_assert_eq(mdb_env_open(e, path, 0, 0664), 0);
	cr_assert_eq(mdb_txn_begin(e, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, rec_table_name(t), 0, &dbi), 0);
	if (val)
		cr_assert_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	else
		cr_assert_eq(mdb_del(txn, dbi, &k, NULL), 0);
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(e);
}

/* Run 1 with rows 1 and 2, sealed; the environment closed. */
static void two_rows(const tdir *d, expects *x)
{
	Elspeth__RunRecord run = ELSPETH__RUN_RECORD__INIT;
	rec_env *env = env_open(d->path, 0);
	rec_key rk = key1(1);

	run.run_id = 1;
	run.status = "completed";
	run.canonical_version = CORE_CANONICAL_VERSION;
	cr_assert_eq(rec_put_msg(env, REC_RUNS, &rk, &run.base), 0);
	row_write(env, x, 1, 1);
	story_seal(env, 1, 1);
	row_write(env, x, 1, 2);
	story_seal(env, 1, 2);
	env_close(env);
}

/* Reads of run 1 on the damaged trail: each is 0, "not found" or
 * CORE_EDATA (all when `must_fail`: CORE_EDATA for row 1), never
 * anything else; row 2, read by its seq, is intact. */
static void read_damaged(const tdir *d, bool must_fail)
{
	rec_key run = key1(1), row1 = key2(1, 1), row2 = key2(1, 2);
	rec_key tok2 = key2(1, tok_id(2, 0)), st = key2(1, state_id(1, 1));
	core_err err = { 0 };
	json_t *rep = NULL;
	const void *v;
	size_t n, seen = 0;
	rec_env *env;
	rec_txn *t;
	int rc;

	env = env_open(d->path, REC_READONLY);
	t = txn_begin(env);
	rc = rec_get(t, REC_ROWS, &row1, &v, &n);
	cr_assert(rc == 0 || rc == REC_NOTFOUND || rc == CORE_EDATA, "rec_get: %d", rc);
	if (must_fail)
		cr_assert_eq(rc, CORE_EDATA);
	rc = rec_txn_row(t, 1, 1);
	cr_assert(rc == 0 || rc == CORE_EDATA, "rec_txn_row: %d", rc);
	if (must_fail)
		cr_assert_eq(rc, CORE_EDATA);
	for (size_t i = 0; i < N_PER_ROW; i++) {
		rc = rec_scan(t, per_row[i], &run, count_fn, &seen);
		cr_assert(rc == 0 || rc == CORE_EDATA, "rec_scan %s: %d",
			  rec_table_name(per_row[i]), rc);
		if (must_fail)
			cr_assert_eq(rc, CORE_EDATA, "rec_scan %s", rec_table_name(per_row[i]));
	}
	rc = rec_get(t, REC_NODE_STATES, &st, &v, &n);
	cr_assert(rc == 0 || rc == REC_NOTFOUND || rc == CORE_EDATA, "%d", rc);
	/* Row 2 is intact; its token is found, or the damage is reported:
	 * never read as absent. */
	cr_assert_eq(rec_get(t, REC_ROWS, &row2, &v, &n), 0, "row 2 is intact");
	rec_read_end(t);
	t = txn_begin(env);
	rc = rec_get(t, REC_TOKENS, &tok2, &v, &n);
	cr_assert(rc == 0 || rc == CORE_EDATA, "row 2's token: %d", rc);
	rec_read_end(t);
	if (must_fail) {
		cr_assert_eq(rec_verify(env, 1, &rep, &err), CORE_EDATA);
		cr_assert_null(rep);
		cr_assert(strstr(err.msg, "cannot read the audit trail"), "%s", err.msg);
	}
	env_close(env);
}

/* Offset of the first entry's kind byte in an unpacked fragment. */
static size_t first_entry(const uint8_t *p, size_t n)
{
	size_t i = 1; /* the version byte */

	while (i < n && (p[i] & 0x80))
		i++;
	return i + 1;
}

Test(story_pack, a_damaged_fragment_is_an_error)
{
	expects x = { 0 };
	uint8_t *orig, *bad;
	rec_key k;
	size_t len;
	tdir d;

	setenv("ELSPETH_TRAIL_PACK", "raw", 1); /* the story bytes, as they are */
	tdir_make(&d);
	two_rows(&d, &x);
	orig = raw_first(d.path, REC_TRAIL, &k, &len);
	cr_assert_eq(rec_key_get_u64(k.b, 8), 1, "row 1's fragment");
	cr_assert_eq(orig[0], 0, "codec raw");
	bad = malloc(len);
	cr_assert_not_null(bad);

	/* an unknown story version */
	memcpy(bad, orig, len);
	bad[1] = 99;
	raw_put(d.path, REC_TRAIL, &k, bad, len);
	read_damaged(&d, true);
	/* an unknown entry kind */
	memcpy(bad, orig, len);
	bad[first_entry(orig + 1, len - 1) + 1] = 0xee;
	raw_put(d.path, REC_TRAIL, &k, bad, len);
	read_damaged(&d, true);
	/* cut short: the last entry misses its last field */
	raw_put(d.path, REC_TRAIL, &k, orig, len - 1);
	read_damaged(&d, true);
	/* nothing but the codec byte */
	raw_put(d.path, REC_TRAIL, &k, orig, 1);
	read_damaged(&d, true);
	/* an unknown codec */
	memcpy(bad, orig, len);
	bad[0] = 9;
	raw_put(d.path, REC_TRAIL, &k, bad, len);
	read_damaged(&d, true);
	/* empty */
	raw_put(d.path, REC_TRAIL, &k, orig, 0);
	read_damaged(&d, true);

	/* Random damage: anything but a crash (ASan builds check memory). */
	srand(1234);
	for (int i = 0; i < 150; i++) {
		size_t n = len;

		memcpy(bad, orig, len);
		for (int f = 0; f < 1 + i % 3; f++)
			bad[1 + (size_t)rand() % (len - 1)] ^= (uint8_t)(1 + rand() % 255);
		if (i % 5 == 4)
			n = 1 + (size_t)rand() % (len - 1);
		raw_put(d.path, REC_TRAIL, &k, bad, n);
		read_damaged(&d, false);
	}
	raw_put(d.path, REC_TRAIL, &k, orig, len);
	read_damaged(&d, false);
	free(bad);
	free(orig);
	exp_free(&x);
	tdir_remove(&d);
}

/* zstd-packed fragments: a wrong length, a cut frame, a missing
 * dictionary are CORE_EDATA. */
Test(story_pack, a_damaged_packed_fragment_is_an_error)
{
	expects x = { 0 };
	uint8_t *orig, *bad;
	rec_key k;
	size_t len;
	tdir d;

	setenv("ELSPETH_TRAIL_PACK", "zstd", 1);
	tdir_make(&d);
	two_rows(&d, &x);
	orig = raw_first(d.path, REC_TRAIL, &k, &len);
	cr_assert_eq(orig[0], 1, "codec zstd");
	bad = malloc(len);
	cr_assert_not_null(bad);
	memcpy(bad, orig, len);
	bad[1] ^= 0x01; /* the unpacked length (uv), off by one */
	raw_put(d.path, REC_TRAIL, &k, bad, len);
	read_damaged(&d, true);
	raw_put(d.path, REC_TRAIL, &k, orig, len - 3);
	read_damaged(&d, true);
	srand(99);
	for (int i = 0; i < 60; i++) {
		memcpy(bad, orig, len);
		bad[3 + (size_t)rand() % (len - 3)] ^= (uint8_t)(1 + rand() % 255);
		raw_put(d.path, REC_TRAIL, &k, bad, len);
		read_damaged(&d, false);
	}
	free(bad);
	free(orig);
	exp_free(&x);
	tdir_remove(&d);
}

/* ------------------------------------------------------- packings */

#define PACK_ROWS 700

/* Run 1: PACK_ROWS rows (enough for a dictionary to be trained), each
 * with a call of state id(seq, 0) carrying bodies alike from row to row;
 * written in two sessions (the second reopens the trail, as a resume
 * does). */
static void pack_trail(const tdir *d, expects *x)
{
	Elspeth__CallRecord c = ELSPETH__CALL_RECORD__INIT;
	char req[256], resp[256];
	rec_env *env = NULL;

	for (uint64_t seq = 1; seq <= PACK_ROWS; seq++) {
		rec_key k = k2u(1, state_id(seq, 1), 0);

		if (seq == 1 || seq == PACK_ROWS / 2 + 1) {
			if (env)
				env_close(env);
			env = env_open(d->path, 0);
		}
		row_write(env, x, 1, seq);
		snprintf(req, sizeof(req), "{\"model\":\"m\",\"messages\":[{\"role\":"
			 "\"user\",\"content\":\"Classify ticket %llu: printer on fire\"}]}",
			 (unsigned long long)seq);
		snprintf(resp, sizeof(resp), "{\"choices\":[{\"message\":{\"content\":"
			 "\"urgent-%llu\"}}],\"usage\":{\"total_tokens\":%llu}}",
			 (unsigned long long)seq, (unsigned long long)seq % 97);
		c.run_id = 1;
		c.state_id = state_id(seq, 1);
		c.call_type = "llm";
		c.status = "success";
		c.http_status = 200;
		c.request.data = (uint8_t *)req;
		c.request.len = strlen(req) + (seq % 2); /* with a NUL byte, odd rows */
		c.response.data = (uint8_t *)resp;
		c.response.len = strlen(resp);
		c.latency_ns = seq * 1000;
		c.row_id = seq;
		cr_assert_eq(rec_put_msg_now(env, REC_CALLS, &k, &c.base), 0);
		exp_add(x, seq, REC_CALLS, &k, &c.base);
		story_seal(env, 1, seq);
	}
	env_close(env);
}

/* A digest of everything run 1's per-row tables and calls read as. */
typedef struct digest {
	uint8_t sum[CORE_SHA256_LEN];
	size_t n;
} digest;

static int digest_fn(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	digest *g = ctx;
	core_buf b = { 0 };

	cr_assert_eq(core_buf_append(&b, g->sum, sizeof(g->sum)), 0);
	cr_assert_eq(core_buf_append(&b, k, kl), 0);
	cr_assert_eq(core_buf_append(&b, v, vl), 0);
	core_sha256(b.data, b.len, g->sum);
	core_buf_release(&b);
	g->n++;
	return 0;
}

/* Reads the packed trail back: every record as written, every value's
 * codec is `codec` (the first byte of its stored form) or raw where
 * packing did not pay, a dictionary stored for `dict`; *g receives the
 * digest of it all. */
static void pack_check(const tdir *d, const expects *x, int codec, digest *g)
{
	rec_key run = key1(1), dict;
	size_t by_codec[3] = { 0 }, vals = 0;
	const void *v;
	size_t n;
	rec_env *env = env_open(d->path, REC_READONLY);
	rec_txn *t = txn_begin(env);
	MDB_txn *mt = rec__txn_mdb(t);
	MDB_cursor *c;
	MDB_val mk, mv;

	check_gets(t, x);
	check_scans(t, x, 1);
	for (uint64_t seq = 1; seq <= PACK_ROWS; seq += 97)
		check_payloads(t, 1, seq);
	memset(g, 0, sizeof(*g));
	for (size_t i = 0; i < N_PER_ROW; i++)
		cr_assert_eq(rec_scan(t, per_row[i], &run, digest_fn, g), 0);
	cr_assert_eq(rec_scan(t, REC_CALLS, &run, digest_fn, g), 0);
	for (rec_table tab = REC_CALLS; tab != REC_TABLE_LAST;
	     tab = tab == REC_CALLS ? REC_TRAIL : REC_TABLE_LAST) {
		cr_assert_eq(mdb_cursor_open(mt, env->dbi[tab], &c), 0);
		for (int rc = mdb_cursor_get(c, &mk, &mv, MDB_FIRST); !rc;
		     rc = mdb_cursor_get(c, &mk, &mv, MDB_NEXT)) {
			uint8_t k0 = ((const uint8_t *)mv.mv_data)[0];

			cr_assert_lt(k0, 3, "codec %u", k0);
			by_codec[k0]++;
			vals++;
		}
		mdb_cursor_close(c);
	}
	fprintf(stderr, "packing %d: %zu values: %zu raw, %zu zstd, %zu dict\n", codec,
		vals, by_codec[0], by_codec[1], by_codec[2]);
	cr_assert_eq(vals, 2 * PACK_ROWS, "a fragment and a call a row");
	/* raw: all raw; zstd: no dictionary; dict: zstd until the dictionary
	 * is trained (on the run's first values), then with it. */
	if (codec < 2)
		cr_assert_eq(by_codec[2], 0, "a dictionary in packing %d", codec);
	if (codec == 0)
		cr_assert_eq(by_codec[1], 0, "zstd in packing raw");
	cr_assert_gt(by_codec[codec], codec ? vals / 2 : vals - 1,
		     "most values packed so");
	dict = key1(1); /* the run's dictionary: (run, id 1) */
	rec_key_u32(&dict, 1);
	cr_assert_eq(rec_get(t, REC_DICTS, &dict, &v, &n), codec == 2 ? 0 : REC_NOTFOUND);
	rec_read_end(t);
	env_close(env);
}

static void pack_mode(const char *mode, int codec, digest *g)
{
	expects x = { 0 };
	tdir d;

	setenv("ELSPETH_TRAIL_PACK", mode, 1);
	tdir_make(&d);
	pack_trail(&d, &x);
	/* Readers do not need the variable: the codec is in each value. */
	unsetenv("ELSPETH_TRAIL_PACK");
	pack_check(&d, &x, codec, g);
	exp_free(&x);
	tdir_remove(&d);
}

Test(story_pack, the_three_packings_read_back_the_same, .timeout = TIMEOUT)
{
	digest raw, zstd, dict;

	pack_mode("raw", 0, &raw);
	pack_mode("zstd", 1, &zstd);
	pack_mode("dict", 2, &dict);
	cr_assert_gt(raw.n, 10 * PACK_ROWS);
	cr_assert_eq(raw.n, zstd.n);
	cr_assert_eq(raw.n, dict.n);
	cr_assert_eq(memcmp(raw.sum, zstd.sum, sizeof(raw.sum)), 0, "zstd reads otherwise");
	cr_assert_eq(memcmp(raw.sum, dict.sum, sizeof(raw.sum)), 0, "dict reads otherwise");
}

/* The dictionary is needed to read: without it, CORE_EDATA. */
Test(story_pack, a_missing_dictionary_is_an_error)
{
	expects x = { 0 };
	rec_key dk = key1(1), row = key2(1, PACK_ROWS);
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	setenv("ELSPETH_TRAIL_PACK", "dict", 1);
	tdir_make(&d);
	pack_trail(&d, &x);
	rec_key_u32(&dk, 1);
	raw_put(d.path, REC_DICTS, &dk, NULL, 0);
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(rec_get(t, REC_ROWS, &row, &v, &n), CORE_EDATA,
		     "the last row was packed with the dictionary");
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* test_recorder_story.c — the row stories (recorder.h "row stories",
 * recorder/story.h): every per-row record type goes through
 * rec_story_put -> seal -> rec_get/rec_scan/rec_last unchanged; a row in
 * several fragments (a flush between, records after the seal, another
 * attempt) reads as one, the later put of a key winning; payloads are
 * stored once per fragment and found only while their row is read; a scan
 * of a run reads every row of it, whatever run follows. Damage and the
 * packings: test_recorder_story_pack.c. */
#include "test_recorder_story_util.h"

TestSuite(story, .timeout = TIMEOUT);

Test(story, every_record_type_round_trips)
{
	expects x = { 0 };
	char hex[CORE_SHA256_HEX_LEN + 1];
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	row_write(env, &x, 3, 10);
	story_seal(env, 3, 10);
	env_flush(env);
	t = txn_begin(env);
	/* The payloads of a row are not found outside it. */
	hex_of("{\"run\":3,\"seq\":10}", hex);
	cr_assert_eq(rec_get_payload(t, hex, &v, &n), REC_NOTFOUND);
	check_gets(t, &x);
	check_scans(t, &x, 3);
	check_payloads(t, 3, 10);
	rec_read_end(t);
	env_close(env);

	/* The same from another process's point of view: read-only. */
	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	check_scans(t, &x, 3);
	check_gets(t, &x);
	check_payloads(t, 3, 10);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* More records of one table in a row than view_scan sorts on its stack,
 * put in no order: a scan gives them in key order. */
Test(story, many_records_of_a_row_scan_in_key_order)
{
	Elspeth__TokenRecord tk = ELSPETH__TOKEN_RECORD__INIT;
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	expects x = { 0 };
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	tk.run_id = 1;
	tk.token_id = 5;
	tk.row_id = 1;
	put_exp(env, &x, 1, 1, &tk.base);
	for (uint64_t i = 0; i < 300; i++) {
		s.run_id = 1;
		s.state_id = (i * 7919) % 1000 + 1; /* distinct, shuffled */
		s.token_id = 5;
		s.node_id = (uint32_t)(i % 4);
		s.status = "completed";
		put_exp(env, &x, 1, 1, &s.base);
	}
	trail_flush(env);
	t = txn_begin(env);
	check_scans(t, &x, 1);
	check_gets(t, &x);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* ------------------------------------------------------- fragments */

static size_t fragments(rec_txn *t, uint64_t run, uint64_t seq)
{
	rec_key p = key2(run, seq);

	return count_keys(t, REC_TRAIL, &p);
}

/* A flush between two puts of the same row: the row is two fragments,
 * read as one; a payload is stored again in the fragment that names it
 * again. A flush or a seal with nothing new writes no fragment. */
Test(story, a_row_in_two_fragments_reads_as_one)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	Elspeth__TokenRecord tk = ELSPETH__TOKEN_RECORD__INIT;
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	Elspeth__TokenOutcomeRecord o = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	char h1[CORE_SHA256_HEX_LEN + 1], h2[CORE_SHA256_HEX_LEN + 1];
	rec_key k = key2(1, 4);
	expects x = { 0 };
	const void *v;
	size_t n;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	story_payload(env, 1, 4, "{\"a\":1}", 7, h1);
	r.run_id = 1;
	r.row_id = r.seq = 4;
	r.source_hash = r.payload_ref = h1;
	put_exp(env, &x, 1, 4, &r.base);
	tk.run_id = 1;
	tk.token_id = 9;
	tk.row_id = 4;
	put_exp(env, &x, 1, 4, &tk.base);
	trail_flush(env); /* a checkpoint: what the row has so far */

	/* Readers see the first fragment already. */
	t = txn_begin(env);
	cr_assert_eq(fragments(t, 1, 4), 1);
	cr_assert_eq(rec_get(t, REC_ROWS, &k, &v, &n), 0);
	cr_assert_eq(count_keys(t, REC_TOKENS_BY_ROW, &k), 1);
	k = key2(1, 20);
	cr_assert_eq(rec_get(t, REC_NODE_STATES, &k, &v, &n), REC_NOTFOUND, "not yet");
	rec_read_end(t);

	story_payload(env, 1, 4, "{\"a\":1}", 7, h2); /* again, in fragment 2 */
	cr_assert_str_eq(h1, h2);
	s.run_id = 1;
	s.state_id = 20;
	s.token_id = 9;
	s.input_hash = h1;
	s.status = "completed";
	put_exp(env, &x, 1, 4, &s.base);
	o.run_id = 1;
	o.token_id = 9;
	o.row_id = 4;
	o.outcome = "COMPLETED";
	put_exp(env, &x, 1, 4, &o.base);
	story_seal(env, 1, 4);
	story_seal(env, 1, 4);          /* nothing new: no fragment */
	cr_assert_eq(rec_story_seal(env, 1, 99), 0, "a row never put: nothing");
	trail_flush(env);               /* nothing open: no fragment */
	t = txn_begin(env);
	cr_assert_eq(fragments(t, 1, 4), 2);
	cr_assert_eq(fragments(t, 1, 99), 0);
	check_gets(t, &x);
	check_scans(t, &x, 1);
	/* The state (fragment 2) names the payload; found with the row. */
	cr_assert_eq(rec_txn_row(t, 1, 4), 0);
	cr_assert_eq(rec_get_payload(t, h1, &v, &n), 0);
	cr_assert_eq(n, 7);
	cr_assert_eq(memcmp(v, "{\"a\":1}", 7), 0);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* Records put after their row was sealed (an aggregation's member states
 * recorded after the release) are a fragment of their own; those still
 * open at rec_close are written by it. */
Test(story, records_after_the_seal_are_read)
{
	Elspeth__TokenRecord tk = ELSPETH__TOKEN_RECORD__INIT;
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	Elspeth__TokenOutcomeRecord o = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	expects x = { 0 };
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	row_write(env, &x, 2, 5);
	story_seal(env, 2, 5);
	env_flush(env);
	/* late: a state and the outcome of a new token of row 5, sealed */
	tk.run_id = 2;
	tk.token_id = 500;
	tk.row_id = 5;
	put_exp(env, &x, 2, 5, &tk.base);
	s.run_id = 2;
	s.state_id = 501;
	s.token_id = 500;
	s.status = "completed";
	put_exp(env, &x, 2, 5, &s.base);
	story_seal(env, 2, 5);
	/* later still, never sealed: rec_close keeps it */
	o.run_id = 2;
	o.token_id = 500;
	o.row_id = 5;
	o.outcome = "CONSUMED_IN_BATCH";
	put_exp(env, &x, 2, 5, &o.base);
	env_close(env);

	env = env_open(d.path, REC_READONLY);
	t = txn_begin(env);
	cr_assert_eq(fragments(t, 2, 5), 3);
	check_gets(t, &x);
	check_scans(t, &x, 2);
	check_payloads(t, 2, 5);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* A payload named twice in a fragment is stored once: the fragment is
 * as long as one with the payload once. */
Test(story, a_payload_is_stored_once_per_fragment)
{
	static char big[4096];
	char h[4][CORE_SHA256_HEX_LEN + 1];
	rec_key p1 = key2(1, 1), p2 = key2(1, 2);
	const void *k, *v;
	size_t kl, vl, len1, len2;
	rec_env *env;
	rec_txn *t;
	tdir d;

	memset(big, 'x', sizeof(big));
	setenv("ELSPETH_TRAIL_PACK", "raw", 1); /* stored lengths = story lengths */
	tdir_make(&d);
	env = env_open(d.path, 0);
	story_payload(env, 1, 1, big, sizeof(big), h[0]);
	story_payload(env, 1, 1, "small", 5, h[1]);
	story_seal(env, 1, 1);
	story_payload(env, 1, 2, big, sizeof(big), h[2]);
	story_payload(env, 1, 2, "small", 5, h[3]);
	story_payload(env, 1, 2, big, sizeof(big), h[2]);
	story_payload(env, 1, 2, "small", 5, h[3]);
	story_seal(env, 1, 2);
	env_flush(env);
	cr_assert_str_eq(h[0], h[2]);
	cr_assert_str_eq(h[1], h[3]);
	t = txn_begin(env);
	cr_assert_eq(rec_last(t, REC_TRAIL, &p1, &k, &kl, &v, &vl), 0);
	len1 = vl;
	cr_assert_eq(rec_last(t, REC_TRAIL, &p2, &k, &kl, &v, &vl), 0);
	len2 = vl;
	cr_assert_eq(len1, len2, "row 1: %zu bytes, row 2 (each payload twice): %zu",
		     len1, len2);
	cr_assert_lt(len2, 2 * sizeof(big), "the big payload is in once");
	cr_assert_eq(rec_txn_row(t, 1, 2), 0);
	cr_assert_eq(rec_get_payload(t, h[2], &v, &vl), 0);
	cr_assert_eq(vl, sizeof(big));
	cr_assert_eq(rec_get_payload(t, h[3], &v, &vl), 0);
	cr_assert_eq(vl, 5);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

/* A record put again under the same key replaces the first: in the same
 * fragment, in a later one, and in a later attempt's (a resume). */
Test(story, a_later_put_of_the_same_key_wins)
{
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	Elspeth__TokenOutcomeRecord o = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	Elspeth__TokenRecord tk = ELSPETH__TOKEN_RECORD__INIT;
	rec_key p = key2(1, 1);
	expects x = { 0 };
	const void *k, *v;
	size_t kl, vl;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	tk.run_id = 1;
	tk.token_id = 1;
	tk.row_id = 1;
	put_exp(env, &x, 1, 1, &tk.base);
	s.run_id = 1;
	s.state_id = 1;
	s.token_id = 1;
	s.status = "open";
	put_exp(env, &x, 1, 1, &s.base);
	s.status = "completed";                 /* same fragment */
	s.duration_ns = 5;
	put_exp(env, &x, 1, 1, &s.base);
	o.run_id = 1;
	o.token_id = 1;
	o.row_id = 1;
	o.outcome = "BUFFERED";
	put_exp(env, &x, 1, 1, &o.base);
	trail_flush(env);
	o.outcome = "CONSUMED_IN_BATCH";        /* a later fragment */
	put_exp(env, &x, 1, 1, &o.base);
	story_seal(env, 1, 1);
	env_flush(env);
	t = txn_begin(env);
	check_gets(t, &x);
	check_scans(t, &x, 1);
	rec_read_end(t);
	env_close(env);

	/* A resume (attempt 1) records the state again. */
	env = env_open(d.path, 0);
	rec_story_attempt(env, 1);
	s.status = "failed";
	s.error = "redone";
	put_exp(env, &x, 1, 1, &s.base);
	story_seal(env, 1, 1);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_last(t, REC_TRAIL, &p, &k, &kl, &v, &vl), 0);
	cr_assert_eq(kl, 24);
	cr_assert_eq(rec_key_get_u32(k, 16), 1, "the fragment's key names attempt 1");
	check_gets(t, &x);
	check_scans(t, &x, 1);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* rec_last over per-row tables: the greatest key under the prefix,
 * whatever row holds it. */
Test(story, last_of_a_per_row_table)
{
	static const uint64_t tokens[] = { 30, 50, 7, 12, 40 }; /* rows 1..5 */
	Elspeth__TokenRecord tk = ELSPETH__TOKEN_RECORD__INIT;
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	Elspeth__TokenRecord *got;
	rec_key p1 = key1(1), p3 = key1(3), p = key2(1, 12), row3 = key2(1, 3);
	const void *k, *v;
	size_t kl, vl;
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (uint64_t run = 1; run <= 2; run++)
		for (uint64_t seq = 1; seq <= 5; seq++) {
			r.run_id = run;
			r.row_id = r.seq = seq;
			story_put(env, run, seq, &r.base);
			tk.run_id = run;
			tk.token_id = tokens[seq - 1] + (run - 1) * 100;
			tk.row_id = seq;
			story_put(env, run, seq, &tk.base);
			story_seal(env, run, seq);
		}
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_last(t, REC_TOKENS, &p1, &k, &kl, &v, &vl), 0);
	cr_assert_eq(kl, 16);
	cr_assert_eq(rec_key_get_u64(k, 0), 1);
	cr_assert_eq(rec_key_get_u64(k, 8), 50, "token 50 (row 2), not row 5's");
	got = elspeth__token_record__unpack(NULL, vl, v);
	cr_assert_not_null(got);
	cr_assert_eq(got->row_id, 2);
	elspeth__token_record__free_unpacked(got, NULL);
	cr_assert_eq(rec_last(t, REC_ROWS, &p1, &k, &kl, &v, &vl), 0);
	cr_assert_eq(rec_key_get_u64(k, 8), 5);
	cr_assert_eq(rec_last(t, REC_TOKENS, &p, &k, &kl, &v, &vl), 0);
	cr_assert_eq(rec_key_get_u64(k, 8), 12);
	cr_assert_eq(rec_last(t, REC_TOKENS_BY_ROW, &row3, &k, &kl, &v, &vl), 0);
	cr_assert_eq(kl, 24);
	cr_assert_eq(rec_key_get_u64(k, 16), 7);
	cr_assert_eq(vl, 0);
	cr_assert_eq(rec_last(t, REC_TOKENS, &p3, &k, &kl, &v, &vl), REC_NOTFOUND);
	cr_assert_eq(rec_last(t, REC_NODE_STATES, &p1, &k, &kl, &v, &vl), REC_NOTFOUND);
	p1 = key1(2);
	cr_assert_eq(rec_last(t, REC_TOKENS, &p1, &k, &kl, &v, &vl), 0);
	cr_assert_eq(rec_key_get_u64(k, 8), 150);
	rec_read_end(t);
	env_close(env);
	tdir_remove(&d);
}

/* -------------------------------------------------------- many runs */

typedef struct row_walk {
	rec_txn *t;
	uint64_t run, next;
} row_walk;

/* Rows come in seq order, each with its payloads readable while it is
 * the row being scanned, and its tokens (a nested read). */
static int walk_fn(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	row_walk *w = ctx;
	uint64_t seq = rec_key_get_u64(k, 8);
	Elspeth__RowRecord *r = elspeth__row_record__unpack(NULL, vl, v);
	char src[64], hex[CORE_SHA256_HEX_LEN + 1];
	rec_key rk = key2(w->run, seq);
	const void *p;
	size_t n;

	cr_assert_eq(kl, 16);
	cr_assert_eq(seq, w->next, "run %llu: row %llu, want %llu",
		     (unsigned long long)w->run, (unsigned long long)seq,
		     (unsigned long long)w->next);
	cr_assert_not_null(r);
	snprintf(src, sizeof(src), "{\"run\":%llu,\"seq\":%llu}",
		 (unsigned long long)w->run, (unsigned long long)seq);
	hex_of(src, hex);
	cr_assert_str_eq(r->payload_ref, hex);
	cr_assert_eq(rec_get_payload(w->t, hex, &p, &n), 0, "row %llu's payload",
		     (unsigned long long)seq);
	cr_assert_eq(n, strlen(src));
	cr_assert_eq(count_keys(w->t, REC_TOKENS_BY_ROW, &rk), 2);
	/* the scanned row is still the current one */
	cr_assert_eq(rec_get_payload(w->t, hex, &p, &n), 0);
	elspeth__row_record__free_unpacked(r, NULL);
	w->next++;
	return 0;
}

/* Runs 1, 2 and 4 with 6, 5 and 3 rows (run 3 has none), written
 * interleaved: a scan of each reads every row of it, the last row of a
 * run followed by another included; so do the token and state lookups
 * of a fresh transaction (the run's id index). */
Test(story, a_scan_reads_every_row_of_each_run)
{
	static const uint64_t runs[] = { 1, 2, 4 }, rows[] = { 6, 5, 3 };
	expects x = { 0 };
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (uint64_t seq = 1; seq <= 6; seq++)
		for (int i = 2; i >= 0; i--)
			if (seq <= rows[i]) {
				row_write(env, &x, runs[i], seq);
				story_seal(env, runs[i], seq);
			}
	env_flush(env);
	for (int i = 0; i < 3; i++) {
		row_walk w = { .run = runs[i], .next = 1 };
		rec_key p = key1(runs[i]), last = key2(runs[i], tok_id(rows[i], 0));
		const void *v;
		size_t n;

		/* a fresh txn: the last row's token is found through the index */
		t = txn_begin(env);
		cr_assert_eq(rec_get(t, REC_TOKENS, &last, &v, &n), 0,
			     "run %llu: the token of its last row", (unsigned long long)runs[i]);
		last = key2(runs[i], state_id(rows[i], 1));
		cr_assert_eq(rec_get(t, REC_NODE_STATES, &last, &v, &n), 0,
			     "run %llu: the state of its last row", (unsigned long long)runs[i]);
		rec_read_end(t);

		t = txn_begin(env);
		w.t = t;
		cr_assert_eq(rec_scan(t, REC_ROWS, &p, walk_fn, &w), 0);
		cr_assert_eq(w.next, rows[i] + 1, "run %llu: %llu rows read, want %llu",
			     (unsigned long long)runs[i], (unsigned long long)w.next - 1,
			     (unsigned long long)rows[i]);
		check_scans(t, &x, runs[i]);
		rec_read_end(t);
	}
	t = txn_begin(env);
	check_gets(t, &x);
	{
		rec_key p3 = key1(3);

		for (size_t i = 0; i < N_PER_ROW; i++)
			cr_assert_eq(count_keys(t, per_row[i], &p3), 0, "run 3 is empty");
	}
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* What a scan gave: each record's table (its index in the scan) and key. */
typedef struct pass_seen {
	size_t n;
	struct { size_t tab; uint8_t key[REC_KEY_MAX]; size_t kl; } r[256];
} pass_seen;
typedef struct pass_seen_ctx {
	pass_seen *s;
	size_t tab;
} pass_seen_ctx;

static int pass_seen_fn(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	pass_seen_ctx *c = ctx;

	(void)v, (void)vl;
	cr_assert_lt(c->s->n, 256);
	cr_assert_leq(kl, REC_KEY_MAX);
	c->s->r[c->s->n].tab = c->tab;
	memcpy(c->s->r[c->s->n].key, k, kl);
	c->s->r[c->s->n++].kl = kl;
	return 0;
}

/* rec_scan_rows_multi over rows 2..4 of 6 gives, row by row, what
 * rec_scan_rows of each table gives for that row, tables in the order
 * asked (the SQL export's pass over the rows relies on it); a table that
 * is not per row is refused. */
Test(story, a_pass_over_several_tables_reads_row_by_row)
{
	static const rec_table tabs[] = { REC_NODE_STATES, REC_ROWS, REC_TOKENS };
	pass_seen multi = { 0 }, one = { 0 };
	pass_seen_ctx mc[3] = { { &multi, 0 }, { &multi, 1 }, { &multi, 2 } };
	void *ctxs[3] = { &mc[0], &mc[1], &mc[2] };
	rec_table calls = REC_CALLS;
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1];
	expects x = { 0 };
	rec_env *env;
	rec_txn *t;
	tdir d;

	tdir_make(&d);
	env = env_open(d.path, 0);
	for (uint64_t seq = 1; seq <= 6; seq++) {
		row_write(env, &x, 2, seq);
		story_seal(env, 2, seq);
	}
	/* Row 3 in a second fragment: a state recorded after its seal (an
	 * aggregation's member) is read with the row, in key order. */
	hex_of("late", hex);
	s.run_id = 2;
	s.state_id = 1;
	s.token_id = tok_id(3, 0);
	s.input_hash = hex;
	s.status = "completed";
	put_exp(env, &x, 2, 3, &s.base);
	story_seal(env, 2, 3);
	env_flush(env);
	t = txn_begin(env);
	cr_assert_eq(fragments(t, 2, 3), 2);
	cr_assert_eq(rec_scan_rows_multi(t, tabs, 3, 2, 2, 4, pass_seen_fn, ctxs), 0);
	for (uint64_t seq = 2; seq <= 4; seq++)
		for (size_t i = 0; i < 3; i++) {
			pass_seen_ctx c = { &one, i };

			cr_assert_eq(rec_scan_rows(t, tabs[i], 2, seq, seq, pass_seen_fn, &c), 0);
		}
	cr_assert_gt(one.n, 9, "each row has records of each table");
	cr_assert_eq(multi.n, one.n);
	for (size_t i = 0; i < one.n; i++) {
		cr_assert_eq(multi.r[i].tab, one.r[i].tab, "record %zu", i);
		cr_assert_eq(multi.r[i].kl, one.r[i].kl, "record %zu", i);
		cr_assert_eq(memcmp(multi.r[i].key, one.r[i].key, one.r[i].kl), 0,
			     "record %zu", i);
	}
	cr_assert_eq(rec_scan_rows_multi(t, &calls, 1, 2, 1, 6, pass_seen_fn, ctxs), CORE_EINTERNAL);
	rec_read_end(t);
	env_close(env);
	exp_free(&x);
	tdir_remove(&d);
}

/* A row's payload is its story's: another row does not find it, a
 * run-level payload (REC_PAYLOADS) is found from any row, and verify
 * reports a row naming a payload its story lacks. */
/* A completed run 1, in a new Landscape under d. */
static rec_env *completed_run(tdir *d)
{
	Elspeth__RunRecord run = ELSPETH__RUN_RECORD__INIT;
	rec_key rk = key1(1);
	rec_env *env;

	tdir_make(d);
	env = env_open(d->path, 0);
	run.run_id = 1;
	run.status = "completed";
	run.canonical_version = CORE_CANONICAL_VERSION;
	cr_assert_eq(rec_put_msg(env, REC_RUNS, &rk, &run.base), 0);
	return env;
}

Test(story, a_rows_payloads_are_its_own)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	char h1[CORE_SHA256_HEX_LEN + 1], h2[CORE_SHA256_HEX_LEN + 1];
	char hr[CORE_SHA256_HEX_LEN + 1];
	core_err err = { 0 };
	json_t *rep = NULL;
	const void *v;
	size_t n;
	tdir d;
	rec_env *env = completed_run(&d);
	rec_txn *t;

	cr_assert_eq(rec_put_payload(env, "{\"run\":1}", 9, hr), 0);
	story_payload(env, 1, 1, "{\"row\":1}", 9, h1);
	story_payload(env, 1, 2, "{\"row\":2}", 9, h2);
	r.run_id = 1;
	r.row_id = r.seq = 1;
	r.source_hash = r.payload_ref = h1;
	story_put(env, 1, 1, &r.base);
	r.row_id = r.seq = 2;
	r.source_hash = r.payload_ref = h1; /* row 1's payload: not in row 2 */
	story_put(env, 1, 2, &r.base);
	trail_flush(env);
	t = txn_begin(env);
	cr_assert_eq(rec_txn_row(t, 1, 1), 0);
	cr_assert_eq(rec_get_payload(t, h1, &v, &n), 0);
	cr_assert_eq(rec_get_payload(t, h2, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_get_payload(t, hr, &v, &n), 0, "run-level payloads always");
	cr_assert_eq(rec_txn_row(t, 1, 2), 0);
	cr_assert_eq(rec_get_payload(t, h2, &v, &n), 0);
	cr_assert_eq(rec_get_payload(t, h1, &v, &n), REC_NOTFOUND);
	cr_assert_eq(rec_txn_row(t, 1, 3), 0, "a row without a story");
	cr_assert_eq(rec_get_payload(t, h2, &v, &n), REC_NOTFOUND);
	rec_read_end(t);
	cr_assert_eq(rec_run_chain(env, 1, NULL, &err), 0, "%s", err.msg);
	cr_assert_eq(rec_verify(env, 1, &rep, &err), 0, "%s", err.msg);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 1,
		     "row 2's source payload: %s",
		     json_dumps(json_object_get(rep, "violations"), 0));
	cr_assert(strstr(json_string_value(json_array_get(json_object_get(rep, "violations"),
							  0)), "is missing"));
	json_decref(rep);
	env_close(env);
	tdir_remove(&d);
}

/* A node state at a node the run never recorded (a run killed before its
 * nodes reached the Landscape, resumed by a build that did not record
 * them) is a violation; one at a recorded node is not. */
Test(story, a_state_at_an_unrecorded_node_is_a_violation)
{
	Elspeth__NodeRecord node = ELSPETH__NODE_RECORD__INIT;
	Elspeth__NodeStateRecord st = ELSPETH__NODE_STATE_RECORD__INIT;
	char h[CORE_SHA256_HEX_LEN + 1];
	core_err err = { 0 };
	json_t *rep = NULL, *viol;
	size_t i, unrecorded = 0;
	rec_key nk;
	tdir d;
	rec_env *env = completed_run(&d);

	node.run_id = 1;
	node.node_id = 0;
	node.name = node.kind = node.plugin = "n";
	rec_key_init(&nk);
	rec_key_u64(&nk, 1);
	rec_key_u32(&nk, 0);
	cr_assert_eq(rec_put_msg(env, REC_NODES, &nk, &node.base), 0);
	story_payload(env, 1, 1, "{\"row\":1}", 9, h);
	st.run_id = 1;
	st.token_id = 1;
	st.status = "completed";
	st.input_hash = st.output_hash = h;
	st.state_id = 1;
	st.node_id = 0; /* recorded */
	story_put(env, 1, 1, &st.base);
	st.state_id = 2;
	st.node_id = 7; /* never recorded */
	story_put(env, 1, 1, &st.base);
	trail_flush(env);
	cr_assert_eq(rec_verify(env, 1, &rep, &err), 0, "%s", err.msg);
	viol = json_object_get(rep, "violations");
	for (i = 0; i < json_array_size(viol); i++)
		if (strstr(json_string_value(json_array_get(viol, i)),
			   "is at node 7, which the run did not record"))
			unrecorded++;
		else
			cr_assert_null(strstr(json_string_value(json_array_get(viol, i)),
					      "which the run did not record"),
				       "state 1 is at a recorded node: %s",
				       json_string_value(json_array_get(viol, i)));
	cr_assert_eq(unrecorded, 1, "%s", json_dumps(viol, 0));
	json_decref(rep);
	env_close(env);
	tdir_remove(&d);
}

/* test_recorder_story_util.h — what the row story tests share: records
 * of every per-row type written into stories while the test notes what
 * the per-row tables must then hold (expects), and the checks that they
 * do, through rec_get and rec_scan, field by field. */
#ifndef TEST_RECORDER_STORY_UTIL_H
#define TEST_RECORDER_STORY_UTIL_H

#include "test_recorder_util.h"

#define NS0 1700000000000000000ull

static const rec_table per_row[] = {
	REC_ROWS, REC_TOKENS, REC_TOKENS_BY_ROW, REC_TOKEN_PARENTS,
	REC_NODE_STATES, REC_STATES_BY_TOKEN, REC_ROUTING_EVENTS,
	REC_ARTIFACTS, REC_TOKEN_OUTCOMES, REC_VALIDATION_ERRORS,
	REC_TRANSFORM_ERRORS,
};
#define N_PER_ROW (sizeof(per_row) / sizeof(per_row[0]))

/* ------------------------------------------------- comparing messages */

/* got (packed) decodes to a message equal to want, field by field (the
 * per-row records and CallRecord hold scalars, strings and bytes only),
 * and packs to the same bytes. */
static inline void assert_msg_eq(const ProtobufCMessage *want, const void *v,
				 size_t vl, const char *what)
{
	const ProtobufCMessageDescriptor *d = want->descriptor;
	ProtobufCMessage *got = protobuf_c_message_unpack(d, NULL, vl, v);
	size_t n = protobuf_c_message_get_packed_size(want);
	uint8_t *a, *b;

	cr_assert_not_null(got, "%s: undecodable %s", what, d->name);
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *w = (const char *)want + f->offset;
		const char *g = (const char *)got + f->offset;

		cr_assert_eq(f->label, PROTOBUF_C_LABEL_NONE, "%s.%s", d->name, f->name);
		switch (f->type) {
		case PROTOBUF_C_TYPE_UINT64:
			cr_assert_eq(*(const uint64_t *)w, *(const uint64_t *)g,
				     "%s: %s.%s: want %llu, got %llu", what, d->name, f->name,
				     (unsigned long long)*(const uint64_t *)w,
				     (unsigned long long)*(const uint64_t *)g);
			break;
		case PROTOBUF_C_TYPE_UINT32:
			cr_assert_eq(*(const uint32_t *)w, *(const uint32_t *)g,
				     "%s: %s.%s: want %u, got %u", what, d->name, f->name,
				     *(const uint32_t *)w, *(const uint32_t *)g);
			break;
		case PROTOBUF_C_TYPE_BOOL:
			cr_assert_eq(!!*(const protobuf_c_boolean *)w,
				     !!*(const protobuf_c_boolean *)g, "%s: %s.%s", what,
				     d->name, f->name);
			break;
		case PROTOBUF_C_TYPE_STRING:
			cr_assert_str_eq(*(char *const *)g, *(char *const *)w,
					 "%s: %s.%s: want '%s', got '%s'", what, d->name,
					 f->name, *(char *const *)w, *(char *const *)g);
			break;
		case PROTOBUF_C_TYPE_BYTES: {
			const ProtobufCBinaryData *x = (const void *)w, *y = (const void *)g;

			cr_assert_eq(x->len, y->len, "%s: %s.%s: length", what, d->name,
				     f->name);
			cr_assert(!x->len || !memcmp(x->data, y->data, x->len),
				  "%s: %s.%s: bytes", what, d->name, f->name);
			break;
		}
		default:
			cr_assert_fail("%s.%s: a field type this test does not compare",
				       d->name, f->name);
		}
	}
	cr_assert_eq(protobuf_c_message_get_packed_size(got), n, "%s: packed size", what);
	a = malloc(n + 1);
	b = malloc(n + 1);
	cr_assert(a && b);
	protobuf_c_message_pack(want, a);
	protobuf_c_message_pack(got, b);
	cr_assert_eq(memcmp(a, b, n), 0, "%s: packed bytes", what);
	free(a);
	free(b);
	protobuf_c_message_free_unpacked(got, NULL);
}

/* ------------------------------------------------------ expectations */

/* What the per-row tables must hold: (table, key) -> packed value ("" for
 * the index tables); a later expectation of the same key replaces one. */
typedef struct expect {
	rec_table table;
	uint64_t seq;      /* the row whose story holds it */
	rec_key key;
	uint8_t *val;
	size_t vlen;
	const ProtobufCMessageDescriptor *desc; /* NULL: an index entry */
} expect;

typedef struct expects {
	expect *e;
	size_t n, cap;
} expects;

static inline expect *exp_slot(expects *x, rec_table t, const rec_key *k)
{
	for (size_t i = 0; i < x->n; i++)
		if (x->e[i].table == t && x->e[i].key.len == k->len &&
		    !memcmp(x->e[i].key.b, k->b, k->len)) {
			free(x->e[i].val);
			return &x->e[i];
		}
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 64;
		x->e = realloc(x->e, x->cap * sizeof(*x->e));
		cr_assert_not_null(x->e);
	}
	return &x->e[x->n++];
}

static inline void exp_add(expects *x, uint64_t seq, rec_table t,
			   const rec_key *k, const ProtobufCMessage *m)
{
	expect *e = exp_slot(x, t, k);

	e->table = t;
	e->seq = seq;
	e->key = *k;
	e->desc = m ? m->descriptor : NULL;
	e->vlen = m ? protobuf_c_message_get_packed_size(m) : 0;
	e->val = malloc(e->vlen + 1);
	cr_assert_not_null(e->val);
	if (m)
		protobuf_c_message_pack(m, e->val);
}

static inline void exp_free(expects *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->e[i].val);
	free(x->e);
	memset(x, 0, sizeof(*x));
}

static inline rec_key k3(uint64_t a, uint64_t b, uint64_t c)
{
	rec_key k = key2(a, b);

	rec_key_u64(&k, c);
	return k;
}

static inline rec_key k2u(uint64_t a, uint64_t b, uint32_t c)
{
	rec_key k = key2(a, b);

	rec_key_u32(&k, c);
	return k;
}

/* The key (and index key) a per-row record is read under. */
static inline rec_key key_of(const ProtobufCMessage *m, rec_table *t,
			     rec_key *ix, rec_table *ixt)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	*ixt = REC_TABLE_LAST;
	if (d == &elspeth__row_record__descriptor) {
		const Elspeth__RowRecord *r = (const void *)m;

		*t = REC_ROWS;
		return key2(r->run_id, r->seq);
	}
	if (d == &elspeth__token_record__descriptor) {
		const Elspeth__TokenRecord *r = (const void *)m;

		*t = REC_TOKENS;
		*ixt = REC_TOKENS_BY_ROW;
		*ix = k3(r->run_id, r->row_id, r->token_id);
		return key2(r->run_id, r->token_id);
	}
	if (d == &elspeth__token_parent_record__descriptor) {
		const Elspeth__TokenParentRecord *r = (const void *)m;

		*t = REC_TOKEN_PARENTS;
		return k2u(r->run_id, r->token_id, r->ordinal);
	}
	if (d == &elspeth__node_state_record__descriptor) {
		const Elspeth__NodeStateRecord *r = (const void *)m;

		*t = REC_NODE_STATES;
		*ixt = REC_STATES_BY_TOKEN;
		*ix = k3(r->run_id, r->token_id, r->state_id);
		return key2(r->run_id, r->state_id);
	}
	if (d == &elspeth__routing_event_record__descriptor) {
		const Elspeth__RoutingEventRecord *r = (const void *)m;

		*t = REC_ROUTING_EVENTS;
		return k2u(r->run_id, r->state_id, r->ordinal);
	}
	if (d == &elspeth__transform_error_record__descriptor) {
		const Elspeth__TransformErrorRecord *r = (const void *)m;

		*t = REC_TRANSFORM_ERRORS;
		return k3(r->run_id, r->token_id, r->state_id);
	}
	if (d == &elspeth__token_outcome_record__descriptor) {
		const Elspeth__TokenOutcomeRecord *r = (const void *)m;

		*t = REC_TOKEN_OUTCOMES;
		return key2(r->run_id, r->token_id);
	}
	if (d == &elspeth__artifact_record__descriptor) {
		const Elspeth__ArtifactRecord *r = (const void *)m;

		*t = REC_ARTIFACTS;
		return key2(r->run_id, r->token_id);
	}
	cr_assert_eq(d, &elspeth__validation_error_record__descriptor, "%s", d->name);
	*t = REC_VALIDATION_ERRORS;
	return key2(((const Elspeth__ValidationErrorRecord *)m)->run_id,
		    ((const Elspeth__ValidationErrorRecord *)m)->row_id);
}

/* Puts m into row seq's story and expects it (and its index entry). */
static inline void put_exp(rec_env *env, expects *x, uint64_t run,
			   uint64_t seq, const ProtobufCMessage *m)
{
	rec_table t, ixt;
	rec_key ix, k = key_of(m, &t, &ix, &ixt);

	story_put(env, run, seq, m);
	exp_add(x, seq, t, &k, m);
	if (ixt != REC_TABLE_LAST)
		exp_add(x, seq, ixt, &ix, NULL);
}

/* rec_get of every expected key gives its value. */
static inline void check_gets(rec_txn *t, const expects *x)
{
	for (size_t i = 0; i < x->n; i++) {
		const expect *e = &x->e[i];
		const void *v;
		size_t vl;
		char what[96];
		int rc = rec_get(t, e->table, &e->key, &v, &vl);

		snprintf(what, sizeof(what), "%s (run %llu, id %llu)",
			 rec_table_name(e->table),
			 (unsigned long long)rec_key_get_u64(e->key.b, 0),
			 (unsigned long long)rec_key_get_u64(e->key.b, 8));
		cr_assert_eq(rc, 0, "rec_get %s: %d", what, rc);
		if (e->desc) {
			ProtobufCMessage *want = protobuf_c_message_unpack(e->desc, NULL,
									   e->vlen, e->val);

			assert_msg_eq(want, v, vl, what);
			protobuf_c_message_free_unpacked(want, NULL);
		} else {
			cr_assert_eq(vl, 0, "%s: an index entry is empty", what);
		}
	}
}

typedef struct scan_seen {
	const expects *x;
	rec_table table;
	uint64_t run;
	size_t n;
	uint64_t last_seq;
	rec_key last;
} scan_seen;

/* The order of a scan by run (story_read.c): row by row in seq order,
 * in key order within a row. (A table keyed by token or state is not in
 * key order over the run: a row's ids need not be above the previous
 * row's.) */
static inline int seen_fn(void *ctx, const void *k, size_t kl, const void *v,
			  size_t vl)
{
	scan_seen *s = ctx;
	const expect *e = NULL;

	cr_assert_leq(kl, REC_KEY_MAX);
	cr_assert_eq(rec_key_get_u64(k, 0), s->run, "%s: a key of another run",
		     rec_table_name(s->table));
	for (size_t i = 0; i < s->x->n && !e; i++)
		if (s->x->e[i].table == s->table && s->x->e[i].key.len == kl &&
		    !memcmp(s->x->e[i].key.b, k, kl))
			e = &s->x->e[i];
	cr_assert_not_null(e, "%s: unexpected key (id %llu)", rec_table_name(s->table),
			   (unsigned long long)rec_key_get_u64(k, 8));
	if (s->n) {
		size_t m = kl < s->last.len ? kl : s->last.len;
		int c = memcmp(s->last.b, k, m);

		cr_assert(s->last_seq < e->seq || (s->last_seq == e->seq &&
			  (c < 0 || (!c && s->last.len < kl))),
			  "%s: out of order (row %llu after row %llu)",
			  rec_table_name(s->table), (unsigned long long)e->seq,
			  (unsigned long long)s->last_seq);
	}
	s->last_seq = e->seq;
	memcpy(s->last.b, k, kl);
	s->last.len = kl;
	cr_assert_eq(vl, e->vlen, "%s: value length", rec_table_name(s->table));
	cr_assert(!vl || !memcmp(v, e->val, vl), "%s: value", rec_table_name(s->table));
	s->n++;
	return 0;
}

/* A scan of every per-row table of run gives exactly the expected keys of
 * that run, in key order, each once, with its value. */
static inline void check_scans(rec_txn *t, const expects *x, uint64_t run)
{
	rec_key p = key1(run);

	for (size_t i = 0; i < N_PER_ROW; i++) {
		scan_seen s = { .x = x, .table = per_row[i], .run = run };
		size_t want = 0;
		int rc = rec_scan(t, per_row[i], &p, seen_fn, &s);

		cr_assert_eq(rc, 0, "rec_scan %s: %d", rec_table_name(per_row[i]), rc);
		for (size_t j = 0; j < x->n; j++)
			want += x->e[j].table == per_row[i] &&
				rec_key_get_u64(x->e[j].key.b, 0) == run;
		cr_assert_eq(s.n, want, "run %llu, %s: %zu records, want %zu",
			     (unsigned long long)run, rec_table_name(per_row[i]), s.n, want);
	}
}

/* ----------------------------------------------------------- one row */

/* Row seq of run with every record type, every field set (ids above seq
 * and near 2^64, a negative delta from it; times 0, in the past and near
 * 2^64; hashes binary, absent, text and upper-case, one named before its
 * payload is put; UTF-8 strings).
 * Payloads: the row's source, a state's output, the validation error's
 * data (put after the record naming it). */
typedef struct row_data {
	char src[64], out[64], bad[64];
	char h_src[CORE_SHA256_HEX_LEN + 1], h_out[CORE_SHA256_HEX_LEN + 1];
	char h_bad[CORE_SHA256_HEX_LEN + 1], h_art[CORE_SHA256_HEX_LEN + 1];
	char upper[CORE_SHA256_HEX_LEN + 1];
} row_data;

static inline void hex_of(const char *s, char hex[CORE_SHA256_HEX_LEN + 1])
{
	uint8_t d[CORE_SHA256_LEN];

	core_sha256(s, strlen(s), d);
	core_hex(d, sizeof(d), hex);
}

static inline uint64_t tok_id(uint64_t seq, int i)
{
	return i ? UINT64_MAX - seq : seq * 10 + 1;
}

static inline uint64_t state_id(uint64_t seq, int i)
{
	return seq * 100 + (i ? 7 : 3);
}

static inline void row_write(rec_env *env, expects *x, uint64_t run, uint64_t seq)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	Elspeth__TokenRecord tk[2] = { ELSPETH__TOKEN_RECORD__INIT,
				       ELSPETH__TOKEN_RECORD__INIT };
	Elspeth__TokenParentRecord p = ELSPETH__TOKEN_PARENT_RECORD__INIT;
	Elspeth__NodeStateRecord s[2] = { ELSPETH__NODE_STATE_RECORD__INIT,
					  ELSPETH__NODE_STATE_RECORD__INIT };
	Elspeth__RoutingEventRecord ro = ELSPETH__ROUTING_EVENT_RECORD__INIT;
	Elspeth__TransformErrorRecord te = ELSPETH__TRANSFORM_ERROR_RECORD__INIT;
	Elspeth__TokenOutcomeRecord o[2] = { ELSPETH__TOKEN_OUTCOME_RECORD__INIT,
					     ELSPETH__TOKEN_OUTCOME_RECORD__INIT };
	Elspeth__ArtifactRecord a = ELSPETH__ARTIFACT_RECORD__INIT;
	Elspeth__ValidationErrorRecord ve = ELSPETH__VALIDATION_ERROR_RECORD__INIT;
	char hex[CORE_SHA256_HEX_LEN + 1];
	row_data d;

	snprintf(d.src, sizeof(d.src), "{\"run\":%llu,\"seq\":%llu}",
		 (unsigned long long)run, (unsigned long long)seq);
	snprintf(d.out, sizeof(d.out), "out of %llu/%llu", (unsigned long long)run,
		 (unsigned long long)seq);
	snprintf(d.bad, sizeof(d.bad), "bad data %llu", (unsigned long long)seq);
	hex_of(d.bad, d.h_bad);
	hex_of("artifact bytes", d.h_art);
	for (int i = 0; i < CORE_SHA256_HEX_LEN; i++)
		d.upper[i] = (char)(d.h_art[i] >= 'a' ? d.h_art[i] - 32 : d.h_art[i]);
	d.upper[CORE_SHA256_HEX_LEN] = '\0';

	story_payload(env, run, seq, d.src, strlen(d.src), d.h_src);
	hex_of(d.src, hex);
	cr_assert_str_eq(d.h_src, hex, "rec_story_payload gives the SHA-256");
	r.run_id = run;
	r.row_id = r.seq = seq;
	r.source_hash = r.payload_ref = d.h_src;
	r.where = "línea 7 ✓";
	r.created_at_ns = NS0 + seq;
	put_exp(env, x, run, seq, &r.base);

	for (int i = 0; i < 2; i++) {
		tk[i].run_id = run;
		tk[i].token_id = tok_id(seq, i);
		tk[i].row_id = seq;
		tk[i].created_at_ns = i ? 0 : NS0 + 2 * seq;
		tk[i].branch_ordinal = (uint32_t)i + 1;
		tk[i].branch = i ? "right" : "left";
		put_exp(env, x, run, seq, &tk[i].base);
	}
	p.run_id = run;
	p.token_id = tok_id(seq, 1);
	p.parent_token_id = tok_id(seq, 0);
	p.ordinal = 3;
	put_exp(env, x, run, seq, &p.base);

	story_payload(env, run, seq, d.out, strlen(d.out), d.h_out);
	for (int i = 0; i < 2; i++) {
		s[i].run_id = run;
		s[i].state_id = state_id(seq, i);
		s[i].token_id = tok_id(seq, i);
		s[i].node_id = 5 + (uint32_t)i;
		s[i].step = 2;
		s[i].attempt = (uint32_t)i;
		s[i].status = i ? "open" : "completed";
		s[i].input_hash = i ? d.h_out : d.h_src;
		s[i].output_hash = i ? "" : d.h_out;
		s[i].started_at_ns = NS0 + 1000 * seq;
		s[i].completed_at_ns = i ? 0 : NS0 + 1000 * seq + 777;
		s[i].duration_ns = i ? 0 : 777;
		s[i].error = i ? "" : "line 1\n\"quoted\"";
		s[i].context_json = i ? "" : "{\"k\":[1,2],\"é\":true}";
		put_exp(env, x, run, seq, &s[i].base);
	}
	ro.run_id = run;
	ro.state_id = state_id(seq, 0);
	ro.edge_id = 7;
	ro.mode = "copy";
	ro.reason = "true";
	ro.ordinal = 2;
	put_exp(env, x, run, seq, &ro.base);
	te.run_id = run;
	te.token_id = tok_id(seq, 1);
	te.state_id = state_id(seq, 1);
	te.node_id = 6;
	te.error = "ValueError: boom";
	te.data_ref = "not-a-hash:x";
	te.retryable = 1;
	put_exp(env, x, run, seq, &te.base);
	for (int i = 0; i < 2; i++) {
		o[i].run_id = run;
		o[i].token_id = tok_id(seq, i);
		o[i].row_id = seq;
		o[i].outcome = i ? "FAILED" : "COMPLETED";
		o[i].sink = i ? "" : "out";
		o[i].error_hash = i ? d.upper : "";
		o[i].recorded_at_ns = UINT64_MAX - seq;
		put_exp(env, x, run, seq, &o[i].base);
	}
	a.run_id = run;
	a.token_id = tok_id(seq, 0);
	a.sink_node = 9;
	a.sink = "out";
	a.path = "/data/out ✓.csv";
	a.offset = 1ull << 40;
	a.length = 53;
	a.content_hash = d.h_art;
	a.written_at_ns = NS0 - 1;
	put_exp(env, x, run, seq, &a.base);
	ve.run_id = run;
	ve.row_id = seq;
	ve.node = "source";
	ve.error = "field 'x': not a number";
	ve.data_ref = d.h_bad;
	put_exp(env, x, run, seq, &ve.base);
	story_payload(env, run, seq, d.bad, strlen(d.bad), hex);
	cr_assert_str_eq(hex, d.h_bad);
}

/* Row seq's payloads are found once it is read, not before. */
static inline void check_payloads(rec_txn *t, uint64_t run, uint64_t seq)
{
	char src[64], out[64], bad[64], hex[CORE_SHA256_HEX_LEN + 1];
	const char *want[3] = { src, out, bad };
	const void *v;
	size_t n;

	snprintf(src, sizeof(src), "{\"run\":%llu,\"seq\":%llu}",
		 (unsigned long long)run, (unsigned long long)seq);
	snprintf(out, sizeof(out), "out of %llu/%llu", (unsigned long long)run,
		 (unsigned long long)seq);
	snprintf(bad, sizeof(bad), "bad data %llu", (unsigned long long)seq);
	cr_assert_eq(rec_txn_row(t, run, seq), 0);
	for (int i = 0; i < 3; i++) {
		hex_of(want[i], hex);
		cr_assert_eq(rec_get_payload(t, hex, &v, &n), 0, "payload '%s' of row %llu",
			     want[i], (unsigned long long)seq);
		cr_assert_eq(n, strlen(want[i]));
		cr_assert_eq(memcmp(v, want[i], n), 0);
	}
}

#endif /* TEST_RECORDER_STORY_UTIL_H */

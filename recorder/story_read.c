/*
 * story_read.c — the per-row tables (recorder.h, marked *), read from the
 * row stories (story.h).
 *
 * A *view* is one row decoded: every fragment of (run, seq), in key order
 * (attempts, then the order they were written), unpacked, each entry
 * turned back into the record it was written from, with its key as the
 * per-row table had it and its value packed as that protobuf message. The
 * reads of recorder.h (rec_get, rec_scan, rec_last, rec_get_payload) on a
 * per-row table are answered from views:
 *   - a prefix of (run) goes through every row of the run, in seq order
 *     (within a row, in key order); while fn runs, that row is the
 *     transaction's *current* row;
 *   - a key or prefix naming a row (ROWS, TOKENS_BY_ROW,
 *     VALIDATION_ERRORS) decodes that row;
 *   - one naming a token or a state looks in the current rows first
 *     (explain and verify read a row's records together), then in an
 *     index of the run's token and state ids built by one pass over its
 *     stories, on the first miss.
 * Like a table, a key written twice reads as its last value.
 *
 * Values returned by rec_get live in the txn's point view: valid until
 * the next read of a per-row table or rec_read_end.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"
#include "recorder/story.h"

typedef struct vrec {
	uint8_t table;
	uint8_t klen;
	uint32_t koff;
	uint32_t voff;
	uint32_t vlen;
} vrec;

struct rec__view {
	uint64_t run, seq;
	bool valid;
	core_buf data;
	vrec *recs;
	size_t n, cap;
	rec__unpacker *u;
};

typedef struct id_seq {
	uint64_t id, seq;
} id_seq;

/* Per rec_txn (read.c gives it one). */
typedef struct rec__views {
	rec__view point;
	rec__view *current[4];     /* rows being scanned, innermost last */
	int ncurrent;
	uint64_t index_run;        /* the run the id index is of, 0: none */
	id_seq *tokens, *states;
	size_t ntokens, nstates, tcap, scap;
	bool index_damaged;        /* the index skipped a damaged fragment: */
	char index_where[200];     /* ... where it was (rec_damage_where) */
} rec__views;


bool rec__table_in_story(rec_table t)
{
	switch (t) {
	case REC_ROWS: case REC_TOKENS: case REC_TOKENS_BY_ROW:
	case REC_TOKEN_PARENTS: case REC_NODE_STATES: case REC_STATES_BY_TOKEN:
	case REC_ROUTING_EVENTS: case REC_ARTIFACTS: case REC_TOKEN_OUTCOMES:
	case REC_VALIDATION_ERRORS: case REC_TRANSFORM_ERRORS:
		return true;
	default:
		return false;
	}
}

static void view_release(rec__view *v)
{
	core_buf_release(&v->data);
	free(v->recs);
	rec__unpacker_free(v->u);
	memset(v, 0, sizeof(*v));
}

void rec__views_free(rec__views *vs)
{
	if (!vs)
		return;
	view_release(&vs->point);
	free(vs->tokens);
	free(vs->states);
	free(vs);
}

/* ------------------------------------------------------------ decoding */

typedef struct dec {
	story_in in;
	uint64_t run, seq, base;
	uint8_t (*hashes)[CORE_SHA256_LEN];
	size_t nhashes, cap;
	core_buf strs;             /* NUL-terminated copies of str fields */
	rec__view *v;
} dec;

static int add_rec(rec__view *v, rec_table t, const rec_key *k,
		   const ProtobufCMessage *m, const void *raw, size_t rawlen)
{
	size_t n = m ? protobuf_c_message_get_packed_size(m) : rawlen;
	vrec *r;

	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 32;
		vrec *p = realloc(v->recs, cap * sizeof(*p));

		if (!p)
			return CORE_ENOMEM;
		v->recs = p;
		v->cap = cap;
	}
	if (core_buf_reserve(&v->data, k->len + n + 1))
		return CORE_ENOMEM;
	r = &v->recs[v->n++];
	r->table = (uint8_t)t;
	r->klen = (uint8_t)k->len;
	r->koff = (uint32_t)v->data.len;
	memcpy(v->data.data + v->data.len, k->b, k->len);
	v->data.len += k->len;
	r->voff = (uint32_t)v->data.len;
	r->vlen = (uint32_t)n;
	if (m)
		protobuf_c_message_pack(m, (uint8_t *)v->data.data + v->data.len);
	else if (n)
		memcpy(v->data.data + v->data.len, raw, n);
	v->data.len += n;
	return 0;
}

static rec_key key_of(uint64_t run, int nparts, uint64_t a, uint64_t b)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	if (nparts > 0)
		rec_key_u64(&k, a);
	if (nparts > 1)
		rec_key_u64(&k, b);
	return k;
}

static char *get_str(dec *d)
{
	const char *s;
	size_t n = story_get_str(&d->in, &s);
	char *out = d->strs.data + d->strs.len;

	/* strs was reserved for the whole entry: no reallocation here. */
	memcpy(out, s, n);
	out[n] = '\0';
	d->strs.len += n + 1;
	return out;
}

static uint64_t get_id(dec *d)
{
	return d->seq + (uint64_t)story_get_zz(&d->in);
}

static uint64_t get_time(dec *d)
{
	return d->base + (uint64_t)story_get_zz(&d->in);
}

/* A hash field; out receives the hex ("" for none), or *bin the binary
 * hash (NULL for none or a text one). */
static char *get_hash(dec *d, const uint8_t **bin)
{
	uint64_t h = story_get_uv(&d->in);
	char *out = d->strs.data + d->strs.len;

	if (bin)
		*bin = NULL;
	if (h == STORY_HASH_NONE) {
		out[0] = '\0';
		d->strs.len++;
		return out;
	}
	if (h == STORY_HASH_TEXT)
		return get_str(d);
	if (h == STORY_HASH_NEW) {
		if ((size_t)(d->in.end - d->in.p) < CORE_SHA256_LEN) {
			d->in.bad = 1;
			out[0] = '\0';
			d->strs.len++;
			return out;
		}
		if (d->nhashes == d->cap) {
			size_t cap = d->cap ? d->cap * 2 : 8;
			void *p = realloc(d->hashes, cap * CORE_SHA256_LEN);

			if (!p) {
				d->in.bad = 1;
				return "";
			}
			d->hashes = p;
			d->cap = cap;
		}
		memcpy(d->hashes[d->nhashes++], d->in.p, CORE_SHA256_LEN);
		d->in.p += CORE_SHA256_LEN;
		h = STORY_HASH_REF + d->nhashes - 1;
	}
	h -= STORY_HASH_REF;
	if (h >= d->nhashes) {
		d->in.bad = 1;
		out[0] = '\0';
		d->strs.len++;
		return out;
	}
	core_hex(d->hashes[h], CORE_SHA256_LEN, out);
	d->strs.len += CORE_SHA256_HEX_LEN + 1;
	if (bin)
		*bin = d->hashes[h];
	return out;
}

static int dec_payload(dec *d)
{
	const uint8_t *bin;
	uint64_t n;
	rec_key k;

	get_hash(d, &bin);
	n = story_get_uv(&d->in);
	if (d->in.bad || !bin || n > (uint64_t)(d->in.end - d->in.p))
		return CORE_EDATA;
	memcpy(k.b, bin, CORE_SHA256_LEN);
	k.len = CORE_SHA256_LEN;
	d->in.p += n;
	return add_rec(d->v, REC_PAYLOADS, &k, NULL, d->in.p - n, (size_t)n);
}

static int dec_row(dec *d, bool with_source)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	rec_key k = key_of(d->run, 1, d->seq, 0);

	r.run_id = d->run;
	r.row_id = r.seq = d->seq;
	r.source_hash = get_hash(d, NULL);
	r.payload_ref = get_hash(d, NULL);
	r.where = get_str(d);
	r.created_at_ns = get_time(d);
	r.source_row_index = d->seq - 1;
	if (with_source) {
		uint64_t src = story_get_uv(&d->in);

		r.source = (uint32_t)src;
		r.source_row_index = story_get_uv(&d->in);
		if (src > UINT32_MAX)
			d->in.bad = 1;
	}
	return d->in.bad ? CORE_EDATA : add_rec(d->v, REC_ROWS, &k, &r.base, NULL, 0);
}

static int dec_token(dec *d)
{
	Elspeth__TokenRecord r = ELSPETH__TOKEN_RECORD__INIT;
	rec_key k, ix;
	int rc;

	r.run_id = d->run;
	r.token_id = get_id(d);
	r.row_id = get_id(d);
	r.created_at_ns = get_time(d);
	r.branch_ordinal = (uint32_t)story_get_uv(&d->in);
	r.branch = get_str(d);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.token_id, 0);
	ix = key_of(d->run, 2, r.row_id, r.token_id);
	if ((rc = add_rec(d->v, REC_TOKENS, &k, &r.base, NULL, 0)))
		return rc;
	return add_rec(d->v, REC_TOKENS_BY_ROW, &ix, NULL, "", 0);
}

static int dec_parent(dec *d)
{
	Elspeth__TokenParentRecord r = ELSPETH__TOKEN_PARENT_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.token_id = get_id(d);
	r.parent_token_id = get_id(d);
	r.ordinal = (uint32_t)story_get_uv(&d->in);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.token_id, 0);
	rec_key_u32(&k, r.ordinal);
	return add_rec(d->v, REC_TOKEN_PARENTS, &k, &r.base, NULL, 0);
}

static int dec_state(dec *d)
{
	Elspeth__NodeStateRecord r = ELSPETH__NODE_STATE_RECORD__INIT;
	rec_key k, ix;
	int rc;

	r.run_id = d->run;
	r.state_id = get_id(d);
	r.token_id = get_id(d);
	r.node_id = (uint32_t)story_get_uv(&d->in);
	r.step = (uint32_t)story_get_uv(&d->in);
	r.attempt = (uint32_t)story_get_uv(&d->in);
	r.status = get_str(d);
	r.input_hash = get_hash(d, NULL);
	r.output_hash = get_hash(d, NULL);
	r.started_at_ns = get_time(d);
	r.completed_at_ns = r.started_at_ns + (uint64_t)story_get_zz(&d->in);
	r.duration_ns = story_get_uv(&d->in);
	r.error = get_str(d);
	r.context_json = get_str(d);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.state_id, 0);
	ix = key_of(d->run, 2, r.token_id, r.state_id);
	if ((rc = add_rec(d->v, REC_NODE_STATES, &k, &r.base, NULL, 0)))
		return rc;
	return add_rec(d->v, REC_STATES_BY_TOKEN, &ix, NULL, "", 0);
}

static int dec_route(dec *d)
{
	Elspeth__RoutingEventRecord r = ELSPETH__ROUTING_EVENT_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.state_id = get_id(d);
	r.edge_id = (uint32_t)story_get_uv(&d->in);
	r.mode = get_str(d);
	r.reason = get_str(d);
	r.ordinal = (uint32_t)story_get_uv(&d->in);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.state_id, 0);
	rec_key_u32(&k, r.ordinal);
	return add_rec(d->v, REC_ROUTING_EVENTS, &k, &r.base, NULL, 0);
}

static int dec_terror(dec *d)
{
	Elspeth__TransformErrorRecord r = ELSPETH__TRANSFORM_ERROR_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.token_id = get_id(d);
	r.state_id = get_id(d);
	r.node_id = (uint32_t)story_get_uv(&d->in);
	r.error = get_str(d);
	r.data_ref = get_hash(d, NULL);
	r.retryable = story_get_uv(&d->in) != 0;
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 2, r.token_id, r.state_id);
	return add_rec(d->v, REC_TRANSFORM_ERRORS, &k, &r.base, NULL, 0);
}

static int dec_outcome(dec *d)
{
	Elspeth__TokenOutcomeRecord r = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.token_id = get_id(d);
	r.row_id = get_id(d);
	r.outcome = get_str(d);
	r.sink = get_str(d);
	r.error_hash = get_hash(d, NULL);
	r.recorded_at_ns = get_time(d);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.token_id, 0);
	return add_rec(d->v, REC_TOKEN_OUTCOMES, &k, &r.base, NULL, 0);
}

static int dec_artifact(dec *d)
{
	Elspeth__ArtifactRecord r = ELSPETH__ARTIFACT_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.token_id = get_id(d);
	r.sink_node = (uint32_t)story_get_uv(&d->in);
	r.sink = get_str(d);
	r.path = get_str(d);
	r.offset = story_get_uv(&d->in);
	r.length = story_get_uv(&d->in);
	r.content_hash = get_hash(d, NULL);
	r.written_at_ns = get_time(d);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.token_id, 0);
	return add_rec(d->v, REC_ARTIFACTS, &k, &r.base, NULL, 0);
}

static int dec_verror(dec *d)
{
	Elspeth__ValidationErrorRecord r = ELSPETH__VALIDATION_ERROR_RECORD__INIT;
	rec_key k;

	r.run_id = d->run;
	r.row_id = get_id(d);
	r.node = get_str(d);
	r.error = get_str(d);
	r.data_ref = get_hash(d, NULL);
	if (d->in.bad)
		return CORE_EDATA;
	k = key_of(d->run, 1, r.row_id, 0);
	return add_rec(d->v, REC_VALIDATION_ERRORS, &k, &r.base, NULL, 0);
}

/* One fragment's entries into v. */
static int fragment_decode(rec__view *v, uint64_t run, uint64_t seq,
			   const void *p, size_t n)
{
	dec d = { .in = { p, (const uint8_t *)p + n, 0 }, .run = run,
		  .seq = seq, .v = v };
	int rc = 0;

	if (!n || *d.in.p++ != STORY_VERSION)
		return CORE_EDATA;
	d.base = story_get_uv(&d.in);
	while (!rc && !d.in.bad && d.in.p < d.in.end) {
		int kind = *d.in.p++;

		/* Every str and hash of the entry fits in what is left of
		 * the fragment, twice over, plus 65 bytes per field. */
		core_buf_reset(&d.strs);
		if (core_buf_reserve(&d.strs, 2 * (size_t)(d.in.end - d.in.p) + 16 * 66)) {
			rc = CORE_ENOMEM;
			break;
		}
		switch (kind) {
		case STORY_PAYLOAD: rc = dec_payload(&d); break;
		case STORY_ROW: rc = dec_row(&d, false); break;
		case STORY_ROW_SOURCE: rc = dec_row(&d, true); break;
		case STORY_TOKEN: rc = dec_token(&d); break;
		case STORY_PARENT: rc = dec_parent(&d); break;
		case STORY_STATE: rc = dec_state(&d); break;
		case STORY_ROUTE: rc = dec_route(&d); break;
		case STORY_TERROR: rc = dec_terror(&d); break;
		case STORY_OUTCOME: rc = dec_outcome(&d); break;
		case STORY_ARTIFACT: rc = dec_artifact(&d); break;
		case STORY_VERROR: rc = dec_verror(&d); break;
		default: rc = CORE_EDATA;
		}
	}
	if (!rc && d.in.bad)
		rc = CORE_EDATA;
	core_buf_release(&d.strs);
	free(d.hashes);
	return rc;
}

/* ---------------------------------------------------------------- views */

static int view_add_fragment(rec_txn *t, rec__view *v, const MDB_val *k,
			     const MDB_val *val)
{
	MDB_val sealed = *val;
	const void *raw;
	size_t n;
	int rc;

	rc = rec__unseal(REC_TRAIL, k, &sealed);
	if (!rc)
		rc = rec__unpack(t, &v->u, k->mv_data, sealed.mv_data, sealed.mv_size, &raw, &n);
	if (!rc)
		rc = fragment_decode(v, v->run, v->seq, raw, n);
	return rc;
}

static void view_reset(rec__view *v, uint64_t run, uint64_t seq)
{
	core_buf_reset(&v->data);
	v->n = 0;
	v->run = run;
	v->seq = seq;
	v->valid = false;
}

/* Decodes row (run, seq) into v. A row with no story is an empty view. A
 * fragment that cannot be decoded is CORE_EDATA (verify reports it). */
/* A record next to a row's fragments, as a lookup found them, must be on
 * its side of the row (before: below it; after: above it). A flipped key
 * that LMDB's binary search stepped over, or a damaged branch that sent
 * it to the wrong page, leaves a neighbour that is not, where the row's
 * fragments would otherwise be silently fewer. (A damaged neighbour that
 * still sorts on its side cannot have misled the search; its own reader
 * finds its seal broken.) CORE_EDATA or 0. */
static int neighbour_ok(const MDB_val *k, const rec_key *row, bool before)
{
	size_t n = k->mv_size < row->len ? k->mv_size : row->len;
	int c = memcmp(k->mv_data, row->b, n);

	if (before ? c >= 0 : c <= 0) {
		rec__damage_set("table trail: keys out of order around a row's story");
		return CORE_EDATA;
	}
	return 0;
}

static int view_load(rec_txn *t, rec__view *v, uint64_t run, uint64_t seq)
{
	rec_key prefix = key_of(run, 1, seq, 0);
	MDB_val k = { prefix.len, prefix.b }, val;
	MDB_cursor *c;
	int rc;

	if (v->valid && v->run == run && v->seq == seq)
		return 0;
	view_reset(v, run, seq);
	rc = mdb_cursor_open(rec__txn_mdb(t), rec__txn_env(t)->dbi[REC_TRAIL], &c);
	if (rc)
		return rc;
	rc = mdb_cursor_get(c, &k, &val, MDB_SET_RANGE);
	/* the record before where the lookup landed */
	if (!rc || rc == MDB_NOTFOUND) {
		int prc = mdb_cursor_get(c, &k, &val, rc ? MDB_LAST : MDB_PREV);

		if (!prc && !rc)
			rc = neighbour_ok(&k, &prefix, true);
		else if (!prc)
			rc = neighbour_ok(&k, &prefix, true) ? CORE_EDATA : MDB_NOTFOUND;
		else if (prc != MDB_NOTFOUND)
			rc = prc;
		/* back to where the lookup landed */
		if (!rc) {
			k.mv_size = prefix.len;
			k.mv_data = prefix.b;
			rc = mdb_cursor_get(c, &k, &val, MDB_SET_RANGE);
		}
	}
	while (!rc && k.mv_size == STORY_KEY_LEN && !memcmp(k.mv_data, prefix.b, 16)) {
		if ((rc = view_add_fragment(t, v, &k, &val)))
			break;
		rc = mdb_cursor_get(c, &k, &val, MDB_NEXT);
	}
	/* the record after the row's last fragment */
	if (!rc)
		rc = neighbour_ok(&k, &prefix, false);
	mdb_cursor_close(c);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	v->valid = true;
	return 0;
}

static int vrec_cmp_key(const rec__view *v, const vrec *a, const vrec *b)
{
	size_t n = a->klen < b->klen ? a->klen : b->klen;
	int c = memcmp(v->data.data + a->koff, v->data.data + b->koff, n);

	return c ? c : (int)a->klen - (int)b->klen;
}

static bool vrec_prefixed(const rec__view *v, const vrec *r, rec_table tab,
			  const rec_key *prefix)
{
	return r->table == tab && r->klen >= prefix->len &&
	       !memcmp(v->data.data + r->koff, prefix->b, prefix->len);
}

/* True when a later record of v has r's table and key (r is replaced). */
static bool vrec_replaced(const rec__view *v, size_t i)
{
	for (size_t j = i + 1; j < v->n; j++)
		if (v->recs[j].table == v->recs[i].table &&
		    !vrec_cmp_key(v, &v->recs[i], &v->recs[j]))
			return true;
	return false;
}

/* Calls fn for v's records of tab under prefix, in key order. */
static int view_scan(rec__view *v, rec_table tab, const rec_key *prefix,
		     rec_scan_fn fn, void *ctx)
{
	size_t idx[64], *order = idx, m = 0;
	int rc = 0;

	for (size_t i = 0; i < v->n; i++)
		m += vrec_prefixed(v, &v->recs[i], tab, prefix);
	if (!m)
		return 0;
	if (m > 64 && !(order = malloc(m * sizeof(*order))))
		return CORE_ENOMEM;
	m = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (!vrec_prefixed(v, &v->recs[i], tab, prefix) || vrec_replaced(v, i))
			continue;
		/* insertion sort by key: a row has few records */
		size_t j = m++;

		while (j && vrec_cmp_key(v, &v->recs[order[j - 1]], &v->recs[i]) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t i = 0; i < m && !rc; i++) {
		const vrec *r = &v->recs[order[i]];

		rc = fn(ctx, v->data.data + r->koff, r->klen,
			v->data.data + r->voff, r->vlen);
	}
	if (order != idx)
		free(order);
	return rc;
}

/* The last record of v with tab and exactly key k. */
static const vrec *view_find(const rec__view *v, rec_table tab, const rec_key *k)
{
	for (size_t i = v->n; i-- > 0;) {
		const vrec *r = &v->recs[i];

		if (r->table == tab && r->klen == k->len &&
		    !memcmp(v->data.data + r->koff, k->b, k->len))
			return r;
	}
	return NULL;
}

static bool view_has(const rec__view *v, rec_table tab, const rec_key *prefix)
{
	for (size_t i = 0; i < v->n; i++)
		if (vrec_prefixed(v, &v->recs[i], tab, prefix))
			return true;
	return false;
}

/* ------------------------------------------------------- the id index */

static int ids_push(id_seq **a, size_t *n, size_t *cap, uint64_t id, uint64_t seq)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 1024;
		id_seq *p = realloc(*a, c * sizeof(*p));

		if (!p)
			return CORE_ENOMEM;
		*a = p;
		*cap = c;
	}
	(*a)[*n].id = id;
	(*a)[(*n)++].seq = seq;
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	const id_seq *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

typedef int (*row_fn)(void *ctx, rec__view *v);

/* Calls fn with a view of every row of run from row from_seq through
 * to_seq that has a story, in order. A fragment that cannot be decoded ends it with
 * CORE_EDATA, unless `skipped` is given (the id index: one damaged row
 * must not hide the others' tokens): it is then skipped and *skipped
 * set. */
static int rows_each(rec_txn *t, uint64_t run, uint64_t from_seq, uint64_t to_seq,
		     bool *skipped, row_fn fn, void *ctx)
{
	rec__view v = { 0 };
	rec_key prefix = key_of(run, 0, 0, 0), from = key_of(run, 1, from_seq, 0);
	MDB_val k = { from.len, from.b }, val;
	MDB_cursor *c;
	int rc;

	rc = mdb_cursor_open(rec__txn_mdb(t), rec__txn_env(t)->dbi[REC_TRAIL], &c);
	if (rc)
		return rc;
	rc = mdb_cursor_get(c, &k, &val, MDB_SET_RANGE);
	while (!rc && k.mv_size == STORY_KEY_LEN && !memcmp(k.mv_data, prefix.b, 8)) {
		uint64_t seq = rec_key_get_u64(k.mv_data, 8);

		if (seq > to_seq)
			break;
		if (!v.valid || v.seq != seq) {
			if (v.valid && (rc = fn(ctx, &v)))
				break;
			view_reset(&v, run, seq);
			v.valid = true;
		}
		rc = view_add_fragment(t, &v, &k, &val);
		if (rc == CORE_EDATA && skipped) {
			*skipped = true;
			rc = 0;
		}
		if (rc)
			break;
		rc = mdb_cursor_get(c, &k, &val, MDB_NEXT);
	}
	mdb_cursor_close(c);
	/* The end of the table (NOTFOUND) or of the run's keys: the last row
	 * is still to go. */
	if ((!rc || rc == MDB_NOTFOUND) && v.valid)
		rc = fn(ctx, &v);
	else if (rc == MDB_NOTFOUND)
		rc = 0;
	view_release(&v);
	return rc;
}

static int index_row(void *ctx, rec__view *v)
{
	rec__views *vs = ctx;

	for (size_t i = 0; i < v->n; i++) {
		const vrec *r = &v->recs[i];
		uint64_t id = rec_key_get_u64(v->data.data + r->koff, 8);
		int rc = 0;

		if (r->table == REC_TOKENS)
			rc = ids_push(&vs->tokens, &vs->ntokens, &vs->tcap, id, v->seq);
		else if (r->table == REC_NODE_STATES)
			rc = ids_push(&vs->states, &vs->nstates, &vs->scap, id, v->seq);
		if (rc)
			return rc;
	}
	return 0;
}

static int index_build(rec_txn *t, rec__views *vs, uint64_t run)
{
	int rc;

	if (vs->index_run == run)
		return 0;
	free(vs->tokens);
	free(vs->states);
	vs->tokens = vs->states = NULL;
	vs->ntokens = vs->nstates = vs->tcap = vs->scap = 0;
	vs->index_run = 0;
	vs->index_damaged = false;
	rc = rows_each(t, run, 0, UINT64_MAX, &vs->index_damaged, index_row, vs);
	if (rc)
		return rc;
	if (vs->index_damaged)
		snprintf(vs->index_where, sizeof(vs->index_where), "%s", rec_damage_where());
	if (vs->ntokens)
		qsort(vs->tokens, vs->ntokens, sizeof(id_seq), id_cmp);
	if (vs->nstates)
		qsort(vs->states, vs->nstates, sizeof(id_seq), id_cmp);
	vs->index_run = run;
	return 0;
}

static bool index_find(const id_seq *a, size_t n, uint64_t id, uint64_t *seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && a[lo].id == id) {
		*seq = a[lo].seq;
		return true;
	}
	return false;
}

/* ------------------------------------------------------ finding the row */

static bool keyed_by_row(rec_table tab)
{
	return tab == REC_ROWS || tab == REC_TOKENS_BY_ROW ||
	       tab == REC_VALIDATION_ERRORS;
}

static bool keyed_by_state(rec_table tab)
{
	return tab == REC_NODE_STATES || tab == REC_ROUTING_EVENTS;
}

/* Whether v is the row that holds the records of tab under prefix: it
 * has one of them, or it has the token (or the state) they are about —
 * every record of a token is in its own row's story (story.h), so then
 * a record v lacks does not exist, and no other row need be read. */
static bool view_owns(const rec__view *v, rec_table tab, const rec_key *prefix)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, rec_key_get_u64(prefix->b, 0));
	rec_key_u64(&k, rec_key_get_u64(prefix->b, 8));
	return view_find(v, keyed_by_state(tab) ? REC_NODE_STATES : REC_TOKENS, &k) ||
	       view_has(v, tab, prefix);
}

/* The view holding the records of tab under prefix (of 16 bytes or
 * more): a current row, else the point view loaded with the right row.
 * *out NULL when no row has them. */
static int view_for(rec_txn *t, rec_table tab, const rec_key *prefix,
		    rec__view **out)
{
	rec__views *vs = rec__txn_views(t);
	uint64_t run = rec_key_get_u64(prefix->b, 0);
	uint64_t id = rec_key_get_u64(prefix->b, 8), seq;
	int rc;

	*out = NULL;
	if (!vs)
		return CORE_ENOMEM;
	if (keyed_by_row(tab)) {
		if ((rc = view_load(t, &vs->point, run, id)))
			return rc;
		*out = &vs->point;
		return 0;
	}
	for (int i = vs->ncurrent; i-- > 0;)
		if (vs->current[i]->run == run && view_owns(vs->current[i], tab, prefix)) {
			*out = vs->current[i];
			return 0;
		}
	if (vs->point.valid && vs->point.run == run && view_owns(&vs->point, tab, prefix)) {
		*out = &vs->point;
		return 0;
	}
	if ((rc = index_build(t, vs, run)))
		return rc;
	if (!(keyed_by_state(tab) ? index_find(vs->states, vs->nstates, id, &seq) :
				    index_find(vs->tokens, vs->ntokens, id, &seq))) {
		/* not in the index: absent, unless a damaged row could hold it */
		if (vs->index_damaged) {
			rec__damage_set(vs->index_where);
			return CORE_EDATA;
		}
		return 0;
	}
	if ((rc = view_load(t, &vs->point, run, seq)))
		return rc;
	*out = &vs->point;
	return 0;
}

/* ------------------------------------------------------------ the reads */

int rec__story_get(rec_txn *t, rec_table tab, const rec_key *k,
		   const void **val, size_t *vlen)
{
	rec__view *v;
	const vrec *r;
	int rc;

	if (k->len < 16)
		return REC_NOTFOUND;
	if ((rc = view_for(t, tab, k, &v)))
		return rc;
	if (!v || !(r = view_find(v, tab, k)))
		return REC_NOTFOUND;
	if (val)
		*val = v->data.data + r->voff;
	if (vlen)
		*vlen = r->vlen;
	return 0;
}

typedef struct scan_all {
	rec_txn *t;
	rec_table tab;
	const rec_key *prefix;
	rec_scan_fn fn;
	void *ctx;
} scan_all;

/* fn over v's records of each table, v known as the row being scanned
 * (a point read inside fn finds it there, not by reading it again). */
static int scan_tables(rec_txn *t, rec__view *v, const rec_table *tabs, size_t ntabs,
		       const rec_key *prefix, rec_scan_fn fn, void **ctxs)
{
	rec__views *vs = rec__txn_views(t);
	bool pushed = vs->ncurrent < (int)(sizeof(vs->current) / sizeof(vs->current[0]));
	int rc = 0;

	if (pushed)
		vs->current[vs->ncurrent++] = v;
	for (size_t i = 0; i < ntabs && !rc; i++)
		rc = view_scan(v, tabs[i], prefix, fn, ctxs[i]);
	if (pushed)
		vs->ncurrent--;
	return rc;
}

static int scan_row(void *ctx, rec__view *v)
{
	scan_all *s = ctx;

	return scan_tables(s->t, v, &s->tab, 1, s->prefix, s->fn, &s->ctx);
}

int rec__story_scan(rec_txn *t, rec_table tab, const rec_key *prefix,
		    rec_scan_fn fn, void *ctx)
{
	rec__view *v;
	int rc;

	if (!rec__txn_views(t))
		return CORE_ENOMEM;
	if (!prefix || prefix->len < 8) /* every run: never asked for */
		return CORE_EINTERNAL;
	if (prefix->len < 16) {
		scan_all s = { t, tab, prefix, fn, ctx };

		return rows_each(t, rec_key_get_u64(prefix->b, 0), 0, UINT64_MAX, NULL, scan_row,
				 &s);
	}
	if ((rc = view_for(t, tab, prefix, &v)) || !v)
		return rc;
	return view_scan(v, tab, prefix, fn, ctx);
}

int rec__story_scan_from(rec_txn *t, rec_table tab, uint64_t run, uint64_t from_seq,
			 rec_scan_fn fn, void *ctx)
{
	return rec_scan_rows(t, tab, run, from_seq, UINT64_MAX, fn, ctx);
}

int rec_scan_rows(rec_txn *t, rec_table tab, uint64_t run, uint64_t from_seq,
		  uint64_t to_seq, rec_scan_fn fn, void *ctx)
{
	rec_key prefix = key_of(run, 0, 0, 0);
	scan_all s = { t, tab, &prefix, fn, ctx };

	if ((unsigned)tab >= REC_TABLE_LAST || !rec__table_in_story(tab))
		return CORE_EINTERNAL;
	if (!rec__txn_views(t))
		return CORE_ENOMEM;
	return rows_each(t, run, from_seq, to_seq, NULL, scan_row, &s);
}

typedef struct scan_multi {
	rec_txn *t;
	const rec_table *tabs;
	size_t ntabs;
	const rec_key *prefix;
	rec_scan_fn fn;
	void **ctxs;
} scan_multi;

static int scan_row_multi(void *ctx, rec__view *v)
{
	scan_multi *s = ctx;

	return scan_tables(s->t, v, s->tabs, s->ntabs, s->prefix, s->fn, s->ctxs);
}

int rec_scan_rows_multi(rec_txn *t, const rec_table *tabs, size_t ntabs, uint64_t run,
			uint64_t from_seq, uint64_t to_seq, rec_scan_fn fn, void **ctxs)
{
	rec_key prefix = key_of(run, 0, 0, 0);
	scan_multi s = { t, tabs, ntabs, &prefix, fn, ctxs };

	for (size_t i = 0; i < ntabs; i++)
		if ((unsigned)tabs[i] >= REC_TABLE_LAST || !rec__table_in_story(tabs[i]))
			return CORE_EINTERNAL;
	if (!rec__txn_views(t))
		return CORE_ENOMEM;
	return rows_each(t, run, from_seq, to_seq, NULL, scan_row_multi, &s);
}

typedef struct last_ctx {
	core_buf key, val;
	bool found;
} last_ctx;

static int last_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	last_ctx *l = ctx;

	if (l->found) {
		size_t n = kl < l->key.len ? kl : l->key.len;
		int c = memcmp(k, l->key.data, n);

		if (c < 0 || (!c && kl <= l->key.len))
			return 0; /* not greater */
	}
	core_buf_reset(&l->key);
	core_buf_reset(&l->val);
	if (core_buf_append(&l->key, k, kl) || core_buf_append(&l->val, v, vl))
		return CORE_ENOMEM;
	l->found = true;
	return 0;
}

/* The greatest key: a scan of the run (resume asks it once). The result
 * lives in the point view's buffer until the next read. */
int rec__story_last(rec_txn *t, rec_table tab, const rec_key *prefix,
		    const void **key, size_t *klen, const void **val,
		    size_t *vlen)
{
	rec__views *vs = rec__txn_views(t);
	last_ctx l = { .found = false };
	rec_key pk;
	int rc;

	if (!vs)
		return CORE_ENOMEM;
	rc = rec__story_scan(t, tab, prefix, last_one, &l);
	if (!rc && !l.found)
		rc = REC_NOTFOUND;
	if (!rc) {
		/* keep the result: the point view holds it as a record */
		memcpy(pk.b, l.key.data, l.key.len);
		pk.len = l.key.len;
		view_reset(&vs->point, 0, 0);
		rc = add_rec(&vs->point, tab, &pk, NULL, l.val.data, l.val.len);
		if (!rc) {
			const vrec *r = &vs->point.recs[0];

			*key = vs->point.data.data + r->koff;
			*klen = r->klen;
			*val = vs->point.data.data + r->voff;
			*vlen = r->vlen;
		}
	}
	core_buf_release(&l.key);
	core_buf_release(&l.val);
	return rc;
}

int rec__story_payload(rec_txn *t, const uint8_t hash[CORE_SHA256_LEN],
		       const void **data, size_t *len)
{
	rec__views *vs = rec__txn_views(t);
	rec_key k;
	const vrec *r = NULL;
	const rec__view *v = NULL;

	if (!vs)
		return REC_NOTFOUND;
	memcpy(k.b, hash, CORE_SHA256_LEN);
	k.len = CORE_SHA256_LEN;
	for (int i = vs->ncurrent; i-- > 0 && !r;)
		r = view_find(v = vs->current[i], REC_PAYLOADS, &k);
	if (!r && vs->point.valid)
		r = view_find(v = &vs->point, REC_PAYLOADS, &k);
	if (!r)
		return REC_NOTFOUND;
	*data = v->data.data + r->voff;
	*len = r->vlen;
	return 0;
}

int rec_txn_row(rec_txn *t, uint64_t run, uint64_t seq)
{
	rec__views *vs = rec__txn_views(t);

	return vs ? view_load(t, &vs->point, run, seq) : CORE_ENOMEM;
}

rec__views *rec__views_new(void)
{
	return calloc(1, sizeof(rec__views));
}

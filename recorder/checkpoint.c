/*
 * checkpoint.c — checkpoints in the Landscape, and the reads a resume
 * makes before it runs (recorder.h, "Checkpoints").
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

static void run_key(rec_key *k, uint64_t run)
{
	rec_key_init(k);
	rec_key_u64(k, run);
}

int rec_ckpt_put(rec_env *env, const Elspeth__Checkpoint *c, const int *fds,
	     size_t nfds, uint64_t *gen)
{
	rec_key k;
	int rc;

	/* The checkpoint covers what the rows still in flight recorded so
	 * far (their payloads above all): it goes in before it. */
	if ((rc = rec_story_flush(env)))
		return rc;
	run_key(&k, c->run_id);
	return rec_put_msg_fsync(env, REC_CHECKPOINTS, &k, &c->base, fds, nfds, gen);
}

int rec_ckpt_load(rec_env *env, uint64_t run, Elspeth__Checkpoint **out,
	      core_err *err)
{
	const void *v;
	size_t vlen;
	rec_txn *t;
	rec_key k;
	int rc;

	*out = NULL;
	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	run_key(&k, run);
	rc = rec_get(t, REC_CHECKPOINTS, &k, &v, &vlen);
	if (rc == REC_NOTFOUND)
		core_err_set(err, REC_NOTFOUND,
			"run %llu has no checkpoint: it ran with checkpoints off "
			"(checkpoint.enabled: false), or stopped before its first",
			(unsigned long long)run);
	else if (rc)
		rc = core_err_set(err, CORE_EIO, "run %llu: cannot read its checkpoint: %s",
				  (unsigned long long)run, core_strerror(rc));
	else if (!(*out = elspeth__checkpoint__unpack(NULL, vlen, v)))
		rc = core_err_set(err, CORE_EDATA, "run %llu: its checkpoint is undecodable",
				  (unsigned long long)run);
	else if ((*out)->format_version != REC_CKPT_FORMAT_VERSION) {
		rc = core_err_set(err, CORE_EDATA,
			"run %llu: checkpoint format %u, this build reads %u",
			(unsigned long long)run, (*out)->format_version,
			REC_CKPT_FORMAT_VERSION);
		rec_ckpt_free(*out);
		*out = NULL;
	}
	rec_read_end(t);
	return rc;
}

void rec_ckpt_free(Elspeth__Checkpoint *c)
{
	if (c)
		elspeth__checkpoint__free_unpacked(c, NULL);
}

/* ------------------------------------------------------------------ ids */

/* *id = the first u64 after the run id of the last key of table t, or 0
 * when the run has none. 0 or a read error. */
static int last_id(rec_txn *t, rec_table tab, uint64_t run, uint64_t *id)
{
	const void *key, *v;
	size_t klen, vlen;
	rec_key k;
	int rc;

	*id = 0;
	run_key(&k, run);
	rc = rec_last(t, tab, &k, &key, &klen, &v, &vlen);
	if (rc == REC_NOTFOUND)
		return 0;
	if (!rc && klen >= 16)
		*id = rec_key_get_u64(key, 8);
	return rc;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* The first row whose story may hold a token or node state made after
 * the checkpoint: rows after the last released one were running or not
 * yet read; the last released row may own a flush's outputs (a timeout
 * or end-of-source tick happens at the release position); the rows of
 * the tokens waiting in aggregation buffers own their batch's error
 * tokens. Records made before the checkpoint have ids below its next
 * ids. So a resume reads the rows it may redo, not the whole run. */
static uint64_t first_row_after(const Elspeth__Checkpoint *c)
{
	uint64_t from = c->released_through_seq;

	for (size_t i = 0; i < c->n_aggregations; i++)
		for (size_t j = 0; j < c->aggregations[i]->n_members; j++) {
			uint64_t seq = c->aggregations[i]->members[j]->seq;

			if (seq < from)
				from = seq;
		}
	return from;
}

static int max_one(void *ctx, const void *key, size_t kl, const void *v, size_t vl)
{
	uint64_t *max = ctx, id = kl >= 16 ? rec_key_get_u64(key, 8) : 0;

	(void)v, (void)vl;
	if (id > *max)
		*max = id;
	return 0;
}

/* The highest id of table tab (keyed run, id) in the rows from
 * first_row_after on; 0 when none. */
static int last_id_after(rec_txn *t, rec_table tab, const Elspeth__Checkpoint *c,
			 uint64_t *id)
{
	*id = 0;
	return rec__story_scan_from(t, tab, c->run_id, first_row_after(c), max_one, id);
}

int rec_ckpt_next_ids(rec_env *env, const Elspeth__Checkpoint *c,
		  uint64_t *token, uint64_t *state, uint64_t *batch,
		  core_err *err)
{
	uint64_t tok, st, call, b;
	rec_txn *t;
	int rc;

	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	if (!(rc = last_id_after(t, REC_TOKENS, c, &tok)) &&
	    !(rc = last_id_after(t, REC_NODE_STATES, c, &st)) &&
	    !(rc = last_id(t, REC_CALLS, c->run_id, &call)))
		rc = last_id(t, REC_BATCHES, c->run_id, &b);
	rec_read_end(t);
	if (rc)
		return core_err_set(err, rc, "run %llu: cannot read the ids it used: %s",
				    (unsigned long long)c->run_id, core_strerror(rc));
	*token = max3(c->next_token_id, tok + 1, 1);
	*state = max3(c->next_state_id, st + 1, call + 1);
	*batch = max3(c->next_batch_id, b + 1, 1);
	return 0;
}

static int count_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)k, (void)kl, (void)v, (void)vl;
	(*(uint32_t *)ctx)++;
	return 0;
}

int rec_resume_count(rec_env *env, uint64_t run, uint32_t *n, core_err *err)
{
	rec_txn *t;
	rec_key k;
	int rc;

	*n = 0;
	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	run_key(&k, run);
	rc = rec_scan(t, REC_RESUMES, &k, count_one, n);
	rec_read_end(t);
	if (rc)
		return core_err_set(err, rc, "run %llu: cannot read its resumes: %s",
				    (unsigned long long)run, core_strerror(rc));
	return 0;
}

/* ------------------------------------------------------------ superseding */

/* Whether the checkpoint holds row seq as done (its tokens are reused). */
static bool done_in(const Elspeth__Checkpoint *c, uint64_t seq)
{
	for (size_t i = 0; i < c->n_rows; i++)
		if (c->rows[i]->seq == seq)
			return c->rows[i]->done;
	return false;
}

typedef struct supersede {
	rec_env *env;
	const Elspeth__Checkpoint *c;
	uint32_t attempt;
	uint64_t count;
	uint64_t token_end;  /* tokens made after the checkpoint: below it */
	int rc;
} supersede;

static void mark_lost(supersede *s, uint64_t token, uint64_t row,
		      const char *why, bool lost)
{
	Elspeth__SupersededRecord r = ELSPETH__SUPERSEDED_RECORD__INIT;
	rec_key k;

	run_key(&k, s->c->run_id);
	rec_key_u64(&k, token);
	r.run_id = s->c->run_id;
	r.token_id = token;
	r.row_id = row;
	r.attempt = s->attempt;
	r.reason = (char *)why;
	r.records_lost = lost;
	if (!s->rc)
		s->rc = rec_put_msg(s->env, REC_SUPERSEDED, &k, &r.base);
	s->count++;
}

static void mark(supersede *s, uint64_t token, uint64_t row, const char *why)
{
	mark_lost(s, token, row, why, false);
}

/* tokens_by_row keys: run, row, token. Tokens of the row created before
 * the checkpoint (later ones are marked by id). */
static int row_token(void *ctx, const void *key, size_t kl, const void *v, size_t vl)
{
	supersede *s = ctx;
	uint64_t token = rec_key_get_u64(key, 16);

	(void)kl, (void)v, (void)vl;
	if (token < s->c->next_token_id)
		mark(s, token, rec_key_get_u64(key, 8),
		     "its row was being processed when the run stopped; the resume ran it again");
	return 0;
}

/* tokens keys: run, token. A token made after the checkpoint. */
static int late_token(void *ctx, const void *key, size_t kl, const void *v, size_t vl)
{
	supersede *s = ctx;
	uint64_t id = kl >= 16 ? rec_key_get_u64(key, 8) : 0;
	Elspeth__TokenRecord *r;

	if (id < s->c->next_token_id || id >= s->token_end)
		return 0;
	if (!(r = elspeth__token_record__unpack(NULL, vl, v)))
		return CORE_EDATA;
	mark(s, id, r->row_id, "created after the last checkpoint; the resume redid that work");
	elspeth__token_record__free_unpacked(r, NULL);
	return s->rc;
}

static void supersede_batches(supersede *s, rec_txn *t, uint64_t batch_end)
{
	for (uint64_t b = s->c->next_batch_id; b < batch_end && !s->rc; b++) {
		Elspeth__BatchRecord *r;
		const void *v;
		char *was;
		size_t vl;
		rec_key k;
		int rc;

		run_key(&k, s->c->run_id);
		rec_key_u64(&k, b);
		rc = rec_get(t, REC_BATCHES, &k, &v, &vl);
		if (rc == REC_NOTFOUND)
			continue;
		if (rc) {
			s->rc = rc;
			return;
		}
		if (!(r = elspeth__batch_record__unpack(NULL, vl, v)))
			continue;
		was = r->status;
		r->status = "superseded";
		s->rc = rec_put_msg(s->env, REC_BATCHES, &k, &r->base);
		r->status = was;
		elspeth__batch_record__free_unpacked(r, NULL);
	}
}

/* Calls whose token has no record: a row's records are written when it
 * is released (or at a checkpoint), so a crash loses the records of the
 * work done since, but not its calls (written at once: they are paid
 * for). Their tokens are superseded too, so verify and explain account
 * for every call. */
typedef struct lost {
	supersede *s;
	rec_txn *t;
	uint64_t *ids, *rows;
	size_t n, cap;
} lost;

static int lost_push(lost *L, uint64_t id, uint64_t row)
{
	if (L->n == L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 64;
		uint64_t *a = realloc(L->ids, cap * sizeof(*a)), *b;

		if (!a)
			return CORE_ENOMEM;
		L->ids = a;
		if (!(b = realloc(L->rows, cap * sizeof(*b))))
			return CORE_ENOMEM;
		L->rows = b;
		L->cap = cap;
	}
	L->ids[L->n] = id;
	L->rows[L->n++] = row;
	return 0;
}

static int lost_call(void *ctx, const void *key, size_t kl, const void *v, size_t vl)
{
	lost *L = ctx;
	Elspeth__CallRecord *r = elspeth__call_record__unpack(NULL, vl, v);
	const Elspeth__Checkpoint *c = L->s->c;
	rec_key k;
	int rc = 0;

	(void)key, (void)kl;
	if (!r)
		return 0;
	if (r->token_id && r->row_id > c->released_through_seq &&
	    !done_in(c, r->row_id) && !(L->n && L->ids[L->n - 1] == r->token_id)) {
		run_key(&k, c->run_id);
		rec_key_u64(&k, r->token_id);
		if (!(rc = rec_txn_row(L->t, c->run_id, r->row_id)) &&
		    (rc = rec_get(L->t, REC_TOKENS, &k, NULL, NULL)) == REC_NOTFOUND)
			rc = lost_push(L, r->token_id, r->row_id);
	}
	elspeth__call_record__free_unpacked(r, NULL);
	return rc;
}

static void supersede_lost(supersede *s, rec_txn *t)
{
	lost L = { .s = s, .t = t };
	rec_key k;
	int rc;

	run_key(&k, s->c->run_id);
	rc = rec_scan(t, REC_CALLS, &k, lost_call, &L);
	if (rc && !s->rc)
		s->rc = rc;
	for (size_t i = 0; i < L.n && !s->rc; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = L.ids[j] == L.ids[i];
		if (!seen)
			mark_lost(s, L.ids[i], L.rows[i], "lost in the crash with its "
				  "row's unwritten records (its calls were recorded); the "
				  "resume ran the row again", true);
	}
	free(L.ids);
	free(L.rows);
}

int rec_ckpt_supersede(rec_env *env, const Elspeth__Checkpoint *c,
		   uint32_t attempt, uint64_t token_end, uint64_t batch_end,
		   uint64_t *tokens, core_err *err)
{
	supersede s = { .env = env, .c = c, .attempt = attempt };
	uint64_t last_row;
	rec_txn *t;
	int rc;

	if ((rc = rec_read_begin(env, &t, err)))
		return rc;
	/* Rows recorded after the checkpoint's released rows, unless the
	 * checkpoint holds them as done. */
	last_row = 0;
	s.rc = rec__story_scan_from(t, REC_ROWS, c->run_id, c->released_through_seq + 1,
				    max_one, &last_row);
	for (uint64_t seq = c->released_through_seq + 1; seq <= last_row && !s.rc; seq++) {
		rec_key k;

		if (done_in(c, seq))
			continue;
		run_key(&k, c->run_id);
		rec_key_u64(&k, seq);
		rc = rec_scan(t, REC_TOKENS_BY_ROW, &k, row_token, &s);
		if (rc && !s.rc)
			s.rc = rc;
	}
	/* Every token created after the checkpoint (in the rows from
	 * first_row_after on). */
	s.token_end = token_end;
	if (!s.rc && (rc = rec__story_scan_from(t, REC_TOKENS, c->run_id,
						first_row_after(c), late_token, &s)))
		s.rc = rc;
	supersede_batches(&s, t, batch_end);
	supersede_lost(&s, t);
	rec_read_end(t);
	*tokens = s.count;
	return s.rc ? core_err_set(err, s.rc, "cannot mark superseded work: %s",
				   core_strerror(s.rc)) : 0;
}

/* ---------------------------------------------------------------- replay */

typedef struct replay_entry {
	uint64_t row;
	uint32_t node;
	char hash[CORE_SHA256_HEX_LEN + 1];
	char from[48];
	char *resp;
	size_t len;
} replay_entry;

struct rec_replay {
	replay_entry *e;
	size_t n, cap;
};

typedef struct replay_load {
	const Elspeth__Checkpoint *c;
	rec_txn *t;
	rec_replay *r;
} replay_load;

static int entry_cmp(const void *a, const void *b)
{
	const replay_entry *x = a, *y = b;

	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return strcmp(x->hash, y->hash);
}

/* A call's response body: in the record (docs/audit.md). */
static bool call_body(rec_txn *t, const Elspeth__CallRecord *r,
		      const void **body, size_t *len)
{
	(void)t;
	*body = r->response.data;
	*len = r->response.len;
	return true;
}

static int call_one(void *ctx, const void *key, size_t kl, const void *v, size_t vl)
{
	replay_load *L = ctx;
	Elspeth__CallRecord *r = elspeth__call_record__unpack(NULL, vl, v);
	const void *body = NULL;
	size_t blen = 0;

	(void)key, (void)kl;
	if (!r)
		return 0;
	if (!strcmp(r->status, "success") && r->row_id > L->c->released_through_seq &&
	    !done_in(L->c, r->row_id) && r->response_hash[0] &&
	    call_body(L->t, r, &body, &blen)) {
		rec_replay *R = L->r;
		replay_entry *e;

		if (R->n == R->cap) {
			size_t cap = R->cap ? R->cap * 2 : 64;
			replay_entry *ne = realloc(R->e, cap * sizeof(*ne));

			if (!ne) {
				elspeth__call_record__free_unpacked(r, NULL);
				return CORE_ENOMEM;
			}
			R->e = ne;
			R->cap = cap;
		}
		e = &R->e[R->n];
		memset(e, 0, sizeof(*e));
		e->row = r->row_id;
		e->node = r->node_id;
		snprintf(e->hash, sizeof(e->hash), "%s", r->request_hash);
		snprintf(e->from, sizeof(e->from), "%llu/%u",
			 (unsigned long long)r->state_id, r->call_index);
		if ((e->resp = malloc(blen ? blen : 1))) {
			memcpy(e->resp, body, blen);
			e->len = blen;
			R->n++;
		}
	}
	elspeth__call_record__free_unpacked(r, NULL);
	return 0;
}

int rec_replay_load(rec_env *env, const Elspeth__Checkpoint *c,
		     rec_replay **out, core_err *err)
{
	replay_load L = { .c = c };
	rec_key k;
	int rc;

	*out = NULL;
	if (!(L.r = calloc(1, sizeof(*L.r))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = rec_read_begin(env, &L.t, err))) {
		free(L.r);
		return rc;
	}
	run_key(&k, c->run_id);
	rc = rec_scan(L.t, REC_CALLS, &k, call_one, &L);
	rec_read_end(L.t);
	if (rc) {
		rec_replay_free(L.r);
		return core_err_set(err, rc == CORE_ENOMEM ? rc : CORE_EIO,
				    "cannot load the recorded calls of run %llu: %s",
				    (unsigned long long)c->run_id, core_strerror(rc));
	}
	if (L.r->n)
		qsort(L.r->e, L.r->n, sizeof(*L.r->e), entry_cmp);
	*out = L.r;
	return 0;
}

size_t rec_replay_size(const rec_replay *r)
{
	return r ? r->n : 0;
}

bool rec_replay_find(const rec_replay *r, uint64_t row, uint32_t node,
		      const char *request_hash, char **resp, size_t *len,
		      const char **from)
{
	replay_entry key = { .row = row, .node = node };
	const replay_entry *e;

	if (!r || !r->n)
		return false;
	snprintf(key.hash, sizeof(key.hash), "%s", request_hash);
	e = bsearch(&key, r->e, r->n, sizeof(*r->e), entry_cmp);
	if (!e || !(*resp = malloc(e->len ? e->len : 1)))
		return false;
	memcpy(*resp, e->resp, e->len);
	*len = e->len;
	*from = e->from;
	return true;
}

void rec_replay_free(rec_replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->e[i].resp);
	free(r->e);
	free(r);
}

/*
 * verify.c — `elspeth verify`: checks a run's audit trail against the
 * invariants of docs/architecture.md §5 (3, 4 and 7): every token has exactly one
 * terminal outcome, every node state is closed, every COMPLETED/ROUTED
 * token has an artifact, every referenced payload exists and hashes to its
 * key (payloads of rows and states are canonical JSON), artifacts and sink
 * files match the files on disk when those are present; fork/join balance
 * (a FORKED or COALESCED token has descendants, every parent is a recorded
 * token) and batch integrity (every batch has members, each a recorded
 * token with an outcome); every call belongs to a recorded node state, call
 * indexes of a state run 0, 1, ... without a gap, and call bodies are stored;
 * metric samples (docs/report.md) decode, match their key, belong to a
 * recorded attempt and never count backwards within it.
 *
 * Resumed runs (docs/audit.md): a superseded token (work a resume abandoned)
 * needs no outcome, closed states, descendants or artifact — its bytes were
 * cut off the sink file — and its calls may have lost their node state
 * (written after them); a superseded batch needs no member outcomes; in a
 * run that did not complete, tokens waiting in the latest checkpoint's
 * aggregation buffers, and tokens of the rows it holds unreleased (an
 * interrupt leaves the rows it cut short), need no outcome; a replayed call names a successful
 * call of the run with the same request (and answer).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

#define MAX_LISTED 200

typedef struct verify {
	rec_txn *t;
	uint64_t run;
	json_t *violations;
	size_t nviol;
	uint64_t tokens, states, rows, artifacts, payloads, sink_files, batches;
	uint64_t purged;             /* payloads purged (elspeth purge) */
	uint64_t calls, call_state, call_next; /* the last call's state, next index */
	uint64_t superseded, replayed, resumes;
	uint64_t samples;
	Elspeth__SampleRecord *last_sample; /* sample_one: the previous one */
	json_t *files;     /* path -> FILE * as an integer */
	json_t *parents;   /* token ids that are some token's parent */
	json_t *nodes;     /* the run's recorded node ids */
	json_t *abandoned; /* token ids in `superseded` */
	json_t *waiting;   /* token ids in the checkpoint's aggregation buffers */
	json_t *waiting_rows; /* rows the checkpoint holds unreleased */
	bool batch_superseded; /* member_one: the batch being scanned */
	bool has_ckpt;     /* a run that did not complete: its checkpoint */
	uint64_t ckpt_released; /* ... released through this row */
	uint64_t max_seq;  /* the highest row recorded */
	uint64_t after_ckpt; /* rows recorded after ckpt_released */
} verify;

static void violation(verify *v, const char *fmt, ...) CORE_PRINTF(2, 3);

static void violation(verify *v, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	v->nviol++;
	if (v->nviol > MAX_LISTED)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(v->violations, json_string(msg));
}

static rec_key key2(uint64_t run, uint64_t id)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	rec_key_u64(&k, id);
	return k;
}

/* True (and a violation) when data does not hash to hash. */
static bool hash_differs(verify *v, const void *data, size_t len,
			 const char *hash, const char *what, const char *kind)
{
	uint8_t d[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];

	core_sha256(data, len, d);
	core_hex(d, sizeof(d), hex);
	if (!strcmp(hex, hash))
		return false;
	violation(v, "%s: %s %.16s... hashes to %.16s...", what, kind, hash, hex);
	return true;
}

/* The payload exists and its bytes hash to its key; with `canonical`,
 * the bytes are canonical JSON. */
static void check_payload(verify *v, const char *hash, bool canonical,
			  const char *what)
{
	const void *data;
	size_t len;

	if (!hash || !hash[0])
		return;
	v->payloads++;
	if (rec_get_payload(v->t, hash, &data, &len)) {
		/* elspeth purge deleted it on purpose; the hash is kept. */
		if (rec_payload_purged(v->t, v->run, hash))
			v->purged++;
		else
			violation(v, "%s: payload %.16s... is missing", what, hash);
		return;
	}
	if (hash_differs(v, data, len, hash, what, "payload"))
		return;
	if (canonical) {
		json_t *j = json_loadb(data, len, JSON_DECODE_ANY, NULL);
		char *c = NULL;
		size_t clen = 0;

		if (!j || core_canon(j, &c, &clen, NULL) || clen != len ||
		    memcmp(c, data, len))
			violation(v, "%s: payload %.16s... is not canonical JSON (%s)",
				  what, hash, CORE_CANONICAL_VERSION);
		free(c);
		json_decref(j);
	}
}

/* A call's body, kept in its record, hashes to the hash recorded. */
static void check_body(verify *v, const char *hash, const ProtobufCBinaryData *b,
		       const char *what)
{
	if (!hash || !hash[0])
		return;
	v->payloads++;
	hash_differs(v, b->data, b->len, hash, what, "body");
}

/* ---------------------------------------------------------- files */

static FILE *open_cached(verify *v, const char *path)
{
	json_t *e = json_object_get(v->files, path);
	FILE *f;

	if (e)
		return (FILE *)(intptr_t)json_integer_value(e);
	f = fopen(path, "rb");
	json_object_set_new(v->files, path, json_integer((json_int_t)(intptr_t)f));
	return f;
}

static void close_files(verify *v)
{
	const char *k;
	json_t *e;

	json_object_foreach(v->files, k, e)
		if (json_integer_value(e))
			fclose((FILE *)(intptr_t)json_integer_value(e));
}

static void check_range(verify *v, const Elspeth__ArtifactRecord *a)
{
	FILE *f = open_cached(v, a->path);
	uint8_t d[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];
	char *buf;

	if (!f)
		return; /* not present here: nothing to compare */
	buf = malloc(a->length ? a->length : 1);
	if (!buf)
		return;
	if (fseeko(f, (off_t)a->offset, SEEK_SET) ||
	    fread(buf, 1, a->length, f) != a->length) {
		violation(v, "token %llu: %s bytes %llu..%llu are beyond the end of the file",
			  (unsigned long long)a->token_id, a->path,
			  (unsigned long long)a->offset,
			  (unsigned long long)(a->offset + a->length));
	} else {
		core_sha256(buf, a->length, d);
		core_hex(d, sizeof(d), hex);
		if (strcmp(hex, a->content_hash))
			violation(v, "token %llu: %s bytes %llu..%llu differ from what was written",
				  (unsigned long long)a->token_id, a->path,
				  (unsigned long long)a->offset,
				  (unsigned long long)(a->offset + a->length));
	}
	free(buf);
}

/* ---------------------------------------------------------- tokens */

static void check_artifact(verify *v, const Elspeth__TokenOutcomeRecord *o)
{
	rec_key k = key2(v->run, o->token_id);
	Elspeth__ArtifactRecord *a;
	const void *val;
	size_t len;

	if (rec_get(v->t, REC_ARTIFACTS, &k, &val, &len)) {
		violation(v, "token %llu (row %llu): %s to sink '%s' but no artifact was recorded",
			  (unsigned long long)o->token_id, (unsigned long long)o->row_id,
			  o->outcome, o->sink);
		return;
	}
	a = elspeth__artifact_record__unpack(NULL, len, val);
	if (!a)
		return violation(v, "token %llu: undecodable artifact", (unsigned long long)o->token_id);
	v->artifacts++;
	check_range(v, a);
	elspeth__artifact_record__free_unpacked(a, NULL);
}

/* Sets of token ids: json objects keyed by the decimal id. */
static void set_add(json_t *set, uint64_t id)
{
	char k[24];

	snprintf(k, sizeof(k), "%llu", (unsigned long long)id);
	json_object_set_new(set, k, json_true());
}

static bool set_has(const json_t *set, uint64_t id)
{
	char k[24];

	snprintf(k, sizeof(k), "%llu", (unsigned long long)id);
	return json_object_get(set, k) != NULL;
}

/* Collects parent ids; each parent and child must be a recorded token. */
static int parent_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__TokenParentRecord *p = elspeth__token_parent_record__unpack(NULL, vl, val);
	rec_key k;
	const void *tv;
	size_t tl;

	(void)key;
	(void)kl;
	if (!p)
		return violation(v, "undecodable token parent"), 0;
	set_add(v->parents, p->parent_token_id);
	k = key2(v->run, p->parent_token_id);
	if (rec_get(v->t, REC_TOKENS, &k, &tv, &tl))
		violation(v, "token %llu names parent %llu, which is not recorded",
			  (unsigned long long)p->token_id, (unsigned long long)p->parent_token_id);
	elspeth__token_parent_record__free_unpacked(p, NULL);
	return 0;
}

/* A batch has members, each a recorded token with an outcome or a
 * continuation (passthrough). The members of a superseded batch (one a
 * crashed attempt flushed after its last checkpoint) were flushed again
 * by the resume: their outcomes come from the new batch, if at all. */
static int member_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__BatchMemberRecord *m = elspeth__batch_member_record__unpack(NULL, vl, val);
	rec_key k;
	const void *tv;
	size_t tl;

	(void)key;
	(void)kl;
	if (!m)
		return violation(v, "undecodable batch member"), 0;
	k = key2(v->run, m->token_id);
	if (rec_get(v->t, REC_TOKENS, &k, &tv, &tl))
		violation(v, "batch %llu: member token %llu is not recorded",
			  (unsigned long long)m->batch_id, (unsigned long long)m->token_id);
	else if (!v->batch_superseded &&
		 rec_get(v->t, REC_TOKEN_OUTCOMES, &k, &tv, &tl))
		violation(v, "batch %llu: member token %llu has no outcome",
			  (unsigned long long)m->batch_id, (unsigned long long)m->token_id);
	elspeth__batch_member_record__free_unpacked(m, NULL);
	return REC_SCAN_STOP; /* one is enough to know the batch is not empty */
}

static int batch_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__BatchRecord *b = elspeth__batch_record__unpack(NULL, vl, val);
	rec_key k;
	int rc;

	(void)key;
	(void)kl;
	if (!b)
		return violation(v, "undecodable batch"), 0;
	v->batches++;
	k = key2(v->run, b->batch_id);
	/* A crash may have cut a superseded batch off before its members. */
	v->batch_superseded = !strcmp(b->status, "superseded");
	rc = rec_scan(v->t, REC_BATCH_MEMBERS, &k, member_one, v);
	if (!rc && !v->batch_superseded)
		violation(v, "batch %llu of node %u has no members",
			  (unsigned long long)b->batch_id, b->node_id);
	elspeth__batch_record__free_unpacked(b, NULL);
	return rc == REC_SCAN_STOP ? 0 : rc;
}

/* Whether the token (its record) belongs to a row the checkpoint of an
 * unfinished run holds unreleased (done or in flight: the resume releases
 * or runs it). */
static bool row_waiting(const verify *v, const void *val, size_t vl)
{
	Elspeth__TokenRecord *t;
	bool w;

	if (!json_object_size(v->waiting_rows) ||
	    !(t = elspeth__token_record__unpack(NULL, vl, val)))
		return false;
	w = set_has(v->waiting_rows, t->row_id);
	elspeth__token_record__free_unpacked(t, NULL);
	return w;
}

static int token_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	uint64_t id = rec_key_get_u64(key, 8);
	rec_key k = key2(v->run, id);
	Elspeth__TokenOutcomeRecord *o;
	const void *ov;
	size_t ol;
	bool abandoned;

	(void)kl;
	(void)val;
	(void)vl;
	v->tokens++;
	abandoned = set_has(v->abandoned, id);
	if (rec_get(v->t, REC_TOKEN_OUTCOMES, &k, &ov, &ol)) {
		if (!abandoned && !set_has(v->waiting, id) && !row_waiting(v, val, vl))
			violation(v, "token %llu has no terminal outcome",
				  (unsigned long long)id);
		return 0;
	}
	o = elspeth__token_outcome_record__unpack(NULL, ol, ov);
	if (!o) {
		violation(v, "token %llu: undecodable outcome", (unsigned long long)id);
		return 0;
	}
	/* A superseded token's output was cut off the sink and rewritten by
	 * the resume's tokens; its lineage may have been cut by the crash. */
	if ((!strcmp(o->outcome, "COMPLETED") || !strcmp(o->outcome, "ROUTED") ||
	     !strcmp(o->outcome, "DIVERTED")) && o->sink[0] && !abandoned)
		check_artifact(v, o);
	if ((!strcmp(o->outcome, "FORKED") || !strcmp(o->outcome, "COALESCED")) &&
	    !abandoned && !set_has(v->parents, id))
		violation(v, "token %llu is %s but no token descends from it",
			  (unsigned long long)id, o->outcome);
	check_payload(v, o->error_hash, false, "outcome error");
	elspeth__token_outcome_record__free_unpacked(o, NULL);
	return 0;
}

static int node_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;

	(void)val, (void)vl;
	if (kl >= 12)
		set_add(v->nodes, rec_key_get_u32(key, 8));
	return 0;
}

static int state_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__NodeStateRecord *s = elspeth__node_state_record__unpack(NULL, vl, val);
	char what[64];

	(void)key;
	(void)kl;
	v->states++;
	if (!s)
		return violation(v, "undecodable node state"), 0;
	snprintf(what, sizeof(what), "node state %llu", (unsigned long long)s->state_id);
	if (!set_has(v->nodes, s->node_id))
		violation(v, "%s (token %llu) is at node %u, which the run did not record",
			  what, (unsigned long long)s->token_id, (unsigned)s->node_id);
	if (strcmp(s->status, "completed") && strcmp(s->status, "failed") &&
	    !set_has(v->abandoned, s->token_id))
		violation(v, "%s (token %llu) is not closed: status '%s'", what,
			  (unsigned long long)s->token_id, s->status);
	check_payload(v, s->input_hash, true, what);
	if (strcmp(s->output_hash, s->input_hash))
		check_payload(v, s->output_hash, true, what);
	elspeth__node_state_record__free_unpacked(s, NULL);
	return 0;
}

static int row_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__RowRecord *r = elspeth__row_record__unpack(NULL, vl, val);
	char what[64];

	(void)key;
	(void)kl;
	v->rows++;
	if (!r)
		return violation(v, "undecodable row"), 0;
	if (r->seq > v->max_seq)
		v->max_seq = r->seq;
	if (v->has_ckpt && r->seq > v->ckpt_released)
		v->after_ckpt++;
	snprintf(what, sizeof(what), "row %llu", (unsigned long long)r->seq);
	check_payload(v, r->source_hash, true, what);
	elspeth__row_record__free_unpacked(r, NULL);
	return 0;
}

static int sink_file_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__SinkFileRecord *f = elspeth__sink_file_record__unpack(NULL, vl, val);
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t size;

	(void)key;
	(void)kl;
	if (!f)
		return 0;
	v->sink_files++;
	if (core_sha256_file(f->path, UINT64_MAX, &size, hex, NULL) == 0 &&
	    (size != f->size || strcmp(hex, f->content_hash)))
		violation(v, "sink '%s': %s changed since the run (%llu bytes recorded, %llu now)",
			  f->sink, f->path, (unsigned long long)f->size,
			  (unsigned long long)size);
	elspeth__sink_file_record__free_unpacked(f, NULL);
	return 0;
}

/* "STATE/INDEX" -> its parts; false when s is not of that form. */
static bool parse_call_ref(const char *s, uint64_t *state, uint32_t *index)
{
	unsigned long long st, ix;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return false;
	st = strtoull(s, &end, 10);
	if (*end != '/' || !isdigit((unsigned char)end[1]))
		return false;
	ix = strtoull(end + 1, &end, 10);
	if (*end || ix > UINT32_MAX)
		return false;
	*state = st;
	*index = (uint32_t)ix;
	return true;
}

/* The recorded call a replayed call names ("STATE/INDEX"), or NULL after
 * reporting why there is none. */
static Elspeth__CallRecord *replay_source(verify *v, const char *from,
					  const char *what)
{
	Elspeth__CallRecord *o;
	const void *val;
	size_t len;
	uint64_t state;
	uint32_t index;
	rec_key k;

	if (!from[0]) {
		violation(v, "%s: replayed, but does not name the call it replays", what);
		return NULL;
	}
	if (!parse_call_ref(from, &state, &index)) {
		violation(v, "%s: replayed from '%s', which is not STATE/INDEX", what, from);
		return NULL;
	}
	k = key2(v->run, state);
	rec_key_u32(&k, index);
	if (rec_get(v->t, REC_CALLS, &k, &val, &len)) {
		violation(v, "%s: replayed from call %s, which is not recorded", what, from);
		return NULL;
	}
	if (!(o = elspeth__call_record__unpack(NULL, len, val)))
		violation(v, "%s: replayed from call %s, which is undecodable", what, from);
	return o;
}

/* A replayed call reused the answer of an earlier successful call of the
 * run: replayed_from names it, and the request (and so the answer) is the
 * same. */
static void check_replay(verify *v, const Elspeth__CallRecord *c, const char *what)
{
	const char *from = c->replayed_from;
	Elspeth__CallRecord *o;

	if (strcmp(c->status, "replayed")) {
		violation(v, "%s: has replayed_from '%s' but status '%s'", what, from,
			  c->status);
		return;
	}
	v->replayed++;
	if (!(o = replay_source(v, from, what)))
		return;
	if (strcmp(o->status, "success"))
		violation(v, "%s: replayed from call %s, whose status is '%s', not success",
			  what, from, o->status);
	else if (strcmp(o->request_hash, c->request_hash))
		violation(v, "%s: replayed from call %s, which sent a different request",
			  what, from);
	else if (strcmp(o->response_hash, c->response_hash))
		violation(v, "%s: replayed from call %s, whose answer differs", what, from);
	elspeth__call_record__free_unpacked(o, NULL);
}

/* A call belongs to a recorded node state, its index follows the previous
 * one of that state (0, 1, ...: unique, nothing lost; replayed calls
 * count), and its request and response bodies are stored. */
static int call_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__CallRecord *c = elspeth__call_record__unpack(NULL, vl, val);
	const void *sv;
	size_t sl;
	char what[96];
	rec_key k;

	(void)key;
	(void)kl;
	v->calls++;
	if (!c)
		return violation(v, "undecodable call"), 0;
	snprintf(what, sizeof(what), "call %u of node state %llu", c->call_index,
		 (unsigned long long)c->state_id);
	k = key2(v->run, c->state_id);
	/* A state is recorded after its calls: a crash may have lost the
	 * state of a token the resume then superseded. */
	if (rec_get(v->t, REC_NODE_STATES, &k, &sv, &sl) &&
	    !(c->token_id && set_has(v->abandoned, c->token_id)))
		violation(v, "%s: the node state is not recorded", what);
	if (c->state_id != v->call_state)
		v->call_next = 0;
	if (c->call_index != v->call_next)
		violation(v, "%s: expected call index %llu (a call is missing)", what,
			  (unsigned long long)v->call_next);
	v->call_state = c->state_id;
	v->call_next = c->call_index + 1;
	if (c->replayed_from[0] || !strcmp(c->status, "replayed"))
		check_replay(v, c, what);
	check_body(v, c->request_hash, &c->request, what);
	check_body(v, c->response_hash, &c->response, what);
	elspeth__call_record__free_unpacked(c, NULL);
	return 0;
}

/* ---------------------------------------------------------- resumes */

/* Collects the tokens a resume abandoned; each must be a recorded token. */
static int superseded_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	uint64_t id = rec_key_get_u64(key, 8);
	rec_key k = key2(v->run, id);
	Elspeth__SupersededRecord *s = elspeth__superseded_record__unpack(NULL, vl, val);
	const void *tv;
	size_t tl;

	(void)kl;
	v->superseded++;
	set_add(v->abandoned, id);
	/* A token the crash lost before its records were written is known
	 * by its calls only (docs/audit.md, "How it is stored"). */
	if (rec_get(v->t, REC_TOKENS, &k, &tv, &tl) && !(s && s->records_lost))
		violation(v, "superseded token %llu is not recorded", (unsigned long long)id);
	if (s)
		elspeth__superseded_record__free_unpacked(s, NULL);
	return 0;
}

static int resume_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	(void)key;
	(void)kl;
	(void)val;
	(void)vl;
	((verify *)ctx)->resumes++;
	return 0;
}

/* A count that may only grow between two samples of one attempt. */
static void sample_grows(verify *v, const Elspeth__SampleRecord *s,
			 const char *what, uint64_t before, uint64_t now)
{
	if (now < before)
		violation(v, "sample %u/%u: %s went down from %llu to %llu",
			  (unsigned)s->attempt, (unsigned)s->index, what,
			  (unsigned long long)before, (unsigned long long)now);
}

/* A metric sample: decodes, matches its key (run, attempt, index), its
 * attempt was recorded (0 or a resume), and within an attempt rows
 * pulled and released and calls never go down. Samples are not evidence
 * of what happened to a row: they are checked for their shape only. */
static int sample_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	verify *v = ctx;
	Elspeth__SampleRecord *s = elspeth__sample_record__unpack(NULL, vl, val);
	const Elspeth__SampleRecord *p = v->last_sample;

	v->samples++;
	if (!s || kl != 16) {
		violation(v, "a metric sample cannot be decoded");
		if (s)
			elspeth__sample_record__free_unpacked(s, NULL);
		return 0;
	}
	if (s->run_id != v->run || s->attempt != rec_key_get_u32(key, 8) ||
	    s->index != rec_key_get_u32(key, 12))
		violation(v, "sample %u/%u is stored under another key",
			  (unsigned)s->attempt, (unsigned)s->index);
	if (s->attempt > v->resumes)
		violation(v, "sample %u/%u belongs to attempt %u, which was never recorded",
			  (unsigned)s->attempt, (unsigned)s->index, (unsigned)s->attempt);
	if (s->released > s->pulled)
		violation(v, "sample %u/%u: %llu rows released but only %llu pulled",
			  (unsigned)s->attempt, (unsigned)s->index,
			  (unsigned long long)s->released, (unsigned long long)s->pulled);
	if (p && p->attempt == s->attempt) {
		sample_grows(v, s, "rows pulled", p->pulled, s->pulled);
		sample_grows(v, s, "rows released", p->released, s->released);
		sample_grows(v, s, "calls", p->calls, s->calls);
	}
	if (v->last_sample)
		elspeth__sample_record__free_unpacked(v->last_sample, NULL);
	v->last_sample = s;
	return 0;
}

/* A run that did not complete (interrupted, failed, or crashed while
 * running) leaves tokens in aggregation buffers and rows unreleased (an
 * interrupt leaves the rows it cut short) for a resume: the members and
 * rows its latest checkpoint lists need no outcome yet. */
static void load_waiting(verify *v, const Elspeth__RunRecord *r)
{
	Elspeth__Checkpoint *c;
	const void *val;
	size_t len, i, j;
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, v->run);
	if (!strcmp(r->status, "completed") ||
	    rec_get(v->t, REC_CHECKPOINTS, &k, &val, &len))
		return;
	c = elspeth__checkpoint__unpack(NULL, len, val);
	if (!c) {
		violation(v, "run %llu: undecodable checkpoint", (unsigned long long)v->run);
		return;
	}
	v->has_ckpt = true;
	v->ckpt_released = c->released_through_seq;
	for (i = 0; i < c->n_aggregations; i++)
		for (j = 0; j < c->aggregations[i]->n_members; j++)
			set_add(v->waiting, c->aggregations[i]->members[j]->token_id);
	for (i = 0; i < c->n_rows; i++)
		set_add(v->waiting_rows, c->rows[i]->seq);
	elspeth__checkpoint__free_unpacked(c, NULL);
}

/* A run that did not complete: what `elspeth resume` will cut back to.
 * A run whose store filled up (or that was killed) could not record its
 * end; its status still says running. */
static json_t *stopped_json(const verify *v, const Elspeth__RunRecord *r)
{
	char msg[800];

	if (!v->has_ckpt)
		snprintf(msg, sizeof(msg), "run %llu stopped (%s%s%s) before its first "
			 "checkpoint: `elspeth resume` cannot continue it; run it again",
			 (unsigned long long)v->run, r->status, r->error[0] ? ": " : "",
			 r->error);
	else
		snprintf(msg, sizeof(msg), "run %llu stopped (%s%s%.200s); `elspeth resume` "
			 "continues after row %llu, its last checkpoint: the %llu rows "
			 "recorded after it (up to row %llu) are run again and their "
			 "records marked superseded",
			 (unsigned long long)v->run,
			 !strcmp(r->status, "running") ? "its end is not recorded: killed, "
			 "or its audit store filled up" : r->status,
			 r->error[0] ? ": " : "", r->error,
			 (unsigned long long)v->ckpt_released,
			 (unsigned long long)v->after_ckpt, (unsigned long long)v->max_seq);
	return json_pack("{s:s,s:b,s:I,s:I,s:s}", "status", r->status,
			 "checkpoint", v->has_ckpt,
			 "resume_after_row", (json_int_t)v->ckpt_released,
			 "rows_to_run_again", (json_int_t)v->after_ckpt, "message", msg);
}

/* The checks of every table of the run, in an order where each finds
 * what it needs (the parents before the tokens). 0 or a read error. */
static int scan_run(verify *v, const rec_key *run)
{
	static const struct {
		rec_table table;
		rec_scan_fn fn;
	} scans[] = {
		{ REC_NODES, node_one },
		{ REC_ROWS, row_one },
		{ REC_TOKEN_PARENTS, parent_one },
		{ REC_TOKENS, token_one },
		{ REC_BATCHES, batch_one },
		{ REC_NODE_STATES, state_one },
		{ REC_CALLS, call_one },
		{ REC_SINK_FILES, sink_file_one },
		{ REC_SAMPLES, sample_one },
	};
	int rc = 0;

	for (size_t i = 0; !rc && i < sizeof(scans) / sizeof(scans[0]); i++)
		rc = rec_scan(v->t, scans[i].table, run, scans[i].fn, v);
	return rc;
}

static int any_one(void *ctx, const void *key, size_t kl, const void *val, size_t vl)
{
	(void)ctx, (void)key, (void)kl, (void)val, (void)vl;
	return 0;
}

/* Reads every stored value of the run (and the shared payloads) once, so
 * that each one's seal is checked, also those no invariant above looks
 * at (a completed run's checkpoint, its dictionary, ...). 0 or the read
 * error (CORE_EDATA: damaged). */
static int sweep_seals(verify *v, const rec_key *run)
{
	static const rec_table tables[] = {
		REC_NODES, REC_EDGES, REC_CALLS, REC_BATCHES, REC_BATCH_MEMBERS,
		REC_SINK_FILES, REC_CHECKPOINTS, REC_RESUMES, REC_SUPERSEDED,
		REC_SAMPLES, REC_TRAIL, REC_DICTS,
	};
	int rc = 0;

	for (size_t i = 0; !rc && i < sizeof(tables) / sizeof(tables[0]); i++)
		rc = rec_scan(v->t, tables[i], run, any_one, NULL);
	return rc ? rc : rec_scan(v->t, REC_PAYLOADS, NULL, any_one, NULL);
}

/* The run's chain (chain.c) recomputed and compared with the head its
 * run record holds; the head's signature checked when ELSPETH_SIGNING_KEY
 * is set. *out: the report's "chain" object. 0 or the read error. */
static int check_chain(verify *v, const Elspeth__RunRecord *r, json_t **out)
{
	const char *key = core_signing_key(), *sig = "unsigned", *state = "intact";
	char head[CORE_SHA256_HEX_LEN + 1], mac[CORE_SHA256_HEX_LEN + 1];
	unsigned long long id = (unsigned long long)r->run_id;
	uint64_t n = 0;
	int rc;

	if (!r->chain_head[0]) {
		/* A run that never ended has no head yet (a killed run is
		 * "running" until it is resumed). One that ended has one. */
		if (strcmp(r->status, "running"))
			violation(v, "the trail was changed: run %llu ended (%s) but its run "
				  "record holds no head of its chain", id, r->status);
		*out = json_pack("{s:s}", "status", strcmp(r->status, "running") ?
				 "missing" : "not yet (the run has not ended)");
		return 0;
	}
	if ((rc = rec__chain_head(rec__txn_env(v->t), rec__txn_mdb(v->t), r, head, &n)))
		return rc;
	if (strcmp(head, r->chain_head) || n != r->chain_records) {
		state = "broken";
		violation(v, "the trail was changed: run %llu's records no longer match the "
			  "head of their chain (%llu records now, %llu when the run ended): "
			  "a record was changed, removed or added", id,
			  (unsigned long long)n, (unsigned long long)r->chain_records);
	}
	if (r->chain_hmac[0] && !key) {
		sig = "not checked (ELSPETH_SIGNING_KEY is not set)";
	} else if (r->chain_hmac[0]) {
		if ((rc = core_hmac_sha256_hex(key, r->chain_head, strlen(r->chain_head), mac)))
			return rc;
		sig = strcmp(mac, r->chain_hmac) ? "invalid" : "valid";
		if (strcmp(mac, r->chain_hmac))
			violation(v, "the trail was changed: the signature of run %llu's chain "
				  "does not match ELSPETH_SIGNING_KEY (its head was rewritten, "
				  "or it was signed with another key)", id);
	} else if (key) {
		violation(v, "run %llu's chain is not signed, and ELSPETH_SIGNING_KEY is "
			  "set: its head could have been rewritten by anyone", id);
	}
	*out = json_pack("{s:s,s:s,s:I,s:s}", "status", state, "head", r->chain_head,
			 "records", (json_int_t)r->chain_records, "signature", sig);
	return 0;
}

int rec_verify(rec_env *env, uint64_t run, json_t **report, core_err *err)
{
	json_t *chain = NULL;
	verify v = { .run = run };
	Elspeth__RunRecord *r = NULL;
	const void *val;
	size_t len;
	rec_key k;
	int rc;

	if ((rc = rec_read_begin(env, &v.t, err)))
		return rc;
	rec_key_init(&k);
	rec_key_u64(&k, run);
	if ((rc = rec_get(v.t, REC_RUNS, &k, &val, &len)) == 0)
		r = elspeth__run_record__unpack(NULL, len, val);
	if (!r) {
		rec_read_end(v.t);
		if (rc && rc != REC_NOTFOUND)
			return core_err_set(err, rc, "run %llu: its record cannot be read: %s%s%s",
					    (unsigned long long)run, core_strerror(rc),
					    rc == CORE_EDATA ? ": the trail is damaged at " : "",
					    rc == CORE_EDATA ? rec_damage_where() : "");
		return core_err_set(err, CORE_EDATA, rc ? "run %llu is not in the audit trail" :
				    "run %llu: its record cannot be decoded", (unsigned long long)run);
	}
	v.violations = json_array();
	v.files = json_object();
	if (strcmp(r->canonical_version, CORE_CANONICAL_VERSION))
		violation(&v, "run %llu was hashed with '%s', this build checks '%s'",
			  (unsigned long long)run, r->canonical_version, CORE_CANONICAL_VERSION);
	v.parents = json_object();
	v.nodes = json_object();
	v.abandoned = json_object();
	v.waiting = json_object();
	v.waiting_rows = json_object();
	if (!(rc = rec_scan(v.t, REC_SUPERSEDED, &k, superseded_one, &v)) &&
	    !(rc = rec_scan(v.t, REC_RESUMES, &k, resume_one, &v)))
		load_waiting(&v, r);
	if (rc || (rc = scan_run(&v, &k)) || (rc = sweep_seals(&v, &k)) ||
	    (rc = check_chain(&v, r, &chain)))
		core_err_set(err, rc, "run %llu: cannot read the audit trail to "
			     "verify it: %s%s%s%s", (unsigned long long)run, core_strerror(rc),
			     rc == CORE_EDATA && rec_damage_where()[0] ? " (" : "",
			     rc == CORE_EDATA ? rec_damage_where() : "",
			     rc == CORE_EDATA && rec_damage_where()[0] ? ")" : "");
	/* A completed run recorded every row it counted: fewer readable
	 * means records were lost (damage that hides keys reads as a shorter
	 * table, not as an error). */
	else if (!strcmp(r->status, "completed") && v.rows < r->rows)
		violation(&v, "the trail is damaged: run %llu: %llu of its %llu rows are "
			  "readable", (unsigned long long)run, (unsigned long long)v.rows,
			  (unsigned long long)r->rows);
	close_files(&v);
	if (v.last_sample)
		elspeth__sample_record__free_unpacked(v.last_sample, NULL);
	*report = rc ? NULL : json_pack("{s:I,s:s,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I},s:I,s:o}",
		"run_id", (json_int_t)run, "status", r->status,
		"checked", "rows", (json_int_t)v.rows, "tokens", (json_int_t)v.tokens,
		"node_states", (json_int_t)v.states, "artifacts", (json_int_t)v.artifacts,
		"payloads", (json_int_t)v.payloads, "sink_files", (json_int_t)v.sink_files,
		"batches", (json_int_t)v.batches, "calls", (json_int_t)v.calls,
		"superseded", (json_int_t)v.superseded,
		"replayed_calls", (json_int_t)v.replayed, "resumes", (json_int_t)v.resumes,
		"samples", (json_int_t)v.samples,
		"violation_count", (json_int_t)v.nviol, "violations", v.violations);
	/* checked.payloads_purged: payloads elspeth purge deleted (ADR 0028). */
	if (*report && v.purged)
		json_object_set_new(json_object_get(*report, "checked"), "payloads_purged",
				    json_integer((json_int_t)v.purged));
	if (*report)
		json_object_set_new(*report, "chain", chain);
	else
		json_decref(chain);
	if (*report && strcmp(r->status, "completed"))
		json_object_set_new(*report, "stopped", stopped_json(&v, r));
	if (rc)
		json_decref(v.violations);
	json_decref(v.files);
	json_decref(v.parents);
	json_decref(v.nodes);
	json_decref(v.abandoned);
	json_decref(v.waiting);
	json_decref(v.waiting_rows);
	elspeth__run_record__free_unpacked(r, NULL);
	rec_read_end(v.t);
	return rc;
}

/*
 * story.c — writing row stories (story.h, docs/audit.md "Row stories").
 *
 * The engine hands over the same records it always described a row with
 * (RowRecord, TokenRecord, NodeStateRecord ...); rec_story_put encodes
 * each into the row's open story, a buffer in memory, and
 * rec_story_seal enqueues the buffer as one put of the `trail` table when
 * the row is released. Rows are released in order, so the keys grow and
 * the writer appends (apply.c): each put touches only the table's last
 * page.
 *
 * DESIGN (locks): open stories live in STRIPES hash tables, each with its
 * own mutex, chosen by seq: workers recording different rows rarely meet.
 * A stripe's mutex guards its table and the stories in it; it is taken
 * before env->lock (enqueueing a fragment), never after. serial and
 * attempt are atomics (any thread).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"
#include "recorder/story.h"

#define STRIPES 64
#define BUCKETS 64 /* per stripe */

typedef struct story {
	uint64_t run, seq;
	uint64_t base_ns;
	bool has_base;          /* base_ns is set (by the first time put) */
	core_buf buf;
	size_t hdr_len;         /* the header's bytes: nothing recorded yet */
	uint8_t (*hashes)[CORE_SHA256_LEN];
	char (*hex)[CORE_SHA256_HEX_LEN]; /* the same, as the engine has them */
	bool *stored;           /* hashes[i]'s payload is in the fragment */
	size_t nhashes, caphashes;
	struct story *next;
} story;

typedef struct stripe {
	pthread_mutex_t lock;
	story *bucket[BUCKETS];
	story *free;
	size_t open;
} stripe;

struct rec__stories {
	stripe s[STRIPES];
	atomic_uint_fast32_t attempt;
	atomic_uint_fast32_t serial;
};

/* ------------------------------------------------------------- codec */

int story_uv(core_buf *b, uint64_t v)
{
	uint8_t *p;

	if (b->cap - b->len < 11 && core_buf_reserve(b, 11))
		return CORE_ENOMEM;
	p = (uint8_t *)b->data + b->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = (size_t)(p - (uint8_t *)b->data);
	b->data[b->len] = '\0'; /* core_buf's invariant */
	return 0;
}

int story_zz(core_buf *b, int64_t v)
{
	return story_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

int story_str(core_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return story_uv(b, n) || core_buf_append(b, s, n) ? CORE_ENOMEM : 0;
}

uint64_t story_get_uv(story_in *in)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (in->p < in->end && shift < 64) {
		uint8_t c = *in->p++;

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
		shift += 7;
	}
	in->bad = 1;
	return 0;
}

int64_t story_get_zz(story_in *in)
{
	uint64_t u = story_get_uv(in);

	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

size_t story_get_str(story_in *in, const char **s)
{
	uint64_t n = story_get_uv(in);

	if (in->bad || n > (uint64_t)(in->end - in->p)) {
		in->bad = 1;
		*s = "";
		return 0;
	}
	*s = (const char *)in->p;
	in->p += n;
	return (size_t)n;
}

/* ----------------------------------------------------------- encoding */

/* Finds or adds a binary hash (hex: the same in hex) in the story's
 * list; *found says which. */
static int hash_index(story *s, const uint8_t h[CORE_SHA256_LEN],
		      const char *hex, size_t *i, bool *found)
{
	for (*i = 0; *i < s->nhashes; (*i)++)
		if (!memcmp(s->hashes[*i], h, CORE_SHA256_LEN)) {
			*found = true;
			return 0;
		}
	*found = false;
	if (s->nhashes == s->caphashes) {
		size_t cap = s->caphashes ? s->caphashes * 2 : 8;
		void *p = realloc(s->hashes, cap * CORE_SHA256_LEN);
		bool *q;

		if (!p)
			return CORE_ENOMEM;
		s->hashes = p;
		if (!(q = realloc(s->stored, cap * sizeof(*q))))
			return CORE_ENOMEM;
		s->stored = q;
		if (!(p = realloc(s->hex, cap * CORE_SHA256_HEX_LEN)))
			return CORE_ENOMEM;
		s->hex = p;
		s->caphashes = cap;
	}
	s->stored[s->nhashes] = false;
	memcpy(s->hashes[s->nhashes], h, CORE_SHA256_LEN);
	memcpy(s->hex[s->nhashes++], hex, CORE_SHA256_HEX_LEN);
	return 0;
}

static int put_hash(story *s, const char *hex)
{
	uint8_t h[CORE_SHA256_LEN];
	size_t i;
	bool found;
	int rc;

	if (!hex || !*hex)
		return story_uv(&s->buf, STORY_HASH_NONE);
	/* Most hashes a record names were named before in the row (a
	 * state's input is the output of the one before). */
	for (i = 0; i < s->nhashes; i++)
		if (!strncmp(s->hex[i], hex, CORE_SHA256_HEX_LEN) &&
		    !hex[CORE_SHA256_HEX_LEN])
			return story_uv(&s->buf, STORY_HASH_REF + i);
	/* lowercase only: an uppercase one would not read back as written */
	if (!rec__unhex32(hex, false, h))
		return story_uv(&s->buf, STORY_HASH_TEXT) || story_str(&s->buf, hex) ?
		       CORE_ENOMEM : 0;
	if ((rc = hash_index(s, h, hex, &i, &found)))
		return rc;
	if (found)
		return story_uv(&s->buf, STORY_HASH_REF + i);
	return story_uv(&s->buf, STORY_HASH_NEW) ||
	       core_buf_append(&s->buf, h, CORE_SHA256_LEN) ? CORE_ENOMEM : 0;
}

static int put_id(story *s, uint64_t id)
{
	return story_zz(&s->buf, (int64_t)(id - s->seq));
}

/* The header's base is the story's first time (no clock read of its
 * own): written in place, as a 9-byte varint, when it is known. */
#define BASE_OFF 1
#define BASE_LEN 9

static void base_write(story *s, uint64_t ns)
{
	uint8_t *p = (uint8_t *)s->buf.data + BASE_OFF;

	for (int i = 0; i < BASE_LEN - 1; i++, ns >>= 7)
		p[i] = (uint8_t)(ns | 0x80);
	p[BASE_LEN - 1] = (uint8_t)(ns & 0x7f);
}

static int put_time(story *s, uint64_t ns)
{
	if (!s->has_base) {
		s->base_ns = ns;
		s->has_base = true;
		base_write(s, ns);
	}
	return story_zz(&s->buf, (int64_t)(ns - s->base_ns));
}

#define TRY(x) do { if ((rc = (x))) return rc; } while (0)

static int encode_row(story *s, const Elspeth__RowRecord *r, bool with_source)
{
	int rc;

	TRY(put_hash(s, r->source_hash));
	TRY(put_hash(s, r->payload_ref));
	TRY(story_str(&s->buf, r->where));
	TRY(put_time(s, r->created_at_ns));
	if (!with_source)
		return 0;
	TRY(story_uv(&s->buf, r->source));
	return story_uv(&s->buf, r->source_row_index);
}

/* A row of the first source, at index seq - 1, is a plain STORY_ROW. */
static bool row_has_source(const Elspeth__RowRecord *r)
{
	return r->source || r->source_row_index + 1 != r->seq;
}

static int encode_token(story *s, const Elspeth__TokenRecord *r)
{
	int rc;

	TRY(put_id(s, r->token_id));
	TRY(put_id(s, r->row_id));
	TRY(put_time(s, r->created_at_ns));
	TRY(story_uv(&s->buf, r->branch_ordinal));
	return story_str(&s->buf, r->branch);
}

static int encode_parent(story *s, const Elspeth__TokenParentRecord *r)
{
	int rc;

	TRY(put_id(s, r->token_id));
	TRY(put_id(s, r->parent_token_id));
	return story_uv(&s->buf, r->ordinal);
}

static int encode_state(story *s, const Elspeth__NodeStateRecord *r)
{
	int rc;

	TRY(put_id(s, r->state_id));
	TRY(put_id(s, r->token_id));
	TRY(story_uv(&s->buf, r->node_id));
	TRY(story_uv(&s->buf, r->step));
	TRY(story_uv(&s->buf, r->attempt));
	TRY(story_str(&s->buf, r->status));
	TRY(put_hash(s, r->input_hash));
	TRY(put_hash(s, r->output_hash));
	TRY(put_time(s, r->started_at_ns));
	TRY(story_zz(&s->buf, (int64_t)(r->completed_at_ns - r->started_at_ns)));
	TRY(story_uv(&s->buf, r->duration_ns));
	TRY(story_str(&s->buf, r->error));
	return story_str(&s->buf, r->context_json);
}

static int encode_route(story *s, const Elspeth__RoutingEventRecord *r)
{
	int rc;

	TRY(put_id(s, r->state_id));
	TRY(story_uv(&s->buf, r->edge_id));
	TRY(story_str(&s->buf, r->mode));
	TRY(story_str(&s->buf, r->reason));
	return story_uv(&s->buf, r->ordinal);
}

static int encode_terror(story *s, const Elspeth__TransformErrorRecord *r)
{
	int rc;

	TRY(put_id(s, r->token_id));
	TRY(put_id(s, r->state_id));
	TRY(story_uv(&s->buf, r->node_id));
	TRY(story_str(&s->buf, r->error));
	TRY(put_hash(s, r->data_ref));
	return story_uv(&s->buf, r->retryable);
}

static int encode_outcome(story *s, const Elspeth__TokenOutcomeRecord *r)
{
	int rc;

	TRY(put_id(s, r->token_id));
	TRY(put_id(s, r->row_id));
	TRY(story_str(&s->buf, r->outcome));
	TRY(story_str(&s->buf, r->sink));
	TRY(put_hash(s, r->error_hash));
	return put_time(s, r->recorded_at_ns);
}

static int encode_artifact(story *s, const Elspeth__ArtifactRecord *r)
{
	int rc;

	TRY(put_id(s, r->token_id));
	TRY(story_uv(&s->buf, r->sink_node));
	TRY(story_str(&s->buf, r->sink));
	TRY(story_str(&s->buf, r->path));
	TRY(story_uv(&s->buf, r->offset));
	TRY(story_uv(&s->buf, r->length));
	TRY(put_hash(s, r->content_hash));
	return put_time(s, r->written_at_ns);
}

static int encode_verror(story *s, const Elspeth__ValidationErrorRecord *r)
{
	int rc;

	TRY(put_id(s, r->row_id));
	TRY(story_str(&s->buf, r->node));
	TRY(story_str(&s->buf, r->error));
	return put_hash(s, r->data_ref);
}

static int encode(story *s, const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	size_t mark = s->buf.len;
	int kind, rc;

#define IS(name) (d == &elspeth__##name##__descriptor)
	kind = IS(row_record) ? STORY_ROW : IS(token_record) ? STORY_TOKEN :
	       IS(token_parent_record) ? STORY_PARENT :
	       IS(node_state_record) ? STORY_STATE :
	       IS(routing_event_record) ? STORY_ROUTE :
	       IS(transform_error_record) ? STORY_TERROR :
	       IS(token_outcome_record) ? STORY_OUTCOME :
	       IS(artifact_record) ? STORY_ARTIFACT :
	       IS(validation_error_record) ? STORY_VERROR : 0;
#undef IS
	if (!kind)
		return CORE_EINTERNAL;
	if (kind == STORY_ROW && row_has_source((const void *)m))
		kind = STORY_ROW_SOURCE;
	if (core_buf_putc(&s->buf, (char)kind))
		return CORE_ENOMEM;
	switch (kind) {
	case STORY_ROW:
	case STORY_ROW_SOURCE:
		rc = encode_row(s, (const void *)m, kind == STORY_ROW_SOURCE);
		break;
	case STORY_TOKEN: rc = encode_token(s, (const void *)m); break;
	case STORY_PARENT: rc = encode_parent(s, (const void *)m); break;
	case STORY_STATE: rc = encode_state(s, (const void *)m); break;
	case STORY_ROUTE: rc = encode_route(s, (const void *)m); break;
	case STORY_TERROR: rc = encode_terror(s, (const void *)m); break;
	case STORY_OUTCOME: rc = encode_outcome(s, (const void *)m); break;
	case STORY_ARTIFACT: rc = encode_artifact(s, (const void *)m); break;
	default: rc = encode_verror(s, (const void *)m); break;
	}
	if (rc)
		s->buf.len = mark; /* no half entry */
	return rc;
}

/* A payload is stored once per fragment: a second one with the same hash
 * is dropped. Entry: its hash (as put_hash writes it), uv length, bytes. */
static int encode_payload(story *s, const uint8_t h[CORE_SHA256_LEN],
			  const char *hex, const void *data, size_t len)
{
	size_t mark = s->buf.len, i, had = s->nhashes;
	bool found;
	int rc;

	if ((rc = hash_index(s, h, hex, &i, &found)))
		return rc;
	if (s->stored[i])
		return 0;
	rc = core_buf_putc(&s->buf, STORY_PAYLOAD);
	if (!rc)
		rc = found ? story_uv(&s->buf, STORY_HASH_REF + i) :
		     story_uv(&s->buf, STORY_HASH_NEW) ||
		     core_buf_append(&s->buf, h, CORE_SHA256_LEN);
	if (!rc)
		rc = story_uv(&s->buf, len) || core_buf_append(&s->buf, data, len);
	if (rc) {
		s->buf.len = mark;
		s->nhashes = had;
		return CORE_ENOMEM;
	}
	s->stored[i] = true;
	return 0;
}

/* ------------------------------------------------------- open stories */

static stripe *stripe_of(rec__stories *ss, uint64_t seq)
{
	return &ss->s[seq % STRIPES];
}

static story **slot_of(stripe *st, uint64_t run, uint64_t seq)
{
	story **p = &st->bucket[(seq / STRIPES) % BUCKETS];

	while (*p && ((*p)->run != run || (*p)->seq != seq))
		p = &(*p)->next;
	return p;
}

static void story_begin(story *s, uint64_t run, uint64_t seq)
{
	s->run = run;
	s->seq = seq;
	s->base_ns = 0;
	s->has_base = false;
	s->nhashes = 0;
	s->next = NULL;
	core_buf_reset(&s->buf);
	/* reserve()d by story_get: version, then the base (0 until known) */
	s->buf.data[0] = STORY_VERSION;
	s->buf.len = 1 + BASE_LEN;
	base_write(s, 0);
	s->hdr_len = s->buf.len;
}

/* The open story of (run, seq), created if needed; stripe locked. */
static story *story_get(stripe *st, uint64_t run, uint64_t seq)
{
	story **p = slot_of(st, run, seq), *s = *p;

	if (s)
		return s;
	s = st->free;
	if (s)
		st->free = s->next;
	else if (!(s = calloc(1, sizeof(*s))))
		return NULL;
	if (core_buf_reserve(&s->buf, 64)) {
		s->next = st->free;
		st->free = s;
		return NULL;
	}
	story_begin(s, run, seq);
	*p = s;
	st->open++;
	return s;
}

int rec__stories_init(rec_env *env)
{
	rec__stories *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return CORE_ENOMEM;
	for (int i = 0; i < STRIPES; i++)
		pthread_mutex_init(&ss->s[i].lock, NULL);
	env->stories = ss;
	return 0;
}

static void story_free(story *s)
{
	core_buf_release(&s->buf);
	free(s->hashes);
	free(s->hex);
	free(s->stored);
	free(s);
}

void rec__stories_free(rec_env *env)
{
	rec__stories *ss = env->stories;

	if (!ss)
		return;
	for (int i = 0; i < STRIPES; i++) {
		stripe *st = &ss->s[i];
		story *s, *n;

		for (int b = 0; b < BUCKETS; b++)
			for (s = st->bucket[b]; s; s = n) {
				n = s->next;
				story_free(s);
			}
		for (s = st->free; s; s = n) {
			n = s->next;
			story_free(s);
		}
		pthread_mutex_destroy(&st->lock);
	}
	free(ss);
	env->stories = NULL;
}

void rec_story_attempt(rec_env *env, uint32_t attempt)
{
	if (env && env->stories)
		atomic_store(&env->stories->attempt, attempt);
}

/* Enqueues s's records as a fragment; stripe locked (the queue's lock is
 * taken inside, in the documented order). The serial restarts with each
 * writing process: keys stay unique because each process writing a run
 * is a new attempt (a resume records its attempt before it runs). */
static int fragment_put(rec_env *env, story *s)
{
	rec__stories *ss = env->stories;
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, s->run);
	rec_key_u64(&k, s->seq);
	rec_key_u32(&k, (uint32_t)atomic_load(&ss->attempt));
	rec_key_u32(&k, (uint32_t)atomic_fetch_add(&ss->serial, 1));
	return rec__put_packed(env, REC_TRAIL, &k, s->buf.data, s->buf.len);
}

static int writable(rec_env *env)
{
	return env && env->has_writer && env->stories ? 0 : CORE_EINTERNAL;
}

int rec_story_put(rec_env *env, uint64_t run, uint64_t seq,
		  const ProtobufCMessage *msg)
{
	stripe *st;
	story *s;
	int rc;

	if ((rc = writable(env)))
		return rc;
	st = stripe_of(env->stories, seq);
	pthread_mutex_lock(&st->lock);
	s = story_get(st, run, seq);
	rc = s ? encode(s, msg) : CORE_ENOMEM;
	pthread_mutex_unlock(&st->lock);
	/* A record that cannot be kept is sticky (the next checkpoint and
	 * the run's end fail on it); a message of the wrong type is the
	 * caller's mistake, refused only. */
	if (rc && rc != CORE_EINTERNAL)
		rec__fail(env, rc, "keeping a row's record");
	return rc;
}

int rec_story_payload(rec_env *env, uint64_t run, uint64_t seq,
		      const void *data, size_t len,
		      char hex[CORE_SHA256_HEX_LEN + 1])
{
	uint8_t h[CORE_SHA256_LEN];
	stripe *st;
	story *s;
	int rc;

	if (len && !data)
		return CORE_EINTERNAL;
	core_sha256(data, len, h); /* outside the lock: the costly part */
	core_hex(h, CORE_SHA256_LEN, hex);
	if ((rc = writable(env)))
		return rc;
	/* payload_store: filesystem — the story keeps only the hashes the
	 * records name (ADR 0028). */
	if (env->payload_dir) {
		if ((rc = rec__payload_file_put(env, hex, data, len)))
			rec__fail(env, rc, "writing a payload file");
		return rc;
	}
	st = stripe_of(env->stories, seq);
	pthread_mutex_lock(&st->lock);
	s = story_get(st, run, seq);
	rc = s ? encode_payload(s, h, hex, data, len) : CORE_ENOMEM;
	pthread_mutex_unlock(&st->lock);
	if (rc)
		rec__fail(env, rc, "keeping a row's payload");
	return rc;
}

int rec_story_seal(rec_env *env, uint64_t run, uint64_t seq)
{
	stripe *st;
	story **p, *s;
	int rc = 0;

	if ((rc = writable(env)))
		return rc;
	st = stripe_of(env->stories, seq);
	pthread_mutex_lock(&st->lock);
	p = slot_of(st, run, seq);
	if ((s = *p)) {
		if (s->buf.len > s->hdr_len)
			rc = fragment_put(env, s);
		*p = s->next;
		s->next = st->free;
		st->free = s;
		st->open--;
	}
	pthread_mutex_unlock(&st->lock);
	return rc;
}

int rec_story_flush(rec_env *env)
{
	int rc = 0;

	if (writable(env))
		return 0;
	for (int i = 0; i < STRIPES; i++) {
		stripe *st = &env->stories->s[i];

		pthread_mutex_lock(&st->lock);
		for (int b = 0; b < BUCKETS && st->open; b++)
			for (story *s = st->bucket[b]; s; s = s->next) {
				story *next = s->next;
				int r;

				if (s->buf.len == s->hdr_len)
					continue;
				r = fragment_put(env, s);

				if (r && !rc)
					rc = r;
				/* Later records start a new fragment. */
				story_begin(s, s->run, s->seq);
				s->next = next;
			}
		pthread_mutex_unlock(&st->lock);
	}
	return rc;
}

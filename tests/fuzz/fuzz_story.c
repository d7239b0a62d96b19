/*
 * fuzz_story.c — libFuzzer harness for reading row stories back from
 * LMDB (recorder/story_read.c, recorder/pack.c): the packed-story decoder
 * and the zstd unpacker, through every reader that reaches them.
 *
 * One Landscape in /dev/shm (or /tmp) holds run 1, its record and, for
 * each input, one story fragment of row 1 (key run 1, row 1, attempt 1,
 * serial 0) whose value is the input: stored as it is when the first byte
 * is even (a codec byte and what follows: the unpacker's input), else as
 * a raw story (PACK_RAW, then the rest: the decoder's input). The value
 * is sealed as the writer seals it, so the seal passes and the bytes
 * behind it are what is fuzzed (an attacker who can write the file can
 * do the same). Then: the row loaded, every story table scanned, explain
 * of the row and of token 1, verify of the run. Each must return 0 or an
 * error — never crash, hang or read out of bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "recorder/recorder_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rec_env *env;

typedef struct input {
	const uint8_t *data;
	size_t size;
} input;

/* The writer's transaction: the trail emptied, the fragment put. */
static int put_fragment(void *ctx, rec_env *e, void *mdb_txn)
{
	const input *in = ctx;
	rec_key k;
	uint8_t *v;
	int rc;

	if ((rc = mdb_drop(mdb_txn, e->dbi[REC_TRAIL], 0)))
		return rc;
	rec_key_init(&k);
	rec_key_u64(&k, 1);
	rec_key_u64(&k, 1);
	rec_key_u32(&k, 1);
	rec_key_u32(&k, 0);
	if (!(in->data[0] & 1))
		return rec_txn_put(e, mdb_txn, REC_TRAIL, &k, in->data + 1, in->size - 1);
	if (!(v = malloc(in->size)))
		return CORE_ENOMEM;
	v[0] = 0; /* PACK_RAW */
	memcpy(v + 1, in->data + 1, in->size - 1);
	rc = rec_txn_put(e, mdb_txn, REC_TRAIL, &k, v, in->size);
	free(v);
	return rc;
}

static int count_one(void *ctx, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)k, (void)kl, (void)v, (void)vl;
	++*(size_t *)ctx;
	return 0;
}

static void open_env(void)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	core_err err = { 0 };
	char dir[96];

	snprintf(dir, sizeof(dir), "%s/fuzz_story.%d",
		 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm", (int)getpid());
	mkdir(dir, 0700);
	if (rec_open(dir, 0, &env, &err))
		abort();
	r.status = "completed";
	r.canonical_version = CORE_CANONICAL_VERSION;
	if (rec_new_run(env, &r, &err) || r.run_id != 1 || rec_flush(env, &err))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const rec_table story_tables[] = {
		REC_ROWS, REC_TOKENS, REC_TOKENS_BY_ROW, REC_TOKEN_PARENTS,
		REC_NODE_STATES, REC_STATES_BY_TOKEN, REC_ROUTING_EVENTS,
		REC_ARTIFACTS, REC_TOKEN_OUTCOMES, REC_VALIDATION_ERRORS,
		REC_TRANSFORM_ERRORS,
	};
	input in = { data, size };
	core_err err = { 0 };
	json_t *out = NULL;
	rec_txn *t;
	rec_key run;
	size_t n = 0;

	if (size < 1)
		return 0;
	if (!env)
		open_env();
	if (rec_write_sync(env, put_fragment, &in, &err))
		abort();
	if (rec_read_begin(env, &t, &err))
		abort();
	(void)rec_txn_row(t, 1, 1);
	rec_key_init(&run);
	rec_key_u64(&run, 1);
	for (size_t i = 0; i < sizeof(story_tables) / sizeof(story_tables[0]); i++)
		(void)rec_scan(t, story_tables[i], &run, count_one, &n);
	rec_read_end(t);
	if (!rec_explain(env, 1, 1, 0, &out, &err))
		json_decref(out);
	out = NULL;
	if (!rec_explain(env, 1, 0, 1, &out, &err))
		json_decref(out);
	out = NULL;
	if (!rec_verify(env, 1, &out, &err))
		json_decref(out);
	return 0;
}

/*
 * story.h — the stored form of the per-row records (docs/audit.md, "Row
 * stories"; ADR 0022). Internal to the recorder: story.c writes it,
 * story_read.c reads it back as the legacy per-table records.
 *
 * A row's records (the row, its tokens, parents, node states, routing
 * events, errors, outcomes, artifacts and the payloads they name) are
 * gathered in memory while the row is in flight and written as one value
 * of the `trail` table when the row is released: a *fragment*, keyed
 * (run(8), seq(8), attempt(4), serial(4)). A row usually has one
 * fragment; a checkpoint writes the records gathered so far of every
 * row still in flight as a fragment of its own (the checkpoint covers
 * them), and records that arrive after a row was released (an
 * aggregation's member states) make another.
 *
 * A fragment's bytes (before packing, pack.c):
 *   u8  STORY_VERSION
 *   uv  base_ns            the story's first time, always 9 bytes (written
 *                          in place when known; 0 if none); times below
 *                          are zigzag deltas from it
 *   entries, each: u8 kind, then its fields (story.c, encode_*)
 * uv is an unsigned LEB128 varint; zz a zigzag-encoded signed one; str
 * is uv length + bytes; a hash is uv 0 (none), 1 + 32 raw bytes (new:
 * it joins the fragment's hash list), 2 + str (not a SHA-256 hex), or
 * 3 + i (the i-th hash of the list). Ids are zz deltas from the row's seq.
 */
#ifndef ELSPETH_RECORDER_STORY_H
#define ELSPETH_RECORDER_STORY_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define STORY_VERSION 1
#define STORY_KEY_LEN 24

enum story_kind {
	STORY_PAYLOAD = 1,
	STORY_ROW,
	STORY_TOKEN,
	STORY_PARENT,
	STORY_STATE,
	STORY_ROUTE,
	STORY_TERROR,
	STORY_OUTCOME,
	STORY_ARTIFACT,
	STORY_VERROR,
	/* a row of a pipeline's second or later source (ADR 0044): a row's
	 * fields, then uv source (its node) and uv its index there */
	STORY_ROW_SOURCE,
	STORY_KIND_LAST
};

enum story_hash {
	STORY_HASH_NONE = 0,
	STORY_HASH_NEW = 1,
	STORY_HASH_TEXT = 2,
	STORY_HASH_REF = 3,
};

/* Codec of the fields (story.c). */
int story_uv(core_buf *b, uint64_t v);
int story_zz(core_buf *b, int64_t v);
int story_str(core_buf *b, const char *s);

/* A decoding cursor; `bad` is set by any read past the end. */
typedef struct story_in {
	const uint8_t *p, *end;
	int bad;
} story_in;

uint64_t story_get_uv(story_in *in);
int64_t story_get_zz(story_in *in);
/* A str field: *s points into the input (not NUL-terminated). */
size_t story_get_str(story_in *in, const char **s);

#endif /* ELSPETH_RECORDER_STORY_H */

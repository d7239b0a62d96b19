/*
 * keys.c — big-endian composite keys, table names and landscape URLs.
 *
 * Big-endian parts make LMDB's bytewise key order the numeric order of the
 * parts, so "all records of run R" or "all states of token T" is a prefix
 * range.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"


void rec_key_init(rec_key *k)
{
	k->len = 0;
}

/* Keys are built by our own code with fixed layouts; an overflow is a bug
 * that would silently merge records, so stop. */
static uint8_t *key_grow(rec_key *k, size_t n)
{
	uint8_t *p;

	if (k->len + n > REC_KEY_MAX) {
		fprintf(stderr, "elspeth: recorder key longer than %d bytes\n",
			REC_KEY_MAX);
		abort();
	}
	p = k->b + k->len;
	k->len += n;
	return p;
}

void rec_key_u64(rec_key *k, uint64_t v)
{
	uint8_t *p = key_grow(k, 8);
	int i;

	for (i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

void rec_key_u32(rec_key *k, uint32_t v)
{
	uint8_t *p = key_grow(k, 4);
	int i;

	for (i = 3; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t rec_key_get_u64(const void *key, size_t off)
{
	const uint8_t *p = (const uint8_t *)key + off;
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

uint32_t rec_key_get_u32(const void *key, size_t off)
{
	const uint8_t *p = (const uint8_t *)key + off;
	uint32_t v = 0;
	int i;

	for (i = 0; i < 4; i++)
		v = v << 8 | p[i];
	return v;
}

static int hex_digit(char c, bool any_case)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (any_case && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool rec__unhex32(const char *hex, bool any_case, uint8_t out[CORE_SHA256_LEN])
{
	if (!hex || strlen(hex) != CORE_SHA256_HEX_LEN)
		return false;
	for (int i = 0; i < CORE_SHA256_LEN; i++) {
		int hi = hex_digit(hex[2 * i], any_case);
		int lo = hex_digit(hex[2 * i + 1], any_case);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

const char *rec_table_name(rec_table t)
{
	switch (t) {
	case REC_META: return "meta";
	case REC_RUNS: return "runs";
	case REC_NODES: return "nodes";
	case REC_EDGES: return "edges";
	case REC_ROWS: return "rows";
	case REC_TOKENS: return "tokens";
	case REC_TOKENS_BY_ROW: return "tokens_by_row";
	case REC_TOKEN_PARENTS: return "token_parents";
	case REC_NODE_STATES: return "node_states";
	case REC_STATES_BY_TOKEN: return "states_by_token";
	case REC_CALLS: return "calls";
	case REC_ROUTING_EVENTS: return "routing_events";
	case REC_BATCHES: return "batches";
	case REC_BATCH_MEMBERS: return "batch_members";
	case REC_ARTIFACTS: return "artifacts";
	case REC_TOKEN_OUTCOMES: return "token_outcomes";
	case REC_VALIDATION_ERRORS: return "validation_errors";
	case REC_TRANSFORM_ERRORS: return "transform_errors";
	case REC_SINK_FILES: return "sink_files";
	case REC_CHECKPOINTS: return "checkpoints";
	case REC_RESUMES: return "resumes";
	case REC_SUPERSEDED: return "superseded";
	case REC_SAMPLES: return "samples";
	case REC_PAYLOADS: return "payloads";
	case REC_TRAIL: return "trail";
	case REC_DICTS: return "dicts";
	case REC_TABLE_LAST: break;
	}
	return "(invalid table)";
}

int rec_path_from_url(const char *url, char *out, size_t cap, core_err *err)
{
	return core_landscape_paths(url, out, cap, NULL, 0, err);
}

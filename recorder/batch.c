/*
 * batch.c — a batch of queued operations: one array of small op headers
 * plus one arena holding every key and value back to back, so enqueueing a
 * put costs a memcpy, not a malloc (the engine records ~10 records a row).
 * Batches are reused: the writer swaps the producers' batch with its empty
 * one, keeping both allocations.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder_internal.h"

void rec__batch_release(rec__batch *b)
{
	core_buf_release(&b->arena);
	free(b->ops);
	memset(b, 0, sizeof(*b));
}

void rec__batch_reset(rec__batch *b)
{
	core_buf_reset(&b->arena);
	b->nops = 0;
	b->ticket = 0;
	b->urgent = false;
}

/* Bytes the batch holds (what the queue bound counts). */
size_t rec__batch_bytes(const rec__batch *b)
{
	return b->arena.len + b->nops * sizeof(rec__op);
}

static int ops_reserve(rec__batch *b)
{
	size_t cap = b->cap ? b->cap * 2 : 1024;
	rec__op *p;

	if (b->nops < b->cap)
		return 0;
	p = realloc(b->ops, cap * sizeof(*p));
	if (!p)
		return CORE_ENOMEM;
	b->ops = p;
	b->cap = cap;
	return 0;
}

/* Appends an op with klen + vlen arena bytes reserved (uninitialised) at
 * (*out)->off; the caller fills them. */
int rec__batch_push(rec__batch *b, uint8_t kind, rec_table t, size_t klen,
		    size_t vlen, rec__op **out)
{
	rec__op *op;

	if (ops_reserve(b) || core_buf_reserve(&b->arena, klen + vlen))
		return CORE_ENOMEM;
	op = &b->ops[b->nops++];
	op->kind = kind;
	op->table = (uint8_t)t;
	op->klen = (uint16_t)klen;
	op->off = b->arena.len;
	op->vlen = vlen;
	op->sync = NULL;
	op->nfds = 0;
	b->arena.len += klen + vlen;
	b->arena.data[b->arena.len] = '\0'; /* core_buf's invariant */
	*out = op;
	return 0;
}

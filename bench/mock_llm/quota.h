/*
 * quota.h — account quota and credit errors (--quota, docs/mock_llm.md
 * "Quota errors"): after --quota-after requests pass, a share --quota-rate
 * of the later ones is refused (a deterministic draw from --seed and the
 * arrival number). With --quota-lock-ms MS the first refusal locks the
 * account for MS: every request in that time is refused, then the count
 * starts again. Without it a refusal has no end but a reset.
 */
#ifndef MOCK_QUOTA_H
#define MOCK_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

typedef struct mock_quota {
	uint64_t seen;        /* requests checked since reset */
	uint64_t passed;      /* requests passed since reset or the lock */
	uint64_t lock_until;  /* 0: not locked */
} mock_quota;

void mock_quota_reset(mock_quota *q);

/* 1 when the request arriving at now is refused for quota; *wait_ms gets
 * the time until the refusal lifts (MOCK_NEVER: not before a reset). */
int mock_quota_check(mock_quota *q, const mock_cfg *cfg, uint64_t now,
		     uint64_t *wait_ms);

/* The answer to a quota refusal: *status and the body (caller frees; *len
 * gets its length). Only credits-transient carries a retry hint, in its
 * headers (hint.h) or, for --hint body, in its message (wait_ms). */
char *mock_quota_body(const mock_cfg *cfg, uint64_t wait_ms, int *status,
		      size_t *len);

#endif

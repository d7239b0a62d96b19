/*
 * hint.h — what an answer tells the client about the limits: the retry
 * hint of a refusal, in the style of --hint, and the rate-limit headers of
 * --ratelimit-headers (docs/mock_llm.md, "Hints" and "Rate-limit
 * headers"). Header lines are appended CRLF-terminated, ready to pass as
 * mock_http_head's `extra`.
 */
#ifndef MOCK_HINT_H
#define MOCK_HINT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "limit.h"

/* Wall-clock time (CLOCK_REALTIME), in ms since the Unix epoch. */
uint64_t mock_wall_ms(void);

/* A duration as OpenAI writes it (Go's format, to the millisecond):
 * "0s", "20ms", "1.234s", "6m0s", "1h2m3.5s". */
void mock_duration(char *buf, size_t n, uint64_t ms);

/* A wall-clock time (ms since the epoch, rounded up to the second) as RFC
 * 3339 ("2025-01-02T03:04:05Z") or as an HTTP-date (IMF-fixdate). */
void mock_rfc3339(char *buf, size_t n, uint64_t wall_ms);
void mock_http_date(char *buf, size_t n, uint64_t wall_ms);

/*
 * The hint's header lines for a refusal whose true wait is wait_ms
 * (MOCK_NEVER: unknown, hinted as a day): none for --hint none and body,
 * ceil(--retry-after) seconds for fixed, else the wait times
 * --hint-factor in the style's format.
 */
void mock_hint_headers(mock_buf *out, const mock_cfg *cfg, uint64_t wait_ms);

/* For --hint body: appends " Please try again in <duration>." to msg. */
void mock_hint_sentence(mock_buf *msg, const mock_cfg *cfg, uint64_t wait_ms);

/* The rate-limit header lines for the request and token limiters as they
 * stand after a decision (inactive views are left out). */
void mock_ratelimit_headers(mock_buf *out, const mock_cfg *cfg,
		     const mock_lim_view *req, const mock_lim_view *tok);

#endif

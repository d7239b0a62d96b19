/*
 * http_internal.h — what the files of plugins/http/ share: the hints a
 * provider gives about its limits (hint.c) and the capacity controller
 * (capacity.c). Pure logic: no clock, no lock, no I/O; times are passed
 * in, so tests and the simulator (bench/capsim.c) drive them with their
 * own clock. Not a published API (tests include it).
 */
#ifndef ELSPETH_HTTP_INTERNAL_H
#define ELSPETH_HTTP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ------------------------------------------------------------------ hints */

/* Where a wait came from, for the audit trail (calls.throttle_reason). */
typedef enum http_hint_src {
	HTTP_HINT_NONE = 0,
	HTTP_HINT_RETRY_AFTER,     /* Retry-After: delta seconds (fractions too) */
	HTTP_HINT_RETRY_AFTER_DATE,/* Retry-After: an HTTP-date */
	HTTP_HINT_RETRY_AFTER_MS,  /* retry-after-ms (OpenAI, Azure) */
	HTTP_HINT_BODY,            /* "try again in 1.234s" in the error body */
	HTTP_HINT_RESET_REQUESTS,  /* x-ratelimit / anthropic: requests reset */
	HTTP_HINT_RESET_TOKENS,    /* x-ratelimit / anthropic: tokens reset */
	HTTP_HINT_SRC_LAST
} http_hint_src;

/* "retry-after", "retry-after-ms", ... never NULL. */
const char *http_hint_src_name(http_hint_src s);

/* What one answer said about the upstream's limits. A field is negative
 * when the answer did not say. */
typedef struct http_hints {
	double retry_after_s;         /* the first of the retry hints found */
	http_hint_src retry_src;
	double limit_requests, remaining_requests, reset_requests_s;
	double limit_tokens, remaining_tokens, reset_tokens_s;
} http_hints;

void http_hints_init(http_hints *h);
/* Reads one header line ("Name: value\r\n", as libcurl's header callback
 * gives it; the name is case-insensitive). now: the wall clock, for
 * HTTP-date and RFC 3339 values. Unknown headers are ignored. Retry hints
 * rank retry-after-ms > Retry-After > body: the most precise wins. */
void http_hints_header(http_hints *h, const char *line, size_t len, time_t now);
/* Looks for a wait in an error body ("Please try again in 1.234s.",
 * "try again in 20ms", "retry after 6 seconds"); used only when no header
 * gave one. */
void http_hints_body(http_hints *h, const char *body, size_t len);

/* Parses OpenAI's durations ("1s", "6m0s", "20ms", "1h2m3.5s", "0.5s")
 * and bare seconds ("12", "0.35"); false if s is neither. */
bool http_parse_duration(const char *s, size_t len, double *seconds);
/* Parses an HTTP-date (RFC 9110: IMF-fixdate, and the obsolete RFC 850 and
 * asctime forms) or an RFC 3339 timestamp into a UTC time_t. */
bool http_parse_time(const char *s, size_t len, time_t *out);

/* An account error, not capacity: the body says the quota or credits are
 * exhausted (OpenAI insufficient_quota, Anthropic spend limits and credit
 * balance, OpenRouter credits, a key's limit). status: the HTTP status;
 * has_retry: the answer gave a retry hint (a 402 with one is transient
 * capacity, OpenRouter's in-flight budget). */
bool http_is_account_error(long status, const char *body, size_t len,
			   bool has_retry);

#endif /* ELSPETH_HTTP_INTERNAL_H */

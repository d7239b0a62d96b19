/*
 * policy.h — who gets served and how: admission (quota, concurrency, the
 * request and token limiters), injected faults, latency, and the counters
 * behind GET /admin/stats and /admin/series. Single-threaded, like the
 * rest of the server.
 *
 * Determinism: a request's latency is a function of --seed and its request
 * hash (answer.h) only. Its fault is a function of --seed, the request hash
 * and its attempt number: how many admitted requests with the same hash
 * came before it since start or the last reset. One uniform draw u in
 * [0, 1) is compared with the fault rates laid end to end in the order
 * drop, stall, 500, malformed, truncated, length; u past them all is a
 * normal answer. Capacity decisions depend on timing by nature.
 */
#ifndef MOCK_POLICY_H
#define MOCK_POLICY_H

#include <stdint.h>

#include <jansson.h>

#include "config.h"
#include "limit.h"

#define MOCK_FATE_OK MOCK_FAULT_LAST

typedef struct mock_policy mock_policy;

/* Why a request was refused, in the order the checks run. */
typedef enum mock_cause {
	MOCK_CAUSE_NONE,        /* admitted */
	MOCK_CAUSE_QUOTA,
	MOCK_CAUSE_CONCURRENCY,
	MOCK_CAUSE_RATE,
	MOCK_CAUSE_TOKENS,
	MOCK_CAUSE_LAST
} mock_cause;

/* The decision on one chat request. */
typedef struct mock_verdict {
	mock_cause cause;
	uint64_t wait_ms;       /* refused: the time until every limit would
				 * admit it (the truth a hint reports);
				 * MOCK_NEVER when not within a day */
	mock_lim_view req, tok; /* the limiters after the decision */
	double tokens;          /* the request's token charge */
} mock_verdict;

/*
 * When the k-th (1-based) earliest of the held concurrency slots is due to
 * be freed, or MOCK_NEVER: the server answers it from its timers.
 */
typedef uint64_t (*mock_slot_fn)(void *ctx, size_t k);

/* A policy whose clocks start at now_ms and that sizes its series by cfg.
 * Never NULL (aborts on OOM). */
mock_policy *mock_policy_create(const mock_cfg *cfg, uint64_t now_ms);
void mock_policy_free(mock_policy *p);
void mock_policy_set_slot_fn(mock_policy *p, mock_slot_fn fn, void *ctx);

/* Counts one chat request received, the status it was answered with
 * (stalls and drops have none), and one connection accepted. */
void mock_policy_count_request(mock_policy *p);
void mock_policy_count_status(mock_policy *p, int status);
void mock_policy_count_connection(mock_policy *p);

/*
 * Decides a chat request arriving at now_ms whose token charge is
 * `tokens`. Admitted (v->cause NONE), it holds a concurrency slot until
 * mock_policy_done. Refused, it is charged --refused-weight times its cost
 * in the request and token limiters.
 */
void mock_policy_decide(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms,
			double tokens, mock_verdict *v);
void mock_policy_done(mock_policy *p);

/* The fate of an admitted request (a mock_fault or MOCK_FATE_OK); bumps
 * the request hash's attempt number and the fault or ok counter. */
int mock_policy_fate(mock_policy *p, const mock_cfg *cfg, uint64_t req_hash,
		     uint64_t now_ms);

/* The latency of a request, in ms. */
uint64_t mock_policy_latency(const mock_cfg *cfg, uint64_t req_hash);
/* Records how long an admitted request holds its slot (its latency, or
 * --stall-ms), for the mean service time of the capacity. */
void mock_policy_note_service(mock_policy *p, uint64_t ms);

/* The request rate limit in force (requests per second), or -1 for none. */
double mock_policy_rate(const mock_policy *p, const mock_cfg *cfg,
			uint64_t now_ms);

/* Config changes: call _before with the old config, apply the change,
 * then _after with both. A new schedule restarts its clock, a new
 * limiter or window empties the limiters, new quota options restart the
 * quota, a new --series-ms restarts the series. */
void mock_policy_before_change(mock_policy *p, const mock_cfg *old,
			       uint64_t now_ms);
void mock_policy_after_change(mock_policy *p, const mock_cfg *old,
			      const mock_cfg *cfg, uint64_t now_ms);

/* Zeroes the counters, attempt numbers, limiters, quota, capacity and
 * series, restarts the schedules and the per-second clock; requests in
 * flight keep their slots. */
void mock_policy_reset(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms);

/* The stats and series documents (new references). */
json_t *mock_policy_stats(mock_policy *p, const mock_cfg *cfg,
			  uint64_t now_ms);
json_t *mock_policy_series(mock_policy *p, const mock_cfg *cfg,
			   uint64_t now_ms);

#endif

/*
 * policy.h — who gets served and how: capacity (concurrency, rolling rate,
 * rate schedule), injected faults, latency, and the counters behind
 * GET /admin/stats. Single-threaded, like the rest of the server.
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

#define MOCK_FATE_OK MOCK_FAULT_LAST

typedef struct mock_policy mock_policy;

/* A policy whose clocks start at now_ms. Never NULL (aborts on OOM). */
mock_policy *mock_policy_create(uint64_t now_ms);
void mock_policy_free(mock_policy *p);

/* Counts one chat request received, and the status it was answered with
 * (stalls and drops have none). */
void mock_policy_count_request(mock_policy *p);
void mock_policy_count_status(mock_policy *p, int status);

/* Capacity check: 1 admits the request, which then holds a concurrency
 * slot until mock_policy_done; 0 means over capacity. */
int mock_policy_admit(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms);
void mock_policy_done(mock_policy *p);

/* The fate of an admitted request (a mock_fault or MOCK_FATE_OK); bumps
 * the request hash's attempt number and the fault counter. */
int mock_policy_fate(mock_policy *p, const mock_cfg *cfg, uint64_t req_hash);

/* The latency of a request, in ms. */
uint64_t mock_policy_latency(const mock_cfg *cfg, uint64_t req_hash);

/* The rate limit in force (requests per second), or -1 for none. */
double mock_policy_rate(const mock_policy *p, const mock_cfg *cfg,
			uint64_t now_ms);

/* Restarts the schedule clock (a new --schedule takes effect from now). */
void mock_policy_restart_schedule(mock_policy *p, uint64_t now_ms);

/* Zeroes the counters and attempt numbers, restarts the schedule and the
 * per-second clock; requests in flight keep their slots. */
void mock_policy_reset(mock_policy *p, uint64_t now_ms);

/* The stats document (a new reference). */
json_t *mock_policy_stats(const mock_policy *p, const mock_cfg *cfg,
			  uint64_t now_ms);

#endif

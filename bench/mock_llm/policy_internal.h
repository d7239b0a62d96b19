/*
 * policy_internal.h — the policy's state, shared by its files: policy.c
 * (life cycle, admission, config changes), fate.c (faults, latency,
 * attempt numbers) and stats.c (the stats and series documents).
 */
#ifndef MOCK_POLICY_INTERNAL_H
#define MOCK_POLICY_INTERNAL_H

#include "account.h"
#include "limit.h"
#include "policy.h"
#include "quota.h"

struct mock_attempt {
	uint64_t key;
	uint32_t used; /* attempts so far + 1; 0: empty slot */
};

struct mock_policy {
	uint64_t start_ms, epoch_ms;  /* start, last reset */
	uint64_t sched_ms, csched_ms; /* the schedules' clocks */
	long requests, arrivals, admitted, ok, current, peak, connections;
	long refused[MOCK_CAUSE_LAST];
	long by_status[600];
	long faults[MOCK_FAULT_LAST];
	long *per_second;
	size_t nseconds;
	double cost_sum;              /* token charges of the arrivals */
	double lat_sum;               /* service times of the admitted */
	long lat_n;
	mock_limit req, tok, grain;   /* grain: --grain-ms */
	mock_quota quota;
	mock_acct acct;
	mock_slot_fn slot_fn;
	void *slot_ctx;
	struct mock_attempt *att;     /* open addressing, by request hash */
	size_t natt, attcap;
};

/* The limits cfg puts in force, with p's schedule clocks. */
void mock__policy_limits(const mock_policy *p, const mock_cfg *cfg,
			 mock_limits *L);
/* The mean of the --latency distribution, in ms. */
double mock__latency_mean(const mock_cfg *cfg);

#endif

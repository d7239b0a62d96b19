/*
 * policy.c — capacity, faults, latency, counters (see policy.h).
 *
 * The rolling rate window keeps the admission times of the last window in
 * a ring: with a limit R >= 1 at most floor(R) admissions fall in any 1000
 * ms; with 0 < R < 1, one per 1000/R ms; with R = 0 (a schedule phase)
 * none. The attempt numbers live in an open-addressing hash map keyed by
 * request hash; it grows with the number of distinct requests since the
 * last reset (16 bytes each).
 */
#include "policy.h"
#include "buf.h"
#include "hash.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SALT_FATE = 0x66617465, SALT_LATENCY = 0x6c6174 };

struct attempt {
	uint64_t key;
	uint32_t used; /* attempts so far + 1; 0: empty slot */
};

struct mock_policy {
	uint64_t start_ms, epoch_ms, sched_ms;
	long requests, admitted, current, peak;
	long by_status[600];
	long faults[MOCK_FAULT_LAST];
	long *per_second;
	size_t nseconds;
	uint64_t *ring;    /* admission times, oldest at head */
	size_t head, count, cap;
	struct attempt *att;
	size_t natt, attcap;
};

mock_policy *mock_policy_create(uint64_t now_ms)
{
	mock_policy *p = mock_xmalloc(sizeof(*p));

	memset(p, 0, sizeof(*p));
	p->start_ms = p->epoch_ms = p->sched_ms = now_ms;
	return p;
}

void mock_policy_free(mock_policy *p)
{
	if (!p)
		return;
	free(p->per_second);
	free(p->ring);
	free(p->att);
	free(p);
}

void mock_policy_count_request(mock_policy *p)
{
	p->requests++;
}

void mock_policy_count_status(mock_policy *p, int status)
{
	if (status >= 100 && status < 600)
		p->by_status[status]++;
}

/* ------------------------------------------------------------ capacity */

double mock_policy_rate(const mock_policy *p, const mock_cfg *cfg,
			uint64_t now_ms)
{
	double period = 0, t;

	if (!cfg->nphases)
		return cfg->rps > 0 ? cfg->rps : -1;
	for (size_t i = 0; i < cfg->nphases; i++)
		period += cfg->phases[i].secs;
	t = fmod((double)(now_ms - p->sched_ms) / 1000.0, period);
	for (size_t i = 0; i < cfg->nphases; i++) {
		if (t < cfg->phases[i].secs)
			return cfg->phases[i].rps;
		t -= cfg->phases[i].secs;
	}
	return cfg->phases[cfg->nphases - 1].rps;
}

static void ring_push(mock_policy *p, uint64_t t)
{
	if (p->count == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		uint64_t *r = mock_xmalloc(cap * sizeof(*r));

		for (size_t i = 0; i < p->count; i++)
			r[i] = p->ring[(p->head + i) % p->cap];
		free(p->ring);
		p->ring = r;
		p->cap = cap;
		p->head = 0;
	}
	p->ring[(p->head + p->count++) % p->cap] = t;
}

/* 1 when the rate limit lets one more request in now. */
static int rate_allows(mock_policy *p, double r, uint64_t now)
{
	uint64_t window;
	size_t limit;

	if (r < 0)
		return 1;
	if (r == 0)
		return 0;
	window = r >= 1 ? 1000 : (uint64_t)(1000 / r);
	limit = r >= 1 ? (size_t)r : 1;
	while (p->count && p->ring[p->head] + window <= now) {
		p->head = (p->head + 1) % p->cap;
		p->count--;
	}
	return p->count < limit;
}

int mock_policy_admit(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms)
{
	double r = mock_policy_rate(p, cfg, now_ms);
	size_t sec;

	if (cfg->max_concurrent && p->current >= cfg->max_concurrent)
		return 0;
	if (!rate_allows(p, r, now_ms))
		return 0;
	if (r > 0)
		ring_push(p, now_ms);
	p->admitted++;
	if (++p->current > p->peak)
		p->peak = p->current;
	sec = (size_t)((now_ms - p->epoch_ms) / 1000);
	if (sec >= p->nseconds) {
		p->per_second = mock_xrealloc(p->per_second,
					      (sec + 1) * sizeof(long));
		memset(p->per_second + p->nseconds, 0,
		       (sec + 1 - p->nseconds) * sizeof(long));
		p->nseconds = sec + 1;
	}
	p->per_second[sec]++;
	return 1;
}

void mock_policy_done(mock_policy *p)
{
	p->current--;
}

/* ------------------------------------------------------ faults, latency */

static void att_grow(mock_policy *p)
{
	struct attempt *old = p->att;
	size_t oldcap = p->attcap;

	p->attcap = oldcap ? 2 * oldcap : 1024;
	p->att = mock_xmalloc(p->attcap * sizeof(*p->att));
	memset(p->att, 0, p->attcap * sizeof(*p->att));
	for (size_t i = 0; i < oldcap; i++) {
		size_t j = old[i].key & (p->attcap - 1);

		if (!old[i].used)
			continue;
		while (p->att[j].used)
			j = (j + 1) & (p->attcap - 1);
		p->att[j] = old[i];
	}
	free(old);
}

/* Returns how many times key was seen before, and counts this time. */
static uint32_t att_bump(mock_policy *p, uint64_t key)
{
	size_t j;

	if (2 * (p->natt + 1) > p->attcap)
		att_grow(p);
	j = key & (p->attcap - 1);
	while (p->att[j].used && p->att[j].key != key)
		j = (j + 1) & (p->attcap - 1);
	if (!p->att[j].used) {
		p->att[j].key = key;
		p->natt++;
	}
	return p->att[j].used++;
}

int mock_policy_fate(mock_policy *p, const mock_cfg *cfg, uint64_t req_hash)
{
	uint64_t st = mock_rng_seed((uint64_t)cfg->seed, req_hash,
				    att_bump(p, req_hash), SALT_FATE);
	double u = mock_rng_unit(&st), acc = 0;

	for (int f = 0; f < MOCK_FAULT_LAST; f++) {
		acc += cfg->rate[f];
		if (u < acc) {
			p->faults[f]++;
			return f;
		}
	}
	return MOCK_FATE_OK;
}

uint64_t mock_policy_latency(const mock_cfg *cfg, uint64_t req_hash)
{
	uint64_t st = mock_rng_seed((uint64_t)cfg->seed, req_hash, 0,
				    SALT_LATENCY);
	double ms = cfg->lat_a, u1, u2;

	switch (cfg->lat_kind) {
	case MOCK_LAT_FIXED:
		break;
	case MOCK_LAT_UNIFORM:
		ms = cfg->lat_a + mock_rng_unit(&st) * (cfg->lat_b - cfg->lat_a);
		break;
	case MOCK_LAT_LOGNORMAL:
		u1 = 1.0 - mock_rng_unit(&st); /* (0, 1]: log is finite */
		u2 = mock_rng_unit(&st);
		ms = cfg->lat_a * exp(cfg->lat_b * sqrt(-2 * log(u1)) *
				      cos(2 * M_PI * u2));
		break;
	}
	if (!(ms < 3.6e6))
		ms = 3.6e6;
	return (uint64_t)llround(ms);
}

/* ------------------------------------------------------------- stats */

void mock_policy_restart_schedule(mock_policy *p, uint64_t now_ms)
{
	p->sched_ms = now_ms;
}

void mock_policy_reset(mock_policy *p, uint64_t now_ms)
{
	p->requests = p->admitted = 0;
	p->peak = p->current;
	memset(p->by_status, 0, sizeof(p->by_status));
	memset(p->faults, 0, sizeof(p->faults));
	p->nseconds = 0;
	p->count = p->head = 0;
	p->natt = 0;
	if (p->att)
		memset(p->att, 0, p->attcap * sizeof(*p->att));
	p->epoch_ms = p->sched_ms = now_ms;
}

static const char *const FAULT_NAMES[MOCK_FAULT_LAST] = {
	"drop", "stall", "error_500", "malformed", "truncated", "length"
};

json_t *mock_policy_stats(const mock_policy *p, const mock_cfg *cfg,
			  uint64_t now_ms)
{
	json_t *st = json_object(), *bs = json_object(), *f = json_object();
	json_t *aps = json_array();
	size_t upto = (size_t)((now_ms - p->epoch_ms) / 1000) + 1;
	double r = mock_policy_rate(p, cfg, now_ms);

	for (int s = 100; s < 600; s++) {
		char k[8];

		if (!p->by_status[s])
			continue;
		snprintf(k, sizeof(k), "%d", s);
		json_object_set_new(bs, k, json_integer(p->by_status[s]));
	}
	for (int i = 0; i < MOCK_FAULT_LAST; i++)
		json_object_set_new(f, FAULT_NAMES[i], json_integer(p->faults[i]));
	for (size_t i = 0; i < upto; i++)
		json_array_append_new(aps, json_integer(i < p->nseconds ?
							 p->per_second[i] : 0));
	json_object_set_new(st, "requests", json_integer(p->requests));
	json_object_set_new(st, "admitted", json_integer(p->admitted));
	json_object_set_new(st, "by_status", bs);
	json_object_set_new(st, "faults", f);
	json_object_set_new(st, "current_concurrency", json_integer(p->current));
	json_object_set_new(st, "peak_concurrency", json_integer(p->peak));
	json_object_set_new(st, "admitted_per_second", aps);
	json_object_set_new(st, "rate_limit", r < 0 ? json_null() : json_real(r));
	json_object_set_new(st, "uptime_seconds",
			    json_real((double)(now_ms - p->start_ms) / 1000));
	json_object_set_new(st, "since_reset_seconds",
			    json_real((double)(now_ms - p->epoch_ms) / 1000.0));
	return st;
}

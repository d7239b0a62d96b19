/*
 * fate.c — injected faults and latency (see policy.h). The attempt
 * numbers live in an open-addressing hash map keyed by request hash; it
 * grows with the number of distinct requests since the last reset (16
 * bytes each).
 */
#include "policy_internal.h"
#include "buf.h"
#include "hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SALT_FATE = 0x66617465, SALT_LATENCY = 0x6c6174 };

static void att_grow(mock_policy *p)
{
	struct mock_attempt *old = p->att;
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

int mock_policy_fate(mock_policy *p, const mock_cfg *cfg, uint64_t req_hash,
		     uint64_t now_ms)
{
	uint64_t st = mock_rng_seed((uint64_t)cfg->seed, req_hash,
				    att_bump(p, req_hash), SALT_FATE);
	double u = mock_rng_unit(&st), acc = 0;
	mock_limits L;
	mock_point *pt;

	for (int f = 0; f < MOCK_FAULT_LAST; f++) {
		acc += cfg->rate[f];
		if (u < acc) {
			p->faults[f]++;
			return f;
		}
	}
	p->ok++;
	mock__policy_limits(p, cfg, &L);
	pt = mock_acct_point(&p->acct, &L, now_ms, p->current);
	if (pt)
		pt->ok++;
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

double mock__latency_mean(const mock_cfg *cfg)
{
	switch (cfg->lat_kind) {
	case MOCK_LAT_FIXED:
		break;
	case MOCK_LAT_UNIFORM:
		return (cfg->lat_a + cfg->lat_b) / 2;
	case MOCK_LAT_LOGNORMAL:
		return cfg->lat_a * exp(cfg->lat_b * cfg->lat_b / 2);
	}
	return cfg->lat_a;
}

void mock_policy_note_service(mock_policy *p, uint64_t ms)
{
	p->lat_sum += (double)ms;
	p->lat_n++;
}

/*
 * stats.c — the documents of GET /admin/stats and GET /admin/series (see
 * policy.h and docs/mock_llm.md).
 */
#include "policy_internal.h"

#include <stdio.h>

static const char *const FAULT_NAMES[MOCK_FAULT_LAST] = {
	"drop", "stall", "error_500", "malformed", "truncated", "length"
};

static const char *const CAUSE_NAMES[MOCK_CAUSE_LAST] = {
	NULL, "quota", "concurrency", "rate", "tokens"
};

static json_t *limit_json(double v)
{
	return v < 0 ? json_null() : json_real(v);
}

static json_t *counts_json(const mock_policy *p)
{
	json_t *bs = json_object();

	for (int s = 100; s < 600; s++) {
		char k[8];

		if (!p->by_status[s])
			continue;
		snprintf(k, sizeof(k), "%d", s);
		json_object_set_new(bs, k, json_integer(p->by_status[s]));
	}
	return bs;
}

static void add_limits(json_t *st, const mock_limits *L, uint64_t now)
{
	double tpm = mock_rate_at(&L->tok, now, NULL);

	json_object_set_new(st, "rate_limit",
			    limit_json(mock_rate_at(&L->req, now, NULL)));
	json_object_set_new(st, "concurrency_limit",
			    limit_json(mock_rate_at(&L->conc, now, NULL)));
	json_object_set_new(st, "token_limit", limit_json(tpm < 0 ? -1 :
							  tpm * 60));
}

json_t *mock_policy_stats(mock_policy *p, const mock_cfg *cfg,
			  uint64_t now_ms)
{
	json_t *st = json_object(), *f = json_object(), *rf = json_object();
	json_t *aps = json_array();
	size_t upto = (size_t)((now_ms - p->epoch_ms) / 1000) + 1;
	mock_limits L;

	mock__policy_limits(p, cfg, &L);
	for (int i = 0; i < MOCK_FAULT_LAST; i++)
		json_object_set_new(f, FAULT_NAMES[i], json_integer(p->faults[i]));
	for (int i = 1; i < MOCK_CAUSE_LAST; i++)
		json_object_set_new(rf, CAUSE_NAMES[i],
				    json_integer(p->refused[i]));
	for (size_t i = 0; i < upto; i++)
		json_array_append_new(aps, json_integer(i < p->nseconds ?
							 p->per_second[i] : 0));
	json_object_set_new(st, "requests", json_integer(p->requests));
	json_object_set_new(st, "admitted", json_integer(p->admitted));
	json_object_set_new(st, "by_status", counts_json(p));
	json_object_set_new(st, "faults", f);
	json_object_set_new(st, "current_concurrency", json_integer(p->current));
	json_object_set_new(st, "peak_concurrency", json_integer(p->peak));
	json_object_set_new(st, "admitted_per_second", aps);
	add_limits(st, &L, now_ms);
	json_object_set_new(st, "uptime_seconds",
			    json_real((double)(now_ms - p->start_ms) / 1000));
	json_object_set_new(st, "since_reset_seconds",
			    json_real((double)(now_ms - p->epoch_ms) / 1000.0));
	json_object_set_new(st, "arrivals", json_integer(p->arrivals));
	json_object_set_new(st, "ok", json_integer(p->ok));
	json_object_set_new(st, "refused", rf);
	json_object_set_new(st, "connections", json_integer(p->connections));
	/* Seconds of slots held by admitted requests that have left them
	 * (answered, stalled out, or abandoned by their client): the
	 * server's own account of the capacity used. */
	json_object_set_new(st, "slot_seconds", json_real(p->lat_sum / 1000.0));
	mock_acct_stats(&p->acct, st, p->arrivals ? p->cost_sum /
			(double)p->arrivals : 0, p->lat_n ? p->lat_sum /
			(double)p->lat_n : mock__latency_mean(cfg), p->ok);
	return st;
}

json_t *mock_policy_series(mock_policy *p, const mock_cfg *cfg,
			   uint64_t now_ms)
{
	mock_limits L;

	mock__policy_limits(p, cfg, &L);
	return mock_acct_series(&p->acct, &L, now_ms, p->current);
}

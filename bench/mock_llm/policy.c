/*
 * policy.c — the policy's life cycle, admission and config changes (see
 * policy.h). A chat request is checked for quota, then concurrency, then
 * the request limiter, then the token limiter; the first that refuses is
 * its cause. The true wait of a refusal is the first time at which all
 * of them would admit it, if nothing else arrived: each limit's own next
 * admission time, taken in turn from the latest so far until they agree.
 */
#include "policy_internal.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>

enum { DAY_MS = 86400000, MAX_STEPS = 100000 };

void mock__policy_limits(const mock_policy *p, const mock_cfg *cfg,
			 mock_limits *L)
{
	mock_limits_of(L, cfg, p->sched_ms, p->csched_ms);
}

static void start_limiters(mock_policy *p, uint64_t now)
{
	mock_limit_release(&p->req);
	mock_limit_release(&p->tok);
	mock_limit_release(&p->grain);
	mock_limit_init(&p->req, now);
	mock_limit_init(&p->tok, now);
	mock_limit_init(&p->grain, now);
}

mock_policy *mock_policy_create(const mock_cfg *cfg, uint64_t now_ms)
{
	mock_policy *p = mock_xmalloc(sizeof(*p));

	memset(p, 0, sizeof(*p));
	p->start_ms = p->epoch_ms = p->sched_ms = p->csched_ms = now_ms;
	start_limiters(p, now_ms);
	mock_acct_init(&p->acct, now_ms, (uint64_t)cfg->series_ms);
	return p;
}

void mock_policy_free(mock_policy *p)
{
	if (!p)
		return;
	mock_limit_release(&p->req);
	mock_limit_release(&p->tok);
	mock_limit_release(&p->grain);
	mock_acct_release(&p->acct);
	free(p->per_second);
	free(p->att);
	free(p);
}

void mock_policy_set_slot_fn(mock_policy *p, mock_slot_fn fn, void *ctx)
{
	p->slot_fn = fn;
	p->slot_ctx = ctx;
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

void mock_policy_count_connection(mock_policy *p)
{
	p->connections++;
}

double mock_policy_rate(const mock_policy *p, const mock_cfg *cfg,
			uint64_t now_ms)
{
	mock_limits L;

	mock__policy_limits(p, cfg, &L);
	return mock_rate_at(&L.req, now_ms, NULL);
}

/* ------------------------------------------------------------ admission */

/* The first time >= from at which a slot is free for one more request. */
static uint64_t conc_next(const mock_policy *p, const mock_rate *c,
			  uint64_t from)
{
	uint64_t t = from, end, d;

	for (int steps = 0; steps < MAX_STEPS; steps++) {
		double cap = mock_rate_at(c, t, &end);
		long k = p->current - (long)cap + 1; /* slots to be freed */

		if (cap < 0 || (cap > 0 && k <= 0))
			return t;
		if (cap > 0 && p->slot_fn) {
			d = p->slot_fn(p->slot_ctx, (size_t)k);
			if (d != MOCK_NEVER && d < end)
				return d > t ? d : t;
		}
		if (end == MOCK_NEVER || end > from + DAY_MS)
			break;
		t = end;
	}
	return MOCK_NEVER;
}

static uint64_t true_wait(const mock_policy *p, const mock_limits *L,
			  uint64_t now, double tokens)
{
	uint64_t t = now;

	for (int i = 0; i < 64; i++) {
		uint64_t u = conc_next(p, &L->conc, t);

		if (u != MOCK_NEVER)
			u = mock_limit_next(&p->req, &L->req_shape, &L->req,
					    u, 1);
		if (u != MOCK_NEVER && L->grain_shape.window_ms)
			u = mock_limit_next(&p->grain, &L->grain_shape,
					    &L->req, u, 1);
		if (u != MOCK_NEVER)
			u = mock_limit_next(&p->tok, &L->tok_shape, &L->tok,
					    u, tokens);
		if (u == MOCK_NEVER || u - now > DAY_MS)
			return MOCK_NEVER;
		if (u == t)
			break;
		t = u;
	}
	return t > now ? t - now : 1; /* a refusal never says "now" */
}

static mock_cause check(mock_policy *p, const mock_cfg *cfg,
			const mock_limits *L, uint64_t now, double tokens,
			uint64_t *wait)
{
	double cap = mock_rate_at(&L->conc, now, NULL);

	if (mock_quota_check(&p->quota, cfg, now, wait))
		return MOCK_CAUSE_QUOTA;
	if (cap >= 0 && (double)p->current >= cap)
		return MOCK_CAUSE_CONCURRENCY;
	if (!mock_limit_allows(&p->req, &L->req_shape, &L->req, now, 1) ||
	    (L->grain_shape.window_ms &&
	     !mock_limit_allows(&p->grain, &L->grain_shape, &L->req, now, 1)))
		return MOCK_CAUSE_RATE;
	if (!mock_limit_allows(&p->tok, &L->tok_shape, &L->tok, now, tokens))
		return MOCK_CAUSE_TOKENS;
	return MOCK_CAUSE_NONE;
}

static void admit(mock_policy *p, uint64_t now)
{
	size_t sec = (size_t)((now - p->epoch_ms) / 1000);

	p->admitted++;
	if (++p->current > p->peak)
		p->peak = p->current;
	if (sec >= p->nseconds) {
		p->per_second = mock_xrealloc(p->per_second,
					      (sec + 1) * sizeof(long));
		memset(p->per_second + p->nseconds, 0,
		       (sec + 1 - p->nseconds) * sizeof(long));
		p->nseconds = sec + 1;
	}
	p->per_second[sec]++;
}

void mock_policy_decide(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms,
			double tokens, mock_verdict *v)
{
	double w = 1;
	mock_limits L;
	mock_point *pt;

	memset(v, 0, sizeof(*v));
	v->tokens = tokens;
	mock__policy_limits(p, cfg, &L);
	mock_acct_arrive(&p->acct, &p->req, &p->tok, &p->grain, &L, now_ms);
	p->arrivals++;
	p->cost_sum += tokens;
	v->cause = check(p, cfg, &L, now_ms, tokens, &v->wait_ms);
	if (v->cause == MOCK_CAUSE_NONE) {
		admit(p, now_ms);
	} else {
		p->refused[v->cause]++;
		w = cfg->refused_weight;
	}
	mock_limit_charge(&p->req, &L.req_shape, &L.req, now_ms, w);
	if (L.grain_shape.window_ms)
		mock_limit_charge(&p->grain, &L.grain_shape, &L.req, now_ms, w);
	mock_limit_charge(&p->tok, &L.tok_shape, &L.tok, now_ms, w * tokens);
	if (v->cause != MOCK_CAUSE_NONE && v->cause != MOCK_CAUSE_QUOTA)
		v->wait_ms = true_wait(p, &L, now_ms, tokens);
	pt = mock_acct_point(&p->acct, &L, now_ms, p->current);
	if (pt) {
		pt->arrivals++;
		pt->admitted += v->cause == MOCK_CAUSE_NONE;
		pt->refused += v->cause != MOCK_CAUSE_NONE;
		if (p->current > pt->peak)
			pt->peak = p->current;
	}
	mock_limit_view(&p->req, &L.req_shape, &L.req, now_ms, &v->req);
	mock_limit_view(&p->tok, &L.tok_shape, &L.tok, now_ms, &v->tok);
}

void mock_policy_done(mock_policy *p)
{
	p->current--;
}

/* -------------------------------------------------------------- changes */

void mock_policy_before_change(mock_policy *p, const mock_cfg *old,
			       uint64_t now_ms)
{
	mock_limits L;

	mock__policy_limits(p, old, &L);
	mock_acct_advance(&p->acct, &L, now_ms);
	mock_acct_point(&p->acct, &L, now_ms, p->current);
}

void mock_policy_after_change(mock_policy *p, const mock_cfg *old,
			      const mock_cfg *cfg, uint64_t now_ms)
{
	if (strcmp(old->schedule_spec, cfg->schedule_spec))
		p->sched_ms = now_ms;
	if (strcmp(old->cschedule_spec, cfg->cschedule_spec))
		p->csched_ms = now_ms;
	if (old->limiter != cfg->limiter || old->window_ms != cfg->window_ms ||
	    old->grain_ms != cfg->grain_ms) {
		start_limiters(p, now_ms);
		mock_acct_resync(&p->acct, &p->req, &p->tok, &p->grain);
	}
	if (old->quota != cfg->quota || old->quota_after != cfg->quota_after ||
	    old->quota_rate != cfg->quota_rate ||
	    old->quota_lock_ms != cfg->quota_lock_ms)
		mock_quota_reset(&p->quota);
	if (old->series_ms != cfg->series_ms)
		mock_acct_restart_series(&p->acct, now_ms,
					 (uint64_t)cfg->series_ms);
}

void mock_policy_reset(mock_policy *p, const mock_cfg *cfg, uint64_t now_ms)
{
	p->requests = p->arrivals = p->admitted = p->ok = p->connections = 0;
	p->peak = p->current;
	memset(p->refused, 0, sizeof(p->refused));
	memset(p->by_status, 0, sizeof(p->by_status));
	memset(p->faults, 0, sizeof(p->faults));
	p->nseconds = 0;
	p->cost_sum = p->lat_sum = 0;
	p->lat_n = 0;
	p->natt = 0;
	if (p->att)
		memset(p->att, 0, p->attcap * sizeof(*p->att));
	p->epoch_ms = p->sched_ms = p->csched_ms = now_ms;
	start_limiters(p, now_ms);
	mock_quota_reset(&p->quota);
	mock_acct_release(&p->acct);
	mock_acct_init(&p->acct, now_ms, (uint64_t)cfg->series_ms);
}

/*
 * server.c — the simulated upstream (capsim.h): the limiters a demanding
 * mock would have, a concurrency cap, latency, and what the answers say.
 *
 * A limiter counts arrivals: an admitted request adds its cost (1 request,
 * or its tokens), a refused one adds cost * refused_weight (real providers
 * count refused requests too; with weight 1 a client that keeps sending
 * into a full rolling window keeps it full). A request is admitted when
 * every limiter has room for its cost and the concurrency cap (if any) is
 * not reached. Retry hints say exactly when the limiters that refused
 * would have room again if nothing else arrived (times hint_factor, to
 * model a wrong hint); a refusal by the concurrency cap alone carries no
 * hint (a self-hosted server cannot know when a slot frees). Rate-limit
 * headers are computed when the request arrives, as providers do, and
 * reach the client with the answer.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "capsim.h"

/* ---------------------------------------------------------------- random */

void sim_rng_seed(sim_rng *r, uint64_t seed)
{
	r->s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
}

static uint64_t next64(sim_rng *r) /* splitmix64 */
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double sim_rng_unit(sim_rng *r)
{
	return (double)(next64(r) >> 11) * 0x1.0p-53;
}

double sim_rng_normal(sim_rng *r) /* Box-Muller, one of the pair */
{
	double u = sim_rng_unit(r), v = sim_rng_unit(r);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* ------------------------------------------------------------- schedules */

static double period(const sim_sched *s)
{
	double p = 0;

	for (int i = 0; i < s->n; i++)
		p += s->p[i].secs;
	return p;
}

double sim_sched_at(const sim_sched *s, uint64_t now)
{
	double t;

	if (!s->n)
		return 0;
	t = fmod((double)now / 1e9, period(s));
	for (int i = 0; i < s->n; i++) {
		if (t < s->p[i].secs)
			return s->p[i].value;
		t -= s->p[i].secs;
	}
	return s->p[s->n - 1].value;
}

/* The end of the schedule phase now is in; UINT64_MAX without phases. */
static uint64_t sched_next(const sim_sched *s, uint64_t now)
{
	double per, t, start, acc = 0;

	if (s->n < 2)
		return UINT64_MAX;
	per = period(s);
	t = (double)now / 1e9;
	start = floor(t / per) * per;
	for (int i = 0; i < s->n; i++) {
		acc += s->p[i].secs;
		if (start + acc > t + 1e-12)
			return (uint64_t)ceil((start + acc) * 1e9);
	}
	return (uint64_t)ceil((start + per) * 1e9);
}

/* --------------------------------------------------------------- limiters */

static bool lim_on(const sim_lim *l)
{
	return l->cfg->mode != SIM_LIM_NONE && l->cfg->rate.n;
}

static double lim_rate(const sim_lim *l, uint64_t now)
{
	return sim_sched_at(&l->cfg->rate, now + l->offset);
}

/* The end of the schedule phase now is in, in run time. */
static uint64_t next_phase(const sim_sched *s, uint64_t offset, uint64_t now)
{
	uint64_t t = sched_next(s, now + offset);

	return t == UINT64_MAX ? t : t - offset;
}

static double lim_limit(const sim_lim *l, uint64_t now)
{
	return lim_rate(l, now) * l->cfg->window_s;
}

static uint64_t window_ns(const sim_lim *l)
{
	return (uint64_t)(l->cfg->window_s * 1e9);
}

/* Forgets what no longer counts at now. */
static void lim_prune(sim_lim *l, uint64_t now)
{
	uint64_t w = window_ns(l);

	switch (l->cfg->mode) {
	case SIM_LIM_ROLLING:
		while (l->n && l->e[l->head].t + w <= now) {
			l->sum -= l->e[l->head].w;
			l->head = (l->head + 1) % l->cap;
			l->n--;
		}
		if (!l->n)
			l->sum = 0;
		break;
	case SIM_LIM_FIXED:
		if (now >= l->fixed_start + w) {
			l->fixed_start = now / w * w;
			l->fixed_count = 0;
		}
		break;
	case SIM_LIM_BUCKET: {
		double cap = lim_limit(l, now);

		l->tokens += lim_rate(l, now) * (double)(now - l->bucket_t) / 1e9;
		if (l->tokens > cap)
			l->tokens = cap;
		l->bucket_t = now;
		break;
	}
	case SIM_LIM_NONE:
		break;
	}
}

static double lim_count(const sim_lim *l, uint64_t now)
{
	switch (l->cfg->mode) {
	case SIM_LIM_ROLLING: return l->sum;
	case SIM_LIM_FIXED: return l->fixed_count;
	case SIM_LIM_BUCKET: return lim_limit(l, now) - l->tokens;
	case SIM_LIM_NONE: break;
	}
	return 0;
}

static bool lim_allows(const sim_lim *l, uint64_t now, double cost)
{
	if (!lim_on(l))
		return true;
	return lim_count(l, now) + cost <= lim_limit(l, now) + 1e-9;
}

static void lim_add(sim_lim *l, uint64_t now, double w)
{
	if (!lim_on(l) || w <= 0)
		return;
	switch (l->cfg->mode) {
	case SIM_LIM_ROLLING:
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 1024;
			sim_entry *e = malloc(cap * sizeof(*e));

			if (!e)
				abort();
			for (size_t i = 0; i < l->n; i++)
				e[i] = l->e[(l->head + i) % l->cap];
			free(l->e);
			l->e = e;
			l->cap = cap;
			l->head = 0;
		}
		l->e[(l->head + l->n++) % l->cap] = (sim_entry){ now, w };
		l->sum += w;
		break;
	case SIM_LIM_FIXED:
		l->fixed_count += w;
		break;
	case SIM_LIM_BUCKET: /* a debt, at most one burst deep */
		l->tokens -= w;
		if (l->tokens < -lim_limit(l, now))
			l->tokens = -lim_limit(l, now);
		break;
	case SIM_LIM_NONE:
		break;
	}
}

/* When the limiter would have room for cost if nothing else arrived. */
static uint64_t lim_free_at(const sim_lim *l, uint64_t now, double cost)
{
	double limit = lim_limit(l, now), need;
	uint64_t w = window_ns(l);

	if (limit < cost) /* this phase admits nothing of this size */
		return next_phase(&l->cfg->rate, l->offset, now);
	switch (l->cfg->mode) {
	case SIM_LIM_ROLLING:
		need = l->sum + cost - limit - 1e-9;
		if (need <= 0)
			return now;
		for (size_t i = 0; i < l->n; i++) {
			const sim_entry *e = &l->e[(l->head + i) % l->cap];

			need -= e->w;
			if (need <= 0)
				return e->t + w;
		}
		return now;
	case SIM_LIM_FIXED:
		return l->fixed_start + w;
	case SIM_LIM_BUCKET:
		return now + (uint64_t)ceil((cost - l->tokens) / lim_rate(l, now) * 1e9);
	case SIM_LIM_NONE:
		break;
	}
	return now;
}

/* x-ratelimit-reset: until the limiter is back to its initial state. */
static double lim_reset_s(const sim_lim *l, uint64_t now)
{
	switch (l->cfg->mode) {
	case SIM_LIM_ROLLING:
		if (!l->n)
			return 0;
		return (double)(l->e[(l->head + l->n - 1) % l->cap].t + window_ns(l) - now) / 1e9;
	case SIM_LIM_FIXED:
		return (double)(l->fixed_start + window_ns(l) - now) / 1e9;
	case SIM_LIM_BUCKET:
		return (lim_limit(l, now) - l->tokens) / lim_rate(l, now);
	case SIM_LIM_NONE:
		break;
	}
	return 0;
}

static void lim_headers(const sim_lim *l, uint64_t now, double *limit, double *remaining,
			double *reset)
{
	double rem;

	if (!lim_on(l))
		return;
	*limit = floor(lim_limit(l, now) + 1e-9);
	rem = floor(lim_limit(l, now) - lim_count(l, now) + 1e-9);
	*remaining = rem > 0 ? rem : 0;
	*reset = lim_reset_s(l, now);
}

/* ----------------------------------------------------------------- server */

void sim_server_init(sim_server *s, const sim_scenario *sc, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->sc = sc;
	s->req.cfg = &sc->req;
	s->tok.cfg = &sc->tok;
	sim_rng_seed(&s->rng, seed ^ 0x5e4e4ull);
	/* Each seed meets the schedules at another point of their period. */
	s->offset = (uint64_t)(sim_rng_unit(&s->rng) * 3600 * 1e9);
	s->req.offset = s->tok.offset = s->offset;
	s->req.tokens = lim_limit(&s->req, 0);
	s->tok.tokens = lim_limit(&s->tok, 0);
}

void sim_server_release(sim_server *s)
{
	free(s->req.e);
	free(s->tok.e);
}

/* Others' requests in flight at the server (a shared server). */
static double background(const sim_server *s, uint64_t now)
{
	return sim_sched_at(&s->sc->background, now + s->offset);
}

static bool cap_allows(const sim_server *s, uint64_t now)
{
	double cap = sim_sched_at(&s->sc->cap, now + s->offset);

	return cap <= 0 || s->current + background(s, now) < cap;
}

bool sim_server_would_admit(sim_server *s, uint64_t now, double tokens)
{
	lim_prune(&s->req, now);
	lim_prune(&s->tok, now);
	return cap_allows(s, now) && lim_allows(&s->req, now, 1) &&
	       lim_allows(&s->tok, now, tokens);
}

uint64_t sim_server_next_change(sim_server *s, uint64_t now, double tokens)
{
	uint64_t t = next_phase(&s->sc->cap, s->offset, now);
	const sim_lim *ls[2] = { &s->req, &s->tok };

	for (int i = 0; i < 2; i++) {
		const sim_lim *l = ls[i];
		uint64_t u = UINT64_MAX;

		if (!lim_on(l))
			continue;
		if (next_phase(&l->cfg->rate, l->offset, now) < t)
			t = next_phase(&l->cfg->rate, l->offset, now);
		if (l->cfg->mode == SIM_LIM_ROLLING && l->n)
			u = l->e[l->head].t + window_ns(l);
		else if (l->cfg->mode == SIM_LIM_FIXED)
			u = l->fixed_start + window_ns(l);
		else if (l->cfg->mode == SIM_LIM_BUCKET)
			u = lim_free_at(l, now, i ? tokens : 1);
		if (u > now && u < t)
			t = u;
	}
	return t;
}

/* Latency, with a network's jitter of +-2 %. */
static uint64_t latency(sim_server *s, uint64_t now)
{
	const sim_scenario *sc = s->sc;
	double ms = sc->lat_ms;

	if (sc->lat == SIM_LAT_LOGNORMAL)
		ms = sc->lat_ms * exp(sc->sigma * sim_rng_normal(&s->rng));
	else if (sc->lat == SIM_LAT_QUEUE)
		ms = sc->lat_ms * (1.0 + ((double)s->current + background(s, now)) / sc->queue_c);
	return (uint64_t)(ms * (0.98 + 0.04 * sim_rng_unit(&s->rng)) * 1e6);
}

/* The retry hint of a refusal: when the limiters that refused have room. */
static void retry_hint(sim_server *s, uint64_t now, double tokens, sim_answer *a)
{
	const sim_scenario *sc = s->sc;
	uint64_t at = now;
	double wait;

	if (sc->hint == SIM_HINT_NONE)
		return;
	if (!lim_allows(&s->req, now, 1) && lim_free_at(&s->req, now, 1) > at)
		at = lim_free_at(&s->req, now, 1);
	if (!lim_allows(&s->tok, now, tokens) && lim_free_at(&s->tok, now, tokens) > at)
		at = lim_free_at(&s->tok, now, tokens);
	if (at == now && !cap_allows(s, now))
		return; /* the concurrency cap alone: no hint */
	wait = (double)(at - now) / 1e9 * sc->hint_factor;
	if (sc->hint == SIM_HINT_RETRY_AFTER) {
		a->hints.retry_after_s = ceil(wait);
		a->hints.retry_src = HTTP_HINT_RETRY_AFTER;
	} else {
		a->hints.retry_after_s = ceil(wait * 1000) / 1000;
		a->hints.retry_src = HTTP_HINT_RETRY_AFTER_MS;
	}
}

void sim_server_arrive(sim_server *s, uint64_t now, double tokens, sim_answer *a)
{
	const sim_scenario *sc = s->sc;
	double w = sc->req.refused_weight;

	http__hints_init(&a->hints);
	a->admitted = sim_server_would_admit(s, now, tokens);
	lim_add(&s->req, now, a->admitted ? 1 : w);
	lim_add(&s->tok, now, a->admitted ? tokens : tokens * sc->tok.refused_weight);
	if (!a->admitted) /* counting the refused request, when it counts */
		retry_hint(s, now, tokens, a);
	if (a->admitted) {
		if (++s->current > s->peak)
			s->peak = s->current;
		a->latency = latency(s, now);
	} else
		a->latency = (uint64_t)(sc->refuse_ms * (0.8 + 0.4 * sim_rng_unit(&s->rng)) * 1e6);
	if (sc->ratelimit_headers) {
		lim_headers(&s->req, now, &a->hints.limit_requests,
			    &a->hints.remaining_requests, &a->hints.reset_requests_s);
		lim_headers(&s->tok, now, &a->hints.limit_tokens,
			    &a->hints.remaining_tokens, &a->hints.reset_tokens_s);
	}
}

void sim_server_finish(sim_server *s)
{
	s->current--;
}

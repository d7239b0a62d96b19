/*
 * limit.c — rolling window, fixed window and token bucket (see limit.h).
 *
 * Rolling: a ring of charges (time, running total). A charge leaves the
 * window when its time + W <= now; the window's content is the running
 * total of the newest entry minus `base`, the running total of the last
 * entry that left. Finding when enough has left is a binary search over
 * the running totals, so a hint costs O(log n) however many refused
 * requests a hammering client piled into the window.
 * Fixed: one counter for the window [origin + kW, origin + (k+1)W) it
 * belongs to, known by its start (W may change with the rate); a charge
 * in another window starts it at 0.
 * Bucket: the level, refilled lazily at the rate in force, phase by phase,
 * up to the size in force; HUGE_VAL until a limit first applies (full).
 * A phase of rate 0 freezes it (no refill, and the size of a bucket that
 * follows the rate does not shrink to nothing).
 */
#include "limit.h"
#include "buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9
enum { HORIZON_MS = 86400000, MAX_STEPS = 1000000 };

/* ms as an integer, capped at 1e13 (300 years): a huge double (a rate
 * of 1e-300) does not convert. */
static uint64_t to_ms(double ms)
{
	return ms < 1e13 ? (uint64_t)ms : (uint64_t)1e13;
}

/* Units per window at rate r > 0; *len gets the window's length. A
 * window too short for one unit grows to hold exactly one. */
static double win_limit(const mock_shape *s, double r, uint64_t *len)
{
	double n = floor(r * ((double)s->window_ms / 1000.0) + EPS);

	*len = s->window_ms;
	if (n >= 1)
		return n;
	*len = to_ms(1000 / r);
	return 1;
}

static double bucket_size(const mock_shape *s, double r)
{
	double n = r * ((double)s->window_ms / 1000.0);

	return s->burst > 0 ? s->burst : n > 1 ? n : 1;
}

void mock_limit_init(mock_limit *l, uint64_t now)
{
	memset(l, 0, sizeof(*l));
	l->origin = l->last = l->win = now;
	l->level = HUGE_VAL;
}

void mock_limit_release(mock_limit *l)
{
	free(l->ring);
	memset(l, 0, sizeof(*l));
}

void mock_limit_copy(mock_limit *dst, const mock_limit *src)
{
	*dst = *src;
	dst->ring = NULL;
	dst->head = 0;
	dst->cap = src->count;
	if (!src->count)
		return;
	dst->ring = mock_xmalloc(src->count * sizeof(*dst->ring));
	for (size_t i = 0; i < src->count; i++)
		dst->ring[i] = src->ring[(src->head + i) % src->cap];
}

/* ------------------------------------------------------------- rolling */

static const mock_lim_entry *at(const mock_limit *l, size_t i)
{
	return &l->ring[(l->head + i) % l->cap];
}

static double ring_sum(const mock_limit *l)
{
	return l->count ? at(l, l->count - 1)->cum - l->base : 0;
}

static void ring_push(mock_limit *l, uint64_t t, double w)
{
	double total = l->count ? at(l, l->count - 1)->cum : l->base;

	if (l->count == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		mock_lim_entry *r = mock_xmalloc(cap * sizeof(*r));

		for (size_t i = 0; i < l->count; i++)
			r[i] = *at(l, i);
		free(l->ring);
		l->ring = r;
		l->cap = cap;
		l->head = 0;
	}
	l->ring[(l->head + l->count++) % l->cap] =
		(mock_lim_entry){ t, total + w };
}

static void ring_expire(mock_limit *l, uint64_t now, uint64_t len)
{
	while (l->count && l->ring[l->head].t + len <= now) {
		l->base = l->ring[l->head].cum;
		l->head = (l->head + 1) % l->cap;
		l->count--;
	}
	if (!l->count) /* keep the running totals small */
		l->base = 0;
}

/* The first time >= t at which cost fits in a window holding n, the
 * window being len long: when enough of the oldest entries have left. */
static uint64_t rolling_first(const mock_limit *l, double n, uint64_t len,
			      uint64_t t, double cost)
{
	double need = ring_sum(l) + cost - n;
	size_t lo = 0, hi;
	uint64_t c;

	if (cost > n + EPS)
		return MOCK_NEVER;
	if (need <= EPS)
		return t;
	hi = l->count - 1; /* need > 0, so the whole ring is enough */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (at(l, mid)->cum - l->base + EPS >= need)
			hi = mid;
		else
			lo = mid + 1;
	}
	c = at(l, lo)->t + len;
	return c > t ? c : t;
}

/* --------------------------------------------------- fixed, bucket */

/* The start of the fixed window of length len that holds t. */
static uint64_t win_start(const mock_limit *l, uint64_t len, uint64_t t)
{
	return l->origin + (t - l->origin) / len * len;
}

static void fixed_roll(mock_limit *l, uint64_t len, uint64_t now)
{
	uint64_t w = win_start(l, len, now);

	if (w != l->win) {
		l->win = w;
		l->used = 0;
	}
}

/* The bucket's level at t >= l->last, refilled phase by phase. */
static double bucket_level(const mock_limit *l, const mock_shape *s,
			   const mock_rate *r, uint64_t t)
{
	double level = l->level, v;
	uint64_t u = l->last, nx;
	int steps = 0;

	while (u < t && ++steps < MAX_STEPS) {
		v = mock_rate_at(r, u, &nx);
		if (nx > t)
			nx = t;
		if (v < 0)
			level = HUGE_VAL;
		else if (v > 0) /* an outage (0) freezes the bucket */
			level = fmin(bucket_size(s, v),
				     level + v * (double)(nx - u) / 1000.0);
		u = nx;
	}
	v = mock_rate_at(r, t, NULL);
	if (v < 0)
		return HUGE_VAL;
	return v == 0 ? level : fmin(bucket_size(s, v), level);
}

static void bucket_advance(mock_limit *l, const mock_shape *s,
			   const mock_rate *r, uint64_t now)
{
	if (now < l->last)
		now = l->last;
	l->level = bucket_level(l, s, r, now);
	l->last = now;
}

/* ---------------------------------------------------------------- API */

int mock_limit_allows(mock_limit *l, const mock_shape *s, const mock_rate *r,
		      uint64_t now, double cost)
{
	double v = mock_rate_at(r, now, NULL), n;
	uint64_t len;

	if (v < 0)
		return 1;
	if (v == 0)
		return 0;
	n = win_limit(s, v, &len);
	switch (s->mode) {
	case MOCK_LIM_ROLLING:
		ring_expire(l, now, len);
		return ring_sum(l) + cost <= n + EPS;
	case MOCK_LIM_FIXED:
		fixed_roll(l, len, now);
		return l->used + cost <= n + EPS;
	case MOCK_LIM_BUCKET:
		bucket_advance(l, s, r, now);
		return l->level + EPS >= cost;
	}
	return 1;
}

void mock_limit_charge(mock_limit *l, const mock_shape *s, const mock_rate *r,
		       uint64_t now, double cost)
{
	double v = mock_rate_at(r, now, NULL), size;
	uint64_t len = s->window_ms;

	if (v < 0 || cost <= 0)
		return;
	if (v > 0)
		win_limit(s, v, &len);
	switch (s->mode) {
	case MOCK_LIM_ROLLING:
		if (v > 0)
			ring_expire(l, now, len);
		ring_push(l, now, cost);
		break;
	case MOCK_LIM_FIXED:
		fixed_roll(l, len, now);
		l->used += cost;
		break;
	case MOCK_LIM_BUCKET:
		bucket_advance(l, s, r, now);
		size = bucket_size(s, v);
		l->level = fmax(l->level - cost, -size);
		break;
	}
}

/* The first time in [t, end) at which cost fits, for a rate v > 0 that
 * holds over it; *level is the bucket's at t and is moved to end. */
static uint64_t first_in(const mock_limit *l, const mock_shape *s, double v,
			 uint64_t t, uint64_t *end, double cost, double *level)
{
	uint64_t len, w, c;
	double n = win_limit(s, v, &len), size, need;

	switch (s->mode) {
	case MOCK_LIM_ROLLING:
		c = rolling_first(l, n, len, t, cost);
		return c < *end ? c : MOCK_NEVER;
	case MOCK_LIM_FIXED:
		w = win_start(l, len, t);
		if (w + len < *end)
			*end = w + len;
		return (w == l->win ? l->used : 0) + cost <= n + EPS ? t :
								   MOCK_NEVER;
	case MOCK_LIM_BUCKET:
		size = bucket_size(s, v);
		*level = fmin(*level, size);
		need = cost - *level;
		c = need <= EPS ? t : t + to_ms(ceil(need / v * 1000.0));
		*level = fmin(size, *level + v * (double)(*end - t) / 1000.0);
		return cost <= size + EPS && c < *end ? c : MOCK_NEVER;
	}
	return t;
}

uint64_t mock_limit_next(const mock_limit *l, const mock_shape *s,
			 const mock_rate *r, uint64_t from, double cost)
{
	uint64_t t = from, end, c;
	double level = 0;
	int steps = 0;

	if (s->mode == MOCK_LIM_BUCKET)
		level = bucket_level(l, s, r, from > l->last ? from : l->last);
	while (t < from + HORIZON_MS && ++steps < MAX_STEPS) {
		double v = mock_rate_at(r, t, &end);

		if (v < 0)
			return t;
		if (v > 0) {
			c = first_in(l, s, v, t, &end, cost, &level);
			if (c != MOCK_NEVER)
				return c;
		}
		if (end == MOCK_NEVER)
			return MOCK_NEVER;
		t = end;
	}
	return MOCK_NEVER;
}

static uint64_t until(uint64_t t, uint64_t now)
{
	return t == MOCK_NEVER ? HORIZON_MS : t > now ? t - now : 0;
}

void mock_limit_view(mock_limit *l, const mock_shape *s, const mock_rate *r,
		     uint64_t now, mock_lim_view *v)
{
	double rate = mock_rate_at(r, now, NULL);
	uint64_t len;

	memset(v, 0, sizeof(*v));
	if (rate < 0)
		return;
	v->active = 1;
	if (rate == 0) {
		v->reset_ms = until(mock_limit_next(l, s, r, now, 1), now);
		return;
	}
	v->limit = win_limit(s, rate, &len);
	mock_limit_allows(l, s, r, now, 0); /* expire, roll or refill */
	switch (s->mode) {
	case MOCK_LIM_ROLLING:
		v->remaining = v->limit - ring_sum(l);
		if (l->count)
			v->reset_ms = until(at(l, l->count - 1)->t + len, now);
		break;
	case MOCK_LIM_FIXED:
		v->remaining = v->limit - l->used;
		if (l->used > 0)
			v->reset_ms = until(l->win + len, now);
		break;
	case MOCK_LIM_BUCKET:
		v->limit = bucket_size(s, rate);
		v->remaining = l->level;
		if (l->level < v->limit)
			v->reset_ms = until(mock_limit_next(l, s, r, now,
							    v->limit), now);
		break;
	}
	if (v->remaining < 0)
		v->remaining = 0;
}

/* ------------------------------------------------------------ capacity */

static double greedy_bucket(mock_limit *sh, const mock_shape *s,
			    const mock_rate *r, uint64_t from, uint64_t to,
			    int *unbounded)
{
	double total = 0, v;
	uint64_t t = from, nx;
	int steps = 0;

	bucket_advance(sh, s, r, from);
	v = mock_rate_at(r, from, NULL);
	if (v < 0) {
		*unbounded = 1;
		sh->level = 0;
	}
	if (v > 0 && sh->level > 0) { /* the burst, at once */
		total = sh->level;
		sh->level = 0;
	}
	while (t < to && ++steps < MAX_STEPS) {
		v = mock_rate_at(r, t, &nx);
		if (nx > to)
			nx = to;
		if (v < 0) {
			*unbounded = 1;
			sh->level = 0;
		} else if (v > 0) { /* taken as it drips in */
			sh->level += v * (double)(nx - t) / 1000.0;
			if (sh->level > 0) {
				total += sh->level;
				sh->level = 0;
			}
		}
		t = nx;
	}
	sh->last = to;
	return total;
}

double mock_limit_greedy(mock_limit *sh, const mock_shape *s,
			 const mock_rate *r, uint64_t from, uint64_t to,
			 int *unbounded)
{
	double total = 0;
	uint64_t t = from;
	int steps = 0;

	if (s->mode == MOCK_LIM_BUCKET)
		return greedy_bucket(sh, s, r, from, to, unbounded);
	while (++steps < MAX_STEPS) {
		double v, n, room;
		uint64_t len;

		t = mock_limit_next(sh, s, r, t, 1);
		if (t == MOCK_NEVER || t > to)
			break;
		v = mock_rate_at(r, t, NULL);
		if (v < 0) {
			*unbounded = 1;
			break;
		}
		n = win_limit(s, v, &len);
		mock_limit_allows(sh, s, r, t, 0);
		room = floor(n - (s->mode == MOCK_LIM_ROLLING ? ring_sum(sh) :
					   sh->used) + EPS);
		if (room < 1)
			room = 1;
		mock_limit_charge(sh, s, r, t, room);
		total += room;
	}
	return total;
}

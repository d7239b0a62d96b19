/*
 * capacity.c — the capacity controller (http_internal.h; the algorithm
 * and why: docs/adr/0016-capacity-control.md).
 *
 * Three limits, the tightest wins: a pause (a hint, or a backoff after a
 * refusal without one), the pace (requests and tokens per second: learnt,
 * configured, or from an announced quota) and the window (requests in
 * flight). Pure logic: times come in, no clock is read.
 */
#include <math.h>
#include <string.h>

#include "plugins/http/http_internal.h"

#define SEC 1e9

/* pace */
#define BETA 0.7             /* a refusal at a rate that had worked */
#define CUT_MARGIN 0.95      /* a cut stays this far under what was seen */
#define MEASURE_S 1.0        /* horizon of the rates seen */
#define RECOVER_S 0.25       /* back to `good`: e-folding time */
#define CONFIRM_S 1.0        /* a rate held this long without refusal worked */
#define PROBE_GAIN 0.02      /* growth above good: +2 %/s at first, */
#define PROBE_DOUBLING_S 2.0 /* doubling every 2 s, */
#define PROBE_GAIN_MAX 0.5   /* up to +50 %/s */
#define JUMP_GAP 1.3         /* a peak this far above good is worth trying */
#define JUMP_STEP 4.0        /* at most this many times good at once */
#define JUMP_EVERY_S 3.0     /* interval: this / (peak / good - 1), */
#define JUMP_MIN_S 1.0       /* within these bounds */
#define JUMP_MAX_S 30.0
#define MIN_RATE 0.01        /* one request per 100 s */
#define BACKOFF_MAX_S 60.0   /* the longest pause without a hint */
#define BACKOFF_UNPACED_S 0.05 /* the first pause when not paced */
/* window */
#define WINDOW_HOLD_S 2.0    /* after a cut, before growing again */
#define SCORE_MAX 3          /* votes remembered for cap against rate */
/* hints */
#define HINT_SCALE_MAX 4.0

const char *http_cap_reason_name(http_cap_reason r)
{
	switch (r) {
	case HTTP_CAP_GO: return "go";
	case HTTP_CAP_HINTED: return "hinted";
	case HTTP_CAP_QUOTA: return "quota";
	case HTTP_CAP_BACKOFF: return "backoff";
	case HTTP_CAP_PACE: return "pace";
	case HTTP_CAP_TOKENS: return "tokens";
	case HTTP_CAP_WINDOW: return "window";
	case HTTP_CAP_REASON_LAST: break;
	}
	return "unknown";
}

void http_cap_init(http_cap *c, const http_cap_cfg *cfg, uint64_t now)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (!c->cfg.max_inflight)
		c->cfg.max_inflight = 1;
	c->rate = cfg->max_rps > 0 ? cfg->max_rps : INFINITY;
	c->window = c->good_window = c->cfg.max_inflight;
	c->hint_scale = 1;
	c->probe_gain = PROBE_GAIN;
	c->grown_at = c->good_since = now;
}

/* ------------------------------------------------------------------ logs */

static void log_send(http_cap *c, uint64_t now, double tokens)
{
	unsigned i = (c->sends_head + c->sends_n) % HTTP_CAP_LOG;

	c->sends[i] = (http_cap_send){ now, tokens };
	if (c->sends_n < HTTP_CAP_LOG)
		c->sends_n++;
	else
		c->sends_head = (c->sends_head + 1) % HTTP_CAP_LOG;
}

static void log_ok(http_cap *c, uint64_t sent)
{
	unsigned i = (c->oks_head + c->oks_n) % HTTP_CAP_LOG;

	c->oks[i] = sent;
	if (c->oks_n < HTTP_CAP_LOG)
		c->oks_n++;
	else
		c->oks_head = (c->oks_head + 1) % HTTP_CAP_LOG;
}

/* Requests (and their tokens) sent after t (the ring is in send order). */
static unsigned sent_after(const http_cap *c, uint64_t t, double *tokens)
{
	unsigned n = 0;

	*tokens = 0;
	for (unsigned i = c->sends_n; i-- > 0;) {
		const http_cap_send *s = &c->sends[(c->sends_head + i) % HTTP_CAP_LOG];

		if (s->t <= t)
			break;
		n++;
		*tokens += s->tokens;
	}
	return n;
}

/* Successes sent in [from, to] (the ring is in completion order). */
static unsigned oks_between(const http_cap *c, uint64_t from, uint64_t to)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->oks_n; i++) {
		uint64_t t = c->oks[(c->oks_head + i) % HTTP_CAP_LOG];

		n += t >= from && t <= to;
	}
	return n;
}

static uint64_t ago(uint64_t now, double s)
{
	uint64_t d = (uint64_t)(s * SEC);

	return now > d ? now - d : 0;
}

/* ---------------------------------------------------------------- quotas */

/* What an announced budget allows: 0 and *rate (per second, INFINITY:
 * no bound), or the time it refills when it is spent. */
static uint64_t quota(const http_cap *c, const http_cap_quota *q, uint64_t now, double cost,
		      bool tokens, double *rate)
{
	double spent_tok, rem;
	unsigned spent;

	*rate = INFINITY;
	if (!q->reset_at || q->reset_at <= now)
		return 0;
	spent = sent_after(c, q->as_of, &spent_tok);
	rem = q->remaining - (tokens ? spent_tok : spent);
	if (rem < (cost > 0 ? cost : 1))
		return q->reset_at;
	*rate = rem / ((double)(q->reset_at - now) / SEC);
	return 0;
}

/* --------------------------------------------------------------- acquire */

static uint64_t hold(http_cap_reason *why, http_cap_reason r, uint64_t t)
{
	if (why)
		*why = r;
	return t;
}

static unsigned window_slots(const http_cap *c)
{
	unsigned w = (unsigned)c->window;

	return w < 1 ? 1 : w > c->cfg.max_inflight ? c->cfg.max_inflight : w;
}

/* The next slot of a pacing grid after a send at now: a send late by
 * less than one interval keeps the grid (at most two back to back). */
static uint64_t advance(uint64_t next, uint64_t now, double interval_s)
{
	uint64_t iv = (uint64_t)(interval_s * SEC);

	return (now > next + iv ? now : next) + iv;
}

uint64_t http_cap_acquire(http_cap *c, uint64_t now, double tokens, unsigned *k,
			  http_cap_reason *why)
{
	double rate = c->rate, qrate, trate = c->cfg.max_tps > 0 ? c->cfg.max_tps : INFINITY;
	uint64_t t;

	if (now < c->pause_until)
		return hold(why, c->pause_why, c->pause_until);
	if ((t = quota(c, &c->req_quota, now, 1, false, &qrate)))
		return hold(why, HTTP_CAP_QUOTA, t);
	rate = fmin(rate, qrate);
	if ((t = quota(c, &c->tok_quota, now, tokens, true, &qrate)))
		return hold(why, HTTP_CAP_QUOTA, t);
	trate = fmin(trate, qrate);
	if (c->cfg.max_rps > 0)
		rate = fmin(rate, c->cfg.max_rps);
	if (c->inflight >= window_slots(c)) {
		c->window_bound = true;
		return hold(why, HTTP_CAP_WINDOW, HTTP_CAP_WAIT_DONE);
	}
	if (isfinite(rate) && now < c->next_send) {
		c->pace_bound = true;
		c->paced_at = now;
		return hold(why, HTTP_CAP_PACE, c->next_send);
	}
	if (isfinite(trate) && tokens > 0 && now < c->next_tok)
		return hold(why, HTTP_CAP_TOKENS, c->next_tok);
	if (isfinite(rate))
		c->next_send = advance(c->next_send, now, 1 / rate);
	if (isfinite(trate) && tokens > 0)
		c->next_tok = advance(c->next_tok, now, tokens / trate);
	if (c->hint_end && !c->hint_test && now >= c->hint_end)
		c->hint_test = now; /* the first send after a hinted pause */
	*k = ++c->inflight;
	if (c->inflight >= window_slots(c))
		c->window_bound = true;
	log_send(c, now, tokens);
	return hold(why, HTTP_CAP_GO, 0);
}

/* ----------------------------------------------------------------- hints */

static void read_quota(http_cap_quota *q, uint64_t sent, double remaining, double reset_s)
{
	if (remaining < 0 || reset_s < 0 || sent < q->as_of)
		return;
	q->remaining = remaining;
	q->as_of = sent;
	q->reset_at = sent + (uint64_t)(reset_s * SEC);
}

static void pause_for(http_cap *c, uint64_t until, http_cap_reason why)
{
	if (until > c->pause_until) {
		c->pause_until = until;
		c->pause_why = why;
	}
}

/* A hint is tested by the first request sent after the pause it asked
 * for: refused, the hints of this upstream are too short, and later ones
 * are stretched; admitted, the stretch decays back toward 1. */
static void test_hint(http_cap *c, uint64_t sent, http_cap_outcome o)
{
	if (!c->hint_test || sent != c->hint_test)
		return;
	if (o == HTTP_CAP_REFUSED)
		c->hint_scale = fmin(c->hint_scale * 1.5, HINT_SCALE_MAX);
	else
		c->hint_scale = fmax(c->hint_scale * 0.9, 1);
	c->hint_end = c->hint_test = 0;
}

static void on_hints(http_cap *c, uint64_t sent, uint64_t now, http_cap_outcome o,
		     const http_hints *h)
{
	read_quota(&c->req_quota, sent, h->remaining_requests, h->reset_requests_s);
	read_quota(&c->tok_quota, sent, h->remaining_tokens, h->reset_tokens_s);
	test_hint(c, sent, o);
	if (o == HTTP_CAP_REFUSED && h->retry_after_s >= 0) {
		pause_for(c, now + (uint64_t)(h->retry_after_s * c->hint_scale * SEC),
			  HTTP_CAP_HINTED);
		c->hint_end = c->pause_until;
		c->hint_test = 0;
	}
}

/* ------------------------------------------------------------------ pace */

/* When to try the remembered peak again: soon when it is far above the
 * rate that works now (much to win), rarely when close. */
static void schedule_jump(http_cap *c, uint64_t now)
{
	double gap = c->good > 0 ? c->peak / c->good - 1 : 0, iv;

	iv = gap > 0 ? JUMP_EVERY_S / gap : JUMP_MAX_S;
	iv = fmax(JUMP_MIN_S, fmin(iv, JUMP_MAX_S));
	c->jump_at = now + (uint64_t)(iv * SEC);
}

static void grow_rate(http_cap *c, uint64_t now)
{
	double dt = (double)(now - c->grown_at) / SEC;

	c->grown_at = now;
	if (!isfinite(c->rate) || !c->pace_bound)
		return; /* the pace is not what limits: no evidence for more */
	c->pace_bound = false;
	if (c->rate < c->good) { /* back to what worked, quickly */
		c->rate = c->good - (c->good - c->rate) * exp(-dt / RECOVER_S);
		return;
	}
	if (c->peak > c->good * JUMP_GAP && now >= c->jump_at) {
		/* a step toward the peak; a refusal takes it back */
		c->rate = c->trial = fmin(c->peak, c->good * JUMP_STEP);
		c->probe_gain = PROBE_GAIN;
		c->good_since = now;
		c->jump_at = now + (uint64_t)(CONFIRM_S * SEC);
		return;
	}
	c->rate *= 1 + fmin(c->probe_gain * dt, 1);
	c->probe_gain *= exp2(fmin(dt, 1) / PROBE_DOUBLING_S);
	c->probe_gain = fmin(c->probe_gain, PROBE_GAIN_MAX);
}

/* A rate held CONFIRM_S without a refusal worked. */
static void confirm(http_cap *c, uint64_t now)
{
	if ((double)(now - c->good_since) < CONFIRM_S * SEC)
		return;
	if (isfinite(c->rate) && c->trial > c->good)
		c->good = c->trial;
	c->trial = c->rate;
	c->good_since = now;
}

static void backoff(http_cap *c, uint64_t now, bool hinted)
{
	double s = (isfinite(c->rate) ? 1 / c->rate : BACKOFF_UNPACED_S) * exp2(c->streak);

	if (!hinted)
		pause_for(c, now + (uint64_t)(fmin(s, BACKOFF_MAX_S) * SEC), HTTP_CAP_BACKOFF);
}

/* A refusal at the pace. The last second bounds the limit (for the common
 * one-second windows): the upstream refused with `seen` requests sent in
 * it, and admitted `lower` per second before the last success. */
static void cut_rate(http_cap *c, uint64_t now)
{
	double dummy, seen = sent_after(c, ago(now, MEASURE_S), &dummy) / MEASURE_S;

	if (!isfinite(c->rate)) /* not paced yet */
		c->rate = c->good = seen;
	if (c->rate > c->good * 1.001) {
		/* a step above what worked failed: back to what worked */
		c->rate = fmin(fmax(c->good, c->lower * CUT_MARGIN), seen * CUT_MARGIN);
	} else {
		/* refused at a rate that had worked: the limit fell */
		c->peak = fmax(c->peak, c->good);
		c->rate = fmin(c->rate * BETA, seen * CUT_MARGIN);
		c->cuts++;
	}
	c->rate = fmax(c->rate, MIN_RATE);
	c->good = c->trial = c->rate;
	c->good_since = c->grown_at = now;
	c->probe_gain = PROBE_GAIN;
	schedule_jump(c, now);
}

/* ----------------------------------------------------------- concurrency */

static void grow_window(http_cap *c, uint64_t now)
{
	if (!c->window_bound || (double)(now - c->wcut_at) < WINDOW_HOLD_S * SEC)
		return;
	c->window_bound = false;
	c->window = fmin(c->window + 1 / c->window, c->cfg.max_inflight);
}

static void cut_window(http_cap *c, double w, uint64_t now)
{
	c->window = c->good_window = fmax(floor(w), 1);
	c->wcut_at = now;
	c->window_cuts++;
}

/* ------------------------------------------------------------------ done */

static void on_success(http_cap *c, uint64_t sent, unsigned k, uint64_t now)
{
	double rtt = (double)(now - sent) / SEC;

	c->streak = 0;
	c->ever_ok = true;
	log_ok(c, sent);
	c->lower = oks_between(c, ago(sent, MEASURE_S), sent) / MEASURE_S;
	c->srtt_s = c->srtt_s > 0 ? c->srtt_s + (rtt - c->srtt_s) / 8 : rtt;
	if (c->base_s <= 0 || rtt < c->base_s)
		c->base_s = rtt;
	if (sent >= c->react_at && k > c->ok_kmax)
		c->ok_kmax = k;
	confirm(c, now);
	grow_rate(c, now);
	grow_window(c, now);
}

/* A refusal at k above every success sent since the last reaction is a
 * vote for a concurrency cap; one at or below, for a rate limit (which
 * refuses whatever the concurrency). The tally, bounded, decides: a single
 * refusal of a burst above its usual concurrency does not make a rate
 * limit look like a cap. */
static bool vote_concurrency(http_cap *c, unsigned k)
{
	int v = k > 1 && (!c->ever_ok || k > c->ok_kmax) ? 1 : -1;

	c->conc_score += v;
	if (c->conc_score > SCORE_MAX)
		c->conc_score = SCORE_MAX;
	if (c->conc_score < -SCORE_MAX)
		c->conc_score = -SCORE_MAX;
	return c->conc_score > 0;
}

/*
 * What a refusal teaches, if it was sent after the last reaction:
 *  - no success sent since the last reaction (but some before): the
 *    upstream is still full; pause longer (exponentially), cut nothing;
 *  - a cap (by the tally): the window goes to k - 1 if k was above every
 *    success since the last reaction, else (the cap fell) by BETA;
 *  - else the pace is too high: cut it, pause.
 */
static void on_refusal(http_cap *c, uint64_t sent, unsigned k, uint64_t now, bool hinted)
{
	c->refusals++;
	if (sent < c->react_at)
		return; /* sent before the last reaction: nothing new */
	if (c->ever_ok && !c->ok_kmax) {
		c->streak++;
		backoff(c, now, hinted);
	} else if (vote_concurrency(c, k)) {
		cut_window(c, !c->ever_ok || k > c->ok_kmax ? k - 1 : c->window * BETA, now);
	} else {
		cut_rate(c, now);
		c->streak++;
		backoff(c, now, hinted);
	}
	c->react_at = now;
	c->ok_kmax = 0;
}

void http_cap_done(http_cap *c, uint64_t sent, unsigned k, uint64_t now,
		   http_cap_outcome o, const http_hints *h, double tokens)
{
	(void)tokens;
	if (c->inflight)
		c->inflight--;
	if (h)
		on_hints(c, sent, now, o, h);
	if (o == HTTP_CAP_OK)
		on_success(c, sent, k, now);
	else if (o == HTTP_CAP_REFUSED)
		on_refusal(c, sent, k, now, h && h->retry_after_s >= 0);
}

/* ---------------------------------------------------------------- state */

void http_cap_save(const http_cap *c, http_cap_state *out)
{
	*out = (http_cap_state){ .rate = c->rate, .good_rate = c->good, .peak_rate = c->peak,
		.window = c->window, .good_window = c->good_window, .srtt_s = c->srtt_s,
		.min_rtt_s = c->base_s, .hint_scale = c->hint_scale };
}

void http_cap_restore(http_cap *c, const http_cap_state *s, uint64_t now)
{
	http_cap_cfg cfg = c->cfg;

	http_cap_init(c, &cfg, now);
	if (s->rate > 0)
		c->rate = s->rate;
	c->good = s->good_rate > 0 ? s->good_rate : 0;
	c->peak = s->peak_rate > 0 ? s->peak_rate : 0;
	if (s->window >= 1 && s->window <= cfg.max_inflight)
		c->window = s->window;
	if (s->good_window >= 1 && s->good_window <= cfg.max_inflight)
		c->good_window = s->good_window;
	c->srtt_s = s->srtt_s;
	c->base_s = s->min_rtt_s;
	if (s->hint_scale >= 1)
		c->hint_scale = s->hint_scale;
}

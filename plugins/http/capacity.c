/*
 * capacity.c — the capacity controller (http_internal.h; the algorithm
 * and why: docs/adr/0016-capacity-control.md).
 *
 * Three limits, the tightest wins: a pause (a hint, or a backoff after a
 * refusal without one), the pace (requests and tokens per second: learnt,
 * configured, or from an announced quota) and the window (requests in
 * flight). Pure logic: times come in, no clock is read.
 *
 * The pace cruises at `base`, the last rate that worked, and never sends
 * more in any second than it allows in one. Now and then it probes above
 * it for PROBE_S; a probe that draws no refusal becomes the new base (and
 * the next goes twice as far), one that does is taken back (and the next
 * goes half as far). Refusals while cruising nudge the base down, then
 * cut it (a drop); after a drop, jumps try the rate that worked before
 * it, often when that is far above, less often as time passes. Refusals
 * while the upstream is still full (nothing admitted since the last
 * reaction) only lengthen the pause. The window starts at max_inflight;
 * refusals that look like a concurrency cap set it to k - 1, rising
 * latency at a full window shrinks it. Until the first answer, at most
 * START_WINDOW go: providers announce their budgets in every answer's
 * headers, and a first burst of the whole ceiling into a small limit is
 * refused (and counted) before anything is known. The first answer opens
 * the window to the slots it announces, or leaves an announced budget to
 * the pace; where nothing is announced, a slow start grows it by one an
 * answer until the first refusal. Those first answers teach the headers
 * and the latency only: the first refusal is judged as if it had been
 * the first.
 *
 * After a drop the pace remembers two levels: the peak (what the
 * upstream carried before it fell) and the trough (the base that held
 * before a jump back passed). The next drop lands on the trough at once;
 * far under the peak, jumps alone look for the rise, about once a
 * second, each starting with a one-request probe sent when the base's
 * own second is full (refused, it costs that request and leaves the
 * peak alone; admitted, the jump goes on at the peak). A refusal well
 * under what the base allows while sends were admitted is a fall, not
 * a full window; a drop lands no lower than what the refused send found
 * upstream in the second before it.
 */
#include <math.h>
#include <string.h>

#include "plugins/http/http_internal.h"

#define SEC 1e9

/* pace */
#define BETA 0.7             /* a drop: base * BETA at most, */
#define BETA_FLOOR 0.3       /* base * BETA_FLOOR at least */
#define NUDGE 0.95           /* a first refusal while cruising: base * NUDGE; */
#define NUDGE_S 3.0          /* another one within this is a drop */
#define CUT_MARGIN 0.95      /* a cut stays this far under what was admitted */
#define MEASURE_S 1.0        /* horizon of the rates seen */
#define PROBE_S 1.0          /* a probe lasts this long, */
#define SETTLE_S 1.0         /* and its refusals may come this much later */
#define GAIN0 0.05           /* the first probe: +5 %, */
#define GAIN_MAX 0.5         /* doubling after each success, up to +50 %, */
#define GAIN_MIN 0.02        /* halving after each failure, down to +2 % */
#define PROBE_EVERY_S 2.0    /* cruise between probes, */
#define PROBE_EVERY_MAX_S 30.0 /* x1.5 after each failed probe, up to */
#define JUMP_GAP 1.3         /* a peak this far above base is worth trying */
#define JUMP_STEP 8.0        /* at most this many times base at once */
#define JUMP_EVERY_S 3.0     /* interval: this / (peak / base - 1) */
#define JUMP_MIN_S 1.0       /* within these bounds */
#define JUMP_MAX_S 30.0
#define JUMP_PATIENCE_S 20.0 /* then longer, with the square of the time */
#define JUMP_FAR 2.0         /* a peak this many times base: jumps only */
#define JUMP_PAUSE 1.0       /* intervals after a jump refused at once */
#define JUMP_DECAY 0.95      /* a failed jump lowers the peak this much */
#define HELD_S 2.0           /* a base held this long becomes the peak */
#define MIN_RATE 0.01        /* one request per 100 s */
#define BACKOFF_MAX_S 10.0   /* the longest pause without a hint */
#define BACKOFF_UNPACED_S 0.05 /* the first pause when not paced */
/* window */
#define START_WINDOW 8       /* in flight until the first answer */
#define WINDOW_HOLD_S 2.0    /* after a cut, before growing again */
#define SCORE_MAX 3          /* votes remembered for cap against rate */
#define LAT_ALPHA (1.0 / 64) /* the slow round trip's smoothing */
#define LAT_WARMUP 128       /* answers before the latency is trusted */
#define LAT_HIGH 2.0         /* srtt this many times its low: queueing */
#define LAT_CLIP 3.0         /* one answer moves the slow round trip at
			      * most as one this many times it would */
#define LAT_GROW 1.5         /* the window grows only below this */
#define LAT_BETA 0.9         /* the window on queueing */
#define LAT_FORGET_S 60.0    /* the low forgets at e per this */
/* hints */
#define HINT_SCALE_MAX 4.0
#define RESET_MARGIN_S 0.05  /* after an announced reset, before trusting it */
#define QUOTA_MARGIN 0.98    /* an announced budget is paced this far under */
#define TOK_RATIO_MIN 0.25   /* token estimates are scaled by what they */
#define TOK_RATIO_MAX 4.0    /* turned out to be, within these bounds */

const char *http__cap_reason_name(http_cap_reason r)
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

void http__cap_init(http_cap *c, const http_cap_cfg *cfg, uint64_t now)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	if (!c->cfg.max_inflight)
		c->cfg.max_inflight = 1;
	if (!c->cfg.start_window)
		c->cfg.start_window = START_WINDOW;
	c->rate = cfg->max_rps > 0 ? cfg->max_rps : INFINITY;
	c->base = cfg->max_rps > 0 ? cfg->max_rps : 0;
	c->window = c->good_window = c->cfg.max_inflight;
	c->hint_scale = 1;
	c->gain = GAIN0;
	c->probe_every = PROBE_EVERY_S;
	c->next_probe = c->next_jump = now;
	c->tok_ratio = 1;
}

/* ------------------------------------------------------------------ logs */

static void log_send(http_cap *c, uint64_t now, double tokens)
{
	unsigned i = (c->sends_head + c->sends_n) % HTTP_CAP_LOG;

	c->sends[i] = (http_cap_send){ .t = now, .tokens = tokens };
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

/* Requests sent in (now - span, now] (the ring is in send order). */
static unsigned sent_within(const http_cap *c, uint64_t now, double span)
{
	uint64_t d = (uint64_t)(span * SEC);
	unsigned n = 0;

	for (unsigned i = c->sends_n; i-- > 0;) {
		if (c->sends[(c->sends_head + i) % HTTP_CAP_LOG].t + d <= now)
			break;
		n++;
	}
	return n;
}

/* Requests sent in the MEASURE_S before `sent` (refused ones too): what
 * a one-second window upstream held when that send came. Refused, the
 * limit is at most that; admitted, above it. */
static unsigned sent_before(const http_cap *c, uint64_t sent)
{
	uint64_t d = (uint64_t)(MEASURE_S * SEC);
	unsigned n = 0;

	for (unsigned i = c->sends_n; i-- > 0;) {
		uint64_t t = c->sends[(c->sends_head + i) % HTTP_CAP_LOG].t;

		if (t + d <= sent)
			break;
		n += t < sent;
	}
	return n;
}

/* Whether a refusal of the send at `sent` can be the upstream's window
 * still full of what was sent before, its limit unchanged: what was sent
 * in the second before reaches what the base allows (less two for the
 * edges of a second), or nothing of that second was admitted (a longer
 * window, spent earlier: ADR 0016, rpm300). Refused well under the base
 * while sends were admitted, the limit fell. */
static bool full_at(const http_cap *c, uint64_t sent)
{
	return sent_before(c, sent) + 2 >= floor(c->base * MEASURE_S + 0.5) ||
	       !oks_between(c, ago(sent, MEASURE_S), sent);
}

/* Requests sent per second over the last MEASURE_S (refused ones too). */
static double seen_rate(const http_cap *c, uint64_t now)
{
	return sent_within(c, now, MEASURE_S) / MEASURE_S;
}

/* Requests sent in [from, to] still waiting for their answer. */
static unsigned unanswered_between(const http_cap *c, uint64_t from, uint64_t to)
{
	unsigned n = 0;

	for (unsigned i = c->sends_n; i-- > 0;) {
		const http_cap_send *s = &c->sends[(c->sends_head + i) % HTTP_CAP_LOG];

		if (s->t < from)
			break;
		n += s->t <= to && !s->answered;
	}
	return n;
}

/* Requests admitted per second over MEASURE_S, ending a round trip ago
 * (the answers to later ones have not all come back). Those of that time
 * still unanswered count as admitted: a refusal comes back at once, a
 * success after the service time (the first burst's successes may be on
 * their way when its refusals arrive). */
static double admitted_rate(const http_cap *c, uint64_t now)
{
	uint64_t to = ago(now, c->srtt_s), from = ago(to, MEASURE_S);

	return (oks_between(c, from, to) + unanswered_between(c, from, to)) / MEASURE_S;
}

/* ---------------------------------------------------------------- quotas */

/* What an announced budget allows: 0 and *rate (per second, INFINITY:
 * no bound), or the time it refills when it is spent. The pace spends
 * over the time to the reset what is left or what comes back by then,
 * whichever is more: a fixed window gives back everything at its reset
 * (what is left must last until then), a rolling window or a bucket gives
 * back continuously (limit - remaining by the reset, the time until it is
 * full again); either way no send goes once the budget is spent. Never
 * faster than the budget's own rate (limit over the longest reset seen,
 * its period), after the reset too until an answer says more (a window
 * that opens is no licence to burst), and QUOTA_MARGIN under: a provider
 * may enforce a per-minute budget per second too (OpenAI says it may),
 * where a burst, catching up on a minute's leftovers, or a pace on the
 * edge that the network's jitter pushes over is refused. */
static uint64_t quota(const http_cap *c, const http_cap_quota *q, uint64_t now, double cost,
		      bool tokens, double *rate)
{
	double spent_tok, rem;
	unsigned spent;

	*rate = INFINITY;
	if (!q->reset_at)
		return 0;
	if (q->reset_at <= now) { /* refilled: at its own rate until told more */
		if (q->window_s > 0 && q->limit >= 1)
			*rate = q->limit / q->window_s * QUOTA_MARGIN;
		return 0;
	}
	spent = sent_after(c, q->as_of, &spent_tok);
	rem = q->remaining - (tokens ? spent_tok : spent);
	if (rem < (cost > 0 ? cost : 1))
		return q->reset_at;
	*rate = fmax(rem, q->limit - q->remaining) / ((double)(q->reset_at - now) / SEC);
	if (q->window_s > 0)
		*rate = fmin(*rate, q->limit / q->window_s);
	*rate *= QUOTA_MARGIN;
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

	if (!c->opened_at && w > c->cfg.start_window)
		w = c->cfg.start_window;
	else if (c->ramp > 0 && w > c->ramp)
		w = (unsigned)c->ramp;
	return w < 1 ? 1 : w > c->cfg.max_inflight ? c->cfg.max_inflight : w;
}

/* The next slot of a pacing grid after a send at now: a send late by
 * less than one interval keeps the grid (at most two back to back). */
static uint64_t advance(uint64_t next, uint64_t now, double interval_s)
{
	uint64_t iv = (uint64_t)(interval_s * SEC);

	return (now > next + iv ? now : next) + iv;
}

/* The pace also holds the sends of any MEASURE_S to what it allows in
 * MEASURE_S, as a one-second window upstream counts them: after a probe
 * or a jump sent more, the excess must leave that window before more go
 * (refused sends count, as they do upstream). 0: a send may go; else
 * when the oldest send that must leave does. */
static uint64_t window_free_at(const http_cap *c, uint64_t now, double rate)
{
	double allowed = floor(rate * MEASURE_S + 0.5);
	unsigned n, i;

	if (allowed < 1)
		allowed = 1;
	if (allowed > HTTP_CAP_LOG / 2)
		return 0; /* the log is too short to tell: the pace alone */
	n = sent_within(c, now, MEASURE_S);
	if (n < allowed)
		return 0;
	/* the (n - allowed + 1)th oldest send of the window must leave it */
	i = (c->sends_head + c->sends_n - n + (n - (unsigned)allowed)) % HTTP_CAP_LOG;
	return c->sends[i].t + (uint64_t)(MEASURE_S * SEC) + 1;
}

/* When the pace lets the next send go: 0 now, else the time (the grid,
 * and the sends of the last MEASURE_S). */
static uint64_t pace_free_at(const http_cap *c, uint64_t now, double rate)
{
	uint64_t t = window_free_at(c, now, rate);

	if (now < c->next_send && c->next_send > t)
		t = c->next_send;
	return t;
}

static void start_probe(http_cap *c, uint64_t now, double rate, bool jump);

/* Far under the peak, a probe of a few per cent above the base is no
 * use: what is to be won is the rise back to the peak, which only a jump
 * finds. Jumps alone, then, and on time (ADR 0016, the flaky schedule). */
static bool jump_first(const http_cap *c)
{
	return !c->probing && isfinite(c->rate) && c->base > 0 &&
	       c->peak >= c->base * JUMP_FAR;
}

/* A jump starts with one request over the base, its probe: the rest
 * of the jump waits for that one's answer (at the base). Refused, it is
 * the only request the low phase paid for the test; admitted, the jump
 * goes on at its rate for PROBE_S from then. */
static void start_jump(http_cap *c, uint64_t now)
{
	c->jump_rate = fmin(c->peak, c->base * JUMP_STEP);
	start_probe(c, now, c->jump_rate, true);
	c->jump_pending = true;
	c->jump_sent = 0;
	c->next_send = now; /* the probe goes now, not on the base's grid */
}

/* The jump's probe was admitted: the jump proper. */
static void jump_on(http_cap *c, uint64_t now)
{
	c->jump_pending = false;
	c->jump_sent = 0;
	c->rate = c->jump_rate;
	c->probe_start = now;
	c->probe_end = now + (uint64_t)(PROBE_S * SEC);
}

/* A send goes: counted in flight and logged. */
static void admit(http_cap *c, uint64_t now, double tokens, unsigned *k)
{
	*k = ++c->inflight;
	c->sent_since_react++;
	if (c->hint_end && !c->hint_test && now >= c->hint_end) {
		c->hint_test = now; /* the first send after a hinted pause */
		c->hint_test_k = *k;
	}
	if (c->inflight >= window_slots(c))
		c->window_bound = true;
	if (c->jump_pending && !c->jump_sent) {
		c->jump_sent = now; /* the jump's probe: the base until it is answered */
		c->rate = c->base;
	}
	log_send(c, now, tokens);
}

uint64_t http__cap_acquire(http_cap *c, uint64_t now, double tokens, unsigned *k,
			   http_cap_reason *why)
{
	double rate, rate_cap, qrate, trate = c->cfg.max_tps > 0 ? c->cfg.max_tps : INFINITY;
	uint64_t t;

	tokens *= c->tok_ratio; /* what estimates have turned out to be */
	if (now < c->pause_until)
		return hold(why, c->pause_why, c->pause_until);
	if ((t = quota(c, &c->req_quota, now, 1, false, &rate_cap)))
		return hold(why, HTTP_CAP_QUOTA, t);
	if ((t = quota(c, &c->tok_quota, now, tokens, true, &qrate)))
		return hold(why, HTTP_CAP_QUOTA, t);
	trate = fmin(trate, qrate);
	if (c->cfg.max_rps > 0)
		rate_cap = fmin(rate_cap, c->cfg.max_rps);
	rate = fmin(c->rate, rate_cap);
	if (c->inflight >= window_slots(c)) {
		c->window_bound = true;
		return hold(why, HTTP_CAP_WINDOW, HTTP_CAP_WAIT_DONE);
	}
	/* one probe at a time, plus a send for each slot the burst's answers
	 * freed and one for each probe that ended in neither a success nor a
	 * refusal (a 5xx, a network error); with nothing in flight the next
	 * one goes, or nothing would ever free room */
	if (c->first_probe && c->sent_since_react > c->probe_credit && c->inflight)
		return hold(why, HTTP_CAP_BACKOFF, HTTP_CAP_WAIT_DONE);
	if (isfinite(rate) && (t = pace_free_at(c, now, rate))) {
		/* held by the pace far under the peak: the jump, when due,
		 * is this send (the one-request probe of a rise), and it is
		 * asked for at its time, not at the next answer's */
		if (jump_first(c) && now < c->next_jump) {
			t = c->next_jump < t ? c->next_jump : t;
		} else if (jump_first(c) && window_free_at(c, now, c->base)) {
			start_jump(c, now);
			rate = fmin(c->rate, rate_cap);
			t = pace_free_at(c, now, rate);
		}
		if (t) {
			c->pace_bound = true;
			return hold(why, HTTP_CAP_PACE, t);
		}
	}
	if (isfinite(trate) && tokens > 0 && now < c->next_tok)
		return hold(why, HTTP_CAP_TOKENS, c->next_tok);
	if (isfinite(rate))
		c->next_send = advance(c->next_send, now, 1 / rate);
	if (isfinite(trate) && tokens > 0)
		c->next_tok = advance(c->next_tok, now, tokens / trate);
	admit(c, now, tokens, k);
	return hold(why, HTTP_CAP_GO, 0);
}

void http__cap_force(http_cap *c, uint64_t now, double tokens, unsigned *k)
{
	admit(c, now, tokens * c->tok_ratio, k);
}

/* ----------------------------------------------------------------- hints */

static void read_quota(http_cap_quota *q, uint64_t sent, double limit, double remaining,
		       double reset_s)
{
	if (remaining < 0 || reset_s < 0 || sent < q->as_of)
		return;
	q->limit = limit > remaining ? limit : remaining;
	q->remaining = remaining;
	q->as_of = sent;
	q->window_s = fmax(q->window_s, reset_s);
	/* counted when the request arrived, shortly after it was sent; a
	 * margin for that and for the resolution of the header */
	q->reset_at = sent + (uint64_t)((reset_s + RESET_MARGIN_S) * SEC);
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
static void test_hint(http_cap *c, uint64_t sent, unsigned k, http_cap_outcome o)
{
	if (!c->hint_test || sent != c->hint_test || k != c->hint_test_k)
		return;
	if (o == HTTP_CAP_REFUSED)
		c->hint_scale = fmin(c->hint_scale * 1.5, HINT_SCALE_MAX);
	else
		c->hint_scale = fmax(c->hint_scale * 0.9, 1);
	c->hint_end = c->hint_test = 0;
}

static void on_hints(http_cap *c, uint64_t sent, unsigned k, uint64_t now,
		     http_cap_outcome o, const http_hints *h)
{
	read_quota(&c->req_quota, sent, h->limit_requests, h->remaining_requests,
		   h->reset_requests_s);
	read_quota(&c->tok_quota, sent, h->limit_tokens, h->remaining_tokens,
		   h->reset_tokens_s);
	test_hint(c, sent, k, o);
	if (o == HTTP_CAP_REFUSED && h->retry_after_s >= 0) {
		pause_for(c, now + (uint64_t)(h->retry_after_s * c->hint_scale * SEC),
			  HTTP_CAP_HINTED);
		c->hint_end = c->pause_until;
		c->hint_test = 0;
	}
}

/* ------------------------------------------------------------------ pace */

/* The base changes: the peak remembers it only once it has worked for
 * HELD_S (a rate that was never held proves nothing). */
static bool held(const http_cap *c, uint64_t now)
{
	return c->base_since && (double)(now - c->base_since) >= HELD_S * SEC;
}

static void set_base(http_cap *c, double base, uint64_t now)
{
	if (held(c, now))
		c->peak = fmax(c->peak, c->base);
	c->rate = c->base = fmax(base, MIN_RATE);
	c->base_since = now;
}

/* When to try the peak again: soon when it is far above the base (much
 * to win), rarely when close; and, JUMP_PATIENCE_S after the drop, less
 * and less often (the drop may be for good). */
static void schedule_jump(http_cap *c, uint64_t now)
{
	double gap = c->base > 0 ? c->peak / c->base - 1 : 0, iv = JUMP_MAX_S;
	double since = c->drop_at ? (double)(now - c->drop_at) / SEC / JUMP_PATIENCE_S : 0;

	if (gap > JUMP_GAP - 1)
		iv = JUMP_EVERY_S / gap * fmax(1, since * since);
	iv = fmax(JUMP_MIN_S, fmin(iv, JUMP_MAX_S));
	c->next_jump = now + (uint64_t)(iv * SEC);
}

static void start_probe(http_cap *c, uint64_t now, double rate, bool jump)
{
	c->jumped_last = jump;
	c->rate = rate;
	c->probing = true;
	c->jumping = jump;
	c->probe_start = now;
	c->probe_end = now + (uint64_t)(PROBE_S * SEC);
}

/* A probe held PROBE_S without a refusal: its rate works, as far as it
 * was really sent (another limit may have held the sends lower). The
 * next probe goes twice as far: from below, the limit is found in a few
 * probes, as TCP's slow start finds a window. */
static void probe_passed(http_cap *c, uint64_t now)
{
	double tokens, sent = sent_after(c, c->probe_start, &tokens) /
			      ((double)(now - c->probe_start) / SEC);

	/* a jump leaves a base that had held: the level of the trough,
	 * where the next drop of this upstream probably lands */
	if (c->jumping && held(c, now))
		c->low = c->base;
	c->prev_base = c->base;
	c->promoted_at = now;
	set_base(c, fmax(c->base, fmin(c->rate, sent * (1 + GAIN0))), now);
	c->probing = false;
	if (c->jumping) { /* toward the peak: on until there, then gently */
		c->jumping = false;
		c->next_jump = now;
		c->gain = fmax(c->gain, GAIN0); /* the peak may be below the limit */
		if (c->rate >= c->peak) {
			/* back where the limit was before it fell: above it,
			 * probes are as likely to fail as they were then */
			c->next_probe = now + (uint64_t)(c->probe_every * SEC);
			return;
		}
	} else
		c->gain = fmin(c->gain * 2, GAIN_MAX);
	c->probe_every = PROBE_EVERY_S;
	c->next_probe = now; /* it worked: go on while it does */
}

/* A success of the second that set the pace at the first refusal: that
 * pace counted its sends still unanswered as admitted, but a burst's
 * refusals come back at once and its successes only after the service
 * time, and the second that could be measured then may have held the
 * start window alone. The successes of the burst itself, as they come,
 * are a floor for the pace (as long as nothing else has set it). */
static void first_pace_ok(http_cap *c, uint64_t sent)
{
	uint64_t to = c->first_paced;
	double r;

	if (!to || sent > to || c->base_since != to)
		return;
	r = oks_between(c, ago(to, MEASURE_S), to) / MEASURE_S * CUT_MARGIN;
	if (r > c->base) {
		c->base = r;
		c->rate = fmax(c->rate, r);
	}
}

/* On a success: move the pace along, if the pace is what holds sends. */
static void pace_step(http_cap *c, uint64_t now)
{
	bool jump_due;

	if (!isfinite(c->rate))
		return;
	if (c->probing) {
		if (!c->jump_pending && now >= c->probe_end)
			probe_passed(c, now);
		return;
	}
	if (!c->pace_bound)
		return; /* something else holds the sends: no evidence for more */
	c->pace_bound = false;
	jump_due = c->peak > c->base && now >= c->next_jump;

	/* jumps and probes take turns when both are due (far under the
	 * peak, jumps only, started by acquire when due and the base's
	 * window is full: its probe is then one request over the base) */
	if (jump_first(c))
		return;
	if (now >= c->next_probe && (c->jumped_last || !jump_due))
		start_probe(c, now, c->base * (1 + c->gain), false);
	else if (jump_due)
		start_jump(c, now);
}

/* Backoff pauses: `n` intervals of the pace (or of BACKOFF_UNPACED_S). */
static void pause_intervals(http_cap *c, uint64_t now, double n, bool hinted)
{
	double s = n * (isfinite(c->rate) ? 1 / c->rate : BACKOFF_UNPACED_S);

	if (!hinted)
		pause_for(c, now + (uint64_t)(fmin(s, BACKOFF_MAX_S) * SEC), HTTP_CAP_BACKOFF);
}

/* A probe was refused: back to the base. What it sent beyond the base,
 * and the refused request, sit in the upstream's window (one second, for
 * the estimate), which is full: pause until they would have left it, one
 * interval at least (our own one-second window holds the sends after
 * that). A jump refused at its probe (no more sent than the base would
 * have, and one) is the low phase's one-request probe: it leaves the peak
 * alone and pauses JUMP_PAUSE intervals only. A jump refused after its
 * probe passed found the limit between the base and the peak: at most
 * what the refused send found upstream, and above the base. */
static void probe_failed(http_cap *c, uint64_t sent_at, uint64_t now, bool hinted)
{
	double excess = fmax(seen_rate(c, now) - c->base, 0) + 1, tok;
	double sent = sent_after(c, c->probe_start ? c->probe_start - 1 : 0, &tok);
	double base_would = c->base * (double)(now - c->probe_start) / SEC;
	bool one_over = false;

	c->rate = c->base;
	c->probing = false;
	c->probe_end = 0; /* its refusals are answered: a next one is news */
	if (c->jumping) {
		/* refused at its probe, it says the limit is still where the
		 * base is, nothing about the peak; refused later, the limit is
		 * between them: the peak a little lower */
		c->jumping = false;
		one_over = c->jump_pending;
		if (!one_over) {
			c->base = c->rate = fmax(c->base, sent_before(c, sent_at) * CUT_MARGIN);
			if (sent > base_would + 2)
				c->peak = fmax(c->base, c->peak * JUMP_DECAY);
		}
		c->jump_pending = false;
		c->jump_sent = 0;
	} else {
		/* the limit is between base and the probe: half as far next */
		c->gain = fmax(c->gain / 2, GAIN_MIN);
		c->probe_every = fmin(c->probe_every * 1.5, PROBE_EVERY_MAX_S);
		c->next_probe = now + (uint64_t)(c->probe_every * SEC);
	}
	schedule_jump(c, now);
	excess = fmax(excess, 1);
	if (c->jumped_last && (one_over || sent <= base_would + 2))
		excess = JUMP_PAUSE; /* one send over: it sits in the window alone */
	pause_intervals(c, now, excess, hinted);
}

/* A refusal while cruising: the limit fell. The base is cut by BETA, and
 * to what was admitted in the last second if that is less (never below
 * BETA_FLOOR: the last second may have held a pause of ours), and to the
 * trough the last drop found if that is less still. What the last
 * second carried becomes the peak. */
static void drop(http_cap *c, uint64_t sent_at, uint64_t now, bool hinted)
{
	double seen = admitted_rate(c, now), admitted = seen * CUT_MARGIN;
	/* what the upstream held when it refused the send is the limit or
	 * more, a better floor than BETA_FLOOR: the second measured a round
	 * trip ago may hold too few (a pause of ours after the first
	 * refusals) */
	double found = sent_before(c, sent_at) * CUT_MARGIN;
	double cut = fmin(c->base * BETA, fmax(c->base * BETA_FLOOR, fmax(admitted, found)));

	/* what the upstream carried until it fell is the rate to jump back
	 * to, even if the base had not held HELD_S (it was still climbing) */
	c->peak = fmax(c->peak, seen);
	if (c->low > 0 && c->low < cut)
		cut = c->low; /* where the last drop landed: a limit that falls
			       * to where it was before needs no second cut */
	set_base(c, cut, now);
	c->gain = GAIN0;
	c->next_probe = now + (uint64_t)(c->probe_every * SEC);
	c->drop_at = now;
	schedule_jump(c, now);
	c->drops++;
	pause_intervals(c, now, 1, hinted);
}

static bool within(uint64_t now, uint64_t t, double s)
{
	return t && now < t + (uint64_t)(s * SEC);
}

/*
 * A refusal at the pace (sent after the last reaction):
 *  - not paced yet: pace at what the last second admitted;
 *  - everything sent since the last reaction refused (unless that was a
 *    nudge, or the second before the refused send held well under what
 *    the base allows while sends were admitted: then the limit fell), or
 *    less than SETTLE_S since the last drop: the upstream's window is
 *    still full of what was sent before; pause longer (2^n intervals, at
 *    most BACKOFF_MAX_S), nothing else;
 *  - during a probe, or soon after: the probe failed;
 *  - soon after a probe became the base: that base was a little too
 *    much, back to the one before;
 *  - cruising, a first refusal: the base may sit on the edge of the limit
 *    (an upstream counts a second a little differently): a nudge down;
 *  - cruising, a second within NUDGE_S: the limit fell, a drop.
 */
static void on_pace_refusal(http_cap *c, uint64_t sent, uint64_t now, bool hinted)
{
	if (!isfinite(c->rate)) {
		/* not paced yet: what was admitted in the last second */
		set_base(c, fmax(admitted_rate(c, now), 1 / MEASURE_S) * CUT_MARGIN, now);
		c->drop_at = c->first_paced = now;
		pause_intervals(c, now, 1, hinted);
	} else if ((c->ever_ok && !c->oks_since_react &&
		    c->refused_since_react >= c->sent_since_react &&
		    c->react_at != c->nudge_at && full_at(c, sent)) ||
		   within(now, c->drop_at, SETTLE_S)) {
		pause_intervals(c, now, exp2(++c->streak), hinted);
		return;
	} else if (c->probing || within(now, c->probe_end, SETTLE_S)) {
		probe_failed(c, sent, now, hinted);
	} else if (within(now, c->promoted_at, SETTLE_S + PROBE_S)) {
		set_base(c, c->prev_base, now);
		c->promoted_at = 0;
		probe_failed(c, sent, now, hinted);
	} else if (!within(now, c->nudge_at, NUDGE_S)) {
		/* a nudge may be the first refusal of a fall: by the drop that
		 * follows, the last second shows the fallen limit, not the
		 * cruise the upstream carried before it */
		c->peak = fmax(c->peak, c->base);
		set_base(c, c->base * NUDGE, now);
		c->nudge_at = now;
		/* no probe nor jump until the nudged base has held a while */
		c->next_probe = now + (uint64_t)(c->probe_every * SEC);
		schedule_jump(c, now);
		pause_intervals(c, now, 2, hinted);
	} else {
		drop(c, sent, now, hinted);
	}
	c->streak = 0;
}

/* ----------------------------------------------------------- concurrency */

/* +1 a round trip while the window is what holds sends, once HOLD_S
 * has passed since a cut, and unless latency says the upstream queues. */
static void grow_window(http_cap *c, uint64_t now)
{
	if (!c->window_bound || (double)(now - c->wcut_at) < WINDOW_HOLD_S * SEC ||
	    (c->base_rtt_s > 0 && c->slow_rtt_s > c->base_rtt_s * LAT_GROW))
		return;
	c->window_bound = false;
	c->window = fmin(c->window + 1 / c->window, c->cfg.max_inflight);
}

/*
 * A server that queues answers later before it refuses: at the same
 * concurrency, the round trip rises. A slowly smoothed round trip (over
 * about 1/LAT_ALPHA answers: the answers of an LLM vary a lot) is
 * compared with the lowest it has been since the warm-up (the first
 * LAT_WARMUP answers are biased: the quick ones come back first), which
 * forgets at e per LAT_FORGET_S so that a slower upstream becomes the
 * norm. At LAT_HIGH times that low, with the window full, the window
 * shrinks by LAT_BETA, at most once a round trip; above LAT_GROW times it
 * does not grow.
 */
static void watch_latency(http_cap *c, uint64_t now, double rtt)
{
	double dt = c->lat_at ? (double)(now - c->lat_at) / SEC : 0;

	c->srtt_s = c->srtt_s > 0 ? c->srtt_s + (rtt - c->srtt_s) / 8 : rtt;
	if (c->min_rtt_s <= 0 || rtt < c->min_rtt_s)
		c->min_rtt_s = rtt;
	c->lat_at = now;
	/* A heavy tail's few long answers are no trend: each counts at most
	 * LAT_CLIP times the slow round trip, so they cannot shrink the
	 * window of an upstream that does not queue (ADR 0029); a real
	 * rise moves every answer and gets through. */
	c->slow_rtt_s = c->slow_rtt_s > 0 ?
		c->slow_rtt_s + (fmin(rtt, LAT_CLIP * c->slow_rtt_s) - c->slow_rtt_s) * LAT_ALPHA :
		rtt;
	if (++c->lat_n < LAT_WARMUP)
		return;
	c->base_rtt_s = c->base_rtt_s > 0 ?
		fmin(c->base_rtt_s * exp(dt / LAT_FORGET_S), c->slow_rtt_s) : c->slow_rtt_s;
	if (c->slow_rtt_s < c->base_rtt_s * LAT_HIGH || c->inflight + 1 < window_slots(c) ||
	    (double)(now - c->lat_cut_at) < c->srtt_s * SEC)
		return;
	c->window = fmax(floor(c->window * LAT_BETA), 1);
	c->lat_cut_at = now;
	c->window_cuts++;
}

static void cut_window(http_cap *c, double w, uint64_t now)
{
	c->window = c->good_window = fmax(floor(w), 1);
	c->wcut_at = now;
	c->window_cuts++;
}

/* A refusal sent into the window's last slot, or at k above every
 * success sent since the last reaction and above what the pace alone
 * keeps in flight, is a vote for a concurrency cap; any other, for a rate
 * limit (which refuses whatever the concurrency). The tally, bounded,
 * decides: one refusal of a burst does not make a rate limit a cap. The
 * refusals that follow the first one before any success are the same
 * burst: they may vote "rate", not "cap" again (three cap votes there
 * made the later refusals of a rate limit cut the window instead of the
 * pace, and let probes pass through a fall). */
static bool vote_concurrency(http_cap *c, unsigned k)
{
	double paced = isfinite(c->rate) ? c->rate * c->srtt_s + 2 : 0;
	bool full = k >= window_slots(c); /* sent into the last slot */
	int v = k > 1 && (full || (k > paced && (!c->ever_ok || k > c->ok_kmax))) ? 1 : -1;

	if (v > 0 && c->react_at && !c->ever_ok)
		return c->conc_score > 0; /* the first burst's: it has voted */

	c->conc_score += v;
	if (c->conc_score > SCORE_MAX)
		c->conc_score = SCORE_MAX;
	if (c->conc_score < -SCORE_MAX)
		c->conc_score = -SCORE_MAX;
	return c->conc_score > 0;
}

/* ------------------------------------------------------------------ done */

static void on_success(http_cap *c, uint64_t sent, unsigned k, uint64_t now)
{
	double rtt = (double)(now - sent) / SEC;

	c->streak = 0;
	log_ok(c, sent);
	watch_latency(c, now, rtt);
	if (c->first_probe && sent < c->react_at)
		c->probe_credit++; /* a slot of the burst is free: one out, one in */
	if (sent < c->opened_at && c->cfg.start_window < c->cfg.max_inflight)
		return; /* the start window's: they only show the headers */
	c->ever_ok = true;
	if (sent >= c->react_at) {
		c->ok_kmax = k > c->ok_kmax ? k : c->ok_kmax;
		c->oks_since_react++;
		c->first_probe = false; /* the probe came back: there is room */
	}
	first_pace_ok(c, sent);
	if (c->jump_pending && c->jump_sent && sent == c->jump_sent)
		jump_on(c, now);
	pace_step(c, now);
	grow_window(c, now);
}

/*
 * What a refusal teaches, if it was sent after the last reaction (one
 * reaction per round trip, as TCP reacts once per window of losses):
 * a concurrency cap (by the tally, which needs a success since the last
 * reaction to compare k with) sets the window to k - 1 if k was above
 * every such success, else (the cap fell) cuts it by BETA; anything else
 * is for the pace. The first refusal ever also holds sends to one until
 * a success shows there is room (the first burst cannot tell a cap from
 * a rate limit); a probe that ends in neither, a 5xx or a network error,
 * lets the next one go at once (ADR 0029: waiting for the burst to drain
 * instead idled the demo's pool for 0.3 s).
 */
static void on_refusal(http_cap *c, uint64_t sent, unsigned k, uint64_t now, bool hinted)
{
	c->refusals++;
	if (sent < c->react_at)
		return; /* sent before the last reaction: nothing new */
	c->refused_since_react++;
	c->first_probe = !c->ever_ok;
	if ((!c->ever_ok || c->ok_kmax) && vote_concurrency(c, k))
		cut_window(c, !c->ever_ok || k > c->ok_kmax ? k - 1 : c->window * BETA, now);
	else
		on_pace_refusal(c, sent, now, hinted);
	c->react_at = now;
	c->ok_kmax = 0;
	c->sent_since_react = c->oks_since_react = c->refused_since_react = 0;
	c->probe_credit = 0;
}

/* The tokens an answer says it used: they replace the estimate in the
 * log (what an announced token budget is counted down by), and the
 * ratio of the two scales later estimates (a caller that guesses low
 * would otherwise overrun a tokens-per-second budget). */
static void used_tokens(http_cap *c, uint64_t sent, double used)
{
	for (unsigned i = c->sends_n; i-- > 0;) {
		http_cap_send *s = &c->sends[(c->sends_head + i) % HTTP_CAP_LOG];

		if (s->t < sent)
			return;
		if (s->t == sent && s->tokens > 0 && !s->settled) {
			double r = fmax(TOK_RATIO_MIN, fmin(used / s->tokens * c->tok_ratio,
							    TOK_RATIO_MAX));

			c->tok_ratio += (r - c->tok_ratio) / 8;
			s->tokens = used;
			s->settled = true;
			return;
		}
	}
}

/* The send at `sent` has its answer (the log is in send order; sends at
 * one instant are told apart by nothing: any unanswered one will do). */
static void answered(http_cap *c, uint64_t sent)
{
	for (unsigned i = c->sends_n; i-- > 0;) {
		http_cap_send *s = &c->sends[(c->sends_head + i) % HTTP_CAP_LOG];

		if (s->t < sent)
			return;
		if (s->t == sent && !s->answered) {
			s->answered = true;
			return;
		}
	}
}

/* The first answer opens the start window. An upstream that announces
 * its slots gets them at once; one that announces a budget is paced by
 * it; any other is found by a slow start, one more in flight for each
 * answer (doubling every round trip), which ends at the first refusal or
 * at the window: a burst of the whole ceiling into a small rate limit
 * is refused, and counted against the client, before it can be judged. */
static void open_window(http_cap *c, uint64_t now, const http_hints *h)
{
	c->opened_at = now;
	if (h && h->limit_concurrency >= 1) {
		c->window = c->good_window = fmin(h->limit_concurrency, c->cfg.max_inflight);
		return;
	}
	if (h && (h->limit_requests >= 0 || h->remaining_requests >= 0 ||
		  h->limit_tokens >= 0 || h->remaining_tokens >= 0))
		return;
	if (c->cfg.start_window < c->window)
		c->ramp = c->cfg.start_window;
}

void http__cap_done(http_cap *c, uint64_t sent, unsigned k, uint64_t now,
		    http_cap_outcome o, const http_hints *h, double tokens)
{
	answered(c, sent);
	if (!c->opened_at)
		open_window(c, now, h);
	if (o == HTTP_CAP_OK && tokens > 0)
		used_tokens(c, sent, tokens);
	if (c->inflight)
		c->inflight--;
	if (h)
		on_hints(c, sent, k, now, o, h);
	if (o == HTTP_CAP_OK && c->ramp > 0 && ++c->ramp >= c->window)
		c->ramp = 0;
	if (o == HTTP_CAP_REFUSED)
		c->ramp = 0;
	if (o == HTTP_CAP_OK)
		on_success(c, sent, k, now);
	else if (o == HTTP_CAP_REFUSED)
		on_refusal(c, sent, k, now, h && h->retry_after_s >= 0);
	else if (c->jump_pending && sent == c->jump_sent) {
		/* the jump's probe told nothing (a 5xx): the next one, later */
		c->probing = c->jumping = c->jump_pending = false;
		c->jump_sent = 0;
		c->rate = c->base;
		schedule_jump(c, now);
	} else if (c->first_probe && sent >= c->react_at)
		c->probe_credit++; /* the probe told nothing (a 5xx): another */
}

/* ---------------------------------------------------------------- state */

void http__cap_save(const http_cap *c, http_cap_state *out)
{
	*out = (http_cap_state){ .rate = c->rate, .good_rate = c->base, .peak_rate = c->peak,
		.window = c->window, .good_window = c->good_window, .srtt_s = c->srtt_s,
		.min_rtt_s = c->min_rtt_s, .hint_scale = c->hint_scale };
}

void http__cap_restore(http_cap *c, const http_cap_state *s, uint64_t now)
{
	http_cap_cfg cfg = c->cfg;

	http__cap_init(c, &cfg, now);
	if (s->good_rate > 0 && isfinite(s->good_rate))
		c->rate = c->base = s->good_rate;
	c->peak = s->peak_rate > 0 ? s->peak_rate : 0;
	if (s->window >= 1 && s->window <= cfg.max_inflight)
		c->window = s->window;
	if (s->good_window >= 1 && s->good_window <= cfg.max_inflight)
		c->good_window = s->good_window;
	c->srtt_s = s->srtt_s;
	c->min_rtt_s = s->min_rtt_s;
	if (s->hint_scale >= 1)
		c->hint_scale = s->hint_scale;
}

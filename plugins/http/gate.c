/*
 * gate.c — an upstream's capacity control in either mode (http_internal.h,
 * "gate").
 */
#include <math.h>
#include <string.h>

#include "plugins/http/http_internal.h"

#define SEC 1e9
#define AIMD_QUIET_NS (1000 * 1000 * 1000ull) /* refusals back off at most once a second */

const char *http_mode_name(http_mode m)
{
	switch (m) {
	case HTTP_MODE_ADAPTIVE: return "adaptive";
	case HTTP_MODE_AIMD: return "aimd";
	case HTTP_MODE_LAST: break;
	}
	return "unknown";
}

/* A minimum gap between dispatches is a pace: 1000 / gap requests/s. */
static double gap_rps(const http_cfg *cfg)
{
	return cfg->min_dispatch_delay_ms > 0 ? 1000.0 / cfg->min_dispatch_delay_ms : 0;
}

/* The smaller of two budgets, 0 meaning none. */
static double tighter(double a, double b)
{
	return a <= 0 ? b : b <= 0 ? a : fmin(a, b);
}

void http__gate_init(http_gate *g, const http_cfg *cfg, uint64_t now)
{
	http_cap_cfg cc = { .max_inflight = cfg->pool_size ? cfg->pool_size : 1,
			    .max_rps = tighter(cfg->max_rps, gap_rps(cfg)),
			    .max_tps = cfg->max_tps };

	*g = (http_gate){ .mode = cfg->mode, .ceiling = cc.max_inflight };
	http__cap_init(&g->cap, &cc, now);
	http__aimd_init(&g->aimd, cfg->min_dispatch_delay_ms, cfg->max_dispatch_delay_ms,
			cfg->backoff_multiplier, cfg->recovery_step_ms);
}

void http__gate_join(http_gate *g, const http_cfg *cfg)
{
	http_cap_cfg *cc = &g->cap.cfg;

	if (cfg->pool_size > g->ceiling) {
		/* a window at the old ceiling was not limiting: it follows */
		if (g->cap.window >= cc->max_inflight)
			g->cap.window = g->cap.good_window = cfg->pool_size;
		g->ceiling = cc->max_inflight = cfg->pool_size;
	}
	cc->max_rps = tighter(cc->max_rps, tighter(cfg->max_rps, gap_rps(cfg)));
	cc->max_tps = tighter(cc->max_tps, cfg->max_tps);
	if (cc->max_rps > 0 && (g->cap.rate > cc->max_rps || g->cap.base <= 0))
		g->cap.rate = g->cap.base = cc->max_rps;
}

/* What a controller's reason means for the audit trail: a hinted pause
 * names the hint, an announced budget the header family. */
static const char *reason(const http_gate *g, http_cap_reason r)
{
	if (r == HTTP_CAP_HINTED)
		return http__hint_src_name(g->hint_src);
	if (r == HTTP_CAP_QUOTA)
		return "ratelimit-remaining";
	return http__cap_reason_name(r);
}

static uint64_t aimd_acquire(http_gate *g, uint64_t now, const char **why)
{
	if (g->inflight >= g->ceiling) {
		*why = "window";
		return HTTP_CAP_WAIT_DONE;
	}
	if (now < g->next_dispatch) {
		*why = g->aimd.delay_ms > g->aimd.min_ms ? "backoff" : "pace";
		return g->next_dispatch;
	}
	g->next_dispatch = now + (uint64_t)(g->aimd.delay_ms * 1e6);
	return 0;
}

/* A request goes: counted in flight (the controller counted it already
 * and gave *k; the AIMD's k is the gate's own count). */
static void admit(http_gate *g, unsigned *k)
{
	g->inflight++;
	if (g->mode == HTTP_MODE_AIMD)
		*k = g->inflight;
	g->sent_any = true;
}

uint64_t http__gate_acquire(http_gate *g, uint64_t now, double tokens, unsigned *k,
			    const char **why)
{
	http_cap_reason r = HTTP_CAP_GO;
	const char *w = NULL;
	uint64_t t;

	if (g->mode == HTTP_MODE_AIMD)
		t = aimd_acquire(g, now, &w);
	else if ((t = http__cap_acquire(&g->cap, now, tokens, k, &r)))
		w = reason(g, r);
	if (t) {
		g->held = w;
		if (why)
			*why = w;
		return t;
	}
	admit(g, k);
	if (why)
		*why = NULL;
	return 0;
}

bool http__gate_force(http_gate *g, uint64_t now, double tokens, unsigned *k)
{
	if (g->inflight >= g->ceiling)
		return false;
	if (g->mode == HTTP_MODE_ADAPTIVE)
		http__cap_force(&g->cap, now, tokens, k);
	admit(g, k);
	return true;
}

/* libcurl read only Retry-After, in whole seconds: what today's AIMD
 * executor honoured, for the refused request alone. */
static double aimd_retry_after(const http_hints *h)
{
	if (!h || (h->retry_src != HTTP_HINT_RETRY_AFTER &&
		   h->retry_src != HTTP_HINT_RETRY_AFTER_DATE))
		return 0;
	return floor(h->retry_after_s);
}

static uint64_t aimd_done(http_gate *g, uint64_t sent, uint64_t now, http_cap_outcome o,
			  const http_hints *h)
{
	uint64_t wait;
	double ra;

	if (o == HTTP_CAP_OK) {
		http__aimd_on_success(&g->aimd);
		g->success_since_backoff = true;
		return now;
	}
	if (o != HTTP_CAP_REFUSED)
		return now;
	/* One backoff per round trip, as TCP does: the answers to requests
	 * sent before the last backoff say nothing new; and refusals with
	 * no success in between back off at most once a second. */
	if (sent >= g->last_backoff &&
	    (g->success_since_backoff || now - g->last_backoff >= AIMD_QUIET_NS)) {
		http__aimd_on_capacity(&g->aimd);
		g->last_backoff = now;
		g->success_since_backoff = false;
	}
	wait = (uint64_t)(g->aimd.delay_ms * 1e6);
	ra = aimd_retry_after(h);
	if (ra * SEC > (double)wait)
		wait = (uint64_t)(ra * SEC);
	return now + wait;
}

uint64_t http__gate_done(http_gate *g, uint64_t sent, unsigned k, uint64_t now,
			 http_cap_outcome o, const http_hints *h, double tokens)
{
	if (g->inflight)
		g->inflight--;
	if (g->mode == HTTP_MODE_AIMD)
		return aimd_done(g, sent, now, o, h);
	if (o == HTTP_CAP_REFUSED && h && h->retry_after_s >= 0)
		g->hint_src = h->retry_src;
	http__cap_done(&g->cap, sent, k, now, o, h, tokens);
	return now;
}

void http__gate_stats(const http_gate *g, http_stats *st)
{
	st->mode = g->mode;
	st->pool_size = g->ceiling;
	st->held_by = g->held;
	if (g->mode == HTTP_MODE_AIMD) {
		st->delay_ms = g->aimd.delay_ms;
		st->rate = st->delay_ms > 0 ? 1000.0 / st->delay_ms : 0;
		st->window = g->ceiling;
		return;
	}
	st->rate = isfinite(g->cap.rate) ? g->cap.rate : 0;
	st->delay_ms = st->rate > 0 ? 1000.0 / st->rate : 0;
	st->window = fmin(g->cap.window, g->ceiling);
}

/* A finite number for JSON (INFINITY: not paced, saved as 0). */
static json_t *num(double v)
{
	return json_real(isfinite(v) ? v : 0);
}

json_t *http__gate_save(const http_gate *g)
{
	http_cap_state s;

	if (g->mode == HTTP_MODE_AIMD)
		return json_pack("{s:s,s:f}", "mode", "aimd", "dispatch_delay_ms", g->aimd.delay_ms);
	http__cap_save(&g->cap, &s);
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "mode", "adaptive",
			 "rate", num(s.rate), "good_rate", num(s.good_rate),
			 "peak_rate", num(s.peak_rate), "window", num(s.window),
			 "good_window", num(s.good_window), "srtt_s", num(s.srtt_s),
			 "min_rtt_s", num(s.min_rtt_s), "hint_scale", num(s.hint_scale));
}

static double get(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : 0;
}

void http__gate_restore(http_gate *g, const json_t *saved, uint64_t now)
{
	const json_t *m = json_object_get(saved, "mode");
	http_cap_state s;
	double d;

	if (g->sent_any)
		return;
	/* a checkpoint of before the modes had no "mode": the AIMD's */
	if (g->mode == HTTP_MODE_AIMD) {
		if (m && !json_is_string(m))
			return;
		if (m && strcmp(json_string_value(m), "aimd"))
			return;
		d = get(saved, "dispatch_delay_ms");
		g->aimd.delay_ms = fmin(fmax(d, g->aimd.min_ms), g->aimd.max_ms);
		return;
	}
	if (!json_is_string(m) || strcmp(json_string_value(m), "adaptive"))
		return;
	s = (http_cap_state){ .rate = get(saved, "rate"), .good_rate = get(saved, "good_rate"),
		.peak_rate = get(saved, "peak_rate"), .window = get(saved, "window"),
		.good_window = get(saved, "good_window"), .srtt_s = get(saved, "srtt_s"),
		.min_rtt_s = get(saved, "min_rtt_s"), .hint_scale = get(saved, "hint_scale") };
	http__cap_restore(&g->cap, &s, now);
	if (g->cap.cfg.max_rps > 0 && g->cap.rate > g->cap.cfg.max_rps)
		g->cap.rate = g->cap.base = g->cap.cfg.max_rps;
}

/*
 * ctl.c — the controllers the simulator compares (capsim.h).
 *
 *  aimd    today's executor: the dispatch delay of plugins/http/aimd.c
 *          (http__aimd_*, with the settings' defaults: 0 to 5000 ms, x2,
 *          -50 ms a success) and exec.c's rules around it: at most one
 *          backoff per round trip, at most one a second without a success
 *          in between; a refused request waits max(Retry-After, delay)
 *          before it is retried (libcurl reads Retry-After, not
 *          retry-after-ms), holding no slot, while others go on.
 *  vector  Vector's adaptive request concurrency (0.11+): a concurrency
 *          limit from 1 up to max_inflight; once per averaged RTT, +1 if
 *          the limit was reached with no back pressure and RTT no worse
 *          than its EWMA mean, x0.9 on back pressure (a refusal) or an RTT
 *          at or above mean + 2.5 deviations (EWMA alpha 0.4).
 *  cap     plugins/http/capacity.c.
 *  oracle  handled by sim.c: it sees the server.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "capsim.h"
#include "plugins/http/http.h"

struct sim_ctl {
	sim_ctl_kind kind;
	unsigned pool, inflight;
	/* aimd */
	http_aimd aimd;
	uint64_t next_dispatch, last_backoff;
	bool backed_off, success_since_backoff;
	/* vector */
	unsigned limit;
	double past_mean, past_var;
	bool past_init, back_pressure, reached;
	double cur_sum;
	unsigned cur_n;
	uint64_t next_update;
	/* cap */
	http_cap cap;
};

const char *sim_ctl_name(sim_ctl_kind k)
{
	switch (k) {
	case SIM_CTL_AIMD: return "aimd";
	case SIM_CTL_VECTOR: return "vector";
	case SIM_CTL_CAP: return "cap";
	case SIM_CTL_ORACLE: return "oracle";
	case SIM_CTL_PACED: return "paced";
	case SIM_CTL_LAST: break;
	}
	return "?";
}

sim_ctl *sim_ctl_create(sim_ctl_kind k, const sim_scenario *sc, uint64_t now)
{
	sim_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		abort();
	c->kind = k;
	c->pool = sc->pool;
	http__aimd_init(&c->aimd, 0, 5000, 2.0, 50);
	c->limit = 1;
	if (k == SIM_CTL_CAP) {
		http_cap_cfg cfg = { .max_inflight = sc->pool, .max_rps = sc->cfg_rps,
				     .max_tps = sc->cfg_tps };

		http__cap_init(&c->cap, &cfg, now);
	}
	return c;
}

void sim_ctl_free(sim_ctl *c)
{
	free(c);
}

/* ------------------------------------------------------------------ aimd */

static uint64_t aimd_acquire(sim_ctl *c, uint64_t now, unsigned *k)
{
	if (now < c->next_dispatch)
		return c->next_dispatch;
	c->next_dispatch = now + (uint64_t)(c->aimd.delay_ms * 1e6);
	*k = ++c->inflight;
	return 0;
}

static void aimd_done(sim_ctl *c, uint64_t sent, uint64_t now, bool admitted)
{
	c->inflight--;
	if (admitted) {
		http__aimd_on_success(&c->aimd);
		c->success_since_backoff = true;
		return;
	}
	if (!c->backed_off || (sent >= c->last_backoff &&
	    (c->success_since_backoff || now - c->last_backoff >= SIM_NS))) {
		http__aimd_on_capacity(&c->aimd);
		c->last_backoff = now;
		c->backed_off = true;
		c->success_since_backoff = false;
	}
}

/* ---------------------------------------------------------------- vector */

static uint64_t vector_acquire(sim_ctl *c, unsigned *k)
{
	if (c->inflight >= c->limit)
		return HTTP_CAP_WAIT_DONE;
	*k = ++c->inflight;
	if (c->inflight >= c->limit)
		c->reached = true;
	return 0;
}

static void ewma_var(sim_ctl *c, double x)
{
	double diff = x - c->past_mean, incr = 0.4 * diff;

	c->past_mean += incr;
	c->past_var = (1 - 0.4) * (c->past_var + diff * incr);
}

static void vector_manage(sim_ctl *c, double cur, bool have)
{
	double threshold = sqrt(c->past_var) * 2.5;

	if (c->limit < c->pool && c->reached && !c->back_pressure && have &&
	    cur <= c->past_mean)
		c->limit++;
	/* Vector compares with >=; with the simulator's fixed latencies
	 * (zero deviation) that would cut at every interval, which real
	 * networks never show: > here. */
	else if (c->limit > 1 && (c->back_pressure || (have && cur > c->past_mean + threshold))) {
		unsigned l = (unsigned)((double)c->limit * 0.9);

		c->limit = l ? l : 1;
	}
}

static void vector_done(sim_ctl *c, uint64_t sent, uint64_t now, bool admitted)
{
	double cur = 0;
	bool have;

	c->inflight--;
	if (admitted) {
		/* microseconds, as Vector's own simulations round */
		c->cur_sum += round((double)(now - sent) / 1e3) / 1e6;
		c->cur_n++;
	} else
		c->back_pressure = true;
	have = c->cur_n > 0;
	if (have)
		cur = round(c->cur_sum / c->cur_n * 1e6) / 1e6;
	if (!c->past_init) {
		if (have) {
			c->past_mean = cur;
			c->past_var = 0;
			c->past_init = true;
			c->next_update = now + (uint64_t)(cur * 1e9);
		}
		return;
	}
	if (now < c->next_update)
		return;
	vector_manage(c, cur, have);
	if (have)
		ewma_var(c, cur);
	c->next_update = now + (uint64_t)(c->past_mean * 1e9);
	c->cur_sum = 0;
	c->cur_n = 0;
	c->back_pressure = c->reached = false;
}

/* ---------------------------------------------------------------- common */

uint64_t sim_ctl_acquire(sim_ctl *c, uint64_t now, double tokens, unsigned *k)
{
	switch (c->kind) {
	case SIM_CTL_AIMD: return aimd_acquire(c, now, k);
	case SIM_CTL_VECTOR: return vector_acquire(c, k);
	case SIM_CTL_CAP: return http__cap_acquire(&c->cap, now, tokens, k, NULL);
	case SIM_CTL_ORACLE:
	case SIM_CTL_PACED:
	case SIM_CTL_LAST: break;
	}
	*k = ++c->inflight;
	return 0;
}

void sim_ctl_done(sim_ctl *c, uint64_t sent, unsigned k, uint64_t now, bool admitted,
		  const http_hints *h, double tokens)
{
	switch (c->kind) {
	case SIM_CTL_AIMD:
		aimd_done(c, sent, now, admitted);
		return;
	case SIM_CTL_VECTOR:
		vector_done(c, sent, now, admitted);
		return;
	case SIM_CTL_CAP:
		http__cap_done(&c->cap, sent, k, now,
			       admitted ? HTTP_CAP_OK : HTTP_CAP_REFUSED, h,
			       admitted ? tokens : 0);
		return;
	case SIM_CTL_ORACLE:
	case SIM_CTL_PACED:
	case SIM_CTL_LAST:
		break;
	}
	c->inflight--;
}

uint64_t sim_ctl_retry_delay(sim_ctl *c, const http_hints *h)
{
	double ms;

	if (c->kind != SIM_CTL_AIMD)
		return 0;
	ms = c->aimd.delay_ms;
	/* libcurl's CURLINFO_RETRY_AFTER: the Retry-After header only. */
	if ((h->retry_src == HTTP_HINT_RETRY_AFTER ||
	     h->retry_src == HTTP_HINT_RETRY_AFTER_DATE) && h->retry_after_s * 1e3 > ms)
		ms = h->retry_after_s * 1e3;
	return (uint64_t)(ms * 1e6);
}

void sim_ctl_describe(sim_ctl *c, char *buf, size_t n)
{
	http_cap_state st;

	switch (c->kind) {
	case SIM_CTL_AIMD:
		snprintf(buf, n, "delay %.0f ms", c->aimd.delay_ms);
		return;
	case SIM_CTL_VECTOR:
		snprintf(buf, n, "limit %u rtt %.0f ms", c->limit, c->past_mean * 1e3);
		return;
	case SIM_CTL_CAP:
		http__cap_save(&c->cap, &st);
		snprintf(buf, n, "rate %.2f good %.2f peak %.2f window %.1f (%.1f) rtt %.0f ms hint x%.2f",
			 st.rate, st.good_rate, st.peak_rate, st.window, st.good_window,
			 st.min_rtt_s * 1e3, st.hint_scale);
		return;
	case SIM_CTL_ORACLE:
	case SIM_CTL_PACED:
	case SIM_CTL_LAST:
		break;
	}
	snprintf(buf, n, "-");
}

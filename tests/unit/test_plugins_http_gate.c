/* An upstream's gate (plugins/http/gate.c): clients joining one upstream,
 * the reasons given for waits, the AIMD mode, the last attempt at a
 * deadline, checkpoints of either mode. Times are made up nanoseconds. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "plugins/http/http_internal.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (10 * S)

static http_cfg cfg(http_mode mode, unsigned pool)
{
	return (http_cfg){ .pool_size = pool, .timeout_s = 60, .mode = mode,
			   .max_dispatch_delay_ms = 5000, .backoff_multiplier = 2,
			   .recovery_step_ms = 50, .max_capacity_retry_s = 3600,
			   .max_retry_after_s = 600 };
}

static unsigned fill(http_gate *g, uint64_t now)
{
	unsigned k = 0, n = 0;
	const char *why;

	while (!http__gate_acquire(g, now, 0, &k, &why))
		n++;
	return n;
}

Test(gate, the_ceiling_is_the_largest_pool_and_a_budget_the_smallest)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 8), b = cfg(HTTP_MODE_ADAPTIVE, 24);
	http_stats st = { 0 };
	http_gate g;

	a.max_rps = 0;
	b.max_rps = 10;
	http__gate_init(&g, &a, 0);
	http__gate_join(&g, &b);
	http__gate_stats(&g, &st);
	cr_assert_eq(st.pool_size, 24);
	cr_assert_float_eq(st.rate, 10, 1e-9, "b's budget applies to the upstream");
	a.max_rps = 4;
	http__gate_join(&g, &a);
	http__gate_stats(&g, &st);
	cr_assert_eq(st.pool_size, 24, "a smaller pool does not lower the ceiling");
	cr_assert_float_eq(st.rate, 4, 1e-9, "the smaller budget wins");
}

Test(gate, a_joined_ceiling_is_used)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 4), b = cfg(HTTP_MODE_ADAPTIVE, 12);
	http_gate g;
	http_hints h;

	http__gate_init(&g, &a, 0);
	http__gate_join(&g, &b);
	cr_assert_eq(fill(&g, 0), 8, "until the first answer, the start window");
	http__hints_init(&h);
	h.limit_concurrency = 100; /* announced slots: no slow start */
	http__gate_done(&g, 0, 1, 1 * MS, HTTP_CAP_OK, &h, 0);
	cr_assert_eq(fill(&g, 1 * MS), 5, "then the joined ceiling: 12 in flight");
}

Test(gate, min_dispatch_delay_is_a_pace_in_adaptive_mode)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 8);
	const char *why = NULL;
	unsigned k;
	http_gate g;

	a.min_dispatch_delay_ms = 100;
	http__gate_init(&g, &a, 0);
	cr_assert_eq(http__gate_acquire(&g, 0, 0, &k, &why), 0);
	cr_assert_neq(http__gate_acquire(&g, 1 * MS, 0, &k, &why), 0);
	cr_assert_str_eq(why, "pace");
	cr_assert_str_eq(g.held, "pace");
}

Test(gate, a_hinted_pause_names_its_hint_and_holds_everyone)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 8);
	http_hints h;
	const char *why = NULL;
	unsigned k1, k2, k;
	http_gate g;
	uint64_t t;

	http__gate_init(&g, &a, 0);
	cr_assert_eq(http__gate_acquire(&g, 0, 0, &k1, &why), 0);
	cr_assert_eq(http__gate_acquire(&g, 0, 0, &k2, &why), 0);
	http__gate_done(&g, 0, k1, 100 * MS, HTTP_CAP_OK, NULL, 0);
	http__hints_init(&h);
	http__hints_header(&h, "retry-after-ms: 700\r\n", 21, 0);
	cr_assert_eq(h.retry_src, HTTP_HINT_RETRY_AFTER_MS);
	http__gate_done(&g, 0, k2, 120 * MS, HTTP_CAP_REFUSED, &h, 0);
	t = http__gate_acquire(&g, 130 * MS, 0, &k, &why);
	cr_assert_geq(t, 820 * MS, "held until the hint's end (%llu)", (unsigned long long)t);
	cr_assert_str_eq(why, "retry-after-ms");
}

Test(gate, aimd_mode_is_the_old_throttle)
{
	http_cfg a = cfg(HTTP_MODE_AIMD, 4);
	http_hints h;
	const char *why = NULL;
	unsigned k[4], kk;
	http_gate g;
	uint64_t t;

	/* a monotonic clock is far from 0: the first refusal is "a quiet
	 * second" after the last backoff */
	http__gate_init(&g, &a, T0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(http__gate_acquire(&g, T0, 0, &k[i], &why), 0, "delay 0: all at once");
	cr_assert_eq(http__gate_acquire(&g, T0, 0, &kk, &why), HTTP_CAP_WAIT_DONE);
	cr_assert_str_eq(why, "window");
	/* a refusal: the delay doubles from the 100 ms floor; the refused
	 * request waits max(delay, Retry-After in whole seconds) */
	http__hints_init(&h);
	http__hints_header(&h, "Retry-After: 1.5\r\n", 18, 0);
	t = http__gate_done(&g, T0, k[0], T0 + 10 * MS, HTTP_CAP_REFUSED, &h, 0);
	cr_assert_eq(t, T0 + 10 * MS + 1 * S, "whole seconds, as libcurl read it");
	cr_assert_float_eq(g.aimd.delay_ms, 100, 1e-9);
	/* the others answered before: one backoff per round trip */
	http__gate_done(&g, T0, k[1], T0 + 11 * MS, HTTP_CAP_REFUSED, NULL, 0);
	cr_assert_float_eq(g.aimd.delay_ms, 100, 1e-9);
	cr_assert_eq(http__gate_acquire(&g, T0 + 12 * MS, 0, &kk, &why), 0);
	cr_assert_neq(http__gate_acquire(&g, T0 + 13 * MS, 0, &kk, &why), 0, "100 ms apart now");
	http__gate_done(&g, T0, k[2], T0 + 20 * MS, HTTP_CAP_OK, NULL, 0);
	cr_assert_float_eq(g.aimd.delay_ms, 50, 1e-9, "a success takes 50 ms off");
}

Test(gate, a_last_attempt_passes_every_limit_but_the_ceiling)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 2);
	const char *why;
	unsigned k1, k2, k3;
	http_gate g;

	a.min_dispatch_delay_ms = 1000;
	http__gate_init(&g, &a, 0);
	cr_assert_eq(http__gate_acquire(&g, 0, 0, &k1, &why), 0);
	cr_assert_neq(http__gate_acquire(&g, 1 * MS, 0, &k2, &why), 0, "paced");
	cr_assert(http__gate_force(&g, 1 * MS, 0, &k2), "the pace does not hold it");
	cr_assert_eq(k2, 2);
	cr_assert_not(http__gate_force(&g, 1 * MS, 0, &k3), "the ceiling does");
	http__gate_done(&g, 0, k1, 50 * MS, HTTP_CAP_OK, NULL, 0);
	cr_assert(http__gate_force(&g, 51 * MS, 0, &k3));
}

Test(gate, a_checkpoint_round_trips_in_its_mode_only)
{
	http_cfg a = cfg(HTTP_MODE_ADAPTIVE, 16), m = cfg(HTTP_MODE_AIMD, 16);
	http_gate g, r, x;
	http_stats st = { 0 };
	json_t *s;

	http__gate_init(&g, &a, 0);
	g.cap.rate = g.cap.base = 7.5;
	g.cap.window = g.cap.good_window = 9;
	s = http__gate_save(&g);
	cr_assert_str_eq(json_string_value(json_object_get(s, "mode")), "adaptive");
	http__gate_init(&r, &a, 0);
	http__gate_restore(&r, s, 0);
	http__gate_stats(&r, &st);
	cr_assert_float_eq(st.rate, 7.5, 1e-9);
	cr_assert_float_eq(st.window, 9, 1e-9);
	/* another mode's state is not applied */
	http__gate_init(&x, &m, 0);
	http__gate_restore(&x, s, 0);
	cr_assert_float_eq(x.aimd.delay_ms, 0, 1e-9);
	json_decref(s);
	/* nor once something was sent */
	s = json_pack("{s:s,s:f}", "mode", "aimd", "dispatch_delay_ms", 400.0);
	http__gate_restore(&x, s, 0);
	cr_assert_float_eq(x.aimd.delay_ms, 400, 1e-9);
	x.aimd.delay_ms = 0;
	fill(&x, 0);
	http__gate_restore(&x, s, 0);
	cr_assert_float_eq(x.aimd.delay_ms, 0, 1e-9);
	json_decref(s);
	/* a checkpoint of before the modes: the AIMD's delay alone */
	s = json_pack("{s:f}", "dispatch_delay_ms", 250.0);
	http__gate_init(&x, &m, 0);
	http__gate_restore(&x, s, 0);
	cr_assert_float_eq(x.aimd.delay_ms, 250, 1e-9);
	json_decref(s);
}

/* An upstream's recent answer times (plugins/http/tail.c): percentiles,
 * the tail deadline and the hedge delay. */
#include <criterion/criterion.h>

#include "plugins/http/http_internal.h"

static void fill(http_tail *t, unsigned n, double base, double step)
{
	for (unsigned i = 0; i < n; i++)
		http__tail_add(t, base + step * (double)(i % 100));
}

Test(tail, nothing_before_enough_answers)
{
	http_tail t = { 0 };

	fill(&t, HTTP_TAIL_MIN - 1, 0.1, 0.001);
	cr_assert_eq(http__tail_deadline(&t, 3, 60), 0);
	cr_assert_eq(http__tail_hedge_after(&t), 0);
	http__tail_add(&t, 0.1);
	cr_assert_gt(http__tail_deadline(&t, 3, 60), 0, "from HTTP_TAIL_MIN answers on");
	cr_assert_gt(http__tail_hedge_after(&t), 0);
}

Test(tail, percentiles_of_the_recent_answers)
{
	http_tail t = { 0 };

	/* 0.100 .. 0.199 s, evenly: p50 ~0.150, p99 ~0.199 */
	fill(&t, 512, 0.100, 0.001);
	cr_assert_float_eq(t.p50, 0.150, 0.002, "p50 %f", t.p50);
	cr_assert_float_eq(t.p99, 0.199, 0.002, "p99 %f", t.p99);
	/* a few stuck answers move neither much: percentiles, not a mean */
	for (int i = 0; i < 3; i++)
		http__tail_add(&t, 30.0);
	for (int i = 0; i < HTTP_TAIL_EVERY; i++)
		http__tail_add(&t, 0.150);
	cr_assert_lt(t.p99, 0.25, "p99 %f", t.p99);
}

Test(tail, forgets_old_answers)
{
	http_tail t = { 0 };

	fill(&t, 512, 0.100, 0.001);
	fill(&t, 512, 2.000, 0.010); /* the upstream became slower */
	cr_assert_float_eq(t.p50, 2.5, 0.02, "p50 %f", t.p50);
}

Test(tail, deadline_is_a_multiple_of_p99_with_a_floor_and_only_before_the_timeout)
{
	http_tail t = { 0 };

	fill(&t, 512, 0.100, 0.001); /* p99 ~0.2 */
	cr_assert_float_eq(http__tail_deadline(&t, 3, 60), HTTP_TAIL_FLOOR_S, 1e-9,
			   "3 x 0.2 s is under the floor");
	fill(&t, 512, 1.0, 0.01); /* p99 ~1.99 */
	cr_assert_float_eq(http__tail_deadline(&t, 3, 60), 3 * t.p99, 1e-9);
	cr_assert_eq(http__tail_deadline(&t, 3, 5), 0, "not sooner than the timeout: none");
	cr_assert_eq(http__tail_deadline(&t, 0, 60), 0, "factor 0: off");
	cr_assert_float_eq(http__tail_hedge_after(&t), t.p99, 1e-9);
}

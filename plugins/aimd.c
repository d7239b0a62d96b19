/* aimd.c — see aimd.h. */
#include "plugins/aimd.h"

void aimd_init(aimd *t, double min_ms, double max_ms, double multiplier,
	       double step_ms)
{
	*t = (aimd){ .delay_ms = min_ms, .min_ms = min_ms, .max_ms = max_ms,
		     .multiplier = multiplier, .step_ms = step_ms };
}

double aimd_on_capacity(aimd *t)
{
	double d = t->delay_ms * t->multiplier;

	if (d < AIMD_FLOOR_MS)
		d = AIMD_FLOOR_MS;
	if (d > t->max_ms)
		d = t->max_ms;
	if (d < t->min_ms)
		d = t->min_ms;
	t->capacity_errors++;
	return t->delay_ms = d;
}

double aimd_on_success(aimd *t)
{
	double d = t->delay_ms - t->step_ms;

	t->successes++;
	return t->delay_ms = d < t->min_ms ? t->min_ms : d;
}

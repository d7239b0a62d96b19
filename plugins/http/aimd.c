/* aimd.c — the dispatch throttle (plugins/http/http_internal.h). */

#include "plugins/http/http_internal.h"

void http__aimd_init(http_aimd *t, double min_ms, double max_ms,
		     double multiplier, double step_ms)
{
	*t = (http_aimd){ .delay_ms = min_ms, .min_ms = min_ms, .max_ms = max_ms,
		     .multiplier = multiplier, .step_ms = step_ms };
}

double http__aimd_on_capacity(http_aimd *t)
{
	double d = t->delay_ms * t->multiplier;

	if (d < HTTP_AIMD_FLOOR_MS)
		d = HTTP_AIMD_FLOOR_MS;
	if (d > t->max_ms)
		d = t->max_ms;
	if (d < t->min_ms)
		d = t->min_ms;
	t->capacity_errors++;
	return t->delay_ms = d;
}

double http__aimd_on_success(http_aimd *t)
{
	double d = t->delay_ms - t->step_ms;

	t->successes++;
	return t->delay_ms = d < t->min_ms ? t->min_ms : d;
}

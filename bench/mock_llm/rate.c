/*
 * rate.c — a limit over time: a constant or a repeating schedule of
 * phases (see limit.h). The phase at time t is found the way the mock has
 * always found it: the seconds since the origin modulo the period, then
 * the phases' lengths subtracted in order.
 */
#include "limit.h"

#include <math.h>

/* Guards the walks over phases: a day of 1 ms phases is 86.4 million. */
enum { MAX_STEPS = 4000000 };

double mock_rate_at(const mock_rate *r, uint64_t t, uint64_t *next)
{
	double period = 0, pos;
	uint64_t nx;
	size_t i;

	if (!r->ph || !r->n) {
		if (next)
			*next = MOCK_NEVER;
		return r->value;
	}
	if (t < r->origin) { /* before a schedule change: its first phase */
		if (next)
			*next = r->origin;
		return r->ph[0].value;
	}
	for (i = 0; i < r->n; i++)
		period += r->ph[i].secs;
	pos = fmod((double)(t - r->origin) / 1000.0, period);
	for (i = 0; i + 1 < r->n; i++) {
		if (pos < r->ph[i].secs)
			break;
		pos -= r->ph[i].secs;
	}
	if (next) {
		nx = t + (uint64_t)ceil((r->ph[i].secs - pos) * 1000.0);
		*next = nx > t ? nx : t + 1;
	}
	return r->ph[i].value;
}

double mock_rate_integral(const mock_rate *r, uint64_t a, uint64_t b)
{
	double sum = 0;
	int steps = 0;

	while (a < b) {
		uint64_t nx;
		double v = mock_rate_at(r, a, &nx);

		if (v < 0)
			return -1;
		if (nx > b || ++steps > MAX_STEPS)
			nx = b;
		sum += v * (double)(nx - a) / 1000.0;
		a = nx;
	}
	return sum;
}

void mock_limits_of(mock_limits *L, const mock_cfg *cfg, uint64_t sched_ms,
		    uint64_t csched_ms)
{
	L->req = (mock_rate){ cfg->nphases ? cfg->phases : NULL, cfg->nphases,
			      cfg->rps > 0 ? cfg->rps : -1, sched_ms };
	L->tok = (mock_rate){ NULL, 0, cfg->tpm > 0 ? cfg->tpm / 60 : -1, 0 };
	L->conc = (mock_rate){ cfg->ncphases ? cfg->cphases : NULL,
			       cfg->ncphases, cfg->max_concurrent > 0 ?
			       (double)cfg->max_concurrent : -1, csched_ms };
	L->req_shape = (mock_shape){ (mock_lim_mode)cfg->limiter,
				     (uint64_t)cfg->window_ms, cfg->burst };
	L->tok_shape = (mock_shape){ (mock_lim_mode)cfg->limiter, 60000, 0 };
	L->grain_shape = (mock_shape){ MOCK_LIM_FIXED, (uint64_t)cfg->grain_ms, 0 };
}

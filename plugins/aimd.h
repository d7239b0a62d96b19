/*
 * aimd.h — the dispatch throttle of the shared HTTP executor (DESIGN.md
 * §10): additive increase of the request rate, multiplicative decrease.
 *
 * The throttle is a delay between two dispatches. It starts at the
 * minimum. A capacity error (429, 503, 529, a connect timeout) multiplies
 * it by `backoff_multiplier`, never below a 100 ms floor, capped at
 * `max_ms`; each success subtracts `recovery_step_ms`, never below
 * `min_ms`. Pure arithmetic, no clock, no lock: the executor owns it.
 */
#ifndef ELSPETH_AIMD_H
#define ELSPETH_AIMD_H

#define AIMD_FLOOR_MS 100.0 /* the first backoff after a quiet period */

typedef struct aimd {
	double delay_ms;      /* current delay between dispatches */
	double min_ms, max_ms;
	double multiplier;    /* > 1 */
	double step_ms;       /* recovery per success, >= 0 */
	unsigned long long capacity_errors, successes;
} aimd;

/* Sets the bounds; the delay starts at min_ms. Callers validate
 * 0 <= min_ms <= max_ms, multiplier >= 1, step_ms >= 0. */
void aimd_init(aimd *t, double min_ms, double max_ms, double multiplier,
	       double step_ms);
/* A capacity error: delay = min(max(delay * multiplier, 100), max_ms),
 * and never below min_ms. Returns the new delay. */
double aimd_on_capacity(aimd *t);
/* A success: delay = max(delay - step_ms, min_ms). */
double aimd_on_success(aimd *t);

#endif /* ELSPETH_AIMD_H */

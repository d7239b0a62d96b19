/*
 * tail.c — an upstream's recent answer times, their median and 99th
 * percentile, and what follows from them: the tail deadline of an
 * attempt and when a hedged copy goes (http_internal.h; ADR 0029).
 *
 * Percentiles, not a mean: LLM answer times are heavy-tailed, and a few
 * stuck requests must move neither the deadline of the others nor the
 * hedge delay much. The ring is sorted afresh every HTTP_TAIL_EVERY
 * answers (512 floats: a few microseconds, on the executor thread).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/http/http_internal.h"

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank percentile q (0..1) of the sorted v[0..n). */
static double rank(const float *v, unsigned n, double q)
{
	unsigned i = (unsigned)(q * (double)n);

	return v[i < n ? i : n - 1];
}

static void recompute(http_tail *t)
{
	float v[HTTP_TAIL_N];

	memcpy(v, t->rtt, t->n * sizeof(*v));
	qsort(v, t->n, sizeof(*v), cmp_float);
	t->p50 = rank(v, t->n, 0.50);
	t->p99 = rank(v, t->n, 0.99);
	t->since = 0;
}

void http__tail_add(http_tail *t, double seconds)
{
	t->rtt[t->head] = (float)seconds;
	t->head = (t->head + 1) % HTTP_TAIL_N;
	if (t->n < HTTP_TAIL_N)
		t->n++;
	if (t->n >= HTTP_TAIL_MIN && ++t->since >= HTTP_TAIL_EVERY)
		recompute(t);
	else if (t->n == HTTP_TAIL_MIN)
		recompute(t);
}

double http__tail_deadline(const http_tail *t, double factor, double timeout_s)
{
	double d;

	if (t->n < HTTP_TAIL_MIN || factor <= 0 || t->p99 <= 0)
		return 0;
	d = factor * t->p99;
	if (d < HTTP_TAIL_FLOOR_S)
		d = HTTP_TAIL_FLOOR_S;
	return d < timeout_s ? d : 0;
}

double http__tail_hedge_after(const http_tail *t)
{
	return t->n < HTTP_TAIL_MIN ? 0 : t->p99;
}

/*
 * transform_delay.c — "delay", a testing aid: holds each row for a latency
 * that depends only on the seed and the row (never on timing), so tests
 * and benchmarks get slow, jittery, out-of-order completion without a
 * network. Output = input.
 *
 *   distribution: fixed (ms) | uniform (min_ms, max_ms) |
 *                 lognormal (median_ms, sigma)
 *   seed:         mixes into the per-row draw (default 0)
 *   error_rate:   share of rows (0..1) that fail with a retryable error:
 *   error_mode:   first_attempt (default: the retry succeeds, so outputs
 *                 stay deterministic when retry.max_attempts >= 2) or
 *                 always (every attempt fails: the row goes to on_error).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugins/plugins_internal.h"

#define MAX_MS 3.6e6 /* one hour: the longest any option allows */

enum dist { D_FIXED, D_UNIFORM, D_LOGNORMAL };

typedef struct delay {
	enum dist dist;
	double ms, min_ms, max_ms, median_ms, sigma, error_rate;
	bool always;
	long long seed;
	pthread_mutex_t lock;        /* guards failed[] */
	uint64_t *failed;            /* rows whose first attempt failed */
	size_t nfailed, capfailed;
} delay;

/* The first 64 bits of the row's canonical hash: what its draws start
 * from (computed once per row, and only when a draw is needed). */
static uint64_t row_key(const json_t *row)
{
	uint8_t h[CORE_SHA256_LEN];
	core_buf b = { 0 };
	uint64_t x = 0;

	if (core_canon_append(&b, row, NULL) == 0)
		core_sha256(b.data, b.len, h);
	else
		memset(h, 0, sizeof(h));
	core_buf_release(&b);
	for (int i = 0; i < 8; i++)
		x = x << 8 | h[i];
	return x;
}

/* A 64-bit draw from the row's key, the seed and a salt. */
static uint64_t row_draw(const delay *d, uint64_t key, uint64_t salt)
{
	uint64_t x = key;

	x ^= (uint64_t)d->seed * 0x9e3779b97f4a7c15ull + salt * 0xbf58476d1ce4e5b9ull;
	x ^= x >> 31;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 29);
}

static double unit(uint64_t x)
{
	return ((double)(x >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
}

static double latency_ms(const delay *d, uint64_t key)
{
	double u = unit(row_draw(d, key, 1)), v = unit(row_draw(d, key, 2));

	switch (d->dist) {
	case D_UNIFORM:
		return d->min_ms + (d->max_ms - d->min_ms) * u;
	case D_LOGNORMAL:
		/* Box–Muller normal, then exp; a tail past MAX_MS is held
		 * MAX_MS (sigma up to 10 reaches 1e13 ms). */
		return fmin(d->median_ms * exp(d->sigma * sqrt(-2 * log(u)) * cos(2 * M_PI * v)),
			    MAX_MS);
	case D_FIXED:
		break;
	}
	return d->ms;
}

/* True the first time a flaky row is seen, false on its retry. */
static bool first_failure(delay *d, uint64_t id)
{
	bool fail = true;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nfailed; i++) {
		if (d->failed[i] == id) {
			d->failed[i] = d->failed[--d->nfailed];
			fail = false;
			break;
		}
	}
	if (fail && d->nfailed == d->capfailed) {
		size_t cap = d->capfailed ? d->capfailed * 2 : 64;
		uint64_t *v = realloc(d->failed, cap * sizeof(*v));

		if (v) {
			d->failed = v;
			d->capfailed = cap;
		}
	}
	if (fail && d->nfailed < d->capfailed)
		d->failed[d->nfailed++] = id;
	pthread_mutex_unlock(&d->lock);
	return fail;
}

static int delay_process(void *state, const json_t *row, json_t **out,
			 plg_ctx *ctx, core_err *err)
{
	delay *d = state;
	/* A fixed latency and no errors need no draw. */
	uint64_t key = d->dist != D_FIXED || d->error_rate > 0 ? row_key(row) : 0;
	double ms = latency_ms(d, key);
	struct timespec ts;

	if (ms > 0) {
		/* The row is held until `ms` after it arrived: the engine's
		 * blocking hook (which may hand rows to other workers) runs
		 * within that time, as it does while an HTTP request is out. */
		uint64_t until = core_now_mono_ns() + (uint64_t)(ms * 1e6);

		ts.tv_sec = (time_t)(until / 1000000000u);
		ts.tv_nsec = (long)(until % 1000000000u);
		plg_blocking(ctx, true);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		plg_blocking(ctx, false);
	}
	if (d->error_rate > 0 && unit(row_draw(d, key, 3)) < d->error_rate &&
	    (d->always || first_failure(d, row_draw(d, key, 4)))) {
		core_err_set(err, CORE_EDATA, "delay: injected transient error (error_rate %g)",
			     d->error_rate);
		err->retryable = true;
		return CORE_EDATA;
	}
	*out = json_incref((json_t *)row);
	return 0;
}

static const plg_option delay_own[] = {
	{ "distribution", "string", false, "\"fixed\"",
	  "fixed, uniform or lognormal" },
	{ "ms", "number", false, "0",
	  "fixed: the delay in milliseconds" },
	{ "min_ms", "number", false, "0",
	  "uniform: the least delay" },
	{ "max_ms", "number", false, "0",
	  "uniform: the most delay" },
	{ "median_ms", "number", false, "0",
	  "lognormal: the median delay" },
	{ "sigma", "number", false, "0",
	  "lognormal: the spread (0..10)" },
	{ "seed", "integer", false, "0",
	  "the seed of the per-row draws" },
	{ "error_rate", "number", false, "0",
	  "the share of rows whose attempts fail, retryably (0..1)" },
	{ "error_mode", "string", false, "\"first_attempt\"",
	  "first_attempt: only a row's first attempt fails; always: every attempt" },
	{ NULL }
};
static const plg_option *const delay_opts[] = { delay_own, plg__schema_opts, plg__input_opts, NULL };

static const char *const modes[] = { "first_attempt", "always", NULL };
static const char *const dists[] = { "fixed", "uniform", "lognormal", NULL };

static int parse(delay *d, const core_node *o, core_err *err)
{
	const core_node *dn = core_map_get(o, "distribution");
	const core_node *mn = core_map_get(o, "error_mode");
	int idx = 0, mode = 0, rc;

	if ((rc = plg__check_options(o, delay_opts, err)) ||
	    (dn && (rc = core_node_enum(dn, dists, &idx, err))) ||
	    (rc = core_opt_double(o, "ms", 0, MAX_MS, &d->ms, err)) ||
	    (rc = core_opt_double(o, "min_ms", 0, MAX_MS, &d->min_ms, err)) ||
	    (rc = core_opt_double(o, "max_ms", 0, MAX_MS, &d->max_ms, err)) ||
	    (rc = core_opt_double(o, "median_ms", 0, MAX_MS, &d->median_ms, err)) ||
	    (rc = core_opt_double(o, "sigma", 0, 10, &d->sigma, err)) ||
	    (rc = core_opt_int(o, "seed", -(1LL << 62), 1LL << 62, &d->seed, err)) ||
	    (rc = core_opt_double(o, "error_rate", 0, 1, &d->error_rate, err)) ||
	    (mn && (rc = core_node_enum(mn, modes, &mode, err))))
		return rc;
	d->always = mode == 1;
	d->dist = (enum dist)idx;
	if (d->dist == D_UNIFORM && d->max_ms < d->min_ms)
		return core_err_at(err, CORE_ECONFIG, o, "max_ms is less than min_ms");
	return 0;
}

static void delay_close(void *state)
{
	delay *d = state;

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d->failed);
	free(d);
}

static int delay_open(const plg_env *env, const core_node *options,
		      void **state, core_err *err)
{
	delay *d = calloc(1, sizeof(*d));
	plg_schema *schema = NULL;
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!d)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	pthread_mutex_init(&d->lock, NULL);
	rc = parse(d, options, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(options, "schema"), &schema, err);
	plg__schema_free(schema);
	if (rc) {
		delay_close(d);
		return rc;
	}
	*state = d;
	return 0;
}

const plg_transform_ops plg__delay = {
	.name = "delay",
	.description = "Testing aid: hold each row for a seeded per-row latency (fixed, uniform, lognormal), optionally fail first attempts",
	.options = delay_opts,
	.open = delay_open,
	.process = delay_process,
	.close = delay_close,
};

/*
 * capsim.c — the capacity controllers, simulated against limiters that
 * behave like real providers (docs/adr/0016-capacity-control.md).
 *
 * For each scenario, each controller (today's AIMD delay throttle, a
 * Vector-style adaptive concurrency limit, the capacity controller of
 * plugins/http/capacity.c) drives a client with saturating demand against
 * the same simulated server (bench/capsim/server.c), and an oracle that
 * sees the server's state sets the bar: goodput is what a controller got
 * admitted divided by what the oracle got admitted in the same time (or,
 * for a concurrency cap, by cap / mean latency x duration). Medians over
 * the seeds.
 *
 * Where a scenario has a request-rate limit, a fourth line, "paced", shows
 * a client that knows the limit at every instant and paces at 97 % of it:
 * the best a pacing client (one that never sends in bursts) could do
 * without having to learn anything.
 *
 * Usage: elspeth-capsim [-d SECONDS] [-m] [-n SEEDS] [-s SCENARIO]
 *                       [-t CONTROLLER [-S SEED]]
 *   -d SECONDS    run every scenario this long instead
 *   -m            a Markdown table
 *   -n SEEDS      seeds 1..SEEDS (3)
 *   -s SCENARIO   only this scenario (a name from the list, or a prefix)
 *   -t CTL        a per-second trace of one run (aimd, vector, cap, oracle, paced)
 *                 on stderr, for the scenario given with -s; -S its seed (1)
 * Exit status: 0 when the capacity controller meets every target, 1 if not.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/capsim/capsim.h"

#define ROLL1(w) { .mode = SIM_LIM_ROLLING, .window_s = 1, .refused_weight = (w) }
#define FLAKY { .p = { { 20, 10 }, { 5, 10 } }, .n = 2 }
#define ONE(v) { .p = { { (v), 1 } }, .n = 1 }

static sim_scenario scenarios[] = {
	{ .name = "flaky", .title = "flaky 20<->5 req/s / 10 s, 1 s rolling, refusals count, 100 ms, no hints",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 1, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1,
	  .min_goodput = 0.92, .max_refused = 0.05 },
	{ .name = "flaky-ms", .title = "same, exact retry-after-ms",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 1, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1,
	  .hint = SIM_HINT_RETRY_AFTER_MS, .hint_factor = 1,
	  .min_goodput = 0.97, .max_refused = 0.02 },
	{ .name = "cap56", .title = "concurrency cap 56, pool 64, lognormal 150 ms sigma 0.5",
	  .pool = 64, .duration_s = 120, .cap = ONE(56), .lat = SIM_LAT_LOGNORMAL,
	  .lat_ms = 150, .sigma = 0.5, .refuse_ms = 1, .vs_capacity = true,
	  .min_goodput = 0.95, .max_refused = 0.02 },
	{ .name = "quota600", .title = "600 req/min, 60 s fixed window, x-ratelimit headers, 100 ms",
	  .pool = 64, .duration_s = 180, .req = { .mode = SIM_LIM_FIXED, .window_s = 60,
	  .refused_weight = 1, .rate = ONE(10) }, .lat_ms = 100, .refuse_ms = 1,
	  .ratelimit_headers = true, .quota = true,
	  .min_goodput = 0.97, .max_refused = 0.01 },
	{ .name = "nolimit", .title = "no limit, N = 256, 20 ms",
	  .pool = 256, .duration_s = 30, .lat_ms = 20, .refuse_ms = 1,
	  .min_goodput = 0.99, .max_refused = 0 },
	{ .name = "flaky-ms-x2", .title = "flaky, retry-after-ms 2x too long",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 1, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1,
	  .hint = SIM_HINT_RETRY_AFTER_MS, .hint_factor = 2 },
	{ .name = "flaky-ms-x0.5", .title = "flaky, retry-after-ms 2x too short",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 1, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1,
	  .hint = SIM_HINT_RETRY_AFTER_MS, .hint_factor = 0.5 },
	{ .name = "flaky-ra", .title = "flaky, exact Retry-After (whole seconds)",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 1, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1,
	  .hint = SIM_HINT_RETRY_AFTER, .hint_factor = 1 },
	{ .name = "flaky-w0", .title = "flaky, refusals not counted, no hints",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_ROLLING, .window_s = 1,
	  .refused_weight = 0, .rate = FLAKY }, .lat_ms = 100, .refuse_ms = 1 },
	{ .name = "cap-drop", .title = "concurrency cap 56 -> 28 -> 56 every 20 s, lognormal 150 ms",
	  .pool = 64, .duration_s = 120, .cap = { .p = { { 56, 20 }, { 28, 20 } }, .n = 2 },
	  .lat = SIM_LAT_LOGNORMAL, .lat_ms = 150, .sigma = 0.5, .refuse_ms = 1,
	  .vs_capacity = true },
	{ .name = "rpm300", .title = "300 req/min, 60 s rolling, refusals count, no headers, 100 ms",
	  .pool = 64, .duration_s = 300, .req = { .mode = SIM_LIM_ROLLING, .window_s = 60,
	  .refused_weight = 1, .rate = ONE(5) }, .lat_ms = 100, .refuse_ms = 1,
	  .quota = true },
	{ .name = "bucket", .title = "token bucket 10 req/s, burst 20, no hints, 100 ms",
	  .pool = 64, .duration_s = 120, .req = { .mode = SIM_LIM_BUCKET, .window_s = 2,
	  .refused_weight = 0, .rate = ONE(10) }, .lat_ms = 100, .refuse_ms = 1 },
	{ .name = "tpm", .title = "100k tokens/min (2k a request), 60 s rolling, headers, 2 s",
	  .pool = 64, .duration_s = 300, .tok = { .mode = SIM_LIM_ROLLING, .window_s = 60,
	  .refused_weight = 0, .rate = ONE(100000.0 / 60) }, .tokens_per_req = 2000,
	  .lat_ms = 2000, .refuse_ms = 1, .ratelimit_headers = true, .quota = true },
	{ .name = "queue", .title = "queueing server: latency 100 ms x (1 + in flight / 16), no limit",
	  .pool = 64, .duration_s = 60, .lat = SIM_LAT_QUEUE, .lat_ms = 100, .queue_c = 16,
	  .refuse_ms = 1 },
	{ .name = "queue-shared", .title = "the same server shared: others keep 0 / 96 in flight, 20 s each, it refuses above 192",
	  .pool = 64, .duration_s = 120, .lat = SIM_LAT_QUEUE, .lat_ms = 100, .queue_c = 16,
	  .background = { .p = { { 0, 20 }, { 96, 20 } }, .n = 2 }, .cap = ONE(192),
	  .refuse_ms = 1 },
};

#define NSCEN (sizeof(scenarios) / sizeof(*scenarios))
#define MAX_SEEDS 15

typedef struct row {
	double goodput, refused, attempts, peak, latency;
} row;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What a perfect client gets admitted in the run. */
static double ideal(const sim_scenario *sc, uint64_t seed)
{
	sim_result o;

	if (sc->vs_capacity) {
		/* the cap's time average over the lognormal mean latency */
		double mean = sc->lat_ms * exp(sc->sigma * sc->sigma / 2) / 1e3, cap = 0, t = 0;

		for (int i = 0; i < sc->cap.n; i++) {
			cap += sc->cap.p[i].value * sc->cap.p[i].secs;
			t += sc->cap.p[i].secs;
		}
		return cap / t / mean * sc->duration_s;
	}
	sim_run(sc, SIM_CTL_ORACLE, seed, false, &o);
	return (double)o.admitted;
}

static void run_row(const sim_scenario *sc, sim_ctl_kind k, int seeds, row *out)
{
	double g[MAX_SEEDS], r[MAX_SEEDS], a[MAX_SEEDS], p[MAX_SEEDS], l[MAX_SEEDS];

	for (int s = 0; s < seeds; s++) {
		sim_result res;
		double best = ideal(sc, (uint64_t)s + 1);

		sim_run(sc, k, (uint64_t)s + 1, false, &res);
		g[s] = best > 0 ? (double)res.admitted / best : 0;
		r[s] = res.attempts ? (double)res.refused / (double)res.attempts : 0;
		a[s] = res.admitted ? (double)res.attempts / (double)res.admitted : 0;
		p[s] = res.peak_inflight;
		l[s] = res.mean_latency_ms;
	}
	out->goodput = median(g, seeds);
	out->refused = median(r, seeds);
	out->attempts = median(a, seeds);
	out->peak = median(p, seeds);
	out->latency = median(l, seeds);
}

/* Does the capacity controller meet the scenario's targets? */
static bool meets(const sim_scenario *sc, const row *r)
{
	if (sc->min_goodput > 0 && r->goodput < sc->min_goodput)
		return false;
	if (sc->min_goodput > 0 && r->refused > sc->max_refused + 1e-12)
		return false;
	return true;
}

/* The paced diagnostic (knows the request limit) only has a limit to know
 * in the scenarios with a request-rate limiter. */
static bool has_paced(const sim_scenario *sc)
{
	return sc->req.mode != SIM_LIM_NONE && sc->req.rate.n;
}

static void print_scenario(const sim_scenario *sc, const row *rows, bool md)
{
	static const sim_ctl_kind ks[] = { SIM_CTL_AIMD, SIM_CTL_VECTOR, SIM_CTL_CAP,
					   SIM_CTL_PACED };
	char target[64] = "";

	if (sc->min_goodput > 0)
		snprintf(target, sizeof(target), "target >= %.0f %%, <= %.0f %% refused%s",
			 sc->min_goodput * 100, sc->max_refused * 100,
			 meets(sc, &rows[2]) ? ": met" : ": MISSED");
	if (md) {
		printf("| %s |", sc->name);
		for (int i = 0; i < 3; i++)
			printf(" %.1f %% / %.1f %% / %.2f / %.0f |", rows[i].goodput * 100,
			       rows[i].refused * 100, rows[i].attempts, rows[i].peak);
		if (has_paced(sc))
			printf(" %.1f %% / %.1f %% |", rows[3].goodput * 100, rows[3].refused * 100);
		else
			printf(" - |");
		printf(" %s |\n", target);
		return;
	}
	printf("%s: %s%s%s\n", sc->name, sc->title, *target ? "\n  " : "", target);
	printf("  %-7s %8s %8s %9s %6s %8s\n", "", "goodput", "refused", "attempts", "peak",
	       "latency");
	for (int i = 0; i < (has_paced(sc) ? 4 : 3); i++)
		printf("  %-7s %7.1f%% %7.1f%% %9.2f %6.0f %6.0fms\n", sim_ctl_name(ks[i]),
		       rows[i].goodput * 100, rows[i].refused * 100, rows[i].attempts,
		       rows[i].peak, rows[i].latency);
}

static int trace(const char *scen, const char *ctl, uint64_t seed)
{
	sim_result r;

	for (size_t i = 0; i < NSCEN; i++) {
		if (strcmp(scenarios[i].name, scen))
			continue;
		for (int k = 0; k < SIM_CTL_LAST; k++)
			if (!strcmp(sim_ctl_name((sim_ctl_kind)k), ctl)) {
				sim_run(&scenarios[i], (sim_ctl_kind)k, seed, true, &r);
				printf("admitted %llu refused %llu peak %u latency %.0f ms, ideal %.0f\n",
				       r.admitted, r.refused, r.peak_inflight, r.mean_latency_ms,
				       ideal(&scenarios[i], seed));
				return 0;
			}
	}
	fprintf(stderr, "capsim: no scenario %s or controller %s\n", scen, ctl);
	return 2;
}

int main(int argc, char **argv)
{
	const char *only = NULL, *tctl = NULL;
	int seeds = 3, opt, missed = 0;
	double duration = 0;
	uint64_t tseed = 1;
	bool md = false;

	while ((opt = getopt(argc, argv, "d:mn:s:t:S:")) != -1) {
		switch (opt) {
		case 'd': duration = atof(optarg); break;
		case 'm': md = true; break;
		case 'n': seeds = atoi(optarg); break;
		case 's': only = optarg; break;
		case 't': tctl = optarg; break;
		case 'S': tseed = (uint64_t)atoll(optarg); break;
		default:
			fprintf(stderr, "usage: elspeth-capsim [-d SECONDS] [-m] [-n SEEDS] "
				"[-s SCENARIO] [-t CONTROLLER [-S SEED]]\n");
			return 2;
		}
	}
	if (seeds < 1 || seeds > MAX_SEEDS)
		seeds = 3;
	if (duration > 0)
		for (size_t i = 0; i < NSCEN; i++)
			scenarios[i].duration_s = duration;
	if (tctl)
		return trace(only ? only : "flaky", tctl, tseed);
	if (md)
		printf("| scenario | aimd: goodput / refused / attempts / peak | vector | capacity | paced oracle | target |\n"
		       "|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < NSCEN; i++) {
		const sim_scenario *sc = &scenarios[i];
		row rows[4];

		if (only && strncmp(sc->name, only, strlen(only)))
			continue;
		run_row(sc, SIM_CTL_AIMD, seeds, &rows[0]);
		run_row(sc, SIM_CTL_VECTOR, seeds, &rows[1]);
		run_row(sc, SIM_CTL_CAP, seeds, &rows[2]);
		if (has_paced(sc))
			run_row(sc, SIM_CTL_PACED, seeds, &rows[3]);
		print_scenario(sc, rows, md);
		missed += !meets(sc, &rows[2]);
		fflush(stdout);
	}
	return missed ? 1 : 0;
}

/*
 * capsim.h — what the files of the capacity simulator share (bench/capsim.c).
 *
 * A discrete-event simulation of one upstream (the server: rate limiters,
 * a concurrency cap, latency, hints) and one client with saturating
 * demand (rows always waiting, each retried until admitted) driven by a
 * controller: today's AIMD delay throttle, a Vector-style adaptive
 * concurrency limit, the capacity controller (plugins/http/capacity.c),
 * or an oracle that sees the server's state (the "perfect client").
 * Times are uint64_t nanoseconds from the start of the run. Everything is
 * deterministic for a given seed.
 */
#ifndef ELSPETH_CAPSIM_H
#define ELSPETH_CAPSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/http/http_internal.h"

#define SIM_NS 1000000000ull
#define SIM_MS 1000000ull
#define SIM_MAX_PHASES 4

/* ---------------------------------------------------------------- random */

typedef struct sim_rng {
	uint64_t s;
} sim_rng;

void sim_rng_seed(sim_rng *r, uint64_t seed);
double sim_rng_unit(sim_rng *r);   /* [0, 1) */
double sim_rng_normal(sim_rng *r); /* N(0, 1) */

/* -------------------------------------------------------------- scenarios */

typedef enum sim_lim_mode {
	SIM_LIM_NONE = 0,
	SIM_LIM_ROLLING, /* sliding log: every arrival in the last window_s */
	SIM_LIM_FIXED,   /* a count reset at multiples of window_s */
	SIM_LIM_BUCKET,  /* token bucket: burst rate * window_s, refill rate */
} sim_lim_mode;

typedef enum sim_lat_mode {
	SIM_LAT_FIXED = 0,
	SIM_LAT_LOGNORMAL, /* median lat_ms, sigma */
	SIM_LAT_QUEUE,     /* lat_ms * (1 + in flight / queue_c) */
} sim_lat_mode;

typedef enum sim_hint_mode {
	SIM_HINT_NONE = 0,
	SIM_HINT_RETRY_AFTER,    /* Retry-After: whole seconds, rounded up */
	SIM_HINT_RETRY_AFTER_MS, /* retry-after-ms, rounded up */
} sim_hint_mode;

/* A repeating schedule: value for secs, then the next phase, ... */
typedef struct sim_phase {
	double value, secs;
} sim_phase;

typedef struct sim_sched {
	sim_phase p[SIM_MAX_PHASES];
	int n; /* 0: no schedule (no limit) */
} sim_sched;

typedef struct sim_limiter_cfg {
	sim_lim_mode mode;
	double window_s;
	double refused_weight; /* what a refused arrival adds (0 or 1) */
	sim_sched rate;        /* budget per second; the window holds rate * window_s */
} sim_limiter_cfg;

typedef struct sim_scenario {
	const char *name;
	const char *title;
	unsigned pool;          /* max_inflight */
	double duration_s;
	sim_limiter_cfg req;    /* requests */
	sim_limiter_cfg tok;    /* tokens (tokens_per_req each) */
	double tokens_per_req;
	sim_sched cap;          /* server concurrency cap, value 0: none */
	sim_sched background;   /* others' requests in flight at the server */
	sim_lat_mode lat;
	double lat_ms, sigma, queue_c;
	double refuse_ms;       /* a refusal is answered after this */
	sim_hint_mode hint;
	double hint_factor;     /* 1: exact; 0.5, 2: wrong */
	bool ratelimit_headers; /* x-ratelimit-{limit,remaining,reset}-* */
	double cfg_rps, cfg_tps;/* configured budgets given to the controllers */
	/* targets (0: none) */
	double min_goodput, max_refused;
	bool quota;             /* a quota scenario (no attempts target) */
	bool vs_capacity;       /* goodput against cap / mean latency */
} sim_scenario;

/* ----------------------------------------------------------------- server */

typedef struct sim_entry {
	uint64_t t;
	double w;
} sim_entry;

typedef struct sim_lim {
	const sim_limiter_cfg *cfg;
	sim_entry *e;            /* rolling: ring of arrivals */
	size_t head, n, cap;
	double sum;              /* rolling: weight in the ring */
	uint64_t fixed_start;    /* fixed: the current window's start */
	double fixed_count;
	double tokens;           /* bucket */
	uint64_t bucket_t;
	uint64_t offset;         /* of the schedule, from the run's start */
} sim_lim;

typedef struct sim_server {
	const sim_scenario *sc;
	sim_lim req, tok;
	unsigned current, peak;  /* admitted and not finished */
	uint64_t offset;         /* where in their period the schedules start */
	sim_rng rng;
} sim_server;

/* What the server answers to one arrival. */
typedef struct sim_answer {
	bool admitted;
	uint64_t latency;        /* until the answer reaches the client */
	http_hints hints;
} sim_answer;

void sim_server_init(sim_server *s, const sim_scenario *sc, uint64_t seed);
void sim_server_release(sim_server *s);
/* A request (cost tokens) arrives at now: admitted or refused; counted. */
void sim_server_arrive(sim_server *s, uint64_t now, double tokens, sim_answer *a);
/* An admitted request finished. */
void sim_server_finish(sim_server *s);
/* Would a request be admitted now (nothing counted)? For the oracle. */
bool sim_server_would_admit(sim_server *s, uint64_t now, double tokens);
/* The next time after now when what the server admits can change without
 * a completion (a window entry expires, a window or schedule phase ends,
 * a bucket refills); UINT64_MAX: never. For the oracle. */
uint64_t sim_server_next_change(sim_server *s, uint64_t now, double tokens);
double sim_sched_at(const sim_sched *s, uint64_t now);

/* ------------------------------------------------------------ controllers */

typedef enum sim_ctl_kind {
	SIM_CTL_AIMD = 0, /* today's executor (plugins/http/aimd.c, exec.c) */
	SIM_CTL_VECTOR,   /* Vector-style adaptive concurrency */
	SIM_CTL_CAP,      /* plugins/http/capacity.c */
	SIM_CTL_ORACLE,   /* sees the server: the perfect client */
	SIM_CTL_PACED,    /* knows the limit, paces at 97 % of it (diagnostic) */
	SIM_CTL_LAST
} sim_ctl_kind;

typedef struct sim_ctl sim_ctl;

const char *sim_ctl_name(sim_ctl_kind k);
sim_ctl *sim_ctl_create(sim_ctl_kind k, const sim_scenario *sc, uint64_t now);
void sim_ctl_free(sim_ctl *c);
/* 0: send now (*k: in flight including it); else when to ask again,
 * HTTP_CAP_WAIT_DONE: after a completion. */
uint64_t sim_ctl_acquire(sim_ctl *c, uint64_t now, double tokens, unsigned *k);
void sim_ctl_done(sim_ctl *c, uint64_t sent, unsigned k, uint64_t now, bool admitted,
		  const http_hints *h, double tokens);
/* How long a refused row waits before it may be sent again (today's
 * executor delays each refused request; the others gate dispatch). */
uint64_t sim_ctl_retry_delay(sim_ctl *c, const http_hints *h);
/* One line of the controller's state, for traces. */
void sim_ctl_describe(sim_ctl *c, char *buf, size_t n);

/* ------------------------------------------------------------------- runs */

typedef struct sim_result {
	unsigned long long admitted, refused, attempts;
	unsigned peak_inflight;
	double mean_latency_ms;   /* of admitted requests */
} sim_result;

/* Runs a scenario with a controller; trace: per-second lines on stderr. */
void sim_run(const sim_scenario *sc, sim_ctl_kind k, uint64_t seed, bool trace,
	     sim_result *out);

#endif /* ELSPETH_CAPSIM_H */

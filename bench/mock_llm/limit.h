/*
 * limit.h — the rate limiters (docs/mock_llm.md, "Limiters"): how a limit
 * varies in time (mock_rate: a constant or a repeating schedule) and the
 * three ways of enforcing it (mock_limit: rolling window, fixed window,
 * token bucket), used for requests and for tokens alike.
 *
 * Units: times are CLOCK_MONOTONIC milliseconds (loop.h); a rate is units
 * (requests or tokens) per second; a rate below 0 means no limit, and a
 * rate of 0 admits nothing in every mode (a schedule's outage phase).
 *
 * A window of length W at rate R holds N = floor(R x W / 1000) units. When
 * that is below 1, the window is 1000 / R ms long and holds 1 unit. A bucket holds the burst, or N (at least 1)
 * when the burst is 0. The limits follow the rate in force at the moment
 * of each decision. Single-threaded; nothing here allocates except the
 * rolling window's ring (aborts on OOM, buf.h).
 */
#ifndef MOCK_LIMIT_H
#define MOCK_LIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define MOCK_NEVER UINT64_MAX

/* A rate over time. ph is borrowed (the config owns it). */
typedef struct mock_rate {
	const mock_phase *ph; /* a repeating schedule, or NULL */
	size_t n;
	double value;         /* the constant when ph is NULL (< 0: none) */
	uint64_t origin;      /* the time the schedule's first phase starts */
} mock_rate;

/* The rate in force at t; *next (may be NULL) gets the first time after t
 * at which it may change (MOCK_NEVER for a constant). */
double mock_rate_at(const mock_rate *r, uint64_t t, uint64_t *next);

/* The integral of the rate over [a, b) in units, or -1 when there is no
 * limit somewhere in it. */
double mock_rate_integral(const mock_rate *r, uint64_t a, uint64_t b);

/* How a limiter enforces its rate. */
typedef struct mock_shape {
	mock_lim_mode mode;
	uint64_t window_ms;
	double burst;         /* bucket size in units; 0: a window's worth */
} mock_shape;

typedef struct mock_lim_entry {
	uint64_t t;
	double cum;           /* the ring's running total, this entry included */
} mock_lim_entry;

/* The limits a config puts in force: the request rate (--rps, --rpm or
 * --schedule), tokens (--tpm, over a 60 s window) and the concurrency cap
 * (--max-concurrent or --concurrency-schedule, a mock_rate of slots). */
typedef struct mock_limits {
	mock_rate req, tok, conc;
	mock_shape req_shape, tok_shape;
	mock_shape grain_shape; /* --grain-ms: the request rate over short
				 * fixed windows too; window_ms 0: none */
} mock_limits;

/* L from cfg (borrowing its schedules) and the schedules' clocks. */
void mock_limits_of(mock_limits *L, const mock_cfg *cfg, uint64_t sched_ms,
		    uint64_t csched_ms);

/* A limiter's state. Zero it with mock_limit_init; release the ring with
 * mock_limit_release. The fields are private to limit.c. */
typedef struct mock_limit {
	mock_lim_entry *ring;  /* rolling: charges, oldest at head */
	size_t head, count, cap;
	double base;           /* rolling: cum of the last entry dropped */
	uint64_t origin;       /* fixed: windows are [origin + kW, ..) */
	uint64_t win;          /* fixed: the start of the window of `used` */
	double used;
	double level;          /* bucket: units in it (HUGE_VAL: full) */
	uint64_t last;         /* bucket: when level was computed */
} mock_limit;

/* What rate-limit headers report (hint.h). */
typedef struct mock_lim_view {
	int active;            /* 0: no limit in force, nothing to report */
	double limit;          /* units a window or the bucket holds */
	double remaining;      /* units that would still be admitted now */
	uint64_t reset_ms;     /* until the limiter is back to its initial
				* state with no more charges */
} mock_lim_view;

/* An empty limiter (a full bucket; fixed windows start at now). */
void mock_limit_init(mock_limit *l, uint64_t now);
void mock_limit_release(mock_limit *l);
/* dst = a deep copy of src (dst uninitialised). */
void mock_limit_copy(mock_limit *dst, const mock_limit *src);

/* 1 when `cost` units fit now. */
int mock_limit_allows(mock_limit *l, const mock_shape *s, const mock_rate *r,
		      uint64_t now, double cost);

/* Takes `cost` units (an admission, or a refused request's weight). A
 * bucket never falls below minus its size. No-op without a limit. */
void mock_limit_charge(mock_limit *l, const mock_shape *s, const mock_rate *r,
		       uint64_t now, double cost);

/* The earliest time >= from at which `cost` units fit, if nothing else is
 * charged; MOCK_NEVER when not within a day. */
uint64_t mock_limit_next(const mock_limit *l, const mock_shape *s,
			 const mock_rate *r, uint64_t from, double cost);

/* The limiter as rate-limit headers show it at now. */
void mock_limit_view(mock_limit *l, const mock_shape *s, const mock_rate *r,
		     uint64_t now, mock_lim_view *v);

/*
 * Capacity: advances `shadow`, a limiter that only a perfect client uses,
 * through [from, to], admitting as many units as it allows the moment it
 * allows them (a bucket's level counts as taken at once, then its refill
 * as it comes). Returns the units admitted; sets *unbounded when there was
 * no limit at some time in the span.
 */
double mock_limit_greedy(mock_limit *shadow, const mock_shape *s,
			 const mock_rate *r, uint64_t from, uint64_t to,
			 int *unbounded);

#endif

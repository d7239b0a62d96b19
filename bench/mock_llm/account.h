/*
 * account.h — the capacity a perfect client could have had admitted, and
 * the time series of GET /admin/series (docs/mock_llm.md, "Capacity and
 * goodput").
 *
 * The span accounted runs from the first chat request after start or
 * reset to the latest event (a chat request, or a config change). Over
 * it, each limit gives a capacity in requests:
 *  - rate: a shadow of the request limiter, used only by a greedy client
 *    that takes every request the moment the limiter would admit it (with
 *    --grain-ms, the lesser of that and the same over the grain's fixed
 *    windows: an upper bound of what both together admit);
 *  - tokens: the same with the token limiter, in tokens, divided by the
 *    mean token charge of the requests that arrived;
 *  - concurrency: C(first) + (integral of the cap over the span) / the mean
 *    service time of the admitted requests;
 * and the capacity is the least of those that apply (null when none do).
 * Single-threaded; owned by the policy.
 */
#ifndef MOCK_ACCOUNT_H
#define MOCK_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "limit.h"

/* One interval of the series. */
typedef struct mock_point {
	long arrivals, admitted, ok, refused;
	long peak;                 /* most requests in flight */
	double rate, conc, tpm;    /* limits in force at its start; -1 none */
} mock_point;

typedef struct mock_acct {
	int started;               /* a chat request came since reset */
	uint64_t first, upto;      /* the span */
	mock_limit req, tok, grain; /* the greedy client's limiters */
	double req_cap, tok_cap;   /* requests, tokens */
	double grain_cap;          /* requests, by --grain-ms's windows */
	double conc0, conc_s;      /* the cap at first; its integral (slot s) */
	int req_unb, tok_unb, conc_unb; /* no limit at some time */
	uint64_t s_origin, s_ms;   /* the series' start and interval */
	mock_point *pts;
	size_t npts, cap;
	int truncated;             /* the series hit its length limit */
} mock_acct;

/* Starts accounting and the series at now. Release with
 * mock_acct_release. */
void mock_acct_init(mock_acct *a, uint64_t now, uint64_t series_ms);
void mock_acct_release(mock_acct *a);

/* At each chat request, before its decision: the first one starts the
 * span (the shadows copy the real limiters), every one extends it. */
void mock_acct_arrive(mock_acct *a, const mock_limit *req,
		      const mock_limit *tok, const mock_limit *grain,
		      const mock_limits *L, uint64_t now);
/* Extends the span to now under L (before a config change). */
void mock_acct_advance(mock_acct *a, const mock_limits *L, uint64_t now);
/* The shadows copy the real limiters again (after a limiter was reset). */
void mock_acct_resync(mock_acct *a, const mock_limit *req,
		      const mock_limit *tok, const mock_limit *grain);

/* Empties the series and starts it again at now, every series_ms. */
void mock_acct_restart_series(mock_acct *a, uint64_t now,
			      uint64_t series_ms);

/* The series point holding now, with the points before it filled in;
 * NULL past the length limit. `current` is the concurrency now. */
mock_point *mock_acct_point(mock_acct *a, const mock_limits *L, uint64_t now,
			    long current);

/* Adds "capacity", "capacity_by", "capacity_span_seconds",
 * "mean_latency_ms" and "goodput" (ok / capacity) to stats. mean_cost is
 * the mean token charge of the requests, mean_lat_ms the mean service
 * time of the admitted ones. */
void mock_acct_stats(const mock_acct *a, json_t *stats, double mean_cost,
		     double mean_lat_ms, long ok);

/* The series document (a new reference), filled up to now. */
json_t *mock_acct_series(mock_acct *a, const mock_limits *L, uint64_t now,
			 long current);

#endif

/*
 * account.c — capacity and the series (see account.h).
 */
#include "account.h"
#include "buf.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A million points: 28 hours at 100 ms, 40 MB. */
enum { MAX_POINTS = 1 << 20 };

void mock_acct_init(mock_acct *a, uint64_t now, uint64_t series_ms)
{
	memset(a, 0, sizeof(*a));
	a->s_origin = now;
	a->s_ms = series_ms ? series_ms : 100;
}

void mock_acct_release(mock_acct *a)
{
	mock_limit_release(&a->req);
	mock_limit_release(&a->tok);
	mock_limit_release(&a->grain);
	free(a->pts);
	memset(a, 0, sizeof(*a));
}

static void copy_limiters(mock_acct *a, const mock_limit *req,
			  const mock_limit *tok, const mock_limit *grain)
{
	mock_limit_copy(&a->req, req);
	mock_limit_copy(&a->tok, tok);
	mock_limit_copy(&a->grain, grain);
}

void mock_acct_resync(mock_acct *a, const mock_limit *req,
		      const mock_limit *tok, const mock_limit *grain)
{
	if (!a->started)
		return;
	mock_limit_release(&a->req);
	mock_limit_release(&a->tok);
	mock_limit_release(&a->grain);
	copy_limiters(a, req, tok, grain);
}

/* The request rate's capacity over [from, to]: its limiter's, or with a
 * grain the lesser of that and the grain's (an upper bound of what both
 * admit together: a perfect client is never flattered). */
static double req_greedy(mock_acct *a, const mock_limits *L, uint64_t from,
			 uint64_t to)
{
	double r = mock_limit_greedy(&a->req, &L->req_shape, &L->req, from, to,
				     &a->req_unb);

	if (!L->grain_shape.window_ms)
		return r;
	a->grain_cap += mock_limit_greedy(&a->grain, &L->grain_shape, &L->req,
					  from, to, &a->req_unb);
	return r;
}

void mock_acct_advance(mock_acct *a, const mock_limits *L, uint64_t now)
{
	double c;

	if (!a->started || now <= a->upto)
		return;
	a->req_cap += req_greedy(a, L, a->upto, now);
	a->tok_cap += mock_limit_greedy(&a->tok, &L->tok_shape, &L->tok,
					a->upto, now, &a->tok_unb);
	c = mock_rate_integral(&L->conc, a->upto, now);
	if (c < 0)
		a->conc_unb = 1;
	else
		a->conc_s += c;
	a->upto = now;
}

void mock_acct_arrive(mock_acct *a, const mock_limit *req,
		      const mock_limit *tok, const mock_limit *grain,
		      const mock_limits *L, uint64_t now)
{
	double c;

	if (a->started) {
		mock_acct_advance(a, L, now);
		return;
	}
	a->started = 1;
	a->first = a->upto = now;
	copy_limiters(a, req, tok, grain);
	a->req_cap = req_greedy(a, L, now, now);
	a->tok_cap = mock_limit_greedy(&a->tok, &L->tok_shape, &L->tok, now,
				       now, &a->tok_unb);
	c = mock_rate_at(&L->conc, now, NULL);
	if (c < 0)
		a->conc_unb = 1;
	else
		a->conc0 = c;
}

/* ------------------------------------------------------------- stats */

static json_t *num_or_null(double v, int none)
{
	return none ? json_null() : json_real(v);
}

void mock_acct_stats(const mock_acct *a, json_t *stats, double mean_cost,
		     double mean_lat_ms, long ok)
{
	int tok_none = !a->started || a->tok_unb || mean_cost <= 0;
	int conc_none = !a->started || a->conc_unb || mean_lat_ms <= 0;
	double rate = a->grain_cap > 0 && a->grain_cap < a->req_cap ?
		      a->grain_cap : a->req_cap, tok = tok_none ? 0 : a->tok_cap / mean_cost;
	double conc = conc_none ? 0 :
		      a->conc0 + a->conc_s * 1000.0 / mean_lat_ms;
	double cap = -1;
	json_t *by = json_object();

	if (a->started && !a->req_unb)
		cap = rate;
	if (!tok_none && (cap < 0 || tok < cap))
		cap = tok;
	if (!conc_none && (cap < 0 || conc < cap))
		cap = conc;
	json_object_set_new(by, "rate", num_or_null(rate, !a->started ||
						    a->req_unb));
	json_object_set_new(by, "tokens", num_or_null(tok, tok_none));
	json_object_set_new(by, "token_budget", num_or_null(a->tok_cap,
					!a->started || a->tok_unb));
	json_object_set_new(by, "concurrency", num_or_null(conc, conc_none));
	json_object_set_new(stats, "capacity", num_or_null(cap, cap < 0));
	json_object_set_new(stats, "capacity_by", by);
	json_object_set_new(stats, "capacity_span_seconds", json_real(
		a->started ? (double)(a->upto - a->first) / 1000.0 : 0));
	json_object_set_new(stats, "mean_latency_ms", json_real(mean_lat_ms));
	json_object_set_new(stats, "goodput", num_or_null(
		cap > 0 ? (double)ok / cap : 0, cap <= 0));
}

/* ------------------------------------------------------------ series */

void mock_acct_restart_series(mock_acct *a, uint64_t now,
			      uint64_t series_ms)
{
	free(a->pts);
	a->pts = NULL;
	a->npts = a->cap = 0;
	a->truncated = 0;
	a->s_origin = now;
	a->s_ms = series_ms ? series_ms : 100;
}

mock_point *mock_acct_point(mock_acct *a, const mock_limits *L, uint64_t now,
			    long current)
{
	size_t i = (size_t)((now - a->s_origin) / a->s_ms);

	if (i >= MAX_POINTS) {
		a->truncated = 1;
		return NULL;
	}
	while (a->npts <= i) {
		uint64_t t = a->s_origin + a->npts * a->s_ms;
		mock_point *p;

		if (a->npts == a->cap) {
			a->cap = a->cap ? 2 * a->cap : 256;
			a->pts = mock_xrealloc(a->pts, a->cap * sizeof(*a->pts));
		}
		p = &a->pts[a->npts++];
		memset(p, 0, sizeof(*p));
		p->peak = current;
		p->rate = mock_rate_at(&L->req, t, NULL);
		p->conc = mock_rate_at(&L->conc, t, NULL);
		p->tpm = L->tok.value < 0 ? -1 : L->tok.value * 60;
	}
	return &a->pts[i];
}

static json_t *column(const mock_acct *a, size_t off, int real)
{
	json_t *col = json_array();

	for (size_t i = 0; i < a->npts; i++) {
		const char *p = (const char *)&a->pts[i] + off;

		if (!real) {
			json_array_append_new(col, json_integer(
				*(const long *)(const void *)p));
		} else {
			double v = *(const double *)(const void *)p;

			json_array_append_new(col, v < 0 ? json_null() :
					      json_real(v));
		}
	}
	return col;
}

json_t *mock_acct_series(mock_acct *a, const mock_limits *L, uint64_t now,
			 long current)
{
	static const struct { const char *name; size_t off; int real; } COLS[] = {
		{ "arrivals", offsetof(mock_point, arrivals), 0 },
		{ "admitted", offsetof(mock_point, admitted), 0 },
		{ "ok", offsetof(mock_point, ok), 0 },
		{ "refused", offsetof(mock_point, refused), 0 },
		{ "peak_concurrency", offsetof(mock_point, peak), 0 },
		{ "rate_limit", offsetof(mock_point, rate), 1 },
		{ "concurrency_limit", offsetof(mock_point, conc), 1 },
		{ "tpm", offsetof(mock_point, tpm), 1 },
	};
	json_t *s = json_object(), *t = json_array();

	mock_acct_point(a, L, now, current);
	for (size_t i = 0; i < a->npts; i++)
		json_array_append_new(t, json_integer((json_int_t)(i * a->s_ms)));
	json_object_set_new(s, "interval_ms", json_integer((json_int_t)a->s_ms));
	json_object_set_new(s, "since_reset_ms",
			    json_integer((json_int_t)(now - a->s_origin)));
	json_object_set_new(s, "truncated", json_boolean(a->truncated));
	json_object_set_new(s, "t_ms", t);
	for (size_t i = 0; i < sizeof(COLS) / sizeof(COLS[0]); i++)
		json_object_set_new(s, COLS[i].name,
				    column(a, COLS[i].off, COLS[i].real));
	return s;
}

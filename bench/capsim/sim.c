/*
 * sim.c — the event loop and the client (capsim.h).
 *
 * The client has `rows` rows, always (an admitted row is replaced by a
 * fresh one: saturating demand), at most `pool` requests in flight, and
 * asks its controller before each dispatch. A refused row is retried:
 * at once (the controller gates dispatch) or, for today's executor, after
 * its own retry delay. The network adds nothing: a request reaches the
 * server when sent; its answer comes back after the server's latency.
 * Events at the same time run in the order they were scheduled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capsim.h"

enum { EV_DONE, EV_WAKE, EV_ROW_DUE };

typedef struct ev {
	uint64_t t, seq;
	int type;
	unsigned id;
} ev;

typedef struct heap {
	ev *v;
	size_t n, cap;
	uint64_t seq;
} heap;

static bool before(const ev *a, const ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(heap *h, uint64_t t, int type, unsigned id)
{
	size_t i;

	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		if (!(h->v = realloc(h->v, h->cap * sizeof(*h->v))))
			abort();
	}
	i = h->n++;
	h->v[i] = (ev){ t, h->seq++, type, id };
	while (i && before(&h->v[i], &h->v[(i - 1) / 2])) {
		ev x = h->v[i];

		h->v[i] = h->v[(i - 1) / 2];
		h->v[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static ev heap_pop(heap *h)
{
	ev top = h->v[0];
	size_t i = 0;

	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		ev x;

		if (l < h->n && before(&h->v[l], &h->v[m]))
			m = l;
		if (r < h->n && before(&h->v[r], &h->v[m]))
			m = r;
		if (m == i)
			break;
		x = h->v[i];
		h->v[i] = h->v[m];
		h->v[m] = x;
		i = m;
	}
	return top;
}

typedef struct req {
	uint64_t sent;
	unsigned k;
	sim_answer a;
} req;

typedef struct client {
	const sim_scenario *sc;
	sim_ctl_kind kind;
	sim_ctl *ctl;
	sim_server srv;
	heap h;
	req *reqs;
	unsigned *free_ids;
	size_t nreqs, nfree, cap;
	unsigned ready, inflight;
	uint64_t wake_at, end, paced_next;
	sim_result *res;
	double lat_sum;
	/* trace */
	bool trace;
	uint64_t sec;
	unsigned sec_ok, sec_refused;
} client;

static unsigned new_req(client *c)
{
	if (c->nfree)
		return c->free_ids[--c->nfree];
	if (c->nreqs == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		if (!(c->reqs = realloc(c->reqs, c->cap * sizeof(*c->reqs))) ||
		    !(c->free_ids = realloc(c->free_ids, c->cap * sizeof(*c->free_ids))))
			abort();
	}
	return (unsigned)c->nreqs++;
}

static void flush_trace(client *c, uint64_t now)
{
	char d[160];

	while (c->trace && now / SIM_NS > c->sec) {
		sim_ctl_describe(c->ctl, d, sizeof(d));
		fprintf(stderr, "%4llu s  ok %4u  refused %4u  in flight %3u  limit %5.1f  %s\n",
			(unsigned long long)c->sec, c->sec_ok, c->sec_refused, c->inflight,
			c->sc->req.rate.n ? sim_sched_at(&c->sc->req.rate, c->sec * SIM_NS + c->srv.offset) : 0,
			d);
		c->sec++;
		c->sec_ok = c->sec_refused = 0;
	}
}

static void send_one(client *c, uint64_t now, unsigned k)
{
	unsigned id = new_req(c);
	req *r = &c->reqs[id];

	r->sent = now;
	r->k = k;
	sim_server_arrive(&c->srv, now, c->sc->tokens_per_req, &r->a);
	c->ready--;
	if (++c->inflight > c->res->peak_inflight)
		c->res->peak_inflight = c->inflight;
	if (now < c->end) {
		c->res->attempts++;
		if (r->a.admitted) {
			c->res->admitted++;
			c->lat_sum += (double)r->a.latency;
			c->sec_ok++;
		} else {
			c->res->refused++;
			c->sec_refused++;
		}
	}
	heap_push(&c->h, now + r->a.latency, EV_DONE, id);
}

static void wake_at(client *c, uint64_t now, uint64_t t)
{
	if (t == HTTP_CAP_WAIT_DONE || t == UINT64_MAX)
		return;
	if (t <= now)
		t = now + 1;
	if (!c->wake_at || t < c->wake_at) {
		c->wake_at = t;
		heap_push(&c->h, t, EV_WAKE, 0);
	}
}

static void dispatch(client *c, uint64_t now)
{
	double tok = c->sc->tokens_per_req;
	unsigned k;

	if (c->kind == SIM_CTL_ORACLE) {
		while (c->ready && c->inflight < c->sc->pool &&
		       sim_server_would_admit(&c->srv, now, tok))
			send_one(c, now, c->inflight + 1);
		if (c->ready && c->inflight < c->sc->pool)
			wake_at(c, now, sim_server_next_change(&c->srv, now, tok));
		return;
	}
	if (c->kind == SIM_CTL_PACED) { /* 97 % of the limit now, evenly */
		double r = 0.97 * sim_sched_at(&c->sc->req.rate, now + c->srv.offset);

		if (c->ready && c->inflight < c->sc->pool && now >= c->paced_next) {
			send_one(c, now, c->inflight + 1);
			c->paced_next = now + (uint64_t)(1e9 / r);
		}
		wake_at(c, now, c->paced_next);
		return;
	}
	while (c->ready && c->inflight < c->sc->pool) {
		uint64_t w = sim_ctl_acquire(c->ctl, now, tok, &k);

		if (w) {
			wake_at(c, now, w);
			return;
		}
		send_one(c, now, k);
	}
}

/* CAPSIM_EVENTS=SECONDS: every answer until then, on stderr. */
static void trace_event(client *c, uint64_t now, const req *r)
{
	static double until = -1;
	char d[160];

	if (until < 0) {
		const char *e = getenv("CAPSIM_EVENTS");

		until = e ? atof(e) : 0;
	}
	if ((double)now / 1e9 >= until)
		return;
	sim_ctl_describe(c->ctl, d, sizeof(d));
	fprintf(stderr, "  %9.4f sent %9.4f k %3u %s ra %.3f | in flight %u | %s\n",
		(double)now / 1e9, (double)r->sent / 1e9, r->k,
		r->a.admitted ? "ok     " : "REFUSED", r->a.hints.retry_after_s, c->inflight, d);
}

static void done(client *c, uint64_t now, unsigned id)
{
	req *r = &c->reqs[id];
	uint64_t d;

	c->inflight--;
	if (r->a.admitted)
		sim_server_finish(&c->srv);
	sim_ctl_done(c->ctl, r->sent, r->k, now, r->a.admitted, &r->a.hints,
		     c->sc->tokens_per_req);
	trace_event(c, now, r);
	if (r->a.admitted || !(d = sim_ctl_retry_delay(c->ctl, &r->a.hints)))
		c->ready++;
	else
		heap_push(&c->h, now + d, EV_ROW_DUE, 0);
	c->free_ids[c->nfree++] = id;
}

void sim_run(const sim_scenario *sc, sim_ctl_kind kind, uint64_t seed, bool trace,
	     sim_result *out)
{
	client c = { .sc = sc, .kind = kind, .res = out, .trace = trace };

	memset(out, 0, sizeof(*out));
	c.end = (uint64_t)(sc->duration_s * 1e9);
	c.ready = sc->pool * 8 > 512 ? sc->pool * 8 : 512;
	sim_server_init(&c.srv, sc, seed);
	c.ctl = sim_ctl_create(kind, sc, 0);
	dispatch(&c, 0);
	while (c.h.n) {
		ev e = heap_pop(&c.h);

		if (e.t >= c.end)
			break;
		flush_trace(&c, e.t);
		switch (e.type) {
		case EV_DONE:
			done(&c, e.t, e.id);
			break;
		case EV_WAKE:
			if (e.t == c.wake_at)
				c.wake_at = 0;
			break;
		case EV_ROW_DUE:
			c.ready++;
			break;
		}
		dispatch(&c, e.t);
	}
	flush_trace(&c, c.end);
	out->mean_latency_ms = out->admitted ? c.lat_sum / (double)out->admitted / 1e6 : 0;
	sim_ctl_free(c.ctl);
	sim_server_release(&c.srv);
	free(c.h.v);
	free(c.reqs);
	free(c.free_ids);
}

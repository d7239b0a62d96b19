/*
 * http.h — the HTTP executor of the LLM transforms and of web_scrape
 * (docs/architecture.md §10). One per process: one thread runs a libcurl
 * multi loop for every request of every client, so connections are
 * reused (HTTP/2 streams on HTTPS), and rows waiting for a slot cost a
 * queue entry, not a thread or a connection.
 *
 * Each client (an LLM transform) opens a handle with the URL it sends to
 * and its credential. Clients with the same upstream — scheme, host,
 * port, credential (kept as a SHA-256 digest, in memory only) and
 * capacity-control mode — share one queue and one capacity controller:
 * two transforms, or a multi-query transform's queries, on one key adapt
 * together to the one limit they share. The upstream's concurrency
 * ceiling is the largest `pool_size` of its clients, its budgets the
 * smallest each of them configured.
 *
 * Capacity control (http_mode): ADAPTIVE, the controller of capacity.c
 * (docs/adr/0016-capacity-control.md): pace, window, every hint the
 * provider gives, for all requests to the upstream; or AIMD, the delay
 * between dispatches of docs/adr/0010 (kept to compare with).
 *
 * A request's attempts: capacity errors (429, 503, 529, a connect timeout)
 * are retried when the controller allows, without counting against
 * retry.max_attempts, until `max_capacity_retry_s` has passed since the
 * request's first capacity error; a request waiting to retry holds no
 * slot, and every attempt, first or retry, is paced by the same
 * controller (a storm cannot multiply the load). Transient errors (other
 * 5xx, network errors, timeouts, a 2xx body the caller's check rejects)
 * are retried per the settings' `retry` (backoff with jitter,
 * max_attempts in all). 4xx fail at once. Account errors (an exhausted
 * quota, credits, a spend limit) and a hint to wait longer than
 * `max_retry_after_s` stop the run (plg_ctx.halt): every request of that
 * upstream not yet sent is left for `elspeth resume`. Every attempt is
 * reported through the row's plg_ctx (plugins.h) as it completes.
 *
 * A web client (http_cfg.web: `web_scrape`) fetches pages from servers of
 * every kind rather than calling an API, and differs: its requests are
 * GETs (the body is what is recorded as the request, never sent), a
 * compressed answer is decoded, a 3xx is an answer (the caller follows
 * redirects itself, checking each hop), the answer's headers and the
 * address connected to are handed back, and a request may be pinned to
 * an address (http_req.connect_to: no DNS, no proxy). Nothing one server
 * says affects the others: a 429 or 503 is a transient error of its own
 * request, retried per `retry` and teaching the gate nothing, and no
 * answer stops the run (no account errors, no over-long hints). Nothing
 * is replayed on a resume (a page is fetched again).
 */
#ifndef ELSPETH_HTTP_H
#define ELSPETH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "core/core.h"
#include "plugins/plugins.h"

typedef struct http_client http_client;

typedef enum http_mode {
	HTTP_MODE_ADAPTIVE = 0, /* the capacity controller */
	HTTP_MODE_AIMD,         /* the dispatch-delay throttle (http_internal.h) */
	HTTP_MODE_LAST
} http_mode;

typedef struct http_cfg {
	unsigned pool_size;           /* requests in flight at most, >= 1 */
	double timeout_s;             /* one attempt, > 0 */
	http_mode mode;
	double min_dispatch_delay_ms; /* AIMD bounds; ADAPTIVE: a */
	double max_dispatch_delay_ms; /* minimum gap between dispatches, */
	double backoff_multiplier;    /* the others unused */
	double recovery_step_ms;
	double max_capacity_retry_s;  /* capacity retries give up after this */
	double max_retry_after_s;     /* a longer hint halts the run (exit 3) */
	double max_rps, max_tps;      /* budgets (rate_limit), 0: none */
	/* Tail control (docs/adr/0029): an attempt with no answer after
	 * tail_factor x the p99 of the upstream's recent answers (at least
	 * 1 s, only if sooner than timeout_s) is cut and sent again at once
	 * with the whole timeout; 0: off. hedge: a copy of an attempt still
	 * unanswered after the p99 is sent, the first good answer is used
	 * and the other copy cancelled (both are recorded). hedge_idle
	 * (without hedge): such a copy only after HTTP_HEDGE_IDLE_FACTOR x
	 * the p99, and only when, then, nothing else waits to be sent and a
	 * slot is free — a stuck request at the end of a run, or in a pool
	 * smaller than the server's capacity. */
	double tail_factor;
	bool hedge, hedge_idle;
	bool web;                     /* a web client (above) */
	/* The upstream's name in messages and stats and, with the mode,
	 * its identity, instead of the URL's scheme://host:port: a client
	 * of many hosts (web_scrape). NULL: the URL's. */
	const char *name;
} http_cfg;

/* The class (plugins.h) of a finished transfer, from the curl result
 * code, the HTTP status and whether a connection was made: a 2xx is
 * PLG_CLASS_OK; 429, 503, 529 and a timeout before connecting are
 * PLG_CLASS_CAPACITY; a timeout once connected PLG_CLASS_TIMEOUT;
 * another curl error PLG_CLASS_NETWORK; a 4xx but 408 and 429
 * PLG_CLASS_CLIENT; any other status PLG_CLASS_SERVER. Pure;
 * PLG_CLASS_MALFORMED (the request's check) and PLG_CLASS_GAVE_UP (the
 * capacity deadline) are decided elsewhere. */
plg_error_class http_classify(CURLcode rc, long http_status, bool connected);
/* true for the classes retried per `retry`. */
bool http_transient(plg_error_class c);

/* One request and, after http_run, its final result. */
typedef struct http_req {
	/* in (valid until http_run returns) */
	const char *url;
	struct curl_slist *headers;  /* read only; may be shared */
	const char *body;
	size_t body_len;
	const char *name;            /* recorded with each attempt; may be NULL */
	double tokens;               /* estimated cost in tokens, 0: unknown */
	/* Checks a 2xx body: 0 if usable, else fills msg (a malformed
	 * envelope: transient). *tokens (0 on entry) receives the tokens
	 * the answer says it used, when it says. May be NULL. Runs on the
	 * executor thread. */
	int (*check)(void *arg, const char *body, size_t len, double *tokens,
		     char *msg, size_t msgsz);
	void *check_arg;
	/* A web client's pin (CURLOPT_CONNECT_TO entries, "HOST:PORT:ADDR:
	 * PORT"): the connection goes to that address, not to what DNS
	 * says, and no proxy is used. May be NULL. */
	struct curl_slist *connect_to;
	/* The largest answer body taken, in bytes (0: 16 MiB, past which an
	 * answer is malformed): past it the attempt fails, class client (not
	 * retried), too_big set. */
	size_t max_body;
	/* out */
	plg_error_class result;
	long http_status;            /* of the last attempt (0: none) */
	core_buf response;           /* the last attempt's body; caller
				      * releases with core_buf_release */
	char error[512];             /* when result != PLG_CLASS_OK */
	unsigned attempts;           /* every attempt, capacity retries too */
	unsigned capacity_retries;
	bool interrupted;            /* not finished: the run is stopping */
	uint64_t throttle_ns;        /* waited for a slot or the throttle */
	/* A web client's: the last attempt's answer's header lines as
	 * received ("Name: value\r\n" each; the caller releases it), and
	 * the address it was connected to ("" when none). Both are set
	 * before the attempt is recorded (ctx->record_call may read them). */
	core_buf resp_headers;
	char primary_ip[64];
	bool too_big;                /* the answer passed max_body */
} http_req;

/* Opens a client of the process's executor (starting it with the first)
 * for requests to url, signed with credential (may be NULL). With
 * cfg->name set, url is not used (may be NULL). Errors: CORE_ENOMEM,
 * CORE_EIO, CORE_ECONFIG (url). */
int http_open(const http_cfg *cfg, const char *url, const char *credential,
	      http_client **out, core_err *err);

/* Sends reqs[0..n) concurrently and returns when each has its final
 * result. Each attempt is recorded through ctx->record_call when ctx (and
 * its callback) is set, with submit/complete order among these n
 * requests; ctx->retry is the transient retry policy (NULL: one attempt).
 * Blocks the calling thread only. Thread-safe. */
void http_run(http_client *c, http_req *reqs, size_t n, plg_ctx *ctx);

/* The client's upstream as it stands (shared by its clients). */
typedef struct http_stats {
	unsigned pool_size, active, peak_active;
	http_mode mode;
	double delay_ms;              /* AIMD: the delay; ADAPTIVE: 1000 / pace */
	double rate;                  /* ADAPTIVE: requests/s allowed, 0: not paced */
	double window;                /* requests in flight allowed */
	const char *held_by;          /* what held dispatch back last, or NULL */
	unsigned long long requests, capacity_errors;
	const char *upstream;         /* scheme://host:port; valid while c is open */
	double p50_s, p99_s;          /* recent answer times, 0: too few */
	/* The server's capacity used: busy_s of slot time over span_s (the
	 * first send to the last answer) of `slots` the server announced
	 * (x-concurrency-limit; 0: not announced). */
	double busy_s, span_s;
	unsigned slots;
	unsigned long long tail_cuts, hedges_sent, hedges_won;
} http_stats;

/* A copy of the state of c's upstream, taken under the executor's lock
 * (held only for the copy): any thread, while c is open. */
void http_get_stats(http_client *c, http_stats *out);
/* The same, as a plugin reports its capacity (plg_ops.capacity). */
void http_get_capacity(http_client *c, plg_capacity *out);
/* The upstream's learnt state for a checkpoint (a new JSON object), and
 * putting it back (a resume starts where the crashed run stood; applied
 * only while nothing was sent, clamped to this configuration). */
json_t *http_save(http_client *c);
void http_restore(http_client *c, const json_t *saved);

/* Closes the client; the last one stops the thread. NULL allowed. No
 * http_run of this client may be running. */
void http_close(http_client *c);

/* The mode's settings name ("adaptive", "aimd"). */
const char *http_mode_name(http_mode m);

#endif /* ELSPETH_HTTP_H */

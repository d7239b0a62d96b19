/*
 * http_exec.h — the shared HTTP executor of the LLM transforms (docs/architecture.md
 * §10). One executor per transform: one thread runs a libcurl multi loop
 * for every row of the transform, so connections are reused, at most
 * `pool_size` requests are in flight, and rows waiting for a slot cost a
 * queue entry, not a thread or a connection.
 *
 * A request's attempts: capacity errors (429, 503, 529, a connect timeout)
 * raise the AIMD throttle (below) and are retried after max(Retry-After,
 * the throttle delay) without counting against retry.max_attempts, until
 * `max_capacity_retry_s` has passed since the request's first capacity
 * error; a request waiting to retry holds no slot. Transient errors
 * (other 5xx, network errors, timeouts, a 2xx body the caller's check
 * rejects) are retried per the settings' `retry` (backoff with jitter,
 * max_attempts in all). 4xx fail at once. Every attempt is reported
 * through the row's plg_ctx (plugins.h) as it completes.
 */
#ifndef ELSPETH_HTTP_H
#define ELSPETH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "core/core.h"
#include "plugins/plugins.h"

typedef struct http_exec http_exec;

typedef struct http_cfg {
	unsigned pool_size;           /* requests in flight at most, >= 1 */
	double timeout_s;             /* one attempt, > 0 */
	double min_dispatch_delay_ms; /* AIMD bounds (below) */
	double max_dispatch_delay_ms;
	double backoff_multiplier;
	double recovery_step_ms;
	double max_capacity_retry_s;  /* capacity retries give up after this */
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
	/* Checks a 2xx body: 0 if usable, else fills msg (a malformed
	 * envelope: transient). May be NULL. Runs on the executor thread. */
	int (*check)(void *arg, const char *body, size_t len, char *msg,
		     size_t msgsz);
	void *check_arg;
	/* out */
	plg_error_class result;
	long http_status;            /* of the last attempt (0: none) */
	core_buf response;           /* the last attempt's body; caller
				      * releases with core_buf_release */
	char error[512];             /* when result != PLG_CLASS_OK */
	unsigned attempts;           /* every attempt, capacity retries too */
	unsigned capacity_retries;
	bool interrupted;            /* gave up because the run is stopping */
	uint64_t throttle_ns;        /* waited for a slot or the throttle */
} http_req;

/* Starts an executor (its thread). Errors: CORE_ENOMEM, CORE_EIO. */
int http_open(const http_cfg *cfg, http_exec **out, core_err *err);

/* Sends reqs[0..n) concurrently and returns when each has its final
 * result. Each attempt is recorded through ctx->record_call when ctx (and
 * its callback) is set, with submit/complete order among these n
 * requests; ctx->retry is the transient retry policy (NULL: one attempt).
 * Blocks the calling thread only. Thread-safe. */
void http_run(http_exec *x, http_req *reqs, size_t n, plg_ctx *ctx);

typedef struct http_stats {
	unsigned pool_size, active, peak_active;
	double delay_ms;              /* the throttle now */
	unsigned long long requests, capacity_errors;
} http_stats;

void http_get_stats(http_exec *x, http_stats *out);
/* Sets the throttle's delay (a resume restores the crashed run's). */
void http_set_delay(http_exec *x, double delay_ms);

/* Stops the thread and frees everything. NULL allowed. No http_run may be
 * running. */
void http_close(http_exec *x);

/* ------------------------------------------------------------- throttle */

/*
 * The throttle — the dispatch throttle of the shared HTTP executor (docs/architecture.md
 * §10): additive increase of the request rate, multiplicative decrease.
 *
 * The throttle is a delay between two dispatches. It starts at the
 * minimum. A capacity error (429, 503, 529, a connect timeout) multiplies
 * it by `backoff_multiplier`, never below a 100 ms floor, capped at
 * `max_ms`; each success subtracts `recovery_step_ms`, never below
 * `min_ms`. Pure arithmetic, no clock, no lock: the executor owns it.
 */
#define HTTP_AIMD_FLOOR_MS 100.0 /* the first backoff after a quiet period */

typedef struct http_aimd {
	double delay_ms;      /* current delay between dispatches */
	double min_ms, max_ms;
	double multiplier;    /* > 1 */
	double step_ms;       /* recovery per success, >= 0 */
	unsigned long long capacity_errors, successes;
} http_aimd;

/* Sets the bounds; the delay starts at min_ms. Callers validate
 * 0 <= min_ms <= max_ms, multiplier >= 1, step_ms >= 0. */
void http_aimd_init(http_aimd *t, double min_ms, double max_ms, double multiplier,
	       double step_ms);
/* A capacity error: delay = min(max(delay * multiplier, 100), max_ms),
 * and never below min_ms. Returns the new delay. */
double http_aimd_on_capacity(http_aimd *t);
/* A success: delay = max(delay - step_ms, min_ms). */
double http_aimd_on_success(http_aimd *t);

#endif /* ELSPETH_HTTP_H */

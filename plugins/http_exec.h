/*
 * http_exec.h — the shared HTTP executor of the LLM transforms (DESIGN.md
 * §10). One executor per transform: one thread runs a libcurl multi loop
 * for every row of the transform, so connections are reused, at most
 * `pool_size` requests are in flight, and rows waiting for a slot cost a
 * queue entry, not a thread or a connection.
 *
 * A request's attempts: capacity errors (429, 503, 529, a connect timeout)
 * raise the AIMD throttle (aimd.h) and are retried after max(Retry-After,
 * the throttle delay) without counting against retry.max_attempts, until
 * `max_capacity_retry_s` has passed since the request's first capacity
 * error; a request waiting to retry holds no slot. Transient errors
 * (other 5xx, network errors, timeouts, a 2xx body the caller's check
 * rejects) are retried per the settings' `retry` (backoff with jitter,
 * max_attempts in all). 4xx fail at once. Every attempt is reported
 * through the row's plg_ctx (plugins.h) as it completes.
 */
#ifndef ELSPETH_HTTP_EXEC_H
#define ELSPETH_HTTP_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "core/core.h"
#include "plugins/plugins.h"

typedef struct hx_exec hx_exec;

typedef struct hx_cfg {
	unsigned pool_size;           /* requests in flight at most, >= 1 */
	double timeout_s;             /* one attempt, > 0 */
	double min_dispatch_delay_ms; /* AIMD bounds (aimd.h) */
	double max_dispatch_delay_ms;
	double backoff_multiplier;
	double recovery_step_ms;
	double max_capacity_retry_s;  /* capacity retries give up after this */
} hx_cfg;

/* How an attempt ended. */
typedef enum hx_class {
	HX_OK = 0,
	HX_CAPACITY,  /* 429, 503, 529, connect timeout: retried, not counted */
	HX_SERVER,    /* other 5xx, unexpected statuses: transient */
	HX_NETWORK,   /* refused, reset, dropped, truncated: transient */
	HX_TIMEOUT,   /* no complete answer within timeout_s: transient */
	HX_MALFORMED, /* a 2xx body the caller's check rejected: transient */
	HX_CLIENT,    /* other 4xx: fails at once */
	HX_GAVE_UP,   /* capacity retries for longer than max_capacity_retry_s */
	HX_CLASS_LAST
} hx_class;

/* "ok", "capacity", "server", ... never NULL. */
const char *hx_class_name(hx_class c);
/* The class of a finished transfer (curl result code, HTTP status, whether
 * a connection was made). Pure; HX_MALFORMED and HX_GAVE_UP are decided
 * elsewhere. */
hx_class hx_classify(CURLcode rc, long http_status, bool connected);
/* true for the classes retried per `retry`. */
bool hx_transient(hx_class c);

/* One request and, after hx_run, its final result. */
typedef struct hx_req {
	/* in (valid until hx_run returns) */
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
	hx_class result;
	long http_status;            /* of the last attempt (0: none) */
	core_buf response;           /* the last attempt's body; caller
				      * releases with core_buf_release */
	char error[512];             /* when result != HX_OK */
	unsigned attempts;           /* every attempt, capacity retries too */
	unsigned capacity_retries;
	bool interrupted;            /* gave up because the run is stopping */
	uint64_t throttle_ns;        /* waited for a slot or the throttle */
} hx_req;

/* Starts an executor (its thread). Errors: CORE_ENOMEM, CORE_EIO. */
int hx_open(const hx_cfg *cfg, hx_exec **out, core_err *err);

/* Sends reqs[0..n) concurrently and returns when each has its final
 * result. Each attempt is recorded through ctx->record_call when ctx (and
 * its callback) is set, with submit/complete order among these n
 * requests; ctx->retry is the transient retry policy (NULL: one attempt).
 * Blocks the calling thread only. Thread-safe. */
void hx_run(hx_exec *x, hx_req *reqs, size_t n, plg_ctx *ctx);

typedef struct hx_stats {
	unsigned pool_size, active, peak_active;
	double delay_ms;              /* the throttle now */
	unsigned long long requests, capacity_errors;
} hx_stats;

void hx_get_stats(hx_exec *x, hx_stats *out);
/* Sets the throttle's delay (a resume restores the crashed run's). */
void hx_set_delay(hx_exec *x, double delay_ms);

/* Stops the thread and frees everything. NULL allowed. No hx_run may be
 * running. */
void hx_close(hx_exec *x);

#endif /* ELSPETH_HTTP_EXEC_H */

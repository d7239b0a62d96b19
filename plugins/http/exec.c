/*
 * exec.c — the executor's loop (plugins/http/http.h; locks:
 * exec_internal.h).
 *
 * The loop, on the executor thread, for each upstream:
 *   promote  delayed jobs whose time has come join its ready queue;
 *   dispatch while a job is ready and the upstream's gate allows: start
 *            it (a job of a stopping run, or of a halted upstream, is left
 *            unsent for the resume; one past its capacity deadline gives
 *            up);
 * then for all of them at once:
 *   turn     epoll_wait on libcurl's sockets (the multi_socket API), the
 *            wake-up eventfd and the timeouts; curl_multi_socket_action on
 *            what is ready; then each finished transfer is classified,
 *            recorded (unlocked), told to its gate, and the job is queued
 *            again for a retry or made final;
 *   the wait lasts until a socket is ready, the earliest time a gate gave,
 *   a delayed job's or a hedge's time, libcurl's (at most 1 s), or a
 *   wake-up.
 *
 * Tail control (ADR 0029): each upstream keeps its recent answer times
 * (tail.c). An attempt gets a tail deadline, tail_factor x their p99,
 * when that comes before timeout_seconds; cut there, it is recorded as a
 * timeout and sent again at once, first in line, with the whole timeout
 * (a cut is no failure of the server's, so it is not counted against
 * retry.max_attempts, and a request is cut at most once). With hedging,
 * an attempt still unanswered after the p99 gets a copy (a job of its
 * own, `hedge`, sent before new requests and through the same gate);
 * the first good answer of the two is the request's, the other copy is
 * cancelled; each is recorded as a call. A copy that fails while its
 * twin runs only ends; the last one standing decides as a lone attempt
 * would.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "plugins/http/exec_internal.h"

#define MAX_BODY (16u << 20) /* a larger answer is malformed */
#define MAX_HEADERS (256u << 10) /* a web client keeps at most this of them */
#define MAX_POLL_MS 1000

/* ------------------------------------------------------ classification */

plg_error_class http_classify(CURLcode rc, long status, bool connected)
{
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return connected ? PLG_CLASS_TIMEOUT : PLG_CLASS_CAPACITY;
	if (rc != CURLE_OK)
		return PLG_CLASS_NETWORK;
	if (status >= 200 && status < 300)
		return PLG_CLASS_OK;
	if (status == 429 || status == 503 || status == 529)
		return PLG_CLASS_CAPACITY;
	if (status == 408 || status >= 500 || status < 200)
		return PLG_CLASS_SERVER;
	if (status >= 400)
		return PLG_CLASS_CLIENT;
	return PLG_CLASS_SERVER; /* 3xx: not an answer we can use, maybe passing */
}

bool http_transient(plg_error_class c)
{
	return c == PLG_CLASS_SERVER || c == PLG_CLASS_NETWORK ||
	       c == PLG_CLASS_TIMEOUT || c == PLG_CLASS_MALFORMED;
}

/* ---------------------------------------------------------------- queues */

static void push_ready(upstream *u, job *j)
{
	j->next = NULL;
	if (u->ready_tail)
		u->ready_tail->next = j;
	else
		u->ready = j;
	u->ready_tail = j;
}

static job *pop_ready(upstream *u)
{
	job *j = u->ready;

	if (j && !(u->ready = j->next))
		u->ready_tail = NULL;
	return j;
}

/* First in line: a request cut at its tail deadline goes again at once. */
static void push_front(upstream *u, job *j, uint64_t now)
{
	j->queued_mono = now;
	j->next = u->ready;
	u->ready = j;
	if (!u->ready_tail)
		u->ready_tail = j;
}

static void push_delayed(upstream *u, job *j)
{
	job **p = &u->delayed;

	while (*p && (*p)->due_mono <= j->due_mono)
		p = &(*p)->next;
	j->next = *p;
	*p = j;
}

void http__submit(upstream *u, job *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (jobs[i].req)
			push_ready(u, &jobs[i]);
}

/* The run is being interrupted (SIGINT/SIGTERM, or plg_ctx.halt): what
 * is not sent yet is left for `elspeth resume` (ADR 0012). */
static bool stopping(const job *j)
{
	return j->b->ctx && j->b->ctx->stop && atomic_load(j->b->ctx->stop);
}

/* Due delayed jobs join the front of the ready queue, in their order (a
 * stopping run's at once, to be left unsent). A retry goes first: its row
 * was started before the rows waiting behind it, and rows are released in
 * order. Every send, first or retry, passes the same gate, so retries
 * cannot add load. */
static void promote(upstream *u, uint64_t now)
{
	job **p = &u->delayed, *first = NULL, *last = NULL;

	while (*p) {
		job *j = *p;

		if (j->due_mono > now && !stopping(j) && !u->halted) {
			p = &j->next;
			continue;
		}
		*p = j->next;
		j->queued_mono = now;
		j->next = NULL;
		if (last)
			last->next = j;
		else
			first = j;
		last = j;
	}
	if (!first)
		return;
	last->next = u->ready;
	if (!u->ready)
		u->ready_tail = last;
	u->ready = first;
}

/* ------------------------------------------------------------- transfers */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	job *j = arg;
	size_t len = size * n, cap = j->req->max_body ? j->req->max_body : MAX_BODY;

	if (j->body.len + len > cap) {
		j->too_big = true;
		return 0;
	}
	return core_buf_append(&j->body, p, len) ? 0 : len;
}

static bool web(const job *j)
{
	return j->b->client->cfg.web;
}

/* Each header line of the answer (libcurl does not read most hints); a
 * status line starts a new answer (a 100 Continue, a redirect). A web
 * client keeps the lines of the last answer for its caller. */
static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	job *j = arg;
	size_t len = size * n;

	if (len >= 5 && !strncmp(p, "HTTP/", 5)) {
		http__hints_init(&j->hints);
		core_buf_reset(&j->hdrs);
		return len;
	}
	http__hints_header(&j->hints, p, len, time(NULL));
	if (web(j) && len > 2 && j->hdrs.len + len <= MAX_HEADERS &&
	    core_buf_append(&j->hdrs, p, len))
		return 0;
	return len;
}

static CURL *take_easy(http_exec *x)
{
	return x->nfree ? x->free_easy[--x->nfree] : curl_easy_init();
}

static void give_easy(http_exec *x, CURL *e)
{
	if (x->nfree < x->max_free) {
		curl_easy_reset(e);
		x->free_easy[x->nfree++] = e;
	} else
		curl_easy_cleanup(e);
}

/* HTTPS: a new request waits for a connection being set up rather than
 * opening one more, so that once HTTP/2 is negotiated (ALPN) the requests
 * share it as streams instead of one TLS handshake each. The trusted
 * certificates are OpenSSL's environment variables when set, as Python's
 * ssl and httpx read them (a private CA, a corporate proxy). */
static void tls_options(CURL *e, const char *url)
{
	const char *file = getenv("SSL_CERT_FILE"), *dir = getenv("SSL_CERT_DIR");

	if (strncasecmp(url, "https:", 6))
		return;
	curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	if (file && *file)
		curl_easy_setopt(e, CURLOPT_CAINFO, file);
	if (dir && *dir)
		curl_easy_setopt(e, CURLOPT_CAPATH, dir);
}

/* A web client's GET: http and https only (never another protocol, even
 * from a URL a server named), compressed answers decoded, redirects not
 * followed (its caller checks each hop); a pinned request connects to
 * its address and to no proxy (the environment's would get the host name
 * and resolve it itself). */
static void web_options(CURL *e, const http_req *r)
{
	curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	if (r->connect_to) {
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, r->connect_to);
		curl_easy_setopt(e, CURLOPT_PROXY, "");
	}
}

/* ---------------------------------------------------------------- hedges */

static void unlink_hedge(upstream *u, job *h)
{
	for (job **p = &u->hedges; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			return;
		}
}

/* A copy of attempt j, sent at its p99 (idle: HTTP_HEDGE_IDLE_FACTOR x
 * the p99, at least HTTP_HEDGE_IDLE_FLOOR_S) if j has no answer by then
 * and before its tail deadline (x->lock held; no memory: no copy). */
static void plan_hedge(upstream *u, job *j, uint64_t now, bool idle)
{
	double after = http__tail_hedge_after(&u->tail) * (idle ? HTTP_HEDGE_IDLE_FACTOR : 1);
	job *h, **p;

	if (idle && after > 0 && after < HTTP_HEDGE_IDLE_FLOOR_S)
		after = HTTP_HEDGE_IDLE_FLOOR_S;
	if (after <= 0 || (j->tail_s > 0 && after >= j->tail_s) || !(h = calloc(1, sizeof(*h))))
		return;
	h->req = j->req;
	h->b = j->b;
	h->primary = j;
	h->tail_cut = true; /* a copy runs to the whole timeout */
	h->idle_only = idle;
	h->due_mono = now + (uint64_t)(after * 1e9);
	j->hedge = h;
	for (p = &u->hedges; *p && (*p)->due_mono <= h->due_mono; p = &(*p)->next)
		;
	h->next = *p;
	*p = h;
}

static void free_hedge(job *h)
{
	core_buf_release(&h->body);
	core_buf_release(&h->hdrs);
	free(h);
}

/* Drops j's copy if it was never sent (x->lock held). */
static void drop_pending_hedge(upstream *u, job *j)
{
	job *h = j->hedge;

	if (!h || h->easy)
		return;
	unlink_hedge(u, h);
	j->hedge = NULL;
	free_hedge(h);
}

/* Starts one attempt (x->lock held). Returns false if curl refused. */
static bool start(http_exec *x, upstream *u, job *j, uint64_t now)
{
	const http_req *r = j->req;
	const http_cfg *cfg = &j->b->client->cfg;
	long timeout_ms = (long)(cfg->timeout_s * 1000.0);
	long connect_ms = timeout_ms < 10000 ? timeout_ms : 10000L;
	CURL *e = take_easy(x);

	if (!e)
		return false;
	core_buf_reset(&j->body);
	j->too_big = false;
	http__hints_init(&j->hints);
	j->easy = e;
	j->throttle_ns = now - j->queued_mono;
	j->req->throttle_ns += j->throttle_ns;
	if (!j->why && j->throttle_ns > 1000000)
		j->why = u->gate.held; /* it waited behind others held back */
	j->submitted_wall = core_now_wall_ns();
	j->started_mono = now;
	j->submit_order = ++j->b->submitted;
	j->tail_s = j->tail_cut || web(j) ? 0 :
		    http__tail_deadline(&u->tail, cfg->tail_factor, cfg->timeout_s);
	if (j->tail_s > 0)
		timeout_ms = (long)(j->tail_s * 1000.0);
	core_buf_reset(&j->hdrs);
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	if (web(j))
		web_options(e, r);
	else {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms < timeout_ms ? connect_ms : timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	tls_options(e, r->url);
	if (curl_multi_add_handle(x->multi, e) != CURLM_OK) {
		give_easy(x, e);
		j->easy = NULL;
		return false;
	}
	u->active++;
	u->requests++;
	if (u->active > u->peak_active)
		u->peak_active = u->active;
	if ((cfg->hedge || cfg->hedge_idle) && !web(j) && !j->primary && !j->hedge)
		plan_hedge(u, j, now, !cfg->hedge);
	return true;
}

/* Final result of a job (x->lock held). */
static void finish(job *j, plg_error_class c, long status, const char *msg)
{
	http_req *r = j->req;
	core_buf t = r->response;

	r->result = c;
	r->http_status = status;
	r->response = j->body;
	j->body = t;
	snprintf(r->error, sizeof(r->error), "%s", c == PLG_CLASS_OK ? "" : msg);
	if (--j->b->left == 0)
		pthread_cond_signal(&j->b->cv);
}

/* A job left unfinished for `elspeth resume` (x->lock held). */
static void leave(job *j, plg_error_class c, long status, const char *msg)
{
	j->req->interrupted = true;
	finish(j, c, status, msg);
}

/* Jittered exponential backoff before transient attempt k+1 (k >= 1). */
static uint64_t backoff_ns(http_exec *x, const core_retry_cfg *r, unsigned k)
{
	double d = r->initial_delay_seconds * pow(r->exponential_base, k - 1);

	if (d > r->max_delay_seconds)
		d = r->max_delay_seconds;
	x->rng = x->rng * 6364136223846793005ull + 1442695040888963407ull;
	d *= 0.5 + 0.5 * (double)(x->rng >> 11) / 9007199254740992.0;
	return (uint64_t)(d * 1e9);
}

static double max_capacity_s(const job *j)
{
	return j->b->client->cfg.max_capacity_retry_s;
}

/* When the request's run of capacity errors began (mono ns, 0: none):
 * its own first one or, for one still waiting to be sent, the moment its
 * upstream began refusing while it waited — a row held back by an
 * upstream that refuses everything reaches its deadline too, not only the
 * rows that were sent before the refusals began. */
static uint64_t capacity_since(const upstream *u, const job *j)
{
	if (j->first_capacity_mono || !u->refusing_since)
		return j->first_capacity_mono;
	return u->refusing_since > j->queued_mono ? u->refusing_since : j->queued_mono;
}

/* When a request in a run of capacity errors gives up (mono ns). */
static uint64_t capacity_deadline(const upstream *u, const job *j)
{
	return capacity_since(u, j) + (uint64_t)(max_capacity_s(j) * 1e9);
}

/* A capacity error past the request's deadline is its last. */
static plg_error_class final_class(const upstream *u, const job *j, plg_error_class c,
				   uint64_t now)
{
	if (c != PLG_CLASS_CAPACITY || web(j))
		return c;
	if (capacity_since(u, j) ? now >= capacity_deadline(u, j) : max_capacity_s(j) <= 0)
		return PLG_CLASS_GAVE_UP;
	return c;
}

/* Decides what follows an attempt that ended with class c; retry_at:
 * the gate's earliest time for a capacity retry (x->lock held). */
static void decide(http_exec *x, upstream *u, job *j, plg_error_class c, long status,
		   uint64_t retry_at, const char *msg)
{
	const core_retry_cfg *r = j->b->retry;
	uint64_t now = core_now_mono_ns();
	unsigned max = r && r->max_attempts > 0 ? (unsigned)r->max_attempts : 1;
	char why[300];

	j->req->attempts++;
	j->why = NULL;
	if (c == PLG_CLASS_OK) {
		u->refusing_since = 0;
		finish(j, c, status, msg);
		return;
	}
	if (c == PLG_CLASS_CAPACITY || c == PLG_CLASS_GAVE_UP)
		u->capacity_errors++;
	if (c == PLG_CLASS_CAPACITY && !web(j)) {
		if (!j->first_capacity_mono)
			j->first_capacity_mono = capacity_since(u, j) ? capacity_since(u, j) : now;
		if (!u->refusing_since)
			u->refusing_since = now;
		j->req->capacity_retries++;
		/* The last retry goes out at the deadline, not after it. */
		j->due_mono = retry_at < capacity_deadline(u, j) ? retry_at : capacity_deadline(u, j);
		push_delayed(u, j);
		return;
	}
	if (c == PLG_CLASS_GAVE_UP) {
		snprintf(why, sizeof(why),
			 "gave up after %.1f s of capacity errors (max_capacity_retry_seconds): %s",
			 max_capacity_s(j), msg);
		finish(j, PLG_CLASS_GAVE_UP, status, why);
		return;
	}
	j->first_capacity_mono = 0;
	if ((http_transient(c) || c == PLG_CLASS_CAPACITY) && ++j->transient_attempts < max) {
		if (stopping(j)) {
			/* It would be retried after a backoff: left unfinished
			 * for the resume instead (ADR 0012). */
			snprintf(why, sizeof(why),
				 "interrupted (SIGINT/SIGTERM) before retry %u: %s",
				 j->transient_attempts + 1, msg);
			leave(j, c, status, why);
			return;
		}
		j->due_mono = now + backoff_ns(x, r, j->transient_attempts);
		push_delayed(u, j);
		return;
	}
	finish(j, c, status, msg); /* r->attempts says how many */
}

/* ------------------------------------------------------- run-level stops */

/* The provider's own words from an error body: error.message (OpenAI,
 * Azure, Anthropic, OpenRouter), else the body's start. */
static void provider_words(const core_buf *body, char *out, size_t n)
{
	json_t *v = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
	json_t *e = json_object_get(v, "error");
	const char *m = json_string_value(json_is_object(e) ? json_object_get(e, "message") : e);

	if (m)
		snprintf(out, n, "%s", m);
	else
		snprintf(out, n, "%.200s", body->data ? body->data : "(no body)");
	json_decref(v);
}

/* Why an attempt stops the whole run rather than failing or retrying its
 * row, in *code (1: the account, 3: a wait too long) and msg; 0: it
 * does not. */
static int run_stop(const job *j, const upstream *u, long status, plg_error_class c,
		    char *msg, size_t n)
{
	const http_hints *h = &j->hints;
	char words[256], when[64];
	time_t t;

	if (web(j))
		return 0; /* one site's words are no provider's */

	if (status >= 400 && http__is_account_error(status, j->body.data, j->body.len,
						    h->retry_after_s >= 0)) {
		provider_words(&j->body, words, sizeof(words));
		snprintf(msg, n,
			 "%s refused the account, not for capacity (HTTP %ld): \"%s\"; "
			 "top up the account or raise its limit, then run `elspeth resume`",
			 u->name, status, words);
		return 1;
	}
	if (c == PLG_CLASS_CAPACITY && h->retry_after_s > j->b->client->cfg.max_retry_after_s) {
		t = time(NULL) + (time_t)ceil(h->retry_after_s);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
		snprintf(msg, n,
			 "%s asked to wait %.0f s (%s), more than max_retry_after_seconds "
			 "(%g): the run stops here; run `elspeth resume` after %s",
			 u->name, h->retry_after_s, http__hint_src_name(h->retry_src),
			 j->b->client->cfg.max_retry_after_s, when);
		return 3;
	}
	return 0;
}

/* ------------------------------------------------------------ completion */

static http_cap_outcome outcome(const job *j, plg_error_class c)
{
	if (web(j) && c == PLG_CLASS_CAPACITY)
		return HTTP_CAP_OTHER; /* one site's refusal: no lesson */
	if (c == PLG_CLASS_CAPACITY || c == PLG_CLASS_GAVE_UP)
		return HTTP_CAP_REFUSED;
	/* an answer, even one the caller cannot use: the server admitted it */
	return c == PLG_CLASS_OK || c == PLG_CLASS_CLIENT || c == PLG_CLASS_MALFORMED
		       ? HTTP_CAP_OK : HTTP_CAP_OTHER;
}

/* Classifies a finished transfer into msg. */
static plg_error_class classify(job *j, CURLcode rc, long status, bool connected,
				double *tokens, char *msg, size_t n)
{
	http_req *r = j->req;
	plg_error_class c = http_classify(rc, status, connected);

	if (web(j) && rc == CURLE_OPERATION_TIMEDOUT)
		c = PLG_CLASS_TIMEOUT; /* a server's silence, not capacity */
	else if (web(j) && rc == CURLE_OK && status >= 300 && status < 400)
		c = PLG_CLASS_OK;      /* a redirect: the caller follows it */

	if (c != PLG_CLASS_OK && j->hints.retry_after_s < 0)
		http__hints_body(&j->hints, j->body.data, j->body.len);
	/* OpenRouter's 402 with a Retry-After: its in-flight budget, capacity */
	if (status == 402 && j->hints.retry_after_s >= 0)
		c = PLG_CLASS_CAPACITY;
	r->too_big = j->too_big && r->max_body;
	if (r->too_big) {
		c = PLG_CLASS_CLIENT; /* the caller's limit: asking again gives the same */
		snprintf(msg, n, "answer larger than %zu bytes", r->max_body);
	} else if (j->too_big) {
		c = PLG_CLASS_MALFORMED;
		snprintf(msg, n, "answer larger than %u MiB", MAX_BODY >> 20);
	} else if (c == PLG_CLASS_OK && r->check &&
		   r->check(r->check_arg, j->body.data, j->body.len, tokens, msg, n))
		c = PLG_CLASS_MALFORMED;
	else if (rc != CURLE_OK)
		snprintf(msg, n, "%s", curl_easy_strerror(rc));
	else if (c != PLG_CLASS_OK)
		snprintf(msg, n, "HTTP %ld: %.200s", status, j->body.data ? j->body.data : "");
	return c;
}

static void record(job *j, plg_error_class c, long status, const char *msg)
{
	http_req *r = j->req;
	plg_ctx *ctx = j->b->ctx;

	if (!ctx || !ctx->record_call)
		return;
	ctx->record_call(ctx, &(plg_call){
		.call_type = web(j) ? "http" : "llm", .name = r->name, .ok = c == PLG_CLASS_OK,
		.http_status = (unsigned)status,
		.error_class = c == PLG_CLASS_OK ? NULL : plg_error_class_name(c),
		.error = c == PLG_CLASS_OK ? NULL : msg,
		.request = r->body, .request_len = r->body_len,
		.response = j->body.data, .response_len = j->body.len,
		.submitted_ns = j->submitted_wall, .completed_ns = core_now_wall_ns(),
		.throttle_delay_ns = j->throttle_ns, .throttle_reason = j->why,
		.submit_order = j->submit_order, .complete_order = ++j->b->completed,
	});
}

/* A web client's attempt's headers and the address it reached, for its
 * caller (and its record_call) to read. */
static void hand_back(job *j, CURL *e)
{
	http_req *r = j->req;
	core_buf t = r->resp_headers;
	char *ip = NULL;

	r->resp_headers = j->hdrs;
	j->hdrs = t;
	core_buf_reset(&j->hdrs);
	if (curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &ip) != CURLE_OK || !ip)
		ip = "";
	snprintf(r->primary_ip, sizeof(r->primary_ip), "%s", ip);
}

/* What an attempt used of the server: its time in a slot, unless it was
 * refused (x->lock held). */
static void account(upstream *u, const job *t, plg_error_class c, uint64_t now)
{
	if (!u->first_send || t->started_mono < u->first_send)
		u->first_send = t->started_mono;
	if (now > u->last_done)
		u->last_done = now;
	if (t->hints.limit_concurrency >= 1)
		u->slots = (unsigned)t->hints.limit_concurrency;
	if (c != PLG_CLASS_CAPACITY && c != PLG_CLASS_GAVE_UP)
		u->busy_ns += now - t->started_mono;
}

/* Cancels a running copy: its twin answered, or the run stops (executor
 * thread, no lock: the copy is recorded). Returns its handle; the caller
 * gives back its slot under the lock. */
static CURL *cancel_copy(http_exec *x, job *o, bool answered)
{
	CURL *e = o->easy;

	curl_multi_remove_handle(x->multi, e);
	o->easy = NULL;
	record(o, PLG_CLASS_TIMEOUT, 0, answered ?
	       "cancelled: its hedged twin answered first" :
	       "cancelled: the run stops");
	o->req->attempts++;
	return e;
}

/* Takes a hedged copy's last attempt as the request's own: its answer,
 * hints and status become the primary's (x->lock held). */
static void adopt(job *j, job *h)
{
	core_buf t = j->body;

	j->body = h->body;
	h->body = t;
	j->hints = h->hints;
	j->hedge = NULL;
	free_hedge(h);
}

static void tail_cut_msg(const upstream *u, const job *t, char *msg, size_t n)
{
	snprintf(msg, n, "no answer within the tail deadline of %.2f s (%g x the p99 "
		 "of the upstream's recent answers, %.3f s): sent again with the whole "
		 "timeout", t->tail_s, t->b->client->cfg.tail_factor, u->tail.p99);
}

/* A transfer finished: classify, record and halt (unlocked), decide. t
 * is the attempt's job: the request's own (j), or its hedged copy. */
static void done(http_exec *x, job *t, CURLcode rc)
{
	job *j = t->primary ? t->primary : t, *other;
	upstream *u = j->b->client->up;
	CURL *e = t->easy, *oe = NULL;
	long status = 0, sent = 0;
	double tokens = 0;
	char msg[256] = "", stop[480];
	plg_error_class c;
	uint64_t now, retry_at;
	bool cut;
	int code;

	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	/* Bytes of request sent: 0 means no connection was ever made (a
	 * reused connection has no connect time, so that cannot tell). */
	curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &sent);
	curl_multi_remove_handle(x->multi, e);
	t->easy = NULL;
	if (web(t))
		hand_back(t, e);
	c = classify(t, rc, status, sent > 0 || status > 0, &tokens, msg, sizeof(msg));
	now = core_now_mono_ns();
	cut = rc == CURLE_OPERATION_TIMEDOUT && t->tail_s > 0;
	if (cut) {
		c = PLG_CLASS_TIMEOUT;
		tail_cut_msg(u, t, msg, sizeof(msg));
	}
	code = cut ? 0 : run_stop(t, u, status, c, stop, sizeof(stop));
	if (code == 1)
		c = PLG_CLASS_CLIENT; /* the account, not capacity */
	else if (!code && !cut)
		c = final_class(u, j, c, now);
	record(t, c, status, msg);
	other = t == j ? (j->hedge && j->hedge->easy ? j->hedge : NULL) : (j->easy ? j : NULL);
	if (other && (c == PLG_CLASS_OK || code))
		oe = cancel_copy(x, other, c == PLG_CLASS_OK);
	if (code && j->b->ctx && j->b->ctx->halt)
		j->b->ctx->halt(j->b->ctx, code, stop);
	pthread_mutex_lock(&x->lock);
	u->active--;
	give_easy(x, e);
	retry_at = http__gate_done(&u->gate, t->started_mono, t->k, now,
				   code == 1 || cut ? HTTP_CAP_OTHER : outcome(t, c), &t->hints, tokens);
	if (!cut && status > 0 && c != PLG_CLASS_CAPACITY && c != PLG_CLASS_GAVE_UP)
		http__tail_add(&u->tail, (double)(now - t->started_mono) / 1e9);
	account(u, t, c, now);
	if (oe) {
		account(u, other, PLG_CLASS_TIMEOUT, now);
		u->active--;
		give_easy(x, oe);
		http__gate_done(&u->gate, other->started_mono, other->k, now, HTTP_CAP_OTHER, NULL, 0);
	} else if (other) {
		/* This copy failed while its twin runs: the twin carries the
		 * request on, and decides when it ends. */
		j->req->attempts++;
		if (t != j) {
			j->hedge = NULL;
			free_hedge(t);
		}
		pthread_mutex_unlock(&x->lock);
		return;
	}
	if (t != j) {
		if (c == PLG_CLASS_OK)
			u->hedges_won++;
		adopt(j, t);
	} else if (oe) {
		j->hedge = NULL;
		free_hedge(other);
	} else {
		drop_pending_hedge(u, j);
	}
	if (cut) {
		u->tail_cuts++;
		j->tail_cut = true;
		j->req->attempts++;
		push_front(u, j, now);
	} else if (code) {
		if (!u->halted)
			u->halted = strdup(stop);
		j->req->attempts++;
		leave(j, c, status, stop);
	} else
		decide(x, u, j, c, status, retry_at, msg);
	pthread_mutex_unlock(&x->lock);
}

/* ----------------------------------------------------------------- loop */

/* Starts what may start at upstream u; returns the earliest time
 * something may start there (0: only an event can tell). x->lock held. */
static uint64_t dispatch_up(http_exec *x, upstream *u, uint64_t now)
{
	const char *held;
	char why[300];
	job *j;

	promote(u, now);
	/* Hedged copies first: they are for the oldest requests. */
	while ((j = u->hedges) && j->due_mono <= now) {
		uint64_t t;

		/* An idle copy goes only into a slot nothing else wants. */
		if (u->halted || stopping(j) || (j->idle_only && u->ready)) {
			u->hedges = j->next;
			j->primary->hedge = NULL;
			free_hedge(j);
			continue;
		}
		if ((t = http__gate_acquire(&u->gate, now, j->req->tokens, &j->k, &held))) {
			if (j->idle_only) {
				u->hedges = j->next;
				j->primary->hedge = NULL;
				free_hedge(j);
				continue;
			}
			j->why = held;
			return t == HTTP_CAP_WAIT_DONE ? 0 : t;
		}
		u->hedges = j->next;
		j->queued_mono = j->due_mono;
		if (!start(x, u, j, now)) {
			http__gate_done(&u->gate, now, j->k, now, HTTP_CAP_OTHER, NULL, 0);
			j->primary->hedge = NULL;
			free_hedge(j);
			continue;
		}
		u->hedges_sent++;
	}
	while ((j = u->ready)) {
		uint64_t t;

		if (u->halted || stopping(j)) {
			pop_ready(u);
			snprintf(why, sizeof(why), "not sent: %s",
				 u->halted ? u->halted : "the run was interrupted (SIGINT/SIGTERM)");
			leave(j, PLG_CLASS_GAVE_UP, 0, why);
			continue;
		}
		/* At its capacity deadline a request makes its last attempt
		 * whatever holds the others back, and its answer decides. */
		if (capacity_since(u, j) && now >= capacity_deadline(u, j)) {
			if (!http__gate_force(&u->gate, now, j->req->tokens, &j->k))
				return 0;
		} else if ((t = http__gate_acquire(&u->gate, now, j->req->tokens, &j->k, &held))) {
			j->why = held;
			if (capacity_since(u, j) && capacity_deadline(u, j) < t)
				t = capacity_deadline(u, j); /* WAIT_DONE too */
			return t == HTTP_CAP_WAIT_DONE ? 0 : t;
		}
		pop_ready(u);
		if (!start(x, u, j, now)) {
			http__gate_done(&u->gate, now, j->k, now, HTTP_CAP_OTHER, NULL, 0);
			finish(j, PLG_CLASS_NETWORK, 0, "cannot start the transfer (libcurl)");
		}
	}
	return 0;
}

/* Starts what may start; returns the poll timeout in ms (x->lock held). */
static int dispatch(http_exec *x)
{
	uint64_t now = core_now_mono_ns(), next = 0;
	int ms = MAX_POLL_MS;

	for (upstream *u = x->ups; u; u = u->next) {
		uint64_t t = dispatch_up(x, u, now);

		if (u->delayed && (!t || u->delayed->due_mono < t))
			t = u->delayed->due_mono;
		/* A due copy still here waits for a slot: an event. */
		if (u->hedges && u->hedges->due_mono > now &&
		    (!t || u->hedges->due_mono < t))
			t = u->hedges->due_mono;
		if (t && (!next || t < next))
			next = t;
	}
	if (next) {
		uint64_t d = next > now ? (next - now + 999999) / 1000000 : 0;

		ms = d < (uint64_t)ms ? (int)d : ms;
	}
	return ms;
}

/* libcurl tells which sockets to watch (CURLMOPT_SOCKETFUNCTION). */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *sockp)
{
	http_exec *x = userp;
	struct epoll_event ev = { .data.fd = fd };

	(void)e;
	(void)sockp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(x->epfd, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
	if (epoll_ctl(x->epfd, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT)
		epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev);
	return 0;
}

/* libcurl's own timeouts (CURLMOPT_TIMERFUNCTION). */
static int on_timer(CURLM *m, long ms, void *userp)
{
	http_exec *x = userp;

	(void)m;
	x->curl_timer = ms < 0 ? 0 : core_now_mono_ns() + (uint64_t)ms * 1000000u + 1;
	return 0;
}

void http__watch(http_exec *x)
{
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETDATA, x);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERDATA, x);
}

/* The poll timeout: the sooner of dispatch's and libcurl's. */
static int wait_ms(const http_exec *x, int ms)
{
	uint64_t now = core_now_mono_ns();

	if (x->curl_timer) {
		uint64_t d = x->curl_timer > now ? (x->curl_timer - now + 999999) / 1000000 : 0;

		if (d < (uint64_t)ms)
			ms = (int)d;
	}
	return ms;
}

/* Waits for sockets, a wake-up or a timeout and lets libcurl act on them;
 * then completes the finished transfers. */
static void turn(http_exec *x, int ms)
{
	struct epoll_event ev[256];
	CURLMsg *m;
	int n, running, left;

	n = epoll_wait(x->epfd, ev, 256, wait_ms(x, ms));
	for (int i = 0; i < n; i++) {
		int mask = 0;
		uint64_t v;

		if (ev[i].data.fd == x->wakefd) {
			/* Reset the counter: the wake-up only ends the wait. */
			if (read(x->wakefd, &v, sizeof(v)) < 0)
				v = 0;
			continue;
		}
		if (ev[i].events & EPOLLIN)
			mask |= CURL_CSELECT_IN;
		if (ev[i].events & EPOLLOUT)
			mask |= CURL_CSELECT_OUT;
		if (ev[i].events & (EPOLLERR | EPOLLHUP))
			mask |= CURL_CSELECT_ERR;
		curl_multi_socket_action(x->multi, ev[i].data.fd, mask, &running);
	}
	if (x->curl_timer && core_now_mono_ns() >= x->curl_timer) {
		x->curl_timer = 0;
		curl_multi_socket_action(x->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	}
	while ((m = curl_multi_info_read(x->multi, &left))) {
		job *j = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&j);
		/* A copy cancelled by its twin's answer in this same turn
		 * is done already (its handle reset and given back). */
		if (!j || j->easy != m->easy_handle)
			continue;
		done(x, j, m->data.result);
	}
}

/* A full counter (EAGAIN) is a wake-up already pending. */
void http__wake(http_exec *x)
{
	uint64_t one = 1;

	if (write(x->wakefd, &one, sizeof(one)) < 0)
		return;
}

static bool idle(const http_exec *x)
{
	for (const upstream *u = x->ups; u; u = u->next)
		if (u->active || u->ready || u->delayed)
			return false;
	return true;
}

void *http__loop(void *arg)
{
	http_exec *x = arg;
	int ms;

	pthread_setname_np(pthread_self(), "elspeth-http"); /* for top -H, gdb */
	for (;;) {
		pthread_mutex_lock(&x->lock);
		if (x->shutdown && idle(x)) {
			pthread_mutex_unlock(&x->lock);
			break;
		}
		ms = dispatch(x);
		pthread_mutex_unlock(&x->lock);
		/* Every turn is followed by a dispatch: a finished transfer
		 * frees a slot or queues a retry, and new requests must not
		 * wait while answers keep arriving. */
		turn(x, ms);
	}
	return NULL;
}

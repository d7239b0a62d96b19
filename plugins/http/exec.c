/*
 * exec.c — the shared HTTP executor (plugins/http/http.h).
 *
 * DESIGN. x->lock guards the queues (ready, delayed), the throttle, the
 * statistics, the easy-handle free list and every batch's `left` and cv.
 * The executor thread alone touches the multi handle, the easy handles
 * and a job's transfer fields. http_run (any worker) appends its jobs to
 * `ready`, wakes the loop (an eventfd) and sleeps on its batch's
 * condition variable until every job is final.
 *
 * The loop, on the executor thread:
 *   promote  delayed jobs whose time has come join the back of ready
 *            (round robin: retries do not starve first attempts);
 *   dispatch while fewer than pool_size are active, a job is ready and
 *            the throttle allows (now >= next_dispatch): start it;
 *            next_dispatch = now + the throttle's delay;
 *   turn     epoll_wait on libcurl's sockets (the multi_socket API: no
 *            poll over every connection each turn), the wake-up eventfd
 *            and the timeouts; curl_multi_socket_action on what is ready;
 *            then each finished transfer is
 *            classified, recorded (unlocked), and the job is delayed for a
 *            retry or made final. The throttle backs off at most once per
 *            round trip: capacity errors of requests sent before the last
 *            backoff (one burst) count once, or a burst of 50 rejections
 *            would multiply the delay 50 times; and refusals without a
 *            success in between back off at most once a second;
 *   the wait lasts until a socket is ready, the next dispatch, delayed
 *   or libcurl time (at most 1 s), or a wake-up.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugins/http/http.h"

#define MAX_BODY (16u << 20) /* a larger answer is malformed */
#define MAX_POLL_MS 1000
#define BACKOFF_QUIET_NS (1000 * 1000 * 1000ull)

typedef struct batch {
	pthread_cond_t cv;
	size_t left;                 /* jobs not final (x->lock) */
	unsigned submitted, completed; /* orders (executor thread) */
	plg_ctx *ctx;
	const core_retry_cfg *retry;
} batch;

typedef struct job {
	struct job *next;
	http_req *req;
	batch *b;
	CURL *easy;
	core_buf body;               /* this attempt's answer */
	bool too_big;
	uint64_t queued_mono;        /* ready since */
	uint64_t due_mono;           /* delayed until */
	uint64_t first_capacity_mono;
	uint64_t submitted_wall, throttle_ns;
	uint64_t started_mono;       /* this attempt was dispatched */
	unsigned submit_order;
	unsigned transient_attempts; /* attempts counted against retry */
} job;

struct http_exec {
	http_cfg cfg;
	pthread_t thread;
	pthread_mutex_t lock;
	CURLM *multi;
	int epfd;                    /* libcurl's sockets and wakefd */
	int wakefd;                  /* eventfd: http_run, http_close */
	uint64_t curl_timer;         /* libcurl's next timeout (mono), 0: none */
	bool shutdown;
	job *ready, *ready_tail;     /* FIFO */
	job *delayed;                /* by due_mono */
	CURL **free_easy;            /* idle easy handles, up to pool_size */
	unsigned nfree;
	http_aimd throttle;
	uint64_t next_dispatch;
	uint64_t last_backoff;       /* when the throttle last backed off */
	bool success_since_backoff;
	uint64_t rng;
	unsigned active;
	http_stats st;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

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

static void push_ready(http_exec *x, job *j)
{
	j->next = NULL;
	if (x->ready_tail)
		x->ready_tail->next = j;
	else
		x->ready = j;
	x->ready_tail = j;
}

static job *pop_ready(http_exec *x)
{
	job *j = x->ready;

	if (j && !(x->ready = j->next))
		x->ready_tail = NULL;
	return j;
}

static void push_delayed(http_exec *x, job *j)
{
	job **p = &x->delayed;

	while (*p && (*p)->due_mono <= j->due_mono)
		p = &(*p)->next;
	j->next = *p;
	*p = j;
}

/* The run is being interrupted (SIGINT/SIGTERM): a request waiting for
 * capacity makes one last attempt at once and then gives up (marked
 * interrupted: its row is left for `elspeth resume`, ADR 0012), so the
 * run stops without waiting for the server. */
static bool stopping(const job *j)
{
	return j->b->ctx && j->b->ctx->stop && atomic_load(j->b->ctx->stop);
}

/* Due delayed jobs join the back of ready, in their order: a retry waits
 * its turn behind requests not yet tried once, or during a storm the
 * first rows' retries would take every dispatch and starve the rest. */
static void promote(http_exec *x, uint64_t now)
{
	job **p = &x->delayed;

	while (*p) {
		job *j = *p;

		if (j->due_mono > now && !stopping(j)) {
			p = &j->next;
			continue;
		}
		*p = j->next;
		j->queued_mono = now;
		push_ready(x, j);
	}
}

/* ------------------------------------------------------------- transfers */

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	job *j = arg;
	size_t len = size * n;

	if (j->body.len + len > MAX_BODY) {
		j->too_big = true;
		return 0;
	}
	return core_buf_append(&j->body, p, len) ? 0 : len;
}

static CURL *take_easy(http_exec *x)
{
	return x->nfree ? x->free_easy[--x->nfree] : curl_easy_init();
}

static void give_easy(http_exec *x, CURL *e)
{
	if (x->nfree < x->cfg.pool_size) {
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

/* Starts one attempt (lock held). Returns false if curl refused. */
static bool start(http_exec *x, job *j, uint64_t now)
{
	const http_req *r = j->req;
	long timeout_ms = (long)(x->cfg.timeout_s * 1000.0);
	CURL *e = take_easy(x);

	if (!e)
		return false;
	core_buf_reset(&j->body);
	j->too_big = false;
	j->easy = e;
	j->throttle_ns = now - j->queued_mono;
	j->req->throttle_ns += j->throttle_ns;
	j->submitted_wall = core_now_wall_ns();
	j->started_mono = now;
	j->submit_order = ++j->b->submitted;
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_PRIVATE, j);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	tls_options(e, r->url);
	if (curl_multi_add_handle(x->multi, e) != CURLM_OK) {
		give_easy(x, e);
		j->easy = NULL;
		return false;
	}
	x->active++;
	x->st.requests++;
	if (x->active > x->st.peak_active)
		x->st.peak_active = x->active;
	return true;
}

/* Final result of a job (lock held). */
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

/* When a request in a run of capacity errors gives up (mono ns). */
static uint64_t capacity_deadline(const http_exec *x, const job *j)
{
	if (stopping(j))
		return j->first_capacity_mono;
	return j->first_capacity_mono + (uint64_t)(x->cfg.max_capacity_retry_s * 1e9);
}

/* A capacity error past the request's deadline is its last (lock held). */
static plg_error_class final_class(const http_exec *x, const job *j,
				   plg_error_class c, uint64_t now)
{
	if (c == PLG_CLASS_CAPACITY && j->first_capacity_mono &&
	    now >= capacity_deadline(x, j))
		return PLG_CLASS_GAVE_UP;
	if (c == PLG_CLASS_CAPACITY && !j->first_capacity_mono &&
	    x->cfg.max_capacity_retry_s <= 0)
		return PLG_CLASS_GAVE_UP;
	return c;
}

/* Decides what follows an attempt that ended with class c (lock held). */
static void decide(http_exec *x, job *j, plg_error_class c, long status,
		   double retry_after_s, const char *msg)
{
	const core_retry_cfg *r = j->b->retry;
	uint64_t now = core_now_mono_ns(), wait;
	unsigned max = r && r->max_attempts > 0 ? (unsigned)r->max_attempts : 1;
	char why[300];

	j->req->attempts++;
	if (c == PLG_CLASS_OK) {
		http_aimd_on_success(&x->throttle);
		x->success_since_backoff = true;
		finish(j, c, status, msg);
		return;
	}
	if (c == PLG_CLASS_CAPACITY) {
		/* One backoff per round trip, as TCP does: the answers to
		 * requests sent before the last backoff say nothing new. And
		 * refusals with no success in between (a server whose rate
		 * window is full refuses every probe until it resets) back
		 * off at most once a second, or the delay overshoots. */
		if (j->started_mono >= x->last_backoff &&
		    (x->success_since_backoff || now - x->last_backoff >= BACKOFF_QUIET_NS)) {
			http_aimd_on_capacity(&x->throttle);
			x->last_backoff = now;
			x->success_since_backoff = false;
		}
		x->st.capacity_errors++;
		if (!j->first_capacity_mono)
			j->first_capacity_mono = now;
		j->req->capacity_retries++;
		wait = (uint64_t)(x->throttle.delay_ms * 1e6);
		if (retry_after_s * 1e9 > (double)wait)
			wait = (uint64_t)(retry_after_s * 1e9);
		/* The last retry goes out at the deadline, not after it. */
		if (now + wait > capacity_deadline(x, j))
			wait = capacity_deadline(x, j) > now ? capacity_deadline(x, j) - now : 0;
		j->due_mono = now + wait;
		push_delayed(x, j);
		return;
	}
	if (c == PLG_CLASS_GAVE_UP) {
		x->st.capacity_errors++;
		if (stopping(j)) {
			snprintf(why, sizeof(why),
				 "interrupted (SIGINT/SIGTERM) while the server refused for capacity: %s",
				 msg);
			j->req->interrupted = true;
		}
		else
			snprintf(why, sizeof(why),
				 "gave up after %.1f s of capacity errors (max_capacity_retry_seconds): %s",
				 x->cfg.max_capacity_retry_s, msg);
		finish(j, PLG_CLASS_GAVE_UP, status, why);
		return;
	}
	j->first_capacity_mono = 0;
	if (http_transient(c) && ++j->transient_attempts < max) {
		if (stopping(j)) {
			/* It would be retried after a backoff: left unfinished
			 * for the resume instead (ADR 0012). */
			snprintf(why, sizeof(why),
				 "interrupted (SIGINT/SIGTERM) before retry %u: %s",
				 j->transient_attempts + 1, msg);
			j->req->interrupted = true;
			finish(j, c, status, why);
			return;
		}
		j->due_mono = now + backoff_ns(x, r, j->transient_attempts);
		push_delayed(x, j);
		return;
	}
	finish(j, c, status, msg); /* r->attempts says how many */
}

/* A transfer finished: classify, record (unlocked), decide. */
static void done(http_exec *x, job *j, CURLcode rc)
{
	http_req *r = j->req;
	CURL *e = j->easy;
	long status = 0;
	curl_off_t ra = -1;
	long sent = 0;
	char msg[256] = "";
	plg_error_class c;

	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &ra);
	/* Bytes of request sent: 0 means no connection was ever made (a
	 * reused connection has no connect time, so that cannot tell). */
	curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &sent);
	curl_multi_remove_handle(x->multi, e);
	j->easy = NULL;
	c = http_classify(rc, status, sent > 0 || status > 0);
	if (j->too_big) {
		c = PLG_CLASS_MALFORMED;
		snprintf(msg, sizeof(msg), "answer larger than %u MiB", MAX_BODY >> 20);
	} else if (c == PLG_CLASS_OK && r->check &&
		   r->check(r->check_arg, j->body.data, j->body.len, msg, sizeof(msg)))
		c = PLG_CLASS_MALFORMED;
	else if (rc != CURLE_OK)
		snprintf(msg, sizeof(msg), "%s", curl_easy_strerror(rc));
	else if (c != PLG_CLASS_OK)
		snprintf(msg, sizeof(msg), "HTTP %ld: %.200s", status,
			 j->body.data ? j->body.data : "");
	pthread_mutex_lock(&x->lock);
	c = final_class(x, j, c, core_now_mono_ns());
	pthread_mutex_unlock(&x->lock);
	if (j->b->ctx && j->b->ctx->record_call) {
		plg_call call = {
			.call_type = "llm", .name = r->name, .ok = c == PLG_CLASS_OK,
			.http_status = (unsigned)status,
			.error_class = c == PLG_CLASS_OK ? NULL : plg_error_class_name(c),
			.error = c == PLG_CLASS_OK ? NULL : msg,
			.request = r->body, .request_len = r->body_len,
			.response = j->body.data, .response_len = j->body.len,
			.submitted_ns = j->submitted_wall,
			.completed_ns = core_now_wall_ns(),
			.throttle_delay_ns = j->throttle_ns,
			.submit_order = j->submit_order,
			.complete_order = ++j->b->completed,
		};
		j->b->ctx->record_call(j->b->ctx, &call);
	}
	pthread_mutex_lock(&x->lock);
	x->active--;
	give_easy(x, e);
	decide(x, j, c, status, ra > 0 ? (double)ra : 0, msg);
	pthread_mutex_unlock(&x->lock);
}

/* ----------------------------------------------------------------- loop */

/* A request at its capacity deadline: its last attempt does not wait for
 * the throttle's gap (or it could fail long after the deadline). */
static bool overdue(const http_exec *x, const job *j, uint64_t now)
{
	return j->first_capacity_mono && now >= capacity_deadline(x, j);
}

/* Starts what may start; returns the poll timeout in ms (lock held). */
static int dispatch(http_exec *x)
{
	uint64_t now = core_now_mono_ns(), next = 0;
	int ms = MAX_POLL_MS;

	promote(x, now);
	while (x->ready && x->active < x->cfg.pool_size &&
	       (now >= x->next_dispatch || overdue(x, x->ready, now))) {
		job *j = pop_ready(x);

		if (!start(x, j, now)) {
			finish(j, PLG_CLASS_NETWORK, 0, "cannot start the transfer (libcurl)");
			continue;
		}
		x->next_dispatch = now + (uint64_t)(x->throttle.delay_ms * 1e6);
	}
	if (x->ready && x->active < x->cfg.pool_size)
		next = x->next_dispatch;
	if (x->delayed && (!next || x->delayed->due_mono < next))
		next = x->delayed->due_mono;
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
		done(x, j, m->data.result);
	}
}

/* Ends the loop's wait (http_run, http_close). A full counter (EAGAIN) is
 * a wake-up already pending. */
static void wake(http_exec *x)
{
	uint64_t one = 1;

	if (write(x->wakefd, &one, sizeof(one)) < 0)
		return;
}

static void *loop_main(void *arg)
{
	http_exec *x = arg;
	int ms;

	pthread_setname_np(pthread_self(), "elspeth-http"); /* for top -H, gdb */

	for (;;) {
		pthread_mutex_lock(&x->lock);
		if (x->shutdown && !x->active && !x->ready && !x->delayed) {
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

/* ------------------------------------------------------------ public */

/* Frees what http_open made (whatever of it exists): http_close, or http_open
 * failing part way. The loop thread is not running. */
static void release(http_exec *x)
{
	while (x->nfree)
		curl_easy_cleanup(x->free_easy[--x->nfree]);
	if (x->multi)
		curl_multi_cleanup(x->multi);
	if (x->epfd >= 0)
		close(x->epfd);
	if (x->wakefd >= 0)
		close(x->wakefd);
	free(x->free_easy);
	free(x);
}

int http_open(const http_cfg *cfg, http_exec **out, core_err *err)
{
	http_exec *x;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return core_err_set(err, CORE_EIO, "libcurl: %s",
				    curl_easy_strerror(curl_init_rc));
	if (!(x = calloc(1, sizeof(*x))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	x->cfg = *cfg;
	if (!x->cfg.pool_size)
		x->cfg.pool_size = 1;
	http_aimd_init(&x->throttle, cfg->min_dispatch_delay_ms, cfg->max_dispatch_delay_ms,
		  cfg->backoff_multiplier, cfg->recovery_step_ms);
	x->rng = (uint64_t)(uintptr_t)x ^ core_now_mono_ns();
	x->st.pool_size = x->cfg.pool_size;
	x->epfd = x->wakefd = -1;
	if (!(x->free_easy = calloc(x->cfg.pool_size, sizeof(*x->free_easy)))) {
		release(x);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (!(x->multi = curl_multi_init())) {
		release(x);
		return core_err_set(err, CORE_ENOMEM, "libcurl: cannot create a multi handle");
	}
	curl_multi_setopt(x->multi, CURLMOPT_MAXCONNECTS, (long)x->cfg.pool_size);
	/* Never more connections to one host than requests in flight (HTTP/1.1
	 * needs one each; HTTP/2 multiplexes them over a few). */
	curl_multi_setopt(x->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)x->cfg.pool_size);
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(x->multi, CURLMOPT_SOCKETDATA, x);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(x->multi, CURLMOPT_TIMERDATA, x);
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	x->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (x->epfd >= 0 && x->wakefd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = x->wakefd };

		if (epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->wakefd, &ev)) {
			close(x->wakefd);
			x->wakefd = -1;
		}
	}
	pthread_mutex_init(&x->lock, NULL);
	if (x->epfd < 0 || x->wakefd < 0 ||
	    pthread_create(&x->thread, NULL, loop_main, x)) {
		pthread_mutex_destroy(&x->lock);
		release(x);
		return core_err_set(err, CORE_EIO, "cannot start the HTTP executor (thread, epoll or eventfd)");
	}
	*out = x;
	return 0;
}

/* A resumed row's request that an earlier attempt of the run already got
 * a good answer for: the answer is reused, not sent (plg_ctx.replay), and
 * recorded as replayed. False: send it. */
static bool replayed(http_req *r, plg_ctx *ctx)
{
	char *resp = NULL, msg[256];
	const char *from = NULL;
	size_t len = 0;
	uint64_t now;

	if (!ctx || !ctx->replay ||
	    !ctx->replay(ctx, r->body, r->body_len, &resp, &len, &from))
		return false;
	/* An answer the check rejects now would not have been kept. */
	if (r->check && r->check(r->check_arg, resp, len, msg, sizeof(msg))) {
		free(resp);
		return false;
	}
	core_buf_reset(&r->response);
	if (core_buf_append(&r->response, resp, len)) {
		free(resp);
		return false;
	}
	r->result = PLG_CLASS_OK;
	r->http_status = 200;
	now = core_now_wall_ns();
	if (ctx->record_call) {
		plg_call call = {
			.call_type = "llm", .name = r->name, .ok = true,
			.http_status = 200, .request = r->body,
			.request_len = r->body_len, .response = resp,
			.response_len = len, .submitted_ns = now,
			.completed_ns = now, .replayed_from = from,
		};

		ctx->record_call(ctx, &call);
	}
	free(resp);
	return true;
}

void http_run(http_exec *x, http_req *reqs, size_t n, plg_ctx *ctx)
{
	batch b = { .left = 0, .ctx = ctx, .retry = ctx ? ctx->retry : NULL };
	job *jobs;
	uint64_t now = core_now_mono_ns();

	if (!n)
		return;
	if (!(jobs = calloc(n, sizeof(*jobs)))) {
		for (size_t i = 0; i < n; i++) {
			reqs[i].result = PLG_CLASS_NETWORK;
			snprintf(reqs[i].error, sizeof(reqs[i].error), "out of memory");
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		reqs[i].result = PLG_CLASS_OK;
		reqs[i].attempts = reqs[i].capacity_retries = 0;
		reqs[i].throttle_ns = 0;
		reqs[i].interrupted = false;
		jobs[i] = (job){ .req = &reqs[i], .b = &b, .queued_mono = now };
		if (!replayed(&reqs[i], ctx))
			b.left++;
		else
			jobs[i].req = NULL;
	}
	if (!b.left)
		goto out;
	pthread_cond_init(&b.cv, NULL);
	pthread_mutex_lock(&x->lock);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].req)
			push_ready(x, &jobs[i]);
	pthread_mutex_unlock(&x->lock);
	wake(x);
	plg_blocking(ctx, true);
	pthread_mutex_lock(&x->lock);
	while (b.left)
		pthread_cond_wait(&b.cv, &x->lock);
	pthread_mutex_unlock(&x->lock);
	plg_blocking(ctx, false);
	pthread_cond_destroy(&b.cv);
out:
	for (size_t i = 0; i < n; i++)
		core_buf_release(&jobs[i].body);
	free(jobs);
}

void http_set_delay(http_exec *x, double delay_ms)
{
	pthread_mutex_lock(&x->lock);
	x->throttle.delay_ms = delay_ms;
	pthread_mutex_unlock(&x->lock);
}

void http_get_stats(http_exec *x, http_stats *out)
{
	pthread_mutex_lock(&x->lock);
	*out = x->st;
	out->active = x->active;
	out->delay_ms = x->throttle.delay_ms;
	pthread_mutex_unlock(&x->lock);
}

void http_close(http_exec *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	x->shutdown = true;
	pthread_mutex_unlock(&x->lock);
	wake(x);
	pthread_join(x->thread, NULL);
	pthread_mutex_destroy(&x->lock);
	release(x);
}

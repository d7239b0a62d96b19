/*
 * upstream.c — the process's executor, its upstreams and their clients
 * (plugins/http/http.h; locks: exec_internal.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugins/http/exec_internal.h"

#define MAX_FREE_EASY 4096 /* idle easy handles kept at most */

http_exec *http__x;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned registry_clients;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ------------------------------------------------------------- executor */

/* Frees what exec_start made (whatever of it exists); the loop thread is
 * not running. */
static void exec_free(http_exec *x)
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

static int exec_start(http_exec **out, core_err *err)
{
	http_exec *x = calloc(1, sizeof(*x));
	struct epoll_event ev = { .events = EPOLLIN };

	if (!x || !(x->free_easy = calloc(MAX_FREE_EASY, sizeof(*x->free_easy)))) {
		free(x);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	x->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	x->rng = (uint64_t)(uintptr_t)x ^ core_now_mono_ns();
	if (!(x->multi = curl_multi_init())) {
		exec_free(x);
		return core_err_set(err, CORE_ENOMEM, "libcurl: cannot create a multi handle");
	}
	http__watch(x);
	ev.data.fd = x->wakefd;
	if (x->epfd < 0 || x->wakefd < 0 || epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->wakefd, &ev)) {
		exec_free(x);
		return core_err_set(err, CORE_EIO, "cannot start the HTTP executor (epoll or eventfd)");
	}
	pthread_mutex_init(&x->lock, NULL);
	if (pthread_create(&x->thread, NULL, http__loop, x)) {
		pthread_mutex_destroy(&x->lock);
		exec_free(x);
		return core_err_set(err, CORE_EIO, "cannot start the HTTP executor's thread");
	}
	*out = x;
	return 0;
}

static void exec_stop(http_exec *x)
{
	pthread_mutex_lock(&x->lock);
	x->shutdown = true;
	pthread_mutex_unlock(&x->lock);
	http__wake(x);
	pthread_join(x->thread, NULL);
	pthread_mutex_destroy(&x->lock);
	exec_free(x);
}

/* Connections follow the upstreams' ceilings: never more than requests
 * in flight (HTTP/1.1 needs one each; HTTP/2 multiplexes them over a
 * few) — to one host, the ceilings of every upstream there (two keys on
 * one host are two upstreams) — and idle ones kept for all (x->lock
 * held). */
static void connection_limits(http_exec *x)
{
	unsigned long all = 0;

	for (const upstream *u = x->ups; u; u = u->next)
		all += u->gate.ceiling;
	if (!all)
		all = 1;
	x->max_free = all < MAX_FREE_EASY ? (unsigned)all : MAX_FREE_EASY;
	curl_multi_setopt(x->multi, CURLMOPT_MAXCONNECTS, (long)all);
	curl_multi_setopt(x->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)all);
}

/* ------------------------------------------------------------ upstreams */

/* The upstream's identity: scheme, host, port (the default one when the
 * URL has none), the credential and the mode, hashed (the credential
 * never leaves memory, not even as a digest); *name: scheme://host:port. */
static int identify(const char *url, const char *credential, http_mode mode,
		    uint8_t key[CORE_SHA256_LEN], char **name, core_err *err)
{
	CURLU *h = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	core_buf b = { 0 };
	int rc = 0;

	if (!h)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (curl_url_set(h, CURLUPART_URL, url, 0) ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, CURLU_DEFAULT_SCHEME) ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) ||
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		rc = core_err_set(err, CORE_ECONFIG, "'%s' is not a URL libcurl can use", url);
	if (!rc) {
		core_buf_printf(&b, "%s://%s:%s", scheme, host, port);
		*name = b.data ? strdup(b.data) : NULL;
		core_buf_printf(&b, "|%d|%s", (int)mode, credential ? credential : "");
		if (!*name || !b.data)
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		else
			core_sha256(b.data, b.len, key);
		if (b.data)
			memset(b.data, 0, b.len);
	}
	core_buf_release(&b);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return rc;
}

/* A named upstream's identity (http_cfg.name): the name and the mode,
 * hashed apart from every URL's ("|" cannot start a scheme). */
static int named(const char *label, http_mode mode, uint8_t key[CORE_SHA256_LEN],
		 char **name, core_err *err)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "|name|%s|%d", label, (int)mode);
	*name = strdup(label);
	if (!b.data || !*name) {
		core_buf_release(&b);
		free(*name);
		*name = NULL;
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	core_sha256(b.data, b.len, key);
	core_buf_release(&b);
	return 0;
}

/* The upstream with this key, joined or made (x->lock held). */
static upstream *attach(http_exec *x, const uint8_t key[CORE_SHA256_LEN], char *name,
			const http_cfg *cfg)
{
	upstream *u;

	for (u = x->ups; u; u = u->next)
		if (!memcmp(u->key, key, CORE_SHA256_LEN)) {
			http__gate_join(&u->gate, cfg);
			u->refs++;
			free(name);
			return u;
		}
	if (!(u = calloc(1, sizeof(*u))))
		return NULL;
	memcpy(u->key, key, CORE_SHA256_LEN);
	u->name = name;
	u->refs = 1;
	http__gate_init(&u->gate, cfg, core_now_mono_ns());
	u->next = x->ups;
	x->ups = u;
	return u;
}

/* The client's reference to u is dropped; the last frees it (x->lock
 * held; nothing of it is queued or in flight: its clients' http_run
 * calls have returned). */
static void detach(http_exec *x, upstream *u)
{
	upstream **p = &x->ups;

	if (--u->refs)
		return;
	while (*p != u)
		p = &(*p)->next;
	*p = u->next;
	free(u->name);
	free(u->halted);
	free(u);
}

/* --------------------------------------------------------------- public */

int http_open(const http_cfg *cfg, const char *url, const char *credential,
	      http_client **out, core_err *err)
{
	uint8_t key[CORE_SHA256_LEN];
	http_client *c;
	char *name = NULL;
	int rc;

	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return core_err_set(err, CORE_EIO, "libcurl: %s", curl_easy_strerror(curl_init_rc));
	if (cfg->name)
		rc = named(cfg->name, cfg->mode, key, &name, err);
	else
		rc = identify(url, credential, cfg->mode, key, &name, err);
	if (rc)
		return rc;
	if (!(c = calloc(1, sizeof(*c)))) {
		free(name);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	c->cfg = *cfg;
	if (!c->cfg.pool_size)
		c->cfg.pool_size = 1;
	pthread_mutex_lock(&registry_lock);
	if (!http__x && (rc = exec_start(&http__x, err))) {
		pthread_mutex_unlock(&registry_lock);
		free(name);
		free(c);
		return rc;
	}
	pthread_mutex_lock(&http__x->lock);
	if ((c->up = attach(http__x, key, name, &c->cfg)))
		connection_limits(http__x);
	pthread_mutex_unlock(&http__x->lock);
	if (c->up)
		registry_clients++;
	else {
		free(name);
		free(c);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		if (!registry_clients) {
			exec_stop(http__x);
			http__x = NULL;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	if (!rc)
		*out = c;
	return rc;
}

void http_close(http_client *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&registry_lock);
	pthread_mutex_lock(&http__x->lock);
	detach(http__x, c->up);
	connection_limits(http__x);
	pthread_mutex_unlock(&http__x->lock);
	if (!--registry_clients) {
		exec_stop(http__x);
		http__x = NULL;
	}
	pthread_mutex_unlock(&registry_lock);
	free(c);
}

/* A resumed row's request that an earlier attempt of the run already got
 * a good answer for: the answer is reused, not sent (plg_ctx.replay), and
 * recorded as replayed. False: send it. A web client's page is fetched
 * again (its body is no request: the same bytes do not mean the same
 * page). */
static bool replayed(http_req *r, plg_ctx *ctx, bool web)
{
	char *resp = NULL, msg[256];
	const char *from = NULL;
	size_t len = 0;
	double tokens = 0;
	uint64_t now;

	if (!ctx || !ctx->replay || web ||
	    !ctx->replay(ctx, r->body, r->body_len, &resp, &len, &from))
		return false;
	/* An answer the check rejects now would not have been kept. */
	if (r->check && r->check(r->check_arg, resp, len, &tokens, msg, sizeof(msg))) {
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

void http_run(http_client *c, http_req *reqs, size_t n, plg_ctx *ctx)
{
	batch b = { .left = 0, .ctx = ctx, .retry = ctx ? ctx->retry : NULL, .client = c };
	http_exec *x = http__x;
	uint64_t now = core_now_mono_ns();
	job *jobs;

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
		reqs[i].primary_ip[0] = '\0';
		if (!replayed(&reqs[i], ctx, c->cfg.web))
			b.left++;
		else
			jobs[i].req = NULL;
	}
	if (!b.left)
		goto out;
	pthread_cond_init(&b.cv, NULL);
	pthread_mutex_lock(&x->lock);
	http__submit(c->up, jobs, n);
	pthread_mutex_unlock(&x->lock);
	http__wake(x);
	plg_blocking(ctx, true);
	pthread_mutex_lock(&x->lock);
	while (b.left)
		pthread_cond_wait(&b.cv, &x->lock);
	pthread_mutex_unlock(&x->lock);
	plg_blocking(ctx, false);
	pthread_cond_destroy(&b.cv);
out:
	for (size_t i = 0; i < n; i++) {
		core_buf_release(&jobs[i].body);
		core_buf_release(&jobs[i].hdrs);
	}
	free(jobs);
}

void http_get_stats(http_client *c, http_stats *out)
{
	const upstream *u = c->up;

	pthread_mutex_lock(&http__x->lock);
	*out = (http_stats){ .active = u->active, .peak_active = u->peak_active,
			     .requests = u->requests, .capacity_errors = u->capacity_errors,
			     .upstream = u->name, .p50_s = u->tail.p50, .p99_s = u->tail.p99,
			     .tail_cuts = u->tail_cuts, .hedges_sent = u->hedges_sent,
			     .hedges_won = u->hedges_won, .busy_s = (double)u->busy_ns / 1e9,
			     .span_s = u->last_done > u->first_send ?
				       (double)(u->last_done - u->first_send) / 1e9 : 0,
			     .slots = u->slots };
	http__gate_stats(&u->gate, out);
	pthread_mutex_unlock(&http__x->lock);
}

void http_get_capacity(http_client *c, plg_capacity *out)
{
	http_stats st;

	http_get_stats(c, &st);
	*out = (plg_capacity){ .upstream = st.upstream, .rate = st.rate,
		.window = st.window, .ceiling = st.pool_size, .in_flight = st.active,
		.requests = st.requests, .refusals = st.capacity_errors,
		.held_by = st.held_by, .busy_s = st.busy_s, .span_s = st.span_s,
		.slots = st.slots, .p50_s = st.p50_s, .p99_s = st.p99_s,
		.tail_cuts = st.tail_cuts, .hedges_sent = st.hedges_sent,
		.hedges_won = st.hedges_won };
}

json_t *http_save(http_client *c)
{
	json_t *s;

	pthread_mutex_lock(&http__x->lock);
	s = http__gate_save(&c->up->gate);
	pthread_mutex_unlock(&http__x->lock);
	return s;
}

void http_restore(http_client *c, const json_t *saved)
{
	pthread_mutex_lock(&http__x->lock);
	http__gate_restore(&c->up->gate, saved, core_now_mono_ns());
	pthread_mutex_unlock(&http__x->lock);
}

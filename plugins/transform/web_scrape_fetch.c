/*
 * web_scrape_fetch.c — one URL's fetch for a row (web_scrape_internal.h,
 * "fetch"), ELSPETH's SSRF defence (core/security/web.py) made of the
 * shared HTTP executor's web requests:
 *
 *   check    the scheme is http or https, the URL names a host and a port
 *            other than 0; the host is resolved once and EVERY address it
 *            has must pass ws__addr_allowed (a name that also resolves to
 *            a private address is refused); the first IPv4 one is used,
 *            else the first;
 *   fetch    a GET pinned to that address (CURLOPT_CONNECT_TO: libcurl
 *            neither resolves the name again nor reuses a connection to
 *            another address; no proxy), the Host header and TLS name the
 *            URL's host; the address connected to is compared with it;
 *   redirect a 301, 302, 303, 307 or 308 with a Location is followed by
 *            us, never by libcurl: the target (relative to the hop's URL)
 *            is checked as above before anything is sent to it, up to
 *            WS_MAX_REDIRECTS hops.
 *
 * Every request is recorded as a call ("http" for the first, then
 * "http_redirect"), its request a JSON description (method, url, headers,
 * resolved_ip, hop_number, redirect_from: ELSPETH's fields) and its
 * response the status, headers (secrets left out), size and body. A
 * redirect refused by the check is recorded too, as a call that was not
 * sent. The executor retries transient errors (5xx, 429, timeouts,
 * network errors) per `retry`, each attempt a call; what still fails is
 * the row's error, in ELSPETH's words (its error types and messages).
 */
#define _GNU_SOURCE /* AI_IDN */
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "plugins/transform/web_scrape_internal.h"

/* One hop's URL, checked: where to connect. */
typedef struct target {
	char *url;               /* as sent (libcurl's normal form) */
	char host[256];          /* lowercased, without IPv6 brackets */
	unsigned port;
	ws_addr addr;
	char ip[64];
} target;

/* Why a check failed: ELSPETH's error type and message. */
typedef struct refusal {
	const char *type;        /* "SSRFBlockedError", "NetworkError", ... */
	char msg[512];
} refusal;

static int refuse(refusal *r, const char *type, const char *fmt, ...) CORE_PRINTF(3, 4);

static int refuse(refusal *r, const char *type, const char *fmt, ...)
{
	va_list ap;

	r->type = type;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	return CORE_EDATA;
}

void ws__fetch_release(ws_fetch *f)
{
	core_buf_release(&f->body);
	free(f->content_type);
	free(f->final_url);
	memset(f, 0, sizeof(*f));
}

/* --------------------------------------------------------------- checks */

/* The scheme as urlparse reads it (lowercased; "" when there is none). */
static void scheme_of(const char *url, char *out, size_t n)
{
	size_t i = 0;

	out[0] = '\0';
	if (!isalpha((unsigned char)url[0]))
		return;
	while (url[i] && (isalnum((unsigned char)url[i]) || strchr("+-.", url[i])))
		i++;
	if (url[i] != ':' || i >= n)
		return;
	for (size_t k = 0; k < i; k++)
		out[k] = (char)tolower((unsigned char)url[k]);
	out[i] = '\0';
}

/* The authority's host is not empty (urlparse's hostname). */
static bool names_host(const char *url)
{
	const char *p = strstr(url, "://"), *end, *at;

	if (!p)
		return false;
	p += 3;
	end = p + strcspn(p, "/?#");
	at = memrchr(p, '@', (size_t)(end - p));
	if (at)
		p = at + 1;
	return p < end && *p != ':';
}

/* Parses url with libcurl: its normal form, host and port. */
static int parse(const char *url, target *t, refusal *r)
{
	CURLU *h = curl_url();
	char *u = NULL, *host = NULL, *port = NULL;
	CURLUcode uc;
	int rc = 0;
	size_t n;

	if (!h)
		return CORE_ENOMEM;
	uc = curl_url_set(h, CURLUPART_URL, url, CURLU_ALLOW_SPACE | CURLU_URLENCODE);
	if (uc == CURLUE_BAD_PORT_NUMBER)
		rc = refuse(r, "SSRFBlockedError", "Invalid port in URL: Port out of range 0-65535");
	else if (uc)
		rc = refuse(r, "InvalidURLError", "Invalid URL %s: %s", url, curl_url_strerror(uc));
	else if (curl_url_get(h, CURLUPART_URL, &u, 0) || curl_url_get(h, CURLUPART_HOST, &host, 0) ||
		 curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		rc = refuse(r, "InvalidURLError", "Invalid URL: %s", url);
	if (!rc) {
		const char *hs = host[0] == '[' ? host + 1 : host;

		n = strlen(hs) - (host[0] == '[');
		if (n >= sizeof(t->host))
			rc = refuse(r, "InvalidURLError", "Invalid URL (host name too long): %s", url);
		else {
			for (size_t i = 0; i < n; i++)
				t->host[i] = (char)tolower((unsigned char)hs[i]);
			t->host[n] = '\0';
			t->port = (unsigned)strtoul(port, NULL, 10);
			if (!(t->url = strdup(u)))
				rc = CORE_ENOMEM;
		}
	}
	curl_free(u);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return rc;
}

/* Resolves t->host once and checks every address (ELSPETH's
 * validate_url_for_ssrf, steps 3 and 4). */
static int resolve(const ws_fetch_cfg *cfg, target *t, plg_ctx *ctx, refusal *r)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_IDN }, *res = NULL;
	bool found = false, v4 = false;
	char why[256];
	int gai, rc = 0;

	plg_blocking(ctx, true);
	gai = getaddrinfo(t->host, NULL, &hints, &res);
	plg_blocking(ctx, false);
	if (gai)
		return refuse(r, "NetworkError", "DNS resolution failed: %s: [Errno %d] %s",
			      t->host, gai, gai_strerror(gai));
	for (struct addrinfo *a = res; a && !rc; a = a->ai_next) {
		ws_addr x = { .family = a->ai_family };

		if (a->ai_family == AF_INET)
			memcpy(x.b, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
		else if (a->ai_family == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a->ai_addr;

			memcpy(x.b, &s6->sin6_addr, 16);
			if (s6->sin6_scope_id) { /* fail closed, as ELSPETH */
				ws__addr_format(&x, why, sizeof(why));
				rc = refuse(r, "SSRFBlockedError", "Unparseable IP address: '%s%%%u'",
					    why, (unsigned)s6->sin6_scope_id);
				break;
			}
		} else
			continue;
		if (!ws__addr_allowed(&x, cfg->allowed, cfg->nallowed, why, sizeof(why)))
			rc = refuse(r, "SSRFBlockedError", "%s", why);
		else if (!found || (!v4 && x.family == AF_INET)) {
			t->addr = x;
			v4 = x.family == AF_INET;
			found = true;
		}
	}
	freeaddrinfo(res);
	if (!rc && !found)
		rc = refuse(r, "NetworkError", "DNS resolution returned no addresses: %s", t->host);
	if (!rc)
		ws__addr_format(&t->addr, t->ip, sizeof(t->ip));
	return rc;
}

/* ELSPETH's validate_url_for_ssrf for one URL: t is set on success (the
 * caller frees t->url, success or not). */
static int check(const ws_fetch_cfg *cfg, const char *url, target *t, plg_ctx *ctx,
		 refusal *r)
{
	char scheme[32];
	int rc;

	memset(t, 0, sizeof(*t));
	scheme_of(url, scheme, sizeof(scheme));
	if (strcmp(scheme, "http") && strcmp(scheme, "https"))
		return refuse(r, "SSRFBlockedError", "Forbidden scheme: %s", scheme);
	if (!names_host(url))
		return refuse(r, "SSRFBlockedError", "URL has no hostname");
	if ((rc = parse(url, t, r)))
		return rc;
	if (!t->port)
		return refuse(r, "SSRFBlockedError", "Port 0 is not allowed");
	return resolve(cfg, t, ctx, r);
}

/* ------------------------------------------------------------ recording */

/* The plg_ctx a hop's http_run gets: it passes everything on to the
 * row's, and rewrites each call it records (on the executor's thread)
 * into the call ELSPETH records. */
typedef struct rec_ctx {
	plg_ctx base;
	plg_ctx *row;
	const http_req *req;
	const char *call_type;
	unsigned *order;          /* the row's calls so far */
} rec_ctx;

static bool secret_header(const char *name, size_t n)
{
	static const char *const exact[] = { "authorization", "proxy-authorization", "cookie",
		"set-cookie", "www-authenticate", "proxy-authenticate", "x-api-key", "api-key",
		"x-auth-token", "x-access-token", "x-csrf-token", "x-xsrf-token",
		"ocp-apim-subscription-key", NULL };
	static const char *const words[] = { "auth", "authkey", "authtoken", "accesstoken",
		"apikey", "authorization", "key", "secret", "token", "password", "credential",
		NULL };
	char low[128];
	size_t i = 0;

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[n] = '\0';
	for (const char *const *e = exact; *e; e++)
		if (!strcmp(low, *e))
			return true;
	for (char *seg = low; *seg;) {
		size_t k = strspn(seg, "abcdefghijklmnopqrstuvwxyz0123456789");

		for (const char *const *w = words; k && *w; w++)
			if (strlen(*w) == k && !strncmp(seg, *w, k))
				return true;
		seg += k;
		seg += strcspn(seg, "abcdefghijklmnopqrstuvwxyz0123456789");
	}
	for (const char *const *w = words; low[0] == 'x'; w++) {
		if (!*w)
			break;
		if (!strcmp(low + 1, *w))
			return true;
	}
	return false;
}

/* The answer's header lines as {lowercased name: value} (repeated
 * names joined by ", ", secrets left out). */
static json_t *headers_json(const core_buf *h)
{
	json_t *o = json_object();
	const char *p = h->data, *end = h->data ? h->data + h->len : NULL;

	while (o && p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon;
		size_t n = eol ? (size_t)(eol - p) : (size_t)(end - p);
		char name[128];

		while (n && (p[n - 1] == '\r' || p[n - 1] == '\n'))
			n--;
		colon = memchr(p, ':', n);
		if (colon && colon > p && (size_t)(colon - p) < sizeof(name) &&
		    !secret_header(p, (size_t)(colon - p))) {
			const char *v = colon + 1, *ve = p + n;
			core_buf val = { 0 };
			json_t *old;

			for (size_t i = 0; i < (size_t)(colon - p); i++)
				name[i] = (char)tolower((unsigned char)p[i]);
			name[colon - p] = '\0';
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if ((old = json_object_get(o, name)) && json_is_string(old)) {
				core_buf_append(&val, json_string_value(old), json_string_length(old));
				core_buf_puts(&val, ", ");
			}
			core_utf8_append_lossy(&val, v, (size_t)(ve - v));
			if (core_utf8_valid(name, strlen(name)))
				json_object_set_new(o, name, json_stringn(val.data ? val.data : "", val.len));
			core_buf_release(&val);
		}
		p = eol ? eol + 1 : end;
	}
	return o;
}

static const char *header(const core_buf *h, const char *name, size_t *len)
{
	size_t nl = strlen(name);

	for (const char *p = h->data; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);

		if (n > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
			const char *v = p + nl + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			*len = (size_t)(p + n - v);
			while (*len && strchr(" \t\r", v[*len - 1]))
				(*len)--;
			return v;
		}
		p = eol ? eol + 1 : p + n;
	}
	*len = 0;
	return NULL;
}

static char *header_dup(const core_buf *h, const char *name)
{
	size_t n;
	const char *v = header(h, name, &n);

	return v ? strndup(v, n) : NULL;
}

/* The body as ELSPETH records it: text for text/ types, XML, JSON and form
 * content types, else {"_binary": base64}. */
static json_t *body_json(const char *ct, const char *body, size_t len)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	core_buf b = { 0 };
	json_t *v;

	if (ct && (!strncasecmp(ct, "text/", 5) || strcasestr(ct, "xml") ||
		   strcasestr(ct, "json") || strcasestr(ct, "form-urlencoded"))) {
		if (ws__decode(body, len, ct, &b))
			return NULL;
		v = json_stringn(b.data ? b.data : "", b.len);
		core_buf_release(&b);
		return v;
	}
	for (size_t i = 0; i < len; i += 3) {
		const unsigned char *s = (const unsigned char *)body + i;
		uint32_t x = (uint32_t)s[0] << 16 | (i + 1 < len ? (uint32_t)s[1] << 8 : 0) |
			     (i + 2 < len ? s[2] : 0);
		char q[4] = { b64[x >> 18], b64[(x >> 12) & 63],
			      i + 1 < len ? b64[(x >> 6) & 63] : '=', i + 2 < len ? b64[x & 63] : '=' };

		if (core_buf_append(&b, q, 4)) {
			core_buf_release(&b);
			return NULL;
		}
	}
	v = json_pack("{s:s#}", "_binary", b.data ? b.data : "", (int)b.len);
	core_buf_release(&b);
	return v;
}

static unsigned rec_call(plg_ctx *ctx, const plg_call *call)
{
	rec_ctx *rc = (rec_ctx *)ctx;
	plg_call c = *call;
	json_t *resp = NULL, *hdrs;
	char *ct, *text = NULL;
	unsigned idx = 0;

	c.call_type = rc->call_type;
	c.submit_order = c.complete_order = ++*rc->order;
	if (call->http_status) {
		hdrs = headers_json(&rc->req->resp_headers);
		ct = header_dup(&rc->req->resp_headers, "content-type");
		resp = json_pack("{s:i,s:o,s:I,s:o}", "status_code", (int)call->http_status,
				 "headers", hdrs ? hdrs : json_object(),
				 "body_size", (json_int_t)call->response_len,
				 "body", body_json(ct, call->response, call->response_len));
		free(ct);
		if (resp)
			text = json_dumps(resp, JSON_COMPACT | JSON_SORT_KEYS);
	}
	c.response = text;
	c.response_len = text ? strlen(text) : 0;
	if (rc->row && rc->row->record_call)
		idx = rc->row->record_call(rc->row, &c);
	free(text);
	json_decref(resp);
	return idx;
}

static void rec_blocking(plg_ctx *ctx, bool begin)
{
	plg_blocking(((rec_ctx *)ctx)->row, begin);
}

/* ELSPETH's request record (HTTPCallRequest) of a hop. */
static char *request_json(const ws_fetch_cfg *cfg, const char *url, const target *t,
			  unsigned hop, const char *from)
{
	json_t *r = json_pack("{s:s,s:s,s:o}", "method", "GET", "url", url,
			      "headers", json_deep_copy(cfg->headers_json));
	char host[300], *s;

	if (!r)
		return NULL;
	if (t) {
		bool dflt = (t->port == 80 && !strncasecmp(url, "http:", 5)) ||
			    (t->port == 443 && !strncasecmp(url, "https:", 6));
		bool v6 = strchr(t->host, ':') != NULL;

		snprintf(host, sizeof(host), "%s%s%s", v6 ? "[" : "", t->host, v6 ? "]" : "");
		if (!dflt)
			snprintf(host + strlen(host), sizeof(host) - strlen(host), ":%u", t->port);
		json_object_set_new(json_object_get(r, "headers"), "Host", json_string(host));
		json_object_set_new(r, "resolved_ip", json_string(t->ip));
	}
	if (hop) {
		json_object_set_new(r, "hop_number", json_integer(hop));
		json_object_set_new(r, "redirect_from", json_string(from));
	}
	s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(r);
	return s;
}

/* A redirect the check refused is recorded: the hop that was not sent. */
static void record_refused(const ws_fetch_cfg *cfg, plg_ctx *ctx, const char *url,
			   unsigned hop, const char *from, const refusal *r, unsigned *order)
{
	char *req = request_json(cfg, url, NULL, hop, from), msg[600];
	uint64_t now = core_now_wall_ns();

	snprintf(msg, sizeof(msg), "%s: %s (not sent)", r->type, r->msg);
	if (ctx && ctx->record_call && req) {
		++*order;
		ctx->record_call(ctx, &(plg_call){
			.call_type = "http_redirect", .ok = false,
			.error_class = plg_error_class_name(PLG_CLASS_CLIENT), .error = msg,
			.request = req, .request_len = strlen(req),
			.submitted_ns = now, .completed_ns = now,
			.submit_order = *order, .complete_order = *order });
	}
	free(req);
}

/* ----------------------------------------------------------------- hops */

static const char *status_error(long status, const char **type)
{
	switch (status) {
	case 404: *type = "NotFoundError"; return "";
	case 403: *type = "ForbiddenError"; return "";
	case 401: *type = "UnauthorizedError"; return "";
	case 429: *type = "RateLimitError"; return "";
	default: break;
	}
	if (status >= 500 && status < 600) {
		*type = "ServerError";
		return "";
	}
	return NULL;
}

/* What a hop's final result means (ELSPETH's _fetch_url): 0 keeps the
 * answer; else the row's error. */
static int judge(const http_req *r, const char *orig, refusal *why)
{
	const char *type = NULL;

	switch (r->result) {
	case PLG_CLASS_TIMEOUT:
		return refuse(why, "NetworkError", "Timeout fetching %s: %s", orig, r->error);
	case PLG_CLASS_NETWORK:
		return refuse(why, "NetworkError", "Connection error fetching %s: %s", orig, r->error);
	case PLG_CLASS_MALFORMED:
	case PLG_CLASS_GAVE_UP:
		return refuse(why, "NetworkError", "HTTP request error fetching %s: %s", orig, r->error);
	default:
		break;
	}
	if (status_error(r->http_status, &type))
		return refuse(why, type, "HTTP %ld: %s", r->http_status, orig);
	return 0;
}

static bool redirect_status(long s)
{
	return s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
}

/* The Location of a redirect, resolved against the hop's URL (NULL when
 * it is no URL). A scheme other than http and https is kept as it is
 * written, for check() to refuse. */
static char *follow(const char *from, const char *loc, size_t n)
{
	CURLU *h = curl_url();
	char *l = strndup(loc, n), *u = NULL, *out = NULL, scheme[32];

	if (!h || !l)
		goto out;
	scheme_of(l, scheme, sizeof(scheme));
	if (scheme[0] && strcmp(scheme, "http") && strcmp(scheme, "https")) {
		out = l;
		l = NULL;
	} else if (!curl_url_set(h, CURLUPART_URL, from, CURLU_ALLOW_SPACE | CURLU_URLENCODE) &&
		   !curl_url_set(h, CURLUPART_URL, l, CURLU_ALLOW_SPACE | CURLU_URLENCODE) &&
		   !curl_url_get(h, CURLUPART_URL, &u, 0))
		out = strdup(u);
out:
	curl_free(u);
	free(l);
	curl_url_cleanup(h);
	return out;
}

/* One request, pinned to t's address. */
static void send_hop(const ws_fetch_cfg *cfg, const target *t, const char *reqjson,
		     const char *call_type, plg_ctx *ctx, unsigned *order, http_req *r)
{
	char pin[400];
	struct curl_slist *to;
	bool v6 = t->addr.family == AF_INET6;
	rec_ctx rc = {
		.base = { .seq = ctx ? ctx->seq : 0, .retry = ctx ? ctx->retry : NULL,
			  .stop = ctx ? ctx->stop : NULL, .record_call = rec_call,
			  .blocking = rec_blocking },
		.row = ctx, .req = r, .call_type = call_type, .order = order,
	};

	snprintf(pin, sizeof(pin), "::%s%s%s:%u", v6 ? "[" : "", t->ip, v6 ? "]" : "", t->port);
	to = curl_slist_append(NULL, pin);
	*r = (http_req){ .url = t->url, .headers = cfg->headers, .body = reqjson,
			 .body_len = strlen(reqjson), .connect_to = to,
			 .max_body = cfg->max_body };
	if (!to) {
		r->result = PLG_CLASS_NETWORK;
		snprintf(r->error, sizeof(r->error), "out of memory");
		return;
	}
	http_run(cfg->http, r, 1, &rc.base);
	curl_slist_free_all(to);
}

static int failed(ws_fetch *f, const char *reason, const refusal *r, core_err *err)
{
	f->reason = reason;
	f->error_type = r->type;
	err->retryable = false;
	return core_err_set(err, CORE_EDATA, "%s", r->msg);
}

/* A redirect's target failed its check: ELSPETH's error for it. */
static int refused_redirect(ws_fetch *f, const char *url, const refusal *r, core_err *err)
{
	refusal w;

	if (!strcmp(r->type, "NetworkError"))
		refuse(&w, r->type, "DNS resolution failed during redirect: %s: %s", url, r->msg);
	else if (!strcmp(r->type, "SSRFBlockedError"))
		refuse(&w, r->type, "SSRF blocked during redirect: %s: %s", url, r->msg);
	else
		refuse(&w, r->type, "Invalid redirect from %s: %s", url, r->msg);
	return failed(f, "api_error", &w, err);
}

/* The answer of the final hop, kept in f. */
static int keep(ws_fetch *f, http_req *r, const target *t, const char *url)
{
	f->status = r->http_status;
	f->body = r->response;
	r->response = (core_buf){ 0 };
	f->content_type = header_dup(&r->resp_headers, "content-type");
	f->final_url = strdup(url);
	snprintf(f->ip, sizeof(f->ip), "%s", t->ip);
	return f->final_url ? 0 : CORE_ENOMEM;
}

/* Where one hop leaves the fetch. */
enum { HOP_DONE, HOP_NEXT };

/* One checked and sent hop to *cur: HOP_DONE with the answer in f (or an
 * error returned), HOP_NEXT with *cur the redirect's target. */
static int hop_once(const ws_fetch_cfg *cfg, const char *url, char **cur, const char *prev,
		    unsigned hop, unsigned *order, plg_ctx *ctx, ws_fetch *f, int *next,
		    core_err *err)
{
	http_req r = { 0 };
	refusal why = { 0 };
	target t;
	const char *loc;
	char *req, *to;
	size_t loclen;
	int rc;

	*next = HOP_DONE;
	if ((rc = check(cfg, *cur, &t, ctx, &why))) {
		free(t.url);
		if (rc != CORE_EDATA)
			return rc;
		if (!hop)
			return failed(f, "validation_failed", &why, err);
		record_refused(cfg, ctx, *cur, hop, prev, &why, order);
		return refused_redirect(f, url, &why, err);
	}
	if (!(req = request_json(cfg, *cur, &t, hop, prev))) {
		free(t.url);
		return CORE_ENOMEM;
	}
	send_hop(cfg, &t, req, hop ? "http_redirect" : "http", ctx, order, &r);
	if (r.interrupted) {
		rc = core_err_set(err, CORE_ESTOPPED, "web_scrape: fetch not finished: %s", r.error);
	} else if (r.too_big) { /* 0.7.1's BodyTooLargeError (blob_fetch) */
		refuse(&why, "BodyTooLargeError", "response body exceeds max_body_bytes %zu for %s",
		       cfg->max_body, url);
		rc = failed(f, "body_too_large", &why, err);
	} else if ((rc = judge(&r, url, &why)))
		rc = failed(f, "api_error", &why, err);
	else if (r.primary_ip[0] && strcmp(r.primary_ip, t.ip)) {
		refuse(&why, "SSRFBlockedError", "connected to %s, not to the checked address %s: %s",
		       r.primary_ip, t.ip, url);
		rc = failed(f, "api_error", &why, err);
	} else if (r.http_status < 300 || r.http_status >= 400)
		rc = keep(f, &r, &t, *cur);
	else if (!redirect_status(r.http_status) ||
		 !(loc = header(&r.resp_headers, "location", &loclen)) || !loclen) {
		refuse(&why, "InvalidURLError", "Unresolved redirect HTTP %ld: %s "
		       "(missing or empty Location header)", r.http_status, url);
		rc = failed(f, "api_error", &why, err);
	} else if (hop >= WS_MAX_REDIRECTS) {
		refuse(&why, "InvalidURLError", "Too many redirects: %s: Exceeded %d redirects",
		       url, WS_MAX_REDIRECTS);
		rc = failed(f, "api_error", &why, err);
	} else if (!(to = follow(*cur, loc, loclen))) {
		refuse(&why, "InvalidURLError", "Invalid redirect from %s: %.*s", url, (int)loclen, loc);
		rc = failed(f, "api_error", &why, err);
	} else {
		free(*cur);
		*cur = to;
		*next = HOP_NEXT;
	}
	core_buf_release(&r.response);
	core_buf_release(&r.resp_headers);
	free(t.url);
	free(req);
	return rc;
}

int ws__fetch(const ws_fetch_cfg *cfg, const char *url, plg_ctx *ctx,
	      ws_fetch *f, core_err *err)
{
	char *cur = strdup(url), *prev = NULL;
	unsigned hop = 0, order = 0;
	int rc = cur ? 0 : CORE_ENOMEM, next = HOP_NEXT;

	memset(f, 0, sizeof(*f));
	while (!rc && next == HOP_NEXT) {
		char *from = strdup(cur);

		if (!from) {
			rc = CORE_ENOMEM;
			break;
		}
		rc = hop_once(cfg, url, &cur, prev, hop, &order, ctx, f, &next, err);
		free(prev);
		prev = from;
		hop++;
	}
	if (rc == CORE_ENOMEM)
		core_err_set(err, CORE_ENOMEM, "out of memory");
	free(cur);
	free(prev);
	return rc;
}

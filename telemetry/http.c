/*
 * http.c — one POST (or PUT) to a collector, with the OTLP specification's
 * retry rules (docs/observability.md): a refused connection, a timeout,
 * HTTP 429, 502, 503 and 504, and the gRPC codes UNAVAILABLE, DEADLINE_
 * EXCEEDED, ABORTED, OUT_OF_RANGE, DATA_LOSS, CANCELLED and RESOURCE_
 * EXHAUSTED are tried again after an exponential backoff with jitter
 * (Retry-After, when the collector sends one, instead), up to
 * TEL_HTTP_TRIES times; anything else fails at once. gRPC is HTTP/2
 * (cleartext with prior knowledge for http://) with the 5-byte message
 * frame; its status comes in the trailers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "telemetry/tel_http.h"

#define BACKOFF0_S 0.5
#define BACKOFF_MAX_S 8.0

typedef struct answer {
	core_buf body;
	int grpc_status;          /* -1: none seen */
	char grpc_message[256];
	double retry_after_s;     /* 0: none */
} answer;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	answer *a = ctx;

	if (a->body.len < 65536)
		core_buf_append(&a->body, p, size * n);
	return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	answer *a = ctx;
	size_t len = size * n;
	char line[512];

	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	if (!strncasecmp(line, "grpc-status:", 12))
		a->grpc_status = atoi(line + 12);
	else if (!strncasecmp(line, "grpc-message:", 13))
		snprintf(a->grpc_message, sizeof(a->grpc_message), "%s",
			 line + 13 + strspn(line + 13, " "));
	else if (!strncasecmp(line, "retry-after:", 12))
		a->retry_after_s = atof(line + 12);
	return len;
}

static bool grpc_retryable(int code)
{
	/* CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED,
	 * OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS */
	return code == 1 || code == 4 || code == 8 || code == 10 || code == 11 ||
	       code == 14 || code == 15;
}

static void nap(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s,
			       .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* One attempt: 0 delivered; 1 retryable (err set); CORE_EIO failed. */
static int attempt(const tel_http_req *q, answer *a, core_err *err)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hs = NULL;
	char ct[128];
	long status = 0;
	CURLcode cc;
	int rc;

	if (!h)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	snprintf(ct, sizeof(ct), "Content-Type: %s", q->grpc ? "application/grpc" :
		 q->content_type);
	hs = curl_slist_append(hs, ct);
	if (q->grpc)
		hs = curl_slist_append(hs, "TE: trailers");
	for (const struct curl_slist *e = q->headers; e; e = e->next)
		hs = curl_slist_append(hs, e->data);
	curl_easy_setopt(h, CURLOPT_URL, q->url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
	if (q->put)
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, q->timeout_ms ? q->timeout_ms : 10000L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	if (q->grpc)
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION, strncmp(q->url, "https:", 6) ?
				 CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hs);
	curl_easy_cleanup(h);
	if (cc != CURLE_OK) {
		core_err_set(err, CORE_EIO, "%s: %s", q->shown, curl_easy_strerror(cc));
		return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
		       cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_RECV_ERROR ||
		       cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
		       cc == CURLE_HTTP2 || cc == CURLE_HTTP2_STREAM ? 1 : CORE_EIO;
	}
	if (q->grpc && status == 200 && a->grpc_status == 0)
		return 0;
	if (!q->grpc && status >= 200 && status < 300)
		return 0;
	if (q->grpc && status == 200) {
		rc = grpc_retryable(a->grpc_status) ? 1 : CORE_EIO;
		core_err_set(err, CORE_EIO, "%s: gRPC status %d%s%s", q->shown,
			     a->grpc_status, a->grpc_message[0] ? ": " : "", a->grpc_message);
		return rc;
	}
	rc = status == 429 || status == 502 || status == 503 || status == 504 ? 1 : CORE_EIO;
	core_buf_putc(&a->body, '\0');
	core_err_set(err, CORE_EIO, "%s: HTTP %ld%s%.200s", q->shown, status,
		     a->body.len > 1 && !q->grpc ? ": " : "",
		     q->grpc ? "" : a->body.data);
	return rc;
}

int tel__http_send(const tel_http_req *q, core_buf *reply, core_err *err)
{
	double backoff = BACKOFF0_S;
	int rc = CORE_EIO;

	for (unsigned try = 0; try < (q->tries ? q->tries : TEL_HTTP_TRIES); try++) {
		answer a = { .grpc_status = -1 };
		double wait;

		rc = attempt(q, &a, err);
		if (rc != 1) {
			if (!rc && reply) {
				*reply = a.body;
				a.body = (core_buf){ 0 };
			}
			core_buf_release(&a.body);
			return rc;
		}
		core_buf_release(&a.body);
		wait = a.retry_after_s > 0 ? a.retry_after_s :
		       backoff * (0.5 + (double)rand() / RAND_MAX / 2);
		if (wait > BACKOFF_MAX_S)
			wait = BACKOFF_MAX_S;
		if (try + 1 < (q->tries ? q->tries : TEL_HTTP_TRIES))
			nap(wait);
		backoff *= 2;
	}
	return err->code ? err->code : CORE_EIO;
}

/* ------------------------------------------------------------- urls */

void tel__url_shown(const char *url, char *out, size_t cap)
{
	const char *at = strchr(url, '@'), *scheme = strstr(url, "://");

	/* userinfo (a password) never reaches a message */
	if (at && scheme && at > scheme && !memchr(scheme + 3, '/', (size_t)(at - scheme - 3)))
		snprintf(out, cap, "%.*s://***@%s", (int)(scheme - url), url, at + 1);
	else
		snprintf(out, cap, "%s", url);
}

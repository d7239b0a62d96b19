/*
 * route.c — the chat endpoints (see server.h and docs/mock_llm.md):
 *   POST [prefix]/v1/chat/completions                 OpenAI, OpenRouter
 *   POST [prefix]/openai/deployments/D/chat/completions?api-version=V
 * and the dispatch to the admin ones (admin.c). A chat request goes
 * through: method, key, api-version, body, admission (quota and
 * capacity), then its fate (policy.h).
 */
#include "server.h"
#include "answer.h"
#include "hint.h"
#include "quota.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mock__error(mock_reply *r, int status, const char *type,
		 const char *code, const char *extra, const char *msg)
{
	size_t n;
	char *body = mock_error_body(msg, type, code, &n);

	mock_http_head(&r->out, status, n, r->close, extra);
	mock_buf_add(&r->out, body, n);
	free(body);
}

void mock__not_allowed(mock_reply *r, const char *allow)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "Allow: %s\r\n", allow);
	mock__error(r, 405, "invalid_request_error", "method_not_allowed",
		    extra, "method not allowed on this path");
}

/* ----------------------------------------------------------------- chat */

static int ends_with(const char *buf, mock_span sp, const char *suffix)
{
	size_t n = strlen(suffix);

	return sp.len >= n && !memcmp(buf + sp.off + sp.len - n, suffix, n);
}

/* The deployment of an Azure path ("" when not Azure); caller frees. */
static char *azure_deployment(const char *buf, mock_span path)
{
	static const char pre[] = "/openai/deployments/";
	static const char post[] = "/chat/completions";
	char *p = mock_span_dup(buf, path), *d, *slash;

	d = strstr(p, pre);
	if (d) {
		d += sizeof(pre) - 1;
		slash = strchr(d, '/');
		if (slash && slash > d && !strcmp(slash, post)) {
			memmove(p, d, (size_t)(slash - d));
			p[slash - d] = '\0';
			return p;
		}
	}
	p[0] = '\0';
	return p;
}

static int key_ok(const mock_server *s, const char *buf,
		  const mock_http_req *req)
{
	const char *k = s->cfg.require_key;
	size_t kl = strlen(k);
	mock_span a = req->authorization;

	if (!kl)
		return 1;
	if (a.len == kl + 7 && !memcmp(buf + a.off, "Bearer ", 7) &&
	    !memcmp(buf + a.off + 7, k, kl))
		return 1;
	return req->api_key.len == kl && !memcmp(buf + req->api_key.off, k, kl);
}

static int has_api_version(const char *buf, mock_span q)
{
	const char *p = buf + q.off, *end = p + q.len;

	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;

		if (e - p > 12 && !memcmp(p, "api-version=", 12))
			return 1;
		p = e + 1;
	}
	return 0;
}

/* The refusal's message: the mock's own, unless the hint goes in the
 * body or tokens ran out, where it reads like OpenAI's. */
static void refusal_message(const mock_cfg *cfg, const mock_verdict *v,
			    mock_buf *msg)
{
	const mock_lim_view *q = v->cause == MOCK_CAUSE_TOKENS ? &v->tok :
							       &v->req;

	if (v->cause == MOCK_CAUSE_TOKENS) {
		mock_buf_addf(msg, "Rate limit reached on tokens per min "
			      "(TPM): Limit %.0f, Used %.0f, Requested %.0f.",
			      floor(q->limit), ceil(q->limit - q->remaining),
			      v->tokens);
	} else if (cfg->hint != MOCK_HINT_BODY) {
		mock_buf_adds(msg, "the mock server is over capacity; retry "
			      "later");
		return;
	} else if (v->cause == MOCK_CAUSE_CONCURRENCY) {
		mock_buf_adds(msg, "Rate limit reached on concurrent requests.");
	} else if (cfg->window_ms == 60000) {
		mock_buf_addf(msg, "Rate limit reached on requests per min "
			      "(RPM): Limit %.0f, Used %.0f, Requested 1.",
			      floor(q->limit), ceil(q->limit - q->remaining));
	} else {
		mock_buf_addf(msg, "Rate limit reached on requests per %ld ms: "
			      "Limit %.0f, Used %.0f, Requested 1.",
			      cfg->window_ms, floor(q->limit),
			      ceil(q->limit - q->remaining));
	}
	mock_hint_sentence(msg, cfg, v->wait_ms);
}

static void refuse(mock_server *s, const mock_verdict *v, mock_reply *r)
{
	const mock_cfg *cfg = &s->cfg;
	long st = cfg->over_status;
	mock_buf extra = { 0 }, msg = { 0 };
	int status;
	size_t n;
	char *body;

	if (v->cause == MOCK_CAUSE_QUOTA) {
		if (cfg->quota == MOCK_QUOTA_TRANSIENT)
			mock_hint_headers(&extra, cfg, v->wait_ms);
		mock_ratelimit_headers(&extra, cfg, &v->req, &v->tok);
		body = mock_quota_body(cfg, v->wait_ms, &status, &n);
		mock_http_head(&r->out, status, n, r->close, extra.data);
		mock_buf_add(&r->out, body, n);
		free(body);
		mock_policy_count_status(s->policy, status);
		goto out_release;
	}
	mock_hint_headers(&extra, cfg, v->wait_ms);
	mock_ratelimit_headers(&extra, cfg, &v->req, &v->tok);
	refusal_message(cfg, v, &msg);
	mock__error(r, (int)st, st == 429 ? "rate_limit_error" :
		    st == 503 ? "server_error" : "overloaded_error",
		    st == 429 ? "rate_limit_exceeded" :
		    st == 503 ? "service_unavailable" : "overloaded",
		    extra.data, msg.data);
	mock_policy_count_status(s->policy, (int)st);
out_release:
	mock_buf_release(&extra);
	mock_buf_release(&msg);
}

/* The answer of an admitted request, by its fate; `extra` holds the
 * rate-limit headers. */
static void serve(mock_server *s, const mock_chat *chat, const char *model,
		  const char *extra, mock_reply *r)
{
	uint64_t now = mock_loop_now(s->loop);
	int fate = mock_policy_fate(s->policy, &s->cfg, chat->req_hash, now);
	int status = fate == MOCK_FAULT_500 ? 500 : 200;
	size_t n;
	char *body;

	r->holds_slot = 1;
	r->kind = MOCK_REPLY_LATER;
	r->delay_ms = mock_policy_latency(&s->cfg, chat->req_hash);
	if (fate == MOCK_FAULT_DROP || fate == MOCK_FAULT_STALL) {
		r->kind = fate == MOCK_FAULT_DROP ? MOCK_REPLY_DROP :
						    MOCK_REPLY_STALL;
		r->delay_ms = (uint64_t)s->cfg.stall_ms;
		return;
	}
	mock_policy_count_status(s->policy, status);
	if (fate == MOCK_FAULT_500) {
		mock__error(r, 500, "server_error", "internal_error", extra,
			    "injected fault: internal server error");
		return;
	}
	body = mock_chat_answer(chat, &s->cfg, model,
				fate == MOCK_FAULT_LENGTH, &n);
	if (fate == MOCK_FAULT_MALFORMED) {
		n /= 2; /* a proper prefix of a JSON object is never JSON */
	} else if (fate == MOCK_FAULT_TRUNCATED) {
		r->close = 1;
		mock_http_head(&r->out, 200, n, 1, extra);
		n /= 2;
		mock_buf_add(&r->out, body, n);
		free(body);
		return;
	}
	mock_http_head(&r->out, 200, n, r->close, extra);
	mock_buf_add(&r->out, body, n);
	free(body);
}

/* The token charge of a request: its characters / 4, rounded up, plus the
 * completion it may ask for. */
static double token_charge(const mock_cfg *cfg, const mock_chat *chat)
{
	return (double)((chat->prompt_chars + 3) / 4) +
	       (double)(chat->max_tokens >= 0 ? chat->max_tokens :
						cfg->default_max_tokens);
}

static void admit_chat(mock_server *s, const mock_chat *chat,
		       const char *deployment, mock_reply *r)
{
	mock_verdict v;
	mock_buf extra = { 0 };
	const char *model;

	mock_policy_decide(s->policy, &s->cfg, mock_loop_now(s->loop),
			   token_charge(&s->cfg, chat), &v);
	if (v.cause != MOCK_CAUSE_NONE) {
		refuse(s, &v, r);
		return;
	}
	model = json_string_value(json_object_get(chat->root, "model"));
	mock_ratelimit_headers(&extra, &s->cfg, &v.req, &v.tok);
	/* The cap announced as some gateways do, so a client can say what
	 * share of the server it used (not with a schedule: it moves). */
	if (s->cfg.max_concurrent > 0 && !s->cfg.ncphases)
		mock_buf_addf(&extra, "x-concurrency-limit: %ld\r\n", s->cfg.max_concurrent);
	serve(s, chat, *deployment ? deployment : model ? model : "mock-model",
	      extra.data, r);
	mock_buf_release(&extra);
}

static void route_chat(mock_server *s, const char *buf,
		       const mock_http_req *req, const char *deployment,
		       mock_reply *r)
{
	mock_chat chat;
	char err[512];
	int status = 0;

	mock_policy_count_request(s->policy);
	if (!mock_span_eq(buf, req->method, "POST")) {
		mock__not_allowed(r, "POST");
		status = 405;
	} else if (!key_ok(s, buf, req)) {
		mock__error(r, status = 401, "invalid_request_error",
			    "invalid_api_key", NULL, "Incorrect API key "
			    "provided (the mock runs with --require-key)");
	} else if (*deployment && !has_api_version(buf, req->query)) {
		mock__error(r, status = 400, "invalid_request_error",
			    "missing_api_version", NULL, "Missing required "
			    "query parameter 'api-version'");
	}
	if (status) {
		mock_policy_count_status(s->policy, status);
		return;
	}
	if (mock_chat_parse(&chat, buf + req->head_len, req->body_len, err,
			    sizeof(err))) {
		mock__error(r, 400, "invalid_request_error", "invalid_request",
			    NULL, err);
		mock_policy_count_status(s->policy, 400);
	} else {
		admit_chat(s, &chat, deployment, r);
	}
	mock_chat_release(&chat);
}

void mock__route(mock_server *s, const char *buf, const mock_http_req *req,
		 mock_reply *r)
{
	char *deployment;

	r->close = !req->keep_alive;
	if (mock__route_admin(s, buf, req, r))
		return;
	deployment = azure_deployment(buf, req->path);
	if (*deployment || ends_with(buf, req->path, "/v1/chat/completions") ||
	    mock_span_eq(buf, req->path, "/chat/completions")) {
		route_chat(s, buf, req, deployment, r);
	} else {
		char msg[300];

		snprintf(msg, sizeof(msg), "no route for '%.*s'; chat "
			 "completions are served at [prefix]/v1/chat/completions "
			 "and /openai/deployments/D/chat/completions",
			 (int)(req->path.len > 200 ? 200 : req->path.len),
			 buf + req->path.off);
		mock__error(r, 404, "invalid_request_error", "not_found", NULL,
			    msg);
	}
	free(deployment);
}

/*
 * route.c — the endpoints (see server.h and docs/mock_llm.md):
 *   POST [prefix]/v1/chat/completions                 OpenAI, OpenRouter
 *   POST [prefix]/openai/deployments/D/chat/completions?api-version=V
 *   GET /admin/stats, POST /admin/reset, GET|POST /admin/config, GET /health
 * A chat request goes through: method, key, api-version, body, capacity,
 * then its fate (policy.h). Admin requests skip capacity and faults.
 */
#include "server.h"
#include "answer.h"

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

static void reply_json(mock_reply *r, int status, json_t *v)
{
	char *body = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(12));
	size_t n = body ? strlen(body) : 0;

	mock_http_head(&r->out, status, n, r->close, NULL);
	mock_buf_add(&r->out, body, n);
	free(body);
	json_decref(v);
}

static void not_allowed(mock_reply *r, const char *allow)
{
	char extra[64];

	snprintf(extra, sizeof(extra), "Allow: %s\r\n", allow);
	mock__error(r, 405, "invalid_request_error", "method_not_allowed",
		    extra, "method not allowed on this path");
}

/* ---------------------------------------------------------------- admin */

static void admin_config(mock_server *s, const char *buf,
			 const mock_http_req *req, mock_reply *r)
{
	char err[512];
	char *old_schedule;
	json_t *v;

	if (mock_span_eq(buf, req->method, "GET")) {
		reply_json(r, 200, mock_cfg_to_json(&s->cfg));
		return;
	}
	v = json_loadb(buf + req->head_len, req->body_len, 0, NULL);
	old_schedule = mock_xstrdup(s->cfg.schedule_spec);
	if (!v || mock_cfg_apply_json(&s->cfg, v, err, sizeof(err))) {
		if (!v)
			snprintf(err, sizeof(err), "the body must be a JSON "
				 "object of options, e.g. {\"rps\": 10}");
		mock__error(r, 400, "invalid_request_error", "invalid_config",
			    NULL, err);
	} else {
		if (strcmp(old_schedule, s->cfg.schedule_spec))
			mock_policy_restart_schedule(s->policy,
						     mock_loop_now(s->loop));
		reply_json(r, 200, mock_cfg_to_json(&s->cfg));
	}
	free(old_schedule);
	json_decref(v);
}

/* 1 when the request was an admin (or health) request, answered in r. */
static int route_admin(mock_server *s, const char *buf,
		       const mock_http_req *req, mock_reply *r)
{
	int get = mock_span_eq(buf, req->method, "GET");
	int post = mock_span_eq(buf, req->method, "POST");
	uint64_t now = mock_loop_now(s->loop);

	if (mock_span_eq(buf, req->path, "/admin/stats")) {
		if (get)
			reply_json(r, 200, mock_policy_stats(s->policy, &s->cfg,
							     now));
		else
			not_allowed(r, "GET");
	} else if (mock_span_eq(buf, req->path, "/admin/reset")) {
		if (post) {
			mock_policy_reset(s->policy, now);
			reply_json(r, 200, mock_policy_stats(s->policy, &s->cfg,
							     now));
		} else {
			not_allowed(r, "POST");
		}
	} else if (mock_span_eq(buf, req->path, "/admin/config")) {
		if (get || post)
			admin_config(s, buf, req, r);
		else
			not_allowed(r, "GET, POST");
	} else if (mock_span_eq(buf, req->path, "/health")) {
		if (get)
			reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
		else
			not_allowed(r, "GET");
	} else {
		return 0;
	}
	return 1;
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

static void over_capacity(mock_server *s, mock_reply *r)
{
	long st = s->cfg.over_status;
	char extra[64] = "";

	if (s->cfg.retry_after > 0)
		snprintf(extra, sizeof(extra), "Retry-After: %.0f\r\n",
			 ceil(s->cfg.retry_after));
	mock__error(r, (int)st, st == 429 ? "rate_limit_error" :
		    st == 503 ? "server_error" : "overloaded_error",
		    st == 429 ? "rate_limit_exceeded" :
		    st == 503 ? "service_unavailable" : "overloaded",
		    extra, "the mock server is over capacity; retry later");
}

/* The answer of an admitted request, by its fate. */
static void serve(mock_server *s, const mock_chat *chat, const char *model,
		  mock_reply *r)
{
	int fate = mock_policy_fate(s->policy, &s->cfg, chat->req_hash);
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
		mock__error(r, 500, "server_error", "internal_error", NULL,
			    "injected fault: internal server error");
		return;
	}
	body = mock_chat_answer(chat, &s->cfg, model,
				fate == MOCK_FAULT_LENGTH, &n);
	if (fate == MOCK_FAULT_MALFORMED) {
		n /= 2; /* a proper prefix of a JSON object is never JSON */
	} else if (fate == MOCK_FAULT_TRUNCATED) {
		r->close = 1;
		mock_http_head(&r->out, 200, n, 1, NULL);
		n /= 2;
		mock_buf_add(&r->out, body, n);
		free(body);
		return;
	}
	mock_http_head(&r->out, 200, n, r->close, NULL);
	mock_buf_add(&r->out, body, n);
	free(body);
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
		not_allowed(r, "POST");
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
	} else if (!mock_policy_admit(s->policy, &s->cfg,
				      mock_loop_now(s->loop))) {
		over_capacity(s, r);
		mock_policy_count_status(s->policy, (int)s->cfg.over_status);
	} else {
		const char *model = json_string_value(
			json_object_get(chat.root, "model"));

		serve(s, &chat, *deployment ? deployment :
			  model ? model : "mock-model", r);
	}
	mock_chat_release(&chat);
}

void mock__route(mock_server *s, const char *buf, const mock_http_req *req,
		 mock_reply *r)
{
	char *deployment;

	r->close = !req->keep_alive;
	if (route_admin(s, buf, req, r))
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

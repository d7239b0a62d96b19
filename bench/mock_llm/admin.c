/*
 * admin.c — the admin endpoints (see docs/mock_llm.md): GET /admin/stats,
 * GET /admin/series, POST /admin/reset, GET|POST /admin/config and
 * GET /health. They skip admission and faults and are not counted as
 * chat requests.
 */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reply_json(mock_reply *r, int status, json_t *v)
{
	char *body = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(12));
	size_t n = body ? strlen(body) : 0;

	mock_http_head(&r->out, status, n, r->close, NULL);
	mock_buf_add(&r->out, body, n);
	free(body);
	json_decref(v);
}

static void admin_config(mock_server *s, const char *buf,
			 const mock_http_req *req, mock_reply *r)
{
	uint64_t now = mock_loop_now(s->loop);
	char err[512];
	mock_cfg old;
	json_t *v;

	if (mock_span_eq(buf, req->method, "GET")) {
		reply_json(r, 200, mock_cfg_to_json(&s->cfg));
		return;
	}
	v = json_loadb(buf + req->head_len, req->body_len, 0, NULL);
	mock_policy_before_change(s->policy, &s->cfg, now);
	mock_cfg_copy(&old, &s->cfg);
	if (!v || mock_cfg_apply_json(&s->cfg, v, err, sizeof(err))) {
		if (!v)
			snprintf(err, sizeof(err), "the body must be a JSON "
				 "object of options, e.g. {\"rps\": 10}");
		mock__error(r, 400, "invalid_request_error", "invalid_config",
			    NULL, err);
	} else {
		mock_policy_after_change(s->policy, &old, &s->cfg, now);
		reply_json(r, 200, mock_cfg_to_json(&s->cfg));
	}
	mock_cfg_release(&old);
	json_decref(v);
}

int mock__route_admin(mock_server *s, const char *buf,
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
			mock__not_allowed(r, "GET");
	} else if (mock_span_eq(buf, req->path, "/admin/series")) {
		if (get)
			reply_json(r, 200, mock_policy_series(s->policy, &s->cfg,
							      now));
		else
			mock__not_allowed(r, "GET");
	} else if (mock_span_eq(buf, req->path, "/admin/reset")) {
		if (post) {
			mock_policy_reset(s->policy, &s->cfg, now);
			reply_json(r, 200, mock_policy_stats(s->policy, &s->cfg,
							     now));
		} else {
			mock__not_allowed(r, "POST");
		}
	} else if (mock_span_eq(buf, req->path, "/admin/config")) {
		if (get || post)
			admin_config(s, buf, req, r);
		else
			mock__not_allowed(r, "GET, POST");
	} else if (mock_span_eq(buf, req->path, "/health")) {
		if (get)
			reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
		else
			mock__not_allowed(r, "GET");
	} else {
		return 0;
	}
	return 1;
}

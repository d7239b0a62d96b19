/*
 * serve.c — the HTTP side of `elspeth serve` (serve.h): libmicrohttpd's
 * thread answers the routes; one runner thread takes the posted runs in
 * order and runs each through the run library, whose observer keeps the
 * run's progress for GET /api/runs/{id}.
 *
 * Locking: srv.lock guards the job list and every job's state, progress
 * and result copy; it is never held across a run, a load or I/O.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>

#include "plugins/plugins.h"
#include "recorder/recorder.h"
#include "report/report.h"
#include "run/run.h"
#include "serve/serve.h"
#include "serve/oidc.h"
#include "serve/serve_internal.h"

#define BODY_MAX (1u << 20)       /* a posted request: 1 MiB */

/* ----------------------------------------------------------- answers */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	enum MHD_Result rc;

	json_decref(j);
	if (!text)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* ELSPETH's error envelope: {"detail": "..."} */
static enum MHD_Result detail(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return reply(c, status, json_pack("{s:s}", "detail", msg));
}

/* ----------------------------------------------------------- catalog */

/* GET /api/catalog/{sources|transforms|sinks}/{name}/schema: ELSPETH's
 * PluginSchemaInfo, or its 404s (the path's type is plural). */
static enum MHD_Result plugin_schema(struct MHD_Connection *c, const char *rest)
{
	static const char *const plural[] = { "sources", "transforms", "sinks" };
	const char *slash = strchr(rest, '/'), *end = strstr(rest, "/schema");
	char type[16] = "", name[128], msg[2048];
	size_t tl = slash ? (size_t)(slash - rest) : 0;
	json_t *v;

	for (int t = 0; t < 3; t++)
		if (tl == strlen(plural[t]) && !strncmp(rest, plural[t], tl))
			snprintf(type, sizeof(type), "%.*s", (int)tl - 1, rest);
	if (!type[0] || !end || end[7] || end <= slash) {
		snprintf(msg, sizeof(msg), "Unknown plugin type: %.*s. Must be one of: "
			 "['sinks', 'sources', 'transforms']",
			 (int)(strcspn(rest, "/") % 100), rest);
		return detail(c, MHD_HTTP_NOT_FOUND, msg);
	}
	snprintf(name, sizeof(name), "%.*s", (int)(end - slash - 1), slash + 1);
	v = plg_catalog_schema(type, name, msg, sizeof(msg));
	return v ? reply(c, MHD_HTTP_OK, v) : detail(c, MHD_HTTP_NOT_FOUND, msg);
}

/* ------------------------------------------------------------- runs */

static enum MHD_Result post_run(srv *s, struct MHD_Connection *c, const core_buf *body)
{
	json_t *req = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
	const char *path = json_string_value(json_object_get(req, "settings_path"));
	const char *yaml = json_string_value(json_object_get(req, "settings_yaml"));
	json_t *ex = json_object_get(req, "execute");
	bool execute = !ex || json_is_true(ex);
	core_err err = { 0 };
	srv_job *j = NULL;

	if (!json_is_object(req) || (!path == !yaml) || (ex && !json_is_boolean(ex))) {
		json_decref(req);
		return detail(c, MHD_HTTP_UNPROCESSABLE_CONTENT,
			      "expected a JSON object with settings_path (relative to the "
			      "server's root) or settings_yaml, and optionally execute (a boolean)");
	}
	if (srv__load(s, path, yaml, &j, &err)) {
		json_decref(req);
		if (err.code == SRV_FORBIDDEN)
			return detail(c, MHD_HTTP_FORBIDDEN, err.msg);
		if (!execute || err.code == CORE_ECONFIG || err.code == CORE_EDATA)
			return reply(c, execute ? MHD_HTTP_UNPROCESSABLE_CONTENT : MHD_HTTP_OK,
				     run_validation_json(false, err.msg));
		return detail(c, MHD_HTTP_BAD_REQUEST, err.msg);
	}
	json_decref(req);
	if (!execute) {
		srv__job_free(j);
		return reply(c, MHD_HTTP_OK, run_validation_json(true, NULL));
	}
	if (srv__enqueue(s, j, &err)) {
		srv__job_free(j);
		return detail(c, MHD_HTTP_SERVICE_UNAVAILABLE, err.msg);
	}
	return reply(c, MHD_HTTP_ACCEPTED, json_pack("{s:s}", "run_id", j->id));
}

/* ---------------------------------------------------- trail reads */

typedef struct read_req {
	uint64_t run;              /* the Landscape's run */
	uint64_t row;              /* explain: the row */
} read_req;

/* explain --json of a row, in the trail reader's child. */
static int explain_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	const read_req *q = ctx;
	json_t *doc = NULL;
	int rc;

	*run = q->run;
	rc = rec_explain(env, q->run, q->row, 0, &doc, err);

	if (!rc && core_json_append(out, doc, -1, 0))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(doc);
	return rc;
}

/* elspeth report's page, in the trail reader's child. */
static int report_fn(rec_env *env, void *ctx, uint64_t *run, core_buf *out, core_err *err)
{
	const read_req *q = ctx;

	*run = q->run;
	return rpt_write(env, q->run, NULL, out, err);
}

/* A read of job id's run in its Landscape: the row's story (row > 0) or
 * the report page. */
static enum MHD_Result trail_read(srv *s, struct MHD_Connection *c, const char *id,
				  uint64_t row)
{
	char lmdb[4096], path[PATH_MAX];
	read_req q = { .row = row };
	struct MHD_Response *r;
	core_buf out = { 0 };
	core_err err = { 0 };
	enum MHD_Result rc;
	char *yaml = NULL;
	uint64_t run = 0;

	if (!srv__job_trail(s, id, lmdb, sizeof(lmdb), &run, path, sizeof(path), &yaml))
		return detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	free(yaml);
	if (!run)
		return detail(c, MHD_HTTP_CONFLICT, "the run has not started (or is not recorded)");
	q.run = run;
	if (rec_read_isolated(lmdb, row ? "the row story's reader" : "the report's reader",
			      row ? explain_fn : report_fn, &q, (size_t)1 << 30, &run, &out, &err)) {
		core_buf_release(&out);
		return detail(c, err.code == CORE_EDATA ? MHD_HTTP_NOT_FOUND :
			      MHD_HTTP_INTERNAL_SERVER_ERROR, err.msg);
	}
	r = MHD_create_response_from_buffer(out.len, out.data ? out.data : "",
					    out.data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!r) {
		core_buf_release(&out);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				row ? "application/json" : "text/html; charset=utf-8");
	rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result resume(srv *s, struct MHD_Connection *c, const char *id)
{
	char lmdb[4096], path[PATH_MAX];
	core_err err = { 0 };
	char *yaml = NULL;
	uint64_t run = 0;
	srv_job *j;
	int rc;

	if (!srv__job_trail(s, id, lmdb, sizeof(lmdb), &run, path, sizeof(path), &yaml))
		return detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	if (!run) {
		free(yaml);
		return detail(c, MHD_HTTP_CONFLICT, "the run has not started: nothing to resume");
	}
	rc = srv__resume(s, path, yaml, run, &j, &err);
	free(yaml);
	if (rc)
		return detail(c, err.code == SRV_FORBIDDEN ? MHD_HTTP_FORBIDDEN :
			      MHD_HTTP_UNPROCESSABLE_CONTENT, err.msg);
	return reply(c, MHD_HTTP_ACCEPTED, json_pack("{s:s}", "run_id", j->id));
}

/* ELSPETH's GET /api/runs/{id}/results: the run's final figures, 409
 * while it is pending or running. */
static enum MHD_Result results(srv *s, struct MHD_Connection *c, const char *id)
{
	static const char *const keys[] = {
		"run_id", "status", "rows_processed", "rows_failed", "landscape_run_id", "error",
	};
	json_t *st = srv__status(s, id), *out;
	const char *status;
	char msg[64];

	if (!st)
		return detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	status = json_string_value(json_object_get(st, "status"));
	if (!status || !strcmp(status, "pending") || !strcmp(status, "running")) {
		snprintf(msg, sizeof(msg), "Run is still %s", status ? status : "pending");
		json_decref(st);
		return detail(c, MHD_HTTP_CONFLICT, msg);
	}
	out = json_object();
	for (size_t i = 0; out && i < sizeof(keys) / sizeof(keys[0]); i++)
		json_object_set(out, keys[i], json_object_get(st, keys[i]) ?
				json_object_get(st, keys[i]) : json_null());
	json_decref(st);
	return reply(c, MHD_HTTP_OK, out);
}

static enum MHD_Result run_route(srv *s, struct MHD_Connection *c, const char *method,
				 const char *rest)
{
	char id[64];
	const char *slash = strchr(rest, '/');
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	json_t *st;

	if (!n || n >= sizeof(id))
		return detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	memcpy(id, rest, n);
	id[n] = '\0';
	if (!slash && !strcmp(method, "GET")) {
		st = srv__status(s, id);
		return st ? reply(c, MHD_HTTP_OK, st) : detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	}
	if (slash && !strcmp(method, "GET") &&
	    (!strcmp(slash, "/live") || !strcmp(slash, "/graph") || !strcmp(slash, "/settings"))) {
		st = slash[1] == 'l' ? srv__live(s, id) : slash[1] == 'g' ? srv__graph(s, id) :
		     srv__settings_text(s, id);
		return st ? reply(c, MHD_HTTP_OK, st) : detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	}
	if (slash && !strcmp(slash, "/results") && !strcmp(method, "GET"))
		return results(s, c, id);
	if (slash && !strcmp(slash, "/report") && !strcmp(method, "GET"))
		return trail_read(s, c, id, 0);
	if (slash && !strncmp(slash, "/rows/", 6) && !strcmp(method, "GET")) {
		char *end;
		unsigned long long row = strtoull(slash + 6, &end, 10);

		if (!row || *end)
			return detail(c, MHD_HTTP_NOT_FOUND, "rows are numbered from 1");
		return trail_read(s, c, id, row);
	}
	if (slash && !strcmp(slash, "/resume") && !strcmp(method, "POST"))
		return resume(s, c, id);
	if (slash && !strcmp(slash, "/cancel") && !strcmp(method, "POST")) {
		const char *status = srv__cancel(s, id);

		return status ? reply(c, MHD_HTTP_OK, json_pack("{s:s}", "status", status))
			      : detail(c, MHD_HTTP_NOT_FOUND, "Run not found");
	}
	return detail(c, MHD_HTTP_NOT_FOUND, "Not Found");
}

/* ------------------------------------------------------------- auth */

/* The caller's token: the bearer of Authorization, or ?token= (the
 * WebSocket's, as ELSPETH's). */
static const char *token_of(struct MHD_Connection *c, bool query)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    MHD_HTTP_HEADER_AUTHORIZATION);

	if (h && !strncasecmp(h, "Bearer ", 7))
		return h + 7;
	return query ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token") : NULL;
}

static void client_addr(struct MHD_Connection *c, char *out, size_t cap)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = i ? i->client_addr : NULL;

	snprintf(out, cap, "?");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)cap);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
			  (socklen_t)cap);
}

static enum MHD_Result login(srv *s, struct MHD_Connection *c, const core_buf *body)
{
	json_t *req = json_loadb(body->data ? body->data : "", body->len, 0, NULL);
	const char *user = json_string_value(json_object_get(req, "username"));
	const char *pw = json_string_value(json_object_get(req, "password"));
	char token[65], addr[64], retry[16];
	struct MHD_Response *r;
	enum MHD_Result rc;
	unsigned wait_s = 0;
	auth_rc a;

	if (!s->auth) {
		json_decref(req);
		return detail(c, MHD_HTTP_NOT_FOUND, "Not found"); /* ELSPETH, without local auth */
	}
	if (!user || !pw) {
		json_decref(req);
		return detail(c, MHD_HTTP_UNPROCESSABLE_CONTENT,
			      "expected a JSON object with username and password");
	}
	client_addr(c, addr, sizeof(addr));
	a = auth_login(s->auth, addr, user, pw, token, &wait_s);
	json_decref(req);
	if (a == AUTH_OK)
		return reply(c, MHD_HTTP_OK, json_pack("{s:s,s:s}", "access_token", token,
						       "token_type", "bearer"));
	if (a == AUTH_DENIED)
		return detail(c, MHD_HTTP_UNAUTHORIZED, "Invalid username or password");
	if (a == AUTH_ERROR)
		return detail(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the users file cannot be read");
	/* held after failures: 429 with when to come back */
	static const char held[] = "{\"detail\":\"too many failed logins: wait and try again\"}";

	snprintf(retry, sizeof(retry), "%u", wait_s);
	if (!(r = MHD_create_response_from_buffer(sizeof(held) - 1, (void *)held,
						  MHD_RESPMEM_PERSISTENT)))
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	rc = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
	MHD_destroy_response(r);
	return rc;
}

static json_t *profile(const char *user)
{
	return json_pack("{s:s,s:s,s:s,s:n,s:[]}", "user_id", user, "username", user,
			 "display_name", user, "email", "groups");
}

/* ELSPETH's UserProfile from an OIDC token's claims (its oidc.py):
 * username is preferred_username or sub, display_name name or
 * preferred_username or "Unknown", groups as strings. Takes claims. */
static json_t *oidc_profile(json_t *claims)
{
	const char *sub = json_string_value(json_object_get(claims, "sub"));
	const char *pref = json_string_value(json_object_get(claims, "preferred_username"));
	const char *name = json_string_value(json_object_get(claims, "name"));
	const char *email = json_string_value(json_object_get(claims, "email"));
	json_t *groups = json_array(), *g;
	size_t i;

	json_array_foreach(json_object_get(claims, "groups"), i, g) {
		char num[32];

		if (json_is_string(g))
			json_array_append(groups, g);
		else if (json_is_integer(g)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(g));
			json_array_append_new(groups, json_string(num));
		}
	}
	g = json_pack("{s:s,s:s,s:s,s:s?,s:o}", "user_id", sub, "username", pref ? pref : sub,
		      "display_name", name && *name ? name : pref ? pref : "Unknown",
		      "email", email, "groups", groups ? groups : json_array());
	json_decref(claims);
	return g;
}

/* Whether the caller may go on: a local user's token, an OIDC issuer's,
 * or anyone without logins. user: who (for the log); *claims: the OIDC
 * token's (NULL otherwise). */
static bool authorized(srv *s, const char *token, char *user, size_t cap, json_t **claims)
{
	char why[256];
	const char *who;

	*claims = NULL;
	if (s->auth)
		return auth_check(s->auth, token, user);
	if (!s->oidc) {
		snprintf(user, cap, "anonymous");
		return true;
	}
	if (!srv_oidc_check(s->oidc, token, claims, why, sizeof(why)))
		return false;
	who = json_string_value(json_object_get(*claims, "preferred_username"));
	snprintf(user, cap, "%s", who ? who : json_string_value(json_object_get(*claims, "sub")));
	return true;
}

/* ------------------------------------------------------------- page */

/* serve/web/index.html, built in (cmake/embed.cmake) */
extern const unsigned char srv__page[];
extern const size_t srv__page_len;

/* The page needs no token (its API calls do); it may load nothing but
 * itself and talk to nothing but this server. */
static enum MHD_Result page(struct MHD_Connection *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(srv__page_len,
		(void *)srv__page, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	MHD_add_response_header(r, "Content-Security-Policy",
		"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
		"connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* --------------------------------------------------------- dispatch */

typedef struct upload {
	core_buf body;
	bool too_big;
} upload;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *data_size, void **con_cls)
{
	srv *s = cls;
	upload *u = *con_cls;
	char user[AUTH_NAME_MAX];
	json_t *claims = NULL;

	(void)version;
	if (!u) { /* the headers: a body may follow */
		if (!(u = calloc(1, sizeof(*u))))
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;
	}
	if (*data_size) {
		if (u->body.len + *data_size > BODY_MAX)
			u->too_big = true;
		else if (core_buf_append(&u->body, data, *data_size))
			return MHD_NO;
		*data_size = 0;
		return MHD_YES;
	}
	if (u->too_big)
		return detail(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body over 1 MiB");
	if ((!strcmp(url, "/") || !strcmp(url, "/index.html")) && !strcmp(method, "GET"))
		return page(c);
	if (!strcmp(url, "/api/health") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, json_pack("{s:s}", "status", "ok"));
	if (!strcmp(url, "/api/auth/config") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, json_pack("{s:s,s:s?,s:s?}", "provider",
			     s->auth ? "local" : s->oidc ? "oidc" : "none",
			     "oidc_issuer", s->oidc ? s->cfg->oidc_issuer : NULL,
			     "oidc_client_id", s->oidc ? s->cfg->oidc_client_id : NULL));
	if (!strcmp(url, "/api/auth/login") && !strcmp(method, "POST"))
		return login(s, c, &u->body);
	/* everything else needs a valid token (the WebSocket is told so
	 * after its handshake, with ELSPETH's 4001) */
	if (!authorized(s, token_of(c, !strncmp(url, "/ws/", 4)), user, sizeof(user), &claims)) {
		if (!strncmp(url, "/ws/runs/", 9) && !strcmp(method, "GET"))
			return srv__ws(s, c, url + 9, false);
		return detail(c, MHD_HTTP_UNAUTHORIZED, "Not authenticated");
	}
	if (!strcmp(url, "/api/auth/me") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, claims ? oidc_profile(claims) : profile(user));
	json_decref(claims);
	if (!strcmp(url, "/api/auth/token") && !strcmp(method, "POST")) {
		char fresh[65];

		if (!s->auth)
			return detail(c, MHD_HTTP_NOT_FOUND, "Not found");
		if (!auth_refresh(s->auth, token_of(c, false), fresh))
			return detail(c, MHD_HTTP_UNAUTHORIZED, "Not authenticated");
		return reply(c, MHD_HTTP_OK, json_pack("{s:s,s:s}", "access_token", fresh,
						       "token_type", "bearer"));
	}
	if (!strcmp(url, "/api/catalog/sources") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, plg_catalog_list("source"));
	if (!strcmp(url, "/api/catalog/transforms") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, plg_catalog_list("transform"));
	if (!strcmp(url, "/api/catalog/sinks") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, plg_catalog_list("sink"));
	if (!strncmp(url, "/api/catalog/", 13) && !strcmp(method, "GET"))
		return plugin_schema(c, url + 13);
	if (!strcmp(url, "/api/runs") && !strcmp(method, "POST"))
		return post_run(s, c, &u->body);
	if (!strcmp(url, "/api/runs") && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, srv__list(s));
	if (!strncmp(url, "/api/runs/", 10))
		return run_route(s, c, method, url + 10);
	if (!strncmp(url, "/ws/runs/", 9) && !strcmp(method, "GET") && !strchr(url + 9, '/'))
		return srv__ws(s, c, url + 9, true);
	return detail(c, MHD_HTTP_NOT_FOUND, "Not Found");
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	upload *u = *con_cls;

	(void)cls, (void)c, (void)toe;
	if (u) {
		core_buf_release(&u->body);
		free(u);
		*con_cls = NULL;
	}
}

/* ------------------------------------------------------------- main */

/* The users file: not under the root (a posted pipeline could read it). */
static int open_auth(srv *s, const srv_cfg *cfg, core_err *err)
{
	char root[PATH_MAX], users[PATH_MAX];
	size_t rl;
	int rc;

	if (!realpath(cfg->root, root))
		return core_err_set(err, CORE_ECONFIG, "--root %s: %s", cfg->root, strerror(errno));
	if (!realpath(cfg->users, users))
		return core_err_set(err, CORE_ECONFIG, "--users %s: %s", cfg->users, strerror(errno));
	rl = strlen(root);
	if (!strncmp(users, root, rl) && (users[rl] == '/' || !users[rl]))
		return core_err_set(err, CORE_ECONFIG, "--users %s is under --root %s: a posted "
				    "pipeline could read it; keep it outside", cfg->users, cfg->root);
	if (!(s->auth = malloc(sizeof(*s->auth))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = auth_open(s->auth, users, cfg->token_hours * 3600u, err))) {
		free(s->auth);
		s->auth = NULL;
	}
	return rc;
}

static void close_auth(srv *s)
{
	srv_oidc_free(s->oidc);
	s->oidc = NULL;
	if (s->auth) {
		auth_close(s->auth);
		free(s->auth);
		s->auth = NULL;
	}
}

int srv_main(const srv_cfg *cfg, core_err *err)
{
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	struct MHD_Daemon *d;
	srv s = { 0 };
	bool v6 = false;
	int rc;

	if ((rc = core_listen_addr("serve --listen", cfg->listen, &ss, &v6, err)))
		return rc;
	if (cfg->no_auth && !core_addr_loopback(&ss))
		return core_err_set(err, CORE_ECONFIG,
			"--no-auth serves loopback only: '%s' is not a loopback address",
			cfg->listen);
	if ((cfg->no_auth + !!cfg->users + !!cfg->oidc_issuer) > 1)
		return core_err_set(err, CORE_ECONFIG,
			"give one of --users, --oidc-issuer and --no-auth");
	if (!cfg->no_auth && !cfg->users && !cfg->oidc_issuer)
		return core_err_set(err, CORE_ECONFIG,
			"logins need a users file: --users FILE (add users with `elspeth serve "
			"adduser NAME --users FILE`), an OpenID Connect issuer (--oidc-issuer "
			"URL --oidc-audience AUD), or --no-auth on a loopback address");
	if (cfg->oidc_issuer &&
	    (rc = srv_oidc_open(cfg->oidc_issuer, cfg->oidc_audience, &s.oidc, err)))
		return rc;
	if (cfg->users && (rc = open_auth(&s, cfg, err)))
		return rc;
	if ((rc = srv__init(&s, cfg, err))) {
		close_auth(&s);
		return rc;
	}
	errno = 0;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_UPGRADE |
			     (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, answer, &s,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
			     MHD_OPTION_NOTIFY_COMPLETED, completed, &s,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
			     MHD_OPTION_END);
	if (!d) {
		int e = errno;

		srv__release(&s);
		close_auth(&s);
		return core_err_set(err, CORE_EIO, "serve --listen '%s': cannot listen there%s%s",
				    cfg->listen, e ? ": " : "", e ? strerror(e) : "");
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (cfg->ready)
		cfg->ready(cfg->ready_ctx, info ? info->port : 0);
	while (!atomic_load(cfg->stop))
		nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
	srv__ws_stop(&s);
	MHD_stop_daemon(d);
	srv__release(&s);
	close_auth(&s);
	return 0;
}

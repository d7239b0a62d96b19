/*
 * web_http.c — the `http` block web_scrape and blob_fetch take (ELSPETH's
 * WebScrapeHTTPConfig and 0.7.1's BlobFetchHTTPConfig): abuse_contact and
 * a reason, both sent as headers, a timeout, allowed_hosts, and for
 * blob_fetch max_body_bytes; and the client of the shared HTTP executor
 * their fetches go through (web_scrape_internal.h).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/web_scrape_internal.h"

#define MAX_BODY_DEFAULT (10LL * 1024 * 1024) /* blob_fetch's max_body_bytes */

/* ELSPETH's _validate_allowed_hosts: a keyword or a non-empty list of
 * networks (strict=False: host bits are cleared). */
static int parse_allowed(ws_http *h, const core_node *n, core_err *err)
{
	const char **v = NULL;
	size_t len = 0;
	int rc;

	if (!n || n->kind == CORE_NODE_SCALAR) {
		const char *kw = n ? n->value : "public_only";

		if (!strcmp(kw, "public_only"))
			return 0;
		if (strcmp(kw, "allow_private"))
			return core_err_at(err, CORE_ECONFIG, n, "allowed_hosts must be 'public_only', "
					   "'allow_private', or a list of CIDR ranges, got '%s'", kw);
		if (!(h->allowed = calloc(2, sizeof(*h->allowed))))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		ws__net_parse("0.0.0.0/0", &h->allowed[0]);
		ws__net_parse("::/0", &h->allowed[1]);
		h->fetch.nallowed = 2;
		return 0;
	}
	if ((rc = core_node_str_list(n, &v, &len, err)))
		return rc;
	if (!len)
		rc = core_err_at(err, CORE_ECONFIG, n, "allowed_hosts list must not be empty "
				 "(use 'allow_private' to allow all)");
	else if (!(h->allowed = calloc(len, sizeof(*h->allowed))))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < len; i++)
		if (!ws__net_parse(v[i], &h->allowed[i]))
			rc = core_err_at(err, CORE_ECONFIG, n->items[i],
					 "Invalid CIDR in allowed_hosts: '%s' (an IPv4 or IPv6 "
					 "address or network, e.g. 10.0.0.0/8 or ::1)", v[i]);
	h->fetch.nallowed = rc ? 0 : len;
	free(v);
	return rc;
}

/* A header value from the settings: not empty once stripped (ELSPETH's
 * _reject_empty), and no control characters (a CR or LF would start
 * another header); with ascii (0.7.1's blob_fetch) ASCII only. */
static int header_value(const core_node *http, const char *key, bool ascii,
			const char **out, core_err *err)
{
	const char *v = NULL, *p;
	int rc = core_opt_str(http, key, true, &v, err);

	if (rc)
		return rc;
	for (p = v; *p && isspace((unsigned char)*p); p++)
		;
	if (!*p)
		return core_err_at(err, CORE_ECONFIG, core_map_get(http, key),
				   "%s must not be empty", key);
	for (p = v; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return core_err_at(err, CORE_ECONFIG, core_map_get(http, key),
					   "%s must be one line of text (it is sent as an HTTP header)", key);
		if (ascii && (unsigned char)*p >= 0x80)
			return core_err_at(err, CORE_ECONFIG, core_map_get(http, key),
				"%s contains a non-ASCII character at byte %zu; this value is sent "
				"verbatim as an HTTP request header and must be ASCII-encodable",
				key, (size_t)(p - v));
	}
	*out = v;
	return 0;
}

static int add_header(ws_http *h, const char *name, const char *value)
{
	core_buf b = { 0 };
	struct curl_slist *l;

	core_buf_printf(&b, "%s: %s", name, value);
	l = b.data ? curl_slist_append(h->fetch.headers, b.data) : NULL;
	core_buf_release(&b);
	if (!l || json_object_set_new(h->fetch.headers_json, name, json_string(value)))
		return CORE_ENOMEM;
	h->fetch.headers = l;
	return 0;
}

/* The executor's settings: a ceiling (pool_size) and a pace (the
 * settings' rate_limit for the service, as ELSPETH's limiter) and
 * nothing learnt (docs/settings.md, web_scrape). */
static void executor_cfg(ws_http *h, const ws_http_spec *spec, const plg_env *env,
			 long long pool, long long timeout)
{
	const core_rate_limit_cfg *r = plg_env_rate_limits(env);
	const core_rate_service *sv;
	core_rate_service dflt;
	double share = plg_env_capacity_share(env), p = ceil((double)pool * share);
	double gap = 0;

	if (r && (sv = core_rate_limit_find(r, spec->upstream, &dflt)) && sv->requests_per_minute > 0)
		gap = 60000.0 / sv->requests_per_minute / share;
	h->cfg = (http_cfg){ .pool_size = p < 1 ? 1 : (unsigned)p, .timeout_s = (double)timeout,
			     .mode = HTTP_MODE_AIMD, .min_dispatch_delay_ms = gap,
			     .max_dispatch_delay_ms = gap, .backoff_multiplier = 1,
			     .max_retry_after_s = 31536000, .web = true, .name = spec->upstream };
}

int ws__http_open(ws_http *h, const ws_http_spec *spec, const plg_env *env,
		  const core_node *o, long long pool, core_err *err)
{
	const char *keys[] = { "abuse_contact", spec->reason_key, "timeout", "allowed_hosts",
			       spec->max_body ? "max_body_bytes" : NULL, NULL };
	const core_node *http = core_map_get(o, "http");
	const char *abuse = NULL, *reason = NULL;
	long long timeout = 30, max_body = MAX_BODY_DEFAULT;
	int rc;

	if (!http)
		return core_err_at(err, CORE_ECONFIG, o, "missing required key 'http' "
				   "(with abuse_contact and %s)", spec->reason_key);
	if ((rc = core_map_check_keys(http, keys, err)) ||
	    (rc = header_value(http, "abuse_contact", spec->max_body, &abuse, err)) ||
	    (rc = header_value(http, spec->reason_key, spec->max_body, &reason, err)) ||
	    (rc = core_opt_int(http, "timeout", 1, 86400, &timeout, err)) ||
	    (spec->max_body &&
	     (rc = core_opt_int(http, "max_body_bytes", 1, 1LL << 40, &max_body, err))) ||
	    (rc = parse_allowed(h, core_map_get(http, "allowed_hosts"), err)))
		return rc;
	if (!(h->fetch.headers_json = json_object()) ||
	    add_header(h, "User-Agent", "elspeth/" ELSPETH_VERSION) ||
	    add_header(h, "X-Abuse-Contact", abuse) ||
	    add_header(h, spec->reason_header, reason))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	h->fetch.max_body = spec->max_body ? (size_t)max_body : 0;
	h->fetch.allowed = h->allowed;
	executor_cfg(h, spec, env, pool, timeout);
	return http_open(&h->cfg, NULL, NULL, &h->fetch.http, err);
}

void ws__http_close(ws_http *h)
{
	http_close(h->fetch.http);
	curl_slist_free_all(h->fetch.headers);
	json_decref(h->fetch.headers_json);
	free(h->allowed);
	memset(h, 0, sizeof(*h));
}

int ws__row_error(core_err *err, const char *reason, const char *type)
{
	char msg[sizeof(err->msg)];

	memcpy(msg, err->msg, sizeof(msg));
	err->retryable = false;
	return core_err_set(err, CORE_EDATA, "%s: %s: %s", reason, type, msg);
}

int ws__row_url(const json_t *row, const char *field, const char **url, core_err *err)
{
	const json_t *u = json_object_get(row, field);

	if (!u) {
		core_err_set(err, CORE_EDATA, "the url field '%s' is missing", field);
		return ws__row_error(err, "validation_failed", "KeyError");
	}
	if (!json_is_string(u)) {
		core_err_set(err, CORE_EDATA, "the url field '%s' holds %s, not a URL",
			     field, core_json_kind(u));
		return ws__row_error(err, "validation_failed", "TypeError");
	}
	*url = json_string_value(u);
	return 0;
}

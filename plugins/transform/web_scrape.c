/*
 * web_scrape.c — `web_scrape`: fetch each row's URL, keep its content as
 * markdown, text or the page itself, and a fingerprint of it (ELSPETH
 * 0.4.1's transform; docs/settings.md, "web_scrape").
 *
 * Options, as ELSPETH's WebScrapeConfig (unknown keys refused):
 *   url_field, content_field, fingerprint_field   required field names
 *   format              markdown (default) | text | raw
 *   fingerprint_mode    content (default: whitespace-insensitive) | full
 *   strip_elements      elements removed before extraction ([script, style])
 *   http:               abuse_contact, scraping_reason (required: sent as
 *                       X-Abuse-Contact, X-Scraping-Reason), timeout
 *                       (seconds, 30), allowed_hosts (public_only |
 *                       allow_private | [CIDR, ...])
 *   schema              required, as every ELSPETH data plugin
 *   required_input_fields  a row lacking one is a row error
 * and ours: pool_size (fetches in flight at most, 8).
 *
 * A row gains content_field, fingerprint_field, fetch_status,
 * fetch_url_final and fetch_url_final_ip. Fetching is web_scrape_fetch.c;
 * every failure is the row's error (on_error) in ELSPETH's words:
 * "REASON: ERROR_TYPE: message", e.g. "api_error: NotFoundError: HTTP 404:
 * URL". An input row that already has one of the output fields is a row
 * error before anything is fetched (ELSPETH stops the run).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/web_scrape_internal.h"

#define UPSTREAM "web_scrape" /* the executor's name for our requests */

typedef struct ws {
	char *url_field, *content_field, *fp_field;
	const char *out_fields[5];   /* the fields a row gains */
	ws_format format;
	bool fp_content;
	char **strip;
	size_t nstrip;
	char **required;
	size_t nrequired;
	ws_http h;
} ws;

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void ws_close(void *state)
{
	ws *w = state;

	if (!w)
		return;
	ws__http_close(&w->h);
	free(w->url_field);
	free(w->content_field);
	free(w->fp_field);
	free_list(w->strip, w->nstrip);
	free_list(w->required, w->nrequired);
	free(w);
}

/* ------------------------------------------------------------ options */

static int dup_list(const core_node *n, char ***out, size_t *len, core_err *err)
{
	const char **v = NULL;
	int rc = core_node_str_list(n, &v, len, err);

	if (rc)
		return rc;
	*out = calloc(*len ? *len : 1, sizeof(**out));
	for (size_t i = 0; *out && i < *len; i++)
		if (!((*out)[i] = strdup(v[i])))
			rc = CORE_ENOMEM;
	free(v);
	if (!*out || rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* The `http` block: ELSPETH's WebScrapeHTTPConfig (web_http.c). */
static const ws_http_spec http_spec = {
	.reason_key = "scraping_reason", .reason_header = "X-Scraping-Reason",
	.upstream = UPSTREAM,
};

static int parse_fields(ws *w, const core_node *o, core_err *err)
{
	const char *url = NULL, *content = NULL, *fp = NULL;
	int rc;

	if ((rc = plg__opt_field(o, "url_field", true, &url, err)) ||
	    (rc = plg__opt_field(o, "content_field", true, &content, err)) ||
	    (rc = plg__opt_field(o, "fingerprint_field", true, &fp, err)))
		return rc;
	if (!strcmp(content, fp))
		return core_err_at(err, CORE_ECONFIG, core_map_get(o, "fingerprint_field"),
				   "content_field and fingerprint_field must differ, both are '%s'",
				   content);
	if (!(w->url_field = strdup(url)) || !(w->content_field = strdup(content)) ||
	    !(w->fp_field = strdup(fp)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	w->out_fields[0] = w->content_field;
	w->out_fields[1] = w->fp_field;
	w->out_fields[2] = "fetch_status";
	w->out_fields[3] = "fetch_url_final";
	w->out_fields[4] = "fetch_url_final_ip";
	return 0;
}

static const plg_option ws_own[] = {
	{ "url_field", "string", true, NULL,
	  "the field holding the URL fetched" },
	{ "content_field", "string", true, NULL,
	  "the field the content goes into" },
	{ "fingerprint_field", "string", true, NULL,
	  "the field the content's fingerprint goes into" },
	{ "format", "string", false, "\"markdown\"",
	  "markdown, text or raw (the HTML)" },
	{ "fingerprint_mode", "string", false, "\"content\"",
	  "content (of the extracted text) or full (of the whole answer)" },
	{ "strip_elements", "array", false, "[\"script\", \"style\"]",
	  "HTML elements removed before extraction" },
	{ "http", "object", true, NULL,
	  "abuse_contact and scraping_reason (sent as headers, both required), timeout (seconds, 30), allowed_hosts (public_only, or a list of hosts and CIDR ranges)" },
	{ "pool_size", "integer", false, "8",
	  "fetches in flight at most (1..4096)" },
	{ NULL }
};
static const plg_option *const ws_opts[] = { ws_own, plg__input_opts, plg__schema_opts, NULL };

static int parse(ws *w, const plg_env *env, const core_node *o, core_err *err)
{
	static const char *const formats[] = { "markdown", "text", "raw", NULL };
	static const char *const modes[] = { "content", "full", NULL };
	const core_node *n;
	long long pool = 8;
	int fmt = WS_FORMAT_MARKDOWN, mode = 0, rc;

	if ((rc = plg__check_options(o, ws_opts, err)) ||
	    (rc = plg__schema_check(o, true, err)) || (rc = parse_fields(w, o, err)) ||
	    ((n = core_map_get(o, "format")) && (rc = core_node_enum(n, formats, &fmt, err))) ||
	    ((n = core_map_get(o, "fingerprint_mode")) && (rc = core_node_enum(n, modes, &mode, err))) ||
	    (rc = core_opt_int(o, "pool_size", 1, 4096, &pool, err)))
		return rc;
	w->format = (ws_format)fmt;
	w->fp_content = mode == 0;
	if ((n = core_map_get(o, "strip_elements")))
		rc = dup_list(n, &w->strip, &w->nstrip, err);
	else if (!(w->strip = calloc(2, sizeof(*w->strip))) ||
		 !(w->strip[0] = strdup("script")) || !(w->strip[1] = strdup("style")))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		w->nstrip = 2;
	if (!rc && (n = core_map_get(o, "required_input_fields")) && !core_node_is_null(n))
		rc = dup_list(n, &w->required, &w->nrequired, err);
	if (rc)
		return rc;
	return ws__http_open(&w->h, &http_spec, env, o, pool, err);
}

static int ws_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	ws *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	ws__html_init();
	if ((rc = parse(w, env, options, err))) {
		ws_close(w);
		return rc;
	}
	*state = w;
	return 0;
}

/* ------------------------------------------------------------- process */

/* The row may be fetched: its URL is a string, its required fields are
 * there, and it has none of the fields the fetch adds. */
static int check_row(const ws *w, const json_t *row, const char **url, core_err *err)
{
	for (size_t i = 0; i < w->nrequired; i++)
		if (!json_object_get(row, w->required[i]))
			return core_err_set(err, CORE_EDATA, "required input field '%s' is missing",
					    w->required[i]);
	for (size_t i = 0; i < 5; i++)
		if (json_object_get(row, w->out_fields[i]))
			return core_err_set(err, CORE_EDATA, "web_scrape would overwrite the row's "
					    "field '%s' (rename it first, e.g. with field_mapper)",
					    w->out_fields[i]);
	return ws__row_url(row, w->url_field, url, err);
}

/* The node state's context, for explain: ELSPETH's success_reason
 * (its processed hash is the SHA-256 of the content, as here) and what
 * was fetched. */
static json_t *context(const ws *w, const ws_fetch *f, const core_buf *content)
{
	uint8_t d[CORE_SHA256_LEN];
	char body[CORE_SHA256_HEX_LEN + 1], text[CORE_SHA256_HEX_LEN + 1];

	core_sha256(f->body.data ? f->body.data : "", f->body.len, d);
	core_hex(d, sizeof(d), body);
	core_sha256(content->data ? content->data : "", content->len, d);
	core_hex(d, sizeof(d), text);
	return json_pack("{s:s,s:[s,s],s:{s:s},s:{s:s,s:s,s:i,s:s}}", "action", "enriched",
			 "fields_added", w->content_field, w->fp_field,
			 "metadata", "fetch_response_processed_hash", text, "fetch",
			 "final_url", f->final_url, "ip", f->ip, "status", (int)f->status,
			 "body_sha256", body);
}

static int enrich(const ws *w, const json_t *row, const ws_fetch *f, const core_buf *content,
		  const char *fp, json_t **out, core_err *err)
{
	json_t *o = json_copy((json_t *)row);

	if (!o || json_object_set_new(o, w->content_field,
				      json_stringn(content->data ? content->data : "", content->len)) ||
	    json_object_set_new(o, w->fp_field, json_string(fp)) ||
	    json_object_set_new(o, "fetch_status", json_integer(f->status)) ||
	    json_object_set_new(o, "fetch_url_final", json_string(f->final_url)) ||
	    json_object_set_new(o, "fetch_url_final_ip", json_string(f->ip))) {
		json_decref(o);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = o;
	return 0;
}

static int ws_process(void *state, const json_t *row, json_t **out, plg_ctx *ctx,
		      core_err *err)
{
	const ws *w = state;
	ws_fetch f;
	core_buf text = { 0 }, content = { 0 };
	char fp[CORE_SHA256_HEX_LEN + 1];
	const char *url = NULL;
	int rc;

	if ((rc = check_row(w, row, &url, err)))
		return rc;
	if ((rc = ws__fetch(&w->h.fetch, url, ctx, &f, err))) {
		if (rc == CORE_EDATA)
			rc = ws__row_error(err, f.reason ? f.reason : "api_error",
				       f.error_type ? f.error_type : "WebScrapeError");
		goto out;
	}
	if (ws__decode(f.body.data ? f.body.data : "", f.body.len, f.content_type, &text)) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	rc = ws__extract(text.data ? text.data : "", text.len, w->format,
			 (const char *const *)w->strip, w->nstrip, &content, err);
	if (rc == CORE_EDATA) {
		core_err_prefix(err, "%s", url);
		rc = ws__row_error(err, "content_extraction_failed", "ValueError");
	}
	if (rc || (rc = ws__fingerprint(content.data ? content.data : "", content.len,
					 w->fp_content, fp)))
		goto out;
	if (!(rc = enrich(w, row, &f, &content, fp, out, err)) && ctx)
		ctx->context = context(w, &f, &content);
out:
	ws__fetch_release(&f);
	core_buf_release(&text);
	core_buf_release(&content);
	return rc;
}

static bool ws_capacity(void *state, plg_capacity *out)
{
	const ws *w = state;

	http_get_capacity(w->h.fetch.http, out);
	return true;
}

/* Its rows keep their schema and gain the page's fields. */
static int ws_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fixed[] = { "fetch_status", "fetch_url_final",
					     "fetch_url_final_ip" };
	const char *content = NULL, *fp = NULL;
	int rc;

	out->shape = PLG_SHAPE_SAME;
	if ((rc = plg__opt_field(options, "content_field", true, &content, err)) ||
	    (rc = plg__opt_field(options, "fingerprint_field", true, &fp, err)) ||
	    (rc = plg_outputs_add(out, err, "%s", content)) ||
	    (rc = plg_outputs_add(out, err, "%s", fp)))
		return rc;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if ((rc = plg_outputs_add(out, err, "%s", fixed[i])))
			return rc;
	/* the types ELSPETH 0.7.1's WebScrapeOutput declares */
	if ((rc = plg_outputs_type(out, content, "str", err)) ||
	    (rc = plg_outputs_type(out, fp, "str", err)) ||
	    (rc = plg_outputs_type(out, "fetch_status", "int", err)) ||
	    (rc = plg_outputs_type(out, "fetch_url_final", "str", err)) ||
	    (rc = plg_outputs_type(out, "fetch_url_final_ip", "str", err)))
		return rc;
	return 0;
}

const plg_transform_ops plg__web_scrape = {
	.name = "web_scrape",
	.description = "Fetches each row's URL (SSRF-checked, every hop pinned and recorded) "
		       "and keeps its content as markdown, text or raw HTML with a fingerprint",
	.options = ws_opts,
	.open = ws_open,
	.process = ws_process,
	.close = ws_close,
	.capacity = ws_capacity,
	.outputs = ws_outputs,
};

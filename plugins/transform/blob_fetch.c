/*
 * blob_fetch.c — ELSPETH 0.7.1's "blob_fetch" transform: each row's URL
 * fetched into the payload store, the row gaining the blob's reference
 * and what the fetch found (ADR 0045).
 *
 * The fetch is web_scrape's (web_scrape_fetch.c): ELSPETH's SSRF rules
 * (the host resolved once, every address and every redirect checked
 * against allowed_hosts, the connection pinned to the address checked),
 * the shared HTTP executor, every request recorded as a call. The `http`
 * block is 0.7.1's BlobFetchHTTPConfig (web_http.c): abuse_contact and
 * fetch_reason (sent as X-Abuse-Contact and X-Fetch-Reason, ASCII),
 * timeout, max_body_bytes (10 MiB: the transfer stops past it),
 * allowed_hosts. An answer whose Content-Type (its media type, lowercased)
 * is not in allowed_content_types is refused; a kept body is written to
 * the payload store (payload_store.base_path, default .elspeth/payloads)
 * as the file ab/abcd..., its SHA-256, and the row gains blob_ref and
 * blob_sha256 (both that hash), blob_content_type, blob_size_bytes,
 * fetch_status, fetch_url_final and fetch_url_final_ip (field names are
 * options). Failures are row errors "REASON: TYPE: message" with 0.7.1's
 * reasons: validation_failed, api_error, body_too_large,
 * unsupported_content_type.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/web_scrape_internal.h"

enum { F_REF, F_TYPE, F_SIZE, F_SHA, F_STATUS, F_FINAL, F_IP, NFIELDS };

static const char *const field_keys[NFIELDS] = {
	"blob_ref_field", "content_type_field", "size_bytes_field", "sha256_field",
	"fetch_status_field", "fetch_url_final_field", "fetch_url_final_ip_field",
};
static const char *const field_defaults[NFIELDS] = {
	"blob_ref", "blob_content_type", "blob_size_bytes", "blob_sha256",
	"fetch_status", "fetch_url_final", "fetch_url_final_ip",
};
static const char *const default_types[] = {
	"text/csv", "application/csv", "application/vnd.ms-excel", "text/plain",
	"application/json", "application/jsonl", "application/x-jsonlines",
	"application/x-ndjson", "text/jsonl", "application/xml", "text/xml", NULL,
};

typedef struct bf {
	const char *url_field, *fields[NFIELDS], *dir;
	char **types;
	size_t ntypes;
	ws_http h;
} bf;

static const plg_option bf_own[] = {
	{ "url_field", "string", true, NULL, "the field holding the http(s) URL fetched" },
	{ "blob_ref_field", "string", false, "\"blob_ref\"", "the blob's payload-store hash" },
	{ "content_type_field", "string", false, "\"blob_content_type\"", "the answer's media type" },
	{ "size_bytes_field", "string", false, "\"blob_size_bytes\"", "the body's size" },
	{ "sha256_field", "string", false, "\"blob_sha256\"", "the body's SHA-256" },
	{ "fetch_status_field", "string", false, "\"fetch_status\"", "the HTTP status" },
	{ "fetch_url_final_field", "string", false, "\"fetch_url_final\"", "the URL after redirects" },
	{ "fetch_url_final_ip_field", "string", false, "\"fetch_url_final_ip\"", "the address it came from" },
	{ "allowed_content_types", "array", false, NULL,
	  "media types kept (csv, plain text, JSON, JSON lines, XML)" },
	{ "http", "object", true, NULL,
	  "abuse_contact and fetch_reason (sent as headers, both required), timeout (seconds, 30), "
	  "max_body_bytes (10 MiB), allowed_hosts (public_only, allow_private or CIDR ranges)" },
	{ "pool_size", "integer", false, "8", "fetches in flight at most (1..4096)" },
	{ NULL }
};
static const plg_option *const bf_opts[] = { bf_own, plg__input_opts, plg__schema_opts, NULL };

static const ws_http_spec http_spec = {
	.reason_key = "fetch_reason", .reason_header = "X-Fetch-Reason",
	.upstream = "blob_fetch", .max_body = true,
};

static void bf_close(void *state)
{
	bf *b = state;

	if (!b)
		return;
	ws__http_close(&b->h);
	for (size_t i = 0; i < b->ntypes; i++)
		free(b->types[i]);
	free(b->types);
	free(b);
}

/* allowed_content_types: each entry's media type, lowercased, unique. */
static int parse_types(bf *b, const core_node *n, core_err *err)
{
	const char **v = (const char **)default_types;
	size_t len = sizeof(default_types) / sizeof(default_types[0]) - 1;
	int rc = 0;

	if (n && (rc = core_node_str_list(n, &v, &len, err)))
		return rc;
	if (n && !len)
		rc = core_err_at(err, CORE_ECONFIG, n, "allowed_content_types must not be empty");
	else if (!(b->types = calloc(len ? len : 1, sizeof(*b->types))))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < len; i++) {
		const char *s = v[i], *e = strchr(s, ';');
		size_t k = e ? (size_t)(e - s) : strlen(s);
		char *t;

		while (k && (*s == ' ' || *s == '\t'))
			s++, k--;
		while (k && (s[k - 1] == ' ' || s[k - 1] == '\t'))
			k--;
		if (!k) {
			rc = core_err_at(err, CORE_ECONFIG, n->items[i],
					 "allowed_content_types entries must not be empty");
			break;
		}
		if (!(t = strndup(s, k))) {
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			break;
		}
		for (char *p = t; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		for (size_t j = 0; j < b->ntypes; j++)
			if (!strcmp(b->types[j], t))
				rc = core_err_at(err, CORE_ECONFIG, n->items[i],
					"allowed_content_types entries must be unique after "
					"normalization ('%s' twice)", t);
		b->types[b->ntypes++] = t;
	}
	if (n)
		free(v);
	return rc;
}

static int parse_fields(bf *b, const core_node *o, core_err *err)
{
	int rc;

	if ((rc = plg__opt_field(o, "url_field", true, &b->url_field, err)))
		return rc;
	for (int i = 0; i < NFIELDS; i++) {
		b->fields[i] = field_defaults[i];
		if ((rc = plg__opt_field(o, field_keys[i], false, &b->fields[i], err)))
			return rc;
		if (!plg__py_identifier(b->fields[i]))
			return core_err_at(err, CORE_ECONFIG, core_map_get(o, field_keys[i]),
				"%s must be a valid Python identifier, got '%s'", field_keys[i],
				b->fields[i]);
		for (int j = 0; j < i; j++)
			if (!strcmp(b->fields[i], b->fields[j]))
				return core_err_at(err, CORE_ECONFIG, core_map_get(o, field_keys[i]),
					"Output fields must be unique; duplicates: ['%s']", b->fields[i]);
		if (!strcmp(b->fields[i], b->url_field))
			return core_err_at(err, CORE_ECONFIG, core_map_get(o, "url_field"),
				"url_field '%s' collides with a blob_fetch output field", b->url_field);
	}
	return 0;
}

static int bf_open(const plg_env *env, const core_node *o, void **state, core_err *err)
{
	bf *b = calloc(1, sizeof(*b));
	long long pool = 8;
	int rc;

	if (!b)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(rc = plg__check_options(o, bf_opts, err)) &&
	    !(rc = parse_fields(b, o, err)) &&
	    !(rc = parse_types(b, core_map_get(o, "allowed_content_types"), err)) &&
	    !(rc = core_opt_int(o, "pool_size", 1, 4096, &pool, err)) &&
	    !(rc = plg__schema_check(o, true, err)))
		rc = ws__http_open(&b->h, &http_spec, env, o, pool, err);
	if (rc) {
		bf_close(b);
		return rc;
	}
	b->dir = env && env->payload_dir ? env->payload_dir : ".elspeth/payloads";
	*state = b;
	return 0;
}

/* ------------------------------------------------------ the payload store */

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

/* The body as the file DIR/ab/HASH: written whole under another name,
 * fsync'd and renamed, so the store never holds half a blob; one that is
 * there already is the same bytes (its name is their hash). */
static int store(const bf *b, const core_buf *body, char hex[CORE_SHA256_HEX_LEN + 1],
		 core_err *err)
{
	char path[4096], tmp[4200];
	uint8_t d[CORE_SHA256_LEN];
	const char *p = body->data ? body->data : "";
	size_t left = body->len;
	bool bad;
	int fd;

	core_sha256(p, left, d);
	core_hex(d, sizeof(d), hex);
	snprintf(path, sizeof(path), "%s/%.2s", b->dir, hex);
	if (mkdirs(path))
		return core_err_set(err, CORE_EIO, "payload store %s: %s", path, strerror(errno));
	snprintf(path, sizeof(path), "%s/%.2s/%s", b->dir, hex, hex);
	if (access(path, F_OK) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	if ((fd = mkstemp(tmp)) < 0)
		return core_err_set(err, CORE_EIO, "payload store %s: %s", tmp, strerror(errno));
	while (left) {
		ssize_t w = write(fd, p, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			core_err_set(err, CORE_EIO, "payload store %s: %s", tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			return CORE_EIO;
		}
		p += w;
		left -= (size_t)w;
	}
	bad = fchmod(fd, 0644) || fsync(fd);
	bad |= close(fd) != 0;
	if (bad || rename(tmp, path)) {
		core_err_set(err, CORE_EIO, "payload store %s: %s", path, strerror(errno));
		unlink(tmp);
		return CORE_EIO;
	}
	return 0;
}

/* ------------------------------------------------------------ the rows */

/* The answer's media type: its Content-Type before any ';', trimmed and
 * lowercased ("" when there is none). */
static void media_type(const char *ct, char *out, size_t n)
{
	size_t k = 0;

	if (!ct)
		ct = "";
	while (*ct == ' ' || *ct == '\t')
		ct++;
	while (ct[k] && ct[k] != ';')
		k++;
	while (k && (ct[k - 1] == ' ' || ct[k - 1] == '\t'))
		k--;
	if (k >= n)
		k = n - 1;
	for (size_t i = 0; i < k; i++)
		out[i] = ct[i] >= 'A' && ct[i] <= 'Z' ? (char)(ct[i] - 'A' + 'a') : ct[i];
	out[k] = 0;
}

static int check_row(const bf *b, const json_t *row, const char **url, core_err *err)
{
	for (int i = 0; i < NFIELDS; i++)
		if (json_object_get(row, b->fields[i]))
			return core_err_set(err, CORE_EDATA, "blob_fetch would overwrite the row's "
					    "field '%s' (rename it first, e.g. with field_mapper)",
					    b->fields[i]);
	return ws__row_url(row, b->url_field, url, err);
}

static int bf_process(void *state, const json_t *row, json_t **out, plg_ctx *ctx,
		      core_err *err)
{
	const bf *b = state;
	char type[256], hex[CORE_SHA256_HEX_LEN + 1];
	const char *url = NULL;
	json_t *o = NULL;
	ws_fetch f;
	size_t i;
	int rc;

	if ((rc = check_row(b, row, &url, err)))
		return rc;
	if ((rc = ws__fetch(&b->h.fetch, url, ctx, &f, err))) {
		if (rc == CORE_EDATA)
			rc = ws__row_error(err, f.reason ? f.reason : "api_error",
				       f.error_type ? f.error_type : "WebScrapeError");
		goto out;
	}
	media_type(f.content_type, type, sizeof(type));
	for (i = 0; i < b->ntypes && strcmp(b->types[i], type); i++)
		;
	if (i == b->ntypes) {
		core_err_set(err, CORE_EDATA, "content-type '%s' returned by %s; allowed values "
			     "are %zu types (allowed_content_types)", f.content_type ? f.content_type : "",
			     url, b->ntypes);
		rc = ws__row_error(err, "unsupported_content_type", "ValueError");
		goto out;
	}
	plg_blocking(ctx, true);
	rc = store(b, &f.body, hex, err);
	plg_blocking(ctx, false);
	if (rc)
		goto out;
	o = json_copy((json_t *)row);
	if (!o || json_object_set_new(o, b->fields[F_REF], json_string(hex)) ||
	    json_object_set_new(o, b->fields[F_TYPE], json_string(type)) ||
	    json_object_set_new(o, b->fields[F_SIZE], json_integer((json_int_t)f.body.len)) ||
	    json_object_set_new(o, b->fields[F_SHA], json_string(hex)) ||
	    json_object_set_new(o, b->fields[F_STATUS], json_integer(f.status)) ||
	    json_object_set_new(o, b->fields[F_FINAL], json_string(f.final_url)) ||
	    json_object_set_new(o, b->fields[F_IP], json_string(f.ip))) {
		json_decref(o);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out;
	}
	*out = o;
	if (ctx)
		ctx->context = json_pack("{s:s,s:{s:s}}", "action", "enriched", "metadata",
					 "fetch_payload_hash", hex);
out:
	ws__fetch_release(&f);
	return rc;
}

static bool bf_capacity(void *state, plg_capacity *out)
{
	bf *b = state;

	http_get_capacity(b->h.fetch.http, out);
	return true;
}

static int bf_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	bf b = { 0 };
	int rc = parse_fields(&b, options, err);

	out->shape = PLG_SHAPE_SAME; /* its rows keep their schema and gain these */
	for (int i = 0; !rc && i < NFIELDS; i++)
		if (!(rc = plg_outputs_add(out, err, "%s", b.fields[i])))
			rc = plg_outputs_type(out, b.fields[i],
					      i == F_SIZE || i == F_STATUS ? "int" : "str", err);
	return rc;
}

const plg_transform_ops plg__blob_fetch = {
	.name = "blob_fetch",
	.description = "Fetch each row's URL into the payload store, the row gaining its blob "
		       "reference (ELSPETH 0.7.1)",
	.options = bf_opts,
	.open = bf_open,
	.process = bf_process,
	.close = bf_close,
	.capacity = bf_capacity,
	.outputs = bf_outputs,
};

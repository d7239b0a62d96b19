/*
 * s3.c — HEAD, GET and PUT of one S3 object, signed with AWS Signature
 * Version 4 (docs/adr/0051-aws-s3.md). The signature is computed here
 * (HMAC-SHA256 chain over the canonical request, as AWS's "Signature
 * Calculations for the Authorization Header" describes) rather than by
 * libcurl, so that its unit test can hold it to AWS's published example.
 */
#define _GNU_SOURCE /* asprintf */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>

#include "plugins/aws/s3.h"

const plg_option plg__s3_opts[] = {
	{ "region_name", "string", false, NULL,
	  "the signing region (else AWS_REGION, AWS_DEFAULT_REGION, us-east-1)" },
	{ "endpoint_url", "string", false, NULL,
	  "an S3-compatible endpoint, http(s)://host[:port], objects addressed path-style" },
	{ NULL }
};

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "aws_s3: out of memory");
}

static char *env_dup(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? strdup(v) : NULL;
}

const char *plg__s3_bad_bucket(const char *b)
{
	size_t n = strlen(b);

	if (n < 3 || n > 63 || !isalnum((unsigned char)b[0]) ||
	    !isalnum((unsigned char)b[n - 1]))
		goto bad;
	for (const char *p = b; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '.' ||
		      *p == '-'))
			goto bad;
	return NULL;
bad:
	return "bucket must be an S3 bucket name (3 to 63 lower-case letters, digits, "
	       "'.' and '-', starting and ending with a letter or digit; access points "
	       "are not supported)";
}

const char *plg__s3_bad_region(const char *r)
{
	size_t n = strlen(r);

	if (!n || n > 64 || strspn(r, "abcdefghijklmnopqrstuvwxyz"
				       "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != n)
		return "region_name must be a bounded AWS region identifier";
	return NULL;
}

const char *plg__s3_bad_endpoint(const char *v)
{
	const char *host, *end;

	if (strncmp(v, "http://", 7) && strncmp(v, "https://", 8))
		return "endpoint_url must be an HTTP(S) URL with a hostname";
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return "endpoint_url must not contain whitespace or control characters";
	if (strpbrk(v, "?#"))
		return "endpoint_url must not contain a query or fragment";
	host = strstr(v, "://") + 3;
	end = host + strcspn(host, "/");
	if (end == host || *host == ':')
		return "endpoint_url must be an HTTP(S) URL with a hostname";
	if (memchr(host, '@', (size_t)(end - host)))
		return "endpoint_url must not contain userinfo";
	if (end[strspn(end, "/")])
		return "endpoint_url must not have a path (objects are addressed "
		       "ENDPOINT/BUCKET/KEY)";
	return NULL;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int plg__s3_init(plg__s3 *c, const char *endpoint_url, const char *region_name,
		 const char *bucket, core_err *err)
{
	const char *region = region_name, *why;
	size_t n;

	memset(c, 0, sizeof(*c));
	pthread_once(&curl_once, curl_init);
	if (!region || !*region)
		region = getenv("AWS_REGION");
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	if (!region || !*region)
		region = "us-east-1";
	if ((why = plg__s3_bad_region(region)) ||
	    (why = plg__s3_bad_bucket(bucket)) ||
	    (endpoint_url && (why = plg__s3_bad_endpoint(endpoint_url))))
		return core_err_set(err, CORE_ECONFIG, "aws_s3: %s (region '%s')", why,
				    region);
	c->timeout_s = 30;
	if (!(c->region = strdup(region)) || !(c->bucket = strdup(bucket)))
		goto fail;
	if (endpoint_url) {
		if (!(c->endpoint = strdup(endpoint_url)))
			goto fail;
		n = strlen(c->endpoint);
		while (n > 0 && c->endpoint[n - 1] == '/')
			c->endpoint[--n] = '\0';
	}
	c->access_key = env_dup("AWS_ACCESS_KEY_ID");
	c->secret_key = env_dup("AWS_SECRET_ACCESS_KEY");
	c->token = env_dup("AWS_SESSION_TOKEN");
	if (!c->access_key != !c->secret_key) {
		plg__s3_free(c);
		return core_err_set(err, CORE_ECONFIG,
				    "aws_s3: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
				    "must be set together");
	}
	return 0;
fail:
	plg__s3_free(c);
	return nomem(err);
}

void plg__s3_free(plg__s3 *c)
{
	if (!c)
		return;
	free(c->endpoint);
	free(c->region);
	free(c->bucket);
	free(c->access_key);
	if (c->secret_key) /* not left in freed memory */
		OPENSSL_cleanse(c->secret_key, strlen(c->secret_key));
	free(c->secret_key);
	free(c->token);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------ encoding */

/* SigV4's URI encoding: unreserved characters kept, '/' kept when
 * keep_slash, every other byte %XX (upper-case hex). */
static char *uri_encode(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
		    (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* The host header's value and the encoded path of key. */
static int locate(const plg__s3 *c, const char *key, char **host, char **path,
		  char **base)
{
	char *ekey = uri_encode(key, true), *eb = NULL;
	const char *h;
	int rc = CORE_ENOMEM;

	*host = *path = *base = NULL;
	if (!ekey)
		return rc;
	if (c->endpoint) {
		size_t hl;
		bool https = !strncmp(c->endpoint, "https://", 8);

		h = strstr(c->endpoint, "://");
		h = h ? h + 3 : c->endpoint;
		hl = strcspn(h, "/");
		/* the Host curl sends has no default port: neither may the
		 * signed one */
		if (hl > 4 && !https && !strncmp(h + hl - 3, ":80", 3))
			hl -= 3;
		else if (hl > 5 && https && !strncmp(h + hl - 4, ":443", 4))
			hl -= 4;
		eb = uri_encode(c->bucket, false);
		if (eb && (*host = strndup(h, hl)) && (*base = strdup(c->endpoint)) &&
		    asprintf(path, "/%s/%s", eb, ekey) >= 0)
			rc = 0;
	} else if (strchr(c->bucket, '.')) {
		/* a dotted name breaks the wildcard certificate: path-style */
		if (asprintf(host, "s3.%s.amazonaws.com", c->region) >= 0 &&
		    asprintf(base, "https://%s", *host) >= 0 &&
		    asprintf(path, "/%s/%s", c->bucket, ekey) >= 0)
			rc = 0;
	} else {
		if (asprintf(host, "%s.s3.%s.amazonaws.com", c->bucket, c->region) >= 0 &&
		    asprintf(base, "https://%s", *host) >= 0 &&
		    asprintf(path, "/%s", ekey) >= 0)
			rc = 0;
	}
	free(ekey);
	free(eb);
	if (rc) {
		free(*host);
		free(*path);
		free(*base);
		*host = *path = *base = NULL;
	}
	return rc;
}

char *plg__s3_url(const plg__s3 *c, const char *key)
{
	char *host, *path, *base, *url = NULL;

	if (locate(c, key, &host, &path, &base))
		return NULL;
	if (asprintf(&url, "%s%s", base, path) < 0)
		url = NULL;
	free(host);
	free(path);
	free(base);
	return url;
}

/* ------------------------------------------------------------- signing */

static void hmac(const void *key, size_t klen, const char *msg, uint8_t out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg),
	     out, &n);
}

int plg__s3_sign(const plg__s3 *c, const char *method, const char *path,
		 const char *query, const char *headers, const char *signed_names,
		 const char *payload_sha, const char *amz_date, char *auth,
		 size_t cap)
{
	char date[9], scope[128], creq_hash[CORE_SHA256_HEX_LEN + 1];
	char sig[CORE_SHA256_HEX_LEN + 1], *creq = NULL, *sts = NULL, *kstart;
	uint8_t h[32], k[32];
	int rc = CORE_ENOMEM;

	memcpy(date, amz_date, 8);
	date[8] = '\0';
	snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", date, c->region);
	if (asprintf(&creq, "%s\n%s\n%s\n%s\n%s\n%s", method, path, query, headers,
		     signed_names, payload_sha) < 0)
		return rc;
	core_sha256(creq, strlen(creq), h);
	core_hex(h, 32, creq_hash);
	if (asprintf(&sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope,
		     creq_hash) < 0 ||
	    asprintf(&kstart, "AWS4%s", c->secret_key) < 0)
		goto out;
	hmac(kstart, strlen(kstart), date, k);
	OPENSSL_cleanse(kstart, strlen(kstart));
	free(kstart);
	hmac(k, 32, c->region, k);
	hmac(k, 32, "s3", k);
	hmac(k, 32, "aws4_request", k);
	hmac(k, 32, sts, h);
	OPENSSL_cleanse(k, sizeof(k));
	core_hex(h, 32, sig);
	if ((size_t)snprintf(auth, cap,
			     "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
			     "Signature=%s",
			     c->access_key, scope, signed_names, sig) < cap)
		rc = 0;
	else
		rc = CORE_EINTERNAL;
out:
	free(creq);
	free(sts);
	return rc;
}

/* ------------------------------------------------------------ requests */

typedef struct req {
	plg__s3_result *res;
	FILE *out;          /* GET: the 2xx body */
	uint64_t max, got;
	bool too_large;
	EVP_MD_CTX *md;
	core_buf errbody;   /* an error status's body (first KiB) */
} req;

static void header_value(const char *line, size_t n, const char *name, char *out,
			 size_t cap)
{
	size_t nl = strlen(name), i;

	if (n <= nl + 1 || strncasecmp(line, name, nl) || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n && (*line == ' ' || *line == '\t'))
		line++, n--;
	while (n && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' '))
		n--;
	i = n < cap - 1 ? n : cap - 1;
	memcpy(out, line, i);
	out[i] = '\0';
}

static size_t on_header(char *b, size_t size, size_t nitems, void *ud)
{
	req *r = ud;
	size_t n = size * nitems;
	char len[32] = "";

	/* a new status line (a 100 Continue before the answer) starts over */
	if (n > 5 && !strncmp(b, "HTTP/", 5)) {
		r->res->etag[0] = r->res->content_encoding[0] = '\0';
		r->res->has_length = false;
	}
	header_value(b, n, "etag", r->res->etag, sizeof(r->res->etag));
	header_value(b, n, "content-encoding", r->res->content_encoding,
		     sizeof(r->res->content_encoding));
	header_value(b, n, "content-length", len, sizeof(len));
	if (len[0]) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(len, &end, 10);
		if (!errno && !*end) {
			r->res->length = v;
			r->res->has_length = true;
		}
	}
	return n;
}

static size_t on_body(char *b, size_t size, size_t nitems, void *ud)
{
	req *r = ud;
	size_t n = size * nitems;

	if (!r->out || r->res->status / 100 != 2) {
		if (r->errbody.len < 1024)
			core_buf_append(&r->errbody, b, n < 1024 ? n : 1024);
		return n;
	}
	if (r->got + n > r->max) {
		r->too_large = true;
		return 0; /* ends the transfer */
	}
	if (fwrite(b, 1, n, r->out) != n)
		return 0;
	EVP_DigestUpdate(r->md, b, n);
	r->got += n;
	return n;
}

/* The status is known once the headers are in: on_body learns it
 * through this (CURLINFO_RESPONSE_CODE is valid during the body). */
typedef struct body_ud {
	req *r;
	CURL *h;
} body_ud;

static size_t body_cb(char *b, size_t size, size_t nitems, void *ud)
{
	body_ud *u = ud;

	curl_easy_getinfo(u->h, CURLINFO_RESPONSE_CODE, &u->r->res->status);
	return on_body(b, size, nitems, u->r);
}

static void error_code(req *r)
{
	const char *s, *e;
	size_t n;

	if (!r->errbody.len || core_buf_append(&r->errbody, "", 1))
		return;
	s = strstr(r->errbody.data, "<Code>");
	if (!s)
		return;
	s += 6;
	e = strstr(s, "</Code>");
	if (!e)
		return;
	n = (size_t)(e - s) < sizeof(r->res->code) - 1 ? (size_t)(e - s)
							: sizeof(r->res->code) - 1;
	memcpy(r->res->code, s, n);
	r->res->code[n] = '\0';
}

static void amz_now(const plg__s3 *c, char out[17])
{
	time_t t;
	struct tm tm;

	if (c->fixed_time) {
		snprintf(out, 17, "%s", c->fixed_time);
		return;
	}
	t = time(NULL);
	gmtime_r(&t, &tm);
	strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

typedef struct call {
	const char *method;
	const char *key;
	const char *payload_sha;  /* of the body sent */
	const char *extra_name;   /* one more signed header, or NULL */
	const char *extra_value;
	const char *content_type; /* sent, not signed */
	FILE *in;                 /* PUT body */
	uint64_t in_len;
} call;

/* One request: signed headers in order (host, [if-*], x-amz-*). */
static int perform(plg__s3 *c, const call *k, req *r, core_err *err)
{
	char amz[17], auth[768], *host = NULL, *path = NULL, *base = NULL;
	char *url = NULL, *hdrs = NULL, *names = NULL, *line = NULL;
	struct curl_slist *list = NULL;
	body_ud bu = { r, NULL };
	CURL *h = NULL;
	CURLcode cc;
	int rc;

	memset(r->res, 0, sizeof(*r->res));
	if ((rc = locate(c, k->key, &host, &path, &base)))
		return nomem(err);
	amz_now(c, amz);
	rc = CORE_ENOMEM;
	if (asprintf(&url, "%s%s", base, path) < 0)
		goto out;
	/* canonical headers: lower-case names in byte order */
	if (asprintf(&hdrs, "host:%s\n%s%s%s%sx-amz-content-sha256:%s\nx-amz-date:%s\n%s%s%s",
		     host, k->extra_name ? k->extra_name : "", k->extra_name ? ":" : "",
		     k->extra_name ? k->extra_value : "", k->extra_name ? "\n" : "",
		     k->payload_sha, amz, c->token ? "x-amz-security-token:" : "",
		     c->token ? c->token : "", c->token ? "\n" : "") < 0 ||
	    asprintf(&names, "host;%s%sx-amz-content-sha256;x-amz-date%s",
		     k->extra_name ? k->extra_name : "", k->extra_name ? ";" : "",
		     c->token ? ";x-amz-security-token" : "") < 0)
		goto out;
	if (!(h = curl_easy_init()))
		goto out;
	bu.h = h;
	if (c->access_key) {
		if ((rc = plg__s3_sign(c, k->method, path, "", hdrs, names,
				       k->payload_sha, amz, auth, sizeof(auth)))) {
			core_err_set(err, rc, "aws_s3: cannot sign the request (the "
				     "credentials are too long?)");
			goto out;
		}
		rc = CORE_ENOMEM;
		if (asprintf(&line, "Authorization: %s", auth) < 0 ||
		    !(list = curl_slist_append(list, line)))
			goto out;
		free(line);
		line = NULL;
	}
#define ADD(...)                                                              \
	do {                                                                  \
		struct curl_slist *l_;                                        \
		if (asprintf(&line, __VA_ARGS__) < 0 ||                       \
		    !(l_ = curl_slist_append(list, line)))                    \
			goto out;                                             \
		list = l_;                                                    \
		free(line);                                                   \
		line = NULL;                                                  \
	} while (0)
	ADD("Host: %s", host); /* exactly the signed one */
	ADD("x-amz-date: %s", amz);
	ADD("x-amz-content-sha256: %s", k->payload_sha);
	if (k->extra_name)
		ADD("%s: %s", k->extra_name, k->extra_value);
	if (c->token)
		ADD("x-amz-security-token: %s", c->token);
	if (k->content_type)
		ADD("Content-Type: %s", k->content_type);
	ADD("Expect:"); /* no 100-continue round trip */
#undef ADD
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	/* a stalled transfer ends; a long one at any speed does not */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->timeout_s);
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L); /* keys may hold ./ and ../ */
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &bu);
	if (!strcmp(k->method, "HEAD")) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (!strcmp(k->method, "PUT")) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READDATA, k->in);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)k->in_len);
	}
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->res->status);
	if (r->too_large) {
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: s3://%s/%s is larger than max_object_bytes (%llu)",
				  c->bucket, k->key, (unsigned long long)r->max);
	} else if (cc != CURLE_OK) {
		rc = core_err_set(err, CORE_EIO, "aws_s3: %s %s: %s", k->method, url,
				  curl_easy_strerror(cc));
	} else {
		error_code(r);
		rc = 0;
	}
out:
	if (rc == CORE_ENOMEM)
		nomem(err);
	curl_slist_free_all(list);
	if (h)
		curl_easy_cleanup(h);
	OPENSSL_cleanse(auth, sizeof(auth));
	free(line);
	free(host);
	free(path);
	free(base);
	free(url);
	free(hdrs);
	free(names);
	return rc;
}

int plg__s3_head(plg__s3 *c, const char *key, plg__s3_result *res, core_err *err)
{
	call k = { .method = "HEAD", .key = key, .payload_sha = EMPTY_SHA };
	req r = { .res = res };
	int rc = perform(c, &k, &r, err);

	core_buf_release(&r.errbody);
	return rc;
}

int plg__s3_get(plg__s3 *c, const char *key, const char *if_match, FILE *out,
		uint64_t max, plg__s3_result *res,
		char sha[CORE_SHA256_HEX_LEN + 1], core_err *err)
{
	call k = { .method = "GET", .key = key, .payload_sha = EMPTY_SHA };
	req r = { .res = res, .out = out, .max = max };
	uint8_t d[32];
	unsigned int n = 32;
	int rc;

	if (if_match && *if_match) {
		k.extra_name = "if-match";
		k.extra_value = if_match;
	}
	if (!(r.md = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(r.md, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(r.md);
		return nomem(err);
	}
	rc = perform(c, &k, &r, err);
	if (!rc && res->status / 100 == 2) {
		if (fflush(out))
			rc = core_err_set(err, CORE_EIO, "aws_s3: writing the object: %s",
					  strerror(errno));
		res->length = r.got;
		EVP_DigestFinal_ex(r.md, d, &n);
		core_hex(d, 32, sha);
	}
	EVP_MD_CTX_free(r.md);
	core_buf_release(&r.errbody);
	return rc;
}

int plg__s3_put(plg__s3 *c, const char *key, const char *path,
		const char *content_type, bool if_none_match,
		plg__s3_result *res, core_err *err)
{
	char sha[CORE_SHA256_HEX_LEN + 1];
	call k = { .method = "PUT", .key = key, .payload_sha = sha,
		   .content_type = content_type };
	req r = { .res = res };
	uint64_t size;
	int rc;

	if ((rc = core_sha256_file(path, UINT64_MAX, &size, sha, err)))
		return rc;
	if (!(k.in = fopen(path, "rb")))
		return core_err_set(err, CORE_EIO, "aws_s3: cannot open '%s': %s", path,
				    strerror(errno));
	k.in_len = size;
	if (if_none_match) {
		k.extra_name = "if-none-match";
		k.extra_value = "*";
	}
	rc = perform(c, &k, &r, err);
	fclose(k.in);
	core_buf_release(&r.errbody);
	return rc;
}

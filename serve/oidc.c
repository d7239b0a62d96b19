/* oidc.c — bearer tokens from an OpenID Connect issuer (oidc.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "serve/oidc.h"

#define JWKS_TTL_S 3600       /* ELSPETH's jwks_cache_ttl_seconds */
#define REFETCH_MIN_S 60      /* an unknown kid refreshes at most this often */
#define FETCH_MAX (1u << 20)  /* a discovery document or JWKS, at most */
#define TOKEN_MAX 16384

struct srv_oidc {
	char *issuer, *audience;
	pthread_mutex_t lock;
	json_t *jwks;             /* under lock; NULL: none yet */
	time_t fetched_at, tried_at;
};

/* ------------------------------------------------------------- fetch */

typedef struct body {
	char *data;
	size_t len;
	bool too_big;
} body;

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
	body *b = ud;
	size_t add = size * n;
	char *grown;

	if (b->len + add > FETCH_MAX) {
		b->too_big = true;
		return 0;
	}
	if (!(grown = realloc(b->data, b->len + add + 1)))
		return 0;
	b->data = grown;
	memcpy(b->data + b->len, p, add);
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

/* GET url as JSON (a 2xx answer), or NULL with why set. */
static json_t *get_json(const char *url, char *why, size_t cap)
{
	CURL *e = curl_easy_init();
	body b = { 0 };
	long status = 0;
	CURLcode rc;
	json_t *j = NULL;

	if (!e) {
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	if (rc != CURLE_OK)
		snprintf(why, cap, "%s: %s", url, b.too_big ? "over 1 MiB" : curl_easy_strerror(rc));
	else if (status < 200 || status > 299)
		snprintf(why, cap, "%s: HTTP %ld", url, status);
	else if (!(j = json_loadb(b.data ? b.data : "", b.len, 0, NULL)))
		snprintf(why, cap, "%s: not JSON", url);
	free(b.data);
	return j;
}

/* The issuer's JWKS through its discovery document. */
static json_t *fetch_jwks(const srv_oidc *o, char *why, size_t cap)
{
	char url[2048];
	json_t *d, *k;
	const char *uri;

	snprintf(url, sizeof(url), "%s/.well-known/openid-configuration", o->issuer);
	if (!(d = get_json(url, why, cap)))
		return NULL;
	if (!(uri = json_string_value(json_object_get(d, "jwks_uri")))) {
		snprintf(why, cap, "%s has no jwks_uri", url);
		json_decref(d);
		return NULL;
	}
	k = get_json(uri, why, cap);
	json_decref(d);
	if (k && !json_is_array(json_object_get(k, "keys"))) {
		snprintf(why, cap, "the JWKS has no keys");
		json_decref(k);
		k = NULL;
	}
	return k;
}

/* The JWKS to use (a new reference), refreshed when older than the TTL,
 * or when `unknown` (a kid it lacks) and not refreshed in the last
 * minute; a failed refresh keeps the old keys. */
static json_t *jwks(srv_oidc *o, bool unknown, char *why, size_t cap)
{
	time_t now = time(NULL);
	json_t *k, *fresh;
	bool due;

	pthread_mutex_lock(&o->lock);
	due = !o->jwks || now - o->fetched_at >= JWKS_TTL_S || unknown;
	/* tried lately (and failed, or knew no such kid): not again yet;
	 * with no keys at all, once a second */
	if (due && (!o->tried_at || now - o->tried_at >= (o->jwks ? REFETCH_MIN_S : 1))) {
		o->tried_at = now;
		pthread_mutex_unlock(&o->lock);
		fresh = fetch_jwks(o, why, cap); /* no lock across the network */
		pthread_mutex_lock(&o->lock);
		if (fresh) {
			json_decref(o->jwks);
			o->jwks = fresh;
			o->fetched_at = now;
		}
	}
	k = json_incref(o->jwks);
	pthread_mutex_unlock(&o->lock);
	return k;
}

/* ------------------------------------------------------------ decode */

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '-') return 62;
	if (c == '_') return 63;
	return -1;
}

/* base64url without padding (RFC 7515); *len receives the bytes. NULL:
 * not base64url. */
static unsigned char *b64url(const char *s, size_t n, size_t *len)
{
	unsigned char *out = malloc(n * 3 / 4 + 3);
	unsigned acc = 0, bits = 0;
	size_t k = 0;

	if (!out || n % 4 == 1) {
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		int v = b64val((unsigned char)s[i]);

		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	*len = k;
	return out;
}

static json_t *b64_json(const char *s, size_t n)
{
	size_t len;
	unsigned char *b = b64url(s, n, &len);
	json_t *j = b ? json_loadb((const char *)b, len, 0, NULL) : NULL;

	free(b);
	return json_is_object(j) ? j : (json_decref(j), NULL);
}

/* An RSA public key from a JWK's n and e. */
static EVP_PKEY *rsa_key(const json_t *jwk)
{
	const char *n = json_string_value(json_object_get(jwk, "n"));
	const char *e = json_string_value(json_object_get(jwk, "e"));
	unsigned char *nb = NULL, *eb = NULL;
	size_t nl = 0, el = 0;
	BIGNUM *bn = NULL, *be = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *key = NULL;

	if (!n || !e || !(nb = b64url(n, strlen(n), &nl)) || !(eb = b64url(e, strlen(e), &el)))
		goto out;
	if (!(bn = BN_bin2bn(nb, (int)nl, NULL)) || !(be = BN_bin2bn(eb, (int)el, NULL)) ||
	    !(bld = OSSL_PARAM_BLD_new()) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
	    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		key = NULL;
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(nb);
	free(eb);
	return key;
}

static bool verify(EVP_PKEY *key, const char *signed_part, size_t n, const unsigned char *sig,
		   size_t sl)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	bool ok = md && EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
		  EVP_DigestVerify(md, sig, sl, (const unsigned char *)signed_part, n) == 1;

	EVP_MD_CTX_free(md);
	return ok;
}

/* The JWK of the set with this kid and kty RSA, or NULL. */
static const json_t *find_key(const json_t *set, const char *kid)
{
	size_t i;
	const json_t *k;

	json_array_foreach(json_object_get(set, "keys"), i, k) {
		const char *id = json_string_value(json_object_get(k, "kid"));
		const char *kty = json_string_value(json_object_get(k, "kty"));
		const char *use = json_string_value(json_object_get(k, "use"));

		if (kty && !strcmp(kty, "RSA") && (!use || !strcmp(use, "sig")) &&
		    ((!kid && !id) || (kid && id && !strcmp(kid, id))))
			return k;
	}
	return NULL;
}

static bool fail(char *why, size_t cap, const char *msg)
{
	snprintf(why, cap, "%s", msg);
	return false;
}

/* The claims PyJWT checks for ELSPETH: iss, aud, exp, nbf, iat; and sub. */
static bool claims_ok(const srv_oidc *o, const json_t *p, char *why, size_t cap)
{
	const json_t *aud = json_object_get(p, "aud"), *v;
	const char *iss = json_string_value(json_object_get(p, "iss"));
	double now = (double)time(NULL);
	bool for_us = false;
	size_t i;

	if (!iss || strcmp(iss, o->issuer))
		return fail(why, cap, "the token's issuer is not ours");
	if (json_is_string(aud))
		for_us = !strcmp(json_string_value(aud), o->audience);
	json_array_foreach(aud, i, v)
		for_us |= json_is_string(v) && !strcmp(json_string_value(v), o->audience);
	if (!for_us)
		return fail(why, cap, "the token is not for our audience");
	if (!json_is_number(v = json_object_get(p, "exp")) || json_number_value(v) <= now)
		return fail(why, cap, "the token has expired (or has no exp)");
	if ((v = json_object_get(p, "nbf")) && (!json_is_number(v) || json_number_value(v) > now))
		return fail(why, cap, "the token is not valid yet (nbf)");
	if ((v = json_object_get(p, "iat")) && (!json_is_number(v) || json_number_value(v) > now))
		return fail(why, cap, "the token was issued in the future (iat)");
	if (!json_is_string(json_object_get(p, "sub")))
		return fail(why, cap, "the token has no sub");
	return true;
}

bool srv_oidc_check(srv_oidc *o, const char *token, json_t **claims, char *why, size_t cap)
{
	const char *d1, *d2;
	json_t *head = NULL, *payload = NULL, *set = NULL;
	const json_t *jwk;
	unsigned char *sig = NULL;
	size_t sl = 0;
	EVP_PKEY *key = NULL;
	const char *alg, *kid;
	bool ok = false;

	if (claims)
		*claims = NULL;
	if (!token || strlen(token) > TOKEN_MAX || !(d1 = strchr(token, '.')) ||
	    !(d2 = strchr(d1 + 1, '.')) || strchr(d2 + 1, '.'))
		return fail(why, cap, "not a JWT");
	if (!(head = b64_json(token, (size_t)(d1 - token))) ||
	    !(payload = b64_json(d1 + 1, (size_t)(d2 - d1 - 1))) ||
	    !(sig = b64url(d2 + 1, strlen(d2 + 1), &sl))) {
		fail(why, cap, "not a JWT");
		goto out;
	}
	alg = json_string_value(json_object_get(head, "alg"));
	kid = json_string_value(json_object_get(head, "kid"));
	if (!alg || strcmp(alg, "RS256")) {
		fail(why, cap, "the token is not signed RS256");
		goto out;
	}
	why[0] = '\0';
	if (!(set = jwks(o, false, why, cap)) || !find_key(set, kid)) {
		json_decref(set);
		set = jwks(o, true, why, cap); /* a rotated key */
	}
	if (!set) {
		if (!why[0])
			fail(why, cap, "no JWKS from the issuer");
		goto out;
	}
	if (!(jwk = find_key(set, kid))) {
		fail(why, cap, "no key of the issuer's JWKS matches the token's kid");
		goto out;
	}
	if (!(key = rsa_key(jwk)) || !verify(key, token, (size_t)(d2 - token), sig, sl)) {
		fail(why, cap, "the token's signature does not verify");
		goto out;
	}
	if ((ok = claims_ok(o, payload, why, cap)) && claims)
		*claims = json_incref(payload);
out:
	EVP_PKEY_free(key);
	json_decref(set);
	json_decref(head);
	json_decref(payload);
	free(sig);
	return ok;
}

/* -------------------------------------------------------------- life */

static bool loopback_http(const char *url)
{
	static const char *const ok[] = { "http://127.0.0.1:", "http://127.0.0.1/",
					  "http://localhost:", "http://localhost/",
					  "http://[::1]:", "http://[::1]/", NULL };

	for (size_t i = 0; ok[i]; i++)
		if (!strncmp(url, ok[i], strlen(ok[i])))
			return true;
	return false;
}

int srv_oidc_open(const char *issuer, const char *audience, srv_oidc **out, core_err *err)
{
	srv_oidc *o;
	size_t n;

	*out = NULL;
	if (!issuer || !audience || !*audience)
		return core_err_set(err, CORE_ECONFIG, "--auth oidc needs --oidc-issuer and "
				    "--oidc-audience");
	if (strncmp(issuer, "https://", 8) && !loopback_http(issuer))
		return core_err_set(err, CORE_ECONFIG, "--oidc-issuer %s: an https:// url (http:// "
				    "only on a loopback host)", issuer);
	if (!(o = calloc(1, sizeof(*o))) || !(o->issuer = strdup(issuer)) ||
	    !(o->audience = strdup(audience))) {
		srv_oidc_free(o);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	n = strlen(o->issuer);
	while (n > 8 && o->issuer[n - 1] == '/') /* as ELSPETH: rstrip("/") */
		o->issuer[--n] = '\0';
	pthread_mutex_init(&o->lock, NULL);
	curl_global_init(CURL_GLOBAL_DEFAULT); /* here, before the threads */
	*out = o;
	return 0;
}

void srv_oidc_free(srv_oidc *o)
{
	if (!o)
		return;
	if (o->issuer && o->audience)
		pthread_mutex_destroy(&o->lock);
	json_decref(o->jwks);
	free(o->issuer);
	free(o->audience);
	free(o);
}

/*
 * hash.c — SHA-256 (OpenSSL) and the canonical-JSON hash of a value.
 *
 * OpenSSL 3 looks the algorithm up in its provider store, under a lock, on
 * every EVP_sha256() digest; we fetch it once and reuse it from all threads
 * (a fetched EVP_MD is immutable and thread-safe).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/core.h"

static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;
static EVP_MD *sha256_md; /* kept for the life of the process */
/* Each thread's digest context, kept between calls (creating one per
 * digest cost as much as hashing a row); freed when the thread ends. */
static pthread_key_t sha256_ctx_key;
static int sha256_key_ok;

static void ctx_free(void *ctx)
{
	EVP_MD_CTX_free(ctx);
}

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
	sha256_key_ok = !pthread_key_create(&sha256_ctx_key, ctx_free);
}

void core_sha256(const void *data, size_t len, uint8_t out[CORE_SHA256_LEN])
{
	const EVP_MD *md;
	EVP_MD_CTX *ctx = NULL;

	pthread_once(&sha256_once, sha256_fetch);
	md = sha256_md ? sha256_md : EVP_sha256();
	if (sha256_key_ok && !(ctx = pthread_getspecific(sha256_ctx_key)) &&
	    (ctx = EVP_MD_CTX_new()) && pthread_setspecific(sha256_ctx_key, ctx)) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	/* Fails only when OpenSSL cannot allocate; a wrong hash would be
	 * recorded silently, so stop instead. */
	if (ctx ? !EVP_DigestInit_ex(ctx, md, NULL) || !EVP_DigestUpdate(ctx, data, len) ||
		  !EVP_DigestFinal_ex(ctx, out, NULL)
		: !EVP_Digest(data, len, out, NULL, md, NULL))
		abort();
}

void core_hex(const uint8_t *bytes, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 0xf];
	}
	out[2 * len] = '\0';
}

int core_hash_json(const json_t *v, char out[CORE_SHA256_HEX_LEN + 1],
		   core_err *err)
{
	uint8_t md[CORE_SHA256_LEN];
	core_buf b = { 0 };
	int rc;

	rc = core_canon_append(&b, v, err);
	if (rc)
		goto out_release;
	core_sha256(b.data, b.len, md);
	core_hex(md, sizeof(md), out);
out_release:
	core_buf_release(&b);
	return rc;
}

static const EVP_MD *md_sha256(void)
{
	pthread_once(&sha256_once, sha256_fetch);
	return sha256_md ? sha256_md : EVP_sha256();
}

/* Feeds up to max bytes of f into ctx; *total gets how many. */
static int hash_stream(FILE *f, const char *path, uint64_t max, EVP_MD_CTX *ctx,
		       uint64_t *total, core_err *err)
{
	uint8_t chunk[65536];

	*total = 0;
	while (*total < max) {
		size_t want = max - *total < sizeof(chunk) ? (size_t)(max - *total) : sizeof(chunk);
		size_t n = fread(chunk, 1, want, f);

		if (!n)
			break;
		EVP_DigestUpdate(ctx, chunk, n);
		*total += n;
	}
	if (ferror(f))
		return core_err_set(err, CORE_EIO, "cannot read %s: %s", path,
				    strerror(errno));
	return 0;
}

int core_sha256_file_range(const char *path, uint64_t from, uint64_t len,
			   uint64_t *got, char out[CORE_SHA256_HEX_LEN + 1],
			   core_err *err)
{
	uint8_t md[CORE_SHA256_LEN];
	EVP_MD_CTX *ctx;
	struct stat st;
	uint64_t total = 0;
	FILE *f;
	int rc = 0;

	f = fopen(path, "rb");
	if (!f)
		return core_err_set(err, CORE_EIO, "cannot read %s: %s", path,
				    strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return core_err_set(err, CORE_EIO, "%s is not a regular file", path);
	}
	if (from && fseeko(f, (off_t)from, SEEK_SET)) {
		rc = core_err_set(err, CORE_EIO, "cannot seek in %s: %s", path,
				  strerror(errno));
		fclose(f);
		return rc;
	}
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, md_sha256(), NULL))
		abort();
	rc = hash_stream(f, path, len, ctx, &total, err);
	EVP_DigestFinal_ex(ctx, md, NULL);
	EVP_MD_CTX_free(ctx);
	fclose(f);
	core_hex(md, sizeof(md), out);
	if (got)
		*got = total;
	return rc;
}

int core_sha256_file(const char *path, uint64_t max, uint64_t *size,
		     char out[CORE_SHA256_HEX_LEN + 1], core_err *err)
{
	return core_sha256_file_range(path, 0, max, size, out, err);
}

struct core_sha256_stream {
	EVP_MD_CTX *ctx;
};

core_sha256_stream *core_sha256_stream_new(void)
{
	core_sha256_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = EVP_MD_CTX_new();
	if (!s->ctx || !EVP_DigestInit_ex(s->ctx, md_sha256(), NULL)) {
		EVP_MD_CTX_free(s->ctx);
		free(s);
		return NULL;
	}
	return s;
}

void core_sha256_stream_add(core_sha256_stream *s, const void *p, size_t n)
{
	EVP_DigestUpdate(s->ctx, p, n);
}

void core_sha256_stream_hex(const core_sha256_stream *s,
			    char out[CORE_SHA256_HEX_LEN + 1])
{
	uint8_t md[CORE_SHA256_LEN];
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	/* Finalising a copy keeps the stream going. */
	if (!c || !EVP_MD_CTX_copy_ex(c, s->ctx))
		abort();
	EVP_DigestFinal_ex(c, md, NULL);
	EVP_MD_CTX_free(c);
	core_hex(md, sizeof(md), out);
}

void core_sha256_stream_free(core_sha256_stream *s)
{
	if (!s)
		return;
	EVP_MD_CTX_free(s->ctx);
	free(s);
}

const char *core_signing_key(void)
{
	const char *k = getenv("ELSPETH_SIGNING_KEY");

	return k && *k ? k : NULL;
}

int core_hmac_sha256_hex(const char *key, const void *data, size_t len,
			 char out[CORE_SHA256_HEX_LEN + 1])
{
	unsigned char mac[CORE_SHA256_LEN];
	unsigned int maclen = 0;

	if (!HMAC(EVP_sha256(), key, (int)strlen(key), data, len, mac, &maclen) ||
	    maclen != sizeof(mac))
		return CORE_EINTERNAL;
	core_hex(mac, sizeof(mac), out);
	return 0;
}

/*
 * s3.h — the little of Amazon S3 the aws_s3 source and sink need: HEAD,
 * GET into a file, PUT from a file, each one request signed with AWS
 * Signature Version 4 (ADR 0051).
 *
 * Credentials come from the environment only, as ELSPETH's boto3 client
 * finds them first: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for
 * temporary credentials, AWS_SESSION_TOKEN. The region is the options'
 * region_name, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1.
 * With an endpoint_url, objects are addressed path-style
 * (ENDPOINT/BUCKET/KEY), as S3-compatible servers expect; without one,
 * virtual-hosted style at https://BUCKET.s3.REGION.amazonaws.com/KEY.
 * No secret reaches an error message.
 *
 * One client per plugin instance, used by one thread at a time.
 */
#ifndef ELSPETH_PLUGINS_AWS_S3_H
#define ELSPETH_PLUGINS_AWS_S3_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"
#include "plugins/plugins.h"

typedef struct plg__s3 {
	char *endpoint;   /* scheme://host[:port], no trailing '/'; NULL: AWS */
	char *region;
	char *bucket;
	char *access_key; /* NULL: no credentials (requests go unsigned) */
	char *secret_key;
	char *token;      /* NULL unless temporary credentials */
	long timeout_s;   /* a transfer that moves nothing this long ends;
			   * connect is capped at 10 s */
	/* For tests: the request time as YYYYMMDD'T'HHMMSS'Z' (NULL: now). */
	const char *fixed_time;
} plg__s3;

/* What one request found. status: the HTTP status (0: no answer). */
typedef struct plg__s3_result {
	long status;
	uint64_t length;  /* Content-Length (HEAD) or bytes received (GET) */
	bool has_length;
	char etag[256];   /* as the server quotes it; "" when absent */
	char content_encoding[64];
	char code[64];    /* the error document's <Code>, or "" */
} plg__s3_result;

/* The options the aws_s3 source and sink share: region_name and
 * endpoint_url (a table of plg_option, for their option lists). */
extern const plg_option plg__s3_opts[];

/* What is wrong with a bucket name, a region or an endpoint_url, or NULL
 * when nothing is (the messages 0.7.1's checks give, where it has one).
 * Bucket names follow S3's rules (no access points); an endpoint is
 * http(s)://host[:port], no path. */
const char *plg__s3_bad_bucket(const char *bucket);
const char *plg__s3_bad_region(const char *region);
const char *plg__s3_bad_endpoint(const char *endpoint_url);

/* The client for bucket: endpoint_url and region_name may be NULL. The
 * three are checked (CORE_ECONFIG), the region taken from the
 * environment included. */
int plg__s3_init(plg__s3 *c, const char *endpoint_url, const char *region_name,
		 const char *bucket, core_err *err);
void plg__s3_free(plg__s3 *c);

/* The object's URL (no query), malloc'd; NULL when out of memory. */
char *plg__s3_url(const plg__s3 *c, const char *key);

/* HEAD the object. 0 with res->status set (any status), or an error when
 * no answer came (CORE_EIO naming the URL). */
int plg__s3_head(plg__s3 *c, const char *key, plg__s3_result *res,
		 core_err *err);
/* GET the object into out (from its current position), at most max
 * bytes (more is CORE_EDATA: "larger than max_object_bytes"); with
 * if_match (an ETag), the server must still hold that version. A 2xx
 * body goes to out, an error body is kept for res->code. *sha gets the
 * SHA-256 of the bytes written. */
int plg__s3_get(plg__s3 *c, const char *key, const char *if_match, FILE *out,
		uint64_t max, plg__s3_result *res,
		char sha[CORE_SHA256_HEX_LEN + 1], core_err *err);
/* PUT the file's whole content as the object; if_none_match: only when
 * no object has the key (a 412 otherwise). content_type may be NULL. */
int plg__s3_put(plg__s3 *c, const char *key, const char *path,
		const char *content_type, bool if_none_match,
		plg__s3_result *res, core_err *err);

/* AWS Signature Version 4 of one request (exposed for its unit test):
 * the Authorization header's value into auth (>= 512 bytes). headers are
 * "name:value" lines, lower-case names, sorted, each ending in '\n', and
 * must include host, x-amz-content-sha256 and x-amz-date; signed names
 * "a;b;c". path is already URI-encoded; query canonical ("" for none). */
int plg__s3_sign(const plg__s3 *c, const char *method, const char *path,
		 const char *query, const char *headers, const char *signed_names,
		 const char *payload_sha, const char *amz_date, char *auth,
		 size_t cap);

#endif

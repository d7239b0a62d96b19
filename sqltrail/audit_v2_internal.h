/*
 * audit_v2_internal.h — what the derivation of 0.7.1's audit export
 * (audit_v2.c) leaves for its outputs (audit_v2_out.c): where each chunk
 * and the manifest lie in the spool, and their hashes. ADR 0053.
 */
#ifndef ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H
#define ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H

#include "sqltrail/sqltrail_internal.h"

/* The derivation (audit-export-v2) over records given one by one, its
 * bytes written to spool_fd: the frames, then at finish the manifest.
 * key: hmac_sha256's key, else NULL. The manifest's run id, status and
 * time come from the first record (the run's). */
typedef struct sqlt_v2 sqlt_v2;
sqlt_v2 *sqlt__v2_new(const core_audit_export_v2 *x, bool json, const char *key,
		      int spool_fd, core_err *err);
/* fn sees every record as framed (with its signature when signed). */
void sqlt__v2_on_record(sqlt_v2 *d, sqlt_record_fn fn, void *ctx);
/* rec's integral floats become the integers 0.7.1 reads back (in place). */
int sqlt__v2_add(sqlt_v2 *d, json_t *rec, core_err *err);
int sqlt__v2_finish(sqlt_v2 *d, core_err *err);
void sqlt__v2_free(sqlt_v2 *d); /* NULL allowed */

typedef struct v2_chunk {
	uint64_t off, size, records;
	char hash[CORE_SHA256_HEX_LEN + 1];
} v2_chunk;

struct sqlt_v2 {
	const core_audit_export_v2 *x;
	bool json;                    /* export_format json; else csv */
	const char *key;              /* hmac_sha256: the key's bytes */
	int fd;                       /* the spool: frames, then the manifest */
	core_sha256_stream *chain, *cur;
	v2_chunk *chunks;             /* the finished ones */
	size_t nchunks, cap;
	v2_chunk c;                   /* the open one (when open) */
	bool open;
	uint64_t n, bytes;            /* records and data bytes so far */
	char run_id[128], status[64], at[64]; /* from the run record */
	core_buf frame, manifest;
	sqlt_record_fn each;          /* optional: every framed record */
	void *each_ctx;
};

/* write(2) of all n bytes (EINTR retried); CORE_EIO naming the spool. */
int sqlt__v2_write_all(int fd, const void *p, size_t n, core_err *err);

#endif /* ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H */

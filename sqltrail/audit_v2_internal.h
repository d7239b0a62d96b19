/*
 * audit_v2_internal.h — what the derivation of 0.7.1's audit export
 * (audit_v2.c) leaves for its outputs (audit_v2_out.c): where each chunk
 * and the manifest lie in the spool, and their hashes. ADR 0053.
 */
#ifndef ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H
#define ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H

#include "sqltrail/sqltrail_internal.h"

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
	v2_chunk *chunks;
	size_t nchunks, cap;
	uint64_t n, bytes;            /* records and data bytes so far */
	char run_id[128], status[64], at[64]; /* from the run record */
	core_buf frame, manifest;
	sqlt_record_fn each;          /* optional: every framed record */
	void *each_ctx;
};

/* write(2) of all n bytes (EINTR retried); CORE_EIO naming the spool. */
int sqlt__v2_write_all(int fd, const void *p, size_t n, core_err *err);

#endif /* ELSPETH_SQLTRAIL_AUDIT_V2_INTERNAL_H */

/*
 * audit_v2.c — ELSPETH 0.7.1's audit export, "audit-export-v2" (ADR 0053).
 *
 * The run's records in 0.7.1's shapes (audit_records.c) are framed one
 * canonical JSON object per line, signed (HMAC-SHA256) or not, cut into
 * chunks, and sealed by a chain of tagged hashes ending in a manifest, as
 * 0.7.1's derive_audit_export_bundle does; every value can be recomputed
 * from the published file alone (docs/audit.md gives the formulas). The
 * bytes go to a spool file; audit_v2_out.c takes them from there to the
 * content store and the target.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sqltrail/audit_v2_internal.h"

#define SAFE_INT 9007199254740991LL /* 2^53 - 1: RFC 8785's exact integers */
#define MANIFEST_MAX 65536          /* 0.7.1's bound on the signed manifest */

/* ------------------------------------------------------------ hashing */

static int fail(core_err *err, const char *msg)
{
	return core_err_set(err, CORE_EDATA, "%s", msg);
}

/* C(tag, payload): the canonical {"payload": p, "schema": tag}. Takes
 * payload's reference. */
static int tagged(const char *tag, json_t *payload, core_buf *out, core_err *err)
{
	json_t *o = json_pack("{s:o,s:s}", "payload", payload, "schema", tag);

	core_buf_reset(out);
	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	int rc = core_canon_append(out, o, err);

	json_decref(o);
	return rc;
}

/* H(C(tag, payload)): core_hash_json over the tagged object. Takes
 * payload's reference. */
static int tagged_hash(const char *tag, json_t *payload, char hex[CORE_SHA256_HEX_LEN + 1],
		       core_err *err)
{
	json_t *o = json_pack("{s:o,s:s}", "payload", payload, "schema", tag);
	int rc = o ? core_hash_json(o, hex, err) : core_err_set(err, CORE_ENOMEM, "out of memory");

	json_decref(o);
	return rc;
}

/* Written by RFC 8785 without a fraction or an exponent. */
static bool integral(double d)
{
	return isfinite(d) && d == floor(d) && fabs(d) < 1e21;
}

/* The integer an integral float reads back as; NULL (err set) when
 * RFC 8785 has no exact integer for it. */
static json_t *read_back(const json_t *x, core_err *err)
{
	double d = json_real_value(x);

	if (fabs(d) > (double)SAFE_INT) {
		core_err_set(err, CORE_EDATA, "%.0f exceeds safe integer domain for JSON "
			     "floats", d);
		return NULL;
	}
	return json_integer((json_int_t)d);
}

/* 0.7.1 canonicalizes each record, reads it back and canonicalizes it
 * again: an integral float below 1e21 comes back as an integer (5.0 is
 * written 5), which must then be within +-(2^53 - 1). The same here in
 * place, without the round trip: such floats become integers, and one
 * out of range is the error 0.7.1 gives. */
static int as_read_back(json_t *v, core_err *err);

/* One member: an integral float gives its replacement (*out), anything
 * else is walked. */
static int member(json_t *x, json_t **out, core_err *err)
{
	*out = NULL;
	if (!json_is_real(x) || !integral(json_real_value(x)))
		return as_read_back(x, err);
	if (!(*out = read_back(x, err)))
		return err->code ? err->code : core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

static int as_read_back(json_t *v, core_err *err)
{
	const char *k;
	json_t *x, *n;
	size_t i;
	int rc;

	switch (json_typeof(v)) {
	case JSON_INTEGER:
		if (json_integer_value(v) > SAFE_INT || json_integer_value(v) < -SAFE_INT)
			return core_err_set(err, CORE_EDATA, "%" JSON_INTEGER_FORMAT " exceeds "
					    "safe integer domain for JSON floats",
					    json_integer_value(v));
		return 0;
	case JSON_OBJECT:
		json_object_foreach(v, k, x) {
			if ((rc = member(x, &n, err)))
				return rc;
			if (n && json_object_set_new_nocheck(v, k, n))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		return 0;
	case JSON_ARRAY:
		json_array_foreach(v, i, x) {
			if ((rc = member(x, &n, err)))
				return rc;
			if (n && json_array_set_new(v, i, n))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		return 0;
	default:
		return 0;
	}
}

/* ----------------------------------------------------------- framing */

sqlt_v2 *sqlt__v2_new(const core_audit_export_v2 *x, bool json, const char *key,
		     int spool_fd, core_err *err)
{
	sqlt_v2 *d = calloc(1, sizeof(*d));

	if (!d || !(d->chain = core_sha256_stream_new()) ||
	    !(d->cur = core_sha256_stream_new())) {
		sqlt__v2_free(d);
		core_err_set(err, CORE_ENOMEM, "out of memory");
		return NULL;
	}
	d->x = x;
	d->json = json;
	d->key = key;
	d->fd = spool_fd;
	if (strcmp(x->serialization_version, "audit-export-v2")) {
		sqlt__v2_free(d);
		fail(err, "serialization_version must equal 'audit-export-v2'");
		return NULL;
	}
	return d;
}

void sqlt__v2_free(sqlt_v2 *d)
{
	if (!d)
		return;
	core_sha256_stream_free(d->chain);
	core_sha256_stream_free(d->cur);
	free(d->chunks);
	core_buf_release(&d->frame);
	core_buf_release(&d->manifest);
	free(d);
}

void sqlt__v2_on_record(sqlt_v2 *d, sqlt_record_fn fn, void *ctx)
{
	d->each = fn;
	d->each_ctx = ctx;
}

int sqlt__v2_write_all(int fd, const void *p, size_t n, core_err *err)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return core_err_set(err, CORE_EIO, "writing the audit export's spool: %s",
					    strerror(errno));
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Ends the open chunk: 0.7.1 counts chunks as it finishes them. */
static int finish_chunk(sqlt_v2 *d, core_err *err)
{
	if (!d->open)
		return 0;
	if ((long long)d->nchunks >= d->x->chunk_limit)
		return fail(err, "audit export chunk count exceeds max_chunks");
	if (d->nchunks == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 16;
		v2_chunk *g = realloc(d->chunks, cap * sizeof(*g));

		if (!g)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		d->chunks = g;
		d->cap = cap;
	}
	core_sha256_stream_hex(d->cur, d->c.hash);
	d->chunks[d->nchunks++] = d->c;
	d->c = (v2_chunk){ .off = d->bytes };
	d->open = false;
	core_sha256_stream_free(d->cur);
	if (!(d->cur = core_sha256_stream_new()))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* 0.7.1's record-framing-v1 as its streaming derivation runs it: the
 * limits checked before a frame goes in (frame size, total records,
 * total bytes), a chunk ended before a frame that would not fit and as
 * soon as it is exactly full, at most per_chunk_record_limit frames and
 * per_chunk_byte_limit bytes each. */
static int put_frame(sqlt_v2 *d, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	uint64_t len = d->frame.len;
	int rc;

	if ((long long)len > x->chunk_bytes)
		return fail(err, "one audit export record frame exceeds per_chunk_byte_limit");
	if ((long long)d->n >= x->total_records)
		return fail(err, "audit export record count exceeds max_total_records");
	if ((long long)(d->bytes + len) > x->total_bytes)
		return fail(err, "audit export total bytes exceed max_total_bytes");
	if (d->open && ((long long)d->c.records >= x->chunk_records ||
			(long long)(d->c.size + len) > x->chunk_bytes) &&
	    (rc = finish_chunk(d, err)))
		return rc;
	if ((rc = sqlt__v2_write_all(d->fd, d->frame.data, len, err)))
		return rc;
	core_sha256_stream_add(d->cur, d->frame.data, len);
	d->open = true;
	d->c.size += len;
	d->c.records++;
	d->bytes += len;
	d->n++;
	if ((long long)d->c.records == x->chunk_records || (long long)d->c.size == x->chunk_bytes)
		return finish_chunk(d, err);
	return 0;
}

/* Remembers what the manifest takes from the run record. */
static void run_fields(sqlt_v2 *d, const json_t *rec)
{
	const char *id = json_string_value(json_object_get(rec, "run_id"));
	const char *st = json_string_value(json_object_get(rec, "status"));
	const char *at = json_string_value(json_object_get(rec, "completed_at"));
	char frac[7] = "000000";
	const char *dot;

	snprintf(d->run_id, sizeof(d->run_id), "%s", id ? id : "");
	snprintf(d->status, sizeof(d->status), "%s", st ? st : "");
	if (!at || strlen(at) < 19)
		return;
	/* runs.completed_at as %Y-%m-%dT%H:%M:%S.%fZ (six digits, UTC) */
	if ((dot = strchr(at + 19, '.')) && at[19] == '.')
		for (int i = 0; i < 6 && dot[1 + i] >= '0' && dot[1 + i] <= '9'; i++)
			frac[i] = dot[1 + i];
	snprintf(d->at, sizeof(d->at), "%.10sT%.8s.%sZ", at, at + 11, frac);
}

/* The record as a reader of the file gets it (0.7.1 builds its CSV
 * files from the frames read back): the frame parsed, its keys in their
 * canonical order. */
static int each_framed(sqlt_v2 *d, core_err *err)
{
	json_t *r = json_loadb(d->frame.data, d->frame.len - 1, 0, NULL);
	int rc;

	if (!r)
		return core_err_set(err, CORE_EINTERNAL, "an audit export frame does not read "
				    "back");
	rc = d->each(d->each_ctx, r, err);
	json_decref(r);
	return rc;
}

int sqlt__v2_add(sqlt_v2 *d, json_t *rec, core_err *err)
{
	char hex[CORE_SHA256_HEX_LEN + 1];
	const char *type = json_string_value(json_object_get(rec, "record_type"));
	json_t *framed = rec;
	int rc;

	if (!json_is_object(rec))
		return fail(err, "audit export record must be a JSON object");
	if (json_object_get(rec, "signature"))
		return fail(err, "audit export input records must not predeclare the "
			    "reserved signature field");
	if (type && !strcmp(type, "manifest"))
		return fail(err, "audit export input records must not use the reserved "
			    "manifest record type");
	if (!d->n && type && !strcmp(type, "run"))
		run_fields(d, rec);
	/* U: the record's canonical bytes as 0.7.1 reads them back */
	core_buf_reset(&d->frame);
	if ((rc = as_read_back(rec, err)) || (rc = core_canon_append(&d->frame, rec, err)))
		return rc;
	if (d->key) {
		if ((rc = core_hmac_sha256_hex(d->key, d->frame.data, d->frame.len, hex)))
			return core_err_set(err, rc, "HMAC-SHA256 failed");
		if (!(framed = json_copy(rec)) ||
		    json_object_set_new(framed, "signature", json_string(hex))) {
			json_decref(framed);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
		core_buf_reset(&d->frame);
		rc = core_canon_append(&d->frame, framed, err);
	} else {
		uint8_t dg[CORE_SHA256_LEN];

		core_sha256(d->frame.data, d->frame.len, dg);
		core_hex(dg, sizeof(dg), hex);
	}
	if (!rc && core_buf_putc(&d->frame, '\n'))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc)
		goto out_rec;
	core_sha256_stream_add(d->chain, hex, CORE_SHA256_HEX_LEN);
	rc = put_frame(d, err);
	if (!rc && d->each)
		rc = each_framed(d, err);
out_rec:
	if (framed != rec)
		json_decref(framed);
	return rc;
}

/* ---------------------------------------------------------- manifest */

static json_t *chunk_json(const v2_chunk *c, size_t k, uint64_t cum_records,
			  uint64_t cum_bytes)
{
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:I}", "content_hash", c->hash,
			 "cumulative_bytes", (json_int_t)cum_bytes,
			 "cumulative_records", (json_int_t)cum_records,
			 "ordinal", (json_int_t)k, "record_count", (json_int_t)c->records,
			 "size_bytes", (json_int_t)c->size);
}

typedef struct v2_hashes {
	char pub[65], registry[65], snapshot[65], id[65], last_seal[65];
	char manifest[65], seal[65], final[65];
} v2_hashes;

static int config_hashes(sqlt_v2 *d, v2_hashes *h, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	const char *fmt = d->json ? "json" : "csv";
	const char *mode = x->hmac ? "hmac_sha256" : "unsigned";
	int rc;

	rc = tagged_hash("audit-export-public-config-v1", json_pack(
		"{s:s,s:s,s:s,s:b,s:I,s:I,s:s,s:s,s:s}",
		"chunking_algorithm_version", x->chunking_version, "export_format", fmt,
		"exporter_version", x->exporter_version,
		"include_raw_error_rows", x->include_raw_error_rows,
		"per_chunk_byte_limit", (json_int_t)x->chunk_bytes,
		"per_chunk_record_limit", (json_int_t)x->chunk_records,
		"serialization_version", x->serialization_version,
		"signer_key_id", x->signer_key_id, "signing_mode", mode), h->pub, err);
	if (rc)
		return rc;
	return tagged_hash("audit-export-registry-key-v1", json_pack(
		"{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "export_format", fmt,
		"exporter_version", x->exporter_version, "public_export_config_hash", h->pub,
		"serialization_version", x->serialization_version,
		"signer_key_id", x->signer_key_id, "signing_mode", mode,
		"source_run_id", d->run_id), h->registry, err);
}

static int snapshot_hashes(sqlt_v2 *d, v2_hashes *h, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	json_t *content = json_array(), *listed = json_array();
	uint64_t cr = 0, cb = 0;
	char prev[65] = "";
	int rc;

	if (!content || !listed) {
		json_decref(content);
		json_decref(listed);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < d->nchunks; k++) {
		cr += d->chunks[k].records;
		cb += d->chunks[k].size;
		if (json_array_append_new(content, chunk_json(&d->chunks[k], k, cr, cb))) {
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = tagged_hash("audit-export-snapshot-content-v1", json_pack(
		"{s:s,s:O,s:I,s:s,s:I}", "chunking_algorithm_version", x->chunking_version,
		"chunks", content, "record_count", (json_int_t)d->n,
		"serialization_version", x->serialization_version,
		"total_bytes", (json_int_t)d->bytes), h->snapshot, err)) ||
	    (rc = tagged_hash("audit-export-snapshot-id-v1", json_pack("{s:s,s:s}",
		"registry_key_hash", h->registry, "snapshot_hash", h->snapshot), h->id, err)))
		goto out;
	cr = cb = 0;
	for (size_t k = 0; k < d->nchunks && !rc; k++) {
		const v2_chunk *c = &d->chunks[k];
		char ref[80], hex[65];
		json_t *m;

		cr += c->records;
		cb += c->size;
		snprintf(ref, sizeof(ref), "sha256:%s", c->hash);
		if ((rc = tagged_hash("audit-export-chunk-seal-v1", json_pack(
			"{s:s,s:s,s:s,s:I,s:I,s:s,s:I,s:o,s:I,s:s,s:I,s:s}",
			"chunking_algorithm_version", x->chunking_version,
			"content_hash", c->hash, "content_ref", ref,
			"cumulative_bytes", (json_int_t)cb, "cumulative_records", (json_int_t)cr,
			"derivation_version", "audit-export-derivation-v1",
			"ordinal", (json_int_t)k,
			"predecessor", k ? json_pack("{s:s,s:s}", "hash", prev, "kind", "chunk_seal") :
					   json_pack("{s:s}", "kind", "genesis"),
			"record_count", (json_int_t)c->records,
			"serialization_version", x->serialization_version,
			"size_bytes", (json_int_t)c->size, "snapshot_id", h->id), hex, err)))
			break;
		m = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:s?,s:I,s:I}", "chunk_seal_hash", hex,
			      "content_hash", c->hash, "content_ref", ref,
			      "cumulative_bytes", (json_int_t)cb,
			      "cumulative_records", (json_int_t)cr, "ordinal", (json_int_t)k,
			      "predecessor_seal_hash", k ? prev : NULL,
			      "record_count", (json_int_t)c->records,
			      "size_bytes", (json_int_t)c->size);
		if (json_array_append_new(listed, m))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		memcpy(prev, hex, sizeof(prev));
	}
	if (rc)
		goto out;
	memcpy(h->last_seal, prev, sizeof(prev));
	rc = tagged_hash("audit-export-manifest-v1", json_pack("{s:I,s:O,s:I,s:s,s:I}",
		"chunk_count", (json_int_t)d->nchunks, "chunks", listed,
		"record_count", (json_int_t)d->n, "snapshot_id", h->id,
		"total_bytes", (json_int_t)d->bytes), h->manifest, err);
	if (!rc)
		rc = tagged_hash("audit-export-snapshot-seal-v1", json_pack(
			"{s:I,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:I}",
			"chunk_count", (json_int_t)d->nchunks,
			"chunking_algorithm_version", x->chunking_version,
			"exported_at", d->at, "last_chunk_seal_hash", h->last_seal,
			"manifest_hash", h->manifest,
			"per_chunk_byte_limit", (json_int_t)x->chunk_bytes,
			"per_chunk_record_limit", (json_int_t)x->chunk_records,
			"record_count", (json_int_t)d->n, "registry_key_hash", h->registry,
			"snapshot_hash", h->snapshot, "snapshot_id", h->id,
			"source_completed_at", d->at, "source_run_id", d->run_id,
			"source_status", d->status, "total_bytes", (json_int_t)d->bytes),
			h->seal, err);
out:
	json_decref(content);
	json_decref(listed);
	return rc;
}

int sqlt__v2_finish(sqlt_v2 *d, core_err *err)
{
	const core_audit_export_v2 *x = d->x;
	core_buf body = { 0 };
	v2_hashes h = { 0 };
	json_t *core;
	int rc;

	if (!d->n)
		return fail(err, "audit export requires at least the run record");
	if (!d->run_id[0] || !d->at[0])
		return fail(err, "audit export: the first record is not a completed run");
	if ((rc = finish_chunk(d, err)))
		return rc;
	core_sha256_stream_hex(d->chain, h.final);
	if ((rc = config_hashes(d, &h, err)) || (rc = snapshot_hashes(d, &h, err)))
		return rc;
	core = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s,s:s,"
			 "s:s,s:s,s:s,s:s,s:s,s:s,s:I}",
		"chunk_count", (json_int_t)d->nchunks,
		"derivation_version", "audit-export-derivation-v1",
		"export_format", d->json ? "json" : "csv", "exported_at", d->at,
		"final_hash", h.final, "hash_algorithm", "sha256",
		"last_chunk_seal_hash", h.last_seal, "manifest_hash", h.manifest,
		"record_chain_algorithm", x->hmac ? "sha256_concat_hmac_sha256_signatures_v1" :
						    "sha256_concat_record_sha256_v1",
		"record_count", (json_int_t)d->n, "record_type", "manifest",
		"registry_key_hash", h.registry, "run_id", d->run_id,
		"schema", "elspeth.audit-export-manifest.v2",
		"signature_algorithm", x->hmac ? "hmac_sha256" : "unsigned",
		"signature_key_id", x->signer_key_id, "snapshot_hash", h.snapshot,
		"snapshot_id", h.id, "snapshot_seal_hash", h.seal,
		"source_completed_at", d->at, "source_status", d->status,
		"total_bytes", (json_int_t)d->bytes);
	if (!core)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	json_incref(core);
	rc = tagged("audit-export-final-manifest-signing-body-v2", core, &body, err);
	if (!rc && d->key) {
		char sig[65];

		if ((rc = core_hmac_sha256_hex(d->key, body.data, body.len, sig)))
			rc = core_err_set(err, rc, "HMAC-SHA256 failed");
		else if (json_object_set_new(core, "signature", json_string(sig)))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else if (!rc && json_object_set_new(core, "signature", json_null())) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	core_buf_reset(&d->manifest);
	if (!rc)
		rc = core_canon_append(&d->manifest, core, err);
	if (!rc && d->manifest.len > MANIFEST_MAX)
		rc = fail(err, "final manifest exceeds the code-owned 64 KiB maximum");
	if (!rc)
		rc = sqlt__v2_write_all(d->fd, d->manifest.data, d->manifest.len, err);
	if (!rc && fsync(d->fd))
		rc = core_err_set(err, CORE_EIO, "syncing the audit export's spool: %s",
				  strerror(errno));
	json_decref(core);
	core_buf_release(&body);
	return rc;
}


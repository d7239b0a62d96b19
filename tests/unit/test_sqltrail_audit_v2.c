/* test_sqltrail_audit_v2.c — ELSPETH 0.7.1's audit export derivation,
 * "audit-export-v2" (sqltrail/audit_v2.c), against files the real 0.7.1
 * wrote (tests/fixtures/elspeth071_audit_export/): the same records and
 * settings must give the same bytes, and 0.7.1's refusals its messages. */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "sqltrail/audit_v2_internal.h"

#define FIXTURES ELSPETH_SOURCE_DIR "/tests/fixtures/elspeth071_audit_export/"
#define UNSIGNED_FILE FIXTURES "audit_unsigned.json"
#define HMAC_FILE FIXTURES "audit_hmac.json"
#define HMAC_KEY "fixture-hmac-key-071"
#define NRECORDS 125 /* data lines in either fixture */

/* ------------------------------------------------------------ settings */

/* settings_unsigned.yaml's landscape.export, 0.7.1's defaults filled in. */
static core_audit_export_v2 cfg_unsigned(void)
{
	return (core_audit_export_v2){
		.on = true,
		.signer_key_id = "UNSIGNED",
		.exporter_version = "landscape-exporter-v1",
		.serialization_version = "audit-export-v2",
		.chunking_version = "record-framing-v1",
		.include_raw_error_rows = false,
		.total_records = 10000,
		.total_bytes = 10000000,
		.chunk_limit = 100,
		.chunk_records = 1000,
		.chunk_bytes = 1000000,
		.spool_root = ".elspeth/audit-export-spool/audit-export-example",
		.store_id = "audit-export-example-v1",
		.store_namespace = "audit-export-example",
		.store_root = ".elspeth/audit-export-content-store/audit-export-example",
		.store_policy = "audit-store-policy-v1",
		.store_retention_days = 365,
	};
}

/* settings_hmac.yaml's: the same but signed and chunked smaller. */
static core_audit_export_v2 cfg_hmac(void)
{
	core_audit_export_v2 x = cfg_unsigned();

	x.hmac = true;
	x.signer_key_id = "audit-key-1";
	x.signing_secret_ref = "AE_TEST_KEY";
	x.chunk_limit = 1000;
	x.chunk_records = 40;
	x.chunk_bytes = 30000;
	return x;
}

/* ------------------------------------------------------------- helpers */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	cr_assert_not_null(f, "opening %s: %s", path, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	cr_assert_geq(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "reading %s", path);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The fixture's records, every line but the last (the manifest), in
 * order; strip: each without its "signature" (which it must have). */
static json_t *fixture_records(const char *path, bool strip)
{
	size_t len, line = 0;
	char *text = slurp(path, &len), *p = text, *nl;
	json_t *recs = json_array();

	cr_assert_not_null(recs);
	while ((nl = memchr(p, '\n', (size_t)(text + len - p)))) {
		json_error_t jerr;
		json_t *r = json_loadb(p, (size_t)(nl - p), 0, &jerr);

		line++;
		cr_assert_not_null(r, "%s line %zu: %s", path, line, jerr.text);
		if (strip)
			cr_assert_eq(json_object_del(r, "signature"), 0,
				     "%s line %zu has no signature", path, line);
		cr_assert_eq(json_array_append_new(recs, r), 0);
		p = nl + 1;
	}
	free(text);
	cr_assert_eq(json_array_size(recs), NRECORDS, "%s: %zu data lines", path,
		     json_array_size(recs));
	return recs;
}

/* All of the spool's bytes (NUL-terminated for convenience). */
static char *spool_bytes(int fd, size_t *len)
{
	struct stat st;
	char *buf;
	size_t got = 0;

	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	cr_assert_not_null(buf);
	while (got < (size_t)st.st_size) {
		ssize_t r = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);

		cr_assert_gt(r, 0, "reading the spool: %s", r ? strerror(errno) : "short");
		got += (size_t)r;
	}
	buf[got] = '\0';
	*len = got;
	return buf;
}

typedef struct outcome {
	int rc;                 /* the first failure, 0: none */
	size_t at;              /* the record refused; NRECORDS-ish: finish's */
	core_err err;
	char *out;              /* the spool, whatever was written */
	size_t len;
} outcome;

typedef struct seen {
	const json_t *want;     /* the records the callback must see, in order */
	size_t n;
	bool signed_;
} seen;

static int on_record(void *ctx, json_t *rec, core_err *err)
{
	seen *s = ctx;
	const json_t *want = json_array_get(s->want, s->n);
	json_t *sig = json_object_get(rec, "signature");

	(void)err;
	cr_assert_not_null(want, "callback called for record %zu of %zu", s->n + 1,
			   json_array_size(s->want));
	cr_assert(json_equal(rec, (json_t *)want), "record %zu differs from the fixture's",
		  s->n + 1);
	if (s->signed_)
		cr_assert(json_is_string(sig), "record %zu has no signature", s->n + 1);
	else
		cr_assert_null(sig, "unsigned record %zu has a signature", s->n + 1);
	s->n++;
	return 0;
}

/* Derives recs with x (and key), optionally watching with cb, and keeps
 * the first failure and the spool's bytes. */
static outcome derive_with(const core_audit_export_v2 *x, const char *key,
			   const json_t *recs, seen *cb)
{
	outcome o = { 0 };
	FILE *spool = tmpfile();
	sqlt_v2 *d;

	cr_assert_not_null(spool, "tmpfile: %s", strerror(errno));
	d = sqlt__v2_new(x, true, key, fileno(spool), &o.err);
	cr_assert_not_null(d, "sqlt__v2_new: %s", o.err.msg);
	if (cb)
		sqlt__v2_on_record(d, on_record, cb);
	for (o.at = 0; o.at < json_array_size(recs); o.at++)
		if ((o.rc = sqlt__v2_add(d, json_array_get(recs, o.at), &o.err)))
			break;
	if (!o.rc)
		o.rc = sqlt__v2_finish(d, &o.err);
	sqlt__v2_free(d);
	o.out = spool_bytes(fileno(spool), &o.len);
	fclose(spool);
	return o;
}

static outcome derive(const core_audit_export_v2 *x, const char *key, const json_t *recs)
{
	return derive_with(x, key, recs, NULL);
}

static void assert_same_bytes(const char *got, size_t glen, const char *want,
			      size_t wlen, const char *what)
{
	size_t n = glen < wlen ? glen : wlen, i = 0, from;

	while (i < n && got[i] == want[i])
		i++;
	if (i == n && glen == wlen)
		return;
	from = i > 40 ? i - 40 : 0;

	cr_assert_fail("%s: %zu bytes, want %zu; first difference at offset %zu\n"
		       "  got:  ...%.*s...\n  want: ...%.*s...", what, glen, wlen, i,
		       (int)((glen < i + 40 ? glen : i + 40) - from), got + from,
		       (int)((wlen < i + 40 ? wlen : i + 40) - from), want + from);
}

/* The manifest: the spool's bytes after its last newline. */
static json_t *manifest_of(const outcome *o)
{
	const char *nl = memrchr(o->out, '\n', o->len);
	const char *m = nl ? nl + 1 : o->out;
	json_error_t jerr;
	json_t *v = json_loadb(m, (size_t)(o->out + o->len - m), 0, &jerr);

	cr_assert_not_null(v, "the manifest does not parse: %s", jerr.text);
	cr_assert_str_eq(json_string_value(json_object_get(v, "record_type")), "manifest");
	return v;
}

static long long int_field(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	cr_assert(json_is_integer(v), "%s is not an integer", key);
	return json_integer_value(v);
}

/* Expects derivation to fail at record index at with msg in the error. */
static void assert_refused(const outcome *o, size_t at, const char *msg)
{
	cr_assert_neq(o->rc, 0, "derivation succeeded; want \"%s\"", msg);
	cr_assert_not_null(strstr(o->err.msg, msg), "error \"%s\", want \"%s\"",
			   o->err.msg, msg);
	cr_assert_eq(o->at, at, "refused at record %zu, want %zu (%s)", o->at, at,
		     o->err.msg);
}

static void release(outcome *o)
{
	free(o->out);
}

/* The unsigned fixture's first record (the run) and one more. */
static json_t *run_and(json_t *extra)
{
	json_t *all = fixture_records(UNSIGNED_FILE, false);
	json_t *two = json_array();

	json_array_append(two, json_array_get(all, 0));
	json_array_append_new(two, extra);
	json_decref(all);
	return two;
}

/* --------------------------------------------- byte-for-byte with 0.7.1 */

Test(sqltrail_audit_v2, unsigned_fixture_byte_for_byte)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	size_t wlen;
	char *want = slurp(UNSIGNED_FILE, &wlen);
	outcome o = derive(&x, NULL, recs);

	cr_assert_eq(o.rc, 0, "derivation failed at record %zu: %s", o.at, o.err.msg);
	assert_same_bytes(o.out, o.len, want, wlen, "audit_unsigned.json");
	release(&o);
	free(want);
	json_decref(recs);
}

Test(sqltrail_audit_v2, hmac_fixture_byte_for_byte)
{
	core_audit_export_v2 x = cfg_hmac();
	json_t *recs = fixture_records(HMAC_FILE, true);
	size_t wlen;
	char *want = slurp(HMAC_FILE, &wlen);
	outcome o = derive(&x, HMAC_KEY, recs);

	cr_assert_eq(o.rc, 0, "derivation failed at record %zu: %s", o.at, o.err.msg);
	assert_same_bytes(o.out, o.len, want, wlen, "audit_hmac.json");
	release(&o);
	free(want);
	json_decref(recs);
}

Test(sqltrail_audit_v2, hmac_wrong_key_differs)
{
	core_audit_export_v2 x = cfg_hmac();
	json_t *recs = fixture_records(HMAC_FILE, true);
	size_t wlen;
	char *want = slurp(HMAC_FILE, &wlen);
	outcome o = derive(&x, "fixture-hmac-key-072", recs);
	const char *nl = memchr(want, '\n', wlen);

	cr_assert_eq(o.rc, 0, "derivation failed at record %zu: %s", o.at, o.err.msg);
	/* same shape (signatures are all 64 hex digits), other bytes */
	cr_assert_eq(o.len, wlen);
	cr_assert_neq(memcmp(o.out, want, wlen), 0, "a wrong key gave 0.7.1's bytes");
	/* the first record's signature already differs */
	cr_assert_not_null(nl);
	cr_assert_neq(memcmp(o.out, want, (size_t)(nl - want)), 0);
	release(&o);
	free(want);
	json_decref(recs);
}

/* ----------------------------------------------------------- refusals */

Test(sqltrail_audit_v2, refuses_predeclared_signature)
{
	core_audit_export_v2 x = cfg_hmac();
	json_t *recs = fixture_records(HMAC_FILE, false); /* signatures kept */
	outcome o = derive(&x, HMAC_KEY, recs);

	assert_refused(&o, 0, "must not predeclare the reserved signature field");
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_predeclared_signature_unsigned)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:s,s:n}", "record_type", "row",
					 "row_id", "r1", "signature"));
	outcome o = derive(&x, NULL, recs);

	assert_refused(&o, 1, "must not predeclare the reserved signature field");
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_manifest_record_type)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:s}", "record_type", "manifest",
					 "run_id", "x"));
	outcome o = derive(&x, NULL, recs);

	assert_refused(&o, 1, "must not use the reserved manifest record type");
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_too_many_records)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	outcome o;

	x.total_records = 5;
	o = derive(&x, NULL, recs);
	assert_refused(&o, 5, "record count exceeds max_total_records");
	release(&o);
	/* exactly the limit is allowed */
	x.total_records = NRECORDS;
	o = derive(&x, NULL, recs);
	cr_assert_eq(o.rc, 0, "%zu records at a limit of %d: %s", o.at, NRECORDS, o.err.msg);
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_too_many_bytes)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	size_t wlen;
	char *want = slurp(UNSIGNED_FILE, &wlen);
	const char *p = want;
	outcome o;

	/* the first three frames (lines with their newlines) fit exactly */
	for (int i = 0; i < 3; i++)
		p = (const char *)memchr(p, '\n', wlen - (size_t)(p - want)) + 1;
	x.total_bytes = (long long)(p - want);
	o = derive(&x, NULL, recs);
	assert_refused(&o, 3, "total bytes exceed max_total_bytes");
	release(&o);
	/* all the frames at exactly the limit are allowed */
	x.total_bytes = (long long)((const char *)memrchr(want, '\n', wlen) + 1 - want);
	o = derive(&x, NULL, recs);
	cr_assert_eq(o.rc, 0, "total bytes at the limit: record %zu: %s", o.at, o.err.msg);
	release(&o);
	free(want);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_too_many_chunks)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	outcome o;

	x.chunk_records = 10;
	x.chunk_limit = 3;
	o = derive(&x, NULL, recs);
	/* 0.7.1 counts a chunk when it ends: the 40th record fills the
	 * fourth, whose end is refused */
	assert_refused(&o, 39, "chunk count exceeds max_chunks");
	release(&o);
	/* with the records capped at the chunks' capacity, the 31st record
	 * is refused for the total first, as 0.7.1 checks it first */
	x.total_records = 30;
	o = derive(&x, NULL, recs);
	assert_refused(&o, 30, "audit export record count exceeds max_total_records");
	release(&o);
	x.total_records = 10000;
	x.chunk_limit = 13;
	o = derive(&x, NULL, recs);
	cr_assert_eq(o.rc, 0, "13 chunks at a limit of 13: record %zu: %s", o.at, o.err.msg);
	release(&o);
	/* the thirteenth chunk (5 records) ends at finish: refused there */
	x.chunk_limit = 12;
	o = derive(&x, NULL, recs);
	cr_assert_neq(o.rc, 0, "13 chunks at a limit of 12 were accepted");
	cr_assert_eq(o.at, 125, "refused at record %zu, not at finish", o.at);
	cr_assert(strstr(o.err.msg, "chunk count exceeds max_chunks"), "%s", o.err.msg);
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_frame_over_chunk_bytes)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	outcome o;

	x.chunk_bytes = 100; /* the run record's frame is 3242 bytes */
	o = derive(&x, NULL, recs);
	assert_refused(&o, 0, "one audit export record frame exceeds per_chunk_byte_limit");
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, frame_at_chunk_bytes_fits)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	json_t *one = json_array();
	outcome o;

	json_array_append(one, json_array_get(recs, 0));
	x.chunk_bytes = 3242; /* the run record's frame, its newline included */
	o = derive(&x, NULL, one);
	cr_assert_eq(o.rc, 0, "a frame of exactly per_chunk_byte_limit: %s", o.err.msg);
	release(&o);
	x.chunk_bytes = 3241;
	o = derive(&x, NULL, one);
	assert_refused(&o, 0, "one audit export record frame exceeds per_chunk_byte_limit");
	release(&o);
	json_decref(one);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_unsafe_integer)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:s,s:I}", "record_type", "row",
					 "row_id", "r1", "n", (json_int_t)9007199254740992LL));
	outcome o = derive(&x, NULL, recs);

	assert_refused(&o, 1, "exceeds safe integer domain");
	cr_assert_not_null(strstr(o.err.msg, "9007199254740992"), "%s", o.err.msg);
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, refuses_unsafe_integer_nested_negative)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:{s:[i,I]}}", "record_type", "row",
					 "data", "xs", 1, (json_int_t)-9007199254740992LL));
	outcome o = derive(&x, NULL, recs);

	assert_refused(&o, 1, "exceeds safe integer domain");
	release(&o);
	json_decref(recs);
}

/* 0.7.1 reads each record back: an integral float past 2^53 is refused
 * like the integer it becomes. */
Test(sqltrail_audit_v2, refuses_unsafe_integral_float)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:s,s:f}", "record_type", "row",
					 "row_id", "r1", "n", 1e16));
	outcome o = derive(&x, NULL, recs);

	assert_refused(&o, 1, "exceeds safe integer domain");
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, accepts_largest_safe_integer)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = run_and(json_pack("{s:s,s:s,s:I,s:I}", "record_type", "row",
					 "row_id", "r1", "n", (json_int_t)9007199254740991LL,
					 "m", (json_int_t)-9007199254740991LL));
	outcome o = derive(&x, NULL, recs);

	cr_assert_eq(o.rc, 0, "2^53 - 1 refused at record %zu: %s", o.at, o.err.msg);
	cr_assert_not_null(strstr(o.out, "\"n\":9007199254740991"));
	release(&o);
	json_decref(recs);
}

Test(sqltrail_audit_v2, finish_needs_run_record)
{
	core_audit_export_v2 x = cfg_unsigned();
	core_err err = { 0 };
	FILE *spool = tmpfile();
	sqlt_v2 *d;
	struct stat st;
	int rc;

	cr_assert_not_null(spool);
	d = sqlt__v2_new(&x, true, NULL, fileno(spool), &err);
	cr_assert_not_null(d, "%s", err.msg);
	rc = sqlt__v2_finish(d, &err);
	cr_assert_neq(rc, 0);
	cr_assert_not_null(strstr(err.msg, "requires at least the run record"), "%s", err.msg);
	cr_assert_eq(fstat(fileno(spool), &st), 0);
	cr_assert_eq(st.st_size, 0, "a refused export wrote %lld bytes", (long long)st.st_size);
	sqlt__v2_free(d);
	fclose(spool);
}

Test(sqltrail_audit_v2, free_null)
{
	sqlt__v2_free(NULL);
}

/* ------------------------------------------------------------ callback */

Test(sqltrail_audit_v2, on_record_sees_signed_records_in_order)
{
	core_audit_export_v2 x = cfg_hmac();
	json_t *recs = fixture_records(HMAC_FILE, true);
	json_t *want = fixture_records(HMAC_FILE, false);
	seen s = { .want = want, .signed_ = true };
	outcome o = derive_with(&x, HMAC_KEY, recs, &s);

	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	cr_assert_eq(s.n, NRECORDS, "the callback saw %zu records", s.n);
	release(&o);
	json_decref(want);
	json_decref(recs);
}

Test(sqltrail_audit_v2, on_record_sees_unsigned_records_in_order)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	seen s = { .want = recs, .signed_ = false };
	outcome o = derive_with(&x, NULL, recs, &s);

	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	cr_assert_eq(s.n, NRECORDS, "the callback saw %zu records", s.n);
	release(&o);
	json_decref(recs);
}

static int refuse_third(void *ctx, json_t *rec, core_err *err)
{
	size_t *n = ctx;

	(void)rec;
	if (++*n == 3)
		return core_err_set(err, CORE_EIO, "callback says no");
	return 0;
}

Test(sqltrail_audit_v2, on_record_error_stops)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	core_err err = { 0 };
	FILE *spool = tmpfile();
	size_t n = 0, i;
	sqlt_v2 *d;
	int rc = 0;

	cr_assert_not_null(spool);
	d = sqlt__v2_new(&x, true, NULL, fileno(spool), &err);
	cr_assert_not_null(d);
	sqlt__v2_on_record(d, refuse_third, &n);
	for (i = 0; i < NRECORDS && !rc; i++)
		rc = sqlt__v2_add(d, json_array_get(recs, i), &err);
	cr_assert_eq(rc, CORE_EIO, "rc %d: %s", rc, err.msg);
	cr_assert_eq(i, 3);
	cr_assert_str_eq(err.msg, "callback says no");
	sqlt__v2_free(d);
	fclose(spool);
	json_decref(recs);
}

/* ------------------------------------------------------------ chunking */

Test(sqltrail_audit_v2, chunks_by_record_limit)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	size_t wlen;
	char *want = slurp(UNSIGNED_FILE, &wlen);
	size_t frames = (size_t)((const char *)memrchr(want, '\n', wlen) + 1 - want);
	outcome o;
	json_t *m;

	x.chunk_records = 10;
	x.chunk_limit = 1000;
	o = derive(&x, NULL, recs);
	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	m = manifest_of(&o);
	cr_assert_eq(int_field(m, "chunk_count"), 13);
	cr_assert_eq(int_field(m, "record_count"), NRECORDS);
	cr_assert_eq(int_field(m, "total_bytes"), (long long)frames);
	/* the frames do not depend on the chunking; the manifest does */
	cr_assert_gt(o.len, frames + 80);
	assert_same_bytes(o.out, frames, want, frames, "the frames");
	cr_assert_neq(memcmp(o.out + frames, want + frames, 80), 0);
	json_decref(m);
	release(&o);
	free(want);
	json_decref(recs);
}

/* A chunk holds up to per_chunk_byte_limit bytes, that many included. */
Test(sqltrail_audit_v2, chunks_by_byte_limit)
{
	core_audit_export_v2 x = cfg_unsigned();
	json_t *recs = fixture_records(UNSIGNED_FILE, false);
	json_t *two = json_array();
	outcome o;
	json_t *m;

	json_array_append(two, json_array_get(recs, 0));
	json_array_append(two, json_array_get(recs, 1));
	x.chunk_bytes = 3242 + 906; /* the two frames exactly */
	o = derive(&x, NULL, two);
	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	m = manifest_of(&o);
	cr_assert_eq(int_field(m, "chunk_count"), 1);
	json_decref(m);
	release(&o);
	x.chunk_bytes = 3242 + 906 - 1;
	o = derive(&x, NULL, two);
	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	m = manifest_of(&o);
	cr_assert_eq(int_field(m, "chunk_count"), 2);
	cr_assert_eq(int_field(m, "total_bytes"), 3242 + 906);
	json_decref(m);
	release(&o);
	json_decref(two);
	json_decref(recs);
}

Test(sqltrail_audit_v2, fixture_manifests_agree)
{
	core_audit_export_v2 x = cfg_hmac();
	json_t *recs = fixture_records(HMAC_FILE, true);
	outcome o = derive(&x, HMAC_KEY, recs);
	json_t *m;

	cr_assert_eq(o.rc, 0, "record %zu: %s", o.at, o.err.msg);
	m = manifest_of(&o);
	/* 40 records or 30000 bytes a chunk: 32, 40, 40, 13 (bytes bind first) */
	cr_assert_eq(int_field(m, "chunk_count"), 4);
	cr_assert_eq(int_field(m, "record_count"), NRECORDS);
	cr_assert_str_eq(json_string_value(json_object_get(m, "signature_key_id")),
			 "audit-key-1");
	json_decref(m);
	release(&o);
	json_decref(recs);
}

/*
 * aws_s3.c — ELSPETH 0.7.1's "aws_s3" source: one S3 object read as CSV,
 * JSON or JSON Lines (docs/adr/0051-aws-s3.md).
 *
 * open() HEADs the object (it must announce a length and an ETag, and
 * no Content-Encoding), refuses it past max_object_bytes, then GETs it
 * with If-Match on that ETag into a spool file (unlinked at once: it
 * goes with the process; the reader opens it as /proc/self/fd/N) while
 * hashing it, and hands the spool to the
 * csv or json source with the options they take (csv_options' delimiter
 * and encoding, has_header: false as `columns` — given, or the schema's
 * declared fields —, json_options' encoding and data_key, field_mapping,
 * schema, on_validation_failure). Every row, position and error is
 * theirs: rows are what the same bytes read from a file would give.
 *
 * The object read is pinned for a resume: save() gives its ETag, size
 * and SHA-256, and restore() makes a resumed run stop before its first
 * row when the object now holds other bytes (the checkpoint's positions
 * would point into another file).
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/aws/s3.h"
#include "plugins/plugins_internal.h"

#define MAX_OBJECT_DEFAULT (256LL << 20)
#define MAX_OBJECT_LIMIT (1LL << 30)

typedef struct s3_src {
	const plg_source_ops *inner;
	void *inner_state;
	core_doc *doc;       /* the inner source's options */
	char spool[64];      /* the unlinked spool, as /proc/self/fd/N */
	int spool_fd;        /* until the reader has opened it; -1 */
	char etag[256];
	char sha[CORE_SHA256_HEX_LEN + 1];
	uint64_t size;
	long long max_chars; /* max_record_chars */
	bool csv;
	bool over;           /* a record past max_record_chars ended the rows */
	uint64_t records;
	char *bad_resume;    /* restore()'s refusal, returned by next() */
	char *where;         /* s3://bucket/key */
} s3_src;

static const plg_option csv_sub[] = {
	{ "delimiter", "string", false, "\",\"", "one character between fields" },
	{ "has_header", "boolean", false, "true",
	  "false: the object has no header line (columns, or the schema's fields, name them)" },
	{ "encoding", "string", false, "\"utf-8\"", "utf-8 only" },
	{ NULL }
};
static const plg_option json_sub[] = {
	{ "encoding", "string", false, "\"utf-8\"", "utf-8 only" },
	{ "data_key", "string", false, NULL,
	  "format json: the key of the top-level object that holds the array" },
	{ NULL }
};
static const plg_option *const csv_sub_opts[] = { csv_sub, NULL };
static const plg_option *const json_sub_opts[] = { json_sub, NULL };

static const plg_option s3_own[] = {
	{ "bucket", "string", true, NULL, "the S3 bucket" },
	{ "key", "string", true, NULL, "the object's key" },
	{ "format", "string", false, "\"csv\"", "csv, json or jsonl" },
	{ "csv_options", "object", false, NULL, "delimiter, has_header, encoding" },
	{ "json_options", "object", false, NULL, "encoding, data_key" },
	{ "columns", "array", false, NULL,
	  "the field names of a CSV object without a header line" },
	{ "field_mapping", "object", false, NULL, "field name as read -> field name" },
	{ "on_validation_failure", "string", true, NULL,
	  "where rows that fail the schema go: a sink's name, or discard" },
	{ "max_object_bytes", "integer", false, "268435456",
	  "the largest object read (at most 1 GiB)" },
	{ "max_record_chars", "integer", false, "1000000",
	  "the longest record, in characters (at most 8,000,000)" },
	{ NULL }
};
static const plg_option *const s3_opts[] = { s3_own, plg__s3_opts, plg__schema_opts,
						    NULL };

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "aws_s3: out of memory");
}

/* An option checked by one of s3.h's validators, at its position. */
static int check_with(const core_node *n, const char *(*bad)(const char *),
		      core_err *err)
{
	const char *v, *why;

	if (!n || core_node_is_null(n))
		return 0;
	if (core_node_str(n, &v, err))
		return CORE_ECONFIG;
	return (why = bad(v)) ? core_err_at(err, CORE_ECONFIG, n, "%s", why) : 0;
}

static int check_key(const core_node *opts, core_err *err)
{
	const core_node *n = core_map_get(opts, "key"), *b = core_map_get(opts, "bucket");
	const char *v;

	if (core_opt_str(opts, "bucket", true, &v, err))
		return CORE_ECONFIG;
	if (check_with(b, plg__s3_bad_bucket, err))
		return CORE_ECONFIG;
	if (core_opt_str(opts, "key", true, &v, err))
		return CORE_ECONFIG;
	if (!v[strspn(v, " \t")] || strlen(v) > 1024)
		return core_err_at(err, CORE_ECONFIG, n,
				   "key must be nonblank and at most 1024 UTF-8 bytes");
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return core_err_at(err, CORE_ECONFIG, n,
					   "key must not contain control characters");
	return 0;
}

/* The options of the source that reads the spool, as a JSON object; the
 * checks here name the settings' own positions. */
static int inner_options(const core_node *o, const char *spool, json_t **out,
			 const plg_source_ops **inner, core_err *err)
{
	static const char *const formats[] = { "csv", "json", "jsonl", NULL };
	const core_node *csv = core_map_get(o, "csv_options");
	const core_node *js = core_map_get(o, "json_options");
	const core_node *cols = core_map_get(o, "columns");
	const core_node *fmt = core_map_get(o, "format"), *n;
	const char *dk = NULL;
	long long lim;
	bool header = true;
	int f = 0, rc;
	json_t *j;

	if ((rc = plg__check_options(o, s3_opts, err)) || (rc = check_key(o, err)) ||
	    (rc = check_with(core_map_get(o, "endpoint_url"), plg__s3_bad_endpoint, err)) ||
	    (rc = check_with(core_map_get(o, "region_name"), plg__s3_bad_region, err)) ||
	    (rc = core_opt_int(o, "max_object_bytes", 1, MAX_OBJECT_LIMIT, &lim, err)) ||
	    (rc = core_opt_int(o, "max_record_chars", 1, 8000000, &lim, err)))
		return rc;
	if (fmt && !core_node_is_null(fmt) && (rc = core_node_enum(fmt, formats, &f, err)))
		return rc;
	if (csv && (rc = plg__check_options(csv, csv_sub_opts, err)))
		return rc;
	if (js && (rc = plg__check_options(js, json_sub_opts, err)))
		return rc;
	if (csv && (rc = core_opt_bool(csv, "has_header", &header, err)))
		return rc;
	if (f && cols && !core_node_is_null(cols))
		return core_err_at(err, CORE_ECONFIG, cols,
				   "columns is only supported for CSV format");
	if (!f && header && cols && !core_node_is_null(cols))
		return core_err_at(err, CORE_ECONFIG, cols,
				   "columns requires csv_options.has_header: false");
	if (js && (rc = core_opt_str(js, "data_key", false, &dk, err)))
		return rc;
	if (f == 2 && dk)
		return core_err_at(err, CORE_ECONFIG, core_map_get(js, "data_key"),
				   "data_key applies to format json only");
	if (!(j = json_object()))
		return nomem(err);
	json_object_set_new(j, "path", json_string(spool));
	json_object_set_new(j, "on_validation_failure",
			    core_node_to_json(core_map_get(o, "on_validation_failure")));
	if ((n = core_map_get(o, "schema")))
		json_object_set_new(j, "schema", core_node_to_json(n));
	if ((n = core_map_get(o, "field_mapping")) && !core_node_is_null(n))
		json_object_set_new(j, "field_mapping", core_node_to_json(n));
	if (!f) {
		*inner = &plg__csv_source;
		if ((n = core_map_get(csv, "delimiter")))
			json_object_set_new(j, "delimiter", core_node_to_json(n));
		if ((n = core_map_get(csv, "encoding")))
			json_object_set_new(j, "encoding", core_node_to_json(n));
		if (cols && !core_node_is_null(cols)) {
			json_object_set_new(j, "columns", core_node_to_json(cols));
		} else if (!header) {
			/* the schema's declared fields name the columns */
			const core_node *fields = core_map_get(core_map_get(o, "schema"),
							       "fields");
			json_t *names = json_array();

			for (size_t i = 0; fields && fields->kind == CORE_NODE_SEQ &&
					   i < fields->len; i++) {
				const core_node *it = fields->items[i];
				const char *s = it->kind == CORE_NODE_SCALAR ? it->value : NULL;

				if (it->kind == CORE_NODE_MAP && it->len == 1)
					s = it->keys[0]->value;
				if (s) {
					size_t l = strcspn(s, ":");

					while (l && s[l - 1] == ' ')
						l--;
					json_array_append_new(names, json_stringn(s, l));
				}
			}
			if (!json_array_size(names)) {
				json_decref(names);
				json_decref(j);
				return core_err_at(err, CORE_ECONFIG, csv,
						   "headerless CSV requires columns or declared "
						   "schema fields");
			}
			json_object_set_new(j, "columns", names);
		}
	} else {
		*inner = &plg__json_source;
		json_object_set_new(j, "format", json_string(f == 1 ? "json" : "jsonl"));
		if ((n = core_map_get(js, "encoding")))
			json_object_set_new(j, "encoding", core_node_to_json(n));
		if (dk)
			json_object_set_new(j, "data_key", json_string(dk));
	}
	*out = j;
	return 0;
}

/* The inner options as a document of their own (JSON is YAML). */
static int inner_doc(const core_node *o, const char *spool, core_doc **doc,
		     const plg_source_ops **inner, core_err *err)
{
	json_t *j = NULL;
	char *text;
	int rc;

	if ((rc = inner_options(o, spool, &j, inner, err)))
		return rc;
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!text)
		return nomem(err);
	/* the values were expanded once, with the settings: not again */
	rc = core_doc_parse_literal(o->path ? o->path : "aws_s3 options", text, strlen(text),
				    doc, err);
	free(text);
	return rc;
}

static int s3_check(const core_node *options, core_err *err)
{
	const plg_source_ops *inner;
	core_doc *doc = NULL;
	int rc = inner_doc(options, "s3-object", &doc, &inner, err);

	if (!rc)
		rc = inner->check(core_doc_root(doc), err);
	core_doc_free(doc);
	return rc;
}

static void s3_close(void *state)
{
	s3_src *s = state;

	if (!s)
		return;
	if (s->inner_state)
		s->inner->close(s->inner_state);
	core_doc_free(s->doc);
	free(s->bad_resume);
	free(s->where);
	free(s);
}

/* A failed request's error: the status and S3's code, never a secret. */
static int refused(const s3_src *s, const char *what, const plg__s3_result *r,
		   core_err *err)
{
	return core_err_set(err, r->status == 404 || r->status == 403 ? CORE_ECONFIG
								      : CORE_EIO,
			    "aws_s3: %s %s: HTTP %ld%s%s", what, s->where, r->status,
			    r->code[0] ? " " : "", r->code);
}

static int download(s3_src *s, const core_node *o, core_err *err)
{
	const char *bucket = NULL, *key = NULL, *ep = NULL, *region = NULL;
	long long max = MAX_OBJECT_DEFAULT;
	plg__s3_result r;
	plg__s3 c;
	FILE *fp;
	int fd, rc;

	core_opt_str(o, "bucket", true, &bucket, err);
	core_opt_str(o, "key", true, &key, err);
	core_opt_str(o, "endpoint_url", false, &ep, err);
	core_opt_str(o, "region_name", false, &region, err);
	core_opt_int(o, "max_object_bytes", 1, MAX_OBJECT_LIMIT, &max, err);
	if (asprintf(&s->where, "s3://%s/%s", bucket, key) < 0) {
		s->where = NULL;
		return nomem(err);
	}
	if ((rc = plg__s3_init(&c, ep, region, bucket, err)))
		return rc;
	if ((rc = plg__s3_head(&c, key, &r, err)))
		goto out;
	if (r.status / 100 != 2) {
		rc = refused(s, "HEAD", &r, err);
		goto out;
	}
	if (!r.has_length || !r.etag[0] || r.content_encoding[0]) {
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: %s: the object's metadata is not usable "
				  "(it needs a length and an ETag, and no Content-Encoding)",
				  s->where);
		goto out;
	}
	if (r.length > (uint64_t)max) {
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: %s: S3 object size %llu bytes exceeds limit %lld bytes",
				  s->where, (unsigned long long)r.length, max);
		goto out;
	}
	snprintf(s->etag, sizeof(s->etag), "%s", r.etag);
	s->size = r.length;
	snprintf(s->spool, sizeof(s->spool), "%s/elspeth-s3-XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (strlen(s->spool) >= sizeof(s->spool) - 1)
		snprintf(s->spool, sizeof(s->spool), "/tmp/elspeth-s3-XXXXXX");
	fd = mkstemp(s->spool);
	if (fd >= 0)
		unlink(s->spool); /* the descriptor is the only way to it */
	if (fd < 0 || !(fp = fdopen(fd, "w+b"))) {
		rc = core_err_set(err, CORE_EIO, "aws_s3: cannot make a spool file: %s",
				  strerror(errno));
		if (fd >= 0)
			close(fd);
		s->spool[0] = '\0';
		goto out;
	}
	/* the reader opens it by this name; our descriptor stays open
	 * until then (s->spool_fd) */
	if ((s->spool_fd = dup(fd)) < 0) {
		rc = core_err_set(err, CORE_EIO, "aws_s3: spool: %s", strerror(errno));
		fclose(fp);
		goto out;
	}
	snprintf(s->spool, sizeof(s->spool), "/proc/self/fd/%d", s->spool_fd);
	rc = plg__s3_get(&c, key, s->etag, fp, (uint64_t)max, &r, s->sha, err);
	if (!rc && r.status / 100 != 2)
		rc = refused(s, "GET", &r, err);
	if (!rc && r.length != s->size)
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: %s: %llu bytes received where HEAD announced %llu",
				  s->where, (unsigned long long)r.length,
				  (unsigned long long)s->size);
	if (fclose(fp) && !rc)
		rc = core_err_set(err, CORE_EIO, "aws_s3: spool: %s", strerror(errno));
out:
	plg__s3_free(&c);
	return rc;
}

static int s3_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	s3_src *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return nomem(err);
	s->spool_fd = -1;
	s->max_chars = 1000000;
	if (!(rc = s3_check(options, err))) {
		const core_node *f = core_map_get(options, "format");

		core_opt_int(options, "max_record_chars", 1, 8000000, &s->max_chars, err);
		s->csv = !f || core_node_is_null(f) || !strcmp(f->value, "csv");
	}
	if (rc || (rc = download(s, options, err)) ||
	    (rc = inner_doc(options, s->spool, &s->doc, &s->inner, err)) ||
	    (rc = s->inner->open(env, core_doc_root(s->doc), &s->inner_state, err)))
		s->inner_state = NULL;
	/* the inner source holds the file open (or failed to) */
	if (s->spool_fd >= 0)
		close(s->spool_fd);
	s->spool_fd = -1;
	if (rc) {
		if (s->where && !strstr(err->msg, "aws_s3"))
			core_err_prefix(err, "aws_s3 %s", s->where);
		s3_close(s);
		return rc;
	}
	*state = s;
	return 0;
}

/* The record's length in characters as read: a CSV record's fields and
 * delimiters, a JSON record's compact text. */
static size_t record_chars(const s3_src *s, const json_t *row)
{
	const char *k;
	json_t *v;
	size_t n = 0, fields = 0;

	if (!s->csv) {
		char *t = json_dumps(row, JSON_COMPACT);
		const unsigned char *p;

		if (!t)
			return 0;
		for (p = (const unsigned char *)t; *p; p++)
			n += (*p & 0xc0) != 0x80;
		free(t);
		return n;
	}
	json_object_foreach((json_t *)row, k, v) {
		const unsigned char *p = (const unsigned char *)json_string_value(v);

		for (; p && *p; p++)
			n += (*p & 0xc0) != 0x80;
		fields++;
	}
	return n + (fields ? fields - 1 : 0);
}

static int s3_next(void *state, plg_source_row *out, core_err *err)
{
	s3_src *s = state;
	char num[24];
	int rc;

	if (s->bad_resume)
		return core_err_set(err, CORE_EDATA, "%s", s->bad_resume);
	if (s->over)
		return 0;
	rc = s->inner->next(s->inner_state, out, err);
	if (rc != 1)
		return rc;
	s->records++;
	if (record_chars(s, out->row) <= (size_t)s->max_chars)
		return 1;
	/* as 0.7.1: the record is quarantined by its number, and the rows
	 * end (the reader cannot know where the next one starts) */
	json_decref(out->row);
	free(out->error);
	free(out->reason);
	out->reason = NULL;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)s->records);
	out->row = json_pack("{s:s}", s->csv ? "__row_number__" : "__line_number__", num);
	out->error = strdup(s->csv ? "CSV record exceeds configured character limit"
				   : "JSON record exceeds configured character limit");
	s->over = true;
	return out->row && out->error ? 1 : nomem(err);
}

static void s3_progress(void *state, uint64_t *done, uint64_t *total)
{
	s3_src *s = state;

	if (s->inner->progress)
		s->inner->progress(s->inner_state, done, total);
}

static void s3_position(void *state, plg_source_pos *out)
{
	s3_src *s = state;

	s->inner->position(s->inner_state, out);
	out->bytes = false; /* not in a file input() names */
	out->index = s->records; /* the engine's chain sets the same */
}

static int s3_seek(void *state, const plg_source_pos *at, core_err *err)
{
	s3_src *s = state;

	if (s->bad_resume)
		return core_err_set(err, CORE_EDATA, "%s", s->bad_resume);
	s->records = at->index; /* a record's number goes on from there */
	return s->inner->seek(s->inner_state, at, err);
}

static int s3_skip(void *state, core_err *err)
{
	s3_src *s = state;

	return s->inner->skip(s->inner_state, err);
}

static json_t *s3_fields(void *state, const char **version)
{
	s3_src *s = state;

	return s->inner->fields ? s->inner->fields(s->inner_state, version) : NULL;
}

/* {"object": {etag, size, sha256}, "inner": what the reader saved} */
static json_t *s3_save(void *state)
{
	s3_src *s = state;
	json_t *j = json_pack("{s:{s:s,s:I,s:s}}", "object", "etag", s->etag, "size",
			      (json_int_t)s->size, "sha256", s->sha);

	if (j && s->inner->save)
		json_object_set_new(j, "inner", s->inner->save(s->inner_state));
	return j;
}

static void s3_restore(void *state, const json_t *saved)
{
	s3_src *s = state;
	const char *sha = json_string_value(json_object_get(json_object_get(saved, "object"),
							    "sha256"));
	const json_t *inner = json_object_get(saved, "inner");

	if (sha && strcmp(sha, s->sha) &&
	    asprintf(&s->bad_resume,
		     "aws_s3: %s changed since the run read it (SHA-256 %.12s... then, "
		     "%.12s... now): a resume must read the same bytes",
		     s->where, sha, s->sha) < 0)
		s->bad_resume = NULL;
	if (inner && s->inner->restore)
		s->inner->restore(s->inner_state, inner);
}

const plg_source_ops plg__aws_s3_source = {
	.name = "aws_s3",
	.description = "one Amazon S3 (or S3-compatible) object read as CSV, JSON or "
		       "JSON Lines (ELSPETH 0.7.1)",
	.options = s3_opts,
	.open = s3_open,
	.next = s3_next,
	.close = s3_close,
	.check = s3_check,
	.progress = s3_progress,
	.position = s3_position,
	.seek = s3_seek,
	.skip = s3_skip,
	.fields = s3_fields,
	.save = s3_save,
	.restore = s3_restore,
};

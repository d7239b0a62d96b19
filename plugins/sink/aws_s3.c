/*
 * aws_s3.c — ELSPETH 0.7.1's "aws_s3" sink: the run's rows as one S3
 * object, CSV, JSON or JSON Lines (docs/adr/0051-aws-s3.md).
 *
 * An object cannot be appended to, so the rows go first to a staging
 * file of the run's own (JSON Lines, one compact row a line, under the
 * payload store's parent: .elspeth/s3-staging/RUNKEY-HASH.jsonl), which
 * is a file sink's file in every way: checkpointed by position and hash,
 * cut back and continued by a resume. close() renders the object from
 * it, as 0.7.1's serializer writes it (CSV through Python's csv.writer
 * with "\r\n" line ends and its minimal quoting, the header the schema's
 * fields — declared, then the rest in order of appearance when flexible
 * — or every row's keys in order of appearance; JSON one compact array;
 * JSON Lines compact objects, both with ensure_ascii off and floats as
 * Python's repr) and PUTs it whole: with overwrite: false only if no
 * object has the key (If-None-Match: *). That happens only when the run
 * completes (publish): a failed or interrupted run leaves the object
 * alone and keeps its staging file for the resume, and the staging file
 * goes once the completed run's record is committed (finished). A run
 * killed before, during or after the upload uploads the same bytes when
 * it is resumed.
 *
 * The key is a template rendered once per run: literal text and
 * {{ run_id }} (the run's key, the same for every resume) and
 * {{ timestamp }} (the run's start, ISO 8601 in UTC, as Python's
 * datetime.isoformat writes it).
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "plugins/aws/s3.h"
#include "plugins/plugins_internal.h"

#define MAX_OBJECT_LIMIT (1LL << 30)

enum { FMT_CSV, FMT_JSON, FMT_JSONL };

typedef struct s3_sink {
	plg__outfile out;
	plg_schema *schema;
	const core_node *opts;
	int fmt;
	char delim;
	bool header;
	bool overwrite;
	bool resumed;             /* opened by resume() */
	bool ephemeral;           /* no Landscape: nothing resumes, close cleans up */
	const core_node *headers; /* a mapping (custom headers), or NULL */
	json_t *orig;             /* headers: original: {field: source name}; NULL */
	long long max_bytes, max_chars;
	uint64_t rows;
	char *key;                /* rendered */
	char *staging;
	core_buf buf;
} s3_sink;

static const plg_option csvw_sub[] = {
	{ "delimiter", "string", false, "\",\"", "one character between fields" },
	{ "encoding", "string", false, "\"utf-8\"", "utf-8 only" },
	{ "include_header", "boolean", false, "true", "write the header record" },
	{ NULL }
};
static const plg_option *const csvw_sub_opts[] = { csvw_sub, NULL };

static const plg_option s3k_own[] = {
	{ "bucket", "string", true, NULL, "the S3 bucket" },
	{ "key", "string", true, NULL,
	  "the object's key: literal text, {{ run_id }} and {{ timestamp }}" },
	{ "format", "string", false, "\"csv\"", "csv, json or jsonl" },
	{ "overwrite", "boolean", false, "true",
	  "false: the upload fails when an object has the key" },
	{ "csv_options", "object", false, NULL, "delimiter, encoding, include_header" },
	{ "headers", "string|object", false, "\"normalized\"",
	  "the CSV header: normalized (the field names), original (the source's "
	  "names) or a map field -> header (every field)" },
	{ "max_object_bytes", "integer", false, "268435456",
	  "the largest object written (at most 1 GiB)" },
	{ "max_record_chars", "integer", false, "1000000",
	  "the longest record, in characters" },
	{ NULL }
};
static const plg_option *const s3k_opts[] = { s3k_own, plg__s3_opts, plg__schema_opts,
						    NULL };

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "aws_s3: out of memory");
}

/* ------------------------------------------------------------ the key */

/* The template's pieces: literal text and the two variables, nothing
 * else (0.7.1 refuses any other Jinja construct). With run_key NULL it
 * is only checked. */
static int render_key(const core_node *n, const char *run_key, long long started_ns,
		      char **out, core_err *err)
{
	const char *t = n->value, *p = t;
	core_buf b = { 0 };
	char ts[64];
	int rc = 0;

	if (!t[strspn(t, " \t")] || strlen(t) > 4096)
		return core_err_at(err, CORE_ECONFIG, n,
				   "key template must be nonblank and at most 4096 UTF-8 bytes");
	for (const char *q = t; *q; q++)
		if ((unsigned char)*q < 0x20 || *q == 0x7f)
			return core_err_at(err, CORE_ECONFIG, n,
					   "key template must not contain control characters");
	if (!started_ns) { /* a run without a Landscape: now */
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		started_ns = (long long)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	{
		time_t s = (time_t)(started_ns / 1000000000);
		long us = (long)(started_ns % 1000000000 / 1000);
		struct tm tm;

		gmtime_r(&s, &tm);
		strftime(ts, 32, "%Y-%m-%dT%H:%M:%S", &tm);
		if (us)
			snprintf(ts + strlen(ts), 16, ".%06ld", us);
		strcat(ts, "+00:00");
	}
	while (!rc && *p) {
		const char *o = strpbrk(p, "{");

		if (!o) {
			rc = core_buf_puts(&b, p);
			break;
		}
		if (o[1] != '{' && o[1] != '%' && o[1] != '#') {
			rc = core_buf_append(&b, p, (size_t)(o - p + 1));
			p = o + 1;
			continue;
		}
		rc = core_buf_append(&b, p, (size_t)(o - p));
		if (o[1] == '{') {
			const char *e = strstr(o + 2, "}}"), *v = o + 2;
			size_t len;

			if (!e)
				goto bad;
			while (*v == ' ')
				v++;
			len = (size_t)(e - v);
			while (len && v[len - 1] == ' ')
				len--;
			if (len == 6 && !strncmp(v, "run_id", 6))
				rc = core_buf_puts(&b, run_key ? run_key : "run");
			else if (len == 9 && !strncmp(v, "timestamp", 9))
				rc = core_buf_puts(&b, ts);
			else
				goto bad;
			p = e + 2;
		} else {
			goto bad;
		}
	}
	if (rc || core_buf_putc(&b, '\0')) {
		core_buf_release(&b);
		return nomem(err);
	}
	if (!b.data[strspn(b.data, " \t")] || strlen(b.data) > 1024) {
		core_buf_release(&b);
		return core_err_at(err, CORE_ECONFIG, n,
				   "rendered key must be nonblank and at most 1024 UTF-8 bytes");
	}
	*out = b.data;
	return 0;
bad:
	core_buf_release(&b);
	return core_err_at(err, CORE_ECONFIG, n,
			   "key template may contain only literal text and approved "
			   "variables ({{ run_id }}, {{ timestamp }})");
}

/* ------------------------------------------------------------ options */

static int parse_options(void *state, const core_node *o, const char **path,
			 bool *append, core_err *err)
{
	static const char *const formats[] = { "csv", "json", "jsonl", NULL };
	s3_sink *s = state;
	const core_node *csv = core_map_get(o, "csv_options");
	const core_node *fmt = core_map_get(o, "format");
	const core_node *hd = core_map_get(o, "headers");
	const core_node *ep = core_map_get(o, "endpoint_url"), *rn;
	const char *v, *why;
	char *k = NULL;
	int rc;

	s->opts = o;
	s->delim = ',';
	s->header = true;
	s->overwrite = true;
	s->max_bytes = 256LL << 20;
	s->max_chars = 1000000;
	*path = "";
	*append = false;
	if ((rc = plg__check_options(o, s3k_opts, err)) ||
	    (rc = core_opt_str(o, "bucket", true, &v, err)))
		return rc;
	if ((why = plg__s3_bad_bucket(v)))
		return core_err_at(err, CORE_ECONFIG, core_map_get(o, "bucket"), "%s", why);
	if ((rn = core_map_get(o, "region_name")) && !core_node_is_null(rn)) {
		if ((rc = core_node_str(rn, &v, err)))
			return rc;
		if ((why = plg__s3_bad_region(v)))
			return core_err_at(err, CORE_ECONFIG, rn, "%s", why);
	}
	if ((rc = core_opt_str(o, "key", true, &v, err)) ||
	    (rc = render_key(core_map_get(o, "key"), NULL, 0, &k, err)))
		return rc;
	free(k);
	if (fmt && !core_node_is_null(fmt) && (rc = core_node_enum(fmt, formats, &s->fmt, err)))
		return rc;
	if ((rc = core_opt_bool(o, "overwrite", &s->overwrite, err)) ||
	    (rc = core_opt_int(o, "max_object_bytes", 1, MAX_OBJECT_LIMIT, &s->max_bytes,
			       err)) ||
	    (rc = core_opt_int(o, "max_record_chars", 1, 8000000, &s->max_chars, err)))
		return rc;
	if (ep && !core_node_is_null(ep)) {
		if ((rc = core_node_str(ep, &v, err)))
			return rc;
		if ((why = plg__s3_bad_endpoint(v)))
			return core_err_at(err, CORE_ECONFIG, ep, "%s", why);
	}
	if (csv) {
		const core_node *d = core_map_get(csv, "delimiter");

		if (s->fmt != FMT_CSV)
			return core_err_at(err, CORE_ECONFIG, csv,
					   "csv_options is only supported for CSV format");
		if ((rc = plg__check_options(csv, csvw_sub_opts, err)) ||
		    (rc = plg__opt_encoding(csv, PLG__ENC_WRITE, err)) ||
		    (rc = core_opt_bool(csv, "include_header", &s->header, err)))
			return rc;
		if (d) {
			if ((rc = core_node_str(d, &v, err)))
				return rc;
			if (strlen(v) != 1 || *v == '"' || *v == '\r' || *v == '\n')
				return core_err_at(err, CORE_ECONFIG, d,
						   "delimiter must be a single character");
			s->delim = *v;
		}
	}
	if (hd && !core_node_is_null(hd)) {
		if (hd->kind == CORE_NODE_MAP) {
			for (size_t i = 0; i < hd->len; i++)
				if (hd->items[i]->kind != CORE_NODE_SCALAR)
					return core_err_at(err, CORE_ECONFIG, hd->items[i],
							   "a header must be a string");
			s->headers = hd;
		} else if ((rc = plg__headers_check(o, err))) {
			return rc;
		}
	}
	return plg__schema_parse(core_map_get(o, "schema"), &s->schema, err);
}

static int s3k_close_state(void *state, core_err *err)
{
	s3_sink *s = state;

	(void)err;
	if (!s)
		return 0;
	plg__outfile_close(&s->out, NULL);
	plg__schema_free(s->schema);
	json_decref(s->orig);
	core_buf_release(&s->buf);
	free(s->key);
	free(s->staging);
	free(s);
	return 0;
}

static int s3k_check(const core_node *options, core_err *err)
{
	return plg__sink_check(options, sizeof(s3_sink), parse_options, s3k_close_state,
			       err);
}

/* The staging file of this sink in this run; malloc'd. */
static char *staging_path(const plg_env *env, const core_node *o)
{
	const char *rk = plg_env_run_key(env);
	const char *pd = env && env->payload_dir ? env->payload_dir : NULL;
	char *dir = NULL, *path = NULL, hex[CORE_SHA256_HEX_LEN + 1];
	json_t *j = core_node_to_json(o);
	core_err e = { 0 };

	if (!j || core_hash_json(j, hex, &e)) {
		json_decref(j);
		return NULL;
	}
	json_decref(j);
	if (pd && rk) {
		const char *slash = strrchr(pd, '/');

		dir = slash ? strndup(pd, (size_t)(slash - pd)) : strdup(".");
	} else {
		dir = strdup(getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	}
	if (dir && rk) {
		if (asprintf(&path, "%s/s3-staging/%s-%.16s.jsonl", dir, rk, hex) < 0)
			path = NULL;
	} else if (dir) {
		/* no run to resume: a private directory of its own */
		char *tmp = NULL;

		if (asprintf(&tmp, "%s/elspeth-s3-XXXXXX", dir) >= 0 && mkdtemp(tmp) &&
		    asprintf(&path, "%s/%.16s.jsonl", tmp, hex) < 0)
			path = NULL;
		free(tmp);
	}
	free(dir);
	return path;
}

static long long run_started_ns(const char *rk)
{
	const char *d = rk ? strrchr(rk, '-') : NULL;

	return d ? strtoll(d + 1, NULL, 10) : 0;
}

static int s3k_start(const plg_env *env, const core_node *options,
		     const plg_sink_pos *at, void **state, core_err *err)
{
	s3_sink *s = calloc(1, sizeof(*s));
	const char *path;
	bool append;
	int rc;

	if (!s)
		return nomem(err);
	s->out.fd = -1;
	if ((rc = parse_options(s, options, &path, &append, err)) ||
	    (rc = render_key(core_map_get(options, "key"), plg_env_run_key(env),
			     run_started_ns(plg_env_run_key(env)), &s->key, err)))
		goto fail;
	if (!s->headers) { /* original: the sources' names (none in 0.7.1's format) */
		bool strict;

		s->orig = plg__display_names(env, options, &strict);
	}
	if (!(s->staging = staging_path(env, options))) {
		rc = nomem(err);
		goto fail;
	}
	/* the staging file is the run's own: a new run starts it empty */
	rc = at ? plg__outfile_resume(&s->out, NULL, s->staging, at, err)
		: plg__outfile_open(&s->out, NULL, s->staging, false, err);
	if (rc)
		goto fail;
	s->rows = at ? at->rows : 0;
	s->resumed = at != NULL;
	s->ephemeral = !plg_env_run_key(env);
	*state = s;
	return 0;
fail:
	s3k_close_state(s, NULL);
	return rc;
}

static int s3k_open(const plg_env *env, const core_node *options, void **state,
		    core_err *err)
{
	return s3k_start(env, options, NULL, state, err);
}

static int s3k_resume(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, void **state, core_err *err)
{
	return s3k_start(env, options, at, state, err);
}

/* ------------------------------------------------------------ writing */

/* A value as 0.7.1's CSV writes it: None empty, str as it is, bool,
 * int and float as Python's str(); anything else cannot be written. */
static int csv_text(core_buf *b, const json_t *v)
{
	if (json_is_null(v) || !v)
		return 0;
	if (json_is_object(v) || json_is_array(v))
		return CORE_EDATA;
	return core_py_str(b, v);
}

/* json.dumps(v, ensure_ascii=False, separators=(",", ":")). */
static int py_json(core_buf *b, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	int rc = 0;
	char num[48];

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rc = core_buf_putc(b, '{');
		i = 0;
		json_object_foreach((json_t *)v, k, x) {
			if (!rc && i++)
				rc = core_buf_putc(b, ',');
			if (!rc) {
				json_t *ks = json_string(k);

				rc = ks ? core_json_append(b, ks, -1, 0) : CORE_ENOMEM;
				json_decref(ks);
			}
			if (!rc)
				rc = core_buf_putc(b, ':');
			if (!rc)
				rc = py_json(b, x);
		}
		return rc ? rc : core_buf_putc(b, '}');
	case JSON_ARRAY:
		rc = core_buf_putc(b, '[');
		for (i = 0; !rc && i < json_array_size(v); i++) {
			if (i)
				rc = core_buf_putc(b, ',');
			if (!rc)
				rc = py_json(b, json_array_get(v, i));
		}
		return rc ? rc : core_buf_putc(b, ']');
	case JSON_REAL:
		if (core_format_double_py(json_real_value(v), num, sizeof(num)) < 0 ||
		    !strcmp(num, "nan") || strstr(num, "inf"))
			return CORE_EDATA;
		return core_buf_puts(b, num);
	default:
		return core_json_append(b, v, -1, 0);
	}
}

/* One CSV value's characters as 0.7.1 counts them: quoted ones with
 * their quotes and doubled quotes. */
static size_t csv_value_chars(const char *v, size_t len, char delim)
{
	size_t chars = 0, quotes = 0;
	bool q = false;

	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)v[k];

		chars += (c & 0xc0) != 0x80;
		quotes += c == '"';
		q |= c == (unsigned char)delim || c == '"' || c == '\r' || c == '\n';
	}
	return q ? chars + quotes + 2 : chars;
}

/* The characters 0.7.1 counts for a CSV record: the delimiters, two,
 * and each value. */
static size_t csv_record_chars(const char *const *v, const size_t *len, size_t n,
			       char delim)
{
	size_t total = (n ? n - 1 : 0) + 2;

	for (size_t i = 0; i < n; i++)
		total += csv_value_chars(v[i], len[i], delim);
	return total;
}

/* A row goes to the staging file as one compact JSON line (floats as
 * Python's repr, so the object's bytes come out of it exactly), after
 * the checks that can be made on the row alone: a fixed schema's extra
 * fields and CSV values that are no scalars cannot be written, and a
 * record past max_record_chars is refused (a row error each, routed by
 * the sink's on_write_failure, instead of 0.7.1's failure of the whole
 * upload). A CSV record is counted here with the row's own fields; the
 * header's, and fields other rows add, are counted when it is
 * rendered. */
static int s3k_write(void *state, const json_t *row, plg_write_info *info,
		     core_err *err)
{
	s3_sink *s = state;
	const char *k;
	json_t *v;
	size_t chars = 0;
	int rc;

	core_buf_reset(&s->buf);
	if (s->schema && s->schema->mode == PLG_SCHEMA_FIXED) {
		json_object_foreach((json_t *)row, k, v) {
			size_t i;

			for (i = 0; i < s->schema->nfields; i++)
				if (!strcmp(s->schema->fields[i].name, k))
					break;
			if (i == s->schema->nfields)
				return core_err_set(err, CORE_EDATA,
						    "S3 record field '%s' is not in the sink's "
						    "fixed schema", k);
		}
	}
	if ((rc = py_json(&s->buf, row)))
		return rc == CORE_EDATA
			? core_err_set(err, CORE_EDATA, "S3 record cannot be serialized "
				       "(a non-finite number)")
			: nomem(err);
	if (s->fmt == FMT_CSV) {
		size_t n = json_object_size(row);
		core_buf t = { 0 };

		chars = (n ? n - 1 : 0) + 2;
		json_object_foreach((json_t *)row, k, v) {
			core_buf_reset(&t);
			if ((rc = csv_text(&t, v)))
				break;
			chars += csv_value_chars(t.data ? t.data : "", t.len, s->delim);
		}
		core_buf_release(&t);
		if (rc == CORE_EDATA)
			return core_err_set(err, CORE_EDATA, "S3 record field '%s' cannot be "
					    "written as CSV (a %s)", k, core_py_type(v));
		if (rc)
			return nomem(err);
	} else {
		for (size_t i = 0; i < s->buf.len; i++)
			chars += ((unsigned char)s->buf.data[i] & 0xc0) != 0x80;
	}
	if (chars > (size_t)s->max_chars)
		return core_err_set(err, CORE_EDATA,
				    "S3 record exceeds configured character limit (%zu > %lld)",
				    chars, s->max_chars);
	if (core_buf_putc(&s->buf, '\n'))
		return nomem(err);
	info->offset = s->out.pos;
	info->len = s->buf.len;
	info->bytes = s->buf.data;
	if (!(rc = plg__outfile_write(&s->out, s->buf.data, s->buf.len, err)))
		s->rows++;
	return rc;
}

static int s3k_flush(void *state, core_err *err)
{
	s3_sink *s = state;

	return plg__outfile_flush(&s->out, err);
}

static void s3k_position(void *state, plg_sink_pos *out)
{
	s3_sink *s = state;

	plg__outfile_position(&s->out, out);
	out->rows = s->rows;
}

/* ------------------------------------------------------ the object */

/* Python csv.writer's minimal quoting: a field holding the delimiter,
 * '"', CR or LF is quoted, quotes doubled; a lone empty field is "". */
static int csv_field(core_buf *b, const char *v, size_t n, char delim, bool alone)
{
	bool q = (alone && !n) || memchr(v, delim, n) || memchr(v, '"', n) ||
		 memchr(v, '\r', n) || memchr(v, '\n', n);
	int rc = 0;

	if (!q)
		return core_buf_append(b, v, n);
	rc = core_buf_putc(b, '"');
	for (size_t i = 0; !rc && i < n; i++)
		rc = v[i] == '"' ? core_buf_puts(b, "\"\"") : core_buf_putc(b, v[i]);
	return rc ? rc : core_buf_putc(b, '"');
}

typedef struct render {
	FILE *in, *out;
	uint64_t bytes;
	uint64_t rows;     /* rendered */
	long long max;
	core_buf line, rec;
} render;

static int emit(render *r, const core_buf *b, core_err *err)
{
	if ((long long)(r->bytes + b->len) > r->max)
		return core_err_set(err, CORE_EDATA,
				    "aws_s3: the object would exceed max_object_bytes (%lld)",
				    r->max);
	if (fwrite(b->data, 1, b->len, r->out) != b->len)
		return core_err_set(err, CORE_EIO, "aws_s3: writing the object: %s",
				    strerror(errno));
	r->bytes += b->len;
	return 0;
}

/* The next staged row, or NULL at the end (*rc set on an error). */
static json_t *next_row(render *r, int *rc, core_err *err)
{
	json_error_t je;
	json_t *row;
	int c;

	core_buf_reset(&r->line);
	while ((c = getc(r->in)) != EOF && c != '\n')
		if (core_buf_putc(&r->line, (char)c)) {
			*rc = nomem(err);
			return NULL;
		}
	if (ferror(r->in)) {
		*rc = core_err_set(err, CORE_EIO, "aws_s3: reading the staging file: %s",
				   strerror(errno));
		return NULL;
	}
	if (!r->line.len)
		return NULL;
	row = json_loadb(r->line.data, r->line.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!row)
		*rc = core_err_set(err, CORE_EDATA, "aws_s3: staging file: %s", je.text);
	return row;
}

/* The CSV header's fields: the schema's declared ones (flexible: then
 * the others as they appear), or every row's keys as they appear. */
static int csv_fields(s3_sink *s, render *r, json_t *names, core_err *err)
{
	json_t *seen = json_object(), *row;
	int rc = 0;

	if (!seen)
		return nomem(err);
	for (size_t i = 0; s->schema && i < s->schema->nfields; i++) {
		json_array_append_new(names, json_string(s->schema->fields[i].name));
		json_object_set_new(seen, s->schema->fields[i].name, json_true());
	}
	if (!s->schema || s->schema->mode != PLG_SCHEMA_FIXED || !s->schema->nfields) {
		while ((row = next_row(r, &rc, err))) {
			const char *k;
			json_t *v;

			json_object_foreach(row, k, v)
				if (!json_object_get(seen, k)) {
					json_object_set_new(seen, k, json_true());
					json_array_append_new(names, json_string(k));
				}
			json_decref(row);
		}
		rewind(r->in);
	}
	json_decref(seen);
	return rc;
}

static int render_csv(s3_sink *s, render *r, core_err *err)
{
	json_t *names = json_array(), *row;
	size_t n;
	int rc;

	if (!names)
		return nomem(err);
	if ((rc = csv_fields(s, r, names, err)))
		goto out;
	n = json_array_size(names);
	if (s->header) {
		const char **hv = calloc(n ? n : 1, sizeof(*hv));
		size_t *hl = calloc(n ? n : 1, sizeof(*hl));

		for (size_t i = 0; hv && hl && i < n; i++) {
			const char *f = json_string_value(json_array_get(names, i));
			const core_node *h = s->headers ? core_map_get(s->headers, f) : NULL;

			hv[i] = h ? h->value : plg__display_name(s->orig, f);
			hl[i] = strlen(hv[i]);
		}
		if (!hv || !hl)
			rc = nomem(err);
		else if (csv_record_chars(hv, hl, n, s->delim) > (size_t)s->max_chars)
			rc = core_err_set(err, CORE_EDATA, "aws_s3: the CSV header exceeds "
					  "the configured character limit");
		free(hv);
		free(hl);
		core_buf_reset(&r->rec);
		if (!rc && !n && core_buf_puts(&r->rec, "\r\n"))
			rc = nomem(err);
		for (size_t i = 0; !rc && i < n; i++) {
			const char *f = json_string_value(json_array_get(names, i));
			const core_node *h = s->headers ? core_map_get(s->headers, f) : NULL;

			if (s->headers && !h) {
				rc = core_err_set(err, CORE_ECONFIG,
						  "aws_s3: headers must map every S3 output field "
						  "('%s' is not mapped)", f);
				break;
			}
			f = h ? h->value : plg__display_name(s->orig, f);
			if ((i && core_buf_putc(&r->rec, s->delim)) ||
			    csv_field(&r->rec, f, strlen(f), s->delim, n == 1) ||
			    (i == n - 1 && core_buf_puts(&r->rec, "\r\n")))
				rc = nomem(err);
		}
		if (!rc)
			rc = emit(r, &r->rec, err);
	}
	while (!rc && (row = next_row(r, &rc, err))) {
		r->rows++;
		core_buf_reset(&r->rec);
		for (size_t i = 0; !rc && i < n; i++) {
			json_t *v = json_object_get(row, json_string_value(json_array_get(names, i)));
			core_buf t = { 0 };

			if (csv_text(&t, v) || (i && core_buf_putc(&r->rec, s->delim)) ||
			    csv_field(&r->rec, t.data ? t.data : "", t.len, s->delim, n == 1))
				rc = nomem(err);
			core_buf_release(&t);
		}
		if (!rc && (rc = core_buf_puts(&r->rec, "\r\n")))
			rc = nomem(err);
		if (!rc)
			rc = emit(r, &r->rec, err);
		json_decref(row);
	}
out:
	json_decref(names);
	return rc;
}

static int render_json(s3_sink *s, render *r, core_err *err)
{
	json_t *row;
	bool first = true;
	int rc = 0;

	while (!rc && (row = next_row(r, &rc, err))) {
		r->rows++;
		core_buf_reset(&r->rec);
		if (s->fmt == FMT_JSON && core_buf_puts(&r->rec, first ? "[" : ","))
			rc = nomem(err);
		if (!rc && (rc = py_json(&r->rec, row)))
			rc = core_err_set(err, rc, "aws_s3: a row cannot be serialized");
		if (!rc && s->fmt == FMT_JSONL && core_buf_putc(&r->rec, '\n'))
			rc = nomem(err);
		if (!rc)
			rc = emit(r, &r->rec, err);
		first = false;
		json_decref(row);
	}
	if (!rc && s->fmt == FMT_JSON) {
		core_buf_reset(&r->rec);
		if (core_buf_puts(&r->rec, first ? "[]" : "]"))
			return nomem(err);
		rc = emit(r, &r->rec, err);
	}
	return rc;
}

/* Whether the object at key is the file's bytes: its ETag is the MD5
 * of what a single PUT stored (S3's and radosgw's rule). */
static bool holds_file(plg__s3 *c, const char *key, const char *path)
{
	plg__s3_result res;
	core_err e = { 0 };
	unsigned char buf[65536], d[16];
	char hex[40], *q;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned int n = 16;
	FILE *fp = fopen(path, "rb");
	size_t got;
	bool same = false;

	if (md && fp && EVP_DigestInit_ex(md, EVP_md5(), NULL)) {
		while ((got = fread(buf, 1, sizeof(buf), fp)) > 0)
			EVP_DigestUpdate(md, buf, got);
		EVP_DigestFinal_ex(md, d, &n);
		core_hex(d, 16, hex);
		if (!plg__s3_head(c, key, &res, &e) && res.status == 200) {
			q = res.etag[0] == '"' ? res.etag + 1 : res.etag;
			same = !strncmp(q, hex, 32) && (q[32] == '"' || !q[32]);
		}
	}
	if (fp)
		fclose(fp);
	EVP_MD_CTX_free(md);
	return same;
}

/* Renders the object from the staging file into path.object, uploads it
 * and removes both: the run's end. A resumed run that finds, with
 * overwrite: false, the very bytes it would write already there (the
 * run before it was killed after its upload) takes them as its own. */
static int upload(s3_sink *s, core_err *err)
{
	static const char *const types[] = { "text/csv", "application/json",
					     "application/x-ndjson" };
	const char *bucket = NULL, *ep = NULL, *region = NULL;
	render r = { .max = s->max_bytes };
	plg__s3_result res;
	char *obj = NULL;
	plg__s3 c;
	int rc;

	if (asprintf(&obj, "%s.object", s->staging) < 0)
		return nomem(err);
	r.in = fopen(s->staging, "rb");
	r.out = fopen(obj, "wb");
	if (!r.in || !r.out) {
		rc = core_err_set(err, CORE_EIO, "aws_s3: cannot render the object: %s",
				  strerror(errno));
		goto out;
	}
	rc = s->fmt == FMT_CSV ? render_csv(s, &r, err) : render_json(s, &r, err);
	if (!rc && r.rows != s->rows)
		rc = core_err_set(err, CORE_EDATA, "aws_s3: the staging file %s holds %llu "
				  "rows where %llu were written", s->staging,
				  (unsigned long long)r.rows, (unsigned long long)s->rows);
	if (fclose(r.out) && !rc)
		rc = core_err_set(err, CORE_EIO, "aws_s3: writing the object: %s",
				  strerror(errno));
	r.out = NULL;
	if (rc)
		goto out;
	core_opt_str(s->opts, "bucket", true, &bucket, err);
	core_opt_str(s->opts, "endpoint_url", false, &ep, err);
	core_opt_str(s->opts, "region_name", false, &region, err);
	if ((rc = plg__s3_init(&c, ep, region, bucket, err)))
		goto out;
	c.timeout_s = 300;
	rc = plg__s3_put(&c, s->key, obj, types[s->fmt], !s->overwrite, &res, err);
	if (!rc && res.status == 412 && s->resumed && holds_file(&c, s->key, obj))
		res.status = 200;
	if (!rc && res.status == 412)
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: s3://%s/%s exists and overwrite is false",
				  bucket, s->key);
	else if (!rc && res.status / 100 != 2)
		rc = core_err_set(err, CORE_EIO, "aws_s3: PUT s3://%s/%s: HTTP %ld%s%s",
				  bucket, s->key, res.status, res.code[0] ? " " : "",
				  res.code);
	plg__s3_free(&c);
out:
	if (r.in)
		fclose(r.in);
	if (r.out)
		fclose(r.out);
	unlink(obj);
	free(obj);
	core_buf_release(&r.line);
	core_buf_release(&r.rec);
	return rc;
}

/* The run completed: the object is rendered and uploaded. The staging
 * file stays until the run's record is committed (s3k_finished): a
 * crash before that resumes, and uploads the same bytes again. */
static int s3k_publish(void *state, core_err *err)
{
	s3_sink *s = state;
	int rc = plg__outfile_flush(&s->out, err);

	return rc ? rc : upload(s, err);
}

/* Any run's end: the staging file is closed, and kept (a run that did
 * not complete is finished by a resume; one that did, by finished) —
 * but for a run without a Landscape, which nothing can resume. */
static int s3k_close(void *state, core_err *err)
{
	s3_sink *s = state;
	int rc;

	if (!s)
		return 0;
	rc = plg__outfile_close(&s->out, err);
	if (s->ephemeral && s->staging) { /* its private directory too */
		char *slash = strrchr(s->staging, '/');

		unlink(s->staging);
		if (slash) {
			*slash = '\0';
			rmdir(s->staging);
		}
	}
	s3k_close_state(s, NULL);
	return rc;
}

static void s3k_finished(const plg_env *env, const core_node *options)
{
	char *path = staging_path(env, options);

	if (path)
		unlink(path);
	free(path);
}

/* The file the run writes is the staging file; a resume checks it.
 * target() hands out strings that must outlive the call: each path is
 * kept once, for the life of the process (a few per run). Outside a
 * run (env without a run key) there is no file. */
typedef struct kept_path {
	struct kept_path *next;
	char path[];
} kept_path;

static const char *s3k_target(const plg_env *env, const core_node *options)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static kept_path *kept;
	char *p;
	kept_path *k;

	if (!plg_env_run_key(env) || !(p = staging_path(env, options)))
		return NULL;
	pthread_mutex_lock(&lock);
	for (k = kept; k && strcmp(k->path, p); k = k->next)
		;
	if (!k && (k = malloc(sizeof(*k) + strlen(p) + 1))) {
		strcpy(k->path, p);
		k->next = kept;
		kept = k;
	}
	pthread_mutex_unlock(&lock);
	free(p);
	return k ? k->path : NULL;
}

static int s3k_verify(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, core_err *err)
{
	char *path = staging_path(env, options);
	char hex[CORE_SHA256_HEX_LEN + 1];
	uint64_t got;
	int rc;

	if (!path)
		return nomem(err);
	if (access(path, F_OK) && !at->pos) {
		free(path);
		return 0;
	}
	rc = core_sha256_file_range(path, at->base, at->pos - at->base, &got, hex, err);
	if (!rc && (got != at->pos - at->base || strcmp(hex, at->hash)))
		rc = core_err_set(err, CORE_EDATA,
				  "aws_s3: the staging file %s no longer holds what the "
				  "checkpoint counted (it was changed or cut); nothing was "
				  "changed", path);
	free(path);
	return rc;
}

const plg_sink_ops plg__aws_s3_sink = {
	.name = "aws_s3",
	.description = "Write the run's rows as one Amazon S3 (or S3-compatible) object, "
		       "CSV, JSON or JSON Lines (ELSPETH 0.7.1)",
	.options = s3k_opts,
	.open = s3k_open,
	.check = s3k_check,
	.write = s3k_write,
	.flush = s3k_flush,
	.close = s3k_close,
	.position = s3k_position,
	.resume = s3k_resume,
	.target = s3k_target,
	.verify = s3k_verify,
	.publish = s3k_publish,
	.finished = s3k_finished,
};

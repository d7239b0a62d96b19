/*
 * sink_json.c — the "json" sink: the bytes of ELSPETH's json sink, which
 * writes with Python's json.dump (core_json_append_py: ensure_ascii,
 * ", " and ": " separators, reals as repr()).
 *
 * format: jsonl — json.dump(row) and "\n" per row; a row's byte range is
 * its line including the "\n". Appending is allowed.
 *
 * format: json — json.dump(rows, indent=n) of all rows, written as rows
 * arrive (ELSPETH rewrites the whole file at each write; the final bytes
 * are the same):
 *
 *   compact:    [R1, R2]          (an empty run: [])
 *   indent: n   [\n    R1,\n    R2\n]
 *
 * with no line break after the closing bracket. A row's byte range is Ri
 * (with its indentation), without the separators. The closing bracket is
 * written by close(); until then the file is not valid JSON. Appending to
 * an array is not supported (a config error).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/plugins_internal.h"

struct json_sink {
	int collide;            /* PLG__COLLIDE_* */
	plg__outfile out;
	plg_schema *schema;
	bool jsonl;
	int indent;     /* -1: compact */
	uint64_t rows;  /* written so far */
	json_t *display; /* {field: key written} (headers:); NULL */
	bool strict;     /* every field must be in display (0.7.1) */
	core_buf buf;
};

/* ---------------------------------------------------------------- rows */

/* The row with its keys renamed as `headers` says; NULL with err set
 * when two fields would get one name (ELSPETH's words). */
static json_t *displayed(const struct json_sink *s, const json_t *row, core_err *err)
{
	json_t *out = json_object(), *v;
	const char *k;

	if (!out) {
		core_err_set(err, CORE_ENOMEM, "out of memory");
		return NULL;
	}
	json_object_foreach((json_t *)row, k, v) {
		const char *d = plg__display_name(s->display, k);

		if (s->strict && plg__display_unmapped(s->display, k, err)) {
			json_decref(out);
			return NULL;
		}

		if (json_object_get(out, d)) {
			json_decref(out);
			core_err_set(err, CORE_EDATA, "Header collision: multiple fields map "
				     "to output key '%s'. Check display_headers mapping for "
				     "duplicate targets.", d);
			return NULL;
		}
		if (json_object_set(out, d, v)) {
			json_decref(out);
			core_err_set(err, CORE_ENOMEM, "out of memory");
			return NULL;
		}
	}
	return out;
}

static int json_write(void *state, const json_t *row, plg_write_info *info,
		      core_err *err)
{
	struct json_sink *s = state;
	const char *sep = s->indent < 0 ? (s->rows ? ", " : "[")
					: (s->rows ? ",\n" : "[\n");
	json_t *shown = NULL;
	int rc = 0;

	if (s->display && !(row = shown = displayed(s, row, err)))
		return err->code;
	core_buf_reset(&s->buf);
	for (int i = 0; !s->jsonl && !rc && i < s->indent; i++)
		rc = core_buf_putc(&s->buf, ' ');
	if (!rc)
		rc = core_json_append_py(&s->buf, row, s->indent, s->jsonl ? 0 : 1);
	if (!rc && s->jsonl)
		rc = core_buf_putc(&s->buf, '\n');
	json_decref(shown);
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!s->jsonl)
		rc = plg__outfile_write(&s->out, sep, strlen(sep), err);
	if (rc)
		return rc;
	info->offset = s->out.pos;
	info->len = s->buf.len;
	info->bytes = s->buf.data;
	rc = plg__outfile_write(&s->out, s->buf.data, s->buf.len, err);
	if (!rc)
		s->rows++;
	return rc;
}

/* --------------------------------------------------------- open / close */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int parse_format(struct json_sink *s, const core_node *opts,
			const char *path, bool *append, core_err *err)
{
	static const char *const formats[] = { "jsonl", "json", NULL };
	static const char *const modes[] = { "write", "append", NULL };
	const core_node *fmt = core_map_get(opts, "format");
	const core_node *mode = core_map_get(opts, "mode");
	int f = ends_with(path, ".jsonl") ? 0 : 1, m = 0, rc = 0;

	if (fmt && !core_node_is_null(fmt))
		rc = core_node_enum(fmt, formats, &f, err);
	if (!rc && mode)
		rc = core_node_enum(mode, modes, &m, err);
	s->jsonl = f == 0;
	*append = m == 1;
	if (!rc && *append && !s->jsonl)
		rc = core_err_at(err, CORE_ECONFIG, mode,
				 "mode: append needs format: jsonl (a JSON array "
				 "cannot be appended to); use format: jsonl or mode: write");
	return rc;
}

static const plg_option jsonk_own[] = {
	{ "path", "string", true, NULL,
	  "the file written (parent directories are created)" },
	{ "format", "string", false, NULL,
	  "jsonl (one object a line) or json (an array); by default jsonl for a .jsonl path, else json" },
	{ "indent", "integer", false, NULL,
	  "format json: spaces of indentation (0..32); none: one line" },
	{ "mode", "string", false, "\"write\"",
	  "write, or append (format jsonl only)" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "utf-8 only" },
	{ NULL }
};
static const plg_option *const jsonk_opts[] = {
	jsonk_own, plg__collision_opts, plg__headers_opts, plg__schema_opts, NULL
};

static int parse_options(void *state, const core_node *opts,
			 const char **path, bool *append, core_err *err)
{
	struct json_sink *s = state;
	const core_node *ind = core_map_get(opts, "indent");
	long long indent = -1;
	int rc;

	rc = plg__check_options(opts, jsonk_opts, err);
	if (!rc)
		rc = core_opt_str(opts, "path", true, path, err);
	if (!rc)
		rc = parse_format(s, opts, *path, append, err);
	if (!rc && ind && !core_node_is_null(ind))
		rc = core_node_int(ind, 0, 32, &indent, err);
	if (!rc)
		rc = plg__opt_encoding(opts, PLG__ENC_WRITE, err);
	if (!rc)
		rc = plg__headers_check(opts, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &s->schema, err);
	if (!rc)
		rc = plg__opt_collision(opts, *append, &s->collide, err);
	/* jsonl is one row per line: indent is accepted (as ELSPETH does)
	 * but only shapes format: json. */
	s->indent = s->jsonl ? -1 : (int)indent;
	return rc;
}

static int json_close(void *state, core_err *err);

/* Opens the file afresh (at == NULL) or at a checkpointed position (a
 * JSON array continues after its last row: a closing bracket written by
 * a run that closed is cut off). */
static int json_start(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, void **state, core_err *err)
{
	struct json_sink *s = calloc(1, sizeof(*s));
	const char *path = NULL;
	bool append = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, &path, &append, err);
	if (!rc)
		s->display = plg__display_names(env, options, &s->strict);
	if (!rc && !at)
		rc = plg__collision_check(env, path, s->collide, err);
	if (!rc)
		rc = at ? plg__outfile_resume(&s->out, env, path, at, err)
			: plg__outfile_open(&s->out, env, path, append, err);
	if (rc) {
		json_close(s, NULL);
		return rc;
	}
	s->rows = at ? at->rows : 0;
	*state = s;
	return 0;
}

static int json_open(const plg_env *env, const core_node *options,
		     void **state, core_err *err)
{
	return json_start(env, options, NULL, state, err);
}

static int json_resume(const plg_env *env, const core_node *options,
		       const plg_sink_pos *at, void **state, core_err *err)
{
	return json_start(env, options, at, state, err);
}

static void json_position(void *state, plg_sink_pos *out)
{
	struct json_sink *s = state;

	plg__outfile_position(&s->out, out);
	out->rows = s->rows;
}

static int json_check(const core_node *options, core_err *err)
{
	return plg__sink_check(options, sizeof(struct json_sink), parse_options,
			       json_close, err);
}

static int json_flush(void *state, core_err *err)
{
	struct json_sink *s = state;

	return plg__outfile_flush(&s->out, err);
}

static int json_close(void *state, core_err *err)
{
	struct json_sink *s = state;
	int rc = 0;

	if (!s)
		return 0;
	if (s->out.open && !s->jsonl)
		rc = !s->rows ? plg__outfile_write(&s->out, "[]", 2, err)
		     : s->indent < 0 ? plg__outfile_write(&s->out, "]", 1, err)
				     : plg__outfile_write(&s->out, "\n]", 2, err);
	if (rc)
		plg__outfile_close(&s->out, NULL);
	else
		rc = plg__outfile_close(&s->out, err);
	core_buf_release(&s->buf);
	json_decref(s->display);
	plg__schema_free(s->schema);
	free(s);
	return rc;
}

/* jsonl: rows only. json: "[", the rows joined by ", ", "]" (indented:
 * "[\n", ",\n", "\n]"); "[]" without rows. */
static int json_frame(const core_node *options, const char *file,
		      plg_sink_frame *out, core_err *err)
{
	struct json_sink s = { 0 };
	char head[2], tail[2];
	const char *path;
	uint64_t size;
	bool append;
	size_t k;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	out->joiner = "";
	rc = parse_options(&s, options, &path, &append, err);
	plg__schema_free(s.schema);
	if (rc)
		return rc;
	k = s.indent < 0 ? 1 : 2; /* bytes of the opening and closing frame */
	if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0)
		return core_err_set(err, CORE_EIO, "cannot read '%s': %s", file,
				    strerror(errno));
	size = (uint64_t)lseek(fd, 0, SEEK_END);
	if (s.jsonl) {
		out->rows = size > 0;
	} else if (size == 2 && pread(fd, head, 2, 0) == 2 && !memcmp(head, "[]", 2)) {
		out->head = 2;
	} else if (size < 2 * k + 1 || pread(fd, head, k, 0) != (ssize_t)k ||
		   pread(fd, tail, k, (off_t)(size - k)) != (ssize_t)k ||
		   memcmp(head, "[\n", k) || memcmp(tail, &"\n]"[2 - k], k)) {
		rc = core_err_set(err, CORE_EDATA,
				  "'%s' is not a JSON array this sink wrote", file);
	} else {
		out->head = k;
		out->tail = k;
		out->rows = true;
		out->joiner = s.indent < 0 ? ", " : ",\n";
	}
	close(fd);
	return rc;
}

const plg_sink_ops plg__json_sink = {
	.name = "json",
	.description = "Write rows to a JSON array file or a JSONL file (one object per line)",
	.options = jsonk_opts,
	.open = json_open,
	.check = json_check,
	.write = json_write,
	.flush = json_flush,
	.close = json_close,
	.position = json_position,
	.resume = json_resume,
	.target = plg__outfile_target,
	.verify = plg__outfile_verify,
	.frame = json_frame,
};

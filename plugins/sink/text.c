/*
 * text.c — ELSPETH 0.7.1's "text" sink: one string field a line (ADR
 * 0045). Each row's `field` is written followed by LF, in the configured
 * encoding (utf-8, ascii, latin-1 or cp1252, the four 0.7.1 takes). A row
 * whose field is not a string, holds CR or LF, or cannot be written in
 * the encoding is a row error (its on_write_failure), with 0.7.1's words.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugins/plugins_internal.h"

enum { ENC_UTF8, ENC_ASCII, ENC_LATIN1, ENC_CP1252 };

struct text_sink {
	int collide;            /* PLG__COLLIDE_* */
	plg__outfile out;
	const char *field;
	int enc;
	uint64_t rows;
	core_buf buf;
};

/* cp1252's bytes 0x80..0x9f (0: undefined, as Python's codec has them). */
static const uint16_t cp1252_hi[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178
};

/* cp's byte in a single-byte encoding, or -1. */
static int byte_of(int enc, uint32_t cp)
{
	if (cp < 0x80)
		return (int)cp;
	if (enc == ENC_LATIN1 && cp < 0x100)
		return (int)cp;
	if (enc == ENC_CP1252) {
		if (cp >= 0xa0 && cp < 0x100)
			return (int)cp;
		for (int i = 0; i < 32; i++)
			if (cp1252_hi[i] && cp1252_hi[i] == cp)
				return 0x80 + i;
	}
	return -1;
}

static int encode(struct text_sink *s, const char *v, size_t n, core_err *err)
{
	static const char *const names[] = { "utf-8", "ascii", "latin-1", "cp1252" };
	uint32_t cp;

	core_buf_reset(&s->buf);
	if (s->enc == ENC_UTF8) {
		if (core_buf_append(&s->buf, v, n))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	} else {
		for (size_t i = 0, k; i < n; i += k) {
			int b;

			k = core_utf8_decode(v + i, n - i, &cp);
			if (!k || (b = byte_of(s->enc, cp)) < 0)
				return core_err_set(err, CORE_EDATA,
					"Text value is not representable in configured codec %s",
					names[s->enc]);
			if (core_buf_putc(&s->buf, (char)b))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
	}
	return core_buf_putc(&s->buf, '\n') ?
		core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

static int text_write(void *state, const json_t *row, plg_write_info *info,
		      core_err *err)
{
	struct text_sink *s = state;
	const json_t *v = json_object_get(row, s->field);
	const char *p;
	size_t n;
	int rc;

	if (!json_is_string(v))
		return core_err_set(err, CORE_EDATA, "Text field '%s' must be a string",
				    s->field);
	p = json_string_value(v);
	n = json_string_length(v);
	if (memchr(p, '\r', n) || memchr(p, '\n', n))
		return core_err_set(err, CORE_EDATA,
				    "Text values cannot contain CR or LF record separators");
	if ((rc = encode(s, p, n, err)))
		return rc;
	info->offset = s->out.pos;
	info->len = s->buf.len;
	info->bytes = s->buf.data;
	if (!(rc = plg__outfile_write(&s->out, s->buf.data, s->buf.len, err)))
		s->rows++;
	return rc;
}

static const plg_option textk_own[] = {
	{ "path", "string", true, NULL,
	  "the file written (parent directories are created)" },
	{ "field", "string", true, NULL,
	  "the string field written, one line a row (a Python identifier)" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "utf-8, ascii, latin-1 or cp1252" },
	{ "mode", "string", false, "\"write\"",
	  "write (replace the file) or append" },
	{ NULL }
};
static const plg_option *const textk_opts[] = {
	textk_own, plg__collision_opts, plg__schema_opts, NULL
};

static int parse_options(void *state, const core_node *opts,
			 const char **path, bool *append, core_err *err)
{
	static const char *const encs[] = { "utf-8", "ascii", "latin-1", "cp1252", NULL };
	static const char *const modes[] = { "write", "append", NULL };
	struct text_sink *s = state;
	const core_node *enc = core_map_get(opts, "encoding");
	const core_node *mode = core_map_get(opts, "mode");
	int m = 0, rc;

	rc = plg__check_options(opts, textk_opts, err);
	if (!rc)
		rc = core_opt_str(opts, "path", true, path, err);
	if (!rc)
		rc = core_opt_str(opts, "field", true, &s->field, err);
	if (!rc && !plg__py_identifier(s->field))
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "field"),
			"field '%s' must be a non-keyword Python identifier", s->field);
	if (!rc && enc)
		rc = core_node_enum(enc, encs, &s->enc, err);
	if (!rc && mode)
		rc = core_node_enum(mode, modes, &m, err);
	*append = m == 1;
	if (!rc)
		rc = plg__opt_collision(opts, *append, &s->collide, err);
	if (!rc) { /* checked as every sink's; the line is the field alone */
		plg_schema *schema = NULL;

		rc = plg__schema_parse(core_map_get(opts, "schema"), &schema, err);
		plg__schema_free(schema);
	}
	return rc;
}

static int text_close(void *state, core_err *err)
{
	struct text_sink *s = state;
	int rc;

	if (!s)
		return 0;
	rc = plg__outfile_close(&s->out, err);
	core_buf_release(&s->buf);
	free(s);
	return rc;
}

static int text_start(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, void **state, core_err *err)
{
	struct text_sink *s = calloc(1, sizeof(*s));
	const char *path = NULL;
	bool append = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, &path, &append, err);
	if (!rc && !at)
		rc = plg__collision_check(env, path, s->collide, err);
	if (!rc)
		rc = at ? plg__outfile_resume(&s->out, env, path, at, err)
			: plg__outfile_open(&s->out, env, path, append, err);
	if (rc) {
		text_close(s, NULL);
		return rc;
	}
	s->rows = at ? at->rows : 0;
	*state = s;
	return 0;
}

static int text_open(const plg_env *env, const core_node *options,
		     void **state, core_err *err)
{
	return text_start(env, options, NULL, state, err);
}

static int text_resume(const plg_env *env, const core_node *options,
		       const plg_sink_pos *at, void **state, core_err *err)
{
	return text_start(env, options, at, state, err);
}

static void text_position(void *state, plg_sink_pos *out)
{
	struct text_sink *s = state;

	plg__outfile_position(&s->out, out);
	out->rows = s->rows;
}

static int text_check(const core_node *options, core_err *err)
{
	return plg__sink_check(options, sizeof(struct text_sink), parse_options,
			       text_close, err);
}

static int text_flush(void *state, core_err *err)
{
	struct text_sink *s = state;

	return plg__outfile_flush(&s->out, err);
}

/* Lines only: no head, no tail, nothing between two files' rows. */
static int text_frame(const core_node *options, const char *file,
		      plg_sink_frame *out, core_err *err)
{
	struct stat st;

	(void)options;
	memset(out, 0, sizeof(*out));
	out->joiner = "";
	if (stat(file, &st))
		return core_err_set(err, CORE_EIO, "cannot read '%s': %s", file,
				    strerror(errno));
	out->rows = st.st_size > 0;
	return 0;
}

const plg_sink_ops plg__text_sink = {
	.name = "text",
	.description = "Write one string field a line (ELSPETH 0.7.1)",
	.options = textk_opts,
	.open = text_open,
	.check = text_check,
	.write = text_write,
	.flush = text_flush,
	.close = text_close,
	.position = text_position,
	.resume = text_resume,
	.target = plg__outfile_target,
	.verify = plg__outfile_verify,
	.frame = text_frame,
};

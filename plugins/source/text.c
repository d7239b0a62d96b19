/*
 * text.c — ELSPETH 0.7.1's "text" source: one row per line of a text
 * file, {column: line} (ADR 0045).
 *
 * As 0.7.1 reads it (Python's text mode with newline=""): a line ends at
 * LF, CRLF or a lone CR, which are cut off; with strip_whitespace (the
 * default) the value loses the whitespace Python's str.strip() removes;
 * with skip_blank_lines (the default) a line left empty is no row. A line
 * that is not valid UTF-8 is a row error whose row is ELSPETH's
 * {"file_path", "__line_number__", "__raw_bytes_hex__"}. utf-8-sig skips
 * a byte order mark; utf-8 keeps it (it is no whitespace).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "plugins/plugins_internal.h"

typedef struct text_src {
	char *path;
	const char *column;    /* points into the options */
	plg_schema *schema;
	bool strip, skip_blank, sig;
	FILE *fp;
	core_buf line;
	long lineno;
} text_src;

static void text_close(void *state)
{
	text_src *s = state;

	if (!s)
		return;
	if (s->fp)
		fclose(s->fp);
	core_buf_release(&s->line);
	plg__schema_free(s->schema);
	free(s->path);
	free(s);
}

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static const plg_option text_own[] = {
	{ "path", "string", true, NULL, "the text file to read" },
	{ "column", "string", true, NULL,
	  "the field that receives each line (a Python identifier, not a keyword)" },
	{ "encoding", "string", false, "\"utf-8\"",
	  "utf-8 (utf-8-sig skips a byte order mark)" },
	{ "strip_whitespace", "boolean", false, "true",
	  "trim leading and trailing whitespace from each line" },
	{ "skip_blank_lines", "boolean", false, "true",
	  "no row for a line that is empty (after trimming)" },
	{ "on_validation_failure", "string", true, NULL,
	  "where rows that fail the schema go: a sink's name, or discard" },
	{ NULL }
};
static const plg_option *const text_opts[] = { text_own, plg__schema_opts, NULL };

static int text_options(text_src *s, const core_node *options, core_err *err)
{
	const char *path = NULL, *enc = NULL;
	int rc;

	s->strip = s->skip_blank = true;
	if ((rc = plg__check_options(options, text_opts, err)) ||
	    (rc = core_opt_str(options, "path", true, &path, err)) ||
	    (rc = core_opt_str(options, "column", true, &s->column, err)) ||
	    (rc = plg__opt_encoding(options, PLG__ENC_READ, err)) ||
	    (rc = core_opt_str(options, "encoding", false, &enc, err)) ||
	    (rc = core_opt_bool(options, "strip_whitespace", &s->strip, err)) ||
	    (rc = core_opt_bool(options, "skip_blank_lines", &s->skip_blank, err)) ||
	    (rc = plg__schema_parse(core_map_get(options, "schema"), &s->schema, err)))
		return rc;
	if (!plg__py_identifier(s->column))
		return core_err_at(err, CORE_ECONFIG, core_map_get(options, "column"),
			"column '%s' is not a valid Python identifier, or is a Python "
			"keyword", s->column);
	s->sig = enc && strlen(enc) > 4 && !strcasecmp(enc + strlen(enc) - 4, "_sig") ?
		true : enc && strlen(enc) > 4 && !strcasecmp(enc + strlen(enc) - 4, "-sig");
	return (s->path = strdup(path)) ? 0 : nomem(err);
}

static int text_check(const core_node *options, core_err *err)
{
	text_src *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return nomem(err);
	rc = text_options(s, options, err);
	text_close(s);
	return rc;
}

static int text_open(const plg_env *env, const core_node *options,
		     void **state, core_err *err)
{
	text_src *s;
	int rc;

	(void)env;
	if (!(s = calloc(1, sizeof(*s))))
		return nomem(err);
	if ((rc = text_options(s, options, err)))
		goto out_close;
	if (!(s->fp = plg__open_decoded(s->path, plg__opt_encoding_of(options), err))) {
		rc = errno == EILSEQ || errno == EINVAL ? err->code :
		     core_err_at(err, CORE_EIO, core_map_get(options, "path"),
				 "Text file not found: %s (%s)", s->path, strerror(errno));
		goto out_close;
	}
	*state = s;
	return 0;
out_close:
	text_close(s);
	return rc;
}

/* Reads the next line into s->line without its end (LF, CRLF or CR).
 * 1, 0 at the end of the file. */
static int read_line(text_src *s, core_err *err)
{
	int c;

	core_buf_reset(&s->line);
	if ((c = getc(s->fp)) == EOF)
		return ferror(s->fp) ? core_err_set(err, CORE_EIO, "%s: read error after "
			"line %ld: %s", s->path, s->lineno, strerror(errno)) : 0;
	for (; c != EOF && c != '\n' && c != '\r'; c = getc(s->fp))
		if (core_buf_putc(&s->line, (char)c))
			return nomem(err);
	if (c == '\r' && (c = getc(s->fp)) != '\n' && c != EOF)
		ungetc(c, s->fp);
	if (ferror(s->fp))
		return core_err_set(err, CORE_EIO, "%s: read error after line %ld: %s",
				    s->path, s->lineno, strerror(errno));
	if (++s->lineno == 1 && s->sig && s->line.len >= 3 &&
	    !memcmp(s->line.data, "\xEF\xBB\xBF", 3)) {
		memmove(s->line.data, s->line.data + 3, s->line.len - 3);
		s->line.len -= 3;
	}
	return 1;
}

/* Python's str.isspace() for one code point. */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 ||
	       c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	       c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* str.strip() of valid UTF-8 [*b, *e). */
static void strip(const char **b, const char **e)
{
	uint32_t cp;
	size_t k;

	while (*b < *e && (k = core_utf8_decode(*b, (size_t)(*e - *b), &cp)) && py_space(cp))
		*b += k;
	while (*e > *b) {
		const char *p = *e - 1;

		while (p > *b && ((unsigned char)*p & 0xC0) == 0x80)
			p--;
		if (!(k = core_utf8_decode(p, (size_t)(*e - p), &cp)) || !py_space(cp))
			break;
		*e = p;
	}
}

static int bad_encoding(text_src *s, plg_source_row *out, core_err *err)
{
	core_buf hex = { 0 };
	char what[48], msg[128];

	for (size_t i = 0; i < s->line.len; i++)
		if (core_buf_printf(&hex, "%02x", (unsigned char)s->line.data[i]))
			break;
	snprintf(what, sizeof(what), "line %ld", s->lineno);
	snprintf(msg, sizeof(msg), "Text parse error at line %ld: invalid utf-8 encoding",
		 s->lineno);
	out->row = json_pack("{s:s,s:i,s:s}", "file_path", s->path, "__line_number__",
			     (int)s->lineno, "__raw_bytes_hex__", hex.data ? hex.data : "");
	core_buf_release(&hex);
	out->where = strdup(what);
	out->error = strdup(msg);
	if (!out->row || !out->where || !out->error) {
		plg_source_row_release(out);
		return nomem(err);
	}
	return 1;
}

static int text_next(void *state, plg_source_row *out, core_err *err)
{
	text_src *s = state;
	core_err e = { 0 };
	char what[48], msg[sizeof(e.msg) + 64];
	const char *b, *end;
	int rc;

	memset(out, 0, sizeof(*out));
	for (;;) {
		if ((rc = read_line(s, err)) <= 0)
			return rc;
		if (!core_utf8_valid(s->line.data ? s->line.data : "", s->line.len))
			return bad_encoding(s, out, err);
		b = s->line.data ? s->line.data : "";
		end = b + s->line.len;
		if (s->strip)
			strip(&b, &end);
		if (!s->skip_blank || b != end)
			break;
	}
	snprintf(what, sizeof(what), "line %ld", s->lineno);
	out->row = json_object();
	if (!out->row || json_object_set_new(out->row, s->column,
					     json_stringn(b, (size_t)(end - b))))
		goto oom;
	msg[0] = '\0';
	if (plg__schema_apply(s->schema, out->row, true, &e))
		snprintf(msg, sizeof(msg), "%s: %s", what, e.msg);
	if (e.code == CORE_ENOMEM || !(out->where = strdup(what)) ||
	    (msg[0] && !(out->error = strdup(msg))))
		goto oom;
	return 1;
oom:
	plg_source_row_release(out);
	return nomem(err);
}

static int text_skip(void *state, core_err *err)
{
	plg_source_row r;
	int rc = text_next(state, &r, err);

	plg_source_row_release(&r);
	return rc;
}

static void text_position(void *state, plg_source_pos *out)
{
	const text_src *s = state;
	off_t o = ftello(s->fp);

	out->offset = o < 0 ? 0 : (uint64_t)o;
	out->line = (uint64_t)s->lineno;
	out->bytes = true;
}

static int text_seek(void *state, const plg_source_pos *at, core_err *err)
{
	text_src *s = state;

	if (fseeko(s->fp, (off_t)at->offset, SEEK_SET))
		return core_err_set(err, CORE_EIO, "%s: cannot seek to byte %llu: %s",
				    s->path, (unsigned long long)at->offset, strerror(errno));
	s->lineno = (long)at->line;
	return 0;
}

const plg_source_ops plg__text_source = {
	.name = "text",
	.description = "one row per line of a text file, {column: line} (ELSPETH 0.7.1)",
	.options = text_opts,
	.open = text_open,
	.check = text_check,
	.next = text_next,
	.close = text_close,
	.position = text_position,
	.seek = text_seek,
	.skip = text_skip,
	.input = plg__opt_path,
};

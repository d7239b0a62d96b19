/*
 * sink_json.c — the "json" sink and the JSON text writer the sinks share.
 *
 * format: jsonl — one compact object per line, "\n" after each; a row's
 * byte range is its line including the "\n". Appending is allowed.
 *
 * format: json — one top-level array written as rows arrive:
 *
 *   [\n R1 ,\n R2 \n]\n        (an empty run: []\n)
 *
 * Ri is compact, or with `indent: n` pretty-printed as Python's
 * json.dump(rows, indent=n) prints an element (n spaces before it, nested
 * levels n more). A row's byte range is Ri, without the separators. The
 * closing bracket is written by close(); until then the file is not valid
 * JSON. Appending to an array is not supported (a config error).
 *
 * The writer keeps the row's key order and UTF-8 text as-is (only '"',
 * '\\' and control characters are escaped). Reals are written in
 * ECMAScript shortest round-trip form, as the canonical hash sees them,
 * plus ".0" when that form would read back as an integer (1.0, not 1),
 * instead of jansson's "%.17g" (0.1 would be 0.10000000000000001).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct json_sink {
	plg__outfile out;
	plg_schema *schema;
	bool jsonl;
	int indent;     /* -1: compact */
	uint64_t rows;  /* written so far */
	core_buf buf;
};

/* ----------------------------------------------------- the JSON writer */

static const char *escape(unsigned char c, char tmp[8])
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\b':
		return "\\b";
	case '\f':
		return "\\f";
	case '\n':
		return "\\n";
	case '\r':
		return "\\r";
	case '\t':
		return "\\t";
	}
	snprintf(tmp, 8, "\\u%04x", c);
	return tmp;
}

static int put_string(core_buf *b, const char *s, size_t n)
{
	size_t start = 0;
	int rc = core_buf_putc(b, '"');

	for (size_t i = 0; !rc && i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		rc = core_buf_append(b, s + start, i - start);
		if (!rc)
			rc = core_buf_puts(b, escape(c, tmp));
		start = i + 1;
	}
	if (!rc)
		rc = core_buf_append(b, s + start, n - start);
	return rc ? rc : core_buf_putc(b, '"');
}

static int put_integer(core_buf *b, json_int_t i)
{
	char num[32];
	int n = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, i);

	return core_buf_append(b, num, (size_t)n);
}

static int put_real(core_buf *b, double d)
{
	char num[64];
	int n = core_format_double(d, num, sizeof(num));

	if (n < 0) /* jansson cannot hold NaN or Infinity; be safe */
		return core_buf_puts(b, "null");
	if (strspn(num, "-0123456789") == (size_t)n)
		memcpy(num + n, ".0", 3);
	return core_buf_puts(b, num);
}

static int put_spaces(core_buf *b, int n)
{
	int rc = 0;

	for (int i = 0; !rc && i < n; i++)
		rc = core_buf_putc(b, ' ');
	return rc;
}

/* A line break and the indentation of `depth`; nothing when compact. */
static int put_newline(core_buf *b, int indent, int depth)
{
	if (indent < 0)
		return 0;
	return core_buf_putc(b, '\n') ? CORE_ENOMEM : put_spaces(b, indent * depth);
}

static int put_object(core_buf *b, const json_t *v, int indent, int depth)
{
	const char *key;
	json_t *item;
	bool first = true;
	int rc = 0;

	if (!json_object_size(v))
		return core_buf_puts(b, "{}");
	rc = core_buf_putc(b, '{');
	json_object_foreach((json_t *)v, key, item) {
		if (!rc && !first)
			rc = core_buf_putc(b, ',');
		if (!rc)
			rc = put_newline(b, indent, depth + 1);
		if (!rc)
			rc = put_string(b, key, strlen(key));
		if (!rc)
			rc = core_buf_puts(b, indent < 0 ? ":" : ": ");
		if (!rc)
			rc = plg__json_append(b, item, indent, depth + 1);
		if (rc)
			return rc;
		first = false;
	}
	rc = put_newline(b, indent, depth);
	return rc ? rc : core_buf_putc(b, '}');
}

static int put_array(core_buf *b, const json_t *v, int indent, int depth)
{
	size_t n = json_array_size(v);
	int rc = 0;

	if (!n)
		return core_buf_puts(b, "[]");
	rc = core_buf_putc(b, '[');
	for (size_t i = 0; !rc && i < n; i++) {
		if (i)
			rc = core_buf_putc(b, ',');
		if (!rc)
			rc = put_newline(b, indent, depth + 1);
		if (!rc)
			rc = plg__json_append(b, json_array_get(v, i), indent, depth + 1);
	}
	if (!rc)
		rc = put_newline(b, indent, depth);
	return rc ? rc : core_buf_putc(b, ']');
}

int plg__json_append(core_buf *b, const json_t *v, int indent, int depth)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return put_object(b, v, indent, depth);
	case JSON_ARRAY:
		return put_array(b, v, indent, depth);
	case JSON_STRING:
		return put_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return put_integer(b, json_integer_value(v));
	case JSON_REAL:
		return put_real(b, json_real_value(v));
	case JSON_TRUE:
		return core_buf_puts(b, "true");
	case JSON_FALSE:
		return core_buf_puts(b, "false");
	case JSON_NULL:
		break;
	}
	return core_buf_puts(b, "null");
}

/* ---------------------------------------------------------------- rows */

static int json_write(void *state, const json_t *row, plg_write_info *info,
		     core_err *err)
{
	struct json_sink *s = state;
	const char *sep = s->rows ? ",\n" : "[\n";
	int rc = 0;

	core_buf_reset(&s->buf);
	if (!s->jsonl)
		rc = put_spaces(&s->buf, s->indent);
	if (!rc)
		rc = plg__json_append(&s->buf, row, s->indent, s->jsonl ? 0 : 1);
	if (!rc && s->jsonl)
		rc = core_buf_putc(&s->buf, '\n');
	if (rc)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!s->jsonl)
		rc = plg__outfile_write(&s->out, sep, 2, err);
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

static int parse_options(struct json_sink *s, const core_node *opts,
			 const char **path, bool *append, core_err *err)
{
	static const char *const keys[] = { "path", "format", "indent", "mode",
		"encoding", PLG_COMMON_KEYS, NULL };
	const core_node *ind = core_map_get(opts, "indent");
	long long indent = -1;
	int rc;

	rc = core_map_check_keys(opts, keys, err);
	if (!rc)
		rc = core_opt_str(opts, "path", true, path, err);
	if (!rc)
		rc = parse_format(s, opts, *path, append, err);
	if (!rc && ind && !core_node_is_null(ind))
		rc = core_node_int(ind, 0, 32, &indent, err);
	if (!rc)
		rc = plg__opt_encoding(opts, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &s->schema, err);
	/* jsonl is one row per line: indent is accepted (as ELSPETH does)
	 * but only shapes format: json. */
	s->indent = s->jsonl ? -1 : (int)indent;
	return rc;
}

static int json_close(void *state, core_err *err);

static int json_open(const core_node *options, void **state, core_err *err)
{
	struct json_sink *s = calloc(1, sizeof(*s));
	const char *path = NULL;
	bool append = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, &path, &append, err);
	if (!rc)
		rc = plg__outfile_open(&s->out, path, append, err);
	if (rc) {
		json_close(s, NULL);
		return rc;
	}
	*state = s;
	return 0;
}

static int json_check(const core_node *options, core_err *err)
{
	struct json_sink *s = calloc(1, sizeof(*s));
	const char *path = NULL;
	bool append = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, &path, &append, err);
	json_close(s, NULL); /* no file was opened: nothing is written */
	return rc;
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
	if (s->out.fp && !s->jsonl)
		rc = s->rows ? plg__outfile_write(&s->out, "\n]\n", 3, err)
			     : plg__outfile_write(&s->out, "[]\n", 3, err);
	if (rc)
		plg__outfile_close(&s->out, NULL);
	else
		rc = plg__outfile_close(&s->out, err);
	core_buf_release(&s->buf);
	plg__schema_free(s->schema);
	free(s);
	return rc;
}

const plg_sink_ops plg__json_sink = {
	.name = "json",
	.description = "Write rows to a JSON array file or a JSONL file (one object per line)",
	.open = json_open,
	.check = json_check,
	.write = json_write,
	.flush = json_flush,
	.close = json_close,
};

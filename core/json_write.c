/*
 * json_write.c — JSON text for people and files: keeps the row's key order
 * and UTF-8 text as-is (only '"', '\\' and control characters are
 * escaped); reals in ECMAScript shortest round-trip form, as the canonical
 * hash sees them, plus ".0" when that form would read back as an integer
 * (1.0, not 1), instead of jansson's "%.17g" (0.1 would be
 * 0.10000000000000001).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

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
			rc = core_json_append(b, item, indent, depth + 1);
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
			rc = core_json_append(b, json_array_get(v, i), indent, depth + 1);
	}
	if (!rc)
		rc = put_newline(b, indent, depth);
	return rc ? rc : core_buf_putc(b, ']');
}

int core_json_append(core_buf *b, const json_t *v, int indent, int depth)
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

const char *core_json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		break;
	}
	return "null";
}

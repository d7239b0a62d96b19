/*
 * json_py.c — values as Python prints them, for the files ELSPETH users
 * compare byte for byte (docs/architecture.md §3a, ADR 0006).
 *
 * core_json_append_py is json.dumps(v, indent=n) with Python's defaults:
 * ensure_ascii (every character outside ' '..'~' escaped as \uXXXX, with
 * surrogate pairs above U+FFFF), ", " and ": " between items when
 * compact, "," and a line break when indented, reals as repr(). It is
 * the text of ELSPETH's json sink and of JSON held in a database column.
 *
 * core_py_str is str(v) for a value of a row: what csv.DictWriter writes.
 * Strings as they are, True/False/None, reals as repr(), and a dict or
 * list as its repr(): strings inside quoted as Python quotes them.
 */
#include <stdbool.h>
#include <string.h>

#include "core/core.h"

/* ---------------------------------------------------------- json.dumps */

int core_json_append_py_str(core_buf *b, const char *s, size_t n)
{
	int rc = core_buf_putc(b, '"');

	for (size_t i = 0; !rc && i < n;) {
		uint32_t cp;
		size_t k, run = 0;

		/* printable ASCII other than '"' and '\\' goes as it is, a
		 * run at a time */
		while (i + run < n && (unsigned char)s[i + run] >= 0x20 &&
		       (unsigned char)s[i + run] < 0x7f && s[i + run] != '"' &&
		       s[i + run] != '\\')
			run++;
		if (run) {
			rc = core_buf_append(b, s + i, run);
			i += run;
			continue;
		}
		k = core_utf8_decode(s + i, n - i, &cp);

		if (!k) { /* never in a jansson string */
			cp = 0xfffd;
			k = 1;
		}
		i += k;
		switch (cp) {
		case '"': rc = core_buf_puts(b, "\\\""); continue;
		case '\\': rc = core_buf_puts(b, "\\\\"); continue;
		case '\n': rc = core_buf_puts(b, "\\n"); continue;
		case '\r': rc = core_buf_puts(b, "\\r"); continue;
		case '\t': rc = core_buf_puts(b, "\\t"); continue;
		case '\b': rc = core_buf_puts(b, "\\b"); continue;
		case '\f': rc = core_buf_puts(b, "\\f"); continue;
		default: break;
		}
		if (cp >= 0x20 && cp < 0x7f)
			rc = core_buf_putc(b, (char)cp);
		else if (cp < 0x10000)
			rc = core_buf_printf(b, "\\u%04x", cp);
		else
			rc = core_buf_printf(b, "\\u%04x\\u%04x",
					     0xd800 + ((cp - 0x10000) >> 10),
					     0xdc00 + ((cp - 0x10000) & 0x3ff));
	}
	return rc ? rc : core_buf_putc(b, '"');
}

static int py_real(core_buf *b, double d)
{
	char num[48];

	core_format_double_py(d, num, sizeof(num));
	return core_buf_puts(b, num);
}

/* Between two items: ", " compact; "," and the next line indented. */
static int py_sep(core_buf *b, bool first, int indent, int depth)
{
	int rc = 0;

	if (indent < 0)
		return first ? 0 : core_buf_puts(b, ", ");
	if (!first)
		rc = core_buf_putc(b, ',');
	if (!rc)
		rc = core_buf_putc(b, '\n');
	for (int i = 0; !rc && i < indent * depth; i++)
		rc = core_buf_putc(b, ' ');
	return rc;
}

int core_json_append_py(core_buf *b, const json_t *v, int indent, int depth)
{
	const char *key;
	json_t *item;
	size_t i;
	int rc = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (!json_object_size(v))
			return core_buf_puts(b, "{}");
		rc = core_buf_putc(b, '{');
		i = 0;
		json_object_foreach((json_t *)v, key, item) {
			if (!rc)
				rc = py_sep(b, !i++, indent, depth + 1);
			if (!rc)
				rc = core_json_append_py_str(b, key, strlen(key));
			if (!rc)
				rc = core_buf_puts(b, ": ");
			if (!rc)
				rc = core_json_append_py(b, item, indent, depth + 1);
		}
		if (!rc && indent >= 0)
			rc = py_sep(b, true, indent, depth);
		return rc ? rc : core_buf_putc(b, '}');
	case JSON_ARRAY:
		if (!json_array_size(v))
			return core_buf_puts(b, "[]");
		rc = core_buf_putc(b, '[');
		json_array_foreach(v, i, item) {
			if (!rc)
				rc = py_sep(b, !i, indent, depth + 1);
			if (!rc)
				rc = core_json_append_py(b, item, indent, depth + 1);
		}
		if (!rc && indent >= 0)
			rc = py_sep(b, true, indent, depth);
		return rc ? rc : core_buf_putc(b, ']');
	case JSON_STRING:
		return core_json_append_py_str(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return core_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	case JSON_REAL:
		return py_real(b, json_real_value(v));
	case JSON_TRUE:
		return core_buf_puts(b, "true");
	case JSON_FALSE:
		return core_buf_puts(b, "false");
	case JSON_NULL:
		break;
	}
	return core_buf_puts(b, "null");
}

/* ---------------------------------------------------------- str / repr */

/* Not str.isprintable(): controls, and the separators and format
 * characters of the Latin-1, general punctuation and CJK blocks, the
 * surrogates and private use. (Python asks its Unicode database; code
 * points unassigned in it are shown raw here.) */
static bool py_unprintable(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad ||
	       cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) ||
	       (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f) ||
	       cp == 0x3000 || (cp >= 0xd800 && cp <= 0xf8ff) || cp == 0xfeff ||
	       (cp >= 0xfff9 && cp <= 0xfffb) || cp >= 0xf0000;
}

static int py_repr_string(core_buf *b, const char *s, size_t n)
{
	bool squote = memchr(s, '\'', n), dquote = memchr(s, '"', n);
	char q = squote && !dquote ? '"' : '\'';
	int rc = core_buf_putc(b, q);

	for (size_t i = 0; !rc && i < n;) {
		uint32_t cp;
		size_t k = core_utf8_decode(s + i, n - i, &cp);

		if (!k) {
			cp = 0xfffd;
			k = 1;
		}
		if (cp == (uint32_t)q || cp == '\\')
			rc = core_buf_putc(b, '\\') || core_buf_putc(b, (char)cp);
		else if (cp == '\n' || cp == '\r' || cp == '\t')
			rc = core_buf_puts(b, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t");
		else if (!py_unprintable(cp))
			rc = core_buf_append(b, s + i, k);
		else if (cp < 0x100)
			rc = core_buf_printf(b, "\\x%02x", cp);
		else if (cp < 0x10000)
			rc = core_buf_printf(b, "\\u%04x", cp);
		else
			rc = core_buf_printf(b, "\\U%08x", cp);
		i += k;
	}
	return rc ? CORE_ENOMEM : core_buf_putc(b, q);
}

static int py_repr(core_buf *b, const json_t *v)
{
	const char *key;
	json_t *item;
	size_t i = 0;
	int rc = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rc = core_buf_putc(b, '{');
		json_object_foreach((json_t *)v, key, item) {
			if (!rc && i++)
				rc = core_buf_puts(b, ", ");
			if (!rc)
				rc = py_repr_string(b, key, strlen(key));
			if (!rc)
				rc = core_buf_puts(b, ": ");
			if (!rc)
				rc = py_repr(b, item);
		}
		return rc ? rc : core_buf_putc(b, '}');
	case JSON_ARRAY:
		rc = core_buf_putc(b, '[');
		json_array_foreach(v, i, item) {
			if (!rc && i)
				rc = core_buf_puts(b, ", ");
			if (!rc)
				rc = py_repr(b, item);
		}
		return rc ? rc : core_buf_putc(b, ']');
	case JSON_STRING:
		return py_repr_string(b, json_string_value(v), json_string_length(v));
	default:
		break;
	}
	return core_py_str(b, v);
}

int core_py_str(core_buf *b, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
	case JSON_ARRAY:
		return py_repr(b, v);
	case JSON_STRING:
		return core_buf_append(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return core_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	case JSON_REAL:
		return py_real(b, json_real_value(v));
	case JSON_TRUE:
		return core_buf_puts(b, "True");
	case JSON_FALSE:
		return core_buf_puts(b, "False");
	case JSON_NULL:
		break;
	}
	return core_buf_puts(b, "None");
}

const char *core_py_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "dict";
	case JSON_ARRAY: return "list";
	case JSON_STRING: return "str";
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	case JSON_NULL: break;
	}
	return "NoneType";
}

/*
 * lex.c — the lexical side of template compilation: where a byte offset
 * is (line, column) and the errors that name it, what a message says was
 * found, identifiers, and string, number and keyword literals.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

int tpl__cc_nomem(tpl__cc *c)
{
	return core_err_set(c->err, CORE_ENOMEM, "out of memory");
}

/* 1-based line and column (in characters) of byte offset at of s. */
void tpl__where(const char *s, size_t at, int *line, int *col)
{
	size_t bol = 0;

	at = strnlen(s, at);
	*line = 1;
	for (size_t i = 0; i < at; i++) {
		if (s[i] == '\n') {
			++*line;
			bol = i + 1;
		}
	}
	*col = 1 + (int)core_utf8_count(s + bol, at - bol);
}

int tpl__cc_fail(const tpl__cc *c, size_t at, const char *fmt, ...)
{
	char msg[768];
	int line, col;
	va_list ap;

	tpl__where(c->s, at, &line, &col);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return core_err_set(c->err, CORE_ECONFIG, "template %s%sline %d, column %d: %s",
			    c->name ? c->name : "", c->name ? " " : "", line,
			    col, msg);
}

static bool is_ident_start(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_ident(char ch)
{
	return is_ident_start(ch) || (ch >= '0' && ch <= '9');
}

size_t tpl__ident_len(const char *s, size_t n)
{
	size_t i = 0;

	if (n && is_ident_start(s[0]))
		while (i < n && is_ident(s[i]))
			i++;
	return i;
}

/* What is at `at`, for "got ..." in messages. */
const char *tpl__cc_got(const tpl__cc *c, size_t at, char *buf, size_t cap)
{
	size_t k;
	uint32_t cp;

	if (at >= c->n)
		return "end of template";
	if (!strncmp(c->s + at, "}}", 2) || !strncmp(c->s + at, "-}}", 3))
		return "'}}'";
	if (!strncmp(c->s + at, "%}", 2) || !strncmp(c->s + at, "-%}", 3))
		return "'%}'";
	k = tpl__ident_len(c->s + at, c->n - at);
	if (!k && c->s[at] >= '0' && c->s[at] <= '9')
		while (at + k < c->n && is_ident(c->s[at + k]))
			k++;
	if (!k)
		k = tpl__utf8_dec(c->s + at, c->n - at, &cp);
	snprintf(buf, cap, "'%.*s'", (int)(k > 40 ? 40 : k), c->s + at);
	return buf;
}

void tpl__skip_ws(tpl__cc *c)
{
	while (c->pos < c->n && strchr(" \t\r\n\f\v", c->s[c->pos]) && c->s[c->pos])
		c->pos++;
}

static int hexval(const char *s, size_t n, uint32_t *out)
{
	*out = 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9' ? ch - '0' :
			ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
			ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;

		if (d < 0)
			return -1;
		*out = *out << 4 | (uint32_t)d;
	}
	return 0;
}

/* One backslash escape at c->pos (just after the backslash) into b. */
static int parse_escape(tpl__cc *c, core_buf *b)
{
	static const char from[] = "\\'\"nrtbfva", to[] = "\\'\"\n\r\t\b\f\v\a";
	size_t at = c->pos - 1, hex;
	const char *hit;
	uint32_t cp;
	char enc[4];

	if (c->pos >= c->n)
		return tpl__cc_fail(c, at, "unterminated string literal");
	hit = strchr(from, c->s[c->pos]);
	if (hit && *hit) {
		c->pos++;
		return core_buf_putc(b, to[hit - from]) ? tpl__cc_nomem(c) : 0;
	}
	hex = c->s[c->pos] == 'x' ? 2 : c->s[c->pos] == 'u' ? 4 :
	      c->s[c->pos] == 'U' ? 8 : 0;
	if (!hex) /* unknown escapes stay as written, as in Python */
		return core_buf_putc(b, '\\') ? tpl__cc_nomem(c) : 0;
	if (c->n - c->pos - 1 < hex || hexval(c->s + c->pos + 1, hex, &cp))
		return tpl__cc_fail(c, at, "expected %zu hex digits after '\\%c'", hex,
				    c->s[c->pos]);
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return tpl__cc_fail(c, at, "'\\%c' escape: U+%04X is not allowed here "
				    "(NUL, a surrogate or past U+10FFFF)", c->s[c->pos],
				    (unsigned)cp);
	c->pos += 1 + hex;
	return core_buf_append(b, enc, core_utf8_encode(cp, enc)) ? tpl__cc_nomem(c) : 0;
}

/* A '...' or "..." literal at c->pos with Python escapes; *out is a new
 * string. */
int tpl__parse_string(tpl__cc *c, json_t **out)
{
	char q = c->s[c->pos];
	size_t open = c->pos++;
	core_buf b = { 0 };
	int rc = 0;

	while (!rc) {
		if (c->pos >= c->n) {
			rc = tpl__cc_fail(c, open, "unterminated string "
					  "literal: expected a closing %c", q);
		} else if (c->s[c->pos] == q) {
			c->pos++;
			break;
		} else if (c->s[c->pos] == '\\') {
			c->pos++;
			rc = parse_escape(c, &b);
		} else {
			rc = core_buf_putc(&b, c->s[c->pos++]) ? tpl__cc_nomem(c) : 0;
		}
	}
	if (!rc) {
		*out = json_stringn(b.data ? b.data : "", b.len);
		if (!*out)
			rc = tpl__cc_fail(c, open, "string literal is not valid UTF-8");
	}
	core_buf_release(&b);
	return rc;
}

static size_t skip_digits(const char *s, size_t i, size_t n)
{
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* -?digits[.digits][(e|E)[+-]digits]: an integer without . or exponent. */
int tpl__parse_number(tpl__cc *c, json_t **out)
{
	size_t at = c->pos, i = at + (c->s[at] == '-'), d;
	bool real = false;
	char tmp[64], *end;

	d = skip_digits(c->s, i, c->n);
	if (d == i)
		return tpl__cc_fail(c, at, "expected a number");
	i = d;
	if (i + 1 < c->n && c->s[i] == '.' && skip_digits(c->s, i + 1, c->n) > i + 1) {
		i = skip_digits(c->s, i + 1, c->n);
		real = true;
	}
	if (i < c->n && (c->s[i] == 'e' || c->s[i] == 'E')) {
		size_t e = i + 1 + (i + 1 < c->n && strchr("+-", c->s[i + 1]) &&
				    c->s[i + 1]);

		if (skip_digits(c->s, e, c->n) == e)
			return tpl__cc_fail(c, at, "expected digits in the exponent");
		i = skip_digits(c->s, e, c->n);
		real = true;
	}
	if (i - at >= sizeof(tmp))
		return tpl__cc_fail(c, at, "number too long (at most 63 characters)");
	memcpy(tmp, c->s + at, i - at);
	tmp[i - at] = '\0';
	errno = 0;
	if (real) {
		double v = strtod(tmp, &end);

		if (*end || isinf(v))
			return tpl__cc_fail(c, at, "number %s is out of range",
					    tmp);
		*out = json_real(v);
	} else {
		long long v = strtoll(tmp, &end, 10);

		if (*end || errno)
			return tpl__cc_fail(c, at, "integer %s is out of range", tmp);
		*out = json_integer(v);
	}
	c->pos = i;
	return *out ? 0 : tpl__cc_nomem(c);
}

bool tpl__word_is(const char *s, size_t k, const char *w)
{
	return strlen(w) == k && !memcmp(s, w, k);
}

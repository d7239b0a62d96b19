/*
 * expr_lex.c — the tokenizer of gate expressions.
 *
 * Whitespace (including newlines, as YAML block scalars may carry them) is
 * skipped. Numbers are decimal: integers in the range of long long, floats
 * as Python writes them (1.5, 1., .5, 1e3). String literals are decoded
 * into the expression's pool as UTF-8; an invalid escape is an error rather
 * than Python's lenient "keep the backslash".
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr/expr_internal.h"

unsigned expr__column(const char *src, uint32_t off)
{
	return 1 + (unsigned)core_utf8_count(src, strnlen(src, off));
}

int expr__syntax_error(core_err *err, const char *src, uint32_t off,
		      const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return core_err_set(err, CORE_EEXPR, "column %u: %s",
			    expr__column(src, off), msg);
}

/* Appends the UTF-8 form of cp (a code point the escape checks let
 * through: at most U+10FFFF, no surrogate). */
static int put_utf8(core_buf *b, uint32_t cp)
{
	char s[4];

	return core_buf_append(b, s, core_utf8_encode(cp, s));
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* \xNN, \uNNNN, \UNNNNNNNN at src[pos] (the letter); *pos ends after. */
static int lex_hex_escape(expr__lexer *lx, uint32_t *pos, uint32_t *cp)
{
	uint32_t at = *pos - 1, ndig, i;
	char kind = lx->src[*pos];
	int h;

	ndig = kind == 'x' ? 2 : kind == 'u' ? 4 : 8;
	*cp = 0;
	for (i = 1; i <= ndig; i++) {
		h = hexval(lx->src[*pos + i]);	/* NUL stops: not hex */
		if (h < 0)
			return expr__syntax_error(lx->err, lx->src, at,
				"invalid escape '\\%c' in string: expected %u hex digits",
				kind, (unsigned)ndig);
		*cp = *cp << 4 | (uint32_t)h;
	}
	*pos += ndig + 1;
	if (*cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF))
		return expr__syntax_error(lx->err, lx->src, at,
			"escape '\\%c' is not a valid character (U+%04X)",
			kind, (unsigned)*cp);
	return 0;
}

static int simple_escape(char ch)
{
	switch (ch) {
	case '\\': return '\\';
	case '\'': return '\'';
	case '"': return '"';
	case 'n': return '\n';
	case 't': return '\t';
	case 'r': return '\r';
	case 'a': return '\a';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'v': return '\v';
	default: return -1;
	}
}

/* One escape sequence; src[*pos] is the character after the backslash. */
static int lex_escape(expr__lexer *lx, uint32_t *pos)
{
	char ch = lx->src[*pos];
	uint32_t cp = 0, n;
	int v = simple_escape(ch), rc;

	if (v >= 0) {
		(*pos)++;
		return core_buf_putc(lx->pool, (char)v);
	}
	if (ch == 'x' || ch == 'u' || ch == 'U') {
		rc = lex_hex_escape(lx, pos, &cp);
		return rc ? rc : put_utf8(lx->pool, cp);
	}
	if (ch >= '0' && ch <= '7') {
		for (n = 0; n < 3 && lx->src[*pos] >= '0' && lx->src[*pos] <= '7'; n++)
			cp = cp * 8 + (uint32_t)(lx->src[(*pos)++] - '0');
		return put_utf8(lx->pool, cp);
	}
	if (ch == '\0' || ch == '\n')
		return expr__syntax_error(lx->err, lx->src, *pos - 1,
					 "unterminated string: backslash at end of line");
	return expr__syntax_error(lx->err, lx->src, *pos - 1,
		"invalid escape '\\%c' in string (allowed: \\n \\t \\r \\\\ \\' \\\" \\xNN \\uNNNN \\UNNNNNNNN)",
		(unsigned char)ch >= 0x20 && (unsigned char)ch < 0x7F ? ch : '?');
}

static int lex_string(expr__lexer *lx, expr__tok *t)
{
	char quote = lx->src[lx->pos];
	uint32_t pos = lx->pos + 1;
	size_t seq;
	int rc;

	t->kind = DAG__T_STR;
	t->u.s.off = (uint32_t)lx->pool->len;
	for (;;) {
		char ch = lx->src[pos];

		if (ch == quote)
			break;
		if (ch == '\0' || ch == '\n')
			return expr__syntax_error(lx->err, lx->src, t->start,
				"unterminated string: missing closing %c", quote);
		if (ch == '\\') {
			pos++;
			rc = lex_escape(lx, &pos);
			if (rc)
				return rc;
			continue;
		}
		seq = core_utf8_decode(lx->src + pos, lx->len - pos, NULL);
		if (!seq)
			return expr__syntax_error(lx->err, lx->src, pos,
						 "invalid UTF-8 in string");
		if (core_buf_append(lx->pool, lx->src + pos, seq))
			return core_err_set(lx->err, CORE_ENOMEM, "out of memory");
		pos += (uint32_t)seq;
	}
	if (lx->pool->len - t->u.s.off > UINT32_MAX / 2)
		return core_err_set(lx->err, CORE_ENOMEM, "out of memory");
	t->u.s.len = (uint32_t)(lx->pool->len - t->u.s.off);
	lx->pos = pos + 1;
	return 0;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_name_char(char ch)
{
	return is_digit(ch) || ch == '_' || (ch >= 'a' && ch <= 'z') ||
	       (ch >= 'A' && ch <= 'Z');
}

static uint32_t skip_digits(const char *s, uint32_t pos)
{
	while (is_digit(s[pos]))
		pos++;
	return pos;
}

static int lex_int(expr__lexer *lx, expr__tok *t, uint32_t end)
{
	const char *s = lx->src;
	unsigned long long v = 0;
	uint32_t i;

	if (s[t->start] == '0' && strspn(s + t->start, "0") < end - t->start)
		return expr__syntax_error(lx->err, s, t->start,
			"leading zeros are not allowed in integer literals");
	for (i = t->start; i < end; i++) {
		v = v * 10 + (unsigned long long)(s[i] - '0');
		if (v > (unsigned long long)LLONG_MAX)
			return expr__syntax_error(lx->err, s, t->start,
				"integer literal too large (limit %lld)", LLONG_MAX);
	}
	t->kind = DAG__T_INT;
	t->u.i = (long long)v;
	return 0;
}

static int lex_number(expr__lexer *lx, expr__tok *t)
{
	const char *s = lx->src;
	uint32_t pos = skip_digits(s, lx->pos);
	bool is_float = false;
	char *endp;

	if (s[pos] == '.') {
		is_float = true;
		pos = skip_digits(s, pos + 1);
	}
	if (s[pos] == 'e' || s[pos] == 'E') {
		uint32_t exp = pos + 1;

		is_float = true;
		if (s[exp] == '+' || s[exp] == '-')
			exp++;
		if (!is_digit(s[exp]))
			return expr__syntax_error(lx->err, s, t->start,
				"invalid number: exponent has no digits");
		pos = skip_digits(s, exp);
	}
	if (is_name_char(s[pos]) || s[pos] == '.')
		return expr__syntax_error(lx->err, s, t->start,
					 "invalid number literal");
	lx->pos = pos;
	if (!is_float)
		return lex_int(lx, t, pos);
	t->kind = DAG__T_FLOAT;
	t->u.d = strtod(s + t->start, &endp);
	if (endp != s + pos)
		return expr__syntax_error(lx->err, s, t->start,
					 "invalid number literal");
	return 0;
}

static const struct { const char *word; expr__tok_kind kind; } keywords[] = {
	{ "and", DAG__T_AND }, { "or", DAG__T_OR }, { "not", DAG__T_NOT },
	{ "in", DAG__T_IN }, { "is", DAG__T_IS }, { "if", DAG__T_IF },
	{ "else", DAG__T_ELSE }, { "True", DAG__T_TRUE },
	{ "False", DAG__T_FALSE }, { "None", DAG__T_NONE_KW },
};

static void lex_name(expr__lexer *lx, expr__tok *t)
{
	uint32_t pos = lx->pos, n;
	size_t i;

	while (is_name_char(lx->src[pos]))
		pos++;
	lx->pos = pos;
	n = pos - t->start;
	t->kind = DAG__T_NAME;
	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strlen(keywords[i].word) == n &&
		    !memcmp(keywords[i].word, lx->src + t->start, n))
			t->kind = keywords[i].kind;
}

/* Two-character operators first, then one-character ones. */
static int lex_op(expr__lexer *lx, expr__tok *t)
{
	static const struct { const char *op; expr__tok_kind kind; } ops[] = {
		{ "//", DAG__T_DSLASH }, { "==", DAG__T_EQ }, { "!=", DAG__T_NE },
		{ "<=", DAG__T_LE }, { ">=", DAG__T_GE }, { "(", DAG__T_LPAREN },
		{ ")", DAG__T_RPAREN }, { "[", DAG__T_LBRACK },
		{ "]", DAG__T_RBRACK }, { "{", DAG__T_LBRACE },
		{ "}", DAG__T_RBRACE }, { ":", DAG__T_COLON },
		{ ",", DAG__T_COMMA }, { ".", DAG__T_DOT },
		{ "+", DAG__T_PLUS }, { "-", DAG__T_MINUS }, { "*", DAG__T_STAR },
		{ "/", DAG__T_SLASH }, { "%", DAG__T_PERCENT }, { "<", DAG__T_LT },
		{ ">", DAG__T_GT },
	};
	const char *s = lx->src + lx->pos;
	size_t i, n;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		n = strlen(ops[i].op);
		if (!strncmp(s, ops[i].op, n)) {
			t->kind = ops[i].kind;
			lx->pos += (uint32_t)n;
			return 0;
		}
	}
	return -1;
}

static int lex_bad_char(expr__lexer *lx)
{
	const unsigned char *s = (const unsigned char *)lx->src + lx->pos;
	size_t seq;

	switch (*s) {
	case '=':
		return expr__syntax_error(lx->err, lx->src, lx->pos,
			"unexpected '=': use '==' to compare");
	case '!':
		return expr__syntax_error(lx->err, lx->src, lx->pos,
			"unexpected '!': use 'not' or '!='");
	case '&':
		return expr__syntax_error(lx->err, lx->src, lx->pos,
			"unexpected '&': use 'and'");
	case '|':
		return expr__syntax_error(lx->err, lx->src, lx->pos,
			"unexpected '|': use 'or'");
	}
	if (*s >= 0x20 && *s < 0x7F)
		return expr__syntax_error(lx->err, lx->src, lx->pos,
					 "unexpected character '%c'", *s);
	seq = core_utf8_decode((const char *)s, lx->len - lx->pos, NULL);
	if (seq > 1)
		return expr__syntax_error(lx->err, lx->src, lx->pos,
			"unexpected character '%.*s'", (int)seq, (const char *)s);
	return expr__syntax_error(lx->err, lx->src, lx->pos,
				 "unexpected byte 0x%02X", *s);
}

int expr__lex_next(expr__lexer *lx, expr__tok *t)
{
	const char *s = lx->src;
	int rc = 0;

	while (s[lx->pos] == ' ' || s[lx->pos] == '\t' || s[lx->pos] == '\n' ||
	       s[lx->pos] == '\r' || s[lx->pos] == '\f' || s[lx->pos] == '\v')
		lx->pos++;
	t->start = lx->pos;
	if (lx->pos >= lx->len)
		t->kind = DAG__T_EOF;
	else if (is_digit(s[lx->pos]) || (s[lx->pos] == '.' && is_digit(s[lx->pos + 1])))
		rc = lex_number(lx, t);
	else if (s[lx->pos] == '\'' || s[lx->pos] == '"')
		rc = lex_string(lx, t);
	else if (is_name_char(s[lx->pos]))
		lex_name(lx, t);
	else if (lex_op(lx, t))
		rc = lex_bad_char(lx);
	t->end = lx->pos;
	return rc;
}

/*
 * tpl_template.c — compiles and renders prompt templates (the Jinja2 subset
 * described in tpl_template.h and docs/templates.md).
 *
 * A template compiles to a list of segments: literal text (already
 * whitespace-controlled and newline-normalised, as Jinja's lexer leaves
 * it) and expressions (a field path into the row, or a string literal,
 * then filters). Rendering walks the segments; an expression's value is a
 * jansson value (borrowed from the row, or made by a filter) or "missing",
 * which only a default filter may replace.
 *
 * Text is UTF-8 throughout. Python's notions are followed where the output
 * is visible: str() of values, str.isspace() for trim and whitespace
 * control, str.upper()/lower() for the scripts listed at case_map().
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template.h"

#define HASH_PREFIX "sha256:"

enum filter_kind { F_UPPER, F_LOWER, F_TRIM, F_LENGTH, F_TOJSON, F_DEFAULT };

static const char *const filter_names[] = {
	"upper", "lower", "trim", "length", "tojson", "default", NULL
};

struct filter {
	enum filter_kind kind;
	json_t *arg;        /* F_DEFAULT: the replacement literal */
	bool falsy;         /* F_DEFAULT: also replace falsy values */
};

struct step {
	char *key;          /* NULL: an array index */
	long long index;
	size_t path_len;    /* length of expr.path up to and with this step */
};

struct expr {
	json_t *literal;    /* a string literal expression, else NULL */
	size_t field;       /* index in the template's fields (no literal) */
	struct step *steps; /* steps[0] is the top-level field */
	size_t nsteps;
	struct filter *filters;
	size_t nfilters;
	char *path;         /* "a.b[0]", for messages */
};

struct seg {
	char *text;         /* literal text, NULL for an expression */
	size_t len;
	struct expr *e;
};

struct tpl_template {
	char *src;
	char hash[sizeof(HASH_PREFIX) + CORE_SHA256_HEX_LEN];
	struct seg *segs;
	size_t nsegs;
	char **fields;
	bool *required;
	size_t nfields;
};

/* ------------------------------------------------------------ unicode */

/* The code point at s (n > 0 bytes left) into *cp and its length; a byte
 * that starts no valid sequence is 1 with *cp = 0xFFFFFFFF (such bytes
 * are passed through unchanged). */
static size_t utf8_dec(const char *s, size_t n, uint32_t *cp)
{
	size_t len = core_utf8_decode(s, n, cp);

	if (len)
		return len;
	*cp = 0xFFFFFFFF;
	return 1;
}

/* Python's str.isspace() (what str.strip() and regex \s remove). */
static bool is_pyspace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) ||
	       c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Bytes of leading whitespace of s[0..n). */
static size_t lspace(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t c;
		size_t k = utf8_dec(s + i, n - i, &c);

		if (!is_pyspace(c))
			break;
		i += k;
	}
	return i;
}

/* The length of s[0..n) without its trailing whitespace. */
static size_t rstrip(const char *s, size_t n)
{
	size_t end = 0;

	for (size_t i = 0; i < n;) {
		uint32_t c;

		i += utf8_dec(s + i, n - i, &c);
		if (!is_pyspace(c))
			end = i;
	}
	return end;
}

/* Pairs laid out as alternating upper/lower code points in [lo, hi]; the
 * upper case of each pair is at an even (odd_upper: odd) code point. */
static uint32_t pair_case(uint32_t c, bool upper, bool odd_upper)
{
	bool is_upper = (c & 1) == (odd_upper ? 1u : 0u);

	if (upper)
		return is_upper ? c : c - 1;
	return is_upper ? c + 1 : c;
}

/* Latin Extended-A, U+0100..U+017F. Returns the count written to out. */
static size_t case_latin_a(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if (c == 0x130 && !upper) { /* İ -> i + combining dot above */
		out[0] = 'i';
		out[1] = 0x307;
		return 2;
	}
	if (c == 0x131 || c == 0x17F) /* ı, ſ */
		out[0] = upper ? (c == 0x131 ? 'I' : 'S') : c;
	else if (c == 0x149 && upper) { /* ŉ -> ʼN */
		out[0] = 0x2BC;
		out[1] = 'N';
		return 2;
	} else if (c == 0x178)
		out[0] = upper ? c : 0xFF;
	else if (c < 0x138 && c != 0x130)
		out[0] = pair_case(c, upper, false);
	else if (c >= 0x139 && c <= 0x148)
		out[0] = pair_case(c, upper, true);
	else if (c >= 0x14A && c <= 0x177)
		out[0] = pair_case(c, upper, false);
	else if (c >= 0x179 && c <= 0x17E)
		out[0] = pair_case(c, upper, true);
	return 1;
}

static size_t case_greek(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if ((c == 0x390 || c == 0x3B0) && upper) { /* ΐ, ΰ: three points */
		out[0] = c == 0x390 ? 0x399 : 0x3A5;
		out[1] = 0x308;
		out[2] = 0x301;
		return 3;
	}
	if (upper) {
		if (c >= 0x3B1 && c <= 0x3CB)
			out[0] = c == 0x3C2 ? 0x3A3 : c - 0x20;
		else if (c == 0x3AC)
			out[0] = 0x386;
		else if (c >= 0x3AD && c <= 0x3AF)
			out[0] = c - 0x25;
		else if (c == 0x3CC)
			out[0] = 0x38C;
		else if (c == 0x3CD || c == 0x3CE)
			out[0] = c - 0x3F;
	} else {
		if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
			out[0] = c + 0x20;
		else if (c == 0x386)
			out[0] = 0x3AC;
		else if (c >= 0x388 && c <= 0x38A)
			out[0] = c + 0x25;
		else if (c == 0x38C)
			out[0] = 0x3CC;
		else if (c == 0x38E || c == 0x38F)
			out[0] = c + 0x3F;
	}
	return 1;
}

/*
 * Python's str.upper()/lower() for ASCII, Latin-1, Latin Extended-A, Greek
 * and basic Cyrillic (U+0400..U+045F); other characters are unchanged.
 * The context-dependent Greek final sigma of lower() is not applied.
 */
static size_t case_map(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if (c < 0x80) {
		if (upper && c >= 'a' && c <= 'z')
			out[0] = c - 32;
		else if (!upper && c >= 'A' && c <= 'Z')
			out[0] = c + 32;
	} else if (c < 0x100) {
		if (upper && c == 0xDF) { /* ß -> SS */
			out[0] = out[1] = 'S';
			return 2;
		}
		if (upper && c == 0xB5)
			out[0] = 0x39C;
		else if (upper && c == 0xFF)
			out[0] = 0x178;
		else if (upper && c >= 0xE0 && c != 0xF7)
			out[0] = c - 32;
		else if (!upper && c >= 0xC0 && c <= 0xDE && c != 0xD7)
			out[0] = c + 32;
	} else if (c < 0x180) {
		return case_latin_a(c, upper, out);
	} else if (c >= 0x386 && c <= 0x3CE) {
		return case_greek(c, upper, out);
	} else if (c >= 0x400 && c <= 0x45F) {
		if (upper && c >= 0x430)
			out[0] = c >= 0x450 ? c - 80 : c - 32;
		else if (!upper && c < 0x430)
			out[0] = c < 0x410 ? c + 80 : c + 32;
	}
	return 1;
}

static int append_case(core_buf *b, const char *s, size_t n, bool upper)
{
	for (size_t i = 0; i < n;) {
		uint32_t c, m[3];
		size_t k = utf8_dec(s + i, n - i, &c);
		char enc[12];
		size_t elen = 0;

		if (c == 0xFFFFFFFF) {
			if (core_buf_append(b, s + i, k))
				return CORE_ENOMEM;
			i += k;
			continue;
		}
		for (size_t j = 0, nm = case_map(c, upper, m); j < nm; j++)
			elen += core_utf8_encode(m[j], enc + elen);
		if (core_buf_append(b, enc, elen))
			return CORE_ENOMEM;
		i += k;
	}
	return 0;
}

/* ------------------------------------------------ Python-style values */

/* Python str() of a JSON value; objects and arrays as compact JSON. */
static int py_str(core_buf *b, const json_t *v)
{
	char num[48];

	switch (json_typeof(v)) {
	case JSON_STRING:
		return core_buf_append(b, json_string_value(v),
				       json_string_length(v));
	case JSON_INTEGER:
		return core_buf_printf(b, "%" JSON_INTEGER_FORMAT,
				       json_integer_value(v));
	case JSON_REAL:
		core_format_double_py(json_real_value(v), num, sizeof(num));
		return core_buf_puts(b, num);
	case JSON_TRUE:
		return core_buf_puts(b, "True");
	case JSON_FALSE:
		return core_buf_puts(b, "False");
	case JSON_NULL:
		return core_buf_puts(b, "None");
	case JSON_OBJECT:
	case JSON_ARRAY:
		break;
	}
	return core_json_append(b, v, -1, 0);
}

static bool truthy(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return json_object_size(v) > 0;
	case JSON_ARRAY:
		return json_array_size(v) > 0;
	case JSON_STRING:
		return json_string_length(v) > 0;
	case JSON_INTEGER:
		return json_integer_value(v) != 0;
	case JSON_REAL:
		return json_real_value(v) != 0;
	case JSON_TRUE:
		return true;
	case JSON_FALSE:
	case JSON_NULL:
		break;
	}
	return false;
}

/* ------------------------------------------------------------ compile */

struct cc {
	tpl_template *t;
	const char *s;
	size_t n;           /* bytes compiled (a trailing newline dropped) */
	size_t pos;
	size_t capsegs;     /* allocated t->segs */
	core_err *err;
};

static int cc_nomem(struct cc *c)
{
	return core_err_set(c->err, CORE_ENOMEM, "out of memory");
}

static int cc_fail(const struct cc *c, size_t at, const char *fmt, ...)
	CORE_PRINTF(3, 4);

/* 1-based line and column (in characters) of byte offset at of s. */
static void where(const char *s, size_t at, int *line, int *col)
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

static int cc_fail(const struct cc *c, size_t at, const char *fmt, ...)
{
	char msg[768];
	int line, col;
	va_list ap;

	where(c->s, at, &line, &col);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return core_err_set(c->err, CORE_ECONFIG, "template line %d, column %d: %s",
			    line, col, msg);
}

static bool is_ident_start(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_ident(char ch)
{
	return is_ident_start(ch) || (ch >= '0' && ch <= '9');
}

static size_t ident_len(const char *s, size_t n)
{
	size_t i = 0;

	if (n && is_ident_start(s[0]))
		while (i < n && is_ident(s[i]))
			i++;
	return i;
}

/* What is at `at`, for "got ..." in messages. */
static const char *cc_got(const struct cc *c, size_t at, char *buf, size_t cap)
{
	size_t k;
	uint32_t cp;

	if (at >= c->n)
		return "end of template";
	if (!strncmp(c->s + at, "}}", 2) || !strncmp(c->s + at, "-}}", 3))
		return "'}}'";
	k = ident_len(c->s + at, c->n - at);
	if (!k && c->s[at] >= '0' && c->s[at] <= '9')
		while (at + k < c->n && is_ident(c->s[at + k]))
			k++;
	if (!k)
		k = utf8_dec(c->s + at, c->n - at, &cp);
	snprintf(buf, cap, "'%.*s'", (int)(k > 40 ? 40 : k), c->s + at);
	return buf;
}

static void skip_ws(struct cc *c)
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
static int parse_escape(struct cc *c, core_buf *b)
{
	static const char from[] = "\\'\"nrtbfva", to[] = "\\'\"\n\r\t\b\f\v\a";
	size_t at = c->pos - 1, hex;
	const char *hit;
	uint32_t cp;
	char enc[4];

	if (c->pos >= c->n)
		return cc_fail(c, at, "unterminated string literal");
	hit = strchr(from, c->s[c->pos]);
	if (hit && *hit) {
		c->pos++;
		return core_buf_putc(b, to[hit - from]) ? cc_nomem(c) : 0;
	}
	hex = c->s[c->pos] == 'x' ? 2 : c->s[c->pos] == 'u' ? 4 :
	      c->s[c->pos] == 'U' ? 8 : 0;
	if (!hex) /* unknown escapes stay as written, as in Python */
		return core_buf_putc(b, '\\') ? cc_nomem(c) : 0;
	if (c->n - c->pos - 1 < hex || hexval(c->s + c->pos + 1, hex, &cp))
		return cc_fail(c, at, "expected %zu hex digits after '\\%c'", hex,
			       c->s[c->pos]);
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return cc_fail(c, at, "'\\%c' escape: U+%04X is not allowed here "
			       "(NUL, a surrogate or past U+10FFFF)", c->s[c->pos],
			       (unsigned)cp);
	c->pos += 1 + hex;
	return core_buf_append(b, enc, core_utf8_encode(cp, enc)) ? cc_nomem(c) : 0;
}

/* A '...' or "..." literal at c->pos with Python escapes; *out is a new
 * string. */
static int parse_string(struct cc *c, json_t **out)
{
	char q = c->s[c->pos];
	size_t open = c->pos++;
	core_buf b = { 0 };
	int rc = 0;

	while (!rc) {
		if (c->pos >= c->n) {
			rc = cc_fail(c, open, "unterminated string literal: "
				     "expected a closing %c", q);
		} else if (c->s[c->pos] == q) {
			c->pos++;
			break;
		} else if (c->s[c->pos] == '\\') {
			c->pos++;
			rc = parse_escape(c, &b);
		} else {
			rc = core_buf_putc(&b, c->s[c->pos++]) ? cc_nomem(c) : 0;
		}
	}
	if (!rc) {
		*out = json_stringn(b.data ? b.data : "", b.len);
		if (!*out)
			rc = cc_fail(c, open, "string literal is not valid UTF-8");
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
static int parse_number(struct cc *c, json_t **out)
{
	size_t at = c->pos, i = at + (c->s[at] == '-'), d;
	bool real = false;
	char tmp[64], *end;

	d = skip_digits(c->s, i, c->n);
	if (d == i)
		return cc_fail(c, at, "expected a number");
	i = d;
	if (i + 1 < c->n && c->s[i] == '.' && skip_digits(c->s, i + 1, c->n) > i + 1) {
		i = skip_digits(c->s, i + 1, c->n);
		real = true;
	}
	if (i < c->n && (c->s[i] == 'e' || c->s[i] == 'E')) {
		size_t e = i + 1 + (i + 1 < c->n && strchr("+-", c->s[i + 1]) &&
				    c->s[i + 1]);

		if (skip_digits(c->s, e, c->n) == e)
			return cc_fail(c, at, "expected digits in the exponent");
		i = skip_digits(c->s, e, c->n);
		real = true;
	}
	if (i - at >= sizeof(tmp))
		return cc_fail(c, at, "number too long (at most 63 characters)");
	memcpy(tmp, c->s + at, i - at);
	tmp[i - at] = '\0';
	errno = 0;
	if (real) {
		double v = strtod(tmp, &end);

		if (*end || isinf(v))
			return cc_fail(c, at, "number %s is out of range", tmp);
		*out = json_real(v);
	} else {
		long long v = strtoll(tmp, &end, 10);

		if (*end || errno)
			return cc_fail(c, at, "integer %s is out of range", tmp);
		*out = json_integer(v);
	}
	c->pos = i;
	return *out ? 0 : cc_nomem(c);
}

static bool word_is(const char *s, size_t k, const char *w)
{
	return strlen(w) == k && !memcmp(s, w, k);
}

/* A filter argument: a string, a number, true/false/none (or Python's
 * True/False/None, as Jinja accepts). */
static int parse_literal(struct cc *c, json_t **out)
{
	const char *s = c->s + c->pos;
	size_t k = ident_len(s, c->n - c->pos);
	char got[48];

	if (c->pos < c->n && (*s == '\'' || *s == '"'))
		return parse_string(c, out);
	if (c->pos < c->n && (*s == '-' || (*s >= '0' && *s <= '9')))
		return parse_number(c, out);
	if (word_is(s, k, "true") || word_is(s, k, "True"))
		*out = json_true();
	else if (word_is(s, k, "false") || word_is(s, k, "False"))
		*out = json_false();
	else if (word_is(s, k, "none") || word_is(s, k, "None"))
		*out = json_null();
	else
		return cc_fail(c, c->pos, "expected a literal (a quoted string, a "
			       "number, true, false or none), got %s",
			       cc_got(c, c->pos, got, sizeof(got)));
	c->pos += k;
	return 0;
}

/* The arguments after '(': none, except default(value[, boolean]). */
static int parse_args(struct cc *c, struct filter *f)
{
	char got[48];
	json_t *flag = NULL;
	int rc;

	skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == ')') {
		c->pos++;
		return 0;
	}
	if (f->kind != F_DEFAULT)
		return cc_fail(c, c->pos, "filter '%s' takes no arguments",
			       filter_names[f->kind]);
	rc = parse_literal(c, &f->arg);
	if (rc)
		return rc;
	skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == ',') {
		size_t at;

		c->pos++;
		skip_ws(c);
		at = c->pos;
		rc = parse_literal(c, &flag);
		if (rc)
			return rc;
		f->falsy = json_is_true(flag);
		if (!json_is_boolean(flag)) {
			json_decref(flag);
			return cc_fail(c, at, "the second argument of default must be "
				       "true or false (replace falsy values too)");
		}
		json_decref(flag);
		skip_ws(c);
	}
	if (c->pos >= c->n || c->s[c->pos] != ')')
		return cc_fail(c, c->pos, "expected ')' after the arguments of "
			       "default, got %s", cc_got(c, c->pos, got, sizeof(got)));
	c->pos++;
	return 0;
}

static int parse_filter(struct cc *c, struct expr *e)
{
	size_t at, k;
	struct filter *f;
	int kind = -1;
	char got[48];

	skip_ws(c);
	at = c->pos;
	k = ident_len(c->s + at, c->n - at);
	if (!k)
		return cc_fail(c, at, "expected a filter name after '|', got %s",
			       cc_got(c, at, got, sizeof(got)));
	for (int i = 0; filter_names[i]; i++)
		if (word_is(c->s + at, k, filter_names[i]))
			kind = i;
	if (kind < 0)
		return cc_fail(c, at, "unknown filter '%.*s' (supported: upper, lower, "
			       "trim, length, tojson, default)", (int)k, c->s + at);
	f = realloc(e->filters, (e->nfilters + 1) * sizeof(*f));
	if (!f)
		return cc_nomem(c);
	e->filters = f;
	f = &e->filters[e->nfilters++];
	memset(f, 0, sizeof(*f));
	f->kind = (enum filter_kind)kind;
	c->pos += k;
	skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == '(') {
		c->pos++;
		int rc = parse_args(c, f);

		if (rc)
			return rc;
	}
	if (f->kind == F_DEFAULT && !f->arg && !(f->arg = json_string("")))
		return cc_nomem(c);
	return 0;
}

/* Appends a step (key: malloc'd, taken; NULL for an index) and its part of
 * the display path: the field itself, then .name, ['other key'] or [n]. */
static int add_step(struct cc *c, struct expr *e, core_buf *path, char *key,
		    long long index)
{
	struct step *s = realloc(e->steps, (e->nsteps + 1) * sizeof(*s));
	int rc;

	if (!s) {
		free(key);
		return cc_nomem(c);
	}
	e->steps = s;
	s = &e->steps[e->nsteps++];
	s->key = key;
	s->index = index;
	if (!key)
		rc = core_buf_printf(path, "[%lld]", index);
	else if (e->nsteps == 1)
		rc = core_buf_puts(path, key);
	else if (ident_len(key, strlen(key)) == strlen(key))
		rc = core_buf_printf(path, ".%s", key);
	else
		rc = core_buf_printf(path, "['%s']", key);
	s->path_len = path->len;
	return rc ? cc_nomem(c) : 0;
}

/* One [ 'key' ] or [ int ] step, c->pos just after '['. */
static int parse_subscript(struct cc *c, struct expr *e, core_buf *path,
			   size_t open)
{
	json_t *v = NULL;
	char got[48], *key = NULL;
	long long index = 0;
	int rc;

	skip_ws(c);
	if (c->pos < c->n && (c->s[c->pos] == '\'' || c->s[c->pos] == '"'))
		rc = parse_string(c, &v);
	else if (c->pos < c->n && (c->s[c->pos] == '-' ||
				   (c->s[c->pos] >= '0' && c->s[c->pos] <= '9')))
		rc = parse_number(c, &v);
	else
		return cc_fail(c, c->pos, "expected a quoted key or an integer "
			       "index after '[', got %s",
			       cc_got(c, c->pos, got, sizeof(got)));
	if (rc)
		return rc;
	if (json_is_real(v))
		rc = cc_fail(c, open + 1, "an index must be an integer");
	else if (json_is_integer(v) && !e->nsteps)
		rc = cc_fail(c, open, "the row is an object: name a field "
			     "(row['name'] or row.name), not an index");
	else if (json_is_string(v) && !(key = strdup(json_string_value(v))))
		rc = cc_nomem(c);
	index = json_is_integer(v) ? json_integer_value(v) : 0;
	json_decref(v);
	if (rc)
		return rc;
	skip_ws(c);
	if (c->pos >= c->n || c->s[c->pos] != ']') {
		free(key);
		return cc_fail(c, c->pos, "expected ']', got %s",
			       cc_got(c, c->pos, got, sizeof(got)));
	}
	c->pos++;
	return add_step(c, e, path, key, index);
}

static int parse_steps(struct cc *c, struct expr *e, core_buf *path)
{
	char got[48];
	int rc = 0;

	while (!rc) {
		size_t k;
		char *key;

		skip_ws(c);
		if (c->pos >= c->n || (c->s[c->pos] != '.' && c->s[c->pos] != '['))
			break;
		if (c->s[c->pos++] == '[') {
			rc = parse_subscript(c, e, path, c->pos - 1);
			continue;
		}
		skip_ws(c);
		k = ident_len(c->s + c->pos, c->n - c->pos);
		if (!k)
			return cc_fail(c, c->pos, "expected a field name after '.', "
				       "got %s", cc_got(c, c->pos, got, sizeof(got)));
		key = strndup(c->s + c->pos, k);
		if (!key)
			return cc_nomem(c);
		c->pos += k;
		rc = add_step(c, e, path, key, 0);
	}
	if (!rc && !e->nsteps)
		rc = cc_fail(c, c->pos, "expected '.' or '[' after 'row' (name a "
			     "field: row.name or row['name']), got %s",
			     cc_got(c, c->pos, got, sizeof(got)));
	return rc;
}

/* The primary: a string literal, or row and its steps. */
static int parse_primary(struct cc *c, struct expr *e, core_buf *path)
{
	size_t at = c->pos, k;
	char got[48];

	if (at < c->n && (c->s[at] == '\'' || c->s[at] == '"')) {
		int rc = parse_string(c, &e->literal);

		if (!rc && core_buf_puts(path, "string literal"))
			rc = cc_nomem(c);
		return rc;
	}
	k = ident_len(c->s + at, c->n - at);
	if (!k)
		return cc_fail(c, at, "expected an expression (row.name, "
			       "row['name'] or a quoted string), got %s",
			       cc_got(c, at, got, sizeof(got)));
	if (!word_is(c->s + at, k, "row"))
		return cc_fail(c, at, "unknown name '%.*s': expressions start with "
			       "'row', e.g. {{ row.%.*s }}", (int)k, c->s + at,
			       (int)k, c->s + at);
	c->pos += k;
	return parse_steps(c, e, path);
}

/* An expression after "{{" / "{{-" (open: the tag's position) through
 * "}}" / "-}}"; *strip_after is set for "-}}". */
static int parse_expr(struct cc *c, size_t open, struct expr *e,
		      bool *strip_after)
{
	core_buf path = { 0 };
	char got[48];
	int line, col, rc;

	skip_ws(c);
	rc = parse_primary(c, e, &path);
	while (!rc) {
		skip_ws(c);
		if (c->pos >= c->n || c->s[c->pos] != '|')
			break;
		c->pos++;
		rc = parse_filter(c, e);
	}
	if (!rc && c->n - c->pos >= 3 && !strncmp(c->s + c->pos, "-}}", 3)) {
		*strip_after = true;
		c->pos += 3;
	} else if (!rc && c->n - c->pos >= 2 && !strncmp(c->s + c->pos, "}}", 2)) {
		c->pos += 2;
	} else if (!rc) {
		where(c->s, open, &line, &col);
		rc = cc_fail(c, c->pos, "expected '|' or '}}' to close the "
			     "expression opened at line %d, column %d, got %s",
			     line, col, cc_got(c, c->pos, got, sizeof(got)));
	}
	e->path = core_buf_steal(&path);
	if (!rc && !e->path)
		rc = cc_nomem(c);
	return rc;
}

static void free_expr(struct expr *e)
{
	if (!e)
		return;
	json_decref(e->literal);
	for (size_t i = 0; i < e->nsteps; i++)
		free(e->steps[i].key);
	for (size_t i = 0; i < e->nfilters; i++)
		json_decref(e->filters[i].arg);
	free(e->steps);
	free(e->filters);
	free(e->path);
	free(e);
}

static int add_seg(struct cc *c, char *text, size_t len, struct expr *e)
{
	tpl_template *t = c->t;

	if (t->nsegs == c->capsegs) {
		size_t cap = c->capsegs ? 2 * c->capsegs : 8;
		struct seg *s = realloc(t->segs, cap * sizeof(*s));

		if (!s) {
			free(text);
			free_expr(e);
			return cc_nomem(c);
		}
		t->segs = s;
		c->capsegs = cap;
	}
	t->segs[t->nsegs++] = (struct seg){ text, len, e };
	return 0;
}

/* Literal text, with CR LF and CR turned into LF as Jinja's lexer does. */
static int add_text(struct cc *c, const char *s, size_t n)
{
	char *text;
	size_t len = 0;

	if (!n)
		return 0;
	text = malloc(n + 1);
	if (!text)
		return cc_nomem(c);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
			continue;
		text[len++] = s[i] == '\r' ? '\n' : s[i];
	}
	text[len] = '\0';
	return add_seg(c, text, len, NULL);
}

/* Records the expression's top-level field (first use keeps its place). */
static int add_field(struct cc *c, const struct expr *e)
{
	tpl_template *t = c->t;
	const char *name = e->steps[0].key;
	bool defaulted = false;
	size_t i;

	for (size_t k = 0; k < e->nfilters; k++)
		defaulted |= e->filters[k].kind == F_DEFAULT;
	for (i = 0; i < t->nfields && strcmp(t->fields[i], name); i++)
		;
	if (i == t->nfields) {
		char **f = realloc(t->fields, (i + 1) * sizeof(*f));
		bool *r = f ? realloc(t->required, (i + 1) * sizeof(*r)) : NULL;

		if (f)
			t->fields = f;
		if (r)
			t->required = r;
		if (!f || !r || !(t->fields[i] = strdup(name)))
			return cc_nomem(c);
		t->required[i] = false;
		t->nfields++;
	}
	t->required[i] |= !defaulted;
	return 0;
}

static int compile_expr(struct cc *c, size_t open, bool *strip_after)
{
	struct expr *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return cc_nomem(c);
	rc = parse_expr(c, open, e, strip_after);
	if (!rc && !e->literal)
		rc = add_field(c, e);
	if (rc) {
		free_expr(e);
		return rc;
	}
	return add_seg(c, NULL, 0, e);
}

static int skip_comment(struct cc *c, size_t open, bool *strip_after)
{
	const char *end = NULL;

	for (size_t i = c->pos; !end && i + 1 < c->n; i++)
		if (c->s[i] == '#' && c->s[i + 1] == '}')
			end = c->s + i;
	if (!end)
		return cc_fail(c, open, "unclosed comment: expected '#}'");
	*strip_after = (size_t)(end - c->s) > c->pos && end[-1] == '-';
	c->pos = (size_t)(end - c->s) + 2;
	return 0;
}

static size_t find_tag(const char *s, size_t from, size_t n)
{
	for (size_t i = from; i + 1 < n; i++)
		if (s[i] == '{' && strchr("{%#", s[i + 1]) && s[i + 1])
			return i;
	return n;
}

static int compile_body(struct cc *c)
{
	bool lstrip = false;
	int rc = 0;

	while (!rc && c->pos < c->n) {
		size_t at = find_tag(c->s, c->pos, c->n), len = at - c->pos;
		const char *text = c->s + c->pos;

		if (lstrip) {
			size_t k = lspace(text, len);

			text += k;
			len -= k;
		}
		if (at + 2 < c->n && c->s[at + 2] == '-')
			len = rstrip(text, len);
		rc = add_text(c, text, len);
		if (rc || at >= c->n)
			break;
		if (c->s[at + 1] == '%')
			return cc_fail(c, at, "statements ({%% ... %%}) are not "
				       "supported: use {{ expressions }} and "
				       "{# comments #} only");
		c->pos = at + 2 + (at + 2 < c->n && c->s[at + 2] == '-');
		lstrip = false;
		if (c->s[at + 1] == '#')
			rc = skip_comment(c, at, &lstrip);
		else
			rc = compile_expr(c, at, &lstrip);
	}
	return rc;
}

int tpl_compile(const char *src, tpl_template **out, core_err *err)
{
	struct cc c = { 0 };
	uint8_t md[CORE_SHA256_LEN];
	int rc;

	*out = NULL;
	if (!src)
		return core_err_set(err, CORE_ECONFIG, "template: no source text");
	c.t = calloc(1, sizeof(*c.t));
	if (!c.t || !(c.t->src = strdup(src))) {
		free(c.t);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	c.s = c.t->src;
	c.n = strlen(src);
	c.err = err;
	/* Jinja drops one trailing newline (keep_trailing_newline=False). */
	if (c.n && c.s[c.n - 1] == '\n')
		c.n--;
	if (c.n && c.s[c.n - 1] == '\r')
		c.n--;
	core_sha256(src, strlen(src), md);
	memcpy(c.t->hash, HASH_PREFIX, sizeof(HASH_PREFIX) - 1);
	core_hex(md, sizeof(md), c.t->hash + sizeof(HASH_PREFIX) - 1);
	rc = compile_body(&c);
	if (rc) {
		tpl_free(c.t);
		return rc;
	}
	*out = c.t;
	return 0;
}

void tpl_free(tpl_template *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nsegs; i++) {
		free(t->segs[i].text);
		free_expr(t->segs[i].e);
	}
	for (size_t i = 0; i < t->nfields; i++)
		free(t->fields[i]);
	free(t->segs);
	free(t->fields);
	free(t->required);
	free(t->src);
	free(t);
}

const char *tpl_hash(const tpl_template *t)
{
	return t->hash;
}

const char *tpl_source(const tpl_template *t)
{
	return t->src;
}

size_t tpl_nfields(const tpl_template *t)
{
	return t->nfields;
}

const char *tpl_field(const tpl_template *t, size_t i)
{
	return i < t->nfields ? t->fields[i] : NULL;
}

bool tpl_field_required(const tpl_template *t, size_t i)
{
	return i < t->nfields && t->required[i];
}

/* ------------------------------------------------------------- render */

/* The value an expression holds while filters run: v borrowed (from the
 * row or the template) or owned (own == v); v NULL means missing. */
struct val {
	const json_t *v;
	json_t *own;
};

static void val_own(struct val *x, json_t *own)
{
	json_decref(x->own);
	x->own = own;
	x->v = own;
}

/* Walks the steps. A missing step (or a null before the last step) leaves
 * x->v NULL and the message in *miss; a step into a value of the wrong
 * kind is CORE_EDATA. */
static int lookup(const struct expr *e, const json_t *row, struct val *x,
		  core_err *miss, core_err *err)
{
	const json_t *v = row;

	if (!json_is_object(row))
		return core_err_set(err, CORE_EDATA, "template: the row is %s, not "
				    "an object", core_json_kind(row));
	for (size_t i = 0; i < e->nsteps; i++) {
		const struct step *s = &e->steps[i];
		int plen = (int)s->path_len, prev = i ? (int)e->steps[i - 1].path_len : 0;
		const json_t *next = NULL;

		if (json_is_null(v)) {
			core_err_set(miss, CORE_EDATA, "template field '%.*s' is not in "
				     "the row ('%.*s' is null)", plen, e->path,
				     prev, e->path);
			return 0;
		}
		if (s->key ? !json_is_object(v) : !json_is_array(v))
			return core_err_set(err, CORE_EDATA, "template field '%.*s': "
					    "'%.*s' is %s, not %s", plen, e->path,
					    prev, e->path, core_json_kind(v),
					    s->key ? "an object" : "an array");
		if (s->key) {
			next = json_object_get(v, s->key);
		} else {
			long long n = (long long)json_array_size(v);
			long long k = s->index < 0 ? s->index + n : s->index;

			if (k >= 0 && k < n)
				next = json_array_get(v, (size_t)k);
			else {
				core_err_set(miss, CORE_EDATA, "template field '%.*s' is "
					     "not in the row ('%.*s' has %lld items)",
					     plen, e->path, prev, e->path, n);
				return 0;
			}
		}
		if (!next) {
			core_err_set(miss, CORE_EDATA, "template field '%.*s' is not "
				     "in the row", plen, e->path);
			return 0;
		}
		v = next;
	}
	x->v = v;
	return 0;
}

static int filter_text(const struct filter *f, struct val *x)
{
	core_buf b = { 0 }, o = { 0 };
	const char *p;
	size_t n;
	json_t *s;
	int rc = py_str(&b, x->v);

	p = b.data ? b.data : "";
	n = b.len;
	if (!rc && f->kind == F_TRIM) {
		size_t k = lspace(p, n);

		p += k;
		n = rstrip(p, n - k);
	} else if (!rc) {
		rc = append_case(&o, p, n, f->kind == F_UPPER);
		p = o.data ? o.data : "";
		n = o.len;
	}
	s = rc ? NULL : json_stringn_nocheck(p, n);
	core_buf_release(&b);
	core_buf_release(&o);
	if (!s)
		return CORE_ENOMEM;
	val_own(x, s);
	return 0;
}

static int filter_length(const struct expr *e, struct val *x, core_err *err)
{
	json_t *n;

	if (json_is_string(x->v))
		n = json_integer((json_int_t)core_utf8_count(json_string_value(x->v),
						       json_string_length(x->v)));
	else if (json_is_array(x->v))
		n = json_integer((json_int_t)json_array_size(x->v));
	else if (json_is_object(x->v))
		n = json_integer((json_int_t)json_object_size(x->v));
	else
		return core_err_set(err, CORE_EDATA, "template field '%s' | length: "
				    "%s has no length", e->path, core_json_kind(x->v));
	if (!n)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	val_own(x, n);
	return 0;
}

static int filter_tojson(const struct expr *e, struct val *x, core_err *err)
{
	core_buf b = { 0 };
	core_err cerr = { 0 };
	json_t *s = NULL;
	int rc = core_canon_append(&b, x->v, &cerr);

	if (rc == CORE_ENOMEM)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if (rc)
		rc = core_err_set(err, rc, "template field '%s' | tojson: %s",
				  e->path, cerr.msg);
	else if (!(s = json_stringn_nocheck(b.data ? b.data : "", b.len)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	core_buf_release(&b);
	if (!rc)
		val_own(x, s);
	return rc;
}

static int apply_filter(const struct expr *e, const struct filter *f,
			struct val *x, const core_err *miss, core_err *err)
{
	if (f->kind == F_DEFAULT) {
		if (!x->v || json_is_null(x->v) || (f->falsy && !truthy(x->v))) {
			val_own(x, NULL);
			x->v = f->arg;
		}
		return 0;
	}
	if (!x->v) {
		if (err)
			*err = *miss;
		return CORE_EDATA;
	}
	switch (f->kind) {
	case F_UPPER:
	case F_LOWER:
	case F_TRIM:
		if (filter_text(f, x))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		return 0;
	case F_LENGTH:
		return filter_length(e, x, err);
	case F_TOJSON:
		return filter_tojson(e, x, err);
	case F_DEFAULT:
		break;
	}
	return 0;
}

static int render_expr(const struct expr *e, const json_t *row, core_buf *out,
		       core_err *err)
{
	core_err miss = { 0 };
	struct val x = { e->literal, NULL };
	int rc = 0;

	if (!e->literal)
		rc = lookup(e, row, &x, &miss, err);
	for (size_t i = 0; !rc && i < e->nfilters; i++)
		rc = apply_filter(e, &e->filters[i], &x, &miss, err);
	if (!rc && !x.v) {
		if (err)
			*err = miss;
		rc = CORE_EDATA;
	}
	if (!rc && py_str(out, x.v))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	val_own(&x, NULL);
	return rc;
}

int tpl_render(const tpl_template *t, const json_t *row,
			core_buf *out, core_err *err)
{
	size_t len0 = out->len;
	int rc = 0;

	for (size_t i = 0; !rc && i < t->nsegs; i++) {
		const struct seg *s = &t->segs[i];

		if (s->e)
			rc = render_expr(s->e, row, out, err);
		else if (core_buf_append(out, s->text, s->len))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (rc) {
		out->len = len0;
		if (out->data)
			out->data[len0] = '\0';
	}
	return rc;
}

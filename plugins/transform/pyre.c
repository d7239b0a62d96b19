/*
 * pyre.c — Python `re` patterns, compiled with PCRE2 (ADR 0026).
 *
 * ELSPETH's settings hold regular expressions written for Python's `re`
 * (keyword_filter's blocked_patterns). PCRE2 implements nearly the same
 * language; where the two read the same text differently, the pattern is
 * rewritten here into the PCRE2 spelling of Python's meaning before it is
 * compiled, and what Python refuses, or PCRE2 cannot mean the same way,
 * is refused with a message naming the position (in characters, as
 * Python counts):
 *
 *   Python          PCRE2 here     why
 *   \Z              \z             Python's \Z is the very end
 *   \v              \x0b           PCRE2's \v is a class
 *   \xHH \uHHHH     \x{...}        \u, \U are not PCRE2 escapes
 *   \UHHHHHHHH
 *   \123 (octal)    \o{123}        PCRE2 may read it as a back reference
 *   [ in a class    \[             PCRE2 reads [: as a POSIX class
 *   {,n} {,}        {0,n} {0,}     PCRE2 10.42 reads them as literals
 *   (?u)            dropped        Unicode is the default in both
 *
 * Refused: \N{name}, escapes Python does not know (\p, \h, \K, \G, \Q,
 * \R, \X, ...), the flags a and L, (?<name>...), (?'name'...), PCRE-only
 * groups ((?|, (?R), (?1), (?&name), (?P>name), (*VERB)), conditions that
 * are not a group name or number, and global flags after the start.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"
#include "plugins/transform/pyre_internal.h"

#define MAX_DEPTH 200

typedef struct pyre_tr {
	const char *p;
	size_t n, i;
	core_buf out;
	bool at_start;       /* only global flag groups so far (top level) */
	int depth;
	bool verbose[MAX_DEPTH + 1]; /* (?x) in force, per group depth */
	char *why;
	size_t cap;
} pyre_tr;

/* The position of byte offset at, in code points (Python's "position"). */
static size_t cpos(const pyre_tr *t, size_t at)
{
	return core_utf8_count(t->p, at);
}

static int refuse(pyre_tr *t, size_t at, const char *fmt, ...) CORE_PRINTF(3, 4);
static int refuse(pyre_tr *t, size_t at, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(t->why, t->cap, "%s at position %zu", msg, cpos(t, at));
	return -1;
}

static int put(pyre_tr *t, const char *s, size_t n)
{
	if (core_buf_append(&t->out, s, n)) {
		snprintf(t->why, t->cap, "out of memory");
		return -1;
	}
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \xHH, \uHHHH, \UHHHHHHHH: exactly `digits` hex digits after t->i. */
static int hex_escape(pyre_tr *t, size_t at, int digits)
{
	unsigned long v = 0;
	char buf[32], esc[3] = { '\\', t->p[t->i - 1], 0 };

	for (int k = 0; k < digits; k++) {
		int h = t->i + (size_t)k < t->n ? hexval(t->p[t->i + (size_t)k]) : -1;

		if (h < 0)
			return refuse(t, at, "incomplete escape %s", esc);
		v = v * 16 + (unsigned long)h;
	}
	t->i += (size_t)digits;
	if (v > 0x10FFFF)
		return refuse(t, at, "bad escape %s (beyond U+10FFFF)", esc);
	snprintf(buf, sizeof(buf), "\\x{%lx}", v);
	return put(t, buf, strlen(buf));
}

static bool isoct(char c)
{
	return c >= '0' && c <= '7';
}

/* \ then a digit: Python's octal escapes and back references. */
static int digit_escape(pyre_tr *t, size_t at, bool in_class)
{
	const char *p = t->p + t->i;
	size_t left = t->n - t->i;
	char buf[16];

	if (left >= 3 && isoct(p[0]) && isoct(p[1]) && isoct(p[2]) && p[0] != '0') {
		if (p[0] > '3')
			return refuse(t, at, "octal escape value \\%.3s outside of range 0-0o377", p);
		snprintf(buf, sizeof(buf), "\\o{%.3s}", p);
		t->i += 3;
		return put(t, buf, strlen(buf));
	}
	if (p[0] == '0') {
		size_t k = 1;

		while (k < 3 && k < left && isoct(p[k]))
			k++;
		snprintf(buf, sizeof(buf), "\\o{%.*s}", (int)k, p);
		t->i += k;
		return put(t, buf, strlen(buf));
	}
	if (in_class) {
		size_t k = 0;

		if (!isoct(p[0]))
			return refuse(t, at, "bad escape \\%.1s", p);
		while (k < 3 && k < left && isoct(p[k]))
			k++;
		snprintf(buf, sizeof(buf), "\\o{%.*s}", (int)k, p);
		t->i += k;
		return put(t, buf, strlen(buf));
	}
	/* A back reference: one or two digits, as Python reads it. */
	{
		size_t k = left >= 2 && p[1] >= '0' && p[1] <= '9' ? 2 : 1;

		snprintf(buf, sizeof(buf), "\\g{%.*s}", (int)k, p);
		t->i += k;
		return put(t, buf, strlen(buf));
	}
}

/* After a backslash (t->i past it). */
static int escape(pyre_tr *t, bool in_class)
{
	size_t at = t->i - 1;
	char c;

	if (t->i >= t->n)
		return refuse(t, at, "bad escape (end of pattern)");
	c = t->p[t->i++];
	if (c >= '0' && c <= '9') {
		t->i--;
		return digit_escape(t, at, in_class);
	}
	switch (c) {
	case 'a': case 'f': case 'n': case 'r': case 't':
	case 'd': case 'D': case 's': case 'S': case 'w': case 'W':
		return put(t, t->p + at, 2);
	case 'b':
		return in_class ? put(t, "\\x08", 4) : put(t, "\\b", 2);
	case 'v':
		return put(t, "\\x0b", 4);
	case 'x':
		return hex_escape(t, at, 2);
	case 'u':
		return hex_escape(t, at, 4);
	case 'U':
		return hex_escape(t, at, 8);
	case 'A': case 'B':
		if (in_class)
			break;
		return put(t, t->p + at, 2);
	case 'Z':
		if (in_class)
			break;
		return put(t, "\\z", 2);
	case 'N':
		return refuse(t, at, "\\N{...} named characters are not supported "
			      "(write the character itself, or \\uXXXX)");
	default:
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			break;
		/* Any other character escaped is itself (a UTF-8 sequence
		 * is copied whole by the caller's loop after this byte). */
		return put(t, t->p + at, 2);
	}
	{
		char esc[3] = { '\\', c, 0 };

		return refuse(t, at, "bad escape %s (Python's re does not have it)", esc);
	}
}

/* A character class, t->i just past its '['. */
static int char_class(pyre_tr *t)
{
	size_t open = t->i - 1;

	if (put(t, "[", 1))
		return -1;
	if (t->i < t->n && t->p[t->i] == '^' && put(t, "^", 1) == 0)
		t->i++;
	if (t->i < t->n && t->p[t->i] == ']') {
		if (put(t, "\\]", 2))
			return -1;
		t->i++;
	}
	while (t->i < t->n) {
		char c = t->p[t->i++];
		int rc;

		if (c == ']')
			return put(t, "]", 1);
		if (c == '\\')
			rc = escape(t, true);
		else if (c == '[')
			rc = put(t, "\\[", 2);
		else
			rc = put(t, &c, 1);
		if (rc)
			return rc;
	}
	return refuse(t, open, "unterminated character set");
}

/* '{' outside a class: Python's {,n} and {,} are quantifiers. */
static int brace(pyre_tr *t)
{
	size_t j = t->i;

	if (j < t->n && t->p[j] == ',') {
		size_t k = j + 1;

		while (k < t->n && t->p[k] >= '0' && t->p[k] <= '9')
			k++;
		if (k < t->n && t->p[k] == '}') {
			t->i = k + 1;
			return put(t, "{0", 2) || put(t, t->p + j, k + 1 - j) ? -1 : 0;
		}
	}
	return put(t, "{", 1);
}

static bool name_char(unsigned char c)
{
	return c >= 0x80 || c == '_' || (c >= '0' && c <= '9') ||
	       ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* (?(cond)yes|no): cond must be a group number or name, as in Python. */
static int condition(pyre_tr *t, size_t at)
{
	size_t j = t->i;

	while (j < t->n && name_char((unsigned char)t->p[j]))
		j++;
	if (j == t->i || j >= t->n || t->p[j] != ')')
		return refuse(t, at, "bad conditional group: the condition must be a "
			      "group name or number");
	/* PCRE2 reads these names as conditions of its own. */
	if ((j - t->i == 6 && !memcmp(t->p + t->i, "DEFINE", 6)) ||
	    (t->p[t->i] == 'R' && (j - t->i == 1 || (t->p[t->i + 1] >= '0' &&
						     t->p[t->i + 1] <= '9'))))
		return refuse(t, at, "a condition on a group named %s is not supported",
			      t->p[t->i] == 'R' ? "R..." : "DEFINE");
	if (put(t, "(?(", 3) || put(t, t->p + t->i, j + 1 - t->i))
		return -1;
	t->i = j + 1;
	return 0;
}

/* (?flags) or (?flags-flags:...), t->i at the first flag. */
static int flags(pyre_tr *t, size_t at, bool *opens, bool *verbose)
{
	char on[8] = "", off[8] = "";
	size_t non = 0, noff = 0;
	bool minus = false;

	for (; t->i < t->n; t->i++) {
		char c = t->p[t->i];

		if (c == '-' && !minus) {
			minus = true;
			continue;
		}
		if (c == ')' || c == ':')
			break;
		if (c == 'a' || c == 'L')
			return refuse(t, at, "the inline flag %s is not supported "
				      "(matching is always Unicode)", c == 'a' ? "a (ASCII)" : "L (locale)");
		if (!strchr("imsxu", c) || (minus && c == 'u'))
			return refuse(t, at, "unknown flag");
		if (c == 'u' || strchr(minus ? off : on, c))
			continue;
		(minus ? off : on)[minus ? noff++ : non++] = c;
	}
	if (t->i >= t->n)
		return refuse(t, at, "missing -, : or )");
	if (minus && !noff)
		return refuse(t, at, "missing flag");
	for (size_t k = 0; k < noff; k++)
		if (strchr(on, off[k]))
			return refuse(t, at, "bad inline flags: flag turned on and off");
	*opens = t->p[t->i++] == ':';
	if (!*opens) {
		if (minus)
			return refuse(t, at, "missing :");
		if (!t->at_start)
			return refuse(t, at, "global flags not at the start of the expression");
	}
	if (strchr(on, 'x'))
		*verbose = true;
	if (strchr(off, 'x'))
		*verbose = false;
	if (!non && !noff)
		return *opens ? put(t, "(?:", 3) : 0;
	return put(t, "(?", 2) || put(t, on, non) || (noff && (put(t, "-", 1) ||
	       put(t, off, noff))) || put(t, *opens ? ":" : ")", 1) ? -1 : 0;
}

/* After "(?" (t->i past the '?'). *opens: a group that ')' closes. */
static int extension(pyre_tr *t, size_t at, bool *opens, bool *verbose)
{
	const char *p = t->p + t->i;
	size_t left = t->n - t->i;
	char c = left ? p[0] : '\0';

	*opens = true;
	if (c == ':' || c == '=' || c == '!' || c == '>') {
		t->i++;
		return put(t, t->p + at, 3);
	}
	if (c == '<' && left > 1 && (p[1] == '=' || p[1] == '!')) {
		t->i += 2;
		return put(t, t->p + at, 4);
	}
	if (c == 'P' && left > 1 && p[1] == '<') {
		t->i += 2;
		return put(t, "(?P<", 4);
	}
	if (c == 'P' && left > 1 && p[1] == '=') {
		size_t j = 2;

		while (j < left && p[j] != ')')
			j++;
		if (j >= left)
			return refuse(t, at, "missing ), unterminated name");
		*opens = false;
		t->i += j + 1;
		return put(t, t->p + at, j + 3);
	}
	if (c == '#') {
		size_t j = 1;

		while (j < left && p[j] != ')')
			j++;
		if (j >= left)
			return refuse(t, at, "missing ), unterminated comment");
		*opens = false;
		t->i += j + 1;
		return 0;
	}
	if (c == '(') {
		t->i++;
		return condition(t, at);
	}
	if (c && strchr("aiLmsux-", c))
		return flags(t, at, opens, verbose);
	if (c == '<')
		return refuse(t, at, "unknown extension ?<%s (Python names a group "
			      "with (?P<name>...))", left > 1 ? "..." : "");
	return refuse(t, at, "unknown extension ?%s (Python's re does not have it)",
		      c == 'P' ? "P..." : (char[2]){ c, 0 });
}

static int group_open(pyre_tr *t)
{
	size_t at = t->i - 1;
	bool opens = true, verbose = t->verbose[t->depth];
	int rc;

	if (t->i < t->n && t->p[t->i] == '*')
		return refuse(t, at, "(*VERB) is not supported (Python's re does not have it)");
	if (t->i < t->n && t->p[t->i] == '?') {
		t->i++;
		if ((rc = extension(t, at, &opens, &verbose)))
			return rc;
	} else if ((rc = put(t, "(", 1))) {
		return rc;
	}
	if (!opens) {
		/* Global flags and comments add nothing to the pattern, as in
		 * Python's parser; (?P=name) does. */
		t->verbose[t->depth] = verbose;
		if (t->p[at + 2] == 'P')
			t->at_start = false;
		return 0;
	}
	t->at_start = false;
	if (t->depth >= MAX_DEPTH)
		return refuse(t, at, "too many nested groups");
	t->verbose[++t->depth] = verbose;
	return 0;
}

/* In verbose mode: whitespace and # comments are skipped (copied). */
static bool verbose_skip(pyre_tr *t, char c)
{
	if (!t->verbose[t->depth])
		return false;
	if (c == '#') {
		while (t->i < t->n && t->p[t->i] != '\n')
			t->i++;
		return true;
	}
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int step(pyre_tr *t, char c)
{
	if (c == '(')
		return group_open(t);
	t->at_start = false;
	switch (c) {
	case '\\':
		return escape(t, false);
	case '[':
		return char_class(t);
	case '{':
		return brace(t);
	case ')':
		if (t->depth > 0)
			t->depth--;
		return put(t, ")", 1);
	default:
		return put(t, &c, 1);
	}
}

static int translate(pyre_tr *t)
{
	while (t->i < t->n) {
		char c = t->p[t->i++];

		if (!verbose_skip(t, c) && step(t, c))
			return -1;
	}
	return 0;
}

int plg__pyre_translate(const char *pattern, char **out, char *why, size_t cap)
{
	pyre_tr t = { .p = pattern, .n = strlen(pattern), .at_start = true,
		      .why = why, .cap = cap };

	*out = NULL;
	core_buf_init(&t.out);
	if (translate(&t) || put(&t, "", 0)) {
		core_buf_release(&t.out);
		return -1;
	}
	*out = core_buf_steal(&t.out);
	return 0;
}

pcre2_code *plg__pyre_compile(const char *pattern, char *why, size_t cap)
{
	pcre2_compile_context *cc;
	pcre2_code *re = NULL;
	PCRE2_SIZE off = 0;
	char *pcre;
	int code = 0;

	if (plg__pyre_translate(pattern, &pcre, why, cap))
		return NULL;
	cc = pcre2_compile_context_create(NULL);
	if (cc && !pcre2_set_newline(cc, PCRE2_NEWLINE_LF))
		re = pcre2_compile((PCRE2_SPTR)pcre, PCRE2_ZERO_TERMINATED,
				   PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C,
				   &code, &off, cc);
	pcre2_compile_context_free(cc);
	if (!re) {
		PCRE2_UCHAR msg[256] = "out of memory";

		if (code)
			pcre2_get_error_message(code, msg, sizeof(msg));
		/* The offset is in the rewritten pattern: name the text. */
		snprintf(why, cap, "%s (PCRE2, in %s)", (const char *)msg, pcre);
	} else {
		/* JIT when the platform has it; the interpreter otherwise. */
		(void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
	}
	free(pcre);
	return re;
}

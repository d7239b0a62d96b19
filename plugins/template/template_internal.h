/*
 * template_internal.h — internals shared by the files of the prompt
 * template engine (the Jinja2 subset described in template.h and
 * docs/templates.md):
 *
 *   lex.c       positions and errors, names, string and number literals
 *   parse.c     one {{ expression }}: row steps, filters, their arguments
 *   template.c  segments (text, whitespace control, comments),
 *               tpl_compile, tpl_free and tpl_hash
 *   text.c      Python's str.isspace/strip/upper/lower on UTF-8 text
 *   value.c     Python's str() and truthiness of JSON values
 *   filters.c   the filters
 *   render.c    field lookup and tpl_render
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
 *
 * Nothing in a compiled template changes after tpl_compile returns, so
 * rendering needs no locks.
 */
#ifndef ELSPETH_TEMPLATE_INTERNAL_H
#define ELSPETH_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/template/template.h"

#define TPL__HASH_PREFIX "sha256:"

/* ------------------------------------------------ the compiled template */

typedef enum tpl__filter_kind {
	TPL__F_UPPER, TPL__F_LOWER, TPL__F_TRIM, TPL__F_LENGTH, TPL__F_TOJSON,
	TPL__F_DEFAULT
} tpl__filter_kind;

typedef struct tpl__filter {
	tpl__filter_kind kind;
	json_t *arg;        /* TPL__F_DEFAULT: the replacement literal */
	bool falsy;         /* TPL__F_DEFAULT: also replace falsy values */
} tpl__filter;

typedef struct tpl__step {
	char *key;          /* NULL: an array index */
	long long index;
	size_t path_len;    /* length of expr.path up to and with this step */
} tpl__step;

typedef struct tpl__expr {
	json_t *literal;    /* a string literal expression, else NULL */
	tpl__step *steps;   /* steps[0] is the top-level field */
	size_t nsteps;
	tpl__filter *filters;
	size_t nfilters;
	char *path;         /* "a.b[0]", for messages */
} tpl__expr;

typedef struct tpl__seg {
	char *text;         /* literal text, NULL for an expression */
	size_t len;
	tpl__expr *e;
} tpl__seg;

struct tpl_template {
	char hash[sizeof(TPL__HASH_PREFIX) + CORE_SHA256_HEX_LEN];
	tpl__seg *segs;
	size_t nsegs;
};

/* ---------------------------------------------------- compiling (lex.c) */

/* The compiler's state: the source and where it stands in it. */
typedef struct tpl__cc {
	tpl_template *t;
	const char *s;
	size_t n;           /* bytes compiled (a trailing newline dropped) */
	size_t pos;
	size_t capsegs;     /* allocated t->segs */
	core_err *err;
} tpl__cc;

/* CORE_ENOMEM "out of memory" in c->err; returns the code. */
int tpl__cc_nomem(tpl__cc *c);
/* CORE_ECONFIG "template line L, column C: <message>" for byte offset at
 * of the source; returns the code. */
int tpl__cc_fail(const tpl__cc *c, size_t at, const char *fmt, ...)
	CORE_PRINTF(3, 4);
/* 1-based line and column (in characters) of byte offset at of s. */
void tpl__where(const char *s, size_t at, int *line, int *col);
/* What is at `at`, quoted, for "got ..." in messages; buf holds it when
 * it is not a fixed phrase. */
const char *tpl__cc_got(const tpl__cc *c, size_t at, char *buf, size_t cap);
/* Skips ASCII whitespace at c->pos. */
void tpl__skip_ws(tpl__cc *c);
/* The length of the identifier ([A-Za-z_][A-Za-z0-9_]*) at s, 0 if none. */
size_t tpl__ident_len(const char *s, size_t n);
/* Whether s[0..k) is the word w. */
bool tpl__word_is(const char *s, size_t k, const char *w);
/* Literals at c->pos, which ends after them; *out is a new reference.
 * A '...' or "..." string with Python escapes; a number (an integer
 * without '.' or exponent); for filter arguments, also true, false and
 * none (or Python's spelling). */
int tpl__parse_string(tpl__cc *c, json_t **out);
int tpl__parse_number(tpl__cc *c, json_t **out);
int tpl__parse_literal(tpl__cc *c, json_t **out);

/* ------------------------------------------------- expressions (parse.c) */

/* The expression after "{{" / "{{-" (open: the tag's position) through
 * "}}" / "-}}" into e; *strip_after is set for "-}}". */
int tpl__parse_expr(tpl__cc *c, size_t open, tpl__expr *e,
		    bool *strip_after);
/* Frees e and all it holds; NULL allowed. */
void tpl__free_expr(tpl__expr *e);

/* ------------------------------------------------------ text (text.c) */

/* The code point at s (n > 0 bytes left) into *cp and its length; a byte
 * that starts no valid sequence is 1 with *cp = 0xFFFFFFFF. */
size_t tpl__utf8_dec(const char *s, size_t n, uint32_t *cp);
/* Bytes of leading Python whitespace (str.isspace) of s[0..n). */
size_t tpl__lspace(const char *s, size_t n);
/* The length of s[0..n) without its trailing Python whitespace. */
size_t tpl__rstrip(const char *s, size_t n);
/* Appends s[0..n) to b in Python's str.upper() (or lower()) form; bytes
 * that are not UTF-8 are copied unchanged. 0 or CORE_ENOMEM. */
int tpl__append_case(core_buf *b, const char *s, size_t n, bool upper);

/* ---------------------------------------------------- values (value.c) */

/* Appends Python's str() of v to b (objects and arrays as compact JSON).
 * 0 or CORE_ENOMEM. */
int tpl__py_str(core_buf *b, const json_t *v);
/* Python's truthiness of v. */
bool tpl__truthy(const json_t *v);

/* -------------------------------------- rendering (filters.c, render.c) */

/* The value an expression holds while filters run: v borrowed (from the
 * row or the template) or owned (own == v); v NULL means missing. */
typedef struct tpl__val {
	const json_t *v;
	json_t *own;
} tpl__val;

/* Replaces x by own (a reference x takes; NULL: missing), releasing what
 * x owned. */
void tpl__val_own(tpl__val *x, json_t *own);
/* Applies f to x. A missing x is CORE_EDATA with the message in *miss,
 * except for default(), which replaces it. Errors name e->path. */
int tpl__apply_filter(const tpl__expr *e, const tpl__filter *f, tpl__val *x,
		      const core_err *miss, core_err *err);

#endif /* ELSPETH_TEMPLATE_INTERNAL_H */

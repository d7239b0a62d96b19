/*
 * template.c — compiling a template into segments (literal text with
 * Jinja's whitespace control and newline handling, comments skipped,
 * expressions), and the compiled template's hash. template_internal.h
 * describes the engine's files.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

static int add_seg(tpl__cc *c, char *text, size_t len, tpl__expr *e)
{
	tpl_template *t = c->t;

	if (t->nsegs == c->capsegs) {
		size_t cap = c->capsegs ? 2 * c->capsegs : 8;
		tpl__seg *s = realloc(t->segs, cap * sizeof(*s));

		if (!s) {
			free(text);
			tpl__free_expr(e);
			return tpl__cc_nomem(c);
		}
		t->segs = s;
		c->capsegs = cap;
	}
	t->segs[t->nsegs++] = (tpl__seg){ text, len, e };
	return 0;
}

/* Literal text, with CR LF and CR turned into LF as Jinja's lexer does. */
static int add_text(tpl__cc *c, const char *s, size_t n)
{
	char *text;
	size_t len = 0;

	if (!n)
		return 0;
	text = malloc(n + 1);
	if (!text)
		return tpl__cc_nomem(c);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
			continue;
		text[len++] = s[i] == '\r' ? '\n' : s[i];
	}
	text[len] = '\0';
	return add_seg(c, text, len, NULL);
}

static int compile_expr(tpl__cc *c, size_t open, bool *strip_after)
{
	tpl__expr *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return tpl__cc_nomem(c);
	rc = tpl__parse_expr(c, open, e, strip_after);
	if (rc) {
		tpl__free_expr(e);
		return rc;
	}
	return add_seg(c, NULL, 0, e);
}

static int skip_comment(tpl__cc *c, size_t open, bool *strip_after)
{
	const char *end = NULL;

	for (size_t i = c->pos; !end && i + 1 < c->n; i++)
		if (c->s[i] == '#' && c->s[i + 1] == '}')
			end = c->s + i;
	if (!end)
		return tpl__cc_fail(c, open, "unclosed comment: expected '#}'");
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

static int compile_body(tpl__cc *c)
{
	bool lstrip = false;
	int rc = 0;

	while (!rc && c->pos < c->n) {
		size_t at = find_tag(c->s, c->pos, c->n), len = at - c->pos;
		const char *text = c->s + c->pos;

		if (lstrip) {
			size_t k = tpl__lspace(text, len);

			text += k;
			len -= k;
		}
		if (at + 2 < c->n && c->s[at + 2] == '-')
			len = tpl__rstrip(text, len);
		rc = add_text(c, text, len);
		if (rc || at >= c->n)
			break;
		if (c->s[at + 1] == '%')
			return tpl__cc_fail(c, at, "statements ({%% ... %%}) "
					    "are not supported: use {{ "
					    "expressions }} and {# comments #} "
					    "only");
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
	tpl__cc c = { 0 };
	uint8_t md[CORE_SHA256_LEN];
	int rc;

	*out = NULL;
	if (!src)
		return core_err_set(err, CORE_ECONFIG, "template: no source text");
	c.t = calloc(1, sizeof(*c.t));
	if (!c.t)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	c.s = src;
	c.n = strlen(src);
	c.err = err;
	/* Jinja drops one trailing newline (keep_trailing_newline=False). */
	if (c.n && c.s[c.n - 1] == '\n')
		c.n--;
	if (c.n && c.s[c.n - 1] == '\r')
		c.n--;
	core_sha256(src, strlen(src), md);
	memcpy(c.t->hash, TPL__HASH_PREFIX, sizeof(TPL__HASH_PREFIX) - 1);
	core_hex(md, sizeof(md), c.t->hash + sizeof(TPL__HASH_PREFIX) - 1);
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
		tpl__free_expr(t->segs[i].e);
	}
	free(t->segs);
	free(t);
}

const char *tpl_hash(const tpl_template *t)
{
	return t->hash;
}

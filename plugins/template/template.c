/*
 * template.c — compiling a template: literal text (with Jinja's
 * whitespace control and newline handling), comments skipped, {{ }}
 * expressions and {% %} statements into a tree of blocks; freeing it, and
 * the template's hash. template_internal.h describes the engine's files.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

/* Literal text, with CR LF and CR turned into LF as Jinja's lexer does. */
static int add_text(tpl__cc *c, size_t at, const char *s, size_t n)
{
	tpl__node *node;
	char *text;
	size_t len = 0;
	int rc;

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
	if ((rc = tpl__add_node(c, TPL__N_TEXT, at, &node))) {
		free(text);
		return rc;
	}
	node->text = text;
	node->len = len;
	return 0;
}

static int compile_output(tpl__cc *c, size_t open, bool *strip_after)
{
	tpl__node *node;
	tpl__ex *e;
	int rc;

	if ((rc = tpl__parse_output(c, open, &e, strip_after)))
		return rc;
	if ((rc = tpl__add_node(c, TPL__N_OUT, open, &node))) {
		tpl__free_ex(e);
		return rc;
	}
	node->e = e;
	return 0;
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

/* A block left open at the end of the template. */
static int unclosed(tpl__cc *c)
{
	const tpl__node *n = c->open[c->nopen - 1].node;
	bool loop = n->kind == TPL__N_FOR;

	return tpl__cc_fail(c, n->at, "{%% %s %%} is never closed: expected "
			    "{%% %s %%} before the end of the template",
			    loop ? "for" : "if", loop ? "endfor" : "endif");
}

static int compile_body(tpl__cc *c)
{
	bool lstrip = false;
	int rc = 0;

	while (!rc && c->pos < c->n) {
		size_t at = find_tag(c->s, c->pos, c->n), len = at - c->pos;
		const char *text = c->s + c->pos;
		char kind;

		if (lstrip) {
			size_t k = tpl__lspace(text, len);

			text += k;
			len -= k;
		}
		if (at + 2 < c->n && c->s[at + 2] == '-')
			len = tpl__rstrip(text, len);
		rc = add_text(c, c->pos, text, len);
		if (rc || at >= c->n)
			break;
		kind = c->s[at + 1];
		c->pos = at + 2;
		/* {{- {%- {#- strip before; {%+ (Jinja's "no lstrip_blocks")
		 * changes nothing here, where lstrip_blocks is off. */
		if (c->pos < c->n && (c->s[c->pos] == '-' ||
				      (kind == '%' && c->s[c->pos] == '+')))
			c->pos++;
		lstrip = false;
		if (kind == '#')
			rc = skip_comment(c, at, &lstrip);
		else if (kind == '%')
			rc = tpl__parse_stmt(c, at, &lstrip);
		else
			rc = compile_output(c, at, &lstrip);
	}
	if (!rc && c->nopen)
		rc = unclosed(c);
	return rc;
}

int tpl_compile_named(const char *src, const char *name, tpl_template **out,
		      core_err *err)
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
	c.name = name;
	c.s = src;
	c.n = strlen(src);
	c.err = err;
	c.cur = &c.t->root;
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

int tpl_compile(const char *src, tpl_template **out, core_err *err)
{
	return tpl_compile_named(src, NULL, out, err);
}

void tpl_free(tpl_template *t)
{
	if (!t)
		return;
	tpl__free_block(&t->root);
	free(t);
}

const char *tpl_hash(const tpl_template *t)
{
	return t->hash;
}

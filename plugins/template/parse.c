/*
 * parse.c — one {{ expression }} of a template: a string literal, or row
 * and its .name / ['key'] / [int] steps, then | filters with their
 * arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

/* Filter names, by tpl__filter_kind. */
static const char *const filter_names[] = {
	"upper", "lower", "trim", "length", "tojson", "default", NULL
};

/* The arguments after '(': none, except default(value[, boolean]). */
static int parse_args(tpl__cc *c, tpl__filter *f)
{
	char got[48];
	json_t *flag = NULL;
	int rc;

	tpl__skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == ')') {
		c->pos++;
		return 0;
	}
	if (f->kind != TPL__F_DEFAULT)
		return tpl__cc_fail(c, c->pos, "filter '%s' takes no arguments",
				    filter_names[f->kind]);
	rc = tpl__parse_literal(c, &f->arg);
	if (rc)
		return rc;
	tpl__skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == ',') {
		size_t at;

		c->pos++;
		tpl__skip_ws(c);
		at = c->pos;
		rc = tpl__parse_literal(c, &flag);
		if (rc)
			return rc;
		f->falsy = json_is_true(flag);
		if (!json_is_boolean(flag)) {
			json_decref(flag);
			return tpl__cc_fail(c, at, "the second argument of default must be "
					    "true or false (replace falsy values too)");
		}
		json_decref(flag);
		tpl__skip_ws(c);
	}
	if (c->pos >= c->n || c->s[c->pos] != ')')
		return tpl__cc_fail(c, c->pos, "expected ')' after the "
				    "arguments of default, got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	c->pos++;
	return 0;
}

static int parse_filter(tpl__cc *c, tpl__expr *e)
{
	size_t at, k;
	tpl__filter *f;
	int kind = -1;
	char got[48];

	tpl__skip_ws(c);
	at = c->pos;
	k = tpl__ident_len(c->s + at, c->n - at);
	if (!k)
		return tpl__cc_fail(c, at, "expected a filter name after '|', got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	for (int i = 0; filter_names[i]; i++)
		if (tpl__word_is(c->s + at, k, filter_names[i]))
			kind = i;
	if (kind < 0)
		return tpl__cc_fail(c, at, "unknown filter '%.*s' (supported: upper, lower, "
				    "trim, length, tojson, default)", (int)k, c->s + at);
	f = realloc(e->filters, (e->nfilters + 1) * sizeof(*f));
	if (!f)
		return tpl__cc_nomem(c);
	e->filters = f;
	f = &e->filters[e->nfilters++];
	memset(f, 0, sizeof(*f));
	f->kind = (tpl__filter_kind)kind;
	c->pos += k;
	tpl__skip_ws(c);
	if (c->pos < c->n && c->s[c->pos] == '(') {
		c->pos++;
		int rc = parse_args(c, f);

		if (rc)
			return rc;
	}
	if (f->kind == TPL__F_DEFAULT && !f->arg && !(f->arg = json_string("")))
		return tpl__cc_nomem(c);
	return 0;
}

/* Appends a step (key: malloc'd, taken; NULL for an index) and its part of
 * the display path: the field itself, then .name, ['other key'] or [n]. */
static int add_step(tpl__cc *c, tpl__expr *e, core_buf *path, char *key,
		    long long index)
{
	tpl__step *s = realloc(e->steps, (e->nsteps + 1) * sizeof(*s));
	int rc;

	if (!s) {
		free(key);
		return tpl__cc_nomem(c);
	}
	e->steps = s;
	s = &e->steps[e->nsteps++];
	s->key = key;
	s->index = index;
	if (!key)
		rc = core_buf_printf(path, "[%lld]", index);
	else if (e->nsteps == 1)
		rc = core_buf_puts(path, key);
	else if (tpl__ident_len(key, strlen(key)) == strlen(key))
		rc = core_buf_printf(path, ".%s", key);
	else
		rc = core_buf_printf(path, "['%s']", key);
	s->path_len = path->len;
	return rc ? tpl__cc_nomem(c) : 0;
}

/* One [ 'key' ] or [ int ] step, c->pos just after '['. */
static int parse_subscript(tpl__cc *c, tpl__expr *e, core_buf *path,
			   size_t open)
{
	json_t *v = NULL;
	char got[48], *key = NULL;
	long long index = 0;
	int rc;

	tpl__skip_ws(c);
	if (c->pos < c->n && (c->s[c->pos] == '\'' || c->s[c->pos] == '"'))
		rc = tpl__parse_string(c, &v);
	else if (c->pos < c->n && (c->s[c->pos] == '-' ||
				   (c->s[c->pos] >= '0' && c->s[c->pos] <= '9')))
		rc = tpl__parse_number(c, &v);
	else
		return tpl__cc_fail(c, c->pos, "expected a quoted key or an "
				    "integer index after '[', got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	if (rc)
		return rc;
	if (json_is_real(v))
		rc = tpl__cc_fail(c, open + 1, "an index must be an integer");
	else if (json_is_integer(v) && !e->nsteps)
		rc = tpl__cc_fail(c, open, "the row is an object: name a field "
				  "(row['name'] or row.name), not an index");
	else if (json_is_string(v) && !(key = strdup(json_string_value(v))))
		rc = tpl__cc_nomem(c);
	index = json_is_integer(v) ? json_integer_value(v) : 0;
	json_decref(v);
	if (rc)
		return rc;
	tpl__skip_ws(c);
	if (c->pos >= c->n || c->s[c->pos] != ']') {
		free(key);
		return tpl__cc_fail(c, c->pos, "expected ']', got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	}
	c->pos++;
	return add_step(c, e, path, key, index);
}

static int parse_steps(tpl__cc *c, tpl__expr *e, core_buf *path)
{
	char got[48];
	int rc = 0;

	while (!rc) {
		size_t k;
		char *key;

		tpl__skip_ws(c);
		if (c->pos >= c->n || (c->s[c->pos] != '.' && c->s[c->pos] != '['))
			break;
		if (c->s[c->pos++] == '[') {
			rc = parse_subscript(c, e, path, c->pos - 1);
			continue;
		}
		tpl__skip_ws(c);
		k = tpl__ident_len(c->s + c->pos, c->n - c->pos);
		if (!k)
			return tpl__cc_fail(c, c->pos, "expected a field name after '.', "
					    "got %s", tpl__cc_got(c, c->pos, got, sizeof(got)));
		key = strndup(c->s + c->pos, k);
		if (!key)
			return tpl__cc_nomem(c);
		c->pos += k;
		rc = add_step(c, e, path, key, 0);
	}
	if (!rc && !e->nsteps)
		rc = tpl__cc_fail(c, c->pos, "expected '.' or '[' after 'row' (name a "
				  "field: row.name or row['name']), got %s",
				  tpl__cc_got(c, c->pos, got, sizeof(got)));
	return rc;
}

/* The primary: a string literal, or row and its steps. */
static int parse_primary(tpl__cc *c, tpl__expr *e, core_buf *path)
{
	size_t at = c->pos, k;
	char got[48];

	if (at < c->n && (c->s[at] == '\'' || c->s[at] == '"')) {
		int rc = tpl__parse_string(c, &e->literal);

		if (!rc && core_buf_puts(path, "string literal"))
			rc = tpl__cc_nomem(c);
		return rc;
	}
	k = tpl__ident_len(c->s + at, c->n - at);
	if (!k)
		return tpl__cc_fail(c, at, "expected an expression (row.name, "
				    "row['name'] or a quoted string), got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	if (!tpl__word_is(c->s + at, k, "row"))
		return tpl__cc_fail(c, at, "unknown name '%.*s': expressions "
				    "start with 'row', e.g. {{ row.%.*s }}",
				    (int)k, c->s + at, (int)k, c->s + at);
	c->pos += k;
	return parse_steps(c, e, path);
}

/* An expression after "{{" / "{{-" (open: the tag's position) through
 * "}}" / "-}}"; *strip_after is set for "-}}". */
int tpl__parse_expr(tpl__cc *c, size_t open, tpl__expr *e,
		    bool *strip_after)
{
	core_buf path = { 0 };
	char got[48];
	int line, col, rc;

	tpl__skip_ws(c);
	rc = parse_primary(c, e, &path);
	while (!rc) {
		tpl__skip_ws(c);
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
		tpl__where(c->s, open, &line, &col);
		rc = tpl__cc_fail(c, c->pos, "expected '|' or '}}' to close "
				  "the expression opened at line %d, column "
				  "%d, got %s", line, col,
				  tpl__cc_got(c, c->pos, got, sizeof(got)));
	}
	e->path = core_buf_steal(&path);
	if (!rc && !e->path)
		rc = tpl__cc_nomem(c);
	return rc;
}

void tpl__free_expr(tpl__expr *e)
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

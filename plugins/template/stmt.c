/*
 * stmt.c — the statements: {% if %} {% elif %} {% else %} {% endif %} and
 * {% for a[, b ...] in expr %} {% else %} {% endfor %}, each opening,
 * continuing or closing a block of the compiled template, and the loop
 * variables a for brings into scope for its body (not for its else).
 * Other Jinja statements are refused by name.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

#define SUPPORTED "supported: if, elif, else, endif, for, endfor"

/* Jinja's other statements, refused with their name. */
static const char *const unsupported[] = {
	"set", "endset", "raw", "endraw", "macro", "endmacro", "call",
	"endcall", "filter", "endfilter", "include", "import", "from",
	"extends", "block", "endblock", "with", "endwith", "autoescape",
	"endautoescape", "break", "continue", "do", "trans", "endtrans",
	"pluralize", NULL
};

/* Words that cannot name a loop variable. */
static const char *const reserved[] = {
	"in", "not", "and", "or", "is", "if", "else", "true", "false", "none",
	"True", "False", "None", NULL
};

static bool in_list(const char *s, size_t k, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (tpl__word_is(s, k, list[i]))
			return true;
	return false;
}

void tpl__free_block(tpl__block *b)
{
	for (size_t i = 0; i < b->n; i++) {
		tpl__node *n = &b->v[i];

		free(n->text);
		tpl__free_ex(n->e);
		for (size_t k = 0; k < n->nconds; k++) {
			tpl__free_ex(n->conds[k]);
			tpl__free_block(&n->bodies[k]);
		}
		free(n->conds);
		free(n->bodies);
		tpl__free_block(&n->body);
		tpl__free_block(&n->orelse);
		for (size_t k = 0; k < n->ntargets; k++)
			free(n->names[k]);
		free(n->names);
	}
	free(b->v);
	b->v = NULL;
	b->n = b->cap = 0;
}

int tpl__add_node(tpl__cc *c, tpl__node_kind kind, size_t at,
		  tpl__node **out)
{
	tpl__block *b = c->cur;

	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		tpl__node *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return tpl__cc_nomem(c);
		b->v = v;
		b->cap = cap;
	}
	*out = &b->v[b->n++];
	memset(*out, 0, sizeof(**out));
	(*out)->kind = kind;
	(*out)->at = at;
	return 0;
}

static const char *kind_word(const tpl__node *n)
{
	return n->kind == TPL__N_FOR ? "for" : "if";
}

/* "%}" or "-%}" after the statement (open: the tag's position). */
static int tag_end(tpl__cc *c, size_t open, bool *strip_after)
{
	char got[48];
	int line, col;

	tpl__skip_ws(c);
	if (c->n - c->pos >= 3 && !strncmp(c->s + c->pos, "-%}", 3)) {
		*strip_after = true;
		c->pos += 3;
		return 0;
	}
	if (c->n - c->pos >= 2 && !strncmp(c->s + c->pos, "%}", 2)) {
		c->pos += 2;
		return 0;
	}
	tpl__where(c->s, open, &line, &col);
	return tpl__cc_fail(c, c->pos, "expected '%%}' to close the statement "
			    "opened at line %d, column %d, got %s", line, col,
			    tpl__cc_got(c, c->pos, got, sizeof(got)));
}

static int push(tpl__cc *c, tpl__node *n, tpl__block *body)
{
	if (c->nopen == TPL__MAX_NEST)
		return tpl__cc_fail(c, n->at, "blocks nested too deeply (more "
				    "than %d)", TPL__MAX_NEST);
	c->open[c->nopen++] = (tpl__open){ n, c->cur, false };
	c->cur = body;
	return 0;
}

/* The innermost open block, if it is a `kind` still before its else;
 * otherwise an error naming what is open (word: the statement at at). */
static int top(tpl__cc *c, tpl__node_kind kind, const char *word, size_t at,
	       bool else_ok, tpl__open **out)
{
	tpl__open *o = c->nopen ? &c->open[c->nopen - 1] : NULL;
	int line, col;

	if (o && (o->node->kind == kind || else_ok) && !o->in_else) {
		*out = o;
		return 0;
	}
	if (!o)
		return tpl__cc_fail(c, at, "unexpected {%% %s %%}: no {%% %s %%} "
				    "is open", word, kind == TPL__N_FOR ? "for" : "if");
	tpl__where(c->s, o->node->at, &line, &col);
	if (o->in_else && (o->node->kind == kind || else_ok))
		return tpl__cc_fail(c, at, "{%% %s %%} after the {%% else %%} of "
				    "the {%% %s %%} opened at line %d, column %d",
				    word, kind_word(o->node), line, col);
	return tpl__cc_fail(c, at, "unexpected {%% %s %%}: the innermost open "
			    "block is the {%% %s %%} opened at line %d, column "
			    "%d", word, kind_word(o->node), line, col);
}

static int stmt_if(tpl__cc *c, size_t at)
{
	/* NULL: tpl__add_node leaves it unset on its error path, which
	 * -O3 cannot see is never read (-Wmaybe-uninitialized). */
	tpl__node *n = NULL;
	tpl__ex *cond;
	int rc;

	if ((rc = tpl__parse_expr(c, &cond))) {
		tpl__free_ex(cond);
		return rc;
	}
	if ((rc = tpl__add_node(c, TPL__N_IF, at, &n))) {
		tpl__free_ex(cond);
		return rc;
	}
	n->conds = malloc(sizeof(*n->conds));
	n->bodies = calloc(1, sizeof(*n->bodies));
	if (!n->conds || !n->bodies) {
		tpl__free_ex(cond);
		return tpl__cc_nomem(c);
	}
	n->conds[0] = cond;
	n->nconds = 1;
	return push(c, n, &n->bodies[0]);
}

static int stmt_elif(tpl__cc *c, size_t at)
{
	tpl__open *o;
	tpl__node *n;
	tpl__ex *cond, **conds;
	tpl__block *bodies;
	int rc;

	if ((rc = top(c, TPL__N_IF, "elif", at, false, &o)))
		return rc;
	if ((rc = tpl__parse_expr(c, &cond))) {
		tpl__free_ex(cond);
		return rc;
	}
	n = o->node;
	conds = realloc(n->conds, (n->nconds + 1) * sizeof(*conds));
	if (conds)
		n->conds = conds;
	bodies = conds ? realloc(n->bodies, (n->nconds + 1) * sizeof(*bodies)) : NULL;
	if (!bodies) {
		tpl__free_ex(cond);
		return tpl__cc_nomem(c);
	}
	n->bodies = bodies;
	memset(&bodies[n->nconds], 0, sizeof(*bodies));
	n->conds[n->nconds] = cond;
	c->cur = &bodies[n->nconds++];
	return 0;
}

/* A for's variables leave scope at its else or its end. */
static void end_loop_scope(tpl__cc *c, const tpl__node *n)
{
	c->nvars -= n->ntargets;
	c->loops--;
}

static int stmt_else(tpl__cc *c, size_t at)
{
	tpl__open *o;
	int rc;

	if ((rc = top(c, TPL__N_IF, "else", at, true, &o)))
		return rc;
	if (o->node->kind == TPL__N_FOR)
		end_loop_scope(c, o->node);
	o->in_else = true;
	c->cur = &o->node->orelse;
	return 0;
}

static int stmt_end(tpl__cc *c, tpl__node_kind kind, size_t at)
{
	tpl__open *o = c->nopen ? &c->open[c->nopen - 1] : NULL;
	const char *word = kind == TPL__N_FOR ? "endfor" : "endif";
	int line, col;

	if (!o)
		return tpl__cc_fail(c, at, "unexpected {%% %s %%}: no {%% %s %%} "
				    "is open", word, kind == TPL__N_FOR ? "for" : "if");
	if (o->node->kind != kind) {
		tpl__where(c->s, o->node->at, &line, &col);
		return tpl__cc_fail(c, at, "unexpected {%% %s %%}: the innermost "
				    "open block is the {%% %s %%} opened at line "
				    "%d, column %d", word, kind_word(o->node),
				    line, col);
	}
	if (kind == TPL__N_FOR && !o->in_else)
		end_loop_scope(c, o->node);
	c->cur = o->parent;
	c->nopen--;
	return 0;
}

/* The names before `in`: a, or a, b, ... */
static int for_targets(tpl__cc *c, char **names, size_t *n)
{
	char got[48];

	for (;;) {
		size_t at, k;

		tpl__skip_ws(c);
		at = c->pos;
		k = tpl__ident_len(c->s + at, c->n - at);
		if (k && tpl__word_is(c->s + at, k, "loop"))
			return tpl__cc_fail(c, at, "'loop' is the loop's own "
					    "variable; name the items otherwise");
		if (!k || in_list(c->s + at, k, reserved))
			return tpl__cc_fail(c, at, "expected a variable name after "
					    "'for', got %s",
					    tpl__cc_got(c, at, got, sizeof(got)));
		if (*n == TPL__MAX_TARGETS)
			return tpl__cc_fail(c, at, "at most %d names in a for",
					    TPL__MAX_TARGETS);
		if (!(names[(*n)++] = strndup(c->s + at, k)))
			return tpl__cc_nomem(c);
		c->pos += k;
		tpl__skip_ws(c);
		if (c->pos >= c->n || c->s[c->pos] != ',')
			break;
		c->pos++;
	}
	if (tpl__word_is(c->s + c->pos, tpl__ident_len(c->s + c->pos,
						       c->n - c->pos), "in")) {
		c->pos += 2;
		return 0;
	}
	return tpl__cc_fail(c, c->pos, "expected 'in' after the loop's "
			    "variables, got %s",
			    tpl__cc_got(c, c->pos, got, sizeof(got)));
}

/* The iterable is parsed before the names enter scope, as in Jinja
 * ({% for x in x.children %} reads the outer x). */
static int stmt_for(tpl__cc *c, size_t at)
{
	char *names[TPL__MAX_TARGETS];
	size_t n = 0;
	tpl__ex *iter = NULL;
	tpl__node *node = NULL; /* as in stmt_if */
	int rc;

	if ((rc = for_targets(c, names, &n)) ||
	    (rc = tpl__parse_expr(c, &iter)))
		goto out_names;
	tpl__skip_ws(c);
	if (!tpl__at_tag_end(c, true)) {
		size_t k = tpl__ident_len(c->s + c->pos, c->n - c->pos);

		if (tpl__word_is(c->s + c->pos, k, "if") ||
		    tpl__word_is(c->s + c->pos, k, "recursive")) {
			rc = tpl__cc_fail(c, c->pos, "{%% for ... %.*s %%} is not "
					  "supported; use {%% if %%} inside the "
					  "loop", (int)k, c->s + c->pos);
			goto out_names;
		}
	}
	if ((rc = tpl__add_node(c, TPL__N_FOR, at, &node)))
		goto out_names;
	node->e = iter;
	iter = NULL;
	if (!(node->names = malloc(n * sizeof(*node->names)))) {
		rc = tpl__cc_nomem(c);
		goto out_names;
	}
	memcpy(node->names, names, n * sizeof(*names));
	node->ntargets = n;
	n = 0;
	node->slot = c->nvars;
	node->level = c->loops;
	for (size_t i = 0; i < node->ntargets; i++)
		c->vars[c->nvars++] = node->names[i];
	c->loops++;
	if (c->nvars > c->t->nslots)
		c->t->nslots = c->nvars;
	if (c->loops > c->t->nloops)
		c->t->nloops = c->loops;
	return push(c, node, &node->body);

out_names:
	tpl__free_ex(iter);
	while (n)
		free(names[--n]);
	return rc;
}

int tpl__parse_stmt(tpl__cc *c, size_t open, bool *strip_after)
{
	size_t at, k;
	const char *w;
	char got[48];
	int rc;

	tpl__skip_ws(c);
	at = c->pos;
	w = c->s + at;
	k = tpl__ident_len(w, c->n - at);
	c->pos += k;
	if (tpl__word_is(w, k, "if"))
		rc = stmt_if(c, open);
	else if (tpl__word_is(w, k, "elif"))
		rc = stmt_elif(c, at);
	else if (tpl__word_is(w, k, "else"))
		rc = stmt_else(c, at);
	else if (tpl__word_is(w, k, "endif"))
		rc = stmt_end(c, TPL__N_IF, at);
	else if (tpl__word_is(w, k, "for"))
		rc = stmt_for(c, open);
	else if (tpl__word_is(w, k, "endfor"))
		rc = stmt_end(c, TPL__N_FOR, at);
	else if (k && in_list(w, k, unsupported))
		return tpl__cc_fail(c, at, "{%% %.*s %%} is not supported ("
				    SUPPORTED ")", (int)k, w);
	else if (k)
		return tpl__cc_fail(c, at, "unknown statement '%.*s' (" SUPPORTED
				    ")", (int)k, w);
	else
		return tpl__cc_fail(c, at, "expected a statement after '{%%' ("
				    SUPPORTED "), got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	return rc ? rc : tag_end(c, open, strip_after);
}

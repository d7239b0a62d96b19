/*
 * parse.c — template expressions, by Jinja's precedence from lowest:
 * or, and, not, comparisons (== != < <= > >= in, not in), then filters
 * (| name(args)) and tests (is [not] name) on a postfix expression: a
 * name (row, lookup, a loop variable, loop.<attribute>) or a literal,
 * then .name, [key] and the calls .items() .keys() .values() .get().
 *
 * Names are resolved here: a loop variable to its slot, `loop` to the
 * innermost loop, row and lookup to the render's values; an unknown name
 * is a compile error. Nesting is bounded twice: brackets, calls and
 * `not` by TPL__MAX_NEST while parsing, and the tree's height by
 * MAX_HEIGHT (a chain of filters or `and`s is parsed in a loop but
 * evaluated recursively), so rendering recurses at most MAX_HEIGHT deep.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/template/template_internal.h"

#define MAX_HEIGHT 200

static const char *const filter_names[] = {
	"upper", "lower", "trim", "length", "tojson", "default", NULL
};
static const char *const loop_attrs[] = {
	"index", "index0", "first", "last", "length", "revindex", "revindex0",
	NULL
};
static const char *const methods[] = { "items", "keys", "values", "get", NULL };
static const char *const tests[] = { "defined", "undefined", "none", NULL };

void tpl__free_ex(tpl__ex *e)
{
	if (!e)
		return;
	json_decref(e->lit);
	free(e->disp);
	free(e->text);
	free(e->name);
	tpl__free_ex(e->a);
	tpl__free_ex(e->b);
	for (size_t i = 0; i < e->nargs; i++)
		tpl__free_ex(e->args[i]);
	free(e->args);
	for (size_t i = 0; i < e->nsteps; i++) {
		json_decref(e->steps[i].key);
		tpl__free_ex(e->steps[i].dyn);
	}
	free(e->steps);
	free(e);
}

static int word_index(const char *s, size_t k, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		if (tpl__word_is(s, k, words[i]))
			return i;
	return -1;
}

/* The identifier at c->pos (0 if none). */
static size_t ident(const tpl__cc *c)
{
	return tpl__ident_len(c->s + c->pos, c->n - c->pos);
}

static bool at_word(const tpl__cc *c, const char *w)
{
	return tpl__word_is(c->s + c->pos, ident(c), w);
}

static bool at_char(const tpl__cc *c, char ch)
{
	return c->pos < c->n && c->s[c->pos] == ch;
}

static bool at_str(const tpl__cc *c, const char *s)
{
	size_t k = strlen(s);

	return c->n - c->pos >= k && !memcmp(c->s + c->pos, s, k);
}

bool tpl__at_tag_end(const tpl__cc *c, bool stmt)
{
	return at_str(c, stmt ? "%}" : "}}") || at_str(c, stmt ? "-%}" : "-}}");
}

static void taller(unsigned *h, const tpl__ex *child)
{
	if (child && child->height >= *h)
		*h = child->height + 1;
}

/* Sets e's height from its children's; an error when over MAX_HEIGHT. */
static int measure(tpl__cc *c, tpl__ex *e)
{
	unsigned h = 1;

	taller(&h, e->a);
	taller(&h, e->b);
	for (size_t i = 0; i < e->nargs; i++)
		taller(&h, e->args[i]);
	for (size_t i = 0; i < e->nsteps; i++)
		taller(&h, e->steps[i].dyn);
	e->height = h;
	if (h <= MAX_HEIGHT)
		return 0;
	return tpl__cc_fail(c, e->at, "expression too complex (more than %d "
			    "levels of operators and filters)", MAX_HEIGHT);
}

/* A new node at `at`; NULL (with the error set) when out of memory. */
static tpl__ex *new_ex(tpl__cc *c, tpl__ex_kind kind, size_t at)
{
	tpl__ex *e = calloc(1, sizeof(*e));

	if (!e)
		tpl__cc_nomem(c);
	else {
		e->kind = kind;
		e->at = at;
		e->height = 1;
	}
	return e;
}

/* The source text of e (at..c->pos, without trailing spaces) as its
 * text, and as its display name unless it has one. */
static int set_disp(tpl__cc *c, tpl__ex *e)
{
	size_t end = c->pos, len;

	if (e->text)
		return 0;
	while (end > e->at && strchr(" \t\r\n\f\v", c->s[end - 1]))
		end--;
	len = end - e->at;
	if (len > 80)
		len = core_utf8_cut(c->s + e->at, 77);
	e->text = malloc(len + 4);
	if (!e->text)
		return tpl__cc_nomem(c);
	memcpy(e->text, c->s + e->at, len);
	strcpy(e->text + len, end - e->at > len ? "..." : "");
	if (!e->disp && !(e->disp = strdup(e->text)))
		return tpl__cc_nomem(c);
	return 0;
}

/* Wraps the operand *x into a new node of kind (operand a); on failure
 * *x is freed. */
static int wrap(tpl__cc *c, tpl__ex_kind kind, size_t at, tpl__ex **x)
{
	tpl__ex *e = new_ex(c, kind, at);

	if (!e) {
		tpl__free_ex(*x);
		*x = NULL;
		return CORE_ENOMEM;
	}
	e->a = *x;
	*x = e;
	return measure(c, e);
}

static int add_arg(tpl__cc *c, tpl__ex *e, tpl__ex *arg)
{
	tpl__ex **v = realloc(e->args, (e->nargs + 1) * sizeof(*v));

	if (!v) {
		tpl__free_ex(arg);
		return tpl__cc_nomem(c);
	}
	e->args = v;
	e->args[e->nargs++] = arg;
	return measure(c, e);
}

static int enter(tpl__cc *c)
{
	if (++c->depth <= TPL__MAX_NEST)
		return 0;
	return tpl__cc_fail(c, c->pos, "expression nested too deeply (more "
			    "than %d levels)", TPL__MAX_NEST);
}

static int expect_char(tpl__cc *c, char ch, const char *what, size_t open)
{
	char got[48];
	int line, col;

	tpl__skip_ws(c);
	if (at_char(c, ch)) {
		c->pos++;
		return 0;
	}
	tpl__where(c->s, open, &line, &col);
	return tpl__cc_fail(c, c->pos, "expected '%c' to close the %s opened at "
			    "line %d, column %d, got %s", ch, what, line, col,
			    tpl__cc_got(c, c->pos, got, sizeof(got)));
}

/* Comma-separated expressions up to `closer`, as e's arguments; c->pos
 * at the opening bracket. `what` names the list in a message. */
static int expr_list(tpl__cc *c, tpl__ex *e, char closer, const char *what)
{
	size_t open = c->pos++;
	tpl__ex *x;
	int rc;

	if ((rc = enter(c)))
		return rc;
	tpl__skip_ws(c);
	while (!at_char(c, closer)) {
		if ((rc = tpl__parse_expr(c, &x))) {
			tpl__free_ex(x);
			return rc;
		}
		if ((rc = add_arg(c, e, x)))
			return rc;
		tpl__skip_ws(c);
		if (!at_char(c, ','))
			break;
		c->pos++;
		tpl__skip_ws(c);
	}
	c->depth--;
	return expect_char(c, closer, what, open);
}

/* "(a, b, ...)" after a method or filter name, c->pos at '('. */
static int call_args(tpl__cc *c, tpl__ex *e)
{
	return expr_list(c, e, ')', "argument list");
}

/* ------------------------------------------------------------ primaries */

static int concat(tpl__ex *e, const json_t *more)
{
	core_buf b = { 0 };
	json_t *s = NULL;

	if (!core_buf_append(&b, json_string_value(e->lit),
			     json_string_length(e->lit)) &&
	    !core_buf_append(&b, json_string_value(more),
			     json_string_length(more)))
		s = json_stringn(b.data ? b.data : "", b.len);
	core_buf_release(&b);
	if (!s)
		return CORE_ENOMEM;
	json_decref(e->lit);
	e->lit = s;
	return 0;
}

/* Adjacent string literals concatenate, as in Jinja: 'a' "b" is 'ab'. */
static int string_lit(tpl__cc *c, tpl__ex *e)
{
	json_t *more;
	int rc;

	if ((rc = tpl__parse_string(c, &e->lit)))
		return rc;
	for (;;) {
		size_t save = c->pos;

		tpl__skip_ws(c);
		if (!at_char(c, '\'') && !at_char(c, '"')) {
			c->pos = save;
			break;
		}
		if ((rc = tpl__parse_string(c, &more)))
			return rc;
		rc = concat(e, more);
		json_decref(more);
		if (rc)
			return tpl__cc_nomem(c);
	}
	if (!(e->disp = strdup("string literal")))
		return tpl__cc_nomem(c);
	return 0;
}

static int list_lit(tpl__cc *c, tpl__ex *e)
{
	int rc = expr_list(c, e, ']', "list");

	return rc ? rc : measure(c, e);
}

/* A loop variable in scope, innermost first; -1 if none. */
static long find_var(const tpl__cc *c, const char *s, size_t k)
{
	for (size_t i = c->nvars; i-- > 0;)
		if (tpl__word_is(s, k, c->vars[i]))
			return (long)i;
	return -1;
}

/* loop.<attribute>, c->pos after "loop". */
static int loop_attr(tpl__cc *c, tpl__ex *e)
{
	size_t at, k;
	char got[48];
	int i;

	if (!c->loops)
		return tpl__cc_fail(c, e->at, "'loop' is only defined inside "
				    "{%% for %%}");
	tpl__skip_ws(c);
	if (!at_char(c, '.'))
		return tpl__cc_fail(c, c->pos, "expected '.' after 'loop' "
				    "(loop.index, loop.first, ...), got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	c->pos++;
	tpl__skip_ws(c);
	at = c->pos;
	k = ident(c);
	if ((i = word_index(c->s + at, k, loop_attrs)) < 0)
		return tpl__cc_fail(c, at, "unknown loop attribute '%.*s' "
				    "(supported: index, index0, first, last, "
				    "length, revindex, revindex0)",
				    (int)k, c->s + at);
	c->pos += k;
	e->kind = TPL__E_LOOP;
	e->op = i;
	e->slot = c->loops - 1;
	return 0;
}

static int name_primary(tpl__cc *c, tpl__ex *e)
{
	const char *s = c->s + c->pos;
	size_t k = ident(c);
	long var = find_var(c, s, k);

	if (!k) {
		char got[48];

		return tpl__cc_fail(c, c->pos, "expected an expression (row.name, "
				    "row['name'] or a quoted string), got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	}
	c->pos += k;
	if (var >= 0) {
		e->kind = TPL__E_PATH;
		e->root = TPL__ROOT_VAR;
		e->slot = (size_t)var;
		e->name = strndup(s, k);
		return e->name ? 0 : tpl__cc_nomem(c);
	}
	e->kind = TPL__E_LIT;
	if (tpl__word_is(s, k, "true") || tpl__word_is(s, k, "True"))
		e->lit = json_true();
	else if (tpl__word_is(s, k, "false") || tpl__word_is(s, k, "False"))
		e->lit = json_false();
	else if (tpl__word_is(s, k, "none") || tpl__word_is(s, k, "None"))
		e->lit = json_null();
	else if (tpl__word_is(s, k, "row") || tpl__word_is(s, k, "lookup")) {
		e->kind = TPL__E_PATH;
		e->root = *s == 'r' ? TPL__ROOT_ROW : TPL__ROOT_LOOKUP;
	} else if (tpl__word_is(s, k, "loop"))
		return loop_attr(c, e);
	else
		return tpl__cc_fail(c, e->at, "unknown name '%.*s': names are row, "
				    "lookup and loop variables, e.g. {{ row.%.*s }}",
				    (int)k, s, (int)k, s);
	return 0;
}

static int parse_primary(tpl__cc *c, tpl__ex **out)
{
	tpl__ex *e;
	char ch;
	int rc;

	tpl__skip_ws(c);
	if (!(e = new_ex(c, TPL__E_LIT, c->pos)))
		return CORE_ENOMEM;
	*out = e;
	ch = c->pos < c->n ? c->s[c->pos] : '\0';
	if (ch == '\'' || ch == '"')
		return string_lit(c, e);
	if ((ch >= '0' && ch <= '9') || (ch == '-' && c->pos + 1 < c->n &&
					 c->s[c->pos + 1] >= '0' &&
					 c->s[c->pos + 1] <= '9'))
		return tpl__parse_number(c, &e->lit);
	if (ch == '[') {
		e->kind = TPL__E_LIST;
		return list_lit(c, e);
	}
	if (ch == '(') {
		size_t open = c->pos++;

		free(e);
		*out = NULL;
		if ((rc = enter(c)) || (rc = tpl__parse_expr(c, out)))
			return rc;
		c->depth--;
		tpl__skip_ws(c);
		if (at_char(c, ','))
			return tpl__cc_fail(c, c->pos, "tuples are not supported");
		return expect_char(c, ')', "parenthesis", open);
	}
	return name_primary(c, e);
}

/* ------------------------------------------------------------- postfix */

/* Makes *x a path (wrapping any other expression, which ended at `end`,
 * as its root) and appends a step. */
static int add_step(tpl__cc *c, tpl__ex **x, size_t end, json_t *key,
		    tpl__ex *dyn, bool attr)
{
	size_t save = c->pos;
	tpl__step *s;
	int rc = 0;

	if ((*x)->kind != TPL__E_PATH) {
		c->pos = end;
		rc = set_disp(c, *x);
		c->pos = save;
		if (!rc && !(rc = wrap(c, TPL__E_PATH, (*x)->at, x)))
			(*x)->root = TPL__ROOT_EXPR;
	}
	if (!rc && !(s = realloc((*x)->steps, ((*x)->nsteps + 1) * sizeof(*s))))
		rc = tpl__cc_nomem(c);
	if (rc) {
		json_decref(key);
		tpl__free_ex(dyn);
		return rc;
	}
	(*x)->steps = s;
	s[(*x)->nsteps++] = (tpl__step){ key, dyn, attr };
	return dyn ? measure(c, *x) : 0;
}

/* [key], c->pos at '['. A literal key is a step written in the template;
 * any other expression is computed for each row. */
static int subscript(tpl__cc *c, tpl__ex **x)
{
	size_t open = c->pos++, at;
	tpl__ex *k;
	json_t *key;
	int rc;

	tpl__skip_ws(c);
	at = c->pos;
	if (at_char(c, ':'))
		return tpl__cc_fail(c, at, "slices ([a:b]) are not supported");
	if ((rc = enter(c)))
		return rc;
	if ((rc = tpl__parse_expr(c, &k))) {
		tpl__free_ex(k);
		return rc;
	}
	c->depth--;
	tpl__skip_ws(c);
	if (at_char(c, ':')) {
		tpl__free_ex(k);
		return tpl__cc_fail(c, c->pos, "slices ([a:b]) are not supported");
	}
	if (!at_char(c, ']')) {
		char got[48];

		tpl__free_ex(k);
		return tpl__cc_fail(c, c->pos, "expected ']', got %s",
				    tpl__cc_got(c, c->pos, got, sizeof(got)));
	}
	c->pos++;
	if (k->kind != TPL__E_LIT)
		return add_step(c, x, open, NULL, k, false);
	key = json_incref(k->lit);
	tpl__free_ex(k);
	if (json_is_real(key))
		rc = tpl__cc_fail(c, open + 1, "an index must be an integer");
	else if (!json_is_string(key) && !json_is_integer(key))
		rc = tpl__cc_fail(c, at, "a key must be a quoted string or an "
				  "integer index");
	else if (json_is_integer(key) && (*x)->kind == TPL__E_PATH &&
		 (*x)->root == TPL__ROOT_ROW && !(*x)->nsteps)
		rc = tpl__cc_fail(c, open, "the row is an object: name a field "
				  "(row['name'] or row.name), not an index");
	if (rc) {
		json_decref(key);
		return rc;
	}
	return add_step(c, x, open, key, NULL, false);
}

/* .name, or a method call .items() .keys() .values() .get(k[, d]). */
static int attribute(tpl__cc *c, tpl__ex **x)
{
	size_t dot = c->pos, at, k, save;
	char got[48];
	int m, rc;
	json_t *key;

	c->pos++;
	tpl__skip_ws(c);
	at = c->pos;
	if (!(k = ident(c)))
		return tpl__cc_fail(c, at, "expected a field name after '.', got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	c->pos += k;
	save = c->pos;
	tpl__skip_ws(c);
	if (!at_char(c, '(')) {
		c->pos = save;
		if (!(key = json_stringn(c->s + at, k)))
			return tpl__cc_nomem(c);
		return add_step(c, x, dot, key, NULL, true);
	}
	if ((m = word_index(c->s + at, k, methods)) < 0)
		return tpl__cc_fail(c, at, "calling '%.*s' is not supported (only "
				    ".items(), .keys(), .values() and .get() of "
				    "a mapping)", (int)k, c->s + at);
	/* ELSPETH's row (a PipelineRow) has get() and keys(), not these. */
	if ((m == TPL__M_ITEMS || m == TPL__M_VALUES) &&
	    (*x)->kind == TPL__E_PATH && (*x)->root == TPL__ROOT_ROW &&
	    !(*x)->nsteps)
		return tpl__cc_fail(c, at, "the row has no .%s() (ELSPETH's row "
				    "has .get() and .keys()); loop over row.keys()",
				    m == TPL__M_ITEMS ? "items" : "values");
	save = c->pos;
	c->pos = dot;	/* the object's text ends before the '.' */
	rc = set_disp(c, *x);
	c->pos = save;
	if (rc || (rc = wrap(c, TPL__E_METHOD, (*x)->at, x)))
		return rc;
	(*x)->op = m;
	if ((rc = call_args(c, *x)))
		return rc;
	if ((*x)->nargs != (m == TPL__M_GET ? 1u : 0u) &&
	    !(m == TPL__M_GET && (*x)->nargs == 2))
		return tpl__cc_fail(c, at, m == TPL__M_GET ?
				    ".get() takes a key and an optional default" :
				    ".%.*s() takes no arguments", (int)k, c->s + at);
	return 0;
}

/* A row field written out (row.a.b[0], row['k']) is named as the row's
 * messages name it: a.b[0], k. */
static int row_disp(tpl__cc *c, tpl__ex *e)
{
	core_buf b = { 0 };
	int rc = 0;

	for (size_t i = 0; i < e->nsteps && !rc; i++) {
		const json_t *k = e->steps[i].key;

		if (!k) {       /* computed: the source text names it */
			core_buf_release(&b);
			free(e->disp);
			e->disp = e->text ? strdup(e->text) : NULL;
			return e->text && !e->disp ? tpl__cc_nomem(c) : 0;
		}
		rc = tpl__path_step(&b, k, i == 0);
	}
	if (!rc && !e->nsteps)
		rc = core_buf_puts(&b, "row");
	free(e->disp);	/* (row.a).b: the parenthesised path named itself */
	if (rc || !(e->disp = core_buf_steal(&b))) {
		core_buf_release(&b);
		return tpl__cc_nomem(c);
	}
	return 0;
}

static int parse_postfix(tpl__cc *c, tpl__ex **out)
{
	int rc = parse_primary(c, out);

	while (!rc) {
		tpl__skip_ws(c);
		if (at_char(c, '.') && (*out)->kind != TPL__E_LIT)
			rc = attribute(c, out);
		else if (at_char(c, '['))
			rc = subscript(c, out);
		else if (at_char(c, '('))
			return tpl__cc_fail(c, c->pos, "only .items(), .keys(), "
					    ".values() and .get() can be called");
		else
			break;
	}
	if (!rc && (*out)->kind == TPL__E_PATH && (*out)->root == TPL__ROOT_ROW)
		rc = row_disp(c, *out);
	return rc;
}

/* -------------------------------------------------- filters and tests */

/* The arguments of filter e: none, except default(value[, true|false])
 * (default alone is default('')). */
static int filter_args(tpl__cc *c, tpl__ex *e)
{
	size_t open = c->pos;
	tpl__ex *empty;
	int rc;

	if (at_char(c, '(') && (rc = call_args(c, e)))
		return rc;
	if (e->nargs && e->op != TPL__F_DEFAULT)
		return tpl__cc_fail(c, open + 1, "filter '%s' takes no arguments",
				    filter_names[e->op]);
	if (e->nargs > 2)
		return tpl__cc_fail(c, e->args[2]->at, "default takes at most two "
				    "arguments");
	if (e->nargs == 2 && (e->args[1]->kind != TPL__E_LIT ||
			      !json_is_boolean(e->args[1]->lit)))
		return tpl__cc_fail(c, e->args[1]->at, "the second argument of "
				    "default must be true or false (replace "
				    "falsy values too)");
	e->flag = e->nargs == 2 && json_is_true(e->args[1]->lit);
	if (e->op != TPL__F_DEFAULT || e->nargs)
		return 0;
	if (!(empty = new_ex(c, TPL__E_LIT, open)))
		return CORE_ENOMEM;
	if (!(empty->lit = json_string(""))) {
		tpl__free_ex(empty);
		return tpl__cc_nomem(c);
	}
	return add_arg(c, e, empty);
}

/* | name(args): the filter's messages name its input as the input's
 * messages do. */
static int filter(tpl__cc *c, tpl__ex **x)
{
	size_t at, k;
	char got[48];
	int kind, rc;

	tpl__skip_ws(c);
	at = c->pos;
	if (!(k = ident(c)))
		return tpl__cc_fail(c, at, "expected a filter name after '|', got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	if ((kind = word_index(c->s + at, k, filter_names)) < 0)
		return tpl__cc_fail(c, at, "unknown filter '%.*s' (supported: upper, "
				    "lower, trim, length, tojson, default)",
				    (int)k, c->s + at);
	if ((rc = set_disp(c, *x)) || (rc = wrap(c, TPL__E_FILTER, at, x)))
		return rc;
	(*x)->op = kind;
	if (!((*x)->disp = strdup((*x)->a->disp)))
		return tpl__cc_nomem(c);
	c->pos += k;
	tpl__skip_ws(c);
	return filter_args(c, *x);
}

static int test(tpl__cc *c, tpl__ex **x)
{
	bool neg = false;
	size_t at, k;
	char got[48];
	int t, rc;

	tpl__skip_ws(c);
	if (at_word(c, "not")) {
		neg = true;
		c->pos += 3;
		tpl__skip_ws(c);
	}
	at = c->pos;
	k = ident(c);
	if (!k)
		return tpl__cc_fail(c, at, "expected a test name after 'is', got %s",
				    tpl__cc_got(c, at, got, sizeof(got)));
	if ((t = word_index(c->s + at, k, tests)) < 0)
		return tpl__cc_fail(c, at, "unknown test '%.*s' (supported: "
				    "defined, undefined, none)", (int)k, c->s + at);
	c->pos += k;
	if ((rc = wrap(c, TPL__E_TEST, (*x)->at, x)))
		return rc;
	(*x)->op = t;
	(*x)->flag = neg;
	return 0;
}

static int parse_unary(tpl__cc *c, tpl__ex **out)
{
	int rc = parse_postfix(c, out);

	while (!rc) {
		tpl__skip_ws(c);
		if (at_char(c, '|')) {
			c->pos++;
			rc = filter(c, out);
		} else if (at_word(c, "is")) {
			c->pos += 2;
			rc = test(c, out);
		} else {
			break;
		}
	}
	if (!rc)
		rc = set_disp(c, *out);
	return rc;
}

/* ------------------------------------------------- operators, by level */

/* The comparison operator at c->pos, its length in *len; -1 if none. */
static int cmp_op(const tpl__cc *c, size_t *len)
{
	static const struct { const char *s; tpl__cmp op; } ops[] = {
		{ "==", TPL__CMP_EQ }, { "!=", TPL__CMP_NE },
		{ "<=", TPL__CMP_LE }, { ">=", TPL__CMP_GE },
		{ "<", TPL__CMP_LT }, { ">", TPL__CMP_GT },
	};
	size_t save;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (at_str(c, ops[i].s)) {
			*len = strlen(ops[i].s);
			return (int)ops[i].op;
		}
	if (at_word(c, "in")) {
		*len = 2;
		return TPL__CMP_IN;
	}
	if (!at_word(c, "not"))
		return -1;
	save = c->pos + 3;
	while (save < c->n && strchr(" \t\r\n\f\v", c->s[save]) && c->s[save])
		save++;
	if (!tpl__word_is(c->s + save, tpl__ident_len(c->s + save, c->n - save), "in"))
		return -1;
	*len = save + 2 - c->pos;
	return TPL__CMP_NOT_IN;
}

/* Operators Jinja has and these templates do not. */
static int no_arithmetic(tpl__cc *c)
{
	static const char *const ops[] = { "**", "//", "+", "-", "*", "/", "%",
					   "~", NULL };

	if (tpl__at_tag_end(c, false) || tpl__at_tag_end(c, true))
		return 0;
	for (int i = 0; ops[i]; i++)
		if (at_str(c, ops[i]))
			return tpl__cc_fail(c, c->pos, "operator '%s' is not "
					    "supported (templates have no "
					    "arithmetic)", ops[i]);
	if (at_word(c, "if"))
		return tpl__cc_fail(c, c->pos, "'if' here (an inline if, or a "
				    "loop filter) is not supported; use {%% if %%}");
	return 0;
}

static int parse_compare(tpl__cc *c, tpl__ex **out)
{
	size_t at = c->pos, len;
	tpl__ex *rhs;
	int op, rc;

	if ((rc = parse_unary(c, out)))
		return rc;
	tpl__skip_ws(c);
	if ((rc = no_arithmetic(c)) || (op = cmp_op(c, &len)) < 0)
		return rc;
	c->pos += len;
	rhs = NULL;
	if ((rc = parse_unary(c, &rhs))) {
		tpl__free_ex(rhs);
		return rc;
	}
	if ((rc = wrap(c, TPL__E_CMP, at, out))) {
		tpl__free_ex(rhs);
		return rc;
	}
	(*out)->op = op;
	(*out)->b = rhs;
	if ((rc = measure(c, *out)))
		return rc;
	tpl__skip_ws(c);
	if (cmp_op(c, &len) >= 0)
		return tpl__cc_fail(c, c->pos, "chained comparisons (a < b < c) "
				    "are not supported; use and");
	if ((rc = no_arithmetic(c)))
		return rc;
	return set_disp(c, *out);
}

static int parse_not(tpl__cc *c, tpl__ex **out)
{
	size_t at;
	int rc;

	tpl__skip_ws(c);
	at = c->pos;
	if (!at_word(c, "not"))
		return parse_compare(c, out);
	c->pos += 3;
	if ((rc = enter(c)) || (rc = parse_not(c, out)))
		return rc;
	c->depth--;
	if ((rc = wrap(c, TPL__E_NOT, at, out)))
		return rc;
	return set_disp(c, *out);
}

/* and (level 1) binds tighter than or (level 0); both left to right. */
static int parse_logic(tpl__cc *c, int level, tpl__ex **out)
{
	const char *word = level ? "and" : "or";
	size_t at;
	tpl__ex *rhs;
	int rc;

	tpl__skip_ws(c);
	at = c->pos;
	rc = level ? parse_not(c, out) : parse_logic(c, 1, out);
	while (!rc) {
		tpl__skip_ws(c);
		if (!at_word(c, word))
			break;
		c->pos += strlen(word);
		rhs = NULL;
		if ((rc = level ? parse_not(c, &rhs) : parse_logic(c, 1, &rhs))) {
			tpl__free_ex(rhs);
			break;
		}
		if ((rc = wrap(c, level ? TPL__E_AND : TPL__E_OR, at, out))) {
			tpl__free_ex(rhs);
			break;
		}
		(*out)->b = rhs;
		if (!(rc = measure(c, *out)))
			rc = set_disp(c, *out);
	}
	return rc;
}

int tpl__parse_expr(tpl__cc *c, tpl__ex **out)
{
	*out = NULL;
	return parse_logic(c, 0, out);
}

int tpl__parse_output(tpl__cc *c, size_t open, tpl__ex **out,
		      bool *strip_after)
{
	char got[48];
	int line, col, rc;

	rc = tpl__parse_expr(c, out);
	if (!rc) {
		tpl__skip_ws(c);
		if (at_str(c, "-}}")) {
			*strip_after = true;
			c->pos += 3;
		} else if (at_str(c, "}}")) {
			c->pos += 2;
		} else {
			tpl__where(c->s, open, &line, &col);
			rc = tpl__cc_fail(c, c->pos, "expected '|' or '}}' to close "
					  "the expression opened at line %d, "
					  "column %d, got %s", line, col,
					  tpl__cc_got(c, c->pos, got, sizeof(got)));
		}
	}
	if (rc) {
		tpl__free_ex(*out);
		*out = NULL;
	}
	return rc;
}

/*
 * expr_primary.c — the operands of gate expressions: literals, `row`,
 * subscripts, row.get(...), the allowed builtin calls, parenthesised
 * expressions, tuples, lists, sets and dicts.
 *
 * Only `row`, True, False, None and the builtins below are names; only
 * row.get may be called as a method. Everything else is refused here, at
 * compile time, so evaluation never meets an unknown name.
 */
#include <string.h>

#include "expr/expr_internal.h"

const char *const expr__builtin_names[DAG__FN_LAST] = {
	[DAG__FN_LEN] = "len", [DAG__FN_STR] = "str", [DAG__FN_INT] = "int",
	[DAG__FN_FLOAT] = "float", [DAG__FN_BOOL] = "bool",
	[DAG__FN_ABS] = "abs",
};

#define ALLOWED_NAMES "row, True, False, None, len, str, int, float, bool, abs"

static bool tok_is(const expr__parser *p, const char *word)
{
	size_t n = p->tok.end - p->tok.start;

	return p->tok.kind == DAG__T_NAME && strlen(word) == n &&
	       !memcmp(p->lx.src + p->tok.start, word, n);
}

static int literal(expr__parser *p, expr__node_kind kind, uint32_t *out)
{
	expr__tok t = p->tok;
	int rc;

	if ((rc = expr__advance(p)) ||
	    (rc = expr__new_node(p, kind, t.start, DAG__NONE, DAG__NONE,
				DAG__NONE, out)))
		return rc;
	if (kind == DAG__N_FLOAT)
		p->nodes[*out].u.d = t.u.d;
	else if (kind == DAG__N_INT)
		p->nodes[*out].u.i = t.u.i;
	else if (kind == DAG__N_BOOL)
		p->nodes[*out].u.i = t.kind == DAG__T_TRUE;
	return 0;
}

/* Adjacent literals concatenate, as in Python: 'a' "b" == 'ab'. Their
 * decoded bytes are adjacent in the pool because nothing else is lexed in
 * between. */
static int string_literal(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start, off = p->tok.u.s.off, len = 0;
	int rc;

	while (p->tok.kind == DAG__T_STR) {
		len += p->tok.u.s.len;
		if ((rc = expr__advance(p)))
			return rc;
	}
	if ((rc = expr__new_node(p, DAG__N_STR, start, DAG__NONE, DAG__NONE,
				DAG__NONE, out)))
		return rc;
	p->nodes[*out].u.s.off = off;
	p->nodes[*out].u.s.len = len;
	return 0;
}

/* Items up to `close` (trailing comma allowed) appended to node. */
static int sequence_items(expr__parser *p, uint32_t node, uint32_t tail,
			  expr__tok_kind close, const char *what, uint32_t open_at)
{
	uint32_t x;
	int rc;

	while (p->tok.kind != close) {
		if ((rc = expr__parse_expr(p, &x)) ||
		    (rc = expr__add_child(p, node, &tail, x)))
			return rc;
		if (p->tok.kind == close)
			break;
		if (p->tok.kind != DAG__T_COMMA) {
			char desc[64];

			return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				"expected ',' or '%c' to close %s opened at column %u, found %s",
				close == DAG__T_RBRACK ? ']' : ')', what,
				expr__column(p->lx.src, open_at),
				expr__tok_desc(p, desc, sizeof(desc)));
		}
		if ((rc = expr__advance(p)))
			return rc;
	}
	if ((rc = expr__advance(p)))
		return rc;
	p->nodes[node].end = p->prev_end;
	return 0;
}

/* At '*': Python's unpacking and power, refused with their names. */
static int star(expr__parser *p)
{
	const char *s = p->lx.src + p->tok.start;

	if (s[1] == '*')
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"dict spread (**) is not allowed");
	if (p->tok.start && s[-1] == '*')
		return expr__syntax_error(p->err, p->lx.src, p->tok.start - 1,
			"'**' (power) is not allowed; use * to multiply");
	return expr__syntax_error(p->err, p->lx.src, p->tok.start,
		"starred expressions (*x) are not allowed");
}

static int brace_error(expr__parser *p, bool dict, uint32_t open_at)
{
	char desc[64];

	if (tok_is(p, "for"))
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"comprehensions are not allowed");
	return expr__syntax_error(p->err, p->lx.src, p->tok.start,
		"expected ',' or '}' to close the %s opened at column %u, found %s",
		dict ? "dict" : "set",
		expr__column(p->lx.src, open_at),
		expr__tok_desc(p, desc, sizeof(desc)));
}

/* After a dict key: ':' and the value, added to node. */
static int dict_value(expr__parser *p, uint32_t node, uint32_t *tail,
		      uint32_t open_at)
{
	uint32_t x;
	char desc[64];
	int rc;

	if (p->tok.kind != DAG__T_COLON)
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected ':' after the key in the dict opened at column %u, found %s",
			expr__column(p->lx.src, open_at),
			expr__tok_desc(p, desc, sizeof(desc)));
	if ((rc = expr__advance(p)) || (rc = expr__parse_expr(p, &x)))
		return rc;
	return expr__add_child(p, node, tail, x);
}

/* {} (an empty dict, as in Python), {a, b, ...} a set, {k: v, ...} a
 * dict; a trailing comma is allowed. */
static int brace_literal(expr__parser *p, uint32_t *out)
{
	uint32_t open_at = p->tok.start, tail, x;
	bool dict;
	int rc;

	if ((rc = expr__advance(p)))
		return rc;
	if (p->tok.kind == DAG__T_RBRACE) {
		if ((rc = expr__advance(p)))
			return rc;
		return expr__new_node(p, DAG__N_DICT, open_at, DAG__NONE,
				     DAG__NONE, DAG__NONE, out);
	}
	if (p->tok.kind == DAG__T_STAR)
		return star(p);
	if ((rc = expr__parse_expr(p, &x)))
		return rc;
	dict = p->tok.kind == DAG__T_COLON;
	if ((rc = expr__new_node(p, dict ? DAG__N_DICT : DAG__N_SET, open_at, x,
				DAG__NONE, DAG__NONE, out)))
		return rc;
	tail = x;
	for (;;) {
		if (dict && (rc = dict_value(p, *out, &tail, open_at)))
			return rc;
		if (p->tok.kind == DAG__T_RBRACE)
			break;
		if (p->tok.kind != DAG__T_COMMA)
			return brace_error(p, dict, open_at);
		if ((rc = expr__advance(p)))
			return rc;
		if (p->tok.kind == DAG__T_RBRACE)
			break;
		if (p->tok.kind == DAG__T_STAR)
			return star(p);
		if ((rc = expr__parse_expr(p, &x)) ||
		    (rc = expr__add_child(p, *out, &tail, x)))
			return rc;
	}
	if ((rc = expr__advance(p)))
		return rc;
	p->nodes[*out].end = p->prev_end;
	return 0;
}

static int list_literal(expr__parser *p, uint32_t *out)
{
	uint32_t open_at = p->tok.start;
	int rc;

	if ((rc = expr__advance(p)) ||
	    (rc = expr__new_node(p, DAG__N_LIST, open_at, DAG__NONE, DAG__NONE,
				DAG__NONE, out)))
		return rc;
	return sequence_items(p, *out, DAG__NONE, DAG__T_RBRACK, "list",
			      open_at);
}

/* (x), (x,), (x, y), () */
static int paren(expr__parser *p, uint32_t *out)
{
	uint32_t open_at = p->tok.start, x;
	int rc;

	if ((rc = expr__advance(p)))
		return rc;
	if (p->tok.kind == DAG__T_RPAREN) {
		rc = expr__advance(p);
		x = DAG__NONE;
	} else if ((rc = expr__parse_expr(p, &x))) {
		return rc;
	} else if (p->tok.kind == DAG__T_RPAREN) {
		*out = x;
		return expr__advance(p);
	} else if (p->tok.kind == DAG__T_COMMA) {
		rc = expr__advance(p);
	} else {
		char desc[64];

		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected ')' to close '(' opened at column %u, found %s",
			expr__column(p->lx.src, open_at),
			expr__tok_desc(p, desc, sizeof(desc)));
	}
	if (rc || (rc = expr__new_node(p, DAG__N_TUPLE, open_at, x, DAG__NONE,
				      DAG__NONE, out)))
		return rc;
	if (x == DAG__NONE)
		return 0;
	return sequence_items(p, *out, x, DAG__T_RPAREN, "tuple", open_at);
}

static int too_many_args(expr__parser *p, const char *fn, unsigned min,
			 unsigned max)
{
	return expr__syntax_error(p->err, p->lx.src, p->tok.start,
		"%s() takes %s argument%s", fn,
		min == max ? "exactly one" : min ? "one or two" : "at most one",
		min == 1 && max == 2 ? "s" : "");
}

/* "(arg, ...)" after the callee fn: between min and max (<= 2) arguments,
 * a trailing comma allowed; missing ones are DAG__NONE. */
static int call_args(expr__parser *p, const char *fn, unsigned min,
		     unsigned max, uint32_t args[2])
{
	uint32_t open_at = p->tok.start;
	unsigned n = 0;
	char desc[64];
	int rc;

	args[0] = args[1] = DAG__NONE;
	if (p->tok.kind != DAG__T_LPAREN)
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected '(' to call %s, found %s", fn,
			expr__tok_desc(p, desc, sizeof(desc)));
	if ((rc = expr__advance(p)))
		return rc;
	while (p->tok.kind != DAG__T_RPAREN) {
		if (n == max)
			return too_many_args(p, fn, min, max);
		if ((rc = expr__parse_expr(p, &args[n++])))
			return rc;
		if (p->tok.kind == DAG__T_RPAREN)
			break;
		if (p->tok.kind != DAG__T_COMMA)
			return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				"expected %s to close %s( opened at column %u, found %s",
				n == max ? "')'" : "',' or ')'", fn,
				expr__column(p->lx.src, open_at),
				expr__tok_desc(p, desc, sizeof(desc)));
		if ((rc = expr__advance(p)))
			return rc;
	}
	if (n < min)
		return too_many_args(p, fn, min, max);
	return expr__advance(p);
}

/* bool(), str(), int() and float() may be called without an argument, as
 * in Python (False, '', 0, 0.0); len() and abs() cannot. */
static int builtin_call(expr__parser *p, int fn, uint32_t *out)
{
	uint32_t start = p->tok.start, args[2];
	unsigned min = fn == DAG__FN_LEN || fn == DAG__FN_ABS;
	int rc;

	if ((rc = expr__advance(p)) ||
	    (rc = call_args(p, expr__builtin_names[fn], min, 1, args)) ||
	    (rc = expr__new_node(p, DAG__N_CALL, start, args[0], DAG__NONE,
				DAG__NONE, out)))
		return rc;
	p->nodes[*out].op = (uint8_t)fn;
	return 0;
}

static int name(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start, len = p->tok.end - p->tok.start;
	uint32_t after = p->tok.end;
	int fn, rc;

	if (tok_is(p, "row")) {
		if ((rc = expr__advance(p)))
			return rc;
		return expr__new_node(p, DAG__N_ROW, start, DAG__NONE, DAG__NONE,
				     DAG__NONE, out);
	}
	for (fn = 0; fn < DAG__FN_LAST; fn++)
		if (tok_is(p, expr__builtin_names[fn]))
			return builtin_call(p, fn, out);
	while (p->lx.src[after] == ' ' || p->lx.src[after] == '\t')
		after++;
	if (p->lx.src[after] == '(')
		return expr__syntax_error(p->err, p->lx.src, start,
			"unknown function '%.*s'; allowed functions: len, str, int, float, bool, abs",
			len > 40 ? 40 : (int)len, p->lx.src + start);
	return expr__syntax_error(p->err, p->lx.src, start,
		"unknown name '%.*s' (allowed names: " ALLOWED_NAMES
		"); read a field with row['%.*s']",
		len > 40 ? 40 : (int)len, p->lx.src + start,
		len > 40 ? 40 : (int)len, p->lx.src + start);
}

static int primary(expr__parser *p, uint32_t *out)
{
	switch (p->tok.kind) {
	case DAG__T_INT:
		return literal(p, DAG__N_INT, out);
	case DAG__T_FLOAT:
		return literal(p, DAG__N_FLOAT, out);
	case DAG__T_TRUE:
	case DAG__T_FALSE:
		return literal(p, DAG__N_BOOL, out);
	case DAG__T_NONE_KW:
		return literal(p, DAG__N_NONE, out);
	case DAG__T_STR:
		return string_literal(p, out);
	case DAG__T_NAME:
		return name(p, out);
	case DAG__T_LPAREN:
		return paren(p, out);
	case DAG__T_LBRACK:
		return list_literal(p, out);
	case DAG__T_LBRACE:
		return brace_literal(p, out);
	case DAG__T_STAR:
		return star(p);
	default:
		return expr__expected(p, "an expression");
	}
}

/* row.get(key) or row.get(key, default); the current token is '.'. */
static int row_get(expr__parser *p, uint32_t start, uint32_t *out)
{
	uint32_t args[2];
	int rc;

	if ((rc = expr__advance(p)))
		return rc;
	if (!tok_is(p, "get"))
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected 'get' after 'row.': only row.get(...) may be called on row");
	if ((rc = expr__advance(p)) ||
	    (rc = call_args(p, "row.get", 1, 2, args)))
		return rc;
	return expr__new_node(p, DAG__N_GET, start, args[0], args[1], DAG__NONE,
			     out);
}

static int subscript(expr__parser *p, uint32_t start, uint32_t *out)
{
	uint32_t open_at = p->tok.start, idx = DAG__NONE;
	char desc[64];
	int rc;

	if ((rc = expr__advance(p)) ||
	    (p->tok.kind != DAG__T_COLON && (rc = expr__parse_expr(p, &idx))))
		return rc;
	if (p->tok.kind == DAG__T_COLON)
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"slices ([a:b]) are not allowed; index with one integer");
	if (p->tok.kind != DAG__T_RBRACK)
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected ']' to close subscript opened at column %u, found %s",
			expr__column(p->lx.src, open_at),
			expr__tok_desc(p, desc, sizeof(desc)));
	if ((rc = expr__advance(p)))
		return rc;
	return expr__new_node(p, DAG__N_SUBSCRIPT, start, *out, idx, DAG__NONE,
			     out);
}

int expr__parse_postfix(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start;
	int rc;

	if ((rc = primary(p, out)))
		return rc;
	for (;;) {
		if (p->tok.kind == DAG__T_LBRACK)
			rc = subscript(p, start, out);
		else if (p->tok.kind == DAG__T_DOT && p->nodes[*out].kind == DAG__N_ROW)
			rc = row_get(p, start, out);
		else if (p->tok.kind == DAG__T_DOT)
			return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				"attributes and methods are not allowed; only row.get(...) may be called");
		else if (p->tok.kind == DAG__T_LPAREN)
			return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				"only len, str, int, float, bool, abs and row.get can be called");
		else
			return 0;
		if (rc)
			return rc;
	}
}

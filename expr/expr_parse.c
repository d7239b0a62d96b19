/*
 * expr_parse.c — the parser of gate expressions (operators, by Python
 * precedence from lowest: ternary, or, and, not, comparisons, + -,
 * * / // %, unary - +) and expr_compile().
 *
 * Recursion is bounded twice: `nest` counts open brackets and unary
 * operators while parsing (so "((((..." cannot exhaust the stack), and each
 * node's depth is checked when it is created (so a long chain "1+1+...+1",
 * which the parser reads in a loop, cannot make evaluation recurse too
 * deep). and/or chains and comparison chains are n-ary nodes and do not
 * add depth per operand.
 */
#include <stdlib.h>
#include <string.h>

#include "expr/expr_internal.h"

int expr__advance(expr__parser *p)
{
	p->prev_end = p->tok.end;
	return expr__lex_next(&p->lx, &p->tok);
}

static int grow_nodes(expr__parser *p)
{
	uint32_t cap = p->cap ? p->cap * 2 : 16;
	expr__node *n;

	if (p->cap >= UINT32_MAX / 4)
		return core_err_set(p->err, CORE_ENOMEM, "out of memory");
	n = realloc(p->nodes, cap * sizeof(*n));
	if (!n)
		return core_err_set(p->err, CORE_ENOMEM, "out of memory");
	p->nodes = n;
	p->cap = cap;
	return 0;
}

static uint16_t depth_of(const expr__parser *p, uint32_t n)
{
	return n == DAG__NONE ? 0 : p->nodes[n].depth;
}

static int check_depth(expr__parser *p, uint32_t n)
{
	if (p->nodes[n].depth <= DAG__MAX_DEPTH)
		return 0;
	return expr__syntax_error(p->err, p->lx.src, p->nodes[n].start,
		"expression too complex (more than %d levels of operators); use 'in [...]' or split the condition",
		DAG__MAX_DEPTH);
}

int expr__new_node(expr__parser *p, expr__node_kind kind, uint32_t start,
		  uint32_t a, uint32_t b, uint32_t c, uint32_t *out)
{
	expr__node *n;
	uint16_t d = depth_of(p, a);
	int rc;

	if (p->nnodes == p->cap && (rc = grow_nodes(p)))
		return rc;
	if (depth_of(p, b) > d)
		d = depth_of(p, b);
	if (depth_of(p, c) > d)
		d = depth_of(p, c);
	n = &p->nodes[p->nnodes];
	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	n->depth = (uint16_t)(d + 1);
	n->start = start;
	n->end = p->prev_end;
	n->a = a;
	n->b = b;
	n->c = c;
	n->next = DAG__NONE;
	n->count = a == DAG__NONE ? 0 : 1;
	*out = p->nnodes++;
	return check_depth(p, *out);
}

int expr__add_child(expr__parser *p, uint32_t parent, uint32_t *tail,
		   uint32_t child)
{
	expr__node *n = &p->nodes[parent];

	if (*tail == DAG__NONE)
		n->a = child;
	else
		p->nodes[*tail].next = child;
	*tail = child;
	n->count++;
	n->end = p->prev_end;
	if (p->nodes[child].depth >= n->depth)
		n->depth = (uint16_t)(p->nodes[child].depth + 1);
	return check_depth(p, parent);
}

const char *expr__tok_desc(const expr__parser *p, char *buf, size_t cap)
{
	const expr__tok *t = &p->tok;
	unsigned len = t->end - t->start;

	if (t->kind == DAG__T_EOF)
		return "end of input";
	if (len > 24)
		snprintf(buf, cap, "%s'%.20s...'",
			 t->kind == DAG__T_STR ? "string " : "",
			 p->lx.src + t->start);
	else
		snprintf(buf, cap, "%s'%.*s'",
			 t->kind == DAG__T_STR ? "string " : "", (int)len,
			 p->lx.src + t->start);
	return buf;
}

int expr__expected(expr__parser *p, const char *what)
{
	char desc[64];

	return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				 "expected %s, found %s", what,
				 expr__tok_desc(p, desc, sizeof(desc)));
}

int expr__nest_enter(expr__parser *p)
{
	if (++p->nest <= DAG__MAX_NEST)
		return 0;
	return expr__syntax_error(p->err, p->lx.src, p->tok.start,
		"expression nested too deeply (limit %d levels)", DAG__MAX_NEST);
}

static int parse_unary(expr__parser *p, uint32_t *out)
{
	expr__node_kind kind;
	uint32_t start = p->tok.start, x;
	int rc;

	if (p->tok.kind != DAG__T_MINUS && p->tok.kind != DAG__T_PLUS)
		return expr__parse_postfix(p, out);
	kind = p->tok.kind == DAG__T_MINUS ? DAG__N_NEG : DAG__N_POS;
	if ((rc = expr__nest_enter(p)) || (rc = expr__advance(p)) ||
	    (rc = parse_unary(p, &x)))
		return rc;
	p->nest--;
	return expr__new_node(p, kind, start, x, DAG__NONE, DAG__NONE, out);
}

static int binop_of(expr__tok_kind k, int level)
{
	if (level == 0)
		return k == DAG__T_PLUS ? DAG__OP_ADD :
		       k == DAG__T_MINUS ? DAG__OP_SUB : -1;
	return k == DAG__T_STAR ? DAG__OP_MUL : k == DAG__T_SLASH ? DAG__OP_DIV :
	       k == DAG__T_DSLASH ? DAG__OP_FLOORDIV :
	       k == DAG__T_PERCENT ? DAG__OP_MOD : -1;
}

/* level 0: + -; level 1: * / // %. Left-associative. */
static int parse_arith(expr__parser *p, int level, uint32_t *out)
{
	uint32_t start = p->tok.start, rhs;
	int op, rc;

	rc = level ? parse_unary(p, out) : parse_arith(p, 1, out);
	while (!rc && (op = binop_of(p->tok.kind, level)) >= 0) {
		if ((rc = expr__advance(p)) ||
		    (rc = level ? parse_unary(p, &rhs) : parse_arith(p, 1, &rhs)) ||
		    (rc = expr__new_node(p, DAG__N_BINOP, start, *out, rhs,
					DAG__NONE, out)))
			return rc;
		p->nodes[*out].op = (uint8_t)op;
	}
	return rc;
}

/* Reads a comparison operator, or returns -1 when there is none. */
static int read_cmpop(expr__parser *p, int *op)
{
	static const int simple[] = {
		[DAG__T_EQ] = DAG__CMP_EQ + 1, [DAG__T_NE] = DAG__CMP_NE + 1,
		[DAG__T_LT] = DAG__CMP_LT + 1, [DAG__T_LE] = DAG__CMP_LE + 1,
		[DAG__T_GT] = DAG__CMP_GT + 1, [DAG__T_GE] = DAG__CMP_GE + 1,
		[DAG__T_IN] = DAG__CMP_IN + 1, [DAG__T_IS] = DAG__CMP_IS + 1,
		[DAG__T_NOT] = DAG__CMP_NOT_IN + 1,
	};
	expr__tok_kind k = p->tok.kind;
	int rc;

	*op = (size_t)k < sizeof(simple) / sizeof(simple[0]) ? simple[k] - 1 : -1;
	if (*op < 0)
		return 0;
	if ((rc = expr__advance(p)))
		return rc;
	if (k == DAG__T_NOT) {
		if (p->tok.kind != DAG__T_IN)
			return expr__expected(p, "'in' after 'not'");
		return expr__advance(p);
	}
	if (k == DAG__T_IS && p->tok.kind == DAG__T_NOT) {
		*op = DAG__CMP_IS_NOT;
		return expr__advance(p);
	}
	return 0;
}

/*
 * `is` and `is not` only test for None: one of the two operands must be the
 * literal None (parenthesized or not), as in ELSPETH 0.4.1
 * (core/expression_parser.py, ExpressionValidator.visit_Compare), which
 * refuses anything else as unsafe. Elsewhere identity is not equality
 * (`1 is 1.0`, `'a' is 'a'` depend on the interpreter), so the operator is
 * refused here, when the settings are validated, rather than evaluated as
 * ==. lhs is the operand before the operator at op_start, rhs the one after;
 * start..p->prev_end is the comparison so far, quoted in the error.
 */
static int check_is(expr__parser *p, int op, uint32_t start, uint32_t op_start,
		    uint32_t lhs, uint32_t rhs)
{
	const char *src = p->lx.src + start;
	size_t len = p->prev_end - start, cut = len;

	if ((op != DAG__CMP_IS && op != DAG__CMP_IS_NOT) ||
	    p->nodes[lhs].kind == DAG__N_NONE || p->nodes[rhs].kind == DAG__N_NONE)
		return 0;
	if (len > 80)
		cut = core_utf8_cut(src, 77);
	return expr__syntax_error(p->err, p->lx.src, op_start,
		"'is' and 'is not' operators are only allowed for None checks "
		"(in `%.*s%s`); compare values with == or !=",
		(int)cut, src, cut < len ? "..." : "");
}

static int parse_comparison(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start, chain = DAG__NONE, tail = DAG__NONE;
	uint32_t rhs, cmp, lhs;
	uint32_t op_start;
	int op, rc;

	if ((rc = parse_arith(p, 0, out)))
		return rc;
	lhs = *out;
	for (;;) {
		op_start = p->tok.start;
		if ((rc = read_cmpop(p, &op)) || op < 0)
			return rc;
		if (chain == DAG__NONE) {
			if ((rc = expr__new_node(p, DAG__N_CHAIN, start, *out,
						DAG__NONE, DAG__NONE, &chain)))
				return rc;
			tail = *out;
			*out = chain;
		}
		if ((rc = parse_arith(p, 0, &rhs)) ||
		    (rc = check_is(p, op, start, op_start, lhs, rhs)) ||
		    (rc = expr__new_node(p, DAG__N_CMP, op_start, rhs, DAG__NONE,
					DAG__NONE, &cmp)))
			return rc;
		lhs = rhs;
		p->nodes[cmp].op = (uint8_t)op;
		if ((rc = expr__add_child(p, chain, &tail, cmp)))
			return rc;
	}
}

static int parse_not(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start, x;
	int rc;

	if (p->tok.kind != DAG__T_NOT)
		return parse_comparison(p, out);
	if ((rc = expr__nest_enter(p)) || (rc = expr__advance(p)) ||
	    (rc = parse_not(p, &x)))
		return rc;
	p->nest--;
	return expr__new_node(p, DAG__N_NOT, start, x, DAG__NONE, DAG__NONE, out);
}

/* level 0: or; level 1: and. Operands form one n-ary node. */
static int parse_bool(expr__parser *p, int level, uint32_t *out)
{
	expr__tok_kind k = level ? DAG__T_AND : DAG__T_OR;
	uint32_t start = p->tok.start, node = DAG__NONE, tail = DAG__NONE, x;
	int rc;

	rc = level ? parse_not(p, out) : parse_bool(p, 1, out);
	while (!rc && p->tok.kind == k) {
		if (node == DAG__NONE) {
			rc = expr__new_node(p, level ? DAG__N_AND : DAG__N_OR,
					   start, *out, DAG__NONE, DAG__NONE,
					   &node);
			tail = *out;
			*out = node;
		}
		if (rc || (rc = expr__advance(p)) ||
		    (rc = level ? parse_not(p, &x) : parse_bool(p, 1, &x)))
			return rc;
		rc = expr__add_child(p, node, &tail, x);
	}
	return rc;
}

int expr__parse_expr(expr__parser *p, uint32_t *out)
{
	uint32_t start = p->tok.start, if_at, cond, other;
	int rc;

	if ((rc = expr__nest_enter(p)) || (rc = parse_bool(p, 0, out)))
		return rc;
	if (p->tok.kind == DAG__T_IF) {
		if_at = p->tok.start;
		if ((rc = expr__advance(p)) || (rc = parse_bool(p, 0, &cond)))
			return rc;
		if (p->tok.kind != DAG__T_ELSE)
			return expr__syntax_error(p->err, p->lx.src, p->tok.start,
				"expected 'else' to complete the 'if' at column %u",
				expr__column(p->lx.src, if_at));
		if ((rc = expr__advance(p)) || (rc = expr__parse_expr(p, &other)) ||
		    (rc = expr__new_node(p, DAG__N_TERNARY, start, *out, cond,
					other, out)))
			return rc;
	}
	p->nest--;
	return 0;
}

static int parse_all(expr__parser *p, uint32_t *root)
{
	char desc[64];
	int rc;

	if ((rc = expr__advance(p)) || (rc = expr__parse_expr(p, root)))
		return rc;
	if (p->tok.kind != DAG__T_EOF)
		return expr__syntax_error(p->err, p->lx.src, p->tok.start,
			"expected end of expression, found %s",
			expr__tok_desc(p, desc, sizeof(desc)));
	return 0;
}

int expr_compile(const char *src, expr_code **out, core_err *err)
{
	expr__parser p = { .err = err };
	core_buf pool = { 0 };
	expr_code *e;
	size_t len;
	int rc;

	*out = NULL;
	if (!src)
		return core_err_set(err, CORE_EEXPR, "column 1: no expression given");
	len = strlen(src);
	if (len > DAG__MAX_SRC)
		return core_err_set(err, CORE_EEXPR,
			"column 1: expression too long (%zu bytes, limit %u)",
			len, DAG__MAX_SRC);
	e = calloc(1, sizeof(*e));
	if (!e || !(e->src = strdup(src))) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_free_expr;
	}
	e->src_len = (uint32_t)len;
	p.lx = (expr__lexer){ .src = e->src, .len = e->src_len, .pool = &pool,
			     .err = err };
	rc = parse_all(&p, &e->root);
	if (rc)
		goto out_free_nodes;
	e->nodes = p.nodes;
	e->nnodes = p.nnodes;
	e->pool = core_buf_steal(&pool);
	if (!e->pool) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_free_expr;
	}
	*out = e;
	return 0;

out_free_nodes:
	free(p.nodes);
	core_buf_release(&pool);
out_free_expr:
	expr_free(e);
	return rc;
}

void expr_free(expr_code *e)
{
	if (!e)
		return;
	free(e->src);
	free(e->nodes);
	free(e->pool);
	free(e);
}

const char *expr_source(const expr_code *e)
{
	return e ? e->src : NULL;
}

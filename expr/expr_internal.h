/*
 * expr_internal.h — internals shared by the files of the expression
 * module: tokens and lexer (expr_lex.c), the AST and parser
 * (expr_parse.c, expr_primary.c), runtime values and operators
 * (expr_value.c, expr_compare.c, expr_arith.c), sets and dicts built by
 * the expression (expr_coll.c), builtins (expr_builtin.c),
 * formatting (expr_repr.c), evaluation (expr_eval.c) and the public
 * evaluation entry points (expr_run.c).
 *
 * A compiled expression is a flat array of AST nodes plus a pool of
 * decoded string literals; nodes refer to each other by index. Nothing in
 * it changes after expr_compile() returns, so evaluation needs no
 * locks. Evaluation works on expr__val, a small tagged value that borrows
 * strings and containers from the row or the expression; only values built
 * at runtime (str(), concatenation, list, set and dict literals) live in a per-call
 * arena that is freed when the call returns.
 */
#ifndef ELSPETH_EXPR_INTERNAL_H
#define ELSPETH_EXPR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "expr/expr.h"

#define DAG__MAX_NEST 200	/* brackets, parentheses, unary operators
				 * (Python's limit for brackets) */
#define DAG__MAX_DEPTH 256	/* AST depth, bounds evaluation recursion */
#define DAG__MAX_SRC (16u << 20)	/* longest source accepted */
#define DAG__ARENA_LIMIT (16u << 20)	/* bytes built by one evaluation */
#define DAG__NONE UINT32_MAX	/* "no node" */

/* ----------------------------------------------------------------- lexer */

typedef enum expr__tok_kind {
	DAG__T_EOF,
	DAG__T_INT, DAG__T_FLOAT, DAG__T_STR, DAG__T_NAME,
	DAG__T_LPAREN, DAG__T_RPAREN, DAG__T_LBRACK, DAG__T_RBRACK,
	DAG__T_LBRACE, DAG__T_RBRACE, DAG__T_COLON,
	DAG__T_COMMA, DAG__T_DOT,
	DAG__T_PLUS, DAG__T_MINUS, DAG__T_STAR, DAG__T_SLASH,
	DAG__T_DSLASH, DAG__T_PERCENT,
	DAG__T_EQ, DAG__T_NE, DAG__T_LT, DAG__T_LE, DAG__T_GT, DAG__T_GE,
	/* keywords */
	DAG__T_AND, DAG__T_OR, DAG__T_NOT, DAG__T_IN, DAG__T_IS,
	DAG__T_IF, DAG__T_ELSE, DAG__T_TRUE, DAG__T_FALSE, DAG__T_NONE_KW
} expr__tok_kind;

typedef struct expr__tok {
	expr__tok_kind kind;
	uint32_t start, end;	/* byte offsets in the source */
	union {
		long long i;
		double d;
		struct { uint32_t off, len; } s;	/* STR: in the pool */
	} u;
} expr__tok;

typedef struct expr__lexer {
	const char *src;
	uint32_t len, pos;
	core_buf *pool;		/* decoded string literals are appended */
	core_err *err;
} expr__lexer;

/* Reads the next token into *t; a lexical error sets err (CORE_EEXPR,
 * "column N: ...") and returns its code. */
int expr__lex_next(expr__lexer *lx, expr__tok *t);
/* 1-based column (in characters) of byte offset off of src. */
unsigned expr__column(const char *src, uint32_t off);
/* Sets a CORE_EEXPR "column N: " error at byte offset off of src. */
int expr__syntax_error(core_err *err, const char *src, uint32_t off,
		      const char *fmt, ...) CORE_PRINTF(4, 5);

/* ------------------------------------------------------------------ AST */

typedef enum expr__node_kind {
	DAG__N_NONE, DAG__N_BOOL, DAG__N_INT, DAG__N_FLOAT, DAG__N_STR,
	DAG__N_ROW,
	DAG__N_SUBSCRIPT,	/* a[b] */
	DAG__N_GET,		/* row.get(a[, b]) */
	DAG__N_CALL,		/* op = expr__builtin, a = argument */
	DAG__N_NEG, DAG__N_POS, DAG__N_NOT,
	DAG__N_BINOP,		/* op = expr__binop, a, b */
	DAG__N_AND, DAG__N_OR,	/* operands: a, then .next */
	DAG__N_CHAIN,		/* a = first operand, then CMP nodes */
	DAG__N_CMP,		/* op = expr__cmpop, a = right operand */
	DAG__N_LIST, DAG__N_TUPLE,	/* items: a, then .next */
	DAG__N_SET,		/* items: a, then .next */
	DAG__N_DICT,		/* key, value, key, value, ...: a, then .next */
	DAG__N_TERNARY		/* a if b else c */
} expr__node_kind;

typedef enum expr__binop {
	DAG__OP_ADD, DAG__OP_SUB, DAG__OP_MUL, DAG__OP_DIV, DAG__OP_FLOORDIV,
	DAG__OP_MOD
} expr__binop;

typedef enum expr__cmpop {
	DAG__CMP_EQ, DAG__CMP_NE, DAG__CMP_LT, DAG__CMP_LE, DAG__CMP_GT,
	DAG__CMP_GE, DAG__CMP_IN, DAG__CMP_NOT_IN, DAG__CMP_IS,
	DAG__CMP_IS_NOT
} expr__cmpop;

typedef enum expr__builtin {
	DAG__FN_LEN, DAG__FN_STR, DAG__FN_INT, DAG__FN_FLOAT, DAG__FN_BOOL,
	DAG__FN_ABS, DAG__FN_LAST
} expr__builtin;

typedef struct expr__node {
	uint8_t kind;		/* expr__node_kind */
	uint8_t op;		/* expr__binop, expr__cmpop or expr__builtin */
	uint16_t depth;		/* height of the subtree */
	uint32_t start, end;	/* source span, for error messages */
	uint32_t a, b, c;	/* children or DAG__NONE */
	uint32_t next;		/* next sibling in an n-ary list */
	uint32_t count;		/* number of operands/items (n-ary) */
	union {
		long long i;	/* INT, BOOL */
		double d;	/* FLOAT */
		struct { uint32_t off, len; } s;	/* STR, in pool */
	} u;
} expr__node;

struct expr_code {
	char *src;
	uint32_t src_len;
	expr__node *nodes;
	uint32_t nnodes;
	char *pool;		/* string literals, not NUL-terminated */
	uint32_t root;
};

extern const char *const expr__builtin_names[DAG__FN_LAST];

/* The parser: recursive descent with one token of lookahead. */
typedef struct expr__parser {
	expr__lexer lx;
	expr__tok tok;		/* the current (not yet consumed) token */
	uint32_t prev_end;	/* end of the last consumed token */
	expr__node *nodes;
	uint32_t nnodes, cap;
	unsigned nest;		/* open brackets and unary operators */
	core_err *err;
} expr__parser;

int expr__advance(expr__parser *p);
/* Appends a node spanning [start, prev_end) with children a, b, c;
 * *out receives its index. Fails when the tree gets too deep. */
int expr__new_node(expr__parser *p, expr__node_kind kind, uint32_t start,
		  uint32_t a, uint32_t b, uint32_t c, uint32_t *out);
/* Links child after tail in an n-ary node's list and updates the
 * parent's depth and count. */
int expr__add_child(expr__parser *p, uint32_t parent, uint32_t *tail,
		   uint32_t child);
/* Describes the current token for "found ..." in messages. */
const char *expr__tok_desc(const expr__parser *p, char *buf, size_t cap);
int expr__expected(expr__parser *p, const char *what);
int expr__nest_enter(expr__parser *p);
int expr__parse_expr(expr__parser *p, uint32_t *out);
int expr__parse_postfix(expr__parser *p, uint32_t *out);

/* ------------------------------------------------------ runtime values */

typedef enum expr__vkind {
	DAG__V_NONE, DAG__V_BOOL, DAG__V_INT, DAG__V_FLOAT, DAG__V_STR,
	DAG__V_JARR,		/* a JSON array, borrowed */
	DAG__V_ARR,		/* a list/tuple built in the arena */
	DAG__V_DICT,		/* a JSON object, borrowed */
	DAG__V_SET,		/* a set built in the arena (expr_coll.c) */
	DAG__V_MAP		/* a dict built in the arena (expr_coll.c) */
} expr__vkind;

typedef struct expr__val expr__val;
/* An open-addressing table of mask + 1 slots, each 0 (free) or 1 + the
 * index of an entry of a built set or dict (expr_coll.c). */
typedef struct expr__table {
	size_t mask;
	uint32_t slots[];
} expr__table;
struct expr__val {
	expr__vkind kind;
	bool tuple;		/* ARR: a tuple rather than a list */
	union {
		bool b;
		long long i;
		double d;
		struct { const char *p; size_t n; } s;
		const json_t *j;
		/* ARR: n items. SET: n distinct items in the order first
		 * written; MAP: n pairs, items[2i] the key, items[2i + 1] the
		 * value; tab (SET, MAP) finds them. weight: see
		 * expr__weight(). */
		struct {
			const expr__val *items;
			size_t n, weight;
			const expr__table *tab;
		} l;
	} u;
};

/* A bump allocator for one evaluation; memory is released all at once. */
typedef struct expr__chunk expr__chunk;
typedef struct expr__arena {
	expr__chunk *head;
	size_t total;
	bool over;		/* an allocation went over the limit */
} expr__arena;

/* Aligned memory valid until expr__arena_release(); NULL when out of
 * memory or over DAG__ARENA_LIMIT (then `over` is set). */
void *expr__arena_alloc(expr__arena *a, size_t size);
/* Charges weight to the arena's budget without allocating: a built list
 * may share its items many times over ([[1] * 1000] * 1000), so its cost
 * to print, compare or convert is charged by weight, not by bytes. */
int expr__arena_charge(expr__arena *a, size_t weight);
void expr__arena_release(expr__arena *a);

/* The state of one evaluation. */
typedef struct expr__ctx {
	const expr_code *e;
	const json_t *row;
	expr__arena arena;
	core_err *err;
} expr__ctx;

/* Sets a CORE_EEXPR runtime error and returns CORE_EEXPR. */
int expr__rt_error(expr__ctx *c, const char *fmt, ...) CORE_PRINTF(2, 3);
/* Allocation failure in the arena: out of memory or over the limit. */
int expr__alloc_error(expr__ctx *c);
/* The source text of node n, shortened to fit buf. */
const char *expr__snippet(const expr_code *e, uint32_t n, char *buf,
			 size_t cap);

/* Evaluates node n into *out (valid until the arena is released). */
int expr__eval_node(expr__ctx *c, uint32_t n, expr__val *out);

/* expr_value.c */
/* *out = the int i / the float d (every other byte zeroed). */
void expr__set_int(expr__val *out, long long i);
void expr__set_float(expr__val *out, double d);
void expr__from_json(const json_t *j, expr__val *out);
const char *expr__type_name(const expr__val *v);
bool expr__truthy(const expr__val *v);
bool expr__is_list(const expr__val *v);
bool expr__is_num(const expr__val *v);
size_t expr__list_len(const expr__val *v);
void expr__list_at(const expr__val *v, size_t i, expr__val *out);
/* About the printed size of v in bytes, the cost of walking it; above
 * DAG__ARENA_LIMIT the result is only known to be above it. */
size_t expr__weight(const expr__val *v);
bool expr__equal(const expr__val *a, const expr__val *b);

/* expr_coll.c: sets and dicts, with Python's rules. Only None, bool,
 * int, float, str and tuples of those are hashable (usable as set items
 * and dict keys); equal values hash alike (1, 1.0 and True are one key). */
bool expr__hashable(const expr__val *v);
/* "unhashable type: 'list' (in `...`)" for node n. */
int expr__unhashable(expr__ctx *c, uint32_t n, const expr__val *v);
/* A set of the count items (kind DAG__V_SET) or a dict of the count
 * key/value pairs in items (DAG__V_MAP); later duplicates are dropped (a
 * set) or replace the value in place (a dict), as Python does. items must
 * stay valid as long as *out (arena memory); a TypeError names node n. */
int expr__make_coll(expr__ctx *c, uint32_t n, expr__vkind kind, expr__val *items,
		   size_t count, expr__val *out);
/* Whether key (hashable) is an item of the set or a key of the dict (a
 * row's object or a built one); *value receives a dict's value. */
bool expr__lookup(const expr__val *coll, const expr__val *key, expr__val *value);
bool expr__is_dict(const expr__val *v);
size_t expr__dict_len(const expr__val *v);
/* The i-th item of a set, or key (and value) of a dict, i < length. For a
 * row's object, i must go up from 0 one by one (*iter starts NULL). */
void expr__coll_at(const expr__val *v, size_t i, void **iter, expr__val *key,
		  expr__val *value);
bool expr__coll_equal(const expr__val *a, const expr__val *b);
/* a <= b (subset) for two sets; strict: a < b. */
bool expr__subset(const expr__val *a, const expr__val *b, bool strict);
/* a - b for two sets. */
int expr__set_difference(expr__ctx *c, uint32_t n, const expr__val *a,
			const expr__val *b, expr__val *out);

/* expr_compare.c */
/* Compares two numbers: -1, 0, 1, or 2 when unordered (NaN). */
int expr__num_cmp(const expr__val *a, const expr__val *b);
/* a op b for any comparison operator; a TypeError (ordering incompatible
 * types, `in` on a non-container) names the snippet of node n. */
int expr__compare(expr__ctx *c, uint32_t n, expr__cmpop op, const expr__val *a,
		 const expr__val *b, bool *res);

/* expr_arith.c: a op b for the node n (used for error messages). */
int expr__binop_eval(expr__ctx *c, uint32_t n, const expr__val *a,
		    const expr__val *b, expr__val *out);
int expr__unary_eval(expr__ctx *c, uint32_t n, const expr__val *a,
		    expr__val *out);
int expr__make_str(expr__ctx *c, const char *p, size_t n, expr__val *out);

/* expr_builtin.c */
int expr__call_builtin(expr__ctx *c, uint32_t n, const expr__val *arg,
		      expr__val *out);

/* expr_repr.c */
/* Appends Python str() (or repr() when repr) of v to b. */
int expr__append_str(core_buf *b, const expr__val *v, bool repr);
/* A new JSON reference for v, or NULL when v has no JSON form. */
json_t *expr__to_json(const expr__val *v);

#endif /* ELSPETH_EXPR_INTERNAL_H */

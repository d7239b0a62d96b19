/*
 * template_internal.h — internals shared by the files of the prompt
 * template engine (the Jinja2 subset described in template.h and
 * docs/templates.md):
 *
 *   lex.c       positions and errors, names, string and number literals
 *   parse.c     expressions: names resolved, operators, filters, tests
 *   stmt.c      {% if %} and {% for %}: the blocks they open and close
 *   template.c  text (whitespace control), comments, tags; tpl_compile,
 *               tpl_free and tpl_hash
 *   text.c      Python's str.isspace/strip/upper/lower on UTF-8 text
 *   value.c     Python's str(), truthiness, == and order of JSON values
 *   eval.c      an expression's value for one render
 *   filters.c   the filters
 *   render.c    blocks, loops and tpl_render
 *
 * A template compiles to a tree: a block is a list of nodes (literal text
 * — already whitespace-controlled and newline-normalised, as Jinja's
 * lexer leaves it —, an expression to print, an if with its branches, a
 * for with its body and else). Loop variables are resolved to slots at
 * compile time. Rendering walks the tree; an expression's value is a
 * jansson value (borrowed from the row, the lookup or the template, or
 * made) or "undefined", which only default and the tests may meet.
 *
 * Text is UTF-8 throughout. Python's notions are followed where the output
 * is visible: str() of values, str.isspace() for trim and whitespace
 * control, str.upper()/lower() for the scripts listed at case_map().
 *
 * Nothing in a compiled template changes after tpl_compile returns, so
 * rendering needs no locks; a render's state (tpl__rx) is its own.
 */
#ifndef ELSPETH_TEMPLATE_INTERNAL_H
#define ELSPETH_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/template/template.h"

#define TPL__HASH_PREFIX "sha256:"

/* ------------------------------------------------ the compiled template */

#define TPL__MAX_NEST 64        /* open blocks; operators and brackets */
#define TPL__MAX_TARGETS 8      /* names of one {% for a, b, ... in %} */
#define TPL__MAX_ITERATIONS 10000000ull  /* loop iterations of one render */
#define TPL__MAX_OUTPUT (64u << 20)      /* bytes one render appends */

typedef enum tpl__filter_kind {
	TPL__F_UPPER, TPL__F_LOWER, TPL__F_TRIM, TPL__F_LENGTH, TPL__F_TOJSON,
	TPL__F_DEFAULT
} tpl__filter_kind;

typedef enum tpl__ex_kind {
	TPL__E_LIT,     /* lit */
	TPL__E_PATH,    /* a name (root) and its .name / [key] steps */
	TPL__E_LOOP,    /* loop.<op> (tpl__loop_attr) of loop level `slot` */
	TPL__E_LIST,    /* [args...] */
	TPL__E_METHOD,  /* a.<op>(args) (tpl__method) */
	TPL__E_FILTER,  /* a | <op>(args) (tpl__filter_kind) */
	TPL__E_TEST,    /* a is [not] <op> (tpl__test) */
	TPL__E_NOT,     /* not a */
	TPL__E_AND, TPL__E_OR,  /* a and b, a or b: Python's, operand values */
	TPL__E_CMP      /* a <op> b (tpl__cmp) */
} tpl__ex_kind;

typedef enum tpl__root {
	TPL__ROOT_ROW, TPL__ROOT_LOOKUP, TPL__ROOT_VAR,
	TPL__ROOT_EXPR  /* any other expression: a */
} tpl__root;

typedef enum tpl__cmp {
	TPL__CMP_EQ, TPL__CMP_NE, TPL__CMP_LT, TPL__CMP_LE, TPL__CMP_GT,
	TPL__CMP_GE, TPL__CMP_IN, TPL__CMP_NOT_IN
} tpl__cmp;

typedef enum tpl__loop_attr {
	TPL__LOOP_INDEX, TPL__LOOP_INDEX0, TPL__LOOP_FIRST, TPL__LOOP_LAST,
	TPL__LOOP_LENGTH, TPL__LOOP_REVINDEX, TPL__LOOP_REVINDEX0
} tpl__loop_attr;

typedef enum tpl__method {
	TPL__M_ITEMS, TPL__M_KEYS, TPL__M_VALUES, TPL__M_GET
} tpl__method;

typedef enum tpl__test { TPL__T_DEFINED, TPL__T_UNDEFINED, TPL__T_NONE } tpl__test;

typedef struct tpl__ex tpl__ex;

/* One step of a path: a key written in the template (.name, ['key'],
 * [0]) or computed ([row.id]). */
typedef struct tpl__step {
	json_t *key;        /* a string key or an integer index; NULL: dyn */
	tpl__ex *dyn;
	bool attr;          /* written .name */
} tpl__step;

struct tpl__ex {
	tpl__ex_kind kind;
	int op;             /* by kind: see tpl__ex_kind */
	bool flag;          /* TEST: `is not`; FILTER default: falsy too */
	size_t at;          /* byte offset in the source */
	unsigned height;    /* of the tree under it, itself included */
	char *disp;         /* how messages name the value: "o.k" for row
			     * fields, else the source text */
	char *text;         /* the source text (shortened) */
	json_t *lit;        /* LIT */
	tpl__root root;     /* PATH */
	char *name;         /* PATH of a loop variable: its name */
	size_t slot;        /* PATH of a variable: its slot; LOOP: the level */
	tpl__ex *a, *b;     /* operands; PATH with ROOT_EXPR: a, the root */
	tpl__ex **args;     /* LIST items, METHOD / FILTER arguments */
	size_t nargs;
	tpl__step *steps;   /* PATH */
	size_t nsteps;
};

typedef enum tpl__node_kind {
	TPL__N_TEXT, TPL__N_OUT, TPL__N_IF, TPL__N_FOR
} tpl__node_kind;

typedef struct tpl__node tpl__node;

typedef struct tpl__block {
	tpl__node *v;
	size_t n, cap;
} tpl__block;

struct tpl__node {
	tpl__node_kind kind;
	size_t at;          /* byte offset of the tag (messages) */
	char *text;         /* TEXT: literal text, whitespace control done */
	size_t len;
	tpl__ex *e;         /* OUT: the expression; FOR: the iterable */
	tpl__ex **conds;    /* IF: if / elif conditions, bodies[i] for each */
	tpl__block *bodies;
	size_t nconds;
	tpl__block body;    /* FOR: the loop's body */
	tpl__block orelse;  /* IF: else; FOR: else (nothing to iterate) */
	size_t slot;        /* FOR: the slot of its first target */
	size_t ntargets;
	char **names;       /* FOR: the targets' names */
	size_t level;       /* FOR: loop level (0: outermost) */
};

struct tpl_template {
	char hash[sizeof(TPL__HASH_PREFIX) + CORE_SHA256_HEX_LEN];
	tpl__block root;
	size_t nslots;      /* loop variables a render needs at most */
	size_t nloops;      /* loops open at once at most */
};

/* ---------------------------------------------------- compiling (lex.c) */

/* The compiler's state: the source and where it stands in it. */
/* An open {% if %} or {% for %}, while its body is compiled. */
typedef struct tpl__open {
	tpl__node *node;
	tpl__block *parent;     /* the block holding node */
	bool in_else;
} tpl__open;

typedef struct tpl__cc {
	tpl_template *t;
	const char *name;   /* for messages ("template NAME line ..."), or NULL */
	const char *s;
	size_t n;           /* bytes compiled (a trailing newline dropped) */
	size_t pos;
	core_err *err;
	tpl__block *cur;    /* where nodes go */
	tpl__open open[TPL__MAX_NEST];
	size_t nopen;
	const char *vars[TPL__MAX_NEST * TPL__MAX_TARGETS];  /* in scope */
	size_t nvars;
	size_t loops;       /* loops open */
	unsigned depth;     /* expression nesting */
} tpl__cc;

/* CORE_ENOMEM "out of memory" in c->err; returns the code. */
int tpl__cc_nomem(tpl__cc *c);
/* CORE_ECONFIG "template [NAME ]line L, column C: <message>" for byte
 * offset at of the source; returns the code. */
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
 * without '.' or exponent). */
int tpl__parse_string(tpl__cc *c, json_t **out);
int tpl__parse_number(tpl__cc *c, json_t **out);

/* ------------------------------------------- expressions (parse.c) */

/* Whether the tag ends at c->pos: "}}" / "-}}" (stmt false) or "%}" /
 * "-%}" (stmt true). */
bool tpl__at_tag_end(const tpl__cc *c, bool stmt);
/* An expression at c->pos into *out (freed with tpl__free_ex). */
int tpl__parse_expr(tpl__cc *c, tpl__ex **out);
/* The rest of a "{{" tag (open: its position): the expression, then "}}"
 * or "-}}" (*strip_after set). */
int tpl__parse_output(tpl__cc *c, size_t open, tpl__ex **out,
		      bool *strip_after);
/* Frees e and all it holds; NULL allowed. */
void tpl__free_ex(tpl__ex *e);
/* Appends how messages write a path step with key (a string or an
 * integer): .name, ['other key'] or [n]; the first step of a row field
 * is the name alone. 0 or CORE_ENOMEM. */
int tpl__path_step(core_buf *b, const json_t *key, bool first);

/* ------------------------------------------ statements (stmt.c) */

/* The statement after "{%" (open: its position) through "%}" / "-%}"
 * (*strip_after set): opens, continues or closes a block in c. */
int tpl__parse_stmt(tpl__cc *c, size_t open, bool *strip_after);
/* Appends a node to c->cur; *out points at it (until the block grows). */
int tpl__add_node(tpl__cc *c, tpl__node_kind kind, size_t at,
		  tpl__node **out);
/* Frees what a block holds. */
void tpl__free_block(tpl__block *b);

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

/* Python's a == b, and order (-1, 0, 1) of a and b (numbers, strings,
 * lists): 2 when Python has no order for them (a TypeError). */
bool tpl__py_eq(const json_t *a, const json_t *b);
int tpl__py_order(const json_t *a, const json_t *b);
/* ------------------------- evaluation (eval.c, filters.c, render.c) */

/* One loop being rendered. */
typedef struct tpl__loop {
	size_t index0, length;
} tpl__loop;

/* The state of one render. */
typedef struct tpl__rx {
	const tpl_template *t;
	const json_t *row, *lookup;
	const json_t **vars;      /* loop variables, by slot (borrowed) */
	tpl__loop *loops;
	unsigned long long iterations;
	core_err miss;            /* why the last missing value is missing */
	core_err *err;
} tpl__rx;

/* The value of an expression: v borrowed (from the row, the lookup or the
 * template) or owned (own == v); v NULL means missing (undefined), and
 * rx->miss says why. */
typedef struct tpl__val {
	const json_t *v;
	json_t *own;
} tpl__val;

/* Replaces x by own (a reference x takes; NULL: missing), releasing what
 * x owned. */
void tpl__val_own(tpl__val *x, json_t *own);
/* Evaluates e; a missing value is not an error here. */
int tpl__eval(tpl__rx *rx, const tpl__ex *e, tpl__val *out);
/* Evaluates e; a missing value is CORE_EDATA with rx->miss. */
int tpl__eval_defined(tpl__rx *rx, const tpl__ex *e, tpl__val *out);
/* Applies filter e (its input already in x). */
int tpl__apply_filter(tpl__rx *rx, const tpl__ex *e, tpl__val *x);

#endif /* ELSPETH_TEMPLATE_INTERNAL_H */

/*
 * expr.h — the public contract of elspeth's expression module: the small,
 * safe subset of Python that gate conditions, aggregation triggers and
 * value_transform's operations are written in (ELSPETH's
 * ExpressionParser; docs/architecture.md §7).
 *
 * Thread rules: a compiled expression is immutable and may be used by many
 * threads at once.
 *
 * The language, over one row:
 *   row['x']  row.get('x')  row.get('x', default)  row['a']['b']  row['l'][0]
 *   literals: 12  -3.5  1e3  'str'  "str"  True  False  None  [1, 'a']
 *   comparisons (chainable): == != < <= > >= in, not in, is None, is not None
 *   boolean: and or not (short-circuit, Python truthiness, operand values)
 *   arithmetic: + - * / // % and unary -, +
 *   calls: len str int float bool abs — no other calls, no attributes
 *   ternary: a if cond else b
 * Semantics follow Python 3 (e.g. 7 // -2 == -4, 'a' < 1 is a TypeError,
 * 1 == 1.0). Values come from the row's JSON: objects, arrays, strings,
 * integers, reals, booleans, null (None).
 */
#ifndef ELSPETH_EXPR_H
#define ELSPETH_EXPR_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

typedef struct expr_code expr_code;

/* Compiles src once. A syntax error is CORE_EEXPR with a message
 * "column N: ..." (1-based column in src) saying what was expected. */
int expr_compile(const char *src, expr_code **out, core_err *err);
void expr_free(expr_code *e); /* NULL allowed */
const char *expr_source(const expr_code *e);

/* Evaluates e against row (a JSON object). *result is a new reference.
 * A runtime error (missing field, type mismatch, division by zero) is
 * CORE_EEXPR naming the field or operation. */
int expr_eval(const expr_code *e, const json_t *row, json_t **result,
	      core_err *err);

/* Evaluates e and writes its route key into buf: "true"/"false" for a
 * boolean result, otherwise the Python str() of the result ("3", "1.5",
 * "None", the string itself). Truncation is an error. */
int expr_route_key(const expr_code *e, const json_t *row, char *buf,
		   size_t cap, core_err *err);

#endif /* ELSPETH_EXPR_H */

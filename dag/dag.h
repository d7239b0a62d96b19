/*
 * dag.h — the public contract of elspeth's dag module: the expression
 * language of gate conditions, and the graph built from the settings.
 *
 * Thread rules: a compiled expression and a built graph are immutable and
 * may be used by many threads at once.
 */
#ifndef ELSPETH_DAG_H
#define ELSPETH_DAG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

/* ------------------------------------------------------------ expressions
 *
 * A small, safe subset of Python expressions over one row:
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
typedef struct dag_expr dag_expr;

/* Compiles src once. A syntax error is CORE_EEXPR with a message
 * "column N: ..." (1-based column in src) saying what was expected. */
int dag_expr_compile(const char *src, dag_expr **out, core_err *err);
void dag_expr_free(dag_expr *e); /* NULL allowed */
const char *dag_expr_source(const dag_expr *e);

/* Evaluates e against row (a JSON object). *result is a new reference.
 * A runtime error (missing field, type mismatch, division by zero) is
 * CORE_EEXPR naming the field or operation. */
int dag_expr_eval(const dag_expr *e, const json_t *row, json_t **result,
		  core_err *err);

/* Evaluates e and writes its route key into buf: "true"/"false" for a
 * boolean result, otherwise the Python str() of the result ("3", "1.5",
 * "None", the string itself). Truncation is an error. */
int dag_expr_route_key(const dag_expr *e, const json_t *row, char *buf,
		       size_t cap, core_err *err);

#endif /* ELSPETH_DAG_H */

/*
 * template.h — prompt templates for the LLM transforms: the subset of
 * Jinja2 that ELSPETH prompts use, with StrictUndefined semantics.
 * docs/templates.md is the user's guide; in short:
 *
 *   literal text, {{ expr }}, {# comment #}, {% if %} / {% elif %} /
 *   {% else %} / {% endif %}, {% for x[, y] in expr %} / {% else %} /
 *   {% endfor %} with loop.index, .index0, .first, .last, .length,
 *   .revindex, .revindex0; whitespace control {{- -}} {%- -%} {#- -#}.
 *   expr:    row, lookup, loop variables, literals ('s', 1, 2.5, true,
 *            none, [a, b]); .name / [key] / [expr] steps; .items()
 *            .keys() .values() .get(k[, d]) of a mapping; filters | upper
 *            | lower | trim | length | tojson | default(v[, true]); tests
 *            is [not] defined / undefined / none; == != < <= > >= in,
 *            not in; not, and, or.
 *
 * Values render as Python's str() would: strings as is, integers in
 * decimal, reals as repr() (shortest round trip, 1e+16 / 1e-05 exponent
 * form), True / False / None; objects and arrays as compact JSON. As Jinja
 * does, one trailing newline of the source is dropped and CR LF / CR in
 * literal text become LF.
 *
 * Thread rules: a compiled template is immutable; any number of threads
 * may render it at once.
 */
#ifndef ELSPETH_TEMPLATE_H
#define ELSPETH_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

typedef struct tpl_template tpl_template;

/* Compiles src (NUL-terminated UTF-8; only read during the call). On
 * success *out is a template to free with tpl_free(). Syntax errors are
 * CORE_ECONFIG "template line L, column C: <what was expected, what was
 * found>" (1-based line, column in characters); *out is then NULL.
 * CORE_ENOMEM on allocation failure. */
int tpl_compile(const char *src, tpl_template **out, core_err *err);
/* The same, with the template's name (its file) in messages: "template
 * NAME line L, column C: ...". name is only read during the call. */
int tpl_compile_named(const char *src, const char *name, tpl_template **out,
		      core_err *err);

/* Renders t for one row (a JSON object), appending to out; `lookup` in
 * the template is lookup (a JSON object; NULL: an empty one). Errors are
 * CORE_EDATA naming the field path:
 *   "template field 'x' is not in the row" (missing, no default filter)
 *   "template field 'a.b': 'a' is a string, not an object" (type problems)
 * and "template: ..." for the rest (a comparison of a string with a
 * number, a loop over a number, a render over 64 MiB or 10,000,000 loop
 * iterations). On error out keeps its previous length. The row and the
 * lookup are only read. */
int tpl_render_lookup(const tpl_template *t, const json_t *row,
		      const json_t *lookup, core_buf *out, core_err *err);
/* tpl_render_lookup without a lookup. */
int tpl_render(const tpl_template *t, const json_t *row, core_buf *out,
	       core_err *err);

/* "sha256:<64 hex>" of the source text as given; valid while t lives. */
const char *tpl_hash(const tpl_template *t);

void tpl_free(tpl_template *t); /* NULL allowed */

#endif /* ELSPETH_TEMPLATE_H */

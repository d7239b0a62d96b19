/*
 * line_explode.c — ELSPETH 0.7.1's "line_explode" transform: one row per
 * line of a string field (an expanding transform; ADR 0045).
 *
 * The lines are Python's str.splitlines(): a line ends at LF, CR, CRLF,
 * VT, FF, FS, GS, RS, NEL (U+0085), LS or PS (U+2028/9), the ends cut off,
 * no row for a final line end. Each output row is the input without
 * `source_field`, then `output_field` (default "line") set to the line
 * and, with include_index (default true), `index_field` (default
 * "line_index") set to 0, 1, ... An empty string, a missing or non-string
 * field, or more than max_lines (default 10,000, at most 100,000) lines
 * is a row error with 0.7.1's reason.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

#define DEFAULT_MAX_LINES 10000
#define HARD_MAX_LINES 100000

struct lexp {
	plg_schema *schema;
	const char *source_field, *output_field, *index_field;
	bool include_index;
	long long max_lines;
};

static const plg_option le_own[] = {
	{ "source_field", "string", true, NULL, "the string field split into lines" },
	{ "output_field", "string", false, "\"line\"", "the field each line goes to" },
	{ "include_index", "boolean", false, "true", "add the line's index" },
	{ "index_field", "string", false, "\"line_index\"", "the index's field" },
	{ "max_lines", "integer", false, "10000",
	  "the most lines one row may give (1..100000)" },
	{ NULL }
};
static const plg_option *const le_opts[] = { le_own, plg__schema_opts, plg__input_opts, NULL };

static void le_close(void *state)
{
	struct lexp *t = state;

	if (!t)
		return;
	plg__schema_free(t->schema);
	free(t);
}

static int differ(const core_node *opts, const char *a, const char *an,
		  const char *b, const char *bn, core_err *err)
{
	if (strcmp(a, b))
		return 0;
	return core_err_at(err, CORE_ECONFIG, core_map_get(opts, an),
		"%s and %s must differ, both are '%s'", an, bn, a);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct lexp *t = state;
	int rc;

	t->output_field = "line";
	t->index_field = "line_index";
	t->include_index = true;
	t->max_lines = DEFAULT_MAX_LINES;
	if ((rc = plg__check_options(opts, le_opts, err)) ||
	    (rc = plg__opt_field(opts, "source_field", true, &t->source_field, err)) ||
	    (rc = plg__opt_field(opts, "output_field", false, &t->output_field, err)) ||
	    (rc = plg__opt_field(opts, "index_field", false, &t->index_field, err)) ||
	    (rc = core_opt_bool(opts, "include_index", &t->include_index, err)) ||
	    (rc = core_opt_int(opts, "max_lines", 1, HARD_MAX_LINES, &t->max_lines, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!plg__py_identifier(t->output_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "output_field"),
			"output_field must be a valid Python identifier, got '%s'", t->output_field);
	if (!plg__py_identifier(t->index_field))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "index_field"),
			"index_field must be a valid Python identifier, got '%s'", t->index_field);
	if ((rc = differ(opts, t->output_field, "output_field", t->source_field,
			 "source_field", err)))
		return rc;
	if (t->include_index &&
	    ((rc = differ(opts, t->index_field, "index_field", t->source_field,
			  "source_field", err)) ||
	     (rc = differ(opts, t->index_field, "index_field", t->output_field,
			  "output_field", err))))
		return rc;
	return 0;
}

static int le_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct lexp), parse_options, le_close, options, state, err);
}

/* The length of the line end at p (0: none): str.splitlines()'s. */
static size_t line_end(const char *p, const char *end)
{
	unsigned char c = (unsigned char)*p;

	if (c == '\r')
		return p + 1 < end && p[1] == '\n' ? 2 : 1;
	if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
		return 1;
	if (c == 0xc2 && p + 1 < end && (unsigned char)p[1] == 0x85)
		return 2;
	if (c == 0xe2 && p + 2 < end && (unsigned char)p[1] == 0x80 &&
	    ((unsigned char)p[2] == 0xa8 || (unsigned char)p[2] == 0xa9))
		return 3;
	return 0;
}

static int add_row(const struct lexp *t, const json_t *base, const char *b,
		   size_t n, long long i, json_t *rows, core_err *err)
{
	json_t *o = json_copy((json_t *)base);

	if (o && !json_object_set_new(o, t->output_field, json_stringn(b, n)) &&
	    (!t->include_index ||
	     !json_object_set_new(o, t->index_field, json_integer(i))))
		return json_array_append_new(rows, o) ?
			core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
	json_decref(o);
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static int le_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct lexp *t = state;
	const json_t *v = json_object_get(row, t->source_field);
	const char *s, *end, *start;
	json_t *base, *rows;
	long long count = 0;
	int rc = 0;

	(void)ctx;
	if (!json_is_string(v))
		return core_err_set(err, CORE_EDATA, "Field '%s' must be a string, got %s",
				    t->source_field, v ? core_py_type(v) : "nothing");
	s = start = json_string_value(v);
	end = s + json_string_length(v);
	if (s == end)
		return core_err_set(err, CORE_EDATA,
			"invalid_input: field '%s': empty string", t->source_field);
	base = json_copy((json_t *)row);
	rows = json_array();
	if (!base || !rows || json_object_del(base, t->source_field)) {
		json_decref(base);
		json_decref(rows);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (const char *p = s; !rc && p < end;) {
		size_t k = line_end(p, end);

		if (!k) {
			p++;
			continue;
		}
		if (++count <= t->max_lines)
			rc = add_row(t, base, start, (size_t)(p - start), count - 1, rows, err);
		p += k;
		start = p;
	}
	if (!rc && start < end && ++count <= t->max_lines)
		rc = add_row(t, base, start, (size_t)(end - start), count - 1, rows, err);
	json_decref(base);
	if (!rc && count > t->max_lines)
		rc = core_err_set(err, CORE_EDATA,
			"too_many_lines: field '%s' has %lld lines, more than max_lines (%lld)",
			t->source_field, count, t->max_lines);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int le_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	struct lexp t = { 0 };
	int rc = parse_options(&t, options, err);

	plg__schema_free(t.schema);
	if (rc)
		return rc;
	out->shape = PLG_SHAPE_OBSERVED;
	if ((rc = plg_outputs_add(out, err, "%s", t.output_field)))
		return rc;
	return t.include_index ? plg_outputs_add(out, err, "%s", t.index_field) : 0;
}

const plg_transform_ops plg__line_explode = {
	.name = "line_explode",
	.description = "One row per line of a string field (Python's splitlines; ELSPETH 0.7.1)",
	.options = le_opts,
	.expands = true,
	.open = le_open,
	.process = le_process,
	.close = le_close,
	.outputs = le_outputs,
};

/*
 * report_assemble.c — ELSPETH 0.7.1's "report_assemble" aggregation: one
 * report row per batch of text rows (ADR 0045).
 *
 * The batch's `text_field` values (each must be a string) are joined by
 * `join_with` (default "\n") and rendered as plain_text (title, a blank
 * line, the body), markdown ("# title", a blank line, the body) or
 * html_fragment ("<h1>title</h1>" then "<p>line</p>" joined by the
 * escaped join_with; every text HTML-escaped as Python's html.escape
 * does). The row is {output_field: report, report_format, report_index,
 * line_start, line_end, line_count, lines_seen_total, flush_trigger,
 * is_end_of_source_report}, in that order, from where the batch stands in
 * the run (plg_batch).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

enum { FMT_PLAIN, FMT_MARKDOWN, FMT_HTML };

struct report {
	plg_schema *schema;
	const char *text_field, *output_field, *join_with, *title;
	int format;
};

static const char *const reserved[] = {
	"report_format", "report_index", "line_start", "line_end", "line_count",
	"lines_seen_total", "flush_trigger", "is_end_of_source_report", NULL
};

static const plg_option ra_own[] = {
	{ "text_field", "string", true, NULL, "the string field collated" },
	{ "output_field", "string", false, "\"report_body\"",
	  "the field that receives the report" },
	{ "format", "string", false, "\"plain_text\"",
	  "plain_text, markdown (# title) or html_fragment (<h1>, <p>, escaped)" },
	{ "join_with", "string", false, "\"\\n\"", "between two rows' text" },
	{ "title", "string", false, NULL, "the report's title" },
	{ NULL }
};
static const plg_option *const ra_opts[] = { ra_own, plg__schema_opts, plg__input_opts, NULL };

static void ra_close(void *state)
{
	struct report *r = state;

	if (!r)
		return;
	plg__schema_free(r->schema);
	free(r);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct report *r = state;
	static const char *const formats[] = { "plain_text", "markdown", "html_fragment", NULL };
	const core_node *f = core_map_get(opts, "format");
	int rc;

	r->output_field = "report_body";
	r->join_with = "\n";
	if ((rc = plg__check_options(opts, ra_opts, err)) ||
	    (rc = plg__opt_field(opts, "text_field", true, &r->text_field, err)) ||
	    (rc = plg__opt_field(opts, "output_field", false, &r->output_field, err)) ||
	    (rc = core_opt_str(opts, "join_with", false, &r->join_with, err)) ||
	    (rc = core_opt_str(opts, "title", false, &r->title, err)) ||
	    (f && (rc = core_node_enum(f, formats, &r->format, err))))
		return rc;
	if (!plg__py_identifier(r->output_field) && strcmp(r->output_field, "None"))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "output_field"),
			"output_field must be a valid Python identifier, got '%s'",
			r->output_field);
	for (size_t i = 0; reserved[i]; i++)
		if (!strcmp(r->output_field, reserved[i]))
			return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "output_field"),
				"output_field '%s' collides with a reserved report metadata "
				"field. Reserved names: ['flush_trigger', "
				"'is_end_of_source_report', 'line_count', 'line_end', "
				"'line_start', 'lines_seen_total', 'report_format', "
				"'report_index']", r->output_field);
	return plg__schema_parse(core_map_get(opts, "schema"), &r->schema, err);
}

static int ra_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct report), parse_options, ra_close, options, state, err);
}

/* Python's html.escape(s) (quote=True). */
static int put_escaped(core_buf *b, const char *s)
{
	int rc = 0;

	for (; *s && !rc; s++)
		switch (*s) {
		case '&': rc = core_buf_printf(b, "&amp;"); break;
		case '<': rc = core_buf_printf(b, "&lt;"); break;
		case '>': rc = core_buf_printf(b, "&gt;"); break;
		case '"': rc = core_buf_printf(b, "&quot;"); break;
		case '\'': rc = core_buf_printf(b, "&#x27;"); break;
		default: rc = core_buf_putc(b, *s);
		}
	return rc;
}

static int render(const struct report *r, json_t *const *members, size_t n,
		  core_buf *b)
{
	const char *title = r->title;
	int rc = 0;

	if (title && r->format == FMT_HTML)
		rc = core_buf_printf(b, "<h1>") || put_escaped(b, title) ||
		     core_buf_printf(b, "</h1>%s", n ? "\n" : "");
	else if (title)
		rc = core_buf_printf(b, "%s%s%s", r->format == FMT_MARKDOWN ? "# " : "",
				     title, n ? "\n\n" : "");
	for (size_t i = 0; i < n && !rc; i++) {
		const char *line = json_string_value(json_object_get(members[i], r->text_field));

		if (i && r->format == FMT_HTML)
			rc = put_escaped(b, r->join_with);
		else if (i)
			rc = core_buf_printf(b, "%s", r->join_with);
		if (!rc && r->format == FMT_HTML)
			rc = core_buf_printf(b, "<p>") || put_escaped(b, line) ||
			     core_buf_printf(b, "</p>");
		else if (!rc)
			rc = core_buf_printf(b, "%s", line);
	}
	return rc;
}

static int ra_flush_batch(void *state, json_t *const *members, size_t n,
			  bool passthrough, const plg_batch *batch, json_t **out,
			  core_err *err)
{
	static const char *const formats[] = { "plain_text", "markdown", "html_fragment" };
	const struct report *r = state;
	core_buf b = { 0 };
	json_t *row;

	if (passthrough)
		return core_err_set(err, CORE_EDATA,
			"report_assemble gives one report row per batch: use output_mode: transform");
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_object_get(members[i], r->text_field);

		if (!json_is_string(v))
			return core_err_set(err, CORE_EDATA,
				"Field '%s' must be a string, got %s in batch row %zu",
				r->text_field, v ? core_json_kind(v) : "nothing", i);
	}
	if (render(r, members, n, &b) || core_buf_reserve(&b, 1)) {
		core_buf_release(&b);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	row = json_object();
	if (row && (json_object_set_new(row, r->output_field, json_stringn(b.data ? b.data : "", b.len)) ||
		    json_object_set_new(row, "report_format", json_string(formats[r->format])) ||
		    json_object_set_new(row, "report_index", json_integer((json_int_t)batch->flush_index)) ||
		    json_object_set_new(row, "line_start", json_integer((json_int_t)batch->row_start)) ||
		    json_object_set_new(row, "line_end", json_integer((json_int_t)batch->row_end)) ||
		    json_object_set_new(row, "line_count", json_integer((json_int_t)batch->batch_size)) ||
		    json_object_set_new(row, "lines_seen_total", json_integer((json_int_t)batch->rows_seen_total)) ||
		    json_object_set_new(row, "flush_trigger", json_string(batch->trigger)) ||
		    json_object_set_new(row, "is_end_of_source_report", json_boolean(batch->end_of_source)))) {
		json_decref(row);
		row = NULL;
	}
	core_buf_release(&b);
	*out = NULL;
	if (!row || !(*out = json_array()) || json_array_append_new(*out, row)) {
		if (!*out)
			json_decref(row); /* append_new took it even when it failed */
		json_decref(*out);
		*out = NULL;
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

static int ra_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const char *field = "report_body";
	int rc;

	out->shape = PLG_SHAPE_OBSERVED;
	if ((rc = core_opt_str(options, "output_field", false, &field, err)) ||
	    (rc = plg_outputs_add(out, err, "%s", field)))
		return rc;
	for (size_t i = 0; reserved[i]; i++)
		if ((rc = plg_outputs_add(out, err, "%s", reserved[i])))
			return rc;
	return 0;
}

const plg_aggregation_ops plg__report_assemble = {
	.name = "report_assemble",
	.description = "One report row per batch of text rows: plain text, markdown or an HTML fragment, with its page (ELSPETH 0.7.1)",
	.options = ra_opts,
	.open = ra_open,
	.flush_batch = ra_flush_batch,
	.close = ra_close,
	.outputs = ra_outputs,
};

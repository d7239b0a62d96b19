/*
 * Prompt templates against Jinja2 itself: tests/fixtures/
 * jinja_template_cases.json holds templates rendered by Jinja2 the way
 * ELSPETH 0.4.1 renders prompts (sandboxed, StrictUndefined; recorded by
 * tests/reference/template_cases.py, no Python at test time). Each must
 * render byte-identically here, or fail where Jinja failed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/template/template.h"

#define FIXTURE ELSPETH_SOURCE_DIR "/tests/fixtures/jinja_template_cases.json"

static json_t *load(void)
{
	json_error_t jerr;
	json_t *doc = json_load_file(FIXTURE, 0, &jerr);

	cr_assert_not_null(doc, "%s: %s (line %d)", FIXTURE, jerr.text, jerr.line);
	return doc;
}

/* Renders one case; *out is malloc'd text or NULL on an error (then
 * *why says which). */
static int render_case(const json_t *doc, const char *src, char **out,
		       core_err *why)
{
	tpl_template *t = NULL;
	core_buf b = { 0 };
	int rc;

	*out = NULL;
	if ((rc = tpl_compile(src, &t, why)))
		return rc;
	rc = tpl_render_lookup(t, json_object_get(doc, "row"),
			       json_object_get(doc, "lookup"), &b, why);
	if (!rc)
		*out = core_buf_steal(&b);
	core_buf_release(&b);
	tpl_free(t);
	return rc;
}

Test(tpl_jinja, renders_as_jinja2_does)
{
	json_t *doc = load(), *c;
	unsigned outputs = 0, errors = 0, bad = 0;
	size_t i;

	json_array_foreach(json_object_get(doc, "cases"), i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *src = json_string_value(json_object_get(c, "template"));
		const json_t *want = json_object_get(c, "output");
		core_err why = { 0 };
		char *got = NULL;
		int rc = render_case(doc, src, &got, &why);

		if (want) {
			outputs++;
			if (rc) {
				bad++;
				cr_log_error("%s: failed (%s); Jinja renders %s", name,
					     why.msg, json_string_value(want));
			} else if (strlen(got) != json_string_length(want) ||
				   strcmp(got, json_string_value(want))) {
				bad++;
				cr_log_error("%s: rendered\n[%s]\nJinja renders\n[%s]",
					     name, got, json_string_value(want));
			}
		} else {
			errors++;
			if (!rc) {
				bad++;
				cr_log_error("%s: rendered [%s]; Jinja fails: %s", name,
					     got, json_string_value(json_object_get(c, "message")));
			} else if (rc != CORE_EDATA && rc != CORE_ECONFIG) {
				bad++;
				cr_log_error("%s: error code %d (%s)", name, rc, why.msg);
			} else if (strncmp(why.msg, "template", 8)) {
				bad++;
				cr_log_error("%s: message does not name the template: %s",
					     name, why.msg);
			}
		}
		free(got);
	}
	cr_assert_eq(bad, 0, "%u of %u cases differ from Jinja2 (see the log)",
		     bad, outputs + errors);
	cr_assert_gt(outputs, 60);
	cr_assert_gt(errors, 10);
	json_decref(doc);
}

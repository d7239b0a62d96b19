/*
 * aggregation_batch_replicate.c — the "batch_replicate" aggregation: one
 * output row per member (or `copies_field` copies of it), e.g. to tag each
 * row with its batch.
 *
 * Each output row is a copy of its member with, when `attach_batch_info`
 * (default false), batch_size (the number of members) and batch_index (the
 * member's 0-based position), then, when `include_copy_index` (default
 * true), copy_index (0, 1, ...). Members are emitted in order, a member's
 * copies one after another.
 *
 * ELSPETH 0.4.1's defaults (plugins/transforms/batch_replicate.py l. 36-56,
 * 182-189; ADR 0018): copies_field "copies", include_copy_index true, and
 * nothing but copy_index added; attach_batch_info is ours.
 *
 * Decisions:
 *  - A member's copies is its copies_field: a JSON integer, or a string
 *    holding a base-10 integer ("3", as CSV sources give). A missing, null
 *    or "" value uses default_copies. 0 emits nothing for that member.
 *  - A negative, non-integer (a real, even 2.0; a boolean; other text)
 *    copies value, or one above max_copies (ELSPETH's option: 1 to
 *    10000, default 10000, at least default_copies), fails the batch
 *    (ELSPETH drops that member and carries on; ADR 0018):
 *    CORE_EDATA naming the member's 0-based index and the field. Every
 *    member is checked before any row is built.
 *  - Passthrough mode must give exactly one row per member, and the plugin
 *    cannot see output_mode: there copies_field and default_copies are
 *    ignored (not even checked) and each member gives one row (copy_index
 *    0 when include_copy_index).
 *  - Nothing is overwritten: a member already holding a field this plugin
 *    adds fails the batch; copies_field naming one of them is a config
 *    error.
 *
 * Output rows are new objects sharing the members' values. State is
 * read-only after open.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

/* max_copies at most, and its default (ELSPETH's): a guard against a
 * runaway batch. */
#define REPLICATE_MAX_COPIES 10000

struct replicate {
	plg_schema *schema;
	char *copies_field;
	long long default_copies;
	long long max_copies;   /* copies of one member at most */
	bool copy_index;
	bool batch_info;
};

/* ------------------------------------------------------------ options */

static bool adds(const struct replicate *r, const char *field)
{
	if (r->batch_info &&
	    (!strcmp(field, "batch_size") || !strcmp(field, "batch_index")))
		return true;
	return r->copy_index && !strcmp(field, "copy_index");
}

static const plg_option br_own[] = {
	{ "copies_field", "string", false, "\"copies\"",
	  "the field giving a member's number of copies" },
	{ "default_copies", "integer", false, "1",
	  "copies of a member without that field" },
	{ "max_copies", "integer", false, "10000",
	  "the most copies of one member (1..10000)" },
	{ "include_copy_index", "boolean", false, "true",
	  "add copy_index, the copy's position from 0" },
	{ "attach_batch_info", "boolean", false, "false",
	  "add the batch's size and the member's position" },
	{ NULL }
};
static const plg_option *const br_opts[] = { br_own, plg__schema_opts, plg__input_opts, NULL };

static int parse_options(struct replicate *r, const core_node *opts,
			 core_err *err)
{
	const char *copies = "copies";
	int rc;

	r->default_copies = 1;
	r->max_copies = REPLICATE_MAX_COPIES;
	r->copy_index = true;
	r->batch_info = false;
	rc = plg__check_options(opts, br_opts, err);
	if (!rc)
		rc = core_opt_str(opts, "copies_field", false, &copies, err);
	if (!rc && !copies[0])
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "copies_field"),
				 "expected a field name, got an empty string");
	if (!rc)
		rc = core_opt_int(opts, "max_copies", 1, REPLICATE_MAX_COPIES,
				  &r->max_copies, err);
	if (!rc)
		rc = core_opt_int(opts, "default_copies", 0, REPLICATE_MAX_COPIES,
				  &r->default_copies, err);
	if (!rc && r->default_copies > r->max_copies)
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "default_copies"),
				 "default_copies (%lld) exceeds max_copies (%lld)",
				 r->default_copies, r->max_copies);
	if (!rc)
		rc = core_opt_bool(opts, "include_copy_index", &r->copy_index, err);
	if (!rc)
		rc = core_opt_bool(opts, "attach_batch_info", &r->batch_info, err);
	if (!rc && adds(r, copies))
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, "copies_field"),
				 "copies_field '%s' collides with a field that "
				 "batch_replicate adds; rename it first", copies);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &r->schema,
				       err);
	if (!rc && !(r->copies_field = strdup(copies)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	return rc;
}

static void br_close(void *state);

static int br_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct replicate *r = calloc(1, sizeof(*r));
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!r)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(r, options, err);
	if (rc) {
		br_close(r);
		return rc;
	}
	*state = r;
	return 0;
}

/* -------------------------------------------------------------- copies */

/* A base-10 integer string (surrounding blanks allowed): 0, or -1 when it
 * is something else. Out of range reads as LLONG_MAX or LLONG_MIN. */
static int parse_count(const json_t *v, long long *out)
{
	const char *s = json_string_value(v), *e = s + json_string_length(v);
	const char *p;

	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	p = s < e && (*s == '-' || *s == '+') ? s + 1 : s;
	if (p == e)
		return -1;
	for (const char *q = p; q < e; q++)
		if (*q < '0' || *q > '9')
			return -1;
	errno = 0;
	*out = strtoll(s, NULL, 10);
	if (errno)
		*out = *s == '-' ? LLONG_MIN : LLONG_MAX;
	return 0;
}

static int bad_copies(const struct replicate *r, size_t i, const char *why,
		      core_err *err)
{
	return core_err_set(err, CORE_EDATA,
			    "batch member %zu: field '%s' %s (copies must be an "
			    "integer from 0 to max_copies, %lld)", i, r->copies_field,
			    why, r->max_copies);
}

static const char *not_integer(const json_t *v)
{
	if (json_is_real(v))
		return "is not an integer (a real number)";
	if (json_is_string(v))
		return "is a string that is not an integer";
	return "is not an integer";
}

static int copies_of(const struct replicate *r, const json_t *m, size_t i,
		     long long *k, core_err *err)
{
	const json_t *v = json_object_get(m, r->copies_field);

	*k = r->default_copies;
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && !json_string_length(v)))
		return 0;
	if (json_is_integer(v))
		*k = json_integer_value(v);
	else if (!json_is_string(v) || parse_count(v, k))
		return bad_copies(r, i, not_integer(v), err);
	if (*k < 0 || *k > r->max_copies) {
		char why[64];

		snprintf(why, sizeof(why), "is %s (%lld)",
			 *k < 0 ? "negative" : "above max_copies", *k);
		return bad_copies(r, i, why, err);
	}
	return 0;
}

/* ------------------------------------------------------------- output */

static int check_member(const struct replicate *r, const json_t *m,
			size_t i, core_err *err)
{
	static const char *const added[] = { "batch_size", "batch_index",
		"copy_index", NULL };

	for (size_t k = 0; added[k]; k++)
		if (adds(r, added[k]) && json_object_get(m, added[k]))
			return core_err_set(err, CORE_EDATA,
					    "batch member %zu: field '%s' is already "
					    "in the row and batch_replicate would "
					    "overwrite it; rename it first", i,
					    added[k]);
	return 0;
}

/* Appends copy c of member i (of n) to out. */
static int emit(const struct replicate *r, const json_t *m, size_t i,
		size_t n, long long c, json_t *out, core_err *err)
{
	json_t *o = json_copy((json_t *)m);
	int rc = !o || json_array_append_new(out, o);

	if (!rc && r->batch_info)
		rc = json_object_set_new(o, "batch_size",
					 json_integer((json_int_t)n)) ||
		     json_object_set_new(o, "batch_index",
					 json_integer((json_int_t)i));
	if (!rc && r->copy_index)
		rc = json_object_set_new(o, "copy_index", json_integer(c));
	return rc ? core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

static int br_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct replicate *r = state;
	long long *k = calloc(n ? n : 1, sizeof(*k));
	json_t *rows = json_array();
	int rc = 0;

	if (!k || !rows) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		rc = check_member(r, members[i], i, err);
		if (!rc && !passthrough)
			rc = copies_of(r, members[i], i, &k[i], err);
		if (passthrough)
			k[i] = 1;
	}
	for (size_t i = 0; !rc && i < n; i++)
		for (long long c = 0; !rc && c < k[i]; c++)
			rc = emit(r, members[i], i, n, c, rows, err);
out_free:
	free(k);
	if (rc)
		json_decref(rows);
	else
		*out = rows;
	return rc;
}

static void br_close(void *state)
{
	struct replicate *r = state;

	if (!r)
		return;
	free(r->copies_field);
	plg__schema_free(r->schema);
	free(r);
}

/* Its rows may have any shape; copy_index is there when
 * include_copy_index (its default). */
static int br_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	bool index = true;
	int rc;

	out->shape = PLG_SHAPE_OBSERVED;
	if ((rc = core_opt_bool(options, "include_copy_index", &index, err)))
		return rc;
	return index ? plg_outputs_add(out, err, "copy_index") : 0;
}

const plg_aggregation_ops plg__batch_replicate = {
	.name = "batch_replicate",
	.description = "One output row per batch member (or copies_field copies), with its batch size and position",
	.options = br_opts,
	.open = br_open,
	.flush = br_flush,
	.close = br_close,
	.outputs = br_outputs,
};

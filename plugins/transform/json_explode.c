/*
 * transform_json_explode.c — the "json_explode" transform: one output row
 * per element of a JSON array field (an expanding transform: process()
 * returns a JSON array of rows).
 *
 * Each output row is the input row with `array_field` removed and
 * `output_field` set to the element, plus `item_index` (0, 1, 2, ...) when
 * `include_index`. The other fields keep their order; when output_field is
 * array_field the element takes the array's place, otherwise it is added
 * after the other fields, followed by item_index. An empty array gives no
 * rows (the engine records the parent as expanded with no children).
 *
 * Decisions:
 *  - A string holding a JSON array ("[1, 2]", as CSV sources give) is
 *    parsed and exploded; duplicate object keys in it are rejected.
 *  - A missing field, a non-array value, or a string that is not a JSON
 *    array is a row error naming the field and what was found.
 *  - Nothing is overwritten: a row that already has output_field (other
 *    than array_field) or item_index is a row error, since an output row
 *    would silently lose that value (chained explodes: set include_index:
 *    false on the second one).
 *
 * Unlike ELSPETH, output_field defaults to array_field (ELSPETH: "item")
 * and an empty array yields no rows (ELSPETH: one row with nulls).
 *
 * Output rows are new objects sharing the input's values; the input is
 * not modified. State is read-only after open.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

#define INDEX_FIELD "item_index"

struct explode {
	plg_schema *schema;
	char *array_field;
	char *output_field;
	bool include_index;
};

/* ------------------------------------------------------------ options */

static const plg_option jx_own[] = {
	{ "array_field", "string", true, NULL,
	  "the field holding the array (a string holding a JSON array is parsed)" },
	{ "output_field", "string", false, NULL,
	  "the field each element goes into; by default array_field" },
	{ "include_index", "boolean", false, "true",
	  "add item_index, the element's position from 0" },
	{ NULL }
};
static const plg_option *const jx_opts[] = { jx_own, plg__schema_opts, plg__input_opts, NULL };

static int parse_options(struct explode *x, const core_node *opts,
			 core_err *err)
{
	const char *array = NULL, *output = NULL;
	int rc;

	x->include_index = true;
	rc = plg__check_options(opts, jx_opts, err);
	if (!rc)
		rc = plg__opt_field(opts, "array_field", true, &array, err);
	if (!rc)
		rc = plg__opt_field(opts, "output_field", false, &output, err);
	if (!rc)
		rc = core_opt_bool(opts, "include_index", &x->include_index, err);
	if (!rc && x->include_index && !strcmp(output ? output : array,
					       INDEX_FIELD))
		rc = core_err_at(err, CORE_ECONFIG, opts,
				 "output_field '" INDEX_FIELD "' collides with the "
				 "index field; choose another output_field or set "
				 "include_index: false");
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &x->schema,
				       err);
	if (rc)
		return rc;
	x->array_field = strdup(array);
	x->output_field = strdup(output ? output : array);
	if (!x->array_field || !x->output_field)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

static void ex_close(void *state);

static int ex_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct explode *x = calloc(1, sizeof(*x));
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!x)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(x, options, err);
	if (rc) {
		ex_close(x);
		return rc;
	}
	*state = x;
	return 0;
}

/* ------------------------------------------------------------- process */

/* The array to explode, as a new reference in *arr. */
static int get_array(const struct explode *x, const json_t *row,
		     json_t **arr, core_err *err)
{
	json_t *v = json_object_get(row, x->array_field);
	json_error_t jerr;

	if (!v)
		return core_err_set(err, CORE_EDATA,
				    "field '%s' is not in the row (json_explode "
				    "needs a JSON array there)", x->array_field);
	if (json_is_array(v)) {
		*arr = json_incref(v);
		return 0;
	}
	if (!json_is_string(v))
		return core_err_set(err, CORE_EDATA,
				    "field '%s' is not a JSON array: got %s",
				    x->array_field, core_json_kind(v));
	*arr = json_loadb(json_string_value(v), json_string_length(v),
			  JSON_REJECT_DUPLICATES, &jerr);
	if (*arr && json_is_array(*arr))
		return 0;
	json_decref(*arr);
	*arr = NULL;
	return core_err_set(err, CORE_EDATA,
			    "field '%s' is a string that is not a JSON array (%s)",
			    x->array_field, jerr.text[0] ? jerr.text
							 : "it holds an object");
}

/* Fails when a field json_explode adds is already in the row. */
static int check_collisions(const struct explode *x, const json_t *row,
			    core_err *err)
{
	const char *clash = NULL;

	if (strcmp(x->output_field, x->array_field) &&
	    json_object_get(row, x->output_field))
		clash = x->output_field;
	else if (x->include_index && strcmp(x->array_field, INDEX_FIELD) &&
		 json_object_get(row, INDEX_FIELD))
		clash = INDEX_FIELD;
	if (!clash)
		return 0;
	return core_err_set(err, CORE_EDATA,
			    "field '%s' is already in the row and json_explode "
			    "would overwrite it (rename it first%s)", clash,
			    clash == x->output_field
				    ? ", or choose another output_field"
				    : ", or set include_index: false");
}

/* The output row for element `item` at index i, or NULL (no memory). */
static json_t *one_row(const struct explode *x, const json_t *row,
		       json_t *item, size_t i)
{
	bool same = !strcmp(x->output_field, x->array_field);
	json_t *o = json_object(), *v;
	const char *key;
	int rc = !o;

	json_object_foreach((json_t *)row, key, v) {
		if (rc)
			break;
		if (strcmp(key, x->array_field))
			rc = json_object_set(o, key, v);
		else if (same)
			rc = json_object_set(o, key, item);
	}
	if (!rc && !same)
		rc = json_object_set(o, x->output_field, item);
	if (!rc && x->include_index)
		rc = json_object_set_new(o, INDEX_FIELD,
					 json_integer((json_int_t)i));
	if (rc) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static int ex_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct explode *x = state;
	json_t *arr = NULL, *rows, *item;
	size_t i;
	int rc;

	(void)ctx;

	rc = get_array(x, row, &arr, err);
	if (!rc && (rc = check_collisions(x, row, err)))
		json_decref(arr);
	if (rc)
		return rc;
	rows = json_array();
	if (!rows)
		goto out_nomem;
	json_array_foreach(arr, i, item)
		if (json_array_append_new(rows, one_row(x, row, item, i)))
			goto out_nomem;
	json_decref(arr);
	*out = rows;
	return 0;
out_nomem:
	json_decref(rows);
	json_decref(arr);
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static void ex_close(void *state)
{
	struct explode *x = state;

	if (!x)
		return;
	free(x->array_field);
	free(x->output_field);
	plg__schema_free(x->schema);
	free(x);
}

/* Its rows may have any shape; each has output_field (and item_index). */
static int ex_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const char *array = NULL, *output = NULL;
	bool index = true;
	int rc;

	out->shape = PLG_SHAPE_OBSERVED;
	if ((rc = plg__opt_field(options, "array_field", true, &array, err)) ||
	    (rc = plg__opt_field(options, "output_field", false, &output, err)) ||
	    (rc = core_opt_bool(options, "include_index", &index, err)) ||
	    (rc = plg_outputs_add(out, err, "%s", output ? output : array)))
		return rc;
	return index ? plg_outputs_add(out, err, INDEX_FIELD) : 0;
}

const plg_transform_ops plg__json_explode = {
	.name = "json_explode",
	.description = "One row per element of a JSON array field (a string holding a JSON array is parsed)",
	.options = jx_opts,
	.expands = true,
	.open = ex_open,
	.process = ex_process,
	.close = ex_close,
	.outputs = ex_outputs,
};

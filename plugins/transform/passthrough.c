/*
 * transform_passthrough.c — the "passthrough" transform: the output is the
 * input row. With `validate_input: true` the row must satisfy the declared
 * schema (a row error otherwise); it is validated on a shallow copy, since
 * the input may be shared with other threads, and that copy is the output.
 */
#include <stdlib.h>

#include "plugins/plugins_internal.h"

struct passthrough {
	plg_schema *schema;
	bool validate;
};

static const plg_option pt_own[] = {
	{ "validate_input", "boolean", false, "false",
	  "check each row against the schema (a row error otherwise)" },
	{ NULL }
};
static const plg_option *const pt_opts[] = { pt_own, plg__schema_opts, plg__input_opts, NULL };

static int pt_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct passthrough *p = calloc(1, sizeof(*p));
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!p)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = plg__check_options(options, pt_opts, err);
	if (!rc)
		rc = core_opt_bool(options, "validate_input", &p->validate, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(options, "schema"), &p->schema,
				       err);
	if (rc) {
		plg__schema_free(p->schema);
		free(p);
		return rc;
	}
	*state = p;
	return 0;
}

static int pt_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	struct passthrough *p = state;
	json_t *copy;
	int rc;

	(void)ctx;

	if (!p->validate || (p->schema->mode == PLG_SCHEMA_OBSERVED &&
			     !p->schema->nrequired)) {
		*out = json_incref((json_t *)row);
		return 0;
	}
	copy = json_copy((json_t *)row);
	if (!copy)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = plg__schema_apply(p->schema, copy, false, err);
	if (rc) {
		json_decref(copy);
		return rc;
	}
	*out = copy;
	return 0;
}

static void pt_close(void *state)
{
	struct passthrough *p = state;

	if (!p)
		return;
	plg__schema_free(p->schema);
	free(p);
}

const plg_transform_ops plg__passthrough = {
	.name = "passthrough",
	.description = "Pass rows through unchanged (optionally validating them against the schema)",
	.options = pt_opts,
	.open = pt_open,
	.process = pt_process,
	.close = pt_close,
};

/*
 * value_transform.c — ELSPETH 0.7.1's "value_transform" transform: fields
 * computed by expressions (ADR 0045).
 *
 * `operations: [{target, expression}]`, in order, on a copy of the row:
 * each expression (the gate conditions' language, expr/expr.h) sees the
 * row as the operations before it left it, and its value becomes
 * `target` (a new field goes last, an existing one keeps its place). An
 * expression that fails makes the row an error naming the target and
 * the reason; nothing partial is emitted. Expressions are compiled when
 * the options are read, so a syntax error is a config error at validate.
 */
#include <stdlib.h>
#include <string.h>

#include "expr/expr.h"
#include "plugins/plugins_internal.h"

struct op {
	const char *target;     /* points into the options */
	expr_code *expr;
};

struct vt {
	plg_schema *schema;
	size_t n;
	struct op *ops;
};

static const plg_option vt_own[] = {
	{ "operations", "array", true, NULL,
	  "[{target, expression}], applied in order; each sees the ones before" },
	{ NULL }
};
static const plg_option *const vt_opts[] = { vt_own, plg__schema_opts, plg__input_opts, NULL };

static void vt_close(void *state)
{
	struct vt *t = state;

	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		expr_free(t->ops[i].expr);
	free(t->ops);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct vt *t = state;
	static const char *const keys[] = { "target", "expression", NULL };
	const core_node *list = core_map_get(opts, "operations");
	int rc;

	if ((rc = plg__check_options(opts, vt_opts, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!list)
		return core_err_missing(err, opts, "operations", "operations",
					"a list of {target, expression}");
	if (list->kind != CORE_NODE_SEQ || !list->len)
		return core_err_at(err, CORE_ECONFIG, list,
			"operations must contain at least one operation");
	if (!(t->ops = calloc(list->len, sizeof(*t->ops))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < list->len; i++) {
		const core_node *o = list->items[i];
		const char *src = NULL;

		if (o->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, o, "expected {target, expression}");
		if ((rc = core_map_check_keys(o, keys, err)) ||
		    (rc = plg__opt_field(o, "target", true, &t->ops[i].target, err)) ||
		    (rc = core_opt_str(o, "expression", true, &src, err)))
			return rc;
		if (!src[strspn(src, " \t\r\n")])
			return core_err_at(err, CORE_ECONFIG, core_map_get(o, "expression"),
					   "expression must not be empty");
		if ((rc = expr_compile(src, &t->ops[i].expr, err))) {
			const core_node *at = core_map_get(o, "expression");
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			return core_err_at(err, CORE_ECONFIG, at, "Expression syntax error: %s", msg);
		}
		t->n++;
	}
	return 0;
}

static int vt_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct vt), parse_options, vt_close, options, state, err);
}

static int vt_process(void *state, const json_t *row, json_t **out,
		      plg_ctx *ctx, core_err *err)
{
	const struct vt *t = state;
	json_t *o = json_deep_copy(row);
	int rc = 0;

	(void)ctx;
	if (!o)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < t->n; i++) {
		json_t *v = NULL;

		if ((rc = expr_eval(t->ops[i].expr, o, &v, err))) {
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			rc = rc == CORE_ENOMEM ? rc : core_err_set(err, CORE_EDATA,
				"invalid_input: operation for '%s' failed: %s",
				t->ops[i].target, msg);
			break;
		}
		if (json_object_set_new(o, t->ops[i].target, v))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (rc) {
		json_decref(o);
		return rc;
	}
	*out = o;
	return 0;
}

static int vt_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const core_node *list = core_map_get(options, "operations");
	int rc;

	out->shape = PLG_SHAPE_ADDED;
	for (size_t i = 0; list && list->kind == CORE_NODE_SEQ && i < list->len; i++) {
		const core_node *tn = core_map_get(list->items[i], "target");
		const char *target = tn && tn->kind == CORE_NODE_SCALAR ? tn->value : NULL;

		if (target && (rc = plg_outputs_add(out, err, "%s", target)))
			return rc;
	}
	return 0;
}

const plg_transform_ops plg__value_transform = {
	.name = "value_transform",
	.description = "Fields computed by expressions over the row, in order (ELSPETH 0.7.1)",
	.options = vt_opts,
	.open = vt_open,
	.process = vt_process,
	.close = vt_close,
	.outputs = vt_outputs,
};

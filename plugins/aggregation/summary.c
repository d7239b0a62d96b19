/*
 * summary.c — what ELSPETH 0.7.1's summarizing plugins share (ADR 0045):
 * bucketing values by type and value, their fixed output fields,
 * refusing passthrough mode, and a scalar option (a baseline cohort).
 */
#include <math.h>
#include <string.h>

#include "plugins/plugins_internal.h"

bool plg__same_bucket(const json_t *a, const json_t *b)
{
	if (json_is_boolean(a) && json_is_boolean(b))
		return json_equal(a, b);
	return json_typeof(a) == json_typeof(b) && json_equal(a, b);
}

int plg__outputs_list(plg_outputs *out, const char *const *fields, core_err *err)
{
	int rc = 0;

	out->shape = PLG_SHAPE_OBSERVED;
	for (size_t i = 0; fields[i] && !rc; i++)
		rc = plg_outputs_add(out, err, "%s", fields[i]);
	return rc;
}

int plg__summary_only(const char *plugin, bool passthrough, core_err *err)
{
	return passthrough ? core_err_set(err, CORE_EDATA,
		"%s gives summary rows, not its members: use output_mode: transform",
		plugin) : 0;
}

int plg__opt_scalar(const core_node *opts, const char *key, json_t **out,
		    core_err *err)
{
	const core_node *n = core_map_get(opts, key);
	json_t *v;

	*out = NULL;
	if (!n || core_node_is_null(n))
		return 0;
	if (!(v = core_node_to_json(n)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	/* pydantic's str | int | bool: a whole float is taken as the int */
	if (json_is_real(v) && isfinite(json_real_value(v)) &&
	    json_real_value(v) == floor(json_real_value(v)) &&
	    fabs(json_real_value(v)) < 0x1p63) {
		json_t *i = json_integer((json_int_t)json_real_value(v));

		json_decref(v);
		if (!(v = i))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = v;
	if (!json_is_string(v) && !json_is_integer(v) && !json_is_boolean(v))
		return core_err_at(err, CORE_ECONFIG, n,
				   "%s must be a string, an integer or a boolean", key);
	if (json_is_string(v) && !json_string_value(v)[strspn(json_string_value(v), " \t\r\n\f\v")])
		return core_err_at(err, CORE_ECONFIG, n, "%s must not be empty", key);
	return 0;
}

const char *plg__py_str(core_buf *b, const json_t *v)
{
	core_buf_reset(b);
	if (core_py_str(b, v) || core_buf_putc(b, '\0'))
		return "?";
	return b->data;
}

/*
 * summary.c — what ELSPETH 0.7.1's summarizing plugins share (ADR 0045):
 * bucketing values by type and value, their fixed output fields, and
 * refusing passthrough mode.
 */
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

/*
 * summary.c — what ELSPETH 0.7.1's summarizing plugins share (ADR 0045):
 * opening a state read from the options, bucketing values by type and
 * value, their fixed output fields, and refusing passthrough mode.
 */
#include <stdlib.h>

#include "plugins/plugins_internal.h"

int plg__open_state(size_t size, int (*parse)(void *, const core_node *, core_err *),
		    void (*close_state)(void *), const core_node *options, void **state,
		    core_err *err)
{
	void *s = calloc(1, size);
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = parse(s, options, err))) {
		close_state(s);
		return rc;
	}
	*state = s;
	return 0;
}

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

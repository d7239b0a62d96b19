/*
 * settings_telemetry.c — the `telemetry` section (ELSPETH 0.4.1's
 * TelemetrySettings; docs/observability.md, ADR 0037):
 *
 *   telemetry:
 *     enabled: true                   # default false
 *     granularity: rows               # lifecycle (default) | rows | full
 *     backpressure_mode: drop         # block (default) | drop
 *     fail_on_total_exporter_failure: true   # default true
 *     max_consecutive_failures: 10    # default 10, >= 1
 *     exporters:
 *       - name: console
 *         options: {format: json, output: stderr}
 *
 * Keys, types and defaults are ELSPETH's; so are its refusals: an unknown
 * key (options must sit under `options`), an empty exporter name, and
 * backpressure_mode `slow`, which ELSPETH's model accepts and its runtime
 * refuses even when telemetry is off — here at load, with the key's
 * position, so `validate` says so. An exporter's own options are checked
 * by the telemetry module (tel_check), as a run opens them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

static const char *const granularities[] = { "lifecycle", "rows", "full", NULL };
static const char *const modes[] = { "block", "drop", "slow", NULL };

static const key_spec telemetry_keys[] = {
	{ "enabled", K_BOOL, false },
	{ "granularity", K_ENUM, false, 0, 0, granularities },
	{ "backpressure_mode", K_ENUM, false, 0, 0, modes },
	{ "fail_on_total_exporter_failure", K_BOOL, false },
	{ "max_consecutive_failures", K_INT, false, 1, 1e9 },
	{ "exporters", K_SEQ, false },
	{ NULL }
};

static const key_spec exporter_keys[] = {
	{ "name", K_STR, true }, { "options", K_ANY, false }, { NULL }
};

static int load_exporters(core_telemetry_cfg *t, const core_node *seq, core_err *err)
{
	int rc;

	if (!seq || core_node_is_null(seq))
		return 0;
	t->exporters = calloc(seq->len ? seq->len : 1, sizeof(*t->exporters));
	if (!t->exporters)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->len; i++) {
		const core_node *n = seq->items[i];
		core_exporter_cfg *x = &t->exporters[i];
		const core_node *o;
		const char *name;

		if (n->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, n,
				"expected a map with 'name' and 'options'");
		if ((rc = core__check_section(n, exporter_keys, err)))
			return rc;
		name = core__str_of(n, "name");
		if (!name || !name[strspn(name, " \t\r\n\f\v")])
			return core_err_at(err, CORE_ECONFIG, core_map_get(n, "name"),
					   "exporter name cannot be empty");
		o = core_map_get(n, "options");
		if (o && !core_node_is_null(o) && o->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, o,
				"expected a map of the exporter's options");
		x->node = n;
		x->name = name;
		x->options = o && o->kind == CORE_NODE_MAP ? o : NULL;
		t->nexporters++;
	}
	return 0;
}

int core__load_telemetry(core_settings *s, const core_node *n, core_err *err)
{
	core_telemetry_cfg *t = &s->telemetry;
	const core_node *g, *b;
	int rc, idx;

	t->granularity = CORE_TEL_LIFECYCLE;
	t->backpressure_drop = false;
	t->fail_on_total = true;
	t->max_consecutive_failures = 10;
	if (!n || core_node_is_null(n))
		return 0;
	t->node = n;
	if ((rc = core__check_section(n, telemetry_keys, err)) ||
	    (rc = core_opt_bool(n, "enabled", &t->enabled, err)) ||
	    (rc = core_opt_bool(n, "fail_on_total_exporter_failure", &t->fail_on_total, err)) ||
	    (rc = core_opt_int(n, "max_consecutive_failures", 1, 1000000000,
			       &t->max_consecutive_failures, err)))
		return rc;
	if ((g = core_map_get(n, "granularity")) && !core_node_is_null(g)) {
		if ((rc = core_node_enum(g, granularities, &idx, err)))
			return rc;
		t->granularity = idx;
	}
	if ((b = core_map_get(n, "backpressure_mode")) && !core_node_is_null(b)) {
		if ((rc = core_node_enum(b, modes, &idx, err)))
			return rc;
		if (idx == 2)
			return core_err_at(err, CORE_ECONFIG, b,
				"backpressure_mode='slow' is not yet implemented. "
				"Use one of: ['block', 'drop']");
		t->backpressure_drop = idx == 1;
	}
	return load_exporters(t, core_map_get(n, "exporters"), err);
}

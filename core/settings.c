/*
 * settings.c — the typed view of an ELSPETH 0.4 settings file.
 *
 * Every section is checked against a key table (names, types, ranges,
 * choices) so that a key is either understood or rejected with its
 * position.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/core_internal.h"

const char *core__str_of(const core_node *map, const char *key)
{
	const core_node *v = core_map_get(map, key);

	return v && !core_node_is_null(v) ? v->value : NULL;
}

/* The options map, or an empty one positioned at the parent. NULL only
 * when out of memory. */
const core_node *core__options_of(core_settings *s, const core_node *map)
{
	const core_node *o = core_map_get(map, "options");

	return o && o->kind == CORE_NODE_MAP ? o :
		core__doc_empty_map(s->doc, map, "options");
}

/* ------------------------------------------------------------ sections */

static const key_spec source_keys[] = {
	{ "plugin", K_STR, true }, { "on_success", K_STR, true },
	{ "options", K_MAP, false }, { NULL }
};

int core__load_source(core_settings *s, const core_node *n,
		      core_source_cfg *src, core_err *err)
{
	const core_node *opts;
	int rc;

	if (!n)
		return core_err_set(err, CORE_ECONFIG,
			"%s: missing required section 'source' (where rows come from)", s->path);
	if ((rc = core__check_section(n, source_keys, err)))
		return rc;
	opts = core__options_of(s, n);
	if (!opts)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	src->node = n;
	src->plugin = core__str_of(n, "plugin");
	src->on_success = core__str_of(n, "on_success");
	src->options = opts;
	if ((rc = core_opt_str(opts, "on_validation_failure", false,
			       &src->on_validation_failure, err)))
		return rc;
	if (!src->on_validation_failure)
		return core_err_missing(err, core_map_get(n, "options") ?
					core_map_get(n, "options") : n,
					"on_validation_failure", "options.on_validation_failure",
					"a sink name for rows that fail validation, or 'discard'");
	return 0;
}

static const key_spec transform_keys[] = {
	{ "name", K_STR, true }, { "plugin", K_STR, true },
	{ "input", K_STR, true }, { "on_success", K_STR, true },
	{ "on_error", K_STR, false }, { "options", K_MAP, false }, { NULL }
};

static int load_transforms(core_settings *s, const core_node *seq,
			   core_err *err)
{
	int rc;

	if (!seq || core_node_is_null(seq))
		return 0;
	if (seq->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, seq, "expected a list of transforms");
	s->transforms = calloc(seq->len ? seq->len : 1, sizeof(*s->transforms));
	if (!s->transforms)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->len; i++) {
		const core_node *n = seq->items[i];
		core_transform_cfg *t = &s->transforms[i];

		if ((rc = core__check_section(n, transform_keys, err)))
			return rc;
		t->node = n;
		t->name = core__str_of(n, "name");
		t->plugin = core__str_of(n, "plugin");
		t->input = core__str_of(n, "input");
		t->on_success = core__str_of(n, "on_success");
		t->on_error = core__str_of(n, "on_error");
		/* 0.7.1 requires it (its TransformSettings): where failing
		 * rows go is said, never assumed */
		if (!t->on_error && s->format == CORE_FORMAT_V07)
			return core_err_missing(err, n, "on_error", "on_error",
				"ELSPETH 0.7.1 requires it on every transform: a sink's "
				"name or 'discard'");
		t->options = core__options_of(s, n);
		if (!t->options)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		s->ntransforms++;
	}
	return 0;
}

static const key_spec gate_keys[] = {
	{ "name", K_STR, true }, { "input", K_STR, true },
	{ "condition", K_STR, true }, { "routes", K_MAP, true },
	{ "fork_to", K_STRLIST, false }, { NULL }
};

static int load_routes(core_gate_cfg *g, const core_node *routes,
		       core_err *err)
{
	g->routes = calloc(routes->len ? routes->len : 1, sizeof(*g->routes));
	if (!g->routes)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (routes->len == 0)
		return core_err_at(err, CORE_ECONFIG, routes,
				   "a gate needs at least one route");
	for (size_t i = 0; i < routes->len; i++) {
		core_route_cfg *r = &g->routes[i];
		const char *dest;
		int rc;

		if ((rc = core_node_str(routes->items[i], &dest, err)))
			return rc;
		r->node = routes->items[i];
		r->key = routes->keys[i]->value;
		r->dest = dest;
		g->nroutes++;
	}
	return 0;
}

/* fork_to goes with a route to "fork", and only then. */
static int load_fork_to(core_gate_cfg *g, const core_node *n, core_err *err)
{
	const core_node *f = core_map_get(n, "fork_to");
	bool forks = false;
	int rc;

	for (size_t i = 0; i < g->nroutes; i++)
		forks |= !strcmp(g->routes[i].dest, "fork");
	if (f && (rc = core_node_str_list(f, &g->fork_to, &g->nfork_to, err)))
		return rc;
	if (forks && g->nfork_to < 1)
		return core_err_at(err, CORE_ECONFIG, n,
			"a route goes to 'fork' but 'fork_to' lists no branches");
	if (!forks && f)
		return core_err_at(err, CORE_ECONFIG, f,
			"'fork_to' is set but no route goes to 'fork'");
	return 0;
}

static int load_gates(core_settings *s, const core_node *seq, core_err *err)
{
	int rc;

	if (!seq || core_node_is_null(seq))
		return 0;
	if (seq->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, seq, "expected a list of gates");
	s->gates = calloc(seq->len ? seq->len : 1, sizeof(*s->gates));
	if (!s->gates)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->len; i++) {
		const core_node *n = seq->items[i];
		core_gate_cfg *g = &s->gates[i];

		if ((rc = core__check_section(n, gate_keys, err)))
			return rc;
		g->node = n;
		g->name = core__str_of(n, "name");
		g->input = core__str_of(n, "input");
		g->condition = core__str_of(n, "condition");
		g->condition_node = core_map_get(n, "condition");
		s->ngates++;
		if ((rc = load_routes(g, core_map_get(n, "routes"), err)))
			return rc;
		if ((rc = load_fork_to(g, n, err)))
			return rc;
	}
	return 0;
}

static const key_spec sink_keys[] = {
	{ "plugin", K_STR, true }, { "options", K_MAP, false },
	{ "on_write_failure", K_STR, false }, { NULL }
};

static int load_sinks(core_settings *s, const core_node *map, core_err *err)
{
	int rc;

	if (!map || core_node_is_null(map) ||
	    (map->kind == CORE_NODE_MAP && map->len == 0))
		return core_err_at(err, CORE_ECONFIG, map,
			"at least one sink is required (section 'sinks')");
	if (map->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, map,
				   "expected a map of sink name to sink");
	s->sinks = calloc(map->len, sizeof(*s->sinks));
	if (!s->sinks)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < map->len; i++) {
		const core_node *n = map->items[i];
		core_sink_cfg *k = &s->sinks[i];

		if ((rc = core__check_section(n, sink_keys, err)))
			return rc;
		k->node = n;
		k->name = map->keys[i]->value;
		k->plugin = core__str_of(n, "plugin");
		k->on_write_failure = core__str_of(n, "on_write_failure");
		if (!k->on_write_failure && s->format == CORE_FORMAT_V07)
			return core_err_missing(err, n, "on_write_failure", "on_write_failure",
				"ELSPETH 0.7.1 requires it on every sink: another sink's "
				"name or 'discard'");
		k->options = core__options_of(s, n);
		if (!k->options)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		s->nsinks++;
	}
	return 0;
}

static const key_spec concurrency_keys[] = {
	{ "pipelining", K_MAP, false },
	{ "max_workers", K_INT, false, 1, 1048576 }, { NULL }
};
static const key_spec pipelining_keys[] = {
	{ "enabled", K_BOOL, false },
	{ "max_rows_in_flight", K_INT, false, 1, 4096 },
	{ "max_completed_waiting", K_INT, false, 1, 1048576 },
	{ "max_waiting_mib", K_INT, false, 1, 1048576 }, { NULL }
};
static const char *const frequencies[] = { "every_row", "every_n", "aggregation_only", NULL };
static const key_spec checkpoint_keys[] = {
	{ "enabled", K_BOOL, false },
	{ "frequency", K_ENUM, false, 0, 0, frequencies },
	{ "checkpoint_interval", K_INT, false, 1, 1e9 },
	{ "aggregation_boundaries", K_BOOL, false }, { NULL }
};
static const key_spec retry_keys[] = {
	{ "max_attempts", K_INT, false, 1, 1000 },
	{ "initial_delay_seconds", K_NUM, false, 0, 86400 },
	{ "max_delay_seconds", K_NUM, false, 0, 86400 },
	{ "exponential_base", K_NUM, false, 1, 100 }, { NULL }
};

static int load_runtime(core_settings *s, const core_node *root, core_err *err)
{
	const core_node *n;
	int rc;

	if ((rc = core__load_landscape(s, root, err)))
		return rc;
	if ((n = core_map_get(root, "concurrency"))) {
		const core_node *p;

		if ((rc = core__check_section(n, concurrency_keys, err)))
			return rc;
		if ((rc = core_opt_int(n, "max_workers", 1, 1048576, &s->max_workers, err)))
			return rc;
		p = core_map_get(n, "pipelining");
		if (p && (rc = core__check_section(p, pipelining_keys, err)))
			return rc;
		/* Giving max_rows_in_flight turns pipelining on unless
		 * enabled says otherwise. */
		s->pipelining = core_map_get(p, "max_rows_in_flight") != NULL;
		if ((rc = core_opt_bool(p, "enabled", &s->pipelining, err)) ||
		    (rc = core_opt_int(p, "max_rows_in_flight", 1, 4096,
				       &s->max_rows_in_flight, err)) ||
		    (rc = core_opt_int(p, "max_completed_waiting", 1, 1048576,
				       &s->max_completed_waiting, err)) ||
		    (rc = core_opt_int(p, "max_waiting_mib", 1, 1048576,
				       &s->max_waiting_mib, err)))
			return rc;
		s->max_completed_waiting_set = core_map_get(p, "max_completed_waiting") != NULL;
		if (!s->max_completed_waiting_set)
			s->max_completed_waiting = 2 * s->max_rows_in_flight;
		if (s->max_completed_waiting < s->max_rows_in_flight)
			return core_err_at(err, CORE_ECONFIG, p,
				"max_completed_waiting (%lld) is less than max_rows_in_flight (%lld): "
				"every row in flight may finish before the oldest one, so the "
				"release queue must be able to hold them all",
				s->max_completed_waiting, s->max_rows_in_flight);
	}
	if ((n = core_map_get(root, "checkpoint"))) {
		const core_node *f = core_map_get(n, "frequency");
		const core_node *iv = core_map_get(n, "checkpoint_interval");

		if ((rc = core__check_section(n, checkpoint_keys, err)) ||
		    (rc = core_opt_bool(n, "enabled", &s->checkpoint_enabled, err)) ||
		    (rc = core_opt_bool(n, "aggregation_boundaries",
					&s->checkpoint_aggregation_boundaries, err)) ||
		    (f && (rc = core_node_enum(f, frequencies, &s->checkpoint_frequency, err))) ||
		    (rc = core_opt_int(n, "checkpoint_interval", 1, 1000000000,
				       &s->checkpoint_interval, err)))
			return rc;
		if (s->checkpoint_frequency == CORE_CKPT_EVERY_N && !iv)
			return core_err_at(err, CORE_ECONFIG, f,
				"frequency: every_n needs checkpoint_interval (rows between checkpoints)");
		if (s->checkpoint_frequency != CORE_CKPT_EVERY_N && iv)
			return core_err_at(err, CORE_ECONFIG, iv,
				"checkpoint_interval applies to frequency: every_n only");
		if (s->checkpoint_enabled && !s->audit &&
		    core_map_get(n, "enabled"))
			return core_err_at(err, CORE_ECONFIG, core_map_get(n, "enabled"),
				"checkpoints are stored in the Landscape, which landscape.enabled: false turns off");
	}
	if (!s->audit)
		s->checkpoint_enabled = false;
	if ((n = core_map_get(root, "retry"))) {
		if ((rc = core__check_section(n, retry_keys, err)) ||
		    (rc = core_opt_int(n, "max_attempts", 1, 1000, &s->retry.max_attempts, err)) ||
		    (rc = core_opt_double(n, "initial_delay_seconds", 0, 86400,
					  &s->retry.initial_delay_seconds, err)) ||
		    (rc = core_opt_double(n, "max_delay_seconds", 0, 86400,
					  &s->retry.max_delay_seconds, err)) ||
		    (rc = core_opt_double(n, "exponential_base", 1, 100,
					  &s->retry.exponential_base, err)))
			return rc;
	}
	return 0;
}

/* `metrics: {listen: ADDR}` (ours): the Prometheus endpoint, as
 * --metrics-listen gives it (the flag wins). */
static const key_spec metrics_keys[] = { { "listen", K_STR, true }, { NULL } };

static int load_metrics(core_settings *s, const core_node *n, core_err *err)
{
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core__check_section(n, metrics_keys, err)))
		return rc;
	s->metrics_listen = core__str_of(n, "listen");
	return 0;
}

/* ----------------------------------------------------------------- entry */

static const char *const top_keys[] = {
	"source", "transforms", "gates", "coalesce", "aggregations", "sinks",
	"landscape", "concurrency", "checkpoint", "retry", "rate_limit",
	"sources", "queues", "secrets", "depends_on", "payload_store", "telemetry",
	"metrics", NULL
};

static int settings_build(core_settings *s, core_err *err)
{
	const core_node *root = core_doc_root(s->doc);
	uint8_t digest[CORE_SHA256_LEN];
	json_t *j;
	int rc;

	if (!root)
		return core_err_set(err, CORE_ECONFIG,
				    "%s: the settings file is empty", s->path);
	if ((rc = core__refuse_cloud(root, err)) ||
	    (rc = core_map_check_keys(root, top_keys, err)) ||
	    (rc = core__v07_prepare(s, root, err)) ||
	    (rc = core__load_secrets(s, core_map_get(root, "secrets"), err)) ||
	    (rc = core__load_depends_on(s, core_map_get(root, "depends_on"), err)) ||
	    (rc = core__expand_files(s, err)) ||
	    (rc = core__load_sources(s, root, err)) ||
	    (rc = load_transforms(s, core_map_get(root, "transforms"), err)) ||
	    (rc = load_gates(s, core_map_get(root, "gates"), err)) ||
	    (rc = load_sinks(s, core_map_get(root, "sinks"), err)) ||
	    (rc = core__load_coalesce(s, core_map_get(root, "coalesce"), err)) ||
	    (rc = core__load_aggregations(s, core_map_get(root, "aggregations"), err)) ||
	    (rc = load_runtime(s, root, err)) ||
	    (rc = core__load_rate_limit(s, core_map_get(root, "rate_limit"), err)) ||
	    (rc = core__load_telemetry(s, core_map_get(root, "telemetry"), err)) ||
	    (rc = load_metrics(s, core_map_get(root, "metrics"), err)))
		return rc;
	/* The recorded settings and their hash never hold a raw secret. */
	j = core_node_to_json(root);
	if (!j || core_redact_secrets(j)) {
		json_decref(j);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = core_canon(j, &s->settings_json, NULL, err);
	json_decref(j);
	if (rc)
		return rc;
	core_sha256(s->settings_json, strlen(s->settings_json), digest);
	core_hex(digest, sizeof(digest), s->config_hash);
	return 0;
}

static core_settings *settings_new(void)
{
	core_settings *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->retry.max_attempts = 3;
	s->retry.initial_delay_seconds = 1.0;
	s->retry.max_delay_seconds = 60.0;
	s->retry.exponential_base = 2.0;
	s->pipelining = false;
	s->max_rows_in_flight = 16;
	s->max_completed_waiting = 32;
	s->max_waiting_mib = 64;
	s->audit = true;
	s->checkpoint_enabled = true;
	s->checkpoint_frequency = CORE_CKPT_EVERY_ROW;
	s->checkpoint_interval = 1;
	s->checkpoint_aggregation_boundaries = true;
	s->telemetry.granularity = CORE_TEL_LIFECYCLE;
	s->telemetry.fail_on_total = true;
	s->telemetry.max_consecutive_failures = 10;
	s->landscape_url = "lmdb://./state/audit.lmdb";
	snprintf(s->landscape_lmdb, sizeof(s->landscape_lmdb), "./state/audit.lmdb");
	return s;
}

static int settings_finish(core_settings *s, int rc, core_settings **out)
{
	if (rc) {
		core_settings_free(s);
		return rc;
	}
	*out = s;
	return 0;
}

int core_settings_load(const char *path, core_settings **out, core_err *err)
{
	core_settings *s = settings_new();
	int rc;

	*out = NULL;
	if (!s || !(s->path_copy = strdup(path))) {
		core_settings_free(s);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	s->path = path = s->path_copy;
	rc = core__settings_prepass_file(path, err);
	if (!rc)
		rc = core_doc_load(path, &s->doc, err);
	if (!rc)
		rc = settings_build(s, err);
	return settings_finish(s, rc, out);
}

int core_settings_parse(const char *name, const char *text,
			core_settings **out, core_err *err)
{
	core_settings *s = settings_new();
	int rc;

	*out = NULL;
	if (!s || !(s->path_copy = strdup(name))) {
		core_settings_free(s);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	s->path = name = s->path_copy;
	rc = core__settings_prepass(name, text, strlen(text), err);
	if (!rc)
		rc = core_doc_parse(name, text, strlen(text), &s->doc, err);
	if (!rc)
		rc = settings_build(s, err);
	return settings_finish(s, rc, out);
}

void core_settings_free(core_settings *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ngates; i++) {
		free(s->gates[i].routes);
		free(s->gates[i].fork_to);
	}
	for (size_t i = 0; i < s->ncoalesce; i++) {
		free(s->coalesce[i].branches);
		free(s->coalesce[i].inputs);
	}
	free(s->coalesce);
	free(s->sources);
	free(s->queues);
	core__depends_on_free(s);
	free(s->aggregations);
	free(s->transforms);
	free(s->rate_limit.services);
	free(s->telemetry.exporters);
	free(s->gates);
	free(s->sinks);
	free(s->settings_json);
	core_doc_free(s->doc);
	free(s->path_copy);
	free(s);
}

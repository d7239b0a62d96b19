/*
 * settings_dag.c — the `coalesce` and `aggregations` sections
 * (docs/architecture.md §6, §7).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

static const char *const policies[] = {
	"require_all", "quorum", "best_effort", "first", NULL
};
static const char *const merges[] = { "union", "nested", "select", NULL };
/* union_collision_policy is ELSPETH 0.7.1's (ADR 0044): a union's field
 * given by two branches; unknown in a 0.4.1 file. */
static const char *const collisions[] = { "last_wins", "first_wins", "fail", NULL };
static const key_spec coalesce_keys[] = {
	{ "name", K_STR, true }, { "branches", K_ANY, true },
	{ "policy", K_ENUM, false, 0, 0, policies },
	{ "merge", K_ENUM, false, 0, 0, merges },
	{ "timeout_seconds", K_NUM, false, 0, 1e9 },
	{ "quorum_count", K_INT, false, 1, 1e6 },
	{ "select_branch", K_STR, false }, { "on_success", K_STR, false },
	{ "union_collision_policy", K_ENUM, false, 0, 0, collisions },
	{ NULL }
};

static const char *const output_modes[] = { "transform", "passthrough", NULL };
static const key_spec aggregation_keys[] = {
	{ "name", K_STR, true }, { "plugin", K_STR, true },
	{ "input", K_STR, true }, { "on_success", K_STR, false },
	{ "on_error", K_STR, false }, { "trigger", K_MAP, false },
	{ "output_mode", K_ENUM, false, 0, 0, output_modes },
	{ "options", K_MAP, false }, { NULL }
};
static const key_spec trigger_keys[] = {
	{ "count", K_INT, false, 1, 1e9 },
	{ "timeout_seconds", K_NUM, false, 0, 1e9 },
	{ "condition", K_STR, false }, { NULL }
};

/* branches: [a, b] (each branch arrives on the connection of its name)
 * or {a: conn_a, b: conn_b}. */
static int load_branches(core_coalesce_cfg *c, const core_node *b,
			 core_err *err)
{
	int rc;

	if (b->kind == CORE_NODE_SEQ) {
		if ((rc = core_node_str_list(b, &c->branches, &c->nbranches, err)))
			return rc;
		c->inputs = calloc(c->nbranches ? c->nbranches : 1, sizeof(*c->inputs));
		if (!c->inputs)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		memcpy(c->inputs, c->branches, c->nbranches * sizeof(*c->inputs));
	} else if (b->kind == CORE_NODE_MAP) {
		c->branches = calloc(b->len ? b->len : 1, sizeof(*c->branches));
		c->inputs = calloc(b->len ? b->len : 1, sizeof(*c->inputs));
		if (!c->branches || !c->inputs)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		for (size_t i = 0; i < b->len; i++) {
			c->branches[i] = b->keys[i]->value;
			if ((rc = core_node_str(b->items[i], &c->inputs[i], err)))
				return rc;
		}
		c->nbranches = b->len;
	} else {
		return core_err_at(err, CORE_ECONFIG, b,
			"expected a list of branch names or a map of branch to connection");
	}
	if (c->nbranches < 2)
		return core_err_at(err, CORE_ECONFIG, b,
				   "a coalesce joins at least 2 branches");
	for (size_t i = 0; i < c->nbranches; i++)
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->branches[i], c->branches[j]))
				return core_err_at(err, CORE_ECONFIG, b,
					"branch '%s' is listed twice", c->branches[i]);
	return 0;
}

/* The options each policy and merge needs, and only those. */
static int check_policy(const core_coalesce_cfg *c, const core_node *n,
			core_err *err)
{
	const core_node *q = core_map_get(n, "quorum_count");
	const core_node *t = core_map_get(n, "timeout_seconds");
	const core_node *sb = core_map_get(n, "select_branch");

	if (c->policy == CORE_POLICY_QUORUM && !q)
		return core_err_at(err, CORE_ECONFIG, n, "policy quorum needs 'quorum_count'");
	if (q && c->policy != CORE_POLICY_QUORUM)
		return core_err_at(err, CORE_ECONFIG, q, "'quorum_count' is only for policy quorum");
	if (q && c->quorum_count > (long long)c->nbranches)
		return core_err_at(err, CORE_ECONFIG, q,
			"quorum_count %lld is more than the %zu branches",
			c->quorum_count, c->nbranches);
	if (c->policy == CORE_POLICY_BEST_EFFORT && !t)
		return core_err_at(err, CORE_ECONFIG, n,
				   "policy best_effort needs 'timeout_seconds'");
	if (c->merge == CORE_MERGE_SELECT && !sb)
		return core_err_at(err, CORE_ECONFIG, n, "merge select needs 'select_branch'");
	if (sb && c->merge != CORE_MERGE_SELECT)
		return core_err_at(err, CORE_ECONFIG, sb, "'select_branch' is only for merge select");
	for (size_t i = 0; sb && i < c->nbranches; i++)
		if (!strcmp(c->branches[i], c->select_branch))
			return 0;
	if (sb)
		return core_err_at(err, CORE_ECONFIG, sb,
				   "select_branch '%s' is not one of the branches",
				   c->select_branch);
	return 0;
}

static int load_one_coalesce(core_settings *s, core_coalesce_cfg *c,
			     const core_node *n, core_err *err)
{
	int idx, rc;

	if ((rc = core__check_section(n, coalesce_keys, err)))
		return rc;
	c->node = n;
	if (core_map_get(n, "union_collision_policy") && s->format != CORE_FORMAT_V07)
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "union_collision_policy"),
			"unknown key 'union_collision_policy': it is ELSPETH 0.7.1's (a file "
			"in its format has 'sources:'); 0.4.1's union keeps the later branch's value");
	if (core_map_get(n, "union_collision_policy")) {
		if ((rc = core_node_enum(core_map_get(n, "union_collision_policy"),
					 collisions, &idx, err)))
			return rc;
		c->collision = (core_collision)idx;
	}
	c->name = core__str_of(n, "name");
	/* Without on_success (ELSPETH 0.4.1), the merged rows go to the
	 * connection named after the coalesce. */
	c->on_success = core__str_of(n, "on_success");
	if (!c->on_success)
		c->on_success = c->name;
	c->select_branch = core__str_of(n, "select_branch");
	if (core_map_get(n, "policy")) {
		core_node_enum(core_map_get(n, "policy"), policies, &idx, err);
		c->policy = (core_policy)idx;
	}
	if (core_map_get(n, "merge")) {
		core_node_enum(core_map_get(n, "merge"), merges, &idx, err);
		c->merge = (core_merge)idx;
	}
	if ((rc = core_opt_double(n, "timeout_seconds", 0, 1e9, &c->timeout_seconds, err)) ||
	    (rc = core_opt_int(n, "quorum_count", 1, 1000000, &c->quorum_count, err)) ||
	    (rc = load_branches(c, core_map_get(n, "branches"), err)))
		return rc;
	return check_policy(c, n, err);
}

int core__load_coalesce(core_settings *s, const core_node *seq, core_err *err)
{
	int rc;

	if (!seq || core_node_is_null(seq))
		return 0;
	if (seq->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, seq, "expected a list of coalesce nodes");
	s->coalesce = calloc(seq->len ? seq->len : 1, sizeof(*s->coalesce));
	if (!s->coalesce)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->len; i++) {
		s->ncoalesce++;
		if ((rc = load_one_coalesce(s, &s->coalesce[i], seq->items[i], err)))
			return rc;
	}
	return 0;
}

static int load_trigger(core_aggregation_cfg *a, const core_node *n,
			core_err *err)
{
	const core_node *t = core_map_get(n, "trigger");
	int rc;

	if (!t)
		return 0; /* end of source only */
	if ((rc = core__check_section(t, trigger_keys, err)) ||
	    (rc = core_opt_int(t, "count", 1, 1000000000, &a->trigger_count, err)) ||
	    (rc = core_opt_double(t, "timeout_seconds", 0, 1e9, &a->trigger_timeout, err)))
		return rc;
	a->trigger_condition = core__str_of(t, "condition");
	a->condition_node = core_map_get(t, "condition");
	return 0;
}

static int load_one_aggregation(core_settings *s, core_aggregation_cfg *a,
				const core_node *n, core_err *err)
{
	const core_node *mode = core_map_get(n, "output_mode");
	int idx = 0, rc;

	if ((rc = core__check_section(n, aggregation_keys, err)))
		return rc;
	a->node = n;
	a->name = core__str_of(n, "name");
	a->plugin = core__str_of(n, "plugin");
	a->input = core__str_of(n, "input");
	/* As a coalesce: without on_success, its rows go to the connection
	 * named after it. */
	a->on_success = core__str_of(n, "on_success");
	if (!a->on_success)
		a->on_success = a->name;
	a->on_error = core__str_of(n, "on_error");
	if (!a->on_error && s->format == CORE_FORMAT_V07)
		return core_err_missing(err, n, "on_error", "on_error",
			"ELSPETH 0.7.1 requires it on every aggregation: a sink's name "
			"or 'discard'");
	if (mode && (rc = core_node_enum(mode, output_modes, &idx, err)))
		return rc;
	a->passthrough = idx == 1;
	a->options = core__options_of(s, n);
	if (!a->options)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return load_trigger(a, n, err);
}

int core__load_aggregations(core_settings *s, const core_node *seq,
			    core_err *err)
{
	int rc;

	if (!seq || core_node_is_null(seq))
		return 0;
	if (seq->kind != CORE_NODE_SEQ)
		return core_err_at(err, CORE_ECONFIG, seq, "expected a list of aggregations");
	s->aggregations = calloc(seq->len ? seq->len : 1, sizeof(*s->aggregations));
	if (!s->aggregations)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < seq->len; i++) {
		s->naggregations++;
		if ((rc = load_one_aggregation(s, &s->aggregations[i], seq->items[i], err)))
			return rc;
	}
	return 0;
}

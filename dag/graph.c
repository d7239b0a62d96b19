/*
 * graph.c — builds the pipeline graph from the settings and validates it
 * before the first row (DESIGN.md §7 "Validation").
 */
#include <stdlib.h>
#include <string.h>

#include "dag/dag.h"

#define DAG_NAME_MAX 38

/* Plugins a later issue builds: named so the error says "not yet". */
static const char *const later_plugins[] = {
	"llm", "llm_multi_query", "json_explode", "batch_stats",
	"batch_replicate", "delay", NULL
};

typedef struct build_ctx {
	const core_settings *s;
	dag_graph *g;
	core_err *err;
	size_t edge_cap;
} build_ctx;

static const core_node *field_node(const dag_node *n, const core_node *cfg,
				   const char *key)
{
	const core_node *v = core_map_get(cfg, key);

	(void)n;
	return v ? v : cfg;
}

static int add_edge(build_ctx *c, int from, int to, const char *label)
{
	dag_graph *g = c->g;

	if (to < 0)
		return 0;
	if (g->nedges == c->edge_cap) {
		size_t cap = c->edge_cap ? c->edge_cap * 2 : 16;
		dag_edge *e = realloc(g->edges, cap * sizeof(*e));

		if (!e)
			return core_err_set(c->err, CORE_ENOMEM, "out of memory");
		g->edges = e;
		c->edge_cap = cap;
	}
	g->edges[g->nedges++] = (dag_edge){ from, to, label };
	return 0;
}

/* ------------------------------------------------------ plugin lookups */

static bool is_later(const char *plugin)
{
	for (size_t i = 0; later_plugins[i]; i++)
		if (strcmp(later_plugins[i], plugin) == 0)
			return true;
	return false;
}

static int unknown_plugin(build_ctx *c, const core_node *at, plg_kind kind,
			  const char *plugin)
{
	static const char *const kinds[] = { "source", "transform", "sink" };
	core_buf names;
	const char *name, *desc;
	int rc;

	if (is_later(plugin))
		return core_err_at(c->err, CORE_EUNSUPPORTED, at,
				   "not supported yet: %s plugin '%s' (a later issue builds it)",
				   kinds[kind], plugin);
	core_buf_init(&names);
	for (size_t i = 0; plg_describe(kind, i, &name, &desc); i++)
		core_buf_printf(&names, "%s%s", i ? ", " : "", name);
	rc = core_err_at(c->err, CORE_ECONFIG, at,
			 "unknown %s plugin '%s' (available: %s; see `elspeth plugins list`)",
			 kinds[kind], plugin, names.data ? names.data : "none");
	core_buf_release(&names);
	return rc;
}

/* ------------------------------------------------------- destinations */

static int find_sink(const dag_graph *g, const char *name)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK && strcmp(g->nodes[i].name, name) == 0)
			return (int)i;
	return DAG_NONE;
}

static const char *input_of(const build_ctx *c, size_t i)
{
	const dag_node *n = &c->g->nodes[i];

	if (n->kind == DAG_TRANSFORM)
		return c->s->transforms[i - 1].input;
	if (n->kind == DAG_GATE)
		return c->s->gates[i - 1 - c->s->ntransforms].input;
	return NULL;
}

static int find_consumer(const build_ctx *c, const char *conn)
{
	for (size_t i = 0; i < c->g->nnodes; i++) {
		const char *in = input_of(c, i);

		if (in && strcmp(in, conn) == 0)
			return (int)i;
	}
	return DAG_NONE;
}

/* Resolves a destination name: a sink, a connection, or "discard" when
 * allowed. `what` names the key for messages. */
static int resolve(build_ctx *c, const core_node *at, const char *dest,
		   bool sink_only, bool discard_ok, int *out)
{
	int sink = find_sink(c->g, dest);
	int cons = sink_only ? DAG_NONE : find_consumer(c, dest);

	if (discard_ok && strcmp(dest, CORE_DISCARD) == 0) {
		*out = DAG_DISCARD;
		return 0;
	}
	if (sink >= 0 && cons >= 0)
		return core_err_at(c->err, CORE_ECONFIG, at,
			"'%s' is both a sink and the input connection of '%s'; rename one",
			dest, c->g->nodes[cons].name);
	if (sink >= 0 || cons >= 0) {
		*out = sink >= 0 ? sink : cons;
		return 0;
	}
	if (sink_only)
		return core_err_at(c->err, CORE_ECONFIG, at,
			"'%s' is not a sink%s (sinks are declared under 'sinks')",
			dest, discard_ok ? " nor 'discard'" : "");
	return core_err_at(c->err, CORE_ECONFIG, at,
		"'%s' is neither a sink nor the input connection of any transform or gate",
		dest);
}

/* -------------------------------------------------------------- nodes */

static int check_name(build_ctx *c, size_t upto, const core_node *cfg,
		      const char *name)
{
	const core_node *at = field_node(NULL, cfg, "name");

	if (strlen(name) > DAG_NAME_MAX)
		return core_err_at(c->err, CORE_ECONFIG, at,
				   "node name '%s' is longer than %d characters",
				   name, DAG_NAME_MAX);
	for (size_t i = 1; i < upto; i++)
		if (strcmp(c->g->nodes[i].name, name) == 0)
			return core_err_at(c->err, CORE_ECONFIG, at,
					   "node name '%s' is used twice", name);
	return 0;
}

static int add_nodes(build_ctx *c)
{
	const core_settings *s = c->s;
	dag_graph *g = c->g;
	size_t k = 0;
	int rc;

	g->nodes[k] = (dag_node){ .kind = DAG_SOURCE, .name = "source",
		.plugin = s->source.plugin, .options = s->source.options };
	g->nodes[k].sops = plg_find_source(s->source.plugin);
	if (!g->nodes[k].sops)
		return unknown_plugin(c, field_node(NULL, s->source.node, "plugin"),
				      PLG_SOURCE, s->source.plugin);
	for (size_t i = 0; i < s->ntransforms; i++) {
		const core_transform_cfg *t = &s->transforms[i];
		dag_node *n = &g->nodes[++k];

		*n = (dag_node){ .kind = DAG_TRANSFORM, .name = t->name,
			.plugin = t->plugin, .options = t->options };
		if ((rc = check_name(c, k, t->node, t->name)))
			return rc;
		n->tops = plg_find_transform(t->plugin);
		if (!n->tops)
			return unknown_plugin(c, field_node(n, t->node, "plugin"),
					      PLG_TRANSFORM, t->plugin);
	}
	for (size_t i = 0; i < s->ngates; i++) {
		const core_gate_cfg *gc = &s->gates[i];
		dag_node *n = &g->nodes[++k];

		*n = (dag_node){ .kind = DAG_GATE, .name = gc->name,
			.plugin = "gate" };
		if ((rc = check_name(c, k, gc->node, gc->name)))
			return rc;
		if ((rc = dag_expr_compile(gc->condition, &n->cond, c->err)))
			return core_err_prefix(c->err, "%s:%d:%d: %s: invalid condition",
				gc->condition_node->file, gc->condition_node->line,
				gc->condition_node->col, gc->condition_node->path);
	}
	for (size_t i = 0; i < s->nsinks; i++) {
		const core_sink_cfg *sc = &s->sinks[i];
		dag_node *n = &g->nodes[++k];

		*n = (dag_node){ .kind = DAG_SINK, .name = sc->name,
			.plugin = sc->plugin, .options = sc->options };
		n->kops = plg_find_sink(sc->plugin);
		if (!n->kops)
			return unknown_plugin(c, field_node(n, sc->node, "plugin"),
					      PLG_SINK, sc->plugin);
	}
	for (size_t i = 0; i < g->nnodes; i++)
		g->nodes[i].id = (int)i;
	return 0;
}

/* ------------------------------------------------------------- wiring */

static int wire_source(build_ctx *c)
{
	const core_source_cfg *sc = &c->s->source;
	dag_node *n = &c->g->nodes[0];
	int rc;

	if ((rc = resolve(c, field_node(n, sc->node, "on_success"),
			  sc->on_success, false, false, &n->next)) ||
	    (rc = resolve(c, field_node(n, sc->options, "on_validation_failure"),
			  sc->on_validation_failure, true, true, &n->on_error)))
		return rc;
	if ((rc = add_edge(c, 0, n->next, "on_success")))
		return rc;
	return add_edge(c, 0, n->on_error, "on_validation_failure");
}

static int wire_transform(build_ctx *c, size_t k)
{
	const core_transform_cfg *t = &c->s->transforms[k - 1];
	dag_node *n = &c->g->nodes[k];
	int rc;

	n->on_error = DAG_NONE;
	if ((rc = resolve(c, field_node(n, t->node, "on_success"), t->on_success,
			  false, false, &n->next)))
		return rc;
	if (t->on_error &&
	    (rc = resolve(c, field_node(n, t->node, "on_error"), t->on_error,
			  true, true, &n->on_error)))
		return rc;
	if ((rc = add_edge(c, (int)k, n->next, "on_success")))
		return rc;
	return add_edge(c, (int)k, n->on_error, "on_error");
}

static int wire_gate(build_ctx *c, size_t k)
{
	const core_gate_cfg *gc = &c->s->gates[k - 1 - c->s->ntransforms];
	dag_node *n = &c->g->nodes[k];
	int rc;

	n->next = DAG_NONE;
	n->on_error = DAG_NONE;
	n->routes = calloc(gc->nroutes, sizeof(*n->routes));
	if (!n->routes)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < gc->nroutes; i++) {
		dag_route *r = &n->routes[i];

		r->key = gc->routes[i].key;
		if ((rc = resolve(c, gc->routes[i].node, gc->routes[i].dest,
				  false, false, &r->to)))
			return rc;
		n->nroutes++;
		if ((rc = add_edge(c, (int)k, r->to, r->key)))
			return rc;
	}
	return 0;
}

/* ------------------------------------------------ reachability, cycles */

static int check_reachable(build_ctx *c)
{
	dag_graph *g = c->g;
	bool *seen = calloc(g->nnodes, sizeof(*seen));
	int *stack = calloc(g->nnodes + 1, sizeof(*stack));
	size_t top = 0;
	int rc = 0;

	if (!seen || !stack) {
		rc = core_err_set(c->err, CORE_ENOMEM, "out of memory");
		goto out_free;
	}
	seen[0] = true;
	stack[top++] = 0;
	while (top) {
		int from = stack[--top];

		for (size_t e = 0; e < g->nedges; e++) {
			int to = g->edges[e].to;

			if (g->edges[e].from == from && !seen[to]) {
				seen[to] = true;
				stack[top++] = to;
			}
		}
	}
	for (size_t i = 1; i < g->nnodes && !rc; i++) {
		const dag_node *n = &g->nodes[i];

		if (seen[i] || n->kind == DAG_SINK)
			continue;
		rc = core_err_set(c->err, CORE_ECONFIG,
			"%s: %s '%s' is never reached: nothing sends rows to its input '%s' "
			"(check the on_success and routes that should lead to it)",
			c->s->path, n->kind == DAG_GATE ? "gate" : "transform",
			n->name, input_of(c, i));
	}
out_free:
	free(seen);
	free(stack);
	return rc;
}

/* Depth-first search; color 1 = on the stack, 2 = done. */
static int visit(build_ctx *c, int v, unsigned char *color)
{
	dag_graph *g = c->g;

	color[v] = 1;
	for (size_t e = 0; e < g->nedges; e++) {
		int to = g->edges[e].to;

		if (g->edges[e].from != v)
			continue;
		if (color[to] == 1)
			return core_err_set(c->err, CORE_ECONFIG,
				"%s: cycle: '%s' leads back to '%s' (via '%s'); a pipeline must not loop",
				c->s->path, g->nodes[v].name, g->nodes[to].name,
				g->edges[e].label);
		if (color[to] == 0 && visit(c, to, color))
			return CORE_ECONFIG;
	}
	color[v] = 2;
	return 0;
}

static int check_cycles(build_ctx *c)
{
	unsigned char *color = calloc(c->g->nnodes, 1);
	int rc;

	if (!color)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	rc = visit(c, 0, color);
	free(color);
	return rc;
}

/* Every input connection consumed by exactly one node. */
static int check_inputs(build_ctx *c)
{
	for (size_t i = 1; i < c->g->nnodes; i++) {
		const char *in = input_of(c, i);
		int first = in ? find_consumer(c, in) : DAG_NONE;

		if (in && first != (int)i)
			return core_err_set(c->err, CORE_ECONFIG,
				"%s: connection '%s' is the input of both '%s' and '%s'; "
				"a connection feeds exactly one node",
				c->s->path, in, c->g->nodes[first].name,
				c->g->nodes[i].name);
	}
	return 0;
}

int dag_build(const core_settings *s, dag_graph **out, core_err *err)
{
	build_ctx c = { .s = s, .err = err };
	dag_graph *g;
	int rc;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	c.g = g;
	g->settings = s;
	g->nnodes = 1 + s->ntransforms + s->ngates + s->nsinks;
	g->nodes = calloc(g->nnodes, sizeof(*g->nodes));
	if (!g->nodes) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_fail;
	}
	if ((rc = add_nodes(&c)) || (rc = check_inputs(&c)) ||
	    (rc = wire_source(&c)))
		goto out_fail;
	for (size_t k = 1; k <= s->ntransforms; k++)
		if ((rc = wire_transform(&c, k)))
			goto out_fail;
	for (size_t k = 1 + s->ntransforms; k <= s->ntransforms + s->ngates; k++)
		if ((rc = wire_gate(&c, k)))
			goto out_fail;
	if ((rc = check_cycles(&c)) || (rc = check_reachable(&c)))
		goto out_fail;
	*out = g;
	return 0;
out_fail:
	dag_free(g);
	return rc;
}

int dag_sink_index(const dag_graph *g, const char *name)
{
	return find_sink(g, name);
}

const dag_route *dag_gate_route(const dag_node *n, const char *key)
{
	for (size_t i = 0; i < n->nroutes; i++)
		if (strcmp(n->routes[i].key, key) == 0)
			return &n->routes[i];
	return NULL;
}

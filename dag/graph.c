/*
 * graph.c — builds the pipeline graph from the settings: nodes in the
 * order sources, transforms, gates, coalesce, aggregations, queues,
 * sinks; then wires every destination by name and validates (validate.c).
 */
#include <stdlib.h>
#include <string.h>

#include "dag/dag_internal.h"

static const core_node *at_key(const core_node *cfg, const char *key)
{
	const core_node *v = core_map_get(cfg, key);

	return v ? v : cfg;
}

/* An edge that carries rows which failed (error, quarantine, failed
 * write): not judged by the schema contracts. */
static int add_divert(dag__build *c, int from, int to, const char *label)
{
	int rc = dag__add_edge(c, from, (dag_dest){ to, -1 }, label);

	if (!rc && to >= 0)
		c->g->edges[c->g->nedges - 1].divert = true;
	return rc;
}

int dag__add_edge(dag__build *c, int from, dag_dest to, const char *label)
{
	dag_graph *g = c->g;

	if (to.node < 0)
		return 0;
	if (g->nedges == c->edge_cap) {
		size_t cap = c->edge_cap ? c->edge_cap * 2 : 16;
		dag_edge *e = realloc(g->edges, cap * sizeof(*e));

		if (!e)
			return core_err_set(c->err, CORE_ENOMEM, "out of memory");
		g->edges = e;
		c->edge_cap = cap;
	}
	g->edges[g->nedges++] = (dag_edge){ from, to.node, to.port, label, false };
	return 0;
}

/* ------------------------------------------------------ plugin lookups */

static int unknown_plugin(dag__build *c, const core_node *at, plg_kind kind,
			  const char *plugin)
{
	static const char *const kinds[] = { "source", "transform", "sink", "aggregation" };
	core_buf names;
	const char *name, *desc;
	int rc;

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

const char *dag__input_of(const dag__build *c, size_t i, int port)
{
	const core_settings *s = c->s;
	const dag_node *n = &c->g->nodes[i];

	switch (n->kind) {
	case DAG_TRANSFORM:
		return s->transforms[i - c->g->nsources].input;
	case DAG_GATE:
		return s->gates[i - c->g->nsources - s->ntransforms].input;
	case DAG_QUEUE:
		return n->name;
	case DAG_AGGREGATION:
		return n->agg->input;
	case DAG_COALESCE:
		return port >= 0 && (size_t)port < n->coalesce->nbranches ?
			n->coalesce->inputs[port] : NULL;
	default:
		return NULL;
	}
}

static int nports(const dag_node *n)
{
	return n->kind == DAG_COALESCE ? (int)n->coalesce->nbranches : 1;
}

/* The node (and port) that consumes connection conn. A queue takes what
 * is sent to its name; what it passes on (`from_queue`) goes to the
 * other consumer of that name. */
static dag_dest find_consumer(const dag__build *c, const char *conn,
			      bool from_queue)
{
	for (size_t i = 0; i < c->g->nnodes && !from_queue; i++)
		if (c->g->nodes[i].kind == DAG_QUEUE && !strcmp(c->g->nodes[i].name, conn))
			return (dag_dest){ (int)i, -1 };
	for (size_t i = 0; i < c->g->nnodes; i++) {
		const dag_node *n = &c->g->nodes[i];

		if (n->kind == DAG_QUEUE)
			continue;
		for (int p = 0; p < nports(n); p++) {
			const char *in = dag__input_of(c, i, n->kind == DAG_COALESCE ? p : -1);

			if (in && !strcmp(in, conn))
				return (dag_dest){ (int)i, n->kind == DAG_COALESCE ? p : -1 };
		}
	}
	return (dag_dest){ DAG_NONE, -1 };
}

/* Resolves a destination name: a sink, a connection, or "discard". */
static int resolve(dag__build *c, const core_node *at, const char *dest,
		   bool sink_only, bool discard_ok, dag_dest *out)
{
	int sink = find_sink(c->g, dest);
	bool from_queue = c->wiring >= 0 && c->g->nodes[c->wiring].kind == DAG_QUEUE;
	dag_dest cons = sink_only ? (dag_dest){ DAG_NONE, -1 } :
		find_consumer(c, dest, from_queue);

	if (discard_ok && strcmp(dest, CORE_DISCARD) == 0) {
		*out = (dag_dest){ DAG_DISCARD, -1 };
		return 0;
	}
	if (sink >= 0 && cons.node >= 0)
		return core_err_at(c->err, CORE_ECONFIG, at,
			"'%s' is both a sink and the input connection of '%s'; rename one",
			dest, c->g->nodes[cons.node].name);
	if (sink >= 0 || cons.node >= 0) {
		*out = sink >= 0 ? (dag_dest){ sink, -1 } : cons;
		return sink >= 0 ? 0 : dag__note_producer(c, at, cons, dest);
	}
	if (sink_only)
		return core_err_at(c->err, CORE_ECONFIG, at,
			"'%s' is not a sink%s (sinks are declared under 'sinks')",
			dest, discard_ok ? " nor 'discard'" : "");
	return core_err_at(c->err, CORE_ECONFIG, at,
		"'%s' is neither a sink nor the input connection of any transform, gate, "
		"coalesce or aggregation", dest);
}

static int resolve_sink(dag__build *c, const core_node *at, const char *dest,
			int *out)
{
	dag_dest d;
	int rc = resolve(c, at, dest, true, true, &d);

	*out = d.node;
	return rc;
}

/* -------------------------------------------------------------- nodes */

static int add_transforms(dag__build *c, size_t *k)
{
	for (size_t i = 0; i < c->s->ntransforms; i++) {
		const core_transform_cfg *t = &c->s->transforms[i];
		dag_node *n = &c->g->nodes[++*k];

		*n = (dag_node){ .kind = DAG_TRANSFORM, .name = t->name,
			.plugin = t->plugin, .options = t->options };
		n->tops = plg_find_transform(t->plugin);
		if (!n->tops)
			return unknown_plugin(c, at_key(t->node, "plugin"), PLG_TRANSFORM,
					      t->plugin);
	}
	return 0;
}

static int add_gates(dag__build *c, size_t *k)
{
	for (size_t i = 0; i < c->s->ngates; i++) {
		const core_gate_cfg *gc = &c->s->gates[i];
		dag_node *n = &c->g->nodes[++*k];

		*n = (dag_node){ .kind = DAG_GATE, .name = gc->name, .plugin = "gate" };
		if (expr_compile(gc->condition, &n->cond, c->err))
			return core_err_prefix(c->err, "%s:%d:%d: %s: invalid condition",
				gc->condition_node->file, gc->condition_node->line,
				gc->condition_node->col, gc->condition_node->path);
	}
	return 0;
}

static void add_queues(dag__build *c, size_t *k)
{
	for (size_t i = 0; i < c->s->nqueues; i++) {
		const core_queue_cfg *q = &c->s->queues[i];

		c->g->nodes[++*k] = (dag_node){ .kind = DAG_QUEUE, .name = q->name,
			.plugin = "queue", .options = q->node };
	}
}

static int add_coalesce_and_aggregations(dag__build *c, size_t *k)
{
	for (size_t i = 0; i < c->s->ncoalesce; i++) {
		const core_coalesce_cfg *cc = &c->s->coalesce[i];

		c->g->nodes[++*k] = (dag_node){ .kind = DAG_COALESCE, .name = cc->name,
			.plugin = "coalesce", .coalesce = cc };
	}
	for (size_t i = 0; i < c->s->naggregations; i++) {
		const core_aggregation_cfg *a = &c->s->aggregations[i];
		dag_node *n = &c->g->nodes[++*k];

		*n = (dag_node){ .kind = DAG_AGGREGATION, .name = a->name,
			.plugin = a->plugin, .options = a->options, .agg = a };
		n->aops = plg_find_aggregation(a->plugin);
		if (!n->aops)
			return unknown_plugin(c, at_key(a->node, "plugin"), PLG_AGGREGATION,
					      a->plugin);
		if (a->trigger_condition &&
		    expr_compile(a->trigger_condition, &n->trigger, c->err))
			return core_err_prefix(c->err, "%s:%d:%d: %s: invalid trigger condition",
				a->condition_node->file, a->condition_node->line,
				a->condition_node->col, a->condition_node->path);
	}
	return 0;
}

/* A sink whose schema is fixed takes exactly its declared fields. */
static bool schema_is_fixed(const core_node *options)
{
	const core_node *mode = core_map_get(core_map_get(options, "schema"), "mode");

	return mode && mode->kind == CORE_NODE_SCALAR && mode->value &&
	       !strcmp(mode->value, "fixed");
}

static int add_nodes(dag__build *c)
{
	const core_settings *s = c->s;
	dag_graph *g = c->g;
	size_t k = s->nsources - 1;
	int rc;

	for (size_t i = 0; i < s->nsources; i++) {
		const core_source_cfg *sc = &s->sources[i];
		dag_node *n = &g->nodes[i];

		*n = (dag_node){ .kind = DAG_SOURCE,
			.name = s->nsources > 1 ? sc->name : "source",
			.plugin = sc->plugin, .options = sc->options };
		n->sops = plg_find_source(sc->plugin);
		if (!n->sops)
			return unknown_plugin(c, at_key(sc->node, "plugin"), PLG_SOURCE,
					      sc->plugin);
	}
	if ((rc = add_transforms(c, &k)) || (rc = add_gates(c, &k)) ||
	    (rc = add_coalesce_and_aggregations(c, &k)))
		return rc;
	add_queues(c, &k);
	for (size_t i = 0; i < s->nsinks; i++) {
		const core_sink_cfg *sc = &s->sinks[i];
		dag_node *n = &g->nodes[++k];

		*n = (dag_node){ .kind = DAG_SINK, .name = sc->name,
			.plugin = sc->plugin, .options = sc->options,
			/* 0.7.1 writes an error's row as it is, whatever the
			 * sink's schema; 0.4.1 adds _error to an open one */
			.bare_errors = schema_is_fixed(sc->options) ||
				       s->format == CORE_FORMAT_V07 };
		n->kops = plg_find_sink(sc->plugin);
		if (!n->kops)
			return unknown_plugin(c, at_key(sc->node, "plugin"), PLG_SINK,
					      sc->plugin);
	}
	for (size_t i = 0; i < g->nnodes; i++)
		g->nodes[i].id = (int)i;
	return 0;
}

/* ------------------------------------------------------------- wiring */

static int wire_next(dag__build *c, dag_node *n, const core_node *cfg,
		     const char *on_success, const char *on_error)
{
	int rc;

	c->wiring = n->id;
	n->on_error = DAG_NONE;
	if ((rc = resolve(c, at_key(cfg, "on_success"), on_success, false, false,
			  &n->next)) ||
	    (rc = dag__add_edge(c, n->id, n->next, "on_success")))
		return rc;
	if (!on_error)
		return 0;
	if ((rc = resolve_sink(c, at_key(cfg, "on_error"), on_error, &n->on_error)))
		return rc;
	return add_divert(c, n->id, n->on_error, "on_error");
}

static int wire_fork(dag__build *c, dag_node *n, const core_gate_cfg *gc)
{
	int rc;

	n->nfork = gc->nfork_to;
	n->fork_branches = gc->fork_to;
	n->fork_dest = calloc(n->nfork ? n->nfork : 1, sizeof(*n->fork_dest));
	if (!n->fork_dest)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n->nfork; i++) {
		const core_node *at = core_map_get(gc->node, "fork_to")->items[i];

		for (size_t j = 0; j < i; j++)
			if (!strcmp(n->fork_branches[i], n->fork_branches[j]))
				return core_err_at(c->err, CORE_ECONFIG, at,
					"branch '%s' is listed twice", n->fork_branches[i]);
		if ((rc = resolve(c, at, n->fork_branches[i], false, false,
				  &n->fork_dest[i])) ||
		    (rc = dag__add_edge(c, n->id, n->fork_dest[i], n->fork_branches[i])))
			return rc;
	}
	return 0;
}

static int wire_gate(dag__build *c, dag_node *n, const core_gate_cfg *gc)
{
	int rc;

	c->wiring = n->id;
	n->next = (dag_dest){ DAG_NONE, -1 };
	n->on_error = DAG_NONE;
	n->routes = calloc(gc->nroutes, sizeof(*n->routes));
	if (!n->routes)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < gc->nroutes; i++) {
		dag_route *r = &n->routes[i];

		r->key = gc->routes[i].key;
		n->nroutes++;
		if (!strcmp(gc->routes[i].dest, "fork")) {
			r->to = (dag_dest){ DAG_FORK, -1 };
			continue;
		}
		if ((rc = resolve(c, gc->routes[i].node, gc->routes[i].dest,
				  false, false, &r->to)) ||
		    (rc = dag__add_edge(c, n->id, r->to, r->key)))
			return rc;
	}
	return gc->nfork_to ? wire_fork(c, n, gc) : 0;
}

static int wire_sink(dag__build *c, dag_node *n, const core_sink_cfg *sc)
{
	int rc;

	n->next = (dag_dest){ DAG_NONE, -1 };
	n->on_error = DAG_NONE;
	if (!sc->on_write_failure)
		return 0;
	if ((rc = resolve_sink(c, at_key(sc->node, "on_write_failure"),
			       sc->on_write_failure, &n->on_error)))
		return rc;
	if (n->on_error == n->id)
		return core_err_at(c->err, CORE_ECONFIG, at_key(sc->node, "on_write_failure"),
				   "a sink cannot divert its failed writes to itself");
	return add_divert(c, n->id, n->on_error, "on_write_failure");
}

/* A queue passes what it takes to the one other consumer of its name. */
static int wire_queue(dag__build *c, dag_node *n)
{
	dag_dest cons;

	c->wiring = n->id;
	n->on_error = DAG_NONE;
	cons = find_consumer(c, n->name, true);
	if (cons.node < 0)
		return core_err_at(c->err, CORE_ECONFIG, n->options,
			"queue '%s' has no downstream consumer: no transform, gate, "
			"aggregation or coalesce takes input '%s'", n->name, n->name);
	n->next = cons;
	return dag__add_edge(c, n->id, cons, "continue");
}

static int wire(dag__build *c)
{
	const core_settings *s = c->s;
	size_t k = s->nsources - 1;
	int rc;

	for (size_t i = 0; i < s->nsources; i++) {
		const core_source_cfg *sc = &s->sources[i];
		dag_node *src = &c->g->nodes[i];

		if ((rc = wire_next(c, src, sc->node, sc->on_success, NULL)) ||
		    (rc = resolve_sink(c, at_key(sc->options, "on_validation_failure"),
				       sc->on_validation_failure, &src->on_error)) ||
		    (rc = add_divert(c, (int)i, src->on_error, "on_validation_failure")))
			return rc;
	}
	for (size_t i = 0; i < s->ntransforms; i++, k++)
		if ((rc = wire_next(c, &c->g->nodes[k + 1], s->transforms[i].node,
				    s->transforms[i].on_success, s->transforms[i].on_error)))
			return rc;
	for (size_t i = 0; i < s->ngates; i++, k++)
		if ((rc = wire_gate(c, &c->g->nodes[k + 1], &s->gates[i])))
			return rc;
	for (size_t i = 0; i < s->ncoalesce; i++, k++)
		if ((rc = wire_next(c, &c->g->nodes[k + 1], s->coalesce[i].node,
				    s->coalesce[i].on_success, NULL)))
			return rc;
	for (size_t i = 0; i < s->naggregations; i++, k++)
		if ((rc = wire_next(c, &c->g->nodes[k + 1], s->aggregations[i].node,
				    s->aggregations[i].on_success, s->aggregations[i].on_error)))
			return rc;
	for (size_t i = 0; i < s->nqueues; i++, k++)
		if ((rc = wire_queue(c, &c->g->nodes[k + 1])))
			return rc;
	for (size_t i = 0; i < s->nsinks; i++, k++)
		if ((rc = wire_sink(c, &c->g->nodes[k + 1], &s->sinks[i])))
			return rc;
	return 0;
}

int dag_build(const core_settings *s, dag_graph **out, core_err *err)
{
	dag__build c = { .s = s, .err = err, .wiring = -1 };
	dag_graph *g;
	int rc;

	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	c.g = g;
	g->settings = s;
	plg_env_init(&g->env, &s->rate_limit);
	g->env.payload_dir = s->payload_store.base_path;
	g->env.v07 = s->format == CORE_FORMAT_V07;
	g->env.max_workers = (unsigned)s->max_workers;
	g->nsources = s->nsources;
	g->nnodes = s->nsources + s->ntransforms + s->ngates + s->ncoalesce +
		    s->naggregations + s->nqueues + s->nsinks;
	g->nodes = calloc(g->nnodes, sizeof(*g->nodes));
	c.producer = malloc(g->nnodes * sizeof(*c.producer));
	if (!g->nodes || !c.producer) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_fail;
	}
	for (size_t i = 0; i < g->nnodes; i++)
		c.producer[i] = DAG_NONE;
	if ((rc = add_nodes(&c)) || (rc = dag__check_names(&c)) ||
	    (rc = dag__check_inputs(&c)) || (rc = wire(&c)) ||
	    (rc = dag__check_cycles(&c)) || (rc = dag__check_reachable(&c)) ||
	    (rc = dag__check_coalesce(&c)) || (rc = dag__check_contracts(&c)))
		goto out_fail;
	free(c.producer);
	*out = g;
	return 0;
out_fail:
	free(c.producer);
	dag_free(g);
	return rc;
}

const dag_route *dag_gate_route(const dag_node *n, const char *key)
{
	for (size_t i = 0; i < n->nroutes; i++)
		if (strcmp(n->routes[i].key, key) == 0)
			return &n->routes[i];
	return NULL;
}

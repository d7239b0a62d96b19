/*
 * validate.c — the checks a graph passes before the first row
 * (docs/architecture.md §7 "Validation").
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_internal.h"

#define DAG_NAME_MAX 38

static const char *const reserved[] = {
	"continue", "fork", "on_success", "discard", NULL
};

static const char *kind_word(dag_kind k)
{
	switch (k) {
	case DAG_SOURCE: return "source";
	case DAG_TRANSFORM: return "transform";
	case DAG_GATE: return "gate";
	case DAG_COALESCE: return "coalesce";
	case DAG_AGGREGATION: return "aggregation";
	case DAG_SINK: return "sink";
	case DAG_QUEUE: return "queue";
	}
	return "node";
}

static int check_one_name(dag__build *c, const dag_node *n)
{
	const char *name = n->name;

	for (size_t i = 0; reserved[i]; i++)
		if (!strcmp(name, reserved[i]))
			return core_err_set(c->err, CORE_ECONFIG,
				"%s: %s name '%s' is reserved", c->s->path,
				kind_word(n->kind), name);
	if (!strncmp(name, "__", 2))
		return core_err_set(c->err, CORE_ECONFIG,
			"%s: %s name '%s': names starting with '__' are reserved",
			c->s->path, kind_word(n->kind), name);
	if (n->kind != DAG_SINK && strlen(name) > DAG_NAME_MAX)
		return core_err_set(c->err, CORE_ECONFIG,
			"%s: %s name '%s' is longer than %d characters",
			c->s->path, kind_word(n->kind), name, DAG_NAME_MAX);
	for (const char *p = name; n->kind == DAG_SINK && *p; p++)
		if (isupper((unsigned char)*p))
			return core_err_set(c->err, CORE_ECONFIG,
				"%s: sink name '%s' must be lowercase", c->s->path, name);
	return 0;
}

/* ELSPETH's words for a name used twice. */
#define DUP_NAME "Node name '%s' is used by both %s and %s. All node names " \
	"must be unique across transforms, gates, aggregations, coalesce " \
	"nodes, and sinks."

static int dup_name(dag__build *c, const dag_node *a, const dag_node *b)
{
	if (b->options && b->options->line)
		return core_err_at(c->err, CORE_ECONFIG, b->options, DUP_NAME,
				   b->name, kind_word(a->kind), kind_word(b->kind));
	return core_err_set(c->err, CORE_ECONFIG, "%s: " DUP_NAME, c->s->path,
			    b->name, kind_word(a->kind), kind_word(b->kind));
}

int dag__check_names(dag__build *c)
{
	const dag_graph *g = c->g;
	int rc;

	/* a pipeline's only source is "source", outside the name space;
	 * several sources are named by their keys (ADR 0044) */
	size_t first = g->nsources > 1 ? 0 : g->nsources;

	for (size_t i = first; i < g->nnodes; i++) {
		if (i >= g->nsources && (rc = check_one_name(c, &g->nodes[i])))
			return rc;
		/* ELSPETH's rule and words (its core/config.py): one name space
		 * for transforms, gates, aggregations, coalesces, sources,
		 * queues and sinks. */
		for (size_t j = first; j < i; j++)
			if (!strcmp(g->nodes[i].name, g->nodes[j].name))
				return dup_name(c, &g->nodes[j], &g->nodes[i]);
	}
	return 0;
}

int dag__note_producer(dag__build *c, const core_node *at, dag_dest cons,
		       const char *dest)
{
	const dag_graph *g = c->g;
	dag_kind k = g->nodes[cons.node].kind;
	int *first = &c->producer[cons.node];

	if (k == DAG_QUEUE || k == DAG_COALESCE || k == DAG_SINK || c->wiring < 0)
		return 0;
	if (*first == DAG_NONE || *first == c->wiring) {
		*first = c->wiring;
		return 0;
	}
	if (c->s->format == CORE_FORMAT_V07)
		return core_err_at(c->err, CORE_ECONFIG, at,
			"Duplicate producer for connection '%s': %s '%s' and %s '%s'. "
			"Route multiple producers through an explicit queue node "
			"(queues: {%s: {}}) before ordinary processing.", dest,
			kind_word(g->nodes[*first].kind), g->nodes[*first].name,
			kind_word(g->nodes[c->wiring].kind), g->nodes[c->wiring].name, dest);
	return core_err_at(c->err, CORE_ECONFIG, at,
		"Duplicate producer for connection '%s': %s '%s' and %s '%s' "
		"(a connection has one producer; send both to a sink, or write the "
		"pipeline in ELSPETH 0.7.1's format and join them in a queue)", dest,
		kind_word(g->nodes[*first].kind), g->nodes[*first].name,
		kind_word(g->nodes[c->wiring].kind), g->nodes[c->wiring].name);
}

static int ports_of(const dag_node *n)
{
	return n->kind == DAG_COALESCE ? (int)n->coalesce->nbranches : 1;
}

/* Every input connection is consumed by exactly one node (or port). */
int dag__check_inputs(dag__build *c)
{
	const dag_graph *g = c->g;

	for (size_t i = g->nsources; i < g->nnodes; i++) {
		if (g->nodes[i].kind == DAG_QUEUE)
			continue; /* it shares its name with its consumer */
		for (int p = 0; p < ports_of(&g->nodes[i]); p++) {
			const char *in = dag__input_of(c, i, g->nodes[i].kind == DAG_COALESCE ? p : -1);

			for (size_t j = g->nsources; in && j <= i; j++) {
				int lim = j == i ? p : ports_of(&g->nodes[j]);

				if (g->nodes[j].kind == DAG_QUEUE)
					continue;
				for (int q = 0; q < lim; q++) {
					const char *other = dag__input_of(c, j,
						g->nodes[j].kind == DAG_COALESCE ? q : -1);

					if (other && !strcmp(in, other))
						return core_err_set(c->err, CORE_ECONFIG,
							"%s: connection '%s' is the input of both '%s' and '%s'; "
							"a connection feeds exactly one node",
							c->s->path, in, g->nodes[j].name, g->nodes[i].name);
				}
			}
		}
	}
	return 0;
}

/* Depth-first search; color 1 = on the stack, 2 = done. */
static int visit(dag__build *c, int v, unsigned char *color)
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

int dag__check_cycles(dag__build *c)
{
	unsigned char *color = calloc(c->g->nnodes, 1);
	int rc = 0;

	if (!color)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < c->g->nnodes && !rc; i++)
		if (!color[i])
			rc = visit(c, (int)i, color);
	free(color);
	return rc;
}

/* Marks seen[] from start over edges; fork edges of gates other than
 * `own_fork` are followed too unless `branch_only`. */
static void reach(const dag_graph *g, int start, bool *seen)
{
	int *stack = calloc(g->nnodes + 1, sizeof(*stack));
	size_t top = 0;

	if (!stack)
		return;
	seen[start] = true;
	stack[top++] = start;
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
	free(stack);
}

/* A queue no edge enters (ELSPETH's words). */
static int check_queue_producers(dag__build *c)
{
	const dag_graph *g = c->g;

	for (size_t i = g->nsources; i < g->nnodes; i++) {
		size_t e = 0;

		if (g->nodes[i].kind != DAG_QUEUE)
			continue;
		while (e < g->nedges && g->edges[e].to != (int)i)
			e++;
		if (e == g->nedges)
			return core_err_at(c->err, CORE_ECONFIG, g->nodes[i].options,
				"Queue '%s' has no upstream producers: no source, transform, "
				"gate or aggregation sends rows to '%s'", g->nodes[i].name,
				g->nodes[i].name);
	}
	return 0;
}

int dag__check_reachable(dag__build *c)
{
	const dag_graph *g = c->g;
	bool *seen;
	int rc = check_queue_producers(c);

	if (rc)
		return rc;
	if (!(seen = calloc(g->nnodes, sizeof(*seen))))
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < g->nsources; i++)
		reach(g, (int)i, seen);
	for (size_t i = g->nsources; i < g->nnodes && !rc; i++) {
		const dag_node *n = &g->nodes[i];

		if (seen[i] || n->kind == DAG_SINK)
			continue;
		rc = core_err_set(c->err, CORE_ECONFIG,
			"%s: %s '%s' is never reached: nothing sends rows to its input '%s' "
			"(check the on_success, routes and fork_to that should lead to it)",
			c->s->path, kind_word(n->kind), n->name,
			dag__input_of(c, i, n->kind == DAG_COALESCE ? 0 : -1));
	}
	free(seen);
	return rc;
}

/* ----------------------------------------------------------- coalesce */

/* The gate whose fork_to lists branch, and the branch's index there. */
static const dag_node *fork_of(const dag_graph *g, const char *branch, size_t *idx)
{
	for (size_t i = 0; i < g->nnodes; i++)
		for (size_t b = 0; b < g->nodes[i].nfork; b++)
			if (!strcmp(g->nodes[i].fork_branches[b], branch)) {
				*idx = b;
				return &g->nodes[i];
			}
	return NULL;
}

/* Does the path from the fork's branch start reach coalesce port p? */
static bool branch_reaches(const dag_graph *g, dag_dest start, int coalesce,
			   int port)
{
	bool *seen, found = false;

	if (start.node == coalesce)
		return start.port == port;
	if (start.node < 0)
		return false;
	seen = calloc(g->nnodes, sizeof(*seen));
	if (!seen)
		return false;
	reach(g, start.node, seen);
	for (size_t e = 0; e < g->nedges && !found; e++)
		found = seen[g->edges[e].from] && g->edges[e].to == coalesce &&
			g->edges[e].port == port;
	free(seen);
	return found;
}

/* Nodes on a branch's way to its coalesce must keep it one token: no
 * expanding transform, no aggregation (which would hand the token to the
 * release side, outside the row). */
static const dag_node *splitter_on_branch(const dag_graph *g, dag_dest start,
					  int coalesce)
{
	bool *seen = calloc(g->nnodes, sizeof(*seen));
	const dag_node *bad = NULL;

	if (!seen || start.node < 0 || start.node == coalesce) {
		free(seen);
		return NULL;
	}
	reach(g, start.node, seen);
	for (size_t i = 0; i < g->nnodes && !bad; i++) {
		const dag_node *n = &g->nodes[i];
		bool *down;

		if (!seen[i] || (int)i == coalesce ||
		    !(n->kind == DAG_AGGREGATION ||
		      (n->kind == DAG_TRANSFORM && n->tops->expands)))
			continue;
		down = calloc(g->nnodes, sizeof(*down));
		if (!down)
			break;
		reach(g, (int)i, down);
		if (down[coalesce])
			bad = n;
		free(down);
	}
	free(seen);
	return bad;
}

int dag__check_coalesce(dag__build *c)
{
	const dag_graph *g = c->g;

	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];
		const dag_node *first = NULL;

		if (n->kind != DAG_COALESCE)
			continue;
		for (size_t p = 0; p < n->coalesce->nbranches; p++) {
			const char *b = n->coalesce->branches[p];
			const dag_node *gate;
			size_t bi = 0;

			gate = fork_of(g, b, &bi);
			if (!gate)
				return core_err_at(c->err, CORE_ECONFIG, n->coalesce->node,
					"coalesce '%s': branch '%s' is not in any gate's fork_to",
					n->name, b);
			if (first && first != gate)
				return core_err_at(c->err, CORE_ECONFIG, n->coalesce->node,
					"coalesce '%s': its branches come from different forks ('%s' and '%s')",
					n->name, first->name, gate->name);
			first = gate;
			if (!branch_reaches(g, gate->fork_dest[bi], (int)i, (int)p))
				return core_err_at(c->err, CORE_ECONFIG, n->coalesce->node,
					"coalesce '%s' can never receive branch '%s': no path from "
					"the fork of gate '%s' leads to its input '%s'",
					n->name, b, gate->name, n->coalesce->inputs[p]);
			const dag_node *bad = splitter_on_branch(g, gate->fork_dest[bi], (int)i);

			if (bad)
				return core_err_at(c->err, CORE_ECONFIG, n->coalesce->node,
					"coalesce '%s': branch '%s' passes through %s '%s', which "
					"turns one token into several (or batches them across rows); "
					"a branch joined by a coalesce must stay one token",
					n->name, b, bad->kind == DAG_AGGREGATION ? "aggregation" :
					"expanding transform", bad->name);
		}
	}
	return 0;
}

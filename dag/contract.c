/*
 * contract.c — schema contracts across the graph (docs/architecture.md §7
 * "Schema contracts", ADR 0034): each node's contract from its plugin,
 * what flows out of gates and coalesces, and every edge checked, as
 * ELSPETH checks them before its first row.
 *
 * Gates are transparent: what leaves a gate is what entered it. A
 * coalesce's contract is made from its branches' producers. Edges that
 * divert (on_error, on_validation_failure, on_write_failure) are not
 * checked: an error or quarantine sink takes rows as they failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag/dag_internal.h"

static bool diverts(const dag_edge *e)
{
	return e->divert;
}

/* The node whose rows reach v on port (-1: any), or -1. */
static int upstream(const dag_graph *g, int v, int port)
{
	for (size_t e = 0; e < g->nedges; e++)
		if (g->edges[e].to == v && !diverts(&g->edges[e]) &&
		    (port < 0 || g->edges[e].port == port))
			return g->edges[e].from;
	return -1;
}

static int producer(dag__build *c, int v, const plg_contract **out);

static int coalesce_contract(dag__build *c, dag_node *n)
{
	static const char *const merges[] = { "union", "nested", "select" };
	const core_coalesce_cfg *cc = n->coalesce;
	size_t nb = cc->nbranches, sel = nb;
	const plg_contract **branch = calloc(nb ? nb : 1, sizeof(*branch));
	char who[300];
	int rc;

	if (!branch)
		return core_err_set(c->err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < nb; i++) {
		int up = upstream(c->g, n->id, (int)i);

		if (up >= 0 && (rc = producer(c, up, &branch[i]))) {
			free(branch);
			return rc;
		}
		if (cc->merge == CORE_MERGE_SELECT && cc->select_branch &&
		    !strcmp(cc->branches[i], cc->select_branch))
			sel = i;
	}
	snprintf(who, sizeof(who), "coalesce:%s", n->name);
	rc = plg_contract_coalesce(who, merges[cc->merge], cc->branches, branch, nb,
				   sel, &n->contract, c->err);
	free(branch);
	return rc;
}

/* What leaves node v: its own contract, a gate's input's, a coalesce's
 * (made once). NULL: nothing known. */
static int producer(dag__build *c, int v, const plg_contract **out)
{
	dag_node *n = &c->g->nodes[v];

	*out = NULL;
	if (n->kind == DAG_GATE) {
		int up = upstream(c->g, v, -1);

		return up >= 0 ? producer(c, up, out) : 0;
	}
	if (n->kind == DAG_COALESCE && !n->contract) {
		int rc = coalesce_contract(c, n);

		if (rc)
			return rc;
	}
	*out = n->contract;
	return 0;
}

static int own_contract(dag__build *c, dag_node *n)
{
	/* a file in 0.7.1's format is judged by its rules (ADR 0044) */
	int (*of)(plg_kind, const char *, const core_node *, plg_contract **, core_err *) =
		c->s->format == CORE_FORMAT_V07 ? plg_contract_of_v07 : plg_contract_of;

	switch (n->kind) {
	case DAG_SOURCE:
		return of(PLG_SOURCE, n->plugin, n->options, &n->contract, c->err);
	case DAG_TRANSFORM:
		return of(PLG_TRANSFORM, n->plugin, n->options, &n->contract, c->err);
	case DAG_AGGREGATION:
		return of(PLG_AGGREGATION, n->plugin, n->options, &n->contract,
				       c->err);
	case DAG_SINK:
		return of(PLG_SINK, n->plugin, n->options, &n->contract, c->err);
	case DAG_GATE:
	case DAG_COALESCE:
	case DAG_QUEUE: /* ELSPETH 0.7.1: its output schema is observed */
		break;
	}
	return 0;
}

const plg_contract *dag_producer_contract(const dag_graph *g, int v)
{
	const dag_node *n = &g->nodes[v];

	for (int hops = 0; n->kind == DAG_GATE && hops < (int)g->nnodes; hops++) {
		int up = upstream(g, n->id, -1);

		if (up < 0)
			return NULL;
		n = &g->nodes[up];
	}
	return n->contract;
}

int dag__check_contracts(dag__build *c)
{
	dag_graph *g = c->g;
	int rc;

	for (size_t i = 0; i < g->nnodes; i++)
		if ((rc = own_contract(c, &g->nodes[i])))
			return rc;
	for (size_t e = 0; e < g->nedges; e++) {
		const dag_edge *ed = &g->edges[e];
		const dag_node *to = &g->nodes[ed->to];
		const dag_node *from = &g->nodes[ed->from];
		const plg_contract *p;
		char by[300];

		if (diverts(ed) || to->kind == DAG_COALESCE || to->kind == DAG_GATE ||
		    to->kind == DAG_QUEUE)
			continue;
		snprintf(by, sizeof(by), "config_gate:%s", from->name);
		if ((rc = producer(c, ed->from, &p)) ||
		    (rc = plg_contract_edge(p, to->contract, from->name, to->name, ed->label,
					    from->kind == DAG_GATE ? by : NULL, c->err)))
			return rc;
	}
	/* a coalesce no edge was checked through still gets its contract */
	for (size_t i = 0; i < g->nnodes; i++) {
		const plg_contract *p;

		if (g->nodes[i].kind == DAG_COALESCE && (rc = producer(c, (int)i, &p)))
			return rc;
	}
	return 0;
}

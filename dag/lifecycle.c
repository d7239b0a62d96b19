/* lifecycle.c — opening and closing the plugin instances of a graph. */
#include <stdlib.h>

#include "dag/dag.h"

int dag_open(dag_graph *g, bool sinks, core_err *err)
{
	int rc;

	for (size_t i = 0; i < g->nnodes; i++) {
		dag_node *n = &g->nodes[i];

		if (n->kind == DAG_SOURCE && !sinks && n->sops->check)
			rc = n->sops->check(n->options, err);
		else if (n->kind == DAG_TRANSFORM && !n->tstate)
			rc = n->tops->open(&g->env, n->options, &n->tstate, err);
		else if (n->kind == DAG_SINK && sinks && !n->kstate)
			rc = n->kops->open(&g->env, n->options, &n->kstate, err);
		else if (n->kind == DAG_SINK && !sinks)
			rc = n->kops->check(n->options, err);
		else if (n->kind == DAG_AGGREGATION && !n->astate)
			rc = n->aops->open(&g->env, n->options, &n->astate, err);
		else
			continue;
		if (rc) {
			core_err saved = *err;

			dag_close(g, NULL);
			*err = saved;
			return rc;
		}
	}
	return 0;
}

int dag_close(dag_graph *g, core_err *err)
{
	int first = 0;

	for (size_t i = 0; i < g->nnodes; i++) {
		dag_node *n = &g->nodes[i];

		if (n->kind == DAG_TRANSFORM && n->tstate) {
			n->tops->close(n->tstate);
			n->tstate = NULL;
		} else if (n->kind == DAG_AGGREGATION && n->astate) {
			n->aops->close(n->astate);
			n->astate = NULL;
		} else if (n->kind == DAG_SINK && n->kstate) {
			core_err local;
			int rc = n->kops->close(n->kstate, &local);

			n->kstate = NULL;
			if (rc && !first) {
				first = rc;
				if (err)
					*err = local;
			}
		}
	}
	return first;
}

const char *dag_sink_target(const dag_graph *g, const dag_node *n)
{
	return n->kops->target ? n->kops->target(&g->env, n->options) : NULL;
}

bool dag_sink_held(const dag_graph *g, int sink)
{
	if (g->settings->format != CORE_FORMAT_V07 || g->nodes[sink].kind != DAG_SINK)
		return false;
	for (size_t i = 0; i < g->nnodes; i++)
		if ((g->nodes[i].kind == DAG_TRANSFORM || g->nodes[i].kind == DAG_SOURCE ||
		     g->nodes[i].kind == DAG_AGGREGATION) && g->nodes[i].on_error == sink)
			return true;
	return false;
}

void dag_free(dag_graph *g)
{
	if (!g)
		return;
	dag_close(g, NULL);
	for (size_t i = 0; i < g->nnodes; i++) {
		expr_free(g->nodes[i].cond);
		expr_free(g->nodes[i].trigger);
		free(g->nodes[i].routes);
		free(g->nodes[i].fork_dest);
		plg_contract_free(g->nodes[i].contract);
	}
	free(g->nodes);
	free(g->edges);
	plg_env_release(&g->env);
	free(g);
}

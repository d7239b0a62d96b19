/* dag_internal.h — shared by graph building and validation. */
#ifndef ELSPETH_DAG_INTERNAL_H
#define ELSPETH_DAG_INTERNAL_H

#include "dag/dag.h"

typedef struct dag__build {
	const core_settings *s;
	dag_graph *g;
	core_err *err;
	size_t edge_cap;
	int wiring;                 /* the node being wired, or -1 */
	int *producer;              /* per node: the one node whose on_success
				     * or route feeds it, or DAG_NONE */
} dag__build;

/* The connection(s) node i consumes: for a coalesce, one per port. */
const char *dag__input_of(const dag__build *c, size_t i, int port);
int dag__add_edge(dag__build *c, int from, dag_dest to, const char *label);

/* validate.c */
/* Notes that c->wiring sends rows to cons (named dest, at `at`): a
 * transform, gate or aggregation has one producer (ELSPETH's "Duplicate
 * producer"); queues, coalesces and sinks take several. */
int dag__note_producer(dag__build *c, const core_node *at, dag_dest cons,
		       const char *dest);
int dag__check_names(dag__build *c);
int dag__check_inputs(dag__build *c);
int dag__check_cycles(dag__build *c);
int dag__check_reachable(dag__build *c);
int dag__check_coalesce(dag__build *c);

/* contract.c */
int dag__check_contracts(dag__build *c);

#endif

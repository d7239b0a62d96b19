/* dag_internal.h — shared by graph building and validation. */
#ifndef ELSPETH_DAG_INTERNAL_H
#define ELSPETH_DAG_INTERNAL_H

#include "dag/dag.h"

typedef struct dag__build {
	const core_settings *s;
	dag_graph *g;
	core_err *err;
	size_t edge_cap;
} dag__build;

/* The connection(s) node i consumes: for a coalesce, one per port. */
const char *dag__input_of(const dag__build *c, size_t i, int port);
int dag__add_edge(dag__build *c, int from, dag_dest to, const char *label);

/* validate.c */
int dag__check_names(dag__build *c);
int dag__check_inputs(dag__build *c);
int dag__check_cycles(dag__build *c);
int dag__check_reachable(dag__build *c);
int dag__check_coalesce(dag__build *c);

/* contract.c */
int dag__check_contracts(dag__build *c);

#endif

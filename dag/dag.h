/*
 * dag.h — the public contract of elspeth's dag module: the graph built
 * from the settings (its conditions are expr/expr.h's expressions).
 *
 * Thread rules: a compiled expression is immutable and may be used by many
 * threads at once. A built graph is written once more, by dag_open() (the
 * plugin instances' states), from one thread before the run starts; after
 * that it is read-only and shared by the run's threads.
 */
#ifndef ELSPETH_DAG_H
#define ELSPETH_DAG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"
#include "expr/expr.h"

/* ------------------------------------------------------------------ graph
 *
 * The pipeline as a graph: source nodes (one per source, in file order),
 * transforms, gates, coalesce nodes, aggregations, queues, sinks (in that
 * order in graph->nodes).
 * Connections are resolved by name (docs/architecture.md §7): a destination
 * (`on_success`, a route, `on_error`, `on_validation_failure`) is a sink
 * name, a connection consumed by exactly one transform or gate `input`, or
 * "discard" where allowed. dag_build() checks everything it can before the
 * first row: plugins exist, expressions compile, connections resolve,
 * names are unique and not reserved, no cycles, every node reachable from
 * the source, fork branches lead to their coalesce or to sinks, every
 * coalesce can receive each of its branches, and every edge's schema
 * contract holds (the fields a node needs are those its producer gives).
 */
#include "plugins/plugins.h"

#define DAG_NONE (-1)    /* no destination (e.g. on_error absent) */
#define DAG_DISCARD (-2) /* "discard" */
#define DAG_FORK (-3)    /* a gate route to "fork" */

typedef enum dag_kind {
	DAG_SOURCE, DAG_TRANSFORM, DAG_GATE, DAG_COALESCE, DAG_AGGREGATION,
	DAG_SINK,
	DAG_QUEUE   /* ELSPETH 0.7's queue: passes tokens on unchanged to
		     * the one consumer of its name (ADR 0044) */
} dag_kind;

/* Where a token goes next: a node, and for a coalesce the branch port it
 * arrives on (-1 otherwise). */
typedef struct dag_dest {
	int node;
	int port;
} dag_dest;

typedef struct dag_route {
	const char *key;  /* "true", "false", or a string form */
	dag_dest to;      /* to.node may be DAG_FORK */
} dag_route;

typedef struct dag_node {
	dag_kind kind;
	int id;                     /* index in graph->nodes */
	const char *name;           /* "source" for a pipeline's only
				     * source; its key in `sources` when
				     * there are several */
	const char *plugin;
	const core_node *options;
	dag_dest next;              /* SOURCE, TRANSFORM, COALESCE,
				     * AGGREGATION: on_success; QUEUE: the
				     * consumer of its name */
	int on_error;               /* TRANSFORM, AGGREGATION: sink,
				     * DAG_DISCARD or DAG_NONE; SOURCE:
				     * on_validation_failure; SINK:
				     * on_write_failure */
	/* TRANSFORM */
	const plg_transform_ops *tops;
	void *tstate;               /* after dag_open() */
	/* GATE */
	expr_code *cond;
	size_t nroutes;
	dag_route *routes;
	size_t nfork;               /* fork_to branches */
	const char **fork_branches;
	dag_dest *fork_dest;
	/* COALESCE */
	const core_coalesce_cfg *coalesce;
	/* AGGREGATION */
	const core_aggregation_cfg *agg;
	const plg_aggregation_ops *aops;
	void *astate;               /* after dag_open() */
	expr_code *trigger;          /* trigger condition, or NULL */
	/* SINK */
	const plg_sink_ops *kops;
	void *kstate;               /* after dag_open() */
	bool bare_errors;           /* its schema is fixed: a row routed here
				     * by an error gets no _error_node and
				     * _error fields (ADR 0003) */
	/* SOURCE */
	const plg_source_ops *sops;
	/* What it takes and promises (schema contracts); NULL for a gate,
	 * which passes on what it is given. */
	plg_contract *contract;
} dag_node;

typedef struct dag_edge {
	int from, to;
	int port;                   /* coalesce branch, or -1 */
	const char *label;          /* on_success, on_error, route key,
				     * fork branch ... */
	bool divert;                /* on_error, on_validation_failure,
				     * on_write_failure: rows that failed */
} dag_edge;

typedef struct dag_graph {
	const core_settings *settings; /* borrowed; outlives the graph */
	size_t nnodes;
	dag_node *nodes;            /* nodes[0 .. nsources-1] are the sources,
				     * in the settings' order */
	size_t nsources;
	size_t nedges;
	dag_edge *edges;
	/* What the run of this graph gives its plugins (plugins.h: plg_env):
	 * the settings' rate_limit from dag_build on; the engine sets the
	 * run key, the run library a shard's part directory and capacity
	 * share, before dag_open. One run per graph at a time (the plugin
	 * instances above are that run's); several graphs, several runs. */
	plg_env env;
} dag_graph;

/* Builds and validates the graph. Errors name the settings position. */
int dag_build(const core_settings *s, dag_graph **out, core_err *err);
/* Opens transforms and, when `sinks`, sinks. Without `sinks` the sinks'
 * and the source's options are only checked (validate): nothing is read
 * or written. Undone by dag_close(). */
int dag_open(dag_graph *g, bool sinks, core_err *err);
/* Closes sinks (finishing their files) and transforms. Returns the first
 * sink close error. Safe to call twice. */
int dag_close(dag_graph *g, core_err *err);
void dag_free(dag_graph *g); /* closes if open; NULL allowed */
/* The file (or table) sink node n writes in g's run, as its target()
 * names it, or NULL. */
const char *dag_sink_target(const dag_graph *g, const dag_node *n);
/* What leaves node v (a gate: what enters it), for validate --verbose;
 * NULL: nothing known. */
const plg_contract *dag_producer_contract(const dag_graph *g, int v);
/* Whether sink node `sink` is held: in a pipeline in ELSPETH 0.7.1's
 * format, a sink that the on_error of a transform or an aggregation (or
 * a source's on_validation_failure) names is written at the end of the
 * run, in 0.7.1's order (ADR 0048). */
bool dag_sink_held(const dag_graph *g, int sink);
/* The route of gate node n for key, or NULL. */
const dag_route *dag_gate_route(const dag_node *n, const char *key);

#endif /* ELSPETH_DAG_H */

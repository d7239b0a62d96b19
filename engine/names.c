/*
 * names.c — each sink's fields by their sources' names, for ELSPETH's
 * `headers: original` (docs/adr/0052-display-headers.md).
 *
 * ELSPETH keeps, in the schema contract that travels with the rows, each
 * field's original name: the header a source read it under. A rename
 * (field_mapper's mapping) keeps it, so a sink writing `headers:
 * original` puts the source's header over a renamed field too; a field a
 * transform or an aggregation made has none and keeps its name. Here the
 * same names are worked out once per run, from the graph: a source's
 * fields named as it read them (its `fields` op, inverted), carried along
 * every edge, field_mapper's renames applied, an error route carrying what
 * entered the node that failed, a nested coalesce's rows having none and
 * a select coalesce the selected branch's. A sink fed along several paths
 * takes the first path's name for a field (ELSPETH takes the contract of
 * the first row it writes).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

typedef struct names {
	const dag_graph *g;
	void *src;
	json_t **in, **out; /* per node, built on demand; NULL: not yet */
} names;

static json_t *node_out(names *n, int id);

/* Whether edge ed into a coalesce carries names out of it: not with
 * merge: nested (rows become {branch: {...}}, a branch's name is its
 * own), only the selected branch's with merge: select. */
static bool coalesce_keeps(const dag_node *node, const dag_edge *ed)
{
	const core_coalesce_cfg *cc = node->coalesce;

	if (node->kind != DAG_COALESCE || !cc)
		return true;
	if (cc->merge == CORE_MERGE_NESTED)
		return false;
	if (cc->merge == CORE_MERGE_SELECT)
		return ed->port >= 0 && (size_t)ed->port < cc->nbranches && cc->select_branch &&
		       !strcmp(cc->branches[ed->port], cc->select_branch);
	return true;
}

/* What enters node id: its inputs' names, the first edge's first. */
static json_t *node_in(names *n, int id)
{
	const dag_graph *g = n->g;
	json_t *m;

	if (n->in[id])
		return n->in[id];
	if (!(m = n->in[id] = json_object()))
		return NULL;
	for (size_t e = 0; e < g->nedges; e++) {
		const dag_edge *ed = &g->edges[e];
		json_t *from;
		const char *k;
		json_t *v;

		if (ed->to != id || !coalesce_keeps(&g->nodes[id], ed))
			continue;
		from = ed->divert ? node_in(n, ed->from) : node_out(n, ed->from);
		json_object_foreach(from, k, v)
			if (!json_object_get(m, k))
				json_object_set(m, k, v);
	}
	return m;
}

/* field_mapper's mapping {from: to}, all at once as the transform
 * applies it: a new field `to` carries `from`'s name (or `from` itself,
 * a field the source did not name); a `to` that was there keeps its own
 * (ELSPETH keeps an existing field's contract); a dotted `from` (a
 * nested value) is no field: `to` is new and has none. The `from`s that
 * are no `to` leave. */
static void renames(json_t *m, const core_node *options)
{
	const core_node *map = core_map_get(options, "mapping");
	json_t *before;

	if (!map || map->kind != CORE_NODE_MAP || !(before = json_deep_copy(m)))
		return;
	for (size_t i = 0; i < map->len; i++) {
		const char *from = map->keys[i]->value, *to = map->items[i]->value;
		json_t *orig = json_object_get(before, from);

		if (map->items[i]->kind != CORE_NODE_SCALAR || json_object_get(before, to))
			continue;
		if (!strchr(from, '.'))
			json_object_set_new(m, to, orig ? json_incref(orig) : json_string(from));
	}
	for (size_t i = 0; i < map->len; i++) {
		const char *from = map->keys[i]->value;
		bool target = false;

		for (size_t j = 0; j < map->len && !target; j++)
			target = map->items[j]->kind == CORE_NODE_SCALAR &&
				 !strcmp(map->items[j]->value, from);
		if (!target && json_object_get(before, from))
			json_object_del(m, from);
	}
	json_decref(before);
}

/* What leaves node id. */
static json_t *node_out(names *n, int id)
{
	const dag_node *node = &n->g->nodes[id];
	json_t *m;

	if (n->out[id])
		return n->out[id];
	if (node->kind == DAG_SOURCE) {
		const char *version, *raw;
		json_t *fields = eng__sources_fields(n->g, n->src, (unsigned)id, &version);
		json_t *key;

		if (!(m = json_object())) {
			json_decref(fields);
			return NULL;
		}
		/* {as read: field} turned round, the first name kept */
		json_object_foreach(fields, raw, key)
			if (json_is_string(key) && !json_object_get(m, json_string_value(key)))
				json_object_set_new(m, json_string_value(key), json_string(raw));
		json_decref(fields);
	} else if (node->kind == DAG_AGGREGATION) {
		m = json_object(); /* a batch's rows are new: no source names */
	} else {
		m = json_deep_copy(node_in(n, id));
		if (m && node->kind == DAG_TRANSFORM && node->plugin &&
		    !strcmp(node->plugin, "field_mapper"))
			renames(m, node->options);
	}
	return n->out[id] = m;
}

json_t *eng__original_names(const dag_graph *g, void *src)
{
	names n = { .g = g, .src = src };
	json_t *all = json_object();
	bool any = false;

	n.in = calloc(g->nnodes, sizeof(*n.in));
	n.out = calloc(g->nnodes, sizeof(*n.out));
	for (size_t i = 0; all && n.in && n.out && i < g->nnodes; i++) {
		const dag_node *node = &g->nodes[i];
		const core_node *h = core_map_get(node->options, "headers");
		json_t *m;

		/* only the sinks that ask: the walk reads the sources' fields */
		if (node->kind != DAG_SINK || !node->options || !node->options->path ||
		    !h || h->kind != CORE_NODE_SCALAR || strcmp(h->value, "original"))
			continue;
		if ((m = node_in(&n, (int)i))) {
			json_object_set(all, node->options->path, m);
			any = true;
		}
	}
	for (size_t i = 0; n.in && n.out && i < g->nnodes; i++) {
		json_decref(n.in[i]);
		json_decref(n.out[i]);
	}
	free(n.in);
	free(n.out);
	if (!any) {
		json_decref(all);
		return NULL;
	}
	return all;
}

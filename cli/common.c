/* common.c — loading and printing shared by the subcommands. */
#include <stdarg.h>
#include <stdio.h>

#include "cli/cli.h"

void cli_error(const core_err *err)
{
	fprintf(stderr, "error: %s\n", err->msg);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "elspeth %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'elspeth %s --help')\n", cmd);
	return CLI_USAGE;
}

int cli_load(const char *path, core_settings **s, dag_graph **g)
{
	core_err err = { 0 };

	*s = NULL;
	*g = NULL;
	if (core_settings_load(path, s, &err) || dag_build(*s, g, &err)) {
		cli_error(&err);
		core_settings_free(*s);
		*s = NULL;
		return CLI_ERROR;
	}
	return CLI_OK;
}

static const char *dest_name(const dag_graph *g, int to)
{
	if (to == DAG_DISCARD)
		return "discard";
	if (to == DAG_NONE)
		return "(none)";
	return g->nodes[to].name;
}

void cli_print_pipeline(FILE *f, const dag_graph *g)
{
	const core_settings *s = g->settings;

	fprintf(f, "Source: %s -> %s (invalid rows -> %s)\n", s->source.plugin,
		dest_name(g, g->nodes[0].next), dest_name(g, g->nodes[0].on_error));
	for (size_t i = 0; i < g->nnodes; i++) {
		const dag_node *n = &g->nodes[i];

		if (n->kind == DAG_TRANSFORM) {
			fprintf(f, "Transform: %s [%s] -> %s", n->name, n->plugin,
				dest_name(g, n->next));
			if (n->on_error != DAG_NONE)
				fprintf(f, " (errors -> %s)", dest_name(g, n->on_error));
			fputc('\n', f);
		} else if (n->kind == DAG_GATE) {
			fprintf(f, "Gate: %s if %s:", n->name, dag_expr_source(n->cond));
			for (size_t r = 0; r < n->nroutes; r++)
				fprintf(f, " %s -> %s%s", n->routes[r].key,
					dest_name(g, n->routes[r].to),
					r + 1 < n->nroutes ? "," : "");
			fputc('\n', f);
		}
	}
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK)
			fprintf(f, "Sink: %s [%s]\n", g->nodes[i].name, g->nodes[i].plugin);
	fprintf(f, "Graph: %zu nodes, %zu edges\n", g->nnodes, g->nedges);
}

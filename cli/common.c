/* common.c — loading and printing shared by the subcommands. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run.h"

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

	if (run_load(path, s, g, &err)) {
		cli_error(&err);
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
	if (to == DAG_FORK)
		return "fork";
	return g->nodes[to].name;
}

static void print_gate(FILE *f, const dag_graph *g, const dag_node *n)
{
	fprintf(f, "Gate: %s if %s:", n->name, expr_source(n->cond));
	for (size_t r = 0; r < n->nroutes; r++)
		fprintf(f, " %s -> %s%s", n->routes[r].key,
			dest_name(g, n->routes[r].to.node),
			r + 1 < n->nroutes ? "," : "");
	for (size_t b = 0; b < n->nfork; b++)
		fprintf(f, "%s%s -> %s", b ? ", " : " (fork: ", n->fork_branches[b],
			dest_name(g, n->fork_dest[b].node));
	fputs(n->nfork ? ")\n" : "\n", f);
}

static void print_node(FILE *f, const dag_graph *g, const dag_node *n)
{
	static const char *const policies[] = { "require_all", "quorum", "best_effort", "first" };
	static const char *const merges[] = { "union", "nested", "select" };

	switch (n->kind) {
	case DAG_TRANSFORM:
	case DAG_AGGREGATION:
		fprintf(f, "%s: %s [%s] -> %s",
			n->kind == DAG_TRANSFORM ? "Transform" : "Aggregation",
			n->name, n->plugin, dest_name(g, n->next.node));
		if (n->on_error != DAG_NONE)
			fprintf(f, " (errors -> %s)", dest_name(g, n->on_error));
		fputc('\n', f);
		break;
	case DAG_GATE:
		print_gate(f, g, n);
		break;
	case DAG_COALESCE:
		fprintf(f, "Coalesce: %s (%s, %s) of", n->name,
			policies[n->coalesce->policy], merges[n->coalesce->merge]);
		for (size_t b = 0; b < n->coalesce->nbranches; b++)
			fprintf(f, " %s", n->coalesce->branches[b]);
		fprintf(f, " -> %s\n", dest_name(g, n->next.node));
		break;
	case DAG_SINK:
		fprintf(f, "Sink: %s [%s]", n->name, n->plugin);
		if (n->on_error != DAG_NONE)
			fprintf(f, " (failed writes -> %s)", dest_name(g, n->on_error));
		if (dag_sink_held(g, n->id))
			fputs(" (written at the end of the run, in ELSPETH 0.7.1's order)", f);
		fputc('\n', f);
		break;
	case DAG_QUEUE:
		fprintf(f, "Queue: %s -> %s\n", n->name, dest_name(g, n->next.node));
		break;
	case DAG_SOURCE:
		if (g->nsources == 1)
			fprintf(f, "Source: %s -> %s (invalid rows -> %s)\n", n->plugin,
				dest_name(g, n->next.node), dest_name(g, n->on_error));
		else
			fprintf(f, "Source: %s [%s] -> %s (invalid rows -> %s)\n", n->name,
				n->plugin, dest_name(g, n->next.node),
				dest_name(g, n->on_error));
		break;
	}
}

void cli_print_pipeline(FILE *f, const dag_graph *g)
{
	for (size_t i = 0; i < g->nnodes; i++)
		print_node(f, g, &g->nodes[i]);
	fprintf(f, "Graph: %zu nodes, %zu edges\n", g->nnodes, g->nedges);
}

int cli_bad_option(const char *cmd, int c, int argc, char **argv)
{
	const char *last = optind - 1 < argc ? argv[optind - 1] : "";
	char letter[2] = { (char)optopt, 0 };

	/* A long option is named as written; a short one by its letter,
	 * since inside a cluster optind has not moved past it. */
	if (!strncmp(last, "--", 2) || !optopt || optopt == '?')
		return cli_usage_error(cmd, c == ':' ? "option '%s%s' needs a value" :
				       "bad option '%s%s'", "", last);
	return cli_usage_error(cmd, c == ':' ? "option '%s%s' needs a value" :
			       "bad option '%s%s'", "-", letter);
}

int cli_parse_count(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -1;
	if (errno == ERANGE || v > max)
		return 1;
	if (v < 1)
		return -1;
	*out = v;
	return 0;
}

/* ELSPETH's phase events: phase_started (phase, action, target),
 * phase_completed (phase, duration_seconds), phase_error (on stderr). */
void cli_phase_json(const char *event, const char *phase, const char *action,
		       const char *target, double seconds, const char *error)
{
	json_t *e = json_pack("{s:s,s:s}", "event", event, "phase", phase);

	if (action)
		json_object_set_new(e, "action", json_string(action));
	if (!strcmp(event, "phase_completed"))
		json_object_set_new(e, "duration_seconds", json_real(seconds));
	if (error)
		json_object_set_new(e, "error", json_string(error));
	if (strcmp(event, "phase_completed"))
		json_object_set_new(e, "target", target ? json_string(target) : json_null());
	if (error) {
		char *line = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);

		fprintf(stderr, "%s\n", line ? line : "{\"event\":\"phase_error\"}");
		free(line);
	} else {
		cli_print_json_line(e);
	}
	json_decref(e);
}

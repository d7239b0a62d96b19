/* Tests of graph building and validation (dag/). */
#include <string.h>

#include <criterion/criterion.h>

#include "dag/dag.h"

static const char *head =
	"source:\n"
	"  plugin: csv\n"
	"  on_success: a_in\n"
	"  options: {path: in.csv, on_validation_failure: bad}\n";
static const char *sinks =
	"sinks:\n"
	"  out: {plugin: csv, options: {path: out.csv}}\n"
	"  bad: {plugin: json, options: {path: bad.jsonl}}\n";

static int build(const char *middle, core_settings **s, dag_graph **g, core_err *err)
{
	char text[4096];
	int rc;

	snprintf(text, sizeof(text), "%s%s%s", head, middle, sinks);
	memset(err, 0, sizeof(*err));
	*g = NULL;
	rc = core_settings_parse("g.yaml", text, s, err);
	cr_assert_eq(rc, 0, "settings: %s", err->msg);
	return dag_build(*s, g, err);
}

static void expect_graph_error(const char *middle, int code, const char *needle)
{
	core_settings *s;
	dag_graph *g;
	core_err err;
	int rc = build(middle, &s, &g, &err);

	cr_assert_eq(rc, code, "rc %d: %s", rc, err.msg);
	cr_assert_null(g);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
	core_settings_free(s);
}

Test(graph, linear_pipeline_counts_nodes_and_edges)
{
	core_settings *s;
	dag_graph *g;
	core_err err;

	cr_assert_eq(build("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: g_in, on_error: bad}\n"
			   "gates:\n"
			   "  - {name: g, input: g_in, condition: \"row['x'] == 1\", routes: {'true': out, 'false': bad}}\n",
			   &s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(g->nnodes, 5); /* source, a, g, out, bad */
	cr_assert_eq(g->nedges, 6); /* src->a, src->bad, a->g, a->bad, g->out, g->bad */
	cr_assert_eq(g->nodes[0].next.node, 1);
	cr_assert_eq(g->nodes[1].next.node, 2);
	cr_assert_eq(g->nodes[1].on_error, dag_sink_index(g, "bad"));
	cr_assert_eq(dag_gate_route(&g->nodes[2], "true")->to.node, dag_sink_index(g, "out"));
	dag_free(g);
	core_settings_free(s);
}

Test(graph, unresolved_connection_is_an_error)
{
	expect_graph_error("transforms:\n  - {name: a, plugin: passthrough, input: a_in, on_success: nowhere}\n",
			   CORE_ECONFIG, "'nowhere' is neither a sink nor the input connection");
}

Test(graph, unknown_plugin_lists_available)
{
	expect_graph_error("transforms:\n  - {name: a, plugin: pasthrough, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "unknown transform plugin 'pasthrough'");
}

Test(graph, later_plugin_is_not_supported_yet)
{
	expect_graph_error("transforms:\n  - {name: a, plugin: llm, input: a_in, on_success: out}\n",
			   CORE_EUNSUPPORTED, "not supported yet: transform plugin 'llm'");
}

Test(graph, cycle_is_detected)
{
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: b_in}\n"
			   "  - {name: b, plugin: passthrough, input: b_in, on_success: a_in}\n",
			   CORE_ECONFIG, "cycle");
}

Test(graph, unreachable_node_is_detected)
{
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: out}\n"
			   "  - {name: b, plugin: passthrough, input: b_in, on_success: out}\n",
			   CORE_ECONFIG, "transform 'b' is never reached");
}

Test(graph, duplicate_names_and_inputs)
{
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: b_in}\n"
			   "  - {name: a, plugin: passthrough, input: b_in, on_success: out}\n",
			   CORE_ECONFIG, "node name 'a' is used twice");
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: out}\n"
			   "  - {name: b, plugin: passthrough, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "is the input of both 'a' and 'b'");
}

Test(graph, on_error_must_be_a_sink_or_discard)
{
	expect_graph_error("transforms:\n  - {name: a, plugin: passthrough, input: a_in, on_success: out, on_error: a_in}\n",
			   CORE_ECONFIG, "'a_in' is not a sink nor 'discard'");
}

Test(graph, condition_syntax_error_points_at_column)
{
	expect_graph_error("gates:\n  - {name: g, input: a_in, condition: \"row['x'] ==\", routes: {'true': out}}\n",
			   CORE_EEXPR, "g.yaml:6:");
}

Test(graph, sink_connection_name_clash)
{
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: out}\n"
			   "  - {name: b, plugin: passthrough, input: out, on_success: bad}\n",
			   CORE_ECONFIG, "is both a sink and the input connection");
}

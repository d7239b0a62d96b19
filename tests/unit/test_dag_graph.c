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
	"  out: {plugin: csv, on_write_failure: discard, options: {path: out.csv}}\n"
	"  bad: {plugin: json, on_write_failure: discard, options: {path: bad.jsonl}}\n";

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

/* Index of the sink node named name, or DAG_NONE. */
static int sink_index(const dag_graph *g, const char *name)
{
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_SINK && strcmp(g->nodes[i].name, name) == 0)
			return (int)i;
	return DAG_NONE;
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
	cr_assert_eq(g->nodes[1].on_error, sink_index(g, "bad"));
	cr_assert_eq(dag_gate_route(&g->nodes[2], "true")->to.node, sink_index(g, "out"));
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

/* Plugin options are checked when the graph is opened (validate, run). */
static void expect_open_error(const char *middle, const char *needle)
{
	core_settings *s;
	dag_graph *g;
	core_err err;

	cr_assert_eq(build(middle, &s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(dag_open(g, false, &err), CORE_ECONFIG, "%s", err.msg);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
	dag_close(g, NULL);
	dag_free(g);
	core_settings_free(s);
}

Test(graph, llm_options_are_checked)
{
	expect_open_error("transforms:\n  - {name: a, plugin: llm, input: a_in, on_success: out,\n"
			   "     options: {provider: openai, template: 'x {{ row.a }}'}}\n",
			   "model");
	expect_open_error("transforms:\n  - {name: a, plugin: llm, input: a_in, on_success: out,\n"
			   "     options: {model: m, template: 'x {{ row.a '}}\n",
			   "template line 1, column");
	expect_open_error("transforms:\n  - {name: a, plugin: llm, input: a_in, on_success: out,\n"
			   "     options: {model: m, template: 'x', pool_sise: 3}}\n",
			   "pool_size");
}

Test(graph, cycle_is_detected)
{
	/* a loop the source feeds would give its entry two producers
	 * (below): this one is fed by nothing */
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: out}\n"
			   "  - {name: c, plugin: passthrough, input: c_in, on_success: d_in}\n"
			   "  - {name: d, plugin: passthrough, input: d_in, on_success: c_in}\n",
			   CORE_ECONFIG, "cycle");
}

Test(graph, two_producers_of_a_connection_are_refused)
{
	/* ELSPETH's "Duplicate producer": a loop back to the first input */
	expect_graph_error("transforms:\n"
			   "  - {name: a, plugin: passthrough, input: a_in, on_success: b_in}\n"
			   "  - {name: b, plugin: passthrough, input: b_in, on_success: a_in}\n",
			   CORE_ECONFIG, "Duplicate producer for connection 'a_in': "
			   "source 'source' and transform 'b'");
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
			   CORE_ECONFIG, "Node name 'a' is used by both transform and transform. "
			   "All node names must be unique across transforms, gates, "
			   "aggregations, coalesce nodes, and sinks.");
	/* ELSPETH's one name space takes sinks in too */
	expect_graph_error("transforms:\n"
			   "  - {name: out, plugin: passthrough, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "Node name 'out' is used by both transform and sink.");
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

/* ------------------------------------------------ forks and coalesce */

static const char *fork_gate =
	"gates:\n"
	"  - {name: g, input: a_in, condition: 'True', routes: {'true': fork}, fork_to: [left, right]}\n";

Test(graph, fork_and_coalesce_build)
{
	core_settings *s;
	dag_graph *g;
	core_err err;
	char mid[1024];
	int gate;

	snprintf(mid, sizeof(mid), "%s"
		 "transforms:\n"
		 "  - {name: l, plugin: passthrough, input: left, on_success: l_done}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: {left: l_done, right: right}, on_success: out}\n", fork_gate);
	cr_assert_eq(build(mid, &s, &g, &err), 0, "%s", err.msg);
	gate = 2; /* source, l, g */
	cr_assert_eq(g->nodes[gate].kind, DAG_GATE);
	cr_assert_eq(g->nodes[gate].nfork, 2);
	cr_assert_eq(g->nodes[gate].routes[0].to.node, DAG_FORK);
	cr_assert_eq(g->nodes[gate].fork_dest[0].node, 1);          /* left -> l */
	cr_assert_eq(g->nodes[g->nodes[gate].fork_dest[1].node].kind, DAG_COALESCE);
	cr_assert_eq(g->nodes[gate].fork_dest[1].port, 1);          /* right -> j port 1 */
	dag_free(g);
	core_settings_free(s);
}

/* ELSPETH 0.4.1: a coalesce or an aggregation without on_success sends
 * its rows to the connection named after it. */
Test(graph, coalesce_without_on_success_feeds_the_connection_of_its_name)
{
	core_settings *s;
	dag_graph *g;
	core_err err;
	char mid[1024];

	snprintf(mid, sizeof(mid), "%s"
		 "transforms:\n"
		 "  - {name: after, plugin: passthrough, input: j, on_success: out}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: [left, right]}\n", fork_gate);
	cr_assert_eq(build(mid, &s, &g, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].kind == DAG_COALESCE)
			cr_assert_str_eq(g->nodes[g->nodes[i].next.node].name, "after");
	dag_free(g);
	core_settings_free(s);
}

Test(graph, aggregation_without_on_success_feeds_the_connection_of_its_name)
{
	expect_graph_error("aggregations:\n"
			   "  - {name: stats, plugin: batch_stats, input: a_in, trigger: {count: 2},\n"
			   "     options: {value_field: x}}\n",
			   CORE_ECONFIG, "'stats' is neither a sink nor the input connection");
}

Test(graph, coalesce_branch_must_be_forked)
{
	expect_graph_error("transforms:\n  - {name: t, plugin: passthrough, input: a_in, on_success: x}\n"
			   "coalesce:\n  - {name: j, branches: [x, y], on_success: out}\n",
			   CORE_ECONFIG, "branch 'x' is not in any gate's fork_to");
}

Test(graph, coalesce_that_can_never_receive_a_branch)
{
	char mid[1024];

	/* Both coalesce inputs are fed from branch left; branch right ends
	 * in a sink, so the coalesce could never see branch left's input
	 * l_done nor a token of branch right. */
	snprintf(mid, sizeof(mid), "%s"
		 "transforms:\n"
		 "  - {name: l, plugin: passthrough, input: left, on_success: r_in}\n"
		 "  - {name: r, plugin: passthrough, input: r_in, on_success: r_done}\n"
		 "  - {name: rr, plugin: passthrough, input: right, on_success: out}\n"
		 "  - {name: unused, plugin: passthrough, input: other, on_success: l_done}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: {left: l_done, right: r_done}, on_success: out}\n", fork_gate);
	expect_graph_error(mid, CORE_ECONFIG, "never reached");
	snprintf(mid, sizeof(mid), "%s"
		 "transforms:\n"
		 "  - {name: l, plugin: passthrough, input: left, on_success: l_done}\n"
		 "  - {name: rr, plugin: passthrough, input: right, on_success: out}\n"
		 "  - {name: r, plugin: passthrough, input: r_in, on_success: r_done}\n"
		 "gates:\n"
		 "  - {name: g, input: a_in, condition: 'True', routes: {'true': fork}, fork_to: [left, right]}\n"
		 "  - {name: g2, input: l_done, condition: 'True', routes: {'true': j_left, 'false': r_in}}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: {left: j_left, right: r_done}, on_success: out}\n", "");
	expect_graph_error(mid, CORE_ECONFIG, "coalesce 'j' can never receive branch 'right'");
}

Test(graph, reserved_and_long_names)
{
	expect_graph_error("transforms:\n  - {name: fork, plugin: passthrough, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "name 'fork' is reserved");
	expect_graph_error("transforms:\n  - {name: __x, plugin: passthrough, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "names starting with '__' are reserved");
	expect_graph_error("transforms:\n  - {name: a_name_that_is_much_longer_than_38_characters, plugin: passthrough,"
			   " input: a_in, on_success: out}\n", CORE_ECONFIG, "longer than 38 characters");
}

Test(graph, aggregation_plugin_and_trigger_checked)
{
	expect_graph_error("aggregations:\n  - {name: s, plugin: batch_sum, input: a_in, on_success: out}\n",
			   CORE_ECONFIG, "unknown aggregation plugin 'batch_sum'");
	expect_graph_error("aggregations:\n  - {name: s, plugin: batch_stats, input: a_in, on_success: out,"
			   " trigger: {condition: \"row['batch_count'] >\"}, options: {value_field: v}}\n",
			   CORE_EEXPR, "invalid trigger condition");
}

Test(graph, write_failure_cannot_divert_to_itself)
{
	core_settings *s;
	dag_graph *g = NULL;
	core_err err;

	cr_assert_eq(core_settings_parse("w.yaml",
		"source: {plugin: csv, on_success: out, options: {path: x.csv, on_validation_failure: discard}}\n"
		"sinks:\n  out: {plugin: csv, on_write_failure: out, options: {path: o.csv}}\n", &s, &err), 0, "%s", err.msg);
	cr_assert_neq(dag_build(s, &g, &err), 0);
	cr_assert(strstr(err.msg, "cannot divert its failed writes to itself"), "%s", err.msg);
	core_settings_free(s);
}

Test(graph, coalesced_branch_must_stay_one_token)
{
	char mid[1024];

	snprintf(mid, sizeof(mid), "%s"
		 "transforms:\n"
		 "  - {name: x, plugin: json_explode, input: left, on_success: l_done, options: {array_field: v}}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: {left: l_done, right: right}, on_success: out}\n", fork_gate);
	expect_graph_error(mid, CORE_ECONFIG, "passes through expanding transform 'x'");
	snprintf(mid, sizeof(mid), "%s"
		 "aggregations:\n"
		 "  - {name: s, plugin: batch_replicate, input: left, on_success: l_done}\n"
		 "coalesce:\n"
		 "  - {name: j, branches: {left: l_done, right: right}, on_success: out}\n", fork_gate);
	expect_graph_error(mid, CORE_ECONFIG, "passes through aggregation 's'");
}

/* ------------------------------------------ ELSPETH 0.7.1: sources, queues */

#define TWO_SOURCES "sources:\n" \
	"  orders: {plugin: csv, on_success: %s, options: {path: o.csv, on_validation_failure: discard}}\n" \
	"  refunds: {plugin: csv, on_success: %s, options: {path: r.csv, on_validation_failure: bad}}\n"

static int build_v07(const char *to, const char *middle, core_settings **s,
		     dag_graph **g, core_err *err)
{
	char text[4096];
	int n = snprintf(text, sizeof(text), TWO_SOURCES, to, to);

	snprintf(text + n, sizeof(text) - (size_t)n, "%s%s", middle, sinks);
	memset(err, 0, sizeof(*err));
	*g = NULL;
	cr_assert_eq(core_settings_parse("q.yaml", text, s, err), 0, "settings: %s", err->msg);
	return dag_build(*s, g, err);
}

static void expect_v07_error(const char *to, const char *middle, const char *needle)
{
	core_settings *s;
	dag_graph *g;
	core_err err;

	cr_assert_eq(build_v07(to, middle, &s, &g, &err), CORE_ECONFIG, "%s", err.msg);
	cr_assert(strstr(err.msg, needle), "message '%s' lacks '%s'", err.msg, needle);
	core_settings_free(s);
}

Test(graph, sources_feed_a_queue_that_feeds_one_node)
{
	core_settings *s;
	dag_graph *g;
	core_err err;

	cr_assert_eq(build_v07("inbound", "queues: {inbound: {}}\n"
			       "transforms:\n"
			       "  - {name: t, plugin: passthrough, input: inbound, on_success: out, on_error: discard}\n",
			       &s, &g, &err), 0, "%s", err.msg);
	cr_assert_eq(g->nsources, 2);
	cr_assert_eq(g->nodes[0].kind, DAG_SOURCE);
	cr_assert_str_eq(g->nodes[0].name, "orders");
	cr_assert_str_eq(g->nodes[1].name, "refunds");
	cr_assert_eq(g->nodes[2].kind, DAG_TRANSFORM);
	cr_assert_eq(g->nodes[3].kind, DAG_QUEUE);
	/* both sources go to the queue, the queue to the transform */
	cr_assert_eq(g->nodes[0].next.node, 3);
	cr_assert_eq(g->nodes[1].next.node, 3);
	cr_assert_eq(g->nodes[3].next.node, 2);
	cr_assert_eq(g->nodes[1].on_error, sink_index(g, "bad"));
	cr_assert_eq(g->nodes[0].on_error, DAG_DISCARD);
	dag_free(g);
	core_settings_free(s);
	/* sinks take several producers directly */
	cr_assert_eq(build_v07("out", "", &s, &g, &err), 0, "%s", err.msg);
	dag_free(g);
	core_settings_free(s);
}

Test(graph, fan_in_needs_a_queue)
{
	expect_v07_error("merged", "transforms:\n"
			 "  - {name: t, plugin: passthrough, input: merged, on_success: out, on_error: discard}\n",
			 "Duplicate producer for connection 'merged': source 'orders' and "
			 "source 'refunds'. Route multiple producers through an explicit "
			 "queue node (queues: {merged: {}})");
	expect_v07_error("inbound", "queues: {inbound: {}}\n",
			 "queue 'inbound' has no downstream consumer");
	expect_v07_error("out", "queues: {spare: {}}\n"
			 "transforms:\n"
			 "  - {name: t, plugin: passthrough, input: spare, on_success: out, on_error: discard}\n",
			 "Queue 'spare' has no upstream producers");
	/* one name space over sources, queues and the rest */
	expect_v07_error("inbound", "queues: {inbound: {}}\n"
			 "transforms:\n"
			 "  - {name: orders, plugin: passthrough, input: inbound, on_success: out, on_error: discard}\n",
			 "Node name 'orders' is used by both source and transform");
}

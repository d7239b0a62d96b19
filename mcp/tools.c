/*
 * tools.c — the tools: ELSPETH 0.4.1's names, arguments (types, defaults,
 * choices) and input schemas (its mcp/server.py _TOOLS), the validation of
 * a call's arguments, and the dispatch to the handlers (t_*.c, query.c).
 * The descriptions are ours.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"

#define STR_(x) #x
#define XSTR(x) STR_(x)

typedef enum arg_type {
	ARG_STR,      /* required string */
	ARG_OPT_STR,  /* string or null, default null */
	ARG_STR_DEF,  /* string with a default (null refused) */
	ARG_INT,      /* integer with a default */
	ARG_OBJECT    /* object or null, default null */
} arg_type;

typedef struct tool_arg {
	const char *name;
	arg_type type;
	const char *desc;
	const char *def_str;
	long long def_int;
	const char *const *choices; /* NULL-terminated, for the schema */
} tool_arg;

typedef struct tool {
	const char *name;
	const char *desc;
	tool_arg args[5]; /* ended by a NULL name */
	mcp__tool_fn fn;
	bool no_trail;    /* works without an audit trail (t_compose.c) */
} tool;

static const char *const run_statuses[] = { "running", "completed", "failed", "interrupted", NULL };
static const char *const state_statuses[] = { "open", "pending", "completed", "failed", NULL };
static const char *const op_types[] = { "source_load", "sink_write", NULL };
static const char *const op_statuses[] = { "open", "completed", "failed", "pending", NULL };
static const char *const error_types[] = { "all", "validation", "transform", NULL };
static const char *const plugin_types[] = { "source", "transform", "sink", NULL };

#define RUN_ID(what) { "run_id", ARG_STR, what, NULL, 0, NULL }
#define LIMIT(n, what) { "limit", ARG_INT, what, NULL, n, NULL }
#define SETTINGS_ARGS \
	{ "settings_yaml", ARG_OPT_STR, "The settings as YAML text", NULL, 0, NULL }, \
	{ "settings_path", ARG_OPT_STR, "... or a settings file, relative to the root", NULL, 0, NULL }
#define JOB_ID { "run_id", ARG_STR, "The run_id run_pipeline gave", NULL, 0, NULL }

static const tool tools[] = {
	{ "list_runs", "The runs in the audit trail, newest first, with status, "
	  "start and end times and config hash; optionally only those with one status.",
	  { LIMIT(50, "How many runs at most (default 50)"),
	    { "status", ARG_OPT_STR, "Only runs with this status", NULL, 0, run_statuses } },
	  mcp__list_runs },
	{ "get_run", "One run's record: times, status, settings (JSON), config hash, "
	  "canonical hashing version, reproducibility grade, export fields. null when "
	  "there is no such run.",
	  { RUN_ID("The run's id") }, mcp__get_run },
	{ "get_run_summary", "A run's figures: rows, tokens, nodes, node states, "
	  "operations, validation and transform errors, outcomes by kind, duration and "
	  "mean node-state time.",
	  { RUN_ID("The run to sum up") }, mcp__get_run_summary },
	{ "list_nodes", "A run's nodes (source, transforms, gates, coalesces, "
	  "aggregations, sinks) with plugin, configuration and schema, in pipeline order.",
	  { RUN_ID("The run") }, mcp__list_nodes },
	{ "list_rows", "A run's source rows in source order, with their data hashes; "
	  "paged with limit and offset.",
	  { RUN_ID("The run"), LIMIT(100, "How many rows at most (default 100)"),
	    { "offset", ARG_INT, "How many rows to skip first (default 0)", NULL, 0, NULL } },
	  mcp__list_rows },
	{ "list_tokens", "A run's tokens (a row's instances on the DAG's paths: forks, "
	  "coalesces, expansions), or one row's.",
	  { RUN_ID("The run"),
	    { "row_id", ARG_OPT_STR, "Only this row's tokens", NULL, 0, NULL },
	    LIMIT(100, "How many tokens at most (default 100)") },
	  mcp__list_tokens },
	{ "list_operations", "A run's source loads and sink writes (operations), newest "
	  "first, with plugin, status, duration and error.",
	  { RUN_ID("The run"),
	    { "operation_type", ARG_OPT_STR, "Only operations of this type", NULL, 0, op_types },
	    { "status", ARG_OPT_STR, "Only operations with this status", NULL, 0, op_statuses },
	    LIMIT(100, "How many operations at most (default 100)") },
	  mcp__list_operations },
	{ "get_operation_calls", "The external calls made during one source load or "
	  "sink write.",
	  { { "operation_id", ARG_STR, "The operation's id", NULL, 0, NULL } },
	  mcp__get_operation_calls },
	{ "explain_token", "The whole story of one token: its source row, every node "
	  "state, routing decision and external call, its parents, errors and final "
	  "outcome, and where it was diverted. Give token_id, or row_id (and sink when "
	  "the row reached several sinks).",
	  { RUN_ID("The run"),
	    { "token_id", ARG_OPT_STR, "The token (the precise choice when rows fork)", NULL, 0, NULL },
	    { "row_id", ARG_OPT_STR, "... or the source row", NULL, 0, NULL },
	    { "sink", ARG_OPT_STR, "With row_id: the sink whose token to explain", NULL, 0, NULL } },
	  mcp__explain_token },
	{ "get_errors", "A run's validation errors (rows the source refused) and/or "
	  "transform errors, newest first, with the row data and error details.",
	  { RUN_ID("The run"),
	    { "error_type", ARG_STR_DEF, "Which errors", "all", 0, error_types },
	    LIMIT(100, "How many errors of each kind at most (default 100)") },
	  mcp__get_errors },
	{ "get_node_states", "A run's node states (one per token per node per attempt) "
	  "with status, hashes and duration; optionally one node's or one status'.",
	  { RUN_ID("The run"),
	    { "node_id", ARG_OPT_STR, "Only this node's states", NULL, 0, NULL },
	    { "status", ARG_OPT_STR, "Only states with this status", NULL, 0, state_statuses },
	    LIMIT(100, "How many states at most (default 100)") },
	  mcp__get_node_states },
	{ "get_calls", "The external calls (LLM, HTTP) made by one node state, with "
	  "status, latency, request and response hashes and error.",
	  { { "state_id", ARG_STR, "The node state's id", NULL, 0, NULL } },
	  mcp__get_calls },
	{ "query", "Runs one read-only SQL statement (SQLite) over the audit trail and "
	  "returns its rows as objects. The trail is opened read-only and any statement "
	  "that would write is refused; at most " XSTR(MCP_QUERY_MAX_ROWS) " rows, at most "
	  XSTR(MCP_QUERY_TIMEOUT_MS) " ms. Use "
	  "describe_schema to learn the tables.",
	  { { "sql", ARG_STR, "One SQL statement that reads (SELECT, WITH, PRAGMA table_info, ...)", NULL, 0, NULL },
	    { "params", ARG_OBJECT, "Values for named parameters (:name) in the SQL", NULL, 0, NULL } },
	  mcp__query },
	{ "get_dag_structure", "A run's graph: nodes, edges (label, mode, normal or "
	  "divert), which node feeds which sink, and a Mermaid diagram.",
	  { RUN_ID("The run") }, mcp__get_dag_structure },
	{ "get_performance_report", "Time spent per node in a run: executions, mean, "
	  "min, max, total, share of the total, failures; the bottlenecks (over 20 %) "
	  "and nodes whose slowest state took over 5 times their mean.",
	  { RUN_ID("The run") }, mcp__get_performance_report },
	{ "get_error_analysis", "A run's errors grouped: validation errors by source "
	  "plugin and schema mode, transform errors by plugin, with samples.",
	  { RUN_ID("The run") }, mcp__get_error_analysis },
	{ "get_llm_usage_report", "A run's external calls by type, and its LLM calls "
	  "by plugin: counts, successes, failures, latencies.",
	  { RUN_ID("The run") }, mcp__get_llm_usage_report },
	{ "describe_schema", "The audit trail's tables: columns with types and "
	  "nullability, primary and foreign keys (for the query tool).",
	  { { NULL } }, mcp__describe_schema },
	{ "get_outcome_analysis", "A run's token outcomes: terminal and non-terminal "
	  "counts by outcome, forks and joins, tokens per sink.",
	  { RUN_ID("The run") }, mcp__get_outcome_analysis },
	{ "diagnose", "What is wrong right now: failed runs, runs and operations stuck "
	  "for over an hour, completed runs with many validation errors, rows "
	  "quarantined in the last 24 hours; with the latest runs and what to do next.",
	  { { NULL } }, mcp__diagnose },
	{ "get_failure_context", "Why a run failed: its failed node states, transform "
	  "and validation errors (newest first), and the patterns among them.",
	  { RUN_ID("The run"), LIMIT(10, "How many failures of each kind at most") },
	  mcp__get_failure_context },
	{ "get_recent_activity", "The runs started in the last N minutes with status, "
	  "duration, rows and node executions.",
	  { { "minutes", ARG_INT, "How far back to look, in minutes", NULL, 60, NULL } },
	  mcp__get_recent_activity },
	/* composing and running pipelines (ours; the catalog tools as
	 * ELSPETH's web composer names them) */
	{ "list_sources", "The source plugins: name, description and options (each "
	  "with type, required, description, default).",
	  { { NULL } }, mcp__list_sources, true },
	{ "list_transforms", "The transform plugins (aggregations too): name, "
	  "description and options.",
	  { { NULL } }, mcp__list_transforms, true },
	{ "list_sinks", "The sink plugins: name, description and options.",
	  { { NULL } }, mcp__list_sinks, true },
	{ "get_plugin_schema", "One plugin's options as a JSON Schema (what its "
	  "options: block may hold; a key it does not list is refused).",
	  { { "plugin_type", ARG_STR, "Plugin type", NULL, 0, plugin_types },
	    { "name", ARG_STR, "Plugin name (e.g. 'csv')", NULL, 0, NULL } },
	  mcp__get_plugin_schema, true },
	{ "validate_settings", "Checks pipeline settings as elspeth validate does "
	  "(keys, types, plugins and their options, wiring, expressions, schema "
	  "contracts): ELSPETH's ValidationResult, the error naming file, line, "
	  "column and key. Give settings_yaml (the text) or settings_path (a file "
	  "under the root).",
	  { SETTINGS_ARGS },
	  mcp__validate_settings, true },
	{ "run_pipeline", "Validates pipeline settings and, if they pass, runs them "
	  "in the background under the server's root (elspeth mcp --root DIR; every "
	  "file they name must stay under it): its run_id, or the validation that "
	  "failed. Posted text is kept in the root as mcp-RUNID.yaml. Follow it with "
	  "get_pipeline_run.",
	  { SETTINGS_ARGS },
	  mcp__run_pipeline, true },
	{ "get_pipeline_run", "A run started with run_pipeline: status (running, "
	  "completed, failed, interrupted, cancelled), rows processed and failed, "
	  "its Landscape run id, exit code and last error.",
	  { JOB_ID },
	  mcp__get_pipeline_run, true },
	{ "cancel_pipeline_run", "Stops a run started with run_pipeline as ^C does "
	  "(checkpointed: elspeth resume continues it); its status after.",
	  { JOB_ID },
	  mcp__cancel_pipeline_run, true },
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static const tool *find(const char *name)
{
	for (size_t i = 0; name && i < NTOOLS; i++)
		if (!strcmp(tools[i].name, name))
			return &tools[i];
	return NULL;
}

/* ---------------------------------------------------------- tools/list */

static json_t *choices_json(const char *const *c)
{
	json_t *a = json_array();

	for (; a && *c; c++)
		json_array_append_new(a, json_string(*c));
	return a;
}

static json_t *arg_schema(const tool_arg *g)
{
	bool is_int = g->type == ARG_INT, is_obj = g->type == ARG_OBJECT;
	json_t *p = json_pack("{s:s, s:s}", "type",
			      is_int ? "integer" : is_obj ? "object" : "string",
			      "description", g->desc);

	if (p && g->choices)
		json_object_set_new(p, "enum", choices_json(g->choices));
	if (p && is_int)
		json_object_set_new(p, "default", json_integer(g->def_int));
	if (p && g->type == ARG_STR_DEF)
		json_object_set_new(p, "default", json_string(g->def_str));
	return p;
}

static json_t *input_schema(const tool *t)
{
	json_t *props = json_object(), *req = json_array();
	json_t *schema = json_object();

	for (const tool_arg *g = t->args; g->name; g++) {
		json_object_set_new(props, g->name, arg_schema(g));
		if (g->type == ARG_STR)
			json_array_append_new(req, json_string(g->name));
	}
	json_object_set_new(schema, "type", json_string("object"));
	json_object_set_new(schema, "properties", props);
	if (json_array_size(req))
		json_object_set_new(schema, "required", req);
	else
		json_decref(req);
	return schema;
}

json_t *mcp_tools_list(void)
{
	json_t *list = json_array();

	for (size_t i = 0; list && i < NTOOLS; i++) {
		json_t *t = json_pack("{s:s, s:s, s:o}", "name", tools[i].name,
				      "description", tools[i].desc,
				      "inputSchema", input_schema(&tools[i]));

		if (!t || json_array_append_new(list, t)) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

/* ---------------------------------------------------------- arguments */

static int bad_arg(core_err *err, const char *tool_name, const char *arg,
		   const char *want, const json_t *v)
{
	return core_err_set(err, CORE_EDATA,
			    "Invalid arguments: '%s': '%s' must be %s, got %s",
			    tool_name, arg, want, core_py_type(v));
}

/* A JSON number as an integer: integral reals count (JSON does not tell
 * 50 from 50.0), booleans do not. */
static bool as_int(const json_t *v, long long *out)
{
	double d;

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	if (!(d >= -9.2e18 && d <= 9.2e18) || d != (double)(long long)d)
		return false; /* range first: the conversion is undefined outside */
	*out = (long long)d;
	return true;
}

static int check_arg(const tool *t, const tool_arg *g, const json_t *v,
		     json_t *a, core_err *err)
{
	long long i;

	switch (g->type) {
	case ARG_STR:
		if (!v)
			return core_err_set(err, CORE_EDATA,
					    "Invalid arguments: '%s' requires '%s'",
					    t->name, g->name);
		if (!json_is_string(v))
			return bad_arg(err, t->name, g->name, "string", v);
		return mcp__set(a, g->name, json_copy((json_t *)v), err);
	case ARG_OPT_STR:
		if (v && !json_is_null(v) && !json_is_string(v))
			return bad_arg(err, t->name, g->name, "string or null", v);
		return mcp__set(a, g->name, v ? json_copy((json_t *)v) : json_null(), err);
	case ARG_STR_DEF:
		if (v && !json_is_string(v))
			return bad_arg(err, t->name, g->name, "string", v);
		return mcp__set(a, g->name, v ? json_copy((json_t *)v)
					     : json_string(g->def_str), err);
	case ARG_INT:
		i = g->def_int;
		if (v && !as_int(v, &i))
			return bad_arg(err, t->name, g->name, "integer", v);
		return mcp__set(a, g->name, json_integer(i), err);
	case ARG_OBJECT:
		if (v && !json_is_null(v) && !json_is_object(v))
			return bad_arg(err, t->name, g->name, "object or null", v);
		return mcp__set(a, g->name, v ? json_copy((json_t *)v) : json_null(), err);
	}
	return core_err_set(err, CORE_EINTERNAL, "argument type %d", (int)g->type);
}

/* ELSPETH's _validate_tool_args: the declared arguments, checked, with
 * their defaults; undeclared ones are ignored. */
static int validate(const tool *t, const json_t *args, json_t **out,
		    core_err *err)
{
	json_t *a = json_object();
	int rc = a ? 0 : mcp__oom(err);

	for (const tool_arg *g = t->args; !rc && g->name; g++)
		rc = check_arg(t, g, json_object_get(args, g->name), a, err);
	if (rc) {
		json_decref(a);
		a = NULL;
	}
	*out = a;
	return rc;
}

int mcp_call(mcp_server *s, const char *name, const json_t *args,
	     mcp_result *r, core_err *err)
{
	const tool *t = find(name);
	mcp_result res = { 0 };
	json_t *a;
	int rc;

	if (!t)
		return core_err_set(err, CORE_ENOTFOUND, "Unknown tool: %s",
				    name ? name : "(none)");
	if (args && !json_is_object(args))
		return core_err_set(err, CORE_EDATA,
				    "Invalid arguments: '%s': the arguments must be "
				    "an object, got %s", name, core_py_type(args));
	if (!s->db && !t->no_trail)
		return core_err_set(err, CORE_EDATA, "no audit trail at %s yet: it is read "
				    "when elspeth mcp starts; start it again after a run", s->shown);
	if ((rc = validate(t, args, &a, err)))
		return rc;
	rc = t->fn(s, a, &res, err);
	json_decref(a);
	if (rc) {
		mcp_result_release(&res);
		return rc;
	}
	*r = res;
	return 0;
}

void mcp_result_release(mcp_result *r)
{
	json_decref(r->value);
	free(r->note);
	r->value = NULL;
	r->note = NULL;
}

/* ------------------------------------------------ shared by the tools */

const char *mcp__arg_str(const json_t *a, const char *name)
{
	return json_string_value(json_object_get(a, name));
}

long long mcp__arg_int(const json_t *a, const char *name)
{
	return json_integer_value(json_object_get(a, name));
}

int mcp__run(mcp_server *s, const char *run_id, json_t **out, core_err *err)
{
	return mcp__row(s, out, err, "SELECT * FROM runs WHERE run_id = ?", "s", run_id);
}

int mcp__run_or_answer(mcp_server *s, const char *run_id, mcp_result *r,
		       json_t **out, core_err *err)
{
	int rc = mcp__run(s, run_id, out, err);

	if (rc || *out)
		return rc;
	return mcp__answer_error(r, err, "Run '%s' not found", run_id);
}

int mcp__answer_error(mcp_result *r, core_err *err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	msg[core_utf8_check(msg, strlen(msg))] = '\0'; /* as error_reply's */
	r->value = json_pack("{s:s}", "error", msg);
	return r->value ? 0 : mcp__oom(err);
}

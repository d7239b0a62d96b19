/* test_mcp_rpc.c — the protocol (mcp/rpc.c, mcp/serve.c): JSON-RPC 2.0
 * framing and errors, the MCP lifecycle and version negotiation,
 * tools/list and its input schemas, tools/call results and tool errors,
 * and the stdio loop. */
#include "test_mcp_util.h"

TestSuite(mcp_rpc, .timeout = 30);

/* Sends one line; the parsed reply, or NULL when none came. */
static json_t *rpc(mcp_server *s, const char *line)
{
	char *out = NULL;
	json_t *r = NULL;

	cr_assert_eq(mcp_handle(s, line, strlen(line), &out), 0);
	if (out) {
		cr_assert_null(strchr(out, '\n'), "a reply is one line: %s", out);
		r = tmu_json(out);
		cr_assert_str_eq(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
		free(out);
	}
	return r;
}

static mcp_server *ready(void)
{
	mcp_server *s = tmu_open(NULL);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
			"\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
			"\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}");

	cr_assert_not_null(json_object_get(r, "result"));
	json_decref(r);
	cr_assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	return s;
}

static long long code(const json_t *r)
{
	return json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static const char *message(const json_t *r)
{
	return json_string_value(json_object_get(json_object_get(r, "error"), "message"));
}

static const char *result_version(const json_t *r)
{
	return json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion"));
}

Test(mcp_rpc, initialize_answers_the_clients_version_when_we_speak_it)
{
	for (const char *const *v = mcp_protocol_versions; *v; v++) {
		mcp_server *s = tmu_open(NULL);
		char line[256];
		json_t *r, *res;

		snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":"
			 "\"initialize\",\"params\":{\"protocolVersion\":\"%s\"}}", *v);
		r = rpc(s, line);
		res = json_object_get(r, "result");
		cr_expect_str_eq(json_string_value(json_object_get(r, "id")), "a");
		cr_expect_str_eq(result_version(r), *v);
		cr_expect(json_is_false(json_object_get(json_object_get(json_object_get(res,
			"capabilities"), "tools"), "listChanged")));
		cr_expect_str_eq(json_string_value(json_object_get(json_object_get(res,
			"serverInfo"), "name")), "elspeth-landscape");
		/* instructions are a 2025-03-26 field */
		cr_expect_eq(json_object_get(res, "instructions") != NULL,
			     strcmp(*v, "2025-03-26") >= 0, "%s", *v);
		json_decref(r);
		mcp_free(s);
	}
}

Test(mcp_rpc, initialize_offers_our_latest_for_a_version_we_do_not_know)
{
	mcp_server *s = tmu_open(NULL);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
			"\"params\":{\"protocolVersion\":\"2099-01-01\"}}");

	cr_expect_str_eq(result_version(r), "2025-11-25");
	json_decref(r);
	/* once only */
	r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
	cr_expect_eq(code(r), -32600);
	json_decref(r);
	mcp_free(s);
}

Test(mcp_rpc, initialize_without_a_version_is_invalid_params)
{
	mcp_server *s = tmu_open(NULL);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");

	cr_expect_eq(code(r), -32602);
	cr_expect(strstr(message(r), "protocolVersion"));
	json_decref(r);
	mcp_free(s);
}

Test(mcp_rpc, only_ping_and_initialize_before_initialize)
{
	mcp_server *s = tmu_open(NULL);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");

	cr_expect_eq(code(r), -32002);
	cr_expect_eq(json_integer_value(json_object_get(r, "id")), 7);
	json_decref(r);
	r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}");
	cr_expect(json_is_object(json_object_get(r, "result")));
	cr_expect_eq(json_object_size(json_object_get(r, "result")), 0);
	json_decref(r);
	mcp_free(s);
}

Test(mcp_rpc, notifications_and_responses_get_no_reply)
{
	mcp_server *s = ready();

	cr_expect_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
			   "\"params\":{\"requestId\":3}}"));
	cr_expect_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
	cr_expect_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
	mcp_free(s);
}

Test(mcp_rpc, protocol_errors_have_their_codes)
{
	static const struct {
		const char *line;
		int code;
		bool null_id;
	} cases[] = {
		{ "{not json", -32700, true },
		{ "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, true },
		{ "42", -32600, true },
		{ "{\"id\":1,\"method\":\"ping\"}", -32600, false },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", -32600, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", -32600, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}", -32601, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":[1]}", -32602, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}", -32602, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		  "{\"name\":\"no_such_tool\"}}", -32602, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
		  "{\"name\":\"list_runs\",\"arguments\":[]}}", -32602, false },
	};
	mcp_server *s = ready();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *r = rpc(s, cases[i].line);

		cr_assert_not_null(r, "%s", cases[i].line);
		cr_expect_eq(code(r), cases[i].code, "%s: %s", cases[i].line, message(r));
		cr_expect(message(r) && *message(r), "%s", cases[i].line);
		if (cases[i].null_id)
			cr_expect(json_is_null(json_object_get(r, "id")), "%s", cases[i].line);
		else
			cr_expect_eq(json_integer_value(json_object_get(r, "id")), 1, "%s",
				     cases[i].line);
		json_decref(r);
	}
	mcp_free(s);
}

Test(mcp_rpc, unknown_tool_is_named)
{
	mcp_server *s = ready();
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			"{\"name\":\"drop_everything\"}}");

	cr_expect_str_eq(message(r), "Unknown tool: drop_everything");
	json_decref(r);
	mcp_free(s);
}

/* A long name of multi-byte characters: the error message is cut short,
 * and must still be whole UTF-8 (it used to end the server). */
Test(mcp_rpc, a_long_multibyte_name_gets_an_answer)
{
	mcp_server *s = ready();
	char line[4096];
	size_t n = 0;
	json_t *r;

	n += (size_t)snprintf(line, sizeof(line),
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"");
	for (int i = 0; i < 700; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "\xc3\xa9");
	snprintf(line + n, sizeof(line) - n, "\"}}");
	r = rpc(s, line);
	cr_assert_not_null(r);
	cr_expect_eq(code(r), -32602);
	cr_expect_not_null(strstr(message(r), "Unknown tool: \xc3\xa9"));
	json_decref(r);
	mcp_free(s);
}

static json_t *tool_schema(const json_t *tools, const char *name)
{
	const json_t *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (!strcmp(json_string_value(json_object_get(t, "name")), name))
			return json_object_get(t, "inputSchema");
	cr_assert_fail("no tool %s", name);
	return NULL;
}

Test(mcp_rpc, tools_list_has_elspeths_tools_and_arguments)
{
	static const char *const names[] = {
		"list_runs", "get_run", "get_run_summary", "list_nodes", "list_rows",
		"list_tokens", "list_operations", "get_operation_calls", "explain_token",
		"get_errors", "get_node_states", "get_calls", "query", "get_dag_structure",
		"get_performance_report", "get_error_analysis", "get_llm_usage_report",
		"describe_schema", "get_outcome_analysis", "diagnose", "get_failure_context",
		"get_recent_activity",
		/* the composer's (t_compose.c) */
		"list_sources", "list_transforms", "list_sinks", "get_plugin_schema",
		"validate_settings", "run_pipeline", "get_pipeline_run", "cancel_pipeline_run"
	};
	mcp_server *s = ready();
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{}}");
	json_t *tools = json_object_get(json_object_get(r, "result"), "tools"), *t, *p;
	size_t i;

	cr_assert_eq(json_array_size(tools), sizeof(names) / sizeof(names[0]));
	json_array_foreach(tools, i, t) {
		cr_expect_str_eq(json_string_value(json_object_get(t, "name")), names[i]);
		cr_expect_gt(strlen(json_string_value(json_object_get(t, "description"))), 20);
		cr_expect_str_eq(json_string_value(json_object_get(json_object_get(t,
			"inputSchema"), "type")), "object");
	}
	p = json_object_get(tool_schema(tools, "list_runs"), "properties");
	cr_expect_str_eq(json_string_value(json_object_get(json_object_get(p, "limit"), "type")), "integer");
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(p, "limit"), "default")), 50);
	cr_expect_eq(json_array_size(json_object_get(json_object_get(p, "status"), "enum")), 4);
	cr_expect_null(json_object_get(tool_schema(tools, "list_runs"), "required"));
	cr_expect_str_eq(json_string_value(json_array_get(json_object_get(tool_schema(tools,
		"get_run"), "required"), 0)), "run_id");
	p = json_object_get(tool_schema(tools, "get_errors"), "properties");
	cr_expect_str_eq(json_string_value(json_object_get(json_object_get(p, "error_type"),
		"default")), "all");
	p = json_object_get(tool_schema(tools, "query"), "properties");
	cr_expect_str_eq(json_string_value(json_object_get(json_object_get(p, "params"), "type")), "object");
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_object_get(
		tool_schema(tools, "get_failure_context"), "properties"), "limit"), "default")), 10);
	json_decref(r);
	mcp_free(s);
}

/* A tools/call result: its content's first text, and isError. */
static const char *call_text(const json_t *r, bool *is_error)
{
	const json_t *res = json_object_get(r, "result");

	cr_assert_not_null(res, "%s", message(r) ? message(r) : "no result");
	*is_error = json_is_true(json_object_get(res, "isError"));
	cr_assert(json_is_boolean(json_object_get(res, "isError")));
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(
		json_object_get(res, "content"), 0), "type")), "text");
	return json_string_value(json_object_get(json_array_get(json_object_get(res, "content"), 0),
						 "text"));
}

Test(mcp_rpc, tools_call_answers_the_tools_json_as_text)
{
	mcp_server *s = ready();
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
			"{\"name\":\"get_run_summary\",\"arguments\":{\"run_id\":\"" RUN_ROUTING "\"}}}");
	bool is_error;
	const char *text = call_text(r, &is_error);
	json_t *v = tmu_json(text);

	cr_expect_not(is_error);
	/* pretty-printed as ELSPETH's json.dumps(indent=2) */
	cr_expect(strstr(text, "{\n  \"run_id\": \"" RUN_ROUTING "\",\n"), "%s", text);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(v, "counts"), "rows")), 18);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(v, "errors"), "total")), 5);
	json_decref(v);
	json_decref(r);
	mcp_free(s);
}

Test(mcp_rpc, bad_arguments_are_tool_errors_naming_the_argument)
{
	static const struct {
		const char *call, *msg;
	} cases[] = {
		{ "{\"name\":\"get_run\",\"arguments\":{}}",
		  "Invalid arguments: 'get_run' requires 'run_id'" },
		{ "{\"name\":\"get_run\"}", "Invalid arguments: 'get_run' requires 'run_id'" },
		{ "{\"name\":\"get_run\",\"arguments\":{\"run_id\":7}}",
		  "Invalid arguments: 'get_run': 'run_id' must be string, got int" },
		{ "{\"name\":\"list_runs\",\"arguments\":{\"limit\":2.5}}",
		  "Invalid arguments: 'list_runs': 'limit' must be integer, got float" },
		{ "{\"name\":\"list_runs\",\"arguments\":{\"limit\":true}}",
		  "Invalid arguments: 'list_runs': 'limit' must be integer, got bool" },
		{ "{\"name\":\"list_runs\",\"arguments\":{\"status\":[]}}",
		  "Invalid arguments: 'list_runs': 'status' must be string or null, got list" },
		{ "{\"name\":\"get_errors\",\"arguments\":{\"run_id\":\"x\",\"error_type\":null}}",
		  "Invalid arguments: 'get_errors': 'error_type' must be string, got NoneType" },
		{ "{\"name\":\"query\",\"arguments\":{\"sql\":\"SELECT 1\",\"params\":\"p\"}}",
		  "Invalid arguments: 'query': 'params' must be object or null, got str" },
		{ "{\"name\":\"list_runs\",\"arguments\":{\"status\":\"done\"}}",
		  "Invalid status 'done'. Valid: ['running', 'completed', 'failed', 'interrupted']" },
	};
	mcp_server *s = ready();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char line[512];
		bool is_error;
		json_t *r;

		snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"tools/call\",\"params\":%s}", cases[i].call);
		r = rpc(s, line);
		cr_expect_str_eq(call_text(r, &is_error), cases[i].msg, "%s", cases[i].call);
		cr_expect(is_error, "%s", cases[i].call);
		json_decref(r);
	}
	mcp_free(s);
}

Test(mcp_rpc, integral_numbers_count_as_integers_and_extra_arguments_are_ignored)
{
	core_err err = { 0 };
	mcp_server *s = ready();
	json_t *v = tmu_call(s, "list_runs", "{\"limit\": 2.0, \"colour\": \"blue\"}", &err);

	cr_assert_not_null(v, "%s", err.msg);
	cr_expect_eq(json_array_size(v), 2);
	json_decref(v);
	mcp_free(s);
}

Test(mcp_rpc, serve_answers_each_request_on_its_own_line)
{
	static const char input[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		"{\"protocolVersion\":\"2024-11-05\"}}\r\n"
		"\n"
		"   \n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		"{\"name\":\"list_runs\",\"arguments\":{\"status\":\"failed\"}}}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}"; /* no final newline */
	FILE *in = fmemopen((void *)input, sizeof(input) - 1, "r");
	char *out = NULL, *line, *save = NULL;
	size_t outlen = 0;
	FILE *o = open_memstream(&out, &outlen);
	mcp_server *s = tmu_open(NULL);
	core_err err = { 0 };
	int n = 0;

	cr_assert_eq(mcp_serve(s, in, o, NULL, &err), 0, "%s", err.msg);
	fclose(o);
	fclose(in);
	cr_expect_eq(out[outlen - 1], '\n');
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *r = tmu_json(line);

		cr_expect_eq(json_integer_value(json_object_get(r, "id")), ++n);
		if (n == 2) {
			bool is_error;
			json_t *runs = tmu_json(call_text(r, &is_error));

			cr_expect_eq(json_array_size(runs), 1);
			cr_expect_str_eq(json_string_value(json_object_get(json_array_get(runs, 0),
				"run_id")), RUN_FAILED);
			json_decref(runs);
		}
		json_decref(r);
	}
	cr_expect_eq(n, 3);
	free(out);
	mcp_free(s);
}

Test(mcp_rpc, serve_stops_when_asked)
{
	static const char input[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
	FILE *in = fmemopen((void *)input, sizeof(input) - 1, "r");
	char *out = NULL;
	size_t outlen = 0;
	FILE *o = open_memstream(&out, &outlen);
	mcp_server *s = tmu_open(NULL);
	volatile sig_atomic_t stop = 1;
	core_err err = { 0 };

	cr_assert_eq(mcp_serve(s, in, o, &stop, &err), 0);
	fclose(o);
	fclose(in);
	cr_expect_eq(outlen, 0, "nothing read after the stop: %s", out);
	free(out);
	mcp_free(s);
}

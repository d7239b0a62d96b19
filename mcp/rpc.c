/*
 * rpc.c — JSON-RPC 2.0 and the MCP lifecycle (docs/mcp.md "Protocol"):
 * initialize (with protocol-version negotiation), notifications/
 * initialized, ping, tools/list and tools/call. Requests get a reply;
 * notifications and stray responses get none. Protocol errors are
 * JSON-RPC errors; a tool's own failures (bad arguments, a refused query)
 * are results with isError: true, so that the model sees them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mcp/mcp_internal.h"

#define SERVER_NAME "elspeth-landscape"

static const char instructions[] =
	"Read-only analysis of an elspeth audit trail (ELSPETH's Landscape schema). "
	"Start with diagnose or list_runs; get_run_summary, get_error_analysis and "
	"get_performance_report sum a run up; explain_token tells one token's whole "
	"story; describe_schema and query answer anything else in SQL.";

/* A reply: {"jsonrpc": "2.0", "id": id, key: body}; takes body. */
static json_t *reply(const json_t *id, const char *key, json_t *body)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), key, body);
}

static json_t *error_reply(const json_t *id, int code, const char *fmt, ...)
	CORE_PRINTF(3, 4);

static json_t *error_reply(const json_t *id, int code, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A message cut short may end inside a character: JSON needs it
	 * whole (the name or SQL quoted in it may be any UTF-8). */
	msg[core_utf8_check(msg, strlen(msg))] = '\0';
	return reply(id, "error", json_pack("{s:i, s:s}", "code", code, "message", msg));
}

static bool supported(const char *version)
{
	for (const char *const *v = mcp_protocol_versions; *v; v++)
		if (!strcmp(*v, version))
			return true;
	return false;
}

static json_t *initialize(mcp_server *s, const json_t *id, const json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	const char *latest = NULL, *name, *cver;
	const json_t *client;
	json_t *result;

	if (!asked)
		return error_reply(id, MCP__INVALID_PARAMS, "Invalid params: initialize needs "
				   "protocolVersion (a string)");
	if (s->phase != MCP__NEW)
		return error_reply(id, MCP__INVALID_REQUEST, "Invalid Request: initialize was "
				   "already answered (version %s)", s->version);
	for (const char *const *v = mcp_protocol_versions; *v; v++)
		latest = *v;
	/* The client's revision when we speak it, else our latest: the
	 * client then decides whether it can go on. */
	snprintf(s->version, sizeof(s->version), "%s", supported(asked) ? asked : latest);
	result = json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion", s->version,
			   "capabilities", "tools", "listChanged", 0,
			   "serverInfo", "name", SERVER_NAME, "version", ELSPETH_VERSION);
	/* instructions came with 2025-03-26 */
	if (result && strcmp(s->version, "2025-03-26") >= 0)
		json_object_set_new(result, "instructions", json_string(instructions));
	if (result)
		s->phase = MCP__OPEN;
	client = json_object_get(params, "clientInfo");
	name = json_string_value(json_object_get(client, "name"));
	cver = json_string_value(json_object_get(client, "version"));
	fprintf(s->log, "elspeth mcp: client %s%s%s asked for protocol %s, speaking %s\n",
		name ? name : "(unnamed)", cver ? " " : "", cver ? cver : "", asked, s->version);
	return result ? reply(id, "result", result) : NULL;
}

/* The tool's answer as MCP content: its JSON, pretty-printed as
 * ELSPETH's server prints it (json.dumps(indent=2)), and the note. */
static json_t *content(const mcp_result *r)
{
	core_buf b = { 0 };
	json_t *c;

	if (core_json_append(&b, r->value ? r->value : json_null(), 2, 0)) {
		core_buf_release(&b);
		return NULL;
	}
	c = json_pack("[{s:s, s:s}]", "type", "text", "text", b.data);
	core_buf_release(&b);
	if (c && r->note)
		json_array_append_new(c, json_pack("{s:s, s:s}", "type", "text", "text", r->note));
	return c;
}

static json_t *tools_call(mcp_server *s, const json_t *id, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const json_t *args = json_object_get(params, "arguments");
	mcp_result r = { 0 };
	core_err err = { 0 };
	json_t *c;
	int rc;

	if (!name)
		return error_reply(id, MCP__INVALID_PARAMS, "Invalid params: tools/call needs "
				   "name (a string)");
	if (args && !json_is_object(args) && !json_is_null(args))
		return error_reply(id, MCP__INVALID_PARAMS, "Invalid params: the arguments of "
				   "tools/call must be an object");
	rc = mcp_call(s, name, json_is_object(args) ? args : NULL, &r, &err);
	if (rc == CORE_ENOTFOUND)
		return error_reply(id, MCP__INVALID_PARAMS, "%s", err.msg);
	if (rc == CORE_ENOMEM)
		return error_reply(id, MCP__INTERNAL_ERROR, "out of memory");
	if (rc)
		return reply(id, "result", json_pack("{s:[{s:s, s:s}], s:b}", "content",
			     "type", "text", "text", err.msg, "isError", 1));
	c = content(&r);
	mcp_result_release(&r);
	return c ? reply(id, "result", json_pack("{s:o, s:b}", "content", c, "isError", 0))
		 : error_reply(id, MCP__INTERNAL_ERROR, "out of memory");
}

static json_t *request(mcp_server *s, const json_t *id, const char *method,
		       const json_t *params)
{
	if (params && !json_is_object(params))
		return error_reply(id, MCP__INVALID_PARAMS, "Invalid params: %s takes an "
				   "object", method);
	if (!strcmp(method, "initialize"))
		return initialize(s, id, params);
	if (!strcmp(method, "ping"))
		return reply(id, "result", json_object());
	if (s->phase == MCP__NEW)
		return error_reply(id, MCP__NOT_INITIALIZED, "Server not initialized: send "
				   "initialize first");
	if (!strcmp(method, "tools/list"))
		return reply(id, "result", json_pack("{s:o}", "tools", mcp_tools_list()));
	if (!strcmp(method, "tools/call"))
		return tools_call(s, id, params);
	return error_reply(id, MCP__METHOD_NOT_FOUND, "Method not found: %s", method);
}

static void notification(mcp_server *s, const char *method)
{
	/* notifications/cancelled: every request is answered before the
	 * next is read, so there is never one to cancel. */
	if (!strcmp(method, "notifications/initialized") && s->phase == MCP__OPEN)
		s->phase = MCP__READY;
}

/* One decoded message: the reply, or NULL when none is due (*none). */
static json_t *dispatch(mcp_server *s, const json_t *m, bool *none)
{
	const json_t *id = json_object_get(m, "id");
	const json_t *method = json_object_get(m, "method");
	const char *version = json_string_value(json_object_get(m, "jsonrpc"));

	*none = false;
	if (id && !json_is_string(id) && !json_is_integer(id))
		return error_reply(NULL, MCP__INVALID_REQUEST, "Invalid Request: id must be "
				   "a string or an integer");
	if (!version || strcmp(version, "2.0"))
		return error_reply(id, MCP__INVALID_REQUEST, "Invalid Request: jsonrpc must "
				   "be \"2.0\"");
	if (!method && (json_object_get(m, "result") || json_object_get(m, "error"))) {
		*none = true; /* a response; we send no requests to answer */
		return NULL;
	}
	if (!json_is_string(method))
		return error_reply(id, MCP__INVALID_REQUEST, "Invalid Request: method must "
				   "be a string");
	if (!id) {
		notification(s, json_string_value(method));
		*none = true;
		return NULL;
	}
	return request(s, id, json_string_value(method), json_object_get(m, "params"));
}

int mcp_handle(mcp_server *s, const char *msg, size_t len, char **out)
{
	json_error_t je;
	json_t *m = json_loadb(msg, len, JSON_DECODE_ANY, &je), *r;
	core_buf b = { 0 };
	bool none = false;

	*out = NULL;
	if (!m)
		r = error_reply(NULL, MCP__PARSE_ERROR, "Parse error: %s (line %d, column %d)",
				je.text, je.line, je.column);
	else if (json_is_array(m))
		r = error_reply(NULL, MCP__INVALID_REQUEST, "Invalid Request: batches are not "
				"supported; send one message per line");
	else if (!json_is_object(m))
		r = error_reply(NULL, MCP__INVALID_REQUEST, "Invalid Request: a message is a "
				"JSON object");
	else
		r = dispatch(s, m, &none);
	json_decref(m);
	if (none)
		return 0;
	if (!r || core_json_append(&b, r, -1, 0)) {
		json_decref(r);
		core_buf_release(&b);
		return CORE_ENOMEM;
	}
	json_decref(r);
	*out = core_buf_steal(&b);
	return 0;
}

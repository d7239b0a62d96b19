/*
 * fuzz_mcp_rpc.c — libFuzzer harness for the MCP server's JSON-RPC
 * (mcp/rpc.c, the tools' argument checks).
 *
 * The input is one message. The server runs on a copy of the fixture
 * trail (tests/fixtures/mcp/trail.sql; FUZZ_MCP_TRAIL overrides the
 * path), initialized once. Checks mcp_handle's promise: 0 (or
 * CORE_ENOMEM), and a reply, when there is one, is one line of JSON.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mcp_server *server(void)
{
	static mcp_server *s;
	static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
		"\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}";
	static const char ready[] = "{\"jsonrpc\":\"2.0\",\"method\":"
		"\"notifications/initialized\"}";
	const char *src = getenv("FUZZ_MCP_TRAIL");
	char path[] = "/tmp/fuzz_mcp.XXXXXX", *sql, *reply = NULL;
	core_err err = { 0 };
	sqlite3 *db;
	FILE *f;
	long n;
	int fd;

	if (s)
		return s;
	if (!src)
		src = "tests/fixtures/mcp/trail.sql";
	if (!(f = fopen(src, "rb")) || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(sql = calloc(1, (size_t)n + 1)) ||
	    fread(sql, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz_mcp_rpc: cannot read %s (run from the repository)\n", src);
		abort();
	}
	fclose(f);
	if ((fd = mkstemp(path)) < 0)
		abort();
	close(fd);
	if (sqlite3_open(path, &db) != SQLITE_OK ||
	    sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		abort();
	sqlite3_close(db);
	free(sql);
	if (mcp_open(path, NULL, &s, &err)) {
		fprintf(stderr, "fuzz_mcp_rpc: %s\n", err.msg);
		abort();
	}
	unlink(path);
	if (mcp_handle(s, init, strlen(init), &reply))
		abort();
	free(reply);
	reply = NULL;
	if (mcp_handle(s, ready, strlen(ready), &reply))
		abort();
	free(reply);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mcp_server *s = server();
	char *reply = NULL;
	json_error_t je;
	json_t *v;

	if (mcp_handle(s, (const char *)data, size, &reply))
		abort();
	if (reply) {
		if (strchr(reply, '\n') || !(v = json_loads(reply, 0, &je)))
			abort();
		json_decref(v);
		free(reply);
	}
	return 0;
}

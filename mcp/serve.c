/*
 * serve.c — the stdio transport: one JSON-RPC message per line on in, one
 * reply per line on out, flushed at once; nothing else is ever written to
 * out (notes go to the log, stderr).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"

static bool blank(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return false;
	return true;
}

static int write_line(FILE *out, const char *text, core_err *err)
{
	if (fputs(text, out) == EOF || fputc('\n', out) == EOF || fflush(out) == EOF)
		return core_err_set(err, CORE_EIO, "writing to the client: %s",
				    strerror(errno));
	return 0;
}

int mcp_serve(mcp_server *s, FILE *in, FILE *out, volatile sig_atomic_t *stop,
	      core_err *err)
{
	char *line = NULL, *reply;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;

	while (!rc && !(stop && *stop)) {
		errno = 0;
		n = getline(&line, &cap, in);
		if (n < 0) {
			if (errno == EINTR && !(stop && *stop)) {
				clearerr(in);
				continue;
			}
			break; /* end of input, or asked to stop */
		}
		if (blank(line, (size_t)n))
			continue;
		if ((size_t)n > MCP_LINE_MAX) {
			reply = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				       "{\"code\":-32600,\"message\":\"message longer than "
				       "16 MiB\"}}");
		} else if (mcp_handle(s, line, (size_t)n, &reply)) {
			/* No answer could be built (out of memory): say so and
			 * serve on; the client's id is unknown here. */
			reply = strdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				       "{\"code\":-32603,\"message\":\"internal error: "
				       "the answer could not be built\"}}");
		}
		if (reply)
			rc = write_line(out, reply, err);
		free(reply);
	}
	free(line);
	return rc;
}

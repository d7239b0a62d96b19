/*
 * mcp.h — `elspeth mcp`: a Model Context Protocol server over an audit
 * trail (docs/mcp.md). It speaks JSON-RPC 2.0, one message per line, and
 * offers ELSPETH 0.4.1's read-only analysis tools (list_runs, explain_token,
 * diagnose, query, ...) with its names, arguments and answers, and the
 * composer's: the plugin catalog, validation, and (with a root) pipelines
 * run in child processes (t_compose.c).
 *
 * The tools read SQL in ELSPETH's schema: an SQLite trail is opened
 * read-only as it is; an LMDB Landscape is first exported (sqlt_export)
 * to a temporary SQLite file that nobody else can see and that is gone
 * when the process ends, however it ends.
 *
 * Thread rules: an mcp_server belongs to one thread at a time. The query
 * tool forks a child process for each statement and reaps it before it
 * returns (docs/mcp.md "Isolation"); run_pipeline starts a child per run,
 * reaped by pid when its status is asked for or by mcp_free (which stops
 * any still running: SIGINT, then SIGKILL after 10 s); a caller must not
 * reap children it did not start (no SIGCHLD set to SIG_IGN, no
 * waitpid(-1)).
 */
#ifndef ELSPETH_MCP_H
#define ELSPETH_MCP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

/* The `query` tool's limits (docs/mcp.md "query"): a statement runs at
 * most this long, and at most this many rows are returned (the rest are
 * announced, not silently dropped). */
#define MCP_QUERY_TIMEOUT_MS 5000
#define MCP_QUERY_MAX_ROWS 1000
/* and at most this many bytes of rows as compact JSON */
#define MCP_QUERY_MAX_BYTES (8u << 20)
/* A value SQLite may build (a string or blob) and a message we read are
 * at most this long: a query such as hex(zeroblob(1e9)) is refused, not
 * turned into gigabytes of JSON. */
#define MCP_VALUE_MAX (16u << 20)
#define MCP_LINE_MAX (16u << 20)

/* The protocol revisions we speak, oldest first; the last is the one we
 * answer a client asking for a revision we do not know. */
extern const char *const mcp_protocol_versions[];

typedef struct mcp_server mcp_server;

typedef struct mcp_opts {
	unsigned query_timeout_ms; /* 0: MCP_QUERY_TIMEOUT_MS */
	unsigned query_max_rows;   /* 0: MCP_QUERY_MAX_ROWS */
	uint64_t now_ns;           /* "now" for diagnose and
				    * get_recent_activity (Unix ns, UTC);
				    * 0: the wall clock. Tests pin it. */
	FILE *log;                 /* notes for people; NULL: stderr */
	/* The composer's run tools (run_pipeline, ...) run pipelines whose
	 * files stay under this directory, which must be the working
	 * directory while the server lives (elspeth mcp --root changes to
	 * it); NULL: they refuse. With a root, a trail not there yet is no
	 * error: the trail's tools say so. */
	const char *root;
} mcp_opts;

/*
 * Opens the audit trail at path: a directory is an LMDB Landscape
 * (exported to SQL first), a file an SQLite trail in ELSPETH's schema. o
 * may be NULL (defaults); it is copied. *out: free with mcp_free.
 * Errors: CORE_ENOTFOUND (nothing at path), CORE_EDATA (not an audit
 * trail: the message names what is missing), CORE_EIO (SQLite or the
 * export failed), CORE_ENOMEM.
 */
int mcp_open(const char *path, const mcp_opts *o, mcp_server **out,
	     core_err *err);
void mcp_free(mcp_server *s); /* NULL allowed */

/* The runs in the trail (for the line mcp prints when it starts). */
long long mcp_run_count(mcp_server *s);

/*
 * One JSON-RPC message in (len bytes, not NUL-terminated, no newline),
 * at most one reply out: *reply is the reply as one line of JSON without
 * its newline (caller frees), or NULL when the message was a notification.
 * Protocol errors (parse errors, unknown methods, bad params) are replies,
 * not failures: the return value is 0, or CORE_ENOMEM.
 */
int mcp_handle(mcp_server *s, const char *msg, size_t len, char **reply);

/*
 * Serves the protocol: reads messages from in, one per line, and writes
 * each reply to out as one line, flushed. Returns 0 at the end of input
 * or when *stop becomes non-zero (checked after each message and when a
 * read is interrupted by a signal); CORE_EIO (in err) when out cannot be
 * written (the client went away). stop may be NULL.
 */
int mcp_serve(mcp_server *s, FILE *in, FILE *out,
	      volatile sig_atomic_t *stop, core_err *err);

/* A tool's answer. */
typedef struct mcp_result {
	json_t *value; /* what the tool returns (a new reference) */
	char *note;    /* NULL, or a remark sent as a second text item
			* (the query tool's "more rows than the cap");
			* malloc'd */
} mcp_result;

void mcp_result_release(mcp_result *r); /* frees what r holds */

/*
 * Calls tool `name` with arguments args (an object; NULL: none), as
 * tools/call does. 0 and *r filled, or: CORE_ENOTFOUND (no such tool),
 * CORE_EDATA (invalid arguments, "Invalid arguments: ..." naming the
 * argument; or what the tool refused: a query that would write, an
 * ambiguous row), CORE_EIO (SQLite failed; the query's time limit),
 * CORE_ENOMEM. r is untouched on error.
 */
int mcp_call(mcp_server *s, const char *name, const json_t *args,
	     mcp_result *r, core_err *err);

/* The tools as tools/list describes them: a new reference to an array of
 * {name, description, inputSchema}. */
json_t *mcp_tools_list(void);

#endif /* ELSPETH_MCP_H */

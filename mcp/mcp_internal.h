/* mcp_internal.h — shared by the files of mcp/ (docs/mcp.md). */
#ifndef ELSPETH_MCP_INTERNAL_H
#define ELSPETH_MCP_INTERNAL_H

#include <sqlite3.h>

#include "mcp/mcp.h"

/* Where the conversation is (the MCP lifecycle). */
enum {
	MCP__NEW,         /* nothing yet: only initialize and ping */
	MCP__OPEN,        /* initialize answered: everything */
	MCP__READY        /* notifications/initialized received */
};

struct mcp_server {
	sqlite3 *db;          /* the trail, SQLITE_OPEN_READONLY */
	char *path;           /* what the user named */
	char *shown;          /* ... as messages name it (no password) */
	struct pg_conn *pg;   /* a PostgreSQL trail: the query tool's
			       * connection (pg.c), once it ran */
	bool is_pg;           /* path is a postgresql:// url */
	mcp_opts o;           /* zeros replaced by the defaults */
	FILE *log;
	int phase;            /* MCP__NEW ... */
	char version[16];     /* the protocol revision agreed on */
	bool payloads;        /* the trail has elspeth_payloads */
	uint64_t deadline_ns; /* when the running statement is stopped
			       * (monotonic; 0: no limit) */
	/* the composer's runs (t_compose.c) */
	char *root;           /* realpath of o.root, or NULL */
	char *self;           /* this program, for the children */
	char *jobdir;         /* private: each run's output */
	struct mcp__job *jobs;
	size_t njobs;
};

/* --------------------------------------------------- server.c, lmdb.c */

/* Opens the SQLite trail at file (shown: how messages name it). */
int mcp__open_sqlite(mcp_server *s, const char *file, const char *shown,
		     core_err *err);
/* Exports the LMDB Landscape in directory dir to a private temporary
 * SQLite file and opens that. */
int mcp__open_lmdb(mcp_server *s, const char *dir, core_err *err);
/* fill(src, file, err) writes a new SQLite trail into file, in a private
 * temporary directory; it is opened (shown: how messages name src) and
 * unlinked at once (lmdb.c). */
typedef int (*mcp__fill_fn)(const char *src, const char *file, core_err *err);
int mcp__snapshot(mcp_server *s, const char *shown, mcp__fill_fn fill, const char *src,
		  core_err *err);
/* pg.c: a postgresql:// url's trail copied into such a file (its query
 * tool reads the database itself: mcp__query_pg). */
int mcp__open_pg(mcp_server *s, const char *url, core_err *err);
/* pg_params.c: sql with each :name where PostgreSQL would see a
 * parameter as $n (names[n - 1]), into p (zeroed first; freed with
 * mcp__pg_params_free, also after an error). */
#define MCP__PG_PARAMS_MAX 100
typedef struct mcp__pg_params {
	core_buf sql;
	char *names[MCP__PG_PARAMS_MAX];
	int n;
} mcp__pg_params;
int mcp__pg_rewrite(const char *sql, mcp__pg_params *p, core_err *err);
void mcp__pg_params_free(mcp__pg_params *p);
int mcp__query_pg(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
void mcp__pg_close(mcp_server *s);

/* ------------------------------------------------------------ sql.c */

/*
 * Runs sql with its '?' parameters bound from the variadic arguments,
 * one per character of types: 's' a const char * (NULL binds NULL), 'i'
 * a long long. mcp__rows: *out a new array of objects, one per row, keyed
 * by column name, values as SQLite holds them (mcp__value). mcp__row:
 * *out the first row or NULL when there is none. mcp__count: the first
 * column of the first row as an integer (0 without a row). Errors:
 * CORE_EIO naming the SQLite error, CORE_ENOMEM.
 */
int mcp__rows(mcp_server *s, json_t **out, core_err *err, const char *sql,
	      const char *types, ...);
int mcp__row(mcp_server *s, json_t **out, core_err *err, const char *sql,
	     const char *types, ...);
int mcp__count(mcp_server *s, long long *n, core_err *err, const char *sql,
	       const char *types, ...);
/* Column i of the current row as JSON: integer, real, string (invalid
 * UTF-8 replaced by U+FFFD), null; a BLOB as a string of lowercase hex.
 * NULL only when out of memory. */
json_t *mcp__value(sqlite3_stmt *st, int i);
/* The row at st as an object keyed by column name (NULL: no memory). */
json_t *mcp__row_object(sqlite3_stmt *st);
/* CORE_EIO with the connection's message, after "what: ". */
int mcp__db_error(mcp_server *s, core_err *err, const char *what);
/* The payload stored under hash (elspeth_payloads, our export's copy of
 * the payload store) parsed as JSON: *out NULL when there is none.
 * CORE_EDATA when it is not JSON. */
int mcp__payload(mcp_server *s, const char *hash, json_t **out, core_err *err);
/* Whether the trail has a table of that name. */
bool mcp__has_table(mcp_server *s, const char *name);

/* ---------------------------------------------------------- shape.c */

/* How a column becomes a field of an answer (ELSPETH's conversions). */
typedef enum mcp__kind {
	MCP__RAW,   /* as stored */
	MCP__TIME,  /* a stored time as Python's isoformat() (mcp__iso) */
	MCP__JSON,  /* JSON text parsed (empty or NULL: null) */
	MCP__BOOL,  /* 0/1 as false/true */
	MCP__SHORT  /* the first 12 characters and "..." (null stays) */
} mcp__kind;

typedef struct mcp__field {
	const char *name;   /* in the answer */
	const char *column; /* in the row; NULL: the same as name */
	mcp__kind kind;
} mcp__field;

/* A new object with the fields of f (ended by a NULL name) in that order,
 * taken from row (a missing column is null). CORE_EDATA when a JSON
 * column does not parse (naming it), CORE_ENOMEM. */
int mcp__shape(const json_t *row, const mcp__field *f, json_t **out,
	       core_err *err);
/* ELSPETH's Run and Call records, in its dataclasses' order (t_query.c). */
extern const mcp__field mcp__run_fields[];
extern const mcp__field mcp__call_fields[];

/* The same for each row of an array; *out a new array. */
int mcp__shape_all(const json_t *rows, const mcp__field *f, json_t **out,
		   core_err *err);
/* "2026-11-26 09:31:00.972401" -> "2026-11-26T09:31:00.972401" (no
 * fraction when it is zero), as ELSPETH prints the times SQLAlchemy reads
 * back; anything else as it is. A new reference (NULL: no memory). */
json_t *mcp__iso(const json_t *stored);
/* A stored time as microseconds since 1970 (false: not such a time). */
bool mcp__time_us(const char *stored, long long *us);
/* Unix ns as a stored time "YYYY-MM-DD HH:MM:SS.ffffff" (UTC). */
void mcp__time_text(long long us, char out[32]);
/* A run row's (completed_at - started_at) in seconds, as Python's
 * timedelta.total_seconds(); null without both times. */
json_t *mcp__duration(const json_t *run);
/* Python's round(v, digits) for floats: half-even on the exact value. */
double mcp__round(double v, int digits);
/* The first 12 characters of s and "...", as ELSPETH shortens ids. */
json_t *mcp__short(const char *s);
/* "now" in microseconds: o.now_ns or the wall clock. */
long long mcp__now_us(const mcp_server *s);

/* A number as Python adds them: an int until a float joins it. */
typedef struct mcp__num {
	long long i;
	double d;
	bool real;
} mcp__num;

void mcp__num_add(mcp__num *n, const json_t *v); /* null adds nothing */
json_t *mcp__num_json(const mcp__num *n);
double mcp__num_double(const mcp__num *n);
/* json integer or real as a double (anything else: 0). */
double mcp__double(const json_t *v);

/* Sets key to a new value, and fails on CORE_ENOMEM (v NULL). */
int mcp__set(json_t *obj, const char *key, json_t *v, core_err *err);
int mcp__append(json_t *arr, json_t *v, core_err *err);
int mcp__oom(core_err *err);

/* ---------------------------------------------------------- tools.c */

/* A tool's handler: a holds every declared argument, validated, with its
 * default (optional strings without a value are null). */
typedef int (*mcp__tool_fn)(mcp_server *s, const json_t *a, mcp_result *r,
			    core_err *err);

/* The handlers, by file. */
int mcp__list_runs(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* t_compose.c: the catalog, validation and runs under the root; their
 * set-up and end (mcp_open, mcp_free: running children get SIGINT). */
int mcp__list_sources(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_transforms(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_sinks(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_plugin_schema(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__validate_settings(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__run_pipeline(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_pipeline_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__cancel_pipeline_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__compose_open(mcp_server *s, core_err *err);
void mcp__compose_close(mcp_server *s);
int mcp__get_run(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_nodes(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_rows(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_tokens(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__list_operations(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_operation_calls(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_node_states(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_calls(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_errors(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* t_explain.c */
int mcp__explain_token(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* t_reports.c */
int mcp__get_run_summary(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_dag_structure(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_performance_report(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* t_analysis.c */
int mcp__get_error_analysis(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_llm_usage_report(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_outcome_analysis(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__describe_schema(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* t_diag.c */
int mcp__diagnose(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_failure_context(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
int mcp__get_recent_activity(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);
/* query.c */
int mcp__query(mcp_server *s, const json_t *a, mcp_result *r, core_err *err);

/* The argument's string (NULL when null) / integer. */
const char *mcp__arg_str(const json_t *a, const char *name);
long long mcp__arg_int(const json_t *a, const char *name);

/* The run's row from runs as an object, or *out NULL: ELSPETH's
 * "Run 'x' not found" checks. */
int mcp__run(mcp_server *s, const char *run_id, json_t **out, core_err *err);
/* mcp__run for a tool about one run: an unknown run is answered as
 * ELSPETH does ({"error": "Run 'X' not found"}) and *out is NULL. */
int mcp__run_or_answer(mcp_server *s, const char *run_id, mcp_result *r,
		       json_t **out, core_err *err);
/* {"error": msg} as the answer (ELSPETH's not-found answers). */
int mcp__answer_error(mcp_result *r, core_err *err, const char *fmt, ...)
	CORE_PRINTF(3, 4);

/* ------------------------------------------------------------ rpc.c */

/* The JSON-RPC error codes we answer. */
enum {
	MCP__PARSE_ERROR = -32700,
	MCP__INVALID_REQUEST = -32600,
	MCP__METHOD_NOT_FOUND = -32601,
	MCP__INVALID_PARAMS = -32602,
	MCP__INTERNAL_ERROR = -32603,
	MCP__NOT_INITIALIZED = -32002 /* a request before initialize */
};

#endif /* ELSPETH_MCP_INTERNAL_H */

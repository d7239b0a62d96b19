/*
 * plugins.h — the public contract of elspeth's plugins: sources, transforms
 * and sinks, found by name in a registry.
 *
 * Every plugin's `options` is a MAP node of the settings document; a plugin
 * checks its own keys (unknown keys are errors naming file, line, column and
 * key path) and accepts ELSPETH's `schema` block. Errors at open time are
 * CORE_ECONFIG (bad options) or CORE_EIO (files); they happen before the
 * first row is read.
 *
 * Thread rules: open/close run on one thread. A transform's process() may be
 * called concurrently from many threads with the same state: state is
 * read-only after open (or guarded by the plugin, like the LLM transforms'
 * shared HTTP executor). A source, a sink and an aggregation have one
 * caller at a time (not always the same thread: ADR 0009).
 */
#ifndef ELSPETH_PLUGINS_H
#define ELSPETH_PLUGINS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* ------------------------------------------------------------ environment */

/* What one run gives the plugins it opens (ADR 0032): every entry point
 * that opens an instance, or names or checks the file a sink writes
 * (open, resume, target, verify), is handed its run's environment, so that several runs in one process keep
 * apart. A graph owns one (dag_graph.env): dag_build initialises it,
 * dag_free releases it, and the engine and the run library fill it in
 * before the plugins open. Plugins read it; only its owner writes it.
 * `env` may be NULL where a plugin is opened outside a run (a test, the
 * export sink of landscape.export): then nothing is shared, no run key,
 * no rate_limit, all of the capacity, no part files. */

typedef struct plg_parts plg_parts; /* a sharded run's part-file map */

typedef struct plg_env {
	/* The run the sinks write for, the same string for a run and every
	 * resume of it ("run-ID-STARTED_NS"): a sink that must find what it
	 * wrote after the last checkpoint in a store it does not own (the
	 * database sink's commit ledger) keys it by this. "": the run is not
	 * recorded (no Landscape; nothing can resume it). */
	char run_key[64];
	/* The settings' rate_limit section, for the transforms that call a
	 * rate-limited service (read when they open), or NULL. */
	const core_rate_limit_cfg *rate_limits;
	/* A shard's share of every rate-limited service (docs/scale-out.md):
	 * the LLM transforms take this fraction of their pool_size (at least
	 * 1), of rate_limit's budgets and of the pace min_dispatch_delay_ms
	 * allows, so the shards running at once stay within the settings.
	 * In (0, 1]; 1: all of it. */
	double capacity_share;
	/* The payload store's directory (payload_store.base_path, default
	 * .elspeth/payloads): content-addressed files ab/abcd..., which
	 * blob_csv_expand reads blobs from. NULL: none (outside a run). */
	const char *payload_dir;
	/* The pipeline is in ELSPETH 0.7.1's format: a source with an
	 * observed (or flexible) schema fixes each field's type at its first
	 * value there (0.7.1's schema contract), a later value of another
	 * type failing the row. */
	bool v07;
	/* ELSPETH's concurrency.max_workers: an LLM transform's requests in
	 * flight at most (its pool_size is capped to it, before the share).
	 * 0: no cap. */
	unsigned max_workers;
	/* Sharded runs: while set, every file sink of the run writes its rows
	 * to a part file instead of the file its options name (target() and
	 * verify() say so too). NULL: off. plg_env_set_part_dir sets it. */
	plg_parts *parts;
	/* ELSPETH's `headers: original` (ADR 0052): for each sink, by the
	 * path of its options node ("sinks.out.options"), an object
	 * {field: the source's name of it} — the sources' header names,
	 * carried through renames on the way. Set by the engine once the
	 * sources are open, before the sinks open; NULL: none known. */
	json_t *original_names;
} plg_env;

/* An environment with nothing in it but rate_limits (may be NULL). */
void plg_env_init(plg_env *env, const core_rate_limit_cfg *rate_limits);
/* Frees what the environment holds (its part map). NULL allowed. */
void plg_env_release(plg_env *env);
/* Takes names (a reference; NULL: none) as env->original_names. */
void plg_env_set_original_names(plg_env *env, json_t *names);
/* The sink's {field: source name}, or NULL (none known; env NULL). */
const json_t *plg_env_original_names(const plg_env *env, const core_node *options);
/* key, or NULL for a run that is not recorded. */
void plg_env_set_run_key(plg_env *env, const char *key);
/* The run key, or NULL (env NULL, or not recorded). */
const char *plg_env_run_key(const plg_env *env);
/* Clamped into (0, 1]; anything else is 1. */
void plg_env_set_capacity_share(plg_env *env, double share);
/* 1 when env is NULL. */
double plg_env_capacity_share(const plg_env *env);
/* NULL when env is NULL. */
const core_rate_limit_cfg *plg_env_rate_limits(const plg_env *env);
/* Part files in dir (NULL: none), for the file DIR/HHHHHHHHHHHH-NAME of
 * each path: its SHA-256 prefix and base name. Set before the sinks open;
 * the strings plg_part_path handed out before are freed. */
int plg_env_set_part_dir(plg_env *env, const char *dir, core_err *err);
/* Names the file a sink writes instead of `from` (the path its options
 * give): ELSPETH 0.7.1's collision_policy auto_increment picks a free
 * sibling for a new run, and a resume goes on writing what the run
 * wrote (ADR 0044). A path is mapped once. Before dag_open; the map
 * lives in the same table as a sharded run's part files. */
int plg_env_map_path(plg_env *env, const char *from, const char *to,
		     core_err *err);
/* The file a sink writes for `path`: its part file when the run is
 * sharded, else path. Thread-safe; valid until the part directory
 * changes or the environment is released. NULL when out of memory. */
const char *plg_part_path(const plg_env *env, const char *path);

/* ---------------------------------------------------------------- sources */

/* One record from a source. `row` is a new reference the caller owns. When
 * the record failed schema validation, `error` (malloc'd, caller frees)
 * names the field and reason, and `row` holds what could be read (never
 * NULL: at worst the raw fields). `where` says where it came from, e.g.
 * "line 17" (malloc'd, caller frees; may be NULL). */
typedef struct plg_source_row {
	json_t *row;
	char *error;
	char *where;
	/* Set by the engine's chain of several sources (ADR 0044): which
	 * source (its node) and the row's 0-based index among its rows. A
	 * plugin leaves them 0. */
	unsigned source;
	uint64_t source_index;
	/* With `error`: ELSPETH 0.7.1's own message for the failure, when
	 * the plugin gives it (a 0.7.1-format run sorts its quarantine sink
	 * by its hash, ADR 0048); NULL else. Owned. */
	char *reason;
} plg_source_row;

/* Where a source stands between two records (resume, ADR 0012): what
 * the fields mean is the source's own (CSV: byte offset and line). */
typedef struct plg_source_pos {
	uint64_t offset;
	uint64_t line;
	/* position() sets it when offset is a byte offset in the file that
	 * input() names (a shard checks the bytes of its range; a JSON
	 * array's offset is an element index) */
	bool bytes;
	/* The engine's chain of several sources: the source that offset
	 * and line are in, and how many of its rows come before (a plugin
	 * leaves source 0; seek gets index, the rows of its own before
	 * `at`, whether there is a chain or not, when position set it). */
	unsigned source;
	uint64_t index;
} plg_source_pos;

/* One option of a plugin: what `elspeth serve`'s catalog and `mcp`'s
 * plugin_schema show (ELSPETH's ConfigFieldSummary), and the keys the
 * plugin accepts (plg__check_options: a key not in its tables is refused),
 * so the two cannot drift. type: a JSON Schema type, or several joined
 * by '|' ("string|object"); def: the default as JSON text, NULL for none
 * (or one that depends on other options: desc says). */
typedef struct plg_option {
	const char *name;
	const char *type;
	bool required;
	const char *def;
	const char *desc;
} plg_option;

typedef struct plg_source_ops {
	const char *name;
	const char *description;
	/* Its options: tables of fields, each ending with a NULL name,
	 * the list ending with NULL. */
	const plg_option *const *options;
	/* Opens the source. `options` is the source's options MAP (it may hold
	 * `on_validation_failure`, which the engine reads; plugins allow it). */
	int (*open)(const plg_env *env, const core_node *options,
		    void **state, core_err *err);
	/* 1: a record in *out; 0: end of data; <0: a fatal error (err set),
	 * e.g. unreadable file or invalid UTF-8 that makes the rest unreadable. */
	int (*next)(void *state, plg_source_row *out, core_err *err);
	void (*close)(void *state); /* NULL state allowed */
	/* Optional: checks the options as open would, touching no file
	 * (validate). */
	int (*check)(const core_node *options, core_err *err);
	/* Optional (may be NULL): how far the source has read, for an ETA —
	 * *done and *total in the same unit (bytes for files). The engine
	 * calls it with its pipeline lock held (engine/pipeline_internal.h),
	 * between calls of next(): it must be cheap (read a position the
	 * source keeps), must not block (no I/O, no lock another thread may
	 * hold for long) and must not call back into the engine. */
	void (*progress)(void *state, uint64_t *done, uint64_t *total);
	/* Optional (both or neither): where the next record starts, and a
	 * jump there in a new open of the same input, so a resumed run does
	 * not re-read what it had read. Without them the engine skips
	 * records one by one. */
	void (*position)(void *state, plg_source_pos *out);
	int (*seek)(void *state, const plg_source_pos *at, core_err *err);
	/* Optional: passes over the next record exactly as next() would,
	 * without building its row (a shard plan numbers the rows): 1, 0 at
	 * the end, <0 fatal (err set). */
	int (*skip)(void *state, core_err *err);
	/* Optional: the file the source reads, as its options name it, or
	 * NULL (a shard plan hashes it). Valid while options are. */
	const char *(*input)(const core_node *options);
	/* Optional: how the source named the rows' fields (ELSPETH's field
	 * resolution), after open: a new object {name as read: key in the
	 * row} and its normalization's version (static), or NULL when it
	 * resolved no names (fields named in the options). */
	json_t *(*fields)(void *state, const char **version);
	/* Optional: what the source learned from the rows so far that later
	 * rows depend on (0.7.1's types fixed at a field's first value), as
	 * a new JSON reference, for a checkpoint; and putting it back in a
	 * new open of the same options (resume). save may be called on
	 * another thread than next's, while next runs. */
	json_t *(*save)(void *state);
	void (*restore)(void *state, const json_t *saved);
} plg_source_ops;

void plg_source_row_release(plg_source_row *r);

/* ------------------------------------------------------------- transforms */

/*
 * How an outside call failed: the one list of error classes. Each name is
 * recorded in the audit trail (calls.error_class) and counted by the run's
 * summary: a name never changes. The list, in order, as (CLASS, "name");
 * code that needs an entry per class (the engine's counters, whose order
 * checkpoints keep) expands it, as libuv's UV_ERRNO_MAP:
 */
#define PLG_ERROR_CLASS_MAP(XX)                                              \
	/* the server is overloaded or rate-limits (HTTP 429, 503, 529; no  \
	 * connection in time): retried until a deadline */                 \
	XX(CAPACITY, "capacity")                                             \
	/* another server error, or an answer that is none (other 5xx, 408, \
	 * 3xx): transient */                                               \
	XX(SERVER, "server")                                                 \
	/* refused, reset, dropped or truncated: transient */                \
	XX(NETWORK, "network")                                               \
	/* no complete answer in time: transient */                          \
	XX(TIMEOUT, "timeout")                                               \
	/* a success whose body the caller cannot use: transient */          \
	XX(MALFORMED, "malformed")                                           \
	/* the request was refused (other 4xx): not retried */               \
	XX(CLIENT, "client")                                                 \
	/* capacity retries went on past their deadline */                   \
	XX(GAVE_UP, "gave_up")

typedef enum plg_error_class {
	PLG_CLASS_OK = 0,          /* the call succeeded */
#define PLG__CLASS_ENUM(cls, name) PLG_CLASS_##cls,
	PLG_ERROR_CLASS_MAP(PLG__CLASS_ENUM)
#undef PLG__CLASS_ENUM
	PLG_CLASS_LAST
} plg_error_class;

/* "ok", "capacity", "server", ... as recorded; "unknown" for a value
 * outside the enum. Never NULL; a static string. */
const char *plg_error_class_name(plg_error_class c);
/* The class named name (as plg_error_class_name gives it); PLG_CLASS_LAST
 * for NULL or a name that is none. */
plg_error_class plg_error_class_of(const char *name);

/* One outside call (an LLM request) made by a transform while it
 * processes a row: what the engine records in the `calls` table. Every
 * attempt is one call, including capacity retries. */
typedef struct plg_call {
	const char *call_type;     /* "llm" */
	const char *name;          /* the query (llm_multi_query), or NULL */
	bool ok;
	unsigned http_status;      /* 0: no HTTP answer */
	const char *error_class;   /* NULL when ok, else the class's
				    * plg_error_class_name() */
	const char *error;         /* what happened, or NULL */
	const void *request;       /* the body sent (never credentials) */
	size_t request_len;
	const void *response;      /* the body received (may be NULL) */
	/* Not sent: the answer of an earlier attempt of this run was reused
	 * (plg_ctx.replay); "state/index" of the call it came from. */
	const char *replayed_from;
	size_t response_len;
	uint64_t submitted_ns, completed_ns; /* wall clock */
	uint64_t throttle_delay_ns; /* waited for the throttle before sending */
	/* What held it back, when it waited: the limit or the provider's
	 * hint that drove the wait ("pace", "window", "backoff", "tokens",
	 * "retry-after-ms", "x-ratelimit-reset-requests", ...; static
	 * string), or NULL. */
	const char *throttle_reason;
	unsigned submit_order, complete_order; /* among the row's calls, from 1 */
} plg_call;

/* What the engine gives a transform for one row (one attempt). */
typedef struct plg_ctx plg_ctx;
struct plg_ctx {
	uint64_t seq;                  /* the row's seq, for messages */
	const core_retry_cfg *retry;   /* the settings' retry policy */
	const atomic_int *stop;        /* set on SIGINT/SIGTERM; may be NULL */
	/* Records one call in the audit trail under this row's node state;
	 * thread-safe, may be called from any thread while process() runs;
	 * returns the call's index (unique within the node state). */
	unsigned (*record_call)(plg_ctx *ctx, const plg_call *call);
	/* Tells the engine this thread is about to wait (begin = true) for
	 * something other than the CPU — a timer, the network — or is done
	 * waiting (false), so another row can run meanwhile. Calls come in
	 * pairs, on the thread that runs process(). May be NULL: use
	 * plg_blocking(). */
	void (*blocking)(plg_ctx *ctx, bool begin);
	/* The transform may leave a JSON object here (a new reference) that
	 * describes how the row was processed (pool statistics); the engine
	 * records it as the node state's context and releases it. */
	json_t *context;
	/* May be NULL. When this row is run again by a resume, finds the
	 * successful answer an earlier attempt got for the same request
	 * (the same bytes) at the same node: true with *response (malloc'd,
	 * the caller frees) and *from ("state/index", static until the run
	 * ends). The transform then records the call with replayed_from set
	 * instead of sending it. */
	bool (*replay)(plg_ctx *ctx, const void *request, size_t len,
		       char **response, size_t *response_len, const char **from);
	/* May be NULL. Stops the whole run, from any thread, as SIGINT does
	 * (sets *stop: rows in flight are left for `elspeth resume`, a final
	 * checkpoint is written), for a reason no row can fix: an exhausted
	 * account (exit_code 1, the run failed) or a provider asking to
	 * wait longer than allowed (exit_code 3, interrupted). msg says why
	 * and what to do; the command prints it and exits with exit_code.
	 * The first call wins; later ones are ignored. */
	void (*halt)(plg_ctx *ctx, int exit_code, const char *msg);
};

static inline void plg_blocking(plg_ctx *ctx, bool begin)
{
	if (ctx && ctx->blocking)
		ctx->blocking(ctx, begin);
}

/* The capacity control of the service a transform calls, as it stands
 * (an LLM transform: its upstream's, plugins/http/http.h), for the run's
 * metric samples (docs/report.md). Strings are static or live while the
 * transform is open. */
typedef struct plg_capacity {
	const char *upstream;      /* where it sends: scheme://host:port */
	double rate;               /* requests/s allowed now; 0: not paced */
	double window;             /* requests in flight allowed now */
	unsigned ceiling;          /* requests in flight at most (pool_size) */
	unsigned in_flight;        /* requests in flight now */
	uint64_t requests;         /* attempts sent so far, by this process */
	uint64_t refusals;         /* capacity errors (429 ...) so far */
	const char *held_by;       /* what held a dispatch back last, or NULL */
	/* The server's capacity used: slot time busy_s over span_s of the
	 * `slots` it announced (0: none announced). */
	double busy_s, span_s;
	unsigned slots;
	double p50_s, p99_s;       /* recent answer times (0: too few) */
	uint64_t tail_cuts, hedges_sent, hedges_won;
} plg_capacity;

/* What a transform's output rows carry beyond its declared `schema`
 * (ELSPETH's schema contracts, docs/architecture.md §7 "Schema
 * contracts"), filled by its `outputs` op from its options alone. */
typedef enum plg_shape {
	PLG_SHAPE_SAME,     /* the rows keep its schema (passthrough) */
	PLG_SHAPE_OBSERVED, /* any shape (field_mapper): later type checks
			     * cannot see its fields */
	PLG_SHAPE_ADDED     /* its schema plus `fields` as optional fields
			     * of any type (llm; observed stays observed) */
} plg_shape;

typedef struct plg_outputs {
	plg_shape shape;
	/* ELSPETH's names of its input and output schema classes, which
	 * its messages print ("PassThroughInput"); NULL: "<Plugin>Input". */
	const char *in_class, *out_class;
	/* Fields every output row has (malloc'd; plg_outputs_add), and the
	 * type of each when known: "str", "int", "float", "bool" or NULL
	 * (static strings; plg_outputs_type). A typed field is a required
	 * one of an ELSPETH 0.7.1 output schema. */
	size_t nfields;
	char **fields;
	const char **types;
} plg_outputs;

/* Adds a field name made from fmt to o->fields (once). */
int plg_outputs_add(plg_outputs *o, core_err *err, const char *fmt, ...)
	CORE_PRINTF(3, 4);
void plg_outputs_release(plg_outputs *o);
/* Says the type of added field `name` ("str", "int", ...; static). */
int plg_outputs_type(plg_outputs *o, const char *name, const char *type,
		     core_err *err);

typedef struct plg_transform_ops {
	const char *name;
	const char *description;
	/* Its options: tables of fields, each ending with a NULL name,
	 * the list ending with NULL. */
	const plg_option *const *options;
	/* An expanding transform (json_explode) turns one row into zero or
	 * more: process() then returns a JSON array of rows in *out. */
	bool expands;
	int (*open)(const plg_env *env, const core_node *options,
		    void **state, core_err *err);
	/* Processes one row. On success returns 0 and *out is a new reference
	 * (the output row, or an array of rows when `expands`; the input is
	 * never modified). On a row error
	 * returns CORE_EDATA (or another code) with err->msg naming the field
	 * and err->retryable set when a retry might succeed. */
	int (*process)(void *state, const json_t *row, json_t **out,
		       plg_ctx *ctx, core_err *err);
	void (*close)(void *state);
	/* Optional: state worth keeping across a crash (an LLM transform's
	 * throttle), as a new JSON reference, and putting it back in a new
	 * open of the same options (resume). */
	json_t *(*save)(void *state);
	void (*restore)(void *state, const json_t *saved);
	/* Optional: fills *out with the capacity control of the service the
	 * transform calls; false when it calls none. Called by the engine's
	 * calling thread about once a second while rows run, with no engine
	 * lock held: it must be cheap (it may take a lock held only
	 * briefly) and must not block. */
	bool (*capacity)(void *state, plg_capacity *out);
	/* Optional: what the output rows carry (schema contracts, below);
	 * NULL: the rows keep the shape its `schema` declares. */
	int (*outputs)(const core_node *options, plg_outputs *out, core_err *err);
} plg_transform_ops;

/* ------------------------------------------------------------------ sinks */

/* What one sink write put where: the byte range in the output file and the
 * bytes themselves (valid until the next write or close), so the caller
 * can hash them for the audit trail. */
typedef struct plg_write_info {
	uint64_t offset;
	uint64_t len;
	const char *bytes;
} plg_write_info;

/* Where a sink's file stands (checkpoints, ADR 0012). */
typedef struct plg_sink_pos {
	uint64_t base;     /* the file's size when this run opened it */
	uint64_t pos;      /* bytes in the file now */
	uint64_t rows;     /* rows written by this run */
	char hash[CORE_SHA256_HEX_LEN + 1]; /* of bytes [base, pos) */
	int fd;            /* to fsync; -1: nothing to sync */
} plg_sink_pos;

/* Where the rows of a finished output file lie (sharded runs, docs/
 * scale-out.md: the merge joins shards' part files into one file): the
 * file is `head` bytes (a CSV header, "[" or "[\n"), the rows, then `tail`
 * bytes ("]" or "\n]"); the rows of two files are joined by `joiner`
 * (", " or ",\n"; static). A file with no rows has rows false and may still have
 * a head (a CSV header from a schema). */
typedef struct plg_sink_frame {
	uint64_t head, tail;
	bool rows;
	const char *joiner;
} plg_sink_frame;

typedef struct plg_sink_ops {
	const char *name;
	const char *description;
	/* Its options: tables of fields, each ending with a NULL name,
	 * the list ending with NULL. */
	const plg_option *const *options;
	/* Opens (creating missing parent directories) and checks the target is
	 * writable, so a bad path fails before any row is read. */
	int (*open)(const plg_env *env, const core_node *options,
		    void **state, core_err *err);
	/* Checks the options as open would, touching no file (validate). */
	int (*check)(const core_node *options, core_err *err);
	/* Writes one row; *info receives the byte range written in the output
	 * file and its bytes (a header written now is not part of it). */
	int (*write)(void *state, const json_t *row, plg_write_info *info,
		     core_err *err);
	/* Makes everything written so far durable (fflush + fsync). */
	int (*flush)(void *state, core_err *err);
	/* Finishes the file (e.g. the closing bracket of a JSON array), closes
	 * it and frees state. NULL state allowed. */
	int (*close)(void *state, core_err *err);
	/* Optional (both or neither; a sink without them cannot be used
	 * with checkpoints): where the file stands now (called by the one
	 * caller of write), and reopening it for a resume at a position an
	 * earlier run reported — the bytes after it are cut off and the sink
	 * continues as if it had just written them. The engine has checked
	 * the file against `at` (size, hash) before. */
	void (*position)(void *state, plg_sink_pos *out);
	int (*resume)(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, void **state, core_err *err);
	/* Optional: the file the sink writes, as its options name it (the
	 * audit trail records it), or NULL. Valid while options are. */
	const char *(*target)(const plg_env *env, const core_node *options);
	/* Optional (with position and resume): checks, reading only, that the
	 * output still holds what position() reported as `at` (at least
	 * at->pos bytes; bytes [at->base, at->pos) hash to at->hash), before
	 * a resume cuts it back. CORE_EDATA saying what differs (the file was
	 * edited, truncated or replaced since the run stopped). */
	int (*verify)(const plg_env *env, const core_node *options,
		      const plg_sink_pos *at, core_err *err);
	/* Optional: where the rows of `file`, a finished file this sink
	 * wrote with these options, start and end (plg_sink_frame); a
	 * sink without it cannot be sharded. CORE_EDATA when the file is
	 * not one it could have written. */
	int (*frame)(const core_node *options, const char *file,
		     plg_sink_frame *out, core_err *err);
	/* Optional: makes the rows written so far durable before a
	 * checkpoint counts them, for a sink whose output no fsync of
	 * position()'s descriptor covers (the database sink commits its
	 * transaction: one per checkpoint, not one per row). The engine
	 * calls it at every checkpoint, as the one caller of write, right
	 * before position(). An error stops the run and that checkpoint is
	 * not written: the one before it stays the one a resume starts
	 * from. */
	int (*commit)(void *state, core_err *err);
	/* Optional: the run has completed (every row written and flushed,
	 * its last checkpoint committed; not a failed, interrupted or
	 * halted run): make the output final where writing it is not
	 * (an S3 sink's upload). Called before close; an error fails the
	 * run, which a resume can finish (it calls publish again). */
	int (*publish)(void *state, core_err *err);
	/* Optional: the run's completed record is committed; what the sink
	 * kept so that a resume could finish its output may go (an S3 sink's
	 * staging file). After close, with the run's environment (its run
	 * key still set). Best effort: nothing to report. */
	void (*finished)(const plg_env *env, const core_node *options);
} plg_sink_ops;

/* ----------------------------------------------------------- aggregations */

/* Where a batch stands among the batches of its aggregation in the run
 * (ELSPETH 0.7.1's AggregationBatchContext; ADR 0045). Counts are over
 * the whole run, resumes included. */
typedef struct plg_batch {
	uint64_t flush_index;      /* 1 for the first batch */
	uint64_t rows_seen_total;  /* rows the aggregation took so far */
	uint64_t row_start, row_end; /* this batch's: 1-based, inclusive */
	uint64_t batch_size;
	const char *trigger;       /* count, timeout, condition, end_of_source */
	bool end_of_source;
} plg_batch;

/* An aggregation plugin computes the outputs of one batch of rows. */
typedef struct plg_aggregation_ops {
	const char *name;
	const char *description;
	/* Its options: tables of fields, each ending with a NULL name,
	 * the list ending with NULL. */
	const plg_option *const *options;
	int (*open)(const plg_env *env, const core_node *options,
		    void **state, core_err *err);
	/* members: the batch's rows in seq order (n >= 1). On success *out is
	 * a new JSON array of output rows (transform mode: the batch's
	 * result; passthrough mode: exactly n rows, member i enriched). A
	 * batch error is CORE_EDATA naming the member index and field. */
	int (*flush)(void *state, json_t *const *members, size_t n,
		     bool passthrough, json_t **out, core_err *err);
	void (*close)(void *state);
	/* Optional, used instead of flush when set: the same, for a plugin
	 * that calls out (openrouter_batch_llm). ctx[i] is member i's: the
	 * calls made for it are recorded under its node state at this
	 * aggregation (ctx[i]->record_call, any thread while flush_calls
	 * runs; ctx[i]->seq is its row). Runs on the thread holding the
	 * release role. */
	int (*flush_calls)(void *state, json_t *const *members, size_t n,
			   bool passthrough, plg_ctx *const *ctx, json_t **out,
			   core_err *err);
	/* Optional: as plg_transform_ops.outputs, for the rows a batch gives. */
	int (*outputs)(const core_node *options, plg_outputs *out, core_err *err);
	/* Optional, used instead of flush when set (flush may then be NULL):
	 * the same, told where the batch stands (report_assemble's pages). */
	int (*flush_batch)(void *state, json_t *const *members, size_t n,
			   bool passthrough, const plg_batch *batch, json_t **out,
			   core_err *err);
} plg_aggregation_ops;

/* --------------------------------------------------------------- registry */

typedef enum plg_kind {
	PLG_SOURCE, PLG_TRANSFORM, PLG_SINK, PLG_AGGREGATION
} plg_kind;

const plg_source_ops *plg_find_source(const char *name);
const plg_transform_ops *plg_find_transform(const char *name);
const plg_sink_ops *plg_find_sink(const char *name);
const plg_aggregation_ops *plg_find_aggregation(const char *name);
/* The i-th plugin of a kind (name and description), for `plugins list`
 * and for "did you mean" messages; false past the end. */
/* The option tables of plugin `name` of `kind` (as the ops' `options`),
 * or NULL: no such plugin. */
const plg_option *const *plg_options_of(plg_kind kind, const char *name);
/* Option tables as ELSPETH's catalog shows them (catalog.c): a list of
 * {name, type, required, description, default} (a union type shows its
 * first member, as ELSPETH's does), and a JSON Schema object of them
 * (title, properties, required, no other keys). */
json_t *plg_option_fields(const plg_option *const *tables);
json_t *plg_option_schema(const char *title, const plg_option *const *tables);
/* ELSPETH's catalog (its web/catalog service): the PluginSummary list
 * (name, description, plugin_type, config_fields) of type "source",
 * "transform" (aggregations too) or "sink", NULL for another type; and
 * one plugin's PluginSchemaInfo (name, plugin_type, description,
 * json_schema), or NULL with ELSPETH's message in msg ("Unknown plugin
 * type: …", "Unknown transform plugin: …. Available: […]"). */
json_t *plg_catalog_list(const char *type);
json_t *plg_catalog_schema(const char *type, const char *name, char *msg, size_t cap);
bool plg_describe(plg_kind kind, size_t i, const char **name,
		  const char **description);

/* ------------------------------------------------------- schema contracts
 *
 * What a node promises the nodes after it and asks of the nodes before
 * it, judged edge by edge before the first row as ELSPETH judges them
 * (docs/architecture.md §7 "Schema contracts", ADR 0034):
 *   - the fields a consumer requires (`required_input_fields`, else its
 *     schema's `required_fields`) must be among those its producer
 *     guarantees (its schema's required fields and `guaranteed_fields`,
 *     plus the fields its plugin adds);
 *   - where both sides declare fields (neither is observed), each field
 *     the consumer requires must be produced, with a compatible type
 *     (the same, or any; int is not float), and a fixed consumer takes no
 *     field it does not declare.
 */
typedef struct plg_contract plg_contract;

/* The contract of plugin `name` of `kind` with `options` (its `schema`
 * and `required_input_fields`, and what its outputs op says). */
int plg_contract_of(plg_kind kind, const char *name, const core_node *options,
		    plg_contract **out, core_err *err);
/* The same as ELSPETH 0.7.1 judges it (ADR 0044): a plugin that keeps
 * its rows' shape but adds fields (web_scrape) declares them in its
 * output schema, as if its shape were PLG_SHAPE_ADDED. */
int plg_contract_of_v07(plg_kind kind, const char *name, const core_node *options,
			plg_contract **out, core_err *err);
/* A coalesce's (its `merge`): "union" guarantees what every branch
 * guarantees, "nested" a field per branch, "select" what the selected
 * branch does; after union or nested, no type is known. `branches` are
 * the contracts of its branches' producers, in its declared order (any
 * may be NULL: unknown). `who` names it in messages ("coalesce:x"). */
int plg_contract_coalesce(const char *who, const char *merge,
			  const char *const *names, const plg_contract *const *branches,
			  size_t n, size_t selected, plg_contract **out, core_err *err);
void plg_contract_free(plg_contract *c); /* NULL allowed */

/* Whether rows may go from producer p (NULL: nothing known) to consumer
 * c along the edge `from` -> `to` labelled `label`; `by` names the node
 * the edge leaves when it passes p's rows on (a gate: "config_gate:x"),
 * NULL when it is p's. 0, or CORE_ECONFIG in err at the consumer's schema
 * (or its required_input_fields) naming the edge, both schemas and the
 * fields. */
int plg_contract_edge(const plg_contract *p, const plg_contract *c,
		      const char *from, const char *to, const char *label,
		      const char *by, core_err *err);
/* One line of what flows out of c (validate --verbose): its mode, fields
 * and guarantees. Appended to b. */
int plg_contract_describe(const plg_contract *c, bool output, core_buf *b);

#endif /* ELSPETH_PLUGINS_H */

/* export_internal.h — the state of one export, shared by export*.c. */
#ifndef ELSPETH_SQLTRAIL_EXPORT_INTERNAL_H
#define ELSPETH_SQLTRAIL_EXPORT_INTERNAL_H

#include "sqltrail/sqltrail_internal.h"

/* The prepared INSERTs, one per table (export.c holds their SQL). */
enum {
	ST_RUNS, ST_NODES, ST_EDGES, ST_ROWS, ST_TOKENS, ST_TOKEN_PARENTS,
	ST_TOKEN_OUTCOMES, ST_NODE_STATES, ST_OPERATIONS, ST_CALLS,
	ST_ROUTING_EVENTS, ST_BATCHES, ST_BATCH_MEMBERS, ST_BATCH_OUTPUTS,
	ST_ARTIFACTS, ST_VALIDATION_ERRORS, ST_TRANSFORM_ERRORS,
	ST_CHECKPOINTS, ST_OWN_RUNS, ST_OWN_ROWS, ST_OWN_CALLS,
	ST_OWN_ARTIFACTS, ST_OWN_SINK_FILES, ST_OWN_RESUMES,
	ST_OWN_SUPERSEDED, ST_OWN_PAYLOADS, ST_OWN_SAMPLES,
	ST_OWN_SAMPLE_UPSTREAMS,
	/* ELSPETH 0.7.1's (a run in its format): rows with its two columns,
	 * and run_sources (sqlt_table.v07) */
	ST_ROWS07, ST_RUN_SOURCES, ST__COUNT
};

/* The length of a run's id in a shared database (export.c) */
#define SQLT_SHARED_ID_LEN 10

/* One row for a table, bound column by column (1-based, as SQLite
 * numbers parameters) and handed to the output by sqlt__step. Text and
 * blobs are copied into bytes: the caller's buffers may go at once. */
#define SQLT_COLS_MAX 16
enum { XV_NULL, XV_INT, XV_REAL, XV_TEXT, XV_BLOB };
typedef struct xrow {
	uint8_t kind[SQLT_COLS_MAX + 1];
	int64_t i[SQLT_COLS_MAX + 1];
	double d[SQLT_COLS_MAX + 1];
	size_t off[SQLT_COLS_MAX + 1], len[SQLT_COLS_MAX + 1];
	core_buf bytes;
	bool oom;
} xrow;

/* A table of the SQL trail as the exporter writes it: its name, its
 * columns in binding order, whether a row already there is kept (an
 * INSERT OR IGNORE: a batch's outputs, a payload) rather than an error. */
typedef struct sqlt_table {
	const char *name;
	int ncols;             /* bound */
	const char *cols;      /* "a, b, c" */
	bool keep_existing;
	/* A live step (follow.c) appends to a run already there: a row of
	 * a table with a key replaces the one there (the run's record, a
	 * batch whose status moved on); one of a live_keep table may have
	 * been written by an earlier step and is kept. */
	const char *key;
	bool live_keep;
	/* a column with one value in every row, not bound: its name, as
	 * an SQL literal, as COPY text (NULL: none) */
	const char *fixed_col, *fixed_sql, *fixed_copy;
	/* ELSPETH 0.7.1's additions: in a database only once a run in its
	 * format went in (the output's v07 op makes them) */
	bool v07;
} sqlt_table;
extern const sqlt_table sqlt__tables[];

/* Where an export goes (out_sqlite.c, out_pg.c): a run's rows between
 * begin (which also removes what an earlier export wrote of the run) and
 * commit, in one transaction; rows come in the exporter's order, which
 * is not the order of the foreign keys (an output that needs it keeps
 * rows back until commit). */
typedef struct sqlt_out sqlt_out;
typedef struct sqlt_out_ops {
	/* started: when a run with a shared id began ("" otherwise): a
	 * run of that id that began at another time is not replaced.
	 * append: a live step — nothing is removed, and rows follow the
	 * conflict rules of sqlt__conflict. */
	int (*begin)(sqlt_out *o, const char *rid, const char *started,
		     bool append, core_err *err);
	int (*row)(sqlt_out *o, int which, const xrow *r, core_err *err);
	int (*commit)(sqlt_out *o, core_err *err);
	void (*rollback)(sqlt_out *o);
	/* ok: every run went in (an output may finish its indexes) */
	int (*close)(sqlt_out *o, bool ok, core_err *err);
	/* Inside a begun transaction: makes ELSPETH 0.7.1's additions where
	 * they are missing (rows.source_row_index and ingest_sequence,
	 * run_sources; schema.c), for a run in its format. */
	int (*v07)(sqlt_out *o, core_err *err);
} sqlt_out_ops;
struct sqlt_out {
	const sqlt_out_ops *ops;
	const char *where;     /* for messages: the file, or the url
				* without its password */
};
/* What a row of table `which` does when its key is there already. */
enum { SQLT_INSERT, SQLT_KEEP, SQLT_REPLACE };
int sqlt__conflict(int which, bool append);
/* The clause after an INSERT's VALUES or SELECT for that rule: "" or
 * " ON CONFLICT DO NOTHING" or " ON CONFLICT ("key") DO UPDATE SET
 * "c" = excluded."c", ..." (SQLite and PostgreSQL alike). 0 or
 * CORE_ENOMEM. */
int sqlt__conflict_sql(int which, bool append, core_buf *b);
/* What an earlier export wrote of run ?1, children first (export.c);
 * and of 0.7.1's additions, when the database has them. */
extern const char *const sqlt__delete_sql[];
extern const char *const sqlt__delete_v07_sql[];
/* live: a live trail's (ADR 0041): an SQLite file goes to WAL mode, a
 * PostgreSQL connection waits at most 10 s for a lock */
int sqlt__out_sqlite(const char *path, bool live, sqlt_out **out, core_err *err);
int sqlt__out_pg(const char *url, bool live, sqlt_out **out, core_err *err);
/* One of the two, by target (a postgresql:// url or a file). */
int sqlt__open_out(const char *target, bool live, sqlt_out **out, core_err *err);

/* Our outcomes, in ELSPETH's spelling (sqlt__outcome_names). */
enum {
	OUT_NONE, OUT_COMPLETED, OUT_ROUTED, OUT_FORKED, OUT_FAILED,
	OUT_QUARANTINED, OUT_DIVERTED, OUT_CONSUMED_IN_BATCH, OUT_COALESCED,
	OUT_EXPANDED, OUT__COUNT
};

/* A node of the run. */
typedef struct xnode {
	char id[160];           /* ELSPETH-style node_id */
	char config_hash[CORE_SHA256_HEX_LEN + 1];
	char *name, *kind, *plugin;
	char *config_json;
	json_t *config;         /* parsed config_json (NULL if not JSON) */
	uint64_t first_write, last_write; /* sinks: artifact times */
	uint64_t writes;           /* sinks: artifacts written */
	char file_hash[CORE_SHA256_HEX_LEN + 1]; /* sinks: the file at run end */
} xnode;

typedef struct xedge {
	uint32_t from, to;
	char *label;            /* ours: on_success, on_error, a route ... */
	const char *mode;       /* move | copy | divert */
	char elabel[160];       /* ELSPETH's: continue, __error_X__ ... */
	char *reason;           /* the last routing reason through it ... */
	char reason_hash[CORE_SHA256_HEX_LEN + 1]; /* ... and its hash */
} xedge;

/* What the export learns of a token before it writes it. Token ids are
 * counters per run, so they index an array. */
typedef struct xtok {
	uint64_t row;
	uint64_t created;
	uint64_t parent;        /* the lowest-ordinal parent, 0: none */
	uint64_t batch;         /* the batch it was consumed in */
	uint64_t batch_old;     /* ... and a superseded one (a resume) */
	uint64_t child;         /* a coalesced token: the merged token */
	uint32_t min_step;      /* its first node state's step */
	uint32_t last_node;     /* its last node state's node */
	uint8_t fresh;          /* learned, not written: 1 by an export or
				 * a step, 2 by a step's late pass */
	bool outcome_written, artifact_written;
	uint64_t last_state;
	uint64_t attempts;      /* attempts written at last_node (bits) */
	uint16_t branch;        /* index into branches (0: none) */
	uint8_t outcome;
	bool present, superseded, has_state;
} xtok;

typedef struct xp {
	rec_env *env;
	rec_txn *t;
	sqlt_out *out;
	const sqlt_opts *o;
	core_err *err;
	xrow st[ST__COUNT];     /* the row being bound, per table */
	bool shared;            /* a database many Landscapes share: runs
				 * get ids of their own (export.c) */
	/* the run being exported */
	uint64_t run;
	char rid[24];           /* its text id */
	Elspeth__RunRecord *rr;
	xnode *nodes;
	size_t nnodes;
	xedge *edges;
	size_t nedges;
	xtok *toks;
	uint64_t ntoks;         /* highest token id + 1 */
	char **branches;        /* interned branch names; [0] unused */
	size_t nbranches;
	uint64_t last_row_at;   /* the newest row's created_at */
	uint64_t rows_read;     /* rows read from the trail */
	bool *batch_superseded; /* by batch id */
	uint64_t *state_at;     /* by state id: its end (or start) */
	uint64_t nstates;
	size_t nbatches;
	uint32_t source;        /* the (first) source node */
	bool has_source;
	bool v07;               /* the run is in ELSPETH 0.7.1's format */
	bool last_source_set;
	uint32_t last_source;   /* the source of the newest row read */
	uint64_t max_row;       /* the highest row written */
	/* A live step (follow.c): rows row_lo..row_hi of a run that goes on,
	 * appended to what earlier steps wrote (row_hi UINT64_MAX and live
	 * false: the whole run). What it reads of other tables: the calls
	 * of the states it wrote (step_states), batches from batch_from on
	 * (every earlier one is final and has all its members written). */
	bool live, header;      /* header: the run's nodes and edges written */
	bool final;             /* the run's last step: its own records too */
	uint64_t row_lo, row_hi;
	uint64_t tok_lo;        /* the lowest token learned this step */
	uint64_t *step_states;
	size_t nstep_states, cap_step_states;
	uint64_t batch_from, batch_open, batch_max;
	/* A live step's second part: rows written by an earlier step that
	 * a batch completed this step wrote to after their release (its
	 * members' states and outcomes, its outputs in its trigger row):
	 * read again, only what is new of them written (late). */
	bool late;
	size_t late_states;     /* step_states from here are the late pass's */
	struct xlate { uint64_t batch, row, token; } *late_rows;
	size_t nlate, cap_late;
} xp;

extern const char *const sqlt__outcome_names[OUT__COUNT];

/* export.c: ELSPETH 0.7.1's run_sources rows of a run in its format */
int sqlt__write_run_sources(xp *x);

/* export.c: the row of table `which`, bound, goes out (and is cleared) */
int sqlt__step(xp *x, int which);
void sqlt__bind_text(xrow *s, int i, const char *v);   /* NULL: NULL */
void sqlt__bind_textn(xrow *s, int i, const char *v, size_t n);
void sqlt__bind_blob(xrow *s, int i, const void *v, size_t n);
void sqlt__bind_i64(xrow *s, int i, int64_t v);
void sqlt__bind_f64(xrow *s, int i, double v);
void sqlt__bind_null(xrow *s, int i);
void sqlt__bind_nz(xrow *s, int i, const char *v);     /* "": NULL */
void sqlt__bind_time(xrow *s, int i, uint64_t ns);     /* 0: NULL */
void sqlt__bind_id(xrow *s, int i, const char *fmt, ...)
	CORE_PRINTF(3, 4);
void sqlt__bind_ms(xrow *s, int i, uint64_t ns);
/* "KIND-RUN-ID" ("tok-1-57"): the ids of most tables, without printf. */
void sqlt__bind_ref(const xp *x, xrow *s, int i, const char *kind,
		    uint64_t id);
const char *sqlt__node_id(const xp *x, uint32_t node); /* "" when unknown */
uint64_t sqlt__state_at(const xp *x, uint64_t state); /* 0 when unknown */
/* v as compact JSON text (malloc'd; NULL: out of memory); takes v. */
char *sqlt__json_text(json_t *v);
int sqlt__payload(xp *x, const char *hash); /* copies it when asked */
typedef int (*sqlt__scan_fn)(xp *x, const void *key, size_t klen,
			    const void *msg);
int sqlt__scan(xp *x, rec_table t, const ProtobufCMessageDescriptor *d,
	       sqlt__scan_fn fn);
/* One per-row table of a pass over the rows: its records' type and what
 * is done with each. sqlt__scan_rows reads each row of the export's range
 * (a live step's, or the whole run) once and hands its records to the
 * passes in their order, row by row: a pass may rely on what an earlier
 * pass did with the same row, not with a later row. */
typedef struct sqlt_pass {
	rec_table table;
	const ProtobufCMessageDescriptor *d;
	sqlt__scan_fn fn;
} sqlt_pass;
#define SQLT_PASSES_MAX 8
int sqlt__scan_rows(xp *x, const sqlt_pass *passes, size_t n);

/* export.c: forgets the run x holds (its nodes, tokens, arrays). */
void sqlt__run_reset(xp *x);
/* export.c: x->rid (and `started`, for a shared database) of run x->run. */
int sqlt__run_ident(xp *x, char started[SQLT_TIME_CAP]);
/* export.c: CORE_EDATA when what x read of its run shows damage (rows
 * missing from a completed run, the chain broken). */
int sqlt__run_intact(xp *x);
/* export.c: the run's record, nodes and edges into x, and (header)
 * its runs rows; the first part of every export and live step. */
int sqlt__export_head(xp *x);
/* export_tokens.c: what is learned first (tokens, outcomes, superseded,
 * batches and their members), then the pass over the rows that writes
 * every per-row table (lineage, node states, outcomes, rows, and the
 * passes of export_records.c and export_errors.c), then the tokens;
 * sqlt__export_tokens does both. */
int sqlt__export_tokens(xp *x);
int sqlt__export_tokens_learn(xp *x);
int sqlt__export_tokens_write(xp *x);
/* export_records.c: calls and batches, then (a whole export, a last
 * step) the run's own records. */
int sqlt__export_records(xp *x);
/* export_records.c: routing events and artifacts, for the row pass. */
extern const sqlt_pass sqlt__record_passes[2];
/* export_tokens.c: whether state was written by this late pass. */
bool sqlt__late_state(const xp *x, uint64_t state);
/* export_tokens.c: notes row (and token, a member of batch; 0 for the
 * batch's trigger row) as one a late pass reads if batch is whole this
 * step: its members' outcomes written by the step's end. */
int sqlt__late_row(xp *x, uint64_t batch, uint64_t row, uint64_t token);
/* export_errors.c: validation and transform errors, for the row pass. */
extern const sqlt_pass sqlt__error_passes[2];
/* export_run.c: the checkpoint, operations, sink files, resumes,
 * superseded tokens, samples. */
int sqlt__export_run_records(xp *x);

#endif /* ELSPETH_SQLTRAIL_EXPORT_INTERNAL_H */

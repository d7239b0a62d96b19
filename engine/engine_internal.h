/* engine_internal.h — the stages of a run, shared by the engine's files. */
#ifndef ELSPETH_ENGINE_INTERNAL_H
#define ELSPETH_ENGINE_INTERNAL_H

#include <stdatomic.h>

#include "engine/engine.h"
#include "recorder/recorder.h"

typedef char eng_hash[CORE_SHA256_HEX_LEN + 1];

/* A row as pulled from the source. */
typedef struct eng_row {
	uint64_t seq;
	json_t *data;      /* owned */
	char *error;       /* validation failure, or NULL (owned) */
	char *where;       /* "line 17" or NULL (owned) */
	eng_hash hash;     /* of data (audit on) */
} eng_row;

/* One terminal token of a processed row: where it goes and what. */
typedef struct eng_token {
	uint64_t token_id;
	int sink;          /* node id, or DAG_DISCARD */
	eng_outcome outcome;
	json_t *data;      /* owned; NULL for a discard */
	eng_hash hash;     /* of data, when known (audit on) */
	unsigned step;     /* steps taken before the sink */
	char *error;       /* owned; the error a FAILED/ROUTED-on-error carried */
} eng_token;

/* Everything release needs for one row, in release order. */
typedef struct eng_result {
	uint64_t seq;
	bool failed;       /* a transform failed */
	unsigned retries;
	size_t ntokens, cap;
	eng_token *tokens;
} eng_result;

/* --------------------------------------------------------------- audit */

/* The engine's side of the Landscape for one run. All functions are
 * no-ops returning 0 when rec is NULL (audit off). Thread-safe. */
typedef struct eng_audit {
	rec_env *rec;
	dag_graph *g;
	uint64_t run_id;
	uint64_t started_ns;
	const char *settings_path;
	eng_hash topology_hash;
	atomic_uint_fast64_t next_token;
	atomic_uint_fast64_t next_state;
} eng_audit;

/* One visit of a token to a node. */
typedef struct eng_state {
	uint64_t token_id;
	int node;
	unsigned step, attempt;
	bool ok;
	const char *in_hash, *out_hash;
	uint64_t started_ns, completed_ns;
	const char *error;
} eng_state;

int eng__audit_start(eng_audit *a, rec_env *rec, dag_graph *g,
		     const char *settings_path, core_err *err);
int eng__audit_finish(eng_audit *a, const eng_summary *sum, const char *status,
		      const char *error, core_err *err);
/* Hashes v (and stores it as a payload when audit is on). */
int eng__audit_payload(eng_audit *a, const json_t *v, eng_hash out,
		       core_err *err);
/* Records the row (its payload, its first token, a validation error). */
int eng__audit_row(eng_audit *a, eng_row *row, uint64_t *token_id,
		   core_err *err);
uint64_t eng__audit_state(eng_audit *a, const eng_state *st);
void eng__audit_route(eng_audit *a, uint64_t state_id, const dag_node *gate,
		      const char *key);
void eng__audit_transform_error(eng_audit *a, const eng_state *st,
				uint64_t state_id, const core_err *e);
void eng__audit_outcome(eng_audit *a, uint64_t seq, const eng_token *t);
void eng__audit_artifact(eng_audit *a, const eng_token *t,
			 const plg_write_info *info, uint64_t started_ns);

/* -------------------------------------------------------------- stages */

/* What row processing needs. */
typedef struct eng_ctx {
	dag_graph *g;
	eng_audit *audit;
	volatile sig_atomic_t *stop;
} eng_ctx;

void eng__row_release(eng_row *r);
void eng__result_release(eng_result *r);

/* Stage 2: walks the row through the graph; fills res. A row error with
 * nowhere to go is returned as an error naming seq and node. */
int eng__process_row(eng_ctx *c, eng_row *row, eng_result *res,
		     core_err *err);

/* Stage 3: writes res's tokens to their sinks in order, counting them;
 * records each outcome before its write and the artifact after. */
int eng__release(eng_ctx *c, eng_result *res, eng_summary *sum,
		 core_err *err);

#endif

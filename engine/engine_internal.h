/* engine_internal.h — the stages of a run, shared by the engine's files. */
#ifndef ELSPETH_ENGINE_INTERNAL_H
#define ELSPETH_ENGINE_INTERNAL_H

#include "engine/engine.h"

/* A row as pulled from the source. */
typedef struct eng_row {
	uint64_t seq;
	json_t *data;      /* owned */
	char *error;       /* validation failure, or NULL (owned) */
	char *where;       /* "line 17" or NULL (owned) */
} eng_row;

/* One terminal token of a processed row: where it goes and what. */
typedef struct eng_token {
	int sink;          /* node id, or DAG_DISCARD */
	eng_outcome outcome;
	json_t *data;      /* owned; NULL for a discard */
} eng_token;

/* Everything release needs for one row, in release order. */
typedef struct eng_result {
	uint64_t seq;
	bool failed;       /* a transform failed */
	unsigned retries;
	size_t ntokens, cap;
	eng_token *tokens;
} eng_result;

void eng__row_release(eng_row *r);
void eng__result_release(eng_result *r);

/* Stage 2: walks the row through the graph; fills res. A row error with
 * nowhere to go is returned as an error naming seq and node. */
int eng__process_row(dag_graph *g, const eng_row *row,
		     volatile sig_atomic_t *stop, eng_result *res,
		     core_err *err);

/* Stage 3: writes res's tokens to their sinks in order, counting them. */
int eng__release(dag_graph *g, eng_result *res, eng_summary *sum,
		 core_err *err);

#endif

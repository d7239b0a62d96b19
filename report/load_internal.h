/*
 * load_internal.h — what load.c and load_rows.c share while they read a
 * run: the read transaction, capacities of the arrays being filled, and
 * the indexes the rows need (token -> row, superseded tokens, spans).
 */
#ifndef ELSPETH_REPORT_LOAD_INTERNAL_H
#define ELSPETH_REPORT_LOAD_INTERNAL_H

#include "report/report_internal.h"

/* A row's node states: the first start, the last end, its longest. */
typedef struct rpt_span {
	uint64_t first_ns, last_ns;
	float slow_s;
	uint32_t slow_node;
} rpt_span;

typedef struct rpt_load {
	rpt_data *d;
	rec_txn *txn;
	core_err *err;
	size_t max_rows;
	size_t resumes_cap, nodes_cap, edges_cap, samples_cap, calls_cap;
	size_t sinks_cap;
	uint64_t *tok_row;        /* by token id: its row (0: unknown) */
	size_t tok_cap;
	uint64_t *superseded;     /* token ids a resume abandoned, ascending */
	size_t nsup, sup_cap;
	rpt_span *spans;          /* by row seq */
	size_t spans_cap;
	uint64_t last_state_ns;   /* the last node state's end */
} rpt_load;

/* The index of name in names[0..n), or n - 1 ("other"). */
size_t rpt__index_of(const char *const *names, size_t n, const char *name);
/* Grows *arr (*cap elements of sz bytes) to hold index i; new room is
 * zeroed. 0 or CORE_ENOMEM. */
int rpt__grow(void **arr, size_t *cap, size_t sz, size_t i);
/* load_rows.c: tokens, node states, outcomes; the slowest rows and the
 * rows with errors. */
int rpt__load_rows(rpt_load *l);
void rpt__load_release(rpt_load *l);
void rpt__row_release(rpt_row *r);

#endif /* ELSPETH_REPORT_LOAD_INTERNAL_H */

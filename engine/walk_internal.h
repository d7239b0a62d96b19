/* walk_internal.h — the walk of one row, shared by walk.c and coalesce.c. */
#ifndef ELSPETH_WALK_INTERNAL_H
#define ELSPETH_WALK_INTERNAL_H

#include "engine/engine_internal.h"

/* The fork context a merged token returns to. */
typedef struct tok_ctx {
	const char *branch;
	uint64_t fork_parent;
	const struct tok_ctx *outer;
} tok_ctx;

/* A token on the move. */
typedef struct tok {
	uint64_t id;
	json_t *data;              /* owned */
	eng_hash hash;             /* of data */
	unsigned step;
	const char *branch;        /* innermost fork branch, or NULL */
	uint64_t fork_parent;      /* the token whose fork made it, or 0 */
	const tok_ctx *outer;      /* the context of fork_parent */
} tok;

/* A coalesce waiting for the branches of one fork. */
typedef struct group {
	const dag_node *node;
	uint64_t fork_parent;
	size_t narrived;
	tok *arrived;              /* by port; data NULL = not arrived */
	uint64_t *arrived_ns;
	unsigned *order;           /* arrival order: 1, 2, ... (0 = none) */
	uint64_t first_ns;
} group;

typedef struct walker {
	eng_ctx *c;
	uint64_t seq;
	eng_result *res;
	core_err *err;
	group *groups;
	size_t ngroups, cap;
	bool failed_recorded;
	/* The last failed attempt's 0.7.1 error_hash (eng__order_key),
	 * for the on_error route that follows it. */
	char reason_key[17];
	/* SIGINT/SIGTERM does not cut this walk short (batch outputs on
	 * the release side: a flush is finished, not left half done). */
	bool no_stop;
} walker;

int eng__walk_error(walker *w, tok *t, int to, eng_outcome how,
		    const char *node, const char *msg);
void eng__walk_outcome(walker *w, const tok *t, eng_outcome o,
		       const char *error);
/* Continues a merged token's walk (defined in walk.c). */
int eng__walk_merged(walker *w, tok *t, dag_dest at);

/* coalesce.c */
int eng__coalesce_arrive(walker *w, tok *t, const dag_node *n, int port);
int eng__coalesce_resolve(walker *w, uint64_t fork_parent, const tok_ctx *ctx);
/* Gives the tokens still parked (the run stopped) a FAILED outcome. */
void eng__coalesce_abandon(walker *w);

#endif

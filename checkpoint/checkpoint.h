/*
 * checkpoint.h — checkpoints as stored in the Landscape (DESIGN.md §9,
 * ADR 0012, docs/resume.md): the latest `Checkpoint` of a run, and what a
 * resume needs to read before it runs — the sink files checked against
 * it, the ids already used, the crashed attempt's work marked superseded,
 * and the answers of its calls for replay.
 *
 * The engine builds checkpoints (engine/checkpoint.c) and restores them
 * (engine/resume.c); this module knows the records, not the engine.
 *
 * Thread rules: ckpt_put from any thread (it enqueues); the rest on the
 * thread preparing a resume, before the run starts. A ckpt_replay is
 * read-only after ckpt_replay_load and may be shared by threads.
 */
#ifndef ELSPETH_CHECKPOINT_H
#define ELSPETH_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"
#include "recorder/recorder.h"

#define CKPT_FORMAT_VERSION 1

/* Enqueues c as its run's latest checkpoint; the writer fsyncs fds (the
 * sink files) before committing it. gen (if not NULL) receives the queue
 * generation it went into (rec_queue_gen). */
int ckpt_put(rec_env *env, const Elspeth__Checkpoint *c, const int *fds,
	     size_t nfds, uint64_t *gen);
/* The latest checkpoint of run: 0, REC_NOTFOUND (err set, saying so), or
 * an error. Free with ckpt_free. */
int ckpt_load(rec_env *env, uint64_t run, Elspeth__Checkpoint **out,
	      core_err *err);
void ckpt_free(Elspeth__Checkpoint *c); /* NULL allowed */

/* The `path` option of a sink (NULL when it has none). */
const char *ckpt_sink_path(const core_node *options);

/* Checks that the file at path holds what the checkpoint says sink s had
 * written: at least s->position bytes, whose range [start, position)
 * hashes to s->prefix_hash. CORE_EDATA naming the sink and what differs
 * (the file was edited, truncated or replaced since the crash). Reads
 * only. */
int ckpt_check_sink(const Elspeth__CheckpointSink *s, const char *path,
		    core_err *err);

/* The first ids a resume may use: above every token, node state (calls
 * included: they are recorded before their state) and batch of the run. */
int ckpt_next_ids(rec_env *env, const Elspeth__Checkpoint *c,
		  uint64_t *token, uint64_t *state, uint64_t *batch,
		  core_err *err);

/* Resumes recorded for the run so far (the next attempt is this + 1). */
int ckpt_resume_count(rec_env *env, uint64_t run, uint32_t *n, core_err *err);

/* Marks the work of the crashed attempt that the resume redoes as
 * superseded by `attempt`: every token created after the checkpoint
 * (id >= c->next_token_id, below token_end) and every token of a row
 * after released_through_seq that the checkpoint does not hold as done;
 * batches flushed after the checkpoint get status "superseded". Enqueues
 * the records; *tokens receives the count. */
int ckpt_supersede(rec_env *env, const Elspeth__Checkpoint *c,
		   uint32_t attempt, uint64_t token_end, uint64_t batch_end,
		   uint64_t *tokens, core_err *err);

/* The successful answers recorded for rows the resume runs again (rows
 * after released_through_seq not done at the checkpoint), by (row, node,
 * request hash). */
typedef struct ckpt_replay ckpt_replay;
int ckpt_replay_load(rec_env *env, const Elspeth__Checkpoint *c,
		     ckpt_replay **out, core_err *err);
size_t ckpt_replay_size(const ckpt_replay *r);
/* The answer for a request; *resp is a malloc'd copy. */
bool ckpt_replay_find(const ckpt_replay *r, uint64_t row, uint32_t node,
		      const char *request_hash, char **resp, size_t *len,
		      const char **from);
void ckpt_replay_free(ckpt_replay *r); /* NULL allowed */

#endif /* ELSPETH_CHECKPOINT_H */

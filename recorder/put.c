/*
 * put.c — the producer side: rec_put*, rec_flush, rec_write_sync,
 * rec_error. Any thread, except that rec_flush and rec_write_sync refuse
 * threads that must not wait for the writer (cannot_wait, recorder.h).
 *
 * DESIGN: everything here runs under env->lock (see writer.c for what it
 * guards), except packing a message, done first, without it. A put copies
 * key and value (or the packed message) into the queue's arena and wakes
 * the writer only if it is idle.
 * Producers wait in one case only: more than queue_max (REC_QUEUE_MAX,
 * 8 MiB) bytes are queued (the disk is slower than the producers); they
 * wake when the writer takes the queue. So memory stays bounded by about
 * twice queue_max (the queue plus the batch being written). A single put
 * larger than the bound still goes in, alone. Threads that must not wait
 * for the writer (cannot_wait) skip the bound.
 * Flush and sync requests carry a ticket; their caller waits on done_cond
 * until the writer publishes ticket_done >= its ticket.
 */
#include <string.h>

#include "recorder/recorder_internal.h"

#define PACK_STACK 1024 /* messages up to this size are packed on the stack */

/* env->lock held. */
static void writer_wake(rec_env *env)
{
	if (env->writer_idle) {
		env->writer_idle = false;
		pthread_cond_signal(&env->work_cond);
	}
}

/* env->lock held: someone waits for the writer (a flush or sync ticket,
 * a full queue), so it must not keep gathering puts either. */
static void writer_hurry(rec_env *env)
{
	if (env->writer_gathering)
		pthread_cond_signal(&env->work_cond);
	writer_wake(env);
}

/* env->lock held. True on threads that must not wait for the writer:
 * the writer itself (in a rec_write_sync callback), and a thread holding
 * a rec_txn on a writing env (the writer may need it ended to grow the
 * map, map.c). */
static bool cannot_wait(const rec_env *env)
{
	return rec__wtxns > 0 || (env->writer_running &&
	       pthread_equal(env->writer_self, pthread_self()));
}

/* env->lock held; returns the sticky error, if any. */
static int queue_room(rec_env *env, size_t need)
{
	while (!env->werr && env->queue.nops && !cannot_wait(env) &&
	       rec__batch_bytes(&env->queue) + need > env->queue_max) {
		env->space_waits++;
		env->space_waiters++;
		writer_hurry(env);
		pthread_cond_wait(&env->space_cond, &env->lock);
		env->space_waiters--;
	}
	return env->werr;
}

/* What a put carries besides key and value. */
typedef struct put_extra {
	bool urgent;       /* the writer gathers no longer (rec_put_msg_now) */
	const int *fds;    /* to fsync before the commit (REC__OP_PUT_FSYNC) */
	size_t nfds;
	uint64_t *gen;     /* receives env->queue_gen */
} put_extra;

static int enqueue(rec_env *env, uint8_t kind, rec_table t, const rec_key *k,
		   const void *val, size_t vlen, const ProtobufCMessage *msg,
		   const put_extra *x)
{
	size_t fbytes = x ? x->nfds * sizeof(int) : 0;
	uint8_t small[PACK_STACK], *packed = NULL;
	rec__op *op;
	char *p;
	int rc;

	if (!env || !env->has_writer || (unsigned)t >= REC_TABLE_LAST || !k ||
	    !k->len || k->len > REC_KEY_MAX || (vlen && !val && !msg) ||
	    (x && (x->nfds > UINT16_MAX || (x->nfds && !x->fds))) ||
	    rec__table_in_story(t)) /* rec_story_put */
		return CORE_EINTERNAL;
	/* Packed before the lock is taken: every thread puts through it. */
	if (msg) {
		packed = vlen <= sizeof(small) ? small : malloc(vlen);
		if (!packed)
			return CORE_ENOMEM;
		protobuf_c_message_pack(msg, packed);
		val = packed;
	}
	pthread_mutex_lock(&env->lock);
	rc = queue_room(env, k->len + vlen + fbytes);
	if (!rc)
		rc = rec__batch_push(&env->queue, kind, t, k->len, vlen + fbytes, &op);
	if (!rc) {
		op->vlen = vlen;
		p = env->queue.arena.data + op->off;
		memcpy(p, k->b, k->len);
		if (vlen)
			memcpy(p + k->len, val, vlen);
		if (fbytes) { /* the descriptors follow the value */
			op->nfds = (uint16_t)x->nfds;
			memcpy(p + k->len + vlen, x->fds, fbytes);
		}
		if (x && x->gen)
			*x->gen = env->queue_gen;
		if (x && x->urgent) {
			env->queue.urgent = true;
			writer_hurry(env);
		} else {
			writer_wake(env);
		}
	}
	pthread_mutex_unlock(&env->lock);
	if (packed != small)
		free(packed);
	return rc;
}

int rec_put(rec_env *env, rec_table t, const rec_key *k, const void *val,
	    size_t vlen)
{
	return enqueue(env, REC__OP_PUT, t, k, val, vlen, NULL, NULL);
}

void rec__fail(rec_env *env, int rc, const char *what)
{
	pthread_mutex_lock(&env->lock);
	if (!env->werr)
		env->werr = rec__lmdb_err(&env->werr_msg, rc, env, what);
	pthread_mutex_unlock(&env->lock);
}

int rec__put_packed(rec_env *env, rec_table t, const rec_key *k,
		    const void *val, size_t vlen)
{
	return enqueue(env, REC__OP_PUT, t, k, val, vlen, NULL, NULL);
}

static int put_msg(rec_env *env, uint8_t kind, rec_table t, const rec_key *k,
		   const ProtobufCMessage *msg, const put_extra *x)
{
	if (!msg)
		return CORE_EINTERNAL;
	return enqueue(env, kind, t, k, NULL,
		       protobuf_c_message_get_packed_size(msg), msg, x);
}

int rec_put_msg(rec_env *env, rec_table t, const rec_key *k,
		const ProtobufCMessage *msg)
{
	return put_msg(env, REC__OP_PUT, t, k, msg, NULL);
}

int rec_put_msg_now(rec_env *env, rec_table t, const rec_key *k,
		    const ProtobufCMessage *msg)
{
	put_extra x = { .urgent = true };

	return put_msg(env, REC__OP_PUT, t, k, msg, &x);
}

int rec_put_msg_fsync(rec_env *env, rec_table t, const rec_key *k,
		      const ProtobufCMessage *msg, const int *fds, size_t nfds,
		      uint64_t *gen)
{
	put_extra x = { .fds = fds, .nfds = nfds, .gen = gen };

	return put_msg(env, REC__OP_PUT_FSYNC, t, k, msg, &x);
}

void rec_activity_get(rec_env *env, rec_activity *out)
{
	MDB_envinfo info;
	MDB_stat st;

	memset(out, 0, sizeof(*out));
	if (!env || !env->has_writer)
		return;
	pthread_mutex_lock(&env->lock);
	out->queued = env->queue.nops;
	out->queued_bytes = env->queue.arena.len;
	pthread_mutex_unlock(&env->lock);
	if (!mdb_env_info(env->mdb, &info) && !mdb_env_stat(env->mdb, &st))
		out->trail_bytes = (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
}

uint64_t rec_queue_gen(rec_env *env)
{
	uint64_t g;

	if (!env || !env->has_writer)
		return 0;
	pthread_mutex_lock(&env->lock);
	g = env->queue_gen;
	pthread_mutex_unlock(&env->lock);
	return g;
}

int rec_put_payload(rec_env *env, const void *data, size_t len,
		    char hex[CORE_SHA256_HEX_LEN + 1])
{
	rec_key k;

	if (len && !data)
		return CORE_EINTERNAL;
	core_sha256(data, len, k.b);
	k.len = CORE_SHA256_LEN;
	core_hex(k.b, CORE_SHA256_LEN, hex);
	return enqueue(env, REC__OP_PUT_ONCE, REC_PAYLOADS, &k, data, len, NULL, NULL);
}

/* env->lock held. */
static int werr_copy(rec_env *env, core_err *err)
{
	if (env->werr && err)
		*err = env->werr_msg;
	return env->werr;
}

/* Enqueues a flush marker or sync request and waits for the writer to
 * pass it. */
static int ticket_run(rec_env *env, uint8_t kind, rec__sync *s,
		      core_err *err)
{
	uint64_t ticket;
	rec__op *op;
	int rc;

	pthread_mutex_lock(&env->lock);
	if ((rc = werr_copy(env, err)))
		goto out_unlock;
	if (cannot_wait(env)) {
		rc = core_err_set(err, CORE_EINTERNAL, "audit trail %s: "
			"rec_flush/rec_write_sync called inside a rec_write_sync "
			"callback or while holding a read transaction (it could "
			"wait for itself); end the transaction first", env->path);
		goto out_unlock;
	}
	rc = rec__batch_push(&env->queue, kind, REC_META, 0, 0, &op);
	if (rc) {
		core_err_set(err, rc, "audit trail %s: out of memory", env->path);
		goto out_unlock;
	}
	op->sync = s;
	ticket = env->queue.ticket = ++env->ticket_next;
	writer_hurry(env);
	while (env->ticket_done < ticket) {
		env->done_waiters++;
		pthread_cond_wait(&env->done_cond, &env->lock);
		env->done_waiters--;
	}
	rc = s && s->ran ? s->rc : werr_copy(env, err);
out_unlock:
	pthread_mutex_unlock(&env->lock);
	return rc;
}

static int not_writing(rec_env *env, core_err *err)
{
	return core_err_set(err, CORE_EINTERNAL,
			    "audit trail %s was opened read-only",
			    env ? env->path : "(null)");
}

int rec_flush(rec_env *env, core_err *err)
{
	if (!env || !env->has_writer)
		return not_writing(env, err);
	return ticket_run(env, REC__OP_FLUSH, NULL, err);
}

int rec_write_sync(rec_env *env, rec_sync_fn fn, void *ctx, core_err *err)
{
	rec__sync s = { .fn = fn, .ctx = ctx, .err = err };

	if (!fn)
		return core_err_set(err, CORE_EINTERNAL,
				    "rec_write_sync without a callback");
	if (!env || !env->has_writer)
		return not_writing(env, err);
	return ticket_run(env, REC__OP_SYNC, &s, err);
}

int rec_error(rec_env *env, core_err *err)
{
	int rc;

	if (!env || !env->has_writer)
		return 0;
	pthread_mutex_lock(&env->lock);
	rc = werr_copy(env, err);
	pthread_mutex_unlock(&env->lock);
	return rc;
}

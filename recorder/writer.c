/*
 * writer.c — the writer thread of a writing environment (group commit).
 *
 * DESIGN (see recorder_internal.h for the full lock table):
 *   env->lock guards queue, queue_max, stop, writer_idle, writer_self,
 *   writer_running, done_waiters, space_waiters, space_waits,
 *   ticket_next, ticket_done, werr, werr_msg, stats.
 *   env->wbatch, txn_ops_max and wstats belong to the writer thread.
 *   The writer never holds env->lock while it talks to LMDB (a
 *   rec_write_sync callback calling rec_put takes env->lock inside its
 *   txn: map_lock, then env->lock, the documented order).
 *
 * Loop (libuv threadpool style): lock; while the queue is empty, wait;
 * swap the whole queue with the writer's empty batch; unlock; apply the
 * batch unlocked (one write txn for all its puts: group commit; fsync if it
 * holds a flush marker); lock; publish the result (ticket_done, sticky
 * error, stats) and wake whoever waits for it.
 *
 * Before taking the queue the writer gathers puts for up to GATHER_NS
 * after its previous commit (URGENT_GATHER_NS when an urgent put waits:
 * rec_put_msg_now, an LLM call's record), unless a flush/sync ticket, a
 * full queue
 * (writer_gathering + writer_hurry in put.c) or stop says not to.
 * Producers signal work_cond only when writer_idle is set. Shutdown:
 * stop = true, wake, join; the writer drains the queue before it exits.
 * After a sticky error the writer keeps draining, applying nothing, so
 * flush and sync callers still wake (and get the error).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <stdint.h>
#include <time.h>

#include "recorder/recorder_internal.h"


/* Group commit: every commit rewrites the B-tree pages on the paths it
 * touched (copy on write) and fdatasyncs, whatever its size, so the writer
 * lets puts gather for up to this long after the previous commit — unless
 * someone waits for it (rec_flush, rec_write_sync, a full queue) or the
 * environment closes. Records reach the disk at most this much later; a
 * checkpoint or a flush is never delayed. */
#define GATHER_NS (20 * 1000 * 1000ull)
/* ... and for at most this long when an urgent put waits (an LLM call's
 * record: few are lost to a crash, yet a commit still carries ~2 ms of
 * answers rather than one). */
#define URGENT_GATHER_NS (2 * 1000 * 1000ull)

/* LMDB reads the pages a commit builds on (the tail of each table it
 * appends to) through its read-only shared map; once read, they count in
 * the process's resident set until it ends, though they are clean page
 * cache the process does not need. So five times a second the writer
 * drops its map's pages from the process (MADV_DONTNEED: a later read
 * faults them back from the page cache). The resident set of a long run
 * then stays what a short one needs (bench/memory.sh). */
#define MAP_RELEASE_NS (200 * 1000 * 1000ull)

static void map_release(rec_env *env)
{
	if (env->committed_ns - env->map_released_ns < MAP_RELEASE_NS)
		return;
	env->map_released_ns = env->committed_ns;
	pthread_rwlock_rdlock(&env->map_lock);
	rec__map_drop(env);
	pthread_rwlock_unlock(&env->map_lock);
}

static void batch_swap(rec__batch *a, rec__batch *b)
{
	rec__batch t = *a;

	*a = *b;
	*b = t;
}

/* env->lock held. */
static void batch_finish(rec_env *env, const rec__batch *b, int rc,
			 const core_err *err)
{
	if (rc && !env->werr) {
		env->werr = rc;
		env->werr_msg = *err;
	}
	if (b->ticket)
		env->ticket_done = b->ticket;
	env->stats = env->wstats;
	if (env->done_waiters)
		pthread_cond_broadcast(&env->done_cond);
	if (env->werr && env->space_waiters)
		pthread_cond_broadcast(&env->space_cond);
}

static uint64_t gather_until(const rec_env *env)
{
	return env->committed_ns + (env->queue.urgent ? URGENT_GATHER_NS : GATHER_NS);
}

/* env->lock held: waits until GATHER_NS (URGENT_GATHER_NS) after the
 * last commit, or until someone needs the writer. Producers signal only
 * when writer_gathering is set and they wait (put.c writer_hurry). */
static void gather(rec_env *env)
{
	uint64_t now, until;
	struct timespec ts;

	while (!env->stop && !env->queue.ticket && !env->space_waiters &&
	       (now = core_now_mono_ns()) < (until = gather_until(env))) {
		clock_gettime(CLOCK_REALTIME, &ts); /* work_cond's clock */
		ts.tv_nsec += (long)(until - now);
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		env->writer_gathering = true;
		pthread_cond_timedwait(&env->work_cond, &env->lock, &ts);
		env->writer_gathering = false;
	}
}

static void *writer_main(void *arg)
{
	rec_env *env = arg;
	rec__batch *b = &env->wbatch;
	core_err err = { 0 };
	int rc;

	pthread_setname_np(pthread_self(), "elspeth-audit"); /* for top -H, gdb */

	pthread_mutex_lock(&env->lock);
	env->writer_self = pthread_self();
	env->writer_running = true;
	for (;;) {
		while (!env->queue.nops && !env->stop) {
			env->writer_idle = true;
			pthread_cond_wait(&env->work_cond, &env->lock);
		}
		env->writer_idle = false;
		if (!env->queue.nops)
			break;
		gather(env);
		batch_swap(&env->queue, b);
		env->queue_gen++;
		if (env->space_waiters)
			pthread_cond_broadcast(&env->space_cond);
		rc = env->werr;
		pthread_mutex_unlock(&env->lock);

		if (!rc)
			rc = rec__batch_apply(env, b, &err);
		env->wstats.batches++;
		env->committed_ns = core_now_mono_ns();
		map_release(env);

		pthread_mutex_lock(&env->lock);
		batch_finish(env, b, rc, &err);
		rec__batch_reset(b);
	}
	pthread_mutex_unlock(&env->lock);
	return NULL;
}

static int sync_init(rec_env *env)
{
	if (pthread_mutex_init(&env->lock, NULL))
		goto out;
	if (pthread_cond_init(&env->work_cond, NULL))
		goto out_lock;
	if (pthread_cond_init(&env->done_cond, NULL))
		goto out_work;
	if (pthread_cond_init(&env->space_cond, NULL))
		goto out_done;
	return 0;

out_done:
	pthread_cond_destroy(&env->done_cond);
out_work:
	pthread_cond_destroy(&env->work_cond);
out_lock:
	pthread_mutex_destroy(&env->lock);
out:
	return -1;
}

static void sync_destroy(rec_env *env)
{
	pthread_cond_destroy(&env->space_cond);
	pthread_cond_destroy(&env->done_cond);
	pthread_cond_destroy(&env->work_cond);
	pthread_mutex_destroy(&env->lock);
}

int rec__writer_start(rec_env *env, core_err *err)
{
	int rc;

	if (sync_init(env))
		return core_err_set(err, CORE_ENOMEM,
			"audit trail %s: cannot create the writer's locks",
			env->path);
	env->txn_ops_max = SIZE_MAX;
	env->queue_max = REC_QUEUE_MAX;
	if (rec__stories_init(env) || rec__packer_init(env)) {
		rec__stories_free(env);
		sync_destroy(env);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	rc = pthread_create(&env->writer, NULL, writer_main, env);
	if (rc) {
		rec__stories_free(env);
		rec__packer_free(env);
		sync_destroy(env);
		return core_err_set(err, CORE_EIO,
			"audit trail %s: cannot start the writer thread: %s",
			env->path, core_strerror(rc));
	}
	env->has_writer = true;
	return 0;
}

/* Commits what is queued, then stops and joins the writer. */
void rec__writer_stop(rec_env *env)
{
	pthread_mutex_lock(&env->lock);
	env->stop = true;
	pthread_cond_signal(&env->work_cond);
	pthread_cond_broadcast(&env->space_cond);
	pthread_mutex_unlock(&env->lock);
	pthread_join(env->writer, NULL);
	sync_destroy(env);
	rec__stories_free(env);
	rec__packer_free(env);
	rec__batch_release(&env->queue);
	rec__batch_release(&env->wbatch);
}

void rec__stats_get(rec_env *env, rec__stats *out)
{
	pthread_mutex_lock(&env->lock);
	*out = env->stats;
	out->space_waits = env->space_waits;
	pthread_mutex_unlock(&env->lock);
}

void rec__queue_max_set(rec_env *env, size_t bytes)
{
	pthread_mutex_lock(&env->lock);
	env->queue_max = bytes;
	pthread_mutex_unlock(&env->lock);
}

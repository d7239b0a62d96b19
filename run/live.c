/*
 * live.c — the live SQL trail (ADR 0041): a thread beside the engine
 * that writes the rows it has released into the run's SQL trail (a
 * sqlite:/// or postgresql:// landscape url) about every quarter second,
 * through sqltrail's follower. The engine's progress reports (every
 * LIVE_PROGRESS_MS at most) say how far it has released; a step first
 * waits until the Landscape has committed those rows (rec_flush), then
 * writes them in one transaction.
 *
 * The database being away does not stop the run: a step that fails is
 * counted and the next one starts over with every released row (the
 * LMDB trail holds them; nothing is kept in memory meanwhile). At the
 * run's end the thread stops and after.c has its follower take the last
 * step (the rest of the run; a whole export when the follower is not
 * up to date).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"
#include "sqltrail/sqltrail.h"

#define LIVE_TICK_MS 250

struct run_live {
	rec_env *rec;
	char target[4096];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	/* from the engine (the job's thread), under lock */
	uint64_t run, released;
	bool known;               /* a progress report came */
	uint64_t first_new_ns;    /* when rows beyond the database's were
				   * first reported (0: none) */
	/* the thread's own */
	sqlt_follow *f;
	run_live_stats st;
};

void run__live_progress(run_live *l, uint64_t run, uint64_t released)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	if (run)
		l->run = run;
	if (released != UINT64_MAX) {
		if ((released > l->released || !l->known) && !l->first_new_ns)
			l->first_new_ns = core_now_mono_ns();
		l->released = released;
		l->known = true;
	}
	pthread_mutex_unlock(&l->lock);
}

static void failed(run_live *l, const core_err *err)
{
	l->st.failures++;
	snprintf(l->st.last_error, sizeof(l->st.last_error), "%s", err->msg);
}

static void step(run_live *l, uint64_t run, uint64_t through, uint64_t since)
{
	core_err err = { 0 };
	uint64_t now, before;

	if (!l->f && sqlt_follow_open(l->rec, run, l->target, &l->f, &err)) {
		failed(l, &err);
		return;
	}
	before = sqlt_follow_through(l->f);
	if (rec_flush(l->rec, &err) || sqlt_follow_step(l->f, through, &err)) {
		failed(l, &err);
		return;
	}
	now = core_now_mono_ns();
	l->st.rows = sqlt_follow_through(l->f);
	if (l->st.rows != before || !l->st.steps)
		l->st.steps++; /* a transaction written (not: nothing new) */
	if (since && (double)(now - since) / 1e9 > l->st.max_behind_s)
		l->st.max_behind_s = (double)(now - since) / 1e9;
	pthread_mutex_lock(&l->lock);
	/* rows reported since the step read the frontier wait from now */
	l->first_new_ns = l->released > through ? now : 0;
	pthread_mutex_unlock(&l->lock);
}

static void *live_main(void *arg)
{
	run_live *l = arg;

	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		struct timespec until;
		uint64_t run, through, since;
		bool known;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += LIVE_TICK_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&l->wake, &l->lock, &until);
		if (l->stop)
			break;
		run = l->run, through = l->released, known = l->known;
		since = l->first_new_ns;
		pthread_mutex_unlock(&l->lock);
		if (run && known)
			step(l, run, through, since);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int run__live_start(rec_env *rec, const char *target, run_live **out, core_err *err)
{
	run_live *l = calloc(1, sizeof(*l));
	int rc;

	*out = NULL;
	if (!l)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	l->rec = rec;
	snprintf(l->target, sizeof(l->target), "%s", target);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->wake, NULL);
	if ((rc = pthread_create(&l->thread, NULL, live_main, l))) {
		pthread_cond_destroy(&l->wake);
		pthread_mutex_destroy(&l->lock);
		free(l);
		return core_err_set(err, CORE_EIO, "cannot start the live SQL trail's thread: %s",
				    strerror(rc));
	}
	*out = l;
	return 0;
}

sqlt_follow *run__live_stop(run_live *l, run_live_stats *st)
{
	sqlt_follow *f;

	if (!l)
		return NULL;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	f = l->f;
	if (f && !sqlt_follow_through(f)) { /* never stepped, or failed */
		sqlt_follow_close(f);
		f = NULL;
	}
	*st = l->st;
	st->on = true;
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
	return f;
}

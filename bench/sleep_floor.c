/*
 * sleep_floor.c — what a machine allows for N threads that each hold a
 * row for L ms, with nothing else: the floor under bench/pipelining.sh.
 *
 * N threads wait for one broadcast, then each takes the next row number
 * from an atomic counter and sleeps L ms, until R rows are taken. Prints
 * the time from the broadcast to the last wake-up, against the best
 * possible (ceil(R / N) waves of L) and against Little's law (R / (N / L)).
 *
 * Usage: elspeth-sleep-floor [N [ROWS [L_MS [REPEATS]]]]  (256 2000 20 5)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_int next_row;
static atomic_llong last_wake;
static int rows, latency_ms, go;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t start = PTHREAD_COND_INITIALIZER;

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker(void *arg)
{
	struct timespec l = { latency_ms / 1000, (latency_ms % 1000) * 1000000L };

	(void)arg;
	pthread_mutex_lock(&lock);
	while (!go)
		pthread_cond_wait(&start, &lock);
	pthread_mutex_unlock(&lock);
	while (atomic_fetch_add(&next_row, 1) < rows) {
		long long t, seen;

		nanosleep(&l, NULL);
		t = now_ns();
		seen = atomic_load(&last_wake);
		while (t > seen && !atomic_compare_exchange_weak(&last_wake, &seen, t))
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 256, reps = argc > 4 ? atoi(argv[4]) : 5;
	pthread_attr_t attr;
	pthread_t *th;

	rows = argc > 2 ? atoi(argv[2]) : 2000;
	latency_ms = argc > 3 ? atoi(argv[3]) : 20;
	if (n < 1 || rows < 1 || latency_ms < 1 || reps < 1 || !(th = calloc((size_t)n, sizeof(*th)))) {
		fprintf(stderr, "usage: elspeth-sleep-floor [N [ROWS [L_MS [REPEATS]]]]\n");
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024); /* the engine's workers' */
	for (int r = 0; r < reps; r++) {
		long long t0;
		double ms, waves = (double)((rows + n - 1) / n) * latency_ms;
		double little = (double)rows * latency_ms / n;

		atomic_store(&next_row, 0);
		atomic_store(&last_wake, 0);
		go = 0;
		for (int i = 0; i < n; i++)
			if (pthread_create(&th[i], &attr, worker, NULL)) {
				fprintf(stderr, "cannot create thread %d\n", i);
				return 1;
			}
		t0 = now_ns();
		pthread_mutex_lock(&lock);
		go = 1;
		pthread_cond_broadcast(&start);
		pthread_mutex_unlock(&lock);
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		ms = (double)(atomic_load(&last_wake) - t0) / 1e6;
		printf("N %d, %d rows, L %d ms: %.1f ms (waves bound %.0f ms: %.1f %%; Little's law %.1f ms: %.1f %%)\n",
		       n, rows, latency_ms, ms, waves, 100 * waves / ms, little, 100 * little / ms);
	}
	free(th);
	return 0;
}

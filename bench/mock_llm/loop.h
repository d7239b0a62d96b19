/*
 * loop.h — the mock server's event loop: epoll for sockets, a binary
 * min-heap for timers, a cached millisecond clock. One thread owns a loop;
 * nothing here is thread-safe.
 */
#ifndef MOCK_LOOP_H
#define MOCK_LOOP_H

#include <stddef.h>
#include <stdint.h>

typedef struct mock_loop mock_loop;

/* A file descriptor's registration: embed it in your object and recover the
 * object in the callback (container_of style). `events` are EPOLL* bits. */
typedef struct mock_io mock_io;
struct mock_io {
	void (*cb)(mock_io *io, uint32_t events);
};

/* A one-shot timer: embed it, set cb, then start it. The loop keeps a
 * pointer while it is armed, so stop it before freeing its owner. */
typedef struct mock_timer mock_timer;
struct mock_timer {
	void (*cb)(mock_timer *t);
	uint64_t due_ms;
	uint64_t seq;   /* ties broken by start order */
	size_t slot;    /* heap index + 1; 0 while not armed */
};

/* Creates a loop; NULL with errno set on failure. */
mock_loop *mock_loop_create(void);
/* Frees the loop (NULL is a no-op). Armed timers are forgotten, not run. */
void mock_loop_free(mock_loop *l);

/* Registers fd with `events`; io must outlive the registration.
 * Returns 0 or -errno. */
int mock_loop_add(mock_loop *l, int fd, uint32_t events, mock_io *io);
/* Unregisters fd (closing fd also does). */
void mock_loop_del(mock_loop *l, int fd);

/* Arms t to fire delay_ms from the loop's current time (re-arms if armed). */
void mock_timer_start(mock_loop *l, mock_timer *t, uint64_t delay_ms);
/* Disarms t; no-op when not armed. */
void mock_timer_stop(mock_loop *l, mock_timer *t);

/* The due time of the k-th (1-based) earliest armed timer, or UINT64_MAX
 * when fewer are armed. O(1) for k = 1, O(n) otherwise. */
uint64_t mock_loop_kth_due(const mock_loop *l, size_t k);

/* Milliseconds on CLOCK_MONOTONIC, cached at each wake-up of the loop. */
uint64_t mock_loop_now(const mock_loop *l);
/* Reads CLOCK_MONOTONIC now. */
uint64_t mock_clock_ms(void);

/* Runs until mock_loop_stop. Returns 0, or -errno if epoll_wait fails.
 * A callback may close and free its own object, never another registered
 * one (its event may be pending in the same batch). */
int mock_loop_run(mock_loop *l);
void mock_loop_stop(mock_loop *l);

#endif

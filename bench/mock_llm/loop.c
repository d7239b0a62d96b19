/*
 * loop.c — epoll plus a timer min-heap (see loop.h).
 *
 * Each iteration waits until the earliest timer is due, dispatches socket
 * events, then runs every timer due by the refreshed clock. Timers are
 * ordered by (due_ms, seq), so timers due together fire in start order.
 */
#include "loop.h"
#include "buf.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct mock_loop {
	int epfd;
	int stop;
	uint64_t now;
	uint64_t seq;
	mock_timer **heap;
	size_t n, cap;
};

uint64_t mock_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

mock_loop *mock_loop_create(void)
{
	mock_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	l->now = mock_clock_ms();
	return l;
}

void mock_loop_free(mock_loop *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		l->heap[i]->slot = 0;
	close(l->epfd);
	free(l->heap);
	free(l);
}

int mock_loop_add(mock_loop *l, int fd, uint32_t events, mock_io *io)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

void mock_loop_del(mock_loop *l, int fd)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
}

uint64_t mock_loop_now(const mock_loop *l)
{
	return l->now;
}

void mock_loop_stop(mock_loop *l)
{
	l->stop = 1;
}

/* ------------------------------------------------------------ the heap */

static int before(const mock_timer *a, const mock_timer *b)
{
	return a->due_ms != b->due_ms ? a->due_ms < b->due_ms : a->seq < b->seq;
}

static void put(mock_loop *l, size_t i, mock_timer *t)
{
	l->heap[i] = t;
	t->slot = i + 1;
}

static void sift_up(mock_loop *l, size_t i)
{
	mock_timer *t = l->heap[i];

	while (i > 0 && before(t, l->heap[(i - 1) / 2])) {
		put(l, i, l->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	put(l, i, t);
}

static void sift_down(mock_loop *l, size_t i)
{
	mock_timer *t = l->heap[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= l->n)
			break;
		if (c + 1 < l->n && before(l->heap[c + 1], l->heap[c]))
			c++;
		if (!before(l->heap[c], t))
			break;
		put(l, i, l->heap[c]);
		i = c;
	}
	put(l, i, t);
}

void mock_timer_stop(mock_loop *l, mock_timer *t)
{
	size_t i;

	if (!t->slot)
		return;
	i = t->slot - 1;
	t->slot = 0;
	l->n--;
	if (i == l->n)
		return;
	put(l, i, l->heap[l->n]);
	sift_down(l, i);
	sift_up(l, l->heap[i]->slot - 1);
}

void mock_timer_start(mock_loop *l, mock_timer *t, uint64_t delay_ms)
{
	mock_timer_stop(l, t);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->heap = mock_xrealloc(l->heap, l->cap * sizeof(*l->heap));
	}
	t->due_ms = l->now + delay_ms;
	t->seq = l->seq++;
	put(l, l->n++, t);
	sift_up(l, l->n - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t mock_loop_kth_due(const mock_loop *l, size_t k)
{
	uint64_t *due, r;

	if (k == 0 || k > l->n)
		return UINT64_MAX;
	if (k == 1)
		return l->heap[0]->due_ms;
	due = mock_xmalloc(l->n * sizeof(*due));
	for (size_t i = 0; i < l->n; i++)
		due[i] = l->heap[i]->due_ms;
	qsort(due, l->n, sizeof(*due), cmp_u64);
	r = due[k - 1];
	free(due);
	return r;
}

/* ------------------------------------------------------------ the loop */

static int wait_ms(const mock_loop *l)
{
	uint64_t due;

	if (!l->n)
		return -1;
	due = l->heap[0]->due_ms;
	if (due <= l->now)
		return 0;
	return due - l->now > INT_MAX ? INT_MAX : (int)(due - l->now);
}

static void run_timers(mock_loop *l)
{
	while (l->n && l->heap[0]->due_ms <= l->now && !l->stop) {
		mock_timer *t = l->heap[0];

		mock_timer_stop(l, t);
		t->cb(t);
	}
}

int mock_loop_run(mock_loop *l)
{
	struct epoll_event evs[512];

	while (!l->stop) {
		int n = epoll_wait(l->epfd, evs, 512, wait_ms(l));

		if (n < 0 && errno != EINTR)
			return -errno;
		l->now = mock_clock_ms();
		for (int i = 0; i < n && !l->stop; i++) {
			mock_io *io = evs[i].data.ptr;

			io->cb(io, evs[i].events);
		}
		run_timers(l);
	}
	return 0;
}

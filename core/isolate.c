/*
 * isolate.c — work that may crash or hang, in a child process
 * (core.h: core_isolate). The MCP query tool runs each statement this
 * way (SQLite's time limit is not checked inside one call), and verify
 * reads a trail this way (a damaged LMDB page can crash liblmdb): a crash
 * or an overrun ends the child, and the caller reports it.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/core.h"

void core_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		c += w;
		n -= (size_t)w;
	}
}

/* Reads the child's answer until EOF, the deadline (late) or max. */
static int read_child(int fd, uint64_t deadline, size_t max, core_buf *b,
		      core_isolated *how)
{
	char chunk[65536];

	for (;;) {
		uint64_t now = core_now_mono_ns();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int wait_ms = -1, pr;
		ssize_t n;

		if (deadline) {
			if (now >= deadline) {
				how->late = true;
				return 0;
			}
			wait_ms = (int)((deadline - now) / 1000000u) + 1;
		}
		pr = poll(&p, 1, wait_ms);
		if (pr <= 0) /* EINTR, or the deadline: checked above */
			continue;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (b->len + (size_t)n > max) {
			how->too_big = true;
			return 0;
		}
		if (core_buf_append(b, chunk, (size_t)n))
			return CORE_ENOMEM;
	}
}

int core_isolate(void (*fn)(void *ctx, int fd), void *ctx, unsigned timeout_ms,
		 size_t max, core_buf *out, core_isolated *how, core_err *err)
{
	uint64_t deadline = 0;
	int fd[2], st = 0, rc;
	pid_t pid;

	memset(how, 0, sizeof(*how));
	if (pipe(fd))
		return core_err_set(err, CORE_EIO, "pipe: %s", strerror(errno));
	if ((pid = fork()) < 0) {
		rc = errno;
		close(fd[0]);
		close(fd[1]);
		return core_err_set(err, CORE_EIO, "fork: %s", strerror(rc));
	}
	if (!pid) {
		close(fd[0]);
		fn(ctx, fd[1]);
		_exit(0);
	}
	close(fd[1]);
	if (timeout_ms)
		deadline = core_now_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	rc = read_child(fd[0], deadline, max, out, how);
	if (rc || how->late || how->too_big)
		kill(pid, SIGKILL);
	close(fd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st) && !how->late && !how->too_big && !rc)
		how->signal = WTERMSIG(st);
	else if (WIFEXITED(st))
		how->status = WEXITSTATUS(st);
	return rc ? core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

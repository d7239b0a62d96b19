/*
 * server.c — listening socket, accept loop, signals (see server.h).
 */
#define _GNU_SOURCE /* accept4 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define SERVER_OF(p, member) \
	((mock_server *)(void *)((char *)(p) - offsetof(mock_server, member)))

/* Out of descriptors: accept with the spare one and close at once, so the
 * client sees a closed connection rather than waiting in the backlog. */
static void shed(mock_server *s)
{
	int fd;

	if (s->spare_fd < 0)
		return;
	close(s->spare_fd);
	fd = accept(s->lfd, NULL, NULL);
	if (fd >= 0)
		close(fd);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void on_accept(mock_io *io, uint32_t events)
{
	mock_server *s = SERVER_OF(io, lio);
	int one = 1;

	(void)events;
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				fprintf(stderr, "elspeth-mock-llm: out of file "
					"descriptors; a connection was shed\n");
				shed(s);
				continue;
			}
			return; /* EAGAIN, or nothing we can fix here */
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		mock_policy_count_connection(s->policy);
		mock__conn_open(s, fd);
	}
}

static void on_signal(mock_io *io, uint32_t events)
{
	mock_server *s = SERVER_OF(io, sio);
	struct signalfd_siginfo si;

	(void)events;
	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		mock_loop_stop(s->loop);
}

/* Every armed timer of the loop belongs to a connection that holds a
 * concurrency slot until it fires (conn.c: an answer waiting out its
 * latency, or a stall), so the k-th timer due is the k-th slot freed. */
static uint64_t slot_due(void *ctx, size_t k)
{
	mock_server *s = ctx;

	return mock_loop_kth_due(s->loop, k);
}

static int open_listener(mock_server *s, char *err, size_t n)
{
	struct addrinfo hints = { 0 }, *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char port[16];
	int one = 1, rc;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%ld", s->cfg.port);
	rc = getaddrinfo(s->cfg.bind, port, &hints, &ai);
	if (rc) {
		snprintf(err, n, "--bind %s: %s (give a numeric IPv4 or IPv6 "
			 "address)", s->cfg.bind, gai_strerror(rc));
		return -1;
	}
	s->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK |
			SOCK_CLOEXEC, 0);
	if (s->lfd < 0 ||
	    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s->lfd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(s->lfd, 65535) ||
	    getsockname(s->lfd, (struct sockaddr *)&ss, &sl)) {
		snprintf(err, n, "cannot listen on %s port %ld: %s", s->cfg.bind,
			 s->cfg.port, strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	s->port = s->cfg.port = ntohs(ss.ss_family == AF_INET6 ?
			((struct sockaddr_in6 *)&ss)->sin6_port :
			((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

static int open_signals(mock_server *s, char *err, size_t n)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) ||
	    (s->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		snprintf(err, n, "cannot set up signals: %s", strerror(errno));
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int mock_server_init(mock_server *s, mock_cfg *cfg, char *err, size_t n)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	s->lfd = s->sfd = s->spare_fd = -1;
	s->lio.cb = on_accept;
	s->sio.cb = on_signal;
	s->loop = mock_loop_create();
	if (!s->loop) {
		snprintf(err, n, "cannot create the event loop: %s",
			 strerror(errno));
		return -1;
	}
	s->policy = mock_policy_create(&s->cfg, mock_loop_now(s->loop));
	mock_policy_set_slot_fn(s->policy, slot_due, s);
	if (open_listener(s, err, n) || open_signals(s, err, n))
		return -1;
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	rc = mock_loop_add(s->loop, s->lfd, EPOLLIN, &s->lio);
	if (!rc)
		rc = mock_loop_add(s->loop, s->sfd, EPOLLIN, &s->sio);
	if (rc) {
		snprintf(err, n, "epoll: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int mock_server_run(mock_server *s)
{
	return mock_loop_run(s->loop);
}

void mock_server_release(mock_server *s)
{
	while (s->conns)
		mock__conn_close(s->conns);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	mock_policy_free(s->policy);
	mock_loop_free(s->loop);
	mock_cfg_release(&s->cfg);
	memset(s, 0, sizeof(*s));
	s->lfd = s->sfd = s->spare_fd = -1;
}

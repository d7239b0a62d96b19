/*
 * conn.c — one client connection (see server.h).
 *
 * States: READ (parsing requests), WAIT (an answer is held in `pending`
 * until its timer fires), STALL (held, then closed without answer), WRITE
 * (sending `out`). Requests on a connection are answered one at a time, in
 * order; bytes of pipelined requests wait in `in`. The socket is registered
 * edge-triggered for input and output once, so reads drain to EAGAIN.
 * A client that closes its side abandons its request: the connection is
 * closed at once and its concurrency slot freed. Only WAIT and STALL arm
 * the timer, and only admitted requests (holding a slot) reach them:
 * server.c reads the timers as the times slots will be freed.
 */
#include "server.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum conn_state { C_READ, C_WAIT, C_STALL, C_WRITE };

struct mock_conn {
	mock_io io;
	mock_timer timer;
	mock_server *srv;
	int fd;
	enum conn_state state;
	int close_after;     /* close once `out` is written */
	int holds_slot;
	uint64_t slot_since; /* when the slot was taken (the loop's ms) */
	int sent_continue;   /* "100 Continue" sent for the current request */
	mock_buf in;
	mock_buf out;
	size_t out_off;      /* bytes of `out` already sent */
	mock_buf pending;    /* the answer a WAIT state holds */
	mock_conn *prev, *next;
};

#define CONN_OF(p, member) \
	((mock_conn *)(void *)((char *)(p) - offsetof(mock_conn, member)))

/* Input limit: a whole head and body, plus a little pipelined slack. */
#define IN_LIMIT (MOCK_HTTP_MAX_HEAD + MOCK_HTTP_MAX_BODY + 65536)

static void on_io(mock_io *io, uint32_t events);
static void on_timer(mock_timer *t);

/* The request's slot is free: its answer went out, it stalled its time,
 * or its client gave up on it. The time it held the slot is what it
 * cost the server (mean_latency_ms), however it ended: a client that
 * abandons a slow request early is not charged the time it did not use. */
static void free_slot(mock_conn *c)
{
	mock_server *s = c->srv;

	mock_policy_note_service(s->policy, mock_loop_now(s->loop) - c->slot_since);
	mock_policy_done(s->policy);
	c->holds_slot = 0;
}

void mock__conn_close(mock_conn *c)
{
	mock_server *s = c->srv;

	mock_timer_stop(s->loop, &c->timer);
	if (c->holds_slot)
		free_slot(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	close(c->fd);
	mock_buf_release(&c->in);
	mock_buf_release(&c->out);
	mock_buf_release(&c->pending);
	free(c);
}

int mock__conn_open(mock_server *s, int fd)
{
	mock_conn *c = mock_xmalloc(sizeof(*c));
	int rc;

	memset(c, 0, sizeof(*c));
	c->io.cb = on_io;
	c->timer.cb = on_timer;
	c->srv = s;
	c->fd = fd;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	rc = mock_loop_add(s->loop, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP |
			   EPOLLET, &c->io);
	if (rc)
		mock__conn_close(c);
	return rc;
}

/* Reads until EAGAIN. Returns 0, or -1 on EOF, error or overflow. */
static int conn_read(mock_conn *c)
{
	for (;;) {
		ssize_t n;

		if (c->in.len + 16384 > IN_LIMIT)
			return -1;
		mock_buf_reserve(&c->in, 16384);
		n = read(c->fd, c->in.data + c->in.len,
			 c->in.cap - c->in.len - 1);
		if (n > 0) {
			c->in.len += (size_t)n;
			c->in.data[c->in.len] = '\0';
		} else if (n == 0) {
			return -1;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return 0;
		} else if (errno != EINTR) {
			return -1;
		}
	}
}

/* Sends what it can of `out`. When all is sent in state WRITE, goes back to
 * READ or closes. Returns -1 when the connection was closed. */
static int conn_flush(mock_conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + c->out_off,
				 c->out.len - c->out_off, MSG_NOSIGNAL);

		if (n > 0)
			c->out_off += (size_t)n;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		else if (n < 0 && errno == EINTR)
			continue;
		else
			goto out_close;
	}
	c->out.len = c->out_off = 0;
	if (c->state != C_WRITE)
		return 0;
	if (c->close_after)
		goto out_close;
	c->state = C_READ;
	return 0;
out_close:
	mock__conn_close(c);
	return -1;
}

static int conn_apply(mock_conn *c, mock_reply *r)
{
	mock_server *s = c->srv;

	c->holds_slot = r->holds_slot;
	c->slot_since = mock_loop_now(s->loop);
	c->close_after = r->close;
	switch (r->kind) {
	case MOCK_REPLY_NOW:
		mock_buf_add(&c->out, r->out.data, r->out.len);
		c->state = C_WRITE;
		return conn_flush(c);
	case MOCK_REPLY_LATER:
		c->pending = r->out;
		r->out = (mock_buf){ 0 };
		c->state = C_WAIT;
		mock_timer_start(s->loop, &c->timer, r->delay_ms);
		return 0;
	case MOCK_REPLY_STALL:
		c->state = C_STALL;
		mock_timer_start(s->loop, &c->timer, r->delay_ms);
		return 0;
	case MOCK_REPLY_DROP:
		break;
	}
	mock__conn_close(c);
	return -1;
}

/* Handles the complete requests in `in`, one at a time. Returns -1 when
 * the connection was closed. */
static int conn_process(mock_conn *c)
{
	while (c->state == C_READ) {
		mock_http_req req;
		mock_reply r = { 0 };
		int rc = mock_http_parse(c->in.data ? c->in.data : "",
					 c->in.len, &req);

		if (rc == MOCK_HTTP_INCOMPLETE)
			return 0;
		if (rc > 0) {
			mock__error(&r, rc, "invalid_request_error",
				    "bad_http_request", NULL,
				    "the HTTP request could not be parsed "
				    "(chunked bodies are not supported: send "
				    "Content-Length)");
			r.close = 1;
		} else if (c->in.len < req.head_len + req.body_len) {
			if (req.expect_continue && !c->sent_continue) {
				c->sent_continue = 1;
				mock_buf_adds(&c->out,
					      "HTTP/1.1 100 Continue\r\n\r\n");
				return conn_flush(c);
			}
			return 0;
		} else {
			mock__route(c->srv, c->in.data, &req, &r);
			mock_buf_consume(&c->in, req.head_len + req.body_len);
			c->sent_continue = 0;
		}
		rc = conn_apply(c, &r);
		mock_buf_release(&r.out);
		if (rc)
			return -1;
	}
	return 0;
}

static void on_io(mock_io *io, uint32_t events)
{
	mock_conn *c = CONN_OF(io, io);

	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		if (conn_read(c)) {
			mock__conn_close(c);
			return;
		}
	}
	if ((events & EPOLLOUT) && conn_flush(c))
		return;
	if (c->state == C_READ)
		conn_process(c);
}

static void on_timer(mock_timer *t)
{
	mock_conn *c = CONN_OF(t, timer);

	if (c->holds_slot)
		free_slot(c);
	if (c->state == C_STALL) {
		mock__conn_close(c);
		return;
	}
	mock_buf_add(&c->out, c->pending.data, c->pending.len);
	mock_buf_release(&c->pending);
	c->state = C_WRITE;
	if (conn_flush(c) == 0 && c->state == C_READ)
		conn_process(c);
}

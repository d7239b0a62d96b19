/*
 * server.h — the mock LLM server: a listening socket, its connections and
 * the routes, all on one mock_loop in one thread.
 *
 * Files: server.c (listen, accept, signals, run), conn.c (one connection:
 * read, parse, wait, write), route.c (the chat endpoints), admin.c (the
 * admin ones).
 */
#ifndef MOCK_SERVER_H
#define MOCK_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "http.h"
#include "loop.h"
#include "policy.h"

typedef struct mock_conn mock_conn;

typedef struct mock_server {
	mock_loop *loop;
	mock_cfg cfg;           /* owned; replaced by POST /admin/config */
	mock_policy *policy;
	int lfd;                /* listening socket */
	mock_io lio;
	int sfd;                /* signalfd for SIGINT, SIGTERM */
	mock_io sio;
	int spare_fd;           /* closed to accept-and-drop on EMFILE */
	mock_conn *conns;       /* every open connection */
	long port;              /* the port actually bound */
} mock_server;

/*
 * Takes over cfg (moved: the caller must not release it), binds and
 * listens on cfg->bind:cfg->port, blocks SIGINT/SIGTERM into a signalfd.
 * Returns 0, or -1 with a message in err. Release with mock_server_release
 * either way.
 */
int mock_server_init(mock_server *s, mock_cfg *cfg, char *err, size_t n);
/* Serves until SIGINT or SIGTERM. Returns 0, or -errno. */
int mock_server_run(mock_server *s);
/* Closes every connection and frees everything. */
void mock_server_release(mock_server *s);

/* -------------------------------------------- between conn.c and route.c */

typedef enum mock_reply_kind {
	MOCK_REPLY_NOW,    /* write `out` now */
	MOCK_REPLY_LATER,  /* write `out` after delay_ms */
	MOCK_REPLY_STALL,  /* close after delay_ms without answering */
	MOCK_REPLY_DROP    /* close now */
} mock_reply_kind;

typedef struct mock_reply {
	mock_reply_kind kind;
	mock_buf out;        /* the response bytes (head and body) */
	uint64_t delay_ms;
	int close;           /* close once `out` is written */
	int holds_slot;      /* a concurrency slot to free when answered */
} mock_reply;

/* Answers one complete request: buf holds its head and body as described
 * by req. Fills r (zero it first; the caller releases r->out). */
void mock__route(mock_server *s, const char *buf, const mock_http_req *req,
		 mock_reply *r);

/* Answers an admin or health request into r and returns 1; 0 when the
 * path is not one (admin.c). */
int mock__route_admin(mock_server *s, const char *buf,
		      const mock_http_req *req, mock_reply *r);
/* A 405 with "Allow: allow". */
void mock__not_allowed(mock_reply *r, const char *allow);

/* Builds an error answer with an OpenAI-style body into r->out. `extra`
 * is more header lines (CRLF-terminated) or NULL. */
void mock__error(mock_reply *r, int status, const char *type,
		 const char *code, const char *extra, const char *msg);

/* Accepts a new connection on fd (non-blocking). Returns 0 or -errno. */
int mock__conn_open(mock_server *s, int fd);
/* Closes and frees a connection. */
void mock__conn_close(mock_conn *c);

#endif

/*
 * http.h — the HTTP/1.1 request parser and response writer of the mock LLM
 * server. The parser never modifies or keeps the buffer: it reports spans
 * (offset, length) into it, so the caller can re-run it as bytes arrive.
 */
#ifndef MOCK_HTTP_H
#define MOCK_HTTP_H

#include <stddef.h>

#include "buf.h"

enum {
	MOCK_HTTP_MAX_HEAD = 64 * 1024,        /* request line + headers */
	MOCK_HTTP_MAX_BODY = 16 * 1024 * 1024, /* Content-Length */
	MOCK_HTTP_INCOMPLETE = -1              /* parser: need more bytes */
};

typedef struct mock_span {
	size_t off, len;
} mock_span;

typedef struct mock_http_req {
	mock_span method;
	mock_span path;          /* target up to '?' */
	mock_span query;         /* after '?', empty when none */
	mock_span authorization; /* header value, len 0 when absent */
	mock_span api_key;       /* "api-key" header value */
	int keep_alive;          /* 1.1 default, or "Connection: keep-alive" */
	int expect_continue;     /* "Expect: 100-continue" */
	size_t head_len;         /* bytes up to and including the blank line */
	size_t body_len;         /* Content-Length, 0 when absent */
} mock_http_req;

/*
 * Parses the head at the start of buf[0..len). Returns 0 when the whole
 * head is there (the body may not be yet: compare len with head_len +
 * body_len), MOCK_HTTP_INCOMPLETE when the head is not complete, or an HTTP
 * status to answer before closing: 400 (malformed), 411 (chunked or other
 * Transfer-Encoding), 413 (body too large), 431 (head too large), 505.
 */
int mock_http_parse(const char *buf, size_t len, mock_http_req *req);

/* 1 when the span equals s (case-sensitive). */
int mock_span_eq(const char *buf, mock_span sp, const char *s);
/* Copies the span into a new string (caller frees). */
char *mock_span_dup(const char *buf, mock_span sp);

/* The reason phrase for a status ("Unknown" for others). */
const char *mock_http_reason(int status);

/*
 * Appends a response head to out: status line, Content-Type:
 * application/json, Content-Length: content_length, "Connection: close"
 * when close is set, and `extra` (already CRLF-terminated header lines, or
 * NULL), then the blank line.
 */
void mock_http_head(mock_buf *out, int status, size_t content_length,
		    int close, const char *extra);

#endif

/* buf.c — growable byte buffer and allocation helpers (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(void)
{
	fputs("elspeth-mock-llm: out of memory\n", stderr);
	abort();
}

void *mock_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *mock_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		oom();
	return q;
}

char *mock_xstrndup(const char *s, size_t n)
{
	char *d = mock_xmalloc(n + 1);

	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *mock_xstrdup(const char *s)
{
	return mock_xstrndup(s, strlen(s));
}

void mock_buf_release(mock_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void mock_buf_reserve(mock_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	size_t cap = b->cap ? b->cap : 256;

	if (need <= b->cap)
		return;
	while (cap < need)
		cap *= 2;
	b->data = mock_xrealloc(b->data, cap);
	b->cap = cap;
}

void mock_buf_add(mock_buf *b, const void *p, size_t n)
{
	mock_buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void mock_buf_adds(mock_buf *b, const char *s)
{
	mock_buf_add(b, s, strlen(s));
}

void mock_buf_addf(mock_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	mock_buf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void mock_buf_consume(mock_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

char *mock_buf_detach(mock_buf *b, size_t *len)
{
	char *p;

	if (!b->data)
		mock_buf_reserve(b, 0);
	p = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return p;
}

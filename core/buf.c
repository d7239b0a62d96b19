/* buf.c — growable byte buffers. */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

void core_buf_init(core_buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void core_buf_release(core_buf *b)
{
	free(b->data);
	core_buf_init(b);
}

void core_buf_reset(core_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

int core_buf_reserve(core_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1, cap = b->cap ? b->cap : 64;
	char *p;

	if (need <= b->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return CORE_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int core_buf_append(core_buf *b, const void *p, size_t n)
{
	if (core_buf_reserve(b, n))
		return CORE_ENOMEM;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int core_buf_putc(core_buf *b, char c)
{
	return core_buf_append(b, &c, 1);
}

int core_buf_puts(core_buf *b, const char *s)
{
	return core_buf_append(b, s, strlen(s));
}

int core_buf_vprintf(core_buf *b, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0 || core_buf_reserve(b, (size_t)n)) {
		va_end(again);
		return CORE_ENOMEM;
	}
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
	va_end(again);
	b->len += (size_t)n;
	return 0;
}

int core_buf_printf(core_buf *b, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = core_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *core_buf_steal(core_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	core_buf_init(b);
	return p;
}

/*
 * buf.h — a growable byte buffer for the mock LLM server (bench/mock_llm).
 *
 * Zero-initialise a mock_buf before use; mock_buf_release frees it. `data`
 * stays NUL-terminated whenever it is non-NULL, so text can be read as a C
 * string. Out of memory aborts the process: the mock is a test tool and
 * has nothing better to do.
 */
#ifndef MOCK_BUF_H
#define MOCK_BUF_H

#include <stddef.h>

#if defined(__GNUC__)
#define MOCK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define MOCK_PRINTF(f, a)
#endif

typedef struct mock_buf {
	char *data;
	size_t len;
	size_t cap;
} mock_buf;

void mock_buf_release(mock_buf *b);
/* Makes room for `extra` more bytes (plus the NUL). */
void mock_buf_reserve(mock_buf *b, size_t extra);
void mock_buf_add(mock_buf *b, const void *p, size_t n);
void mock_buf_adds(mock_buf *b, const char *s);
void mock_buf_addf(mock_buf *b, const char *fmt, ...) MOCK_PRINTF(2, 3);
/* Removes the first n bytes (n <= len). */
void mock_buf_consume(mock_buf *b, size_t n);
/* Hands the bytes to the caller (free() them) and empties b. Never NULL. */
char *mock_buf_detach(mock_buf *b, size_t *len);

/* malloc/realloc/strdup that abort on failure. */
void *mock_xmalloc(size_t n);
void *mock_xrealloc(void *p, size_t n);
char *mock_xstrdup(const char *s);
char *mock_xstrndup(const char *s, size_t n);

#endif

/*
 * utf8.c — well-formed UTF-8 (RFC 3629, the rules jansson applies): no
 * overlong forms, no surrogates, nothing above U+10FFFF. Every module
 * decodes, checks, counts and cuts UTF-8 through these functions, so what
 * counts as a character is the same in canonical JSON, gate expressions,
 * sources, templates and LLM requests.
 */
#include <string.h>

#include "core/core.h"

#define UTF8_CONT(ch) (((unsigned char)(ch) & 0xC0) == 0x80)

size_t core_utf8_decode(const char *p, size_t n, uint32_t *cp)
{
	const unsigned char *s = (const unsigned char *)p;
	unsigned char c;
	size_t len, i;
	uint32_t v;

	if (!n)
		return 0;
	c = s[0];
	if (c < 0x80) {
		len = 1;
		v = c;
	} else if (c < 0xC2 || c > 0xF4) {
		return 0; /* a continuation, an overlong lead, past U+10FFFF */
	} else {
		len = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
		if (n < len)
			return 0;
		for (i = 1; i < len; i++)
			if (!UTF8_CONT(s[i]))
				return 0;
		/* The second byte's range is what is left to check. */
		if ((c == 0xE0 && s[1] < 0xA0) || /* overlong */
		    (c == 0xED && s[1] > 0x9F) || /* surrogate */
		    (c == 0xF0 && s[1] < 0x90) || /* overlong */
		    (c == 0xF4 && s[1] > 0x8F))   /* above U+10FFFF */
			return 0;
		v = c & (0x3Fu >> (len - 1));
		for (i = 1; i < len; i++)
			v = v << 6 | (s[i] & 0x3Fu);
	}
	if (cp)
		*cp = v;
	return len;
}

size_t core_utf8_encode(uint32_t cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp >= 0xD800 && cp <= 0xDFFF)
		return 0;
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	if (cp > 0x10FFFF)
		return 0;
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

size_t core_utf8_check(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, k;
	uint64_t w;

	while (i < n) {
		while (i + 8 <= n) { /* ASCII runs, eight bytes at a time */
			memcpy(&w, u + i, 8);
			if (w & 0x8080808080808080ULL)
				break;
			i += 8;
		}
		if (i >= n)
			break;
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		k = core_utf8_decode(s + i, n - i, NULL);
		if (!k)
			return i;
		i += k;
	}
	return n;
}

bool core_utf8_valid(const char *s, size_t n)
{
	return core_utf8_check(s, n) == n;
}

int core_utf8_append_lossy(core_buf *b, const char *s, size_t n)
{
	size_t i = 0, ok;

	while (i < n) {
		ok = core_utf8_check(s + i, n - i);
		if (core_buf_append(b, s + i, ok))
			return CORE_ENOMEM;
		i += ok;
		if (i < n) {
			if (core_buf_append(b, "\xEF\xBF\xBD", 3))
				return CORE_ENOMEM;
			i++;
		}
	}
	return 0;
}

size_t core_utf8_count(const char *s, size_t n)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !UTF8_CONT(s[i]);
	return c;
}

size_t core_utf8_prefix(const char *s, size_t n, size_t count)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!UTF8_CONT(s[i]) && count-- == 0)
			break;
	return i;
}

size_t core_utf8_cut(const char *s, size_t n)
{
	while (n && UTF8_CONT(s[n]))
		n--;
	return n;
}

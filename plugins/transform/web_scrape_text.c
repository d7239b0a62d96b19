/*
 * web_scrape_text.c — a body decoded to text, whitespace as Python sees
 * it, and ELSPETH's fingerprint (web_scrape_internal.h, "text").
 */
#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plugins/transform/web_scrape_internal.h"

bool ws__isspace(uint32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) ||
	       cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* ------------------------------------------------------------- decoding */

void ws__charset(const char *ct, char *out, size_t n)
{
	const char *p = ct ? strchr(ct, ';') : NULL;
	size_t len = 0;

	out[0] = '\0';
	while (p && *p) {
		p += strspn(p, "; \t");
		if (!strncasecmp(p, "charset", 7)) {
			const char *v = p + 7;

			v += strspn(v, " \t");
			if (*v == '=') {
				v++;
				v += strspn(v, " \t\"'");
				while (v[len] && !strchr("; \t\"'", v[len]) && len + 1 < n) {
					out[len] = (char)tolower((unsigned char)v[len]);
					len++;
				}
				out[len] = '\0';
				return;
			}
		}
		p = strchr(p, ';');
	}
}

/* The length of the maximal prefix of s that could begin a well-formed
 * UTF-8 sequence (at least 1): what Python replaces by one U+FFFD. */
static size_t bad_run(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need, i;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		need = 2;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		need = 3;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 1;
	for (i = 1; i <= need && i < n; i++) {
		if (s[i] < lo || s[i] > hi)
			break;
		lo = 0x80;
		hi = 0xbf;
	}
	return i;
}

static int utf8_lossy(const char *s, size_t n, core_buf *out)
{
	static const char fffd[] = "\xef\xbf\xbd";
	size_t i = 0;

	while (i < n) {
		size_t ok = core_utf8_check(s + i, n - i);

		if (core_buf_append(out, s + i, ok))
			return CORE_ENOMEM;
		i += ok;
		if (i < n) {
			if (core_buf_append(out, fffd, 3))
				return CORE_ENOMEM;
			i += bad_run((const unsigned char *)s + i, n - i);
		}
	}
	return 0;
}

static int with_iconv(iconv_t cd, const char *s, size_t n, core_buf *out)
{
	char *in = (char *)s;
	size_t left = n;

	while (left) {
		char *o;
		size_t room, r;

		if (core_buf_reserve(out, left * 4 + 16))
			return CORE_ENOMEM;
		o = out->data + out->len;
		room = out->cap - out->len - 1;
		r = iconv(cd, &in, &left, &o, &room);
		out->len = (size_t)(o - out->data);
		out->data[out->len] = '\0';
		if (r != (size_t)-1 || errno == E2BIG)
			continue;
		/* EILSEQ or EINVAL (cut short at the end): one U+FFFD */
		if (core_buf_append(out, "\xef\xbf\xbd", 3))
			return CORE_ENOMEM;
		in++;
		left--;
		iconv(cd, NULL, NULL, NULL, NULL);
	}
	return 0;
}

int ws__decode(const char *body, size_t len, const char *content_type,
	       core_buf *out)
{
	char cs[64];
	iconv_t cd;
	int rc;

	ws__charset(content_type, cs, sizeof(cs));
	if (!cs[0] || !strcmp(cs, "utf-8") || !strcmp(cs, "utf8"))
		return utf8_lossy(body, len, out);
	cd = iconv_open("UTF-8", cs);
	if (cd == (iconv_t)-1)
		return utf8_lossy(body, len, out);
	rc = with_iconv(cd, body, len, out);
	iconv_close(cd);
	return rc;
}

/* ----------------------------------------------------------- whitespace */

/* The code point at s (valid UTF-8) and its length. */
static size_t next(const char *s, size_t n, uint32_t *cp)
{
	size_t k = core_utf8_decode(s, n, cp);

	if (!k) {
		*cp = (unsigned char)s[0];
		k = 1;
	}
	return k;
}

/* Where [s, s+n) ends once trailing whitespace is cut. */
static size_t rstrip_len(const char *s, size_t n)
{
	size_t end = 0, i = 0;
	uint32_t cp;

	while (i < n) {
		size_t k = next(s + i, n - i, &cp);

		i += k;
		if (!ws__isspace(cp))
			end = i;
	}
	return end;
}

int ws__strip_append(core_buf *out, const char *s, size_t n)
{
	size_t i = 0, end = rstrip_len(s, n);
	uint32_t cp;

	while (i < end) {
		size_t k = next(s + i, end - i, &cp);

		if (!ws__isspace(cp))
			break;
		i += k;
	}
	return core_buf_append(out, s + i, end - i);
}

int ws__collapse_append(core_buf *out, const char *s, size_t n)
{
	size_t i = 0;
	bool in_space = false;
	uint32_t cp;

	while (i < n) {
		size_t k = next(s + i, n - i, &cp);

		if (ws__isspace(cp)) {
			if (!in_space && core_buf_putc(out, ' '))
				return CORE_ENOMEM;
			in_space = true;
		} else {
			if (core_buf_append(out, s + i, k))
				return CORE_ENOMEM;
			in_space = false;
		}
		i += k;
	}
	return 0;
}

int ws__fingerprint(const char *s, size_t n, bool content_mode,
		    char hex[CORE_SHA256_HEX_LEN + 1])
{
	core_buf a = { 0 }, b = { 0 };
	uint8_t d[CORE_SHA256_LEN];
	int rc = 0;

	if (content_mode) {
		if ((rc = ws__collapse_append(&a, s, n)) ||
		    (rc = ws__strip_append(&b, a.data ? a.data : "", a.len)))
			goto out;
		s = b.data ? b.data : "";
		n = b.len;
	}
	core_sha256(s, n, d);
	core_hex(d, sizeof(d), hex);
out:
	core_buf_release(&a);
	core_buf_release(&b);
	return rc;
}

/*
 * text.c — Python's str methods that templates apply to UTF-8 text:
 * str.isspace() (for trim and whitespace control) and str.upper() /
 * str.lower() for ASCII, Latin-1, Latin Extended-A, Greek and basic
 * Cyrillic.
 */
#include "plugins/template/template_internal.h"

/* The code point at s (n > 0 bytes left) into *cp and its length; a byte
 * that starts no valid sequence is 1 with *cp = 0xFFFFFFFF (such bytes
 * are passed through unchanged). */
size_t tpl__utf8_dec(const char *s, size_t n, uint32_t *cp)
{
	size_t len = core_utf8_decode(s, n, cp);

	if (len)
		return len;
	*cp = 0xFFFFFFFF;
	return 1;
}

/* Python's str.isspace() (what str.strip() and regex \s remove). */
static bool is_pyspace(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) ||
	       c == 0x85 || c == 0xA0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
	       c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Bytes of leading whitespace of s[0..n). */
size_t tpl__lspace(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t c;
		size_t k = tpl__utf8_dec(s + i, n - i, &c);

		if (!is_pyspace(c))
			break;
		i += k;
	}
	return i;
}

/* The length of s[0..n) without its trailing whitespace. */
size_t tpl__rstrip(const char *s, size_t n)
{
	size_t end = 0;

	for (size_t i = 0; i < n;) {
		uint32_t c;

		i += tpl__utf8_dec(s + i, n - i, &c);
		if (!is_pyspace(c))
			end = i;
	}
	return end;
}

/* Pairs laid out as alternating upper/lower code points in [lo, hi]; the
 * upper case of each pair is at an even (odd_upper: odd) code point. */
static uint32_t pair_case(uint32_t c, bool upper, bool odd_upper)
{
	bool is_upper = (c & 1) == (odd_upper ? 1u : 0u);

	if (upper)
		return is_upper ? c : c - 1;
	return is_upper ? c + 1 : c;
}

/* Latin Extended-A, U+0100..U+017F. Returns the count written to out. */
static size_t case_latin_a(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if (c == 0x130 && !upper) { /* İ -> i + combining dot above */
		out[0] = 'i';
		out[1] = 0x307;
		return 2;
	}
	if (c == 0x131 || c == 0x17F) /* ı, ſ */
		out[0] = upper ? (c == 0x131 ? 'I' : 'S') : c;
	else if (c == 0x149 && upper) { /* ŉ -> ʼN */
		out[0] = 0x2BC;
		out[1] = 'N';
		return 2;
	} else if (c == 0x178)
		out[0] = upper ? c : 0xFF;
	else if (c < 0x138 && c != 0x130)
		out[0] = pair_case(c, upper, false);
	else if (c >= 0x139 && c <= 0x148)
		out[0] = pair_case(c, upper, true);
	else if (c >= 0x14A && c <= 0x177)
		out[0] = pair_case(c, upper, false);
	else if (c >= 0x179 && c <= 0x17E)
		out[0] = pair_case(c, upper, true);
	return 1;
}

static size_t case_greek(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if ((c == 0x390 || c == 0x3B0) && upper) { /* ΐ, ΰ: three points */
		out[0] = c == 0x390 ? 0x399 : 0x3A5;
		out[1] = 0x308;
		out[2] = 0x301;
		return 3;
	}
	if (upper) {
		if (c >= 0x3B1 && c <= 0x3CB)
			out[0] = c == 0x3C2 ? 0x3A3 : c - 0x20;
		else if (c == 0x3AC)
			out[0] = 0x386;
		else if (c >= 0x3AD && c <= 0x3AF)
			out[0] = c - 0x25;
		else if (c == 0x3CC)
			out[0] = 0x38C;
		else if (c == 0x3CD || c == 0x3CE)
			out[0] = c - 0x3F;
	} else {
		if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
			out[0] = c + 0x20;
		else if (c == 0x386)
			out[0] = 0x3AC;
		else if (c >= 0x388 && c <= 0x38A)
			out[0] = c + 0x25;
		else if (c == 0x38C)
			out[0] = 0x3CC;
		else if (c == 0x38E || c == 0x38F)
			out[0] = c + 0x3F;
	}
	return 1;
}

/*
 * Python's str.upper()/lower() for ASCII, Latin-1, Latin Extended-A, Greek
 * and basic Cyrillic (U+0400..U+045F); other characters are unchanged.
 * The context-dependent Greek final sigma of lower() is not applied.
 */
static size_t case_map(uint32_t c, bool upper, uint32_t out[3])
{
	out[0] = c;
	if (c < 0x80) {
		if (upper && c >= 'a' && c <= 'z')
			out[0] = c - 32;
		else if (!upper && c >= 'A' && c <= 'Z')
			out[0] = c + 32;
	} else if (c < 0x100) {
		if (upper && c == 0xDF) { /* ß -> SS */
			out[0] = out[1] = 'S';
			return 2;
		}
		if (upper && c == 0xB5)
			out[0] = 0x39C;
		else if (upper && c == 0xFF)
			out[0] = 0x178;
		else if (upper && c >= 0xE0 && c != 0xF7)
			out[0] = c - 32;
		else if (!upper && c >= 0xC0 && c <= 0xDE && c != 0xD7)
			out[0] = c + 32;
	} else if (c < 0x180) {
		return case_latin_a(c, upper, out);
	} else if (c >= 0x386 && c <= 0x3CE) {
		return case_greek(c, upper, out);
	} else if (c >= 0x400 && c <= 0x45F) {
		if (upper && c >= 0x430)
			out[0] = c >= 0x450 ? c - 80 : c - 32;
		else if (!upper && c < 0x430)
			out[0] = c < 0x410 ? c + 80 : c + 32;
	}
	return 1;
}

int tpl__append_case(core_buf *b, const char *s, size_t n, bool upper)
{
	for (size_t i = 0; i < n;) {
		uint32_t c, m[3];
		size_t k = tpl__utf8_dec(s + i, n - i, &c);
		char enc[12];
		size_t elen = 0;

		if (c == 0xFFFFFFFF) {
			if (core_buf_append(b, s + i, k))
				return CORE_ENOMEM;
			i += k;
			continue;
		}
		for (size_t j = 0, nm = case_map(c, upper, m); j < nm; j++)
			elen += core_utf8_encode(m[j], enc + elen);
		if (core_buf_append(b, enc, elen))
			return CORE_ENOMEM;
		i += k;
	}
	return 0;
}

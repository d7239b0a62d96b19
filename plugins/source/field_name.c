/*
 * field_name.c — ELSPETH's normalization of a CSV header name (its
 * normalize_field_name, algorithm 1.0.0): trim, lowercase, every run of
 * characters that are not word characters becomes one '_', no '_' at
 * either end, '_' before a leading digit, '_' after a Python keyword.
 * "Customer ID!!" is customer_id, "Status [Active/Inactive]" is
 * status_active_inactive.
 *
 * Python decides "word character" and "lowercase" with its Unicode
 * database and first composes the name (NFC). Here: ASCII exactly;
 * beyond it, lowercase for Latin-1, Latin Extended-A, Greek and Cyrillic,
 * and the punctuation, symbol and space blocks are not word characters
 * (everything else, letters of every script, is). Names are not composed:
 * a decomposed accent is kept as its own character. docs/settings.md
 * ("ELSPETH compatibility") says so.
 */
#include <ctype.h>
#include <string.h>

#include "plugins/plugins_internal.h"

static bool is_word(uint32_t c)
{
	if (c < 0x80)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		       (c >= 'A' && c <= 'Z') || c == '_';
	if (c <= 0xbf) /* Latin-1 punctuation, but for ª ² ³ µ ¹ º ¼ ½ ¾ */
		return c == 0xaa || c == 0xb2 || c == 0xb3 || c == 0xb5 ||
		       c == 0xb9 || c == 0xba || (c >= 0xbc && c <= 0xbe);
	if (c == 0xd7 || c == 0xf7)
		return false;
	return !((c >= 0x2000 && c <= 0x206f) || (c >= 0x20a0 && c <= 0x20cf) ||
		 (c >= 0x2190 && c <= 0x2bff) || (c >= 0x3000 && c <= 0x3004) ||
		 (c >= 0x3008 && c <= 0x3020) || (c >= 0xfe30 && c <= 0xfe4f) ||
		 (c >= 0xff00 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
		 (c >= 0x1f000 && c <= 0x1faff) || c == 0xfeff);
}

static uint32_t lower(uint32_t c)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 0xc0 && c <= 0xde && c != 0xd7) ||
	    (c >= 0x391 && c <= 0x3ab && c != 0x3a2) || (c >= 0x410 && c <= 0x42f))
		return c + 0x20;
	if (c >= 0x400 && c <= 0x40f)
		return c + 0x50;
	if (c == 0x178)
		return 0xff;
	if ((c >= 0x100 && c <= 0x137 && !(c & 1) && c != 0x130) ||
	    (c >= 0x14a && c <= 0x177 && !(c & 1)))
		return c + 1;
	if ((c >= 0x139 && c <= 0x148 && (c & 1)) ||
	    (c >= 0x179 && c <= 0x17e && (c & 1)))
		return c + 1;
	return c;
}

static bool is_keyword(const char *s)
{
	static const char *const kw[] = {
		"and", "as", "assert", "async", "await", "break", "class",
		"continue", "def", "del", "elif", "else", "except", "finally",
		"for", "from", "global", "if", "import", "in", "is", "lambda",
		"nonlocal", "not", "or", "pass", "raise", "return", "try",
		"while", "with", "yield", NULL
	};

	for (size_t i = 0; kw[i]; i++)
		if (!strcmp(s, kw[i]))
			return true;
	return false;
}

int plg__field_name(const char *raw, size_t n, core_buf *out)
{
	bool gap = false; /* non-word characters since the last word one */
	int rc = 0;

	core_buf_reset(out);
	if (core_buf_putc(out, '_')) /* room for a '_' before a digit */
		return CORE_ENOMEM;
	for (size_t i = 0; !rc && i < n;) {
		uint32_t c;
		size_t k = core_utf8_decode(raw + i, n - i, &c);
		char u[4];

		if (!k) {
			c = 0xfffd;
			k = 1;
		}
		i += k;
		if (c == '_' || !is_word(c)) {
			gap = true;
			continue;
		}
		/* one '_' for a run of '_' and non-word characters, none first */
		if (gap && out->len > 1)
			rc = core_buf_putc(out, '_');
		gap = false;
		if (!rc)
			rc = core_buf_append(out, u, core_utf8_encode(lower(c), u));
	}
	if (rc)
		return CORE_ENOMEM;
	if (out->len > 1 && out->data[1] >= '0' && out->data[1] <= '9')
		return 0; /* "_2024_total" */
	memmove(out->data, out->data + 1, out->len--); /* with the NUL */
	if (is_keyword(out->data) && core_buf_putc(out, '_'))
		return CORE_ENOMEM;
	return 0;
}

bool plg__py_identifier(const char *s)
{
	static const char *const consts[] = { "False", "None", "True", NULL };

	if (!s || !*s || (*s >= '0' && *s <= '9') || is_keyword(s))
		return false;
	for (size_t i = 0; consts[i]; i++)
		if (!strcmp(s, consts[i]))
			return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x80 && !isalnum(*p) && *p != '_')
			return false;
	return core_utf8_valid(s, strlen(s));
}

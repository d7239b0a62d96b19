/* test_core_utf8.c — decoding, encoding, checking, lossy copying, counting
 * and cutting UTF-8 (core/utf8.c). */
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

/* core_utf8_decode of the string literal s (its bytes without the NUL). */
#define DECODE(s, cp) core_utf8_decode((s), sizeof(s) - 1, (cp))

static void assert_decodes(const char *s, size_t n, uint32_t want)
{
	uint32_t cp = 0xFFFFFFFF;

	cr_assert_eq(core_utf8_decode(s, n, &cp), n, "U+%04X: length",
		     (unsigned)want);
	cr_assert_eq(cp, want, "got U+%04X, want U+%04X", (unsigned)cp,
		     (unsigned)want);
}

static void assert_invalid(const char *s, size_t n, const char *why)
{
	uint32_t cp = 12345;

	cr_assert_eq(core_utf8_decode(s, n, &cp), 0, "%s", why);
	cr_assert_eq(cp, 12345, "%s: *cp changed on error", why);
	cr_assert_eq(core_utf8_check(s, n), 0, "%s: check", why);
}

/* ------------------------------------------------------------ decode */

Test(core_utf8, decode_gives_length_and_code_point)
{
	assert_decodes("A", 1, 'A');
	assert_decodes("", 1, 0); /* the NUL byte is U+0000 */
	assert_decodes("\x7F", 1, 0x7F);
	assert_decodes("\xC2\x80", 2, 0x80);
	assert_decodes("\xC3\xA9", 2, 0xE9);
	assert_decodes("\xDF\xBF", 2, 0x7FF);
	assert_decodes("\xE0\xA0\x80", 3, 0x800);
	assert_decodes("\xE2\x82\xAC", 3, 0x20AC);
	assert_decodes("\xED\x9F\xBF", 3, 0xD7FF);
	assert_decodes("\xEE\x80\x80", 3, 0xE000);
	assert_decodes("\xEF\xBF\xBF", 3, 0xFFFF);
	assert_decodes("\xF0\x90\x80\x80", 4, 0x10000);
	assert_decodes("\xF0\x9F\x98\x80", 4, 0x1F600);
	assert_decodes("\xF4\x8F\xBF\xBF", 4, 0x10FFFF);
}

Test(core_utf8, decode_reads_one_sequence_and_takes_null_cp)
{
	cr_assert_eq(DECODE("\xC3\xA9xyz", NULL), 2);
	cr_assert_eq(DECODE("a\xFF", NULL), 1);
}

Test(core_utf8, decode_rejects_overlong_forms)
{
	assert_invalid("\xC0\xAF", 2, "C0 AF ('/' in two bytes)");
	assert_invalid("\xC1\xBF", 2, "C1 BF");
	assert_invalid("\xE0\x80\xAF", 3, "E0 80 AF");
	assert_invalid("\xE0\x9F\xBF", 3, "E0 9F BF (U+07FF in three bytes)");
	assert_invalid("\xF0\x80\x80\xAF", 4, "F0 80 80 AF");
	assert_invalid("\xF0\x8F\xBF\xBF", 4, "F0 8F BF BF (U+FFFF in four bytes)");
}

Test(core_utf8, decode_rejects_surrogates)
{
	assert_invalid("\xED\xA0\x80", 3, "U+D800");
	assert_invalid("\xED\xAF\xBF", 3, "U+DBFF");
	assert_invalid("\xED\xB0\x80", 3, "U+DC00");
	assert_invalid("\xED\xBF\xBF", 3, "U+DFFF");
}

Test(core_utf8, decode_rejects_code_points_above_10ffff)
{
	assert_invalid("\xF4\x90\x80\x80", 4, "U+110000");
	assert_invalid("\xF5\x80\x80\x80", 4, "F5 lead");
	assert_invalid("\xF7\xBF\xBF\xBF", 4, "F7 lead");
	assert_invalid("\xF8\x88\x80\x80\x80", 5, "five-byte form");
	assert_invalid("\xFF", 1, "FF");
}

Test(core_utf8, decode_rejects_truncated_sequences)
{
	assert_invalid("\xC3", 1, "two-byte lead alone");
	assert_invalid("\xE2\x82", 2, "three-byte sequence cut after two");
	assert_invalid("\xF0\x9F\x98", 3, "four-byte sequence cut after three");
	/* n bounds the read even when more bytes follow in memory */
	cr_assert_eq(core_utf8_decode("\xE2\x82\xAC", 2, NULL), 0);
	cr_assert_eq(core_utf8_decode("A", 0, NULL), 0, "n == 0");
}

Test(core_utf8, decode_rejects_bad_continuation_bytes)
{
	assert_invalid("\x80", 1, "a lone continuation byte");
	assert_invalid("\xBF\x80", 2, "continuation first");
	assert_invalid("\xC3\x41", 2, "ASCII after a lead");
	assert_invalid("\xE2\x28\xA1", 3, "second byte not a continuation");
	assert_invalid("\xE2\x82\x28", 3, "third byte not a continuation");
	assert_invalid("\xF0\x9F\x98\xC3", 4, "fourth byte a lead");
}

/* Every lead byte with every second byte (and continuation bytes after):
 * the same verdict as jansson, whose rules rows already follow. */
Test(core_utf8, check_agrees_with_jansson_on_every_first_two_bytes)
{
	char s[4];

	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			json_t *j;

			s[0] = (char)a;
			s[1] = (char)b;
			s[2] = s[3] = (char)0x80;
			for (size_t n = 1; n <= 4; n++) {
				j = json_stringn(s, n);
				cr_assert_eq(core_utf8_valid(s, n), j != NULL,
					     "%02X %02X.. (%zu bytes)", a, b, n);
				json_decref(j);
			}
		}
	}
}

/* ------------------------------------------------------------ encode */

Test(core_utf8, encode_round_trips_through_decode)
{
	static const uint32_t cps[] = {
		0, 'A', 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD,
		0xFFFF, 0x10000, 0x1F600, 0x10FFFF
	};
	static const size_t lens[] = { 1, 1, 1, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4 };
	char out[4];
	uint32_t back;

	for (size_t i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		size_t n = core_utf8_encode(cps[i], out);

		cr_assert_eq(n, lens[i], "U+%04X", (unsigned)cps[i]);
		cr_assert_eq(core_utf8_decode(out, n, &back), n);
		cr_assert_eq(back, cps[i], "U+%04X", (unsigned)cps[i]);
	}
	cr_assert_eq(core_utf8_encode(0x20AC, out), 3);
	cr_assert_eq(memcmp(out, "\xE2\x82\xAC", 3), 0);
}

Test(core_utf8, encode_refuses_surrogates_and_values_above_10ffff)
{
	char out[4] = { 'x', 'x', 'x', 'x' };

	cr_assert_eq(core_utf8_encode(0xD800, out), 0);
	cr_assert_eq(core_utf8_encode(0xDFFF, out), 0);
	cr_assert_eq(core_utf8_encode(0x110000, out), 0);
	cr_assert_eq(core_utf8_encode(0xFFFFFFFF, out), 0);
	cr_assert_eq(memcmp(out, "xxxx", 4), 0, "nothing written");
}

/* ------------------------------------------------------------- check */

Test(core_utf8, check_follows_jansson_rules)
{
	cr_assert_eq(core_utf8_check("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", 15), 15);
	cr_assert_eq(core_utf8_check("ab\xC0\xAF", 4), 2, "overlong");
	cr_assert_eq(core_utf8_check("\xED\xA0\x80", 3), 0, "surrogate");
	cr_assert_eq(core_utf8_check("\xF4\x90\x80\x80", 4), 0, "> U+10FFFF");
	cr_assert_eq(core_utf8_check("abcdefghij\xE2\x82", 12), 10, "truncated");
	cr_assert_eq(core_utf8_check("a\0b", 3), 3, "NUL is valid");
}

/* The bad byte is found wherever it sits relative to the eight-byte
 * ASCII steps. */
Test(core_utf8, check_names_the_first_bad_byte_after_ascii_runs)
{
	char s[40];

	for (size_t at = 0; at < 32; at++) {
		memset(s, 'a', sizeof(s));
		s[at] = (char)0xFF;
		cr_assert_eq(core_utf8_check(s, sizeof(s)), at);
		cr_assert_not(core_utf8_valid(s, sizeof(s)));
		memcpy(s + at, "\xC3\xA9", 2);
		cr_assert_eq(core_utf8_check(s, sizeof(s)), sizeof(s));
		cr_assert(core_utf8_valid(s, sizeof(s)));
	}
	cr_assert_eq(core_utf8_check("", 0), 0);
	cr_assert(core_utf8_valid("", 0));
}

/* ------------------------------------------------------------- lossy */

static void assert_lossy(const char *s, size_t n, const char *want)
{
	core_buf b = { 0 };

	cr_assert_eq(core_buf_puts(&b, "<"), 0);
	cr_assert_eq(core_utf8_append_lossy(&b, s, n), 0);
	cr_assert_eq(b.len, 1 + strlen(want));
	cr_assert_eq(memcmp(b.data, "<", 1), 0, "appends after what is there");
	cr_assert_eq(memcmp(b.data + 1, want, b.len - 1), 0);
	core_buf_release(&b);
}

Test(core_utf8, lossy_keeps_valid_text)
{
	assert_lossy("h\xC3\xA9llo \xF0\x9F\x98\x80", 11, "h\xC3\xA9llo \xF0\x9F\x98\x80");
	assert_lossy("", 0, "");
}

Test(core_utf8, lossy_replaces_each_invalid_byte_with_fffd)
{
	assert_lossy("a\xFF" "b", 3, "a\xEF\xBF\xBD" "b");
	assert_lossy("ab\xC0\xAF", 4, "ab\xEF\xBF\xBD\xEF\xBF\xBD");
	assert_lossy("\xED\xA0\x80z", 4,
		     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
	assert_lossy("x\xE2\x82", 3, "x\xEF\xBF\xBD\xEF\xBF\xBD");
	assert_lossy("\xF4\x90\x80\x80\xC3\xA9", 6,
		     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xC3\xA9");
}

/* ---------------------------------------------- count, prefix and cut */

Test(core_utf8, count_counts_code_points)
{
	cr_assert_eq(core_utf8_count("", 0), 0);
	cr_assert_eq(core_utf8_count("abc", 3), 3);
	cr_assert_eq(core_utf8_count("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", 15), 9);
	cr_assert_eq(core_utf8_count("a\0b", 3), 3);
}

Test(core_utf8, count_of_invalid_bytes_counts_the_non_continuations)
{
	cr_assert_eq(core_utf8_count("\xFF\xFE", 2), 2);
	cr_assert_eq(core_utf8_count("\x80\x80", 2), 0);
	cr_assert_eq(core_utf8_count("\xE2\x82", 2), 1);
}

Test(core_utf8, prefix_is_the_bytes_of_the_first_code_points)
{
	const char *s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "b";

	cr_assert_eq(core_utf8_prefix(s, 11, 0), 0);
	cr_assert_eq(core_utf8_prefix(s, 11, 1), 1);
	cr_assert_eq(core_utf8_prefix(s, 11, 2), 3);
	cr_assert_eq(core_utf8_prefix(s, 11, 3), 6);
	cr_assert_eq(core_utf8_prefix(s, 11, 4), 10);
	cr_assert_eq(core_utf8_prefix(s, 11, 5), 11);
	cr_assert_eq(core_utf8_prefix(s, 11, 99), 11, "fewer than asked: all");
}

Test(core_utf8, cut_never_splits_a_sequence)
{
	const char *s = "ab\xE2\x82\xAC" "cd";

	cr_assert_eq(core_utf8_cut(s, 2), 2, "at a boundary: stays");
	cr_assert_eq(core_utf8_cut(s, 3), 2, "inside the euro sign: before it");
	cr_assert_eq(core_utf8_cut(s, 4), 2);
	cr_assert_eq(core_utf8_cut(s, 5), 5);
	cr_assert_eq(core_utf8_cut("\x80\x80\x80", 2), 0, "no boundary: 0");
}

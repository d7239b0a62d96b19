/*
 * fuzz_pyre.c — libFuzzer harness for keyword_filter's translation of
 * Python `re` patterns to PCRE2 (pyre.c).
 *
 * The input is a pattern (up to its first NUL). Checks: a translation
 * either succeeds with a pattern PCRE2 compiles, or fails with a reason;
 * a compiled pattern can be matched against the input itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/transform/pyre_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pat = malloc(size + 1), *out = NULL, why[256] = "";
	pcre2_code *re;
	pcre2_match_data *md;

	if (!pat)
		return 0;
	memcpy(pat, data, size);
	pat[size] = '\0';
	if (plg__pyre_translate(pat, &out, why, sizeof(why))) {
		if (!why[0])
			abort();
		free(pat);
		return 0;
	}
	free(out);
	why[0] = '\0';
	if ((re = plg__pyre_compile(pat, why, sizeof(why)))) {
		md = pcre2_match_data_create_from_pattern(re, NULL);
		if (md)
			(void)pcre2_match(re, (PCRE2_SPTR)pat, strlen(pat), 0, 0, md, NULL);
		pcre2_match_data_free(md);
		pcre2_code_free(re);
	} else if (!why[0]) {
		abort();
	}
	free(pat);
	return 0;
}

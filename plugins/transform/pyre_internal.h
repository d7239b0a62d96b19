/*
 * pyre_internal.h — Python `re` patterns compiled with PCRE2 (pyre.c,
 * ADR 0026), for the transforms that take ELSPETH's regular expressions.
 * Not part of the public contract.
 */
#ifndef ELSPETH_PYRE_INTERNAL_H
#define ELSPETH_PYRE_INTERNAL_H

#include <stddef.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* Rewrites a Python `re` pattern (UTF-8) into the PCRE2 pattern that
 * means the same, or refuses it. 0: *out is the PCRE2 pattern (malloc'd,
 * caller frees). -1: *out is NULL and why (cap bytes) says what is wrong
 * and where ("bad escape \p ... at position 3", a position in
 * characters, as Python counts them). */
int plg__pyre_translate(const char *pattern, char **out, char *why, size_t cap);

/* Translates and compiles pattern for matching UTF-8 text: Unicode
 * classes and case folding (PCRE2_UTF | PCRE2_UCP), LF as the only
 * newline, JIT-compiled when the platform allows. NULL with why filled
 * when the pattern is refused or does not compile. The code is read-only
 * after this: any thread may match with it, each with its own match
 * data. Free with pcre2_code_free. */
pcre2_code *plg__pyre_compile(const char *pattern, char *why, size_t cap);

#endif

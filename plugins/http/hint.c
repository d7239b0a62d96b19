/*
 * hint.c — what providers say about their limits, read from an answer's
 * headers and error body (http_internal.h). Formats, as documented by
 * the providers:
 *
 *   Retry-After                      RFC 9110: delta seconds or an HTTP-date;
 *                                    fractions ("0.35") are accepted too
 *   retry-after-ms                   OpenAI, Azure OpenAI: milliseconds
 *   x-ratelimit-{limit,remaining,reset}-{requests,tokens}
 *                                    OpenAI, Azure; resets as durations
 *                                    ("1s", "6m0s", "20ms")
 *   anthropic-ratelimit-{requests,tokens,input-tokens}-{limit,remaining,reset}
 *                                    Anthropic; resets as RFC 3339 times
 *   "Please try again in 1.234s."    OpenAI error messages; Azure says
 *                                    "Please retry after 6 seconds."
 *
 * Everything is parsed by hand: strptime's month names follow the locale.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/http/http_internal.h"

const char *http__hint_src_name(http_hint_src s)
{
	switch (s) {
	case HTTP_HINT_NONE: return "none";
	case HTTP_HINT_RETRY_AFTER: return "retry-after";
	case HTTP_HINT_RETRY_AFTER_DATE: return "retry-after-date";
	case HTTP_HINT_RETRY_AFTER_MS: return "retry-after-ms";
	case HTTP_HINT_BODY: return "body";
	case HTTP_HINT_RESET_REQUESTS: return "ratelimit-reset-requests";
	case HTTP_HINT_RESET_TOKENS: return "ratelimit-reset-tokens";
	case HTTP_HINT_SRC_LAST: break;
	}
	return "unknown";
}

void http__hints_init(http_hints *h)
{
	*h = (http_hints){ .retry_after_s = -1, .limit_requests = -1,
		.remaining_requests = -1, .reset_requests_s = -1,
		.limit_tokens = -1, .remaining_tokens = -1, .reset_tokens_s = -1,
		.limit_concurrency = -1 };
}

/* ------------------------------------------------------------- numbers */

/* A non-negative decimal number (digits, optional fraction) at s[*i],
 * converted by strtod so that "0.35" is the double 0.35. */
static bool number(const char *s, size_t len, size_t *i, double *out)
{
	char buf[64];
	size_t j = *i, n;
	bool digits = false;

	while (j < len && isdigit((unsigned char)s[j]))
		j++, digits = true;
	if (j < len && s[j] == '.')
		for (j++; j < len && isdigit((unsigned char)s[j]); j++)
			digits = true;
	n = j - *i;
	if (!digits || n >= sizeof(buf))
		return false;
	memcpy(buf, s + *i, n);
	buf[n] = '\0';
	*out = strtod(buf, NULL);
	*i = j;
	return true;
}

static size_t trim(const char *s, size_t len, size_t *start)
{
	size_t a = 0;

	while (a < len && isspace((unsigned char)s[a]))
		a++;
	while (len > a && isspace((unsigned char)s[len - 1]))
		len--;
	*start = a;
	return len - a;
}

bool http__parse_duration(const char *s, size_t len, double *seconds)
{
	size_t a, i = 0;
	double total = 0, v;

	len = trim(s, len, &a);
	s += a;
	if (!len)
		return false;
	while (i < len) {
		if (!number(s, len, &i, &v))
			return false;
		if (i == len) { /* a bare number, or a trailing one: seconds */
			total += v;
			break;
		}
		if (s[i] == 'h')
			total += v * 3600, i++;
		else if (s[i] == 'm' && i + 1 < len && s[i + 1] == 's')
			total += v / 1000, i += 2;
		else if (s[i] == 'm')
			total += v * 60, i++;
		else if (s[i] == 's')
			total += v, i++;
		else
			return false;
	}
	*seconds = total;
	return true;
}

/* ---------------------------------------------------------------- times */

static int month_of(const char *s)
{
	static const char names[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

	for (int m = 0; m < 12; m++)
		if (!strncasecmp(s, names + 3 * m, 3))
			return m;
	return -1;
}

/* Reads n digits at s[*i]. */
static bool digits(const char *s, size_t len, size_t *i, int n, int *out)
{
	int v = 0;

	if (*i + (size_t)n > len)
		return false;
	for (int k = 0; k < n; k++) {
		char c = s[*i + (size_t)k];

		if (!isdigit((unsigned char)c))
			return false;
		v = v * 10 + (c - '0');
	}
	*i += (size_t)n;
	*out = v;
	return true;
}

static bool expect(const char *s, size_t len, size_t *i, char c)
{
	if (*i < len && s[*i] == c) {
		(*i)++;
		return true;
	}
	return false;
}

static void skip_spaces(const char *s, size_t len, size_t *i)
{
	while (*i < len && s[*i] == ' ')
		(*i)++;
}

/* "HH:MM:SS" */
static bool clock_time(const char *s, size_t len, size_t *i, struct tm *tm)
{
	return digits(s, len, i, 2, &tm->tm_hour) && expect(s, len, i, ':') &&
	       digits(s, len, i, 2, &tm->tm_min) && expect(s, len, i, ':') &&
	       digits(s, len, i, 2, &tm->tm_sec);
}

/* IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850
 * "Sunday, 06-Nov-94 08:49:37 GMT", asctime "Sun Nov  6 08:49:37 1994". */
static bool http_date(const char *s, size_t len, struct tm *tm)
{
	const char *comma = memchr(s, ',', len);
	size_t i;
	int m;

	if (comma) {
		bool rfc850;

		i = (size_t)(comma - s) + 1;
		skip_spaces(s, len, &i);
		rfc850 = i + 2 < len && s[i + 2] == '-';
		if (!digits(s, len, &i, 2, &tm->tm_mday))
			return false;
		if (rfc850 ? !expect(s, len, &i, '-') : !expect(s, len, &i, ' '))
			return false;
		if (i + 3 > len || (m = month_of(s + i)) < 0)
			return false;
		tm->tm_mon = m;
		i += 3;
		if (rfc850 ? !expect(s, len, &i, '-') : !expect(s, len, &i, ' '))
			return false;
		if (rfc850) {
			if (!digits(s, len, &i, 2, &tm->tm_year))
				return false;
			if (tm->tm_year < 70) /* RFC 9110: nearest century */
				tm->tm_year += 100;
		} else {
			if (!digits(s, len, &i, 4, &tm->tm_year))
				return false;
			tm->tm_year -= 1900;
		}
		skip_spaces(s, len, &i);
		return clock_time(s, len, &i, tm);
	}
	/* asctime: "Sun Nov  6 08:49:37 1994" */
	i = 3;
	skip_spaces(s, len, &i);
	if (i + 3 > len || (m = month_of(s + i)) < 0)
		return false;
	tm->tm_mon = m;
	i += 3;
	skip_spaces(s, len, &i);
	if (!digits(s, len, &i, 2, &tm->tm_mday) && !digits(s, len, &i, 1, &tm->tm_mday))
		return false;
	skip_spaces(s, len, &i);
	if (!clock_time(s, len, &i, tm))
		return false;
	skip_spaces(s, len, &i);
	if (!digits(s, len, &i, 4, &tm->tm_year))
		return false;
	tm->tm_year -= 1900;
	return true;
}

/* RFC 3339 "2026-11-25T07:28:00Z", fractions and offsets allowed. */
static bool rfc3339(const char *s, size_t len, struct tm *tm, long *offset)
{
	size_t i = 0;
	int oh, om;

	if (!digits(s, len, &i, 4, &tm->tm_year) || !expect(s, len, &i, '-') ||
	    !digits(s, len, &i, 2, &tm->tm_mon) || !expect(s, len, &i, '-') ||
	    !digits(s, len, &i, 2, &tm->tm_mday))
		return false;
	tm->tm_year -= 1900;
	tm->tm_mon -= 1;
	if (i >= len || (s[i] != 'T' && s[i] != 't' && s[i] != ' '))
		return false;
	i++;
	if (!clock_time(s, len, &i, tm))
		return false;
	if (expect(s, len, &i, '.'))
		while (i < len && isdigit((unsigned char)s[i]))
			i++;
	*offset = 0;
	if (expect(s, len, &i, 'Z') || expect(s, len, &i, 'z'))
		return i == len;
	if (i < len && (s[i] == '+' || s[i] == '-')) {
		int sign = s[i++] == '-' ? -1 : 1;

		if (!digits(s, len, &i, 2, &oh) || !expect(s, len, &i, ':') ||
		    !digits(s, len, &i, 2, &om))
			return false;
		*offset = sign * (oh * 3600L + om * 60L);
		return i == len;
	}
	return false;
}

bool http__parse_time(const char *s, size_t len, time_t *out)
{
	struct tm tm = { 0 };
	long offset = 0;
	size_t a;

	len = trim(s, len, &a);
	s += a;
	if (len < 10)
		return false;
	if (isdigit((unsigned char)s[0])) {
		if (!rfc3339(s, len, &tm, &offset))
			return false;
	} else if (!http_date(s, len, &tm))
		return false;
	if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return false;
	*out = timegm(&tm) - offset;
	return true;
}

/* -------------------------------------------------------------- headers */

/* A retry hint replaces another only if it is more precise. */
static int rank(http_hint_src s)
{
	switch (s) {
	case HTTP_HINT_RETRY_AFTER_MS: return 3;
	case HTTP_HINT_RETRY_AFTER:
	case HTTP_HINT_RETRY_AFTER_DATE: return 2;
	case HTTP_HINT_BODY: return 1;
	default: return 0;
	}
}

static void set_retry(http_hints *h, double s, http_hint_src src)
{
	if (s < 0 || !isfinite(s) || rank(src) <= rank(h->retry_src))
		return;
	h->retry_after_s = s;
	h->retry_src = src;
}

/* A reset given as a duration (OpenAI) or a time (Anthropic). */
static bool reset_value(const char *v, size_t len, time_t now, double *out)
{
	time_t t;

	if (http__parse_duration(v, len, out))
		return true;
	if (!http__parse_time(v, len, &t))
		return false;
	*out = t > now ? (double)(t - now) : 0;
	return true;
}

static bool plain_number(const char *v, size_t len, double *out)
{
	size_t a, i = 0;

	len = trim(v, len, &a);
	v += a;
	return number(v, len, &i, out) && i == len;
}

typedef struct rl_header {
	const char *name;
	int field; /* 0 limit, 1 remaining, 2 reset; +3: tokens */
} rl_header;

static const rl_header rl_headers[] = {
	{ "x-ratelimit-limit-requests", 0 },
	{ "x-ratelimit-remaining-requests", 1 },
	{ "x-ratelimit-reset-requests", 2 },
	{ "x-ratelimit-limit-tokens", 3 },
	{ "x-ratelimit-remaining-tokens", 4 },
	{ "x-ratelimit-reset-tokens", 5 },
	{ "anthropic-ratelimit-requests-limit", 0 },
	{ "anthropic-ratelimit-requests-remaining", 1 },
	{ "anthropic-ratelimit-requests-reset", 2 },
	{ "anthropic-ratelimit-tokens-limit", 3 },
	{ "anthropic-ratelimit-tokens-remaining", 4 },
	{ "anthropic-ratelimit-tokens-reset", 5 },
};

static void ratelimit(http_hints *h, int field, const char *v, size_t len, time_t now)
{
	double *slot[6] = { &h->limit_requests, &h->remaining_requests,
			    &h->reset_requests_s, &h->limit_tokens,
			    &h->remaining_tokens, &h->reset_tokens_s };
	double x;

	if (field % 3 == 2 ? reset_value(v, len, now, &x) : plain_number(v, len, &x))
		*slot[field] = x;
}

void http__hints_header(http_hints *h, const char *line, size_t len, time_t now)
{
	const char *colon = memchr(line, ':', len);
	size_t nlen, vlen;
	const char *v;
	double x;
	time_t t;

	if (!colon)
		return;
	nlen = (size_t)(colon - line);
	v = colon + 1;
	vlen = len - nlen - 1;
#define IS(name) (nlen == strlen(name) && !strncasecmp(line, name, nlen))
	if (IS("retry-after-ms")) {
		if (plain_number(v, vlen, &x))
			set_retry(h, x / 1000, HTTP_HINT_RETRY_AFTER_MS);
	} else if (IS("retry-after")) {
		if (plain_number(v, vlen, &x))
			set_retry(h, x, HTTP_HINT_RETRY_AFTER);
		else if (http__parse_time(v, vlen, &t))
			set_retry(h, t > now ? (double)(t - now) : 0,
				  HTTP_HINT_RETRY_AFTER_DATE);
	} else if (IS("x-concurrency-limit")) {
		if (plain_number(v, vlen, &x) && x >= 1)
			h->limit_concurrency = x;
	} else {
		for (size_t i = 0; i < sizeof(rl_headers) / sizeof(*rl_headers); i++)
			if (IS(rl_headers[i].name))
				ratelimit(h, rl_headers[i].field, v, vlen, now);
	}
#undef IS
}

/* --------------------------------------------------------------- bodies */

static const char *find_ci(const char *s, size_t len, const char *needle)
{
	size_t n = strlen(needle);

	for (size_t i = 0; i + n <= len; i++)
		if (!strncasecmp(s + i, needle, n))
			return s + i;
	return NULL;
}

/* The wait after a phrase: "1.234s", "20ms", "6m0s", "6 seconds". */
static bool wait_after(const char *p, const char *end, double *out)
{
	size_t len = (size_t)(end - p), i = 0, tok;
	double v;

	while (i < len && p[i] == ' ')
		i++;
	p += i;
	len -= i;
	for (tok = 0; tok < len && (isalnum((unsigned char)p[tok]) || p[tok] == '.'); tok++)
		;
	while (tok && p[tok - 1] == '.') /* the sentence's full stop */
		tok--;
	/* "1.234s", "6m0s": a duration in one token; "6 seconds": below. */
	if (tok && isalpha((unsigned char)p[tok - 1]) &&
	    http__parse_duration(p, tok, out))
		return true;
	i = 0;
	if (!number(p, len, &i, &v))
		return false;
	while (i < len && p[i] == ' ')
		i++;
	if (!strncasecmp(p + i, "ms", 2) || !strncasecmp(p + i, "millisecond", 11))
		v /= 1000;
	else if (!strncasecmp(p + i, "minute", 6))
		v *= 60;
	else if (strncasecmp(p + i, "s", 1))
		return false; /* "s", "sec", "second(s)" */
	*out = v;
	return true;
}

void http__hints_body(http_hints *h, const char *body, size_t len)
{
	static const char *const phrases[] = { "try again in ", "retry after ",
					       "retry in " };
	const char *end = body + len, *p;
	double v;

	if (!body)
		return;
	for (size_t i = 0; i < sizeof(phrases) / sizeof(*phrases); i++)
		if ((p = find_ci(body, len, phrases[i])) &&
		    wait_after(p + strlen(phrases[i]), end, &v)) {
			set_retry(h, v, HTTP_HINT_BODY);
			return;
		}
}

/* ------------------------------------------------------ account errors */

bool http__is_account_error(long status, const char *body, size_t len,
			    bool has_retry)
{
	static const char *const markers[] = {
		"insufficient_quota",           /* OpenAI: 429, no credit */
		"billing_hard_limit",           /* OpenAI: a spend cap */
		"credit balance is too low",    /* Anthropic: 400 */
		"spend limit",                  /* Anthropic workspaces */
		"specified api usage limits",   /* Anthropic: usage limits */
		"insufficient credits",         /* OpenRouter: 402 */
		"key limit exceeded",           /* OpenRouter: a key's limit */
	};

	if (status == 402) /* with a retry hint: a transient budget */
		return !has_retry;
	if (status < 400 || status >= 500 || !body)
		return false;
	for (size_t i = 0; i < sizeof(markers) / sizeof(*markers); i++)
		if (find_ci(body, len, markers[i]))
			return true;
	return false;
}

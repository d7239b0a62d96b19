/* Provider hints: Retry-After in its forms, retry-after-ms, x-ratelimit-*,
 * anthropic-ratelimit-*, waits in error bodies, account errors. */
#include <criterion/criterion.h>
#include <string.h>

#include "plugins/http/http_internal.h"

#define NOW ((time_t)1764055680) /* 2025-11-25T07:28:00Z */

static void header(http_hints *h, const char *line)
{
	http__hints_header(h, line, strlen(line), NOW);
}

Test(http_hints, duration_formats)
{
	double s;

	cr_assert(http__parse_duration("1s", 2, &s) && s == 1.0);
	cr_assert(http__parse_duration("6m0s", 4, &s) && s == 360.0);
	cr_assert(http__parse_duration("20ms", 4, &s) && s > 0.0199 && s < 0.0201);
	cr_assert(http__parse_duration("1h2m3.5s", 8, &s) && s == 3723.5);
	cr_assert(http__parse_duration(" 0.35 ", 6, &s) && s == 0.35);
	cr_assert(http__parse_duration("12", 2, &s) && s == 12.0);
	cr_assert_not(http__parse_duration("", 0, &s));
	cr_assert_not(http__parse_duration("soon", 4, &s));
	cr_assert_not(http__parse_duration("3x", 2, &s));
	cr_assert_not(http__parse_duration("-1", 2, &s));
}

Test(http_hints, http_dates_and_rfc3339)
{
	time_t t;
	const char *imf = "Tue, 25 Nov 2025 07:28:30 GMT";
	const char *rfc850 = "Tuesday, 25-Nov-25 07:28:30 GMT";
	const char *asct = "Tue Nov 25 07:28:30 2025";
	const char *r3339 = "2025-11-25T07:28:30Z";
	const char *r3339o = "2025-11-25T08:28:30.250+01:00";

	cr_assert(http__parse_time(imf, strlen(imf), &t) && t == NOW + 30);
	cr_assert(http__parse_time(rfc850, strlen(rfc850), &t) && t == NOW + 30);
	cr_assert(http__parse_time(asct, strlen(asct), &t) && t == NOW + 30);
	cr_assert(http__parse_time(r3339, strlen(r3339), &t) && t == NOW + 30);
	cr_assert(http__parse_time(r3339o, strlen(r3339o), &t) && t == NOW + 30);
	cr_assert_not(http__parse_time("Tue, 25 Foo 2025 07:28:30 GMT", 29, &t));
	cr_assert_not(http__parse_time("2025-13-25T07:28:30Z", 20, &t));
	cr_assert_not(http__parse_time("yesterday", 9, &t));
}

Test(http_hints, retry_after_seconds_fraction_and_date)
{
	http_hints h;

	http__hints_init(&h);
	cr_assert_eq(h.retry_after_s, -1);
	header(&h, "Retry-After: 2\r\n");
	cr_assert_eq(h.retry_after_s, 2.0);
	cr_assert_eq(h.retry_src, HTTP_HINT_RETRY_AFTER);

	http__hints_init(&h);
	header(&h, "retry-after: 0.35\r\n");
	cr_assert_eq(h.retry_after_s, 0.35);

	http__hints_init(&h);
	header(&h, "Retry-After: Tue, 25 Nov 2025 07:28:07 GMT\r\n");
	cr_assert_eq(h.retry_after_s, 7.0);
	cr_assert_eq(h.retry_src, HTTP_HINT_RETRY_AFTER_DATE);

	http__hints_init(&h); /* a date in the past: now */
	header(&h, "Retry-After: Tue, 25 Nov 2025 07:27:00 GMT\r\n");
	cr_assert_eq(h.retry_after_s, 0.0);
}

Test(http_hints, retry_after_ms_wins_over_seconds_and_body)
{
	http_hints h;
	const char *body = "{\"error\":{\"message\":\"Please try again in 9s.\"}}";

	http__hints_init(&h);
	header(&h, "Retry-After: 1\r\n");
	header(&h, "retry-after-ms: 734.5\r\n");
	header(&h, "Retry-After: 3\r\n"); /* less precise: ignored */
	http__hints_body(&h, body, strlen(body));
	cr_assert_float_eq(h.retry_after_s, 0.7345, 1e-9);
	cr_assert_eq(h.retry_src, HTTP_HINT_RETRY_AFTER_MS);
	cr_assert_str_eq(http__hint_src_name(h.retry_src), "retry-after-ms");
}

Test(http_hints, garbage_headers_are_ignored)
{
	http_hints h;

	http__hints_init(&h);
	header(&h, "Retry-After: soon\r\n");
	header(&h, "retry-after-ms: -5\r\n");
	header(&h, "x-ratelimit-remaining-requests: many\r\n");
	header(&h, "no colon here\r\n");
	header(&h, "X-Other: 5\r\n");
	cr_assert_eq(h.retry_after_s, -1);
	cr_assert_eq(h.retry_src, HTTP_HINT_NONE);
	cr_assert_eq(h.remaining_requests, -1);
}

Test(http_hints, openai_ratelimit_headers)
{
	http_hints h;

	http__hints_init(&h);
	header(&h, "x-ratelimit-limit-requests: 600\r\n");
	header(&h, "X-RateLimit-Remaining-Requests: 599\r\n");
	header(&h, "x-ratelimit-reset-requests: 100ms\r\n");
	header(&h, "x-ratelimit-limit-tokens: 150000\r\n");
	header(&h, "x-ratelimit-remaining-tokens: 149984\r\n");
	header(&h, "x-ratelimit-reset-tokens: 6m0s\r\n");
	cr_assert_eq(h.limit_requests, 600);
	cr_assert_eq(h.remaining_requests, 599);
	cr_assert_float_eq(h.reset_requests_s, 0.1, 1e-12);
	cr_assert_eq(h.limit_tokens, 150000);
	cr_assert_eq(h.remaining_tokens, 149984);
	cr_assert_eq(h.reset_tokens_s, 360);
	cr_assert_eq(h.retry_after_s, -1); /* not a retry hint by itself */
}

Test(http_hints, anthropic_ratelimit_headers)
{
	http_hints h;

	http__hints_init(&h);
	header(&h, "anthropic-ratelimit-requests-limit: 50\r\n");
	header(&h, "anthropic-ratelimit-requests-remaining: 0\r\n");
	header(&h, "anthropic-ratelimit-requests-reset: 2025-11-25T07:28:12Z\r\n");
	header(&h, "anthropic-ratelimit-tokens-limit: 40000\r\n");
	header(&h, "anthropic-ratelimit-tokens-remaining: 1000\r\n");
	header(&h, "anthropic-ratelimit-tokens-reset: 2025-11-25T07:28:01Z\r\n");
	cr_assert_eq(h.limit_requests, 50);
	cr_assert_eq(h.remaining_requests, 0);
	cr_assert_eq(h.reset_requests_s, 12);
	cr_assert_eq(h.limit_tokens, 40000);
	cr_assert_eq(h.remaining_tokens, 1000);
	cr_assert_eq(h.reset_tokens_s, 1);
}

Test(http_hints, waits_in_error_bodies)
{
	struct { const char *body; double want; } cases[] = {
		{ "Rate limit reached for gpt-4o. Please try again in 1.234s. Visit", 1.234 },
		{ "Please try again in 20ms.", 0.020 },
		{ "Please try again in 6m0s.", 360 },
		{ "exceeded token rate limit. Please retry after 6 seconds.", 6 },
		{ "Please retry after 250 milliseconds", 0.25 },
		{ "try again in 2 minutes", 120 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		http_hints h;

		http__hints_init(&h);
		http__hints_body(&h, cases[i].body, strlen(cases[i].body));
		cr_assert_float_eq(h.retry_after_s, cases[i].want, 1e-9, "%s", cases[i].body);
		cr_assert_eq(h.retry_src, HTTP_HINT_BODY);
	}
}

Test(http_hints, bodies_without_a_wait)
{
	const char *bodies[] = { "Please try again later.", "retry after a while",
				 "Too many requests", "" };

	for (size_t i = 0; i < sizeof(bodies) / sizeof(*bodies); i++) {
		http_hints h;

		http__hints_init(&h);
		http__hints_body(&h, bodies[i], strlen(bodies[i]));
		cr_assert_eq(h.retry_after_s, -1, "%s", bodies[i]);
	}
}

Test(http_hints, account_errors)
{
	const char *quota = "{\"error\":{\"message\":\"You exceeded your current quota, please "
			    "check your plan and billing details.\",\"type\":\"insufficient_quota\","
			    "\"code\":\"insufficient_quota\"}}";
	const char *rate = "{\"error\":{\"message\":\"Rate limit reached for requests\","
			   "\"type\":\"requests\",\"code\":\"rate_limit_exceeded\"}}";
	const char *credits = "{\"error\":{\"code\":402,\"message\":\"Insufficient credits\"}}";
	const char *anthropic = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
				"\"message\":\"Your credit balance is too low to access the API.\"}}";

	cr_assert(http__is_account_error(429, quota, strlen(quota), false));
	cr_assert(http__is_account_error(429, quota, strlen(quota), true));
	cr_assert_not(http__is_account_error(429, rate, strlen(rate), false));
	cr_assert(http__is_account_error(402, credits, strlen(credits), false));
	cr_assert_not(http__is_account_error(402, credits, strlen(credits), true)); /* transient */
	cr_assert(http__is_account_error(400, anthropic, strlen(anthropic), false));
	cr_assert_not(http__is_account_error(503, quota, strlen(quota), false));
	cr_assert_not(http__is_account_error(200, quota, strlen(quota), false));
}

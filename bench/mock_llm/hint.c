/*
 * hint.c — retry hints and rate-limit headers (see hint.h). Every value is
 * rounded up: a client that waits what it is told is never early.
 */
#include "hint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { DAY_MS = 86400000 };

uint64_t mock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void mock_duration(char *buf, size_t n, uint64_t ms)
{
	uint64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
	unsigned frac = (unsigned)(ms % 1000);
	char head[48] = "", sec[16];
	size_t len;

	if (ms == 0) {
		snprintf(buf, n, "0s");
		return;
	}
	if (ms < 1000) {
		snprintf(buf, n, "%llums", (unsigned long long)ms);
		return;
	}
	if (h)
		snprintf(head, sizeof(head), "%lluh", (unsigned long long)h);
	if (h || m)
		snprintf(head + strlen(head), sizeof(head) - strlen(head),
			 "%llum", (unsigned long long)m);
	snprintf(sec, sizeof(sec), "%llu.%03u", (unsigned long long)s, frac);
	len = strlen(sec);
	while (len > 1 && sec[len - 1] == '0')
		sec[--len] = '\0';
	if (len > 1 && sec[len - 1] == '.')
		sec[--len] = '\0';
	snprintf(buf, n, "%s%ss", head, sec);
}

/* The broken-down UTC time of wall_ms, rounded up to the second. */
static struct tm wall_tm(uint64_t wall_ms)
{
	time_t t = (time_t)((wall_ms + 999) / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	return tm;
}

void mock_rfc3339(char *buf, size_t n, uint64_t wall_ms)
{
	struct tm tm = wall_tm(wall_ms);

	snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void mock_http_date(char *buf, size_t n, uint64_t wall_ms)
{
	static const char days[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu",
					 "Fri", "Sat" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May",
					    "Jun", "Jul", "Aug", "Sep", "Oct",
					    "Nov", "Dec" };
	struct tm tm = wall_tm(wall_ms);

	snprintf(buf, n, "%s, %02d %s %04d %02d:%02d:%02d GMT",
		 days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
		 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* The hinted wait in whole ms, rounded up. */
static uint64_t hinted(const mock_cfg *cfg, uint64_t wait_ms)
{
	double w = wait_ms == MOCK_NEVER ? DAY_MS : (double)wait_ms;

	return (uint64_t)ceil(w * cfg->hint_factor);
}

void mock_hint_headers(mock_buf *out, const mock_cfg *cfg, uint64_t wait_ms)
{
	uint64_t ms = hinted(cfg, wait_ms), secs = (ms + 999) / 1000;
	char text[64];

	switch ((mock_hint_style)cfg->hint) {
	case MOCK_HINT_FIXED:
		if (cfg->retry_after > 0)
			mock_buf_addf(out, "Retry-After: %.0f\r\n",
				      ceil(cfg->retry_after));
		break;
	case MOCK_HINT_NONE:
	case MOCK_HINT_BODY:
		break;
	case MOCK_HINT_SECONDS:
		mock_buf_addf(out, "Retry-After: %llu\r\n",
			      (unsigned long long)secs);
		break;
	case MOCK_HINT_HTTP_DATE:
		mock_http_date(text, sizeof(text), mock_wall_ms() + ms);
		mock_buf_addf(out, "Retry-After: %s\r\n", text);
		break;
	case MOCK_HINT_AZURE:
		mock_buf_addf(out, "Retry-After: %llu\r\n",
			      (unsigned long long)secs);
		/* fall through */
	case MOCK_HINT_MS:
		mock_buf_addf(out, "retry-after-ms: %llu\r\n",
			      (unsigned long long)ms);
		break;
	case MOCK_HINT_FRACTIONAL:
		snprintf(text, sizeof(text), "%llu.%03u",
			 (unsigned long long)(ms / 1000),
			 (unsigned)(ms % 1000));
		while (text[strlen(text) - 1] == '0')
			text[strlen(text) - 1] = '\0';
		if (text[strlen(text) - 1] == '.')
			text[strlen(text) - 1] = '\0';
		mock_buf_addf(out, "Retry-After: %s\r\n", text);
		break;
	}
}

void mock_hint_sentence(mock_buf *msg, const mock_cfg *cfg, uint64_t wait_ms)
{
	char d[48];

	if (cfg->hint != MOCK_HINT_BODY)
		return;
	mock_duration(d, sizeof(d), hinted(cfg, wait_ms));
	mock_buf_addf(msg, " Please try again in %s.", d);
}

static void rl_openai(mock_buf *out, const char *what, const mock_lim_view *v)
{
	char d[48];

	mock_duration(d, sizeof(d), v->reset_ms);
	mock_buf_addf(out, "x-ratelimit-limit-%s: %.0f\r\n"
		      "x-ratelimit-remaining-%s: %.0f\r\n"
		      "x-ratelimit-reset-%s: %s\r\n",
		      what, floor(v->limit), what, floor(v->remaining), what, d);
}

static void rl_anthropic(mock_buf *out, const char *what,
			 const mock_lim_view *v, uint64_t wall)
{
	char d[48];

	mock_rfc3339(d, sizeof(d), wall + v->reset_ms);
	mock_buf_addf(out, "anthropic-ratelimit-%s-limit: %.0f\r\n"
		      "anthropic-ratelimit-%s-remaining: %.0f\r\n"
		      "anthropic-ratelimit-%s-reset: %s\r\n",
		      what, floor(v->limit), what, floor(v->remaining), what, d);
}

void mock_ratelimit_headers(mock_buf *out, const mock_cfg *cfg,
		     const mock_lim_view *req, const mock_lim_view *tok)
{
	const mock_lim_view *v[2] = { req, tok };
	const char *what[2] = { "requests", "tokens" };
	uint64_t wall = mock_wall_ms();

	for (int i = 0; i < 2; i++) {
		if (!v[i]->active)
			continue;
		if (cfg->rl_headers == MOCK_RLH_OPENAI)
			rl_openai(out, what[i], v[i]);
		else if (cfg->rl_headers == MOCK_RLH_ANTHROPIC)
			rl_anthropic(out, what[i], v[i], wall);
	}
}

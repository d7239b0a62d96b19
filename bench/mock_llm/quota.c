/*
 * quota.c — quota and credit refusals (see quota.h). The bodies follow
 * what each provider documents or is seen to send:
 *  - OpenAI: 429 {"error":{"message":"You exceeded your current quota..",
 *    "type":"insufficient_quota","param":null,"code":"insufficient_quota"}}
 *  - Anthropic (a spend limit): 400 {"type":"error","error":{"type":
 *    "invalid_request_error","message":"You have reached your specified
 *    API usage limits. You will regain access on <1st of next month> at
 *    00:00 UTC."}}
 *  - OpenRouter: 402 {"error":{"code":402,"message":"Insufficient
 *    credits..","metadata":{"limit_source":..}}}; the transient kind is a
 *    key's credit limit that resets (limit_source openrouter_key_limit).
 */
#include "quota.h"
#include "hash.h"
#include "hint.h"
#include "limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

enum { SALT_QUOTA = 0x71756f74 };

void mock_quota_reset(mock_quota *q)
{
	memset(q, 0, sizeof(*q));
}

int mock_quota_check(mock_quota *q, const mock_cfg *cfg, uint64_t now,
		     uint64_t *wait_ms)
{
	uint64_t st;

	if (cfg->quota == MOCK_QUOTA_NONE)
		return 0;
	if (q->lock_until && now < q->lock_until) {
		*wait_ms = q->lock_until - now;
		return 1;
	}
	if (q->lock_until) { /* the lock is over: the count starts again */
		q->lock_until = 0;
		q->passed = 0;
	}
	st = mock_rng_seed((uint64_t)cfg->seed, q->seen++, 0, SALT_QUOTA);
	if (q->passed < (uint64_t)cfg->quota_after ||
	    mock_rng_unit(&st) >= cfg->quota_rate) {
		q->passed++;
		return 0;
	}
	if (cfg->quota_lock_ms > 0) {
		q->lock_until = now + (uint64_t)cfg->quota_lock_ms;
		*wait_ms = (uint64_t)cfg->quota_lock_ms;
	} else {
		*wait_ms = MOCK_NEVER;
	}
	return 1;
}

/* "2025-02-01": the first day of the next month (UTC). */
static void next_month(char *buf, size_t n)
{
	time_t t = (time_t)(mock_wall_ms() / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, n, "%04d-%02d-01", tm.tm_year + 1900 + (tm.tm_mon == 11),
		 tm.tm_mon == 11 ? 1 : tm.tm_mon + 2);
}

static json_t *body_json(const mock_cfg *cfg, uint64_t wait_ms, int *status)
{
	char msg[160], day[32];
	mock_buf m = { 0 };
	json_t *v;

	switch ((mock_quota_kind)cfg->quota) {
	case MOCK_QUOTA_OPENAI:
		*status = 429;
		return json_pack("{s:{s:s, s:s, s:n, s:s}}", "error", "message",
			"You exceeded your current quota, please check your "
			"plan and billing details. For more information on this "
			"error, read the docs: https://platform.openai.com/docs/"
			"guides/error-codes/api-errors.", "type",
			"insufficient_quota", "param", "code",
			"insufficient_quota");
	case MOCK_QUOTA_ANTHROPIC:
		*status = 400;
		next_month(day, sizeof(day));
		snprintf(msg, sizeof(msg), "You have reached your specified API "
			 "usage limits. You will regain access on %s at 00:00 "
			 "UTC.", day);
		return json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error",
				 "type", "invalid_request_error", "message", msg);
	case MOCK_QUOTA_CREDITS:
		*status = 402;
		return json_pack("{s:{s:i, s:s, s:{s:s}}}", "error", "code", 402,
			"message", "Insufficient credits. Add more using "
			"https://openrouter.ai/credits", "metadata",
			"limit_source", "openrouter_credits");
	case MOCK_QUOTA_TRANSIENT:
	case MOCK_QUOTA_NONE:
		break;
	}
	*status = 402;
	mock_buf_adds(&m, "Insufficient credits: this key's credit limit is "
		      "used up until it resets.");
	mock_hint_sentence(&m, cfg, wait_ms);
	v = json_pack("{s:{s:i, s:s, s:{s:s}}}", "error", "code", 402,
		      "message", m.data, "metadata", "limit_source",
		      "openrouter_key_limit");
	mock_buf_release(&m);
	return v;
}

char *mock_quota_body(const mock_cfg *cfg, uint64_t wait_ms, int *status,
		      size_t *len)
{
	json_t *v = body_json(cfg, wait_ms, status);
	char *out;

	if (!v)
		abort();
	out = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!out)
		abort();
	*len = strlen(out);
	return out;
}

/* The AIMD throttle's arithmetic and the HTTP executor's error classes. */
#include <criterion/criterion.h>

#include "plugins/http/http_internal.h"

/* Criterion's float assertion evaluates its arguments twice: call once. */
#define EXPECT_MS(call, want, ...) do { \
	double got_ = (call); \
	cr_assert_float_eq(got_, (want), 1e-9, "" __VA_ARGS__); \
} while (0)

Test(aimd, starts_at_the_minimum)
{
	http_aimd t;

	http__aimd_init(&t, 0, 5000, 2.0, 50);
	cr_assert_float_eq(t.delay_ms, 0, 1e-9);
	http__aimd_init(&t, 20, 5000, 2.0, 50);
	cr_assert_float_eq(t.delay_ms, 20, 1e-9);
}

Test(aimd, capacity_error_backs_off_from_the_floor_and_doubles)
{
	http_aimd t;

	http__aimd_init(&t, 0, 5000, 2.0, 50);
	EXPECT_MS(http__aimd_on_capacity(&t), 100); /* 0 * 2 -> floor */
	EXPECT_MS(http__aimd_on_capacity(&t), 200);
	EXPECT_MS(http__aimd_on_capacity(&t), 400);
	for (int i = 0; i < 10; i++)
		http__aimd_on_capacity(&t);
	cr_assert_float_eq(t.delay_ms, 5000, 1e-9, "capped at max");
	cr_assert_eq(t.capacity_errors, 13);
}

Test(aimd, success_recovers_linearly_to_the_minimum)
{
	http_aimd t;

	http__aimd_init(&t, 10, 5000, 2.0, 50);
	http__aimd_on_capacity(&t); /* 100 */
	http__aimd_on_capacity(&t); /* 200 */
	EXPECT_MS(http__aimd_on_success(&t), 150);
	EXPECT_MS(http__aimd_on_success(&t), 100);
	EXPECT_MS(http__aimd_on_success(&t), 50);
	EXPECT_MS(http__aimd_on_success(&t), 10, "floored at min");
	EXPECT_MS(http__aimd_on_success(&t), 10);
	cr_assert_eq(t.successes, 5);
}

Test(aimd, other_multipliers_and_a_high_minimum)
{
	http_aimd t;

	http__aimd_init(&t, 300, 1000, 1.5, 0);
	EXPECT_MS(http__aimd_on_capacity(&t), 450);
	EXPECT_MS(http__aimd_on_capacity(&t), 675);
	EXPECT_MS(http__aimd_on_capacity(&t), 1000);
	EXPECT_MS(http__aimd_on_success(&t), 1000, "step 0: no recovery");
	http__aimd_init(&t, 0, 0, 1, 50); /* a fixed pool: the throttle off */
	EXPECT_MS(http__aimd_on_capacity(&t), 0);
}

Test(http, classification)
{
	cr_assert_eq(http_classify(CURLE_OK, 200, true), PLG_CLASS_OK);
	cr_assert_eq(http_classify(CURLE_OK, 201, true), PLG_CLASS_OK);
	cr_assert_eq(http_classify(CURLE_OK, 429, true), PLG_CLASS_CAPACITY);
	cr_assert_eq(http_classify(CURLE_OK, 503, true), PLG_CLASS_CAPACITY);
	cr_assert_eq(http_classify(CURLE_OK, 529, true), PLG_CLASS_CAPACITY);
	cr_assert_eq(http_classify(CURLE_OK, 500, true), PLG_CLASS_SERVER);
	cr_assert_eq(http_classify(CURLE_OK, 502, true), PLG_CLASS_SERVER);
	cr_assert_eq(http_classify(CURLE_OK, 408, true), PLG_CLASS_SERVER, "request timeout is transient");
	cr_assert_eq(http_classify(CURLE_OK, 400, true), PLG_CLASS_CLIENT);
	cr_assert_eq(http_classify(CURLE_OK, 401, true), PLG_CLASS_CLIENT);
	cr_assert_eq(http_classify(CURLE_OK, 404, true), PLG_CLASS_CLIENT);
	cr_assert_eq(http_classify(CURLE_OK, 301, true), PLG_CLASS_SERVER);
	cr_assert_eq(http_classify(CURLE_OPERATION_TIMEDOUT, 0, true), PLG_CLASS_TIMEOUT);
	cr_assert_eq(http_classify(CURLE_OPERATION_TIMEDOUT, 0, false), PLG_CLASS_CAPACITY,
		     "a connect timeout is the server under load");
	cr_assert_eq(http_classify(CURLE_COULDNT_CONNECT, 0, false), PLG_CLASS_NETWORK);
	cr_assert_eq(http_classify(CURLE_GOT_NOTHING, 0, true), PLG_CLASS_NETWORK);
	cr_assert_eq(http_classify(CURLE_PARTIAL_FILE, 200, true), PLG_CLASS_NETWORK);
	cr_assert_eq(http_classify(CURLE_RECV_ERROR, 0, true), PLG_CLASS_NETWORK);
}

Test(http, transient_classes)
{
	cr_assert(http_transient(PLG_CLASS_SERVER));
	cr_assert(http_transient(PLG_CLASS_NETWORK));
	cr_assert(http_transient(PLG_CLASS_TIMEOUT));
	cr_assert(http_transient(PLG_CLASS_MALFORMED));
	cr_assert_not(http_transient(PLG_CLASS_OK));
	cr_assert_not(http_transient(PLG_CLASS_CAPACITY), "capacity retries are not counted");
	cr_assert_not(http_transient(PLG_CLASS_CLIENT));
	cr_assert_not(http_transient(PLG_CLASS_GAVE_UP));
}

/* The names are in the audit trail (calls.error_class), in expected test
 * outputs and in checkpoints' counts by index: they never change. */
Test(http, error_class_names)
{
	static const char *const want[PLG_CLASS_LAST] = {
		"ok", "capacity", "server", "network", "timeout", "malformed",
		"client", "gave_up",
	};

	for (int c = 0; c < PLG_CLASS_LAST; c++) {
		cr_assert_str_eq(plg_error_class_name((plg_error_class)c), want[c],
				 "class %d", c);
		cr_assert_eq(plg_error_class_of(want[c]), c, "%s", want[c]);
	}
	cr_assert_str_eq(plg_error_class_name(PLG_CLASS_LAST), "unknown");
	cr_assert_str_eq(plg_error_class_name((plg_error_class)-1), "unknown");
	cr_assert_eq(plg_error_class_of(NULL), PLG_CLASS_LAST);
	cr_assert_eq(plg_error_class_of("unknown"), PLG_CLASS_LAST);
	cr_assert_eq(plg_error_class_of("finish_reason"), PLG_CLASS_LAST,
		     "no call fails with finish_reason: the row does");
	cr_assert_eq(plg_error_class_of("Capacity"), PLG_CLASS_LAST);
}

/* Nothing listens on port 9 of 127.0.0.1 (discard; closed here): the
 * executor reports a network error after exactly max_attempts attempts,
 * and the row's record_call sees each one. */
static unsigned ncalls;

static unsigned count_call(plg_ctx *ctx, const plg_call *c)
{
	(void)ctx;
	cr_assert_not(c->ok);
	cr_assert_str_eq(c->error_class, "network");
	cr_assert_eq(c->submit_order, ncalls + 1);
	return ncalls++;
}

Test(http, refused_connection_is_retried_per_policy)
{
	http_cfg cfg = { .pool_size = 2, .timeout_s = 2, .max_dispatch_delay_ms = 5000,
		       .backoff_multiplier = 2, .recovery_step_ms = 50,
		       .max_capacity_retry_s = 10 };
	core_retry_cfg retry = { .max_attempts = 3, .initial_delay_seconds = 0.001,
				 .max_delay_seconds = 0.002, .exponential_base = 2 };
	plg_ctx ctx = { .retry = &retry, .record_call = count_call };
	http_req r = { .url = "http://127.0.0.1:9/v1/chat/completions", .body = "{}",
		     .body_len = 2 };
	http_client *x;
	core_err err;

	cr_assert_eq(http_open(&cfg, r.url, NULL, &x, &err), 0, "%s", err.msg);
	http_run(x, &r, 1, &ctx);
	cr_assert_eq(r.result, PLG_CLASS_NETWORK, "%s", r.error);
	cr_assert_eq(r.attempts, 3);
	cr_assert_eq(ncalls, 3);
	cr_assert(strstr(r.error, "connect"), "%s", r.error);
	core_buf_release(&r.response);
	http_close(x);
	http_close(NULL);
}

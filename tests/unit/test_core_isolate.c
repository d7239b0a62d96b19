/* core_isolate (core/isolate.c): a child's answer comes back whole; a
 * crash, an overrun of the time limit or of the size cap ends the child
 * and is reported, never the caller. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"

static void answers(void *ctx, int fd)
{
	core_write_all(fd, ctx, strlen(ctx));
}

static void crashes(void *ctx, int fd)
{
	(void)ctx;
	core_write_all(fd, "half", 4);
	raise(SIGABRT); /* not SIGSEGV: ASan would catch that and exit 1 */
}

static void hangs(void *ctx, int fd)
{
	(void)ctx;
	(void)fd;
	for (;;)
		pause();
}

static void floods(void *ctx, int fd)
{
	char block[4096];

	(void)ctx;
	memset(block, 'x', sizeof(block));
	for (int i = 0; i < 64; i++)
		core_write_all(fd, block, sizeof(block));
}

Test(isolate, the_answer_comes_back_whole)
{
	core_buf b = { 0 };
	core_isolated how;
	core_err err = { 0 };

	cr_assert_eq(core_isolate(answers, "hello from the child", 0, 1024, &b, &how,
				  &err), 0, "%s", err.msg);
	cr_assert(!how.late && !how.too_big && !how.signal && !how.status);
	cr_assert_eq(b.len, 20);
	cr_assert_eq(memcmp(b.data, "hello from the child", 20), 0);
	core_buf_release(&b);
}

Test(isolate, a_crash_ends_the_child_not_the_caller)
{
	core_buf b = { 0 };
	core_isolated how;
	core_err err = { 0 };

	cr_assert_eq(core_isolate(crashes, NULL, 0, 1024, &b, &how, &err), 0);
	cr_assert_eq(how.signal, SIGABRT);
	cr_assert(!how.late);
	core_buf_release(&b);
}

Test(isolate, a_child_past_its_time_is_killed, .timeout = 10)
{
	core_buf b = { 0 };
	core_isolated how;
	core_err err = { 0 };
	uint64_t t0 = core_now_mono_ns();

	cr_assert_eq(core_isolate(hangs, NULL, 200, 1024, &b, &how, &err), 0);
	cr_assert(how.late);
	cr_assert_eq(how.signal, 0, "a kill of ours is not the child's crash");
	cr_assert_lt(core_now_mono_ns() - t0, 3000000000u);
	core_buf_release(&b);
}

Test(isolate, an_answer_over_the_cap_is_cut)
{
	core_buf b = { 0 };
	core_isolated how;
	core_err err = { 0 };

	cr_assert_eq(core_isolate(floods, NULL, 0, 65536, &b, &how, &err), 0);
	cr_assert(how.too_big);
	cr_assert_leq(b.len, 65536);
	core_buf_release(&b);
}

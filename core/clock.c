/* clock.c — monotonic and wall clocks in nanoseconds. */
#include <time.h>

#include "core/core.h"

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t core_now_mono_ns(void)
{
	return now_ns(CLOCK_MONOTONIC);
}

uint64_t core_now_wall_ns(void)
{
	return now_ns(CLOCK_REALTIME);
}

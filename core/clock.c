/* clock.c — monotonic and wall clocks in nanoseconds, and the wall
 * clock as Python's isoformat() writes it. */
#include <string.h>
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

void core_iso_utc(uint64_t ns, char out[40])
{
	/* The date and time of the last second asked for, kept per thread:
	 * strftime for each of a run's telemetry events was a tenth of its cost. */
	static _Thread_local time_t last = -1;
	static _Thread_local char day[32];
	static _Thread_local size_t daylen;
	time_t sec = (time_t)(ns / 1000000000u);
	unsigned long us = (unsigned long)(ns % 1000000000u / 1000u);
	struct tm tm;
	size_t n;

	if (sec != last) {
		gmtime_r(&sec, &tm);
		daylen = strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
		last = sec;
	}
	memcpy(out, day, daylen);
	n = daylen;
	if (us) {
		out[n++] = '.';
		for (int i = 5; i >= 0; i--, us /= 10)
			out[n + (size_t)i] = (char)('0' + us % 10);
		n += 6;
	}
	memcpy(out + n, "+00:00", 7);
}

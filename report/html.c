/*
 * html.c — text for the page: escaping for HTML (report_internal.h: every
 * string from the trail goes through it) and the formats of numbers,
 * durations and times on labels.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "report/report_internal.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

static const char *entity(unsigned char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return "&quot;";
	case '\'':
		return "&#39;";
	default:
		return NULL;
	}
}

int rpt__escn(core_buf *b, const char *s, size_t n)
{
	size_t i = 0, run = 0; /* s[i - run, i): copied as is */
	int rc = 0;

	while (i < n && !rc) {
		unsigned char c = (unsigned char)s[i];
		const char *ent = c < 0x80 ? entity(c) : NULL;
		size_t len = c < 0x80 ? 1 : core_utf8_decode(s + i, n - i, NULL);
		bool control = c < 0x20 ? c != '\t' && c != '\n' : c == 0x7f;

		if (len && !ent && !control) {
			i += len;
			run += len;
			continue;
		}
		rc = core_buf_append(b, s + i - run, run);
		run = 0;
		if (!rc)
			rc = core_buf_puts(b, ent ? ent : REPLACEMENT);
		i += len ? len : 1;
	}
	if (!rc && run)
		rc = core_buf_append(b, s + i - run, run);
	return rc;
}

int rpt__esc(core_buf *b, const char *s)
{
	return s ? rpt__escn(b, s, strlen(s)) : 0;
}

/* v (finite, |v| < 1000 after scaling) with at most 3 significant
 * digits, no trailing zeros. */
static void short_num(char *buf, size_t cap, double v, const char *suffix)
{
	double a = fabs(v);
	int decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
	char *dot;
	size_t len;

	if (a > 0 && a < 0.001) {
		snprintf(buf, cap, "%.1e%s", v, suffix);
		return;
	}
	snprintf(buf, cap, "%.*f", decimals, v);
	if ((dot = strchr(buf, '.'))) {
		len = strlen(buf);
		while (len > 0 && buf[len - 1] == '0')
			buf[--len] = '\0';
		if (len > 0 && buf[len - 1] == '.')
			buf[--len] = '\0';
	}
	if (!strcmp(buf, "-0"))
		snprintf(buf, cap, "0");
	len = strlen(buf);
	snprintf(buf + len, cap > len ? cap - len : 0, "%s", suffix);
}

void rpt__num(char *buf, size_t cap, double v)
{
	static const struct {
		double scale;
		const char *suffix;
	} units[] = { { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } };

	if (!isfinite(v)) {
		snprintf(buf, cap, "\xe2\x80\x93"); /* – */
		return;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (fabs(v) >= units[i].scale * 0.9995) {
			short_num(buf, cap, v / units[i].scale, units[i].suffix);
			return;
		}
	short_num(buf, cap, v, "");
}

void rpt__dur(char *buf, size_t cap, double s)
{
	char n[32];

	if (!isfinite(s) || s < 0) {
		snprintf(buf, cap, "\xe2\x80\x93");
	} else if (s < 1) {
		rpt__num(n, sizeof(n), s * 1e3);
		snprintf(buf, cap, "%s ms", n);
	} else if (s < 60) {
		rpt__num(n, sizeof(n), s);
		snprintf(buf, cap, "%s s", n);
	} else if (s < 3600) {
		unsigned long t = (unsigned long)llround(s);

		snprintf(buf, cap, t % 60 ? "%lu min %lu s" : "%lu min", t / 60, t % 60);
	} else {
		unsigned long t = (unsigned long)llround(s / 60);

		snprintf(buf, cap, t % 60 ? "%lu h %lu min" : "%lu h", t / 60, t % 60);
	}
}

void rpt__time(char *buf, size_t cap, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, cap, "\xe2\x80\x93");
		return;
	}
	snprintf(buf, cap, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

void rpt__count(char *buf, size_t cap, uint64_t v)
{
	char digits[32];
	size_t n, o = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	for (size_t i = 0; i < n && o + 1 < cap; i++) {
		if (i && (n - i) % 3 == 0 && o + 2 < cap)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	if (cap)
		buf[o < cap ? o : cap - 1] = '\0';
}

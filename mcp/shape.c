/*
 * shape.c — the answers' shapes: fields picked from rows in ELSPETH's
 * order, times as its Python prints them, numbers as Python adds and
 * rounds them (an int stays an int until a float joins it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mcp/mcp_internal.h"

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	long long era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

/* n digits at s as a number; -1 when they are not all digits. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

typedef struct stime {
	int y, mo, d, h, mi, sec, us;
} stime;

/* "YYYY-MM-DD HH:MM:SS[.f{1,6}]" (SQLAlchemy's SQLite storage). */
static bool parse_time(const char *s, stime *t)
{
	size_t n = strlen(s), i;

	if (n < 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' ||
	    s[16] != ':')
		return false;
	t->y = digits(s, 4);
	t->mo = digits(s + 5, 2);
	t->d = digits(s + 8, 2);
	t->h = digits(s + 11, 2);
	t->mi = digits(s + 14, 2);
	t->sec = digits(s + 17, 2);
	t->us = 0;
	if (t->y < 1 || t->mo < 1 || t->mo > 12 || t->d < 1 || t->d > 31 ||
	    t->h < 0 || t->h > 23 || t->mi < 0 || t->mi > 59 || t->sec < 0 ||
	    t->sec > 59)
		return false;
	if (n == 19)
		return true;
	if (s[19] != '.' || n < 21 || n > 26)
		return false;
	for (i = 20; i < 26; i++) {
		int c = i < n ? s[i] - '0' : 0;

		if (c < 0 || c > 9)
			return false;
		t->us = t->us * 10 + c;
	}
	return true;
}

json_t *mcp__iso(const json_t *stored)
{
	const char *s = json_string_value(stored);
	char out[40];
	stime t;

	if (!s || !parse_time(s, &t))
		return json_deep_copy(stored ? stored : json_null());
	snprintf(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02d", t.y, t.mo,
		 t.d, t.h, t.mi, t.sec);
	if (t.us)
		snprintf(out + 19, sizeof(out) - 19, ".%06d", t.us);
	return json_string(out);
}

bool mcp__time_us(const char *stored, long long *us)
{
	stime t;

	if (!stored || !parse_time(stored, &t))
		return false;
	*us = ((days_from_civil(t.y, (unsigned)t.mo, (unsigned)t.d) * 86400 +
		t.h * 3600LL + t.mi * 60LL + t.sec) * 1000000LL) + t.us;
	return true;
}

void mcp__time_text(long long us, char out[32])
{
	long long secs = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
	time_t tt = (time_t)secs;
	struct tm tm;
	char buf[128];

	if (!gmtime_r(&tt, &tm)) {
		snprintf(out, 32, "0001-01-01 00:00:00.000000");
		return;
	}
	snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06lld",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, us - secs * 1000000);
	snprintf(out, 32, "%.31s", buf);
}

json_t *mcp__duration(const json_t *run)
{
	long long a, b;

	if (!mcp__time_us(json_string_value(json_object_get(run, "started_at")), &a) ||
	    !mcp__time_us(json_string_value(json_object_get(run, "completed_at")), &b))
		return json_null();
	/* timedelta.total_seconds(): whole microseconds / 10**6 */
	return json_real((double)(b - a) / 1e6);
}

long long mcp__now_us(const mcp_server *s)
{
	return (long long)((s->o.now_ns ? s->o.now_ns : core_now_wall_ns()) / 1000);
}

double mcp__round(double v, int places)
{
	char buf[512];

	/* glibc prints the exact binary value rounded half-even, which is
	 * what CPython's round() does for floats. */
	if (snprintf(buf, sizeof(buf), "%.*f", places, v) >= (int)sizeof(buf))
		return v;
	return strtod(buf, NULL);
}

json_t *mcp__short(const char *s)
{
	core_buf b = { 0 };
	json_t *v;

	if (!s)
		return json_null();
	if (core_buf_append(&b, s, core_utf8_prefix(s, strlen(s), 12)) ||
	    core_buf_puts(&b, "...")) {
		core_buf_release(&b);
		return NULL;
	}
	v = json_string(b.data);
	core_buf_release(&b);
	return v;
}

static int parse_json(const json_t *v, const char *column, json_t **out,
		      core_err *err)
{
	const char *s = json_string_value(v);
	json_error_t je;

	if (!s || !*s) {
		/* Python: json.loads(x) if x else None */
		*out = s || json_is_null(v) || !v ? json_null() : json_deep_copy(v);
		return *out ? 0 : mcp__oom(err);
	}
	*out = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!*out)
		return core_err_set(err, CORE_EDATA,
				    "the audit trail's %s holds text that is not JSON: %s",
				    column, je.text);
	return 0;
}

static int field_value(const json_t *row, const mcp__field *f, json_t **out,
		       core_err *err)
{
	const char *col = f->column ? f->column : f->name;
	const json_t *v = json_object_get(row, col);

	switch (f->kind) {
	case MCP__TIME:
		*out = mcp__iso(v);
		break;
	case MCP__JSON:
		return parse_json(v, col, out, err);
	case MCP__BOOL:
		*out = json_is_integer(v) ? json_boolean(json_integer_value(v) != 0)
					  : json_deep_copy(v ? v : json_null());
		break;
	case MCP__SHORT:
		*out = json_is_string(v) ? mcp__short(json_string_value(v))
					 : json_deep_copy(v ? v : json_null());
		break;
	case MCP__RAW:
		*out = json_deep_copy(v ? v : json_null());
		break;
	}
	return *out ? 0 : mcp__oom(err);
}

int mcp__shape(const json_t *row, const mcp__field *f, json_t **out,
	       core_err *err)
{
	json_t *o = json_object(), *v = NULL;
	int rc = o ? 0 : mcp__oom(err);

	for (; !rc && f->name; f++) {
		if (!(rc = field_value(row, f, &v, err)))
			rc = mcp__set(o, f->name, v, err);
	}
	if (rc) {
		json_decref(o);
		o = NULL;
	}
	*out = o;
	return rc;
}

int mcp__shape_all(const json_t *rows, const mcp__field *f, json_t **out,
		   core_err *err)
{
	json_t *arr = json_array(), *o, *row;
	int rc = arr ? 0 : mcp__oom(err);
	size_t i;

	json_array_foreach(rows, i, row) {
		if (rc || (rc = mcp__shape(row, f, &o, err)))
			break;
		rc = mcp__append(arr, o, err);
	}
	if (rc) {
		json_decref(arr);
		arr = NULL;
	}
	*out = arr;
	return rc;
}

double mcp__double(const json_t *v)
{
	return json_is_integer(v) ? (double)json_integer_value(v)
				  : json_is_real(v) ? json_real_value(v) : 0.0;
}

void mcp__num_add(mcp__num *n, const json_t *v)
{
	if (json_is_integer(v)) {
		if (n->real)
			n->d += (double)json_integer_value(v);
		else
			n->i += json_integer_value(v);
	} else if (json_is_real(v)) {
		if (!n->real) {
			n->real = true;
			n->d = (double)n->i;
		}
		n->d += json_real_value(v);
	}
}

double mcp__num_double(const mcp__num *n)
{
	return n->real ? n->d : (double)n->i;
}

json_t *mcp__num_json(const mcp__num *n)
{
	return n->real ? json_real(n->d) : json_integer(n->i);
}

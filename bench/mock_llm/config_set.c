/*
 * config_set.c — the options with a syntax of their own (see
 * config_internal.h): answer, labels, latency, the two schedules, rpm and
 * the over-capacity status, with their JSON forms, and the parsing
 * helpers every option shares.
 */
#include "config_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mock__cfg_bad(char *err, size_t n, const struct mock__opt *o,
		  const char *v, const char *fmt, ...)
{
	va_list ap;
	int k = snprintf(err, n, "--%s: bad value '%s': ", o->name, v);

	if (k >= 0 && (size_t)k < n) {
		va_start(ap, fmt);
		vsnprintf(err + k, n - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Parses a whole string as a finite double. */
int mock__cfg_double(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return *v && !*end && !errno && isfinite(*out) ? 0 : -1;
}

int mock__cfg_long(const char *v, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	return *v && !*end && !errno ? 0 : -1;
}

int mock__set_answer(mock_cfg *c, const char *v, char *err, size_t n)
{
	if (strcmp(v, "label") && strcmp(v, "echo"))
		return mock__cfg_bad(err, n, mock__cfg_find("answer", 6), v,
			   "expected label or echo");
	free(c->answer);
	c->answer = mock_xstrdup(v);
	return 0;
}

void mock__cfg_free_labels(mock_cfg *c)
{
	for (size_t i = 0; i < c->nlabels; i++)
		free(c->labels[i]);
	free(c->labels);
	c->labels = NULL;
	c->nlabels = 0;
}

int mock__set_labels(mock_cfg *c, const char *v, char *err, size_t n)
{
	char **labels = NULL;
	size_t count = 0;
	const char *p = v;

	for (;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		while (len && *p == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		if (!len) {
			for (size_t i = 0; i < count; i++)
				free(labels[i]);
			free(labels);
			return mock__cfg_bad(err, n, mock__cfg_find("labels", 6), v,
				   "expected non-empty labels separated by commas");
		}
		labels = mock_xrealloc(labels, (count + 1) * sizeof(*labels));
		labels[count++] = mock_xstrndup(p, len);
		if (!e)
			break;
		p = e + 1;
	}
	mock__cfg_free_labels(c);
	free(c->labels_spec);
	c->labels = labels;
	c->nlabels = count;
	c->labels_spec = mock_xstrdup(v);
	return 0;
}

int mock__set_latency(mock_cfg *c, const char *v, char *err, size_t n)
{
	const struct mock__opt *o = mock__cfg_find("latency", 7);
	char kind[16];
	double a = 0, b = 0;
	int k = 0;
	mock_lat_kind lk;

	if (mock__cfg_double(v, &a) == 0) {
		lk = MOCK_LAT_FIXED;
	} else if (sscanf(v, "%15[a-z]:%lf%n", kind, &a, &k) == 2 &&
		   v[k] == '\0' && !strcmp(kind, "fixed")) {
		lk = MOCK_LAT_FIXED;
	} else if (sscanf(v, "%15[a-z]:%lf:%lf%n", kind, &a, &b, &k) == 3 &&
		   v[k] == '\0' && (!strcmp(kind, "uniform") ||
				    !strcmp(kind, "lognormal"))) {
		lk = kind[0] == 'u' ? MOCK_LAT_UNIFORM : MOCK_LAT_LOGNORMAL;
	} else {
		return mock__cfg_bad(err, n, o, v, "expected fixed:MS, uniform:MIN:MAX "
			   "or lognormal:MEDIAN:SIGMA");
	}
	if (!isfinite(a) || !isfinite(b) || a < 0 || b < 0 || a > 3.6e6 ||
	    b > 3.6e6 || (lk == MOCK_LAT_UNIFORM && b < a) ||
	    (lk == MOCK_LAT_LOGNORMAL && b > 10))
		return mock__cfg_bad(err, n, o, v, "times are 0..3600000 ms, MIN <= MAX, "
			   "SIGMA 0..10");
	free(c->latency_spec);
	c->latency_spec = mock_xstrdup(v);
	c->lat_kind = lk;
	c->lat_a = a;
	c->lat_b = b;
	return 0;
}

/* Parses "V:S[,V:S...]" into *out (caller frees); -1 on a bad spec. */
static int parse_phases(const char *v, int integral, mock_phase **out,
			size_t *nout)
{
	mock_phase *ph = NULL;
	size_t count = 0;
	const char *p = v;

	while (*p) {
		double r, s;
		int k = 0;

		if (sscanf(p, "%lf:%lf%n", &r, &s, &k) != 2 || !isfinite(r) ||
		    !isfinite(s) || r < 0 || s <= 0 || r > 1e12 || s > 1e9 ||
		    (integral && r != floor(r)) || (p[k] && p[k] != ',') ||
		    (p[k] == ',' && !p[k + 1])) {
			free(ph);
			return -1;
		}
		ph = mock_xrealloc(ph, (count + 1) * sizeof(*ph));
		ph[count++] = (mock_phase){ r, s };
		p += k + (p[k] == ',');
	}
	*out = ph;
	*nout = count;
	return 0;
}

int mock__set_schedule(mock_cfg *c, const char *v, char *err, size_t n)
{
	mock_phase *ph;
	size_t count;

	if (parse_phases(v, 0, &ph, &count))
		return mock__cfg_bad(err, n, mock__cfg_find("schedule", 8), v,
			   "expected RPS:SECS[,RPS:SECS...] with RPS >= 0 "
			   "and 0 < SECS <= 1e9, e.g. 20:10,5:10");
	free(c->phases);
	free(c->schedule_spec);
	c->phases = ph;
	c->nphases = count;
	c->schedule_spec = mock_xstrdup(v);
	return 0;
}

int mock__set_cschedule(mock_cfg *c, const char *v, char *err, size_t n)
{
	mock_phase *ph;
	size_t count;

	if (parse_phases(v, 1, &ph, &count))
		return mock__cfg_bad(err, n, mock__cfg_find("concurrency-schedule", 20), v,
			   "expected N:SECS[,N:SECS...] with a whole N >= 0 "
			   "and 0 < SECS <= 1e9, e.g. 8:5,2:5");
	free(c->cphases);
	free(c->cschedule_spec);
	c->cphases = ph;
	c->ncphases = count;
	c->cschedule_spec = mock_xstrdup(v);
	return 0;
}

int mock__set_rpm(mock_cfg *c, const char *v, char *err, size_t n)
{
	double d;

	if (mock__cfg_double(v, &d) || d < 0 || d > 6e10)
		return mock__cfg_bad(err, n, mock__cfg_find("rpm", 3), v,
			   "expected a number 0..6e10");
	c->rps = d / 60;
	return 0;
}

int mock__set_status(mock_cfg *c, const char *v, char *err, size_t n)
{
	long s;

	if (mock__cfg_long(v, &s) || (s != 429 && s != 503 && s != 529))
		return mock__cfg_bad(err, n, mock__cfg_find("over-capacity-status", 20), v,
			   "expected 429, 503 or 529");
	c->over_status = s;
	return 0;
}

/* ------------------------------------------------------------ getters */

json_t *mock__get_answer(const mock_cfg *c)
{
	return json_string(c->answer);
}

json_t *mock__get_labels(const mock_cfg *c)
{
	json_t *a = json_array();

	for (size_t i = 0; i < c->nlabels; i++)
		json_array_append_new(a, json_string(c->labels[i]));
	return a;
}

json_t *mock__get_latency(const mock_cfg *c)
{
	return json_string(c->latency_spec);
}

json_t *mock__get_schedule(const mock_cfg *c)
{
	return json_string(c->schedule_spec);
}

json_t *mock__get_cschedule(const mock_cfg *c)
{
	return json_string(c->cschedule_spec);
}

json_t *mock__get_rpm(const mock_cfg *c)
{
	return json_real(c->rps * 60);
}

json_t *mock__get_status(const mock_cfg *c)
{
	return json_integer(c->over_status);
}

/*
 * config.c — the option table and its two front ends, argv and JSON (see
 * config.h). Every option is set through one function from its text form,
 * so the command line, POST /admin/config and the defaults share one
 * parser and one set of error messages.
 */
#include "config.h"
#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef int (*set_fn)(mock_cfg *c, const char *v, char *err, size_t n);

enum kind { K_LONG, K_DBL, K_STR, K_FN };

struct opt {
	const char *name;
	const char *metavar;
	const char *def;
	enum kind kind;
	size_t off;
	double lo, hi;  /* inclusive range for K_LONG and K_DBL */
	int startup;    /* refused by POST /admin/config */
	set_fn fn;
	const char *help;
};

static int set_answer(mock_cfg *c, const char *v, char *err, size_t n);
static int set_labels(mock_cfg *c, const char *v, char *err, size_t n);
static int set_latency(mock_cfg *c, const char *v, char *err, size_t n);
static int set_schedule(mock_cfg *c, const char *v, char *err, size_t n);
static int set_status(mock_cfg *c, const char *v, char *err, size_t n);

#define OFF(f) offsetof(mock_cfg, f)
#define RATE(f) K_DBL, OFF(f), 0, 1, 0, NULL

static const struct opt OPTS[] = {
	{ "port", "P", "0", K_LONG, OFF(port), 0, 65535, 1, NULL,
	  "TCP port to listen on; 0 picks a free one" },
	{ "bind", "ADDR", "127.0.0.1", K_STR, OFF(bind), 0, 0, 1, NULL,
	  "numeric IPv4 or IPv6 address to listen on" },
	{ "port-file", "F", "", K_STR, OFF(port_file), 0, 0, 1, NULL,
	  "write the actual port to F (atomically: F.tmp then rename)" },
	{ "require-key", "K", "", K_STR, OFF(require_key), 0, 0, 0, NULL,
	  "answer 401 unless 'Authorization: Bearer K' or 'api-key: K'" },
	{ "answer", "label|echo", "label", K_FN, 0, 0, 0, 0, set_answer,
	  "content: a label picked by the prompt hash, or the prompt" },
	{ "labels", "A,B,..", "positive,negative,neutral", K_FN, 0, 0, 0, 0,
	  set_labels, "labels for --answer label and string fields" },
	{ "fence-rate", "P", "0", RATE(fence_rate),
	  "share of standard-prompt JSON answers wrapped in ```json fences" },
	{ "latency", "SPEC", "fixed:0", K_FN, 0, 0, 0, 0, set_latency,
	  "fixed:MS | uniform:MIN:MAX | lognormal:MEDIAN:SIGMA (ms)" },
	{ "max-concurrent", "N", "0", K_LONG, OFF(max_concurrent), 0, 1e9, 0,
	  NULL, "requests served at once (0: no limit)" },
	{ "rps", "R", "0", K_DBL, OFF(rps), 0, 1e9, 0, NULL,
	  "requests admitted per rolling second (0: no limit)" },
	{ "schedule", "R:S,..", "", K_FN, 0, 0, 0, 0, set_schedule,
	  "repeating rate schedule overriding --rps, e.g. 20:10,5:10" },
	{ "over-capacity-status", "429|503|529", "429", K_FN, 0, 0, 0, 0,
	  set_status, "status answered over capacity" },
	{ "retry-after", "S", "0", K_DBL, OFF(retry_after), 0, 86400, 0, NULL,
	  "Retry-After seconds on over-capacity answers, rounded up (0: none)" },
	{ "error-500-rate", "P", "0", RATE(rate[MOCK_FAULT_500]),
	  "share of admitted requests answered 500" },
	{ "malformed-rate", "P", "0", RATE(rate[MOCK_FAULT_MALFORMED]),
	  "share answered 200 with a body that is not JSON" },
	{ "truncated-rate", "P", "0", RATE(rate[MOCK_FAULT_TRUNCATED]),
	  "share whose body stops short of Content-Length, then close" },
	{ "stall-rate", "P", "0", RATE(rate[MOCK_FAULT_STALL]),
	  "share held --stall-ms, then closed without an answer" },
	{ "stall-ms", "MS", "60000", K_LONG, OFF(stall_ms), 0, 86400000, 0,
	  NULL, "how long a stalled request is held" },
	{ "drop-rate", "P", "0", RATE(rate[MOCK_FAULT_DROP]),
	  "share closed right after the request is read" },
	{ "length-rate", "P", "0", RATE(rate[MOCK_FAULT_LENGTH]),
	  "share cut in half with finish_reason \"length\"" },
	{ "seed", "S", "1", K_LONG, OFF(seed), 0, 9.2e18, 0, NULL,
	  "seed of the latency and fault draws" },
};
#define NOPTS (sizeof(OPTS) / sizeof(OPTS[0]))

static int bad(char *err, size_t n, const struct opt *o, const char *v,
	       const char *fmt, ...) MOCK_PRINTF(5, 6);

static int bad(char *err, size_t n, const struct opt *o, const char *v,
	       const char *fmt, ...)
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

static const struct opt *find_opt(const char *name, size_t len)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const char *o = OPTS[i].name;
		size_t j;

		if (strlen(o) != len)
			continue;
		for (j = 0; j < len; j++)
			if (o[j] != (name[j] == '_' ? '-' : name[j]))
				break;
		if (j == len)
			return &OPTS[i];
	}
	return NULL;
}

/* Parses a whole string as a finite double. */
static int to_double(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return *v && !*end && !errno && isfinite(*out) ? 0 : -1;
}

static int to_long(const char *v, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	return *v && !*end && !errno ? 0 : -1;
}

/* ------------------------------------------------------------ setters */

static int set_answer(mock_cfg *c, const char *v, char *err, size_t n)
{
	if (strcmp(v, "label") && strcmp(v, "echo"))
		return bad(err, n, find_opt("answer", 6), v,
			   "expected label or echo");
	free(c->answer);
	c->answer = mock_xstrdup(v);
	return 0;
}

static void free_labels(mock_cfg *c)
{
	for (size_t i = 0; i < c->nlabels; i++)
		free(c->labels[i]);
	free(c->labels);
	c->labels = NULL;
	c->nlabels = 0;
}

static int set_labels(mock_cfg *c, const char *v, char *err, size_t n)
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
			return bad(err, n, find_opt("labels", 6), v,
				   "expected non-empty labels separated by commas");
		}
		labels = mock_xrealloc(labels, (count + 1) * sizeof(*labels));
		labels[count++] = mock_xstrndup(p, len);
		if (!e)
			break;
		p = e + 1;
	}
	free_labels(c);
	free(c->labels_spec);
	c->labels = labels;
	c->nlabels = count;
	c->labels_spec = mock_xstrdup(v);
	return 0;
}

static int set_latency(mock_cfg *c, const char *v, char *err, size_t n)
{
	const struct opt *o = find_opt("latency", 7);
	char kind[16];
	double a = 0, b = 0;
	int k = 0;
	mock_lat_kind lk;

	if (to_double(v, &a) == 0) {
		lk = MOCK_LAT_FIXED;
	} else if (sscanf(v, "%15[a-z]:%lf%n", kind, &a, &k) == 2 &&
		   v[k] == '\0' && !strcmp(kind, "fixed")) {
		lk = MOCK_LAT_FIXED;
	} else if (sscanf(v, "%15[a-z]:%lf:%lf%n", kind, &a, &b, &k) == 3 &&
		   v[k] == '\0' && (!strcmp(kind, "uniform") ||
				    !strcmp(kind, "lognormal"))) {
		lk = kind[0] == 'u' ? MOCK_LAT_UNIFORM : MOCK_LAT_LOGNORMAL;
	} else {
		return bad(err, n, o, v, "expected fixed:MS, uniform:MIN:MAX "
			   "or lognormal:MEDIAN:SIGMA");
	}
	if (!isfinite(a) || !isfinite(b) || a < 0 || b < 0 || a > 3.6e6 ||
	    b > 3.6e6 || (lk == MOCK_LAT_UNIFORM && b < a) ||
	    (lk == MOCK_LAT_LOGNORMAL && b > 10))
		return bad(err, n, o, v, "times are 0..3600000 ms, MIN <= MAX, "
			   "SIGMA 0..10");
	free(c->latency_spec);
	c->latency_spec = mock_xstrdup(v);
	c->lat_kind = lk;
	c->lat_a = a;
	c->lat_b = b;
	return 0;
}

static int set_schedule(mock_cfg *c, const char *v, char *err, size_t n)
{
	mock_phase *ph = NULL;
	size_t count = 0;
	const char *p = v;

	while (*p) {
		double r, s;
		int k = 0;

		if (sscanf(p, "%lf:%lf%n", &r, &s, &k) != 2 || !isfinite(r) ||
		    !isfinite(s) || r < 0 || s <= 0 || (p[k] && p[k] != ',') ||
		    (p[k] == ',' && !p[k + 1])) {
			free(ph);
			return bad(err, n, find_opt("schedule", 8), v,
				   "expected RPS:SECS[,RPS:SECS...] with RPS >= 0 "
				   "and SECS > 0, e.g. 20:10,5:10");
		}
		ph = mock_xrealloc(ph, (count + 1) * sizeof(*ph));
		ph[count++] = (mock_phase){ r, s };
		p += k + (p[k] == ',');
	}
	free(c->phases);
	free(c->schedule_spec);
	c->phases = ph;
	c->nphases = count;
	c->schedule_spec = mock_xstrdup(v);
	return 0;
}

static int set_status(mock_cfg *c, const char *v, char *err, size_t n)
{
	long s;

	if (to_long(v, &s) || (s != 429 && s != 503 && s != 529))
		return bad(err, n, find_opt("over-capacity-status", 20), v,
			   "expected 429, 503 or 529");
	c->over_status = s;
	return 0;
}

static int set_opt(mock_cfg *c, const struct opt *o, const char *v,
		   char *err, size_t n)
{
	char *field = (char *)c + o->off;
	double d;
	long l;

	switch (o->kind) {
	case K_LONG:
		if (to_long(v, &l) || l < o->lo || l > o->hi)
			return bad(err, n, o, v, "expected an integer %.0f..%.0f",
				   o->lo, o->hi);
		*(long *)(void *)field = l;
		return 0;
	case K_DBL:
		if (to_double(v, &d) || d < o->lo || d > o->hi)
			return bad(err, n, o, v, "expected a number %g..%g",
				   o->lo, o->hi);
		*(double *)(void *)field = d;
		return 0;
	case K_STR:
		free(*(char **)(void *)field);
		*(char **)(void *)field = mock_xstrdup(v);
		return 0;
	case K_FN:
		return o->fn(c, v, err, n);
	}
	return -1;
}

/* Cross-option rules, checked after a whole set of changes. */
static int check(const mock_cfg *c, char *err, size_t n)
{
	double sum = 0;

	for (int i = 0; i < MOCK_FAULT_LAST; i++)
		sum += c->rate[i];
	if (sum > 1 + 1e-9) {
		snprintf(err, n, "the fault rates (--error-500-rate, "
			 "--malformed-rate, --truncated-rate, --stall-rate, "
			 "--drop-rate, --length-rate) add up to %g; keep the "
			 "sum at most 1", sum);
		return -1;
	}
	return 0;
}

/* --------------------------------------------------------- life cycle */

void mock_cfg_init(mock_cfg *c)
{
	char err[256];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NOPTS; i++)
		if (set_opt(c, &OPTS[i], OPTS[i].def, err, sizeof(err)))
			abort(); /* a bad default is a bug */
}

void mock_cfg_release(mock_cfg *c)
{
	free(c->bind);
	free(c->port_file);
	free(c->require_key);
	free(c->answer);
	free(c->labels_spec);
	free_labels(c);
	free(c->latency_spec);
	free(c->schedule_spec);
	free(c->phases);
	memset(c, 0, sizeof(*c));
}

void mock_cfg_copy(mock_cfg *dst, const mock_cfg *src)
{
	*dst = *src;
	dst->bind = mock_xstrdup(src->bind);
	dst->port_file = mock_xstrdup(src->port_file);
	dst->require_key = mock_xstrdup(src->require_key);
	dst->answer = mock_xstrdup(src->answer);
	dst->latency_spec = mock_xstrdup(src->latency_spec);
	dst->labels_spec = mock_xstrdup(src->labels_spec);
	dst->labels = mock_xmalloc(src->nlabels * sizeof(*dst->labels));
	for (size_t i = 0; i < src->nlabels; i++)
		dst->labels[i] = mock_xstrdup(src->labels[i]);
	dst->schedule_spec = mock_xstrdup(src->schedule_spec);
	dst->phases = NULL;
	if (src->nphases) {
		dst->phases = mock_xmalloc(src->nphases * sizeof(*dst->phases));
		memcpy(dst->phases, src->phases,
		       src->nphases * sizeof(*dst->phases));
	}
}

/* ----------------------------------------------------------- front ends */

int mock_cfg_parse_argv(mock_cfg *c, int argc, char **argv, char *err,
			size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *v;
		const struct opt *o;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			mock_cfg_usage(stdout);
			return 1;
		}
		if (strncmp(a, "--", 2) != 0) {
			snprintf(err, errlen, "unexpected argument '%s' (options "
				 "start with --; see --help)", a);
			return 2;
		}
		a += 2;
		eq = strchr(a, '=');
		o = find_opt(a, eq ? (size_t)(eq - a) : strlen(a));
		if (!o) {
			snprintf(err, errlen, "unknown option '%s' (see --help)",
				 argv[i]);
			return 2;
		}
		if (eq) {
			v = eq + 1;
		} else if (i + 1 < argc) {
			v = argv[++i];
		} else {
			snprintf(err, errlen, "--%s needs a value (%s)", o->name,
				 o->metavar);
			return 2;
		}
		if (set_opt(c, o, v, err, errlen))
			return 2;
	}
	return check(c, err, errlen) ? 2 : 0;
}

/* The text form of a JSON value, or NULL with err set. Caller frees. */
static char *json_text(const struct opt *o, const json_t *v, char *err,
		       size_t n)
{
	mock_buf b = { 0 };
	size_t i;
	json_t *e;

	if (json_is_string(v))
		return mock_xstrdup(json_string_value(v));
	if (json_is_integer(v)) {
		mock_buf_addf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else if (json_is_real(v)) {
		mock_buf_addf(&b, "%.17g", json_real_value(v));
	} else if (json_is_null(v)) {
		mock_buf_adds(&b, o->def);
	} else if (json_is_array(v) && json_array_size(v)) {
		json_array_foreach(v, i, e) {
			if (!json_is_string(e)) {
				mock_buf_release(&b);
				goto out_bad;
			}
			mock_buf_addf(&b, "%s%s", i ? "," : "",
				      json_string_value(e));
		}
	} else {
		goto out_bad;
	}
	return mock_buf_detach(&b, NULL);
out_bad:
	snprintf(err, n, "%s: expected a string, a number, null or an array "
		 "of strings", o->name);
	return NULL;
}

int mock_cfg_apply_json(mock_cfg *c, const json_t *obj, char *err,
			size_t errlen)
{
	mock_cfg tmp;
	const char *key;
	json_t *v;

	if (!json_is_object(obj)) {
		snprintf(err, errlen, "expected a JSON object of options");
		return -1;
	}
	mock_cfg_copy(&tmp, c);
	json_object_foreach((json_t *)obj, key, v) {
		const struct opt *o = find_opt(key, strlen(key));
		char *text;
		int rc;

		if (!o) {
			snprintf(err, errlen, "unknown option '%s'", key);
			goto out_release;
		}
		if (o->startup) {
			snprintf(err, errlen, "'%s' is a start-up option; it "
				 "cannot change at run time", o->name);
			goto out_release;
		}
		text = json_text(o, v, err, errlen);
		if (!text)
			goto out_release;
		rc = set_opt(&tmp, o, text, err, errlen);
		free(text);
		if (rc)
			goto out_release;
	}
	if (check(&tmp, err, errlen))
		goto out_release;
	mock_cfg_release(c);
	*c = tmp;
	return 0;
out_release:
	mock_cfg_release(&tmp);
	return -1;
}

static json_t *opt_json(const mock_cfg *c, const struct opt *o)
{
	const char *field = (const char *)c + o->off;

	switch (o->kind) {
	case K_LONG:
		return json_integer(*(const long *)(const void *)field);
	case K_DBL:
		return json_real(*(const double *)(const void *)field);
	case K_STR:
		return json_string(*(char *const *)(const void *)field);
	case K_FN:
		break;
	}
	if (o->fn == set_answer)
		return json_string(c->answer);
	if (o->fn == set_latency)
		return json_string(c->latency_spec);
	if (o->fn == set_schedule)
		return json_string(c->schedule_spec);
	if (o->fn == set_status)
		return json_integer(c->over_status);
	{
		json_t *a = json_array();

		for (size_t i = 0; i < c->nlabels; i++)
			json_array_append_new(a, json_string(c->labels[i]));
		return a;
	}
}

json_t *mock_cfg_to_json(const mock_cfg *c)
{
	json_t *o = json_object();

	for (size_t i = 0; i < NOPTS; i++)
		json_object_set_new(o, OPTS[i].name, opt_json(c, &OPTS[i]));
	if (*c->require_key) /* never echo a key */
		json_object_set_new(o, "require-key", json_string("(set)"));
	return o;
}

void mock_cfg_usage(FILE *f)
{
	fputs("usage: elspeth-mock-llm [--port P] [--bind ADDR] "
	      "[--port-file F] [options]\n\n"
	      "An OpenAI- and Azure-compatible mock chat-completions server "
	      "(see docs/mock_llm.md).\n"
	      "Options take '--name VALUE' or '--name=VALUE'; all but the "
	      "first three can\nalso change at run time with POST "
	      "/admin/config {\"name\": value, ...}.\n"
	      "Rates P are shares 0..1; the six fault rates add up to at most "
	      "1.\n\n", f);
	for (size_t i = 0; i < NOPTS; i++) {
		char head[64];

		snprintf(head, sizeof(head), "--%s %s", OPTS[i].name,
			 OPTS[i].metavar);
		fprintf(f, "  %-30s %s", head, OPTS[i].help);
		if (*OPTS[i].def)
			fprintf(f, " [%s]", OPTS[i].def);
		fputc('\n', f);
	}
	fputs("  --help                         this text\n", f);
}

/*
 * config.c — the option table and its two front ends, argv and JSON (see
 * config.h). Every option is set through one function from its text form,
 * so the command line, POST /admin/config and the defaults share one
 * parser and one set of error messages. Options with a syntax of their
 * own are set and shown by config_set.c.
 */
#include "config_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const LIMITERS[] = { "rolling", "fixed", "bucket", NULL };
static const char *const HINTS[] = { "fixed", "none", "seconds", "http-date",
	"ms", "azure", "fractional", "body", NULL };
static const char *const RL_HEADERS[] = { "none", "openai", "anthropic",
	NULL };
static const char *const QUOTAS[] = { "none", "openai", "anthropic",
	"credits", "credits-transient", NULL };

#define OFF(f) offsetof(mock_cfg, f)
#define O_LONG(nm, mv, d, f, l, h, help_) { .name = nm, .metavar = mv, \
	.def = d, .kind = K_LONG, .off = OFF(f), .lo = l, .hi = h, \
	.help = help_ }
#define O_DBL(nm, mv, d, f, l, h, help_) { .name = nm, .metavar = mv, \
	.def = d, .kind = K_DBL, .off = OFF(f), .lo = l, .hi = h, \
	.help = help_ }
#define O_RATE(nm, f, help_) O_DBL(nm, "P", "0", f, 0, 1, help_)
#define O_STR(nm, mv, d, f, su, help_) { .name = nm, .metavar = mv, \
	.def = d, .kind = K_STR, .off = OFF(f), .startup = su, .help = help_ }
#define O_ENUM(nm, mv, d, f, w, help_) { .name = nm, .metavar = mv, \
	.def = d, .kind = K_ENUM, .off = OFF(f), .names = w, .help = help_ }
#define O_FN(nm, mv, d, f, help_) { .name = nm, .metavar = mv, .def = d, \
	.kind = K_FN, .fn = mock__set_##f, .get = mock__get_##f, .help = help_ }

static const struct mock__opt OPTS[] = {
	{ .name = "port", .metavar = "P", .def = "0", .kind = K_LONG,
	  .off = OFF(port), .lo = 0, .hi = 65535, .startup = 1,
	  .help = "TCP port to listen on; 0 picks a free one" },
	O_STR("bind", "ADDR", "127.0.0.1", bind, 1,
	      "numeric IPv4 or IPv6 address to listen on"),
	O_STR("port-file", "F", "", port_file, 1,
	      "write the actual port to F (atomically: F.tmp then rename)"),
	O_STR("require-key", "K", "", require_key, 0,
	      "answer 401 unless 'Authorization: Bearer K' or 'api-key: K'"),
	O_FN("answer", "label|echo", "label", answer,
	     "content: a label picked by the prompt hash, or the prompt"),
	O_FN("labels", "A,B,..", "positive,negative,neutral", labels,
	     "labels for --answer label and string fields"),
	O_RATE("fence-rate", fence_rate,
	       "share of standard-prompt JSON answers wrapped in ```json fences"),
	O_FN("latency", "SPEC", "fixed:0", latency,
	     "fixed:MS | uniform:MIN:MAX | lognormal:MEDIAN:SIGMA (ms)"),
	O_LONG("max-concurrent", "N", "0", max_concurrent, 0, 1e9,
	       "requests served at once (0: no limit)"),
	O_FN("concurrency-schedule", "N:S,..", "", cschedule,
	     "repeating cap schedule overriding --max-concurrent, e.g. 8:5,2:5"),
	O_DBL("rps", "R", "0", rps, 0, 1e9,
	      "request rate limit per second (0: no limit)"),
	O_FN("rpm", "N", "0", rpm,
	     "the same limit per minute: sets --rps N/60"),
	O_FN("schedule", "R:S,..", "", schedule,
	     "repeating rate schedule overriding --rps, e.g. 20:10,5:10"),
	O_ENUM("limiter", "rolling|fixed|bucket", "rolling", limiter, LIMITERS,
	       "rate limiter: rolling window, fixed window or token bucket"),
	O_LONG("window-ms", "MS", "1000", window_ms, 1, 86400000,
	       "window length; a window holds rate x window requests"),
	O_LONG("grain-ms", "MS", "0", grain_ms, 0, 86400000,
	       "the request rate also enforced per fixed window of MS, as "
	       "OpenAI quantizes per-minute limits (0: not)"),
	O_DBL("burst", "B", "0", burst, 0, 1e12,
	      "token bucket size in requests (0: a window's worth)"),
	O_DBL("refused-weight", "W", "0", refused_weight, 0, 100,
	      "what a refused request costs the rate and token limits "
	      "(1: every arrival counts, as OpenAI)"),
	O_DBL("tpm", "T", "0", tpm, 0, 1e12,
	      "tokens per minute (prompt chars/4 + max_tokens; 0: no limit)"),
	O_LONG("default-max-tokens", "N", "1024", default_max_tokens, 0, 1e9,
	       "tokens reserved when a request gives no max_tokens"),
	O_FN("over-capacity-status", "429|503|529", "429", status,
	     "status answered over capacity"),
	O_ENUM("hint", "STYLE", "fixed", hint, HINTS,
	       "fixed|none|seconds|http-date|ms|azure|fractional|body: how a "
	       "refusal says when to retry"),
	O_DBL("retry-after", "S", "0", retry_after, 0, 86400,
	      "--hint fixed: Retry-After seconds, rounded up (0: none)"),
	O_DBL("hint-factor", "F", "1", hint_factor, 0, 1000,
	      "hinted wait = true wait x F (0.5 or 2: a wrong hint)"),
	O_ENUM("ratelimit-headers", "none|openai|anthropic", "none",
	       rl_headers, RL_HEADERS,
	       "rate-limit headers on every chat answer"),
	O_ENUM("quota", "KIND", "none", quota, QUOTAS,
	       "none|openai|anthropic|credits|credits-transient: quota errors"),
	O_LONG("quota-after", "N", "0", quota_after, 0, 9.2e18,
	       "requests that pass the quota before it runs out"),
	O_DBL("quota-rate", "P", "1", quota_rate, 0, 1,
	      "share of the later requests refused for quota"),
	O_LONG("quota-lock-ms", "MS", "0", quota_lock_ms, 0, 86400000,
	       "how long a quota refusal lasts (0: until reset)"),
	O_LONG("series-ms", "MS", "100", series_ms, 10, 3600000,
	       "interval of GET /admin/series"),
	O_RATE("error-500-rate", rate[MOCK_FAULT_500],
	       "share of admitted requests answered 500"),
	O_RATE("malformed-rate", rate[MOCK_FAULT_MALFORMED],
	       "share answered 200 with a body that is not JSON"),
	O_RATE("truncated-rate", rate[MOCK_FAULT_TRUNCATED],
	       "share whose body stops short of Content-Length, then close"),
	O_RATE("stall-rate", rate[MOCK_FAULT_STALL],
	       "share held --stall-ms, then closed without an answer"),
	O_LONG("stall-ms", "MS", "60000", stall_ms, 0, 86400000,
	       "how long a stalled request is held"),
	O_RATE("drop-rate", rate[MOCK_FAULT_DROP],
	       "share closed right after the request is read"),
	O_RATE("length-rate", rate[MOCK_FAULT_LENGTH],
	       "share cut in half with finish_reason \"length\""),
	O_LONG("seed", "S", "1", seed, 0, 9.2e18,
	       "seed of the latency and fault draws"),
};
#define NOPTS (sizeof(OPTS) / sizeof(OPTS[0]))

const struct mock__opt *mock__cfg_find(const char *name, size_t len)
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

static int set_opt(mock_cfg *c, const struct mock__opt *o, const char *v,
		   char *err, size_t n)
{
	char *field = (char *)c + o->off;
	double d;
	long l;

	switch (o->kind) {
	case K_LONG:
		if (mock__cfg_long(v, &l) || l < o->lo || l > o->hi)
			return mock__cfg_bad(err, n, o, v, "expected an integer %.0f..%.0f",
				   o->lo, o->hi);
		*(long *)(void *)field = l;
		return 0;
	case K_DBL:
		if (mock__cfg_double(v, &d) || d < o->lo || d > o->hi)
			return mock__cfg_bad(err, n, o, v, "expected a number %g..%g",
				   o->lo, o->hi);
		*(double *)(void *)field = d;
		return 0;
	case K_STR:
		free(*(char **)(void *)field);
		*(char **)(void *)field = mock_xstrdup(v);
		return 0;
	case K_ENUM:
		for (int i = 0; o->names[i]; i++) {
			if (!strcmp(v, o->names[i])) {
				*(int *)(void *)field = i;
				return 0;
			}
		}
		return mock__cfg_bad(err, n, o, v, "expected %s", o->metavar);
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
	if (c->quota == MOCK_QUOTA_TRANSIENT && c->quota_lock_ms == 0) {
		snprintf(err, n, "--quota credits-transient needs "
			 "--quota-lock-ms > 0 (how long the refusal lasts)");
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
	mock__cfg_free_labels(c);
	free(c->latency_spec);
	free(c->schedule_spec);
	free(c->phases);
	free(c->cschedule_spec);
	free(c->cphases);
	memset(c, 0, sizeof(*c));
}

static mock_phase *copy_phases(const mock_phase *ph, size_t n)
{
	mock_phase *out;

	if (!n)
		return NULL;
	out = mock_xmalloc(n * sizeof(*out));
	memcpy(out, ph, n * sizeof(*out));
	return out;
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
	dst->phases = copy_phases(src->phases, src->nphases);
	dst->cschedule_spec = mock_xstrdup(src->cschedule_spec);
	dst->cphases = copy_phases(src->cphases, src->ncphases);
}

/* ----------------------------------------------------------- front ends */

int mock_cfg_parse_argv(mock_cfg *c, int argc, char **argv, char *err,
			size_t errlen)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq, *v;
		const struct mock__opt *o;

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
		o = mock__cfg_find(a, eq ? (size_t)(eq - a) : strlen(a));
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
static char *json_text(const struct mock__opt *o, const json_t *v, char *err,
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
		const struct mock__opt *o = mock__cfg_find(key, strlen(key));
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

static json_t *opt_json(const mock_cfg *c, const struct mock__opt *o)
{
	const char *field = (const char *)c + o->off;

	switch (o->kind) {
	case K_LONG:
		return json_integer(*(const long *)(const void *)field);
	case K_DBL:
		return json_real(*(const double *)(const void *)field);
	case K_STR:
		return json_string(*(char *const *)(const void *)field);
	case K_ENUM:
		return json_string(o->names[*(const int *)(const void *)field]);
	case K_FN:
		break;
	}
	return o->get(c);
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

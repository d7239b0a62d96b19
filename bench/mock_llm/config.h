/*
 * config.h — the mock server's options: parsed from the command line at
 * start-up and from a JSON object by POST /admin/config at run time, with
 * the same names and the same value syntax (one table drives both, and
 * --help).
 */
#ifndef MOCK_CONFIG_H
#define MOCK_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

typedef enum mock_lat_kind {
	MOCK_LAT_FIXED,     /* a ms */
	MOCK_LAT_UNIFORM,   /* a..b ms */
	MOCK_LAT_LOGNORMAL  /* median a ms, sigma b */
} mock_lat_kind;

/* Injected faults, in the order their bands are laid on [0, 1). */
typedef enum mock_fault {
	MOCK_FAULT_DROP,
	MOCK_FAULT_STALL,
	MOCK_FAULT_500,
	MOCK_FAULT_MALFORMED,
	MOCK_FAULT_TRUNCATED,
	MOCK_FAULT_LENGTH,
	MOCK_FAULT_LAST
} mock_fault;

/* One phase of a repeating schedule: a rate (requests per second) for
 * --schedule, a concurrency cap for --concurrency-schedule. */
typedef struct mock_phase {
	double value; /* the limit during the phase; 0 admits none */
	double secs;  /* phase length */
} mock_phase;

/* The values of the word options, in the order of their names in config.c. */
typedef enum mock_lim_mode {
	MOCK_LIM_ROLLING,   /* a rolling window of --window-ms */
	MOCK_LIM_FIXED,     /* counters reset at window boundaries */
	MOCK_LIM_BUCKET     /* a token bucket */
} mock_lim_mode;

typedef enum mock_hint_style {
	MOCK_HINT_FIXED,      /* Retry-After: ceil(--retry-after), none at 0 */
	MOCK_HINT_NONE,
	MOCK_HINT_SECONDS,    /* Retry-After: whole seconds, rounded up */
	MOCK_HINT_HTTP_DATE,  /* Retry-After: an IMF-fixdate */
	MOCK_HINT_MS,         /* retry-after-ms */
	MOCK_HINT_AZURE,      /* retry-after-ms and Retry-After (seconds) */
	MOCK_HINT_FRACTIONAL, /* Retry-After: 0.35 */
	MOCK_HINT_BODY        /* "Please try again in 1.234s." in the message */
} mock_hint_style;

typedef enum mock_rl_headers {
	MOCK_RLH_NONE,
	MOCK_RLH_OPENAI,      /* x-ratelimit-* */
	MOCK_RLH_ANTHROPIC    /* anthropic-ratelimit-* */
} mock_rl_headers;

typedef enum mock_quota_kind {
	MOCK_QUOTA_NONE,
	MOCK_QUOTA_OPENAI,    /* 429 insufficient_quota */
	MOCK_QUOTA_ANTHROPIC, /* 400 "reached your specified API usage limits" */
	MOCK_QUOTA_CREDITS,   /* 402 OpenRouter "Insufficient credits" */
	MOCK_QUOTA_TRANSIENT  /* 402 with a retry hint (a key limit that resets) */
} mock_quota_kind;

/* All strings and arrays are owned by the mock_cfg. */
typedef struct mock_cfg {
	/* start-up only */
	long port;
	char *bind;
	char *port_file;
	/* answers */
	char *require_key;      /* "" accepts any key */
	char *answer;           /* "label" or "echo" */
	char *labels_spec;
	char **labels;
	size_t nlabels;
	double fence_rate;
	/* latency */
	char *latency_spec;
	mock_lat_kind lat_kind;
	double lat_a, lat_b;
	/* capacity */
	long max_concurrent;    /* 0: no limit */
	char *cschedule_spec;   /* --concurrency-schedule, "" when none */
	mock_phase *cphases;
	size_t ncphases;
	double rps;             /* 0: no limit (--rpm sets rps = rpm / 60) */
	char *schedule_spec;    /* "" when none */
	mock_phase *phases;
	size_t nphases;
	int limiter;            /* mock_lim_mode */
	long window_ms;
	long grain_ms;          /* the request rate also per fixed window of this; 0: no */
	double burst;           /* bucket size; 0: a window's worth */
	double refused_weight;  /* what a refused request costs the limiters */
	double tpm;             /* tokens per minute; 0: no limit */
	long default_max_tokens;
	long over_status;
	/* hints and headers */
	int hint;               /* mock_hint_style */
	double retry_after;     /* seconds, for --hint fixed; 0 omits it */
	double hint_factor;     /* hinted wait = true wait x factor */
	int rl_headers;         /* mock_rl_headers */
	/* quota */
	int quota;              /* mock_quota_kind */
	long quota_after;
	double quota_rate;
	long quota_lock_ms;     /* 0: a quota refusal lasts until reset */
	/* accounting */
	long series_ms;
	/* faults */
	double rate[MOCK_FAULT_LAST];
	long stall_ms;
	long seed;              /* 0 .. 2^63-1 */
} mock_cfg;

/* Sets every option to its default. Release with mock_cfg_release. */
void mock_cfg_init(mock_cfg *c);
void mock_cfg_release(mock_cfg *c);
/* dst = a deep copy of src (dst uninitialised). */
void mock_cfg_copy(mock_cfg *dst, const mock_cfg *src);

/*
 * Parses argv. Returns 0 on success, 1 when --help was printed (to stdout),
 * 2 on a bad option (message in err, naming the option and what it wants).
 */
int mock_cfg_parse_argv(mock_cfg *c, int argc, char **argv, char *err,
			size_t errlen);

/*
 * Applies a JSON object of options (names as on the command line, '_' may
 * stand for '-', values as strings, numbers, booleans, an array of strings
 * for labels, or null for the default). All or nothing: on error c is left
 * unchanged and err says which key was wrong. Start-up options are
 * refused. Returns 0 or -1.
 */
int mock_cfg_apply_json(mock_cfg *c, const json_t *obj, char *err,
			size_t errlen);

/* The options as a JSON object (a new reference). */
json_t *mock_cfg_to_json(const mock_cfg *c);

/* Writes the --help text to f. */
void mock_cfg_usage(FILE *f);

#endif

/*
 * http_internal.h — what the files of plugins/http/ share: the hints a
 * provider gives about its limits (hint.c), the capacity controller
 * (capacity.c), the AIMD throttle (aimd.c) and an upstream's gate, either
 * mode (gate.c). Pure logic: no clock, no lock, no I/O; times are passed
 * in, so tests and the simulator (bench/capsim) drive them with their own
 * clock. Not a published API (tests and bench/capsim include it).
 */
#ifndef ELSPETH_HTTP_INTERNAL_H
#define ELSPETH_HTTP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "plugins/http/http.h"

/* ------------------------------------------------------------------ hints */

/* Where a wait came from, for the audit trail (calls.throttle_reason). */
typedef enum http_hint_src {
	HTTP_HINT_NONE = 0,
	HTTP_HINT_RETRY_AFTER,     /* Retry-After: delta seconds (fractions too) */
	HTTP_HINT_RETRY_AFTER_DATE,/* Retry-After: an HTTP-date */
	HTTP_HINT_RETRY_AFTER_MS,  /* retry-after-ms (OpenAI, Azure) */
	HTTP_HINT_BODY,            /* "try again in 1.234s" in the error body */
	HTTP_HINT_RESET_REQUESTS,  /* x-ratelimit / anthropic: requests reset */
	HTTP_HINT_RESET_TOKENS,    /* x-ratelimit / anthropic: tokens reset */
	HTTP_HINT_SRC_LAST
} http_hint_src;

/* "retry-after", "retry-after-ms", ... never NULL. */
const char *http__hint_src_name(http_hint_src s);

/* What one answer said about the upstream's limits. A field is negative
 * when the answer did not say. */
typedef struct http_hints {
	double retry_after_s;         /* the first of the retry hints found */
	http_hint_src retry_src;
	double limit_requests, remaining_requests, reset_requests_s;
	double limit_tokens, remaining_tokens, reset_tokens_s;
	double limit_concurrency;     /* x-concurrency-limit: slots announced */
} http_hints;

void http__hints_init(http_hints *h);
/* Reads one header line ("Name: value\r\n", as libcurl's header callback
 * gives it; the name is case-insensitive). now: the wall clock, for
 * HTTP-date and RFC 3339 values. Unknown headers are ignored. Retry hints
 * rank retry-after-ms > Retry-After > body: the most precise wins. */
void http__hints_header(http_hints *h, const char *line, size_t len, time_t now);
/* Looks for a wait in an error body ("Please try again in 1.234s.",
 * "try again in 20ms", "retry after 6 seconds"); used only when no header
 * gave one. */
void http__hints_body(http_hints *h, const char *body, size_t len);

/* Parses OpenAI's durations ("1s", "6m0s", "20ms", "1h2m3.5s", "0.5s")
 * and bare seconds ("12", "0.35"); false if s is neither. */
bool http__parse_duration(const char *s, size_t len, double *seconds);
/* Parses an HTTP-date (RFC 9110: IMF-fixdate, and the obsolete RFC 850 and
 * asctime forms) or an RFC 3339 timestamp into a UTC time_t. */
bool http__parse_time(const char *s, size_t len, time_t *out);

/* An account error, not capacity: the body says the quota or credits are
 * exhausted (OpenAI insufficient_quota, Anthropic spend limits and credit
 * balance, OpenRouter credits, a key's limit). status: the HTTP status;
 * has_retry: the answer gave a retry hint (a 402 with one is transient
 * capacity, OpenRouter's in-flight budget). */
bool http__is_account_error(long status, const char *body, size_t len,
			    bool has_retry);

/* ---------------------------------------------------- capacity controller */

/*
 * One per upstream, shared by every request to it (capacity.c; the
 * algorithm and its constants: docs/adr/0016-capacity-control.md). It
 * decides when the next request may be sent: the pace (requests and
 * tokens per second), the concurrency (requests in flight, max_inflight
 * the ceiling), pauses the upstream asked for (Retry-After and kin,
 * for every request, not just the refused one) and quotas it announced
 * (x-ratelimit-remaining/reset). It learns from every answer. Pure logic:
 * no clock, no lock, no I/O, no allocation; times are nanoseconds on any
 * monotonic clock. The caller serialises calls (the executor's lock).
 */
#define HTTP_CAP_WAIT_DONE UINT64_MAX /* only a completion can free room */
#define HTTP_CAP_LOG 256              /* sends and successes remembered */

/* How an attempt ended, for the controller. */
typedef enum http_cap_outcome {
	HTTP_CAP_OK = 0,  /* an answer (the server admitted it) */
	HTTP_CAP_REFUSED, /* 429, 503, 529, a connect timeout: capacity */
	HTTP_CAP_OTHER,   /* anything else: the slot is released, no lesson */
	HTTP_CAP_OUTCOME_LAST
} http_cap_outcome;

/* What holds the next request back (for the audit trail and stats). */
typedef enum http_cap_reason {
	HTTP_CAP_GO = 0,      /* nothing: it was sent */
	HTTP_CAP_HINTED,      /* the upstream said when to come back */
	HTTP_CAP_QUOTA,       /* its announced remaining budget is spent */
	HTTP_CAP_BACKOFF,     /* a pause after a refusal without a hint */
	HTTP_CAP_PACE,        /* requests per second */
	HTTP_CAP_TOKENS,      /* tokens per second */
	HTTP_CAP_WINDOW,      /* requests in flight */
	HTTP_CAP_REASON_LAST
} http_cap_reason;

/* "go", "hinted", "quota", ... never NULL. */
const char *http__cap_reason_name(http_cap_reason r);

typedef struct http_cap_cfg {
	unsigned max_inflight; /* pool_size: the ceiling of concurrency, >= 1 */
	double max_rps;        /* configured requests/second budget, 0: none */
	double max_tps;        /* configured tokens/second budget, 0: none */
	unsigned start_window; /* in flight until the first answer (0: 8) */
} http_cap_cfg;

/* A budget the upstream announced: `remaining` of `limit` as of `as_of`
 * (the send time of the request whose answer said so), all back by
 * `reset_at`. */
typedef struct http_cap_quota {
	double limit, remaining;
	double window_s;          /* the longest reset announced: the period */
	uint64_t as_of, reset_at; /* reset_at 0: nothing known */
} http_cap_quota;

typedef struct http_cap_send {
	uint64_t t;
	double tokens;  /* estimated, then used (settled) */
	bool settled;
	bool answered;  /* its answer came (done) */
} http_cap_send;

/* The controller's state. Plain data: embed it, copy it; no release. The
 * fields are private to capacity.c (read them through http__cap_save). */
typedef struct http_cap {
	http_cap_cfg cfg;
	unsigned inflight;
	bool ever_ok;
	uint64_t opened_at;           /* the first answer (0: none yet; until
				       * then START_WINDOW in flight) */
	double ramp;                  /* > 0: the slow start's window after the
				       * first answer, +1 an answer, until a
				       * refusal or the window (0: over) */
	/* reactions to refusals: one per round trip */
	uint64_t react_at;            /* the last one */
	unsigned sent_since_react, oks_since_react, refused_since_react;
	unsigned ok_kmax;             /* largest k of a success sent since react_at */
	unsigned streak;              /* refusals in a row with nothing admitted */
	bool first_probe;             /* after the first refusal ever: one request, */
	unsigned probe_credit;        /* and one more for each answer of the
				       * burst (a slot freed) and each 5xx of
				       * a probe (it told nothing) */
	/* what the upstream said */
	uint64_t pause_until;         /* no dispatch before (hint or backoff) */
	http_cap_reason pause_why;
	double hint_scale;            /* hints found too short stretch later ones */
	uint64_t hint_end, hint_test; /* the last hinted pause, its first send */
	unsigned hint_test_k;
	http_cap_quota req_quota, tok_quota;
	double tok_ratio;             /* tokens used / estimated */
	/* pace */
	double rate;                  /* requests/s now; INFINITY: not paced */
	double base;                  /* cruise: the last rate that worked */
	double prev_base;             /* before the last probe became the base */
	double peak;                  /* the rate that worked before the last drop */
	double low;                   /* the base that held before the last jump passed */
	double gain;                  /* the next probe: base * (1 + gain) */
	double probe_every;           /* seconds of cruise between probes */
	bool probing, jumping;        /* rate is above base, on trial */
	bool jumped_last;
	bool jump_pending;            /* a jump's first send, its probe, is */
	uint64_t jump_sent;           /* out (sent then): the base until its answer */
	double jump_rate;             /* the jump's rate once the probe passes */
	uint64_t probe_start, probe_end, next_probe, next_jump, promoted_at, drop_at, nudge_at;
	uint64_t base_since;           /* the base was set */
	uint64_t first_paced;         /* the first refusal set the pace */
	uint64_t next_send, next_tok; /* pacing grids (requests, tokens) */
	bool pace_bound;              /* a send waited for the pace lately */
	/* concurrency */
	double window, good_window;
	int conc_score;               /* > 0: refusals look like a concurrency cap */
	uint64_t wcut_at;
	bool window_bound;
	/* latency */
	double srtt_s, min_rtt_s;
	double slow_rtt_s;            /* smoothed over ~64 answers */
	double base_rtt_s;            /* its lowest since the warm-up, forgetting */
	unsigned lat_n;
	uint64_t lat_at, lat_cut_at;
	/* what was sent and admitted (rings of send times) */
	http_cap_send sends[HTTP_CAP_LOG];
	uint64_t oks[HTTP_CAP_LOG];
	unsigned sends_head, sends_n, oks_head, oks_n;
	unsigned long long refusals, drops, window_cuts;
} http_cap;

/* The learnt state as numbers: for checkpoints (a resumed run starts
 * where the crashed one stood) and for stats. */
typedef struct http_cap_state {
	double rate;        /* requests/s, INFINITY: not paced */
	double good_rate;   /* the last rate that worked (cruise) */
	double peak_rate;   /* the rate that worked before the last drop */
	double window;      /* requests in flight allowed */
	double good_window;
	double srtt_s, min_rtt_s;
	double hint_scale;
} http_cap_state;

/* Sets up c: no pace (or max_rps), max_inflight in flight. */
void http__cap_init(http_cap *c, const http_cap_cfg *cfg, uint64_t now);
/* May one request (estimated `tokens`, 0: unknown) be sent now? 0: yes —
 * it is counted in flight and *k receives the number in flight including
 * it; else the earliest time to ask again, or HTTP_CAP_WAIT_DONE when
 * only a completion can free room. *why (may be NULL) receives what holds
 * it back (HTTP_CAP_GO when sent). */
uint64_t http__cap_acquire(http_cap *c, uint64_t now, double tokens, unsigned *k,
			   http_cap_reason *why);
/* Sends one request whatever holds the others back (a request's last
 * attempt, at its deadline): counted like an acquired one. */
void http__cap_force(http_cap *c, uint64_t now, double tokens, unsigned *k);
/* An attempt ended: sent at `sent` with `k` in flight (acquire's), its
 * answer came at `now`. h: what the answer said (may be NULL); tokens:
 * used per the answer's `usage` (0: unknown). Every successful acquire
 * is matched by exactly one done. */
void http__cap_done(http_cap *c, uint64_t sent, unsigned k, uint64_t now,
		    http_cap_outcome o, const http_hints *h, double tokens);
void http__cap_save(const http_cap *c, http_cap_state *out);
/* Restores a saved state (clamped to cfg); requests in flight: none. */
void http__cap_restore(http_cap *c, const http_cap_state *s, uint64_t now);

/* --------------------------------------------------------- AIMD throttle */

/*
 * The throttle of the AIMD mode (HTTP_MODE_AIMD; docs/adr/0010): additive
 * increase of the request rate, multiplicative decrease. An upstream's
 * gate (gate.c, below) owns one.
 *
 * The throttle is a delay between two dispatches. It starts at the
 * minimum. A capacity error (429, 503, 529, a connect timeout) multiplies
 * it by `backoff_multiplier`, never below a 100 ms floor, capped at
 * `max_ms`; each success subtracts `recovery_step_ms`, never below
 * `min_ms`. Pure arithmetic, no clock, no lock.
 */
#define HTTP_AIMD_FLOOR_MS 100.0 /* the first backoff after a quiet period */

typedef struct http_aimd {
	double delay_ms;      /* current delay between dispatches */
	double min_ms, max_ms;
	double multiplier;    /* > 1 */
	double step_ms;       /* recovery per success, >= 0 */
	unsigned long long capacity_errors, successes;
} http_aimd;

/* Sets the bounds; the delay starts at min_ms. Callers validate
 * 0 <= min_ms <= max_ms, multiplier >= 1, step_ms >= 0. */
void http__aimd_init(http_aimd *t, double min_ms, double max_ms,
		     double multiplier, double step_ms);
/* A capacity error: delay = min(max(delay * multiplier, 100), max_ms),
 * and never below min_ms. Returns the new delay. */
double http__aimd_on_capacity(http_aimd *t);
/* A success: delay = max(delay - step_ms, min_ms). */
double http__aimd_on_success(http_aimd *t);

/* ------------------------------------------------------------------ gate */

/*
 * An upstream's capacity control in the mode it was opened with (gate.c):
 * the executor asks it before each dispatch and tells it how each attempt
 * ended. ADAPTIVE: the controller above. AIMD: one delay between two
 * dispatches (http_aimd), backed off at most once per round trip and at
 * most once a second without a success in between, and pool_size in
 * flight; a refused request alone waits max(Retry-After in whole
 * seconds, the delay). The caller serialises calls.
 */
typedef struct http_gate {
	http_mode mode;
	unsigned ceiling;             /* requests in flight at most */
	unsigned inflight;
	bool sent_any;                /* a restore applies only before */
	const char *held;             /* why the last acquire waited, or NULL */
	/* ADAPTIVE */
	http_cap cap;
	http_hint_src hint_src;       /* of the last hinted pause */
	/* AIMD */
	http_aimd aimd;
	uint64_t next_dispatch, last_backoff;
	bool success_since_backoff;
} http_gate;

/* cfg: the first client's; ceiling its pool_size. */
void http__gate_init(http_gate *g, const http_cfg *cfg, uint64_t now);
/* Another client opened: the ceiling is the largest pool_size, a budget
 * the smallest configured. */
void http__gate_join(http_gate *g, const http_cfg *cfg);
/* May one request (estimated `tokens`, 0: unknown) go now? 0: yes, *k
 * receives the number in flight including it. Else the earliest time to
 * ask again, or HTTP_CAP_WAIT_DONE when only a completion frees room; *why
 * (static) says what holds it back: a limit ("pace", "window", ...) or the
 * hint that paused the upstream ("retry-after-ms", ...). */
uint64_t http__gate_acquire(http_gate *g, uint64_t now, double tokens, unsigned *k,
			    const char **why);
/* A request's last attempt goes now, past every limit but the ceiling
 * of requests in flight: false if that is reached. */
bool http__gate_force(http_gate *g, uint64_t now, double tokens, unsigned *k);
/* An attempt sent at `sent` with k in flight ended at now. Returns the
 * earliest time a refused request may be tried again (AIMD: its own
 * wait; ADAPTIVE: now, the controller paces every request). */
uint64_t http__gate_done(http_gate *g, uint64_t sent, unsigned k, uint64_t now,
			 http_cap_outcome o, const http_hints *h, double tokens);
/* Statistics fields of the gate (mode, delay_ms, rate, window, held_by). */
void http__gate_stats(const http_gate *g, http_stats *st);
json_t *http__gate_save(const http_gate *g);
void http__gate_restore(http_gate *g, const json_t *saved, uint64_t now);

/* ------------------------------------------------------------------ tail */

/*
 * An upstream's recent answer times (tail.c; docs/adr/0029): the last
 * HTTP_TAIL_N round trips of attempts the server answered (refusals and
 * attempts cut short left out), and their median and 99th percentile,
 * recomputed every HTTP_TAIL_EVERY answers. From them: the tail deadline
 * of an attempt (a request far past what the upstream's answers take is
 * stuck, not slow) and when a hedged copy goes. Pure logic; the caller
 * serialises calls.
 */
#define HTTP_TAIL_N 512       /* answers remembered */
#define HTTP_TAIL_EVERY 16    /* answers between two recomputations */
#define HTTP_TAIL_MIN 64      /* answers before any deadline or hedge */
#define HTTP_TAIL_FLOOR_S 1.0 /* no tail deadline is shorter */
#define HTTP_HEDGE_IDLE_FACTOR 1.5 /* hedge: idle copies after 1.5 x p99, */
#define HTTP_HEDGE_IDLE_FLOOR_S 0.5 /* and never sooner: a fast upstream's
				     * tight p99 is within a loaded
				     * machine's scheduling jitter */

typedef struct http_tail {
	float rtt[HTTP_TAIL_N];   /* seconds, a ring */
	unsigned n, head;         /* held, next written */
	unsigned since;           /* added since the last recomputation */
	double p50, p99;          /* seconds; 0 until HTTP_TAIL_MIN answers */
} http_tail;

void http__tail_add(http_tail *t, double seconds);
/* The tail deadline of an attempt: factor x p99, at least
 * HTTP_TAIL_FLOOR_S; 0 (none: the configured timeout holds) while too
 * few answers are known, when factor <= 0, or when it would not come
 * before timeout_s. */
double http__tail_deadline(const http_tail *t, double factor, double timeout_s);
/* When a hedged copy of an attempt goes, in seconds after it was sent:
 * the p99; 0 (no hedge) while too few answers are known. */
double http__tail_hedge_after(const http_tail *t);

#endif /* ELSPETH_HTTP_INTERNAL_H */

/*
 * core.h — the public contract of elspeth's core module: errors, growable
 * buffers, the settings document (YAML with positions and ${VAR} expansion),
 * the typed settings, canonical JSON (RFC 8785) and hashing.
 *
 * Rows are jansson objects (json_t); jansson keeps key insertion order, so a
 * row is an ordered JSON object. Reference-counting follows jansson: a
 * function documented as returning "a new reference" hands the caller one
 * reference to release with json_decref().
 *
 * Thread rules: everything here is reentrant; a core_doc and the settings
 * that point into it are immutable after loading and may be read by many
 * threads.
 */
#ifndef ELSPETH_CORE_H
#define ELSPETH_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define ELSPETH_VERSION "0.1.0"

#if defined(__GNUC__)
#define CORE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CORE_PRINTF(f, a)
#endif

/* ---------------------------------------------------------------- errors */

/*
 * Codes. 0 is success; every other value means one thing wherever it
 * travels, because the ranges never overlap:
 *   > 0               errno values (the OS, libc, pthreads)
 *   CORE_LMDB_FIRST   LMDB's codes, from MDB_KEYEXIST (-30799) up; only
 *   ..CORE_LMDB_LAST  the recorder returns them, and it gives
 *                     core_strerror their messages (core_strerror_lmdb)
 *   CORE_ERR_FIRST    ours, the enum below, from -30900 up (below
 *   ..CORE_ERR_LAST   LMDB's)
 * Ours include two results that are not always errors: CORE_ENOTFOUND (a
 * lookup found nothing; the recorder's REC_NOTFOUND) and CORE_BREAK (a
 * callback ended its iteration early; the recorder's REC_SCAN_STOP).
 */
typedef enum core_code {
	CORE_OK = 0,
	CORE_ERR_FIRST = -30900,
	CORE_ENOMEM = CORE_ERR_FIRST, /* out of memory */
	CORE_EIO,                     /* file or OS error */
	CORE_ECONFIG,                 /* the settings are invalid */
	CORE_EUNSUPPORTED,            /* a setting this build does not
				       * support (a sink's encoding) */
	CORE_EDATA,                   /* a row or field is invalid */
	CORE_EEXPR,                   /* expression syntax or runtime error */
	CORE_EINTERNAL,               /* a bug: an invariant did not hold */
	CORE_ESTOPPED,                /* a row cut short by SIGINT/SIGTERM:
				       * left for `elspeth resume` */
	CORE_ENOTFOUND,               /* no such key, record or entry */
	CORE_BREAK,                   /* a callback stopped its iteration
				       * early (like C's break): not an error */
	CORE_ERR_LAST                 /* stays below CORE_LMDB_FIRST */
} core_code;

#define CORE_LMDB_FIRST (-30799) /* MDB_KEYEXIST */
#define CORE_LMDB_LAST (-30700)  /* room for codes newer LMDBs add */

/* An error with a message a user can act on. `retryable` marks row errors
 * that a retry might cure (used by the retry policy). */
typedef struct core_err {
	int code;
	bool retryable;
	char msg[1024];
} core_err;

/* Formats msg into err (err may be NULL) and returns code. */
int core_err_set(core_err *err, int code, const char *fmt, ...) CORE_PRINTF(3, 4);
int core_err_vset(core_err *err, int code, const char *fmt, va_list ap)
	CORE_PRINTF(3, 0);
/* Prepends "prefix: " to an error already set. Returns err->code. */
int core_err_prefix(core_err *err, const char *fmt, ...) CORE_PRINTF(2, 3);
/* The message of any code above: ours, LMDB's and errno values (and
 * "unknown error" for a value in no range). Never NULL, never empty.
 * Static strings, except for errno values, which are strerror()'s. */
const char *core_strerror(int code);
/* Gives core_strerror the messages of LMDB's codes (CORE_LMDB_FIRST ..
 * CORE_LMDB_LAST), which core does not link: the recorder calls it when
 * it opens an environment, before it can return such a code. fn must be
 * thread-safe and never return NULL or "". Any thread; the last call
 * wins. Until it is called, those codes read "audit trail storage
 * (LMDB) error". */
void core_strerror_lmdb(const char *(*fn)(int code));

/* --------------------------------------------------------------- buffers */

/* A growable byte buffer; data is always NUL-terminated when non-NULL.
 * Zero-initialise (or core_buf_init) before use; core_buf_release frees. */
typedef struct core_buf {
	char *data;
	size_t len;
	size_t cap;
} core_buf;

void core_buf_init(core_buf *b);
void core_buf_release(core_buf *b);
void core_buf_reset(core_buf *b); /* len = 0, keeps memory */
int core_buf_reserve(core_buf *b, size_t extra); /* 0 or CORE_ENOMEM */
int core_buf_append(core_buf *b, const void *p, size_t n);
int core_buf_putc(core_buf *b, char c);
int core_buf_puts(core_buf *b, const char *s);
int core_buf_printf(core_buf *b, const char *fmt, ...) CORE_PRINTF(2, 3);
int core_buf_vprintf(core_buf *b, const char *fmt, va_list ap) CORE_PRINTF(2, 0);
/* Hands the data to the caller (free()); the buffer is left empty. */
char *core_buf_steal(core_buf *b);

/* ----------------------------------------------------------------- UTF-8
 *
 * Well-formed UTF-8 as RFC 3629 (and jansson) define it: no overlong forms,
 * no surrogates (U+D800..U+DFFF), nothing above U+10FFFF. Lengths and
 * offsets are in bytes; s need not be NUL-terminated and may hold NUL
 * bytes (U+0000 is valid).
 */

/* Decodes the sequence at s (n bytes available): returns its length (1 to
 * 4) and stores the code point in *cp (cp may be NULL), or returns 0 when
 * s does not start a well-formed sequence (a continuation or invalid lead
 * byte, a bad or missing continuation, an overlong form, a surrogate, a
 * code point above U+10FFFF) or n is 0; *cp is then left alone. */
size_t core_utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Writes the UTF-8 form of cp to out; returns its length (1 to 4), or 0
 * (nothing written) for a surrogate or a value above U+10FFFF. */
size_t core_utf8_encode(uint32_t cp, char out[4]);
/* The length of the longest well-formed prefix of s: the offset of the
 * first byte that starts no valid sequence, or n when s is valid. */
size_t core_utf8_check(const char *s, size_t n);
/* Whether all of s is well-formed (core_utf8_check(s, n) == n). */
bool core_utf8_valid(const char *s, size_t n);
/* Appends s to b with each byte that starts no valid sequence replaced by
 * U+FFFD (so a truncated three-byte sequence gives two U+FFFD). 0 or
 * CORE_ENOMEM (b then holds part of s). */
int core_utf8_append_lossy(core_buf *b, const char *s, size_t n);
/* The number of code points in s, counted as the bytes that are not
 * continuation bytes (10xxxxxx): exact for valid UTF-8, and never more
 * than n for any bytes. */
size_t core_utf8_count(const char *s, size_t n);
/* The byte length of the first `count` code points of s (counted as
 * core_utf8_count does), or n when s holds no more than count. */
size_t core_utf8_prefix(const char *s, size_t n, size_t count);
/* Where to cut s to at most n bytes without splitting a sequence: n moved
 * back over continuation bytes to the start of the character at s[n].
 * s[n] must be readable (s longer than n, or its NUL). */
size_t core_utf8_cut(const char *s, size_t n);

/* ------------------------------------------------- the settings document */

typedef enum core_node_kind {
	CORE_NODE_SCALAR,
	CORE_NODE_MAP,
	CORE_NODE_SEQ
} core_node_kind;

/* A node of a parsed YAML document. All fields are owned by the document
 * (core_doc) and valid until core_doc_free(). */
typedef struct core_node core_node;
struct core_node {
	core_node_kind kind;
	const char *file;   /* the file name given to the loader */
	int line, col;      /* 1-based position of the node */
	const char *path;   /* key path: "transforms[0].options.mapping" */
	const char *value;  /* SCALAR: text after ${VAR} expansion */
	bool plain;         /* SCALAR: unquoted, may mean null/bool/number */
	size_t len;         /* MAP: number of pairs; SEQ: number of items */
	core_node **keys;   /* MAP: key scalars (positions for messages) */
	core_node **items;  /* MAP: values, SEQ: items */
};

typedef struct core_doc core_doc;

/* Parses a YAML file/text into a document, expanding ${VAR} and
 * ${VAR:-default} in every scalar (an unset variable without default is a
 * CORE_ECONFIG naming it, file, line and column). Anchors and aliases are
 * rejected. Duplicate map keys are errors. */
int core_doc_load(const char *path, core_doc **out, core_err *err);
int core_doc_parse(const char *name, const char *text, size_t len,
		   core_doc **out, core_err *err);
/* core_doc_parse without ${VAR} expansion: text whose values were
 * expanded already (options a plugin builds from its own). */
int core_doc_parse_literal(const char *name, const char *text, size_t len,
			   core_doc **out, core_err *err);
const core_node *core_doc_root(const core_doc *doc); /* NULL for empty */
void core_doc_free(core_doc *doc); /* NULL allowed */

/* Sets a CORE_ECONFIG/other error prefixed "file:line:col: path: ". */
int core_err_at(core_err *err, int code, const core_node *n, const char *fmt, ...)
	CORE_PRINTF(4, 5);

/* The value of key in a MAP node, or NULL (absent, or n not a map). */
const core_node *core_map_get(const core_node *map, const char *key);
/* Fails on the first key of map not in the NULL-terminated allowed list,
 * naming it and suggesting a near match ("did you mean ...?"). Fails too
 * when map is not a MAP. */
int core_map_check_keys(const core_node *map, const char *const *allowed,
			core_err *err);

/* Type checks on one node; errors name position and key path and say what
 * was expected. A plain scalar "null", "~" or "" is null. */
bool core_node_is_null(const core_node *n);
int core_node_str(const core_node *n, const char **out, core_err *err);
int core_node_bool(const core_node *n, bool *out, core_err *err);
int core_node_int(const core_node *n, long long min, long long max,
		  long long *out, core_err *err);
int core_node_double(const core_node *n, double min, double max, double *out,
		     core_err *err);
/* One of the NULL-terminated choices; *index receives its position. */
int core_node_enum(const core_node *n, const char *const *choices, int *index,
		   core_err *err);
/* A SEQ of strings. *out is an array of len pointers into the document,
 * malloc'd (caller frees the array only). */
int core_node_str_list(const core_node *n, const char ***out, size_t *len,
		       core_err *err);
/* The node as JSON (plain scalars typed by the YAML 1.2 core schema).
 * Returns a new reference, or NULL on allocation failure. */
json_t *core_node_to_json(const core_node *n);

/* The error for a required key missing from map: "missing required key
 * 'shown'" with " (what)" when what is not NULL, at map's position; or,
 * when map holds a key spelt near `key` (a typo such as
 * on_validaton_failure), at that key's position, naming it. CORE_ECONFIG. */
int core_err_missing(core_err *err, const core_node *map, const char *key,
		     const char *shown, const char *what);

/* Optional-key helpers on a MAP: when key is absent (or null for _str)
 * *out is left untouched and 0 is returned; when `required` and absent, an
 * error naming the map's path and key. */
int core_opt_str(const core_node *map, const char *key, bool required,
		 const char **out, core_err *err);
int core_opt_bool(const core_node *map, const char *key, bool *out,
		  core_err *err);
int core_opt_int(const core_node *map, const char *key, long long min,
		 long long max, long long *out, core_err *err);
int core_opt_double(const core_node *map, const char *key, double min,
		    double max, double *out, core_err *err);

/* --------------------------------------------- canonical JSON and hashes */

#define CORE_CANONICAL_VERSION "sha256-rfc8785-v1"
#define CORE_SHA256_LEN 32
#define CORE_SHA256_HEX_LEN 64

/* Appends the RFC 8785 canonical form of v to b: object keys sorted by
 * UTF-16 code units, numbers in ECMAScript form, minimal string escapes.
 * NaN/Infinity and integers outside +-2^53 are CORE_EDATA naming the field
 * path ("$.a.b[2]"). On error b keeps its previous length. */
int core_canon_append(core_buf *b, const json_t *v, core_err *err);
/* Canonical JSON in a new malloc'd NUL-terminated string. */
int core_canon(const json_t *v, char **out, size_t *len, core_err *err);
/* ECMAScript Number.prototype.toString of d into buf (>= 32 bytes);
 * returns length, or -1 for NaN/Infinity. */
int core_format_double(double d, char *buf, size_t cap);

void core_sha256(const void *data, size_t len, uint8_t out[CORE_SHA256_LEN]);
/* Lower-case hex; out has room for 2*len+1 bytes. */
void core_hex(const uint8_t *bytes, size_t len, char *out);
/* SHA-256 of a file's first `max` bytes (UINT64_MAX: all); *size gets the
 * bytes hashed. */
int core_sha256_file(const char *path, uint64_t max, uint64_t *size,
		     char out[CORE_SHA256_HEX_LEN + 1], core_err *err);
/* SHA-256 of bytes [from, from + len) of a file; *got receives how many
 * could be read (fewer at the end of the file). */
int core_sha256_file_range(const char *path, uint64_t from, uint64_t len,
			   uint64_t *got, char out[CORE_SHA256_HEX_LEN + 1],
			   core_err *err);

/* mkdir -p: dir and its missing parents (0777, umask applies);
 * CORE_EIO naming the directory that could not be made, or dir when it
 * is not a directory. */
int core_mkdir_p(const char *dir, core_err *err);
/* The directories above the file `path` (not path itself). */
int core_mkdir_parents(const char *path, core_err *err);
/* fsync of the directory holding path, so that a rename or a new file in
 * it survives a crash; best effort (nothing to report on failure). */
void core_fsync_dir_of(const char *path);

/* A running SHA-256 (e.g. of everything a sink wrote): _hex gives the
 * digest of the bytes so far without ending the stream. */
typedef struct core_sha256_stream core_sha256_stream;
core_sha256_stream *core_sha256_stream_new(void); /* NULL: out of memory */
void core_sha256_stream_add(core_sha256_stream *s, const void *p, size_t n);
void core_sha256_stream_hex(const core_sha256_stream *s,
			    char out[CORE_SHA256_HEX_LEN + 1]);
void core_sha256_stream_free(core_sha256_stream *s); /* NULL allowed */
/* The key runs and signed exports are signed with: $ELSPETH_SIGNING_KEY,
 * or NULL when it is unset or empty. */
const char *core_signing_key(void);
/* HMAC-SHA256 of data keyed by key's bytes, as 64 hex chars + NUL.
 * 0 or CORE_EINTERNAL. */
int core_hmac_sha256_hex(const char *key, const void *data, size_t len,
			 char out[CORE_SHA256_HEX_LEN + 1]);
/* SHA-256 over the canonical JSON of v, as 64 hex chars + NUL. */
int core_hash_json(const json_t *v, char out[CORE_SHA256_HEX_LEN + 1],
		   core_err *err);

/* ---------------------------------------------------------------- secrets
 *
 * Option values whose names are secret (api_key, password, token, secret,
 * authorization, connection_string, credential(s), and names ending _key,
 * _secret, _token, _password — case-insensitive) are never stored: they
 * become "hmac-sha256:<hex>" keyed by $ELSPETH_FINGERPRINT_KEY, or
 * CORE_REDACTED when it is unset.
 */
#define CORE_REDACTED "redacted (set ELSPETH_FINGERPRINT_KEY to record a fingerprint)"

bool core_is_secret_name(const char *name);
/* The fingerprint (or CORE_REDACTED) of value into out. */
int core_fingerprint(const char *value, char *out, size_t cap);
/* Replaces, in place, every secret-named member of v (recursively), and
 * takes the password out of every string that is a url with one
 * ("postgresql://user:PASSWORD@host/db"): a member KEY gets a member
 * KEY_password_fingerprint beside it, an array item the fingerprint in
 * the password's place. */
int core_redact_secrets(json_t *v);
/* url without its password, for messages and records: the user info's
 * (scheme://user:PASSWORD@host) and a password= query parameter (libpq
 * takes one); malloc'd, NULL when out of memory. */
char *core_url_sanitize(const char *url);

/* ------------------------------------------------------------- settings
 *
 * The typed view of an ELSPETH 0.4 settings file (docs/architecture.md §6). All
 * strings and nodes point into the document and live as long as the
 * settings. Unknown keys are CORE_ECONFIG with a near-match suggestion.
 */
#define CORE_DISCARD "discard"

typedef struct core_source_cfg {
	const core_node *node;         /* the `source` map, or a `sources` entry */
	/* Its key in ELSPETH 0.7's `sources` map (ADR 0027, 0044), or NULL
	 * for `source`. */
	const char *name;
	const char *plugin;
	const char *on_success;        /* connection or sink name */
	const char *on_validation_failure; /* sink name or "discard" */
	const core_node *options;      /* MAP (an empty one when absent) */
} core_source_cfg;

/* One entry of ELSPETH 0.7's `queues` map (ADR 0044): a pass-through
 * node whose name is a connection that several producers may feed. */
typedef struct core_queue_cfg {
	const core_node *node;         /* the entry's value (a map) */
	const char *name;
	const char *description;       /* or NULL */
} core_queue_cfg;

/* Which ELSPETH settings format a file is in, decided by its keys
 * (ADR 0044): `source:` is 0.4.1's, `sources:` 0.7.1's. */
typedef enum core_format { CORE_FORMAT_V04 = 0, CORE_FORMAT_V07 } core_format;

typedef struct core_transform_cfg {
	const core_node *node;
	const char *name;
	const char *plugin;
	const char *input;             /* connection name */
	const char *on_success;        /* connection or sink name */
	const char *on_error;          /* sink name, "discard", or NULL */
	const core_node *options;
} core_transform_cfg;

typedef struct core_route_cfg {
	const core_node *node;         /* the value node (for messages) */
	const char *key;               /* "true", "false", or a string form */
	const char *dest;              /* connection, sink, or "fork" */
} core_route_cfg;

typedef struct core_gate_cfg {
	const core_node *node;
	const char *name;
	const char *input;
	const char *condition;
	const core_node *condition_node;
	size_t nroutes;
	core_route_cfg *routes;
	size_t nfork_to;
	const char **fork_to;
} core_gate_cfg;

typedef enum core_policy {
	CORE_POLICY_REQUIRE_ALL, CORE_POLICY_QUORUM, CORE_POLICY_BEST_EFFORT,
	CORE_POLICY_FIRST
} core_policy;

typedef enum core_merge {
	CORE_MERGE_UNION, CORE_MERGE_NESTED, CORE_MERGE_SELECT
} core_merge;

/* A union's field given by two branches (ELSPETH 0.7.1): the later
 * branch's value, the earlier's, or the join fails. */
typedef enum core_collision {
	CORE_COLLISION_LAST_WINS, CORE_COLLISION_FIRST_WINS, CORE_COLLISION_FAIL
} core_collision;

typedef struct core_coalesce_cfg {
	const core_node *node;
	const char *name;
	size_t nbranches;
	const char **branches;         /* branch names, declared order */
	const char **inputs;           /* the connection of each branch */
	core_policy policy;            /* default require_all */
	core_merge merge;              /* default union */
	core_collision collision;      /* union_collision_policy (0.7.1);
					* default last_wins */
	double timeout_seconds;        /* best_effort; 0 = none */
	long long quorum_count;        /* quorum */
	const char *select_branch;     /* select */
	const char *on_success;
} core_coalesce_cfg;

typedef struct core_aggregation_cfg {
	const core_node *node;
	const char *name;
	const char *plugin;
	const char *input;
	const char *on_success;
	const char *on_error;          /* sink, "discard" or NULL */
	long long trigger_count;       /* 0 = none */
	double trigger_timeout;        /* seconds; 0 = none */
	const char *trigger_condition; /* over batch_count, batch_age_seconds */
	const core_node *condition_node;
	bool passthrough;              /* output_mode */
	const core_node *options;
} core_aggregation_cfg;

typedef struct core_sink_cfg {
	const core_node *node;
	const char *name;
	const char *plugin;
	const char *on_write_failure;  /* sink name, "discard", or NULL */
	const core_node *options;
} core_sink_cfg;

typedef struct core_retry_cfg {
	long long max_attempts;        /* >= 1; 1 = no retry */
	double initial_delay_seconds;
	double max_delay_seconds;
	double exponential_base;
} core_retry_cfg;

/* rate_limit (core/settings_rate.c): budgets per service, per minute. */
typedef struct core_rate_service {
	const char *name;              /* openrouter, azure_openai, openai, ... */
	double requests_per_minute;    /* 0: no budget */
	double tokens_per_minute;      /* 0: no budget */
} core_rate_service;

typedef struct core_rate_limit_cfg {
	bool enabled;                  /* false: no section, or enabled: false */
	double default_requests_per_minute; /* services without an entry */
	double default_tokens_per_minute;
	size_t nservices;
	core_rate_service *services;
} core_rate_limit_cfg;

/* The budget of `service`: its entry, else the defaults (filled into
 * *dflt, whose name points at service); NULL when rate limits are off. */
const core_rate_service *core_rate_limit_find(const core_rate_limit_cfg *r,
					      const char *service,
					      core_rate_service *dflt);

/* checkpoint.frequency */
enum { CORE_CKPT_EVERY_ROW, CORE_CKPT_EVERY_N, CORE_CKPT_AGGREGATION_ONLY };

/* One entry of `depends_on` (ADR 0027): a pipeline ELSPETH runs before
 * this one. Strings point into the settings document; path is owned. */
typedef struct core_depends_cfg {
	const core_node *node;
	const char *name;
	const char *settings;          /* as written */
	char *path;                    /* relative to the settings file's directory */
} core_depends_cfg;
/* landscape.export (ELSPETH's LandscapeExportSettings; ADR 0028): after
 * a run, its audit records go to `sink`, which is not part of the graph. */
/* ELSPETH 0.7.1's landscape.export (its LandscapeExportSettings,
 * "audit-export-v2"; ADR 0053): records framed into hashed chunks, a
 * sealed manifest, HMAC or no signature, a content store beside it. */
typedef struct core_audit_export_v2 {
	bool on;                       /* the file is in 0.7.1's format */
	bool hmac;                     /* signing_mode: hmac_sha256; else unsigned */
	const char *signer_key_id;     /* "UNSIGNED" when unsigned */
	const char *signing_secret_ref; /* the environment variable holding the key */
	bool single_export;            /* signer_rotation_policy: single_export */
	const char *exporter_version;  /* landscape-exporter-v1 */
	const char *serialization_version; /* audit-export-v2 */
	const char *chunking_version;  /* record-framing-v1 */
	bool include_raw_error_rows;
	long long total_records, total_bytes, chunk_limit;
	long long chunk_records, chunk_bytes; /* per_chunk_*_limit */
	const char *spool_root;        /* .elspeth/audit-export-spool... */
	const char *store_id, *store_namespace, *store_root, *store_policy;
	long long store_retention_days;
	bool store_replicated;         /* durability: replicated; else fsync */
} core_audit_export_v2;

typedef struct core_audit_export_cfg {
	bool enabled;
	const char *sink;              /* the sink's name (required when enabled) */
	bool json;                     /* format: json; false: csv (ELSPETH's default) */
	bool sign;                     /* HMAC-SHA256 keyed by $ELSPETH_SIGNING_KEY */
	core_sink_cfg target;          /* enabled: the sink, taken out of `sinks` */
	core_audit_export_v2 v2;
} core_audit_export_cfg;

/* landscape.dump_to_jsonl* (ELSPETH's change journal; ADR 0028). */
typedef struct core_journal_cfg {
	bool enabled;
	const char *path;              /* dump_to_jsonl_path, else derived from the url */
	char derived[4096];            /* the derived path when path is NULL */
	bool fail_on_error;
	bool include_payloads;         /* inline calls' request/response bodies */
	const char *payload_base_path; /* accepted; bodies are read from the trail */
} core_journal_cfg;

/* payload_store (ELSPETH's PayloadStoreSettings; ADR 0028). */
typedef struct core_payload_store_cfg {
	bool set;                      /* the section is in the file */
	const char *base_path;         /* default .elspeth/payloads */
	long long retention_days;      /* default 90, > 0 */
} core_payload_store_cfg;

/* telemetry (ELSPETH's TelemetrySettings; core/settings_telemetry.c).
 * Strings and nodes point into the settings document. */
enum { CORE_TEL_LIFECYCLE, CORE_TEL_ROWS, CORE_TEL_FULL };
typedef struct core_exporter_cfg {
	const core_node *node;         /* the list entry (positions) */
	const char *name;
	const core_node *options;      /* a MAP, or NULL: none given */
} core_exporter_cfg;
typedef struct core_telemetry_cfg {
	const core_node *node;         /* the section, NULL when absent */
	bool enabled;                  /* default false */
	int granularity;               /* CORE_TEL_*; default lifecycle */
	bool backpressure_drop;        /* drop; false: block (the default) */
	bool fail_on_total;            /* default true */
	long long max_consecutive_failures; /* default 10 */
	size_t nexporters;
	core_exporter_cfg *exporters;
} core_telemetry_cfg;

typedef struct core_settings {
	core_doc *doc;                 /* owned */
	const char *path;              /* the file (or name) given, copied:
					* valid as long as the settings */
	char *path_copy;               /* owned: what path points to */
	core_format format;
	/* The sources in file order (one for `source:`); `source` is a copy
	 * of the first, for what only ever sees one. */
	size_t nsources;
	core_source_cfg *sources;
	core_source_cfg source;
	size_t nqueues;                /* 0.7's `queues` */
	core_queue_cfg *queues;
	size_t ntransforms;
	core_transform_cfg *transforms;
	size_t ngates;
	core_gate_cfg *gates;
	size_t ncoalesce;
	core_coalesce_cfg *coalesce;
	size_t naggregations;
	core_aggregation_cfg *aggregations;
	size_t nsinks;
	core_sink_cfg *sinks;
	core_retry_cfg retry;
	core_rate_limit_cfg rate_limit;
	const char *landscape_url;     /* as written; default
					* lmdb://./state/audit.lmdb */
	/* What landscape_url names, parsed once at load
	 * (core_landscape_paths): the LMDB environment's directory, and the
	 * SQL trail's file of a sqlite:/// url ("" otherwise). Read these;
	 * the url is not parsed again. */
	char landscape_lmdb[4096];
	char landscape_sql[4096];
	bool audit;                    /* landscape.enabled (default true) */
	char *settings_json;           /* canonical, secrets fingerprinted */
	bool pipelining;
	long long max_workers;         /* concurrency.max_workers (ELSPETH's):
					* each LLM transform's requests in
					* flight at most; 0: not given */
	long long max_rows_in_flight;
	long long max_completed_waiting;
	bool max_completed_waiting_set; /* given in the file: a count bound
					 * (else the byte budget below) */
	long long max_waiting_mib;     /* completed, unreleased rows: MiB
					 * they may hold (default 64) */
	bool checkpoint_enabled;       /* default: on when audit is on */
	int checkpoint_frequency;      /* CORE_CKPT_* */
	long long checkpoint_interval; /* rows between checkpoints (every_n) */
	bool checkpoint_aggregation_boundaries; /* also one after each batch
					 * flush (default true, ELSPETH's) */
	char config_hash[CORE_SHA256_HEX_LEN + 1]; /* hash of settings_json */
	size_t ndepends_on;            /* depends_on: run first by `run -x` */
	core_depends_cfg *depends_on;
	core_audit_export_cfg audit_export; /* core/settings_landscape.c */
	core_journal_cfg journal;
	core_payload_store_cfg payload_store;
	core_telemetry_cfg telemetry;  /* core/settings_telemetry.c */
	const char *metrics_listen;    /* metrics.listen (ours): the Prometheus
					* endpoint's address, or NULL */
} core_settings;

/* What a landscape.url names: lmdb (cap bytes) receives the LMDB
 * environment's directory; sqlite (scap bytes; NULL: not wanted) the SQL
 * trail: the file of a sqlite:/// url, a postgresql:// url as written
 * (password and all: show it through core_url_sanitize), "" for lmdb://.
 * With postgresql:// the LMDB environment is CORE_PG_LMDB. An
 * unsupported url is CORE_ECONFIG saying what is supported. */
#define CORE_PG_LMDB "./state/audit.lmdb"
/* Whether a SQL trail (core_landscape_paths' sqlite) is PostgreSQL's. */
bool core_sql_is_pg(const char *sql);

/* ------------------------------------------------------------- PostgreSQL
 * (pg.c) A connection to url (postgresql[+driver]://…; libpq takes
 * sslmode, application_name, a password from the url, PGPASSWORD or
 * ~/.pgpass): connect_timeout 10 and application_name elspeth unless the
 * url says otherwise, NOTICEs silenced, UTF-8; readonly: every
 * transaction read-only. *shown: url without its password (malloc'd,
 * also on failure; NULL when out of memory), the only spelling of it in
 * messages. CORE_EIO "cannot connect to SHOWN: why". */
struct pg_conn;
int core_pg_connect(const char *url, bool readonly, struct pg_conn **out, char **shown,
		    core_err *err);
/* libpq's message msg into out on one line, without its trailing newline. */
void core_pg_message(char *out, size_t cap, const char *msg);
int core_landscape_paths(const char *url, char *lmdb, size_t cap,
			 char *sqlite, size_t scap, core_err *err);

/* A listen address (core/net.c): "HOST:PORT", "[IPv6]:PORT" or "PORT" on
 * 127.0.0.1; HOST numeric or localhost (names are not resolved).
 * CORE_ECONFIG naming `what` and spec. */
struct sockaddr_storage;
int core_listen_addr(const char *what, const char *spec, struct sockaddr_storage *ss,
		     bool *v6, core_err *err);
/* Whether ss is a loopback address (127/8, ::1). */
bool core_addr_loopback(const struct sockaddr_storage *ss);

/* Loads and type-checks a settings file (or text, for tests). */
int core_settings_load(const char *path, core_settings **out, core_err *err);
int core_settings_parse(const char *name, const char *text,
			core_settings **out, core_err *err);
void core_settings_free(core_settings *s); /* NULL allowed */

/* ----------------------------------------------------------- JSON text */

/* Appends v as JSON text: key order and UTF-8 kept, reals in ECMAScript
 * shortest form (with ".0" when integral). indent < 0: compact; else
 * pretty-printed like Python's json.dumps(indent=n), depth levels already
 * open. */
int core_json_append(core_buf *b, const json_t *v, int indent, int depth);
/* Appends v as Python's json.dumps(v, indent=n) writes it: ensure_ascii
 * (\uXXXX outside ' '..'~'), ", " / ": " when compact (indent < 0), else
 * "," and a line break indented n per level, depth levels already open;
 * reals as repr(). ELSPETH's json sink and database columns. */
int core_json_append_py(core_buf *b, const json_t *v, int indent, int depth);
/* The string s[0..n) (UTF-8) as core_json_append_py writes a string. */
int core_json_append_py_str(core_buf *b, const char *s, size_t n);
/* Appends Python's str(v): strings as they are, True / False / None, reals
 * as repr(), a dict or list as its repr() ({'a': [1, 'x']}). What
 * csv.DictWriter writes for a value. */
int core_py_str(core_buf *b, const json_t *v);
/* Python's type(v).__name__: "dict", "list", "str", "int", "float",
 * "bool" or "NoneType". */
const char *core_py_type(const json_t *v);
/* What v holds on the heap, estimated (jansson's structs, keys, string
 * bytes and allocator overhead): the engine's waiting budget counts rows
 * with it. 0 for NULL. Linear in v's size; no allocation. */
size_t core_json_heap_bytes(const json_t *v);
/* "an object", "an array", "a string", "an integer", "a real number",
 * "a boolean" or "null": what v is, for error messages. */
const char *core_json_kind(const json_t *v);

/* ------------------------------------------------- floats as Python */

/* Python's repr() (and str()) of d into buf (>= 32 bytes): the shortest
 * digits that read back as d (the digits of core_format_double); with d
 * written as x.yyy * 10^e, in fixed notation with at least one digit after
 * the point when -4 <= e < 16 (100.0, 0.0001, 1.5), else in exponent form
 * with a sign and at least two exponent digits (1e+16, 1e-05,
 * 1.2345678901234568e+17); "nan", "inf", "-inf"; -0.0 keeps its sign.
 * Returns the length, or -1 when cap is too small (never with 32 bytes).
 * The gate expressions and the prompt templates print floats with it. */
int core_format_double_py(double d, char *buf, size_t cap);

/* ------------------------------------------------------------- clocks */

/* Monotonic and wall clock in nanoseconds. */
uint64_t core_now_mono_ns(void);

/* --------------------------------------------------------------- isolate
 *
 * Work that may crash or hang (a damaged file under a library that trusts
 * it, a statement stuck inside one library call) in a child process:
 * core_isolate forks; the child runs fn(ctx, fd), writes its answer to
 * fd and returns (the child then _exits: no atexit handler, no stdio of
 * the parent's flushed twice); the parent reads the answer into out, at
 * most max bytes, for at most timeout_ms (0: no limit), then kills a
 * child that overran either and reaps it. What the child may use: state
 * made before the fork, read-only; no thread of the parent's exists in
 * it. 0 (how says how the child ended), or CORE_EIO (no pipe or fork),
 * CORE_ENOMEM. */
typedef struct core_isolated {
	bool late;        /* killed at the time limit */
	bool too_big;     /* killed: its answer went over max */
	int signal;       /* it died of this signal by itself (0: exited) */
	int status;       /* its exit status */
} core_isolated;
int core_isolate(void (*fn)(void *ctx, int fd), void *ctx, unsigned timeout_ms,
		 size_t max, core_buf *out, core_isolated *how, core_err *err);
/* write(2) until all n bytes are written or it fails. */
void core_write_all(int fd, const void *p, size_t n);
uint64_t core_now_wall_ns(void);
/* A wall-clock time in ns as Python's datetime.isoformat() writes a UTC
 * time: "2026-01-30T10:15:30.123456+00:00", the fraction left out when
 * its microseconds are 0. out holds 40 bytes. */
void core_iso_utc(uint64_t ns, char out[40]);

#endif /* ELSPETH_CORE_H */

/*
 * llm.h — the LLM module: the wire format of OpenAI-compatible chat
 * completions (no network) and the client the llm and llm_multi_query
 * transforms share (provider, endpoint, credentials, the shared HTTP
 * executor of plugins/http/http.h). Each section states its thread rules.
 */
#ifndef ELSPETH_LLM_H
#define ELSPETH_LLM_H

/* ============================================================ wire */

/*
 * Wire format — the bytes exchanged with OpenAI-compatible chat-completion
 * endpoints, without any network: request bodies (hashed for the audit
 * trail, so byte-for-byte deterministic), the response envelope, and the
 * typed answers of llm_multi_query (docs/templates.md, "Multi-query
 * answers").
 *
 * Thread rules: every function of this section is reentrant; none keeps
 * state.
 */
#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"
#include "plugins/http/http.h"

/* ------------------------------------------------------- output fields */

typedef enum llm_type {
	LLM_T_STRING,
	LLM_T_INTEGER, /* a JSON integer, or a real with no fraction; |v| <= 2^53 */
	LLM_T_NUMBER,  /* any JSON number (not a boolean) */
	LLM_T_BOOLEAN, /* true or false only */
	LLM_T_ENUM,    /* a string equal to one of `values` */
	LLM_T_LAST
} llm_type;

/* One typed output field of a query: the answer's key is `suffix`, the
 * row's column is "{query}_{suffix}". `values` (LLM_T_ENUM only) points to
 * nvalues strings. All pointers are borrowed for the duration of a call. */
typedef struct llm_field {
	const char *suffix;
	llm_type type;
	const char *const *values;
	size_t nvalues;
} llm_field;

/* "string", "integer", "number", "boolean", "enum" -> *out. Anything else
 * is CORE_ECONFIG "unknown output type 'x' (expected string, integer,
 * number, boolean or enum)"; the caller prefixes the settings position. */
int llm_type_parse(const char *name, llm_type *out, core_err *err);

/* Appends the JSON Schema object of the fields:
 *   {"type":"object","properties":{"<suffix>":{"type":"integer"},
 *    "<enum suffix>":{"type":"string","enum":[...]},...},
 *    "required":[<suffixes in order>],"additionalProperties":false}
 * CORE_ECONFIG for no fields, an empty or duplicate suffix, an enum
 * without values, or a bad type. On error out keeps its length. */
int llm_schema_append(core_buf *out, const llm_field *fields, size_t n,
		      core_err *err);
/* Appends the standard-mode instruction for a prompt:
 *   "\n\nAnswer with a JSON object matching this JSON Schema: <schema>" */
int llm_schema_instruction(core_buf *out, const llm_field *fields, size_t n,
			   core_err *err);

/* ------------------------------------------------------------ requests */

typedef struct llm_request {
	const char *model;          /* NULL: omitted (Azure: the deployment) */
	const char *system_prompt;  /* NULL: no system message */
	const char *user_prompt;    /* required */
	bool has_temperature;       /* "temperature" only when set */
	double temperature;
	long long max_tokens;       /* > 0: "max_tokens"; 0: omitted */
	/* Structured output: when nfields > 0, a response_format of type
	 * json_schema named schema_name (1-64 of [A-Za-z0-9_-]), strict. */
	const char *schema_name;
	const llm_field *fields;
	size_t nfields;
	/* Otherwise, when not NULL, this response_format object as it is
	 * (ELSPETH's json_object and json_schema shapes; borrowed). */
	const json_t *response_format;
} llm_request;

/* Appends the request body as compact JSON with keys in this fixed order:
 * model, messages (system, user), temperature, max_tokens,
 * response_format {type, json_schema {name, strict, schema}}. Strings are
 * kept as UTF-8 (only '"', '\\' and controls escaped); the same request
 * always gives the same bytes. Errors: CORE_ECONFIG (no user prompt, bad
 * schema name or fields, non-finite temperature, negative max_tokens),
 * CORE_ENOMEM; on error out keeps its length. */
int llm_request_append(core_buf *out, const llm_request *req, core_err *err);

/* ----------------------------------------------------------- responses */

typedef enum llm_resp_kind {
	LLM_RESP_OK,           /* content present, finish_reason "stop" (or absent) */
	LLM_RESP_MALFORMED,    /* not a chat-completion envelope: transient */
	LLM_RESP_API_ERROR,    /* an {"error": {...}} body */
	LLM_RESP_FINISH,       /* finish_reason other than "stop": row error */
	LLM_RESP_NULL_CONTENT, /* well-formed, but content null (refusal, ...) */
	LLM_RESP_LAST
} llm_resp_kind;

/* What was read from a response body. Strings are malloc'd and
 * NUL-terminated (content may also hold NUL bytes: use content_len), NULL
 * when absent. Release with llm_response_release(). */
typedef struct llm_response {
	llm_resp_kind kind;
	char *content;           /* choices[0].message.content */
	size_t content_len;
	char *finish_reason;     /* choices[0].finish_reason */
	char *model;             /* the model that answered */
	json_t *usage;           /* {prompt_tokens, completion_tokens,
				  * total_tokens} (the integers present), json
				  * null without a usage object, NULL for error
				  * bodies and non-JSON; owned here */
	char *error_message;     /* LLM_RESP_API_ERROR */
	char *error_type;
	char *error_code;        /* a string or an integer code, as text */
} llm_response;

/* Parses body[0..len) (need not be NUL-terminated). Returns 0 only for
 * LLM_RESP_OK; otherwise CORE_EDATA with out->kind saying why and err->msg
 * a short reason, e.g. "response is not JSON at byte 17: ...",
 * "choices[0].message.content missing", "finish_reason is 'length', not
 * 'stop'", "API error: <message> (type ..., code ...)". For
 * LLM_RESP_MALFORMED err->retryable is true. CORE_ENOMEM on allocation
 * failure. Fields found before the problem stay filled (e.g. content and
 * usage for LLM_RESP_FINISH). out is overwritten (not released) first. */
int llm_response_parse(const void *body, size_t len, llm_response *out,
		       core_err *err);
void llm_response_release(llm_response *r); /* NULL allowed; zeroes *r */

/* ------------------------------------------------------- typed answers */

/* Checks one query's answer content[0..len) against its output fields and
 * puts "{query}_{suffix}" columns into dest (an object; existing keys are
 * replaced). The content must be one JSON object, optionally inside
 * surrounding whitespace and a ``` or ```json markdown fence; extra keys
 * are ignored. Type rules are those of llm_type. Errors are CORE_EDATA,
 * e.g. "query 'sentiment' field 'score': expected integer, got \"high\"",
 * "query 'q' field 'label' is missing from the answer"; dest is then
 * unchanged. CORE_ECONFIG for bad field specs, CORE_ENOMEM. */
int llm_answer_apply(const char *query, const char *content, size_t len,
		     const llm_field *fields, size_t n, json_t *dest,
		     core_err *err);

/* ========================================================== client */

/*
 * Client — what the llm and llm_multi_query transforms share: the
 * provider, endpoint and credentials, the request options, the shared HTTP
 * executor (plugins/http/http.h), and the checks and error messages of a call.
 *
 * Thread rules: the client keeps state and starts threads.
 * llm_client_open opens a client of the process's HTTP executor (the
 * first client of the process starts its thread) and llm_client_release
 * closes it (the last one stops it); call them from the thread that
 * opens and closes the transform, while no other call on the client
 * runs. Between them the other functions may be called from any number
 * of threads at once: they only read the client, and what they ask of
 * the executor (statistics, the throttle's state) takes its lock.
 *
 * Options (both transforms):
 *   provider: openrouter | azure | openai          (default openrouter)
 *   model                 openrouter/openai: required
 *   base_url              default https://openrouter.ai/api/v1 or
 *                         https://api.openai.com/v1; requests go to
 *                         {base_url}/chat/completions
 *   deployment_name, endpoint   azure: required; requests go to
 *                         {endpoint}/openai/deployments/{deployment_name}
 *                         /chat/completions?api-version={api_version}
 *   api_version           azure: default LLM_AZURE_API_VERSION
 *   api_key               sent as "Authorization: Bearer" (azure: "api-key");
 *                         never recorded, only fingerprinted in the settings
 *   system_prompt, temperature (0..2), max_tokens (>= 1);
 *                         system_prompt_file is read into system_prompt
 *                         when the settings load (system_prompt_source
 *                         keeps its path; core/settings_files.c)
 *   required_input_fields [names]: a row lacking one is a row error
 *   timeout_seconds       per attempt (default 60)
 *   pool_size             requests in flight at most (default 32)
 *   capacity_control      adaptive (default) or aimd (plugins/http/http.h)
 *   min_dispatch_delay_ms (0): the least time between two dispatches (both
 *                         modes); max_dispatch_delay_ms (5000),
 *                         backoff_multiplier (2.0), recovery_step_ms (50):
 *                         the aimd mode's throttle
 *   max_capacity_retry_seconds (3600): a request refused for capacity
 *                         gives up after this
 *   max_retry_after_seconds (600): a provider asking to wait longer stops
 *                         the run (exit 3, resumable)
 *   tail_timeout_factor (3): an attempt unanswered after this x the p99 of
 *                         the upstream's recent answers (at least 1 s) is
 *                         cut and sent again with the whole timeout; 0: off
 *   hedge (idle)          true: a copy of an attempt unanswered after the
 *                         p99 is sent; the first good answer wins (both
 *                         recorded). idle: such a copy only after 1.5 x
 *                         the p99 (at least 0.5 s) and only into a slot
 *                         nothing else wants (a
 *                         stuck request at the end of a run). false: none
 *   budgets               the settings' rate_limit entry for the service
 *                         (openrouter, azure_openai, openai)
 *   schema                accepted (ELSPETH's block)
 */

/* The option keys every LLM transform accepts. */
/* The options every LLM plugin takes (provider, model, credentials,
 * the system prompt, the executor's), as a table (plugins.h: plg_option). */
extern const plg_option llm_client_opts[];

/* ELSPETH 0.4.1's default api_version for provider azure
 * (plugins/transforms/llm/providers/azure.py, AzureOpenAIConfig). */
#define LLM_AZURE_API_VERSION "2024-10-21"

typedef struct llm_client {
	char *url;
	char *model;           /* NULL for azure: the deployment decides */
	char *system_prompt;   /* may be NULL */
	bool has_temperature;
	double temperature;
	long long max_tokens;  /* 0: not sent */
	char **required;       /* required_input_fields */
	size_t nrequired;
	struct curl_slist *headers;
	http_cfg cfg;
	http_client *http;
} llm_client;

/* Parses the shared options of map o and starts the executor, with the
 * run's rate_limit and capacity share (env; may be NULL). On error the
 * client is released. */
int llm_client_open(llm_client *c, const plg_env *env, const core_node *o,
		    core_err *err);
void llm_client_release(llm_client *c); /* zeroed or opened */

/* CORE_EDATA naming the first required input field the row lacks. */
int llm_client_check_inputs(const llm_client *c, const json_t *row,
			    core_err *err);

/* An answer, parsed once: by the executor's envelope check of the last
 * 2xx attempt (parsed: true), or by llm_client_answer when that check did
 * not keep it (an API error, a refusal: their message is rebuilt). */
typedef struct llm_answer {
	llm_response resp;
	bool parsed;
} llm_answer;

/* Prepares r to send body (which must outlive the call); the envelope
 * check parses the answer into *a (zero-initialised; release a->resp with
 * llm_response_release). */
void llm_client_request(const llm_client *c, http_req *r, const char *body,
			size_t len, const char *name, llm_answer *a);

/* After http_run: CORE_EDATA describing why request r failed (r->result !=
 * PLG_CLASS_OK), naming the query when there is one. Never retryable: the
 * executor has already retried what `retry` allows. */
int llm_client_failed(const http_req *r, const char *query, core_err *err);

/* r's answer in a->resp; on a problem CORE_EDATA naming the query. */
int llm_client_answer(const http_req *r, const char *query, llm_answer *a,
		      core_err *err);

/* The throttle's state for a checkpoint, and putting it back (resume;
 * clamped to this configuration's bounds). */
json_t *llm_client_save(const llm_client *c);
void llm_client_restore(llm_client *c, const json_t *saved);
/* plg_transform_ops.capacity of the LLM transforms: the upstream's
 * capacity control now (any thread, while the client is open). */
bool llm_client_capacity(const llm_client *c, plg_capacity *out);
/* The node-state context for one row's calls: a new JSON object. */
json_t *llm_client_context(const llm_client *c, const http_req *reqs, size_t n);

#endif /* ELSPETH_LLM_H */

/*
 * llm_wire.h — the bytes exchanged with OpenAI-compatible chat-completion
 * endpoints, without any network: request bodies (hashed for the audit
 * trail, so byte-for-byte deterministic), the response envelope, and the
 * typed answers of llm_multi_query (docs/templates.md, "Multi-query
 * answers").
 *
 * Thread rules: every function is reentrant; nothing here keeps state.
 */
#ifndef ELSPETH_LLM_WIRE_H
#define ELSPETH_LLM_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/core.h"

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
/* The name above; never NULL. */
const char *llm_type_name(llm_type t);

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
/* "ok", "malformed", "api_error", "finish", "null_content"; never NULL. */
const char *llm_resp_kind_name(llm_resp_kind k);

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

#endif /* ELSPETH_LLM_WIRE_H */

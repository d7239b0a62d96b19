/*
 * llm_client.h — what the llm and llm_multi_query transforms share: the
 * provider, endpoint and credentials, the request options, the shared HTTP
 * executor (http_exec.h), and the checks and error messages of a call.
 * Internal to the plugins module.
 *
 * Options (both transforms):
 *   provider: openrouter | azure | openai          (default openrouter)
 *   model                 openrouter/openai: required
 *   base_url              default https://openrouter.ai/api/v1 or
 *                         https://api.openai.com/v1; requests go to
 *                         {base_url}/chat/completions
 *   deployment_name, endpoint, api_version          azure: required; requests
 *                         go to {endpoint}/openai/deployments/{deployment_name}
 *                         /chat/completions?api-version={api_version}
 *   api_key               sent as "Authorization: Bearer" (azure: "api-key");
 *                         never recorded, only fingerprinted in the settings
 *   system_prompt, temperature (0..2), max_tokens (>= 1)
 *   required_input_fields [names]: a row lacking one is a row error
 *   timeout_seconds       per attempt (default 60)
 *   pool_size             requests in flight at most (default 32)
 *   min_dispatch_delay_ms (0), max_dispatch_delay_ms (5000),
 *   backoff_multiplier (2.0), recovery_step_ms (50),
 *   max_capacity_retry_seconds (3600): the AIMD throttle (aimd.h)
 *   schema                accepted (ELSPETH's block)
 */
#ifndef ELSPETH_LLM_CLIENT_H
#define ELSPETH_LLM_CLIENT_H

#include "plugins/http_exec.h"
#include "plugins/llm_wire.h"

/* The option keys every LLM transform accepts. */
#define LLM_CLIENT_KEYS "provider", "model", "base_url", "deployment_name", \
	"endpoint", "api_version", "api_key", "system_prompt", "temperature", \
	"max_tokens", "required_input_fields", "timeout_seconds", "pool_size", \
	"min_dispatch_delay_ms", "max_dispatch_delay_ms", "backoff_multiplier", \
	"recovery_step_ms", "max_capacity_retry_seconds", "schema"

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
	hx_cfg cfg;
	hx_exec *exec;
} llm_client;

/* Parses the shared options of map o and starts the executor. On error
 * the client is released. */
int llm_client_open(llm_client *c, const core_node *o, core_err *err);
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
void llm_client_request(const llm_client *c, hx_req *r, const char *body,
			size_t len, const char *name, llm_answer *a);

/* After hx_run: CORE_EDATA describing why request r failed (r->result !=
 * HX_OK), naming the query when there is one. Never retryable: the
 * executor has already retried what `retry` allows. */
int llm_client_failed(const hx_req *r, const char *query, core_err *err);

/* r's answer in a->resp; on a problem CORE_EDATA naming the query. */
int llm_client_answer(const hx_req *r, const char *query, llm_answer *a,
		      core_err *err);

/* A malloc'd copy of n strings (each strdup'd); NULL when out of memory.
 * The caller frees each string and the array. */
char **plg__llm_dup_list(const char **v, size_t n);

/* Re-raises a template compile error in err at the template's node
 * (file, line, column, key path). Returns err->code. */
int plg__llm_template_error(const core_node *at, core_err *err);

/* The node-state context for one row's calls: a new JSON object. */
/* The throttle's state for a checkpoint, and putting it back (resume;
 * clamped to this configuration's bounds). */
json_t *llm_client_save(const llm_client *c);
void llm_client_restore(llm_client *c, const json_t *saved);
json_t *llm_client_context(const llm_client *c, const hx_req *reqs, size_t n);

#endif /* ELSPETH_LLM_CLIENT_H */

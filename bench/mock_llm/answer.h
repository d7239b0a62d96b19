/*
 * answer.h — chat-completion requests and their deterministic answers.
 *
 * A parsed request yields two hashes:
 *  - the request hash: SHA-256 of the messages array as compact JSON with
 *    sorted keys; its first 24 hex digits make the answer's id, its first 8
 *    bytes seed the latency and fault draws (policy.h);
 *  - the prompt hash: SHA-256 of the last user message's text, which picks
 *    labels, structured values and fences.
 * The answer's bytes depend only on the request and the options.
 */
#ifndef MOCK_ANSWER_H
#define MOCK_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "config.h"

typedef struct mock_chat {
	json_t *root;          /* the request body (owned) */
	char *last_user;       /* last user message's text (owned) */
	char id[40];           /* "chatcmpl-" + 24 hex digits */
	uint64_t req_hash;
	uint64_t prompt_hash;
	long prompt_tokens;    /* whitespace-separated words of all messages */
	long prompt_chars;     /* characters (code points) of all messages */
	long max_tokens;       /* max_tokens or max_completion_tokens; -1 */
	const json_t *schema;  /* JSON Schema of a structured answer, or NULL */
	json_t *prompt_schema; /* owned when the schema came from the prompt
				* (the standard instruction, or a json_object
				* request's object template: mock_hint_schema) */
	int json_object;       /* response_format {"type":"json_object"} */
} mock_chat;

/*
 * Parses a request body. Returns 0, or -1 with a message in err (the body
 * is not JSON, not an object, or has no messages array of objects with a
 * string role). Release with mock_chat_release in both cases.
 */
int mock_chat_parse(mock_chat *c, const char *body, size_t len, char *err,
		    size_t errlen);
void mock_chat_release(mock_chat *c);

/*
 * The answer body (compact JSON). `model` names the model in the answer;
 * `cut` gives finish_reason "length" with the content cut to half its
 * bytes (at a UTF-8 boundary). Caller frees; *len gets the length.
 */
char *mock_chat_answer(const mock_chat *c, const mock_cfg *cfg,
		       const char *model, int cut, size_t *len);

/* A JSON Schema {"type":"object","properties":{...}} read from the first
 * object template in text whose keys are quoted, such as
 * {"score": <number>, "rationale": "<explanation>"} (hint_schema.c), or
 * NULL when there is none. Caller releases. */
json_t *mock_hint_schema(const char *text);

/* An OpenAI-style error body {"error":{"message","type","code"}}; caller
 * frees. */
char *mock_error_body(const char *message, const char *type,
		      const char *code, size_t *len);

#endif

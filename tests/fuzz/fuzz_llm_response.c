/*
 * fuzz_llm_response.c — libFuzzer harness for LLM response bodies and
 * typed multi-query answers.
 *
 * The input is parsed as a chat-completion envelope: success must mean
 * LLM_RESP_OK with content; any failure a CORE_EDATA with a message and a
 * kind other than OK (malformed ones retryable). The extracted content, and
 * the raw input itself, are then checked as a query answer against fixed
 * output fields: success must add exactly the typed columns, failure must
 * leave the row untouched. Leaks and memory errors are left to the
 * sanitizers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "plugins/llm/llm.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const labels[] = { "low", "high", "\xc3\xa9" };

static const llm_field fields[] = {
	{ "label", LLM_T_ENUM, labels, 3 },
	{ "score", LLM_T_INTEGER, NULL, 0 },
	{ "p", LLM_T_NUMBER, NULL, 0 },
	{ "ok", LLM_T_BOOLEAN, NULL, 0 },
	{ "why", LLM_T_STRING, NULL, 0 },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static bool column_ok(const llm_field *f, const json_t *v)
{
	switch (f->type) {
	case LLM_T_STRING:
		return json_is_string(v);
	case LLM_T_ENUM:
		for (size_t i = 0; json_is_string(v) && i < f->nvalues; i++)
			if (!strcmp(json_string_value(v), f->values[i]))
				return true;
		return false;
	case LLM_T_INTEGER:
		return json_is_integer(v) &&
		       llabs(json_integer_value(v)) <= 9007199254740992LL;
	case LLM_T_NUMBER:
		return json_is_number(v);
	case LLM_T_BOOLEAN:
		return json_is_boolean(v);
	case LLM_T_LAST:
		break;
	}
	return false;
}

static void check_answer(const char *content, size_t len)
{
	json_t *row = json_pack("{s:i}", "id", 1);
	core_err err = { 0 };
	char key[32];
	int rc;

	if (!row)
		return;
	rc = llm_answer_apply("q", content, len, fields, NFIELDS, row, &err);
	if (rc == CORE_EDATA) {
		if (!err.msg[0] || strncmp(err.msg, "query 'q'", 9) ||
		    json_object_size(row) != 1)
			abort();
	} else if (!rc) {
		if (json_object_size(row) != 1 + NFIELDS)
			abort();
		for (size_t i = 0; i < NFIELDS; i++) {
			snprintf(key, sizeof(key), "q_%s", fields[i].suffix);
			if (!column_ok(&fields[i], json_object_get(row, key)))
				abort();
		}
	} else if (rc != CORE_ENOMEM) {
		abort();
	}
	json_decref(row);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	llm_response r;
	core_err err = { 0 };
	int rc = llm_response_parse(data, size, &r, &err);

	if (rc == 0) {
		if (r.kind != LLM_RESP_OK || !r.content || !r.usage)
			abort();
	} else if (rc == CORE_EDATA) {
		if (r.kind == LLM_RESP_OK || r.kind >= LLM_RESP_LAST || !err.msg[0] ||
		    err.retryable != (r.kind == LLM_RESP_MALFORMED))
			abort();
	} else if (rc != CORE_ENOMEM) {
		abort();
	}
	if (r.content)
		check_answer(r.content, r.content_len);
	llm_response_release(&r);
	check_answer((const char *)data, size);
	return 0;
}

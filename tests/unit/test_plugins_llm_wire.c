/* test_plugins_llm_wire.c — request bodies, response envelopes and typed
 * multi-query answers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include "plugins/llm/llm.h"


TestSuite(llm_types, .timeout = 10);
TestSuite(llm_request, .timeout = 10);
TestSuite(llm_response, .timeout = 10);
TestSuite(llm_answer, .timeout = 10);

static const char *const labels[] = { "positive", "negative", "neutral" };

static const llm_field sentiment_fields[] = {
	{ "label", LLM_T_ENUM, labels, 3 },
	{ "score", LLM_T_INTEGER, NULL, 0 },
	{ "confidence", LLM_T_NUMBER, NULL, 0 },
	{ "urgent", LLM_T_BOOLEAN, NULL, 0 },
	{ "reason", LLM_T_STRING, NULL, 0 },
};
#define NSENT (sizeof(sentiment_fields) / sizeof(sentiment_fields[0]))

static const char sentiment_schema[] =
	"{\"type\":\"object\",\"properties\":{"
	"\"label\":{\"type\":\"string\",\"enum\":[\"positive\",\"negative\",\"neutral\"]},"
	"\"score\":{\"type\":\"integer\"},\"confidence\":{\"type\":\"number\"},"
	"\"urgent\":{\"type\":\"boolean\"},\"reason\":{\"type\":\"string\"}},"
	"\"required\":[\"label\",\"score\",\"confidence\",\"urgent\",\"reason\"],"
	"\"additionalProperties\":false}";

static json_t *js(const char *text)
{
	json_error_t jerr;
	json_t *v = json_loads(text, 0, &jerr);

	cr_assert_not_null(v, "bad test JSON %s: %s", text, jerr.text);
	return v;
}

/* ------------------------------------------------------------- types */

Test(llm_types, parse)
{
	static const char *const names[] = {
		"string", "integer", "number", "boolean", "enum"
	};
	core_err err = { 0 };
	llm_type t;

	for (int i = 0; i < LLM_T_LAST; i++) {
		cr_assert_eq(llm_type_parse(names[i], &t, &err), 0);
		cr_expect_eq((int)t, i);
	}
	cr_expect_eq(llm_type_parse("int", &t, &err), CORE_ECONFIG);
	cr_expect_str_eq(err.msg, "unknown output type 'int' (expected string, "
			 "integer, number, boolean or enum)");
	cr_expect_eq(llm_type_parse("String", &t, &err), CORE_ECONFIG);
	cr_expect_eq(llm_type_parse(NULL, &t, &err), CORE_ECONFIG);
}

Test(llm_types, schema_bytes)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(llm_schema_append(&b, sentiment_fields, NSENT, &err), 0, "%s",
		     err.msg);
	cr_expect_str_eq(b.data, sentiment_schema);
	core_buf_release(&b);
}

Test(llm_types, schema_instruction)
{
	static const llm_field one[] = { { "a", LLM_T_STRING, NULL, 0 } };
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "Classify."));
	cr_assert_eq(llm_schema_instruction(&b, one, 1, &err), 0, "%s", err.msg);
	cr_expect_str_eq(b.data, "Classify.\n\nAnswer with a JSON object matching this "
			 "JSON Schema: {\"type\":\"object\",\"properties\":{\"a\":"
			 "{\"type\":\"string\"}},\"required\":[\"a\"],"
			 "\"additionalProperties\":false}");
	core_buf_release(&b);
}

static void expect_fields_err(const llm_field *f, size_t n, const char *want)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "x"));
	cr_expect_eq(llm_schema_instruction(&b, f, n, &err), CORE_ECONFIG, "%s", want);
	cr_expect(strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
	cr_expect_str_eq(b.data, "x", "out keeps its length");
	core_buf_release(&b);
}

Test(llm_types, bad_field_specs)
{
	static const char *const dup[] = { "a", "a" };
	static const char *const holes[] = { "a", NULL };
	const llm_field empty[] = { { "", LLM_T_STRING, NULL, 0 } };
	const llm_field twice[] = { { "a", LLM_T_STRING, NULL, 0 },
				    { "a", LLM_T_NUMBER, NULL, 0 } };
	const llm_field noenum[] = { { "e", LLM_T_ENUM, NULL, 0 } };
	const llm_field dupenum[] = { { "e", LLM_T_ENUM, dup, 2 } };
	const llm_field holeenum[] = { { "e", LLM_T_ENUM, holes, 2 } };
	const llm_field badtype[] = { { "t", LLM_T_LAST, NULL, 0 } };

	expect_fields_err(empty, 0, "no output fields");
	expect_fields_err(empty, 1, "output field 1: the suffix must be a non-empty");
	expect_fields_err(twice, 2, "output field 'a' is listed twice");
	expect_fields_err(noenum, 1, "output field 'e': an enum needs at least one value");
	expect_fields_err(dupenum, 1, "enum value 'a' is listed twice");
	expect_fields_err(holeenum, 1, "enum value 2 is missing");
	expect_fields_err(badtype, 1, "output field 't': bad type 5");
}

/* ----------------------------------------------------------- requests */

static char *request(const llm_request *r)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert_eq(llm_request_append(&b, r, &err), 0, "%s", err.msg);
	return core_buf_steal(&b);
}

Test(llm_request, full_body_in_fixed_key_order)
{
	llm_request r = {
		.model = "anthropic/claude-3-haiku", .system_prompt = "Be brief.",
		.user_prompt = "Classify: \"x\"\n", .has_temperature = true,
		.temperature = 0.7, .max_tokens = 256, .schema_name = "sentiment",
		.fields = sentiment_fields, .nfields = NSENT,
	};
	char *got = request(&r), want[2048];

	snprintf(want, sizeof(want),
		 "{\"model\":\"anthropic/claude-3-haiku\",\"messages\":["
		 "{\"role\":\"system\",\"content\":\"Be brief.\"},"
		 "{\"role\":\"user\",\"content\":\"Classify: \\\"x\\\"\\n\"}],"
		 "\"temperature\":0.7,\"max_tokens\":256,\"response_format\":"
		 "{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"sentiment\","
		 "\"strict\":true,\"schema\":%s}}}", sentiment_schema);
	cr_expect_str_eq(got, want);
	free(got);
}

Test(llm_request, minimal_body_for_azure)
{
	llm_request r = { .user_prompt = "hi" };
	char *got = request(&r);

	cr_expect_str_eq(got, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
	free(got);
}

Test(llm_request, temperature_only_when_set)
{
	llm_request r = { .model = "m", .user_prompt = "p", .has_temperature = true };
	char *got = request(&r);

	cr_expect_str_eq(got, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
			 "\"content\":\"p\"}],\"temperature\":0.0}");
	free(got);
	r.temperature = 1;
	got = request(&r);
	cr_expect(strstr(got, "\"temperature\":1.0}"), "%s", got);
	free(got);
	r.has_temperature = false;
	r.temperature = 0.3;
	got = request(&r);
	cr_expect_null(strstr(got, "temperature"), "%s", got);
	free(got);
}

Test(llm_request, deterministic_bytes)
{
	llm_request r = {
		.model = "gpt-4o", .user_prompt = "same", .has_temperature = true,
		.temperature = 0.1, .schema_name = "s", .fields = sentiment_fields,
		.nfields = NSENT,
	};
	char *a = request(&r), *b = request(&r);
	uint8_t ha[CORE_SHA256_LEN], hb[CORE_SHA256_LEN];

	cr_expect_str_eq(a, b);
	core_sha256(a, strlen(a), ha);
	core_sha256(b, strlen(b), hb);
	cr_expect_arr_eq(ha, hb, sizeof(ha));
	cr_expect(strstr(a, "\"temperature\":0.1,"), "%s", a);
	free(a);
	free(b);
}

Test(llm_request, unicode_and_controls)
{
	llm_request r = { .user_prompt = "h\xc3\xa9llo \xe4\xb8\x96 \xf0\x9f\x98\x80\t\x01\\/" };
	char *got = request(&r);

	cr_expect_str_eq(got, "{\"messages\":[{\"role\":\"user\",\"content\":"
			 "\"h\xc3\xa9llo \xe4\xb8\x96 \xf0\x9f\x98\x80\\t\\u0001\\\\/\"}]}");
	free(got);
}

static void expect_request_err(const llm_request *r, int code, const char *want)
{
	core_buf b = { 0 };
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "keep"));
	cr_expect_eq(llm_request_append(&b, r, &err), code, "%s", want);
	cr_expect(strstr(err.msg, want), "got '%s', want '%s'", err.msg, want);
	cr_expect_str_eq(b.data, "keep");
	core_buf_release(&b);
}

Test(llm_request, errors)
{
	llm_request r = { .model = "m", .user_prompt = "p" };
	char long_name[80];

	r.user_prompt = NULL;
	expect_request_err(&r, CORE_ECONFIG, "request: no user prompt");
	r.user_prompt = "bad \xff utf8";
	expect_request_err(&r, CORE_EDATA, "the user prompt is not valid UTF-8");
	r.user_prompt = "p";
	r.system_prompt = "\xc3";
	expect_request_err(&r, CORE_EDATA, "the system prompt is not valid UTF-8");
	r.system_prompt = NULL;
	r.has_temperature = true;
	r.temperature = NAN;
	expect_request_err(&r, CORE_ECONFIG, "temperature must be a finite number");
	r.temperature = INFINITY;
	expect_request_err(&r, CORE_ECONFIG, "temperature must be a finite number");
	r.has_temperature = false;
	r.max_tokens = -1;
	expect_request_err(&r, CORE_ECONFIG, "max_tokens must not be negative");
	r.max_tokens = 0;
	r.fields = sentiment_fields;
	r.nfields = NSENT;
	expect_request_err(&r, CORE_ECONFIG, "response_format name '' must be 1-64");
	r.schema_name = "has space";
	expect_request_err(&r, CORE_ECONFIG, "name 'has space' must be");
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	r.schema_name = long_name;
	expect_request_err(&r, CORE_ECONFIG, "must be 1-64");
	long_name[64] = '\0';
	r.nfields = 0;
	r.fields = NULL;
	r.schema_name = NULL;
	{
		char *ok = request(&r);

		cr_expect_null(strstr(ok, "response_format"), "no fields, no format");
		free(ok);
	}
	{
		const llm_field bad[] = { { "x", LLM_T_ENUM, NULL, 0 } };

		r.schema_name = long_name; /* 64 characters: allowed */
		r.fields = bad;
		r.nfields = 1;
		expect_request_err(&r, CORE_ECONFIG, "an enum needs at least one value");
	}
}

/* ---------------------------------------------------------- responses */

/* Parses text from an exactly-sized heap copy (no NUL after it, so a
 * read past the end is caught by ASan). */
static int parse(const char *text, llm_response *r, core_err *err)
{
	size_t n = strlen(text);
	char *copy = malloc(n ? n : 1);
	int rc;

	memcpy(copy, text, n);
	rc = llm_response_parse(copy, n, r, err);
	free(copy);
	return rc;
}

static const char ok_body[] =
	"{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-2024\","
	"\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
	"\"h\\u00e9llo \\\"world\\\"\"},\"finish_reason\":\"stop\"}],"
	"\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15,"
	"\"extra\":1}}";

Test(llm_response, ok_envelope)
{
	llm_response r;
	core_err err = { 0 };
	char *usage;

	cr_assert_eq(parse(ok_body, &r, &err), 0, "%s", err.msg);
	cr_expect_eq(r.kind, LLM_RESP_OK);
	cr_expect_str_eq(r.content, "h\xc3\xa9llo \"world\"");
	cr_expect_eq(r.content_len, strlen(r.content));
	cr_expect_str_eq(r.finish_reason, "stop");
	cr_expect_str_eq(r.model, "gpt-4o-2024");
	usage = json_dumps(r.usage, JSON_COMPACT);
	cr_expect_str_eq(usage, "{\"prompt_tokens\":12,\"completion_tokens\":3,"
			 "\"total_tokens\":15}");
	free(usage);
	cr_expect_null(r.error_message);
	llm_response_release(&r);
	cr_expect_null(r.content);
	cr_expect_null(r.usage);
	llm_response_release(&r);
	llm_response_release(NULL);
}

Test(llm_response, optional_parts)
{
	llm_response r;
	core_err err = { 0 };
	char *usage;

	cr_assert_eq(parse("{\"choices\":[{\"message\":{\"content\":\"\"}}]}", &r, &err),
		     0, "%s", err.msg);
	cr_expect_str_eq(r.content, "");
	cr_expect_null(r.finish_reason, "absent finish_reason is accepted");
	cr_expect_null(r.model);
	cr_expect(json_is_null(r.usage), "absent usage is null");
	llm_response_release(&r);

	cr_assert_eq(parse("{\"error\":null,\"model\":7,\"usage\":{\"prompt_tokens\":\"9\","
			   "\"total_tokens\":4},\"choices\":[{\"message\":{\"content\":"
			   "\"x\"},\"finish_reason\":null}]}", &r, &err), 0, "%s", err.msg);
	cr_expect_null(r.model, "a non-string model is ignored");
	usage = json_dumps(r.usage, JSON_COMPACT);
	cr_expect_str_eq(usage, "{\"total_tokens\":4}", "only integer counters");
	free(usage);
	llm_response_release(&r);

	cr_assert_eq(parse("{\"usage\":[1],\"choices\":[{\"message\":{\"content\":\"x\"}},"
			   "{\"bad\":1}]}", &r, &err), 0, "%s", err.msg);
	cr_expect(json_is_null(r.usage));
	llm_response_release(&r);
}

static void expect_malformed(const char *body, const char *want)
{
	llm_response r;
	core_err err = { 0 };

	cr_expect_eq(parse(body, &r, &err), CORE_EDATA, "%s", body);
	cr_expect_eq(r.kind, LLM_RESP_MALFORMED, "%s", body);
	cr_expect(err.retryable, "a malformed envelope is transient: %s", body);
	cr_expect(strstr(err.msg, want), "%s: got '%s', want '%s'", body, err.msg,
		  want);
	cr_expect_null(r.content);
	llm_response_release(&r);
}

Test(llm_response, not_json)
{
	expect_malformed("", "response is not JSON at byte 0");
	expect_malformed("<html>502 Bad Gateway</html>", "response is not JSON at byte 1:");
	expect_malformed("{\"choices\":[{\"message\":{\"content\":\"trunc",
			 "response is not JSON at byte 40: premature end of input");
	expect_malformed("{\"choices\": [] } trailing", "response is not JSON at byte 25: end of file expected near 'trailing'");
	expect_malformed("{\"a\":\"\xff\"}", "response is not JSON");
	expect_malformed("[1,2]", "response is an array, not a JSON object");
	expect_malformed("42", "response is an integer, not a JSON object");
	expect_malformed("\"text\"", "response is a string, not a JSON object");
	expect_malformed("null", "response is null, not a JSON object");
}

Test(llm_response, wrong_shapes)
{
	expect_malformed("{}", "choices missing");
	expect_malformed("{\"choices\":{}}", "choices is an object, not an array");
	expect_malformed("{\"choices\":[]}", "choices is empty");
	expect_malformed("{\"choices\":[\"x\"]}", "choices[0] is a string, not an object");
	expect_malformed("{\"choices\":[{}]}", "choices[0].message missing");
	expect_malformed("{\"choices\":[{\"message\":[]}]}",
			 "choices[0].message is an array, not an object");
	expect_malformed("{\"choices\":[{\"message\":{\"role\":\"assistant\"}}]}",
			 "choices[0].message.content missing");
	expect_malformed("{\"choices\":[{\"message\":{\"content\":42}}]}",
			 "choices[0].message.content is an integer, not a string");
	expect_malformed("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\"}]}}]}",
			 "choices[0].message.content is an array, not a string");
	expect_malformed("{\"choices\":[{\"message\":{\"content\":\"x\"},"
			 "\"finish_reason\":1}]}",
			 "choices[0].finish_reason is an integer, not a string");
}

Test(llm_response, finish_reason_other_than_stop)
{
	llm_response r;
	core_err err = { 0 };

	cr_assert_eq(parse("{\"choices\":[{\"message\":{\"content\":\"half an ans\"},"
			   "\"finish_reason\":\"length\"}],\"usage\":{\"total_tokens\":5}}",
			   &r, &err), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_FINISH);
	cr_expect_not(err.retryable);
	cr_expect_str_eq(err.msg, "finish_reason is 'length', not 'stop' (the answer "
			 "was cut at max_tokens)");
	cr_expect_str_eq(r.content, "half an ans", "content is kept");
	cr_expect(json_is_object(r.usage), "usage is kept");
	llm_response_release(&r);

	cr_assert_eq(parse("{\"choices\":[{\"message\":{\"content\":null},"
			   "\"finish_reason\":\"content_filter\"}]}", &r, &err), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_FINISH);
	cr_expect_str_eq(err.msg, "finish_reason is 'content_filter', not 'stop'");
	cr_expect_null(r.content);
	llm_response_release(&r);
}

Test(llm_response, null_content)
{
	llm_response r;
	core_err err = { 0 };

	cr_assert_eq(parse("{\"choices\":[{\"message\":{\"content\":null},"
			   "\"finish_reason\":\"stop\"}]}", &r, &err), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_NULL_CONTENT);
	cr_expect_str_eq(err.msg, "choices[0].message.content is null");
	llm_response_release(&r);
	cr_assert_eq(parse("{\"choices\":[{\"message\":{\"content\":null,\"refusal\":"
			   "\"I can't help with that.\"}}]}", &r, &err), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_NULL_CONTENT);
	cr_expect_str_eq(err.msg, "choices[0].message.content is null (refusal: I "
			 "can't help with that.)");
	llm_response_release(&r);
}

Test(llm_response, error_bodies)
{
	llm_response r;
	core_err err = { 0 };

	cr_assert_eq(parse("{\"error\":{\"message\":\"Rate limit reached\",\"type\":"
			   "\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}",
			   &r, &err), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_API_ERROR);
	cr_expect_str_eq(err.msg, "API error: Rate limit reached (type requests, "
			 "code rate_limit_exceeded)");
	cr_expect_str_eq(r.error_message, "Rate limit reached");
	cr_expect_str_eq(r.error_type, "requests");
	cr_expect_str_eq(r.error_code, "rate_limit_exceeded");
	llm_response_release(&r);

	cr_assert_eq(parse("{\"error\":{\"code\":429,\"message\":\"Provider busy\"},"
			   "\"choices\":[{\"message\":{\"content\":\"x\"}}]}", &r, &err),
		     CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_API_ERROR, "an error wins over choices");
	cr_expect_str_eq(err.msg, "API error: Provider busy (code 429)");
	cr_expect_str_eq(r.error_code, "429");
	llm_response_release(&r);

	cr_assert_eq(parse("{\"error\":\"model not found\"}", &r, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "API error: model not found");
	llm_response_release(&r);

	cr_assert_eq(parse("{\"error\":{\"type\":\"server_error\"}}", &r, &err), CORE_EDATA);
	cr_expect_str_eq(err.msg, "API error: (no message) (type server_error)");
	cr_expect_not(err.retryable, "the caller classifies API errors by status");
	llm_response_release(&r);
}

Test(llm_response, huge_and_odd_content)
{
	size_t n = 4u << 20;
	core_buf b = { 0 };
	llm_response r;
	core_err err = { 0 };

	cr_assert(!core_buf_puts(&b, "{\"choices\":[{\"message\":{\"content\":\""));
	cr_assert(!core_buf_reserve(&b, n));
	memset(b.data + b.len, 'z', n);
	b.len += n;
	cr_assert(!core_buf_puts(&b, "\\u0000\\ud83d\\ude00\"},\"finish_reason\":\"stop\"}]}"));
	cr_assert_eq(llm_response_parse(b.data, b.len, &r, &err), 0, "%s", err.msg);
	cr_expect_eq(r.content_len, n + 1 + 4, "NUL and U+1F600 kept");
	cr_expect_eq(r.content[n], '\0');
	cr_expect_eq(memcmp(r.content + n + 1, "\xf0\x9f\x98\x80", 4), 0);
	llm_response_release(&r);
	/* Truncated at any point: always malformed, never a crash. */
	for (size_t cut = b.len - 40; cut < b.len; cut += 3) {
		cr_assert_eq(llm_response_parse(b.data, cut, &r, &err), CORE_EDATA);
		cr_expect_eq(r.kind, LLM_RESP_MALFORMED);
		llm_response_release(&r);
	}
	core_buf_release(&b);
	cr_expect_eq(llm_response_parse(NULL, 0, &r, NULL), CORE_EDATA);
	cr_expect_eq(r.kind, LLM_RESP_MALFORMED);
	llm_response_release(&r);
}

/* ------------------------------------------------------------ answers */

/* Applies an answer for query "q" with one field of the given type to a
 * fresh row; returns the row (compact JSON, malloc'd) or NULL on error. */
static char *apply1(const char *answer, llm_type type, core_err *err)
{
	const llm_field f[] = { { "v", type, labels, 3 } };
	json_t *row = js("{\"id\":1}");
	char *out = NULL;

	int rc = llm_answer_apply("q", answer, strlen(answer), f, 1, row, err);

	out = json_dumps(row, JSON_COMPACT);
	if (rc) {
		cr_expect_str_eq(out, "{\"id\":1}", "the row is unchanged on error");
		free(out);
		out = NULL;
	}
	json_decref(row);
	return out;
}

static void expect_value(const char *answer, llm_type type, const char *want)
{
	core_err err = { 0 };
	char *got = apply1(answer, type, &err), row[256];

	cr_assert_not_null(got, "%s: %s", answer, err.msg);
	snprintf(row, sizeof(row), "{\"id\":1,\"q_v\":%s}", want);
	cr_expect_str_eq(got, row, "answer %s", answer);
	free(got);
}

static void expect_answer_err(const char *answer, llm_type type, const char *want)
{
	core_err err = { 0 };
	char *got = apply1(answer, type, &err);

	cr_expect_null(got, "answer %s should fail", answer);
	cr_expect_eq(err.code, CORE_EDATA);
	cr_expect(strstr(err.msg, want), "answer %s: got '%s', want '%s'", answer,
		  err.msg, want);
	free(got);
}

Test(llm_answer, all_types_into_prefixed_columns)
{
	const char *answer = "{\"label\":\"negative\",\"score\":2,\"confidence\":0.75,"
			     "\"urgent\":true,\"reason\":\"Late delivery \xe2\x80\x94 "
			     "\xe4\xb8\x96\",\"extra\":[1]}";
	json_t *row = js("{\"id\":7,\"sentiment_score\":\"old\"}");
	core_err err = { 0 };
	char *got;

	cr_assert_eq(llm_answer_apply("sentiment", answer, strlen(answer),
				      sentiment_fields, NSENT, row, &err), 0, "%s",
		     err.msg);
	got = json_dumps(row, JSON_COMPACT);
	cr_expect_str_eq(got, "{\"id\":7,\"sentiment_score\":2,\"sentiment_label\":"
			 "\"negative\",\"sentiment_confidence\":0.75,\"sentiment_urgent\":"
			 "true,\"sentiment_reason\":\"Late delivery \xe2\x80\x94 "
			 "\xe4\xb8\x96\"}");
	free(got);
	json_decref(row);
}

Test(llm_answer, whitespace_and_fences)
{
	expect_value("  \n{\"v\": \"a\"}\n\t ", LLM_T_STRING, "\"a\"");
	expect_value("```json\n{\"v\": \"a\"}\n```", LLM_T_STRING, "\"a\"");
	expect_value("\n```JSON\r\n{\"v\": \"a\"}\r\n```\n", LLM_T_STRING, "\"a\"");
	expect_value("```\n{\"v\": \"a\"}\n```", LLM_T_STRING, "\"a\"");
	expect_value("```json {\"v\": \"a\"} ```", LLM_T_STRING, "\"a\"");
	expect_value("{\"v\": \"```\"}", LLM_T_STRING, "\"```\"");
	expect_answer_err("```json\n{\"v\": \"a\"}\n", LLM_T_STRING,
			  "query 'q': the answer opens a ``` fence but does not close it");
	expect_answer_err("```", LLM_T_STRING, "does not close it");
	expect_answer_err("```python\n{\"v\": 1}\n```", LLM_T_STRING,
			  "query 'q': the answer is not JSON at byte 9: invalid token near 'python'");
	expect_answer_err("Here you go: {\"v\": \"a\"}", LLM_T_STRING,
			  "query 'q': the answer is not JSON at byte 4: invalid token near 'Here'");
}

Test(llm_answer, not_an_object)
{
	expect_answer_err("", LLM_T_STRING, "query 'q': the answer is not JSON at byte 0");
	expect_answer_err("{\"v\": \"a\"", LLM_T_STRING, "the answer is not JSON at byte 9");
	expect_answer_err("[{\"v\": 1}]", LLM_T_STRING, "the answer is an array, not a JSON object");
	expect_answer_err("\"positive\"", LLM_T_STRING, "the answer is a string, not a JSON object");
	expect_answer_err("{\"v\": 1, \"v\": 2}", LLM_T_NUMBER, "duplicate object key");
	expect_answer_err("{\"w\": 1}", LLM_T_NUMBER, "query 'q' field 'v' is missing from the answer");
	expect_answer_err("{\"V\": 1}", LLM_T_NUMBER, "field 'v' is missing");
}

Test(llm_answer, string_type)
{
	expect_value("{\"v\": \"\"}", LLM_T_STRING, "\"\"");
	expect_value("{\"v\": \"h\\u00e9\"}", LLM_T_STRING, "\"h\xc3\xa9\"");
	expect_answer_err("{\"v\": 5}", LLM_T_STRING, "query 'q' field 'v': expected string, got 5");
	expect_answer_err("{\"v\": null}", LLM_T_STRING, "expected string, got null");
	expect_answer_err("{\"v\": {\"a\": 1}}", LLM_T_STRING, "expected string, got an object");
	expect_answer_err("{\"v\": [\"a\"]}", LLM_T_STRING, "expected string, got an array");
}

Test(llm_answer, integer_type)
{
	expect_value("{\"v\": 3}", LLM_T_INTEGER, "3");
	expect_value("{\"v\": -3}", LLM_T_INTEGER, "-3");
	expect_value("{\"v\": 3.0}", LLM_T_INTEGER, "3");
	expect_value("{\"v\": 1e3}", LLM_T_INTEGER, "1000");
	expect_value("{\"v\": -0.0}", LLM_T_INTEGER, "0");
	expect_value("{\"v\": 9007199254740992}", LLM_T_INTEGER, "9007199254740992");
	expect_value("{\"v\": -9007199254740992}", LLM_T_INTEGER, "-9007199254740992");
	expect_answer_err("{\"v\": 9007199254740993}", LLM_T_INTEGER,
			  "query 'q' field 'v': expected integer, got 9007199254740993 (outside +-2^53)");
	expect_answer_err("{\"v\": 1e300}", LLM_T_INTEGER, "got 1e+300 (outside +-2^53)");
	expect_answer_err("{\"v\": 99999999999999999999}", LLM_T_INTEGER,
			  "expected integer, got 100000000000000000000.0 (outside +-2^53)");
	expect_answer_err("{\"v\": 1.5}", LLM_T_INTEGER, "expected integer, got 1.5");
	expect_answer_err("{\"v\": \"high\"}", LLM_T_INTEGER, "expected integer, got \"high\"");
	expect_answer_err("{\"v\": \"5\"}", LLM_T_INTEGER, "expected integer, got \"5\"");
	expect_answer_err("{\"v\": true}", LLM_T_INTEGER, "expected integer, got true");
	expect_answer_err("{\"v\": null}", LLM_T_INTEGER, "expected integer, got null");
}

Test(llm_answer, huge_unrelated_integer_does_not_spoil_the_answer)
{
	expect_value("{\"big\": 123456789012345678901234567890, \"v\": 42}",
		     LLM_T_INTEGER, "42");
	expect_value("{\"big\": 123456789012345678901234567890, \"v\": 42}",
		     LLM_T_NUMBER, "42");
	expect_value("{\"big\": 123456789012345678901234567890, \"v\": 0.5}",
		     LLM_T_NUMBER, "0.5");
}

Test(llm_answer, number_type)
{
	expect_value("{\"v\": 1}", LLM_T_NUMBER, "1");
	expect_value("{\"v\": 0.25}", LLM_T_NUMBER, "0.25");
	expect_value("{\"v\": -1e-3}", LLM_T_NUMBER, "-0.001");
	expect_value("{\"v\": 2.0}", LLM_T_NUMBER, "2.0");
	expect_value("{\"v\": 9223372036854775807}", LLM_T_NUMBER, "9.2233720368547758e18");
	expect_value("{\"v\": 123456789012345678901234567890}", LLM_T_NUMBER,
		     "1.2345678901234568e29");
	expect_answer_err("{\"v\": true}", LLM_T_NUMBER, "expected number, got true");
	expect_answer_err("{\"v\": \"0.5\"}", LLM_T_NUMBER, "expected number, got \"0.5\"");
	expect_answer_err("{\"v\": NaN}", LLM_T_NUMBER, "not JSON");
}

Test(llm_answer, boolean_type)
{
	expect_value("{\"v\": true}", LLM_T_BOOLEAN, "true");
	expect_value("{\"v\": false}", LLM_T_BOOLEAN, "false");
	expect_answer_err("{\"v\": 1}", LLM_T_BOOLEAN, "expected boolean, got 1");
	expect_answer_err("{\"v\": \"true\"}", LLM_T_BOOLEAN, "expected boolean, got \"true\"");
	expect_answer_err("{\"v\": null}", LLM_T_BOOLEAN, "expected boolean, got null");
}

Test(llm_answer, enum_type)
{
	expect_value("{\"v\": \"neutral\"}", LLM_T_ENUM, "\"neutral\"");
	expect_answer_err("{\"v\": \"Neutral\"}", LLM_T_ENUM,
			  "query 'q' field 'v': expected one of \"positive\", "
			  "\"negative\", \"neutral\", got \"Neutral\"");
	expect_answer_err("{\"v\": \"neutral \"}", LLM_T_ENUM, "got \"neutral \"");
	expect_answer_err("{\"v\": 1}", LLM_T_ENUM, "expected one of \"positive\", "
			  "\"negative\", \"neutral\", got 1");
	expect_answer_err("{\"v\": \"neutral\\u0000x\"}", LLM_T_ENUM, "not JSON");
}

Test(llm_answer, long_values_are_cut_in_messages)
{
	char answer[512];
	core_err err = { 0 };
	char *got;

	strcpy(answer, "{\"v\": \"");
	for (int i = 0; i < 100; i++)
		strcat(answer, "\xc3\xa9");
	strcat(answer, "\"}");
	got = apply1(answer, LLM_T_INTEGER, &err);
	cr_assert_null(got);
	cr_expect(strstr(err.msg, "...") && strlen(err.msg) < 160, "%s", err.msg);
}

Test(llm_answer, config_errors)
{
	const llm_field f[] = { { "v", LLM_T_STRING, NULL, 0 } };
	json_t *row = json_object(), *arr = json_array();
	core_err err = { 0 };

	cr_expect_eq(llm_answer_apply("", "{}", 2, f, 1, row, &err), CORE_ECONFIG);
	cr_expect_eq(llm_answer_apply(NULL, "{}", 2, f, 1, row, &err), CORE_ECONFIG);
	cr_expect_eq(llm_answer_apply("q", "{}", 2, f, 0, row, &err), CORE_ECONFIG);
	cr_expect_eq(llm_answer_apply("q", "{\"v\":\"x\"}", 9, f, 1, arr, &err),
		     CORE_EINTERNAL);
	cr_expect_eq(llm_answer_apply("q", NULL, 5, f, 1, row, &err), CORE_EDATA);
	cr_expect(strstr(err.msg, "not JSON"), "%s", err.msg);
	cr_expect_eq(json_object_size(row), 0);
	json_decref(row);
	json_decref(arr);
}

Test(llm_answer, content_is_length_bounded)
{
	const llm_field f[] = { { "v", LLM_T_INTEGER, NULL, 0 } };
	const char text[] = "{\"v\": 12}garbage";
	json_t *row = json_object();
	core_err err = { 0 };

	cr_assert_eq(llm_answer_apply("q", text, 9, f, 1, row, &err), 0, "%s", err.msg);
	cr_expect_eq(json_integer_value(json_object_get(row, "q_v")), 12);
	json_decref(row);
}

/* ------------------------------------------------------- azure endpoint */

TestSuite(llm_client, .timeout = 10);

/* The client opened from YAML options; its URL in *url (caller frees). */
static int azure_url(const char *yaml, char **url, core_err *err)
{
	core_doc *doc = NULL;
	llm_client c = { 0 };
	int rc;

	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &doc, err), 0,
		     "%s", err->msg);
	rc = llm_client_open(&c, NULL, core_doc_root(doc), err);
	*url = !rc && c.url ? strdup(c.url) : NULL;
	llm_client_release(&c);
	core_doc_free(doc);
	return rc;
}

/* ELSPETH 0.4.1 defaults api_version to "2024-10-21"
 * (plugins/transforms/llm/providers/azure.py, AzureOpenAIConfig). */
Test(llm_client, azure_api_version_defaults_to_elspeths)
{
	core_err err = { 0 };
	char *url = NULL;

	cr_assert_str_eq(LLM_AZURE_API_VERSION, "2024-10-21");
	cr_assert_eq(azure_url("provider: azure\ndeployment_name: gpt4o\n"
			       "endpoint: https://x.openai.azure.com/\n", &url, &err),
		     0, "%s", err.msg);
	cr_expect_str_eq(url, "https://x.openai.azure.com/openai/deployments/gpt4o"
			 "/chat/completions?api-version=2024-10-21");
	free(url);
	cr_assert_eq(azure_url("provider: azure\ndeployment_name: gpt4o\n"
			       "endpoint: https://x.openai.azure.com\n"
			       "api_version: 2025-01-01-preview\n", &url, &err),
		     0, "%s", err.msg);
	cr_expect_str_eq(url, "https://x.openai.azure.com/openai/deployments/gpt4o"
			 "/chat/completions?api-version=2025-01-01-preview");
	free(url);
}

Test(llm_client, azure_still_needs_deployment_and_endpoint)
{
	core_err err = { 0 };
	char *url = NULL;

	cr_assert_eq(azure_url("provider: azure\nendpoint: https://x\n", &url, &err),
		     CORE_ECONFIG);
	cr_expect(strstr(err.msg, "deployment_name"), "%s", err.msg);
	cr_assert_eq(azure_url("provider: azure\ndeployment_name: d\n", &url, &err),
		     CORE_ECONFIG);
	cr_expect(strstr(err.msg, "endpoint"), "%s", err.msg);
	cr_assert_eq(azure_url("provider: openai\nmodel: m\napi_version: v\n", &url,
			       &err), CORE_ECONFIG);
	cr_expect(strstr(err.msg, "'api_version' is for provider azure"), "%s",
		  err.msg);
}

/* pool_size as the run's environment leaves it: ELSPETH's
 * concurrency.max_workers caps it, then a shard takes its share. */
static unsigned pool_in(const plg_env *env, const char *yaml)
{
	core_doc *doc = NULL;
	core_err err = { 0 };
	llm_client c = { 0 };
	unsigned pool;

	cr_assert_eq(core_doc_parse("t.yaml", yaml, strlen(yaml), &doc, &err), 0,
		     "%s", err.msg);
	cr_assert_eq(llm_client_open(&c, env, core_doc_root(doc), &err), 0, "%s", err.msg);
	pool = c.cfg.pool_size;
	llm_client_release(&c);
	core_doc_free(doc);
	return pool;
}

Test(llm_client, max_workers_caps_the_pool_and_a_shard_takes_its_share)
{
	static const char yaml[] = "model: m\nbase_url: http://127.0.0.1:9/v1\n"
				   "api_key: k\npool_size: 32\n";
	plg_env env;

	plg_env_init(&env, NULL);
	cr_assert_eq(pool_in(&env, yaml), 32);
	env.max_workers = 4; /* ELSPETH's default when its block is given */
	cr_assert_eq(pool_in(&env, yaml), 4);
	env.max_workers = 64;
	cr_assert_eq(pool_in(&env, yaml), 32, "a cap above pool_size changes nothing");
	env.max_workers = 5;
	plg_env_set_capacity_share(&env, 0.5);
	cr_assert_eq(pool_in(&env, yaml), 3, "ceil(5 x 0.5)");
	plg_env_release(&env);
}

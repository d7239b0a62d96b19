/* test_cli_explain.c — `elspeth explain` for people (cli/explain_text.c)
 * from an explain document: a call's throttle wait names what drove it
 * when the trail recorded that ("throttle_reason"), and reads as before
 * when it did not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cli/cli.h"

#define TIMEOUT 30

TestSuite(cli_explain, .timeout = TIMEOUT);

/* One row, one token, one transform state with `call` (a JSON object
 * text): explain's document, as text. */
static char *explained(const char *call)
{
	char doc_text[2048];
	json_error_t je;
	json_t *doc;
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	snprintf(doc_text, sizeof(doc_text),
		 "{\"run\": {\"run_id\": 1, \"status\": \"completed\"},"
		 " \"row\": {\"seq\": 1, \"source_hash\": \"ab\"},"
		 " \"tokens\": [{\"token_id\": 1, \"states\": [{\"step\": 1,"
		 "   \"kind\": \"transform\", \"node\": \"t\", \"plugin\": \"llm\","
		 "   \"status\": \"completed\", \"duration_ms\": 1.0,"
		 "   \"calls\": [%s]}], \"outcome\": null}]}", call);
	doc = json_loads(doc_text, 0, &je);
	cr_assert_not_null(doc, "%s", je.text);
	cr_assert_not_null(f = open_memstream(&out, &len));
	cr_assert_eq(cli_explain_text(f, doc, NULL), 0);
	fclose(f);
	json_decref(doc);
	return out;
}

#define CALL(extra) \
	"{\"call_index\": 0, \"call_type\": \"llm\", \"name\": \"\"," \
	" \"status\": \"success\", \"http_status\": 200, \"latency_ms\": 10.0," \
	" \"throttle_delay_ms\": 120.0, \"submit_order\": 1," \
	" \"complete_order\": 1, \"error_class\": \"\", \"error\": \"\"" extra "}"

Test(cli_explain, a_call_names_what_drove_its_throttle_wait)
{
	char *out = explained(CALL(", \"throttle_reason\": \"pace\""));

	cr_assert(strstr(out, "call 0: llm success HTTP 200 in 10.0 ms "
			 "(throttle 120.0 ms (pace), sent #1, done #1)\n"), "%s", out);
	free(out);
}

Test(cli_explain, a_call_recorded_without_a_reason_reads_as_before)
{
	char *out = explained(CALL(""));

	cr_assert(strstr(out, "call 0: llm success HTTP 200 in 10.0 ms "
			 "(throttle 120.0 ms, sent #1, done #1)\n"), "%s", out);
	free(out);
}

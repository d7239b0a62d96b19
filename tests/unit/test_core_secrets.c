/* Tests of secret detection and fingerprinting (core/secrets.c). */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

Test(secrets, names)
{
	const char *yes[] = { "api_key", "API_KEY", "password", "token", "secret",
			      "authorization", "connection_string", "credential",
			      "openai_key", "db_password", "refresh_token", "client_secret" };
	const char *no[] = { "path", "keyboard", "tokens_used", "model", "_key",
			     "secretary", "monkey" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++)
		cr_assert(core_is_secret_name(yes[i]), "%s should be secret", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		cr_assert_not(core_is_secret_name(no[i]), "%s should not be secret", no[i]);
}

Test(secrets, fingerprint_is_hmac_sha256)
{
	char fp[128];

	/* RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?" */
	setenv("ELSPETH_FINGERPRINT_KEY", "Jefe", 1);
	cr_assert_eq(core_fingerprint("what do ya want for nothing?", fp, sizeof(fp)), 0);
	cr_assert_str_eq(fp, "hmac-sha256:5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

Test(secrets, unset_key_redacts)
{
	char fp[128];

	unsetenv("ELSPETH_FINGERPRINT_KEY");
	cr_assert_eq(core_fingerprint("sk-live-123", fp, sizeof(fp)), 0);
	cr_assert_str_eq(fp, CORE_REDACTED);
}

Test(secrets, redact_nested_settings)
{
	json_t *j = json_loads("{\"transforms\":[{\"options\":{\"api_key\":\"sk-live-123\","
			       "\"model\":\"m\",\"auth\":{\"password\":\"hunter2\"}}}]}", 0, NULL);
	char *s;

	setenv("ELSPETH_FINGERPRINT_KEY", "k", 1);
	cr_assert_not_null(j);
	cr_assert_eq(core_redact_secrets(j), 0);
	s = json_dumps(j, JSON_COMPACT);
	cr_assert_null(strstr(s, "sk-live-123"));
	cr_assert_null(strstr(s, "hunter2"));
	cr_assert_not_null(strstr(s, "\"model\":\"m\""));
	cr_assert_not_null(strstr(s, "hmac-sha256:"));
	free(s);
	json_decref(j);
}

Test(secrets, settings_json_holds_no_secret)
{
	core_settings *st;
	core_err err;

	setenv("ELSPETH_T_SECRET", "sk-test-SECRET-42", 1);
	setenv("ELSPETH_FINGERPRINT_KEY", "k", 1);
	cr_assert_eq(core_settings_parse("s.yaml",
		"source: {plugin: csv, on_success: out, options: {path: x.csv, on_validation_failure: discard,"
		" api_key: \"${ELSPETH_T_SECRET}\"}}\nsinks: {out: {plugin: csv}}\n", &st, &err), 0, "%s", err.msg);
	cr_assert_null(strstr(st->settings_json, "sk-test-SECRET-42"));
	cr_assert_not_null(strstr(st->settings_json, "hmac-sha256:"));
	core_settings_free(st);
}

Test(secrets, url_sanitize_takes_out_both_spellings_of_a_password)
{
	static const char *const cases[][2] = {
		{ "postgresql://ann:p%40ss@db/x?sslmode=require", "postgresql://ann@db/x?sslmode=require" },
		{ "postgresql://ann@db/x?sslmode=require&password=pw&application_name=a",
		  "postgresql://ann@db/x?sslmode=require&application_name=a" },
		{ "postgresql://ann@db/x?password=pw&sslmode=require", "postgresql://ann@db/x?sslmode=require" },
		{ "postgresql://ann@db/x?password=pw", "postgresql://ann@db/x" },
		{ "postgresql://ann:a@db/x?PASSWORD=b", "postgresql://ann@db/x" },
		{ "postgresql://ann@db/x?passwords=kept", "postgresql://ann@db/x?passwords=kept" },
		{ "sqlite:///runs/audit.db", "sqlite:///runs/audit.db" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = core_url_sanitize(cases[i][0]);

		cr_assert_str_eq(got, cases[i][1], "%s", cases[i][0]);
		free(got);
	}
}

Test(secrets, a_password_query_parameter_is_taken_out_of_the_record)
{
	json_t *j = json_loads("{\"landscape\":{\"url\":"
			       "\"postgresql://ann@db/x?password=hunter2&sslmode=require\"}}", 0, NULL);
	json_t *l;
	char fp[128];

	setenv("ELSPETH_FINGERPRINT_KEY", "k", 1);
	cr_assert_eq(core_redact_secrets(j), 0);
	l = json_object_get(j, "landscape");
	cr_assert_str_eq(json_string_value(json_object_get(l, "url")),
			 "postgresql://ann@db/x?sslmode=require");
	core_fingerprint("hunter2", fp, sizeof(fp));
	cr_assert_str_eq(json_string_value(json_object_get(l, "url_password_fingerprint")), fp);
	json_decref(j);
}

Test(secrets, url_passwords_are_taken_out)
{
	json_t *j = json_loads("{\"sinks\":{\"db\":{\"options\":{\"url\":"
			       "\"postgresql://ann:p%40ss@db.example:5432/sales?sslmode=require\","
			       "\"table\":\"t\"}}},\"urls\":[\"http://u:hunter2@h/x\","
			       "\"sqlite:///a:b@c.db\"],\"base_url\":\"http://h:80/v1\"}", 0, NULL);
	json_t *o;
	char fp[128];

	setenv("ELSPETH_FINGERPRINT_KEY", "k", 1);
	cr_assert_not_null(j);
	cr_assert_eq(core_redact_secrets(j), 0);
	o = json_object_get(json_object_get(json_object_get(j, "sinks"), "db"), "options");
	cr_assert_str_eq(json_string_value(json_object_get(o, "url")),
			 "postgresql://ann@db.example:5432/sales?sslmode=require");
	/* the fingerprint is of the password, not of its %-escaped form */
	core_fingerprint("p@ss", fp, sizeof(fp));
	cr_assert_str_eq(json_string_value(json_object_get(o, "url_password_fingerprint")), fp);
	cr_assert_str_eq(json_string_value(json_object_get(o, "table")), "t");
	core_fingerprint("hunter2", fp, sizeof(fp));
	cr_assert_not_null(strstr(json_string_value(json_array_get(json_object_get(j, "urls"), 0)), fp));
	cr_assert_null(strstr(json_string_value(json_array_get(json_object_get(j, "urls"), 0)), "hunter2"));
	/* no user info: a path with ':' and '@' after the host stays */
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "urls"), 1)),
			 "sqlite:///a:b@c.db");
	cr_assert_str_eq(json_string_value(json_object_get(j, "base_url")), "http://h:80/v1");
	json_decref(j);
}

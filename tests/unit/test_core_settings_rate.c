/* The rate_limit section: ELSPETH's keys, our tokens, clear refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "core/core.h"

static const char *base =
	"source:\n"
	"  plugin: csv\n"
	"  on_success: out\n"
	"  options: {path: in.csv, on_validation_failure: discard}\n"
	"sinks:\n"
	"  out: {plugin: csv, options: {path: out.csv}}\n";

static int load(const char *extra, core_settings **s, core_err *err)
{
	char text[2048];

	snprintf(text, sizeof(text), "%s%s", base, extra);
	memset(err, 0, sizeof(*err));
	return core_settings_parse("p.yaml", text, s, err);
}

Test(settings_rate, absent_means_nothing_configured)
{
	core_rate_service d;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("", &s, &err), 0, "%s", err.msg);
	cr_assert_not(s->rate_limit.enabled);
	cr_assert_null(core_rate_limit_find(&s->rate_limit, "openrouter", &d));
	core_settings_free(s);
}

Test(settings_rate, elspeth_section_with_services_and_tokens)
{
	core_rate_service d;
	const core_rate_service *r;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("rate_limit:\n"
			  "  enabled: true\n"
			  "  default_requests_per_minute: 30\n"
			  "  services:\n"
			  "    openrouter: {requests_per_minute: 100, tokens_per_minute: 200000}\n"
			  "    azure_openai: {tokens_per_minute: 5000}\n", &s, &err), 0, "%s", err.msg);
	cr_assert(s->rate_limit.enabled);
	r = core_rate_limit_find(&s->rate_limit, "openrouter", &d);
	cr_assert_not_null(r);
	cr_assert_eq(r->requests_per_minute, 100);
	cr_assert_eq(r->tokens_per_minute, 200000);
	r = core_rate_limit_find(&s->rate_limit, "azure_openai", &d);
	cr_assert_eq(r->requests_per_minute, 30); /* the default */
	cr_assert_eq(r->tokens_per_minute, 5000);
	r = core_rate_limit_find(&s->rate_limit, "openai", &d);
	cr_assert_eq(r, &d);
	cr_assert_eq(r->requests_per_minute, 30);
	cr_assert_eq(r->tokens_per_minute, 0);
	cr_assert_str_eq(r->name, "openai");
	core_settings_free(s);
}

Test(settings_rate, elspeth_default_is_60_per_minute)
{
	core_rate_service d;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("rate_limit: {enabled: true}\n", &s, &err), 0, "%s", err.msg);
	cr_assert_eq(core_rate_limit_find(&s->rate_limit, "openrouter", &d)->requests_per_minute, 60);
	core_settings_free(s);
}

Test(settings_rate, disabled_section_configures_nothing)
{
	core_rate_service d;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("rate_limit: {enabled: false, default_requests_per_minute: 5}\n",
			  &s, &err), 0, "%s", err.msg);
	cr_assert_null(core_rate_limit_find(&s->rate_limit, "openrouter", &d));
	core_settings_free(s);
}

static void refused(const char *extra, int code, const char *needle)
{
	core_settings *s = NULL;
	core_err err;
	int rc = load(extra, &s, &err);

	cr_assert_eq(rc, code, "rc %d: %s", rc, err.msg);
	cr_assert_null(s);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

Test(settings_rate, errors_name_the_place)
{
	refused("rate_limit: {enabled: true, persistence_path: ./rl.db}\n",
		CORE_EUNSUPPORTED, "p.yaml:7:");
	refused("rate_limit: {enabled: true, persistence_path: ./rl.db}\n",
		CORE_EUNSUPPORTED, "persistence_path");
	refused("rate_limit: {burst: 3}\n", CORE_ECONFIG, "burst");
	refused("rate_limit:\n  services:\n    openrouter: {rpm: 3}\n", CORE_ECONFIG, "rpm");
	refused("rate_limit:\n  services:\n    openrouter: 100\n", CORE_ECONFIG,
		"requests_per_minute");
	refused("rate_limit: {default_requests_per_minute: -1}\n", CORE_ECONFIG,
		"default_requests_per_minute");
}

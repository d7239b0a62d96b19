/* The rate_limit section: ELSPETH's keys, our tokens, clear refusals
 * (core/settings_rate.c). The LLM transforms apply the budgets
 * (plugins/llm/client.c; tests/integration/test_capacity.sh). */
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

static void refused(const char *extra, int code, const char *needle)
{
	core_settings *s = NULL;
	core_err err;
	int rc = load(extra, &s, &err);

	cr_assert_eq(rc, code, "rc %d: %s", rc, err.msg);
	cr_assert_null(s);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

Test(settings_rate, absent_or_disabled_means_nothing_configured)
{
	core_rate_service d;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("", &s, &err), 0, "%s", err.msg);
	cr_assert_not(s->rate_limit.enabled);
	cr_assert_null(core_rate_limit_find(&s->rate_limit, "openrouter", &d));
	core_settings_free(s);
	cr_assert_eq(load("rate_limit: {enabled: false, default_requests_per_minute: 5,\n"
			  "  services: {openrouter: {requests_per_minute: 9}}}\n", &s, &err),
		     0, "%s", err.msg);
	cr_assert_not(s->rate_limit.enabled);
	cr_assert_null(core_rate_limit_find(&s->rate_limit, "openrouter", &d));
	core_settings_free(s);
}

Test(settings_rate, an_enabled_section_gives_its_budgets)
{
	const core_rate_service *f;
	core_rate_service d;
	core_settings *s;
	core_err err;

	cr_assert_eq(load("rate_limit:\n  enabled: true\n  default_requests_per_minute: 30\n"
			  "  services:\n    azure_openai: {requests_per_minute: 600,"
			  " tokens_per_minute: 90000}\n", &s, &err), 0, "%s", err.msg);
	cr_assert(s->rate_limit.enabled);
	f = core_rate_limit_find(&s->rate_limit, "azure_openai", &d);
	cr_assert(f && f->requests_per_minute == 600 && f->tokens_per_minute == 90000);
	f = core_rate_limit_find(&s->rate_limit, "openrouter", &d);
	cr_assert(f && f->requests_per_minute == 30 && f->tokens_per_minute == 0);
	core_settings_free(s);
	/* enabled by default when the section is there; ELSPETH's 60 rpm */
	cr_assert_eq(load("rate_limit: {services: {}}\n", &s, &err), 0, "%s", err.msg);
	f = core_rate_limit_find(&s->rate_limit, "openai", &d);
	cr_assert(f && f->requests_per_minute == 60);
	core_settings_free(s);
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

Test(settings_rate, find_gives_the_entry_or_the_defaults)
{
	core_rate_service svc[] = {
		{ .name = "openrouter", .requests_per_minute = 100, .tokens_per_minute = 2e5 },
	};
	core_rate_limit_cfg r = { .enabled = true, .default_requests_per_minute = 60,
				  .nservices = 1, .services = svc };
	const core_rate_service *f;
	core_rate_service d;

	f = core_rate_limit_find(&r, "openrouter", &d);
	cr_assert_eq(f, &svc[0]);
	f = core_rate_limit_find(&r, "azure_openai", &d);
	cr_assert_eq(f, &d);
	cr_assert_str_eq(f->name, "azure_openai");
	cr_assert_eq(f->requests_per_minute, 60);
	cr_assert_eq(f->tokens_per_minute, 0);
	r.enabled = false;
	cr_assert_null(core_rate_limit_find(&r, "openrouter", &d));
}

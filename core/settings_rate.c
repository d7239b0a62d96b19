/*
 * settings_rate.c — the `rate_limit` section (ELSPETH 0.4's, plus tokens):
 *
 *   rate_limit:
 *     enabled: true                      # default true when the section is there
 *     default_requests_per_minute: 60    # services without an entry (ELSPETH: 60)
 *     default_tokens_per_minute: 90000   # ours; none when absent
 *     services:
 *       openrouter: {requests_per_minute: 100, tokens_per_minute: 200000}
 *
 * A service is what ELSPETH calls it: `openrouter` and `azure_openai` for
 * the LLM transforms (and `openai` for provider: openai). Without the
 * section nothing is configured and the capacity controller learns the
 * limits from the provider's answers. `persistence_path` (ELSPETH shares
 * limits between processes through SQLite) is refused: our limits live in
 * one process.
 *
 * Every key is checked (unknown keys, types, ranges). An enabled section's
 * budgets reach the HTTP executor (docs/architecture.md §10): the LLM
 * client looks its service up with core_rate_limit_find() and turns the
 * per-minute figures into its upstream gate's ceilings (requests and
 * tokens per second, plugins/llm/client.c). `enabled: false` is accepted
 * and asks for nothing: core_rate_limit_find() then finds no service.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

static const key_spec rate_keys[] = {
	{ "enabled", K_BOOL, false },
	{ "default_requests_per_minute", K_NUM, false, 0, 1e9 },
	{ "default_tokens_per_minute", K_NUM, false, 0, 1e12 },
	{ "persistence_path", K_ANY, false },
	{ "services", K_MAP, false },
	{ NULL }
};

static const key_spec service_keys[] = {
	{ "requests_per_minute", K_NUM, false, 0, 1e9 },
	{ "tokens_per_minute", K_NUM, false, 0, 1e12 },
	{ NULL }
};

static int load_services(core_rate_limit_cfg *r, const core_node *m, core_err *err)
{
	int rc;

	if (!m || core_node_is_null(m))
		return 0;
	r->services = calloc(m->len ? m->len : 1, sizeof(*r->services));
	if (!r->services)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < m->len; i++) {
		const core_node *n = m->items[i];
		core_rate_service *s = &r->services[i];

		if (n->kind != CORE_NODE_MAP)
			return core_err_at(err, CORE_ECONFIG, n,
				"expected a map such as {requests_per_minute: 100}");
		if ((rc = core__check_section(n, service_keys, err)))
			return rc;
		s->name = m->keys[i]->value;
		s->requests_per_minute = r->default_requests_per_minute;
		s->tokens_per_minute = r->default_tokens_per_minute;
		if ((rc = core_opt_double(n, "requests_per_minute", 0, 1e9,
					  &s->requests_per_minute, err)) ||
		    (rc = core_opt_double(n, "tokens_per_minute", 0, 1e12,
					  &s->tokens_per_minute, err)))
			return rc;
		r->nservices++;
	}
	return 0;
}

int core__load_rate_limit(core_settings *s, const core_node *n, core_err *err)
{
	core_rate_limit_cfg *r = &s->rate_limit;
	const core_node *p;
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core__check_section(n, rate_keys, err)))
		return rc;
	if ((p = core_map_get(n, "persistence_path")) && !core_node_is_null(p))
		return core_err_at(err, CORE_EUNSUPPORTED, p,
			"persistence_path (limits shared between processes through "
			"SQLite) is not supported: each elspeth process keeps its own "
			"limits; remove the key, and split the budget between processes "
			"that share an API key");
	r->enabled = true;
	r->default_requests_per_minute = 60; /* ELSPETH's default */
	if ((rc = core_opt_bool(n, "enabled", &r->enabled, err)) ||
	    (rc = core_opt_double(n, "default_requests_per_minute", 0, 1e9,
				  &r->default_requests_per_minute, err)) ||
	    (rc = core_opt_double(n, "default_tokens_per_minute", 0, 1e12,
				  &r->default_tokens_per_minute, err)))
		return rc;
	return load_services(r, core_map_get(n, "services"), err);
}

const core_rate_service *core_rate_limit_find(const core_rate_limit_cfg *r,
					      const char *service,
					      core_rate_service *dflt)
{
	if (!r->enabled)
		return NULL;
	for (size_t i = 0; i < r->nservices; i++)
		if (!strcmp(r->services[i].name, service))
			return &r->services[i];
	*dflt = (core_rate_service){ .name = service,
		.requests_per_minute = r->default_requests_per_minute,
		.tokens_per_minute = r->default_tokens_per_minute };
	return dflt;
}

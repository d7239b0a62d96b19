/*
 * settings_v07.c — where ELSPETH 0.7.1's settings format differs from
 * 0.4.1's (ADR 0044). A file with `sources:` is in 0.7.1's format; before
 * its sections are read as usual, this pass applies 0.7.1's meaning of
 * the keys the two formats disagree on: the llm transform's template is
 * `prompt_template`, the audit trail cannot be turned off, the default
 * database is ./data/audit.db, checkpoint.aggregation_boundaries and the
 * batch LLM aggregations are gone. What 0.7.1 adds elsewhere (queues,
 * union_collision_policy, collision_policy) is read where its section is.
 */
#include <string.h>

#include "core/core_internal.h"

/* The llm transform's template (0.7.1's LLMConfig.prompt_template) is
 * read under our name for it, `template`; 0.4.1's name is unknown. */
static int llm_template(core_settings *s, core_node *opts, core_err *err)
{
	const core_node *old = core_map_get(opts, "template");
	core_node *pt = (core_node *)core_map_get(opts, "prompt_template");

	if (old)
		return core_err_at(err, CORE_ECONFIG, old,
			"unknown key 'template': in ELSPETH 0.7.1's format (this file has "
			"'sources:') the llm transform's template is 'prompt_template'");
	if (!pt)
		return 0;
	core__doc_map_del(opts, "prompt_template");
	return core__doc_map_set(s->doc, opts, pt, "template", pt) ?
		core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}

static int transforms(core_settings *s, const core_node *list, core_err *err)
{
	int rc;

	for (size_t i = 0; list && list->kind == CORE_NODE_SEQ && i < list->len; i++) {
		const char *plugin = core__str_of(list->items[i], "plugin");
		core_node *opts = (core_node *)core_map_get(list->items[i], "options");

		if (!plugin || !opts || opts->kind != CORE_NODE_MAP || strcmp(plugin, "llm"))
			continue;
		if ((rc = llm_template(s, opts, err)))
			return rc;
	}
	return 0;
}

static int aggregations(const core_node *list, core_err *err)
{
	static const char *const removed[] = { "openrouter_batch_llm", "azure_batch_llm", NULL };

	for (size_t i = 0; list && list->kind == CORE_NODE_SEQ && i < list->len; i++) {
		const core_node *p = core_map_get(list->items[i], "plugin");

		for (size_t k = 0; p && p->value && removed[k]; k++)
			if (!strcmp(p->value, removed[k]))
				return core_err_at(err, CORE_ECONFIG, p,
					"aggregation plugin '%s' was removed in ELSPETH 0.7.1 (this "
					"file is in 0.7.1's format: it has 'sources:'); send the "
					"rows through the llm transform", p->value);
	}
	return 0;
}

static int landscape(const core_node *n, core_err *err)
{
	const core_node *en = core_map_get(n, "enabled");
	bool on = true;

	if (en && core_node_bool(en, &on, err))
		return err->code;
	if (!on)
		return core_err_at(err, CORE_ECONFIG, en,
			"landscape.enabled=false is not supported — the audit trail is "
			"mandatory (ELSPETH 0.7.1's rule; this file has 'sources:')");
	return 0;
}

/* 0.4.1's file sinks have no collision_policy: it is 0.7.1's. */
static int v04_sinks(const core_node *sinks, core_err *err)
{
	for (size_t i = 0; sinks && sinks->kind == CORE_NODE_MAP && i < sinks->len; i++) {
		const core_node *cp = core_map_get(core_map_get(sinks->items[i], "options"),
						   "collision_policy");

		if (cp)
			return core_err_at(err, CORE_ECONFIG, cp,
				"unknown key 'collision_policy': it is ELSPETH 0.7.1's (a file "
				"in its format has 'sources:'); 0.4.1's sinks replace the file");
	}
	return 0;
}

int core__v07_prepare(core_settings *s, const core_node *root, core_err *err)
{
	const core_node *ck = core_map_get(root, "checkpoint");
	const core_node *n;
	int rc;

	if (!core_map_get(root, "sources"))
		return v04_sinks(core_map_get(root, "sinks"), err);
	s->format = CORE_FORMAT_V07;
	/* 0.7.1's default database (its LandscapeSettings.url); a url in the
	 * file replaces it when the landscape section is read */
	s->landscape_url = "sqlite:///./data/audit.db";
	if ((rc = core_landscape_paths(s->landscape_url, s->landscape_lmdb,
				       sizeof(s->landscape_lmdb), s->landscape_sql,
				       sizeof(s->landscape_sql), err)))
		return rc;
	if ((n = core_map_get(ck, "aggregation_boundaries")))
		return core_err_at(err, CORE_ECONFIG, n,
			"unknown key 'aggregation_boundaries': removed in ELSPETH 0.7.1 "
			"(this file is in 0.7.1's format: it has 'sources:')");
	if ((rc = transforms(s, core_map_get(root, "transforms"), err)) ||
	    (rc = aggregations(core_map_get(root, "aggregations"), err)))
		return rc;
	n = core_map_get(root, "landscape");
	return n && n->kind == CORE_NODE_MAP ? landscape(n, err) : 0;
}

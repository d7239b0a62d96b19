/*
 * registry.c — the built-in plugins, found by name. The tables are static
 * and read-only: safe from any thread.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/plugins_internal.h"

static const plg_source_ops *const sources[] = {
	&plg__csv_source,
	&plg__json_source,
	&plg__text_source,
	&plg__aws_s3_source,
};

static const plg_transform_ops *const transforms[] = {
	&plg__passthrough,
	&plg__field_mapper,
	&plg__truncate,
	&plg__json_explode,
	&plg__delay,
	&plg__llm,
	&plg__llm_multi_query,
	&plg__web_scrape,
	&plg__keyword_filter,
	&plg__type_coerce,
	&plg__value_transform,
	&plg__line_explode,
	&plg__blob_csv_expand,
	&plg__blob_fetch,
};

static const plg_sink_ops *const sinks[] = {
	&plg__csv_sink,
	&plg__json_sink,
	&plg__database_sink,
	&plg__text_sink,
	&plg__aws_s3_sink,
};

static const plg_aggregation_ops *const aggregations[] = {
	&plg__batch_stats,
	&plg__batch_replicate,
	&plg__openrouter_batch_llm,
	&plg__report_assemble,
	&plg__batch_top_k,
	&plg__batch_threshold_summary,
	&plg__batch_data_quality_report,
	&plg__batch_classifier_metrics,
	&plg__batch_distribution_profile,
	&plg__batch_outlier_annotator,
	&plg__batch_effect_size,
	&plg__batch_experiment_compare,
	&plg__batch_drift_compare,
	&plg__batch_paired_preference,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

void plg_env_init(plg_env *env, const core_rate_limit_cfg *rate_limits)
{
	*env = (plg_env){ .rate_limits = rate_limits, .capacity_share = 1.0 };
}

void plg_env_set_run_key(plg_env *env, const char *key)
{
	snprintf(env->run_key, sizeof(env->run_key), "%s", key ? key : "");
}

const char *plg_env_run_key(const plg_env *env)
{
	return env && env->run_key[0] ? env->run_key : NULL;
}

void plg_env_set_capacity_share(plg_env *env, double share)
{
	env->capacity_share = share > 0 && share < 1 ? share : 1.0;
}

double plg_env_capacity_share(const plg_env *env)
{
	return env && env->capacity_share > 0 && env->capacity_share < 1 ?
		env->capacity_share : 1.0;
}

const core_rate_limit_cfg *plg_env_rate_limits(const plg_env *env)
{
	return env ? env->rate_limits : NULL;
}

const plg_source_ops *plg_find_source(const char *name)
{
	for (size_t i = 0; name && i < COUNT(sources); i++)
		if (!strcmp(sources[i]->name, name))
			return sources[i];
	return NULL;
}

const plg_transform_ops *plg_find_transform(const char *name)
{
	for (size_t i = 0; name && i < COUNT(transforms); i++)
		if (!strcmp(transforms[i]->name, name))
			return transforms[i];
	return NULL;
}

const plg_sink_ops *plg_find_sink(const char *name)
{
	for (size_t i = 0; name && i < COUNT(sinks); i++)
		if (!strcmp(sinks[i]->name, name))
			return sinks[i];
	return NULL;
}

const plg_aggregation_ops *plg_find_aggregation(const char *name)
{
	for (size_t i = 0; name && i < COUNT(aggregations); i++)
		if (!strcmp(aggregations[i]->name, name))
			return aggregations[i];
	return NULL;
}

const plg_option *const *plg_options_of(plg_kind kind, const char *name)
{
	const plg_source_ops *so;
	const plg_transform_ops *to;
	const plg_sink_ops *ko;
	const plg_aggregation_ops *ao;

	switch (kind) {
	case PLG_SOURCE: return (so = plg_find_source(name)) ? so->options : NULL;
	case PLG_TRANSFORM: return (to = plg_find_transform(name)) ? to->options : NULL;
	case PLG_SINK: return (ko = plg_find_sink(name)) ? ko->options : NULL;
	case PLG_AGGREGATION: return (ao = plg_find_aggregation(name)) ? ao->options : NULL;
	}
	return NULL;
}

bool plg_describe(plg_kind kind, size_t i, const char **name,
		  const char **description)
{
	const char *n = NULL, *d = NULL;

	switch (kind) {
	case PLG_SOURCE:
		if (i < COUNT(sources))
			n = sources[i]->name, d = sources[i]->description;
		break;
	case PLG_TRANSFORM:
		if (i < COUNT(transforms))
			n = transforms[i]->name, d = transforms[i]->description;
		break;
	case PLG_SINK:
		if (i < COUNT(sinks))
			n = sinks[i]->name, d = sinks[i]->description;
		break;
	case PLG_AGGREGATION:
		if (i < COUNT(aggregations))
			n = aggregations[i]->name, d = aggregations[i]->description;
		break;
	}
	if (!n)
		return false;
	if (name)
		*name = n;
	if (description)
		*description = d;
	return true;
}

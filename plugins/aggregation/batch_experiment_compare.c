/*
 * batch_experiment_compare.c — ELSPETH 0.7.1's "batch_experiment_compare"
 * aggregation: each variant's mean score against a baseline's over a
 * batch, with a two-sample standard error and a 95% interval (ADR 0045).
 *
 * Groups and checks as variants.h says (the baseline is looked for before
 * the variants are counted, as 0.7.1 does). One row per variant but the
 * baseline, in order: the shared counts (plg__variants_row), then
 * baseline_mean, variant_mean, baseline_stdev, variant_stdev (null for one
 * score), mean_delta, relative_lift (mean_delta / |baseline_mean|; null
 * when that mean is 0), standard_error (sqrt(sb²/nb + sv²/nv); null when
 * a stdev is), z_score (mean_delta / standard_error) and
 * confidence_95_low/high (mean_delta ∓ 1.96·standard_error), both null
 * when the error is null or 0, and the index lists of skipped scores. A
 * figure that is not finite fails the batch (float_overflow naming it).
 */
#include <math.h>
#include <stdlib.h>

#include "plugins/aggregation/variants.h"

static const plg_option ec_own[] = {
	{ "variant_field", "string", true, NULL,
	  "the field holding each row's variant (prompt or treatment)" },
	{ "score_field", "string", true, NULL, "the numeric outcome compared" },
	{ "baseline_variant", "string", false, NULL,
	  "the variant the others are compared with (default: the first seen)" },
	{ NULL }
};
static const plg_option *const ec_opts[] = { ec_own, plg__schema_opts, plg__input_opts, NULL };

static void ec_close(void *state)
{
	if (!state)
		return;
	plg__variants_cfg_release(state);
	free(state);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	return plg__variants_options(state, opts, ec_opts, false, err);
}

static int ec_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(plg__variants_cfg), parse_options, ec_close, options,
			       state, err);
}

/* The figures past the shared ones; NULL, or the operation that failed. */
typedef struct ec_figs {
	double lift, se, z, low, high;
	bool lift_ok, se_ok, z_ok;
} ec_figs;

static const char *error_of(const plg__vgroup *b, const plg__vgroup *g,
			    const plg__vfigs *f, ec_figs *e)
{
	double bsq, vsq, t1, t2, m;

	if (!plg__variants_square(f->base_sd, &bsq))
		return PLG__POW_OVERFLOW;
	t1 = pynum_div(pynum_real(bsq), pynum_int((long long)b->count));
	if (!plg__variants_square(f->var_sd, &vsq))
		return PLG__POW_OVERFLOW;
	t2 = pynum_div(pynum_real(vsq), pynum_int((long long)g->count));
	e->se_ok = true;
	if (!isfinite(e->se = sqrt(t1 + t2)))
		return "standard_error";
	if ((e->z_ok = e->se != 0) && !isfinite(e->z = f->delta / e->se))
		return "z_score";
	if (!e->z_ok)
		return NULL;
	m = 1.96 * e->se;
	if (!isfinite(e->low = f->delta - m))
		return "confidence_95_low";
	return isfinite(e->high = f->delta + m) ? NULL : "confidence_95_high";
}

static const char *figures_of(const plg__vgroup *b, const plg__vgroup *g,
			      const plg__vfigs *f, ec_figs *e)
{
	if ((e->lift_ok = f->base_mean != 0) &&
	    !isfinite(e->lift = f->delta / fabs(f->base_mean)))
		return "relative_lift";
	if (!f->base_sd_ok || !f->var_sd_ok)
		return NULL; /* an arm of one: its variance, and so the error, undefined */
	return error_of(b, g, f, e);
}

static int ec_row(const plg__variants_cfg *c, const plg__variants *v,
		  const plg__vgroup *g, json_t **out, core_err *err)
{
	ec_figs e = { 0 };
	const char *op;
	plg__vfigs f;
	json_t *row;
	int rc;

	if ((rc = plg__variants_figures(c, v, g, &f, err)))
		return rc;
	if ((op = figures_of(&v->g[v->base], g, &f, &e)))
		return plg__variants_overflow(c, v, g, op, err);
	if (!(row = plg__variants_row(c, v, g)) ||
	    json_object_set_new(row, "baseline_mean", json_real(f.base_mean)) ||
	    json_object_set_new(row, "variant_mean", json_real(f.var_mean)) ||
	    json_object_set_new(row, "baseline_stdev", plg__variants_real(f.base_sd_ok, f.base_sd)) ||
	    json_object_set_new(row, "variant_stdev", plg__variants_real(f.var_sd_ok, f.var_sd)) ||
	    json_object_set_new(row, "mean_delta", json_real(f.delta)) ||
	    json_object_set_new(row, "relative_lift", plg__variants_real(e.lift_ok, e.lift)) ||
	    json_object_set_new(row, "standard_error", plg__variants_real(e.se_ok, e.se)) ||
	    json_object_set_new(row, "z_score", plg__variants_real(e.z_ok, e.z)) ||
	    json_object_set_new(row, "confidence_95_low", plg__variants_real(e.z_ok, e.low)) ||
	    json_object_set_new(row, "confidence_95_high", plg__variants_real(e.z_ok, e.high)) ||
	    plg__variants_indices(row, v, g)) {
		json_decref(row);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = row;
	return 0;
}

static int ec_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	return plg__variants_flush(state, "batch_experiment_compare", true, ec_row, members,
				   n, passthrough, out, err);
}

static int ec_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"baseline_count", "baseline_mean", "baseline_missing_count",
		"baseline_non_finite_count", "baseline_stdev", "baseline_total_count",
		"baseline_variant", "batch_size", "confidence_95_high", "confidence_95_low",
		"mean_delta", "relative_lift", "score_field", "standard_error", "variant",
		"variant_count", "variant_field", "variant_mean", "variant_missing_count",
		"variant_non_finite_count", "variant_stdev", "variant_total_count",
		"z_score", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_experiment_compare = {
	.name = "batch_experiment_compare",
	.description = "Each variant's mean score against a baseline's over a batch, with a standard error and 95% interval (ELSPETH 0.7.1)",
	.options = ec_opts,
	.open = ec_open,
	.flush = ec_flush,
	.close = ec_close,
	.outputs = ec_outputs,
};

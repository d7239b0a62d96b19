/*
 * batch_effect_size.c — ELSPETH 0.7.1's "batch_effect_size" aggregation:
 * Cohen's d and Hedges' g of each variant's scores against a baseline's
 * over a batch (ADR 0045).
 *
 * Groups and checks as variants.h says. One row per variant but the
 * baseline, in order: the shared counts (plg__variants_row), then
 * baseline_mean, variant_mean, mean_delta, baseline_stdev, variant_stdev
 * (null for one score), pooled_stdev (sqrt of ((nb-1)·sb² + (nv-1)·sv²)
 * / (nb+nv-2), an undefined stdev counting as 0; null when nb+nv-2 <= 0),
 * cohens_d (mean_delta / pooled_stdev; null when that is null or 0),
 * hedges_g (cohens_d · (1 - 3 / (4(nb+nv) - 9)); null with cohens_d), and
 * the index lists of skipped scores. A figure that is not finite fails
 * the batch (float_overflow naming it), as 0.7.1's does.
 */
#include <math.h>
#include <stdlib.h>

#include "plugins/aggregation/variants.h"

static const plg_option es_own[] = {
	{ "variant_field", "string", true, NULL,
	  "the field holding each row's variant (prompt or treatment)" },
	{ "score_field", "string", true, NULL, "the numeric outcome compared" },
	{ "baseline_variant", "string|integer|boolean", false, NULL,
	  "the variant the others are compared with (default: the first seen)" },
	{ NULL }
};
static const plg_option *const es_opts[] = { es_own, plg__schema_opts, plg__input_opts, NULL };

static void es_close(void *state)
{
	if (!state)
		return;
	plg__variants_cfg_release(state);
	free(state);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	return plg__variants_options(state, opts, es_opts, true, err);
}

static int es_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(plg__variants_cfg), parse_options, es_close, options,
			       state, err);
}

/* (nb - 1)·sb² + (nv - 1)·sv², over nb + nv - 2 (den > 0), its root. */
static const char *pooled_of(const plg__vgroup *b, const plg__vgroup *g,
			     const plg__vfigs *f, long long den, double *out)
{
	double bsq, vsq;
	pynum t1, t2, sum;

	if (!plg__variants_square(f->base_sd_ok ? f->base_sd : 0.0, &bsq))
		return PLG__POW_OVERFLOW;
	pynum_mul(pynum_int((long long)b->count - 1), pynum_real(bsq), &t1);
	if (!plg__variants_square(f->var_sd_ok ? f->var_sd : 0.0, &vsq))
		return PLG__POW_OVERFLOW;
	pynum_mul(pynum_int((long long)g->count - 1), pynum_real(vsq), &t2);
	pynum_add(t1, t2, &sum);
	*out = sqrt(pynum_div(sum, pynum_int(den)));
	return isfinite(*out) ? NULL : "pooled_stdev";
}

static int es_row(const plg__variants_cfg *c, const plg__variants *v,
		  const plg__vgroup *g, json_t **out, core_err *err)
{
	const plg__vgroup *b = &v->g[v->base];
	long long n = (long long)(b->count + g->count);
	double pooled = 0, d = 0, h = 0;
	bool pooled_ok = n - 2 > 0, d_ok, h_ok;
	const char *op = NULL;
	plg__vfigs f;
	json_t *row;
	int rc;

	if ((rc = plg__variants_figures(c, v, g, &f, err)))
		return rc;
	if (pooled_ok && (op = pooled_of(b, g, &f, n - 2, &pooled)))
		return plg__variants_overflow(c, v, g, op, err);
	if ((d_ok = pooled_ok && pooled != 0) && !isfinite(d = f.delta / pooled))
		return plg__variants_overflow(c, v, g, "cohens_d", err);
	h_ok = d_ok && 4 * n - 9 > 0;
	if (h_ok) {
		h = d * (1.0 - pynum_div(pynum_int(3), pynum_int(4 * n - 9)));
		if (!isfinite(h))
			return plg__variants_overflow(c, v, g, "hedges_g", err);
	}
	if (!(row = plg__variants_row(c, v, g)) ||
	    json_object_set_new(row, "baseline_mean", json_real(f.base_mean)) ||
	    json_object_set_new(row, "variant_mean", json_real(f.var_mean)) ||
	    json_object_set_new(row, "mean_delta", json_real(f.delta)) ||
	    json_object_set_new(row, "baseline_stdev", plg__variants_real(f.base_sd_ok, f.base_sd)) ||
	    json_object_set_new(row, "variant_stdev", plg__variants_real(f.var_sd_ok, f.var_sd)) ||
	    json_object_set_new(row, "pooled_stdev", plg__variants_real(pooled_ok, pooled)) ||
	    json_object_set_new(row, "cohens_d", plg__variants_real(d_ok, d)) ||
	    json_object_set_new(row, "hedges_g", plg__variants_real(h_ok, h)) ||
	    plg__variants_indices(row, v, g)) {
		json_decref(row);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*out = row;
	return 0;
}

static int es_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	/* 0.7.1 counts the variants before looking for the baseline */
	return plg__variants_flush(state, "batch_effect_size", false, es_row, members, n,
				   passthrough, out, err);
}

static int es_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"baseline_count", "baseline_mean", "baseline_missing_count",
		"baseline_non_finite_count", "baseline_stdev", "baseline_total_count",
		"baseline_variant", "batch_size", "cohens_d", "hedges_g", "mean_delta",
		"pooled_stdev", "score_field", "variant", "variant_count", "variant_field",
		"variant_mean", "variant_missing_count", "variant_non_finite_count",
		"variant_stdev", "variant_total_count", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_effect_size = {
	.name = "batch_effect_size",
	.description = "Cohen's d and Hedges' g of each variant's scores against a baseline's over a batch (ELSPETH 0.7.1)",
	.options = es_opts,
	.open = es_open,
	.flush = es_flush,
	.close = es_close,
	.outputs = es_outputs,
};

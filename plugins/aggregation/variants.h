/*
 * variants.h — what ELSPETH 0.7.1's "batch_effect_size" and
 * "batch_experiment_compare" aggregations share (ADR 0045): their
 * options, a batch's scores grouped by variant with 0.7.1's checks, and
 * the figures both compute first. Private to plugins/aggregation.
 *
 * A batch's rows are grouped by the value of variant_field (type and
 * value, as plg__same_bucket), groups in order of first appearance; the baseline is baseline_variant when set, else the
 * first group. Each group keeps its finite scores (int or float) in row
 * order and the batch indices of its null and non-finite scores. A row
 * without either field fails the batch (0.7.1 raises KeyError). Figures are Python's to the bit (pynum.h).
 */
#ifndef ELSPETH_VARIANTS_H
#define ELSPETH_VARIANTS_H

#include "plugins/aggregation/pynum.h"
#include "plugins/plugins_internal.h"

/* What Python's OverflowError says when float ** 2 overflows, and when
 * statistics.stdev's square root is past the largest float: 0.7.1 names
 * these as the failed operation. */
#define PLG__POW_OVERFLOW "(34, 'Numerical result out of range')"
#define PLG__SQRT_OVERFLOW "integer division result too large for a float"

typedef struct plg__variants_cfg {
	const char *variant_field, *score_field; /* owned by the options' document */
	json_t *baseline;          /* baseline_variant (owned), or NULL */
} plg__variants_cfg;

typedef struct plg__vgroup {
	const json_t *value;       /* the variant: a member's (borrowed) */
	size_t total;              /* its rows */
	pynum *scores;             /* its finite scores, in row order */
	size_t count;
	size_t *missing, nmissing; /* batch indices of null scores */
	size_t *nonfin, nnonfin;   /* ... of NaN and infinities */
} plg__vgroup;

typedef struct plg__variants {
	plg__vgroup *g;            /* ng groups in order of first appearance */
	size_t ng;
	size_t base;               /* the baseline's index in g */
	size_t n;                  /* the batch's size */
	pynum *scores;             /* storage the groups point into */
	size_t *idx;
} plg__variants;

/* The options of both, into c (zeroed): variant_field and
 * score_field (strings, not blank, different), baseline_variant (a
 * string, or with `any_baseline` also an integer or a boolean; a float
 * without a fraction is taken as its integer, as 0.7.1's pydantic does),
 * and a `schema` (required). Unknown keys against `tables`. CORE_ECONFIG
 * naming the key. */
int plg__variants_options(plg__variants_cfg *c, const core_node *opts,
			  const plg_option *const *tables, bool any_baseline,
			  core_err *err);
void plg__variants_cfg_release(plg__variants_cfg *c);

/* Groups members[0..n) (n >= 1) into *v and makes 0.7.1's checks, in its
 * order: a row without variant_field (the first), a NaN or infinite
 * variant, a score absent or neither null, int nor float (the first in
 * group order), then fewer than two variants and a
 * baseline_variant not in the batch (`baseline_first`: that one first),
 * then a baseline without a finite score. CORE_EDATA naming the field,
 * rows and variant. *v is valid until plg__variants_release (also after
 * an error) and borrows members' values. */
int plg__variants_group(const plg__variants_cfg *c, json_t *const *members, size_t n,
			bool baseline_first, plg__variants *v, core_err *err);
void plg__variants_release(plg__variants *v);

/* One comparison row: group g against v's baseline, in *row (new). */
typedef int plg__variants_row_fn(const plg__variants_cfg *c, const plg__variants *v,
				 const plg__vgroup *g, json_t **row, core_err *err);

/* A plugin's flush (plg_aggregation_ops.flush): refuses passthrough
 * (naming `plugin`), groups (plg__variants_group), then one row per
 * variant but the baseline, in order; a variant without a finite score
 * fails the batch when its turn comes. */
int plg__variants_flush(const plg__variants_cfg *c, const char *plugin,
			bool baseline_first, plg__variants_row_fn *row_of,
			json_t *const *members, size_t n, bool passthrough,
			json_t **out, core_err *err);

/* The figures both compute first, in 0.7.1's order: the means
 * (sum / count), the sample stdevs (undefined, sd_ok false, for one
 * score), and mean_delta (variant's mean - baseline's). */
typedef struct plg__vfigs {
	double base_mean, var_mean, base_sd, var_sd, delta;
	bool base_sd_ok, var_sd_ok;
} plg__vfigs;

/* Fills f for group g against the baseline; CORE_EDATA float_overflow
 * (plg__variants_overflow) when a figure is not finite. */
int plg__variants_figures(const plg__variants_cfg *c, const plg__variants *v,
			  const plg__vgroup *g, plg__vfigs *f, core_err *err);
/* x ** 2 as Python's float power: false when it overflows (0.7.1's
 * PLG__POW_OVERFLOW). */
bool plg__variants_square(double x, double *out);
/* CORE_EDATA: float_overflow in `op` comparing g with the baseline. */
int plg__variants_overflow(const plg__variants_cfg *c, const plg__variants *v,
			   const plg__vgroup *g, const char *op, core_err *err);

/* A new row holding what both rows start with (variant_field,
 * score_field, baseline_variant, variant, batch_size and the eight
 * counts), or NULL when out of memory. */
json_t *plg__variants_row(const plg__variants_cfg *c, const plg__variants *v,
			  const plg__vgroup *g);
/* Adds the *_missing_indices and *_non_finite_indices lists a row ends
 * with, each only when not empty. -1 when out of memory. */
int plg__variants_indices(json_t *row, const plg__variants *v, const plg__vgroup *g);
/* A new JSON real, or null when !ok. */
json_t *plg__variants_real(bool ok, double x);

#endif

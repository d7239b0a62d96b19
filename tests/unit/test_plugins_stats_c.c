/*
 * test_plugins_stats_c.c — ELSPETH 0.7.1's batch_drift_compare and
 * batch_paired_preference aggregations (ADR 0045). The expected rows are
 * what real ELSPETH 0.7.1 wrote for the same batches (its examples, and
 * runs of tests/reference/elspeth071 on these inputs), in 0.7.1's field
 * order, compared to the bit (reals printed with 17 digits).
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"
#include "plg_test.h"

static void teardown(void)
{
	plgt_free_docs();
}

TestSuite(drift_compare, .fini = teardown, .timeout = 20);
TestSuite(paired_preference, .fini = teardown, .timeout = 20);

static const plg_aggregation_ops *drift(void)
{
	const plg_aggregation_ops *ops = plg_find_aggregation("batch_drift_compare");

	cr_assert_not_null(ops);
	return ops;
}

static const plg_aggregation_ops *paired(void)
{
	const plg_aggregation_ops *ops = plg_find_aggregation("batch_paired_preference");

	cr_assert_not_null(ops);
	return ops;
}

/* Opens ops with yaml, flushes the members of the JSON array `batch`;
 * *out the rows (or NULL), err the reason. */
static int run(const plg_aggregation_ops *ops, const char *yaml, const char *batch,
	       bool passthrough, json_t **out, core_err *err)
{
	json_t *arr = js(batch), *before = json_deep_copy(arr);
	size_t n = json_array_size(arr);
	json_t **m = calloc(n ? n : 1, sizeof(*m));
	void *st = NULL;
	int rc;

	cr_assert_not_null(m);
	memset(err, 0, sizeof(*err));
	cr_assert_eq(ops->open(NULL, opts(yaml), &st, err), 0, "%s", err->msg);
	for (size_t i = 0; i < n; i++)
		m[i] = json_array_get(arr, i);
	*out = NULL;
	rc = ops->flush(st, m, n, passthrough, out, err);
	cr_assert(json_equal(arr, before), "a member was modified");
	if (rc)
		cr_assert_null(*out);
	ops->close(st);
	free(m);
	json_decref(before);
	json_decref(arr);
	return rc;
}

static void expect(const plg_aggregation_ops *ops, const char *yaml, const char *batch,
		   const char *want)
{
	core_err err;
	json_t *out;

	cr_assert_eq(run(ops, yaml, batch, false, &out, &err), 0, "%s", err.msg);
	same(out, want);
	json_decref(out);
}

static void expect_err(const plg_aggregation_ops *ops, const char *yaml,
		       const char *batch, const char *needle)
{
	core_err err;
	json_t *out;

	cr_assert_eq(run(ops, yaml, batch, false, &out, &err), CORE_EDATA, "%s", err.msg);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

static void open_err(const plg_aggregation_ops *ops, const char *yaml, const char *needle)
{
	core_err err = { 0 };
	void *st = NULL;

	cr_assert_eq(ops->open(NULL, opts(yaml), &st, &err), CORE_ECONFIG, "%s", yaml);
	cr_assert_null(st);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

/* ------------------------------------------------------- drift_compare */

#define CV "cohort_field: c\nvalue_field: v\n"
#define CAT CV "value_type: categorical\n"

Test(drift_compare, example_numeric_is_071s)
{
	expect(drift(), "schema: {mode: observed}\ncohort_field: cohort\nvalue_field: score\n"
	       "value_type: numeric\nbaseline_cohort: baseline\n",
	       "[{\"id\":1,\"cohort\":\"baseline\",\"score\":0.64},"
	       "{\"id\":2,\"cohort\":\"baseline\",\"score\":0.66},"
	       "{\"id\":3,\"cohort\":\"baseline\",\"score\":0.65},"
	       "{\"id\":4,\"cohort\":\"baseline\",\"score\":0.63},"
	       "{\"id\":5,\"cohort\":\"current\",\"score\":0.72},"
	       "{\"id\":6,\"cohort\":\"current\",\"score\":0.75},"
	       "{\"id\":7,\"cohort\":\"current\",\"score\":0.71},"
	       "{\"id\":8,\"cohort\":\"current\",\"score\":0.78}]",
		"[{\"cohort_field\":\"cohort\",\"value_field\":\"score\","
		"\"value_type\":\"numeric\",\"baseline_cohort\":\"baseline\","
		"\"cohort\":\"current\",\"batch_size\":8,\"baseline_total_count\":4,"
		"\"cohort_total_count\":4,\"baseline_count\":4,\"cohort_count\":4,"
		"\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":0.645,\"cohort_mean\":0.74,\"mean_delta\":0.09499999999999997,"
		"\"ks_statistic\":1.0}]");
}

/* Cohorts 1, 2 and true are three; the first seen is the baseline; null
 * is missing; ints and floats mix. */
Test(drift_compare, numeric_three_cohorts_by_type)
{
	expect(drift(), CV,
	       "[{\"c\":1,\"v\":0.5},{\"c\":1,\"v\":2},{\"c\":2,\"v\":3},{\"c\":2,\"v\":null},"
	       "{\"c\":true,\"v\":1.25},{\"c\":1,\"v\":7},{\"c\":2,\"v\":1},{\"c\":true,\"v\":0.1},"
	       "{\"c\":1,\"v\":0.1},{\"c\":2,\"v\":0.2},{\"c\":true,\"v\":2}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
		"\"baseline_cohort\":1,\"cohort\":2,\"batch_size\":11,\"baseline_total_count\":4,"
		"\"cohort_total_count\":4,\"baseline_count\":4,\"cohort_count\":3,"
		"\"baseline_missing_count\":0,\"cohort_missing_count\":1,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":2.4,\"cohort_mean\":1.4000000000000001,"
		"\"mean_delta\":-0.9999999999999998,\"ks_statistic\":0.25},"
		"{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
		"\"baseline_cohort\":1,\"cohort\":true,\"batch_size\":11,"
		"\"baseline_total_count\":4,\"cohort_total_count\":3,\"baseline_count\":4,"
		"\"cohort_count\":3,\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":2.4,\"cohort_mean\":1.1166666666666667,"
		"\"mean_delta\":-1.2833333333333332,\"ks_statistic\":0.25}]");
}

Test(drift_compare, named_baseline_not_first)
{
	expect(drift(), CV "baseline_cohort: y\n",
	       "[{\"c\":\"x\",\"v\":1.5},{\"c\":\"y\",\"v\":2.5},{\"c\":\"x\",\"v\":1},"
	       "{\"c\":\"y\",\"v\":2},{\"c\":\"z\",\"v\":3}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
		"\"baseline_cohort\":\"y\",\"cohort\":\"x\",\"batch_size\":5,"
		"\"baseline_total_count\":2,\"cohort_total_count\":2,\"baseline_count\":2,"
		"\"cohort_count\":2,\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":2.25,\"cohort_mean\":1.25,\"mean_delta\":-1.0,"
		"\"ks_statistic\":1.0},{\"cohort_field\":\"c\",\"value_field\":\"v\","
		"\"value_type\":\"numeric\",\"baseline_cohort\":\"y\",\"cohort\":\"z\","
		"\"batch_size\":5,\"baseline_total_count\":2,\"cohort_total_count\":1,"
		"\"baseline_count\":2,\"cohort_count\":1,\"baseline_missing_count\":0,"
		"\"cohort_missing_count\":0,\"baseline_non_finite_count\":0,"
		"\"cohort_non_finite_count\":0,\"baseline_mean\":2.25,\"cohort_mean\":3.0,"
		"\"mean_delta\":0.75,\"ks_statistic\":1.0}]");
}

Test(drift_compare, boolean_baseline_is_not_1)
{
	expect(drift(), CV "baseline_cohort: true\n",
	       "[{\"c\":1,\"v\":1},{\"c\":true,\"v\":2}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
		"\"baseline_cohort\":true,\"cohort\":1,\"batch_size\":2,"
		"\"baseline_total_count\":1,\"cohort_total_count\":1,\"baseline_count\":1,"
		"\"cohort_count\":1,\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":2.0,\"cohort_mean\":1.0,\"mean_delta\":-1.0,"
		"\"ks_statistic\":1.0}]");
}

Test(drift_compare, null_cohort_is_a_cohort)
{
	expect(drift(), CV, "[{\"c\":null,\"v\":1},{\"c\":\"y\",\"v\":2},{\"c\":null,\"v\":3}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
		"\"baseline_cohort\":null,\"cohort\":\"y\",\"batch_size\":3,"
		"\"baseline_total_count\":2,\"cohort_total_count\":1,\"baseline_count\":2,"
		"\"cohort_count\":1,\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"baseline_mean\":2.0,\"cohort_mean\":2.0,\"mean_delta\":0.0,"
		"\"ks_statistic\":0.5}]");
}

/* Categories "x", true and 1 are three; shifts list the baseline's values
 * first; a value only the cohort has is new. */
Test(drift_compare, categorical_by_type)
{
	expect(drift(), CAT,
	       "[{\"c\":\"a\",\"v\":\"x\"},{\"c\":\"a\",\"v\":\"y\"},{\"c\":\"a\",\"v\":\"x\"},"
	       "{\"c\":\"b\",\"v\":\"y\"},{\"c\":\"b\",\"v\":\"z\"},{\"c\":\"b\",\"v\":1},"
	       "{\"c\":\"a\",\"v\":true},{\"c\":\"c\",\"v\":1},{\"c\":\"c\",\"v\":true},"
	       "{\"c\":\"c\",\"v\":\"x\"},{\"c\":\"b\",\"v\":null},{\"c\":\"c\",\"v\":\"x\"},"
	       "{\"c\":\"a\",\"v\":1}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"categorical\","
		"\"baseline_cohort\":\"a\",\"cohort\":\"b\",\"batch_size\":13,"
		"\"baseline_total_count\":5,\"cohort_total_count\":4,\"baseline_count\":5,"
		"\"cohort_count\":3,\"baseline_missing_count\":0,\"cohort_missing_count\":1,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"category_shifts\":[{\"value\":\"x\",\"baseline_count\":2,\"cohort_count\":0,"
		"\"baseline_proportion\":0.4,\"cohort_proportion\":0.0,\"proportion_delta\":-0.4},"
		"{\"value\":\"y\",\"baseline_count\":1,\"cohort_count\":1,"
		"\"baseline_proportion\":0.2,\"cohort_proportion\":0.3333333333333333,"
		"\"proportion_delta\":0.1333333333333333},{\"value\":true,\"baseline_count\":1,"
		"\"cohort_count\":0,\"baseline_proportion\":0.2,\"cohort_proportion\":0.0,"
		"\"proportion_delta\":-0.2},{\"value\":1,\"baseline_count\":1,\"cohort_count\":1,"
		"\"baseline_proportion\":0.2,\"cohort_proportion\":0.3333333333333333,"
		"\"proportion_delta\":0.1333333333333333},{\"value\":\"z\",\"baseline_count\":0,"
		"\"cohort_count\":1,\"baseline_proportion\":0.0,"
		"\"cohort_proportion\":0.3333333333333333,"
		"\"proportion_delta\":0.3333333333333333}],\"total_variation\":0.6,"
		"\"chi_square_statistic\":2.3333333333333335,\"new_category_count\":1,"
		"\"new_categories\":[\"z\"]},{\"cohort_field\":\"c\",\"value_field\":\"v\","
		"\"value_type\":\"categorical\",\"baseline_cohort\":\"a\",\"cohort\":\"c\","
		"\"batch_size\":13,\"baseline_total_count\":5,\"cohort_total_count\":4,"
		"\"baseline_count\":5,\"cohort_count\":4,\"baseline_missing_count\":0,"
		"\"cohort_missing_count\":0,\"baseline_non_finite_count\":0,"
		"\"cohort_non_finite_count\":0,\"category_shifts\":[{\"value\":\"x\","
		"\"baseline_count\":2,\"cohort_count\":2,\"baseline_proportion\":0.4,"
		"\"cohort_proportion\":0.5,\"proportion_delta\":0.09999999999999998},"
		"{\"value\":\"y\",\"baseline_count\":1,\"cohort_count\":0,"
		"\"baseline_proportion\":0.2,\"cohort_proportion\":0.0,\"proportion_delta\":-0.2},"
		"{\"value\":true,\"baseline_count\":1,\"cohort_count\":1,"
		"\"baseline_proportion\":0.2,\"cohort_proportion\":0.25,"
		"\"proportion_delta\":0.04999999999999999},{\"value\":1,\"baseline_count\":1,"
		"\"cohort_count\":1,\"baseline_proportion\":0.2,\"cohort_proportion\":0.25,"
		"\"proportion_delta\":0.04999999999999999}],"
		"\"total_variation\":0.19999999999999998,\"chi_square_statistic\":1.0,"
		"\"new_category_count\":0,\"new_categories\":[]}]");
}

Test(drift_compare, categorical_chi_square)
{
	expect(drift(), CAT,
	       "[{\"c\":\"b\",\"v\":\"p\"},{\"c\":\"b\",\"v\":\"p\"},{\"c\":\"b\",\"v\":\"q\"},"
	       "{\"c\":\"n\",\"v\":\"q\"},{\"c\":\"n\",\"v\":\"q\"},{\"c\":\"n\",\"v\":\"r\"},"
	       "{\"c\":\"n\",\"v\":\"p\"}]",
		"[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"categorical\","
		"\"baseline_cohort\":\"b\",\"cohort\":\"n\",\"batch_size\":7,"
		"\"baseline_total_count\":3,\"cohort_total_count\":4,\"baseline_count\":3,"
		"\"cohort_count\":4,\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
		"\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
		"\"category_shifts\":[{\"value\":\"p\",\"baseline_count\":2,\"cohort_count\":1,"
		"\"baseline_proportion\":0.6666666666666666,\"cohort_proportion\":0.25,"
		"\"proportion_delta\":-0.41666666666666663},{\"value\":\"q\",\"baseline_count\":1,"
		"\"cohort_count\":2,\"baseline_proportion\":0.3333333333333333,"
		"\"cohort_proportion\":0.5,\"proportion_delta\":0.16666666666666669},"
		"{\"value\":\"r\",\"baseline_count\":0,\"cohort_count\":1,"
		"\"baseline_proportion\":0.0,\"cohort_proportion\":0.25,"
		"\"proportion_delta\":0.25}],\"total_variation\":0.41666666666666663,"
		"\"chi_square_statistic\":1.375,\"new_category_count\":1,"
		"\"new_categories\":[\"r\"]}]");
}

Test(drift_compare, batch_errors_as_071)
{
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"x\",\"v\":2}]",
		   "insufficient_cohorts");
	expect_err(drift(), CV "baseline_cohort: q\n", "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\",\"v\":2}]",
		   "baseline_cohort_missing: expected q, cohorts ['x', 'y']");
	expect_err(drift(), CV "baseline_cohort: 1\n", "[{\"c\":\"1\",\"v\":1},{\"c\":true,\"v\":2}]",
		   "baseline_cohort_missing");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\",\"v\":null},{\"c\":\"y\",\"v\":null}]",
		   "no_valid_values in cohort y (batch of 3, 2 skipped)");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":null},{\"c\":\"y\",\"v\":2}]",
		   "no_valid_values in cohort x");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1e308},{\"c\":\"x\",\"v\":1e308},{\"c\":\"y\",\"v\":1.0}]",
		   "float_overflow: baseline_mean of cohort y against baseline x");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1.0},{\"c\":\"y\",\"v\":1e308},{\"c\":\"y\",\"v\":1e308}]",
		   "float_overflow: cohort_mean");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1e308},{\"c\":\"y\",\"v\":-1e308}]",
		   "float_overflow: mean_delta");
}

/* A value of the wrong type fails the batch (0.7.1 stops the run with a
 * TypeError), the first cohort's first. */
Test(drift_compare, wrong_types_and_missing_fields)
{
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\",\"v\":\"2\"}]",
		   "Field 'v' must be numeric (int or float), got str in row 1");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\",\"v\":true}]", "got bool");
	expect_err(drift(), CAT, "[{\"c\":\"x\",\"v\":\"a\"},{\"c\":\"y\",\"v\":2.5}]",
		   "Field 'v' must be a scalar category (str, int, or bool), got float in row 1");
	expect_err(drift(), CAT, "[{\"c\":\"y\",\"v\":\"a\"},{\"c\":\"x\",\"v\":[1]},{\"c\":\"y\",\"v\":{}}]",
		   "got dict in row 2");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"v\":2}]", "Field 'c' is missing in row 1");
	expect_err(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\"}]", "Field 'v' is missing in row 1");
}

Test(drift_compare, batch_over_4096_rows_fails)
{
	core_buf b = { 0 };
	core_err err;
	json_t *out;

	core_buf_putc(&b, '[');
	for (int i = 0; i < 4097; i++)
		core_buf_printf(&b, "%s{\"c\":%d,\"v\":1}", i ? "," : "", i % 2);
	core_buf_puts(&b, "]");
	core_buf_putc(&b, '\0');
	cr_assert_eq(run(drift(), CV, b.data, false, &out, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "batch_too_large (batch of 4097, at most 4096 rows)"), "%s", err.msg);
	core_buf_release(&b);
}

Test(drift_compare, passthrough_refused)
{
	core_err err;
	json_t *out;

	cr_assert_eq(run(drift(), CV, "[{\"c\":\"x\",\"v\":1},{\"c\":\"y\",\"v\":2}]", true,
			 &out, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "output_mode: transform"), "%s", err.msg);
}

Test(drift_compare, options_as_071)
{
	open_err(drift(), "value_field: v\n", "cohort_field");
	open_err(drift(), "cohort_field: c\n", "value_field");
	open_err(drift(), CV "bogus: 1\n", "bogus");
	open_err(drift(), "cohort_field: ' '\nvalue_field: v\n", "cohort_field must not be empty");
	open_err(drift(), "cohort_field: c\nvalue_field: c\n", "cohort_field and value_field must differ");
	open_err(drift(), CV "value_type: ordinal\n", "value_type must be 'numeric' or 'categorical'");
	open_err(drift(), CV "baseline_cohort: ' '\n", "baseline_cohort must not be empty");
	open_err(drift(), CV "baseline_cohort: 1.5\n", "baseline_cohort must be a string, an integer or a boolean");
	open_err(drift(), CV "baseline_cohort: [x]\n", "baseline_cohort must be a string");
	open_err(drift(), CV "schema: {mode: sideways}\n", "mode");
}

/* pydantic takes 1.0 for the int 1 (and 1 is not true). */
Test(drift_compare, whole_float_baseline_is_an_int)
{
	expect(drift(), CV "baseline_cohort: 1.0\n", "[{\"c\":true,\"v\":1},{\"c\":1,\"v\":3}]",
	       "[{\"cohort_field\":\"c\",\"value_field\":\"v\",\"value_type\":\"numeric\","
	       "\"baseline_cohort\":1,\"cohort\":true,\"batch_size\":2,\"baseline_total_count\":1,"
	       "\"cohort_total_count\":1,\"baseline_count\":1,\"cohort_count\":1,"
	       "\"baseline_missing_count\":0,\"cohort_missing_count\":0,"
	       "\"baseline_non_finite_count\":0,\"cohort_non_finite_count\":0,"
	       "\"baseline_mean\":3.0,\"cohort_mean\":1.0,\"mean_delta\":-2.0,\"ks_statistic\":1.0}]");
}

Test(drift_compare, outputs_by_value_type)
{
	plg_outputs o = { 0 };
	core_err err = { 0 };

	cr_assert_eq(drift()->outputs(opts(CV), &o, &err), 0);
	cr_assert_eq(o.shape, PLG_SHAPE_OBSERVED);
	cr_assert_eq(o.nfields, 18);
	cr_assert_str_eq(o.fields[14], "ks_statistic");
	plg_outputs_release(&o);
	memset(&o, 0, sizeof(o));
	cr_assert_eq(drift()->outputs(opts(CAT), &o, &err), 0);
	cr_assert_eq(o.nfields, 19);
	cr_assert_str_eq(o.fields[6], "category_shifts");
	plg_outputs_release(&o);
}

/* --------------------------------------------------- paired_preference */

#define PVS "pair_field: p\nvariant_field: var\nscore_field: s\n"

Test(paired_preference, example_is_071s)
{
	expect(paired(), "schema: {mode: observed}\npair_field: case_id\nvariant_field: variant\n"
	       "score_field: preference_score\nbaseline_variant: control\n",
	       "[{\"case_id\":\"case-001\",\"variant\":\"control\",\"preference_score\":0.60},"
	       "{\"case_id\":\"case-001\",\"variant\":\"treatment\",\"preference_score\":0.72},"
	       "{\"case_id\":\"case-002\",\"variant\":\"control\",\"preference_score\":0.68},"
	       "{\"case_id\":\"case-002\",\"variant\":\"treatment\",\"preference_score\":0.65},"
	       "{\"case_id\":\"case-003\",\"variant\":\"control\",\"preference_score\":0.55},"
	       "{\"case_id\":\"case-003\",\"variant\":\"treatment\",\"preference_score\":0.74},"
	       "{\"case_id\":\"case-004\",\"variant\":\"control\",\"preference_score\":0.70},"
	       "{\"case_id\":\"case-004\",\"variant\":\"treatment\",\"preference_score\":0.70}]",
		"[{\"pair_field\":\"case_id\",\"variant_field\":\"variant\","
		"\"score_field\":\"preference_score\",\"baseline_variant\":\"control\","
		"\"variant\":\"treatment\",\"batch_size\":8,\"total_pair_count\":4,"
		"\"compared_pair_count\":4,\"incomplete_pair_count\":0,\"missing_score_count\":0,"
		"\"non_finite_score_count\":0,\"baseline_mean\":0.6325000000000001,"
		"\"variant_mean\":0.7025000000000001,\"mean_paired_delta\":0.06999999999999998,"
		"\"wins\":2,\"losses\":1,\"ties\":1,\"win_rate\":0.5,\"loss_rate\":0.25,"
		"\"tie_rate\":0.25,\"preference_rate\":0.6666666666666666,"
		"\"standard_error_delta\":0.05147815070493499,"
		"\"confidence_95_low\":-0.03089717538167261,"
		"\"confidence_95_high\":0.17089717538167257}]");
}

/* Three variants; pairs 1 and "1" differ; a null score and a missing
 * variant make a pair incomplete; C only ties: its preference rate is
 * null, not 0. */
Test(paired_preference, three_variants_incomplete_pairs_and_ties)
{
	expect(paired(), PVS,
	       "[{\"p\":1,\"var\":\"A\",\"s\":0.5},{\"p\":1,\"var\":\"B\",\"s\":0.7},"
	       "{\"p\":1,\"var\":\"C\",\"s\":0.5},{\"p\":2,\"var\":\"A\",\"s\":0.3},"
	       "{\"p\":2,\"var\":\"B\",\"s\":0.3},{\"p\":3,\"var\":\"A\",\"s\":1},"
	       "{\"p\":3,\"var\":\"B\",\"s\":2},{\"p\":3,\"var\":\"C\",\"s\":1},"
	       "{\"p\":\"1\",\"var\":\"B\",\"s\":0.9},{\"p\":4,\"var\":\"A\",\"s\":null},"
	       "{\"p\":4,\"var\":\"B\",\"s\":0.2}]",
		"[{\"pair_field\":\"p\",\"variant_field\":\"var\",\"score_field\":\"s\","
		"\"baseline_variant\":\"A\",\"variant\":\"B\",\"batch_size\":11,"
		"\"total_pair_count\":5,\"compared_pair_count\":3,\"incomplete_pair_count\":2,"
		"\"missing_score_count\":1,\"non_finite_score_count\":0,\"baseline_mean\":0.6,"
		"\"variant_mean\":1.0,\"mean_paired_delta\":0.39999999999999997,\"wins\":2,"
		"\"losses\":0,\"ties\":1,\"win_rate\":0.6666666666666666,\"loss_rate\":0.0,"
		"\"tie_rate\":0.3333333333333333,\"preference_rate\":1.0,"
		"\"standard_error_delta\":0.3055050463303894,"
		"\"confidence_95_low\":-0.1987898908075632,"
		"\"confidence_95_high\":0.9987898908075632,\"incomplete_pairs\":[\"1\", 4]},"
		"{\"pair_field\":\"p\",\"variant_field\":\"var\",\"score_field\":\"s\","
		"\"baseline_variant\":\"A\",\"variant\":\"C\",\"batch_size\":11,"
		"\"total_pair_count\":5,\"compared_pair_count\":2,\"incomplete_pair_count\":3,"
		"\"missing_score_count\":0,\"non_finite_score_count\":0,\"baseline_mean\":0.75,"
		"\"variant_mean\":0.75,\"mean_paired_delta\":0.0,\"wins\":0,\"losses\":0,"
		"\"ties\":2,\"win_rate\":0.0,\"loss_rate\":0.0,\"tie_rate\":1.0,"
		"\"preference_rate\":null,\"standard_error_delta\":0.0,\"confidence_95_low\":0.0,"
		"\"confidence_95_high\":0.0,\"incomplete_pairs\":[2, \"1\", 4]}]");
}

Test(paired_preference, int_scores_and_named_baseline)
{
	expect(paired(), PVS "baseline_variant: y\n",
	       "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"a\",\"var\":\"y\",\"s\":5},"
	       "{\"p\":\"b\",\"var\":\"x\",\"s\":2},{\"p\":\"b\",\"var\":\"y\",\"s\":1},"
	       "{\"p\":\"c\",\"var\":\"x\",\"s\":4},{\"p\":\"c\",\"var\":\"y\",\"s\":4},"
	       "{\"p\":\"d\",\"var\":\"y\",\"s\":10},{\"p\":\"d\",\"var\":\"x\",\"s\":1}]",
		"[{\"pair_field\":\"p\",\"variant_field\":\"var\",\"score_field\":\"s\","
		"\"baseline_variant\":\"y\",\"variant\":\"x\",\"batch_size\":8,"
		"\"total_pair_count\":4,\"compared_pair_count\":4,\"incomplete_pair_count\":0,"
		"\"missing_score_count\":0,\"non_finite_score_count\":0,\"baseline_mean\":5.0,"
		"\"variant_mean\":2.5,\"mean_paired_delta\":-2.5,\"wins\":1,\"losses\":2,"
		"\"ties\":1,\"win_rate\":0.25,\"loss_rate\":0.5,\"tie_rate\":0.25,"
		"\"preference_rate\":0.3333333333333333,"
		"\"standard_error_delta\":2.254624876411447,"
		"\"confidence_95_low\":-6.919064757766436,"
		"\"confidence_95_high\":1.919064757766436}]");
}

Test(paired_preference, true_and_1_are_two_variants)
{
	expect(paired(), PVS,
	       "[{\"p\":\"a\",\"var\":true,\"s\":3},{\"p\":\"a\",\"var\":1,\"s\":5},"
	       "{\"p\":\"b\",\"var\":1,\"s\":2},{\"p\":\"b\",\"var\":true,\"s\":2.5}]",
		"[{\"pair_field\":\"p\",\"variant_field\":\"var\",\"score_field\":\"s\","
		"\"baseline_variant\":true,\"variant\":1,\"batch_size\":4,\"total_pair_count\":2,"
		"\"compared_pair_count\":2,\"incomplete_pair_count\":0,\"missing_score_count\":0,"
		"\"non_finite_score_count\":0,\"baseline_mean\":2.75,\"variant_mean\":3.5,"
		"\"mean_paired_delta\":0.75,\"wins\":1,\"losses\":1,\"ties\":0,\"win_rate\":0.5,"
		"\"loss_rate\":0.5,\"tie_rate\":0.0,\"preference_rate\":0.5,"
		"\"standard_error_delta\":1.25,\"confidence_95_low\":-1.7000000000000002,"
		"\"confidence_95_high\":3.2}]");
}

/* One compared pair: no standard error, no interval (null, never 0). */
Test(paired_preference, one_pair_has_no_standard_error)
{
	expect(paired(), PVS, "[{\"p\":\"a\",\"var\":null,\"s\":1},{\"p\":\"a\",\"var\":\"y\",\"s\":2}]",
		"[{\"pair_field\":\"p\",\"variant_field\":\"var\",\"score_field\":\"s\","
		"\"baseline_variant\":null,\"variant\":\"y\",\"batch_size\":2,"
		"\"total_pair_count\":1,\"compared_pair_count\":1,\"incomplete_pair_count\":0,"
		"\"missing_score_count\":0,\"non_finite_score_count\":0,\"baseline_mean\":1.0,"
		"\"variant_mean\":2.0,\"mean_paired_delta\":1.0,\"wins\":1,\"losses\":0,"
		"\"ties\":0,\"win_rate\":1.0,\"loss_rate\":0.0,\"tie_rate\":0.0,"
		"\"preference_rate\":1.0,\"standard_error_delta\":null,\"confidence_95_low\":null,"
		"\"confidence_95_high\":null}]");
}

Test(paired_preference, batch_errors_as_071)
{
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"a\",\"var\":\"x\",\"s\":5},"
		   "{\"p\":\"b\",\"var\":\"y\",\"s\":1},{\"p\":\"b\",\"var\":\"y\",\"s\":1}]",
		   "duplicate_variant_in_pair in field 'var' (pairs ['a', 'b'])");
	expect_err(paired(), PVS "baseline_variant: z\n",
		   "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"a\",\"var\":\"y\",\"s\":5}]",
		   "baseline_variant_missing: expected z, variants ['x', 'y']");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"b\",\"var\":\"x\",\"s\":5}]",
		   "insufficient_variants");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"b\",\"var\":\"y\",\"s\":5}]",
		   "no_complete_pairs for variant y (batch of 2, 2 pairs)");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":null},{\"p\":\"a\",\"var\":\"y\",\"s\":5}]",
		   "no_complete_pairs");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":-1.7e308},{\"p\":\"a\",\"var\":\"y\",\"s\":1.7e308}]",
		   "float_overflow: paired_delta of variant y against baseline x");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":0},{\"p\":\"a\",\"var\":\"y\",\"s\":1.7e308},"
		   "{\"p\":\"b\",\"var\":\"x\",\"s\":0},{\"p\":\"b\",\"var\":\"y\",\"s\":1.7e308}]",
		   "float_overflow: mean_paired_delta");
}

Test(paired_preference, wrong_types_and_missing_fields)
{
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":3},{\"p\":\"a\",\"var\":\"y\",\"s\":\"5\"}]",
		   "Field 's' must be numeric (int or float), got str in row 1");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":true}]", "got bool in row 0");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":1},{\"p\":\"a\",\"s\":1}]",
		   "Field 'var' is missing in row 1");
	expect_err(paired(), PVS, "[{\"var\":\"x\",\"s\":1}]", "Field 'p' is missing in row 0");
	expect_err(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\"}]", "Field 's' is missing in row 0");
}

/* Python's int arithmetic: 2^62 + 1 - 2^62 is exactly 1 (not 0, as in
 * floats), and a delta beyond 64 bits is still exact before float(). A
 * sum of int scores beyond 64 bits is an error (Python would go on). */
Test(paired_preference, int_deltas_are_exact)
{
	core_err err;
	json_t *out, *row;

	cr_assert_eq(run(paired(), PVS,
		"[{\"p\":\"a\",\"var\":\"x\",\"s\":4611686018427387904},"
		"{\"p\":\"a\",\"var\":\"y\",\"s\":4611686018427387905},"
		"{\"p\":\"b\",\"var\":\"x\",\"s\":-9223372036854775807},"
		"{\"p\":\"b\",\"var\":\"y\",\"s\":4611686018427387902}]",
		false, &out, &err), 0, "%s", err.msg);
	row = json_array_get(out, 0);
	cr_assert_eq(json_integer_value(json_object_get(row, "wins")), 2);
	cr_assert_eq(json_real_value(json_object_get(row, "mean_paired_delta")),
		     (1.0 + 13835058055282163709.0) / 2);
	cr_assert_eq(json_real_value(json_object_get(row, "baseline_mean")),
		     -4611686018427387903.0 / 2);
	json_decref(out);
	expect_err(paired(), PVS,
		"[{\"p\":\"a\",\"var\":\"x\",\"s\":1},"
		"{\"p\":\"a\",\"var\":\"y\",\"s\":9223372036854775807},"
		"{\"p\":\"b\",\"var\":\"x\",\"s\":1},"
		"{\"p\":\"b\",\"var\":\"y\",\"s\":1}]",
		"integer_overflow: variant_mean of variant y");
}

Test(paired_preference, options_as_071)
{
	open_err(paired(), "variant_field: var\nscore_field: s\n", "pair_field");
	open_err(paired(), PVS "extra: 1\n", "extra");
	open_err(paired(), "pair_field: p\nvariant_field: var\nscore_field: p\n",
		 "pair_field, variant_field, and score_field must be distinct");
	open_err(paired(), "pair_field: p\nvariant_field: '\t'\nscore_field: s\n",
		 "variant_field must not be empty");
	open_err(paired(), PVS "baseline_variant: ''\n", "baseline_variant must not be empty");
	open_err(paired(), PVS "baseline_variant: [1]\n",
		 "baseline_variant must be a string, an integer or a boolean");
}

Test(paired_preference, outputs_and_passthrough)
{
	plg_outputs o = { 0 };
	core_err err = { 0 };
	json_t *out;

	cr_assert_eq(paired()->outputs(opts(PVS), &o, &err), 0);
	cr_assert_eq(o.nfields, 24);
	cr_assert_str_eq(o.fields[0], "baseline_mean");
	cr_assert_str_eq(o.fields[23], "wins");
	plg_outputs_release(&o);
	cr_assert_eq(run(paired(), PVS, "[{\"p\":\"a\",\"var\":\"x\",\"s\":1},"
			 "{\"p\":\"a\",\"var\":\"y\",\"s\":2}]", true, &out, &err), CORE_EDATA);
}

/* test_plugins_stats_a.c — ELSPETH 0.7.1's batch_distribution_profile and
 * batch_outlier_annotator aggregations (ADR 0045). The expected figures
 * are what real ELSPETH 0.7.1 (tests/reference/elspeth071) wrote for the
 * same batches. NaN and infinities cannot be held in a row here
 * (jansson refuses them), so the non-finite paths are not reachable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "plugins/plugins_internal.h"
#include "plg_test.h"

static void teardown(void)
{
	plgt_free_docs();
}

TestSuite(stats_a, .fini = teardown, .timeout = 10);

/* Flushes aggregation `name` (options yaml) over the rows of the JSON
 * array `batch`; *got is its output (or NULL), the return its rc. */
static int flush(const char *name, const char *yaml, const char *batch, bool passthrough,
		 json_t **got, core_err *err)
{
	const plg_aggregation_ops *ops = plg_find_aggregation(name);
	json_t *rows = js(batch);
	json_t **members = calloc(json_array_size(rows) + 1, sizeof(*members));
	void *st = NULL;
	int rc;

	cr_assert_not_null(ops, "%s", name);
	for (size_t i = 0; i < json_array_size(rows); i++)
		members[i] = json_array_get(rows, i);
	memset(err, 0, sizeof(*err));
	cr_assert_eq(ops->open(NULL, opts(yaml), &st, err), 0, "%s", err->msg);
	*got = NULL;
	rc = ops->flush(st, members, json_array_size(rows), passthrough, got, err);
	ops->close(st);
	free(members);
	json_decref(rows);
	return rc;
}

/* The output equals want (key order aside; 1 and 1.0 differ). */
static void flush_ok(const char *name, const char *yaml, const char *batch,
		     const char *want)
{
	json_t *got, *w = js(want);
	core_err err;
	char *g, *ws;

	cr_assert_eq(flush(name, yaml, batch, false, &got, &err), 0, "%s", err.msg);
	g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	ws = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert(json_equal(got, w), "got  %s\nwant %s", g, ws);
	free(g);
	free(ws);
	json_decref(got);
	json_decref(w);
}

/* row equals the JSON object want (key order aside). */
static void row_is(const json_t *row, const char *want)
{
	json_t *w = js(want);
	char *g = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);

	cr_assert(json_equal(row, w), "got %s", g);
	free(g);
	json_decref(w);
}

static void flush_fails(const char *name, const char *yaml, const char *batch,
			bool passthrough, const char *needle)
{
	json_t *got;
	core_err err;

	cr_assert_eq(flush(name, yaml, batch, passthrough, &got, &err), CORE_EDATA, "%s", batch);
	cr_assert_null(got);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

static void bad_options(const char *name, const char *yaml, const char *needle)
{
	core_err err = { 0 };
	void *st = NULL;
	int rc = plg_find_aggregation(name)->open(NULL, opts(yaml), &st, &err);

	cr_assert_eq(rc, CORE_ECONFIG, "%s: %s", yaml, err.msg);
	cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

#define DP "batch_distribution_profile"
#define OA "batch_outlier_annotator"
#define OBS "schema: {mode: observed}\n"

/* ------------------------------------------------ distribution profile */

Test(stats_a, profile_of_one_batch)
{
	/* 0.7.1's example, its control group */
	flush_ok(DP, OBS "value_field: x\n",
		 "[{\"x\": 820.0}, {\"x\": 790.0}, {\"x\": 845.0}, {\"x\": 810.0}]",
		 "[{\"field\": \"x\", \"count\": 4, \"batch_size\": 4, \"missing_count\": 0,"
		 "\"non_finite_count\": 0, \"min\": 790.0, \"max\": 845.0, \"mean\": 816.25,"
		 "\"median\": 815.0, \"p25\": 805.0, \"p75\": 826.25,"
		 "\"stdev\": 22.86737122335374, \"summary\": \"Distribution profile for x: "
		 "4 rows, 4 finite values, 0 missing, 0 non-finite, mean 816.250, median "
		 "815.000, range 790.000 to 845.000.\"}]");
}

Test(stats_a, profile_groups_by_type_and_value)
{
	/* 0.7.1 on the same rows: "a", 1, true, 1.0 and 1.5 are five groups,
	 * in order of first appearance; a null value is missing, its index
	 * the batch's; min and max keep their type; n=1 has no stdev */
	flush_ok(DP, OBS "value_field: v\ngroup_by: g\n",
		 "[{\"g\":\"a\",\"v\":1},{\"g\":1,\"v\":3},{\"g\":true,\"v\":7},{\"g\":1.0,\"v\":5},"
		 "{\"g\":\"a\",\"v\":10.25},{\"g\":1,\"v\":-2},{\"g\":1.5,\"v\":2},"
		 "{\"g\":\"b\",\"v\":null},{\"g\":\"b\",\"v\":2.5}]",
		 "[{\"field\":\"v\",\"count\":2,\"batch_size\":2,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":1,\"max\":10.25,\"mean\":5.625,\"median\":5.625,"
		 "\"p25\":3.3125,\"p75\":7.9375,\"stdev\":6.540737725975565,\"summary\":"
		 "\"Distribution profile for v grouped by g=a: 2 rows, 2 finite values, 0 missing, "
		 "0 non-finite, mean 5.625, median 5.625, range 1.000 to 10.250.\",\"g\":\"a\"},"
		 "{\"field\":\"v\",\"count\":2,\"batch_size\":2,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":-2,\"max\":3,\"mean\":0.5,\"median\":0.5,"
		 "\"p25\":-0.75,\"p75\":1.75,\"stdev\":3.5355339059327378,\"summary\":"
		 "\"Distribution profile for v grouped by g=1: 2 rows, 2 finite values, 0 missing, "
		 "0 non-finite, mean 0.500, median 0.500, range -2.000 to 3.000.\",\"g\":1},"
		 "{\"field\":\"v\",\"count\":1,\"batch_size\":1,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":7,\"max\":7,\"mean\":7.0,\"median\":7.0,"
		 "\"p25\":7.0,\"p75\":7.0,\"stdev\":null,\"summary\":"
		 "\"Distribution profile for v grouped by g=True: 1 rows, 1 finite values, 0 missing, "
		 "0 non-finite, mean 7.000, median 7.000, range 7.000 to 7.000.\",\"g\":true},"
		 "{\"field\":\"v\",\"count\":1,\"batch_size\":1,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":5,\"max\":5,\"mean\":5.0,\"median\":5.0,"
		 "\"p25\":5.0,\"p75\":5.0,\"stdev\":null,\"summary\":"
		 "\"Distribution profile for v grouped by g=1.0: 1 rows, 1 finite values, 0 missing, "
		 "0 non-finite, mean 5.000, median 5.000, range 5.000 to 5.000.\",\"g\":1.0},"
		 "{\"field\":\"v\",\"count\":1,\"batch_size\":1,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":2,\"max\":2,\"mean\":2.0,\"median\":2.0,"
		 "\"p25\":2.0,\"p75\":2.0,\"stdev\":null,\"summary\":"
		 "\"Distribution profile for v grouped by g=1.5: 1 rows, 1 finite values, 0 missing, "
		 "0 non-finite, mean 2.000, median 2.000, range 2.000 to 2.000.\",\"g\":1.5},"
		 "{\"field\":\"v\",\"count\":1,\"batch_size\":2,\"missing_count\":1,"
		 "\"missing_indices\":[7],\"non_finite_count\":0,\"min\":2.5,\"max\":2.5,"
		 "\"mean\":2.5,\"median\":2.5,\"p25\":2.5,\"p75\":2.5,\"stdev\":null,\"summary\":"
		 "\"Distribution profile for v grouped by g=b: 2 rows, 1 finite values, 1 missing, "
		 "0 non-finite, mean 2.500, median 2.500, range 2.500 to 2.500.\",\"g\":\"b\"}]");
}

Test(stats_a, profile_null_and_list_group_keys)
{
	/* 0.7.1 prints a null key as None and a list key as its frozen tuple */
	flush_ok(DP, OBS "value_field: v\ngroup_by: g\n",
		 "[{\"g\":null,\"v\":1},{\"g\":[1],\"v\":2},{\"g\":null,\"v\":3}]",
		 "[{\"field\":\"v\",\"count\":2,\"batch_size\":2,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":1,\"max\":3,\"mean\":2.0,\"median\":2.0,"
		 "\"p25\":1.5,\"p75\":2.5,\"stdev\":1.4142135623730951,\"summary\":"
		 "\"Distribution profile for v grouped by g=None: 2 rows, 2 finite values, 0 missing, "
		 "0 non-finite, mean 2.000, median 2.000, range 1.000 to 3.000.\",\"g\":null},"
		 "{\"field\":\"v\",\"count\":1,\"batch_size\":1,\"missing_count\":0,"
		 "\"non_finite_count\":0,\"min\":2,\"max\":2,\"mean\":2.0,\"median\":2.0,"
		 "\"p25\":2.0,\"p75\":2.0,\"stdev\":null,\"summary\":"
		 "\"Distribution profile for v grouped by g=(1,): 1 rows, 1 finite values, 0 missing, "
		 "0 non-finite, mean 2.000, median 2.000, range 2.000 to 2.000.\",\"g\":[1]}]");
}

Test(stats_a, profile_quartiles_interpolate)
{
	json_t *got, *row;
	core_err err;

	/* 1, 4, 10.25 as 0.7.1 gave them; the ints interpolate exactly */
	cr_assert_eq(flush(DP, OBS "value_field: v\n",
			   "[{\"v\": 1}, {\"v\": 10.25}, {\"v\": 4}, {\"v\": null}]",
			   false, &got, &err), 0, "%s", err.msg);
	row = json_array_get(got, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "mean")), 5.083333333333333, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "p25")), 2.5, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "p75")), 7.125, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "stdev")), 4.719198378255923, 0);
	row_is(json_object_get(row, "missing_indices"), "[3]");
	cr_assert_null(json_object_get(row, "non_finite_indices"));
	json_decref(got);
	cr_assert_eq(flush(DP, OBS "value_field: v\n",
			   "[{\"v\": -9223372036854775807}, {\"v\": 9223372036854775807}]",
			   false, &got, &err), 0, "%s", err.msg);
	/* (upper - lower) is 2^64 - 2 exactly, then a float: p25 = -2^62 */
	cr_assert_float_eq(json_real_value(json_object_get(json_array_get(got, 0), "p25")),
			   -4611686018427387904.0, 0);
	json_decref(got);
}

Test(stats_a, profile_batch_errors)
{
	/* 0.7.1: no_finite_values is a validation error; a str or bool value
	 * is its TypeError; an absent field its KeyError */
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": null}, {\"v\": null}]", false,
		    "validation_failed: no_finite_values in field 'v' (batch of 2, 0 valid, "
		    "2 skipped: missing row 0, missing row 1)");
	flush_fails(DP, OBS "value_field: v\ngroup_by: g\n",
		    "[{\"g\": \"a\", \"v\": 1}, {\"g\": \"b\", \"v\": null}]", false,
		    "no_finite_values in field 'v' for group g=b (batch of 1");
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": 1}, {\"v\": \"2\"}]", false,
		    "Field 'v' must be numeric (int or float), got str in row 1");
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": 1}, {\"v\": true}]", false,
		    "got bool in row 1");
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": 1}, {\"w\": 2}]", false,
		    "Field 'v' is missing from row 1");
	flush_fails(DP, OBS "value_field: v\ngroup_by: g\n", "[{\"g\": 1, \"v\": 1}, {\"v\": 2}]",
		    false, "Field 'g' (group_by) is missing from row 1");
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": 1e308}, {\"v\": 1e308}]", false,
		    "float_overflow: mean");
	flush_fails(DP, OBS "value_field: v\n", "[{\"v\": 1}]", true, "output_mode: transform");
}

Test(stats_a, profile_options)
{
	bad_options(DP, OBS, "value_field");
	bad_options(DP, OBS "value_field: \"  \"\n", "value_field must not be empty");
	bad_options(DP, OBS "value_field: v\ngroup_by: \" \"\n", "group_by must not be empty");
	bad_options(DP, OBS "value_field: v\ngroup_by: p25\n",
		    "group_by field 'p25' collides with profile output key");
	bad_options(DP, OBS "value_field: v\ngroup_by: missing_indices\n", "collides");
	bad_options(DP, OBS "value_field: v\ngroup: g\n", "group");
	bad_options(DP, OBS "value_field: [v]\n", "value_field");
}

Test(stats_a, profile_outputs)
{
	plg_outputs o = { 0 };
	core_err err = { 0 };

	cr_assert_eq(plg_find_aggregation(DP)->outputs(opts(OBS "value_field: v\ngroup_by: grp\n"),
						       &o, &err), 0, "%s", err.msg);
	cr_assert_eq(o.shape, PLG_SHAPE_OBSERVED);
	cr_assert_eq(o.nfields, 14);
	cr_assert_str_eq(o.fields[12], "summary");
	cr_assert_str_eq(o.fields[13], "grp");
	plg_outputs_release(&o);
}

/* ------------------------------------------------- outlier annotator */

/* The annotation of 0.7.1's o8 run (prefix q) for member 4: both
 * scores past their thresholds. */
Test(stats_a, outlier_annotates_every_finite_member)
{
	json_t *got, *row;
	core_err err;

	cr_assert_eq(flush(OA, OBS "value_field: v\noutput_prefix: q\nz_threshold: 1\n"
			   "robust_z_threshold: 0.5\n",
			   "[{\"v\":1},{\"v\":2},{\"v\":3},{\"v\":4},{\"v\":40,\"id\":\"x\"}]",
			   false, &got, &err), 0, "%s", err.msg);
	cr_assert_eq(json_array_size(got), 5);
	row = json_array_get(got, 4);
	row_is(row,
		"{\"v\":40,\"id\":\"x\",\"q_value_field\":\"v\",\"q_value\":40,\"q_row_index\":4,"
		"\"q_batch_size\":5,\"q_valid_count\":5,\"q_missing_count\":0,"
		"\"q_non_finite_count\":0,\"q_skipped_count\":0,\"q_missing_indices\":[],"
		"\"q_non_finite_indices\":[],\"q_mean\":10.0,\"q_median\":3.0,"
		"\"q_stdev\":16.80773631397161,\"q_mad\":1.0,\"q_z_threshold\":1.0,"
		"\"q_robust_z_threshold\":0.5,\"q_z_score\":1.784892351926189,"
		"\"q_robust_z_score\":24.9565,\"q_is_outlier\":true,"
		"\"q_reason\":\"z_score,robust_z_score\"}");
	row = json_array_get(got, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "q_z_score")), -0.5354677055778567, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "q_robust_z_score")), -1.349, 0);
	cr_assert_str_eq(json_string_value(json_object_get(row, "q_reason")), "robust_z_score");
	row = json_array_get(got, 2);
	cr_assert_str_eq(json_string_value(json_object_get(row, "q_reason")), "");
	cr_assert(json_is_false(json_object_get(row, "q_is_outlier")));
	json_decref(got);
}

Test(stats_a, outlier_skips_missing_values)
{
	json_t *got, *row;
	core_err err;

	/* 0.7.1's o1 run: the null member is left out and listed */
	cr_assert_eq(flush(OA, OBS "value_field: v\n",
			   "[{\"v\":10},{\"v\":null},{\"v\":12},{\"v\":11},{\"v\":100}]",
			   false, &got, &err), 0, "%s", err.msg);
	cr_assert_eq(json_array_size(got), 4);
	row = json_array_get(got, 3);
	row_is(row,
		"{\"v\":100,\"outlier_value_field\":\"v\",\"outlier_value\":100,"
		"\"outlier_row_index\":4,\"outlier_batch_size\":5,\"outlier_valid_count\":4,"
		"\"outlier_missing_count\":1,\"outlier_non_finite_count\":0,"
		"\"outlier_skipped_count\":1,\"outlier_missing_indices\":[1],"
		"\"outlier_non_finite_indices\":[],\"outlier_mean\":33.25,\"outlier_median\":11.5,"
		"\"outlier_stdev\":44.50749000636485,\"outlier_mad\":1.0,"
		"\"outlier_z_threshold\":3.0,\"outlier_robust_z_threshold\":3.5,"
		"\"outlier_z_score\":1.4997475703629735,\"outlier_robust_z_score\":59.69325,"
		"\"outlier_is_outlier\":true,\"outlier_reason\":\"robust_z_score\"}");
	cr_assert_float_eq(json_real_value(json_object_get(json_array_get(got, 0),
			   "outlier_robust_z_score")), -1.01175, 0);
	json_decref(got);
}

Test(stats_a, outlier_mad_zero_and_no_spread)
{
	json_t *got, *row;
	core_err err;

	/* o3: MAD 0, so the mean absolute deviation's score (0.7979) */
	cr_assert_eq(flush(OA, OBS "value_field: v\n",
			   "[{\"v\":5},{\"v\":5},{\"v\":5},{\"v\":5},{\"v\":9}]",
			   false, &got, &err), 0, "%s", err.msg);
	row = json_array_get(got, 4);
	cr_assert_float_eq(json_real_value(json_object_get(row, "outlier_robust_z_score")), 3.9895, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "outlier_z_score")), 1.788854381999832, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "outlier_stdev")), 1.7888543819998317, 0);
	cr_assert_float_eq(json_real_value(json_object_get(row, "outlier_mean")), 5.8, 0);
	cr_assert_float_eq(json_real_value(json_object_get(json_array_get(got, 0),
			   "outlier_robust_z_score")), 0.0, 0);
	json_decref(got);
	/* o2: all alike: stdev 0.0, both scores null, never 0 */
	cr_assert_eq(flush(OA, OBS "value_field: v\n", "[{\"v\":5},{\"v\":5.0}]",
			   false, &got, &err), 0, "%s", err.msg);
	row = json_array_get(got, 1);
	cr_assert(json_is_null(json_object_get(row, "outlier_z_score")));
	cr_assert(json_is_null(json_object_get(row, "outlier_robust_z_score")));
	cr_assert(json_is_real(json_object_get(row, "outlier_stdev")));
	cr_assert(json_is_real(json_object_get(row, "outlier_value")));
	json_decref(got);
	/* o4: one value (and a null): stdev 0, scores null */
	cr_assert_eq(flush(OA, OBS "value_field: v\n", "[{\"v\":7,\"k\":\"x\"},{\"v\":null,\"k\":\"y\"}]",
			   false, &got, &err), 0, "%s", err.msg);
	cr_assert_eq(json_array_size(got), 1);
	row = json_array_get(got, 0);
	cr_assert(json_is_null(json_object_get(row, "outlier_z_score")));
	cr_assert(json_is_null(json_object_get(row, "outlier_robust_z_score")));
	cr_assert_float_eq(json_real_value(json_object_get(row, "outlier_stdev")), 0.0, 0);
	cr_assert_eq(json_integer_value(json_object_get(row, "outlier_skipped_count")), 1);
	json_decref(got);
}

Test(stats_a, outlier_caps_index_details)
{
	char batch[8192];
	size_t n = 0;
	json_t *got, *row;
	core_err err;

	n += (size_t)snprintf(batch + n, sizeof(batch) - n, "[{\"v\": 1}");
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(batch + n, sizeof(batch) - n, ", {\"v\": null}");
	snprintf(batch + n, sizeof(batch) - n, "]");
	cr_assert_eq(flush(OA, OBS "value_field: v\n", batch, false, &got, &err), 0, "%s", err.msg);
	row = json_array_get(got, 0);
	cr_assert_eq(json_integer_value(json_object_get(row, "outlier_missing_count")), 200);
	cr_assert_eq(json_array_size(json_object_get(row, "outlier_missing_indices")), 128);
	json_decref(got);
}

Test(stats_a, outlier_batch_errors)
{
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": null}]", false,
		    "validation_failed: no_finite_values in field 'v' (batch of 1, 0 valid, "
		    "1 missing, 0 non-finite)");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1}, {\"v\": \"2\"}]", false,
		    "Field 'v' must be numeric (int or float), got str in row 1");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1}, {\"v\": true}]", false,
		    "got bool in row 1");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1}, {\"w\": 2}]", false,
		    "Field 'v' is missing from row 1");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1}, {\"v\": 2, \"outlier_mean\": 3}]",
		    false, "would overwrite the existing input field 'outlier_mean' in row 1");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1e308}, {\"v\": 1e308}]", false,
		    "float_overflow: mean");
	flush_fails(OA, OBS "value_field: v\n", "[{\"v\": 1}]", true, "output_mode: transform");
}

Test(stats_a, outlier_refuses_big_batches)
{
	core_buf b = { 0 };
	json_t *got;
	core_err err;

	core_buf_puts(&b, "[{\"v\": 0}");
	for (int i = 1; i < 4097; i++)
		core_buf_printf(&b, ", {\"v\": %d}", i);
	core_buf_puts(&b, "]");
	cr_assert_eq(flush(OA, OBS "value_field: v\n", b.data, false, &got, &err), CORE_EDATA);
	cr_assert(strstr(err.msg, "batch_too_large (batch of 4097, expected at most 4096 rows)"),
		  "%s", err.msg);
	b.len -= strlen(", {\"v\": 4096}]");
	core_buf_puts(&b, "]");
	cr_assert_eq(flush(OA, OBS "value_field: v\n", b.data, false, &got, &err), 0, "%s", err.msg);
	cr_assert_eq(json_array_size(got), 4096);
	json_decref(got);
	core_buf_release(&b);
}

Test(stats_a, outlier_options)
{
	bad_options(OA, OBS, "value_field");
	bad_options(OA, OBS "value_field: \" \"\n", "value_field must not be empty");
	bad_options(OA, OBS "value_field: v\noutput_prefix: \" \"\n", "output_prefix must not be empty");
	bad_options(OA, OBS "value_field: v\noutput_prefix: 2x\n",
		    "output_prefix must be a valid Python identifier prefix");
	bad_options(OA, OBS "value_field: v\noutput_prefix: a-b\n", "identifier");
	bad_options(OA, OBS "value_field: v\nz_threshold: 0\n", "z_threshold must be greater than 0");
	bad_options(OA, OBS "value_field: v\nrobust_z_threshold: -1\n",
		    "robust_z_threshold must be greater than 0");
	bad_options(OA, OBS "value_field: v\nz_threshold: high\n", "expected a number");
	bad_options(OA, OBS "value_field: outlier_mean\n",
		    "value_field 'outlier_mean' collides with outlier annotation output key");
	bad_options(OA, OBS "value_field: q_z_score\noutput_prefix: q\n", "collides");
	bad_options(OA, OBS "value_field: v\nthreshold: 2\n", "threshold");
}

Test(stats_a, outlier_keyword_prefix_and_outputs)
{
	plg_outputs o = { 0 };
	core_err err = { 0 };
	void *st = NULL;
	const plg_aggregation_ops *ops = plg_find_aggregation(OA);

	/* "class".isidentifier() is true: 0.7.1 takes it */
	cr_assert_eq(ops->open(NULL, opts(OBS "value_field: v\noutput_prefix: class\n"), &st, &err),
		     0, "%s", err.msg);
	ops->close(st);
	cr_assert_eq(ops->outputs(opts(OBS "value_field: v\noutput_prefix: q\n"), &o, &err), 0,
		     "%s", err.msg);
	cr_assert_eq(o.shape, PLG_SHAPE_ADDED);
	cr_assert_eq(o.nfields, 20);
	cr_assert_str_eq(o.fields[0], "q_batch_size");
	cr_assert_str_eq(o.fields[19], "q_z_threshold");
	plg_outputs_release(&o);
}

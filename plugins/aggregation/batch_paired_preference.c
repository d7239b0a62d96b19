/*
 * batch_paired_preference.c — ELSPETH 0.7.1's "batch_paired_preference"
 * aggregation: how each variant's scores compare with a baseline
 * variant's on the same items, over a batch (ADR 0045).
 *
 * Members are grouped into pairs by pair_field and carry a variant
 * (variant_field) and a score (score_field: int or float; null is
 * missing, NaN and infinities are non-finite). Pairs, variants and the
 * variants of a pair are bucketed by type and value (1, 1.0, true and
 * "1" differ), in order of first appearance. The baseline is
 * baseline_variant, or the first variant seen. One row per other variant,
 * in order: over the pairs holding both it and the baseline with both
 * scores, wins, losses and ties of its score minus the baseline's, their
 * rates, the preference rate wins / (wins + losses), both means, the mean
 * delta, its standard error and 95% interval (mean ± 1.96 se); a pair
 * lacking either variant or a score is counted incomplete and listed in
 * `incomplete_pairs`. An undefined figure (a preference rate with no win
 * or loss; a standard error and interval from one pair) is null, never 0.
 * Figures as 0.7.1 computes them with Python's numbers (pynum.h). The
 * batch fails, as 0.7.1's does, on: more than 4,096 rows, a non-finite
 * variant, a score that is not a number, a missing field, a variant twice
 * in a pair, a baseline variant absent, one variant only, a variant with
 * no complete pair, a figure that overflows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aggregation/pynum.h"
#include "plugins/plugins_internal.h"

#define MAX_BATCH_ROWS 4096

struct paired {
	plg_schema *schema;
	const char *pair, *variant, *score;
	json_t *baseline;       /* or NULL: the first variant seen */
};

static const plg_option pp_own[] = {
	{ "pair_field", "string", true, NULL, "the field that identifies paired evaluation items" },
	{ "variant_field", "string", true, NULL, "the field that identifies the prompt, model or treatment variant" },
	{ "score_field", "string", true, NULL, "the numeric score compared within each pair" },
	{ "baseline_variant", "string|integer|boolean", false, NULL,
	  "the baseline variant; the first one seen when unset" },
	{ NULL }
};
static const plg_option *const pp_opts[] = { pp_own, plg__schema_opts, plg__input_opts, NULL };

static void pp_close(void *state)
{
	struct paired *t = state;

	if (!t)
		return;
	json_decref(t->baseline);
	plg__schema_free(t->schema);
	free(t);
}

/* A field name that is more than white space (0.7.1's "must not be empty"). */
static int opt_name(const core_node *opts, const char *key, const char **out,
		    core_err *err)
{
	int rc = plg__opt_field(opts, key, true, out, err);

	if (!rc && !(*out)[strspn(*out, " \t\r\n\f\v")])
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(opts, key),
				 "%s must not be empty", key);
	return rc;
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct paired *t = state;
	int rc;

	if ((rc = plg__check_options(opts, pp_opts, err)) ||
	    (rc = opt_name(opts, "pair_field", &t->pair, err)) ||
	    (rc = opt_name(opts, "variant_field", &t->variant, err)) ||
	    (rc = opt_name(opts, "score_field", &t->score, err)) ||
	    (rc = plg__opt_scalar(opts, "baseline_variant", &t->baseline, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!strcmp(t->pair, t->variant) || !strcmp(t->pair, t->score) ||
	    !strcmp(t->variant, t->score))
		return core_err_at(err, CORE_ECONFIG, opts,
				   "pair_field, variant_field, and score_field must be distinct");
	return 0;
}

static int pp_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct paired), parse_options, pp_close, options, state, err);
}

/* One member: its variant and score (when it has a finite one). */
typedef struct entry {
	const json_t *variant;
	pynum score;
	bool scored, missing, nonfin;
	size_t pair;            /* index into the pairs */
} entry;

/* The batch, read: entries e[0..n), pair keys, variants, and the
 * entries of each pair (index_pairs). */
typedef struct batch {
	size_t n, npairs, nvariants;
	entry *e;
	const json_t **pairs, **variants;
	size_t *start, *members, *fill;
} batch;

static int nomem(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static int missing_field(const char *field, size_t row, core_err *err)
{
	return core_err_set(err, CORE_EDATA, "Field '%s' is missing in row %zu", field, row);
}

static size_t bucket_of(const json_t **keys, size_t *n, const json_t *v)
{
	for (size_t i = 0; i < *n; i++)
		if (plg__same_bucket(keys[i], v))
			return i;
	keys[*n] = v;
	return (*n)++;
}

/* Reads member i into b->e[i], in 0.7.1's order: its score, its variant,
 * its pair. */
static int read_member(const struct paired *t, const json_t *row, size_t i,
		       batch *b, core_err *err)
{
	const json_t *pair = json_object_get(row, t->pair);
	const json_t *s = json_object_get(row, t->score);
	entry *e = &b->e[i];

	if (!pair)
		return missing_field(t->pair, i, err);
	if (!s)
		return missing_field(t->score, i, err);
	if (!json_is_null(s) && !json_is_integer(s) && !json_is_real(s))
		return core_err_set(err, CORE_EDATA,
			"Field '%s' must be numeric (int or float), got %s in row %zu",
			t->score, core_py_type(s), i);
	e->variant = json_object_get(row, t->variant);
	e->missing = json_is_null(s);
	e->nonfin = json_is_real(s) && !isfinite(json_real_value(s));
	e->scored = !e->missing && !e->nonfin;
	if (e->scored)
		e->score = pynum_of(s);
	bucket_of(b->variants, &b->nvariants, e->variant);
	e->pair = bucket_of(b->pairs, &b->npairs, pair);
	return 0;
}

/* The pairs holding a variant twice, listed: 0.7.1's
 * duplicate_variant_in_pair. */
static int duplicates(const struct paired *t, const batch *b, core_err *err)
{
	core_buf list = { 0 }, s = { 0 };
	size_t ndup = 0;

	for (size_t p = 0; p < b->npairs; p++) {
		const size_t *m = b->members + b->start[p];
		size_t k = b->start[p + 1] - b->start[p];
		bool dup = false;

		for (size_t i = 1; i < k && !dup; i++)
			for (size_t j = 0; j < i && !dup; j++)
				dup = plg__same_bucket(b->e[m[i]].variant, b->e[m[j]].variant);
		if (dup)
			core_buf_printf(&list, "%s'%s'", ndup++ ? ", " : "",
					plg__py_str(&s, b->pairs[p]));
	}
	core_buf_putc(&list, '\0');
	if (ndup)
		core_err_set(err, CORE_EDATA,
			"validation_failed: duplicate_variant_in_pair in field '%s' (pairs [%s])",
			t->variant, list.data ? list.data : "");
	core_buf_release(&list);
	core_buf_release(&s);
	return ndup ? CORE_EDATA : 0;
}

/* The first entry of pair p with this variant, or NULL. */
static const entry *find(const batch *b, size_t p, const json_t *variant)
{
	for (size_t i = b->start[p]; i < b->start[p + 1]; i++)
		if (plg__same_bucket(b->e[b->members[i]].variant, variant))
			return &b->e[b->members[i]];
	return NULL;
}

/* b->members: the entries' indices by pair (in order within one), pair p's
 * from b->start[p] to b->start[p + 1]. */
static void index_pairs(batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		b->start[b->e[i].pair + 1]++;
	for (size_t p = 0; p < b->npairs; p++)
		b->start[p + 1] += b->start[p];
	for (size_t i = 0, *next = b->fill; i < b->n; i++)
		b->members[b->start[b->e[i].pair] + next[b->e[i].pair]++] = i;
}

/* float(c - s): exact for ints, as Python's int arithmetic. */
static double delta_of(pynum c, pynum s)
{
	if (c.is_int && s.is_int)
		return (double)((__int128)c.i - (__int128)s.i);
	return pynum_float(c) - pynum_float(s);
}

/* A figure that is not finite (0.7.1's float_overflow), or an int sum
 * that leaves 64 bits (where Python's ints go on: we stop). */
static int overflow(const char *op, bool int_sum, const json_t *variant,
		    const json_t *base, core_err *err)
{
	core_buf a = { 0 }, c = { 0 };

	core_err_set(err, CORE_EDATA, int_sum ?
		"integer_overflow: %s of variant %s against baseline %s: the sum of its "
		"integer scores leaves 64-bit integers" :
		"float_overflow: %s of variant %s against baseline %s is not finite",
		op, plg__py_str(&a, variant), plg__py_str(&c, base));
	core_buf_release(&a);
	core_buf_release(&c);
	return CORE_EDATA;
}

/* What one variant's comparison collects over the pairs. */
typedef struct tally {
	size_t k;               /* compared pairs */
	pynum *bs, *vs, *deltas;
	long long wins, losses, ties, missing, nonfin;
	json_t *incomplete;
} tally;

static int collect(const batch *b, const json_t *base, const json_t *variant,
		   tally *y, core_err *err)
{
	for (size_t p = 0; p < b->npairs; p++) {
		const entry *be = find(b, p, base), *ce = find(b, p, variant);
		double d;

		if (be && ce) {
			y->missing += be->missing + ce->missing;
			y->nonfin += be->nonfin + ce->nonfin;
		}
		if (!be || !ce || !be->scored || !ce->scored) {
			if (json_array_append(y->incomplete, (json_t *)b->pairs[p]))
				return nomem(err);
			continue;
		}
		if (!isfinite(d = delta_of(ce->score, be->score)))
			return overflow("paired_delta", false, variant, base, err);
		y->bs[y->k] = be->score;
		y->vs[y->k] = ce->score;
		y->deltas[y->k++] = pynum_real(d);
		if (d > 0)
			y->wins++;
		else if (d < 0)
			y->losses++;
		else
			y->ties++;
	}
	return 0;
}

/* sum(v) / len(v) */
static int mean_of(const pynum *v, size_t n, double *out)
{
	pynum s;

	if (pynum_sum(v, n, &s))
		return -1;
	*out = pynum_div(s, pynum_int((long long)n));
	return 0;
}

static json_t *rate(long long num, long long den)
{
	return den ? json_real(pynum_div(pynum_int(num), pynum_int(den))) : json_null();
}

/* The figures of a tally, as the row's last fields. */
static int figures(const tally *y, const json_t *variant, const json_t *base,
		   json_t *row, core_err *err)
{
	double md, bm = 0, vm = 0, se = 0, lo = 0, hi = 0;
	const char *op = NULL;
	bool has_se = y->k > 1, int_sum = false;

	if (mean_of(y->deltas, y->k, &md) || !isfinite(md))
		op = "mean_paired_delta";
	else if ((int_sum = mean_of(y->bs, y->k, &bm)) || !isfinite(bm))
		op = "baseline_mean";
	else if ((int_sum = mean_of(y->vs, y->k, &vm)) || !isfinite(vm))
		op = "variant_mean";
	else if (has_se) {
		if (pynum_stdev(y->deltas, y->k, &se))
			return nomem(err);
		se /= sqrt((double)y->k);
		if (!isfinite(se))
			op = "standard_error_delta";
		else if (!isfinite(lo = md - 1.96 * se))
			op = "confidence_95_low";
		else if (!isfinite(hi = md + 1.96 * se))
			op = "confidence_95_high";
	}
	if (op)
		return overflow(op, int_sum, variant, base, err);
	if (json_object_set_new(row, "baseline_mean", json_real(bm)) ||
	    json_object_set_new(row, "variant_mean", json_real(vm)) ||
	    json_object_set_new(row, "mean_paired_delta", json_real(md)) ||
	    json_object_set_new(row, "wins", json_integer(y->wins)) ||
	    json_object_set_new(row, "losses", json_integer(y->losses)) ||
	    json_object_set_new(row, "ties", json_integer(y->ties)) ||
	    json_object_set_new(row, "win_rate", rate(y->wins, (long long)y->k)) ||
	    json_object_set_new(row, "loss_rate", rate(y->losses, (long long)y->k)) ||
	    json_object_set_new(row, "tie_rate", rate(y->ties, (long long)y->k)) ||
	    json_object_set_new(row, "preference_rate", rate(y->wins, y->wins + y->losses)) ||
	    json_object_set_new(row, "standard_error_delta", has_se ? json_real(se) : json_null()) ||
	    json_object_set_new(row, "confidence_95_low", has_se ? json_real(lo) : json_null()) ||
	    json_object_set_new(row, "confidence_95_high", has_se ? json_real(hi) : json_null()) ||
	    (json_array_size(y->incomplete) &&
	     json_object_set(row, "incomplete_pairs", y->incomplete)))
		return nomem(err);
	return 0;
}

/* The row comparing `variant` with the baseline, appended to rows. */
static int compare(const struct paired *t, const batch *b, const json_t *base,
		   const json_t *variant, json_t *rows, core_err *err)
{
	tally y = { 0 };
	json_t *row = NULL;
	int rc;

	if (!(y.bs = calloc(b->npairs, sizeof(*y.bs))) ||
	    !(y.vs = calloc(b->npairs, sizeof(*y.vs))) ||
	    !(y.deltas = calloc(b->npairs, sizeof(*y.deltas))) ||
	    !(y.incomplete = json_array()))
		rc = nomem(err);
	else if (!(rc = collect(b, base, variant, &y, err)) && !y.k) {
		core_buf s = { 0 };

		rc = core_err_set(err, CORE_EDATA,
			"validation_failed: no_complete_pairs for variant %s (batch of %zu, %zu pairs)",
			plg__py_str(&s, variant), b->n, b->npairs);
		core_buf_release(&s);
	}
	if (!rc && !(row = json_pack("{s:s,s:s,s:s,s:O,s:O,s:I,s:I,s:I,s:I,s:I,s:I}",
			"pair_field", t->pair, "variant_field", t->variant,
			"score_field", t->score, "baseline_variant", base, "variant", variant,
			"batch_size", (json_int_t)b->n, "total_pair_count", (json_int_t)b->npairs,
			"compared_pair_count", (json_int_t)y.k,
			"incomplete_pair_count", (json_int_t)json_array_size(y.incomplete),
			"missing_score_count", (json_int_t)y.missing,
			"non_finite_score_count", (json_int_t)y.nonfin)))
		rc = nomem(err);
	if (!rc && !(rc = figures(&y, variant, base, row, err))) {
		rc = json_array_append_new(rows, row) ? nomem(err) : 0;
		row = NULL;
	}
	json_decref(row);
	json_decref(y.incomplete);
	free(y.bs);
	free(y.vs);
	free(y.deltas);
	return rc;
}

static int list_error(const char *what, const json_t *want, const batch *b,
		      core_err *err)
{
	core_buf s = { 0 }, list = { 0 };

	for (size_t j = 0; j < b->nvariants; j++)
		core_buf_printf(&list, "%s'%s'", j ? ", " : "", plg__py_str(&s, b->variants[j]));
	core_buf_putc(&list, '\0');
	core_err_set(err, CORE_EDATA, "validation_failed: %s: expected %s, variants [%s]",
		     what, plg__py_str(&s, want), list.data ? list.data : "");
	core_buf_release(&s);
	core_buf_release(&list);
	return CORE_EDATA;
}

/* The rows of every variant but the baseline, once the batch is read. */
static int compare_all(const struct paired *t, const batch *b, json_t *rows,
		       core_err *err)
{
	const json_t *base = t->baseline ? t->baseline : b->variants[0];
	size_t others = 0;
	int rc = 0;
	bool found = false;

	for (size_t j = 0; j < b->nvariants; j++) {
		bool same = plg__same_bucket(b->variants[j], base);

		found |= same;
		others += !same;
	}
	if (!found)
		return list_error("baseline_variant_missing", base, b, err);
	if (!others)
		return core_err_set(err, CORE_EDATA,
			"validation_failed: insufficient_variants (%zu variant, nothing to "
			"compare with the baseline)", b->nvariants);
	for (size_t j = 0; j < b->nvariants && !rc; j++)
		if (!plg__same_bucket(b->variants[j], base))
			rc = compare(t, b, base, b->variants[j], rows, err);
	return rc;
}

static int read_batch(const struct paired *t, json_t *const *members, batch *b,
		      core_err *err)
{
	int rc = 0;

	if (!b->n)
		return core_err_set(err, CORE_EDATA, "validation_failed: empty_batch");
	if (b->n > MAX_BATCH_ROWS)
		return core_err_set(err, CORE_EDATA,
			"validation_failed: batch_too_large (batch of %zu, at most %d rows)",
			b->n, MAX_BATCH_ROWS);
	for (size_t i = 0; i < b->n; i++) {
		const json_t *v = json_object_get(members[i], t->variant);

		if (!v)
			return missing_field(t->variant, i, err);
		if (json_is_real(v) && !isfinite(json_real_value(v)))
			return core_err_set(err, CORE_EDATA,
				"validation_failed: non_finite_variant in field '%s' (row %zu)",
				t->variant, i);
	}
	for (size_t i = 0; i < b->n && !rc; i++)
		rc = read_member(t, members[i], i, b, err);
	if (rc)
		return rc;
	index_pairs(b);
	return duplicates(t, b, err);
}

static int pp_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct paired *t = state;
	batch b = { .n = n };
	json_t *rows = NULL;
	int rc;

	if ((rc = plg__summary_only("batch_paired_preference", passthrough, err)))
		return rc;
	if (!(b.e = calloc(n ? n : 1, sizeof(*b.e))) ||
	    !(b.pairs = calloc(n ? n : 1, sizeof(*b.pairs))) ||
	    !(b.variants = calloc(n ? n : 1, sizeof(*b.variants))) ||
	    !(b.start = calloc(n + 1, sizeof(*b.start))) ||
	    !(b.members = calloc(n ? n : 1, sizeof(*b.members))) ||
	    !(b.fill = calloc(n ? n : 1, sizeof(*b.fill))) ||
	    !(rows = json_array()))
		rc = nomem(err);
	if (!rc && !(rc = read_batch(t, members, &b, err)))
		rc = compare_all(t, &b, rows, err);
	free(b.e);
	free(b.pairs);
	free(b.variants);
	free(b.start);
	free(b.members);
	free(b.fill);
	if (rc) {
		json_decref(rows);
		return rc;
	}
	*out = rows;
	return 0;
}

static int pp_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"baseline_mean", "baseline_variant", "batch_size", "compared_pair_count",
		"confidence_95_high", "confidence_95_low", "incomplete_pair_count",
		"loss_rate", "losses", "mean_paired_delta", "missing_score_count",
		"non_finite_score_count", "pair_field", "preference_rate", "score_field",
		"standard_error_delta", "tie_rate", "ties", "total_pair_count", "variant",
		"variant_field", "variant_mean", "win_rate", "wins", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_paired_preference = {
	.name = "batch_paired_preference",
	.description = "Wins, losses and ties of each variant's scores against a baseline "
		       "variant's on the same items over a batch (ELSPETH 0.7.1)",
	.options = pp_opts,
	.open = pp_open,
	.flush = pp_flush,
	.close = pp_close,
	.outputs = pp_outputs,
};

/*
 * aggregation_batch_stats.c — the "batch_stats" aggregation: count, sum and
 * mean of `value_field` over a batch, optionally per distinct value of
 * `group_by`.
 *
 * Transform mode: one row per group, groups in order of first appearance
 * among the members: {"count", "sum", "batch_size", "mean" (when
 * compute_mean), <group_by>: value (when grouped)} — ELSPETH 0.4.1's
 * fields in its order (plugins/transforms/batch_stats.py, ADR 0018).
 * batch_size is the group's members, count those with a usable value.
 * Passthrough mode (ELSPETH refuses it for batch_stats): each member
 * copied, with its group's figures added as batch_count, batch_sum,
 * batch_size, batch_mean.
 *
 * Decisions (an auditor must be able to recompute every figure):
 *  - Values are JSON integers and reals, and strings holding a decimal
 *    number ("12", " 12.5 ", "1e3"), since CSV sources without a schema give
 *    text; "12" counts as an integer (a real beyond +-2^53), "12.5" as a
 *    real.
 *  - A member whose value is missing, null or "" (a CSV empty cell) is not
 *    a number to use: it is left out of count/sum/mean but counted in
 *    batch_size, so batch_size - count = the members skipped. (ELSPETH
 *    fails the run on such a member, and on a numeric string.)
 *  - Any other value (a boolean, a non-numeric string, NaN/Infinity text,
 *    an object, an array) fails the batch: CORE_EDATA naming the member's
 *    0-based index in the batch and the field. So does a member without the
 *    group_by field (null is a group of its own).
 *  - A group with no usable value reports count 0 and null sum and mean,
 *    rather than a made-up 0.
 *  - The sum of integers is an integer while it stays within +-(2^53 - 1)
 *    (what canonical JSON keeps exact); past that, on int64 overflow, or
 *    with any real member, it is a real. Reals are added with Neumaier's
 *    compensated summation (as Python's sum() does), in member order, so
 *    the result is deterministic. A sum beyond the range of a double fails
 *    the batch. mean = sum / count, always a real.
 *  - Group values are compared as JSON values: "1", 1 and 1.0 are three
 *    groups; objects compare with sorted keys. A batch with one group value
 *    gives ELSPETH's single row; ELSPETH fails the run on a batch with
 *    several, where we give one row per group.
 *  - Nothing is overwritten: group_by naming an output figure is a config
 *    error; in passthrough mode a member already holding a batch_* field
 *    fails the batch.
 *
 * State is read-only after open; flush allocates everything it uses.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

/* Integers canonical JSON keeps exact. */
#define STATS_INT_MAX 9007199254740991LL

struct batch_stats {
	plg_schema *schema;
	char *value_field;
	char *group_by; /* NULL: one group */
	bool mean;
};

/* A value of value_field. */
struct num {
	bool is_int;
	json_int_t i;
	double d;
};

/* One group's running figures. */
struct group {
	json_t *key;        /* the group_by value (borrowed from a member) */
	size_t count, skipped;
	json_int_t isum;    /* integers, exact */
	bool real;          /* the sum is a real */
	double rsum, rcomp; /* reals (and int64 spills), Neumaier */
};

/* The figures, in output order; "mean" only with compute_mean. Their names
 * in transform mode, and in passthrough mode. */
static const char *const figures[] = { "count", "sum", "batch_size", "mean",
	NULL };
static const char *const member_figures[] = { "batch_count", "batch_sum",
	"batch_size", "batch_mean", NULL };

/* ------------------------------------------------------------ options */

static int check_group_by(const struct batch_stats *s, const core_node *opts,
			  core_err *err)
{
	for (size_t i = 0; s->group_by && figures[i]; i++) {
		if (strcmp(s->group_by, figures[i]) ||
		    (!s->mean && !strcmp(figures[i], "mean")))
			continue;
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "group_by"),
				   "group_by '%s' collides with an output field of "
				   "batch_stats (count, sum, batch_size%s); rename "
				   "the field first", s->group_by,
				   s->mean ? ", mean" : "");
	}
	return 0;
}

static const plg_option bs_own[] = {
	{ "value_field", "string", true, NULL,
	  "the numeric field summed" },
	{ "group_by", "string", false, NULL,
	  "a field whose value splits the batch into groups" },
	{ "compute_mean", "boolean", false, "true",
	  "add the mean" },
	{ NULL }
};
static const plg_option *const bs_opts[] = { bs_own, plg__schema_opts, plg__input_opts, NULL };

static int parse_options(struct batch_stats *s, const core_node *opts,
			 core_err *err)
{
	const char *value = NULL, *group = NULL;
	int rc;

	s->mean = true;
	rc = plg__check_options(opts, bs_opts, err);
	if (!rc)
		rc = plg__opt_field(opts, "value_field", true, &value, err);
	if (!rc)
		rc = plg__opt_field(opts, "group_by", false, &group, err);
	if (!rc)
		rc = core_opt_bool(opts, "compute_mean", &s->mean, err);
	if (!rc)
		rc = plg__schema_parse(core_map_get(opts, "schema"), &s->schema,
				       err);
	if (rc)
		return rc;
	s->value_field = strdup(value);
	s->group_by = group ? strdup(group) : NULL;
	if (!s->value_field || (group && !s->group_by))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return check_group_by(s, opts, err);
}

static void bs_close(void *state);

static int bs_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	struct batch_stats *s = calloc(1, sizeof(*s));
	int rc;

	(void)env; /* needs nothing of the run's */
	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, err);
	if (rc) {
		bs_close(s);
		return rc;
	}
	*state = s;
	return 0;
}

/* -------------------------------------------------------------- values */

/* A numeric string: 0, -1 when it is not a finite decimal number, -2 when
 * out of memory. */
static int parse_text(const json_t *v, struct num *n)
{
	const char *b = json_string_value(v), *e = b + json_string_length(v);
	bool integral;
	long long x;
	char *buf;

	while (b < e && (*b == ' ' || *b == '\t' || *b == '\r' || *b == '\n'))
		b++;
	while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		e--;
	if (!plg__is_decimal(b, e, &integral))
		return -1;
	buf = strndup(b, (size_t)(e - b));
	if (!buf)
		return -2;
	errno = 0;
	x = integral ? strtoll(buf, NULL, 10) : 0;
	if (integral && !errno && x <= STATS_INT_MAX && x >= -STATS_INT_MAX)
		*n = (struct num){ .is_int = true, .i = x, .d = (double)x };
	else
		*n = (struct num){ .d = strtod(buf, NULL) };
	free(buf);
	return isfinite(n->d) ? 0 : -1;
}

/* 0: a number in *n; 1: no value (missing, null, ""); -1: not a number;
 * -2: out of memory. */
static int get_num(const json_t *v, struct num *n)
{
	if (!v || json_is_null(v) ||
	    (json_is_string(v) && !json_string_length(v)))
		return 1;
	if (json_is_integer(v)) {
		n->is_int = true;
		n->i = json_integer_value(v);
		n->d = (double)n->i;
		return 0;
	}
	if (json_is_real(v)) {
		*n = (struct num){ .d = json_real_value(v) };
		return 0;
	}
	return json_is_string(v) ? parse_text(v, n) : -1;
}

static const char *kind_of(const json_t *v)
{
	if (json_is_string(v))
		return "a string that is not a number";
	if (json_is_boolean(v))
		return "a boolean";
	if (json_is_object(v))
		return "an object";
	return json_is_array(v) ? "an array" : "a non-numeric value";
}

/* ------------------------------------------------------------- figures */

static void neumaier_add(struct group *g, double x)
{
	double t = g->rsum + x;

	if (fabs(g->rsum) >= fabs(x))
		g->rcomp += (g->rsum - t) + x;
	else
		g->rcomp += (x - t) + g->rsum;
	g->rsum = t;
}

static void group_add(struct group *g, const struct num *n)
{
	json_int_t s;

	if (!n->is_int) {
		g->real = true;
		neumaier_add(g, n->d);
	} else if (__builtin_add_overflow(g->isum, n->i, &s)) {
		g->real = true;
		neumaier_add(g, (double)g->isum);
		g->isum = n->i;
	} else {
		g->isum = s;
	}
	g->count++;
}

static json_t *num_json(const struct num *n)
{
	return n->is_int ? json_integer(n->i) : json_real(n->d);
}

/* The sum as a number in *n; -1 when it overflows a double. */
static int group_sum(const struct group *g, struct num *n)
{
	struct group t = *g;

	if (!g->real && g->isum <= STATS_INT_MAX && g->isum >= -STATS_INT_MAX) {
		*n = (struct num){ .is_int = true, .i = g->isum,
				   .d = (double)g->isum };
		return 0;
	}
	neumaier_add(&t, (double)t.isum);
	*n = (struct num){ .d = t.rsum + t.rcomp };
	return isfinite(n->d) ? 0 : -1;
}

/* The value of figure f (a new reference; NULL when out of memory). */
static json_t *figure(const struct group *g, const struct num *sum,
		      const char *f)
{
	if (!strcmp(f, "count"))
		return json_integer((json_int_t)g->count);
	if (!strcmp(f, "batch_size"))
		return json_integer((json_int_t)(g->count + g->skipped));
	if (!g->count)
		return json_null();
	if (!strcmp(f, "sum"))
		return num_json(sum);
	return json_real(sum->d / (double)g->count); /* mean */
}

/* " in the group where <group_by> is <value>" (cut at a UTF-8 boundary),
 * or "" when not grouped. */
static const char *group_label(const struct batch_stats *s,
			       const struct group *g, char *buf, size_t cap)
{
	char *t;
	size_t n;

	if (!s->group_by)
		return "";
	t = json_dumps(g->key, JSON_ENCODE_ANY | JSON_COMPACT);
	n = t ? strlen(t) : 0;
	if (n > 64)
		n = core_utf8_cut(t, 61);
	snprintf(buf, cap, " in the group where %s is %.*s%s", s->group_by,
		 (int)n, t ? t : "", t && n < strlen(t) ? "..." : "");
	free(t);
	return buf;
}

/* Sets the figures in o, under the names in `names` (figures or
 * member_figures). */
static int put_figures(const struct batch_stats *s, const struct group *g,
		       const char *const *names, json_t *o, core_err *err)
{
	struct num sum = { 0 };
	char label[192];

	if (g->count && group_sum(g, &sum))
		return core_err_set(err, CORE_EDATA,
				    "the sum of field '%s'%s is beyond the range "
				    "of a double", s->value_field,
				    group_label(s, g, label, sizeof(label)));
	for (size_t i = 0; figures[i]; i++) {
		if (!s->mean && !strcmp(figures[i], "mean"))
			continue;
		if (json_object_set_new(o, names[i], figure(g, &sum, figures[i])))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------------- groups */

/* The groups seen so far, indexed by the compact JSON of their value. */
struct grouping {
	struct group *g;
	size_t ng;
	size_t *of;   /* of[i]: the group of member i */
	json_t *index;
};

static int find_group(const struct batch_stats *s, struct grouping *gr,
		      const json_t *m, size_t i, size_t *out, core_err *err)
{
	json_t *key = s->group_by ? json_object_get(m, s->group_by) : NULL;
	char *text;
	json_t *hit;

	if (!s->group_by) {
		gr->ng = 1;
		*out = 0;
		return 0;
	}
	if (!key)
		return core_err_set(err, CORE_EDATA,
				    "batch member %zu: group_by field '%s' is not "
				    "in the row", i, s->group_by);
	text = json_dumps(key, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
	if (!text)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	hit = json_object_get(gr->index, text);
	*out = hit ? (size_t)json_integer_value(hit) : gr->ng;
	if (!hit) {
		gr->g[gr->ng++].key = key;
		if (json_object_set_new(gr->index, text,
					json_integer((json_int_t)*out))) {
			free(text);
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		}
	}
	free(text);
	return 0;
}

static int add_member(const struct batch_stats *s, struct grouping *gr,
		      const json_t *m, size_t i, core_err *err)
{
	const json_t *v = json_object_get(m, s->value_field);
	struct num n = { 0 };
	int got = get_num(v, &n), rc;

	if (got == -2)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (got < 0)
		return core_err_set(err, CORE_EDATA,
				    "batch member %zu: field '%s' is not a number: "
				    "got %s", i, s->value_field, kind_of(v));
	if ((rc = find_group(s, gr, m, i, &gr->of[i], err)))
		return rc;
	if (got)
		gr->g[gr->of[i]].skipped++;
	else
		group_add(&gr->g[gr->of[i]], &n);
	return 0;
}

/* ------------------------------------------------------------- output */

static int emit_groups(const struct batch_stats *s, const struct grouping *gr,
		       json_t *out, core_err *err)
{
	int rc = 0;

	for (size_t k = 0; !rc && k < gr->ng; k++) {
		json_t *o = json_object();

		if (!o || json_array_append_new(out, o))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		rc = put_figures(s, &gr->g[k], figures, o, err);
		if (!rc && s->group_by &&
		    json_object_set(o, s->group_by, gr->g[k].key))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	return rc;
}

static int check_member(const struct batch_stats *s, const json_t *m,
			size_t i, core_err *err)
{
	for (size_t k = 0; figures[k]; k++) {
		if (!s->mean && !strcmp(figures[k], "mean"))
			continue;
		if (json_object_get(m, member_figures[k]))
			return core_err_set(err, CORE_EDATA,
					    "batch member %zu: field '%s' is already "
					    "in the row and batch_stats (passthrough) "
					    "would overwrite it; rename it first",
					    i, member_figures[k]);
	}
	return 0;
}

static int emit_members(const struct batch_stats *s, const struct grouping *gr,
			json_t *const *members, size_t n, json_t *out,
			core_err *err)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		json_t *o;

		if ((rc = check_member(s, members[i], i, err)))
			return rc;
		o = json_copy(members[i]);
		if (!o || json_array_append_new(out, o))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		rc = put_figures(s, &gr->g[gr->of[i]], member_figures, o, err);
	}
	return rc;
}

static int bs_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct batch_stats *s = state;
	struct grouping gr = { 0 };
	json_t *rows = json_array();
	int rc = CORE_ENOMEM;

	gr.g = calloc(n ? n : 1, sizeof(*gr.g));
	gr.of = calloc(n ? n : 1, sizeof(*gr.of));
	gr.index = json_object();
	if (!rows || !gr.g || !gr.of || !gr.index) {
		core_err_set(err, CORE_ENOMEM, "out of memory");
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = add_member(s, &gr, members[i], i, err)))
			goto out_free;
	rc = passthrough ? emit_members(s, &gr, members, n, rows, err)
			 : emit_groups(s, &gr, rows, err);
out_free:
	json_decref(gr.index);
	free(gr.of);
	free(gr.g);
	if (rc)
		json_decref(rows);
	else
		*out = rows;
	return rc;
}

static void bs_close(void *state)
{
	struct batch_stats *s = state;

	if (!s)
		return;
	free(s->value_field);
	free(s->group_by);
	plg__schema_free(s->schema);
	free(s);
}

/* A batch's row may have any shape; count, sum, batch_size and (with
 * compute_mean) mean are always there, as ELSPETH declares them. */
static int bs_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	bool mean = true;
	int rc;

	out->shape = PLG_SHAPE_OBSERVED;
	if ((rc = core_opt_bool(options, "compute_mean", &mean, err)) ||
	    (rc = plg_outputs_add(out, err, "count")) ||
	    (rc = plg_outputs_add(out, err, "sum")) ||
	    (rc = plg_outputs_add(out, err, "batch_size")))
		return rc;
	return mean ? plg_outputs_add(out, err, "mean") : 0;
}

const plg_aggregation_ops plg__batch_stats = {
	.name = "batch_stats",
	.description = "Count, sum, batch size and mean of a numeric field over a batch, optionally per group",
	.options = bs_opts,
	.open = bs_open,
	.flush = bs_flush,
	.close = bs_close,
	.outputs = bs_outputs,
};

/*
 * batch_classifier_metrics.c — ELSPETH 0.7.1's "batch_classifier_metrics"
 * aggregation: a classifier's confusion matrix and scores over a batch
 * (ADR 0045).
 *
 * Pairs (actual_field, predicted_field) of each member; a pair with a
 * missing or null side is skipped and its index listed. Labels are
 * strings, integers or booleans, distinct by type and value, in order of
 * first appearance (actual, then predicted, member by member; then
 * positive_label when given and unseen). One row: counts, labels, the
 * confusion matrix's non-zero cells, per-label tp/fp/fn/tn/support/
 * precision/recall/f1, accuracy, macro (unweighted mean of the defined
 * per-label values), support-weighted F1 and micro scores, a summary
 * sentence, and with positive_label its binary figures. A ratio with a
 * zero denominator is null ("undefined" in the summary), never 0.
 * Floating point as Python computes it: the same operations in the same
 * order (sums left to right), so the figures are 0.7.1's to the bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

struct cm {
	plg_schema *schema;
	const char *actual, *predicted;
	json_t *positive;       /* or NULL */
};

static const plg_option cm_own[] = {
	{ "actual_field", "string", true, NULL, "the ground-truth label's field" },
	{ "predicted_field", "string", true, NULL, "the predicted label's field" },
	{ "positive_label", "string|integer|boolean", false, NULL,
	  "the positive class, for binary precision, recall and F1" },
	{ NULL }
};
static const plg_option *const cm_opts[] = { cm_own, plg__schema_opts, plg__input_opts, NULL };

static void cm_close(void *state)
{
	struct cm *t = state;

	if (!t)
		return;
	json_decref(t->positive);
	plg__schema_free(t->schema);
	free(t);
}

static int parse_options(void *state, const core_node *opts, core_err *err)
{
	struct cm *t = state;
	const core_node *pl = core_map_get(opts, "positive_label");
	int rc;

	if ((rc = plg__check_options(opts, cm_opts, err)) ||
	    (rc = plg__opt_field(opts, "actual_field", true, &t->actual, err)) ||
	    (rc = plg__opt_field(opts, "predicted_field", true, &t->predicted, err)) ||
	    (rc = plg__schema_parse(core_map_get(opts, "schema"), &t->schema, err)))
		return rc;
	if (!strcmp(t->actual, t->predicted))
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "predicted_field"),
				   "actual_field and predicted_field must differ");
	if (pl && !core_node_is_null(pl)) {
		if (!(t->positive = core_node_to_json(pl)))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		if (!json_is_string(t->positive) && !json_is_integer(t->positive) &&
		    !json_is_boolean(t->positive))
			return core_err_at(err, CORE_ECONFIG, pl,
					   "positive_label must be a string, an integer or a boolean");
		if (json_is_string(t->positive) &&
		    !json_string_value(t->positive)[strspn(json_string_value(t->positive), " \t\r\n")])
			return core_err_at(err, CORE_ECONFIG, pl, "positive_label must not be empty");
	}
	return 0;
}

static int cm_open(const plg_env *env, const core_node *options, void **state,
		   core_err *err)
{
	(void)env; /* needs nothing of the run's */
	return plg__open_state(sizeof(struct cm), parse_options, cm_close, options, state, err);
}

static size_t label_of(const json_t **labels, size_t *n, const json_t *v)
{
	for (size_t i = 0; i < *n; i++)
		if (plg__same_bucket(labels[i], v))
			return i;
	labels[*n] = v;
	return (*n)++;
}

/* A ratio, or null when the denominator is 0 (its numerator's type kept
 * out: Python's float(n / d)). */
static json_t *ratio(double num, double den, bool *defined, double *out)
{
	*defined = den != 0;
	*out = *defined ? num / den : 0;
	return *defined ? json_real(*out) : json_null();
}

static void fmt_metric(char *buf, size_t cap, bool defined, double v)
{
	if (defined)
		snprintf(buf, cap, "%.3f", v);
	else
		snprintf(buf, cap, "undefined");
}

typedef struct lstat {
	long long tp, fp, fn, tn;
	bool dp, dr, df;
	double p, r, f;
} lstat;

static json_t *f1_of(bool dp, double p, bool dr, double r, bool *df, double *f)
{
	if (!dp || !dr) {
		*df = false;
		return json_null();
	}
	return ratio(2 * p * r, p + r, df, f);
}

static int check_label(const json_t *v, const char *field, size_t row, core_err *err)
{
	if (json_is_string(v) || json_is_integer(v) || json_is_boolean(v))
		return 0;
	return core_err_set(err, CORE_EDATA,
		"Field '%s' must be a scalar label (str, int, or bool), got %s in row %zu",
		field, core_py_type(v), row);
}

static int cm_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, json_t **out, core_err *err)
{
	const struct cm *t = state;
	size_t np = 0, nl = 0, *act = NULL, *pred = NULL, correct = 0;
	const json_t **labels = NULL;
	long long *conf = NULL;
	lstat *ls = NULL;
	json_t *missing = json_array(), *row = NULL, *per = NULL, *cells = NULL, *lab = NULL;
	int rc = 0;

	if (passthrough)
		rc = plg__summary_only("batch_classifier_metrics", passthrough, err);
	else if (!missing || !(act = calloc(n + 1, sizeof(*act))) ||
		 !(pred = calloc(n + 1, sizeof(*pred))) ||
		 !(labels = calloc(2 * n + 1, sizeof(*labels))))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < n; i++) {
		const json_t *a = json_object_get(members[i], t->actual);
		const json_t *p = json_object_get(members[i], t->predicted);

		if (!a || !p || json_is_null(a) || json_is_null(p)) {
			json_array_append_new(missing, json_integer((json_int_t)i));
			continue;
		}
		if ((rc = check_label(a, t->actual, i, err)) ||
		    (rc = check_label(p, t->predicted, i, err)))
			break;
		act[np] = label_of(labels, &nl, a);
		pred[np] = label_of(labels, &nl, p);
		correct += act[np] == pred[np];
		np++;
	}
	if (!rc && !np)
		rc = core_err_set(err, CORE_EDATA,
			"validation_failed: no_valid_label_pairs (batch of %zu, %zu skipped)",
			n, json_array_size(missing));
	if (!rc && t->positive)
		label_of(labels, &nl, t->positive);
	if (!rc && (!(conf = calloc(nl * nl + 1, sizeof(*conf))) ||
		    !(ls = calloc(nl + 1, sizeof(*ls)))))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc)
		goto out;
	for (size_t i = 0; i < np; i++)
		conf[act[i] * nl + pred[i]]++;
	lab = json_array();
	cells = json_array();
	per = json_array();
	for (size_t a = 0; a < nl; a++) {
		json_array_append_new(lab, json_deep_copy(labels[a]));
		for (size_t p = 0; p < nl; p++)
			if (conf[a * nl + p])
				json_array_append_new(cells, json_pack("{s:O,s:O,s:I}",
					"actual", labels[a], "predicted", labels[p],
					"count", (json_int_t)conf[a * nl + p]));
	}
	{
		double mp = 0, mr = 0, mf = 0, wn = 0, accv, mip, mir, mif;
		long long cp = 0, cr = 0, cf = 0, wd = 0, stp = 0, sfp = 0, sfn = 0;
		bool dacc, dmip, dmir, dmif;
		char s_acc[16], s_mf[16], s_mif[16], summary[1024];
		json_t *jacc, *jmip, *jmir, *jmif;

		for (size_t l = 0; l < nl; l++) {
			lstat *s = &ls[l];
			json_t *jp, *jr, *jf;

			s->tp = conf[l * nl + l];
			for (size_t o = 0; o < nl; o++) {
				if (o == l)
					continue;
				s->fp += conf[o * nl + l];
				s->fn += conf[l * nl + o];
			}
			s->tn = (long long)np - s->tp - s->fp - s->fn;
			jp = ratio((double)s->tp, (double)(s->tp + s->fp), &s->dp, &s->p);
			jr = ratio((double)s->tp, (double)(s->tp + s->fn), &s->dr, &s->r);
			jf = f1_of(s->dp, s->p, s->dr, s->r, &s->df, &s->f);
			json_array_append_new(per, json_pack("{s:O,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:o}",
				"label", labels[l], "tp", (json_int_t)s->tp, "fp", (json_int_t)s->fp,
				"fn", (json_int_t)s->fn, "tn", (json_int_t)s->tn,
				"support", (json_int_t)(s->tp + s->fn), "precision", jp,
				"recall", jr, "f1", jf));
			if (s->dp) { mp += s->p; cp++; }
			if (s->dr) { mr += s->r; cr++; }
			if (s->df) {
				mf += s->f;
				cf++;
				wn += s->f * (double)(s->tp + s->fn);
				wd += s->tp + s->fn;
			}
			stp += s->tp;
			sfp += s->fp;
			sfn += s->fn;
		}
		jacc = ratio((double)correct, (double)np, &dacc, &accv);
		jmip = ratio((double)stp, (double)(stp + sfp), &dmip, &mip);
		jmir = ratio((double)stp, (double)(stp + sfn), &dmir, &mir);
		jmif = f1_of(dmip, mip, dmir, mir, &dmif, &mif);
		fmt_metric(s_acc, sizeof(s_acc), dacc, accv);
		fmt_metric(s_mf, sizeof(s_mf), cf > 0, cf ? mf / (double)cf : 0);
		fmt_metric(s_mif, sizeof(s_mif), dmif, mif);
		snprintf(summary, sizeof(summary), "Classifier metrics for %s vs %s: %zu rows, "
			 "%zu valid label pairs, %zu correct, accuracy %s, macro F1 %s, micro F1 %s.",
			 t->actual, t->predicted, n, np, correct, s_acc, s_mf, s_mif);
		row = json_pack("{s:s,s:s,s:I,s:I,s:I,s:O,s:O,s:O,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s}",
			"actual_field", t->actual, "predicted_field", t->predicted,
			"batch_size", (json_int_t)n, "count", (json_int_t)np,
			"missing_count", (json_int_t)json_array_size(missing),
			"labels", lab, "confusion_matrix", cells, "per_label", per,
			"accuracy", jacc,
			"macro_precision", cp ? json_real(mp / (double)cp) : json_null(),
			"macro_recall", cr ? json_real(mr / (double)cr) : json_null(),
			"macro_f1", cf ? json_real(mf / (double)cf) : json_null(),
			"weighted_f1", wd ? json_real(wn / (double)wd) : json_null(),
			"micro_precision", jmip, "micro_recall", jmir, "micro_f1", jmif,
			"summary", summary);
	}
	if (row && json_array_size(missing))
		json_object_set(row, "missing_indices", missing);
	if (row && t->positive) {
		size_t p = label_of(labels, &nl, t->positive);
		const lstat *s = &ls[p];

		json_object_set(row, "positive_label", t->positive);
		json_object_set_new(row, "binary_tp", json_integer(s->tp));
		json_object_set_new(row, "binary_fp", json_integer(s->fp));
		json_object_set_new(row, "binary_fn", json_integer(s->fn));
		json_object_set_new(row, "binary_tn", json_integer(s->tn));
		json_object_set_new(row, "binary_precision", s->dp ? json_real(s->p) : json_null());
		json_object_set_new(row, "binary_recall", s->dr ? json_real(s->r) : json_null());
		json_object_set_new(row, "binary_f1", s->df ? json_real(s->f) : json_null());
	}
	*out = NULL;
	if (!row || !(*out = json_array()) || json_array_append_new(*out, row)) {
		if (!*out)
			json_decref(row); /* append_new took it even when it failed */
		json_decref(*out);
		*out = NULL;
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
out:
	json_decref(lab);
	json_decref(cells);
	json_decref(per);
	json_decref(missing);
	free(act);
	free(pred);
	free(labels);
	free(conf);
	free(ls);
	return rc;
}

static int cm_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	static const char *const fields[] = {
		"accuracy", "actual_field", "batch_size", "confusion_matrix", "count",
		"labels", "macro_f1", "macro_precision", "macro_recall", "micro_f1",
		"micro_precision", "micro_recall", "missing_count", "per_label",
		"predicted_field", "summary", "weighted_f1", NULL
	};

	(void)options;
	return plg__outputs_list(out, fields, err);
}

const plg_aggregation_ops plg__batch_classifier_metrics = {
	.name = "batch_classifier_metrics",
	.description = "A classifier's confusion matrix, accuracy, precision, recall and F1 over a batch (ELSPETH 0.7.1)",
	.options = cm_opts,
	.open = cm_open,
	.flush = cm_flush,
	.close = cm_close,
	.outputs = cm_outputs,
};

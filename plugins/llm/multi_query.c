/*
 * multi_query.c — `llm_multi_query`: several typed queries per row,
 * sent concurrently on the transform's shared pool (docs/architecture.md §10).
 *
 * Options: those of the client (llm.h), plus
 *   template   optional default prompt for queries without their own
 *              (or template_file; template_source), and lookup (or
 *              lookup_file; lookup_source): the templates' `lookup`
 *   queries:   a list of
 *     name            the column prefix ([a-z0-9_]+)
 *     input_fields    fields the query needs (a row lacking one is a row
 *                     error naming query and field)
 *     template        optional; default: the transform's template, else
 *                     "<field>: {{ row['<field>'] }}" lines of input_fields
 *     output_fields   [{suffix, type: string|integer|number|boolean|enum,
 *                      values: [...] for enum}]
 *     response_format structured (default: a JSON schema in the request)
 *                     | standard (the schema as an instruction appended to
 *                     the prompt; the answer may come in a ```json fence)
 * Each answer is type-checked; its values land in {name}_{suffix}. A row
 * succeeds only if every query does; else it is a row error naming the
 * query (on_error).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"
#include "plugins/template/template.h"
#include "plugins/plugins_internal.h"

typedef struct query {
	char *name;
	char **inputs;
	size_t ninputs;
	tpl_template *tpl;
	llm_field *fields;
	size_t nfields;
	bool structured;
} query;

typedef struct multi {
	llm_client client;
	json_t *lookup;
	query *q;
	size_t nq;
} multi;

static void query_release(query *q)
{
	free(q->name);
	for (size_t i = 0; i < q->ninputs; i++)
		free(q->inputs[i]);
	free(q->inputs);
	tpl_free(q->tpl);
	for (size_t i = 0; i < q->nfields; i++)
		llm__field_release(&q->fields[i]);
	free(q->fields);
}

void llm__field_release(llm_field *f)
{
	free((char *)f->suffix);
	for (size_t v = 0; v < f->nvalues; v++)
		free((char *)f->values[v]);
	free((char **)f->values);
}

static void multi_close(void *state)
{
	multi *m = state;

	if (!m)
		return;
	llm_client_release(&m->client);
	for (size_t i = 0; i < m->nq; i++)
		query_release(&m->q[i]);
	free(m->q);
	json_decref(m->lookup);
	free(m);
}

int llm__field_parse(llm_field *f, const core_node *n, core_err *err)
{
	static const char *const keys[] = { "suffix", "type", "values", NULL };
	const char *suffix = NULL, *type = NULL, **values = NULL;
	const core_node *vn = core_map_get(n, "values");
	size_t nvalues = 0;
	int rc;

	if ((rc = core_map_check_keys(n, keys, err)) ||
	    (rc = core_opt_str(n, "suffix", true, &suffix, err)) ||
	    (rc = core_opt_str(n, "type", true, &type, err)))
		return rc;
	if ((rc = llm_type_parse(type, &f->type, err)))
		return core_err_at(err, rc, core_map_get(n, "type"),
				   "type must be string, integer, number, boolean or enum");
	if ((f->type == LLM_T_ENUM) != (vn != NULL))
		return core_err_at(err, CORE_ECONFIG, n, f->type == LLM_T_ENUM ?
				   "an enum output field needs `values`" :
				   "`values` is only for type enum");
	if (vn && (rc = core_node_str_list(vn, &values, &nvalues, err)))
		return rc;
	if (vn && !nvalues)
		rc = core_err_at(err, CORE_ECONFIG, vn, "`values` is empty");
	f->suffix = strdup(suffix);
	f->nvalues = nvalues;
	f->values = (const char *const *)llm__dup_list(values, nvalues);
	free(values);
	if (!rc && (!f->suffix || !f->values))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	return rc;
}

/* The default prompt of a query: one "field: value" line per input. */
static int default_template(query *q, core_err *err)
{
	core_buf b = { 0 };
	int rc;

	for (size_t i = 0; i < q->ninputs; i++)
		core_buf_printf(&b, "%s%s: {{ row['%s'] }}", i ? "\n" : "",
				q->inputs[i], q->inputs[i]);
	rc = core_buf_putc(&b, '\0') ? core_err_set(err, CORE_ENOMEM, "out of memory") :
	     tpl_compile(b.data, &q->tpl, err);
	core_buf_release(&b);
	return rc;
}

static int parse_query(query *q, const core_node *n, const core_node *o,
		       const char *shared_tpl, core_err *err)
{
	static const char *const keys[] = { "name", "input_fields", "template",
					    "output_fields", "response_format", NULL };
	static const char *const formats[] = { "structured", "standard", NULL };
	const core_node *fn, *rf = core_map_get(n, "response_format");
	const char *name = NULL, *tpl = NULL, **inputs = NULL;
	int fmt = 0, rc;

	if ((rc = core_map_check_keys(n, keys, err)) ||
	    (rc = core_opt_str(n, "name", true, &name, err)) ||
	    (rc = core_opt_str(n, "template", false, &tpl, err)) ||
	    (rf && (rc = core_node_enum(rf, formats, &fmt, err))))
		return rc;
	if (!name[0] || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "name"),
				   "a query name is lowercase letters, digits and _ (it prefixes columns)");
	q->structured = fmt == 0;
	if (!(q->name = strdup(name)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((fn = core_map_get(n, "input_fields")) &&
	    (rc = core_node_str_list(fn, &inputs, &q->ninputs, err)))
		return rc;
	q->inputs = llm__dup_list(inputs, q->ninputs);
	free(inputs);
	if (!q->inputs)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!(fn = core_map_get(n, "output_fields")) || fn->kind != CORE_NODE_SEQ || !fn->len)
		return core_err_at(err, CORE_ECONFIG, fn ? fn : n,
				   "output_fields: a non-empty list of {suffix, type} is required");
	if (!(q->fields = calloc(fn->len, sizeof(*q->fields))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < fn->len; i++, q->nfields++)
		if ((rc = llm__field_parse(&q->fields[i], fn->items[i], err)))
			return rc;
	if (!tpl)
		tpl = shared_tpl;
	if (tpl && core_map_get(n, "template") &&
	    (rc = tpl_compile(tpl, &q->tpl, err)))
		return llm__template_error(core_map_get(n, "template"), err);
	if (tpl && !q->tpl &&
	    (rc = llm__template_compile(o, tpl, core_map_get(o, "template"),
					&q->tpl, err)))
		return rc;
	if (!tpl && !q->ninputs)
		return core_err_at(err, CORE_ECONFIG, n,
				   "query '%s' has neither a template nor input_fields", name);
	return tpl ? 0 : default_template(q, err);
}

static const plg_option mq_own[] = {
	{ "queries", "array", true, NULL,
	  "the queries: name, input_fields, template, output_fields (suffix, type, values), response_format (structured or standard)" },
	{ NULL }
};
static const plg_option *const mq_opts[] = { llm_client_opts, llm__prompt_opts, mq_own, plg__input_opts, plg__schema_opts, NULL };

static int multi_parse(multi *m, const plg_env *env, const core_node *o,
		       core_err *err)
{
	const core_node *qn;
	const char *tpl = NULL;
	int rc;

	if ((rc = plg__check_options(o, mq_opts, err)) ||
	    (rc = core_opt_str(o, "template", false, &tpl, err)))
		return rc;
	if (!(qn = core_map_get(o, "queries")) || qn->kind != CORE_NODE_SEQ || !qn->len)
		return core_err_at(err, CORE_ECONFIG, qn ? qn : o,
				   "queries: a non-empty list of queries is required");
	if (!(m->q = calloc(qn->len, sizeof(*m->q))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < qn->len; i++, m->nq++) {
		if ((rc = parse_query(&m->q[i], qn->items[i], o, tpl, err))) {
			m->nq++;
			return rc;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->q[j].name, m->q[i].name))
				return core_err_at(err, CORE_ECONFIG, qn->items[i],
						   "query name '%s' is used twice", m->q[i].name);
	}
	if ((rc = llm__lookup(o, &m->lookup, err)))
		return rc;
	return llm_client_open(&m->client, env, o, err);
}

static int multi_open(const plg_env *env, const core_node *options,
		      void **state, core_err *err)
{
	multi *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = multi_parse(m, env, options, err))) {
		multi_close(m);
		return rc;
	}
	*state = m;
	return 0;
}

/* The request body of query q for row. */
static int build(const multi *m, const query *q, const json_t *row,
		 core_buf *body, core_err *err)
{
	core_buf prompt = { 0 };
	llm_request rq;
	int rc = 0;

	for (size_t i = 0; !rc && i < q->ninputs; i++)
		if (!json_object_get(row, q->inputs[i]))
			rc = core_err_set(err, CORE_EDATA, "query '%s': input field '%s' is missing",
					  q->name, q->inputs[i]);
	if (!rc && (rc = tpl_render_lookup(q->tpl, row, m->lookup, &prompt, err)))
		core_err_prefix(err, "query '%s'", q->name);
	if (!rc && !q->structured)
		rc = llm_schema_instruction(&prompt, q->fields, q->nfields, err);
	if (!rc && core_buf_putc(&prompt, '\0'))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc) {
		rq = (llm_request){ .model = m->client.model,
				    .system_prompt = m->client.system_prompt,
				    .user_prompt = prompt.data,
				    .has_temperature = m->client.has_temperature,
				    .temperature = m->client.temperature,
				    .max_tokens = m->client.max_tokens };
		if (q->structured) {
			rq.schema_name = q->name;
			rq.fields = q->fields;
			rq.nfields = q->nfields;
		}
		rc = llm_request_append(body, &rq, err);
	}
	core_buf_release(&prompt);
	return rc;
}

/* Every answer type-checked into a copy of the row. */
static int collect(const multi *m, const http_req *r, llm_answer *a,
		   const json_t *row, json_t **out, core_err *err)
{
	json_t *o = json_deep_copy(row);
	int rc = o ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");

	for (size_t i = 0; !rc && i < m->nq; i++) {
		const query *q = &m->q[i];

		if (r[i].result != PLG_CLASS_OK)
			rc = llm_client_failed(&r[i], q->name, err);
		else if (!(rc = llm_client_answer(&r[i], q->name, &a[i], err)))
			rc = llm_answer_apply(q->name, a[i].resp.content, a[i].resp.content_len,
					      q->fields, q->nfields, o, err);
	}
	if (rc)
		json_decref(o);
	else
		*out = o;
	return rc;
}

static int multi_process(void *state, const json_t *row, json_t **out,
			 plg_ctx *ctx, core_err *err)
{
	multi *m = state;
	core_buf *bodies = calloc(m->nq, sizeof(*bodies));
	http_req *r = calloc(m->nq, sizeof(*r));
	llm_answer *a = calloc(m->nq, sizeof(*a));
	int rc = bodies && r && a ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");

	if (!rc)
		rc = llm_client_check_inputs(&m->client, row, err);
	for (size_t i = 0; !rc && i < m->nq; i++)
		if (!(rc = build(m, &m->q[i], row, &bodies[i], err)))
			llm_client_request(&m->client, &r[i], bodies[i].data,
					   bodies[i].len, m->q[i].name, &a[i]);
	if (!rc) {
		http_run(m->client.http, r, m->nq, ctx);
		if (ctx)
			ctx->context = llm_client_context(&m->client, r, m->nq);
		rc = collect(m, r, a, row, out, err);
	}
	for (size_t i = 0; r && bodies && a && i < m->nq; i++) {
		core_buf_release(&r[i].response);
		core_buf_release(&bodies[i]);
		llm_response_release(&a[i].resp);
	}
	free(a);
	free(r);
	free(bodies);
	return rc;
}

static json_t *multi_save(void *state)
{
	return llm_client_save(&((multi *)state)->client);
}

static void multi_restore(void *state, const json_t *saved)
{
	llm_client_restore(&((multi *)state)->client, saved);
}

static bool multi_capacity(void *state, plg_capacity *out)
{
	return llm_client_capacity(&((multi *)state)->client, out);
}

/* Its rows keep their schema and gain {name}_{suffix} for each output
 * field of each query (optional fields of any type: plugins.h). Read
 * leniently: a malformed query is open's to report. */
static int mq_outputs(const core_node *options, plg_outputs *out, core_err *err)
{
	const core_node *qs = core_map_get(options, "queries");
	int rc = 0;

	out->shape = PLG_SHAPE_ADDED;
	for (size_t i = 0; !rc && qs && qs->kind == CORE_NODE_SEQ && i < qs->len; i++) {
		const core_node *name = core_map_get(qs->items[i], "name");
		const core_node *fs = core_map_get(qs->items[i], "output_fields");

		if (!name || name->kind != CORE_NODE_SCALAR || !fs || fs->kind != CORE_NODE_SEQ)
			continue;
		for (size_t j = 0; !rc && j < fs->len; j++) {
			const core_node *suf = core_map_get(fs->items[j], "suffix");

			if (suf && suf->kind == CORE_NODE_SCALAR)
				rc = plg_outputs_add(out, err, "%s_%s", name->value, suf->value);
		}
	}
	return rc;
}

const plg_transform_ops plg__llm_multi_query = {
	.name = "llm_multi_query",
	.description = "Several typed LLM queries per row, sent concurrently; answers validated into {query}_{suffix} columns",
	.options = mq_opts,
	.open = multi_open,
	.process = multi_process,
	.close = multi_close,
	.save = multi_save,
	.restore = multi_restore,
	.capacity = multi_capacity,
	.outputs = mq_outputs,
};

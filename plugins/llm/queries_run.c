/*
 * queries_run.c — one row through `llm` with `queries:` (queries.c has
 * the settings), as ELSPETH 0.4.1's MultiQueryStrategy does it
 * (plugins/transforms/llm/transform.py, validation.py):
 *
 * - each query renders its template with `row` = {variable: the row's
 *   field, ..., source_row: the row} and `lookup`;
 * - with pool_size 1 (ELSPETH's default) the queries go one after another
 *   and the first failure ends the row; with more they go together;
 * - an answer is stripped of whitespace and a ``` fence; with output_fields
 *   it must be a JSON object holding each suffix with a value of its type
 *   (kept as the answer wrote it: an integer may be 3.0);
 * - the row gains, query by query: {q}_{suffix} for each output field,
 *   {q}_{response_field} (the stripped answer), {q}_{response_field}_usage
 *   ({prompt_tokens, completion_tokens}, those the answer reports) and
 *   {q}_{response_field}_model (the model that answered).
 * Any failure is a row error naming the query and ELSPETH's reason.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"

/* ------------------------------------------------ Python's str.strip() */

/* The length of the whitespace character (Python's str.isspace) at p, or
 * 0: ASCII \t\n\v\f\r, \x1c-\x1f and space, U+0085, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000. */
static size_t space_at(const unsigned char *p, const unsigned char *e)
{
	if (p >= e)
		return 0;
	if ((*p >= 9 && *p <= 13) || (*p >= 0x1c && *p <= 0x20))
		return 1;
	if (e - p >= 2 && p[0] == 0xc2 && (p[1] == 0x85 || p[1] == 0xa0))
		return 2;
	if (e - p < 3)
		return 0;
	if ((p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) ||
	    (p[0] == 0xe2 && p[1] == 0x80 && (p[2] <= 0x8a || p[2] == 0xa8 ||
					       p[2] == 0xa9 || p[2] == 0xaf)) ||
	    (p[0] == 0xe2 && p[1] == 0x81 && p[2] == 0x9f) ||
	    (p[0] == 0xe3 && p[1] == 0x80 && p[2] == 0x80))
		return 3;
	return 0;
}

/* The length of the whitespace character ending at e, or 0. */
static size_t space_before(const unsigned char *b, const unsigned char *e)
{
	for (size_t n = 1; n <= 3 && e - n >= b; n++)
		if (space_at(e - n, e) == n)
			return n;
	return 0;
}

static void strip(const char **b, const char **e)
{
	size_t n;

	while ((n = space_at((const unsigned char *)*b, (const unsigned char *)*e)))
		*b += n;
	while (*e > *b && (n = space_before((const unsigned char *)*b,
					    (const unsigned char *)*e)))
		*e -= n;
}

/* ELSPETH's strip_markdown_fences: [*b, *e) narrowed in place. */
static void strip_fences(const char **b, const char **e)
{
	const char *nl, *re;
	size_t n;

	strip(b, e);
	if (*e - *b < 3 || memcmp(*b, "```", 3) ||
	    !(nl = memchr(*b, '\n', (size_t)(*e - *b))))
		return;
	*b = nl + 1;
	for (re = *e; (n = space_before((const unsigned char *)*b,
					(const unsigned char *)re)); re -= n)
		;
	if (re - *b >= 3 && !memcmp(re - 3, "```", 3)) {
		*e = re - 3;
		strip(b, e);
	}
}

/* ELSPETH's validate_field_value: NULL if v fits f, else why (into buf). */
static const char *misfit(const llm_field *f, const json_t *v, char *buf, size_t n)
{
	core_buf list = { 0 };

	switch (f->type) {
	case LLM_T_STRING:
		if (json_is_string(v))
			return NULL;
		snprintf(buf, n, "expected string, got %s", core_py_type(v));
		return buf;
	case LLM_T_INTEGER:
		if (json_is_boolean(v))
			return "expected integer, got boolean";
		if (json_is_integer(v) ||
		    (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v)))
			return NULL;
		snprintf(buf, n, "expected integer, got %s", core_py_type(v));
		return buf;
	case LLM_T_NUMBER:
		if (json_is_boolean(v))
			return "expected number, got boolean";
		if (json_is_number(v))
			return NULL;
		snprintf(buf, n, "expected number, got %s", core_py_type(v));
		return buf;
	case LLM_T_BOOLEAN:
		if (json_is_boolean(v))
			return NULL;
		snprintf(buf, n, "expected boolean, got %s", core_py_type(v));
		return buf;
	case LLM_T_ENUM:
		if (!json_is_string(v)) {
			snprintf(buf, n, "expected string (enum), got %s", core_py_type(v));
			return buf;
		}
		for (size_t i = 0; i < f->nvalues; i++)
			if (!strcmp(f->values[i], json_string_value(v)))
				return NULL;
		for (size_t i = 0; i < f->nvalues; i++)
			core_buf_printf(&list, "%s'%s'", i ? ", " : "", f->values[i]);
		snprintf(buf, n, "value '%s' not in allowed values: [%s]",
			 json_string_value(v), list.data ? list.data : "");
		core_buf_release(&list);
		return buf;
	case LLM_T_LAST:
		break;
	}
	return "bad output type";
}

/* The output fields of query q from its answer text into cols. */
static int apply_fields(const llm__query *q, size_t qi, const char *b,
			const char *e, json_t *cols, core_err *err)
{
	json_error_t je;
	json_t *ans = json_loadb(b, (size_t)(e - b), JSON_DECODE_ANY, &je);
	char why[512];
	int rc = 0;

	if (!ans)
		return core_err_set(err, CORE_EDATA, "query '%s' (index %zu): the "
				    "answer is not JSON (json_parse_failed): %s at "
				    "byte %d", q->name, qi, je.text, je.position);
	if (!json_is_object(ans))
		rc = core_err_set(err, CORE_EDATA, "query '%s' (index %zu): the "
				  "answer is %s, not a JSON object (invalid_json_type)",
				  q->name, qi, core_py_type(ans));
	for (size_t i = 0; !rc && i < q->nfields; i++) {
		const llm_field *f = &q->fields[i];
		json_t *v = json_object_get(ans, f->suffix);
		const char *bad;

		if (!v)
			rc = core_err_set(err, CORE_EDATA, "query '%s' (index %zu): "
					  "field '%s' is missing from the answer "
					  "(missing_output_field)", q->name, qi, f->suffix);
		else if ((bad = misfit(f, v, why, sizeof(why))))
			rc = core_err_set(err, CORE_EDATA, "query '%s' (index %zu) field "
					  "'%s': %s (field_type_mismatch)", q->name,
					  qi, f->suffix, bad);
		else {
			core_buf key = { 0 };

			if (core_buf_printf(&key, "%s_%s", q->name, f->suffix) ||
			    json_object_set(cols, key.data, v))
				rc = core_err_set(err, CORE_ENOMEM, "out of memory");
			core_buf_release(&key);
		}
	}
	json_decref(ans);
	return rc;
}

/* Query q's columns from its answer, into acc. */
static int answer_columns(const llm__queries *m, const llm__query *q, size_t qi,
			  const llm_response *resp, json_t *acc, core_err *err)
{
	const char *b = resp->content, *e = b + resp->content_len;
	const char *model = resp->model ? resp->model : m->client.model;
	json_t *cols = json_object();
	int rc = cols ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");

	strip(&b, &e);
	if (!rc && b == e)
		rc = core_err_set(err, CORE_EDATA, "query '%s' (index %zu): the LLM "
				  "returned empty content (finish_reason=%s)", q->name,
				  qi, resp->finish_reason ? resp->finish_reason : "None");
	b = resp->content;
	e = b + resp->content_len;
	strip_fences(&b, &e);
	if (!rc && q->nfields)
		rc = apply_fields(q, qi, b, e, cols, err);
	if (!rc && (json_object_set_new(cols, q->col_content, json_stringn(b, (size_t)(e - b))) ||
		    json_object_set_new(cols, q->col_usage, llm__usage(resp->usage)) ||
		    json_object_set_new(cols, q->col_model, model ? json_string(model) : json_null()) ||
		    json_object_update(acc, cols)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	json_decref(cols);
	return rc;
}

/* ------------------------------------------------------------- a row */

/* The request body of query q: its template over {var: field...,
 * source_row}, ELSPETH's request fields. */
static int build(const llm__queries *m, const llm__query *q, size_t qi,
		 const json_t *row, core_buf *body, core_err *err)
{
	json_t *tctx = json_object();
	core_buf prompt = { 0 };
	llm_request rq;
	int rc = tctx ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");

	for (size_t i = 0; !rc && i < q->ninputs; i++) {
		json_t *v = json_object_get(row, q->cols[i]);

		if (!v)
			rc = core_err_set(err, CORE_EDATA, "query '%s' (index %zu): the "
					  "row has no field '%s' (input_fields %s; "
					  "template_context_failed)", q->name, qi,
					  q->cols[i], q->vars[i]);
		else
			json_object_set(tctx, q->vars[i], v);
	}
	if (!rc)
		json_object_set(tctx, "source_row", (json_t *)row);
	if (!rc && (rc = tpl_render_lookup(q->tpl ? q->tpl : m->tpl, tctx,
					   m->lookup, &prompt, err)))
		core_err_prefix(err, "query '%s' (index %zu): template_rendering_failed",
				q->name, qi);
	if (!rc && core_buf_putc(&prompt, '\0'))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc) {
		rq = (llm_request){ .model = m->client.model,
				    .system_prompt = m->client.system_prompt,
				    .user_prompt = prompt.data,
				    .has_temperature = true,
				    .temperature = m->client.temperature,
				    .max_tokens = q->max_tokens ? q->max_tokens :
						  m->client.max_tokens,
				    .response_format = q->response_format };
		rc = llm_request_append(body, &rq, err);
	}
	core_buf_release(&prompt);
	json_decref(tctx);
	return rc;
}

typedef struct run {
	core_buf *bodies;
	http_req *r;
	llm_answer *a;
	size_t *qi;       /* r[k] is query qi[k] */
	size_t n;         /* requests built */
} run;

static int finish(const llm__queries *m, run *x, size_t k, json_t *acc,
		  core_err *err)
{
	const llm__query *q = &m->q[x->qi[k]];
	int rc;

	if (x->r[k].result != PLG_CLASS_OK)
		return llm_client_failed(&x->r[k], q->name, err);
	if ((rc = llm_client_answer(&x->r[k], q->name, &x->a[k], err)))
		return rc;
	return answer_columns(m, q, x->qi[k], &x->a[k].resp, acc, err);
}

static int add(const llm__queries *m, run *x, size_t i, const json_t *row,
	       core_err *err)
{
	size_t k = x->n;
	int rc = build(m, &m->q[i], i, row, &x->bodies[k], err);

	if (rc)
		return rc;
	x->qi[k] = i;
	llm_client_request(&m->client, &x->r[k], x->bodies[k].data,
			   x->bodies[k].len, m->q[i].name, &x->a[k]);
	x->n++;
	return 0;
}

/* One query at a time; the first failure ends the row. */
static int sequential(const llm__queries *m, run *x, const json_t *row,
		      json_t *acc, plg_ctx *ctx, core_err *err)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < m->nq; i++)
		if (!(rc = add(m, x, i, row, err))) {
			http_run(m->client.http, &x->r[x->n - 1], 1, ctx);
			rc = finish(m, x, x->n - 1, acc, err);
		}
	return rc;
}

/* Every query that builds at once; the first failing query (in order)
 * is the row's error. */
static int parallel(const llm__queries *m, run *x, const json_t *row,
		    json_t *acc, plg_ctx *ctx, core_err *err)
{
	size_t bad = m->nq;
	core_err first = { 0 };
	int rc = 0;

	for (size_t i = 0; i < m->nq; i++)
		if (add(m, x, i, row, bad == m->nq ? &first : err) && bad == m->nq)
			bad = i;
	if (x->n)
		http_run(m->client.http, x->r, x->n, ctx);
	for (size_t k = 0; !rc && k < x->n && x->qi[k] < bad; k++)
		rc = finish(m, x, k, acc, err);
	if (!rc && bad < m->nq) {
		*err = first;
		rc = first.code;
	}
	return rc;
}

int llm__queries_process(llm__queries *m, const json_t *row, json_t **out,
			 plg_ctx *ctx, core_err *err)
{
	run x = { .bodies = calloc(m->nq, sizeof(*x.bodies)),
		  .r = calloc(m->nq, sizeof(*x.r)), .a = calloc(m->nq, sizeof(*x.a)),
		  .qi = calloc(m->nq, sizeof(*x.qi)) };
	json_t *acc = json_object();
	int rc = x.bodies && x.r && x.a && x.qi && acc ? 0 :
		 core_err_set(err, CORE_ENOMEM, "out of memory");

	if (!rc)
		rc = llm_client_check_inputs(&m->client, row, err);
	if (!rc)
		rc = m->sequential ? sequential(m, &x, row, acc, ctx, err) :
				     parallel(m, &x, row, acc, ctx, err);
	if (ctx && x.n)
		ctx->context = llm_client_context(&m->client, x.r, x.n);
	if (!rc && (!(*out = json_deep_copy(row)) || json_object_update(*out, acc))) {
		json_decref(*out);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < x.n; k++) {
		core_buf_release(&x.r[k].response);
		llm_response_release(&x.a[k].resp);
	}
	for (size_t k = 0; x.bodies && k < m->nq; k++)
		core_buf_release(&x.bodies[k]); /* a failed build's too */
	free(x.bodies);
	free(x.r);
	free(x.a);
	free(x.qi);
	json_decref(acc);
	return rc;
}

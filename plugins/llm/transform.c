/*
 * transform.c — `llm`: one chat completion per row (docs/architecture.md §10).
 *
 * Options: those of the client (llm.h), plus
 *   template        the user prompt (docs/templates.md), required; or
 *                   template_file, read when the settings load (its path
 *                   stays as template_source, naming it in messages)
 *   lookup          a mapping, the template's `lookup` (or lookup_file:
 *                   YAML, read when the settings load; lookup_source)
 *   response_field  where the answer goes (default llm_response); also
 *                   <field>_usage ({prompt_tokens, completion_tokens}) and
 *                   <field>_model, as ELSPETH 0.4.1 writes them (the
 *                   template's hash is in the trail, not the row)
 * With `queries:`, ELSPETH's multi-query shape instead (queries.c).
 * A template field missing from the row, a required input field missing,
 * a failed call (after the executor's retries), an API error, a finish
 * reason other than "stop" or a null content are row errors (on_error).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"
#include "plugins/template/template.h"
#include "plugins/plugins_internal.h"

typedef struct llm {
	llm_client client;
	llm__queries *queries;  /* with `queries:` (queries.c): all else unused */
	tpl_template *tpl;
	json_t *lookup;         /* NULL: none (an empty one) */
	char *field;
	char *usage_field, *model_field;
} llm;

static void llm_close(void *state)
{
	llm *l = state;

	if (!l)
		return;
	llm__queries_free(l->queries);
	llm_client_release(&l->client);
	tpl_free(l->tpl);
	json_decref(l->lookup);
	free(l->field);
	free(l->usage_field);
	free(l->model_field);
	free(l);
}

static char *suffixed(const char *field, const char *suffix)
{
	core_buf b = { 0 };

	core_buf_printf(&b, "%s%s", field, suffix);
	return core_buf_steal(&b);
}

static const plg_option llm_own[] = {
	{ "response_field", "string", false, "\"llm_response\"",
	  "the answer's column; also <field>_usage and <field>_model" },
	{ "queries", "array|object", false, NULL,
	  "ELSPETH's multi-query shape: typed queries (name, input_fields, template, output_fields, response_format), one call each" },
	{ NULL }
};
static const plg_option *const llm_opts[] = { llm_client_opts, llm__prompt_opts, llm_own, plg__input_opts, plg__schema_opts, NULL };

static int llm_parse(llm *l, const plg_env *env, const core_node *o,
		     core_err *err)
{
	const char *tpl = NULL, *field = "llm_response";
	int rc;

	if ((rc = plg__check_options(o, llm_opts, err)) ||
	    (rc = core_opt_str(o, "template", true, &tpl, err)) ||
	    (rc = core_opt_str(o, "response_field", false, &field, err)))
		return rc;
	if ((rc = llm__template_compile(o, tpl, core_map_get(o, "template"),
					&l->tpl, err)) ||
	    (rc = llm__lookup(o, &l->lookup, err)))
		return rc;
	l->field = strdup(field);
	l->usage_field = suffixed(field, "_usage");
	l->model_field = suffixed(field, "_model");
	if (!l->field || !l->usage_field || !l->model_field)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return llm_client_open(&l->client, env, o, err);
}

static int llm_open(const plg_env *env, const core_node *options,
		    void **state, core_err *err)
{
	llm *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = core_map_get(options, "queries") ?
	     llm__queries_open(env, options, &l->queries, err) :
	     llm_parse(l, env, options, err);
	if (rc) {
		llm_close(l);
		return rc;
	}
	*state = l;
	return 0;
}

/* The user prompt and the request body for one row. */
static int build(const llm *l, const json_t *row, core_buf *body, core_err *err)
{
	core_buf prompt = { 0 };
	llm_request rq;
	int rc;

	if ((rc = tpl_render_lookup(l->tpl, row, l->lookup, &prompt, err)) ||
	    (rc = core_buf_putc(&prompt, '\0')))
		goto out_prompt;
	rq = (llm_request){ .model = l->client.model,
			    .system_prompt = l->client.system_prompt,
			    .user_prompt = prompt.data,
			    .has_temperature = l->client.has_temperature,
			    .temperature = l->client.temperature,
			    .max_tokens = l->client.max_tokens };
	rc = llm_request_append(body, &rq, err);
out_prompt:
	core_buf_release(&prompt);
	return rc;
}

static int llm_process(void *state, const json_t *row, json_t **out,
		       plg_ctx *ctx, core_err *err)
{
	llm *l = state;
	core_buf body = { 0 };
	llm_answer ans = { 0 };
	const llm_response *resp = &ans.resp;
	http_req r;
	json_t *o;
	int rc;

	if (l->queries)
		return llm__queries_process(l->queries, row, out, ctx, err);
	if ((rc = llm_client_check_inputs(&l->client, row, err)) ||
	    (rc = build(l, row, &body, err)))
		goto out_body;
	llm_client_request(&l->client, &r, body.data, body.len, NULL, &ans);
	http_run(l->client.http, &r, 1, ctx);
	if (ctx) {
		/* The template's hash is audit provenance (ELSPETH records it in
		 * the state's metadata, not in the row). */
		ctx->context = llm_client_context(&l->client, &r, 1);
		if (ctx->context)
			json_object_set_new(ctx->context, "template_hash",
					    json_string(tpl_hash(l->tpl)));
	}
	if (r.result != PLG_CLASS_OK)
		rc = llm_client_failed(&r, NULL, err);
	else if (!(rc = llm_client_answer(&r, NULL, &ans, err))) {
		o = json_deep_copy(row);
		if (!o || json_object_set_new(o, l->field, json_stringn(resp->content, resp->content_len)) ||
		    json_object_set_new(o, l->usage_field, json_is_object(resp->usage) ?
					llm__usage(resp->usage) : json_null()) ||
		    json_object_set_new(o, l->model_field, resp->model ? json_string(resp->model) : json_null())) {
			json_decref(o);
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		} else
			*out = o;
	}
	llm_response_release(&ans.resp);
	core_buf_release(&r.response);
out_body:
	core_buf_release(&body);
	return rc;
}

/* The client the transform calls through (its queries' with `queries:`). */
static llm_client *client_of(void *state)
{
	llm *l = state;

	return l->queries ? llm__queries_client(l->queries) : &l->client;
}

static json_t *llm_save(void *state)
{
	return llm_client_save(client_of(state));
}

static void llm_restore(void *state, const json_t *saved)
{
	llm_client_restore(client_of(state), saved);
}

static bool llm_capacity(void *state, plg_capacity *out)
{
	return llm_client_capacity(client_of(state), out);
}

const plg_transform_ops plg__llm = {
	.name = "llm",
	.description = "One chat completion per row (OpenRouter, Azure OpenAI, OpenAI-compatible) through a shared, throttled HTTP pool",
	.options = llm_opts,
	.open = llm_open,
	.process = llm_process,
	.close = llm_close,
	.save = llm_save,
	.restore = llm_restore,
	.capacity = llm_capacity,
	.outputs = llm__outputs,
};

/*
 * openrouter_batch_llm.c — ELSPETH 0.4.1's batch LLM aggregation
 * (plugins/transforms/llm/openrouter_batch.py): when a batch flushes,
 * one chat completion per member, all sent at once through the LLM
 * client (plugins/llm/llm.h: the process's HTTP executor, capacity
 * control, retries), each call recorded under its member's node state.
 *
 * Options: those of the LLM client (provider openrouter only; model and
 * api_key required), template (or template_file) rendered with `row` =
 * the member and `lookup`, response_field (default llm_response),
 * temperature (always sent, default 0.0), max_tokens. pool_size is the
 * upstream's concurrency (ELSPETH: its thread pool).
 *
 * Every member gives one output row, in order (passthrough and transform
 * mode alike): the member plus
 *   <field>        the answer's content, as sent (finish_reason unchecked,
 *                  as ELSPETH)
 *   <field>_usage  {prompt_tokens, completion_tokens}: those reported
 *   <field>_model  the answer's `model`, or null
 * or, when its call failed (after the executor's retries), <field> null
 * and <field>_error {reason, error[, status_code]} with ELSPETH's reasons:
 * template_rendering_failed, api_call_failed, invalid_json_response,
 * malformed_response, content_filtered. A failed call fails neither the
 * batch nor the row (ELSPETH's choice: ADR 0025).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"
#include "plugins/plugins_internal.h"

typedef struct batch_llm {
	llm_client client;
	tpl_template *tpl;
	json_t *lookup;
	char *field, *usage_field, *model_field, *error_field;
} batch_llm;

static void bl_close(void *state)
{
	batch_llm *b = state;

	if (!b)
		return;
	llm_client_release(&b->client);
	tpl_free(b->tpl);
	json_decref(b->lookup);
	free(b->field);
	free(b->usage_field);
	free(b->model_field);
	free(b->error_field);
	free(b);
}

static char *suffixed(const char *field, const char *suffix)
{
	core_buf s = { 0 };

	core_buf_printf(&s, "%s%s", field, suffix);
	return core_buf_steal(&s);
}

static const plg_option bl_own[] = {
	{ "response_field", "string", false, "\"llm_response\"",
	  "the answer's column; also <field>_usage and <field>_model" },
	{ NULL }
};
static const plg_option *const bl_opts[] = { llm_client_opts, llm__prompt_opts, bl_own, plg__input_opts, plg__schema_opts, NULL };

static int bl_parse(batch_llm *b, const plg_env *env, const core_node *o,
		    core_err *err)
{
	static const char *const providers[] = { "openrouter", NULL };
	const core_node *pn = core_map_get(o, "provider");
	const char *tpl = NULL, *field = "llm_response", *key = NULL;
	int idx, rc;

	if ((rc = plg__check_options(o, bl_opts, err)) ||
	    (pn && (rc = core_node_enum(pn, providers, &idx, err))) ||
	    (rc = core_opt_str(o, "api_key", true, &key, err)) ||
	    (rc = core_opt_str(o, "template", true, &tpl, err)) ||
	    (rc = plg__opt_field(o, "response_field", false, &field, err)) ||
	    (rc = llm__template_compile(o, tpl, core_map_get(o, "template"),
					&b->tpl, err)) ||
	    (rc = llm__lookup(o, &b->lookup, err)))
		return rc;
	b->field = strdup(field);
	b->usage_field = suffixed(field, "_usage");
	b->model_field = suffixed(field, "_model");
	b->error_field = suffixed(field, "_error");
	if (!b->field || !b->usage_field || !b->model_field || !b->error_field)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = llm_client_open(&b->client, env, o, err)))
		return rc;
	b->client.has_temperature = true; /* ELSPETH sends its 0.0 default */
	return 0;
}

static int bl_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	batch_llm *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = bl_parse(b, env, options, err))) {
		bl_close(b);
		return rc;
	}
	*state = b;
	return 0;
}

/* ------------------------------------------------------------ a batch */

/* The executor records through one context; each call goes on to its
 * member's (found by the request body it carries). */
typedef struct fan {
	plg_ctx base;           /* first */
	plg_ctx *const *member;
	const http_req *r;
	size_t n;
} fan;

static unsigned fan_record(plg_ctx *ctx, const plg_call *call)
{
	fan *f = (fan *)ctx;

	for (size_t i = 0; i < f->n; i++)
		if (call->request == f->r[i].body && f->member[i]->record_call)
			return f->member[i]->record_call(f->member[i], call);
	return 0;
}

static void fan_halt(plg_ctx *ctx, int exit_code, const char *msg)
{
	fan *f = (fan *)ctx;

	if (f->member[0]->halt)
		f->member[0]->halt(f->member[0], exit_code, msg);
}

static int build(const batch_llm *b, const json_t *row, core_buf *body,
		 core_err *err)
{
	core_buf prompt = { 0 };
	llm_request rq;
	int rc = tpl_render_lookup(b->tpl, row, b->lookup, &prompt, err);

	if (!rc && core_buf_putc(&prompt, '\0'))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (!rc) {
		rq = (llm_request){ .model = b->client.model,
				    .system_prompt = b->client.system_prompt,
				    .user_prompt = prompt.data,
				    .has_temperature = true,
				    .temperature = b->client.temperature,
				    .max_tokens = b->client.max_tokens };
		rc = llm_request_append(body, &rq, err);
	}
	core_buf_release(&prompt);
	return rc;
}

/* ELSPETH's error dict for a failed call (after the executor's retries). */
static json_t *call_error(const http_req *r, const llm_response *resp,
			  const core_err *parse_err)
{
	if (r->result == PLG_CLASS_MALFORMED)
		return json_pack("{s:s,s:s}", "reason", "invalid_json_response",
				 "error", r->error);
	if (r->result != PLG_CLASS_OK && r->http_status >= 400)
		return json_pack("{s:s,s:s,s:i,s:b}", "reason", "api_call_failed",
				 "error", r->error, "status_code", (int)r->http_status,
				 "retryable", r->result == PLG_CLASS_CAPACITY);
	if (r->result != PLG_CLASS_OK)
		return json_pack("{s:s,s:s,s:b}", "reason", "api_call_failed",
				 "error", r->error, "retryable", false);
	if (resp->kind == LLM_RESP_NULL_CONTENT)
		return json_pack("{s:s,s:s}", "reason", "content_filtered", "error",
				 "LLM returned null content (likely content-filtered by provider)");
	return json_pack("{s:s,s:s}", "reason", "malformed_response",
			 "error", parse_err->msg);
}

/* Member i's output row: the member and its answer's columns (or the
 * error's). */
static json_t *output_row(const batch_llm *b, const json_t *row,
			  const http_req *r, json_t *build_error)
{
	json_t *o = json_deep_copy(row);
	llm_response resp = { 0 };
	core_err e = { 0 };
	bool ok = false;

	if (!o)
		return NULL;
	if (!build_error && r->result == PLG_CLASS_OK) {
		llm_response_parse(r->response.data, r->response.len, &resp, &e);
		ok = resp.kind == LLM_RESP_OK ||
		     (resp.kind == LLM_RESP_FINISH && resp.content);
	}
	if (ok) {
		json_object_set_new(o, b->field, json_stringn(resp.content, resp.content_len));
		json_object_set_new(o, b->usage_field, llm__usage(resp.usage));
		json_object_set_new(o, b->model_field, resp.model ?
				    json_string(resp.model) : json_null());
	} else {
		json_object_set_new(o, b->field, json_null());
		json_object_set_new(o, b->error_field, build_error ? json_incref(build_error) :
				    call_error(r, &resp, &e));
	}
	llm_response_release(&resp);
	return o;
}

static int bl_flush(void *state, json_t *const *members, size_t n,
		    bool passthrough, plg_ctx *const *ctx, json_t **out,
		    core_err *err)
{
	batch_llm *b = state;
	core_buf *bodies = calloc(n, sizeof(*bodies));
	http_req *r = calloc(n, sizeof(*r)), *sent = calloc(n, sizeof(*sent));
	llm_answer *a = calloc(n, sizeof(*a));
	json_t **bad = calloc(n, sizeof(*bad)), *outs = json_array();
	size_t k = 0, *at = calloc(n, sizeof(*at));
	fan f = { .member = ctx, .r = sent };
	int rc = bodies && r && sent && a && bad && outs && at ? 0 :
		 core_err_set(err, CORE_ENOMEM, "out of memory");

	(void)passthrough; /* one row per member in both modes */
	for (size_t i = 0; !rc && i < n; i++) {
		core_err e = { 0 };
		int brc = build(b, members[i], &bodies[i], &e);

		if (brc == CORE_ENOMEM)
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		else if (brc)
			bad[i] = json_pack("{s:s,s:s}", "reason",
					   "template_rendering_failed", "error", e.msg);
		else {
			llm_client_request(&b->client, &sent[k], bodies[i].data,
					   bodies[i].len, NULL, &a[i]);
			at[k++] = i;
		}
	}
	if (!rc && k) {
		f.n = k;
		f.base = (plg_ctx){ .seq = ctx[0]->seq, .retry = ctx[0]->retry,
				    .stop = ctx[0]->stop, .record_call = fan_record,
				    .halt = fan_halt };
		http_run(b->client.http, sent, k, &f.base);
		for (size_t j = 0; j < k; j++) {
			ctx[at[j]]->context = llm_client_context(&b->client, &sent[j], 1);
			r[at[j]] = sent[j];
		}
	}
	for (size_t i = 0; !rc && i < n; i++)
		if (json_array_append_new(outs, output_row(b, members[i], &r[i], bad[i])))
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < n && bodies && r && a && bad; i++) {
		core_buf_release(&bodies[i]);
		core_buf_release(&r[i].response);
		llm_response_release(&a[i].resp);
		json_decref(bad[i]);
	}
	if (rc)
		json_decref(outs);
	else
		*out = outs;
	free(bodies);
	free(r);
	free(sent);
	free(a);
	free(bad);
	free(at);
	return rc;
}

static int bl_flush_plain(void *state, json_t *const *members, size_t n,
			  bool passthrough, json_t **out, core_err *err)
{
	(void)state;
	(void)members;
	(void)n;
	(void)passthrough;
	(void)out;
	return core_err_set(err, CORE_EINTERNAL, "openrouter_batch_llm needs "
			    "call contexts (flush_calls)");
}

const plg_aggregation_ops plg__openrouter_batch_llm = {
	.name = "openrouter_batch_llm",
	.description = "ELSPETH's batch LLM aggregation: one chat completion per member, sent together through the shared HTTP pool; answers (or errors) added to each row",
	.options = bl_opts,
	.open = bl_open,
	.flush = bl_flush_plain,
	.flush_calls = bl_flush,
	.close = bl_close,
	.outputs = llm__outputs,
};

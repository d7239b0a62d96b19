/* client.c — the LLM client (plugins/llm/llm.h, "client"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/llm/llm_internal.h"
#include "plugins/plugins_internal.h"

enum provider { P_OPENROUTER, P_AZURE, P_OPENAI };

/* base + suffix, without doubling the slash between them. */
static char *join_url(const char *base, const char *suffix)
{
	size_t n = strlen(base);
	core_buf b = { 0 };

	while (n && base[n - 1] == '/')
		n--;
	core_buf_append(&b, base, n);
	core_buf_puts(&b, suffix);
	return core_buf_steal(&b);
}

static int endpoint(llm_client *c, const core_node *o, int provider,
		    core_err *err)
{
	static const char *const defaults[] = { "https://openrouter.ai/api/v1", NULL,
						"https://api.openai.com/v1" };
	const char *model = NULL, *base = NULL, *dep = NULL, *ep = NULL;
	const char *ver = LLM_AZURE_API_VERSION;
	int rc;

	if (provider == P_AZURE) {
		if ((rc = core_opt_str(o, "deployment_name", true, &dep, err)) ||
		    (rc = core_opt_str(o, "endpoint", true, &ep, err)) ||
		    (rc = core_opt_str(o, "api_version", false, &ver, err)) ||
		    (rc = core_opt_str(o, "model", false, &model, err)))
			return rc;
		if (core_map_get(o, "base_url"))
			return core_err_at(err, CORE_ECONFIG, core_map_get(o, "base_url"),
				"provider azure takes endpoint, deployment_name and api_version, not base_url");
		core_buf b = { 0 };
		core_buf_printf(&b, "/openai/deployments/%s/chat/completions?api-version=%s",
				dep, ver);
		c->url = join_url(ep, b.data ? b.data : "");
		core_buf_release(&b);
	} else {
		if ((rc = core_opt_str(o, "model", true, &model, err)) ||
		    (rc = core_opt_str(o, "base_url", false, &base, err)))
			return rc;
		for (const char *const *k = (const char *const[]){ "deployment_name",
				"endpoint", "api_version", NULL }; *k; k++)
			if (core_map_get(o, *k))
				return core_err_at(err, CORE_ECONFIG, core_map_get(o, *k),
					"'%s' is for provider azure", *k);
		c->url = join_url(base ? base : defaults[provider], "/chat/completions");
		c->model = strdup(model);
	}
	if (!c->url || (model && provider != P_AZURE && !c->model))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (strncmp(c->url, "http://", 7) && strncmp(c->url, "https://", 8))
		return core_err_at(err, CORE_ECONFIG, o,
				   "the endpoint '%s' is not an http:// or https:// URL", c->url);
	return 0;
}

static int headers(llm_client *c, const core_node *o, int provider,
		   core_err *err)
{
	const char *key = NULL;
	struct curl_slist *h;
	core_buf b = { 0 };
	int rc;

	if ((rc = core_opt_str(o, "api_key", false, &key, err)))
		return rc;
	h = curl_slist_append(NULL, "Content-Type: application/json");
	c->headers = h;
	if (h && key) {
		core_buf_printf(&b, provider == P_AZURE ? "api-key: %s" : "Authorization: Bearer %s",
				key);
		h = b.data ? curl_slist_append(c->headers, b.data) : NULL;
		if (b.data) /* the key stays in the header list only */
			memset(b.data, 0, b.len);
		core_buf_release(&b);
	}
	if (h && !(h = curl_slist_append(c->headers, "Expect:"))) /* no 100-continue */
		h = NULL;
	return h ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
}

/* The settings' rate_limit entry of the provider's service (ELSPETH's
 * names: azure_openai for Azure, openrouter for the others; ours: openai). */
static void budgets(http_cfg *x, const plg_env *env, int provider)
{
	static const char *const services[] = { "openrouter", "azure_openai", "openai" };
	const core_rate_limit_cfg *r = plg_env_rate_limits(env);
	const core_rate_service *sv;
	core_rate_service dflt;

	if (!r || !(sv = core_rate_limit_find(r, services[provider], &dflt)))
		return;
	x->max_rps = sv->requests_per_minute / 60;
	x->max_tps = sv->tokens_per_minute / 60;
}

/* ELSPETH's concurrency.max_workers caps pool_size; a shard takes its
 * share of the service (plg_env.capacity_share). */
static void share_capacity(http_cfg *x, const plg_env *env, unsigned pool)
{
	double share = plg_env_capacity_share(env);
	double p;

	if (env && env->max_workers && pool > env->max_workers)
		pool = env->max_workers; /* ELSPETH's min(pool_size, max_workers) */
	p = ceil((double)pool * share);

	x->pool_size = p < 1 ? 1 : (unsigned)p;
	x->max_rps *= share;
	x->max_tps *= share;
	if (share < 1 && x->min_dispatch_delay_ms > 0)
		x->min_dispatch_delay_ms /= share;
	if (x->max_dispatch_delay_ms < x->min_dispatch_delay_ms)
		x->max_dispatch_delay_ms = x->min_dispatch_delay_ms;
}

/* hedge: true (a copy after the p99), false, or idle (the default: a
 * copy after 1.5 x the p99 only into a slot nothing else wants). */
static int hedge_opt(const core_node *o, http_cfg *x, core_err *err)
{
	const core_node *n = core_map_get(o, "hedge");

	x->hedge = false;
	x->hedge_idle = true;
	if (!n)
		return 0;
	if (n->kind == CORE_NODE_SCALAR && !strcmp(n->value, "idle"))
		return 0;
	x->hedge_idle = false;
	if (core_opt_bool(o, "hedge", &x->hedge, err))
		return core_err_at(err, CORE_ECONFIG, n, "hedge: expected true, false "
				   "or idle (got '%s')", n->kind == CORE_NODE_SCALAR ? n->value : "a collection");
	return 0;
}

static int throttle(llm_client *c, const plg_env *env, const core_node *o,
		    int provider, core_err *err)
{
	static const char *const modes[] = { "adaptive", "aimd", NULL };
	const core_node *m = core_map_get(o, "capacity_control");
	long long pool = 32;
	http_cfg *x = &c->cfg;
	int mode = HTTP_MODE_ADAPTIVE, rc;

	*x = (http_cfg){ .timeout_s = 60, .min_dispatch_delay_ms = 0,
		       .max_dispatch_delay_ms = 5000, .backoff_multiplier = 2.0,
		       .recovery_step_ms = 50, .max_capacity_retry_s = 3600,
		       .max_retry_after_s = 600, .tail_factor = 3 };
	if ((m && (rc = core_node_enum(m, modes, &mode, err))) ||
	    (rc = core_opt_int(o, "pool_size", 1, 4096, &pool, err)) ||
	    (rc = core_opt_double(o, "timeout_seconds", 0.001, 86400, &x->timeout_s, err)) ||
	    (rc = core_opt_double(o, "min_dispatch_delay_ms", 0, 3600000, &x->min_dispatch_delay_ms, err)) ||
	    (rc = core_opt_double(o, "max_dispatch_delay_ms", 0, 3600000, &x->max_dispatch_delay_ms, err)) ||
	    (rc = core_opt_double(o, "backoff_multiplier", 1, 100, &x->backoff_multiplier, err)) ||
	    (rc = core_opt_double(o, "recovery_step_ms", 0, 3600000, &x->recovery_step_ms, err)) ||
	    (rc = core_opt_double(o, "max_capacity_retry_seconds", 0, 31536000, &x->max_capacity_retry_s, err)) ||
	    (rc = core_opt_double(o, "max_retry_after_seconds", 0, 31536000, &x->max_retry_after_s, err)) ||
	    (rc = core_opt_double(o, "tail_timeout_factor", 0, 1000, &x->tail_factor, err)) ||
	    (rc = hedge_opt(o, x, err)))
		return rc;
	if (x->max_dispatch_delay_ms < x->min_dispatch_delay_ms)
		return core_err_at(err, CORE_ECONFIG, core_map_get(o, "max_dispatch_delay_ms"),
				   "max_dispatch_delay_ms is less than min_dispatch_delay_ms");
	x->mode = (http_mode)mode;
	budgets(x, env, provider);
	share_capacity(x, env, (unsigned)pool);
	return 0;
}

json_t *llm__usage(const json_t *usage)
{
	static const char *const keys[] = { "prompt_tokens", "completion_tokens" };
	json_t *u = json_object();

	for (size_t i = 0; u && i < 2; i++) {
		json_t *v = json_object_get(usage, keys[i]);

		if (json_is_integer(v) && json_integer_value(v) >= 0)
			json_object_set(u, keys[i], v);
	}
	return u;
}

char **llm__dup_list(const char **v, size_t n)
{
	char **out = calloc(n ? n : 1, sizeof(*out));

	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			while (i--)
				free(out[i]);
			free(out);
			return NULL;
		}
	return out;
}

static int request_opts(llm_client *c, const core_node *o, core_err *err)
{
	const char *sys = NULL;
	const char **req = NULL;
	const core_node *n;
	size_t nreq = 0;
	int rc;

	if ((rc = core_opt_str(o, "system_prompt", false, &sys, err)) ||
	    (rc = core_opt_int(o, "max_tokens", 1, 1 << 30, &c->max_tokens, err)))
		return rc;
	if ((n = core_map_get(o, "temperature")) && !core_node_is_null(n)) {
		if ((rc = core_node_double(n, 0, 2, &c->temperature, err)))
			return rc;
		c->has_temperature = true;
	}
	if (sys && !(c->system_prompt = strdup(sys)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((n = core_map_get(o, "required_input_fields")) &&
	    (rc = core_node_str_list(n, &req, &nreq, err)))
		return rc;
	if (nreq && !(c->required = llm__dup_list(req, nreq)))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		c->nrequired = nreq;
	free(req);
	return rc;
}

int llm_client_open(llm_client *c, const plg_env *env, const core_node *o,
		    core_err *err)
{
	static const char *const providers[] = { "openrouter", "azure", "openai", NULL };
	const core_node *pn = core_map_get(o, "provider");
	const char *key = NULL;
	int provider = P_OPENROUTER, rc;

	memset(c, 0, sizeof(*c));
	/* ELSPETH's schema block: checked like every plugin's (it declares
	 * the rows; the LLM transforms do not enforce it). */
	if ((rc = plg__schema_check(o, false, err)))
		return rc;
	if ((pn && (rc = core_node_enum(pn, providers, &provider, err))) ||
	    (rc = endpoint(c, o, provider, err)) ||
	    (rc = headers(c, o, provider, err)) ||
	    (rc = throttle(c, env, o, provider, err)) ||
	    (rc = request_opts(c, o, err)) ||
	    (rc = core_opt_str(o, "api_key", false, &key, err)) ||
	    (rc = http_open(&c->cfg, c->url, key, &c->http, err)))
		llm_client_release(c);
	return rc;
}

void llm_client_release(llm_client *c)
{
	http_close(c->http);
	curl_slist_free_all(c->headers);
	for (size_t i = 0; i < c->nrequired; i++)
		free(c->required[i]);
	free(c->required);
	free(c->url);
	free(c->model);
	free(c->system_prompt);
	memset(c, 0, sizeof(*c));
}

int llm_client_check_inputs(const llm_client *c, const json_t *row,
			    core_err *err)
{
	for (size_t i = 0; i < c->nrequired; i++)
		if (!json_object_get(row, c->required[i]))
			return core_err_set(err, CORE_EDATA,
				"required input field '%s' is missing", c->required[i]);
	return 0;
}

/* The executor's check of a 2xx body: only a malformed envelope is
 * retried; other problems (an API error, a refusal) are the row's. A good
 * answer is kept, so the transform does not parse it again. */
static int check_envelope(void *arg, const char *body, size_t len, double *tokens,
			  char *msg, size_t msgsz)
{
	llm_answer *a = arg;
	json_t *t;
	core_err e;
	bool bad;

	llm_response_release(&a->resp);
	a->parsed = llm_response_parse(body, len, &a->resp, &e) == 0;
	bad = a->resp.kind == LLM_RESP_MALFORMED;
	if (a->parsed && (t = json_object_get(a->resp.usage, "total_tokens")) &&
	    json_is_integer(t))
		*tokens = (double)json_integer_value(t);
	if (bad)
		snprintf(msg, msgsz, "%s", e.msg);
	if (!a->parsed)
		llm_response_release(&a->resp);
	return bad;
}

void llm_client_request(const llm_client *c, http_req *r, const char *body,
			size_t len, const char *name, llm_answer *a)
{
	/* What a provider charges a tokens-per-minute budget on admission: the
	 * prompt (~4 bytes a token; the JSON around it counts a little) and
	 * the completion it may grow to. The controller scales estimates by
	 * what the answers' usage says. */
	double tokens = (double)len / 4 + (double)c->max_tokens;

	*r = (http_req){ .url = c->url, .headers = c->headers, .body = body,
		       .body_len = len, .name = name, .tokens = tokens,
		       .check = check_envelope, .check_arg = a };
}

static const char *of_query(const char *query, char *buf, size_t n)
{
	if (!query)
		return "";
	snprintf(buf, n, "query '%s': ", query);
	return buf;
}

int llm_client_failed(const http_req *r, const char *query, core_err *err)
{
	char q[160];

	err->retryable = false;
	if (r->interrupted)
		return core_err_set(err, CORE_ESTOPPED, "%sLLM call not finished: %s",
				    of_query(query, q, sizeof(q)), r->error);
	return core_err_set(err, CORE_EDATA, "%sLLM call failed (%s, %u attempt%s): %s",
			    of_query(query, q, sizeof(q)), plg_error_class_name(r->result),
			    r->attempts, r->attempts == 1 ? "" : "s", r->error);
}

int llm_client_answer(const http_req *r, const char *query, llm_answer *a,
		      core_err *err)
{
	char q[160];
	int rc;

	if (a->parsed)
		return 0;
	rc = llm_response_parse(r->response.data, r->response.len, &a->resp, err);
	if (rc == CORE_EDATA) {
		err->retryable = false;
		core_err_prefix(err, "%sLLM answer", query ? of_query(query, q, sizeof(q)) : "");
	}
	return rc;
}

json_t *llm_client_context(const llm_client *c, const http_req *reqs, size_t n)
{
	unsigned attempts = 0, capacity = 0;
	uint64_t throttle = 0;
	http_stats st;

	for (size_t i = 0; i < n; i++) {
		attempts += reqs[i].attempts;
		capacity += reqs[i].capacity_retries;
		throttle += reqs[i].throttle_ns;
	}
	http_get_stats(c->http, &st);
	return json_pack("{s:i,s:i,s:i,s:f,s:s,s:i,s:i,s:f,s:f,s:f}",
			 "requests", (int)n, "attempts", (int)attempts,
			 "capacity_retries", (int)capacity,
			 "throttle_wait_ms", (double)throttle / 1e6,
			 "capacity_control", http_mode_name(st.mode),
			 "pool_size", (int)st.pool_size,
			 "pool_peak_concurrency", (int)st.peak_active,
			 "dispatch_delay_ms", st.delay_ms,
			 "rate_per_s", st.rate, "window", st.window);
}

bool llm_client_capacity(const llm_client *c, plg_capacity *out)
{
	http_get_capacity(c->http, out);
	return true;
}

json_t *llm_client_save(const llm_client *c)
{
	return http_save(c->http);
}

void llm_client_restore(llm_client *c, const json_t *saved)
{
	http_restore(c->http, saved);
}

int llm__template_error(const core_node *at, core_err *err)
{
	char msg[sizeof(err->msg)];

	memcpy(msg, err->msg, sizeof(msg));
	return core_err_at(err, err->code, at, "%s", msg);
}

int llm__template_compile(const core_node *o, const char *src,
			  const core_node *at, tpl_template **out,
			  core_err *err)
{
	const char *name = NULL;
	int rc;

	if ((rc = core_opt_str(o, "template_source", false, &name, err)))
		return rc;
	if ((rc = tpl_compile_named(src, name, out, err)))
		return llm__template_error(at, err);
	return 0;
}

int llm__lookup(const core_node *o, json_t **out, core_err *err)
{
	const core_node *n = core_map_get(o, "lookup");

	*out = NULL;
	if (!n || core_node_is_null(n))
		return 0;
	if (n->kind != CORE_NODE_MAP)
		return core_err_at(err, CORE_ECONFIG, n, "lookup must be a mapping "
				   "(key: value), the templates' `lookup`");
	if (!(*out = core_node_to_json(n)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

/* The options every LLM plugin takes (llm.h), and those of its prompt
 * (llm_internal.h). */
const plg_option llm_client_opts[] = {
	{ "provider", "string", false, "\"openrouter\"",
	  "openrouter, openai (OpenAI-compatible: {base_url}/chat/completions) or azure" },
	{ "model", "string", false, NULL,
	  "required for openrouter and openai; optional for azure (the deployment decides)" },
	{ "base_url", "string", false, NULL,
	  "openrouter and openai: the API's root (https://openrouter.ai/api/v1, https://api.openai.com/v1)" },
	{ "deployment_name", "string", false, NULL,
	  "azure: the deployment (required there)" },
	{ "endpoint", "string", false, NULL,
	  "azure: https://NAME.openai.azure.com (required there)" },
	{ "api_version", "string", false, "\"2024-10-21\"",
	  "azure only" },
	{ "api_key", "string", false, NULL,
	  "the credential (use ${VAR}); only its fingerprint is recorded" },
	{ "system_prompt", "string", false, NULL,
	  "a system message before the prompt, sent as written" },
	{ "system_prompt_file", "string", false, NULL,
	  "a file holding the system prompt, instead of system_prompt" },
	{ "system_prompt_source", "string", false, NULL,
	  "where the system prompt came from (set from system_prompt_file by the settings loader)" },
	{ "temperature", "number", false, NULL,
	  "passed to the API; not sent when absent" },
	{ "max_tokens", "integer", false, NULL,
	  "passed to the API; not sent when absent" },
	{ "timeout_seconds", "number", false, "60",
	  "one attempt's limit; a timeout is a transient error" },
	{ "pool_size", "integer", false, "32",
	  "requests in flight at most: the ceiling of the upstream's concurrency" },
	{ "capacity_control", "string", false, "\"adaptive\"",
	  "adaptive (the capacity controller) or aimd (the dispatch-delay throttle)" },
	{ "min_dispatch_delay_ms", "number", false, "0",
	  "the least time between two dispatches" },
	{ "max_dispatch_delay_ms", "number", false, "5000",
	  "aimd only: the longest delay between dispatches" },
	{ "backoff_multiplier", "number", false, "2.0",
	  "aimd only: a capacity error multiplies the delay by this" },
	{ "recovery_step_ms", "number", false, "50",
	  "aimd only: each success takes this off the delay" },
	{ "max_capacity_retry_seconds", "number", false, "3600",
	  "how long a request keeps retrying capacity errors before its row fails" },
	{ "max_retry_after_seconds", "number", false, "600",
	  "a longer wait asked for stops the run, resumable (exit 3)" },
	{ "tail_timeout_factor", "number", false, "3",
	  "an attempt unanswered after this x the p99 of recent answers is cut and sent again; 0: off" },
	{ "hedge", "boolean|string", false, "\"idle\"",
	  "true: a copy after the p99; idle: only into a free slot after 1.5 x the p99; false: none" },
	{ NULL }
};

const plg_option llm__prompt_opts[] = {
	{ "template", "string", false, NULL,
	  "the user prompt, rendered per row (docs/templates.md); required unless template_file" },
	{ "template_file", "string", false, NULL,
	  "a file holding the template, instead of template" },
	{ "template_source", "string", false, NULL,
	  "where the template came from (set from template_file by the settings loader)" },
	{ "lookup", "object", false, NULL,
	  "a mapping the template reads as lookup" },
	{ "lookup_file", "string", false, NULL,
	  "a YAML file holding that mapping, instead of lookup" },
	{ "lookup_source", "string", false, NULL,
	  "where the lookup came from (set from lookup_file by the settings loader)" },
	{ NULL }
};

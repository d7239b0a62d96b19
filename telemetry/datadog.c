/*
 * datadog.c — ELSPETH's datadog exporter (telemetry/exporters/datadog.py;
 * SPEC.md §2.4): each event a span sent to a local Datadog Agent at
 * agent_host:agent_port, through the Agent's documented trace intake
 * (PUT /v0.3/traces, a JSON list of traces, each a list of spans:
 * docs.datadoghq.com "Send traces to the Agent by API"). ELSPETH's ddtrace
 * batches on its own; here batch_size events (100) go in one request.
 *
 * A span: name and resource = the event type, service = service_name,
 * type "custom", start = the event's time in ns, duration 0; tags `env`,
 * `version` (when set), `elspeth.run_id`, `elspeth.event_type`, then
 * `elspeth.<field>` for each field that is not None, a mapping flattened
 * to `elspeth.<field>.<key>` down to 5 levels — strings in `meta`,
 * numbers in `metrics`, as ddtrace's set_tag files them. The trace id is
 * the run's (the low 64 bits of ELSPETH's OTLP trace id), so a run's
 * spans group as one trace; span ids are random.
 *
 * Options and checks are ELSPETH's: service_name, env, agent_host and
 * agent_port required (its guide's defaults are not its code's), version
 * optional, api_key refused (the Agent holds it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "telemetry/tel_http.h"

typedef struct datadog {
	const char *service, *env, *version;
	char url[512], shown[560];
	json_t *batch;            /* [[span], ...] */
	long long batch_size, tries;
} datadog;

static void dd_close(void *state)
{
	datadog *d = state;

	if (!d)
		return;
	json_decref(d->batch);
	free(d);
}

static int dd_configure(const core_node *options, void **state, core_err *err)
{
	tel_opts o = { .exporter = "datadog", .map = options };
	const char *host = NULL, *api_key = NULL;
	long long port = 0;
	datadog *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	d->batch_size = 100;
	d->tries = TEL_HTTP_TRIES;
	if ((rc = tel__opt_str(&o, "service_name",
			       "Datadog exporter requires 'service_name' in config", false,
			       &d->service, err)) ||
	    (rc = tel__opt_str(&o, "env", "Datadog exporter requires 'env' in config "
			       "(e.g. 'production', 'staging', 'development')", false, &d->env,
			       err)) ||
	    (rc = tel__opt_str(&o, "version", NULL, true, &d->version, err)) ||
	    (rc = tel__opt_str(&o, "api_key", NULL, true, &api_key, err)))
		goto fail;
	if (api_key) {
		rc = tel__fail(&o, "api_key", err,
			"Datadog exporter does not support 'api_key' in exporter options. "
			"Configure a local Datadog Agent and use agent_host/agent_port instead.");
		goto fail;
	}
	if ((rc = tel__opt_str(&o, "agent_host", "Datadog exporter requires 'agent_host' in config",
			       false, &host, err)) ||
	    (rc = tel__opt_int(&o, "agent_port", "Datadog exporter requires 'agent_port' in config",
			       -0x7fffffff, &port, err)))
		goto fail;
	if (port < 1 || port > 65535) {
		rc = tel__fail(&o, "agent_port", err,
			       "agent_port must be a valid port number (1-65535), got %lld", port);
		goto fail;
	}
	if ((rc = tel__opt_int(&o, "batch_size", NULL, 1, &d->batch_size, err)) ||
	    (rc = tel__opt_int(&o, "max_attempts", NULL, 1, &d->tries, err)))
		goto fail;
	snprintf(d->url, sizeof(d->url), strchr(host, ':') ? "http://[%s]:%lld/v0.3/traces" :
		 "http://%s:%lld/v0.3/traces", host, port);
	snprintf(d->shown, sizeof(d->shown), "the Datadog Agent at %s", d->url);
	if (!(d->batch = json_array())) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
		goto fail;
	}
	*state = d;
	return 0;
fail:
	dd_close(d);
	return rc;
}

static uint64_t random_id(void)
{
	uint64_t v = 0;

	while (!v)
		if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
			v = 1;
	return v & 0x7fffffffffffffffULL; /* the Agent's ids are signed-safe */
}

/* Python's str() of v, for meta. */
static json_t *py_str(const json_t *v)
{
	core_buf b = { 0 };
	json_t *s;

	if (core_py_str(&b, v)) {
		core_buf_release(&b);
		return NULL;
	}
	s = json_stringn(b.data ? b.data : "", b.len);
	core_buf_release(&b);
	return s;
}

static void tag(json_t *meta, json_t *metrics, const char *key, const json_t *v, int depth)
{
	const char *k;
	json_t *item;
	char sub[512];

	if (json_is_null(v))
		return;
	if (json_is_object(v) && depth < 5) {
		json_object_foreach((json_t *)v, k, item) {
			snprintf(sub, sizeof(sub), "%s.%s", key, k);
			tag(meta, metrics, sub, item, depth + 1);
		}
		return;
	}
	if (json_is_integer(v) || json_is_real(v))
		json_object_set_new(metrics, key, json_real(json_number_value(v)));
	else
		json_object_set_new(meta, key, py_str(v));
}

static int dd_send(datadog *d, core_err *err)
{
	tel_http_req q = { .url = d->url, .shown = d->shown, .put = true,
			   .content_type = "application/json", .tries = (unsigned)d->tries };
	char *body;
	int rc;

	if (!json_array_size(d->batch))
		return 0;
	if (!(body = json_dumps(d->batch, JSON_COMPACT)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	q.body = body;
	q.len = strlen(body);
	rc = tel__http_send(&q, NULL, err);
	if (rc)
		core_err_prefix(err, "%zu spans not delivered", json_array_size(d->batch));
	free(body);
	json_array_clear(d->batch);
	return rc;
}

static int dd_export(void *state, const tel_record *r, core_err *err)
{
	datadog *d = state;
	uint8_t trace[16];
	uint64_t tid = 0;
	json_t *meta = json_object(), *metrics = json_object(), *span, *v;
	char key[256];

	tel__trace_id(r->run_id, trace);
	for (int i = 8; i < 16; i++)
		tid = tid << 8 | trace[i];
	json_object_set_new(meta, "env", json_string(d->env));
	if (d->version && *d->version)
		json_object_set_new(meta, "version", json_string(d->version));
	json_object_set_new(meta, "elspeth.run_id", json_string(r->run_id));
	json_object_set_new(meta, "elspeth.event_type", json_string(r->type));
	for (size_t i = 0; i < r->n; i++) {
		if (!(v = tel__field_json(&r->f[i])))
			continue; /* None */
		snprintf(key, sizeof(key), "elspeth.%s", r->f[i].key);
		tag(meta, metrics, key, v, 0);
		json_decref(v);
	}
	span = json_pack("{s:I,s:I,s:s,s:s,s:s,s:s,s:I,s:i,s:i,s:o,s:o}",
			 "trace_id", (json_int_t)(tid & 0x7fffffffffffffffULL),
			 "span_id", (json_int_t)random_id(), "name", r->type,
			 "resource", r->type, "service", d->service, "type", "custom",
			 "start", (json_int_t)r->at_ns, "duration", 0, "error", 0,
			 "meta", meta, "metrics", metrics);
	if (!span || json_array_append_new(d->batch, json_pack("[o]", span)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((long long)json_array_size(d->batch) >= d->batch_size)
		return dd_send(d, err);
	return 0;
}

static int dd_flush(void *state, core_err *err)
{
	return dd_send(state, err);
}

const tel_exporter_ops tel__datadog = {
	.name = "datadog",
	.configure = dd_configure,
	.export = dd_export,
	.flush = dd_flush,
	.close = dd_close,
};

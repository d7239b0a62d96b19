/*
 * azure.c — ELSPETH's azure_monitor exporter (telemetry/exporters/
 * azure_monitor.py; SPEC.md §2.3): each event a span, sent in batches of
 * batch_size (100) to Application Insights' documented ingestion API
 * (POST {IngestionEndpoint}/v2.1/track, a JSON array of telemetry
 * envelopes), as Azure's OpenTelemetry exporter sends an INTERNAL span:
 * a RemoteDependency of type InProc, named after the event, with the
 * run's trace id as its operation id and the event's fields (as OTLP
 * attributes, plus ELSPETH's cloud.provider and elspeth.exporter) in
 * its properties.
 *
 * connection_string is Azure's ("InstrumentationKey=…;IngestionEndpoint=
 * https://…"; without an endpoint, dc.services.visualstudio.com).
 * service_name is required (its guide says it defaults; its code does
 * not); service_version and deployment_environment are optional. The
 * answer's itemsAccepted is checked: a partial acceptance (206) is a
 * failure naming what was refused. The key is never in a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "telemetry/tel_http.h"

typedef struct azure {
	char ikey[128];
	char url[1024], shown[1100];
	const char *service, *version, *environment;
	json_t *batch;
	long long batch_size, tries;
} azure;

static void az_close(void *state)
{
	azure *a = state;

	if (!a)
		return;
	json_decref(a->batch);
	free(a);
}

/* InstrumentationKey and IngestionEndpoint of a connection string. */
static int parse_conn(azure *a, const tel_opts *o, const char *cs, core_err *err)
{
	const char *p = cs;
	char endpoint[900] = "https://dc.services.visualstudio.com";
	size_t n;

	while (*p) {
		const char *end = strchr(p, ';'), *eq;

		if (!end)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq && (size_t)(eq - p) == 18 && !strncasecmp(p, "InstrumentationKey", 18))
			snprintf(a->ikey, sizeof(a->ikey), "%.*s", (int)(end - eq - 1), eq + 1);
		else if (eq && (size_t)(eq - p) == 17 && !strncasecmp(p, "IngestionEndpoint", 17))
			snprintf(endpoint, sizeof(endpoint), "%.*s", (int)(end - eq - 1), eq + 1);
		p = *end ? end + 1 : end;
	}
	if (!a->ikey[0])
		return tel__fail(o, "connection_string", err,
				 "the connection string has no InstrumentationKey");
	n = strlen(endpoint);
	while (n && endpoint[n - 1] == '/')
		endpoint[--n] = '\0';
	snprintf(a->url, sizeof(a->url), "%s/v2.1/track", endpoint);
	snprintf(a->shown, sizeof(a->shown), "Azure Monitor at %s", a->url);
	return 0;
}

static int az_configure(const core_node *options, void **state, core_err *err)
{
	tel_opts o = { .exporter = "azure_monitor", .map = options };
	const char *cs = NULL;
	azure *a = calloc(1, sizeof(*a));
	int rc;

	if (!a)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	a->batch_size = 100;
	a->tries = TEL_HTTP_TRIES;
	if ((rc = tel__opt_str(&o, "connection_string",
			       "Azure Monitor exporter requires 'connection_string' in config",
			       false, &cs, err)) ||
	    (rc = tel__opt_int(&o, "batch_size", NULL, 1, &a->batch_size, err)) ||
	    (rc = tel__opt_int(&o, "max_attempts", NULL, 1, &a->tries, err)) ||
	    (rc = tel__opt_str(&o, "service_name",
			       "Azure Monitor exporter requires 'service_name' in config", false,
			       &a->service, err)) ||
	    (rc = tel__opt_str(&o, "service_version", NULL, true, &a->version, err)) ||
	    (rc = tel__opt_str(&o, "deployment_environment", NULL, true, &a->environment, err)) ||
	    (rc = parse_conn(a, &o, cs, err))) {
		az_close(a);
		return rc;
	}
	if (!(a->batch = json_array())) {
		az_close(a);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	*state = a;
	return 0;
}

/* "2026-11-28T01:43:03.292912Z" */
static void az_time(uint64_t ns, char out[40])
{
	core_iso_utc(ns, out);
	char *plus = strstr(out, "+00:00");

	if (plus)
		strcpy(plus, "Z");
}

/* An attribute's text as Azure's exporter puts it in properties. */
static json_t *prop(const json_t *v)
{
	core_buf b = { 0 };
	json_t *s;
	int rc = json_is_object(v) ? core_json_append_py(&b, v, -1, 0) : core_py_str(&b, v);

	s = rc ? NULL : json_stringn(b.data ? b.data : "", b.len);
	core_buf_release(&b);
	return s;
}

static int az_send(azure *a, core_err *err)
{
	tel_http_req q = { .url = a->url, .shown = a->shown,
			   .content_type = "application/json", .tries = (unsigned)a->tries };
	core_buf reply = { 0 };
	json_t *ans;
	size_t sent = json_array_size(a->batch);
	char *body;
	int rc;

	if (!sent)
		return 0;
	if (!(body = json_dumps(a->batch, JSON_COMPACT)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	q.body = body;
	q.len = strlen(body);
	rc = tel__http_send(&q, &reply, err);
	free(body);
	json_array_clear(a->batch);
	if (rc)
		return core_err_prefix(err, "%zu items not delivered", sent);
	ans = json_loadb(reply.data ? reply.data : "", reply.len, 0, NULL);
	core_buf_release(&reply);
	if (json_is_integer(json_object_get(ans, "itemsAccepted")) &&
	    (size_t)json_integer_value(json_object_get(ans, "itemsAccepted")) < sent) {
		rc = core_err_set(err, CORE_EIO, "%s accepted %lld of %zu items", a->shown,
				  (long long)json_integer_value(json_object_get(ans, "itemsAccepted")),
				  sent);
	}
	json_decref(ans);
	return rc;
}

static int az_export(void *state, const tel_record *r, core_err *err)
{
	azure *a = state;
	uint8_t trace[16], span[8];
	char op[33], id[17], ts[40];
	json_t *props = json_object(), *tags, *env, *v;

	tel__trace_id(r->run_id, trace);
	core_hex(trace, sizeof(trace), op);
	if (RAND_bytes(span, sizeof(span)) != 1)
		memset(span, 1, sizeof(span));
	core_hex(span, sizeof(span), id);
	az_time(r->at_ns, ts);
	for (size_t i = 0; i < r->n; i++)
		if ((v = tel__field_json(&r->f[i]))) {
			json_object_set_new(props, r->f[i].key, prop(v));
			json_decref(v);
		}
	json_object_set_new(props, "event_type", json_string(r->type));
	json_object_set_new(props, "cloud.provider", json_string("azure"));
	json_object_set_new(props, "elspeth.exporter", json_string("azure_monitor"));
	tags = json_pack("{s:s,s:s,s:s}", "ai.operation.id", op, "ai.cloud.role", a->service,
			 "ai.internal.sdkVersion", "elspeth:" ELSPETH_VERSION);
	if (tags && a->version)
		json_object_set_new(tags, "ai.application.ver", json_string(a->version));
	if (tags && a->environment)
		json_object_set_new(props, "deployment.environment", json_string(a->environment));
	env = json_pack("{s:i,s:s,s:s,s:f,s:s,s:o,s:{s:s,s:{s:i,s:s,s:s,s:s,s:b,s:s,s:s,s:o}}}",
			"ver", 1, "name", "Microsoft.ApplicationInsights.RemoteDependency",
			"time", ts, "sampleRate", 100.0, "iKey", a->ikey, "tags", tags,
			"data", "baseType", "RemoteDependencyData", "baseData", "ver", 2,
			"name", r->type, "id", id, "duration", "00:00:00.000", "success", 1,
			"resultCode", "0", "type", "InProc", "properties", props);
	if (!env || json_array_append_new(a->batch, env))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((long long)json_array_size(a->batch) >= a->batch_size)
		return az_send(a, err);
	return 0;
}

static int az_flush(void *state, core_err *err)
{
	return az_send(state, err);
}

const tel_exporter_ops tel__azure = {
	.name = "azure_monitor",
	.configure = az_configure,
	.export = az_export,
	.flush = az_flush,
	.close = az_close,
};

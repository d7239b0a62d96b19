/*
 * otlp.c — ELSPETH's otlp exporter: each event a span (telemetry/exporters/
 * otlp.py; SPEC.md §2.2), sent in batches of batch_size (default 100) as
 * an OTLP ExportTraceServiceRequest, encoded with protobuf-c from the
 * official opentelemetry-proto definitions (proto/otel).
 *
 * Transport: gRPC, as ELSPETH's (its exporter is the gRPC one), unless
 * `protocol: http/protobuf` (ours) or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL /
 * OTEL_EXPORTER_OTLP_PROTOCOL says otherwise; http/json is refused with
 * what is supported. gRPC: http:// is cleartext HTTP/2, https:// TLS, an
 * endpoint without a scheme TLS unless OTEL_EXPORTER_OTLP_INSECURE=true
 * (the Python library's rules). http/protobuf: the endpoint as given,
 * /v1/traces added when it has no path.
 *
 * A span (ELSPETH's _event_to_span): name = the event type, kind
 * INTERNAL, status OK, no parent; trace id = the first 16 bytes of
 * SHA-256(run id), so one trace per run; a random span id; start = end =
 * the event's time; attributes = the event's fields and event_type, None
 * left out, a mapping as its JSON text (json.dumps), a list as an array.
 *
 * Unlike ELSPETH (which logs and loses a failed batch), a batch that is
 * still refused after the retries fails the export that sent it, so the
 * manager's failure rules (fail_on_total_exporter_failure) apply to a
 * dead collector too; the batch is then dropped (ADR 0037).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "telemetry/otlp_internal.h"

/* --------------------------------------------------------------- wire */

int tel__put_varint(core_buf *b, uint64_t v)
{
	uint8_t t[10];
	size_t n = 0;

	do {
		t[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			t[n] |= 0x80;
		n++;
	} while (v);
	return core_buf_append(b, t, n);
}

/* Field `field` (length-delimited) holding p[0..n). */
int tel__put_field(core_buf *b, unsigned field, const void *p, size_t n)
{
	int rc = tel__put_varint(b, (uint64_t)field << 3 | 2);

	if (!rc)
		rc = tel__put_varint(b, n);
	if (!rc)
		rc = core_buf_append(b, p, n);
	return rc;
}

int tel__put_msg(core_buf *b, unsigned field, const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m);
	uint8_t *p = malloc(n ? n : 1);
	int rc;

	if (!p)
		return CORE_ENOMEM;
	protobuf_c_message_pack(m, p);
	rc = tel__put_field(b, field, p, n);
	free(p);
	return rc;
}

/* ------------------------------------------------------- attributes */


int tel__attrs_keep(attrs *a, json_t *j)
{
	json_t **g = realloc(a->jsons, (a->njsons + 1) * sizeof(*g));

	if (!g)
		return CORE_ENOMEM;
	a->jsons = g;
	a->jsons[a->njsons++] = j;
	return 0;
}

void tel__attrs_free(attrs *a)
{
	for (size_t i = 0; i < a->njsons; i++)
		json_decref(a->jsons[i]);
	free(a->jsons);
	for (size_t i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	free(a->owned);
	free(a->kv);
	free(a->ptrs);
	free(a->vals);
}

/* a frees p with itself (NULL p: out of memory, NULL returned). */
static void *own(attrs *a, void *p)
{
	void **g;

	if (!p || !(g = realloc(a->owned, (a->nowned + 1) * sizeof(*g)))) {
		free(p);
		return NULL;
	}
	a->owned = g;
	a->owned[a->nowned++] = p;
	return p;
}

/* Python's json.dumps(v): ", " and ": ", ASCII only. */
static char *py_json(const json_t *v)
{
	core_buf b = { 0 };

	if (core_json_append_py(&b, v, -1, 0) || core_buf_putc(&b, '\0')) {
		core_buf_release(&b);
		return NULL;
	}
	return b.data;
}

/* v as an AnyValue; false when it has none (null) or out of memory. */
static bool any_of(attrs *a, const json_t *v, any_t *out)
{
	*out = (any_t)OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	switch (json_typeof(v)) {
	case JSON_STRING:
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		out->string_value = (char *)json_string_value(v);
		return true;
	case JSON_INTEGER:
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
		out->int_value = json_integer_value(v);
		return true;
	case JSON_REAL:
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE;
		out->double_value = json_real_value(v);
		return true;
	case JSON_TRUE:
	case JSON_FALSE:
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
		out->bool_value = json_is_true(v);
		return true;
	case JSON_OBJECT: {
		char *t = own(a, py_json(v));

		if (!t)
			return false;
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		out->string_value = t;
		return true;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		Opentelemetry__Proto__Common__V1__ArrayValue *arr = own(a, malloc(sizeof(*arr)));
		any_t *items = own(a, calloc(n ? n : 1, sizeof(*items)));
		any_t **ptrs = own(a, calloc(n ? n : 1, sizeof(*ptrs)));
		size_t k = 0;

		if (!arr || !items || !ptrs)
			return false;
		*arr = (Opentelemetry__Proto__Common__V1__ArrayValue)
			OPENTELEMETRY__PROTO__COMMON__V1__ARRAY_VALUE__INIT;
		for (size_t i = 0; i < n; i++)
			if (any_of(a, json_array_get(v, i), &items[k]))
				ptrs[k] = &items[k], k++;
		arr->n_values = k;
		arr->values = ptrs;
		out->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
		out->array_value = arr;
		return true;
	}
	case JSON_NULL:
		return false;
	}
	return false;
}

/* The attribute key over the value just put in vals[n]. */
static int push_kv(attrs *a, const char *key)
{
	a->kv[a->n] = (kv_t)OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
	a->kv[a->n].key = (char *)key;
	a->kv[a->n].value = &a->vals[a->n];
	a->ptrs[a->n] = &a->kv[a->n];
	a->n++;
	return 0;
}

int tel__add_attr(attrs *a, const char *key, const json_t *v)
{
	if (a->n == a->cap)
		return CORE_ENOMEM; /* sized by the caller */
	if (!any_of(a, v, &a->vals[a->n]))
		return json_is_null(v) ? 0 : CORE_ENOMEM;
	return push_kv(a, key);
}

int tel__add_attr_str(attrs *a, const char *key, const char *val)
{
	if (a->n == a->cap)
		return CORE_ENOMEM;
	a->vals[a->n] = (any_t)OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
	a->vals[a->n].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	a->vals[a->n].string_value = (char *)val;
	return push_kv(a, key);
}

int tel__attrs_init(attrs *a, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->cap = cap;
	a->kv = calloc(cap ? cap : 1, sizeof(*a->kv));
	a->ptrs = calloc(cap ? cap : 1, sizeof(*a->ptrs));
	a->vals = calloc(cap ? cap : 1, sizeof(*a->vals));
	return a->kv && a->ptrs && a->vals ? 0 : CORE_ENOMEM;
}

/* -------------------------------------------------------------- spans */

uint8_t *tel__trace_id(const char *run_id, uint8_t out[16])
{
	uint8_t d[CORE_SHA256_LEN];

	core_sha256(run_id, strlen(run_id), d);
	memcpy(out, d, 16);
	return out;
}

/* A field as an attribute, as ELSPETH's _serialize_event_attributes:
 * None left out, a mapping as its JSON text, a list as an array. */
static int add_field(attrs *a, const tel_field *f)
{
	json_t *j;
	int rc;

	switch (f->type) {
	case TEL_F_NULL:
		return 0;
	case TEL_F_STR:
		return tel__add_attr_str(a, f->key, f->s);
	case TEL_F_JSON:
		return tel__add_attr(a, f->key, f->j);
	default:
		if (!(j = tel__field_json(f)))
			return CORE_ENOMEM;
		rc = tel__add_attr(a, f->key, j);
		/* the attribute's scalars are copied; an array keeps its
		 * strings: let the attrs own j */
		if (!rc && !json_is_array(j))
			json_decref(j);
		else if (!rc)
			rc = tel__attrs_keep(a, j);
		else
			json_decref(j);
		return rc;
	}
}

static int pack_span(otlp *o, const tel_record *r)
{
	Opentelemetry__Proto__Trace__V1__Span sp = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__INIT;
	Opentelemetry__Proto__Trace__V1__Status st = OPENTELEMETRY__PROTO__TRACE__V1__STATUS__INIT;
	uint8_t trace[16], span[8];
	attrs a;
	int rc;

	if ((rc = tel__attrs_init(&a, r->n + 1))) {
		tel__attrs_free(&a);
		return CORE_ENOMEM;
	}
	for (size_t i = 0; !rc && i < r->n; i++)
		rc = add_field(&a, &r->f[i]);
	if (!rc)
		rc = tel__add_attr_str(&a, "event_type", r->type);
	do {
		if (RAND_bytes(span, sizeof(span)) != 1)
			memset(span, 1, sizeof(span));
	} while (!memcmp(span, "\0\0\0\0\0\0\0\0", 8));
	sp.trace_id = (ProtobufCBinaryData){ 16, tel__trace_id(r->run_id, trace) };
	sp.span_id = (ProtobufCBinaryData){ 8, span };
	sp.flags = 0x100 | 1; /* SAMPLED; the parent is known (none): not remote */
	sp.name = (char *)r->type;
	sp.kind = OPENTELEMETRY__PROTO__TRACE__V1__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
	sp.start_time_unix_nano = sp.end_time_unix_nano = r->at_ns;
	sp.n_attributes = a.n;
	sp.attributes = a.ptrs;
	st.code = OPENTELEMETRY__PROTO__TRACE__V1__STATUS__STATUS_CODE__STATUS_CODE_OK;
	sp.status = &st;
	if (!rc)
		rc = tel__put_msg(&o->spans, 2, &sp.base);
	if (!rc)
		o->nspans++;
	tel__attrs_free(&a);
	return rc;
}

int tel__put_resource(otlp *o, core_buf *b)
{
	Opentelemetry__Proto__Resource__V1__Resource res =
		OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	const char *k;
	json_t *v;
	attrs a;
	int rc = tel__attrs_init(&a, json_object_size(o->resource));

	json_object_foreach(o->resource, k, v)
		if (!rc)
			rc = tel__add_attr(&a, k, v);
	res.n_attributes = a.n;
	res.attributes = a.ptrs;
	if (!rc)
		rc = tel__put_msg(b, 1, &res.base);
	tel__attrs_free(&a);
	return rc;
}

/* Field 1 of ScopeSpans: ELSPETH's instrumentation scope. */
int tel__put_scope(core_buf *b)
{
	Opentelemetry__Proto__Common__V1__InstrumentationScope sc =
		OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;

	sc.name = "elspeth.telemetry";
	sc.version = ELSPETH_VERSION;
	return tel__put_msg(b, 1, &sc.base);
}

int tel__otlp_post(otlp *o, const char *url, const char *shown, const core_buf *inner,
		   core_err *err)
{
	tel_http_req q = { .url = url, .shown = shown, .grpc = o->grpc,
			   .content_type = "application/x-protobuf",
			   .headers = o->headers, .timeout_ms = o->timeout_ms,
			   .tries = (unsigned)o->tries };
	core_buf req = { 0 };
	int rc = 0;

	if (o->grpc) /* the gRPC frame: uncompressed, then the length */
		rc = core_buf_append(&req, "\0\0\0\0\0", 5);
	if (!rc)
		rc = tel__put_field(&req, 1, inner->data, inner->len);
	if (!rc && o->grpc) {
		uint32_t n = (uint32_t)(req.len - 5);
		uint8_t *p = (uint8_t *)req.data;

		p[1] = (uint8_t)(n >> 24), p[2] = (uint8_t)(n >> 16);
		p[3] = (uint8_t)(n >> 8), p[4] = (uint8_t)n;
	}
	if (rc) {
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else {
		q.body = req.data;
		q.len = req.len;
		rc = tel__http_send(&q, NULL, err);
	}
	core_buf_release(&req);
	return rc;
}

static int send_batch(otlp *o, core_err *err)
{
	core_buf scope = { 0 }, rs = { 0 };
	int rc;

	if (!o->nspans)
		return 0;
	/* ExportTraceServiceRequest{resource_spans: ResourceSpans{resource,
	 * scope_spans: ScopeSpans{scope, spans...}}}, the spans packed as
	 * they came. */
	rc = tel__put_scope(&scope);
	if (!rc)
		rc = core_buf_append(&scope, o->spans.data, o->spans.len);
	if (!rc)
		rc = tel__put_resource(o, &rs);
	if (!rc)
		rc = tel__put_field(&rs, 2, scope.data, scope.len);
	if (rc)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else if ((rc = tel__otlp_post(o, o->url, o->shown, &rs, err)))
		core_err_prefix(err, "%zu spans not delivered", o->nspans);
	/* Sent or not, the batch is done with (ELSPETH clears it too). */
	o->spans.len = 0;
	o->nspans = 0;
	core_buf_release(&scope);
	core_buf_release(&rs);
	return rc;
}

static int otlp_export(void *state, const tel_record *r, core_err *err)
{
	otlp *o = state;

	if (pack_span(o, r))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((long long)o->nspans >= o->batch_size)
		return send_batch(o, err);
	return 0;
}

static int otlp_flush(void *state, core_err *err)
{
	return send_batch(state, err);
}

static void otlp_close(void *state)
{
	otlp *o = state;

	if (!o)
		return;
	curl_slist_free_all(o->headers);
	core_buf_release(&o->spans);
	json_decref(o->resource);
	free(o);
}

/* ------------------------------------------------------------ configure */

static const char *env_first(const char *a, const char *b)
{
	const char *v = getenv(a);

	return v && *v ? v : (v = getenv(b)) && *v ? v : NULL;
}

/* The collector's url for the protocol, from the endpoint as written. */
static int endpoint_url(otlp *o, const tel_opts *op, const char *ep, core_err *err)
{
	const char *scheme = strstr(ep, "://");
	const char *insecure = env_first("OTEL_EXPORTER_OTLP_TRACES_INSECURE",
					 "OTEL_EXPORTER_OTLP_INSECURE");
	size_t n;

	if (scheme && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
		return tel__fail(op, "endpoint", err,
				 "endpoint '%s': the scheme must be http:// or https://", ep);
	char base[1800];

	if (o->grpc) {
		n = (size_t)snprintf(base, sizeof(base), "%s%s", scheme ? "" :
			insecure && !strcasecmp(insecure, "true") ? "http://" : "https://", ep);
		while (n && n < sizeof(base) && base[n - 1] == '/')
			base[--n] = '\0';
		snprintf(o->url, sizeof(o->url), "%s%s", base,
			 "/opentelemetry.proto.collector.trace.v1.TraceService/Export");
		snprintf(o->murl, sizeof(o->murl), "%s%s", base,
			 "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export");
	} else {
		const char *path = scheme ? strchr(scheme + 3, '/') : strchr(ep, '/');
		bool bare = !path || !strcmp(path, "/");

		/* OTLP/HTTP: a bare endpoint gets the signal's path; a
		 * path given is the traces' (metrics: its /v1/traces
		 * replaced, or /v1/metrics beside it). */
		n = (size_t)snprintf(base, sizeof(base), "%s%s", scheme ? "" : "http://", ep);
		while (bare && n && n < sizeof(base) && base[n - 1] == '/')
			base[--n] = '\0';
		snprintf(o->url, sizeof(o->url), "%s%s", base, bare ? "/v1/traces" : "");
		if (bare)
			snprintf(o->murl, sizeof(o->murl), "%s/v1/metrics", base);
		else if (n > 10 && !strcmp(base + n - 10, "/v1/traces"))
			snprintf(o->murl, sizeof(o->murl), "%.*s/v1/metrics", (int)(n - 10), base);
		else
			snprintf(o->murl, sizeof(o->murl), "%s/v1/metrics", base);
	}
	if (n >= sizeof(base))
		return tel__fail(op, "endpoint", err, "endpoint is too long");
	tel__url_shown(o->url, o->shown, sizeof(o->shown));
	tel__url_shown(o->murl, o->mshown, sizeof(o->mshown));
	return 0;
}

static int otlp_headers(otlp *o, const json_t *h, core_err *err)
{
	const char *k;
	json_t *v;
	char line[4096];

	json_object_foreach((json_t *)h, k, v) {
		snprintf(line, sizeof(line), "%s: %s", k, json_string_value(v));
		if (strpbrk(line, "\r\n"))
			return core_err_set(err, CORE_ECONFIG, "header '%s' holds a line break", k);
		o->headers = curl_slist_append(o->headers, line);
	}
	return 0;
}

/* Options as ELSPETH's (endpoint, headers, batch_size) and ours
 * (protocol); the Resource: the SDK's defaults (service.name
 * unknown_service unless OTEL_SERVICE_NAME). */
static int otlp_configure(const core_node *options, void **state, core_err *err)
{
	tel_opts op = { .exporter = "otlp", .map = options };
	const char *ep = NULL, *proto = env_first("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
						  "OTEL_EXPORTER_OTLP_PROTOCOL");
	const char *timeout = env_first("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
					"OTEL_EXPORTER_OTLP_TIMEOUT");
	json_t *headers = NULL;
	long long interval = 10;
	otlp *o;
	int rc;

	if (!(o = calloc(1, sizeof(*o))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	o->batch_size = 100;
	o->tries = TEL_HTTP_TRIES;
	rc = tel__opt_str(&op, "endpoint", "OTLP exporter requires 'endpoint' in config",
			  false, &ep, err);
	if (!rc)
		rc = tel__opt_headers(&op, "headers", &headers, err);
	if (!rc)
		rc = tel__opt_int(&op, "batch_size", NULL, 1, &o->batch_size, err);
	if (!rc)
		rc = tel__opt_int(&op, "max_attempts", NULL, 1, &o->tries, err);
	if (!rc)
		rc = tel__opt_int(&op, "metrics_interval_seconds", NULL, 0, &interval, err);
	o->metrics_interval_s = (double)interval;
	if (!rc)
		rc = tel__opt_str(&op, "protocol", NULL, false, &proto, err);
	if (!rc && proto && strcmp(proto, "grpc") && strcmp(proto, "http/protobuf"))
		rc = tel__fail(&op, "protocol", err,
			       "protocol '%s' is not supported; use grpc or http/protobuf", proto);
	o->grpc = !proto || !strcmp(proto, "grpc");
	o->timeout_ms = timeout ? atol(timeout) : 10000;
	if (!rc && ep)
		rc = endpoint_url(o, &op, ep, err);
	if (!rc && headers)
		rc = otlp_headers(o, headers, err);
	json_decref(headers);
	if (!rc) {
		const char *svc = getenv("OTEL_SERVICE_NAME");

		o->resource = json_pack("{s:s,s:s,s:s,s:s}", "service.name",
					svc && *svc ? svc : "unknown_service",
					"telemetry.sdk.language", "c",
					"telemetry.sdk.name", "elspeth",
					"telemetry.sdk.version", ELSPETH_VERSION);
		if (!o->resource)
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	if (rc) {
		otlp_close(o);
		return rc;
	}
	*state = o;
	return 0;
}

const tel_exporter_ops tel__otlp = {
	.name = "otlp",
	.configure = otlp_configure,
	.export = otlp_export,
	.flush = otlp_flush,
	.close = otlp_close,
	.metrics = tel__otlp_metrics,
};

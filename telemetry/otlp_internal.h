/* otlp_internal.h — what otlp.c and otlp_metrics.c share. */
#ifndef ELSPETH_OTLP_INTERNAL_H
#define ELSPETH_OTLP_INTERNAL_H

#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb-c.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb-c.h"
#include "telemetry/tel_http.h"

typedef Opentelemetry__Proto__Common__V1__KeyValue kv_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_t;

typedef struct otlp {
	char url[2048];            /* traces */
	char shown[2048];
	char murl[2048];           /* metrics */
	char mshown[2048];
	bool grpc;
	struct curl_slist *headers;
	long long batch_size, tries;
	double metrics_interval_s; /* 0: no metrics */
	uint64_t metrics_sent_ns;  /* the last metrics request */
	long timeout_ms;
	core_buf spans;            /* packed spans, each framed as field 2 of
				    * ScopeSpans */
	size_t nspans;
	json_t *resource;          /* the Resource's attributes */
} otlp;

/* Attributes under construction: KeyValues over values that stay valid
 * until attrs_free (strings are borrowed; mappings' JSON texts and
 * arrays are owned). */
typedef struct attrs {
	kv_t *kv;
	kv_t **ptrs;
	any_t *vals;
	size_t n, cap;
	void **owned;              /* freed with the attrs */
	size_t nowned;
	json_t **jsons;            /* values whose strings are borrowed */
	size_t njsons;
} attrs;

int tel__attrs_init(attrs *a, size_t cap);
void tel__attrs_free(attrs *a);
/* a keeps a reference to j (its strings are in the attributes). */
int tel__attrs_keep(attrs *a, json_t *j);
/* key: v as ELSPETH's _serialize_event_attributes (null: left out). */
int tel__add_attr(attrs *a, const char *key, const json_t *v);
/* key: val (borrowed) as a string. */
int tel__add_attr_str(attrs *a, const char *key, const char *val);

/* Protobuf wire pieces: field (length-delimited) holding p[0..n), or a
 * packed message m. */
int tel__put_varint(core_buf *b, uint64_t v);
int tel__put_field(core_buf *b, unsigned field, const void *p, size_t n);
int tel__put_msg(core_buf *b, unsigned field, const ProtobufCMessage *m);
/* Field 1 (resource) of Resource{Spans,Metrics} and field 1 (scope) of
 * Scope{Spans,Metrics}. */
int tel__put_resource(otlp *o, core_buf *b);
int tel__put_scope(core_buf *b);
/* Sends an Export request whose body is field 1 holding `inner` (a
 * ResourceSpans or ResourceMetrics) to url, framed for gRPC if o says. */
int tel__otlp_post(otlp *o, const char *url, const char *shown, const core_buf *inner,
		   core_err *err);

/* otlp_metrics.c: the exporter's metrics op. */
int tel__otlp_metrics(void *state, const json_t *sample, core_err *err);

#endif

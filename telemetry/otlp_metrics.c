/*
 * otlp_metrics.c — the otlp exporter's metrics: the counters and gauges
 * the Prometheus endpoint serves (docs/observability.md), as an OTLP
 * ExportMetricsServiceRequest every metrics_interval_seconds (ours,
 * default 10; 0: none) and once at the end, to the collector's metrics
 * service (gRPC) or /v1/metrics (http/protobuf). Counters are cumulative
 * monotonic Sums from the run's start; levels are Gauges. Names follow
 * OpenTelemetry's conventions (dotted, units in UCUM: "{row}", "By").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/otlp_internal.h"

typedef Opentelemetry__Proto__Metrics__V1__NumberDataPoint point_t;

/* One data point: a value (an integer unless dbl) and up to two string
 * attributes. */
typedef struct pt {
	const char *k1, *v1, *k2, *v2;
	bool dbl;
	int64_t i;
	double d;
} pt;

typedef struct mctx {
	core_buf scope;            /* ScopeMetrics being built */
	uint64_t start_ns, now_ns;
	int rc;
} mctx;

static void metric(mctx *m, const char *name, const char *unit, const char *desc,
		   bool sum, const pt *pts, size_t n)
{
	Opentelemetry__Proto__Metrics__V1__Metric me =
		OPENTELEMETRY__PROTO__METRICS__V1__METRIC__INIT;
	Opentelemetry__Proto__Metrics__V1__Sum su = OPENTELEMETRY__PROTO__METRICS__V1__SUM__INIT;
	Opentelemetry__Proto__Metrics__V1__Gauge ga = OPENTELEMETRY__PROTO__METRICS__V1__GAUGE__INIT;
	point_t *p = calloc(n ? n : 1, sizeof(*p));
	point_t **pp = calloc(n ? n : 1, sizeof(*pp));
	attrs *a = calloc(n ? n : 1, sizeof(*a));

	if (m->rc)
		goto out;
	if (!p || !pp || !a) {
		m->rc = CORE_ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n && !m->rc; i++) {
		p[i] = (point_t)OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__INIT;
		if ((m->rc = tel__attrs_init(&a[i], 2)) ||
		    (pts[i].v1 && (m->rc = tel__add_attr_str(&a[i], pts[i].k1, pts[i].v1))) ||
		    (pts[i].v2 && (m->rc = tel__add_attr_str(&a[i], pts[i].k2, pts[i].v2))))
			break;
		p[i].n_attributes = a[i].n;
		p[i].attributes = a[i].ptrs;
		p[i].start_time_unix_nano = sum ? m->start_ns : 0;
		p[i].time_unix_nano = m->now_ns;
		if (pts[i].dbl) {
			p[i].value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_DOUBLE;
			p[i].as_double = pts[i].d;
		} else {
			p[i].value_case = OPENTELEMETRY__PROTO__METRICS__V1__NUMBER_DATA_POINT__VALUE_AS_INT;
			p[i].as_int = pts[i].i;
		}
		pp[i] = &p[i];
	}
	if (m->rc)
		goto out;
	me.name = (char *)name;
	me.unit = (char *)unit;
	me.description = (char *)desc;
	if (sum) {
		su.n_data_points = n;
		su.data_points = pp;
		su.aggregation_temporality =
			OPENTELEMETRY__PROTO__METRICS__V1__AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE;
		su.is_monotonic = 1;
		me.data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_SUM;
		me.sum = &su;
	} else {
		ga.n_data_points = n;
		ga.data_points = pp;
		me.data_case = OPENTELEMETRY__PROTO__METRICS__V1__METRIC__DATA_GAUGE;
		me.gauge = &ga;
	}
	m->rc = tel__put_msg(&m->scope, 2, &me.base);
out:
	for (size_t i = 0; a && i < n; i++)
		tel__attrs_free(&a[i]);
	free(a);
	free(p);
	free(pp);
}

static int64_t num(const json_t *o, const char *k)
{
	return (int64_t)json_integer_value(json_object_get(o, k));
}

/* Every key of map as a point labelled `label`. */
static void by_key(mctx *m, const char *name, const char *unit, const char *desc,
		   const json_t *map, const char *label)
{
	size_t n = json_object_size(map), i = 0;
	pt *pts = calloc(n ? n : 1, sizeof(*pts));
	const char *k;
	json_t *v;

	if (!pts) {
		m->rc = CORE_ENOMEM;
		return;
	}
	json_object_foreach((json_t *)map, k, v)
		pts[i++] = (pt){ .k1 = label, .v1 = k, .i = json_integer_value(v) };
	if (n)
		metric(m, name, unit, desc, true, pts, n);
	free(pts);
}

static void upstreams(mctx *m, const json_t *ups)
{
	size_t n = json_array_size(ups);
	pt *req = calloc(n ? n : 1, sizeof(pt)), *ref = calloc(n ? n : 1, sizeof(pt));
	pt *pace = calloc(n ? n : 1, sizeof(pt)), *win = calloc(n ? n : 1, sizeof(pt));
	pt *fl = calloc(n ? n : 1, sizeof(pt));

	if (!req || !ref || !pace || !win || !fl) {
		m->rc = CORE_ENOMEM;
	} else if (n) {
		for (size_t i = 0; i < n; i++) {
			const json_t *u = json_array_get(ups, i);
			pt base = { .k1 = "node", .v1 = json_string_value(json_object_get(u, "node")),
				    .k2 = "upstream",
				    .v2 = json_string_value(json_object_get(u, "upstream")) };

			req[i] = ref[i] = pace[i] = win[i] = fl[i] = base;
			req[i].i = num(u, "requests");
			ref[i].i = num(u, "refusals");
			fl[i].i = num(u, "in_flight");
			pace[i].dbl = win[i].dbl = true;
			pace[i].d = json_number_value(json_object_get(u, "pace"));
			win[i].d = json_number_value(json_object_get(u, "window"));
		}
		metric(m, "elspeth.upstream.requests", "{request}",
		       "requests sent to the upstream, every attempt", true, req, n);
		metric(m, "elspeth.upstream.refusals", "{request}",
		       "requests the upstream refused for capacity (429 ...)", true, ref, n);
		metric(m, "elspeth.upstream.pace", "{request}/s",
		       "the capacity controller's pace (0: not paced)", false, pace, n);
		metric(m, "elspeth.upstream.window", "{request}",
		       "requests in flight the capacity controller allows", false, win, n);
		metric(m, "elspeth.upstream.in_flight", "{request}", "requests in flight now",
		       false, fl, n);
	}
	free(req), free(ref), free(pace), free(win), free(fl);
}

int tel__otlp_metrics(void *state, const json_t *s, core_err *err)
{
	otlp *o = state;
	mctx m = { 0 };
	core_buf rm = { 0 };
	bool final = json_is_true(json_object_get(s, "final"));
	uint64_t at = (uint64_t)num(s, "at_ns");
	json_t *run = json_object_get(s, "run_id");
	int rc;

	if (o->metrics_interval_s <= 0 || (!final && o->metrics_sent_ns &&
	    (double)(at - o->metrics_sent_ns) < o->metrics_interval_s * 1e9))
		return 0;
	o->metrics_sent_ns = at;
	m.now_ns = at;
	m.start_ns = at - (uint64_t)num(s, "elapsed_ns");
	m.rc = tel__put_scope(&m.scope);
	metric(&m, "elspeth.rows.pulled", "{row}", "rows read from the source", true,
	       &(pt){ .i = num(s, "pulled") }, 1);
	metric(&m, "elspeth.rows.released", "{row}", "rows released to the sinks, in order",
	       true, &(pt){ .i = num(s, "released") }, 1);
	metric(&m, "elspeth.rows.in_flight", "{row}", "rows being processed", false,
	       &(pt){ .i = num(s, "in_flight") }, 1);
	metric(&m, "elspeth.rows.waiting", "{row}", "rows done, waiting for their turn",
	       false, &(pt){ .i = num(s, "waiting") }, 1);
	metric(&m, "elspeth.rows.waiting.size", "By", "what the waiting rows hold", false,
	       &(pt){ .i = num(s, "waiting_bytes") }, 1);
	by_key(&m, "elspeth.tokens", "{token}", "tokens by terminal outcome",
	       json_object_get(s, "outcomes"), "outcome");
	metric(&m, "elspeth.calls", "{call}", "outside calls (every attempt)", true,
	       &(pt){ .i = num(s, "calls") }, 1);
	by_key(&m, "elspeth.calls.failed", "{call}", "outside calls that failed, by class",
	       json_object_get(s, "calls_by_class"), "class");
	metric(&m, "elspeth.calls.replayed", "{call}", "answers a resume reused", true,
	       &(pt){ .i = num(s, "calls_replayed") }, 1);
	upstreams(&m, json_object_get(s, "upstreams"));
	rc = m.rc;
	/* ResourceMetrics{resource (+ the run), scope_metrics} */
	if (!rc) {
		json_object_set(o->resource, "elspeth.run_id", run);
		rc = tel__put_resource(o, &rm);
		json_object_del(o->resource, "elspeth.run_id");
	}
	if (!rc)
		rc = tel__put_field(&rm, 2, m.scope.data, m.scope.len);
	if (rc)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = tel__otlp_post(o, o->murl, o->mshown, &rm, err);
	core_buf_release(&m.scope);
	core_buf_release(&rm);
	return rc;
}

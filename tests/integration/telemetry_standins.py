#!/usr/bin/python3
"""Collectors the telemetry test sends to, written against the documented
intake APIs, decoding with code that is not ours:

  otlp-http   POST /v1/traces, an OTLP ExportTraceServiceRequest
              (application/x-protobuf), decoded by Google's protobuf
              library from the official opentelemetry-proto definitions
              (compiled here with Debian's protoc);
  otlp-grpc   the same over gRPC (Debian's grpcio server);
  datadog     a Datadog Agent's PUT /v0.3/traces (JSON) — docs.datadoghq.com,
              "Send traces to the Agent by API";
  azure       Application Insights' POST /v2.1/track (a JSON array of
              envelopes).

Each received span is one JSON line in --out. --fail N answers the first N
requests with 503 (gRPC UNAVAILABLE); --stall holds every request unanswered.
Usage: telemetry_standins.py KIND PORT --out FILE --protos DIR [--fail N] [--stall]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=["otlp-http", "otlp-grpc", "datadog", "azure"])
ap.add_argument("port", type=int)
ap.add_argument("--out", required=True)
ap.add_argument("--protos")
ap.add_argument("--fail", type=int, default=0)
ap.add_argument("--stall", action="store_true")
ap.add_argument("--ikey", default="00000000-0000-0000-0000-000000000000")
args = ap.parse_args()

lock = threading.Lock()
state = {"requests": 0}


def record(obj):
    with lock:
        with open(args.out, "a") as f:
            f.write(json.dumps(obj, sort_keys=True) + "\n")


def should_fail():
    with lock:
        state["requests"] += 1
        return state["requests"] <= args.fail


def any_value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def spans_of(req):
    for rs in req.resource_spans:
        res = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
        for ss in rs.scope_spans:
            for sp in ss.spans:
                record({
                    "name": sp.name, "trace_id": sp.trace_id.hex(),
                    "span_id": sp.span_id.hex(), "kind": sp.kind,
                    "start": sp.start_time_unix_nano, "end": sp.end_time_unix_nano,
                    "status": sp.status.code, "parent": sp.parent_span_id.hex(),
                    "scope": ss.scope.name, "scope_version": ss.scope.version,
                    "resource": res,
                    "attributes": {kv.key: any_value(kv.value) for kv in sp.attributes},
                })


def metrics_of(req):
    for rm in req.resource_metrics:
        res = {kv.key: any_value(kv.value) for kv in rm.resource.attributes}
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof("data")
                data = getattr(m, kind)
                for p in data.data_points:
                    record({
                        "metric": m.name, "unit": m.unit, "kind": kind,
                        "monotonic": getattr(data, "is_monotonic", None),
                        "value": getattr(p, p.WhichOneof("value")),
                        "attributes": {kv.key: any_value(kv.value) for kv in p.attributes},
                        "start": p.start_time_unix_nano, "time": p.time_unix_nano,
                        "run_id": res.get("elspeth.run_id"), "scope": sm.scope.name})


def load_protos():
    gen = tempfile.mkdtemp(prefix="otelpb")
    files = [os.path.relpath(os.path.join(d, f), args.protos)
             for d, _, fs in os.walk(args.protos) for f in fs if f.endswith(".proto")]
    subprocess.run(["protoc", "--proto_path", args.protos, "--python_out", gen] + files,
                   check=True)
    sys.path.insert(0, gen)
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
    return trace_service_pb2, metrics_service_pb2


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def do_POST(self):
        data = self.body()
        if args.stall:
            time.sleep(3600)
        if should_fail():
            return self.reply(503, b"try later")
        if args.kind == "otlp-http" and self.path == "/v1/metrics":
            metrics_of(MPB.ExportMetricsServiceRequest.FromString(data))
            return self.reply(200, MPB.ExportMetricsServiceResponse().SerializeToString(),
                              "application/x-protobuf")
        if args.kind == "otlp-http":
            if self.path != "/v1/traces" or \
               self.headers.get("Content-Type") != "application/x-protobuf":
                return self.reply(400, b"bad path or content type")
            req = PB.ExportTraceServiceRequest.FromString(data)
            spans_of(req)
            record({"headers": {k.lower(): v for k, v in self.headers.items()}})
            return self.reply(200, PB.ExportTraceServiceResponse().SerializeToString(),
                              "application/x-protobuf")
        if args.kind == "azure":
            return self.azure(data)
        self.reply(404)

    def do_PUT(self):
        data = self.body()
        if args.stall:
            time.sleep(3600)
        if should_fail():
            return self.reply(503, b"try later")
        if args.kind != "datadog" or self.path != "/v0.3/traces":
            return self.reply(404)
        traces = json.loads(data)
        assert isinstance(traces, list)
        for trace in traces:
            assert isinstance(trace, list)
            for sp in trace:
                for k in ("trace_id", "span_id", "start", "duration"):
                    assert isinstance(sp[k], int) and sp[k] >= 0, k
                for k in ("name", "resource", "service"):
                    assert isinstance(sp[k], str) and sp[k], k
                assert all(isinstance(v, str) for v in sp.get("meta", {}).values())
                assert all(isinstance(v, (int, float)) for v in sp.get("metrics", {}).values())
                record(sp)
        self.reply(200, b"OK", "text/plain")

    def azure(self, data):
        if self.path != "/v2.1/track":
            return self.reply(404)
        items = json.loads(data)
        accepted = 0
        for env in items:
            ok = (env.get("iKey") == args.ikey and
                  env.get("name") == "Microsoft.ApplicationInsights.RemoteDependency" and
                  re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,7})?Z", env.get("time", ""))
                  and env["data"]["baseType"] == "RemoteDependencyData" and
                  re.fullmatch(r"(\d+\.)?\d\d:\d\d:\d\d\.\d{3}", env["data"]["baseData"]["duration"])
                  and env["data"]["baseData"]["ver"] == 2)
            if ok:
                accepted += 1
                record(env)
        self.reply(200, json.dumps({"itemsReceived": len(items), "itemsAccepted": accepted,
                                    "errors": []}).encode())


PB, MPB = load_protos() if args.kind.startswith("otlp") else (None, None)

if args.kind == "otlp-grpc":
    import grpc
    from concurrent import futures

    def export(req, ctx):
        if args.stall:
            time.sleep(3600)
        if should_fail():
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "try later")
        spans_of(req)
        record({"metadata": {k: v for k, v in ctx.invocation_metadata()}})
        return PB.ExportTraceServiceResponse()

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(
            export, request_deserializer=PB.ExportTraceServiceRequest.FromString,
            response_serializer=PB.ExportTraceServiceResponse.SerializeToString)})
    def export_metrics(req, ctx):
        metrics_of(req)
        return MPB.ExportMetricsServiceResponse()

    mhandler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.metrics.v1.MetricsService",
        {"Export": grpc.unary_unary_rpc_method_handler(
            export_metrics, request_deserializer=MPB.ExportMetricsServiceRequest.FromString,
            response_serializer=MPB.ExportMetricsServiceResponse.SerializeToString)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler, mhandler))
    server.add_insecure_port("127.0.0.1:%d" % args.port)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()
else:
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    httpd.daemon_threads = True
    print("ready", flush=True)
    httpd.serve_forever()

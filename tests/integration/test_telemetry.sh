#!/usr/bin/env bash
# ELSPETH's telemetry block (#31, ADR 0037): our events against real
# ELSPETH 0.4.1's (tests/fixtures/elspeth_telemetry, recorded with the
# reference), its settings errors, and the exporters against collectors
# written from the documented intake APIs (telemetry_standins.py: OTLP
# decoded by Google's protobuf and grpcio from the official definitions,
# a Datadog Agent's /v0.3/traces, Application Insights' /v2.1/track);
# the failure rules with a dead collector, drop mode with a stalled one,
# and no secret in any event.
source "$(dirname "$0")/lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
FIX="$SRC/tests/fixtures/elspeth_telemetry"
CMP="$SRC/tests/integration/telemetry_compare.py"
STANDIN="$SRC/tests/integration/telemetry_standins.py"
DPY=/usr/bin/python3 # Debian's, with python3-grpcio and python3-protobuf
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$WORK"; }
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done' EXIT

free_port() { "$DPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fresh() { rm -rf p; cp -r "$FIX/pipeline" p; mkdir -p p/runs p/output; }
# standin KIND OUT [ARGS...]: starts a collector, sets SP to its port
standin() {
  local kind=$1 out=$2; shift 2
  SP=$(free_port)
  "$DPY" "$STANDIN" "$kind" "$SP" --out "$out" --protos "$SRC/proto/otel" "$@" > "$out.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do grep -q ready "$out.log" 2>/dev/null && return 0; sleep 0.05; done
  fail "$kind stand-in did not start"; cat "$out.log"
}
# with_telemetry FILE BLOCK: the fixture's base pipeline with another telemetry block
with_telemetry() {
  sed '/^telemetry:/,$d' p/settings_full_json_stderr.yaml > "p/$1"
  printf '%s\n' "$2" >> "p/$1"
}

# --- 1. the same events as ELSPETH, field for field -------------------------
for r in full_json_stderr full_pretty_stderr rows_json_stderr lifecycle_json_stderr \
         rows_json_stderr_errors rows_pretty_stderr_errors; do
  fresh
  mode=json; case $r in *pretty*) mode=pretty;; esac
  (cd p && "$ELSPETH" run -s "settings_$r.yaml" -x > out.txt 2> err.txt)
  rc=$?
  if [ $rc = 0 ] && "$DPY" "$CMP" $mode p/err.txt "$FIX/runs/$r.stderr" > cmp.txt; then
    pass "$r: the events ELSPETH emits, in its order, with its fields ($(tail -1 cmp.txt))"
  else
    fail "$r (exit $rc)"; cat cmp.txt p/err.txt | head -30
  fi
  # the sinks hold ELSPETH's rows, compared as records on ELSPETH's
  # columns: field_mapper keeps a renamed field in its place where ELSPETH
  # moves it to the end, and a quarantined row carries _error_node and
  # _error (ADR 0003)
  exp="$FIX/expected_sinks/people"; case $r in *errors) exp="$FIX/expected_sinks/people_errors";; esac
  "$DPY" -c 'import csv,os,sys
a,b=sys.argv[1:3]
for f in sorted(os.listdir(a)):
    x=list(csv.DictReader(open(os.path.join(a,f)))); y=list(csv.DictReader(open(os.path.join(b,f))))
    y=[{k: r[k] for k in (x[0] if x else r)} for r in y]
    assert x==y,(f,x,y)' "$exp" p/output && pass "$r: the sinks hold ELSPETH's records" ||
    fail "$r: sinks differ"
done

# --- 2. settings ELSPETH accepts, and their events --------------------------
fresh
(cd p && "$ELSPETH" run -s settings_ok_defaults_console.yaml -x > out.txt 2> err.txt)
n=$(grep -c '^{"timestamp"' p/out.txt)
[ "$n" = 5 ] && pass "defaults: console json on stdout, lifecycle: 5 events" ||
  { fail "defaults: $n events"; cat p/out.txt; }
fresh
(cd p && "$ELSPETH" run -s settings_ok_disabled_with_exporter.yaml -x > out.txt 2> err.txt)
! grep -q event_type p/out.txt p/err.txt && ! grep -q telemetry p/out.txt &&
  pass "enabled: false emits nothing" || fail "enabled: false emitted"
fresh
expect "enabled with no exporters: runs, with ELSPETH's warning" 0 \
  "Telemetry enabled but no exporters configured" -- \
  bash -c 'cd p && "$0" run -s settings_ok_enabled_no_exporters.yaml -x' "$ELSPETH"
fresh
(cd p && "$ELSPETH" run -s settings_ok_two_consoles.yaml -x > out.txt 2> err.txt)
n=$(grep -c 'RunStarted' p/out.txt p/err.txt | awk -F: '{s+=$2} END {print s}')
[ "$n" = 2 ] && pass "the same exporter twice: two instances" || fail "two consoles: $n RunStarted"
fresh
(cd p && "$ELSPETH" run -s settings_ok_drop_mode.yaml -x > out.txt 2> err.txt) &&
  pass "backpressure_mode: drop runs" || fail "drop mode"

# --- 3. what ELSPETH refuses, refused with its words and our position -------
for f in "$FIX"/pipeline/settings_err_*.yaml; do
  r=$(basename "$f" .yaml); r=${r#settings_}
  fresh
  out=$(cd p && "$ELSPETH" run -s "settings_$r.yaml" -x 2>&1); rc=$?
  want=$(grep -h -m1 -o 'Error during pipeline execution: .*' "$FIX/runs/$r.stderr" |
         sed 's/^Error during pipeline execution: //')
  [ -z "$want" ] && want=$(grep -h -m1 -o '  - telemetry[^:]*' "$FIX/runs/$r.stderr" |
         sed 's/^  - //; s/\.\([0-9]\)\./[\1]./g')
  if [ $rc = 1 ] && grep -qF -- "$want" <<<"$out" && grep -q "settings_$r.yaml:[0-9]*:[0-9]*:" <<<"$out"; then
    pass "$r: refused with file:line:col and '$want'"
  else
    fail "$r: exit $rc, want '$want'"; echo "$out" | head -5
  fi
  [ -e p/runs/audit.db.lmdb ] && fail "$r: a run was recorded before the refusal"
done
fresh
expect "validate finds a bad exporter option" 1 "Invalid format 'xml'" -- \
  "$ELSPETH" validate -s p/settings_err_console_bad_format.yaml

# --- 4. OTLP over gRPC and http/protobuf, decoded by a receiver not ours ----
fresh
standin otlp-grpc grpc.jsonl; GP=$SP
standin otlp-http http.jsonl; HP=$SP
with_telemetry otlp.yaml "telemetry:
  enabled: true
  granularity: full
  exporters:
  - name: console
    options: {output: stderr}
  - name: otlp
    options: {endpoint: \"http://127.0.0.1:$GP\", headers: {authorization: \"Bearer s3cr3t-t0ken\"}, batch_size: 5}
  - name: otlp
    options: {endpoint: \"http://127.0.0.1:$HP\", protocol: http/protobuf}"
(cd p && "$ELSPETH" run -s otlp.yaml -x > out.txt 2> err.txt); rc=$?
is "a run with two OTLP exporters completes" [ $rc = 0 ]
"$DPY" - p/err.txt grpc.jsonl http.jsonl <<'PYEOF' > otlp.txt && pass "OTLP spans decoded: $(tail -1 otlp.txt)" || { fail "OTLP spans"; cat otlp.txt; }
import hashlib, json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
run = events[0]["run_id"]
for path in sys.argv[2:]:
    recs = [json.loads(l) for l in open(path)]
    spans = [r for r in recs if "name" in r and "metric" not in r]
    assert [s["name"] for s in spans] == [e["event_type"] for e in events], path
    trace = hashlib.sha256(run.encode()).digest()[:16].hex()
    for s, e in zip(spans, events):
        assert s["trace_id"] == trace and s["kind"] == 1 and s["status"] == 1, s
        assert s["start"] == s["end"] and len(s["span_id"]) == 16 and s["parent"] == ""
        assert s["scope"] == "elspeth.telemetry"
        a = s["attributes"]
        assert a["event_type"] == e["event_type"]
        for k, v in e.items():
            if k in ("timestamp", "event_type"):
                continue
            if v is None:
                assert k not in a, (k, a)
            elif isinstance(v, dict):
                assert json.loads(a[k]) == v, k
            else:
                assert a[k] == v, (k, a[k], v)
    assert len({s["span_id"] for s in spans}) == len(spans)
for path in sys.argv[2:]:
    ms = {(r["metric"], tuple(sorted(r["attributes"].items()))): r
          for r in map(json.loads, open(path)) if "metric" in r}
    assert ms[("elspeth.rows.released", ())]["value"] == 5, path
    assert ms[("elspeth.rows.pulled", ())]["kind"] == "sum" and ms[("elspeth.rows.pulled", ())]["monotonic"]
    assert ms[("elspeth.tokens", (("outcome", "ROUTED"),))]["value"] == 5
    assert ms[("elspeth.rows.in_flight", ())]["kind"] == "gauge"
    assert ms[("elspeth.rows.released", ())]["run_id"] == run
grpc_meta = [r["metadata"] for r in map(json.loads, open(sys.argv[2])) if "metadata" in r]
assert len(grpc_meta) >= 4 and grpc_meta[0]["authorization"] == "Bearer s3cr3t-t0ken"
print("%d spans each over gRPC (4 batches of <= 5) and http/protobuf, trace id = SHA-256(run id)[:16]; the final metrics" % len(events))
PYEOF
! grep -rq "s3cr3t" p/out.txt p/err.txt && pass "the exporter's header secret is in no event or message" ||
  fail "a secret leaked"

# --- 5. retries, as the OTLP specification says -------------------------------
fresh
standin otlp-http retry.jsonl --fail 2
with_telemetry retry.yaml "telemetry:
  enabled: true
  exporters:
  - name: otlp
    options: {endpoint: \"http://127.0.0.1:$SP\", protocol: http/protobuf}"
(cd p && "$ELSPETH" run -s retry.yaml -x > out.txt 2> err.txt)
n=$(grep -c '"name"' retry.jsonl)
[ "$n" = 5 ] && ! grep -q warning p/err.txt && pass "two 503s, then delivered: 5 spans, no warning" ||
  { fail "retry: $n spans"; cat p/err.txt; }
fresh
standin otlp-grpc retryg.jsonl --fail 1
with_telemetry retryg.yaml "telemetry:
  enabled: true
  exporters:
  - name: otlp
    options: {endpoint: \"http://127.0.0.1:$SP\"}"
(cd p && "$ELSPETH" run -s retryg.yaml -x > out.txt 2> err.txt)
n=$(grep -c '"name"' retryg.jsonl)
[ "$n" = 5 ] && pass "gRPC UNAVAILABLE, then delivered: 5 spans" || { fail "gRPC retry: $n"; cat p/err.txt; }

# --- 6. a dead collector: ELSPETH's failure rules ----------------------------
DEAD=$(free_port)
fresh
with_telemetry dead.yaml "telemetry:
  enabled: true
  max_consecutive_failures: 3
  exporters:
  - name: otlp
    options: {endpoint: \"http://user:pa55word@127.0.0.1:$DEAD\", protocol: http/protobuf, batch_size: 1, max_attempts: 1}"
out=$(cd p && "$ELSPETH" run -s dead.yaml -x 2>&1); rc=$?
if [ $rc = 1 ] && grep -qF "Exporter 'all' failed: All 1 exporters failed 3 consecutive times." <<<"$out" &&
   grep -q "127.0.0.1:$DEAD" <<<"$out" && grep -q "^Run completed: 5 rows" <<<"$out"; then
  pass "fail_on_total_exporter_failure: the run completes, is recorded, and exits 1 naming the collector"
else
  fail "dead collector: exit $rc"; echo "$out" | head
fi
grep -q "pa55word" <<<"$out" && fail "the collector's password was shown" ||
  pass "the collector's password is not in any message"
sed -i 's/max_consecutive_failures: 3/max_consecutive_failures: 3\n  fail_on_total_exporter_failure: false/' p/dead.yaml
out=$(cd p && "$ELSPETH" run -s dead.yaml -x 2>&1); rc=$?
[ $rc = 0 ] && grep -q "telemetry disabled after repeated total failures" <<<"$out" &&
  grep -q "switched off" <<<"$out" &&
  pass "fail_on_total_exporter_failure: false switches telemetry off and the run exits 0" ||
  { fail "disable on failures: exit $rc"; echo "$out" | head; }

# --- 7. drop: a stalled collector never holds the rows back ------------------
fresh
"$DPY" -c 'import csv,sys; w=csv.writer(sys.stdout); w.writerow(["id","name","score"]); [w.writerow([i,"n%d"%i,i%100]) for i in range(1,3001)]' > p/input/people.csv
standin otlp-http stall.jsonl --stall
with_telemetry drop.yaml "telemetry:
  enabled: true
  granularity: rows
  backpressure_mode: drop
  exporters:
  - name: otlp
    options: {endpoint: \"http://127.0.0.1:$SP\", protocol: http/protobuf, batch_size: 2000, max_attempts: 1}"
t0=$(date +%s.%N)
out=$(cd p && OTEL_EXPORTER_OTLP_TIMEOUT=1000 "$ELSPETH" run -s drop.yaml -x -f json 2>&1); rc=$?
t1=$(date +%s.%N)
dropped=$(grep -o '"events_dropped": *[0-9]*' <<<"$out" | grep -o '[0-9]*$')
if [ -n "$dropped" ] && [ "$dropped" -gt 0 ] && awk "BEGIN {exit !($t1 - $t0 < 30)}"; then
  pass "drop mode, stalled collector: 3,000 rows run, $dropped events dropped and reported ($(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s)"
else
  fail "drop mode: exit $rc, dropped '$dropped'"; echo "$out" | tail -5
fi
wc -l < p/output/passed.csv | grep -q . && pass "drop mode: the sinks are whole" || fail "drop sinks"

# --- 8. Datadog Agent and Azure Monitor intake -------------------------------
fresh
standin datadog dd.jsonl; DD=$SP
standin azure az.jsonl; AZ=$SP
with_telemetry cloud.yaml "telemetry:
  enabled: true
  granularity: rows
  exporters:
  - name: datadog
    options: {service_name: elspeth-test, env: staging, version: \"1.2\", agent_host: 127.0.0.1, agent_port: $DD}
  - name: azure_monitor
    options: {connection_string: \"InstrumentationKey=00000000-0000-0000-0000-000000000000;IngestionEndpoint=http://127.0.0.1:$AZ/\", service_name: elspeth-test, deployment_environment: staging}"
(cd p && "$ELSPETH" run -s cloud.yaml -x > out.txt 2> err.txt); rc=$?
"$DPY" - dd.jsonl az.jsonl <<'PYEOF' > cloud.txt && pass "Datadog and Azure intakes: $(tail -1 cloud.txt)" || { fail "cloud exporters (exit $rc)"; cat cloud.txt p/err.txt; }
import json, sys
dd = [json.loads(l) for l in open(sys.argv[1])]
az = [json.loads(l) for l in open(sys.argv[2])]
assert len(dd) == 16 and len(az) == 16, (len(dd), len(az))
assert len({s["trace_id"] for s in dd}) == 1
for s in dd:
    m = s["meta"]
    assert s["service"] == "elspeth-test" and m["env"] == "staging" and m["version"] == "1.2"
    assert m["elspeth.event_type"] == s["name"] == s["resource"]
fr = [s for s in dd if s["name"] == "FieldResolutionApplied"][0]
assert fr["meta"]["elspeth.resolution_mapping.id"] == "id" and fr["metrics"]["elspeth.field_count"] == 3
for e in az:
    p = e["data"]["baseData"]["properties"]
    assert e["tags"]["ai.cloud.role"] == "elspeth-test" and p["cloud.provider"] == "azure"
    assert p["event_type"] == e["data"]["baseData"]["name"]
print("16 spans each, tags and properties as ELSPETH's exporters set them")
PYEOF

# --- several sources (ELSPETH 0.7.1's format): one FieldResolutionApplied
# per source, naming its plugin, in the sources' order, before any row
mkdir -p ms
printf 'id,total\n1,5\n' > ms/a.csv
printf '{"ref": "r1", "amount": 2}\n' > ms/b.jsonl
cat > ms/p.yaml <<'YAML'
sources:
  orders: {plugin: csv, on_success: inbound, options: {path: a.csv, schema: {mode: observed}, on_validation_failure: discard}}
  refunds: {plugin: json, on_success: inbound, options: {path: b.jsonl, format: jsonl, schema: {mode: observed}, on_validation_failure: discard}}
queues: {inbound: {}}
transforms:
  - {name: pass, plugin: passthrough, input: inbound, on_success: out, on_error: discard, options: {schema: {mode: observed}}}
sinks: {out: {plugin: json, on_write_failure: discard, options: {path: out.jsonl, format: jsonl}}}
telemetry: {enabled: true, granularity: rows, exporters: [{name: console, options: {format: json, output: stderr}}]}
landscape: {url: "lmdb://./state"}
YAML
(cd ms && "$ELSPETH" run -s p.yaml -x > out.txt 2> err.txt)
"$DPY" - ms/err.txt <<'PYEOF' && pass "two sources: a FieldResolutionApplied each (csv, then json), before the first row" || { fail "two sources' field resolution"; head -5 ms/err.txt; }
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
kinds = [e["event_type"] for e in ev]
fr = [e for e in ev if e["event_type"] == "FieldResolutionApplied"]
assert [(e["source_plugin"], e["resolution_mapping"]) for e in fr] == \
    [("csv", {"id": "id", "total": "total"})], fr  # the JSON source resolves no header
assert kinds.index("FieldResolutionApplied") < kinds.index("TransformCompleted"), kinds
PYEOF

finish

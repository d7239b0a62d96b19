#!/usr/bin/env bash
# Telemetry of an LLM run (#31, ADR 0037): at granularity full every
# request, every attempt, is an ExternalCallCompleted with its hashes (the
# trail's), payloads and token usage; the API key, given through the
# settings' ${VAR}, is in no event; the OTLP metrics carry the upstream's
# counters; with 16 rows in flight the row events still match the rows.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/llm_lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
DPY=/usr/bin/python3
free_port() { "$DPY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_mock m --latency fixed:20 --seed 3 --error-500-rate 0.1 --require-key sk-t0p-s3cret
rows_csv rows.csv 200
OP=$(free_port)
"$DPY" "$SRC/tests/integration/telemetry_standins.py" otlp-http "$OP" --out otlp.jsonl \
  --protos "$SRC/proto/otel" > otlp.log 2>&1 &
MOCK_PIDS+=($!)
for _ in $(seq 300); do grep -q ready otlp.log 2>/dev/null && break; sleep 0.05; done
pipeline p.yaml rows.csv llm "$(printf '%s\n' "model: test/model-1" \
  "base_url: \"http://127.0.0.1:$PORT/v1\"" "api_key: \"\${LLM_KEY}\"" \
  "template: \"Classify: {{ row.text }}\"" "pool_size: 16")"
cat >> p.yaml <<YAML
telemetry:
  enabled: true
  granularity: full
  exporters:
  - name: console
    options: {output: stderr}
  - name: otlp
    options: {endpoint: "http://127.0.0.1:$OP", protocol: http/protobuf}
YAML
LLM_KEY=sk-t0p-s3cret OUT=out STATE=state timeout 120 "$ELSPETH" run -s p.yaml -x \
  --max-rows-in-flight 16 > run.out 2> events.txt
rc=$?
is "the LLM run completes (exit $rc)" [ $rc = 0 ]
"$DPY" - events.txt otlp.jsonl state <<'PYEOF' > check.txt && pass "$(tail -1 check.txt)" || { fail "full-granularity events"; cat check.txt | tail -20; }
import json, sqlite3, sys, collections
ev = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
types = collections.Counter(e["event_type"] for e in ev)
calls = [e for e in ev if e["event_type"] == "ExternalCallCompleted"]
assert types["RunStarted"] == 1 and types["RunFinished"] == 1, types
assert types["TransformCompleted"] == 200, types          # one per row, after its retries
failed = [c for c in calls if c["status"] == "error"]
ok = [c for c in calls if c["status"] == "success"]
assert len(ok) >= 190 and failed, (len(ok), len(failed))  # the mock's 500s are calls too
for c in ok:
    assert c["call_type"] == "llm" and c["provider"] == "openrouter", c
    assert len(c["request_hash"]) == 64 and len(c["response_hash"]) == 64
    assert c["request_payload"]["model"] == "test/model-1"
    assert c["token_usage"]["prompt_tokens"] > 0
    assert c["state_id"].startswith("st-") and c["token_id"].startswith("tok-")
    assert c["latency_ms"] > 0
rows = {e["row_id"] for e in ev if e["event_type"] == "TransformCompleted"}
assert len(rows) == 200
# OTLP: the same calls as spans, and the upstream's counters as metrics
recs = [json.loads(l) for l in open(sys.argv[2])]
spans = [r for r in recs if "name" in r and "metric" not in r]
assert collections.Counter(s["name"] for s in spans) == types
m = {r["metric"]: r for r in recs if "metric" in r}
assert m["elspeth.upstream.requests"]["value"] == len(calls), (m["elspeth.upstream.requests"], len(calls))
assert m["elspeth.upstream.requests"]["attributes"]["node"] == "t"
assert m["elspeth.rows.released"]["value"] == 200
print("%d events: %d calls (%d answered 500), 200 TransformCompleted; OTLP spans and the upstream's request count agree" % (len(ev), len(calls), len(failed)))
PYEOF
! grep -q "sk-t0p-s3cret" events.txt otlp.jsonl run.out && pass "the API key is in no event, span or message" ||
  fail "the API key leaked"
stop_mock
finish

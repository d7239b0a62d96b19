#!/usr/bin/env bash
# `elspeth serve` (#29, ADR 0038): ELSPETH's web API paths and answer
# shapes over the run library — health, the catalog, a pipeline
# validated, run to completion, listed, its row stories and report read,
# cancelled and resumed, watched over the WebSocket — with every path
# confined to --root; logins (Argon2id users, bearer tokens, the brake on
# failures, the WebSocket's 4001); and the refusals: no users file, --no-auth
# on a non-loopback address, traversal and symbolic links out of the
# root, an oversized body.
source "$(dirname "$0")/lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
DPY=/usr/bin/python3
mkdir -p root/input outside
cp "$SRC/tests/fixtures/elspeth_telemetry/pipeline/input/people.csv" root/input/
sed '/^telemetry:/,$d; s#sqlite:///runs/audit.db#lmdb://./state#' \
  "$SRC/tests/fixtures/elspeth_telemetry/pipeline/settings_full_json_stderr.yaml" > root/p.yaml
"$DPY" -c 'import csv,sys; w=csv.writer(sys.stdout); w.writerow(["id","text"]); [w.writerow([i,"t%d"%i]) for i in range(1,2001)]' > root/input/many.csv
cat > root/slow.yaml <<'YAML'
source: {plugin: csv, on_success: d_in, options: {path: input/many.csv, schema: {mode: observed}, on_validation_failure: discard}}
transforms:
  - {name: slow, plugin: delay, input: d_in, on_success: out, options: {ms: 20}}
sinks:
  out: {plugin: csv, options: {path: slow/out.csv}}
landscape: {url: "lmdb://./slow-state"}
concurrency: {pipelining: {max_rows_in_flight: 4}}
YAML
ln -s "$WORK/outside" root/escape

"$ELSPETH" serve --listen 127.0.0.1:0 --root root --no-auth > serve.out 2> serve.err &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q "listening on port" serve.out 2>/dev/null && break; sleep 0.05; done
P=$(grep -o 'port [0-9]*' serve.out | cut -d' ' -f2)
[ -n "$P" ] && pass "serve listens (port $P)" || { fail "serve did not start"; cat serve.err; finish; exit; }
api() { # METHOD PATH [BODY] -> body, then the status on the last line
  curl -s -X "$1" "http://127.0.0.1:$P$2" ${3:+-d "$3"} -w '\n%{http_code}'
}
status_of() { api GET "/api/runs/$1" | head -1 | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["status"])'; }
wait_state() { # ID STATE...: waits up to 30 s for one of the states
  local s
  for _ in $(seq 300); do
    s=$(status_of "$1")
    for want in "${@:2}"; do [ "$s" = "$want" ] && return 0; done
    sleep 0.1
  done
  echo "    last status: $s"; return 1
}

out=$(api GET /api/health)
[ "$out" = $'{"status":"ok"}\n200' ] && pass "GET /api/health is ELSPETH's {\"status\": \"ok\"}" || fail "health: $out"
out=$(api GET /api/catalog/transforms)
"$DPY" -c 'import json,sys
a = json.loads(sys.argv[1].rsplit("\n", 1)[0])
names = {p["name"] for p in a}
assert {"field_mapper", "llm", "keyword_filter"} <= names, names
assert all(set(p) == {"name", "description", "plugin_type", "config_fields"} and p["plugin_type"] == "transform" for p in a)' "$out" &&
  pass "the catalog lists the transforms (aggregations too) in ELSPETH's PluginSummary shape" || fail "catalog: $out"
"$DPY" -c 'import json,sys
a = json.loads(sys.argv[1].rsplit("\n", 1)[0])
llm = next(p for p in a if p["name"] == "llm")
f = {x["name"]: x for x in llm["config_fields"]}
assert all(set(x) == {"name", "type", "required", "description", "default"} for x in f.values())
assert f["pool_size"]["type"] == "integer" and f["pool_size"]["default"] == 32 and not f["pool_size"]["required"], f["pool_size"]
assert f["hedge"]["default"] == "idle" and f["template"]["type"] == "string"
assert all(p["config_fields"] for p in a), [p["name"] for p in a if not p["config_fields"]]' "$out" &&
  pass "config_fields: every plugin's options with type, required, default (llm: pool_size 32, hedge idle)" || fail "config_fields"
out=$(api GET /api/catalog/sources/csv/schema)
"$DPY" -c 'import json,sys
b, code = sys.argv[1].rsplit("\n", 1)
d = json.loads(b)
assert code == "200" and set(d) == {"name", "plugin_type", "description", "json_schema"}, d
s = d["json_schema"]
assert d["plugin_type"] == "source" and s["type"] == "object" and s["required"] == ["path", "on_validation_failure"], s
assert s["properties"]["delimiter"] == {"type": "string", "description": "one character between fields", "default": ","}, s["properties"]["delimiter"]
assert s["additionalProperties"] is False' "$out" &&
  pass "GET /api/catalog/sources/csv/schema: ELSPETH's PluginSchemaInfo with a JSON Schema" || fail "schema: $out"
out=$(api GET /api/catalog/transforms/batch_stats/schema | tail -1)
[ "$out" = 200 ] && pass "an aggregation's schema is under transforms/ (as it is listed)" || fail "batch_stats schema: $out"
out=$(api GET /api/catalog/sinks/nope/schema)
[ "$out" = $'{"detail":"Unknown sink plugin: nope. Available: [\'csv\', \'json\', \'database\', \'text\', \'aws_s3\']"}\n404' ] &&
  pass "an unknown plugin: 404 with ELSPETH's detail and the names available" || fail "unknown plugin: $out"
out=$(api GET /api/catalog/widgets/x/schema)
[ "${out##*$'\n'}" = 404 ] && grep -q "Unknown plugin type: widgets" <<<"$out" &&
  pass "an unknown plugin type: 404" || fail "unknown type: $out"

# validate only
out=$(api POST /api/runs '{"settings_path": "p.yaml", "execute": false}')
grep -q '"is_valid":true' <<<"$out" && [ "${out##*$'\n'}" = 200 ] &&
  pass "execute: false validates (ELSPETH's ValidationResult)" || fail "validate: $out"
out=$(api POST /api/runs '{"settings_yaml": "source: {plugin: csv, on_success: nowhere, options: {path: input/people.csv, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: o.csv}}}\n", "execute": false}')
grep -q '"is_valid":false' <<<"$out" && grep -q 'posted.yaml:1:[0-9]*: source.on_success' <<<"$out" &&
  pass "a wrongly wired pipeline: is_valid false, the error with line and column" || fail "invalid: $out"

# a run, to completion
out=$(api POST /api/runs '{"settings_path": "p.yaml"}')
id=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])' 2>/dev/null)
[ "${out##*$'\n'}" = 202 ] && [ ${#id} = 32 ] && pass "POST /api/runs: 202 {\"run_id\": …}" || fail "post: $out"
is "the run completes" wait_state "$id" completed
diff -r "$SRC/tests/fixtures/elspeth_telemetry/expected_sinks/people" root/output > /dev/null 2>&1 ||
  "$DPY" -c 'import csv,os,sys
a,b=sys.argv[1:3]
for f in os.listdir(a):
    x=list(csv.DictReader(open(os.path.join(a,f)))); y=list(csv.DictReader(open(os.path.join(b,f))))
    assert sorted(map(sorted, (r.items() for r in x))) == sorted(map(sorted, (r.items() for r in y)))' \
  "$SRC/tests/fixtures/elspeth_telemetry/expected_sinks/people" root/output &&
  pass "its sinks are written under the root" || fail "sinks"
out=$(api GET "/api/runs/$id" | head -1)
"$DPY" -c 'import json,sys
s = json.loads(sys.argv[1])
assert set(s) >= {"run_id","status","started_at","finished_at","rows_processed","rows_failed","error","landscape_run_id"}
assert s["rows_processed"] == 5 and s["rows_failed"] == 0 and s["landscape_run_id"] == "1" and s["error"] is None' "$out" &&
  pass "GET /api/runs/{id}: ELSPETH's RunStatusResponse (5 rows, Landscape run 1)" || fail "status: $out"

out=$(api GET "/api/runs/$id/results")
"$DPY" -c 'import json,sys
b, code = sys.argv[1].rsplit("\n", 1)
r = json.loads(b)
assert code == "200" and list(r) == ["run_id","status","rows_processed","rows_failed","landscape_run_id","error"], r
assert r["status"] == "completed" and r["rows_processed"] == 5 and r["error"] is None, r' "$out" &&
  pass "GET /api/runs/{id}/results: ELSPETH's final figures" || fail "results: $out"

# the run's trail: a row's story, the report page
out=$(api GET "/api/runs/$id/rows/2")
"$DPY" -c 'import json,sys; d=json.loads(sys.argv[1].rsplit("\n",1)[0]); assert d["row"]["seq"] == 2, d' "$out" &&
  pass "GET /api/runs/{id}/rows/2: the row's story (explain --json)" || fail "row story: $(head -c 300 <<<"$out")"
[ "$(api GET "/api/runs/$id/rows/99" | tail -1)" = 404 ] && pass "a row the run does not have: 404" || fail "row 99"
out=$(api GET "/api/runs/$id/report")
grep -q "<html" <<<"$out" && [ "${out##*$'\n'}" = 200 ] && pass "GET /api/runs/{id}/report: the report page" ||
  fail "report: $(head -c 200 <<<"$out")"

# what the page shows besides: the last metric sample, the graph, the settings
out=$(api GET "/api/runs/$id/live" | head -1)
"$DPY" -c 'import json,sys
d = json.loads(sys.argv[1])
assert d["final"] is True and d["rows_released"] == 5 and d["in_flight"] == 0, d
assert sum(d["sinks"].values()) == 5 and set(d["sinks"]) == {"passed", "failed"}, d["sinks"]
assert sum(d["outcomes"].values()) == 5 and isinstance(d["upstreams"], list), d' "$out" &&
  pass "GET /api/runs/{id}/live: the last sample (5 rows released, writes per sink)" || fail "live: $out"
out=$(api GET "/api/runs/$id/graph" | head -1)
"$DPY" -c 'import json,sys
g = json.loads(sys.argv[1])
names = {n["name"]: (n["kind"], n["plugin"]) for n in g["nodes"]}
assert names["rename"] == ("transform", "field_mapper") and names["pass_check"][0] == "gate", names
assert names["passed"] == ("sink", "csv") and g["nodes"][0]["kind"] == "source", names
ids = {n["name"]: n["id"] for n in g["nodes"]}
e = {(x["from"], x["to"], x["label"]) for x in g["edges"]}
assert (ids["pass_check"], ids["passed"], "true") in e and (ids["pass_check"], ids["failed"], "false") in e, e' "$out" &&
  pass "GET /api/runs/{id}/graph: nodes (kind, plugin) and the gate's labelled edges" || fail "graph: $out"
out=$(api GET "/api/runs/$id/settings" | head -1)
"$DPY" -c 'import json,sys
t = json.loads(sys.argv[1])
assert t["settings"] == "p.yaml" and t["source"] == "file" and t["yaml"] == open("root/p.yaml").read(), t' "$out" &&
  pass "GET /api/runs/{id}/settings: the settings file's text" || fail "settings: $out"
[ "$(api GET /api/runs/0123/graph | tail -1)" = 404 ] && pass "the graph of no such run: 404" || fail "graph 404"

# cancel a slow run; a second one waits its turn, then runs
out=$(api POST /api/runs '{"settings_path": "slow.yaml"}'); slow=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
out=$(api POST /api/runs '{"settings_path": "p.yaml"}'); next=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
is "the slow run starts" wait_state "$slow" running
out=$(api GET "/api/runs/$slow/results")
[ "${out##*$'\n'}" = 409 ] && grep -q '"detail":"Run is still running"' <<<"$out" &&
  pass "results of a running run: 409 'Run is still running'" || fail "results while running: $out"
[ "$(status_of "$next")" = pending ] && pass "the next run waits its turn (pending)" || fail "not pending"
list=$(api GET /api/runs | head -1)
"$DPY" -c 'import json,sys; a=json.loads(sys.argv[1]); assert [r["run_id"] for r in a][:2] == [sys.argv[3], sys.argv[2]], a' "$list" "$slow" "$next" &&
  pass "GET /api/runs: newest first" || fail "list order"
ok=0
for _ in $(seq 40); do
  out=$(api GET "/api/runs/$slow/live" | head -1)
  "$DPY" -c 'import json,sys
d = json.loads(sys.argv[1])
assert d.get("final") is False and d["rows_pulled"] > 0 and 0 < d["in_flight"] <= 4, d' "$out" 2>/dev/null && { ok=1; break; }
  sleep 0.1
done
[ $ok = 1 ] && pass "live while running: rows pulled, at most 4 in flight ($out)" || fail "live while running: $out"
out=$(api POST "/api/runs/$slow/cancel")
grep -q '"status"' <<<"$out" && pass "POST /api/runs/{id}/cancel answers" || fail "cancel: $out"
is "the slow run ends cancelled" wait_state "$slow" cancelled
is "the next run then completes" wait_state "$next" completed
rows=$(($(wc -l < root/slow/out.csv) - 1))
[ "$rows" -gt 0 ] && [ "$rows" -lt 2000 ] && pass "cancelled after $rows of 2,000 rows" || fail "slow rows: $rows"
out=$(api POST "/api/runs/$slow/resume")
res=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])' 2>/dev/null)
[ "${out##*$'\n'}" = 202 ] && wait_state "$res" completed &&
  [ "$(($(wc -l < root/slow/out.csv) - 1))" = 2000 ] &&
  [ "$(api GET "/api/runs/$res" | head -1 | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["landscape_run_id"])')" = \
    "$(api GET "/api/runs/$slow" | head -1 | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["landscape_run_id"])')" ] &&
  pass "POST /api/runs/{id}/resume finishes the cancelled run (its Landscape run) to 2,000 rows" ||
  { fail "resume: $out"; api GET "/api/runs/$res"; }
(cd root && "$ELSPETH" verify -s slow.yaml > ../verify.out 2>&1) && pass "the resumed run verifies" ||
  { fail "verify"; tail -5 verify.out; }

# the WebSocket: ELSPETH's RunEvent messages until the run's last, then 1000
out=$(api POST /api/runs '{"settings_path": "slow.yaml"}'); w1=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
"$DPY" "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/$w1?token=x" > ws1.json &
WS1=$!
wait $WS1
"$DPY" - ws1.json <<'PYEOF' > ws1.txt && pass "WS /ws/runs/{id}: $(tail -1 ws1.txt)" || { fail "websocket"; cat ws1.txt ws1.json | head -c 600; }
import json, sys
d = json.load(open(sys.argv[1]))
m = d["messages"]
assert d["close"] == 1000, d["close"]
prog = [x for x in m if x.get("event_type") == "progress"]
last = m[-1]
assert last["event_type"] == "completed", last
assert set(last) == {"run_id", "timestamp", "event_type", "data"}
assert last["data"]["rows_processed"] == 2000 and last["data"]["landscape_run_id"]
rows = [x["data"]["rows_processed"] for x in prog]
assert len(prog) >= 3 and rows == sorted(rows), rows
print("%d progress events (rows %d .. %d), then completed with ELSPETH's fields, closed 1000" % (len(prog), rows[0], rows[-1]))
PYEOF
"$DPY" "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/nosuchrun" > ws2.json
grep -q '"close": 4004' ws2.json && pass "WS for an unknown run: closed 4004 'Run not found'" || fail "ws 4004: $(cat ws2.json)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/ws/runs/$w1")
[ "$code" = 426 ] && pass "a plain GET of a WebSocket route: 426" || fail "ws plain get: $code"

# confinement
for body in '{"settings_path": "../p.yaml"}' '{"settings_path": "/etc/passwd"}' \
            '{"settings_yaml": "source: {plugin: csv, on_success: out, options: {path: /etc/passwd, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: o.csv}}}\n"}' \
            '{"settings_yaml": "source: {plugin: csv, on_success: out, options: {path: input/people.csv, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: ../o.csv}}}\n"}' \
            '{"settings_yaml": "source: {plugin: csv, on_success: out, options: {path: input/people.csv, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: escape/o.csv}}}\n"}' \
            '{"settings_yaml": "source: {plugin: csv, on_success: out, options: {path: input/people.csv, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: o.csv}}}\nlandscape: {url: \"sqlite:////tmp/x.db\"}\n"}'; do
  out=$(api POST /api/runs "$body")
  [ "${out##*$'\n'}" = 403 ] && grep -q "outside the server's root" <<<"$out" &&
    pass "refused (403): $(head -c 90 <<<"$body")…" || fail "not refused: $body -> $out"
done
out=$(api POST /api/runs '{"settings_yaml": "source: {plugin: csv, on_success: out, options: {path: input/people.csv, schema: {mode: observed}, on_validation_failure: discard}}\nsinks: {out: {plugin: csv, options: {path: o.csv}}}\ndepends_on: [{name: d, settings: p.yaml}]\n"}')
[ "${out##*$'\n'}" = 403 ] && grep -q "depends_on is not served" <<<"$out" &&
  pass "depends_on (pipelines whose paths go unchecked) is refused (403)" || fail "depends_on: $out"
[ ! -e outside/o.csv ] && [ ! -e "$WORK/o.csv" ] && pass "nothing was written outside the root" || fail "wrote outside"
"$DPY" -c 'print("{\"settings_yaml\": \"" + "x" * 1100000 + "\"}")' > big.json
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$P/api/runs" --data-binary @big.json)
[ "$code" = 413 ] && pass "a body over 1 MiB is refused (413)" || fail "big body: $code"
[ "$(api GET /api/nothing | tail -1)" = 404 ] && [ "$(api GET /api/runs/nope | tail -1)" = 404 ] &&
  pass "unknown routes and runs: 404" || fail "404s"

kill -INT $SRV; wait $SRV; rc=$?
[ $rc = 0 ] && pass "SIGINT stops the server (exit 0)" || fail "serve exit $rc"

# logins: local users with Argon2id hashes, bearer tokens, the brake
printf 'c0rrect-h0rse\n' | "$ELSPETH" serve adduser alice --users users.json > /dev/null &&
  [ "$(stat -c %a users.json)" = 600 ] && grep -q '"alice": "\$argon2id\$' users.json &&
  pass "serve adduser: an Argon2id hash in a 0600 users file" || fail "adduser: $(cat users.json)"
expect "a users file under the root: refused" 1 "a posted pipeline could read it" -- \
  bash -c 'cp users.json root/u.json && chmod 600 root/u.json && "$0" serve --listen 127.0.0.1:0 --root root --users root/u.json' "$ELSPETH"
rm -f root/u.json
cp users.json open.json; chmod 644 open.json
expect "a users file others can read: refused" 1 "chmod 600" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root root --users open.json
"$ELSPETH" serve --listen 127.0.0.1:0 --root root --users users.json > serve2.out 2> serve2.err &
SRV=$!
for _ in $(seq 100); do grep -q "listening on port" serve2.out 2>/dev/null && break; sleep 0.05; done
P=$(grep -o 'port [0-9]*' serve2.out | cut -d' ' -f2)
[ "$(api GET /api/health | tail -1)" = 200 ] && pass "with logins: /api/health needs no token" || fail "health with auth"
grep -q '"provider":"local"' <<<"$(api GET /api/auth/config)" && pass "/api/auth/config says local" || fail "auth config"
for route in "GET /api/runs" "GET /api/catalog/sources" "POST /api/runs" "GET /api/auth/me" "GET /api/runs/x/rows/1"; do
  [ "$(api $route '{}' | tail -1)" = 401 ] || { fail "$route without a token is not 401"; continue; }
  pass "$route without a token: 401"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer 0000000000000000000000000000000000000000000000000000000000000000' http://127.0.0.1:$P/api/runs)" = 401 ] &&
  pass "a made-up token: 401" || fail "made-up token"
for i in 1 2 3; do api POST /api/auth/login '{"username":"alice","password":"wrong"}' > login$i.txt; done
[ "$(tail -1 login1.txt)" = 401 ] && pass "a wrong password: 401" || fail "wrong password: $(cat login1.txt)"
out=$(curl -s -D - -X POST "http://127.0.0.1:$P/api/auth/login" -d '{"username":"alice","password":"c0rrect-h0rse"}')
grep -q "^HTTP/1.1 429" <<<"$out" && grep -qi "^Retry-After: [0-9]" <<<"$out" &&
  pass "after three failures: 429 with Retry-After, even with the right password" || fail "brake: $out"
sleep 2
out=$(api POST /api/auth/login '{"username":"alice","password":"c0rrect-h0rse"}')
TOKEN=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; d=json.load(sys.stdin); assert d["token_type"]=="bearer"; print(d["access_token"])' 2>/dev/null)
[ ${#TOKEN} = 64 ] && pass "login: ELSPETH's TokenResponse (a bearer token)" || fail "login: $out"
authed() { curl -s -X "$1" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$P$2" ${3:+-d "$3"} -w '\n%{http_code}'; }
grep -q '"username":"alice"' <<<"$(authed GET /api/auth/me)" && pass "/api/auth/me: alice's profile" || fail "me"
out=$(authed POST /api/runs '{"settings_path": "p.yaml"}')
aid=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["run_id"])' 2>/dev/null)
[ "${out##*$'\n'}" = 202 ] && pass "a run posted with the token" || fail "authed post: $out"
"$DPY" "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/$aid?token=bad" > ws3.json
grep -q '"close": 4001' ws3.json && pass "WS with a bad token: closed 4001 (ELSPETH's)" || fail "ws 4001: $(cat ws3.json)"
"$DPY" "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/$aid?token=$TOKEN" > ws4.json
grep -q '"close": 1000' ws4.json && grep -q '"completed"' ws4.json && pass "WS with the token: the run's events" ||
  fail "ws token: $(cat ws4.json)"
out=$(authed POST /api/auth/token)
NEW=$(head -1 <<<"$out" | "$DPY" -c 'import json,sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null)
[ ${#NEW} = 64 ] && [ "$NEW" != "$TOKEN" ] && pass "POST /api/auth/token: a fresh token" || fail "refresh: $out"
kill -INT $SRV; wait $SRV

# refusals at start
expect "neither --users nor --no-auth: refused, saying why" 1 "logins need a users file" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root root
expect "--no-auth on a non-loopback address: refused" 1 "serves loopback only" -- \
  "$ELSPETH" serve --listen 0.0.0.0:0 --root root --no-auth
expect "a root that is not there: refused" 1 "--root nowhere" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root nowhere --no-auth
expect "a bad address: refused" 1 "expected HOST:PORT" -- \
  "$ELSPETH" serve --listen 127.0.0.1:99999 --root root --no-auth
finish

# Shared helpers for the integration tests (sourced). $1 = elspeth binary,
# $2 = source tree. Each test runs in a fresh temporary directory.
set -uo pipefail
ELSPETH=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$(mktemp -d)
trap 'mock_stop; rm -rf "$WORK"' EXIT
FAILS=0
PASSES=0

pass() { PASSES=$((PASSES + 1)); echo "ok - $1"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL - $1"; }
# is NAME test-args...: pass when the test command succeeds.
is() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

# expect NAME EXIT_CODE NEEDLE -- command...: runs the command, checks the
# exit code and that stdout+stderr contain NEEDLE.
expect() {
  local name=$1 code=$2 needle=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ]; then
    fail "$name: exit $rc, want $code"; echo "$out" | sed 's/^/    /' | head -20; return
  fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    fail "$name: output lacks '$needle'"; echo "$out" | sed 's/^/    /' | head -20; return
  fi
  pass "$name"
}

# started FILE [SECONDS]: waits (at most SECONDS, default 20) until FILE
# exists — a run's sink file, opened after its signal handlers are
# installed, so a SIGINT sent after it is never the default action (a
# fixed sleep from exec raced a slow start: sanitizers, a loaded machine).
started() {
  local i
  for i in $(seq 1 $((${2:-20} * 100))); do [ -e "$1" ] && return 0; sleep 0.01; done
  return 1
}

# kill_at_lines FILE N -- command...: runs the command in the background
# and SIGKILLs it once FILE has N lines (or it ends, or 30 s pass).
kill_at_lines() {
  local file=$1 n=$2 pid; shift 3
  "$@" > /dev/null 2>&1 & pid=$!
  for _ in $(seq 1 3000); do
    [ "$(cat "$file" 2>/dev/null | wc -l)" -ge "$n" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
}

finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# The bundled mock LLM server, for examples with a mock.args file.
# mock_start ARGS... starts it and exports ELSPETH_LLM_URL (the settings
# read it); mock_reset zeroes its counters before a run, so its injected
# faults fall on the same requests every time; mock_stop.
MOCK_PID=
MOCK_URL=
mock_start() {
  rm -f "$WORK/mock.port"
  "$(dirname "$ELSPETH")/elspeth-mock-llm" --port 0 --port-file "$WORK/mock.port" "$@" \
    > "$WORK/mock.log" 2>&1 &
  MOCK_PID=$!
  for _ in $(seq 200); do [ -s "$WORK/mock.port" ] && break; sleep 0.05; done
  MOCK_URL="http://127.0.0.1:$(cat "$WORK/mock.port")"
  export ELSPETH_LLM_URL="$MOCK_URL/v1"
}
mock_reset() {
  python3 -c 'import sys, urllib.request as u; u.urlopen(u.Request(sys.argv[1] + "/admin/reset", data=b"", method="POST")).read()' "$MOCK_URL"
}
mock_stop() {
  if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null; wait "$MOCK_PID" 2>/dev/null; fi
  MOCK_PID=; unset ELSPETH_LLM_URL
}

# trail_pipe URL OUTDIR MIN_MS MAX_MS: the SQL trail tests' pipeline (CSV
# $WORK/rows.csv -> delay -> gate -> fork/coalesce, an aggregation -> JSON,
# CSV in OUTDIR), its Landscape at URL.
trail_pipe() {
  cat <<YAML
landscape:
  url: $1
source:
  plugin: csv
  on_success: work_in
  options:
    path: $WORK/rows.csv
    schema: {mode: fixed, fields: ["id: int", "region: str", "amount: int", "text: str"]}
    on_validation_failure: discard
transforms:
  - {name: work, plugin: delay, input: work_in, on_success: route_in, options: {distribution: uniform, min_ms: $3, max_ms: $4, seed: 7}}
gates:
  - name: route
    input: route_in
    condition: "row['id'] % 5 == 0"
    routes: {'true': stats_in, 'false': fork}
    fork_to: [a, b]
coalesce:
  - {name: join, branches: [a, b], policy: require_all, merge: nested, on_success: out}
aggregations:
  - {name: stats, plugin: batch_stats, input: stats_in, on_success: fives, trigger: {count: 5},
     options: {value_field: amount, group_by: region}}
sinks:
  out: {plugin: json, options: {path: $2/out.jsonl}}
  fives: {plugin: csv, options: {path: $2/fives.csv}}
YAML
}

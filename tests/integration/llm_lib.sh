# Helpers for test_llm.sh (sourced after lib.sh, inside $WORK): the mock
# server's life cycle and admin API, pipeline files for the LLM transforms,
# and readers for the Landscape's metrics and explain documents.
MOCK="$(dirname "$ELSPETH")/elspeth-mock-llm"
# The interpreter itself, not a shim (pyenv's costs ~0.3 s a call).
PY=$(python3 -c 'import sys; print(sys.executable)')
MOCK_PIDS=()
trap 'for p in "${MOCK_PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT


# lt A B: A < B (numbers).
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

# start_mock NAME OPTION...: starts the mock, waits for its port file; sets
# PORT and MOCKPID.
start_mock() {
  local name=$1 i; shift
  rm -f "$name.port"
  "$MOCK" --port 0 --port-file "$name.port" "$@" > "$name.mock.log" 2>&1 &
  MOCKPID=$!
  MOCKLOG=$name.mock.log
  MOCK_PIDS+=("$MOCKPID")
  for i in $(seq 1 200); do [ -s "$name.port" ] && break; sleep 0.025; done
  PORT=$(cat "$name.port" 2>/dev/null)
  [ -n "$PORT" ] || { fail "$name: the mock did not start"; cat "$name.mock.log"; }
}
stop_mock() {
  kill "$MOCKPID" 2>/dev/null; wait "$MOCKPID" 2>/dev/null
  if grep -q 'Sanitizer\|runtime error:' "$MOCKLOG"; then
    fail "$MOCKLOG: sanitizer report"; grep -m5 'Sanitizer\|runtime error:' "$MOCKLOG" | sed 's/^/    /'
  fi
}

# admin METHOD PATH [JSON]: an admin request to the current mock; prints the
# answer body (exit 1 on an HTTP error).
admin() {
  "$PY" - "$PORT" "$@" <<'PY'
import sys, urllib.request
port, method, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                             headers={"Content-Type": "application/json"})
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}
# mock_set JSON: the mock's capacity, latency and faults back to their
# defaults, then JSON applied, then its counters zeroed.
MOCK_DEFAULTS='{"error_500_rate":null,"malformed_rate":null,"truncated_rate":null,"stall_rate":null,"stall_ms":null,"drop_rate":null,"length_rate":null,"max_concurrent":null,"rps":null,"schedule":null,"over_capacity_status":null,"retry_after":null,"latency":null}'
mock_set() {
  admin POST /admin/config "$MOCK_DEFAULTS" > /dev/null && admin POST /admin/config "$1" > /dev/null &&
    admin POST /admin/reset > /dev/null
}
# mstat EXPR: a python expression over the mock's stats `s`, e.g.
# "s['by_status'].get('429', 0)".
mstat() { admin GET /admin/stats | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print(eval("(" + sys.argv[1] + ")"))' "$1"; }

# rows_csv FILE N: id,text with a distinct text per row.
rows_csv() {
  awk -v n="$2" 'BEGIN { print "id,text"; for (i = 1; i <= n; i++)
    printf "%d,ticket %d: my order number %d arrived %s\n", i, i, i * 7919 % 10007, (i % 3 ? "late" : "broken") }' > "$1"
}

# pipeline FILE INPUT PLUGIN OPTIONS [RETRY] [SINK_FORMAT]: one LLM transform
# between a csv/json source and the sinks out (${OUT}/out.jsonl, or out.csv
# with SINK_FORMAT csv) and errors (${OUT}/errors.jsonl); the
# Landscape in ./${STATE}. OPTIONS is a YAML block (the transform's options).
pipeline() {
  local file=$1 input=$2 plugin=$3 opts=$4
  local retry=${5:-"{max_attempts: 3, initial_delay_seconds: 0.001, max_delay_seconds: 0.002}"}
  local sink=${6:-json} src=csv ext=csv
  case $input in *.jsonl) src=json ;; esac
  [ "$sink" = json ] && ext=jsonl
  cat > "$file" <<YAML
source: {plugin: $src, on_success: t_in, options: {path: $input, on_validation_failure: discard}}
transforms:
  - name: t
    plugin: $plugin
    input: t_in
    on_success: out
    on_error: errors
    options:
$(sed 's/^/      /' <<<"$opts")
sinks:
  out: {plugin: $sink, options: {path: "\${OUT}/out.$ext"}}
  errors: {plugin: json, options: {path: "\${OUT}/errors.jsonl"}}
retry: $retry
landscape: {url: "lmdb://./\${STATE}"}
YAML
}

# run NAME FILE ARG...: runs the pipeline with OUT=NAME and STATE=state-NAME
# (both fresh), under a timeout; output in NAME.log, exit code in RC,
# wall time in seconds in SECS.
run() {
  local name=$1 file=$2 t0 t1; shift 2
  rm -rf "$name" "state-$name"
  t0=$(date +%s.%N)
  OUT=$name STATE=state-$name timeout 120 "$ELSPETH" run -s "$file" --execute "$@" > "$name.log" 2>&1
  RC=$?
  t1=$(date +%s.%N)
  SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  [ -z "${LLM_DEBUG:-}" ] || echo "# run $name: exit $RC in $SECS s"
  if grep -q "Sanitizer\|runtime error:" "$name.log"; then
    fail "$name: sanitizer report"; grep -m5 "Sanitizer\|runtime error:\|^    #" "$name.log" | sed 's/^/    /'
  fi
}

# nlines FILE: lines in FILE, 0 when it does not exist.
nlines() { if [ -f "$1" ]; then wc -l < "$1" | tr -d ' '; else echo 0; fi; }

# calls NAME KEY: metrics.calls[KEY] of the latest run in state-NAME (0
# when absent).
calls() {
  "$ELSPETH" runs --database "state-$1" --run latest --json |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["metrics"].get("calls", {}).get(sys.argv[1], 0))' "$2"
}
# runfield NAME EXPR: a python expression over the latest run's document `r`.
runfield() {
  "$ELSPETH" runs --database "state-$1" --run latest --json |
    "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(eval("(" + sys.argv[1] + ")"))' "$2"
}
# explain_py NAME ROW EXPR: a python expression over the explain document
# `d` of ROW, with `st` = the first token's transform state of node t and
# `c` = its calls.
explain_py() {
  "$ELSPETH" explain --database "state-$1" --run latest --row "$2" --json |
    "$PY" -c '
import json, sys
d = json.load(sys.stdin)
st = [s for t in d["tokens"] for s in t["states"] if s["node"] == "t"][0]
c = st.get("calls", [])
print(eval("(" + sys.argv[1] + ")"))' "${@:3}"
}
# verify_ok NAME: the latest run's audit trail verifies.
verify_ok() { "$ELSPETH" verify --database "state-$1" --run latest 2>&1 | grep -q "verify: OK"; }
# rows_bad NAME N EXPR: how many of rows 1..N of the latest run in
# state-NAME fail EXPR (python over d, st, c as in explain_py; ts(s) turns
# a timestamp into seconds).
rows_bad() {
  "$PY" - "$ELSPETH" "state-$1" "$2" "$3" <<'PY'
import datetime, json, subprocess, sys
exe, db, n, expr = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
bad = []
for row in range(1, n + 1):
    d = json.loads(subprocess.run([exe, "explain", "--database", db, "--run", "latest", "--row", str(row), "--json"],
                                  check=True, capture_output=True, text=True).stdout)
    st = [s for t in d["tokens"] for s in t["states"] if s["node"] == "t"][0]
    c = st.get("calls", [])
    if not eval("(" + expr + ")"):
        bad.append(row)
print(len(bad))
if bad:
    print("rows failing the check:", bad[:10], file=sys.stderr)
PY
}

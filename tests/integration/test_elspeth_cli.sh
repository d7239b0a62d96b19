#!/usr/bin/env bash
# ELSPETH 0.4.1's command line, as an ELSPETH user drives it:
#   a. `run -f json` prints ELSPETH's events with ELSPETH's fields
#      (cli_formatters.py: phase_started, phase_completed, progress,
#      run_completed; phase_error on stderr), ours added after them;
#   b. `health` (its checks, --json shape, exit 1 when DATABASE_URL fails);
#   c. `depends_on`: the pipelines a pipeline depends on run first, in
#      order; a cycle runs nothing; a dependency that fails stops the run.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
printf 'id,Amount (USD)\n1,5\n2,x\n3,7\n' > in.csv

# -------------------------------------------------------- a. JSON events
cat > p.yaml <<'EOF'
source:
  plugin: csv
  on_success: out
  options:
    path: in.csv
    on_validation_failure: bad
    schema: {mode: fixed, fields: ['id: int', 'amount_usd: int']}
sinks:
  out: {plugin: csv, options: {path: out.csv, schema: {mode: observed}}}
  bad: {plugin: json, options: {path: bad.jsonl, schema: {mode: observed}}}
landscape: {url: "sqlite:///audit.db"}
EOF
"$ELSPETH" run -s p.yaml -x -f json > events.jsonl 2> events.err; rc=$?
[ $rc = 0 ] && pass "run -f json exits 0" || fail "run -f json: exit $rc"
python3 - events.jsonl <<'PY' && pass "run -f json: every event has ELSPETH's fields, in its order of phases" || fail "run -f json: events"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
want = {
    "phase_started": ["event", "phase", "action", "target"],
    "phase_completed": ["event", "phase", "duration_seconds"],
    "progress": ["event", "rows_processed", "rows_succeeded", "rows_failed",
                 "rows_quarantined", "elapsed_seconds", "rows_per_second"],
    "run_completed": ["event", "run_id", "status", "total_rows", "succeeded",
                      "failed", "quarantined", "duration_seconds", "exit_code"],
}
bad = [e for e in ev if e["event"] not in want or list(e)[:len(want[e["event"]])] != want[e["event"]]]
if bad: print("not ELSPETH's fields:", bad[:2]); sys.exit(1)
names = [e["event"] for e in ev]
if names[:3] != ["phase_started", "phase_completed", "phase_started"] or names[-2:] != ["phase_completed", "run_completed"]:
    print("order:", names); sys.exit(1)
last = ev[-1]
if (last["status"], last["total_rows"], last["succeeded"], last["quarantined"], last["exit_code"]) != ("completed", 3, 2, 1, 0):
    print("run_completed:", last); sys.exit(1)
prog = [e for e in ev if e["event"] == "progress"][-1]
if (prog["rows_processed"], prog["rows_succeeded"], prog["rows_quarantined"]) != (3, 2, 1):
    print("progress:", prog); sys.exit(1)
PY
# A trail under a regular file cannot be created, even by root.
sed 's#sqlite:///audit.db#lmdb://in.csv/sub/audit.lmdb#' p.yaml > p_bad.yaml
"$ELSPETH" run -s p_bad.yaml -x -f json > bad.out 2> bad.err; rc=$?
[ $rc = 1 ] && grep -q '"event":"phase_error","phase":"database"' bad.err &&
  pass "run -f json: a trail that cannot be opened is a phase_error on stderr, exit 1" ||
  { fail "phase_error: exit $rc"; cat bad.err; }
sed -e 's#path: out.csv#path: /proc/no/out.csv#' p.yaml > p_fail.yaml
"$ELSPETH" run -s p_fail.yaml -x -f json > fail.out 2> fail.err; rc=$?
[ $rc = 1 ] && grep -q '"event":"phase_error","phase":"process"' fail.err &&
  grep -q '"event":"run_completed".*"status":"failed".*"exit_code":1' fail.out &&
  pass "run -f json, a failing run: phase_error on stderr, run_completed with status failed and exit_code 1" ||
  { fail "failing run: exit $rc"; cat fail.out fail.err | head; }

# ------------------------------------------------------------- b. health
expect "health: healthy, exit 0" 0 "Status: healthy" -- "$ELSPETH" health
mkdir -p output
python3 -c 'import sqlite3; sqlite3.connect("ok.db").execute("create table t(x)")'
out=$(DATABASE_URL=sqlite:///ok.db "$ELSPETH" health --json); rc=$?
python3 - "$out" <<'PY' && [ $rc = 0 ] && pass "health --json: ELSPETH's shape; the database connects; ./output found" || fail "health --json: $out"
import json, sys
d = json.loads(sys.argv[1])
assert list(d) == ["status", "version", "commit", "checks"], list(d)
c = d["checks"]
assert d["status"] == "healthy"
assert {"version", "commit", "database", "config_dir", "output_dir", "plugins"} <= set(c)
assert c["database"] == {"status": "ok", "value": "connected"}, c["database"]
assert c["output_dir"]["value"] == "./output" and c["config_dir"]["status"] == "warn"
assert "sources" in c["plugins"]["value"]
PY
expect "health: an unreachable DATABASE_URL is unhealthy, exit 1, with why" 1 "database: unable to open" -- \
  env DATABASE_URL=sqlite:///no/such/dir/x.db "$ELSPETH" health -v
expect "health: a bad option is a usage error" 2 "bad option" -- "$ELSPETH" health --bogus

# --------------------------------------------------------- c. depends_on
mkdir -p pipes
cat > pipes/index.yaml <<'EOF'
source: {plugin: csv, on_success: out, options: {path: in.csv, on_validation_failure: discard, schema: {mode: observed}}}
sinks: {out: {plugin: csv, options: {path: mid.csv, schema: {mode: observed}}}}
landscape: {url: "sqlite:///idx.db"}
EOF
cat > pipes/query.yaml <<'EOF'
depends_on:
  - name: index
    settings: index.yaml
source: {plugin: csv, on_success: out, options: {path: mid.csv, on_validation_failure: discard, schema: {mode: observed}}}
sinks: {out: {plugin: json, options: {path: final.jsonl, schema: {mode: observed}}}}
landscape: {url: "sqlite:///q.db"}
EOF
expect "depends_on: validate accepts it" 0 "" -- "$ELSPETH" validate -s pipes/query.yaml
expect "depends_on: run -x runs the dependency first" 0 "Running dependency 'index': pipes/index.yaml" -- \
  "$ELSPETH" run -s pipes/query.yaml -x
[ "$(cat final.jsonl)" = '{"id": "1", "amount_usd": "5"}
{"id": "2", "amount_usd": "x"}
{"id": "3", "amount_usd": "7"}' ] && pass "depends_on: the pipeline read what its dependency wrote" ||
  { fail "depends_on: final.jsonl"; cat final.jsonl; }
rm -f final.jsonl mid.csv
expect "depends_on: without -x nothing runs" 0 "nothing was run" -- "$ELSPETH" run -s pipes/query.yaml
[ ! -e mid.csv ] && pass "depends_on: a validation run runs no dependency" || fail "depends_on: mid.csv written without -x"
{ printf 'depends_on:\n  - {name: back, settings: query.yaml}\n'; cat pipes/index.yaml; } > pipes/index_cycle.yaml
sed 's/settings: index.yaml/settings: index_cycle.yaml/' pipes/query.yaml > pipes/query_cycle.yaml
sed -i 's/settings: query.yaml/settings: query_cycle.yaml/' pipes/index_cycle.yaml
expect "depends_on: a cycle is refused, naming it" 1 "circular dependency" -- "$ELSPETH" run -s pipes/query_cycle.yaml -x
[ ! -e mid.csv ] && pass "depends_on: a cycle runs nothing" || fail "depends_on: a cycle ran a pipeline"
sed 's#path: in.csv#path: missing.csv#' pipes/index.yaml > pipes/index_fail.yaml
sed 's/settings: index.yaml/settings: index_fail.yaml/' pipes/query.yaml > pipes/query_fail.yaml
expect "depends_on: a dependency that fails stops the run" 1 "dependency 'index' (pipes/index_fail.yaml) did not complete" -- \
  "$ELSPETH" run -s pipes/query_fail.yaml -x
[ ! -e final.jsonl ] && pass "depends_on: nothing of the pipeline ran" || fail "depends_on: the pipeline ran after a failed dependency"
finish

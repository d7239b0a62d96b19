#!/usr/bin/env bash
# ELSPETH 0.7.1's several sources and queues (ADR 0044): sources are read
# one after another in the settings' order with one sequence, so the
# pipelined run writes what a sequential run writes; a SIGKILL anywhere,
# before, at or after a source boundary, resumes to the same bytes; each
# row's trail names its source; a source's invalid rows go where that
# source says; sharded over all sources; 0.7.1's union_collision_policy
# and collision_policy.
source "$(dirname "$0")/lib.sh"
cd "$WORK"

python3 - <<'PY'
import json, random
random.seed(11)
with open("a.csv", "w") as f:
    f.write("id,val\n")
    for i in range(3000): f.write(f"a{i},{random.randint(0, 999)}\n")
with open("b.jsonl", "w") as f:
    for i in range(2000): f.write(json.dumps({"id": f"b{i}", "val": random.randint(0, 999)}) + "\n")
    f.write('{"id": "b-broken", "val":\n')   # an invalid line: quarantined
with open("c.csv", "w") as f:
    f.write("id,val\n")
    for i in range(1500): f.write(f"c{i},{random.randint(0, 999)}\n")
# what a sequential reading of the three gives, in order
with open("expect.jsonl", "w") as out:
    for line in open("a.csv").read().splitlines()[1:]:
        i, v = line.split(","); out.write(json.dumps({"id": i, "val": v}) + "\n")
    for line in open("b.jsonl"):
        try: out.write(json.dumps(json.loads(line)) + "\n")
        except ValueError: pass
    for line in open("c.csv").read().splitlines()[1:]:
        i, v = line.split(","); out.write(json.dumps({"id": i, "val": v}) + "\n")
PY

cat > p.yaml <<'YAML'
sources:
  alpha:
    plugin: csv
    on_success: merged
    options: {path: a.csv, schema: {mode: observed}, on_validation_failure: discard}
  beta:
    plugin: json
    on_success: merged
    options: {path: b.jsonl, format: jsonl, schema: {mode: fixed, fields: ['id: str', 'val: int']}, on_validation_failure: bad}
  gamma:
    plugin: csv
    on_success: merged
    options: {path: c.csv, schema: {mode: observed}, on_validation_failure: discard}
queues:
  merged: {description: the three sources}
transforms:
- name: slow
  plugin: delay
  input: merged
  on_success: out
  on_error: discard
  options: {schema: {mode: observed}, distribution: uniform, min_ms: 0, max_ms: 3, seed: 5}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: out.jsonl, format: jsonl, schema: {mode: observed}}}
  bad: {plugin: json, on_write_failure: discard, options: {path: bad.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "sqlite:///trail.db"}
checkpoint: {frequency: every_n, checkpoint_interval: 50}
YAML

expect "validate names the format" 0 "Format: ELSPETH 0.7.1 (the file has 'sources:')" -- \
  "$ELSPETH" validate -s p.yaml --verbose
expect "validate shows the queue" 0 "Queue: merged -> slow" -- "$ELSPETH" validate -s p.yaml

# 1. pipelined (64 rows in flight) writes the sequential order
expect "three sources, 64 in flight" 0 "succeeded 6500" -- \
  "$ELSPETH" run -s p.yaml --execute --max-rows-in-flight 64
cmp -s out.jsonl expect.jsonl && pass "the output is the sources' rows in order" ||
  fail "order: $(diff out.jsonl expect.jsonl | head -3)"
[ "$(wc -l < bad.jsonl)" = 1 ] && pass "beta's invalid line goes to beta's own sink" || fail "bad: $(cat bad.jsonl)"
expect "explain names a row's source" 0 "from source 'gamma', its row 0 (0-based)" -- \
  "$ELSPETH" explain -s p.yaml --run latest --row 5002
expect "verify" 0 "verify: OK" -- "$ELSPETH" verify -s p.yaml --run latest
got=$(sqlite3 trail.db "SELECT n.plugin_name || ':' || count(*) FROM rows r JOIN nodes n
  ON n.node_id = r.source_node_id AND n.run_id = r.run_id GROUP BY r.source_node_id ORDER BY min(r.row_index)" | tr '\n' ' ')
[ "$got" = "csv:3000 json:2001 csv:1500 " ] && pass "the SQL trail's rows name their source" || fail "rows by source: $got"
[ "$(sqlite3 trail.db "SELECT count(*) FROM nodes WHERE node_type = 'queue'")" = 1 ] &&
  pass "the queue is a node of the trail" || fail "queue node"
# 0.7.1's additions to the SQL trail (ADR 0049): rows' index in their
# source and the ingest order, and run_sources
got=$(sqlite3 trail.db "SELECT s.source_name || ':' || count(*) || ':' || min(r.source_row_index) || '-' ||
  max(r.source_row_index) FROM rows r JOIN run_sources s ON s.source_node_id = r.source_node_id
  AND s.run_id = r.run_id GROUP BY r.source_node_id ORDER BY min(r.ingest_sequence)" | tr '\n' ' ')
[ "$got" = "alpha:3000:0-2999 beta:2001:0-2000 gamma:1500:0-1499 " ] &&
  pass "rows.source_row_index counts each source's rows from 0 (0.7.1's column)" || fail "source_row_index: $got"
[ "$(sqlite3 trail.db "SELECT count(*) FROM rows WHERE ingest_sequence = row_index")" = 6501 ] &&
  pass "rows.ingest_sequence is the order over all sources" || fail "ingest_sequence"
[ "$(sqlite3 trail.db "SELECT group_concat(source_name || '/' || plugin_name || '/' || lifecycle_state, ' ') FROM run_sources")" \
  = "alpha/csv/exhausted beta/json/exhausted gamma/csv/exhausted" ] &&
  pass "run_sources: each source, its plugin, exhausted" || fail "run_sources: $(sqlite3 trail.db 'SELECT * FROM run_sources')"

# 2. killed anywhere — in the first source, at its end, in the second,
#    in the last — and resumed to the same bytes (N = 16). The kill waits
#    for the output to reach a row count, so a slow machine (sanitizers)
#    kills at the same places as a fast one.
crossed=0
for at_least in 400 2990 3600 5100 6200; do
  rm -rf out.jsonl bad.jsonl trail.db trail.db.lmdb
  "$ELSPETH" run -s p.yaml --execute --max-rows-in-flight 16 > /dev/null 2>&1 &
  pid=$!
  started out.jsonl
  for _ in $(seq 1 3000); do
    [ "$(wc -l < out.jsonl)" -ge "$at_least" ] 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  at=$(wc -l < out.jsonl)
  [ "$at" = 6500 ] && { pass "the run ended before the kill at $at_least rows"; continue; }
  # the live SQL trail says where the killed run stood: the sources
  # before the source of its newest row there exhausted, that one
  # loading (the first, with no row yet), the rest ready
  states=$(sqlite3 trail.db "SELECT group_concat(lifecycle_state, ' ') FROM run_sources" 2>/dev/null)
  newest=$(sqlite3 trail.db "SELECT s.source_name FROM rows r JOIN run_sources s ON s.source_node_id =
    r.source_node_id AND s.run_id = r.run_id ORDER BY r.ingest_sequence DESC LIMIT 1" 2>/dev/null)
  case ${newest:-alpha} in
    alpha) want="loading ready ready" ;; beta) want="exhausted loading ready" ;; *) want="exhausted exhausted loading" ;;
  esac
  if [ -z "$states" ]; then
    [ "$(sqlite3 trail.db "SELECT count(*) FROM rows" 2>/dev/null || echo 0)" = 0 ] &&
      pass "killed at $at rows: before the first live step, no run_sources and no rows" ||
      fail "killed at $at rows: rows in the SQL trail but no run_sources"
  else
    [ "$states" = "$want" ] && pass "killed at $at rows: run_sources says '$states' (newest row from ${newest:-none})" ||
      fail "killed at $at rows: run_sources '$states', its newest row from '$newest'"
  fi
  [ "$at" -gt 3000 ] && crossed=$((crossed + 1))
  "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1 ||
    { fail "resume after a kill at $at rows: $(tail -2 resume.log)"; continue; }
  cmp -s out.jsonl expect.jsonl && pass "killed at $at rows, resumed to the same bytes" ||
    fail "killed at $at rows: $(diff out.jsonl expect.jsonl | head -3)"
done
[ "$crossed" -gt 0 ] && pass "$crossed kills fell after the first source" ||
  fail "no kill fell after the first source"

# 2b. collision_policy auto_increment: the run writes out-1.jsonl beside
#     the user's out.jsonl; killed and resumed, it goes on in out-1.jsonl
#     and the user's file is untouched
sed 's#path: out.jsonl, format: jsonl#path: out.jsonl, format: jsonl, collision_policy: auto_increment#' p.yaml > pa.yaml
rm -rf out.jsonl out-1.jsonl bad.jsonl trail.db trail.db.lmdb
echo precious > out.jsonl
"$ELSPETH" run -s pa.yaml --execute --max-rows-in-flight 16 > /dev/null 2>&1 &
pid=$!
started out-1.jsonl
for _ in $(seq 1 3000); do
  [ "$(wc -l < out-1.jsonl)" -ge 2000 ] 2>/dev/null && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
"$ELSPETH" resume latest -s pa.yaml --execute > resume.log 2>&1 &&
  cmp -s out-1.jsonl expect.jsonl && [ "$(cat out.jsonl)" = precious ] &&
  pass "auto_increment: killed, resumed in out-1.jsonl to the same bytes; out.jsonl untouched" ||
  fail "auto_increment resume: $(tail -2 resume.log); out.jsonl: $(head -c 40 out.jsonl)"

# 2d. sharded over all three sources: the plan numbers them as a run
#     reads them, a shard may start in one and end in the next; merged,
#     the files are the one run's, also after a shard is killed past the
#     boundary it spans and run again; a changed source is refused
rm -rf out.jsonl bad.jsonl trail.db trail.db.lmdb m.json m.d
expect "shard plan over three sources" 0 "from a.csv and 2 more sources" -- \
  "$ELSPETH" shard plan -s p.yaml --shards 3 -o m.json
[ "$(python3 -c 'import json; print(" ".join("%s:%s" % (r.get("source"), r["first_row"]) for r in json.load(open("m.json"))["ranges"]))')" \
  = "0:1 0:2168 1:4335" ] && pass "the plan's ranges name the source they start in" || fail "ranges: $(cat m.json)"
for k in 0 2; do "$ELSPETH" run -s p.yaml --manifest m.json --shard $k --execute > shard-$k.log 2>&1 & done
"$ELSPETH" run -s p.yaml --manifest m.json --shard 1 --execute --max-rows-in-flight 4 > shard-1.log 2>&1 & pid=$!
for _ in $(seq 1 3000); do # shard 1 (rows 2168..4334: 833 of alpha's) killed in beta
  n=$(cat m.d/shard-0001/parts/*-out.jsonl 2>/dev/null | wc -l)
  [ "$n" -ge 950 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; wait
[ "$n" -ge 950 ] && [ "$n" -lt 2167 ] && pass "shard 1 killed past the boundary between alpha and beta ($n rows out)" ||
  echo "# shard 1 was not killed past the boundary ($n rows out)"
expect "shard 1 run again finishes" 0 "" -- "$ELSPETH" run -s p.yaml --manifest m.json --shard 1 --execute
expect "merge" 0 "" -- "$ELSPETH" merge -s p.yaml --manifest m.json
cmp -s out.jsonl expect.jsonl && [ "$(wc -l < bad.jsonl)" = 1 ] &&
  pass "merged: the three sources' rows in order, beta's invalid line in bad.jsonl" || fail "sharded output differs"
expect "verify --manifest" 0 "the shards cover every row once" -- "$ELSPETH" verify --manifest m.json
expect "explain --manifest names a row's source" 0 "from source 'gamma', its row 0" -- \
  "$ELSPETH" explain --manifest m.json --row 5002
# beta with an observed schema: 0.7.1 fixes its fields' types at their
# first values, which shard 2 (starting inside it) would not see
sed "s/schema: {mode: fixed, fields: \['id: str', 'val: int'\]}/schema: {mode: observed}/" p.yaml > p-observed.yaml
expect "shard plan with a shard starting inside an observed JSON source is refused" 1 \
  "source 'beta': in ELSPETH 0.7.1's format a JSON source" -- \
  "$ELSPETH" shard plan -s p-observed.yaml --shards 3 -o m3.json
"$ELSPETH" shard plan -s p.yaml --shards 2 -o m2.json > /dev/null
echo "c9999,1" >> c.csv
expect "a source changed since the plan is refused" 1 "c.csv has" -- \
  "$ELSPETH" run -s p.yaml --manifest m2.json --shard 0 --execute
sed -i '$d' c.csv
rm -rf out.jsonl bad.jsonl trail.db trail.db.lmdb

# 2c. the live SQL trail while the run reads its second source: the
#     first source exhausted, the second loading (0.7.1's run_sources)
mkdir -p slow && head -201 a.csv > slow/a.csv && head -201 c.csv > slow/c.csv
cat > slow/p.yaml <<'YAML'
sources:
  first: {plugin: csv, on_success: merged, options: {path: a.csv, schema: {mode: observed}, on_validation_failure: discard}}
  second: {plugin: csv, on_success: merged, options: {path: c.csv, schema: {mode: observed}, on_validation_failure: discard}}
queues:
  merged: {description: both}
transforms:
- {name: slow, plugin: delay, input: merged, on_success: out, on_error: discard, options: {schema: {mode: observed}, distribution: fixed, ms: 20}}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: out.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "sqlite:///trail.db"}
checkpoint: {frequency: every_n, checkpoint_interval: 10}
YAML
(cd slow && exec "$ELSPETH" run -s p.yaml --execute --max-rows-in-flight 4 > run.log 2>&1) & pid=$!
seen=
for _ in $(seq 1 1500); do
  seen=$(sqlite3 slow/trail.db "SELECT group_concat(lifecycle_state, ' ') FROM run_sources WHERE EXISTS
    (SELECT 1 FROM rows r JOIN run_sources s ON s.source_node_id = r.source_node_id WHERE s.source_name = 'second')" 2>/dev/null)
  [ -n "$seen" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
wait $pid; rc=$?
[ "$seen" = "exhausted loading" ] && pass "live: once a row of the second source is in SQL, run_sources says '$seen'" ||
  fail "live run_sources: '$seen'"
[ $rc = 0 ] && [ "$(sqlite3 slow/trail.db "SELECT group_concat(lifecycle_state, ' ') FROM run_sources")" = "exhausted exhausted" ] &&
  pass "live: the completed run's sources are both exhausted" || fail "completed run_sources: rc $rc"

# 3. fan-in without a queue is refused as ELSPETH refuses it
sed '/^queues:/,+1d' p.yaml > noq.yaml
expect "fan-in needs a queue" 1 "Duplicate producer for connection 'merged': source 'alpha' and source 'beta'" -- \
  "$ELSPETH" validate -s noq.yaml

# 4. two flows in one run, to their own sinks
cat > flows.yaml <<'YAML'
sources:
  alpha: {plugin: csv, on_success: a_rows, options: {path: a.csv, schema: {mode: observed}, on_validation_failure: discard}}
  gamma: {plugin: csv, on_success: c_rows, options: {path: c.csv, schema: {mode: observed}, on_validation_failure: discard}}
transforms:
- {name: ta, plugin: passthrough, input: a_rows, on_success: aout, on_error: discard, options: {schema: {mode: observed}}}
- {name: tc, plugin: passthrough, input: c_rows, on_success: cout, on_error: discard, options: {schema: {mode: observed}}}
sinks:
  aout: {plugin: csv, on_write_failure: discard, options: {path: flows/a.csv, schema: {mode: observed}, collision_policy: auto_increment}}
  cout: {plugin: csv, on_write_failure: discard, options: {path: flows/c.csv, schema: {mode: observed}, collision_policy: fail_if_exists}}
landscape: {url: "lmdb://./flows.lmdb"}
YAML
expect "two flows" 0 "routed per sink: aout=3000 cout=1500" -- "$ELSPETH" run -s flows.yaml --execute --max-rows-in-flight 32
tr -d '\r' < flows/a.csv | cmp -s - a.csv && pass "flow a: its rows" || fail "flow a differs"
expect "fail_if_exists refuses an existing file" 1 "Output path already exists: flows/c.csv" -- \
  "$ELSPETH" run -s flows.yaml --execute
[ ! -e flows/a-1.csv ] && pass "the refused run wrote nothing" || fail "the refused run wrote $(ls flows)"
rm flows/c.csv
expect "auto_increment picks a free sibling" 0 "routed per sink: aout=3000" -- "$ELSPETH" run -s flows.yaml --execute
[ -s flows/a-1.csv ] && cmp -s flows/a.csv flows/a-1.csv && pass "flows/a-1.csv written beside flows/a.csv" ||
  fail "auto_increment: $(ls flows)"
# a file sink that gets no row leaves no file (0.7.1 makes none), but a
# file that was there before the run is not removed
python3 - <<'PY'

s = open("flows.yaml").read()
s = s.replace("sinks:\n", "sinks:\n  spare: {plugin: csv, on_write_failure: discard, options: {path: flows/spare.csv, schema: {mode: observed}}}\n", 1)
s = s.replace("collision_policy: auto_increment", "").replace("collision_policy: fail_if_exists", "")
open("spare.yaml", "w").write(s)
PY
"$ELSPETH" run -s spare.yaml --execute > spare.log 2>&1 && [ ! -e flows/spare.csv ] &&
  pass "a sink that got no row leaves no file" || fail "spare: $(ls flows) $(tail -1 spare.log)"
echo "keep" > flows/spare.csv
"$ELSPETH" run -s spare.yaml --execute > spare.log 2>&1 && [ -e flows/spare.csv ] &&
  pass "a file that was there before the run is not removed" || fail "spare was removed"
printf 'source: {plugin: csv, on_success: out, options: {path: a.csv, on_validation_failure: discard}}\nsinks:\n  out: {plugin: csv, options: {path: o.csv, collision_policy: auto_increment}}\n' > old.yaml
expect "0.4.1's format has no collision_policy" 1 "unknown key 'collision_policy': it is ELSPETH 0.7.1's" -- \
  "$ELSPETH" validate -s old.yaml

# 5. union_collision_policy
printf '{"id": 1, "x": "one", "note": "alpha"}\n{"id": 2, "x": "two", "note": "beta"}\n' > u.jsonl
union() {
  cat > u_$1.yaml <<YAML
sources:
  s: {plugin: json, on_success: split_in, options: {path: u.jsonl, on_validation_failure: discard}}
gates:
  - {name: split, input: split_in, condition: "True", routes: {'true': fork}, fork_to: [a, b]}
transforms:
  - {name: ta, plugin: truncate, input: a, on_success: a_done, on_error: discard, options: {fields: {note: 2}}}
  - {name: tb, plugin: truncate, input: b, on_success: b_done, on_error: discard, options: {fields: {note: 3}}}
coalesce:
  - {name: join, branches: {a: a_done, b: b_done}, merge: union, union_collision_policy: $1, on_success: out}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: u_$1.jsonl, format: jsonl}}
landscape: {url: "lmdb://./u_$1.lmdb"}
YAML
  "$ELSPETH" run -s u_$1.yaml --execute > u_$1.log 2>&1
}
union last_wins; grep -q '"note": "alp"' u_last_wins.jsonl && pass "last_wins: branch b's value" || fail "last_wins: $(cat u_last_wins.jsonl)"
union first_wins; grep -q '"note": "al"' u_first_wins.jsonl && pass "first_wins: branch a's value" || fail "first_wins: $(cat u_first_wins.jsonl)"
# fail stops the run at the first collision, as 0.7.1's CoalesceCollisionError does
union fail; [ ! -s u_fail.jsonl ] && grep -q "coalesce 'join': union merge collisions: \['id', 'note', 'x'\]" u_fail.log &&
  pass "fail: the run stops, naming the fields" || fail "fail: $(cat u_fail.log)"
finish

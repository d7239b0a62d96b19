#!/usr/bin/env bash
# ELSPETH 0.7.1's schema contract on a JSON source with an observed
# schema: each field's type is fixed by its first value (int, float, str
# and bool apart; null, an object or a list first: anything), a later
# value of another type fails the row, with 0.7.1's message, and its
# quarantine sink gets the rows in 0.7.1's order (the hash of that
# message). Checked against what the real 0.7.1 wrote for the same 15
# lines (recorded by hand: the wanted files below are its output); the
# same file in 0.4.1's format fixes nothing; the fixed types survive a
# SIGKILL and resume; a sharded plan of such a source is refused.
source "$(dirname "$0")/lib.sh"
cd "$WORK"

cat > in.jsonl <<'EOF'
{"id": 1, "v": 5, "n": null, "o": {"a": 1}, "f": 1.5, "b": true}
{"id": 2, "v": "x"}
{"id": 3, "v": 6.0}
{"id": 4, "n": "now str"}
{"id": 5, "o": [1]}
{"id": 6, "f": 2}
{"id": 7, "b": 1}
{"id": 8, "late": "s"}
{"id": 9, "late": 3}
{"id": "10"}
{"id": 11, "v": null}
{"id": 12, "v": 7, "late": 4, "x": 1}
{"id": 13, "v": "a", "late": 5}
{"id": 14, "x": 2.5, "b": false}
{"id": 15, "n": 3, "o": "s"}
EOF
# 0.7.1's files for it (tests/reference/elspeth071, by hand)
cat > want_good.jsonl <<'EOF'
{"b": true, "f": 1.5, "id": 1, "n": null, "o": {"a": 1}, "v": 5}
{"id": 4, "n": "now str"}
{"id": 5, "o": [1]}
{"id": 8, "late": "s"}
{"id": 11, "v": null}
{"id": 15, "n": 3, "o": "s"}
EOF
cat > want_bad.jsonl <<'EOF'
{"id": "10"}
{"id": 2, "v": "x"}
{"id": 9, "late": 3}
{"id": 12, "late": 4, "v": 7, "x": 1}
{"id": 13, "late": 5, "v": "a"}
{"b": 1, "id": 7}
{"id": 3, "v": 6}
{"f": 2, "id": 6}
{"b": false, "id": 14, "x": 2.5}
EOF
cat > want_errors.txt <<'EOF'
line 10: Field 'id' (id) expected type 'int', got 'str'
line 2: Field 'v' (v) expected type 'int', got 'str'
line 9: Field 'late' (late) expected type 'str', got 'int'
line 12: Field 'late' (late) expected type 'str', got 'int'
line 13: Field 'v' (v) expected type 'int', got 'str'; Field 'late' (late) expected type 'str', got 'int'
line 7: Field 'b' (b) expected type 'bool', got 'int'
line 3: Field 'v' (v) expected type 'int', got 'float'
line 6: Field 'f' (f) expected type 'float', got 'int'
line 14: Field 'x' (x) expected type 'int', got 'float'
EOF

pipeline() { # $1: the source block, $2: keys each sink gets (0.7.1's required on_write_failure)
  cat <<YAML
$1
sinks:
  out: {plugin: json, ${2:+$2, }options: {path: out/good.jsonl, format: jsonl, schema: {mode: observed}}}
  bad: {plugin: json, ${2:+$2, }options: {path: out/bad.jsonl, format: jsonl, schema: {mode: observed}}}
checkpoint: {frequency: every_n, checkpoint_interval: 100}
YAML
}
v07() { pipeline "sources:
  primary:
    plugin: json
    on_success: out
    options: {path: $1, format: jsonl, schema: {mode: observed}, on_validation_failure: bad}" \
  "on_write_failure: discard"; }
v04() { pipeline "source:
  plugin: json
  on_success: out
  options: {path: $1, format: jsonl, schema: {mode: observed}, on_validation_failure: bad}"; }
# the latest run's validation errors, as the SQL trail holds them, sorted
# (a 0.7.1-format run writes a quarantined row as it is: the message is
# in the trail, not in the row)
errors_of() { sqlite3 data/audit.db "SELECT error FROM validation_errors WHERE run_id =
  (SELECT run_id FROM runs ORDER BY CAST(run_id AS INTEGER) DESC LIMIT 1) ORDER BY error"; }

# 1. 0.7.1's types, its messages, its order (pipelined and sequential)
v07 in.jsonl > v07.yaml
for n in 8 1; do
  rm -rf out; mkdir out
  expect "0.7.1 format, $n in flight: runs" 0 "Run completed" -- \
    "$ELSPETH" run -s v07.yaml --execute --max-rows-in-flight $n
  cmp -s out/good.jsonl want_good.jsonl && pass "$n in flight: the rows that keep their types are 0.7.1's, byte for byte" ||
    fail "$n in flight: good: $(diff out/good.jsonl want_good.jsonl | head -4)"
  cmp -s out/bad.jsonl want_bad.jsonl &&
    pass "$n in flight: the quarantined rows are 0.7.1's, as they are, in 0.7.1's order" ||
    fail "$n in flight: bad: $(diff out/bad.jsonl want_bad.jsonl | head -4)"
  [ "$(errors_of)" = "$(sort want_errors.txt)" ] &&
    pass "$n in flight: the trail records 0.7.1's message for each" ||
    fail "$n in flight: errors: $(errors_of | diff - <(sort want_errors.txt) | head -3)"
done
expect "verify" 0 "verify: OK" -- "$ELSPETH" verify -s v07.yaml --run latest

# 2. 0.4.1's format fixes no type: every line is a row
v04 in.jsonl > v04.yaml
rm -rf out; mkdir out
expect "0.4.1 format: runs" 0 "Run completed" -- "$ELSPETH" run -s v04.yaml --execute
[ "$(wc -l < out/good.jsonl)" = 15 ] && [ ! -s out/bad.jsonl ] &&
  pass "0.4.1 format: all 15 lines are rows (nothing fixes a type)" || fail "0.4.1: $(wc -l < out/good.jsonl) rows"

# 3. the fixed types survive a SIGKILL: w is a str in the first line and
#    an int in most later ones, which fail; a resume that forgot the type
#    would fix int at its first line and pass them
python3 - <<'PY'
import hashlib, json
bad = []
with open("big.jsonl", "w") as f, open("want_big_good.jsonl", "w") as g:
    for i in range(1, 10001):
        # str in line 1 and every 10th from line 3: a resume's first row
        # (after a checkpoint, every 100 rows) is an int; `a`, fixed after
        # `w` (a str), is an int every 7th line: two messages, w's first
        w = "s%d" % i if i == 1 or i % 10 == 3 else i
        a = i if i % 7 == 0 else "x"
        row = {"id": i, "w": w, "a": a}
        f.write(json.dumps(row) + "\n")
        msgs = ["Field '%s' (%s) expected type 'str', got 'int'" % (k, k)
                for k in ("w", "a") if isinstance(row[k], int)]
        if msgs:
            bad.append((hashlib.sha256("; ".join(msgs).encode()).hexdigest()[:16], i, "; ".join(msgs)))
        else:
            g.write(json.dumps(row, sort_keys=True) + "\n")
# 0.7.1's order: by the hash of the message, stably
with open("want_big_bad.txt", "w") as b:
    for _, i, m in sorted(bad, key=lambda x: x[0]):
        b.write("%d line %d: %s\n" % (i, i, m))
PY
v07 big.jsonl > big.yaml
cat >> big.yaml <<'YAML'
transforms:
- {name: slow, plugin: delay, input: out_in, on_success: out, on_error: discard, options: {schema: {mode: observed}, distribution: uniform, min_ms: 1, max_ms: 3, seed: 3}}
YAML
sed -i 's/    on_success: out$/    on_success: out_in/' big.yaml
# (one row at a time for the second kill: the first row after its
# checkpoint is then an int, which only the checkpointed type fails)
from=0
for at in 10 3000 7000; do
  rm -rf out state data; mkdir out
  n=4; [ $at = 3000 ] && n=1
  "$ELSPETH" run -s big.yaml --execute --max-rows-in-flight $n > /dev/null 2>&1 & pid=$!
  for _ in $(seq 1 3000); do
    [ "$(cat out/good.jsonl 2>/dev/null | wc -l)" -ge $((at / 10)) ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  got=$(wc -l < out/good.jsonl)
  ck=$("$ELSPETH" resume latest -s big.yaml 2>&1 | sed -n 's/.*released through row \([0-9]*\).*/\1/p')
  [ "${ck:-0}" -gt "$from" ] && from=$ck
  # (killed in its first rows, the run may not have a checkpoint, nor
  # even its nodes, in the Landscape yet: the resume records them)
  expect "killed at about row $at ($got rows out): resume, its SQL trail written" 0 "" -- \
    "$ELSPETH" resume latest -s big.yaml --execute
  expect "killed at about row $at: verify" 0 "verify: OK" -- "$ELSPETH" verify -s big.yaml --run latest
  cmp -s out/good.jsonl want_big_good.jsonl && [ "$(python3 -c 'import json, sys
print("\n".join(str(r["id"]) for r in map(json.loads, open("out/bad.jsonl"))))')" = "$(cut -d" " -f1 want_big_bad.txt)" ] &&
    [ "$(errors_of | sort)" = "$(cut -d" " -f2- want_big_bad.txt | sort)" ] &&
    pass "killed at about row $at: resumed from row ${ck:-0} with w and a still str, their messages in order and 0.7.1's order" ||
    fail "killed at about row $at: $(wc -l < out/good.jsonl) rows out, $(wc -l < out/bad.jsonl) quarantined"
done

[ "$from" -ge 1000 ] && pass "a resume started from a checkpoint past row 1,000 (row $from): the fixed type came from it" ||
  fail "no resume started past row 1,000 (at most $from): the checkpointed types were not tried"

# 4. a shard starting later in the file would not know the fixed types
expect "shard plan of such a source is refused" 1 "fixes each field's type at its first value" -- \
  "$ELSPETH" shard plan -s v07.yaml --shards 2 -o m.json
finish

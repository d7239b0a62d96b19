#!/usr/bin/env bash
# No deadlock, no lost row: each case runs under a timeout.
#  - a slow sink (a FIFO drained slowly) with many rows in flight;
#  - max_completed_waiting = max_rows_in_flight (the tightest allowed);
#  - a transform that fails every row, and rows that fail every retry;
#  - SIGINT mid-run with 64 rows in flight;
#  - stress: STRESS_ROWS (default 100000) rows, no latency, N = 256, a fork
#    joined by a coalesce and an aggregation: sinks byte-identical to
#    --sequential, verify passes, every row accounted for.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
ROWS=${STRESS_ROWS:-100000}
T="timeout 300"
awk 'BEGIN { print "id,v"; for (i = 1; i <= 3000; i++) printf "%d,%d\n", i, i % 17 }' > small.csv

base() { # TRANSFORM_OPTIONS EXTRA
  cat <<YAML
source: {plugin: csv, on_success: d_in, options: {path: small.csv, on_validation_failure: discard}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: out, on_error: errors, options: {$1}}
sinks:
  out: {plugin: csv, options: {path: "\${OUT:-out}/out.csv"}}
  errors: {plugin: json, options: {path: "\${OUT:-out}/errors.jsonl"}}
retry: {max_attempts: 3, initial_delay_seconds: 0.001, max_delay_seconds: 0.002}
${2:-}
YAML
}

# Slow sink: a FIFO read one line every 0.2 ms.
mkfifo slow.fifo
( timeout 120 bash -c 'while IFS= read -r line; do sleep 0.0002; echo "$line"; done < slow.fifo > slow.out' ) &
reader=$!
base "distribution: uniform, min_ms: 0, max_ms: 2, seed: 1" > slow.yaml
sed -i 's|path: "${OUT:-out}/out.csv"|path: slow.fifo|' slow.yaml
expect "slow sink: completes" 0 "out=3000" -- $T "$ELSPETH" run -s slow.yaml --execute --max-rows-in-flight 64
wait $reader
[ "$(wc -l < slow.out)" = 3001 ] && pass "slow sink: 3000 rows + header through the FIFO" || fail "slow sink: $(wc -l < slow.out) lines"

base "distribution: uniform, min_ms: 0, max_ms: 5, seed: 2" \
  "concurrency: {pipelining: {max_rows_in_flight: 32, max_completed_waiting: 32}}" > tight.yaml
expect "tight max_completed_waiting: completes" 0 "out=3000" -- $T "$ELSPETH" run -s tight.yaml --execute
expect "tight max_completed_waiting: verify" 0 "verify: OK" -- "$ELSPETH" verify

# Head of line: row 1 takes 400 ms, the others ~0. With N = 4 and
# max_completed_waiting = 40, rows behind row 1 keep completing (so more
# than N wait) but never more than 40 are unreleased; every row released
# in order; at most N rows processed at once.
mkdir -p hol && cat > hol/hol.yaml <<'YAML'
source: {plugin: csv, on_success: g_in, options: {path: ../small.csv, on_validation_failure: discard}}
gates:
  - {name: g, input: g_in, condition: "row['id'] == '1'", routes: {'true': slow_in, 'false': fast_in}}
transforms:
  - {name: slow, plugin: delay, input: slow_in, on_success: out, options: {ms: 400}}
  - {name: fast, plugin: delay, input: fast_in, on_success: out, options: {ms: 0}}
sinks:
  out: {plugin: csv, options: {path: out.csv}}
concurrency: {pipelining: {max_rows_in_flight: 4, max_completed_waiting: 40}}
YAML
( cd hol && $T "$ELSPETH" run -s hol.yaml --execute > run.log 2>&1 && "$ELSPETH" runs --run 1 > runs.txt 2>&1 )
pw=$(awk '$1 == "metrics.peak_waiting" { print $2 }' hol/runs.txt)
pf=$(awk '$1 == "metrics.peak_in_flight" { print $2 }' hol/runs.txt)
if [ -n "$pw" ] && [ "$pw" -gt 4 ] && [ "$pw" -lt 40 ] && [ "$pf" -le 4 ]; then
  pass "head of line: $pw rows waited behind row 1 (N = 4, bound 40), $pf in flight at most"
else
  fail "head of line: peak waiting '$pw', peak in flight '$pf'"; cat hol/run.log hol/runs.txt | head -40
fi
cut -d, -f1 hol/out.csv | tail -n +2 > hol/ids
seq 1 3000 | cmp -s - hol/ids && pass "head of line: released in source order" || fail "head of line: order"

base "ms: 0, error_rate: 1, error_mode: always" > allfail.yaml
expect "every row fails every retry: all routed to on_error" 0 "failed 3000" -- $T "$ELSPETH" run -s allfail.yaml --execute --max-rows-in-flight 64
expect "every row fails every retry: 3 attempts each" 0 "6000 retries" -- $T "$ELSPETH" run -s allfail.yaml --execute --max-rows-in-flight 16
expect "every row fails every retry: verify" 0 "verify: OK" -- "$ELSPETH" verify
expect "a failing row is explained attempt by attempt" 0 "attempt 3" -- "$ELSPETH" explain --row 5

base "ms: 50" > slow5.yaml
rm -rf out
"$ELSPETH" run -s slow5.yaml --execute --max-rows-in-flight 64 > int.log 2>&1 &
pid=$!
started out/out.csv
sleep 0.5
kill -INT $pid
( sleep 30; kill -9 $pid 2>/dev/null ) & guard=$!
wait $pid; rc=$?
kill $guard 2>/dev/null
[ "$rc" = 3 ] && pass "SIGINT with 64 in flight: exit 3" || { fail "SIGINT: exit $rc"; cat int.log; }
expect "SIGINT: verify passes" 0 "verify: OK" -- "$ELSPETH" verify
rows=$(sed -n 's/^Run interrupted: \([0-9]*\) rows.*/\1/p' int.log)
lines=$(cat out/out.csv 2>/dev/null | wc -l)
written=$((lines > 0 ? lines - 1 : 0))
[ -n "$rows" ] && [ "$written" = "$rows" ] && pass "SIGINT: every pulled row ($rows) was written" ||
  fail "SIGINT: $rows rows pulled, $written written"

# An aggregation timeout fires on its own clock while rows are in flight:
# 60 rows x 40 ms at 4 in flight take ~0.6 s; batches of up to 1000 rows
# must still flush every 0.15 s.
head -61 small.csv > sixty.csv
cat > timeout.yaml <<'YAML'
source: {plugin: csv, on_success: d_in, options: {path: sixty.csv, on_validation_failure: discard}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: agg_in, options: {ms: 40}}
aggregations:
  - {name: a, plugin: batch_replicate, input: agg_in, on_success: out,
     trigger: {count: 1000, timeout_seconds: 0.15}, output_mode: passthrough}
sinks:
  out: {plugin: csv, options: {path: tout/out.csv}}
landscape: {url: "lmdb://./state-timeout"}
YAML
expect "aggregation timeout with rows in flight: completes" 0 "out=60" -- $T "$ELSPETH" run -s timeout.yaml --execute --max-rows-in-flight 4
batches=$("$ELSPETH" runs --database state-timeout --run latest | sed -n 's/^metrics.batches *//p')
[ "${batches:-0}" -ge 3 ] && pass "timeout flushed $batches batches before the end of the source" || fail "timeout: $batches batches"
expect "timeout batches are recorded as such" 0 "(trigger timeout at row" -- "$ELSPETH" explain --database state-timeout --row 1
expect "timeout run verifies" 0 "verify: OK" -- "$ELSPETH" verify --database state-timeout

# Stress.
awk -v n="$ROWS" 'BEGIN { print "id,group,v"; for (i = 1; i <= n; i++) printf "%d,g%d,%d\n", i, i % 7, (i * 31) % 1000 }' > big.csv
cat > stress.yaml <<'YAML'
source: {plugin: csv, on_success: split_in, options: {path: big.csv, on_validation_failure: discard,
         schema: {mode: fixed, fields: ["id: int", "group: str", "v: int"]}}}
gates:
  - {name: split, input: split_in, condition: "row['v'] % 5 != 0", routes: {'true': fork, 'false': fifth}, fork_to: [a, b]}
transforms:
  - {name: ta, plugin: field_mapper, input: a, on_success: a_done, options: {mapping: {v: va}}}
  - {name: tb, plugin: truncate, input: b, on_success: b_done, options: {fields: {group: 1}}}
coalesce:
  - {name: join, branches: {a: a_done, b: b_done}, policy: require_all, merge: nested, on_success: agg_in}
aggregations:
  - {name: stats, plugin: batch_replicate, input: agg_in, on_success: joined, trigger: {count: 10},
     output_mode: passthrough, options: {attach_batch_info: true}}
sinks:
  joined: {plugin: json, options: {path: "${OUT}/joined.jsonl"}}
  fifth: {plugin: csv, options: {path: "${OUT}/fifth.csv"}}
landscape: {url: "lmdb://./state-stress"}
YAML
expect "stress: sequential" 0 "Run completed: $ROWS rows" -- env OUT=seq $T "$ELSPETH" run -s stress.yaml --execute --sequential
expect "stress: N=256" 0 "Run completed: $ROWS rows" -- env OUT=n256 $T "$ELSPETH" run -s stress.yaml --execute --max-rows-in-flight 256
diff -r seq n256 > /dev/null && pass "stress: sinks byte-identical (FIFO, no lost or duplicated row)" || fail "stress: sinks differ"
total=$(( $(wc -l < n256/joined.jsonl) + $(wc -l < n256/fifth.csv) - 1 ))
[ "$total" = "$ROWS" ] && pass "stress: $total rows out for $ROWS in" || fail "stress: $total rows out for $ROWS in"
ids=$( (python3 -c 'import json,sys; [print(json.loads(l)["a"]["id"]) for l in open("n256/joined.jsonl")]'; tail -n +2 n256/fifth.csv | cut -d, -f1) | sort -n | uniq | wc -l)
[ "$ids" = "$ROWS" ] && pass "stress: every id exactly once" || fail "stress: $ids distinct ids"
expect "stress: verify N=256" 0 "verify: OK" -- "$ELSPETH" verify --database state-stress --run latest
finish

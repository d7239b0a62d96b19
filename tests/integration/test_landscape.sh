#!/usr/bin/env bash
# The audit trail end to end: runs, explain (text and JSON against an
# expected document), verify (passes; fails with exit 4 on a tampered sink),
# failed and interrupted runs, read-only errors.
source "$(dirname "$0")/lib.sh"
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
QS=examples/quickstart/settings.yaml
NORM="python3 $SRC/tests/integration/normalize_explain.py"

expect "runs on an empty directory says so" 1 "no audit trail at" -- "$ELSPETH" runs --database nowhere.lmdb

expect "quickstart runs with the audit on" 0 "audit: run 1" -- "$ELSPETH" run -s $QS --execute --sequential
expect "runs lists the run" 0 "completed" -- "$ELSPETH" runs
expect "runs finds the trail from -s" 0 "completed" -- "$ELSPETH" runs -s $QS
expect "explain tells the story of row 42" 0 "routed: condition gave 'true' -> urgent" -- "$ELSPETH" explain --run latest --row 42
expect "explain shows where the row landed" 0 "Written: examples/quickstart/out/urgent.jsonl bytes" -- "$ELSPETH" explain --run 1 --row 42
expect "explain a quarantined row" 0 "validation error: line 58: field 'amount'" -- "$ELSPETH" explain --row 57

"$ELSPETH" explain --run latest --row 42 --json | $NORM > row42.json
if diff -u "$SRC/tests/integration/expected/quickstart_explain_row42.json" row42.json > diff.txt; then
  pass "explain --json of row 42 equals the expected document"
else
  fail "explain --json of row 42 differs"; head -40 diff.txt
fi

expect "explain of a row that does not exist" 1 "run 1 has no row 9999" -- "$ELSPETH" explain --row 9999
expect "explain of a run that does not exist" 1 "no run 7" -- "$ELSPETH" explain --run 7 --row 1
expect "explain needs --row or --token" 2 "exactly one of --row" -- "$ELSPETH" explain --run 1

expect "verify passes on a clean run" 0 "verify: OK" -- "$ELSPETH" verify --run latest

# Tamper with one byte of a sink file: verify must notice (exit 4).
cp examples/quickstart/out/urgent.jsonl urgent.bak
sed -i '5s/Customer/Kustomer/' examples/quickstart/out/urgent.jsonl
expect "verify catches an edited sink file" 4 "differ from what was written" -- "$ELSPETH" verify --run 1
expect "verify names the changed file" 4 "changed since the run" -- "$ELSPETH" verify --run 1
cp urgent.bak examples/quickstart/out/urgent.jsonl

# A run that stops on a row error is recorded as failed and still verifies.
sed "s/row\['urgency'\] == 'high'/row['nope'] == 1/" $QS > failing.yaml
expect "a failing run exits 1" 1 "row 1: gate 'route'" -- "$ELSPETH" run -s failing.yaml --execute
expect "the failed run is recorded" 0 "failed" -- "$ELSPETH" runs
expect "the failed row has a FAILED outcome" 0 "Outcome: FAILED" -- "$ELSPETH" explain --run 2 --row 1
expect "verify passes on the failed run" 0 "verify: OK" -- "$ELSPETH" verify --run 2

# Audit off: nothing recorded.
printf '\nlandscape: {enabled: false}\n' | cat $QS - > noaudit.yaml
rm -rf state-before; cp -r state state-before
expect "audit off runs" 0 "Run completed" -- "$ELSPETH" run -s noaudit.yaml --execute
[ "$("$ELSPETH" runs | grep -c '^ *[0-9]')" = 2 ] && pass "audit off records no run" || fail "audit off recorded a run"

# SIGINT mid-run: exit 3, status interrupted, verify passes.
awk 'BEGIN { print "ticket_id,customer,subject,priority,amount";
  for (i = 1; i <= 400000; i++) printf "%d,c%d,s %d,%s,%d.5\n", i, i % 50, i, (i % 3 ? "low" : "high"), i % 900 }' > big.csv
sed "s|examples/quickstart/data/tickets.csv|big.csv|" $QS > big.yaml
ELSPETH_OUT_DIR=bigout "$ELSPETH" run -s big.yaml --execute > int.out 2>&1 &
pid=$!
started bigout/normal.csv
sleep 0.3
kill -INT $pid
wait $pid; rc=$?
[ "$rc" = 3 ] && pass "SIGINT exits 3" || { fail "SIGINT exit $rc"; cat int.out; }
expect "the interrupted run is recorded" 0 "interrupted" -- "$ELSPETH" runs
expect "verify passes on the interrupted run" 0 "verify: OK" -- "$ELSPETH" verify --run latest

finish

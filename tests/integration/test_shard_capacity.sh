#!/usr/bin/env bash
# Sharded runs share an LLM upstream (docs/scale-out.md "Capacity"): each
# shard's transforms take 1/parallel of pool_size (rounded up) and of
# rate_limit's budgets, so N shards do not hit an API N times harder.
# Checked on what each shard's audit trail records of its upstream (the
# state context's pool_size) and on what the mock server saw (the most
# requests it had in flight from two shards running at once).
source "$(dirname "$0")/lib.sh"
cd "$WORK"

cp -r "$SRC/examples/llm_classify" ex
sed -i "s#examples/llm_classify/#ex/#" ex/settings.yaml
# No concurrency cap at the mock, so that only the shards' share limits
# what is in flight (two shards with the whole pool each: up to 128).
mock_start --labels urgent,normal,spam --latency fixed:100 --max-concurrent 1000 --seed 7
export ELSPETH_OUT_DIR=out

# The pool the settings give, and the share of each of 4 shards planned to
# run 2 at a time, and of 3 shards all at once.
pool=$(awk '/pool_size:/ { print $2; exit }' ex/settings.yaml)
expect "plan: 4 shards, 2 at a time" 0 "each shard takes 0.5 of every rate limit" -- \
  "$ELSPETH" shard plan -s ex/settings.yaml --shards 4 --parallel 2 -o p4.json
expect "plan: 3 shards, all at once" 0 "0.333" -- \
  "$ELSPETH" shard plan -s ex/settings.yaml --shards 3 -o p3.json

pool_of() { # MANIFEST SHARD ROW -> the pool_size the row's LLM state recorded
  "$ELSPETH" explain --manifest "$1" --row "$3" --json | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for t in doc["tokens"]:
    for s in t["states"]:
        if s.get("plugin") == "llm":
            print(s["context"]["pool_size"]); sys.exit()
print("none")'
}

# Two shards of p4 at once; the mock counts the requests in flight.
mock_reset
"$ELSPETH" run --manifest p4.json --shard 0 --execute > s0.log 2>&1 &
a=$!
"$ELSPETH" run --manifest p4.json --shard 1 --execute > s1.log 2>&1
rc1=$?
wait "$a"
rc0=$?
if [ "$rc0" = 0 ] && [ "$rc1" = 0 ]; then pass "two shards of p4 ran at once"
else fail "two shards of p4: exit $rc0 and $rc1"; sed 's/^/    /' s0.log s1.log | tail -20; fi
first=$(python3 -c 'import json; print(json.load(open("p4.json"))["ranges"][1]["first_row"])')
got=$(pool_of p4.json 1 "$first")
want=$(( (pool + 1) / 2 ))
if [ "$got" = "$want" ]; then pass "p4: a shard's pool_size is $want of $pool"
else fail "p4: shard 1 recorded pool_size $got, want $want"; fi

stats=$(python3 -c 'import sys, urllib.request as u; print(u.urlopen(sys.argv[1] + "/admin/stats").read().decode())' "$MOCK_URL")
peak=$(python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(d["peak_concurrency"])' "$stats")
if [ "$peak" -ge 0 ] && [ "$peak" -le $(( 2 * want )) ]; then
  pass "p4: two shards together had at most $((2 * want)) requests in flight (peak $peak)"
else
  fail "p4: peak requests in flight $peak, want at most $((2 * want)) (stats: $stats)"
fi

"$ELSPETH" run --manifest p3.json --shard 2 --execute > s3.log 2>&1 ||
  { fail "p3: shard 2 failed"; sed 's/^/    /' s3.log | tail -10; }
first=$(python3 -c 'import json; print(json.load(open("p3.json"))["ranges"][2]["first_row"])')
got=$(pool_of p3.json 2 "$first")
want=$(( (pool + 2) / 3 ))
if [ "$got" = "$want" ]; then pass "p3: a shard's pool_size is $want of $pool (rounded up)"
else fail "p3: shard 2 recorded pool_size $got, want $want"; fi

finish

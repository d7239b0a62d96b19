#!/usr/bin/env bash
# Sharded runs on one machine (docs/scale-out.md): ROWS rows (default
# 1,000,000) through the foundation pipeline (CSV -> field_mapper -> gate
# -> CSV, audit on: CPU-bound), side by side in one run:
#   - one run with 1, 2 and 16 rows in flight (the best is the baseline);
#   - `shard plan` into SHARDS shards (default 8), the shards run
#     PARALLEL at a time (default: the cores), then `merge`.
# Prints each time, the sharded total over the best single run, plan and
# merge as a share of the sharded run, and checks that the merged files
# are byte-identical to the single run's. Release build.
# Usage: bench/shard.sh [ROWS] [SHARDS] [PARALLEL]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
SHARDS=${2:-8}
PARALLEL=${3:-$(nproc)}
OUT=bench/out/shard
QUIET_MAX=${QUIET_MAX:-0.3} QUIET_WAIT=${QUIET_WAIT:-60}
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null
E=$PWD/build-release/elspeth

source bench/lib.sh
foundation_input "$ROWS" "$OUT/input-$ROWS.csv"

# ELSPETH_OUT_DIR and the landscape come from the environment, so the
# single runs and the sharded one use the same settings file.
{ foundation_pipeline "$OUT/input-$ROWS.csv" '${ELSPETH_OUT_DIR}'
  echo 'landscape: {url: "lmdb://${ELSPETH_STATE}"}'; } > "$OUT/pipeline.yaml"

now() { date +%s.%N; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.3f", e - s }'; }

single() { # FLIGHT -> seconds
  rm -rf "$OUT/single-$1" "$OUT/state-single-$1"
  local s e
  quiet_gate
  s=$(now)
  ELSPETH_OUT_DIR="$OUT/single-$1" ELSPETH_STATE="$OUT/state-single-$1" \
    "$E" run -s "$OUT/pipeline.yaml" --execute --max-rows-in-flight "$1" > "$OUT/single-$1.txt"
  e=$(now)
  secs "$s" "$e"
}

echo "== $ROWS rows; one run, then $SHARDS shards $PARALLEL at a time (machine: $(nproc) cores)"
declare -A T
for f in 1 2 16; do T[$f]=$(single "$f"); echo "  one run, $f in flight: ${T[$f]} s"; done
best=1
for f in 2 16; do awk -v a="${T[$f]}" -v b="${T[$best]}" 'BEGIN { exit !(a < b) }' && best=$f; done

rm -rf "$OUT/sharded" "$OUT/shards.json" "$OUT/shards.d"
export ELSPETH_OUT_DIR="$OUT/sharded" ELSPETH_STATE="$OUT/state-unused"
quiet_gate
t0=$(now)
"$E" shard plan -s "$OUT/pipeline.yaml" --shards "$SHARDS" --parallel "$PARALLEL" \
  -o "$OUT/shards.json" > "$OUT/plan.txt"
t1=$(now)
seq 0 $((SHARDS - 1)) | xargs -P "$PARALLEL" -I{} sh -c \
  "'$E' run -s '$OUT/pipeline.yaml' --manifest '$OUT/shards.json' --shard {} --execute \
     --max-rows-in-flight $best > '$OUT/shard-{}.txt'"
t2=$(now)
"$E" merge --manifest "$OUT/shards.json" > "$OUT/merge.txt"
t3=$(now)

plan=$(secs "$t0" "$t1"); runs=$(secs "$t1" "$t2"); merge=$(secs "$t2" "$t3")
total=$(secs "$t0" "$t3")
same=yes
for f in high.csv low.csv; do cmp -s "$OUT/single-$best/$f" "$OUT/sharded/$f" || same=NO; done
awk -v b="${T[$best]}" -v bf="$best" -v p="$plan" -v r="$runs" -v m="$merge" -v t="$total" \
    -v n="$ROWS" -v k="$SHARDS" -v par="$PARALLEL" -v same="$same" 'BEGIN {
  printf "%-34s %9s %12s\n", "", "seconds", "rows/s";
  printf "%-34s %9.2f %12.0f\n", "best single run (" bf " in flight)", b, n / b;
  printf "%-34s %9.2f\n", "shard plan", p;
  printf "%-34s %9.2f\n", k " shards, " par " at a time", r;
  printf "%-34s %9.2f\n", "merge", m;
  printf "%-34s %9.2f %12.0f\n", "sharded total", t, n / t;
  printf "sharded total / best single run: %.2f (target <= 1.2)\n", t / b;
  printf "plan + merge: %.1f %% of the sharded run (target < 5 %%)\n", 100 * (p + m) / t;
  printf "merged files byte-identical to the single run: %s\n", same }'
[ "$same" = yes ]

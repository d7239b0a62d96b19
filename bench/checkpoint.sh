#!/usr/bin/env bash
# bench/checkpoint.sh — what checkpoints cost (docs/architecture.md §11:
# <= 5 % of throughput at checkpoint_interval: 100), side by side in one
# run.
#
#   usage: bench/checkpoint.sh [ELSPETH] [ROWS_FAST] [ROWS_SLOW] [REPEATS]
#
# Two workloads, audit on, each with checkpoints off, every_n 100,
# every_n 10 and every_row, REPEATS runs each (median pipeline rows/s):
#   fast: CSV -> field_mapper -> CSV, ROWS_FAST rows, 16 in flight: the
#         engine's own ceiling, where a checkpoint's cost shows most;
#   slow: CSV -> delay (fixed 20 ms) -> CSV, ROWS_SLOW rows, 64 in flight:
#         the Little's-law regime the engine is built for.
# Prints rows/s and the ratio to "off" (this machine is noisy: compare the
# ratios), the checkpoints written, and checks every sink is
# byte-identical to the "off" one.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ELSPETH=${1:-$ROOT/build/elspeth}
FAST=${2:-50000}
SLOW=${3:-2000}
REPEATS=${4:-3}
OUT=$(mktemp -d /tmp/elspeth-bench-ckpt.XXXXXX)
QUIET_MAX=${QUIET_MAX:-0.5}
QUIET_WAIT=${QUIET_WAIT:-20}
. "$ROOT/bench/lib.sh"
trap 'rm -rf "$OUT"' EXIT
ensure_pkg jq jq || { echo "needs jq" >&2; exit 1; }

python3 - "$OUT" "$FAST" "$SLOW" <<'PY'
import csv, sys
out, fast, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for name, n in (("fast", fast), ("slow", slow)):
    with open(f"{out}/{name}.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "name", "amount"])
        for i in range(1, n + 1):
            w.writerow([i, f"customer {i % 977}", f"{i * 1.25:.2f}"])
PY

# pipeline NAME VARIANT -> settings file
pipeline() {
  local name=$1 variant=$2 transform ckpt
  if [ "$name" = fast ]; then
    transform="plugin: field_mapper
    options: {mapping: {name: customer}}"
  else
    transform="plugin: delay
    options: {distribution: fixed, ms: 20}"
  fi
  case $variant in
    off) ckpt="checkpoint: {enabled: false}" ;;
    n100) ckpt="checkpoint: {frequency: every_n, checkpoint_interval: 100}" ;;
    n10) ckpt="checkpoint: {frequency: every_n, checkpoint_interval: 10}" ;;
    row) ckpt="checkpoint: {frequency: every_row}" ;;
  esac
  cat > "$OUT/$name-$variant.yaml" <<YAML
source:
  plugin: csv
  on_success: t_in
  options:
    path: $OUT/$name.csv
    schema: {mode: fixed, fields: ["id: int", "name: str", "amount: float"]}
    on_validation_failure: discard
transforms:
  - name: t
    input: t_in
    on_success: out
    $transform
sinks:
  out: {plugin: csv, options: {path: "$OUT/$name-$variant.out.csv"}}
landscape: {url: "lmdb://$OUT/state-$name-$variant"}
$ckpt
YAML
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "bench/checkpoint.sh: $ELSPETH (built $(date -r "$ELSPETH" '+%F %T'); tree at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)), $(nproc) cores"
printf "%-5s %-10s %6s %12s %8s %12s %s\n" workload checkpoint N "rows/s" ratio checkpoints sink
for name in fast slow; do
  n=16; [ "$name" = slow ] && n=64
  base=
  for variant in off n100 n10 row; do
    pipeline "$name" "$variant"
    rates=() ck=0
    for _ in $(seq "$REPEATS"); do
      quiet_gate
      rm -rf "$OUT/state-$name-$variant"
      "$ELSPETH" run -s "$OUT/$name-$variant.yaml" --execute --max-rows-in-flight "$n" \
        --format json > "$OUT/run.json" 2>/dev/null || { echo "run failed: $name $variant" >&2; exit 1; }
      ev=$(grep '"run_completed"' "$OUT/run.json")
      rates+=("$(jq -r '.rows / .pipeline_seconds' <<<"$ev")")
      ck=$("$ELSPETH" runs --database "$OUT/state-$name-$variant" --run latest --json 2>/dev/null |
           jq -r '.metrics.checkpoints // 0' 2>/dev/null || echo "?")
    done
    rate=$(printf "%s\n" "${rates[@]}" | median)
    [ -z "$base" ] && base=$rate
    same=OK
    cmp -s "$OUT/$name-off.out.csv" "$OUT/$name-$variant.out.csv" || same=DIFF
    printf "%-5s %-10s %6s %12.0f %8.3f %12s %s\n" "$name" "$variant" "$n" "$rate" \
      "$(awk -v a="$rate" -v b="$base" 'BEGIN { print a / b }')" "$ck" "$same"
  done
done

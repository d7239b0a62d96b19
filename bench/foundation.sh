#!/usr/bin/env bash
# Foundation benchmark: ROWS rows (default 1,000,000) through
# CSV -> field_mapper -> gate -> CSV, pipelined engine (default 16 rows in
# flight; RUN_ARGS="--sequential" for one at a time), Release build,
# with the audit trail off and on, side by side. Prints rows/s and the
# ratio. Usage: bench/foundation.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
OUT=bench/out/foundation
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null

source bench/lib.sh
foundation_input "$ROWS" "$OUT/input-$ROWS.csv"

foundation_pipeline "$OUT/input-$ROWS.csv" "$OUT" > "$OUT/pipeline.yaml"

run_mode() { # NAME EXTRA_YAML
  sed '/^landscape:/d' "$OUT/pipeline.yaml" > "$OUT/pipeline-$1.yaml"
  printf '%s\n' "$2" >> "$OUT/pipeline-$1.yaml"
  rm -rf "$OUT/state-$1"
  local start end
  start=$(date +%s.%N)
  build-release/elspeth run -s "$OUT/pipeline-$1.yaml" --execute ${RUN_ARGS:-} > "$OUT/summary-$1.txt"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}
t_off=$(run_mode off "landscape: {enabled: false}")
t_on=$(run_mode on "landscape: {url: \"lmdb://$OUT/state-on\"}")
du -sh "$OUT/state-on" | awk '{ print "audit trail size: " $1 }'
awk -v off="$t_off" -v on="$t_on" -v n="$ROWS" 'BEGIN {
  printf "%-10s %10s %12s\n", "audit", "seconds", "rows/s";
  printf "%-10s %10.2f %12.0f\n", "off", off, n / off;
  printf "%-10s %10.2f %12.0f\n", "on", on, n / on;
  printf "ratio on/off throughput: %.2f\n", off / on }'

#!/usr/bin/env bash
# Foundation benchmark: ROWS rows (default 1,000,000) through
# CSV -> field_mapper -> gate -> CSV, pipelined engine (default 16 rows in
# flight; RUN_ARGS="--sequential" for one at a time), Release build,
# with the audit trail off and on, and on with the Prometheus endpoint
# (--metrics-listen, scraped every 0.5 s while it runs), side by side.
# Prints rows/s and the ratios. Usage: bench/foundation.sh [ROWS]
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

run_mode() { # NAME EXTRA_YAML [RUN_ARG...]
  local name=$1 extra=$2 start end; shift 2
  sed '/^landscape:/d' "$OUT/pipeline.yaml" > "$OUT/pipeline-$name.yaml"
  printf '%s\n' "$extra" >> "$OUT/pipeline-$name.yaml"
  rm -rf "$OUT/state-$name"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  build-release/elspeth run -s "$OUT/pipeline-$name.yaml" --execute ${RUN_ARGS:-} "$@" \
    > "$OUT/summary-$name.txt"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}
t_off=$(run_mode off "landscape: {enabled: false}")
t_on=$(run_mode on "landscape: {url: \"lmdb://$OUT/state-on\"}")
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
( while sleep 0.5; do curl -s -o /dev/null "http://127.0.0.1:$MPORT/metrics" || true; done ) &
SCRAPER=$!
t_m=$(run_mode metrics "landscape: {url: \"lmdb://$OUT/state-metrics\"}" --metrics-listen "127.0.0.1:$MPORT")
kill "$SCRAPER" 2>/dev/null || true
du -sh "$OUT/state-on" | awk '{ print "audit trail size: " $1 }'
awk -v off="$t_off" -v on="$t_on" -v m="$t_m" -v n="$ROWS" 'BEGIN {
  printf "%-10s %10s %12s\n", "audit", "seconds", "rows/s";
  printf "%-10s %10.2f %12.0f\n", "off", off, n / off;
  printf "%-10s %10.2f %12.0f\n", "on", on, n / on;
  printf "%-10s %10.2f %12.0f\n", "on+metrics", m, n / m;
  printf "ratio on/off throughput: %.2f\n", off / on;
  printf "ratio on+metrics/on throughput: %.3f\n", on / m }'

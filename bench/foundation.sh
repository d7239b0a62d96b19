#!/usr/bin/env bash
# Foundation benchmark: ROWS rows (default 1,000,000) through
# CSV -> field_mapper -> gate -> CSV, pipelined engine (default 16 rows in
# flight; RUN_ARGS="--sequential" for one at a time), Release build,
# with the audit trail off and on, and on with the Prometheus endpoint
# (--metrics-listen, scraped every second while it runs), side by side.
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
# One scraper process (as Prometheus is one), once a second.
python3 -c '
import sys, time, urllib.request
while True:
    time.sleep(1)
    try: urllib.request.urlopen(sys.argv[1], timeout=2).read()
    except Exception: pass' "http://127.0.0.1:$MPORT/metrics" &
SCRAPER=$!
t_m=$(run_mode metrics "landscape: {url: \"lmdb://$OUT/state-metrics\"}" --metrics-listen "127.0.0.1:$MPORT")
kill "$SCRAPER" 2>/dev/null || true
# "on" again after it, so that a drift of the machine during the runs
# does not count against the endpoint: it is compared with both.
t_on2=$(run_mode on2 "landscape: {url: \"lmdb://$OUT/state-on2\"}")
du -sh "$OUT/state-on" | awk '{ print "audit trail size: " $1 }'
awk -v off="$t_off" -v on="$t_on" -v on2="$t_on2" -v m="$t_m" -v n="$ROWS" 'BEGIN {
  printf "%-10s %10s %12s\n", "audit", "seconds", "rows/s";
  printf "%-10s %10.2f %12.0f\n", "off", off, n / off;
  printf "%-10s %10.2f %12.0f\n", "on", on, n / on;
  printf "%-10s %10.2f %12.0f\n", "on+metrics", m, n / m;
  printf "%-10s %10.2f %12.0f\n", "on (again)", on2, n / on2;
  printf "ratio on/off throughput: %.2f\n", off / on;
  printf "ratio on+metrics/on throughput: %.3f (on: the mean of both runs)\n", (on + on2) / 2 / m }'

#!/usr/bin/env bash
# Telemetry's cost (#31, ADR 0037): bench/foundation.sh's cheap pipeline
# (ROWS rows, default 1,000,000: CSV -> field_mapper -> gate -> CSV, 16
# rows in flight, audit on, Release build), side by side in one run:
#   off        no telemetry block
#   lifecycle  granularity lifecycle (console json into a file) and the
#              Prometheus endpoint scraped once a second
#   rows       granularity rows (every transform and gate: two events a
#              row, console json into a file, backpressure block: every
#              event written)
#   off again  (the machine's drift is not charged to telemetry)
# Prints seconds, rows/s and each mode's throughput against the mean of
# the two `off` runs. Usage: bench/telemetry.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
OUT=bench/out/telemetry
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null

source bench/lib.sh
foundation_input "$ROWS" "$OUT/input-$ROWS.csv"
foundation_pipeline "$OUT/input-$ROWS.csv" "$OUT" > "$OUT/pipeline.yaml"

run_mode() { # NAME EXTRA_YAML [RUN_ARG...]
  local name=$1 extra=$2 start end; shift 2
  sed '/^landscape:/d' "$OUT/pipeline.yaml" > "$OUT/pipeline-$name.yaml"
  printf 'landscape: {url: "lmdb://%s"}\n%s\n' "$OUT/state-$name" "$extra" >> "$OUT/pipeline-$name.yaml"
  rm -rf "$OUT/state-$name"
  start=$(date +%s.%N)
  build-release/elspeth run -s "$OUT/pipeline-$name.yaml" --execute "$@" \
    > "$OUT/stdout-$name.txt" 2> "$OUT/events-$name.jsonl"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}
tel() { # GRANULARITY
  printf 'telemetry:\n  enabled: true\n  granularity: %s\n  exporters:\n  - name: console\n    options: {output: stderr}\n' "$1"
}
t_off=$(run_mode off "")
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -c '
import sys, time, urllib.request
while True:
    time.sleep(1)
    try: urllib.request.urlopen(sys.argv[1], timeout=2).read()
    except Exception: pass' "http://127.0.0.1:$MPORT/metrics" &
SCRAPER=$!
t_life=$(run_mode lifecycle "$(tel lifecycle)" --metrics-listen "127.0.0.1:$MPORT")
kill "$SCRAPER" 2>/dev/null || true
t_rows=$(run_mode rows "$(tel rows)")
t_off2=$(run_mode off2 "")
n_life=$(wc -l < "$OUT/events-lifecycle.jsonl")
n_rows=$(wc -l < "$OUT/events-rows.jsonl")
awk -v off="$t_off" -v off2="$t_off2" -v l="$t_life" -v r="$t_rows" -v n="$ROWS" \
    -v nl="$n_life" -v nr="$n_rows" 'BEGIN {
  base = (off + off2) / 2;
  printf "%-22s %9s %10s %9s %10s\n", "telemetry", "seconds", "rows/s", "events", "vs off";
  printf "%-22s %9.2f %10.0f %9s %10s\n", "off", off, n / off, "-", "";
  printf "%-22s %9.2f %10.0f %9d %10.3f\n", "lifecycle + /metrics", l, n / l, nl, base / l;
  printf "%-22s %9.2f %10.0f %9d %10.3f\n", "rows", r, n / r, nr, base / r;
  printf "%-22s %9.2f %10.0f %9s %10s\n", "off (again)", off2, n / off2, "-", "";
  printf "throughput against the mean of the two off runs: lifecycle %.3f, rows %.3f\n", base / l, base / r }'

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
# REPEATS rounds (default 3) of the four, interleaved; prints for each
# mode the median wall seconds, rows/s and CPU seconds (user + sys), and
# its throughput against `off` (both off runs of every round). The
# machine is shared and noisy: read the ratios, and the CPU column.
# Usage: bench/telemetry.sh [ROWS]
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

run_mode() { # NAME EXTRA_YAML [RUN_ARG...] -> "WALL CPU"
  local name=$1 extra=$2; shift 2
  sed '/^landscape:/d' "$OUT/pipeline.yaml" > "$OUT/pipeline-$name.yaml"
  printf 'landscape: {url: "lmdb://%s"}\n%s\n' "$OUT/state-$name" "$extra" >> "$OUT/pipeline-$name.yaml"
  rm -rf "$OUT/state-$name"
  /usr/bin/time -f "%e %U %S" -o "$OUT/time-$name.txt" \
    build-release/elspeth run -s "$OUT/pipeline-$name.yaml" --execute "$@" \
    > "$OUT/stdout-$name.txt" 2> "$OUT/events-$name.jsonl"
  awk '{ printf "%.3f %.3f", $1, $2 + $3 }' "$OUT/time-$name.txt"
}
tel() { # GRANULARITY
  printf 'telemetry:\n  enabled: true\n  granularity: %s\n  exporters:\n  - name: console\n    options: {output: stderr}\n' "$1"
}
MPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -c '
import sys, time, urllib.request
while True:
    time.sleep(1)
    try: urllib.request.urlopen(sys.argv[1], timeout=2).read()
    except Exception: pass' "http://127.0.0.1:$MPORT/metrics" &
SCRAPER=$!
trap 'kill $SCRAPER 2>/dev/null || true' EXIT
: > "$OUT/results.txt"
for r in $(seq "${REPEATS:-3}"); do
  echo "off $(run_mode off "")" >> "$OUT/results.txt"
  echo "lifecycle $(run_mode lifecycle "$(tel lifecycle)" --metrics-listen "127.0.0.1:$MPORT")" >> "$OUT/results.txt"
  echo "rows $(run_mode rows "$(tel rows)")" >> "$OUT/results.txt"
  echo "off $(run_mode off2 "")" >> "$OUT/results.txt"
done
n_life=$(wc -l < "$OUT/events-lifecycle.jsonl")
n_rows=$(wc -l < "$OUT/events-rows.jsonl")
python3 - "$OUT/results.txt" "$ROWS" "$n_life" "$n_rows" <<'PYEOF'
import statistics, sys
rows = int(sys.argv[2]); events = {"lifecycle": sys.argv[3], "rows": sys.argv[4], "off": "-"}
runs = {}
for line in open(sys.argv[1]):
    m, w, c = line.split()
    runs.setdefault(m, []).append((float(w), float(c)))
med = {m: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for m, v in runs.items()}
print("%-22s %8s %9s %9s %9s %9s %9s" % ("telemetry", "runs", "wall s", "rows/s", "CPU s", "events", "vs off"))
names = {"off": "off", "lifecycle": "lifecycle + /metrics", "rows": "rows"}
for m in ("off", "lifecycle", "rows"):
    w, c = med[m]
    print("%-22s %8d %9.2f %9.0f %9.2f %9s %9s" % (names[m], len(runs[m]), w, rows / w, c, events[m],
          "" if m == "off" else "%.3f" % (med["off"][0] / w)))
for m in ("lifecycle", "rows"):
    print("%s: throughput %.3f of off (medians), CPU %.3f of off" % (
        m, med["off"][0] / med[m][0], med[m][1] / med["off"][1]))
PYEOF

#!/usr/bin/env bash
# Foundation benchmark: ROWS rows (default 1,000,000) through
# CSV -> field_mapper -> gate -> CSV, sequential engine, Release build.
# Prints rows/s. Usage: bench/foundation.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
OUT=bench/out/foundation
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null

if [ ! -f "$OUT/input-$ROWS.csv" ]; then
  awk -v n="$ROWS" 'BEGIN {
    srand(42); print "id,name,score,category,note";
    split("alpha,beta,gamma,delta", cats, ",");
    for (i = 1; i <= n; i++)
      printf "%d,user %d,%.2f,%s,\"note, with comma %d\"\n", i, i % 977, rand() * 100, cats[(i % 4) + 1], i;
  }' > "$OUT/input-$ROWS.csv"
fi

cat > "$OUT/pipeline.yaml" <<YAML
source:
  plugin: csv
  on_success: map_in
  options:
    path: $OUT/input-$ROWS.csv
    schema: {mode: fixed, fields: ["id: int", "name: str", "score: float", "category: str", "note: str"]}
    on_validation_failure: discard
transforms:
  - name: mapper
    plugin: field_mapper
    input: map_in
    on_success: gate_in
    options: {mapping: {name: user, score: points}}
gates:
  - name: high
    input: gate_in
    condition: "row['points'] >= 50"
    routes: {'true': high, 'false': low}
sinks:
  high: {plugin: csv, options: {path: $OUT/high.csv}}
  low: {plugin: csv, options: {path: $OUT/low.csv}}
YAML

start=$(date +%s.%N)
build-release/elspeth run -s "$OUT/pipeline.yaml" --execute | tee "$OUT/summary.txt"
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v n="$ROWS" \
  'BEGIN { printf "foundation: %d rows in %.2f s wall = %.0f rows/s (sequential, no audit)\n", n, e - s, n / (e - s) }'

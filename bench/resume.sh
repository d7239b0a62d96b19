#!/usr/bin/env bash
# resume's cost against the part of the run it redoes (issue 33, item 7):
# the foundation pipeline (CSV -> field_mapper -> gate -> two CSVs,
# bench/lib.sh) over ROWS rows (1,000,000), pipelined, audit on.
#   killed   the run SIGKILLed once its sinks hold about half the rows;
#   resume   `elspeth resume` of it: seconds and peak RSS;
#   part     a fresh run over only the rows the resume redid (the same
#            source's last R rows): seconds and peak RSS.
# Prints both and the ratios resume / part (the target: within 1.5x).
# Release build. Usage: bench/resume.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
OUT=bench/out/resume
mkdir -p "$OUT"
source bench/lib.sh
QUIET_MAX=${QUIET_MAX:-0.3} QUIET_WAIT=${QUIET_WAIT:-30}

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null
BIN=$OUT/elspeth
cp build-release/elspeth "$BIN.new" && mv "$BIN.new" "$BIN"
foundation_input "$ROWS" "$OUT/in.csv"

# measure NAME CMD...: wall seconds and peak RSS (MB) into NAME.time
measure() {
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "$@" > "$OUT/$name.log" 2>&1
}

rm -rf "$OUT/k.lmdb" "$OUT/k_out"
{ foundation_pipeline "$OUT/in.csv" "$OUT/k_out"; echo "landscape: {url: \"lmdb://$OUT/k.lmdb\"}"; } > "$OUT/k.yaml"
quiet_gate
"$BIN" run -s "$OUT/k.yaml" -x > "$OUT/killed.log" 2>&1 &
pid=$!
half=$((ROWS / 2))
while kill -0 "$pid" 2>/dev/null; do
  n=$( { cat "$OUT"/k_out/*.csv 2>/dev/null || true; } | wc -l)
  [ "$n" -ge "$half" ] && break
  sleep 0.2
done
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
quiet_gate
measure resume "$BIN" resume latest -s "$OUT/k.yaml" -x
# the rows the resume redid: those after the row its checkpoint released
from=$("$BIN" explain -d "$OUT/k.lmdb" -r 1 --row 1 --json |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["resumes"][0]["from_released_seq"])')
redo=$((ROWS - from))
{ head -1 "$OUT/in.csv"; tail -n "$redo" "$OUT/in.csv"; } > "$OUT/part.csv"
rm -rf "$OUT/p.lmdb" "$OUT/p_out"
{ foundation_pipeline "$OUT/part.csv" "$OUT/p_out"; echo "landscape: {url: \"lmdb://$OUT/p.lmdb\"}"; } > "$OUT/p.yaml"
quiet_gate
measure part "$BIN" run -s "$OUT/p.yaml" -x
read -r rs rm < "$OUT/resume.time"
read -r ps pm < "$OUT/part.time"
echo "rows $ROWS, killed after row $from released; the resume redid $redo rows"
printf "%-8s %8s %10s\n" "" seconds "peak MB"
printf "%-8s %8.2f %10.0f\n" resume "$rs" "$(echo "$rm / 1024" | bc -l)"
printf "%-8s %8.2f %10.0f\n" part "$ps" "$(echo "$pm / 1024" | bc -l)"
printf "ratio resume/part: time %.2f, memory %.2f\n" "$(echo "$rs / $ps" | bc -l)" "$(echo "$rm / $pm" | bc -l)"

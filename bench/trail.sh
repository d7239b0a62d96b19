#!/usr/bin/env bash
# The audit trail's cost, today's format side by side with the format
# before row stories (Landscape format 1, built from git ref BASE) and
# with the packing alternatives of today's format (ELSPETH_TRAIL_PACK),
# all in one run (docs/performance.md, ADR 0022). Release builds.
#
#  1. foundation  CSV -> field_mapper -> gate -> CSV (bench/lib.sh), ROWS
#                 rows (300,000), --sequential: seconds, rows/s, the
#                 ratio audit on / audit off, trail bytes (data.mdb) per row.
#  2. llm         CSV -> llm -> CSV against the mock (latency 0), LLM_ROWS
#                 rows (4,000), 16 in flight: rows/s and trail bytes per
#                 row (request and response bodies included).
#  3. large       LARGE rows (1,000,000; 0 skips it) through the foundation
#                 pipeline with today's format: explain --row of 5 rows
#                 (ms each) and verify (seconds).
# Usage: bench/trail.sh [ROWS] [LLM_ROWS] [LARGE]   (env BASE=25e4661)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-300000}
LLM_ROWS=${2:-4000}
LARGE=${3:-1000000}
BASE=${BASE:-25e4661}
OUT=bench/out/trail
mkdir -p "$OUT/log" "$OUT/bin"
source bench/lib.sh
QUIET_MAX=${QUIET_MAX:-0.3} QUIET_WAIT=${QUIET_WAIT:-30}

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth elspeth-mock-llm >/dev/null
cp build-release/elspeth "$OUT/bin/elspeth-new"
cp build-release/elspeth-mock-llm "$OUT/bin/"
MOCK=$OUT/bin/elspeth-mock-llm
# The format-1 build: a worktree of BASE, built once.
if [ ! -x "$OUT/bin/elspeth-base" ]; then
  rm -rf "$OUT/base-src"; git worktree prune
  git worktree add --detach "$OUT/base-src" "$BASE" >/dev/null 2>&1
  cmake -S "$OUT/base-src" -B "$OUT/base-build" -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
  cmake --build "$OUT/base-build" -j"$(nproc)" --target elspeth >/dev/null
  cp "$OUT/base-build/elspeth" "$OUT/bin/elspeth-base"
fi
trap stop_mock EXIT

size_of() { stat -c %s "$1/data.mdb"; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.3f", e - s }'; }

# timed BIN SETTINGS [PACK] [ARGS...]: runs it, prints the seconds.
timed() {
  local bin=$1 y=$2 pack=$3 s e; shift 3
  s=$(date +%s.%N)
  ELSPETH_TRAIL_PACK=$pack "$OUT/bin/$bin" run -s "$y" --execute "$@" > "$OUT/log/last.log" 2>&1 ||
    { cat "$OUT/log/last.log" >&2; exit 1; }
  e=$(date +%s.%N)
  secs "$s" "$e"
}

# ------------------------------------------------------------ foundation
foundation_input "$ROWS" "$OUT/in-$ROWS.csv"
foundation_pipeline "$OUT/in-$ROWS.csv" "$OUT" | sed '/^landscape:/d' > "$OUT/f.yaml"
fsettings() { # TAG AUDIT
  cp "$OUT/f.yaml" "$OUT/f-$1.yaml"
  if [ "$2" = on ]; then echo "landscape: {url: \"lmdb://$OUT/state-$1\"}" >> "$OUT/f-$1.yaml"
  else echo "landscape: {enabled: false}" >> "$OUT/f-$1.yaml"; fi
  rm -rf "$OUT/state-$1"
}
echo "== foundation: $ROWS rows, --sequential (format 1 = $BASE)"
printf "%-22s %8s %10s %8s %10s\n" mode seconds rows/s "on/off" "bytes/row"
quiet_gate
fsettings off off
t_off=$(timed elspeth-new "$OUT/f-off.yaml" dict --sequential)
t_boff=$(timed elspeth-base "$OUT/f-off.yaml" dict --sequential)
for m in "format-1|base|dict|f1" "format-2 raw|new|raw|raw" "format-2 zstd|new|zstd|zstd" \
         "format-2 dict|new|dict|dict"; do
  IFS='|' read -r label bin pack tag <<<"$m"
  fsettings "$tag" on
  t=$(timed "elspeth-$bin" "$OUT/f-$tag.yaml" "$pack" --sequential)
  off=$t_off; [ "$bin" = base ] && off=$t_boff
  awk -v l="$label" -v t="$t" -v off="$off" -v n="$ROWS" -v b="$(size_of "$OUT/state-$tag")" \
    'BEGIN { printf "%-22s %8.2f %10.0f %8.2f %10.0f\n", l, t, n / t, off / t, b / n }'
done
awk -v t="$t_off" -v n="$ROWS" 'BEGIN { printf "%-22s %8.2f %10.0f\n", "audit off (new)", t, n / t }'
awk -v t="$t_boff" -v n="$ROWS" 'BEGIN { printf "%-22s %8.2f %10.0f\n", "audit off (format-1)", t, n / t }'

# ------------------------------------------------------------------- llm
if [ "$LLM_ROWS" -gt 0 ]; then
  echo "== llm: $LLM_ROWS rows against the mock (latency 0), 16 in flight"
  awk -v n="$LLM_ROWS" 'BEGIN { print "id,text"; for (i = 1; i <= n; i++)
    printf "%d,ticket %d: the printer on floor %d jams when printing %d pages\n", i, i, i % 9, i % 50 }' > "$OUT/llm.csv"
  start_mock --latency fixed:0
  printf "%-22s %8s %10s %10s\n" mode seconds rows/s "bytes/row"
  for m in "format-1|base|dict" "format-2 raw|new|raw" "format-2 zstd|new|zstd" \
           "format-2 dict|new|dict"; do
    IFS='|' read -r label bin pack <<<"$m"
    tag="llm-$bin-$pack"
    rm -rf "$OUT/state-$tag"
    cat > "$OUT/$tag.yaml" <<YAML
source: {plugin: csv, on_success: ask, options: {path: $OUT/llm.csv,
         schema: {mode: fixed, fields: ["id: int", "text: str"]}, on_validation_failure: discard}}
transforms:
  - {name: classify, plugin: llm, input: ask, on_success: out, on_error: errors,
     options: {provider: openai, model: mock-1, base_url: "http://127.0.0.1:$PORT/v1", api_key: bench,
               template: "Classify this ticket into billing, hardware or other: {{ row.text }}",
               response_field: label, pool_size: 16}}
sinks:
  out: {plugin: csv, options: {path: $OUT/$tag.csv}}
  errors: {plugin: json, options: {path: $OUT/$tag-errors.jsonl, format: jsonl}}
landscape: {url: "lmdb://$OUT/state-$tag"}
YAML
    mock POST /admin/reset >/dev/null
    t=$(timed "elspeth-$bin" "$OUT/$tag.yaml" "$pack" --max-rows-in-flight 16)
    awk -v l="$label" -v t="$t" -v n="$LLM_ROWS" -v b="$(size_of "$OUT/state-$tag")" \
      'BEGIN { printf "%-22s %8.2f %10.0f %10.0f\n", l, t, n / t, b / n }'
  done
  stop_mock
fi

# ----------------------------------------------------------------- large
if [ "$LARGE" -gt 0 ]; then
  echo "== large: $LARGE rows, today's format: explain and verify"
  foundation_input "$LARGE" "$OUT/in-$LARGE.csv"
  foundation_pipeline "$OUT/in-$LARGE.csv" "$OUT" | sed '/^landscape:/d' > "$OUT/L.yaml"
  echo "landscape: {url: \"lmdb://$OUT/state-large\"}" >> "$OUT/L.yaml"
  rm -rf "$OUT/state-large"
  t=$(timed elspeth-new "$OUT/L.yaml" dict)
  awk -v t="$t" -v n="$LARGE" -v b="$(size_of "$OUT/state-large")" \
    'BEGIN { printf "run: %.2f s, %.0f rows/s, trail %.0f bytes/row\n", t, n / t, b / n }'
  for row in 1 $((LARGE / 3)) $((LARGE / 2)) $((LARGE - 7)) "$LARGE"; do
    s=$(date +%s.%N)
    "$OUT/bin/elspeth-new" explain --database "$OUT/state-large" --row "$row" > "$OUT/log/explain.txt"
    e=$(date +%s.%N)
    awk -v r="$row" -v s="$s" -v e="$e" 'BEGIN { printf "explain --row %d: %.1f ms\n", r, (e - s) * 1000 }'
  done
  s=$(date +%s.%N)
  "$OUT/bin/elspeth-new" verify --database "$OUT/state-large" | tail -1
  e=$(date +%s.%N)
  echo "verify: $(secs "$s" "$e") s"
fi

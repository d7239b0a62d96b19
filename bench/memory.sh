#!/usr/bin/env bash
# Memory stays flat: peak RSS of `elspeth run` at N = 64 rows in flight for
# 10,000 and 1,000,000 rows (CSV -> field_mapper -> gate -> CSV), with the
# audit trail off and on. Prints a table and the ratio 1M / 10k.
# Usage: bench/memory.sh [SMALL] [LARGE]
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${1:-10000}
LARGE=${2:-1000000}
OUT=bench/out/memory
mkdir -p "$OUT"
# GNU time measures the peak RSS (package `time`; installed if missing).
[ -x /usr/bin/time ] || { sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo;
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; }
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null

gen() { [ -f "$OUT/in-$1.csv" ] || awk -v n="$1" 'BEGIN { print "id,name,score";
  for (i = 1; i <= n; i++) printf "%d,user %d,%d\n", i, i % 977, i % 100 }' > "$OUT/in-$1.csv"; }

run() { # ROWS AUDIT
  local y="$OUT/p-$1-$2.yaml"
  rm -rf "$OUT/state-$1-$2"
  cat > "$y" <<YAML
source: {plugin: csv, on_success: m_in, options: {path: $OUT/in-$1.csv, on_validation_failure: discard,
         schema: {mode: fixed, fields: ["id: int", "name: str", "score: int"]}}}
transforms:
  - {name: m, plugin: field_mapper, input: m_in, on_success: g_in, options: {mapping: {name: user}}}
gates:
  - {name: g, input: g_in, condition: "row['score'] >= 50", routes: {'true': high, 'false': low}}
sinks:
  high: {plugin: csv, options: {path: $OUT/high-$1-$2.csv}}
  low: {plugin: csv, options: {path: $OUT/low-$1-$2.csv}}
landscape: {enabled: $2, url: "lmdb://$OUT/state-$1-$2"}
YAML
  /usr/bin/time -f "%M" -o "$OUT/rss" build-release/elspeth run -s "$y" --execute \
    --max-rows-in-flight 64 > "$OUT/run-$1-$2.log"
  echo "$(cat "$OUT/rss") $(sed -n 's/.*(\([0-9]*\) rows\/s).*/\1/p' "$OUT/run-$1-$2.log")"
}

gen "$SMALL"; gen "$LARGE"
printf "%-6s %10s %14s %10s\n" audit rows "peak RSS KiB" "rows/s"
for audit in false true; do
  read -r s_rss s_rate <<<"$(run "$SMALL" $audit)"
  read -r l_rss l_rate <<<"$(run "$LARGE" $audit)"
  printf "%-6s %10d %14d %10d\n" "$audit" "$SMALL" "$s_rss" "$s_rate"
  printf "%-6s %10d %14d %10d\n" "$audit" "$LARGE" "$l_rss" "$l_rate"
  awk -v a="$s_rss" -v b="$l_rss" -v au="$audit" 'BEGIN { printf "audit %s: RSS %d rows / %d rows = %.2f\n", au, 0, 0, b / a }' |
    sed "s/0 rows \/ 0 rows/$LARGE rows \/ $SMALL rows/"
done

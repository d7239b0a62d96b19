#!/usr/bin/env bash
# The SQL trail's cost: ROWS rows (default 1,000,000) through the
# foundation pipeline (CSV -> field_mapper -> gate -> CSV, audit on,
# Release build), then `elspeth export --sqlite` of that run, timed side
# by side; then the same run with landscape.url sqlite:/// (the SQL trail
# written live beside the engine, ADR 0041, its last step included),
# pipelined and --sequential; then, when Debian's postgresql is installed, the
# same against a private PostgreSQL server (a unix socket, fsync on):
# `export --sqlite postgresql://…`, a run with landscape.url
# postgresql://… and the readers' copy of that database (`export -d
# postgresql://… --sqlite NEW`). Prints seconds, rows/s and the ratios.
# Usage: bench/export.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROWS=${1:-1000000}
OUT=$ROOT/bench/out/export
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null

source bench/lib.sh
foundation_input "$ROWS" "$OUT/input-$ROWS.csv"
pipeline() { # LANDSCAPE_URL
  printf 'landscape: {url: "%s"}\n' "$1"
  foundation_pipeline "$OUT/input-$ROWS.csv" "$OUT"
}
secs() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }'; }

rm -rf "$OUT/state" "$OUT/trail.db" "$OUT/sql" && mkdir -p "$OUT/sql"
pipeline "lmdb://$OUT/state" > "$OUT/lmdb.yaml"
pipeline "sqlite:///$OUT/sql/audit.db" > "$OUT/sqlite.yaml"
t_run=$(secs "$ROOT/build-release/elspeth" run -s "$OUT/lmdb.yaml" --execute)
t_exp=$(secs "$ROOT/build-release/elspeth" export -d "$OUT/state" --sqlite "$OUT/trail.db")
t_again=$(secs "$ROOT/build-release/elspeth" export -d "$OUT/state" --sqlite "$OUT/trail.db")
t_sql=$(secs "$ROOT/build-release/elspeth" run -s "$OUT/sqlite.yaml" --execute)
# sequential too (the issue's two modes), each in a Landscape of its own
rm -rf "$OUT/state" "$OUT/sql" && mkdir -p "$OUT/sql"
t_seq=$(secs "$ROOT/build-release/elspeth" run -s "$OUT/lmdb.yaml" --execute --sequential)
t_sqlseq=$(secs "$ROOT/build-release/elspeth" run -s "$OUT/sqlite.yaml" --execute --sequential)
lmdb_mb=$(du -sm "$OUT/state" | cut -f1); sql_mb=$(du -sm "$OUT/trail.db" | cut -f1)
echo "rows $ROWS"
echo "run (LMDB trail)            ${t_run} s  $(awk -v r="$ROWS" -v t="$t_run" 'BEGIN { printf "%.0f", r / t }') rows/s  trail ${lmdb_mb} MB"
echo "export to SQLite            ${t_exp} s  ratio to the run $(awk -v a="$t_exp" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')  file ${sql_mb} MB"
echo "export again (replaces it)  ${t_again} s  ratio $(awk -v a="$t_again" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')"
echo "run with sqlite:/// url     ${t_sql} s  ratio to the LMDB run $(awk -v a="$t_sql" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')  (written live, ADR 0041)"
echo "--sequential, LMDB trail    ${t_seq} s"
echo "--sequential, sqlite:///    ${t_sqlseq} s  ratio $(awk -v a="$t_sqlseq" -v b="$t_seq" 'BEGIN { printf "%.2f", a / b }')"
sqlite3 "$OUT/trail.db" "SELECT 'tokens ' || count(*) FROM tokens; SELECT 'node_states ' || count(*) FROM node_states"
if bench_pg_start "$OUT/pg"; then
  trap bench_pg_stop EXIT
  pipeline "$BENCH_PG_URL" > "$OUT/pg.yaml"
  t_pexp=$(secs "$ROOT/build-release/elspeth" export -d "$OUT/state" --sqlite "$BENCH_PG_URL")
  t_pagain=$(secs "$ROOT/build-release/elspeth" export -d "$OUT/state" --sqlite "$BENCH_PG_URL")
  rm -rf "$OUT/pgrun" && mkdir -p "$OUT/pgrun"
  t_prun=$(cd "$OUT/pgrun" && secs "$ROOT/build-release/elspeth" run -s "$OUT/pg.yaml" --execute)
  echo "export to PostgreSQL        ${t_pexp} s  ratio to the run $(awk -v a="$t_pexp" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')"
  echo "export again (replaces it)  ${t_pagain} s  ratio $(awk -v a="$t_pagain" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')"
  echo "run with postgresql:// url  ${t_prun} s  ratio to the LMDB run $(awk -v a="$t_prun" -v b="$t_run" 'BEGIN { printf "%.2f", a / b }')"
  # the readers' copy of the database (mcp -d, export -d: ADR 0043)
  rm -f "$OUT/copy.db"
  t_copy=$(secs "$ROOT/build-release/elspeth" export -d "$BENCH_PG_URL" --sqlite "$OUT/copy.db")
  echo "copy of the database        ${t_copy} s  (both runs above; export -d postgresql://… --sqlite NEW: what mcp -d reads)"
else
  echo "(no PostgreSQL server binaries: apt-get install postgresql for its rows)"
fi

#!/usr/bin/env bash
# Pipelining benchmark (docs/architecture.md §11: throughput with N rows in flight and
# per-row latency L stays within 10% of Little's law, N / L, up to N = 256,
# audit on). Two pipelines, Release build, audit trail on, a fresh state
# dir per run:
#   (a) delay:  CSV -> delay(fixed L) -> CSV
#   (b) fork:   CSV -> gate forking every row into two branches, each a
#               delay(fixed L) -> coalesce (require_all, nested) -> JSONL.
#               One worker walks a row's branches one after another
#               (depth first, engine/walk.c), so a row takes L_row = 2L.
# Each runs --sequential and --max-rows-in-flight N for N in NS, at the
# latency L and once more at L = 0 (the engine's own ceiling at that N:
# no latency to hide, so nothing can go faster). Prints rows/s, speedup
# over sequential, efficiency = rows/s / (N / L_row) (Little's law), peak
# RSS of the elspeth process, and whether every run's sink is
# byte-identical to the sequential one (OK/DIFF). Writes
# bench/out/pipelining/results.tsv (runs.tsv: every run) and renders
# docs/pipelining.png with gnuplot (bench/pipelining.gp).
#
# Usage: bench/pipelining.sh [ROWS] [LATENCY_MS]       (defaults 2000 20)
# Environment: NS="1 4 16 64 256"  the N to run
#              REPEATS=3           runs per mode expected to take < 10 s
#                                  (median rows/s, max peak RSS reported)
#              QUIET_MAX=1.0       before each run, wait (up to QUIET_WAIT=10
#                                  seconds) until other processes use at
#                                  most this many cores; the other load
#                                  during each run is reported ("bg")
#              KEEP_STATE=1        keep every run's audit trail (state/TAG)
#                                  for `elspeth explain`; else each is
#                                  deleted once its metrics are read
#              AUDIT=off           diagnosis only: landscape disabled;
#                                  results go to bench/out/pipelining-noaudit
#                                  and no plot is rendered
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-2000}
L=${2:-20}
NS=${NS:-"1 4 16 64 256"}
REPEATS=${REPEATS:-3}
AUDIT=${AUDIT:-on}
QUIET_MAX=${QUIET_MAX:-1.0}
QUIET_WAIT=${QUIET_WAIT:-10}
KEEP_STATE=${KEEP_STATE:-0}
OUT=bench/out/pipelining
[ "$AUDIT" = on ] || OUT=bench/out/pipelining-noaudit
mkdir -p "$OUT"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null
# Every run uses this copy, so a rebuild of build-release meanwhile (other
# work in the tree) cannot change the binary halfway through.
BIN=$OUT/elspeth
cp build-release/elspeth "$BIN"
REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || REV="$REV+local changes"

# busy_ticks, quiet_gate, ensure_pkg: bench/lib.sh

# ensure_pkg COMMAND PACKAGE: apt-get install PACKAGE (non-interactive,
# sudo -n when not root) unless COMMAND is already there.
source bench/lib.sh
have_gnuplot=1; ensure_pkg gnuplot gnuplot-nox || have_gnuplot=0
have_time=1;    ensure_pkg /usr/bin/time time   || have_time=0

# ------------------------------------------------------------ inputs
INPUT="$OUT/input-$ROWS.csv"
if [ ! -f "$INPUT" ]; then
  awk -v n="$ROWS" 'BEGIN {
    srand(7); print "id,name,score,note";
    for (i = 1; i <= n; i++)
      printf "%d,user %d,%.2f,\"note, \"\"quoted\"\" %d\"\n", i, i % 977, rand() * 100, i;
  }' > "$INPUT"
fi

SOURCE="source:
  plugin: csv
  on_success: start
  options:
    path: $INPUT
    schema: {mode: fixed, fields: [\"id: int\", \"name: str\", \"score: float\", \"note: str\"]}
    on_validation_failure: discard"
if [ "$AUDIT" = on ]; then
  LANDSCAPE='landscape: {url: "lmdb://@STATE@/audit.lmdb"}'
else
  LANDSCAPE='landscape: {enabled: false}'
fi

cat > "$OUT/delay.yaml.in" <<YAML
# (a) CSV -> delay(fixed @MS@ ms) -> CSV; L_row = @MS@ ms
$SOURCE
transforms:
  - name: wait
    plugin: delay
    input: start
    on_success: out
    options: {distribution: fixed, ms: @MS@}
sinks:
  out: {plugin: csv, options: {path: "@SINK@"}}
$LANDSCAPE
YAML

cat > "$OUT/fork.yaml.in" <<YAML
# (b) CSV -> fork into two branches, each delay(fixed @MS@ ms) -> coalesce
# (require_all, nested) -> JSONL; one worker walks the two branches of a
# row one after the other, so L_row = 2 x @MS@ ms
$SOURCE
gates:
  - name: split
    input: start
    condition: "True"
    routes: {'true': fork}
    fork_to: [left, right]
transforms:
  - name: wait_left
    plugin: delay
    input: left
    on_success: left_done
    options: {distribution: fixed, ms: @MS@}
  - name: wait_right
    plugin: delay
    input: right
    on_success: right_done
    options: {distribution: fixed, ms: @MS@}
coalesce:
  - name: join
    branches: {left: left_done, right: right_done}
    policy: require_all
    merge: nested
    on_success: out
sinks:
  out: {plugin: json, options: {path: "@SINK@"}}
$LANDSCAPE
YAML

# ------------------------------------------------------------ one run
# run_one VARIANT MODE MS REP: appends one line to runs.tsv (MODE: seq | N).
run_one() {
  local v=$1 mode=$2 ms=$3 rep=$4 ext tag state sink cfg sum rows= secs= rate= rss own bg pid hwm t0 t1 b0 b1 fifo blocked psecs prate
  local flags
  case $v in delay) ext=csv ;; fork) ext=jsonl ;; esac
  tag="$v-$mode-L$ms-r$rep"
  state="$OUT/state/$tag"; sink="$OUT/sink/$tag.$ext"; cfg="$OUT/settings/$tag.yaml"
  sum="$OUT/log/$tag.txt"
  rm -rf "$state" "$sink"
  mkdir -p "$OUT/state" "$OUT/sink" "$OUT/settings" "$OUT/log"
  sed -e "s|@STATE@|$state|" -e "s|@SINK@|$sink|" -e "s|@MS@|$ms|g" "$OUT/$v.yaml.in" > "$cfg"
  if [ "$mode" = seq ]; then flags=(--sequential); else flags=(--max-rows-in-flight "$mode"); fi
  quiet_gate
  b0=$(busy_ticks)
  t0=$(date +%s.%N)
  if [ "$have_time" = 1 ]; then
    /usr/bin/time -v -o "$OUT/log/$tag.time" "$BIN" run -s "$cfg" --execute "${flags[@]}" > "$sum"
    rss=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$OUT/log/$tag.time")
    own=$(awk -F': *' '/User time|System time/ { s += $2 } END { print s }' "$OUT/log/$tag.time")
  else # poll the high-water mark while it runs (may miss the last ms)
    "$BIN" run -s "$cfg" --execute "${flags[@]}" > "$sum" & pid=$!
    rss=0
    while kill -0 "$pid" 2>/dev/null; do
      hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
      [ -n "$hwm" ] && rss=$hwm
      sleep 0.02
    done
    wait "$pid"
    own=NaN
  fi
  t1=$(date +%s.%N)
  b1=$(busy_ticks)
  # other processes' CPU during the run, in cores
  bg=$(awk -v a="$b0" -v b="$b1" -v hz="$HZ" -v own="$own" -v t0="$t0" -v t1="$t1" \
    'BEGIN { if (own == "NaN") print "NaN"; else { x = ((b - a) / hz - own) / (t1 - t0); printf "%.2f", (x < 0 ? 0 : x) } }')
  # "Run completed: R rows in T s (X rows/s)": X is from the unrounded time.
  # X is printed as an integer: below 1000 rows/s take R / T (T >= 2 s).
  read -r rows secs rate < <(sed -n 's/^Run completed: \([0-9]*\) rows in \([0-9.]*\) s (\([0-9.]*\) rows\/s).*/\1 \2 \3/p' "$sum") || true
  if [ "${rows:-}" != "$ROWS" ]; then
    echo "run $tag did not complete $ROWS rows:" >&2; cat "$sum" >&2; exit 1
  fi
  rate=$(awk -v r="$rows" -v t="$secs" -v x="$rate" 'BEGIN { printf "%.2f", ((x < 1000 && t > 0) ? r / t : x) }')
  # The pipeline's own metrics, recorded with the run in the audit trail.
  # pipeline_seconds: first row pulled -> last released (no start-up:
  # opening the audit trail, creating N worker threads, closing sinks).
  fifo=NaN; blocked=NaN; prate=NaN
  if [ "$AUDIT" = on ]; then
    "$BIN" runs -s "$cfg" --run latest > "$OUT/log/$tag.runs" 2>&1 || true
    fifo=$(awk '$1 == "metrics.fifo_wait_mean_ms" { print $2 }' "$OUT/log/$tag.runs")
    blocked=$(awk '$1 == "metrics.source_blocked_seconds" { print $2 }' "$OUT/log/$tag.runs")
    psecs=$(awk '$1 == "metrics.pipeline_seconds" { print $2 }' "$OUT/log/$tag.runs")
    [ -n "$psecs" ] && prate=$(awk -v r="$ROWS" -v t="$psecs" 'BEGIN { printf "%.2f", (t > 0 ? r / t : 0) }')
  fi
  [ "$KEEP_STATE" = 1 ] || rm -rf "$state" # ~6 MB per 2,000-row run
  printf '%s\t%s\t%s\t%s\t%s\t%.4f\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$mode" "$ms" "$rep" "$rate" \
    "$(awk -v r="$ROWS" -v x="$rate" 'BEGIN { print r / x }')" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$rss" "${fifo:-NaN}" "${blocked:-NaN}" \
    "$bg" "$(sha256sum "$sink" | cut -c1-64)" "$prate" >> "$OUT/runs.tsv"
  printf '  %-6s %-5s L=%-3s run %s: %9s rows/s  peak RSS %6.1f MB  other load %s cores\n' "$v" "$mode" "$ms" "$rep" "$rate" \
    "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$bg" >&2
}

printf 'variant\tmode\tL_ms\trep\trows_per_s\tengine_s\twall_s\tpeak_rss_kb\tfifo_wait_mean_ms\tsource_blocked_s\tbg_cores\tsink_sha256\tpipeline_rows_per_s\n' > "$OUT/runs.tsv"
echo "pipelining: $ROWS rows, L = $L ms, audit $AUDIT, $(nproc) cores, N in {$NS}, Release build at $REV" >&2
for v in delay fork; do
  k=1; [ "$v" = fork ] && k=2
  for ms in "$L" 0; do
    for mode in seq $NS; do
      n=$mode; [ "$mode" = seq ] && n=1
      # long runs (>= 10 s at the ideal rate) once, short ones REPEATS times
      reps=$(awk -v r="$ROWS" -v l="$((k * ms))" -v n="$n" -v k="$REPEATS" \
        'BEGIN { print (r * l / n / 1000 >= 10) ? 1 : k }')
      for rep in $(seq 1 "$reps"); do run_one "$v" "$mode" "$ms" "$rep"; done
    done
  done
done

# ------------------------------------------------------------ results
# Per variant and mode (at latency L): median rows/s over the repeats, max
# peak RSS, mean FIFO wait, and OK when every run's sink (both latencies)
# equals the sequential run's sink.
#   ideal      = N / L_row (Little's law; sequential counts as N = 1)
#   efficiency = rows/s / ideal
#   waves      = ROWS / (ceil(ROWS / N) * L_row): with a fixed latency the
#                rows move in waves of N, so a run of ROWS rows cannot beat
#                this (it equals N / L_row when N divides ROWS)
#   ceiling    = median rows/s of the same mode at L = 0 (engine overhead
#                only); capped = min(ideal, ceiling)
awk -F'\t' -v OFS='\t' -v L="$L" -v R="$ROWS" -v NS="seq $NS" '
  NR == 1 { next }
  { k = $1 SUBSEP $2 SUBSEP $3; n[k]++; rate[k, n[k]] = $5; prate[k, n[k]] = $13; wall[k] += $7;
    if ($8 > rss[k]) rss[k] = $8; fifo[k] += $9; blocked[k] += $10; bg[k] += $11;
    shas[$1 SUBSEP $2] = shas[$1 SUBSEP $2] " " $12;
    if ($2 == "seq" && $3 == L && !($1 in ref)) ref[$1] = $12 }
  function median(k,   i, j, t, m, a) {
    m = n[k]; if (!m) return 0; for (i = 1; i <= m; i++) a[i] = rate[k, i] + 0;
    for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  function pmedian(k,   i, j, t, m, a) {
    m = n[k]; if (!m) return 0; for (i = 1; i <= m; i++) a[i] = prate[k, i] + 0;
    for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  END {
    print "variant", "mode", "n", "l_row_ms", "runs", "rows_per_s", "speedup", "ideal_rows_per_s",
          "efficiency", "waves_bound_rows_per_s", "eff_vs_waves", "ceiling_rows_per_s",
          "capped_ideal_rows_per_s", "eff_vs_capped", "peak_rss_kb", "fifo_wait_mean_ms",
          "source_blocked_share", "wall_s_per_run", "bg_cores", "sink",
          "pipeline_rows_per_s", "pipeline_efficiency";
    nm = split(NS, modes, " ");
    split("delay fork", vs, " ");
    for (vi = 1; vi <= 2; vi++) {
      v = vs[vi]; lrow = (v == "fork" ? 2 : 1) * L;
      seqr = median(v SUBSEP "seq" SUBSEP L);
      for (mi = 1; mi <= nm; mi++) {
        m = modes[mi]; k = v SUBSEP m SUBSEP L; if (!n[k]) continue;
        N = (m == "seq") ? 1 : m + 0;
        x = median(k); ideal = N * 1000 / lrow;
        waves = R * 1000 / (int((R + N - 1) / N) * lrow);
        ceil0 = median(v SUBSEP m SUBSEP 0);
        cap = (ceil0 > 0 && ceil0 < ideal) ? ceil0 : ideal;
        ok = "OK"; c = split(shas[v SUBSEP m], s, " "); for (i = 1; i <= c; i++) if (s[i] != ref[v]) ok = "DIFF";
        px = pmedian(k);
        printf "%s\t%s\t%d\t%d\t%d\t%.2f\t%.2f\t%.1f\t%.4f\t%.1f\t%.4f\t%.1f\t%.1f\t%.4f\t%d\t%.3f\t%.3f\t%.2f\t%.2f\t%s\t%.2f\t%.4f\n",
          v, m, N, lrow, n[k], x, x / seqr, ideal, x / ideal, waves, x / waves, ceil0, cap, x / cap,
          rss[k], fifo[k] / n[k], blocked[k] / n[k] / (R / x), wall[k] / n[k], bg[k] / n[k], ok,
          px, px / ideal;
      }
    }
  }' "$OUT/runs.tsv" > "$OUT/results.tsv"

echo
echo "Pipelining: $ROWS rows, L = $L ms per delay, audit $AUDIT, $(nproc) cores (Release build at $REV)"
echo "  delay: CSV -> delay(L) -> CSV;                           L_row = L  = $L ms"
echo "  fork:  CSV -> fork -> 2 x delay(L) -> coalesce -> JSONL; L_row = 2L = $((2 * L)) ms"
echo "         (one worker walks both branches of a row, one after the other)"
echo "  rows/s: median of 'runs' runs (the run's wall time); pipe r/s, eff(p): from the first row"
echo "  pulled to the last released (without start-up: audit trail, N threads);"
echo "  ideal = N / L_row (Little's law),"
echo "  eff = rows/s / ideal; eff/w = against the best $ROWS rows can do in waves of N;"
echo "  L=0 = the same mode with no latency (engine ceiling); eff/cap = against min(ideal, L=0);"
echo "  fifo = mean ms a finished row waits for its predecessors; RSS = peak (max over runs);"
echo "  bg = mean cores used by other processes during the runs"
awk -F'\t' 'NR > 1 {
  if (!hdr++) printf "%-7s %-5s %4s %9s %8s %8s %6s %6s %9s %6s %8s %7s %7s %6s %5s %4s\n",
    "variant", "mode", "runs", "rows/s", "speedup", "ideal", "eff", "eff/w", "pipe r/s", "eff(p)", "L=0", "eff/cap", "RSS MB", "fifo", "bg", "sink";
  printf "%-7s %-5s %4d %9.1f %7.2fx %8.1f %5.1f%% %5.1f%% %9.1f %5.1f%% %8.0f %6.1f%% %7.1f %6.2f %5.2f %4s\n",
    $1, $2, $5, $6, $7, $8, 100 * $9, 100 * $11, $21, 100 * $22, $12, 100 * $14, $15 / 1024, $16, $19, $20 }' "$OUT/results.tsv"
for v in delay fork; do
  if awk -F'\t' -v v="$v" '$1 == v && $20 != "OK" { bad = 1 } END { exit bad }' "$OUT/results.tsv"; then
    echo "sinks ($v): OK — $(awk -F'\t' -v v="$v" '$1 == v { c++ } END { print c }' "$OUT/runs.tsv") runs, byte-identical (sha256 $(awk -F'\t' -v v="$v" '$1 == v && $2 == "seq" { print substr($12, 1, 16); exit }' "$OUT/runs.tsv")...)"
  else
    echo "sinks ($v): DIFF — some run wrote a different sink (see $OUT/runs.tsv)"
  fi
done
echo "results: $OUT/results.tsv (every run: $OUT/runs.tsv)"
[ "$have_time" = 1 ] || echo "peak RSS: /usr/bin/time unavailable; polled VmHWM from /proc (approximate)"

if [ "$AUDIT" != on ]; then
  echo "plot: not rendered for AUDIT=$AUDIT"
elif [ "$have_gnuplot" = 1 ]; then
  gnuplot -e "infile='$OUT/results.tsv'; outfile='docs/pipelining.png'; L=$L; ROWS=$ROWS; CORES=$(nproc)" \
    bench/pipelining.gp
  echo "plot: docs/pipelining.png"
else
  echo "plot skipped: gnuplot is not installed and could not be installed (see $OUT/apt.log)"
fi

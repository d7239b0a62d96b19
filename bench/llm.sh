#!/usr/bin/env bash
# LLM benchmarks (docs/architecture.md §10–11) against the mock server
# (elspeth-mock-llm, docs/mock_llm.md). Release build, audit trail on (the
# default LMDB landscape), a fresh state dir and generated settings per run:
#   CSV -> llm (one chat completion per row, provider openai, base_url the
#   mock) -> CSV, on_error -> JSONL.
#
#  1. little  Little's law: mock latency fixed LAT (50 ms), N in NS
#             (1 8 64 256), pool_size = N, max(ROWS, WAVES x N) rows
#             (N = 1: N1_ROWS): the budget is judged on this sustained
#             run (ADR 0013). Where WAVES x N > ROWS, a run of ROWS rows is
#             added as the start-up reference: opening N connections and
#             the first wave weigh on a run of few waves (budget column
#             "start-up", not judged).
#             rows/s from wall_seconds and from pipeline_seconds (first pull
#             -> last release, no start-up), efficiency = rows/s / (N / L),
#             eff/waves = against ROWS / (ceil(ROWS / N) * L) (a fixed latency
#             moves rows in waves of N), the same N at mock latency 0 (the
#             ceiling of engine + audit + mock on this machine), peak in
#             flight, calls per row, peak threads, peak RSS. Budget:
#             efficiency (pipeline) >= 90 % up to N = 256.
#  limits     capacity control against provider-like limits, today's AIMD
#             and the capacity controller side by side: runs bench/limits.sh
#             (see there; alone, as it needs the machine to itself).
#  2. flaky   mock --schedule SCHEDULE (20:10,5:10: 20 req/s for 10 s, then
#             5 req/s for 10 s, repeating), latency FLAKY_LAT (100 ms),
#             FLAKY_ROWS rows, N = pool_size = FLAKY_N (64); AIMD on (the
#             defaults: min 0, max 5000 ms, x2, -50 ms) and AIMD off
#             (backoff_multiplier 1, min = max dispatch delay 50 ms: a fixed
#             pool paced for the high phase, 20 req/s, that retries a 429
#             after 50 ms; with no delay at all it would spin on 429s at
#             tens of thousands of requests a second). Definitions (per run, mock reset
#             right before elspeth starts, so the schedule starts with it):
#               capacity C  = what the server would have admitted to a
#                             perfect client and answered within the run's
#                             wall time T: the mock's rolling window admits
#                             rate(k) requests at once at each whole second k
#                             (counted from the reset), so C = sum of rate(k)
#                             over k = 0 .. floor(T - latency)
#               admitted A  = requests the mock admitted (passed capacity)
#               ok          = 200 answers (useful answers)
#               goodput     = ok / C: the share of the server's capacity that
#                             became useful answers (budget >= 85 %)
#               ok/admitted = the share of admitted requests that became
#                             useful answers (no faults injected: ~100 %)
#               429 share   = 429 answers / all chat requests
#               ideal_s     = when a perfect client could finish: the
#                             second k at which C reaches FLAKY_ROWS, + latency
#             plus the capacity use per phase (admitted / rate over the whole
#             seconds of the 20 req/s and of the 5 req/s phases).
#  3. many    N = pool_size = MANY_N (1024), mock latency MANY_LAT (1 s),
#             MANY_ROWS (4096) rows: rows/s and efficiency vs N / L, the
#             elspeth process's peak thread count (sampled from
#             /proc/PID/status every 20 ms), peak RSS (GNU time -v), the
#             mock's peak concurrency.
#
# Prints a table per benchmark; writes bench/out/llm/{little,flaky,many}.tsv
# (little-runs.tsv: every run; flaky-seconds.tsv: admissions per second of
# both modes), each run's settings, events, `runs` output and mock stats
# under bench/out/llm/{settings,log}/.
#
# Usage: bench/llm.sh [little] [flaky] [many]          (default: all three)
# Environment: NS="1 8 64 256" ROWS=2000 WAVES=64 N1_ROWS=200 LAT=50 REPEATS=3
#              FLAKY_ROWS=2000 FLAKY_N=64 FLAKY_LAT=100 SCHEDULE=20:10,5:10
#              MANY_N=1024 MANY_ROWS=4096 MANY_LAT=1000
#              QUIET_MAX=1.0 QUIET_WAIT=10 (wait for other load <= QUIET_MAX
#              cores before each run, at most QUIET_WAIT s); KEEP_STATE=1
#              keeps every run's audit trail (else deleted after reading it)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NS=${NS:-"1 8 64 256"}
ROWS=${ROWS:-2000}
WAVES=${WAVES:-64}
N1_ROWS=${N1_ROWS:-200}
LAT=${LAT:-50}
REPEATS=${REPEATS:-3}
FLAKY_ROWS=${FLAKY_ROWS:-2000}
FLAKY_N=${FLAKY_N:-64}
FLAKY_LAT=${FLAKY_LAT:-100}
SCHEDULE=${SCHEDULE:-20:10,5:10}
MANY_N=${MANY_N:-1024}
MANY_ROWS=${MANY_ROWS:-4096}
MANY_LAT=${MANY_LAT:-1000}
QUIET_MAX=${QUIET_MAX:-1.0}
QUIET_WAIT=${QUIET_WAIT:-10}
KEEP_STATE=${KEEP_STATE:-0}
WHICH=${*:-little flaky many}
if [ "$WHICH" = limits ]; then exec "$(dirname "$0")/limits.sh"; fi
OUT=$ROOT/bench/out/llm
mkdir -p "$OUT"/{bin,log,settings,state,sink}

source bench/lib.sh
for c in jq:jq curl:curl /usr/bin/time:time; do
  ensure_pkg "${c%%:*}" "${c#*:}" || { echo "bench/llm.sh needs ${c%%:*}" >&2; exit 1; }
done

llm_bench_bins

# ------------------------------------------------------------ helpers
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# A FIFO held open read-write: `read -t` on it is a sleep without a fork.
rm -f "$OUT/.tick"; mkfifo "$OUT/.tick"; exec {TICK}<>"$OUT/.tick"

trap 'stop_mock; rm -f "$OUT/.tick"' EXIT

# settings TAG INPUT POOL EXTRA: writes OUT/settings/TAG.yaml; EXTRA is
# more llm options, e.g. "backoff_multiplier: 1, max_dispatch_delay_ms: 0"
settings() {
  local tag=$1 in=$2 pool=$3 extra=${4:-}
  [ -n "$extra" ] && extra=", $extra"
  cat > "$OUT/settings/$tag.yaml" <<YAML
# bench/llm.sh: CSV -> llm (mock at 127.0.0.1:$PORT) -> CSV
source:
  plugin: csv
  on_success: ask
  options:
    path: $in
    schema: {mode: fixed, fields: ["id: int", "text: str"]}
    on_validation_failure: discard
transforms:
  - name: classify
    plugin: llm
    input: ask
    on_success: out
    on_error: errors
    options: {provider: openai, model: mock-1, base_url: "http://127.0.0.1:$PORT/v1",
              api_key: bench, template: "Classify this ticket: {{ row.text }}",
              response_field: label, pool_size: $pool$extra}
sinks:
  out: {plugin: csv, options: {path: "$OUT/sink/$tag.csv"}}
  errors: {plugin: json, options: {path: "$OUT/sink/$tag-errors.jsonl", format: jsonl}}
landscape: {url: "lmdb://$OUT/state/$tag"}
YAML
}

# run_elspeth TAG N EXPECTED_ROWS: resets the mock, runs OUT/settings/TAG.yaml
# with N rows in flight, sampling the elspeth process's Threads and VmHWM
# every 20 ms. Sets R_ROWS R_WALL R_PIPE R_PEAKIF R_THREADS R_RSS (KiB, GNU
# time) R_HWM (KiB, sampled) R_CPU (elspeth user+sys s) R_BG (other cores)
# R_CALLS R_OK R_CAP (elspeth's metrics.calls) and leaves the mock's stats
# in OUT/log/TAG.stats.json.
run_elspeth() {
  local tag=$1 n=$2 want=$3 log="$OUT/log/$1" tpid epid= k v rest b0 b1 m0 m1 t0 t1 calls
  rm -rf "$OUT/state/$tag" "$OUT/sink/$tag.csv" "$OUT/sink/$tag-errors.jsonl"
  quiet_gate
  R_THREADS=0; R_HWM=0
  mock POST /admin/reset >/dev/null
  b0=$(busy_ticks); m0=$(proc_ticks "$MOCK_PID"); t0=$(date +%s.%N)
  /usr/bin/time -v -o "$log.time" "$BIN" run -s "$OUT/settings/$tag.yaml" --execute \
    --max-rows-in-flight "$n" --format json > "$log.jsonl" 2> "$log.err" &
  tpid=$!
  while kill -0 "$tpid" 2>/dev/null; do
    [ -n "$epid" ] || read -r epid rest 2>/dev/null < "/proc/$tpid/task/$tpid/children" || true
    if [ -n "$epid" ]; then
      while read -r k v rest; do
        case $k in
          Threads:) if [ "$v" -gt "$R_THREADS" ]; then R_THREADS=$v; fi ;;
          VmHWM:) if [ "$v" -gt "$R_HWM" ]; then R_HWM=$v; fi ;;
        esac
      done 2>/dev/null < "/proc/$epid/status" || true
    fi
    read -r -t 0.02 -u "$TICK" rest || true
  done
  if ! wait "$tpid"; then echo "run $tag failed:" >&2; cat "$log.err" >&2; exit 1; fi
  t1=$(date +%s.%N); b1=$(busy_ticks); m1=$(proc_ticks "$MOCK_PID")
  mock GET /admin/stats > "$log.stats.json"
  read -r R_ROWS R_WALL R_PIPE R_PEAKIF < <(jq -r 'select(.event == "run_completed") |
    "\(.succeeded) \(.wall_seconds) \(.pipeline_seconds) \(.peak_in_flight)"' "$log.jsonl")
  if [ "${R_ROWS:-}" != "$want" ]; then
    echo "run $tag: $R_ROWS of $want rows succeeded:" >&2; tail -2 "$log.jsonl" >&2; exit 1
  fi
  R_RSS=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$log.time")
  R_CPU=$(awk -F': *' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$log.time")
  R_BG=$(awk -v a="$b0" -v b="$b1" -v m="$((m1 - m0))" -v hz="$HZ" -v own="$R_CPU" -v t0="$t0" -v t1="$t1" \
    'BEGIN { x = ((b - a - m) / hz - own) / (t1 - t0); printf "%.2f", (x < 0 ? 0 : x) }')
  "$BIN" runs --database "$OUT/state/$tag" --run 1 > "$log.runs" 2>&1
  calls=$(awk '$1 == "metrics.calls" { $1 = ""; print }' "$log.runs")
  read -r R_CALLS R_OK R_CAP < <(jq -r '"\(.total // 0) \(.ok // 0) \(.capacity // 0)"' <<<"$calls")
  du -sk "$OUT/state/$tag" | cut -f1 > "$log.state_kb"
  [ "$KEEP_STATE" = 1 ] || rm -rf "$OUT/state/$tag"
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench/llm.sh: $(nproc) cores, load average $LOAD0 at start, Release build at $REV; running: $WHICH" >&2

# ------------------------------------------------------------ 1. little
bench_little() {
  local n rows reps rep tag lat c cases=
  # n:rows cases: the sustained run of each N, then the start-up references
  for n in $NS; do
    rows=$ROWS; [ "$n" = 1 ] && rows=$N1_ROWS
    [ "$n" != 1 ] && [ $((WAVES * n)) -gt "$ROWS" ] && rows=$((WAVES * n))
    cases="$cases $n:$rows"
  done
  for n in $NS; do
    [ "$n" != 1 ] && [ $((WAVES * n)) -gt "$ROWS" ] && cases="$cases $n:$ROWS"
  done
  start_mock --latency "fixed:$LAT"
  printf 'n\tlat_ms\trep\trows\twall_s\tpipeline_s\trows_per_s_wall\trows_per_s_pipeline\tpeak_in_flight\tcalls\tcalls_ok\tmock_peak_concurrency\tpeak_threads\tpeak_rss_kb\telspeth_cpu_s\tbg_cores\n' > "$OUT/little-runs.tsv"
  for lat in "$LAT" 0; do
    mock POST /admin/config "{\"latency\": \"fixed:$lat\"}" >/dev/null
    for c in $cases; do
      n=${c%:*}; rows=${c#*:}
      # long runs (>= 10 s at the ideal rate) once, short ones REPEATS times
      reps=$(awk -v r="$rows" -v l="$lat" -v n="$n" -v k="$REPEATS" 'BEGIN { print (r * l / n / 1000 >= 10) ? 1 : k }')
      for rep in $(seq 1 "$reps"); do
        tag="little-N$n-R$rows-L$lat-r$rep"
        settings "$tag" "$(mock_input "$rows")" "$n"
        run_elspeth "$tag" "$n" "$rows"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$lat" "$rep" "$rows" \
          "$R_WALL" "$R_PIPE" "$(awk -v r="$rows" -v t="$R_WALL" 'BEGIN { print r / t }')" \
          "$(awk -v r="$rows" -v t="$R_PIPE" 'BEGIN { print r / t }')" "$R_PEAKIF" "$R_CALLS" "$R_OK" \
          "$(jq .peak_concurrency "$OUT/log/$tag.stats.json")" "$R_THREADS" "$R_RSS" "$R_CPU" "$R_BG" >> "$OUT/little-runs.tsv"
        printf '  little N=%-4s L=%-3s run %s: %5s rows %8.1f rows/s (pipeline)  threads %4s  other load %s cores\n' \
          "$n" "$lat" "$rep" "$rows" "$(awk -v r="$rows" -v t="$R_PIPE" 'BEGIN { print r / t }')" "$R_THREADS" "$R_BG" >&2
      done
    done
  done
  stop_mock
  # Per case (N, rows) at L: the median run by pipeline rows/s; ceiling =
  # the same case's median at L = 0. Only sustained cases are judged.
  awk -F'\t' -v OFS='\t' -v L="$LAT" -v CASES="$cases" -v ROWS="$ROWS" -v WAVES="$WAVES" '
    NR == 1 { next }
    { k = $1 SUBSEP $4 SUBSEP $2; c = ++cnt[k]; line[k, c] = $0; val[k, c] = $8 }
    function med(k,   i, j, t, m, idx) { m = cnt[k]; for (i = 1; i <= m; i++) idx[i] = i;
      for (i = 2; i <= m; i++) for (j = i; j > 1 && val[k, idx[j - 1]] > val[k, idx[j]]; j--) { t = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = t }
      return idx[int((m + 1) / 2)] }
    END {
      print "n", "rows", "runs", "rows_per_s_wall", "rows_per_s_pipeline", "ideal_rows_per_s", "eff_wall",
            "eff_pipeline", "waves_bound_rows_per_s", "eff_vs_waves", "ceiling_L0_rows_per_s", "peak_in_flight",
            "mock_peak_concurrency", "calls_per_row", "peak_threads", "peak_rss_kb", "elspeth_cpu_s", "bg_cores", "budget";
      m = split(CASES, cs, " ");
      for (i = 1; i <= m; i++) {
        split(cs[i], nr, ":"); n = nr[1]; r = nr[2];
        k = n SUBSEP r SUBSEP L; if (!cnt[k]) continue;
        split(line[k, med(k)], f, "\t");
        ideal = n * 1000 / L; waves = f[4] * 1000 / (int((f[4] + n - 1) / n) * L);
        k0 = n SUBSEP r SUBSEP 0; ceil0 = 0; if (cnt[k0]) { split(line[k0, med(k0)], g, "\t"); ceil0 = g[8] }
        startup = n > 1 && r == ROWS && WAVES * n > ROWS;
        printf "%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.4f\t%.4f\t%.1f\t%.4f\t%.1f\t%d\t%d\t%.3f\t%d\t%d\t%.2f\t%.2f\t%s\n",
          n, f[4], cnt[k], f[7], f[8], ideal, f[7] / ideal, f[8] / ideal, waves, f[8] / waves, ceil0,
          f[9], f[12], f[10] / f[4], f[13], f[14], f[15], f[16],
          (startup ? "start-up" : f[8] / ideal >= 0.9 ? "PASS" : "MISS") }
    }' "$OUT/little-runs.tsv" > "$OUT/little.tsv"
  echo
  echo "1. Little's law: CSV -> llm -> CSV, mock latency fixed $LAT ms, pool_size = N, audit on"
  echo "   rows/s from wall_seconds (incl. start-up) and pipeline_seconds (first pull -> last release);"
  echo "   ideal = N / $LAT ms; eff = rows/s / ideal; eff/w = vs ROWS / (ceil(ROWS/N) x L) (waves of N);"
  echo "   L=0 = same N at mock latency 0 (engine + audit + mock ceiling); median of 'runs' runs;"
  echo "   judged: max($ROWS, $WAVES x N) rows; 'start-up': $ROWS rows where that is fewer (ADR 0013)"
  awk -F'\t' 'NR > 1 {
    if (!hdr++) printf "%5s %5s %4s %9s %9s %8s %7s %7s %7s %9s %6s %6s %6s %7s %7s %5s %s\n",
      "N", "rows", "runs", "rows/s(w)", "rows/s(p)", "ideal", "eff(w)", "eff(p)", "eff/w", "L=0 r/s", "peakIF",
      "mockIF", "calls", "threads", "RSS MB", "bg", "budget>=90%";
    printf "%5d %5d %4d %9.1f %9.1f %8.0f %6.1f%% %6.1f%% %6.1f%% %9.0f %6d %6d %6.2f %7d %7.1f %5.2f %s\n",
      $1, $2, $3, $4, $5, $6, 100 * $7, 100 * $8, 100 * $10, $11, $12, $13, $14, $15, $16 / 1024, $18, $19 }' "$OUT/little.tsv"
  [ "$(awk -F'\t' '$1 == 1 { print $2 }' "$OUT/little.tsv")" != "$ROWS" ] &&
    echo "   (N = 1 ran $N1_ROWS rows: $N1_ROWS x $LAT ms = $((N1_ROWS * LAT / 1000)) s)"
  echo "   $OUT/little.tsv (every run: little-runs.tsv)"
}

# ------------------------------------------------------------ 2. flaky
bench_flaky() {
  local mode extra tag
  start_mock --latency "fixed:$FLAKY_LAT" --schedule "$SCHEDULE"
  printf 'mode\trows\twall_s\tpipeline_s\tideal_s\tcalls\tcalls_per_row\trequests\tstatus_429\tshare_429\tadmitted\tok\tok_per_admitted\tcapacity\tgoodput\tadmitted_per_capacity\tuse_high_phase\tuse_low_phase\tmock_peak_concurrency\tpeak_threads\tpeak_rss_kb\telspeth_cpu_s\tstate_mb\tbg_cores\tbudget\n' > "$OUT/flaky.tsv"
  for mode in off on; do
    tag="flaky-aimd-$mode"
    # capacity_control: aimd — this section measures ADR 0010's throttle
    # (bench/limits.sh compares it with the default controller).
    extra="capacity_control: aimd"; [ "$mode" = off ] && extra="$extra, backoff_multiplier: 1, min_dispatch_delay_ms: 50, max_dispatch_delay_ms: 50"
    settings "$tag" "$(mock_input "$FLAKY_ROWS")" "$FLAKY_N" "$extra"
    echo "  flaky AIMD $mode: $FLAKY_ROWS rows at N = $FLAKY_N (takes minutes) ..." >&2
    run_elspeth "$tag" "$FLAKY_N" "$FLAKY_ROWS"
    jq -r --arg sched "$SCHEDULE" --arg mode "$mode" --argjson rows "$FLAKY_ROWS" --argjson wall "$R_WALL" \
      --argjson pipe "$R_PIPE" --argjson calls "$R_CALLS" --argjson lat "$FLAKY_LAT" --argjson thr "$R_THREADS" \
      --argjson rss "$R_RSS" --argjson cpu "$R_CPU" --argjson bg "$R_BG" --argjson skb "$(cat "$OUT/log/$tag.state_kb")" '
      ($sched | split(",") | map(split(":") | map(tonumber))) as $ph
      | ($ph | map(.[1]) | add) as $cycle
      # the rate in force at time t (s since the reset)
      | def rate(t): (t % $cycle) as $u | reduce $ph[] as $p ({at: 0, r: null};
            if .r == null and $u < .at + $p[1] then .r = $p[0] else .at += $p[1] end) | .r;
      # capacity: the rolling window admits rate(k) at once at each whole
      # second k, so a perfect client gets rate(k) requests at second k;
      # those of the seconds k <= T - latency can be answered by time T
      def cap(T): [range(0; ((T - $lat / 1000) | floor) + 1)] | map(rate(.)) | add // 0;
      # when a perfect client has its last answer: the second its
      # admissions reach $rows, plus one latency
      def ideal: first(foreach range(0; 1e7) as $k (0; . + rate($k);
          if . >= $rows then $k else empty end)) + $lat / 1000;
      (.by_status["200"] // 0) as $ok | (.by_status["429"] // 0) as $r429 | cap($wall) as $C
      | (.admitted_per_second | to_entries | map(select(.key + 1 <= $wall))) as $secs
      | ($secs | map(select(rate(.key) == $ph[0][0]))) as $hi
      | ($secs | map(select(rate(.key) != $ph[0][0]))) as $lo
      | def use(s): if (s | length) == 0 then 0 else (s | map(.value) | add) / (s | map(rate(.key)) | add) end;
      [$mode, $rows, $wall, $pipe, ideal, $calls, ($calls / $rows), .requests, $r429, ($r429 / .requests),
       .admitted, $ok, ($ok / .admitted), $C, ($ok / $C), (.admitted / $C), use($hi), use($lo),
       .peak_concurrency, $thr, $rss, $cpu, ($skb / 1024), $bg, (if $ok / $C >= 0.85 then "PASS" else "MISS" end)]
      | @tsv' "$OUT/log/$tag.stats.json" >> "$OUT/flaky.tsv"
  done
  stop_mock
  # admissions per second of both runs, side by side, with the rate in force
  jq -rn --arg sched "$SCHEDULE" --slurpfile off "$OUT/log/flaky-aimd-off.stats.json" \
    --slurpfile on "$OUT/log/flaky-aimd-on.stats.json" '
    ($sched | split(",") | map(split(":") | map(tonumber))) as $ph | ($ph | map(.[1]) | add) as $cycle
    | def rate(t): (t % $cycle) as $u | reduce $ph[] as $p ({at: 0, r: null};
          if .r == null and $u < .at + $p[1] then .r = $p[0] else .at += $p[1] end) | .r;
    "second\trate\tadmitted_aimd_off\tadmitted_aimd_on",
    ([($off[0].admitted_per_second | length), ($on[0].admitted_per_second | length)] | max) as $n
    | range(0; $n) | [., rate(.), ($off[0].admitted_per_second[.] // ""), ($on[0].admitted_per_second[.] // "")] | @tsv' \
    > "$OUT/flaky-seconds.tsv"
  echo
  echo "2. Flaky server: mock --schedule $SCHEDULE (req/s:seconds, repeating), latency $FLAKY_LAT ms, $FLAKY_ROWS rows, N = pool_size = $FLAKY_N"
  echo "   AIMD on = defaults (min 0, max 5000 ms, x2, -50 ms); off = backoff_multiplier 1, max_dispatch_delay_ms 0"
  echo "   capacity = sum of the schedule's rate over the whole seconds k <= wall - latency (what a perfect"
  echo "   client could have had admitted and answered); goodput = 200 answers / capacity;"
  echo "   ok/adm = 200 answers / admitted; 429 share = 429 answers / all requests;"
  echo "   use hi/lo = admitted / rate over the whole seconds of the high / low phases; ideal = perfect client"
  awk -F'\t' 'NR > 1 {
    if (!hdr++) printf "%-4s %5s %7s %7s %7s %6s %7s %6s %7s %7s %8s %8s %6s %6s %6s %7s %6s %5s %s\n",
      "AIMD", "rows", "wall s", "ideal s", "calls", "c/row", "429", "429%", "admit", "ok/adm", "capacity",
      "goodput", "use hi", "use lo", "mockIF", "thr", "RSS MB", "bg", "budget>=85%";
    printf "%-4s %5d %7.1f %7.1f %7d %6.2f %7d %5.1f%% %7d %6.1f%% %8.0f %7.1f%% %5.1f%% %5.1f%% %6d %7d %6.1f %5.2f %s\n",
      $1, $2, $3, $5, $6, $7, $9, 100 * $10, $11, 100 * $13, $14, 100 * $15, 100 * $17, 100 * $18, $19, $20, $21 / 1024, $24, $25 }' "$OUT/flaky.tsv"
  echo "   $OUT/flaky.tsv (admissions per second: flaky-seconds.tsv)"
}

# ------------------------------------------------------------ 3. many
bench_many() {
  local tag="many-N$MANY_N"
  start_mock --latency "fixed:$MANY_LAT"
  settings "$tag" "$(mock_input "$MANY_ROWS")" "$MANY_N"
  run_elspeth "$tag" "$MANY_N" "$MANY_ROWS"
  stop_mock
  printf 'n\tpool_size\tlat_ms\trows\twall_s\tpipeline_s\trows_per_s_wall\trows_per_s_pipeline\tideal_rows_per_s\teff_wall\teff_pipeline\tpeak_in_flight\tmock_peak_concurrency\tcalls_per_row\tpeak_threads\tpeak_rss_kb\tpeak_vmhwm_sampled_kb\telspeth_cpu_s\tbg_cores\n' > "$OUT/many.tsv"
  awk -v OFS='\t' -v n="$MANY_N" -v l="$MANY_LAT" -v r="$MANY_ROWS" -v w="$R_WALL" -v p="$R_PIPE" \
    -v pif="$R_PEAKIF" -v mif="$(jq .peak_concurrency "$OUT/log/$tag.stats.json")" -v c="$R_CALLS" \
    -v thr="$R_THREADS" -v rss="$R_RSS" -v hwm="$R_HWM" -v cpu="$R_CPU" -v bg="$R_BG" 'BEGIN {
    ideal = n * 1000 / l;
    printf "%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.4f\t%.4f\t%d\t%d\t%.3f\t%d\t%d\t%d\t%.2f\t%.2f\n",
      n, n, l, r, w, p, r / w, r / p, ideal, r / w / ideal, r / p / ideal, pif, mif, c / r, thr, rss, hwm, cpu, bg }' >> "$OUT/many.tsv"
  echo
  echo "3. Many waiting rows: N = pool_size = $MANY_N, mock latency fixed $MANY_LAT ms, $MANY_ROWS rows, audit on"
  echo "   threads = peak of /proc/PID/status Threads (sampled every 20 ms); RSS = GNU time peak"
  awk -F'\t' 'NR > 1 {
    printf "%5s %5s %8s %8s %9s %9s %8s %7s %7s %6s %6s %6s %7s %7s %6s %5s\n", "N", "rows", "wall s", "pipe s",
      "rows/s(w)", "rows/s(p)", "ideal", "eff(w)", "eff(p)", "peakIF", "mockIF", "calls", "threads", "RSS MB", "cpu s", "bg";
    printf "%5d %5d %8.2f %8.2f %9.1f %9.1f %8.0f %6.1f%% %6.1f%% %6d %6d %6.2f %7d %7.1f %6.2f %5.2f\n",
      $1, $4, $5, $6, $7, $8, $9, 100 * $10, 100 * $11, $12, $13, $14, $15, $16 / 1024, $18, $19 }' "$OUT/many.tsv"
  echo "   $OUT/many.tsv"
}

for b in $WHICH; do
  case $b in
    little) bench_little ;;
    flaky) bench_flaky ;;
    many) bench_many ;;
    limits) echo "bench/llm.sh limits runs alone: bench/llm.sh limits" >&2; exit 2 ;;
    *) echo "unknown benchmark '$b' (little, flaky, many, limits)" >&2; exit 2 ;;
  esac
done
echo
echo "load average: $LOAD0 at start, $(cut -d' ' -f1-3 /proc/loadavg) at the end ($(nproc) cores)"

#!/usr/bin/env bash
# Capacity control against provider-like limits (docs/architecture.md §10–11,
# ADR 0016). The mock (docs/mock_llm.md) is set up as the real limiters
# behave — refused requests count against the window (OpenAI), hints in
# each provider's style, x-ratelimit headers — and it computes, itself,
# what a perfect client could have had admitted in the same time
# (capacity) and the goodput = useful answers / capacity. Each scenario
# runs CSV -> llm -> CSV (audit on, Release build) once per controller
# MODE and REPEATS times; the table shows medians:
#
#   flaky       20 <-> 5 req/s every 10 s, 1 s rolling window, refused
#               requests count, latency 100 ms, no hints
#   flaky-hint  the same with exact retry-after-ms hints
#   cap56       at most 56 requests at once, pool 64, latency lognormal
#               (median 150 ms, sigma 0.5), no rate limit; 256 rows in
#               flight (N), so that the ordered release's window is not
#               what bounds the requests in flight (with N = 64 a slow
#               head row holds up to 63 finished ones: a client that knows
#               the cap gets ~85 %, see docs/performance.md)
#   rpm600      600 requests/minute in a fixed 60 s window, x-ratelimit-*
#               headers (OpenAI), enforced per second too as OpenAI says
#               it may be (--grain-ms 1000: 10 in any second of the grid),
#               latency 100 ms
#   rpm600-window  the same without the per-second grain: a client that
#               bursts the minute's budget wins there (not in the default
#               list: it shows what pacing costs where bursts are allowed)
#   none        no limit, latency 50 ms, N = pool = 256 (as bench/llm.sh little)
#
# Columns: goodput (the mock's; for `none`, which has no capacity to
# speak of: rows/s over Little's law N / L, from the first row pulled to the
# last released), refused share (refused / arrivals),
# attempts per row (arrivals / rows), peak in flight (the mock's peak
# concurrency), connections accepted, wall seconds.
#
# Usage: bench/limits.sh [SCENARIO...]        (default: all)
# Environment: N_cap56=256 (rows in flight of cap56)
#              MODES="aimd adaptive" (the controllers to compare, the
#              llm option capacity_control: aimd = the dispatch-delay AIMD
#              with its defaults, adaptive = the capacity controller)
#              REPEATS=3; ROWS_<scenario> to change a scenario's rows.
#              BASE_BIN=path/to/elspeth with mode `base` in MODES: the
#              capacity controller of another build (e.g. the commit
#              before a change), run in turn with the others.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODES=${MODES:-aimd adaptive}
REPEATS=${REPEATS:-3}
QUIET_MAX=${QUIET_MAX:-1.0}
QUIET_WAIT=${QUIET_WAIT:-10}
WHICH=${*:-flaky flaky-hint cap56 rpm600 none}
OUT=$ROOT/bench/out/limits
mkdir -p "$OUT"/{bin,log,settings,state,sink}
source bench/lib.sh
for c in jq:jq curl:curl; do
  ensure_pkg "${c%%:*}" "${c#*:}" || { echo "bench/limits.sh needs ${c%%:*}" >&2; exit 1; }
done
llm_bench_bins

trap stop_mock EXIT

# Controller options per mode (the llm transform's options).
mode_opts() {
  case $1 in
    aimd) echo "capacity_control: aimd" ;;
    adaptive|base) echo "capacity_control: adaptive" ;;
    *) echo "unknown mode $1" >&2; exit 2 ;;
  esac
}

settings() { # TAG INPUT POOL EXTRA
  local tag=$1 in=$2 pool=$3 extra=${4:-}
  [ -n "$extra" ] && extra=", $extra"
  cat > "$OUT/settings/$tag.yaml" <<YAML
source:
  plugin: csv
  on_success: ask
  options: {path: $in, on_validation_failure: discard}
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

# scenario NAME: sets ROWS, POOL, N, MOCK_ARGS
scenario() {
  LITTLE_MS=0
  case $1 in
    flaky) ROWS=${ROWS_flaky:-500}; POOL=64; N=64
      MOCK_ARGS="--latency fixed:100 --schedule 20:10,5:10 --refused-weight 1 --hint none --series-ms 500" ;;
    flaky-hint) ROWS=${ROWS_flaky_hint:-500}; POOL=64; N=64
      MOCK_ARGS="--latency fixed:100 --schedule 20:10,5:10 --refused-weight 1 --hint ms --series-ms 500" ;;
    cap56) ROWS=${ROWS_cap56:-3000}; POOL=64; N=${N_cap56:-256}
      MOCK_ARGS="--latency lognormal:150:0.5 --max-concurrent 56 --hint none" ;;
    rpm600) ROWS=${ROWS_rpm600:-900}; POOL=64; N=64
      MOCK_ARGS="--latency fixed:100 --rpm 600 --limiter fixed --window-ms 60000 --grain-ms 1000 --ratelimit-headers openai --hint none" ;;
    rpm600-window) ROWS=${ROWS_rpm600:-900}; POOL=64; N=64
      MOCK_ARGS="--latency fixed:100 --rpm 600 --limiter fixed --window-ms 60000 --ratelimit-headers openai --hint none" ;;
    none) ROWS=${ROWS_none:-20000}; POOL=256; N=256; LITTLE_MS=50
      MOCK_ARGS="--latency fixed:50" ;;
    *) echo "unknown scenario $1" >&2; exit 2 ;;
  esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf 'capacity control: %s, Release build at %s, %s runs each (medians)\n' "$WHICH" "$REV" "$REPEATS"
printf '%-13s %-9s %8s %8s %9s %7s %6s %7s\n' scenario mode goodput refused att/row peak_if conns wall_s
: > "$OUT/runs.tsv"
for sc in $WHICH; do
  scenario "$sc"
  in=$(mock_input "$ROWS")
  for mode in $MODES; do
    for r in $(seq "$REPEATS"); do
      # shellcheck disable=SC2086
      start_mock $MOCK_ARGS
      tag="$sc-$mode-$r"
      settings "$tag" "$in" "$POOL" "$(mode_opts "$mode")"
      rm -rf "$OUT/state/$tag"
      quiet_gate
      mock POST /admin/reset > /dev/null
      t0=$(date +%s.%N)
      bin=$BIN
      if [ "$mode" = base ]; then bin=${BASE_BIN:?mode base needs BASE_BIN}; fi
      "$bin" run -s "$OUT/settings/$tag.yaml" --execute --max-rows-in-flight "$N" \
        --format json > "$OUT/log/$tag.jsonl" 2> "$OUT/log/$tag.err" || true
      t1=$(date +%s.%N)
      mock GET /admin/stats > "$OUT/log/$tag.stats.json"
      # the admitted rate against the limit, per 500 ms (the plot)
      mock GET /admin/series | jq -r '. as $s | range(0; $s.t_ms | length) |
        [($s.t_ms[.] / 1000), ($s.admitted[.] * 1000 / $s.interval_ms),
         ($s.refused[.] * 1000 / $s.interval_ms), ($s.rate_limit[.] // "NaN")] | @tsv' \
        > "$OUT/log/$tag.series.tsv" || true
      stop_mock
      ok=$(wc -l < "$OUT/sink/$tag.csv" 2>/dev/null || echo 1)
      jq -r --arg sc "$sc" --arg mode "$mode" --argjson rows "$ROWS" \
        --arg wall "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" --argjson out "$((ok - 1))" \
        --argjson little "$LITTLE_MS" --argjson n "$N" \
        --argjson pipe "$(jq -s 'map(select(.event == "run_completed"))[0].pipeline_seconds // 1e9' "$OUT/log/$tag.jsonl")" \
        '[$sc, $mode,
          (if $little > 0 then ($out / $pipe) / ($n * 1000 / $little) else (.goodput // 0) end), ((.refused | add) / ([.arrivals, 1] | max)),
          (.arrivals / $rows), .peak_concurrency, .connections, ($wall | tonumber), $out] | @tsv' \
        "$OUT/log/$tag.stats.json" >> "$OUT/runs.tsv"
      rm -rf "$OUT/state/$tag"
    done
    awk -F'\t' -v sc="$sc" -v m="$mode" '$1 == sc && $2 == m' "$OUT/runs.tsv" > "$OUT/.cur"
    row=()
    for col in 3 4 5 6 7 8; do row+=("$(cut -f"$col" "$OUT/.cur" | median)"); done
    printf '%-13s %-9s %7.1f%% %7.1f%% %9.3f %7.0f %6.0f %7.1f\n' "$sc" "$mode" \
      "$(awk -v v="${row[0]}" 'BEGIN { print v * 100 }')" \
      "$(awk -v v="${row[1]}" 'BEGIN { print v * 100 }')" "${row[2]}" "${row[3]}" "${row[4]}" "${row[5]}"
  done
done
echo "every run: $OUT/runs.tsv (scenario mode goodput refused att/row peak conns wall rows_out)"
# The plot: the first repeat of each mode of the flaky scenario.
if [[ " $WHICH " == *" flaky "* ]] && ensure_pkg gnuplot gnuplot-nox; then
  gnuplot -e "dir='$OUT/log'; outfile='docs/capacity-flaky.png'; modes='$MODES'" bench/limits.gp &&
    echo "plot: docs/capacity-flaky.png"
fi

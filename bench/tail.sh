#!/usr/bin/env bash
# Heavy tails (docs/adr/0029-heavy-tails.md, docs/performance.md): the
# README demo's pipeline (examples/llm_classify: 3,000 tickets -> llm ->
# gate -> CSV/JSONL, audit on, Release build) against the bundled mock set
# up as the demo sets it (examples/llm_classify/mock.args: 56 concurrent,
# lognormal latency median 150 ms sigma 0.4, 2 % 500s, 0.3 % cut answers,
# seed 7), side by side in one run:
#
#   N       rows in flight: NS (16 64 256)
#   stalls  none; 1 % of requests held 3 s then closed unanswered; the
#           same for 30 s (the demo's timeout_seconds is 10: a stall of
#           30 s ends at the client's timeout)
#   mode    old:   max_completed_waiting 2N, tail_timeout_factor 0, no
#                  hedge (the defaults before the heavy-tail work)
#           cut:   64 MiB waiting budget, tail deadline at 3 x p99, no
#                  hedge (the defaults before hedge: idle)
#           new:   the defaults (cut + hedge: idle: a copy after 1.5 x p99
#                  only into a slot nothing else wants)
#           hedge: hedge: true (at N = 64 only; it costs requests)
#
# The bound is what the server itself accounts: its slot-seconds (each
# admitted request's time in a slot, until answered, stalled out, or
# abandoned by the client; the mock's slot_seconds) / 56 slots. frac =
# bound / the run's own wall time (the run_completed event). Also: the
# share the run's summary prints from the client's side (server_capacity
# _used), peak RSS, refusals, tail cuts, hedges.
#
# What the mock does not model: a provider's own queueing (a stalled
# request here holds a slot but slows nobody else), network latency and
# loss (loopback), HTTP/2 (the mock speaks HTTP/1.1: each request in
# flight is a connection), per-token latency (an answer's time does not
# grow with its length), and limits shared with other clients.
#
# Usage: bench/tail.sh                    (all)
# Environment: NS="16 64 256" STALLS="0 3000 30000" MODES="old new hedge"
#              REPEATS=1 QUIET_MAX=1.0 QUIET_WAIT=10 BUILD=build-release
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NS=${NS:-"16 64 256"}
STALLS=${STALLS:-"0 3000 30000"}
MODES=${MODES:-"old cut new hedge"}
REPEATS=${REPEATS:-1}
QUIET_MAX=${QUIET_MAX:-1.0}
QUIET_WAIT=${QUIET_WAIT:-10}
OUT=$ROOT/bench/out/tail
EX=$ROOT/examples/llm_classify
mkdir -p "$OUT"/{bin,log,settings,state,sink}
source bench/lib.sh
for c in jq:jq curl:curl /usr/bin/time:time; do
  ensure_pkg "${c%%:*}" "${c#*:}" || { echo "bench/tail.sh needs ${c%%:*}" >&2; exit 1; }
done
llm_bench_bins "${BUILD:-build-release}"
trap stop_mock EXIT

# settings TAG N MODE: the demo's settings with this run's knobs.
settings() {
  local tag=$1 n=$2 mode=$3 f="$OUT/settings/$1.yaml" extra="" waiting=""
  case $mode in
    old) extra="tail_timeout_factor: 0\n      hedge: false"; waiting=", max_completed_waiting: $((2 * n))" ;;
    cut) extra="hedge: false" ;;
    new) ;;
    hedge) extra="hedge: true" ;;
  esac
  sed -e "s#examples/llm_classify/data#$EX/data#" -e '/^concurrency:/,$d' "$EX/settings.yaml" > "$f"
  [ -n "$extra" ] && sed -i "s/^      pool_size: 64$/      pool_size: 64\n      $extra/" "$f"
  printf 'landscape: {url: "lmdb://%s"}\nconcurrency: {pipelining: {max_rows_in_flight: %s%s}}\n' \
    "$OUT/state/$tag" "$n" "$waiting" >> "$f"
  echo "$f"
}

# one N STALL_MS MODE REP: prints one TSV line.
one() {
  local n=$1 stall=$2 mode=$3 rep=$4 tag="n$1-s$2-$3-$4" f ev st
  local args=()
  [ "$stall" != 0 ] && args=(--stall-rate 0.01 --stall-ms "$stall")
  f=$(settings "$tag" "$n" "$mode")
  rm -rf "$OUT/state/$tag" "$OUT/sink/$tag"
  quiet_gate
  # shellcheck disable=SC2046
  start_mock $(cat "$EX/mock.args") "${args[@]}"
  ELSPETH_LLM_URL="http://127.0.0.1:$PORT/v1" ELSPETH_OUT_DIR="$OUT/sink/$tag" \
    /usr/bin/time -f "%M" -o "$OUT/log/$tag.rss" \
    "$BIN" run -s "$f" --execute --max-rows-in-flight "$n" --format json \
    > "$OUT/log/$tag.events" 2> "$OUT/log/$tag.err" || true
  st=$(mock GET /admin/stats)
  echo "$st" > "$OUT/log/$tag.stats.json"
  stop_mock
  ev=$(grep '"run_completed"' "$OUT/log/$tag.events" | tail -1)
  jq -n -r --argjson ev "${ev:-null}" --argjson st "$st" \
     --arg n "$n" --arg stall "$stall" --arg mode "$mode" \
     --arg rss "$(cat "$OUT/log/$tag.rss" 2>/dev/null || echo 0)" '
    ($ev.duration_seconds // 0) as $wall | ($st.slot_seconds / 56) as $bound |
    [$n, (if $stall == "0" then "none" else "1% x \(($stall | tonumber) / 1000)s" end), $mode,
     (if $wall > 0 then ($ev.rows / $wall | floor) else 0 end),
     ($bound * 100 | round / 100), ($wall * 100 | round / 100),
     (if $wall > 0 then ($bound / $wall * 1000 | round / 1000) else 0 end),
     (($ev.server_capacity_used // 0) * 1000 | round / 1000),
     (($rss | tonumber) / 1024 | round), ($st.refused.concurrency // 0),
     ($st.faults.stall), ($ev.status // "no event")] | @tsv'
  rm -rf "$OUT/state/$tag"
}

echo "bench/tail.sh at $REV on $(nproc) cores; $(date -u +%FT%TZ)"
{
  printf 'N\tstalls\tmode\trows/s\tbound_s\twall_s\tfrac\tclient_frac\trss_MB\trefused\tstalls_n\tstatus\n'
  for stall in $STALLS; do
    for n in $NS; do
      for mode in $MODES; do
        { [ "$mode" = hedge ] || [ "$mode" = cut ]; } && [ "$n" != 64 ] && continue
        for rep in $(seq "$REPEATS"); do one "$n" "$stall" "$mode" "$rep"; done
      done
    done
  done
} | tee "$OUT/tail.tsv" | column -t -s $'\t'
echo "(frac = the server's own slot-seconds / 56 slots / the run's wall time; client_frac = the same as the run's summary measures it)"

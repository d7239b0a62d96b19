#!/usr/bin/env bash
# tests/chaos.sh — kill a pipeline at random moments, resume it, compare.
#
#   tests/chaos.sh [--runs K] [--rows R] [--elspeth PATH] [--seed S] [--keep]
#
# Defaults: K = 5, R = 400, PATH = $ELSPETH or ./build/elspeth (the mock
# server is the elspeth-mock-llm next to it), S from the clock (printed);
# --keep keeps the temporary directory even when everything passes.
#
# Starts the bundled mock LLM server (uniform 5-40 ms latency, 2 % of
# requests answered 500, fewer concurrent slots than the pool so some 429s
# happen) and writes a pipeline into a temporary directory:
#
#   CSV (R rows: id, customer, region, amount, text)
#    -> gate route: id % 5 == 0 -> aggregation totals (batch_stats, count 7,
#                                   group_by region) -> stats.csv
#                   otherwise   -> fork: classify -> llm (openrouter, retries)
#                                        meta     -> field_mapper
#                                  -> coalesce join (require_all, nested)
#                                  -> joined.json (one JSON array)
#       LLM failures for good -> errors.jsonl
#   checkpoint every 10 rows, 32 rows in flight, the Landscape in ./state.
#
# One uninterrupted reference run, then for each of K kill points: the
# mock's counters reset, the run started and SIGKILLed at a random moment
# within the reference run's duration, then `elspeth resume latest
# --execute --max-rows-in-flight N` with N drawn from {1, 4, 32, 64}; with
# probability 1/3 that resume is SIGKILLed too and resumed again. Every sink
# must end byte-identical to the reference (cmp) and `elspeth verify` must
# pass. A kill that came after the run completed counts when the resume
# refuses with "nothing to resume" and the outputs match; one that came
# before the run was recorded (no Landscape or no run yet) counts when a
# new run gives the same outputs.
#
# One line per kill point, then "chaos: K kill points, I identical, V
# verified"; exit 1 when any kill point differs or fails verify (its
# directory is kept and printed), 2 on a usage error. The same --seed
# gives the same data, mock faults and kill schedule (the exact moment a
# SIGKILL lands still depends on timing).
set -uo pipefail

RUNS=5 ROWS=400 SEED= KEEP=0 EXE=${ELSPETH:-}
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=${2:-}; shift 2 ;;
    --rows) ROWS=${2:-}; shift 2 ;;
    --elspeth) EXE=${2:-}; shift 2 ;;
    --seed) SEED=${2:-}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "chaos.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
for v in "$RUNS" "$ROWS" ${SEED:+"$SEED"}; do
  case $v in ''|*[!0-9]*) echo "chaos.sh: --runs, --rows and --seed take a number, got '$v'" >&2; exit 2 ;; esac
done
[ "$ROWS" -ge 10 ] || { echo "chaos.sh: --rows must be at least 10" >&2; exit 2; }
if [ -z "$EXE" ]; then
  EXE=./build/elspeth
  [ -x "$EXE" ] || EXE="$(dirname "$0")/../build/elspeth"
fi
[ -x "$EXE" ] || { echo "chaos.sh: no elspeth binary at '$EXE' (use --elspeth PATH)" >&2; exit 2; }
EXE=$(realpath "$EXE")
MOCKBIN="$(dirname "$EXE")/elspeth-mock-llm"
[ -x "$MOCKBIN" ] || { echo "chaos.sh: no mock server at $MOCKBIN" >&2; exit 2; }
SEED=${SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED

DIR=$(mktemp -d "${TMPDIR:-/tmp}/elspeth-chaos.XXXXXX")
MOCKPID=
FAILED_DIRS=()
pid=
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null   # a run or resume still going
  [ -z "$MOCKPID" ] || { kill "$MOCKPID" 2>/dev/null; wait "$MOCKPID" 2>/dev/null; }
  if [ "$KEEP" = 1 ]; then echo "chaos: everything kept in $DIR"
  elif [ ${#FAILED_DIRS[@]} -eq 0 ]; then rm -rf "$DIR"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
# rnd_ms MAX: sets RMS to a random whole number of milliseconds in [0, MAX),
# a fraction of MAX drawn from the seed, so a seed gives the same kill
# schedule relative to the reference run's duration on any machine. (Not
# used in $(...): a subshell draws from a reseeded generator.)
rnd_ms() { RMS=$(( RANDOM * $1 / 32768 )); }
ms2s() { awk -v m="$1" 'BEGIN { printf "%.3f", m / 1000 }'; }

# ------------------------------------------------------------ the mock
rm -f "$DIR/mock.port"
"$MOCKBIN" --port 0 --port-file "$DIR/mock.port" --latency uniform:5:40 \
  --error-500-rate 0.02 --max-concurrent 24 --seed "$SEED" > "$DIR/mock.log" 2>&1 &
MOCKPID=$!
for _ in $(seq 200); do [ -s "$DIR/mock.port" ] && break; sleep 0.025; done
[ -s "$DIR/mock.port" ] || { echo "chaos: the mock server did not start:"; cat "$DIR/mock.log"; exit 1; }
MOCKURL="http://127.0.0.1:$(cat "$DIR/mock.port")"
export ELSPETH_LLM_URL="$MOCKURL/v1"
mock_reset() {
  if command -v curl > /dev/null; then
    curl -sf -X POST "$MOCKURL/admin/reset" > /dev/null
  else
    python3 -c 'import sys, urllib.request as u; u.urlopen(u.Request(sys.argv[1] + "/admin/reset", data=b"", method="POST")).read()' "$MOCKURL"
  fi
}

# ------------------------------------------------------- data and pipeline
awk -v n="$ROWS" -v s="$SEED" 'BEGIN {
  split("north south east west central", reg, " "); split("late broken twice never", how, " ")
  print "id,customer,region,amount,text"
  for (i = 1; i <= n; i++)
    printf "%d,cust%d,%s,%d.%02d,\"ticket %d: my order %d arrived %s, %s\"\n", i, (i * 13 + s) % 60,
      reg[(i * 7 + int(i / 5) * 3 + s) % 5 + 1], (i * 7919 + s * 31) % 9999, (i * 31 + s) % 100, i,
      (i * 7919 + s) % 10007, how[(i + s) % 4 + 1], (i % 3 ? "please help" : "refund me")
}' > "$DIR/rows.csv"

cat > "$DIR/settings.yaml" <<YAML
# tests/chaos.sh pipeline (seed $SEED, $ROWS rows)
source:
  plugin: csv
  on_success: route_in
  options:
    path: $DIR/rows.csv
    schema: {mode: fixed, fields: ["id: int", "customer: str", "region: str", "amount: float", "text: str"]}
    on_validation_failure: discard

gates:
  - name: route
    input: route_in
    condition: "row['id'] % 5 == 0"
    routes: {'true': stats_in, 'false': fork}
    fork_to: [classify, meta]

transforms:
  - name: classify_llm
    plugin: llm
    input: classify
    on_success: classify_done
    on_error: errors
    options:
      provider: openrouter
      model: chaos/classifier
      base_url: \${ELSPETH_LLM_URL}
      api_key: chaos-key
      system_prompt: "Classify the customer's ticket."
      template: "Customer {{ row.customer }} ({{ row.region }}) writes: {{ row.text }}"
      response_field: category
      temperature: 0
      timeout_seconds: 10
      pool_size: 32
  - name: tag
    plugin: field_mapper
    input: meta
    on_success: meta_done
    options: {mapping: {id: ticket, region: area, amount: value}, select_only: true}

coalesce:
  - name: join
    branches: {classify: classify_done, meta: meta_done}
    policy: require_all
    merge: nested
    on_success: joined

aggregations:
  - name: totals
    plugin: batch_stats
    input: stats_in
    on_success: stats
    trigger: {count: 7}
    output_mode: transform
    options: {value_field: amount, group_by: region, compute_mean: true}

sinks:
  joined: {plugin: json, options: {path: out/joined.json, format: json}}
  stats: {plugin: csv, options: {path: out/stats.csv}}
  errors: {plugin: json, options: {path: out/errors.jsonl, format: jsonl}}

retry: {max_attempts: 6, initial_delay_seconds: 0.005, max_delay_seconds: 0.05}
concurrency:
  pipelining: {max_rows_in_flight: 32}
checkpoint: {enabled: true, frequency: every_n, checkpoint_interval: 10}
landscape: {url: "lmdb://./state"}
YAML

cd "$DIR" || exit 1
if ! "$EXE" validate -s settings.yaml > validate.log 2>&1; then
  echo "chaos: the pipeline does not validate:"; cat validate.log; exit 1
fi

echo "chaos: seed $SEED, $RUNS kill points, $ROWS rows, $EXE, in $DIR"

# ------------------------------------------------------------ reference
mkdir ref
mock_reset
t0=$(now)
(cd ref && timeout -s KILL 600 "$EXE" run -s ../settings.yaml --execute > run.log 2>&1)
rc=$?
REFDUR=$(secs "$t0" "$(now)")
if [ "$rc" != 0 ] || ! grep -q "^Run completed" ref/run.log; then
  echo "chaos: the reference run failed (exit $rc):"; cat ref/run.log; FAILED_DIRS+=(ref); exit 1
fi
REFMS=$(awk -v d="$REFDUR" 'BEGIN { printf "%d", d * 1000 }')
[ "$REFMS" -ge 10 ] || REFMS=10
if ! "$EXE" verify --database ref/state --run latest > ref/verify.log 2>&1; then
  echo "chaos: the reference run does not verify:"; cat ref/verify.log; FAILED_DIRS+=(ref); exit 1
fi
SINKS=$(cd ref/out && ls)
echo "chaos: reference run in $REFDUR s: $(grep -m1 'routed per sink' ref/run.log | sed 's/^ *//')"

# ------------------------------------------------------------ kill points
NS=(1 4 32 64)
IDENT=0 VERIFIED=0
for k in $(seq 1 "$RUNS"); do
  kp=$(printf 'kp%02d' "$k")
  mkdir "$kp"
  notes=() ok=1
  # The run, SIGKILLed after KMS ms (if it is still running).
  rnd_ms "$REFMS"; kms=$RMS
  mock_reset
  (cd "$kp" && exec "$EXE" run -s ../settings.yaml --execute > run.log 2>&1) &
  pid=$!
  sleep "$(ms2s "$kms")"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null; rc=$?
  case $rc in
    137) what="killed at $(ms2s "$kms") s" ;;
    0) what="run finished before its kill at $(ms2s "$kms") s" ;;
    *) what="run exited $rc before its kill at $(ms2s "$kms") s"; ok=0 ;;
  esac
  # Resume until the run is finished (a resume may be killed once).
  attempts=0 done=0
  killres=$(( RANDOM % 3 == 0 ))
  while [ $done = 0 ] && [ $attempts -lt 4 ]; do
    n=${NS[$((RANDOM % 4))]}
    attempts=$((attempts + 1))
    log="$kp/resume$attempts.log"
    early=
    if [ "$killres" = 1 ] && [ $attempts = 1 ]; then
      rnd_ms "$REFMS"; rkms=$RMS
      (cd "$kp" && exec "$EXE" resume latest -s ../settings.yaml --execute --max-rows-in-flight "$n" > "../$log" 2>&1) &
      pid=$!
      sleep "$(ms2s "$rkms")"
      kill -KILL "$pid" 2>/dev/null
      wait "$pid" 2>/dev/null; rc=$?
      if [ "$rc" = 137 ]; then
        notes+=("resume N=$n killed at $(ms2s "$rkms") s"); continue
      fi
      early=" (it exited before its kill at $(ms2s "$rkms") s)"
    else
      (cd "$kp" && timeout -s KILL 600 "$EXE" resume latest -s ../settings.yaml --execute \
        --max-rows-in-flight "$n" > "../$log" 2>&1)
      rc=$?
    fi
    if [ "$rc" = 0 ]; then
      rep=$(grep -o '[0-9]* LLM answers replayed' "$log" | cut -d' ' -f1)
      notes+=("resume N=$n${rep:+ ($rep replayed)}$early"); done=1
    elif [ "$rc" = 1 ] && grep -q "nothing to resume" "$log"; then
      notes+=("nothing to resume$early"); done=1
    elif [ "$rc" = 1 ] && grep -q "no audit trail at\|no runs recorded yet" "$log"; then
      # Killed before the run was recorded: there is nothing to resume,
      # and running it again is what a user does.
      (cd "$kp" && timeout -s KILL 600 "$EXE" run -s ../settings.yaml --execute > run2.log 2>&1)
      rc=$?
      notes+=("the run was not recorded yet: ran it again (exit $rc)")
      [ "$rc" = 0 ] && done=1 || { ok=0; break; }
    else
      case $rc in 137) r="HANG (killed after 600 s)" ;; *) r="exit $rc" ;; esac
      notes+=("resume N=$n$early FAILED: $r: $(grep -m1 -i 'error' "$log" | cut -c1-160)"); ok=0; break
    fi
  done
  [ $done = 1 ] || ok=0
  # "Nothing to resume" is right only for a run that completed: then its
  # sinks are whole and the comparison below passes.
  diffs=()
  for f in $SINKS; do cmp -s "ref/out/$f" "$kp/out/$f" || diffs+=("$f"); done
  extra=$(cd "$kp/out" 2>/dev/null && ls | grep -vxF "$SINKS")
  [ -z "$extra" ] || diffs+=($extra)
  if [ ${#diffs[@]} -eq 0 ] && [ $ok = 1 ]; then same=identical; IDENT=$((IDENT + 1)); else same="DIFF(${diffs[*]:-resume failed})"; ok=0; fi
  if "$EXE" verify --database "$kp/state" --run latest > "$kp/verify.log" 2>&1; then
    ver="verify OK"; VERIFIED=$((VERIFIED + 1))
  else
    ver="verify FAIL: $(grep -m1 'VIOLATION\|rror' "$kp/verify.log" | cut -c1-140)"; ok=0
  fi
  printf '%s: %s; %s; %s; %s\n' "$kp" "$what" "$(IFS=';'; echo "${notes[*]}" | sed 's/;/, /g')" "$same" "$ver"
  if [ $ok = 1 ]; then
    [ "$KEEP" = 1 ] || rm -rf "$kp"
  else
    FAILED_DIRS+=("$kp")
    echo "    kept: $DIR/$kp (reference: $DIR/ref, settings: $DIR/settings.yaml)"
  fi
done

echo "chaos: $RUNS kill points, $IDENT identical, $VERIFIED verified"
if [ ${#FAILED_DIRS[@]} -gt 0 ]; then
  echo "chaos: FAILED (seed $SEED); the failing kill points are kept in $DIR"
  exit 1
fi
exit 0

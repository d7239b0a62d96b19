#!/usr/bin/env bash
# Property test (docs/architecture.md §5 invariants 1–3, §7): random valid pipelines
# from tests/integration/property_gen.py — csv/json sources with invalid
# rows, transforms (some failing, some flaky with retries), json_explode,
# gates, forks joined by coalesce under every policy and merge, nested
# forks, aggregations, error sinks — each run --sequential, with
# --max-rows-in-flight N (N in 2..64, from the seed; odd seeds with a 1 MiB
# waiting budget) and with N=256. For
# every case:
#   1. every run exits 0 (within a time limit: a hang is a failure);
#   2. the sinks are byte-identical across the modes (diff -r);
#   3. `elspeth verify --run latest` passes after each run;
#   4. the summary accounts for every source record: "Run completed: R
#      rows" with R = the records written, and succeeded + failed +
#      quarantined = R;
#   5. `elspeth explain --run latest --row K --json` gives JSON with a
#      "tokens" array for a few K.
#
# usage: bash test_property.sh ELSPETH SRC_DIR [CASES]
#   CASES (or env CASES) cases, seeds SEED0 .. SEED0+CASES-1 (env SEED0,
#   default 1). A failing case is copied to $PROPERTY_KEEP (default /tmp)
#   and the message names its seed and directory; regenerate it anywhere
#   with `python3 tests/integration/property_gen.py SEED DIR`.
source "$(dirname "$0")/lib.sh"
CASES=${3:-${CASES:-25}}
SEED0=${SEED0:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
KEEP=${PROPERTY_KEEP:-/tmp}
GEN="$SRC/tests/integration/property_gen.py"
command -v python3 > /dev/null || { echo "python3 is needed"; exit 1; }

# A failing case is copied out of $WORK (which is removed at exit); the
# message names the copy and how to regenerate the case.
declare -A KEPT
case_fail() { # SEED MESSAGE
  if [ -z "${KEPT[$1]:-}" ]; then
    KEPT[$1]=$(mktemp -d "$KEEP/elspeth-property-seed$1.XXXXXX") || KEPT[$1]="$WORK/case-$1"
  fi
  fail "seed $1: $2 [kept in ${KEPT[$1]}; regenerate: python3 $GEN $1 DIR]"
}

keep_case() { # SEED: copies the case (settings, input, logs, outputs)
  [ -n "${KEPT[$1]:-}" ] && [ "${KEPT[$1]}" != "$WORK/case-$1" ] &&
    cp -r "$WORK/case-$1/." "${KEPT[$1]}/"
}

# The counts in a run's summary: "R S F Q", or nothing.
summary_counts() {
  sed -n -e 's/^Run completed: \([0-9][0-9]*\) rows.*/R \1/p' \
         -e 's/^ *succeeded \([0-9][0-9]*\), failed \([0-9][0-9]*\), quarantined \([0-9][0-9]*\).*/S \1 \2 \3/p' "$1" |
    awk '$1 == "R" { r = $2 } $1 == "S" { s = $2; f = $3; q = $4 }
         END { if (r != "" && s != "") print r, s, f, q }'
}

run_case() { # SEED
  local seed=$1 dir="$WORK/case-$1" n rows info label bad=0 seq_ok=0 out rc counts k r s f q
  local -a labels flags
  if [ ! -s "$dir/case.txt" ]; then
    fail "seed $seed: property_gen.py wrote no case"; return
  fi
  read -r rows info < "$dir/case.txt"
  RANDOM=$seed
  n=$((2 + RANDOM % 63))
  labels=(sequential "n$n" n256)
  cd "$dir" || return
  if ! ELSPETH_OUT_DIR="$dir/out-validate" "$ELSPETH" validate -s settings.yaml > validate.log 2>&1; then
    case_fail "$seed" "elspeth validate rejected the pipeline: $(tail -1 validate.log)"
    labels=()
    bad=1
  fi
  # Every mode runs even after a failure (one bug often shows in several).
  for label in "${labels[@]}"; do
    case $label in
      sequential) flags=(--sequential) ;;
      *) flags=(--max-rows-in-flight "${label#n}") ;;
    esac
    # Odd seeds run their middle N with the smallest waiting budget (1
    # MiB; ADR 0029), so that bound holds rows back under random timing.
    [ "$label" = "n$n" ] && [ $((seed % 2)) = 1 ] && flags+=(--max-waiting-mib 1)
    out="$dir/out-$label"
    ELSPETH_OUT_DIR="$out" timeout -k 5 "$RUN_TIMEOUT" "$ELSPETH" run -s settings.yaml --execute \
      "${flags[@]}" > "run-$label.log" 2>&1
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      case_fail "$seed" "$label: run did not finish within ${RUN_TIMEOUT}s (hang)"; bad=1; break
    fi
    if [ "$rc" -gt 128 ]; then
      case_fail "$seed" "$label: run crashed (signal $((rc - 128))): $(tail -1 "run-$label.log")"
      bad=1
    elif [ "$rc" != 0 ]; then
      case_fail "$seed" "$label: run exited $rc: $(grep -m1 -i error "run-$label.log")"
      bad=1
    fi
    # 3. verify, right after the run it checks.
    if ! "$ELSPETH" verify --run latest > "verify-$label.log" 2>&1; then
      case_fail "$seed" "$label: verify failed: $(grep -m2 -E 'VIOLATION|error' "verify-$label.log" | tr '\n' ' ')"
      bad=1
    fi
    [ "$rc" = 0 ] || continue
    [ "$label" = sequential ] && seq_ok=1
    # 4. the summary accounts for every source record.
    counts=$(summary_counts "run-$label.log")
    if [ -z "$counts" ]; then
      case_fail "$seed" "$label: no run summary in the output"; bad=1
    else
      read -r r s f q <<< "$counts"
      if [ "$r" != "$rows" ]; then
        case_fail "$seed" "$label: summary says $r rows, the source has $rows records"; bad=1
      fi
      if [ $((s + f + q)) != "$r" ]; then
        case_fail "$seed" "$label: succeeded $s + failed $f + quarantined $q != $r rows"; bad=1
      fi
    fi
    # 5. explain the first, the last and a random row of the run with N
    #    (the JSON is checked for all cases at the end, in one python3).
    if [ "$label" = "n$n" ]; then
      for k in 1 "$rows" $((1 + RANDOM % rows)); do
        if ! "$ELSPETH" explain --run latest --row "$k" --json > "explain-$k.json" 2> "explain-$k.err"; then
          case_fail "$seed" "$label: explain --row $k exited non-zero: $(head -1 "explain-$k.err")"; bad=1
        else
          echo "$seed $k $dir/explain-$k.json" >> "$WORK/explain.list"
        fi
      done
    fi
    # 2. byte-identical sinks.
    if [ "$label" != sequential ] && [ "$seq_ok" = 1 ] && ! diff -r "$dir/out-sequential" "$out" > "diff-$label.log" 2>&1; then
      case_fail "$seed" "$label: sinks differ from --sequential: $(head -1 "diff-$label.log")"
      bad=1
    fi
  done
  cd "$WORK" || return
  if [ "$bad" = 0 ]; then
    pass "seed $seed: $rows rows, N=$n: $info"
    rm -rf "$dir/state" "$dir"/out-*   # the explain JSON is checked at the end
  else
    echo "    seed $seed: runs were --sequential, --max-rows-in-flight $n and 256"
    keep_case "$seed"
  fi
}

start=$(date +%s)
if ! python3 "$GEN" --many "$SEED0" "$CASES" "$WORK" > "$WORK/gen.log" 2>&1; then
  fail "property_gen.py --many $SEED0 $CASES failed"; sed 's/^/    /' "$WORK/gen.log" | tail -5
fi
: > "$WORK/explain.list"
for ((seed = SEED0; seed < SEED0 + CASES; seed++)); do
  run_case "$seed"
done
# 5 (cont.): each explain document is JSON with a non-empty "tokens" array
# for the row asked for.
python3 - "$WORK/explain.list" > "$WORK/explain.bad" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    seed, row, path = line.split(None, 2)
    path = path.strip()
    try:
        d = json.load(open(path))
        assert isinstance(d.get("tokens"), list) and d["tokens"], "no tokens array"
        assert d.get("row", {}).get("seq") == int(row), "not row %s" % row
    except Exception as e:  # report, do not stop
        print(seed, row, "%s: %s" % (type(e).__name__, e))
PY
while read -r seed row why; do
  case_fail "$seed" "explain --row $row --json: $why"
  keep_case "$seed"
done < "$WORK/explain.bad"
echo "$CASES cases (seeds $SEED0..$((SEED0 + CASES - 1))) in $(($(date +%s) - start)) s"
finish

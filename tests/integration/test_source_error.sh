#!/usr/bin/env bash
# A source that fails in the middle of its file (a read error, injected by
# tests/shim/failread.c), with rows read ahead of the pull (ADR 0014):
#  a. the run fails with the source's error only after every row before
#     the bad line is released, in order — the same output and exit code
#     as --sequential — and its audit trail verifies;
#  b. a stop (SIGINT) before those rows are pulled is an interruption
#     (exit 3), not the source error; the resume, with the file readable
#     again, gives the uninterrupted run's output.
source "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1

SHIM=$(dirname "$ELSPETH")/libelspeth_failread.so
[ -f "$SHIM" ] || { fail "the test shim $SHIM is not built"; finish; exit 1; }
# Sanitizer builds: the shim comes before the sanitizer's runtime.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
TO="timeout -s KILL 120"

# failing N ARGS...: elspeth with getdelim failing from its Nth call.
failing() {
  local n=$1; shift
  LD_PRELOAD=$SHIM ELSPETH_TEST_GETDELIM_FAIL=$n $TO "$ELSPETH" "$@"
}

settings() { # settings FILE INPUT MS N
  cat > "$1" <<YAML
source: {plugin: csv, on_success: d_in, options: {path: $2, on_validation_failure: discard}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: out, options: {ms: $3}}
sinks:
  out: {plugin: csv, options: {path: out/out.csv}}
concurrency: {pipelining: {max_rows_in_flight: $4}}
landscape: {url: "lmdb://./state"}
YAML
}

# ----------------------------------------------------- a. error mid-file
awk 'BEGIN { print "id,v"; for (i = 1; i <= 300; i++) printf "%d,%d\n", i, i * 7 }' > a.csv
settings a.yaml "$WORK/a.csv" 2 16
# Call 1 reads the header, so call 151 fails at data line 150: rows
# 1..149 were read, and with 16 in flight up to 64 are read ahead.
for mode in pipelined sequential; do
  mkdir -p "a_$mode"
  flags=(); [ $mode = sequential ] && flags=(--sequential)
  (cd "a_$mode" && failing 151 run -s ../a.yaml --execute "${flags[@]}" > run.log 2>&1); rc=$?
  [ $rc = 1 ] && grep -q "read error after line 150" "a_$mode/run.log" &&
    pass "a. $mode: exit 1 naming the read error" ||
    { fail "a. $mode: exit $rc"; sed 's/^/    /' "a_$mode/run.log" | head; }
  [ "$(($(wc -l < "a_$mode/out/out.csv") - 1))" = 149 ] &&
    pass "a. $mode: the 149 rows before the bad line are written" ||
    fail "a. $mode: out.csv has $(($(wc -l < "a_$mode/out/out.csv") - 1)) rows"
  (cd "a_$mode" && $TO "$ELSPETH" verify -s ../a.yaml --run latest > verify.log 2>&1) &&
    pass "a. $mode: verify passes on the failed run" ||
    { fail "a. $mode: verify"; sed 's/^/    /' "a_$mode/verify.log" | head; }
done
head -150 a.csv | tail -149 | cmp -s - <(tail -n +2 a_pipelined/out/out.csv | tr -d "\r") &&
  pass "a. pipelined: rows 1..149 in source order" || fail "a. pipelined: rows out of order or changed"
cmp -s a_pipelined/out/out.csv a_sequential/out/out.csv &&
  pass "a. pipelined output identical to --sequential" || fail "a. outputs differ"

# ------------------------------------------- b. a stop before the error
awk 'BEGIN { print "id,v"; for (i = 1; i <= 40; i++) printf "%d,%d\n", i, i }' > b.csv
settings b.yaml "$WORK/b.csv" 300 4
mkdir -p bref b
(cd bref && $TO "$ELSPETH" run -s ../b.yaml --execute > run.log 2>&1) ||
  { fail "b. reference run"; sed 's/^/    /' bref/run.log | head; }
# Call 21 fails: the first read ahead takes rows 1..19 and meets the
# error at once, while rows 1..4 take 300 ms each.
(cd b && exec env LD_PRELOAD="$SHIM" ELSPETH_TEST_GETDELIM_FAIL=21 "$ELSPETH" run -s ../b.yaml --execute > bg.log 2>&1) &
BG=$!
started b/out/out.csv
sleep 0.1
kill -INT "$BG"; wait "$BG"; rc=$?
[ $rc = 3 ] && pass "b. SIGINT before the rows ahead of the error: exit 3 (interrupted)" ||
  { fail "b. SIGINT: exit $rc, want 3"; sed 's/^/    /' b/bg.log | head; }
(cd b && $TO "$ELSPETH" resume latest -s ../b.yaml --execute > resume.log 2>&1) ||
  { fail "b. resume"; sed 's/^/    /' b/resume.log | head; }
cmp -s bref/out/out.csv b/out/out.csv &&
  pass "b. resumed output identical to the uninterrupted run" || fail "b. resumed output differs"
(cd b && $TO "$ELSPETH" verify -s ../b.yaml --run latest > verify.log 2>&1) &&
  pass "b. verify passes after the resume" || { fail "b. verify"; sed 's/^/    /' b/verify.log | head; }

finish

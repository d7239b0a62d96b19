#!/usr/bin/env bash
# A sink whose writes fail: every failed row is diverted to
# on_write_failure (DIVERTED) or stops the run with a clear error; the
# failing file keeps whole rows only; nothing is lost.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
awk 'BEGIN { print "id,text"; for (i = 1; i <= 100; i++) printf "%d,row number %05d of the test\n", i, i }' > in.csv

settings() { # OUTPUT_PATH ON_WRITE_FAILURE AUDIT
  cat > p.yaml <<YAML
source: {plugin: csv, on_success: output, options: {path: in.csv, on_validation_failure: discard}}
sinks:
  output:
    plugin: csv
    ${2:+on_write_failure: $2}
    options: {path: $1}
  diverted: {plugin: json, options: {path: out/diverted.jsonl}}
landscape: {enabled: $3}
YAML
}

# Disk full from the first write (/dev/full): every row diverted.
rm -rf out state; settings /dev/full diverted true
expect "disk full: rows are diverted" 0 "diverted=100" -- "$ELSPETH" run -s p.yaml --execute
[ "$(wc -l < out/diverted.jsonl)" = 100 ] && pass "disk full: 100 rows in diverted" || fail "disk full: $(wc -l < out/diverted.jsonl) rows diverted"
expect "disk full: explain says DIVERTED" 0 "Outcome: DIVERTED to sink diverted" -- "$ELSPETH" explain --row 7
expect "disk full: verify passes" 0 "verify: OK" -- "$ELSPETH" verify

# Without on_write_failure the run stops with the reason.
rm -rf out; settings /dev/full "" false
expect "disk full without on_write_failure stops the run" 1 "No space left on device" -- "$ELSPETH" run -s p.yaml --execute

# The file-size limit reached mid-run (EFBIG): the first rows are
# written, the rest diverted; the output holds whole rows only.
rm -rf out; mkdir -p out; settings out/output.csv diverted false
( ulimit -f 2; "$ELSPETH" run -s p.yaml --execute --sequential ) > run.log 2>&1
rc=$?
[ "$rc" = 0 ] && pass "limit mid-run: the run completes" || { fail "limit mid-run: exit $rc"; cat run.log; }
written=$(($(wc -l < out/output.csv) - 1)); diverted=$(wc -l < out/diverted.jsonl)
[ $((written + diverted)) = 100 ] && [ "$written" -gt 10 ] && [ "$diverted" -gt 10 ] &&
  pass "limit mid-run: $written written + $diverted diverted = 100" ||
  fail "limit mid-run: $written written + $diverted diverted"
[ "$(tail -c 1 out/output.csv | od -An -c | tr -d ' ')" = '\n' ] && pass "limit mid-run: output ends with a whole row" || fail "output ends mid-row"
finish

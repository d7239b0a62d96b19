#!/usr/bin/env bash
# The audit store's disk fills up mid-run (a private tmpfs, mounted by the
# test: root only, else skipped): the run stops with the cause and the
# path; verify says what resume will cut back instead of reporting
# violations; after space is freed, resume finishes with the files an
# uninterrupted run writes, and verify passes.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
if [ "$(id -u)" != 0 ] || ! mkdir -p small || ! mount -t tmpfs -o size=2m tmpfs small 2>/dev/null; then
  echo "skip: needs root to mount a small tmpfs"; exit 77
fi
trap 'umount "$WORK/small" 2>/dev/null; mock_stop; rm -rf "$WORK"' EXIT

awk 'BEGIN { print "id,name,score"; for (i = 1; i <= 60000; i++) printf "%d,name %d,%d.%d\n", i, i, i % 100, i % 7 }' > in.csv
settings() { # OUT LANDSCAPE_DIR
  cat > "p-$1.yaml" <<YAML
source: {plugin: csv, on_success: map_in, options: {path: in.csv, on_validation_failure: discard}}
transforms:
  - {name: m, plugin: field_mapper, input: map_in, on_success: out, options: {mapping: {name: who}}}
sinks:
  out: {plugin: csv, options: {path: $1/out.csv}}
landscape: {url: "lmdb://$2"}
checkpoint: {enabled: true, frequency: every_n, checkpoint_interval: 500}
YAML
}
settings ref ref-state
"$ELSPETH" run -s p-ref.yaml --execute > /dev/null 2>&1 || fail "reference run"

settings full small/audit.lmdb
expect "a full store stops the run with the cause and the path" 1 \
  "No space left on device: small/audit.lmdb" -- "$ELSPETH" run -s p-full.yaml --execute
expect "verify: no violations, says what resume cuts back" 0 "elspeth resume\` continues after row" \
  -- "$ELSPETH" verify --database small/audit.lmdb
"$ELSPETH" verify --database small/audit.lmdb --json > v.json 2>&1
python3 - v.json <<'PY' && pass "verify --json: stopped.resume_after_row and rows_to_run_again" || fail "verify --json stopped: $(cat v.json | head -c 400)"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["stopped"]
assert r["violation_count"] == 0, r["violations"]
assert s["checkpoint"] and s["resume_after_row"] >= 0 and s["rows_to_run_again"] > 0, s
PY
expect "runs: the run no process runs is 'stopped', not 'running'" 0 "  stopped  " \
  -- "$ELSPETH" runs --database small/audit.lmdb
expect "runs --run: it says why and how to resume it" 0 "resume it with: elspeth resume 1 -s p-full.yaml --execute" \
  -- "$ELSPETH" runs --database small/audit.lmdb --run 1
"$ELSPETH" runs --database small/audit.lmdb --json > runs.json 2>&1
python3 - runs.json <<'PY' && pass "runs --json: live false, resume_after_row, status kept 'running' (ELSPETH's)" || fail "runs --json: $(head -c 400 runs.json)"
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["status"] == "running" and r["live"] is False and "resume_after_row" in r, r
PY
mount -o remount,size=64m "$WORK/small" || fail "remount"
expect "resume after freeing space" 0 "completed" -- "$ELSPETH" resume latest -s p-full.yaml --execute
cmp -s ref/out.csv full/out.csv && pass "the resumed file equals the uninterrupted run's" \
  || fail "resumed output differs ($(wc -l < full/out.csv) lines, want $(wc -l < ref/out.csv))"
expect "verify after the resume" 0 "verify: OK" -- "$ELSPETH" verify --database small/audit.lmdb
finish

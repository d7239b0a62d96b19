#!/usr/bin/env bash
# README command (1): install what is missing, build, and run the demo:
# examples/llm_classify — 3,000 support tickets classified by an LLM (the
# bundled mock server, started and stopped here: no account, no key) with
# 64 rows in flight, a live progress line, a gate and an error sink; then
# the run's audit trail: runs, explain --row 42, verify.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target elspeth elspeth-mock-llm >/dev/null
echo "== built build/elspeth and build/elspeth-mock-llm"

EX=examples/llm_classify
mkdir -p "$EX/out"
rm -f "$EX/out/mock.port"
# shellcheck disable=SC2046
build/elspeth-mock-llm --port 0 --port-file "$EX/out/mock.port" $(cat "$EX/mock.args") \
  > "$EX/out/mock.log" 2>&1 &
mock=$!
trap 'kill $mock 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$EX/out/mock.port" ] && break; sleep 0.05; done
export ELSPETH_LLM_URL="http://127.0.0.1:$(cat "$EX/out/mock.port")/v1"
echo "== mock LLM server at $ELSPETH_LLM_URL (options: $(cat "$EX/mock.args"))"
echo

echo "== elspeth validate -s $EX/settings.yaml"
build/elspeth validate -s "$EX/settings.yaml"
echo
echo "== elspeth run -s $EX/settings.yaml --execute --max-rows-in-flight 64"
rm -f "$EX"/out/*.csv "$EX"/out/*.jsonl
build/elspeth run -s "$EX/settings.yaml" --execute --max-rows-in-flight 64
echo
echo "== outputs in $EX/out/"
wc -l "$EX"/out/*.csv "$EX"/out/*.jsonl
echo
echo "== elspeth runs"
build/elspeth runs
echo
echo "== elspeth explain --run latest --row 42"
build/elspeth explain --run latest --row 42
echo
echo "== elspeth verify --run latest"
build/elspeth verify --run latest
echo
echo "== elspeth report --run latest -o $EX/out/report.html (open it in a browser)"
build/elspeth report --run latest -o "$EX/out/report.html"
echo
echo "== crash and resume: the same run again, killed with SIGKILL halfway, then resumed"
mkdir -p "$EX/out/reference" "$EX/out/crash"
cp "$EX"/out/*.csv "$EX"/out/*.jsonl "$EX/out/reference/"
rm -f "$EX"/out/crash/*
reset_mock() {
  python3 -c 'import sys, urllib.request as u; u.urlopen(u.Request(sys.argv[1] + "/admin/reset", data=b"", method="POST")).read()' "${ELSPETH_LLM_URL%/v1}"
}
# The mock's injected faults fall on the same attempts after a reset, so
# the resumed rows meet the same 500s as in the first run.
reset_mock
ELSPETH_OUT_DIR="$EX/out/crash" build/elspeth run -s "$EX/settings.yaml" --execute \
  --max-rows-in-flight 64 --format json > "$EX/out/crash/events.jsonl" 2>&1 &
run=$!
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
# Killed about halfway: once ~1,000 tickets are written (at most 30 s).
for _ in $(seq 600); do
  [ "$(lines "$EX/out/crash/tickets.csv")" -ge 1000 ] && break
  kill -0 "$run" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$run" 2>/dev/null || true; wait "$run" 2>/dev/null || true
echo "killed (SIGKILL) with $(lines "$EX/out/crash/tickets.csv") lines in tickets.csv"
echo "== elspeth resume latest -s $EX/settings.yaml (dry run)"
ELSPETH_OUT_DIR="$EX/out/crash" build/elspeth resume latest -s "$EX/settings.yaml"
echo "== elspeth resume latest -s $EX/settings.yaml --execute --max-rows-in-flight 64"
reset_mock
ELSPETH_OUT_DIR="$EX/out/crash" build/elspeth resume latest -s "$EX/settings.yaml" --execute \
  --max-rows-in-flight 64
for f in tickets.csv urgent.jsonl errors.jsonl; do
  if cmp -s "$EX/out/reference/$f" "$EX/out/crash/$f"; then
    echo "  $f: identical to the uninterrupted run"
  else
    echo "  $f: DIFFERS from the uninterrupted run"; exit 1
  fi
done
build/elspeth verify --run latest
echo "== elspeth report --run latest -o $EX/out/crash/report.html (the resumed run: its charts mark the resume)"
build/elspeth report --run latest -o "$EX/out/crash/report.html"

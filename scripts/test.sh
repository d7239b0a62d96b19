#!/usr/bin/env bash
# README command (2): the whole test suite. Installs what is missing, then
#   1. builds with -Werror and runs every test (unit, stress, integration);
#   2. builds with ASan+UBSan and runs them all again, failing on any
#      sanitizer report (Criterion does not fail a test on a leak report);
#   3. builds with TSan and runs the threaded stress programs and the
#      integration tests (the pipelined engine with up to 256 rows in
#      flight) — Criterion itself cannot start under TSan;
#   4. builds the libFuzzer harnesses (clang) and runs each for a few
#      seconds from its committed corpus (scripts/fuzz.sh; long runs are
#      by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)
LOGS=build-logs
mkdir -p "$LOGS"

./scripts/install-deps.sh

echo "== 1/4 build (-Werror) and all tests"
cmake -S . -B build -DELSPETH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$JOBS" >/dev/null
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== 2/4 build (ASan+UBSan) and all tests"
cmake -S . -B build-asan -DELSPETH_WERROR=ON -DELSPETH_ASAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$JOBS" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# Leaks inside Criterion's own runner are not ours (tests/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Sanitized binaries are 2–10x slower: smaller stress and property runs.
export STRESS_ROWS=20000 CASES=8 SHARD_ROWS=1500
if ! ctest --test-dir build-asan -j"$JOBS" -V > "$LOGS/asan.log" 2>&1; then
  grep -E "Failed|FAIL|\*\*\*" "$LOGS/asan.log" | tail -30
  echo "ASan/UBSan: tests failed (full log: $LOGS/asan.log)"; exit 1
fi
if grep -E "ERROR: (Leak|Address)Sanitizer|: runtime error: " "$LOGS/asan.log"; then
  echo "ASan/UBSan: sanitizer reports (full log: $LOGS/asan.log)"; exit 1
fi
grep -E "tests passed|tests failed" "$LOGS/asan.log" | tail -1

echo "== 3/4 build (TSan): the threaded stress programs and the integration tests"
cmake -S . -B build-tsan -DELSPETH_WERROR=ON -DELSPETH_TSAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-tsan -j"$JOBS" >/dev/null
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# Not under TSan, to keep CI near its 20 minutes: test_shard and
# test_slurm (they orchestrate processes; each shard is the same
# pipelined engine the other integration tests run under TSan, and the
# two take a third of this stage) and test_mock_llm (the mock server is
# one thread). All three run in stages 1 and 2.
ctest --test-dir build-tsan -L "stress|integration" -E "test_shard$|test_slurm$|test_mock_llm$" \
  --output-on-failure -j"$JOBS"

echo "== 4/4 short fuzz runs (each harness, ${FUZZ_SECS:-6} s)"
./scripts/fuzz.sh "${FUZZ_SECS:-6}"

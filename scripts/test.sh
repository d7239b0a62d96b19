#!/usr/bin/env bash
# README command (2): the whole test suite. Installs what is missing,
# builds with -Werror, runs every test (unit + integration), then the unit
# tests once more under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc)

./scripts/install-deps.sh

echo "== build (-Werror)"
cmake -S . -B build -DELSPETH_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$JOBS" >/dev/null
echo "== all tests"
ctest --test-dir build --output-on-failure -j"$JOBS"

echo "== build (ASan+UBSan)"
cmake -S . -B build-asan -DELSPETH_WERROR=ON -DELSPETH_ASAN=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$JOBS" >/dev/null
echo "== unit and integration tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$JOBS"

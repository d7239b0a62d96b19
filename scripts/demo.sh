#!/usr/bin/env bash
# README command (1): install what is missing, build, run the demo pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target elspeth >/dev/null
echo "== built build/elspeth"

echo "== elspeth validate -s examples/quickstart/settings.yaml"
build/elspeth validate -s examples/quickstart/settings.yaml
echo
echo "== elspeth run -s examples/quickstart/settings.yaml --execute"
rm -rf examples/quickstart/out
build/elspeth run -s examples/quickstart/settings.yaml --execute
echo
echo "== outputs in examples/quickstart/out/"
wc -l examples/quickstart/out/*
echo
echo "== elspeth runs"
build/elspeth runs
echo
echo "== elspeth explain --run latest --row 42"
build/elspeth explain --run latest --row 42
echo
echo "== elspeth verify --run latest"
build/elspeth verify --run latest

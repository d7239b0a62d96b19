#!/usr/bin/env bash
# Runs every example pipeline that has an expected/ folder and compares its
# sinks byte for byte with the expected files. An example with a mock.args
# file talks to the bundled mock LLM server, started with those options
# (latency shortened: answers do not depend on it) and reset before the
# run, so its injected faults fall on the same requests every time.
source "$(dirname "$0")/lib.sh"
MOCK="$(dirname "$ELSPETH")/elspeth-mock-llm"
mock_pid=
stop_mock() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null; mock_pid=; }
trap 'stop_mock; rm -rf "$WORK"' EXIT
# Work on a copy so the audit trail (./state) and outputs stay out of the tree.
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -d "$dir/expected" ] || continue
  out="$WORK/out-$name"
  unset ELSPETH_LLM_URL
  if [ -f "$dir/mock.args" ]; then
    rm -f mock.port
    # shellcheck disable=SC2046
    "$MOCK" --port 0 --port-file mock.port $(cat "$dir/mock.args") --latency fixed:1 > mock.log 2>&1 &
    mock_pid=$!
    for _ in $(seq 100); do [ -s mock.port ] && break; sleep 0.05; done
    export ELSPETH_LLM_URL="http://127.0.0.1:$(cat mock.port)/v1"
  fi
  expect "$name: validate" 0 "Settings valid" -- \
    env ELSPETH_OUT_DIR="$out" "$ELSPETH" validate -s "$dir/settings.yaml"
  expect "$name: run" 0 "Run completed" -- \
    env ELSPETH_OUT_DIR="$out" "$ELSPETH" run -s "$dir/settings.yaml" --execute
  for f in "$dir"/expected/*; do
    if cmp -s "$f" "$out/$(basename "$f")"; then
      pass "$name: $(basename "$f") identical"
    else
      fail "$name: $(basename "$f") differs"; diff "$f" "$out/$(basename "$f")" | head -10
    fi
  done
  n_expected=$(ls "$dir/expected" | wc -l); n_out=$(ls "$out" | wc -l)
  [ "$n_expected" = "$n_out" ] && pass "$name: no unexpected outputs" || fail "$name: $n_out outputs, want $n_expected"
  stop_mock
done
finish

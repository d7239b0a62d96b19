#!/usr/bin/env bash
# Runs every example pipeline that has an expected/ folder, verifies its
# audit trail and compares its sinks byte for byte with the expected files. An example with a mock.args
# file talks to the bundled mock LLM server, started with those options
# (latency shortened: answers do not depend on it) and reset before the
# run, so its injected faults fall on the same requests every time.
source "$(dirname "$0")/lib.sh"
# Work on a copy so the audit trail (./state) and outputs stay out of the tree.
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
for dir in examples/*/; do
  name=$(basename "$dir")
  [ -d "$dir/expected" ] || continue
  out="$WORK/out-$name"
  # shellcheck disable=SC2046
  [ -f "$dir/mock.args" ] && mock_start $(cat "$dir/mock.args") --latency fixed:1
  expect "$name: validate" 0 "Settings valid" -- \
    env ELSPETH_OUT_DIR="$out" "$ELSPETH" validate -s "$dir/settings.yaml"
  expect "$name: run" 0 "Run completed" -- \
    env ELSPETH_OUT_DIR="$out" "$ELSPETH" run -s "$dir/settings.yaml" --execute
  expect "$name: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest
  for f in "$dir"/expected/*; do
    if cmp -s "$f" "$out/$(basename "$f")"; then
      pass "$name: $(basename "$f") identical"
    else
      fail "$name: $(basename "$f") differs"; diff "$f" "$out/$(basename "$f")" | head -10
    fi
  done
  n_expected=$(ls "$dir/expected" | wc -l); n_out=$(ls "$out" | wc -l)
  [ "$n_expected" = "$n_out" ] && pass "$name: no unexpected outputs" || fail "$name: $n_out outputs, want $n_expected"
  mock_stop
done
finish

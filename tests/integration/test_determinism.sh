#!/usr/bin/env bash
# docs/architecture.md §5 invariants 1–3 across modes: every example's sinks are
# byte-identical for --sequential and N in {1, 2, 7, 64, 256}, and verify
# passes for every run. A latency-jitter pipeline (the delay transform,
# rows finishing out of order, a fork, a coalesce and an aggregation) is
# checked the same way.
source "$(dirname "$0")/lib.sh"
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"

# Examples that talk to the mock LLM server (mock.args) get it, reset
# before every run; their retry delays are cut (outputs do not depend on
# them).
prepare() { # DIR: sets SETTINGS (no subshell: the mock must be ours)
  local dir=$1
  SETTINGS="$dir/settings.yaml"
  if [ -f "$dir/mock.args" ]; then
    # shellcheck disable=SC2046
    mock_start $(cat "$dir/mock.args") --latency fixed:1
    sed 's/^retry: .*/retry: {max_attempts: 3, initial_delay_seconds: 0.001, max_delay_seconds: 0.002}/' \
      "$dir/settings.yaml" > "$dir/settings-fast.yaml"
    SETTINGS="$dir/settings-fast.yaml"
  fi
}

compare_modes() { # NAME SETTINGS [EXPECTED_DIR]
  local name=$1 settings=$2 expected=${3:-} n
  local ref="$WORK/ref-$name"
  [ -n "$MOCK_PID" ] && mock_reset
  ELSPETH_OUT_DIR="$ref" "$ELSPETH" run -s "$settings" --execute --sequential > /dev/null 2>&1 ||
    { fail "$name: sequential run failed"; return; }
  if [ -n "$expected" ]; then
    diff -r "$expected" "$ref" > /dev/null && pass "$name: --sequential gives the expected outputs" ||
      fail "$name: --sequential differs from $expected"
  fi
  for n in 1 2 7 64 256; do
    local out="$WORK/out-$name-$n"
    [ -n "$MOCK_PID" ] && mock_reset
    if ! ELSPETH_OUT_DIR="$out" "$ELSPETH" run -s "$settings" --execute \
         --max-rows-in-flight $n > "$out.log" 2>&1; then
      fail "$name N=$n: run failed"; cat "$out.log"; continue
    fi
    if diff -r "$ref" "$out" > /dev/null; then
      pass "$name N=$n: sinks byte-identical to --sequential"
    else
      fail "$name N=$n: sinks differ"; diff -r "$ref" "$out" | head -5
    fi
    if "$ELSPETH" verify --run latest > "$out.verify" 2>&1; then
      pass "$name N=$n: verify"
    else
      fail "$name N=$n: verify"; tail -5 "$out.verify"
    fi
  done
}

for dir in examples/*/; do
  prepare "$dir"
  compare_modes "$(basename "$dir")" "$SETTINGS" "$dir/expected"
  mock_stop
done

# Jitter: 400 rows, uniform 0–4 ms per row, first attempts of 10 % of the
# rows fail (the retry succeeds), a fork joined by a coalesce, then an
# aggregation in batches of 7.
awk 'BEGIN { print "id,group,value"; for (i = 1; i <= 400; i++) printf "%d,g%d,%d\n", i, i % 5, (i * 37) % 101 }' > jitter.csv
cat > jitter.yaml <<'YAML'
source:
  plugin: csv
  on_success: slow_in
  options:
    path: jitter.csv
    schema: {mode: fixed, fields: ["id: int", "group: str", "value: int"]}
    on_validation_failure: discard
transforms:
  - {name: slow, plugin: delay, input: slow_in, on_success: split_in,
     options: {distribution: uniform, min_ms: 0, max_ms: 4, seed: 7, error_rate: 0.1}}
  - {name: left, plugin: field_mapper, input: a, on_success: a_done, options: {mapping: {value: left_value}}}
  - {name: right, plugin: delay, input: b, on_success: b_done, options: {distribution: lognormal, median_ms: 1, sigma: 1, seed: 3}}
gates:
  - {name: split, input: split_in, condition: "row['id'] % 3 != 0", routes: {'true': fork, 'false': thirds}, fork_to: [a, b]}
coalesce:
  - {name: join, branches: {a: a_done, b: b_done}, policy: require_all, merge: union, on_success: stats_in}
aggregations:
  - {name: totals, plugin: batch_stats, input: stats_in, on_success: stats, trigger: {count: 7},
     output_mode: passthrough, options: {value_field: value, group_by: group}}
retry: {max_attempts: 3, initial_delay_seconds: 0.001, max_delay_seconds: 0.01}
sinks:
  stats: {plugin: csv, options: {path: "${ELSPETH_OUT_DIR}/stats.csv"}}
  thirds: {plugin: json, options: {path: "${ELSPETH_OUT_DIR}/thirds.json", format: json}}
YAML
compare_modes jitter jitter.yaml
finish

#!/usr/bin/env bash
# Coalesce policies and merges end to end. Branch b fails (truncate
# strict, on_error: discard) for rows without a `note`, so require_all
# cannot join them; quorum 1 and first can. verify passes every time.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
printf '{"id": 1, "note": "alpha", "x": "one"}\n{"id": 2, "x": "two"}\n{"id": 3, "note": "gamma", "x": "three"}\n' > in.jsonl

run_case() { # NAME POLICY_AND_MERGE
  cat > $1.yaml <<YAML
source: {plugin: json, on_success: split_in, options: {path: in.jsonl, on_validation_failure: discard}}
gates:
  - {name: split, input: split_in, condition: "True", routes: {'true': fork}, fork_to: [a, b]}
transforms:
  - {name: ta, plugin: field_mapper, input: a, on_success: a_done, options: {mapping: {x: shared}}}
  - {name: tb, plugin: truncate, input: b, on_success: b_done, on_error: discard,
     options: {fields: {note: 3}, strict: true}}
coalesce:
  - {name: join, branches: {a: a_done, b: b_done}, $2, on_success: out}
sinks:
  out: {plugin: json, options: {path: $1/out.jsonl}}
YAML
  expect "$1: runs" 0 "Run completed" -- "$ELSPETH" run -s $1.yaml --execute
  expect "$1: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest
}

run_case require_all "policy: require_all, merge: nested"
[ "$(wc -l < require_all/out.jsonl)" = 2 ] && pass "require_all: rows 1 and 3 joined" || fail "require_all: $(cat require_all/out.jsonl)"
grep -q '^{"a": {"id": 1, "note": "alpha", "shared": "one"}, "b": {"id": 1, "note": "alp", "x": "one"}}$' require_all/out.jsonl &&
  pass "nested merge keeps each branch" || fail "nested: $(head -1 require_all/out.jsonl)"
expect "require_all: the unjoined branch is FAILED with the reason" 0 "coalesce 'join': not every branch arrived" -- "$ELSPETH" explain --row 2

run_case quorum "policy: quorum, quorum_count: 1, merge: union"
[ "$(wc -l < quorum/out.jsonl)" = 3 ] && pass "quorum 1: all rows joined" || fail "quorum: $(cat quorum/out.jsonl)"
grep -q '^{"id": 2, "shared": "two"}$' quorum/out.jsonl && pass "union of the arrived branch only" || fail "union: $(sed -n 2p quorum/out.jsonl)"
grep -q '"note": "alp"' quorum/out.jsonl && pass "union: the later branch wins a collision" || fail "union collision: $(head -1 quorum/out.jsonl)"
expect "union collisions are recorded" 0 '"collisions":{"note":"b"}' -- "$ELSPETH" explain --row 1

run_case first "policy: first, merge: union"
grep -q '^{"id": 1, "note": "alpha", "shared": "one"}$' first/out.jsonl && pass "first: branch a (first to arrive) is used" || fail "first: $(head -1 first/out.jsonl)"
expect "first: the other branch is COALESCED, not used" 0 '"not_used":["b"]' -- "$ELSPETH" explain --row 1

run_case select "policy: best_effort, timeout_seconds: 5, merge: select, select_branch: b"
[ "$(wc -l < select/out.jsonl)" = 2 ] && pass "select b: rows without b fail" || fail "select: $(cat select/out.jsonl)"
expect "select: missing select_branch is explained" 0 "select_branch did not arrive" -- "$ELSPETH" explain --row 2
finish

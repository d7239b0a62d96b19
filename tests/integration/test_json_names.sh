#!/usr/bin/env bash
# ELSPETH 0.7.1's JSON source names its fields as a CSV header's (its
# resolve_field_names, then extend_field_resolution row by row): the rows
# and the quarantined rows are those the real 0.7.1 wrote
# (tests/fixtures/json_names); field_mapping applies to the normalized
# names, and a collision it makes stops the run as in 0.7.1; the names
# taken so far survive a SIGKILL (a later key meeting an earlier row's
# name is still refused after a resume); 0.4.1's format keeps its keys.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
FX=$SRC/tests/fixtures/json_names
cp "$FX/in.jsonl" "$FX/settings.yaml" .
mkdir -p runs

expect "0.7.1 format: runs" 0 "Run completed" -- "$ELSPETH" run -s settings.yaml --execute
cmp -s out.jsonl "$FX/out.jsonl" && pass "rows: 0.7.1's names, byte for byte (customer_id, camelcase, kept)" ||
  { fail "rows differ from 0.7.1's"; diff out.jsonl "$FX/out.jsonl" | head -4; }
cmp -s q.jsonl "$FX/q.jsonl" && pass "quarantined: 0.7.1's rows as they came, in 0.7.1's order" ||
  { fail "quarantined rows differ from 0.7.1's"; diff q.jsonl "$FX/q.jsonl" | head -4; }
errs=$(sqlite3 runs/audit.db "SELECT error FROM validation_errors ORDER BY error")
[[ "$errs" == *"'a_b' <- column 0 ('a b'), column 1 ('A_B')"* ]] &&
  [[ "$errs" == *"'customer_id' <- previously seen field, current field 'customer id'"* ]] &&
  [[ "$errs" == *"Header '!!' normalizes to empty string"* ]] &&
  pass "the trail records 0.7.1's three messages" || fail "messages: $errs"

printf '{"a": 1, "b": 2}\n' > clash.jsonl
sed -e 's/in.jsonl/clash.jsonl/' -e 's/field_mapping: {keep: kept}/field_mapping: {a: b}/' \
    -e 's#runs/audit.db#runs/clash.db#' settings.yaml > clash.yaml
expect "a collision field_mapping makes stops the run" 1 "field_mapping creates collision:" -- \
  "$ELSPETH" run -s clash.yaml --execute

# 0.4.1's format: keys as they are
cat > v04.yaml <<'EOF'
source:
  plugin: json
  on_success: out
  options: {path: in.jsonl, format: jsonl, schema: {mode: observed}, on_validation_failure: discard}
sinks:
  out: {plugin: json, options: {path: out04.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "lmdb://v04.lmdb"}
EOF
expect "0.4.1 format: runs" 0 "Run completed" -- "$ELSPETH" run -s v04.yaml --execute
head -1 out04.jsonl | grep -q '"a b": 1, "A_B": 2' && pass "0.4.1 format: the keys as they are" ||
  fail "0.4.1 format: $(head -1 out04.jsonl)"

# killed and resumed: the names rows took are remembered (a checkpoint
# holds them): "Amount $" (amount) is only in rows before 1,000, "amount"
# only after 2,000, and the run is killed after row 1,200; a resume that
# forgot the names would take the later "amount" rows
python3 - <<'PY'
with open("big.jsonl", "w") as f:
    for i in range(3000):
        extra = ""
        if i % 10 == 5:
            extra = ', "%s": %d' % ("Amount $" if i < 1000 else "amount" if i >= 2000 else "w", i)
        f.write('{"Customer ID": %d, "v": %d%s}\n' % (i, i * 2, extra))
PY
cat > big.yaml <<'EOF'
sources:
  primary:
    plugin: json
    on_success: slow_in
    options: {path: big.jsonl, format: jsonl, schema: {mode: observed}, on_validation_failure: q}
transforms:
- {name: slow, plugin: delay, input: slow_in, on_success: out, on_error: discard, options: {schema: {mode: observed}, distribution: uniform, min_ms: 1, max_ms: 2, seed: 3}}
sinks:
  out: {plugin: csv, on_write_failure: discard, options: {path: big_out.csv, schema: {mode: observed}}}
  q: {plugin: json, on_write_failure: discard, options: {path: big_q.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "lmdb://big.lmdb"}
checkpoint: {frequency: every_row}
EOF
"$ELSPETH" run -s big.yaml --execute > /dev/null 2>&1
mv big_out.csv want_out.csv; mv big_q.jsonl want_q.jsonl; rm -rf big.lmdb
[ "$(wc -l < want_q.jsonl)" = 100 ] && pass "every later 'amount' meets 'Amount \$''s name (100 rows refused)" ||
  fail "$(wc -l < want_q.jsonl) rows quarantined, want 100"
kill_at_lines big_out.csv 1200 -- "$ELSPETH" run -s big.yaml --execute --max-rows-in-flight 4
got=$(wc -l < big_out.csv)
expect "killed at $got lines: resumed" 0 "" -- "$ELSPETH" resume latest -s big.yaml --execute
cmp -s big_out.csv want_out.csv && cmp -s big_q.jsonl want_q.jsonl && [ "$got" -lt 1990 ] &&
  pass "resumed: the same rows and quarantined rows as the unkilled run (killed at line $got)" ||
  fail "resumed output differs (killed at $got): $(diff big_q.jsonl want_q.jsonl | head -3)"
finish

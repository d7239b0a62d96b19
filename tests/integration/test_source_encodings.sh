#!/usr/bin/env bash
# Source files in an encoding other than UTF-8 (ADR 0056): a cp1252 CSV
# and a latin-1 text file give the rows the real ELSPETH 0.7.1 gave for
# them (tests/fixtures/source_encodings, recorded with
# tests/reference/elspeth071); a byte the codec cannot decode fails the
# run naming the file and the byte; an unknown codec is refused at
# validate; a run killed in the middle of a cp1252 file resumes to the
# same bytes; both formats take the option.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
FX=$SRC/tests/fixtures/source_encodings
cp "$FX/in1252.csv" "$FX/in.txt" .

cat > p.yaml <<'EOF'
sources:
  primary:
    plugin: csv
    on_success: out
    options: {path: in1252.csv, encoding: cp1252, schema: {mode: observed}, on_validation_failure: discard}
  lines:
    plugin: text
    on_success: out
    options: {path: in.txt, encoding: latin-1, column: line, schema: {mode: observed}, on_validation_failure: discard}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: out.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "sqlite:///audit.db"}
EOF
expect "cp1252 csv and latin-1 text: run" 0 "Run completed" -- "$ELSPETH" run -s p.yaml --execute
cmp -s out.jsonl "$FX/out.jsonl" && pass "the rows are 0.7.1's, byte for byte (€, é, curly quotes)" ||
  { fail "the rows differ from 0.7.1's"; diff out.jsonl "$FX/out.jsonl" | head -4; }

# 0.4.1's format takes it too
cat > v04.yaml <<'EOF'
source:
  plugin: csv
  on_success: out
  options: {path: in1252.csv, encoding: windows-1252, schema: {mode: observed}, on_validation_failure: discard}
sinks:
  out: {plugin: json, options: {path: out04.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "lmdb://v04.lmdb"}
EOF
expect "0.4.1's format, windows-1252: run" 0 "Run completed" -- "$ELSPETH" run -s v04.yaml --execute
[ "$(head -2 out04.jsonl)" = "$(head -2 "$FX/out.jsonl")" ] && pass "0.4.1's format: the same rows" ||
  fail "0.4.1's format: $(head -1 out04.jsonl)"

# a byte cp1252 has no character for: the run fails, naming it (0.7.1
# completes with no row at all, losing the file's rows without a word)
printf 'id,name\n1,a\x81b\n' > bad.csv
sed -e 's/in1252.csv/bad.csv/' -e '/  lines:/,/column: line/d' p.yaml > bad.yaml
expect "an undecodable byte fails the run, named" 1 "bad.csv: byte 11 cannot be decoded as cp1252" -- \
  "$ELSPETH" run -s bad.yaml --execute
sed 's/encoding: cp1252/encoding: bogus-codec/' bad.yaml > unk.yaml
expect "an unknown codec is refused at validate" 1 "unknown encoding: bogus-codec" -- \
  "$ELSPETH" validate -s unk.yaml

# killed in the middle of a decoded file, resumed: the same bytes as a run
# that was not killed (offsets are the decoded stream's, the same on
# every open)
python3 - <<'PY'
import random
random.seed(5)
with open("big1252.csv", "wb") as f:
    f.write(b"id,name,note\n")
    for i in range(3000):
        f.write(("%d,caf\xe9 %d,\u20ac%d \u201cq\u201d\n" % (i, i, random.randint(1, 999))).encode("cp1252"))
PY
cat > big.yaml <<'EOF'
sources:
  primary:
    plugin: csv
    on_success: slow_in
    options: {path: big1252.csv, encoding: cp1252, schema: {mode: observed}, on_validation_failure: discard}
transforms:
- {name: slow, plugin: delay, input: slow_in, on_success: out, on_error: discard, options: {schema: {mode: observed}, distribution: uniform, min_ms: 1, max_ms: 2, seed: 3}}
sinks:
  out: {plugin: csv, on_write_failure: discard, options: {path: big_out.csv, schema: {mode: observed}}}
landscape: {url: "lmdb://big.lmdb"}
checkpoint: {frequency: every_row}
EOF
"$ELSPETH" run -s big.yaml --execute > /dev/null 2>&1
mv big_out.csv want.csv; rm -rf big.lmdb
kill_at_lines big_out.csv 1200 -- "$ELSPETH" run -s big.yaml --execute --max-rows-in-flight 4
got=$(wc -l < big_out.csv)
expect "killed at $got lines: resumed" 0 "" -- "$ELSPETH" resume latest -s big.yaml --execute
cmp -s big_out.csv want.csv && [ "$got" -lt 3001 ] &&
  pass "the resumed file is the unkilled run's, byte for byte (killed at line $got of 3001)" ||
  fail "resumed output differs (killed at $got): $(diff big_out.csv want.csv | head -3)"
finish

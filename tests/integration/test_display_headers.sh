#!/usr/bin/env bash
# ELSPETH's `headers:` of the csv and json sinks (ADR 0052): normalized,
# original (the source's header names, kept through field_mapper's
# renames) or a map field -> name. The wanted files are what the real
# ELSPETH 0.4.1 and 0.7.1 wrote for these settings and this input
# (tests/fixtures/display_headers, recorded with ../shared/elspeth-reference
# and tests/reference/elspeth071); here we write them and compare bytes.
# Then: a kill and resume, and an append run, under an original-name
# header; a bad `headers` value refused at validate.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
FX=$SRC/tests/fixtures/display_headers
cp "$FX/in.csv" in.csv

# pipe FORMAT(v04|v07) NAME PLUGIN HEADERS [EXTRA_SINK_OPTS] [SCHEMA] [MAPPER]
pipe() {
  local src="source:
  plugin: csv
  on_success: m"
  [ "$1" = v07 ] && src="sources:
  primary:
    plugin: csv
    on_success: m"
  local ind=""; [ "$1" = v07 ] && ind="  "
  cat <<EOF
$src
${ind}  options: {path: in.csv, schema: {mode: observed}, on_validation_failure: discard}
transforms:
- name: add
  plugin: field_mapper
  input: m
  on_success: out
  on_error: discard
  options: {schema: {mode: observed}, mapping: {${7:-notes: note_text}}}
sinks:
  out:
    plugin: $3
    on_write_failure: discard
    options: {path: $2.out, headers: $4, schema: ${6:-{mode: observed\}}${5:-}}
landscape: {url: "lmdb://$2.lmdb"}
EOF
}
FIXED="{mode: fixed, fields: ['customer_id: str', 'amount_usd: str', 'note_text: str']}"
check() { # $1 name (wanted: $FX/$1.out)
  rm -rf "$1.out" "$1.lmdb"
  if ! "$ELSPETH" run -s "$1.yaml" --execute > "$1.log" 2>&1; then
    fail "$1: run: $(tail -2 "$1.log")"
  elif cmp -s "$1.out" "$FX/$1.out"; then pass "$1: ELSPETH's bytes ($(head -c 60 "$1.out" | head -1))"
  else fail "$1: $(diff "$1.out" "$FX/$1.out" | head -4)"; fi
}

# 1. ELSPETH 0.4.1: original names, through a rename; a map, unmapped
#    fields keeping their names; JSON keys renamed the same way
pipe v04 v04_csv_orig csv original > v04_csv_orig.yaml
pipe v04 v04_json_orig json original ", format: jsonl" > v04_json_orig.yaml
pipe v04 v04_json_arr json original > v04_json_arr.yaml
pipe v04 v04_csv_cust csv "{customer_id: CUST, note_text: 'Note, text'}" > v04_csv_cust.yaml
pipe v04 v04_json_cust json "{customer_id: CUST}" ", format: jsonl" > v04_json_cust.yaml
pipe v04 v04_csv_fixed csv original "" "$FIXED" > v04_csv_fixed.yaml
for f in v04_csv_orig v04_json_orig v04_json_arr v04_csv_cust v04_json_cust v04_csv_fixed; do check $f; done

# 2. ELSPETH 0.7.1: `original` writes the field names (every run of the
#    real 0.7.1 did); a map must name every field
pipe v07 v07_csv_orig csv original > v07_csv_orig.yaml
pipe v07 v07_json_orig json original ", format: jsonl" > v07_json_orig.yaml
pipe v07 v07_csv_fixed csv original "" "$FIXED" > v07_csv_fixed.yaml
for f in v07_csv_orig v07_json_orig v07_csv_fixed; do check $f; done
pipe v07 v07_cust csv "{customer_id: CUST, note_text: 'Note, text'}" > v07_cust.yaml
rm -rf v07_cust.*out v07_cust.lmdb
"$ELSPETH" run -s v07_cust.yaml --execute > v07_cust.log 2>&1
if [ ! -s v07_cust.out ] && "$ELSPETH" explain -s v07_cust.yaml --run latest --row 1 2>&1 |
     grep -q "CUSTOM header mode has no mapping for field 'amount_usd'"; then
  pass "0.7.1, a map missing a field: the rows fail with 0.7.1's message, nothing written"
else fail "0.7.1 strict map: $(head -3 v07_cust.out 2>/dev/null) $(tail -2 v07_cust.log)"; fi
pipe v07 v07_cust_fixed csv "{customer_id: CUST}" "" "$FIXED" > v07_cust_fixed.yaml
expect "0.7.1, a map missing a declared field: refused before any row" 1 \
  "CUSTOM header mode has no mapping for field 'amount_usd'" -- \
  "$ELSPETH" run -s v07_cust_fixed.yaml --execute

# 3. a bad mode, at validate, where it is written
pipe v04 bad csv bogus > bad.yaml
expect "headers: bogus is refused" 1 "bad.yaml:16:39: sinks.out.options.headers" -- "$ELSPETH" validate -s bad.yaml
expect "... with ELSPETH's words" 1 "Invalid header mode 'bogus'. Expected 'normalized', 'original', or mapping dict." -- \
  "$ELSPETH" validate -s bad.yaml

pipe v04 dup csv "{customer_id: X, note_text: X}" > dup.yaml
expect "two fields mapped to one name are refused, as ELSPETH does" 1 \
  "Duplicate header mapping targets: ['X']. Each output header must be unique." -- \
  "$ELSPETH" validate -s dup.yaml

# 4. killed and resumed under an original-name header: the same bytes
python3 - <<'PY'
import csv
with open("big.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["Customer ID!!", "  Amount (USD)  ", "notes"])
    for i in range(1, 3001):
        w.writerow(["c%d" % i, "%d.5" % i, "n, %d" % i])
PY
cat > big.yaml <<'EOF'
source:
  plugin: csv
  on_success: m
  options: {path: big.csv, schema: {mode: observed}, on_validation_failure: discard}
transforms:
- name: slow
  plugin: delay
  input: m
  on_success: m2
  options: {schema: {mode: observed}, distribution: uniform, min_ms: 1, max_ms: 3, seed: 2}
- name: add
  plugin: field_mapper
  input: m2
  on_success: out
  on_error: discard
  options: {schema: {mode: observed}, mapping: {notes: note_text}}
sinks:
  out:
    plugin: csv
    on_write_failure: discard
    options: {path: big.out, headers: original, schema: {mode: observed}}
landscape: {url: "lmdb://big.lmdb"}
EOF
echo 'checkpoint: {frequency: every_n, checkpoint_interval: 100}' >> big.yaml
rm -rf big.out big.lmdb
if "$ELSPETH" run -s big.yaml --execute > big.log 2>&1; then mv big.out want_big.out
else fail "big: $(tail -2 big.log)"; fi
head -1 want_big.out | grep -q '^Customer ID!!,  Amount (USD)  ,notes' &&
  pass "the long run's header has the source's names" || fail "long run header: $(head -1 want_big.out)"
rm -rf big.out big.lmdb
"$ELSPETH" run -s big.yaml --execute --max-rows-in-flight 8 > /dev/null 2>&1 &
pid=$!
started big.out
for _ in $(seq 1 3000); do [ "$(wc -l < big.out)" -ge 1500 ] && break; sleep 0.005; done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
# the resume continues the file under its header (not from the start)
"$ELSPETH" resume latest -s big.yaml > plan.txt 2>&1
grep -qE "sink out: big.out cut back to [0-9]+ bytes \([1-9][0-9]* rows\)" plan.txt &&
  pass "the resume continues the file ($(grep -o 'cut back to [^)]*)' plan.txt))" ||
  fail "the resume starts over: $(head -3 plan.txt)"
if "$ELSPETH" resume latest -s big.yaml --execute > resume.log 2>&1 && cmp -s big.out want_big.out; then
  pass "killed and resumed: the same bytes, one original-name header"
else fail "resume: $(tail -2 resume.log) $(cmp big.out want_big.out)"; fi

# 5. append: the existing original-name header is taken for the fields
pipe v04 app csv original ", mode: append" > app.yaml
rm -rf app.out app.lmdb
"$ELSPETH" run -s app.yaml --execute > /dev/null 2>&1
rm -rf app.lmdb
if "$ELSPETH" run -s app.yaml --execute > app.log 2>&1 && [ "$(wc -l < app.out)" = 5 ] &&
   [ "$(grep -c 'Customer ID!!' app.out)" = 1 ]; then
  pass "append under an original-name header: one header, the rows of both runs"
else fail "append: $(tail -2 app.log); $(cat app.out)"; fi

finish

#!/usr/bin/env bash
# Bad input: each case gives a message a user can act on and the right exit
# code, and no row vanishes without being counted (every run that completes
# is verified).
source "$(dirname "$0")/lib.sh"
cd "$WORK"

mkdir -p data
printf 'id,name,score\n1,ann,1.5\n2,bob,2.5\n' > data/ok.csv

# pipeline SOURCE_OPTS [EXTRA] -> writes p.yaml
pipeline() {
  cat > p.yaml <<YAML
source:
  plugin: csv
  on_success: gate_in
  options:
    $1
    on_validation_failure: quarantine
gates:
  - name: check
    input: gate_in
    condition: "${COND:-row['name'] != 'zed'}"
    routes: {'true': out, 'false': out}
sinks:
  out: {plugin: csv, options: {path: ${OUT:-out}/out.csv}}
  quarantine: {plugin: json, options: {path: ${OUT:-out}/quarantine.jsonl}}
${2:-}
YAML
}
SCHEMA='schema: {mode: fixed, fields: ["id: int", "name: str", "score: float"]}'

# --- settings errors ---
printf 'source:\n  plugin: csv\n  options: [a, b\n' > p.yaml
expect "malformed YAML names file:line:col" 1 "p.yaml:4:1: malformed YAML" -- "$ELSPETH" validate -s p.yaml

pipeline "path: data/ok.csv" "retyr: {max_attempts: 2}"
expect "misspelled key suggests the right one" 1 "unknown key 'retyr' (did you mean 'retry'?)" -- "$ELSPETH" validate -s p.yaml

pipeline "path: data/ok.csv" "retry: {max_attempts: many}"
expect "wrong type says what was expected" 1 "retry.max_attempts: expected an integer, got 'many'" -- "$ELSPETH" validate -s p.yaml

unset ELSPETH_TEST_UNSET
pipeline 'path: ${ELSPETH_TEST_UNSET}'
expect "missing env var is named" 1 "environment variable 'ELSPETH_TEST_UNSET' is not set" -- "$ELSPETH" validate -s p.yaml

# validate checks the source's options as run does, touching no file
pipeline "path: data/ok.csv
    delimter: ';'"
expect "validate: a misspelt source option" 1 "source.options.delimter: unknown key 'delimter' (did you mean 'delimiter'?)" -- "$ELSPETH" validate -s p.yaml
pipeline "path: data/ok.csv
    schema: {fields: 5}"
expect "validate: a source schema that is none" 1 "source.options.schema" -- "$ELSPETH" validate -s p.yaml
# one name space for nodes, sinks included (ELSPETH's rule and words)
pipeline "path: data/ok.csv" "transforms: [{name: out, plugin: passthrough, input: x_in, on_success: out}]"
expect "validate: a transform named as a sink" 1 "Node name 'out' is used by both transform and sink. All node names must be unique" -- "$ELSPETH" validate -s p.yaml
expect "missing settings file" 1 "cannot open settings file nope.yaml" -- "$ELSPETH" validate -s nope.yaml
expect "usage error exits 2" 2 "expected -s SETTINGS" -- "$ELSPETH" run
expect "unknown command exits 2" 2 "unknown command" -- "$ELSPETH" frobnicate

pipeline "path: data/ok.csv" "checkpoint: {frequency: every_n}"
expect "checkpoint every_n without interval" 1 "frequency: every_n needs checkpoint_interval" -- "$ELSPETH" validate -s p.yaml

# --- source errors ---
pipeline "path: data/missing.csv"
expect "missing input file names the path" 1 "data/missing.csv" -- "$ELSPETH" run -s p.yaml --execute
[ ! -e out/out.csv ] && pass "missing input: no output written" || fail "missing input: output written"

mkdir -p data/adir
pipeline "path: data/adir"
expect "unreadable input (a directory) is an error" 1 "data/adir" -- "$ELSPETH" run -s p.yaml --execute

printf 'id,name,score\n1,ann,1.5\n2,bob\n3,cy,3.5,extra\n4,dee,4.5\n' > data/ragged.csv
rm -rf out; pipeline "path: data/ragged.csv"
expect "ragged rows are quarantined and counted" 0 "quarantined 2" -- "$ELSPETH" run -s p.yaml --execute
expect "ragged: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest
[ "$(wc -l < out/quarantine.jsonl)" = 2 ] && pass "ragged: 2 rows in quarantine" || fail "ragged: quarantine has $(wc -l < out/quarantine.jsonl) rows"
grep -q 'line 3' out/quarantine.jsonl && pass "ragged: reason names the line" || fail "ragged: no line in reason"
[ "$(wc -l < out/out.csv)" = 3 ] && pass "ragged: 2 good rows + header written" || fail "ragged: out.csv has $(wc -l < out/out.csv) lines"

printf 'id,name,score\n1,ann,1.5\n2,b\xffb,2.5\n3,cy,3.5\n' > data/utf8.csv
rm -rf out; pipeline "path: data/utf8.csv"
expect "invalid UTF-8 is quarantined, not fatal" 0 "quarantined 1" -- "$ELSPETH" run -s p.yaml --execute
expect "invalid UTF-8: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest

printf 'id,name,score\n1,ann,1.5\nx,bob,2.5\n3,cy,NaN\n4,dee,4.5\n' > data/coerce.csv
rm -rf out; pipeline "path: data/coerce.csv
    $SCHEMA"
expect "uncoercible fields are quarantined" 0 "quarantined 2" -- "$ELSPETH" run -s p.yaml --execute
expect "uncoercible: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest
grep -q "field 'id'" out/quarantine.jsonl && pass "uncoercible: reason names field id" || fail "uncoercible: field id not named"
grep -q "field 'score'" out/quarantine.jsonl && pass "uncoercible: reason names field score" || fail "uncoercible: field score not named"

# --- expression errors ---
COND="row['id'] >" pipeline "path: data/ok.csv"
expect "expression syntax error points at the column" 1 "column" -- "$ELSPETH" validate -s p.yaml
COND="row['id'] >" pipeline "path: data/ok.csv"
expect "expression syntax error names the key" 1 "gates[0].condition" -- "$ELSPETH" validate -s p.yaml

rm -rf out; COND="row['nope'] > 1" pipeline "path: data/ok.csv"
expect "expression runtime error names row and field" 1 "row 1: gate 'check'" -- "$ELSPETH" run -s p.yaml --execute
COND="row['nope'] > 1" pipeline "path: data/ok.csv"
expect "expression runtime error names the field" 1 "'nope'" -- "$ELSPETH" run -s p.yaml --execute

# --- output errors ---
rm -rf deep; OUT=deep/er/dir pipeline "path: data/ok.csv"
expect "missing output directory is created" 0 "Run completed" -- "$ELSPETH" run -s p.yaml --execute
expect "created output directory: verify" 0 "verify: OK" -- "$ELSPETH" verify --run latest
[ -f deep/er/dir/out.csv ] && pass "output directory created" || fail "output directory not created"

touch afile; OUT=afile/sub pipeline "path: data/ok.csv"
expect "unwritable output fails before any row" 1 "afile/sub" -- "$ELSPETH" run -s p.yaml --execute

cat > s.yaml <<'YAML'
source: {plugin: csv, on_success: out, options: {path: data/ok.csv, on_validation_failure: discard}}
sinks:
  out: {plugin: csv, options: {path: sinkopt/out.csv, delimeter: ";"}}
YAML
expect "validate checks sink options" 1 "s.yaml:3:55: sinks.out.options.delimeter: unknown key 'delimeter' (did you mean 'delimiter'?)" -- "$ELSPETH" validate -s s.yaml
[ ! -e sinkopt ] && pass "validate of sink options wrote nothing" || fail "validate created sink output"

# --- run without --execute writes nothing ---
rm -rf out; pipeline "path: data/ok.csv"
expect "run without --execute says how" 0 "--execute" -- "$ELSPETH" run -s p.yaml
[ ! -e out ] && pass "run without --execute wrote nothing" || fail "run without --execute wrote files"

finish

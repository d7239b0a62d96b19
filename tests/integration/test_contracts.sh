#!/usr/bin/env bash
# Schema contracts (issue 32, ADR 0034): `validate` gives real ELSPETH
# 0.4.1's verdict on every pipeline of tests/fixtures/elspeth_validate
# (recorded there by run_reference.sh; ELSPETH is never run here):
#   - the same verdict (accepted / refused), except where ADR 0034 says
#     why not (25: an unknown quarantine sink, which ELSPETH's validate
#     lets through and its run refuses);
#   - a refusal's message carries ELSPETH's substance: for an edge, the
#     two schema classes and "Missing fields / Type mismatches / Extra
#     fields" exactly (our type names `any` and `float | None` for its
#     `typing.Any` and pydantic's repr of an optional float); for a
#     contract, the consumer, its required fields, the producer, its
#     guarantees and the missing fields; otherwise ELSPETH's words; and it
#     starts with file:line:col;
#   - `run` refuses the same pipelines before anything is written;
#   - `validate --verbose` prints every edge with what flows along it;
#   - the SQL trail records each node's declared fields (schema_fields_json);
#   - the examples of examples/ still validate.
source "$(dirname "$0")/lib.sh"
FIX=$SRC/tests/fixtures/elspeth_validate
# check NAME CONDITION: CONDITION (a shell expression) holds.
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
cd "$WORK"
cp "$FIX"/*.yaml "$FIX"/input.csv .

python3 - "$FIX/verdicts.json" > cases.tsv <<'PY'
import json, re, sys
for v in json.load(open(sys.argv[1])):
    msg = v['message_full'] if 'message_full' in v else v['message']
    msg = msg.replace('typing.Any', 'any')
    msg = re.sub(r'typing\.Optional\[typing\.Annotated\[float, FieldInfo\(.*?\)\]\]', 'float | None', msg)
    needles = []
    if v['verdict'] == 'refused':
        m = re.search(r" invalid: (producer schema .*)", msg)
        if m:
            needles.append(m.group(1).splitlines()[0])
        elif msg.startswith('Schema contract violation'):
            c = re.search(r"Consumer \((.*?)\) requires fields: (\[.*?\])", msg)
            p = re.search(r"Producer \((.*?)\) guarantees: (.*)", msg)
            miss = re.search(r"Missing fields: (\[.*?\])", msg)
            needles += ["consumer (%s) requires fields %s" % c.groups(),
                        "producer (%s) guarantees %s" % p.groups(),
                        "missing fields %s" % miss.group(1)]
        else:
            # its pydantic wrapper names a Python class; the words are the rule's
            needles.append(re.sub(r"^Invalid configuration for \w+: ", "", msg.split('\n')[0]))
    print('\t'.join([v['file'], str(v['elspeth_exit'])] + needles))
PY

while IFS=$'\t' read -r file want n1 n2 n3; do
  el=$(timeout 30 "$ELSPETH" validate -s "$file" 2> err.txt > out.txt; echo $?)
  msg=$(tail -1 err.txt)
  if [ "$file" = 25-quarantine-unknown-sink.yaml ]; then
    # ADR 0034: refused at validate (ELSPETH refuses it when the run starts)
    check "$file: refused (ELSPETH's run refuses it too)" '[ "$el" = 1 ] && grep -q "'"'quarantine' is not a sink"'" err.txt'
    continue
  fi
  if [ "$want" = 0 ]; then
    check "$file: accepted, as ELSPETH accepts it" '[ "$el" = 0 ]'
    [ "$el" = 0 ] || sed 's/^/    /' err.txt
    continue
  fi
  ok=1
  for n in "$n1" "$n2" "$n3"; do
    [ -z "$n" ] || grep -qF -- "$n" err.txt || { ok=0; echo "    wants: $n"; }
  done
  if [ "$el" = 1 ] && [ $ok = 1 ] && grep -qE "^error: $file:[0-9]+:[0-9]+: " err.txt; then
    pass "$file: refused with ELSPETH's reason: ${msg#error: }"
  else
    fail "$file: exit $el, message: $msg"
  fi
  # run refuses it too, before writing anything
  rm -rf output state
  rc=$(timeout 30 "$ELSPETH" run -s "$file" --execute > run.txt 2>&1; echo $?)
  check "$file: run --execute refuses it (exit $rc) and writes nothing" \
    '[ "$rc" = 1 ] && [ ! -e output ] && [ ! -e state ]'
done < cases.tsv

# --verbose: every edge and what flows along it
"$ELSPETH" validate -s 30-coalesce-union-intersection.yaml --verbose > v30.txt 2>&1
"$ELSPETH" validate -s 21-passthrough-fixed-then-gate-extra.yaml --verbose > v21.txt 2>&1
sed -i 's/fields: \["id: int", "name: str"\]}$/fields: ["id: int", "name: str", "score: int"]}/' 21-passthrough-fixed-then-gate-extra.yaml
"$ELSPETH" validate -s 21-passthrough-fixed-then-gate-extra.yaml --verbose > v21ok.txt 2>&1; rc=$?
check "validate --verbose: an accepted pipeline lists its 4 edges with their schemas" \
  '[ "$rc" = 0 ] && [ "$(grep -c "^  edge " v21ok.txt)" = 4 ] &&
   grep -qF "edge '"'by_score' -> 'high' (true): fixed {id: int, name: str, score: int}; guarantees ['id', 'name', 'score']"'" v21ok.txt'
[ "$rc" = 0 ] || sed 's/^/    /' v21ok.txt
check "validate --verbose: a refused pipeline still names its error" 'grep -q "Schema contract violation" v30.txt'

# llm_multi_query adds {query}_{suffix}: a fixed sink may take it
cat > mq.yaml <<'EOF2'
source: {plugin: csv, on_success: t_in, options: {path: input.csv, schema: {mode: fixed, fields: ["id: int", "name: str", "score: int"]}, on_validation_failure: discard}}
transforms:
  - name: t
    plugin: llm_multi_query
    input: t_in
    on_success: out
    options:
      provider: openrouter
      api_key: sk-test
      model: m
      schema: {mode: fixed, fields: ["id: int", "name: str", "score: int"]}
      queries:
        - {name: cs1, input_fields: [name], output_fields: [{suffix: rank, type: integer}]}
sinks:
  out: {plugin: csv, options: {path: output/o.csv, schema: {mode: fixed, fields: ["id: int", "name: str", "score: int", "cs1_rank: any?"]}}}
EOF2
"$ELSPETH" validate -s mq.yaml > mq.txt 2>&1
check "llm_multi_query: its {query}_{suffix} fields reach a fixed sink that declares them" '[ $? = 0 ] || grep -q "Settings valid" mq.txt'
grep -q "Settings valid" mq.txt || sed 's/^/    /' mq.txt
# a gate route whose key reads like a divert label is still judged
cat > div.yaml <<'EOF2'
source: {plugin: csv, on_success: g_in, options: {path: input.csv, schema: {mode: fixed, fields: ["id: int", "name: str"]}, on_validation_failure: discard}}
gates:
  - {name: g, input: g_in, condition: "row['id']", routes: {'on_error': errs, '1': out}}
sinks:
  out: {plugin: csv, options: {path: output/o.csv, schema: {mode: fixed, fields: ["id: int", "name: str"]}}}
  errs: {plugin: csv, options: {path: output/e.csv, schema: {mode: fixed, fields: ["nope: str"]}}}
EOF2
"$ELSPETH" validate -s div.yaml > div.txt 2>&1
check "a gate route named 'on_error' is an ordinary edge: judged" 'grep -q "Edge from '"'g' to 'errs' (on_error) invalid"'" div.txt'

# the SQL trail records each node's declared fields, as ELSPETH does
rm -rf output state
"$ELSPETH" run -s 01-fixed-same-fields.yaml --execute > run01.txt 2>&1 &&
  "$ELSPETH" export --run latest --sqlite t.db > /dev/null 2>&1
got=$(sqlite3 t.db "SELECT schema_fields_json FROM nodes WHERE node_type = 'source'" 2>&1)
check "export: the source's schema_fields_json" \
  '[ "$got" = '"'"'[{"name":"id","required":true,"type":"int"},{"name":"name","required":true,"type":"str"},{"name":"score","required":true,"type":"int"}]'"'"' ]'
[ "$got" = '[{"name":"id","required":true,"type":"int"},{"name":"name","required":true,"type":"str"},{"name":"score","required":true,"type":"int"}]' ] || echo "    got: $got"

# our examples and the schema-bearing pipelines of the other tests validate
for f in "$SRC"/examples/*/*.yaml; do
  (cd "$SRC" && "$ELSPETH" validate -s "$f" > /dev/null 2> "$WORK/ex.err") ||
    { fail "examples: $f refused: $(tail -1 "$WORK/ex.err")"; continue; }
  pass "examples: $(basename "$(dirname "$f")")/$(basename "$f") validates"
done
finish

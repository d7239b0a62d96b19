#!/usr/bin/env bash
# ELSPETH 0.4.1's LLM shapes run unmodified (issue #16; ADR 0025): `llm`
# with `queries:` and the `openrouter_batch_llm` aggregation, against
# elspeth-mock-llm. The expected rows in expected/elspeth_llm/ are what
# real ELSPETH 0.4.1 wrote for the same pipelines (*.yaml there, the port
# filled in) and inputs against the same mock (default options; fenced.yaml
# with --fence-rate 1). Rows are compared as JSON values with their key
# order (our json sink writes compact JSON, ELSPETH's writes ", " and
# ": " and \u escapes; a CSV dict cell is Python's repr there, JSON here).
# Also: ELSPETH's example pipelines validate, and the call records.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/llm_lib.sh"
cd "$WORK"
[ -x "$MOCK" ] || { fail "no mock binary at $MOCK"; finish; exit; }
EXP="$SRC/tests/integration/expected/elspeth_llm"
export OPENROUTER_API_KEY=k

# same_rows NAME OURS THEIRS: the files hold the same rows (jsonl or csv),
# values and key order alike; with `errors`, our _error/_error_node are
# set aside and the message must name query, field and reason.
same_rows() {
  "$PY" - "$@" <<'PY'
import ast, csv, json, sys
name, ours, theirs = sys.argv[1:4]
mode = sys.argv[4] if len(sys.argv) > 4 else ""
def load(p, ours):
    if p.endswith(".csv"):
        rows = list(csv.DictReader(open(p, newline="")))
        for r in rows:
            for k, v in r.items():
                if v.startswith("{"):
                    r[k] = ast.literal_eval(v)
        return rows
    return [json.loads(l) for l in open(p)]
a, b = load(ours, True), load(theirs, False)
if mode == "errors":
    for r in a:
        msg = r.pop("_error", "")
        r.pop("_error_node", None)
        if not all(w in msg for w in ("query 'wrongtype'", "field 'rationale'",
                                      "expected integer, got str", "field_type_mismatch")):
            print(f"{name}: error message lacks the details: {msg!r}"); sys.exit(1)
ok = a == b and [list(r) for r in a] == [list(r) for r in b]
if ok and mode != "errors" and open(ours, "rb").read() != open(theirs, "rb").read():
    print(f"{name}: same rows, other bytes than ELSPETH's"); ok = False
if not ok:
    print(f"{name}: rows differ\n ours:   {a[:1]}\n theirs: {b[:1]}")
sys.exit(0 if ok else 1)
PY
}

# request YAML ROW NODE CALL: the request body of call CALL (0-based) at
# node NODE for row ROW of the latest run, as compact JSON.
request() {
  "$ELSPETH" explain -s "$1" --run latest --row "$2" --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
st = [s for t in d["tokens"] for s in t["states"] if s["node"] == sys.argv[1]][0]
print(json.dumps(st["calls"][int(sys.argv[2])]["request"], separators=(",", ":")))' "$3" "$4"
}
# ncalls DB SQL: a count from the SQL trail.
ncalls() { "$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$1" "$2"; }

prepare() { # prepare NAME: the fixture pipeline with this mock's port
  sed "s/@PORT@/$PORT/" "$EXP/$1.yaml" > "$1.yaml"
}
cp "$EXP"/in.csv "$EXP"/sent.csv "$EXP"/tickets.csv . && cp -r "$EXP/prompts" .

# ------------------------------------------------- 1. llm with queries:
start_mock q
for p in a b c; do prepare $p; done
run qa a.yaml
is "queries (map form, json_object, sequential): exits 0" [ "$RC" = 0 ]
is "queries (map form): the rows ELSPETH wrote" same_rows a out_a.csv "$EXP/out_a.csv"
run qb b.yaml
is "queries (list form, structured, all 5 types, lookup, no output_fields): the rows ELSPETH wrote" \
  same_rows b out_b.jsonl "$EXP/out_b.jsonl"
REQ=$(request b.yaml 1 mq 0)
is "queries: structured requests carry ELSPETH's json_schema (name <query>_output, no strict)" \
  grep -qF '"response_format":{"type":"json_schema","json_schema":{"name":"triage_output","schema":{"type":"object","properties":{"label":{"type":"string","enum":["urgent","normal","spam"]}' <<<"$REQ"
is "queries: a per-query max_tokens is sent, temperature always" \
  grep -qF '"temperature":0.0,"max_tokens":50,' <<<"$REQ"
is "queries: a query without output_fields sends no response_format" \
  bash -c '! grep -q response_format <<<"$1"' _ "$(request b.yaml 1 mq 1)"
is "queries: the template sees row.<variable>, row.source_row and lookup" \
  grep -qF '"content":"Team Logistics: The parcel arrived two days late and the box was crushed."' <<<"$REQ"
run qc c.yaml
is "queries: a wrong type sends every row to on_error, as ELSPETH (same rows)" \
  same_rows c bad_c.jsonl "$EXP/bad_c.jsonl" errors
is "queries: pool_size 1 is sequential: 2 calls a row, the failing query ends it (ELSPETH too)" \
  [ "$(ncalls c.db 'select count(*) from calls')" = 6 ]
stop_mock

start_mock fenced --fence-rate 1
prepare fenced
run qf fenced.yaml
is "queries: fenced answers are stripped as ELSPETH strips them (same rows)" \
  same_rows fenced out_fenced.jsonl "$EXP/out_fenced.jsonl"
stop_mock

# ------------------------------------------- 2. openrouter_batch_llm
start_mock batch
prepare sent
prepare tick
run bs sent.yaml
is "openrouter_batch_llm (count 5, passthrough, 7 rows): the rows ELSPETH wrote" \
  same_rows sent out_sent.jsonl "$EXP/out_sent.jsonl"
is "openrouter_batch_llm: each member's call is recorded under its own node state" \
  [ "$(ncalls sent.db 'select count(distinct c.state_id) from calls c join node_states s on s.state_id = c.state_id')" = 7 ]
run bt tick.yaml
is "openrouter_batch_llm (template_file, lookup_file, system prompt): the rows ELSPETH wrote" \
  same_rows tick out_tick.jsonl "$EXP/out_tick.jsonl"
stop_mock

# A failing call: the row carries <field>: null and <field>_error (ELSPETH).
start_mock bfail --error-500-rate 1
prepare sent
sed -i 's/^rate_limit:.*/&\nretry: {max_attempts: 2, initial_delay_seconds: 0.001, max_delay_seconds: 0.002}/' sent.yaml
run bf sent.yaml
is "openrouter_batch_llm: a failed call gives <field> null and <field>_error {api_call_failed, status_code 500}" \
  "$PY" -c 'import json,sys
rows=[json.loads(l) for l in open("out_sent.jsonl")]
e=rows[0]["sentiment_analysis_error"]
sys.exit(not (len(rows)==7 and rows[0]["sentiment_analysis"] is None and e["reason"]=="api_call_failed" and e["status_code"]==500 and "sentiment_analysis_usage" not in rows[0]))'
stop_mock

# ------------------------------------- 3. ELSPETH's examples validate
export AZURE_OPENAI_DEPLOYMENT=d AZURE_OPENAI_ENDPOINT=https://x.openai.azure.com AZURE_OPENAI_KEY=k
if [ -d /work/ex/examples ]; then
  for f in multi_query_assessment/settings.yaml openrouter_multi_query_assessment/settings.yaml \
           openrouter_multi_query_assessment/settings_overflow.yaml \
           openrouter_multi_query_assessment/settings_stress.yaml chaosllm_endurance/settings.yaml \
           schema_contracts_llm_assessment/settings.yaml openrouter_sentiment/settings_batched.yaml \
           template_lookups/settings_batched.yaml; do
    cd /work/ex && expect "ELSPETH example $f validates" 0 "" -- "$ELSPETH" validate -s "examples/$f"
  done
  cd "$WORK"
fi

# ------------------------------------------ 4. configuration errors
cat > bad.yaml <<'YAML'
source: {plugin: csv, on_success: s, options: {path: in.csv, on_validation_failure: discard}}
transforms:
  - name: t
    plugin: llm
    input: s
    on_success: out
    options:
      provider: openrouter
      model: m
      template: "x"
      queries:
        q1:
          input_fields: [text]
sinks: {out: {plugin: json, options: {path: o.jsonl, format: jsonl}}}
YAML
expect "queries: input_fields as a list is refused at its position" 1 \
  "bad.yaml:13:25: transforms[0].options.queries.q1.input_fields: input_fields must be a non-empty mapping" \
  -- "$ELSPETH" validate -s bad.yaml

finish

#!/usr/bin/env bash
# Every example pipeline of ELSPETH 0.4.1 (tests/fixtures/elspeth_examples,
# copied unmodified), as an ELSPETH user would point us at them, from the
# folder above examples/ as ELSPETH's README says:
#   a. every settings file validates, except those that need a cloud
#      service we cannot reach, which are refused naming the plugin and the
#      service (with the environment variables they name set to dummies);
#   b. every one without an LLM call runs and writes the files ELSPETH
#      wrote for the same input, byte for byte (expected/, recorded with
#      the real ELSPETH; the database sink's table compared row by row);
#   c. the LLM pipelines whose base_url is a local server run against the
#      bundled mock (which they expect on 127.0.0.1:8199) and write what
#      ELSPETH wrote against the same mock.
# keyword_filter's two examples and the cloud refusals in detail:
# test_elspeth_compat.sh; queries and openrouter_batch_llm:
# test_elspeth_llm.sh.
source "$(dirname "$0")/lib.sh"
FIX="$SRC/tests/fixtures/elspeth_examples"
cp -r "$FIX/examples" "$WORK/examples"
cd "$WORK"
export OPENROUTER_API_KEY=k AZURE_OPENAI_KEY=k AZURE_OPENAI_ENDPOINT=https://example.invalid \
  AZURE_OPENAI_DEPLOYMENT=d AZURE_OPENAI_API_VERSION=2024-10-21 AZURE_STORAGE_ACCOUNT_URL=https://example.invalid \
  AZURE_STORAGE_CONTAINER=c AZURE_STORAGE_SAS_TOKEN=t AZURE_CONTENT_SAFETY_ENDPOINT=https://example.invalid \
  AZURE_CONTENT_SAFETY_KEY=k

# ---------------------------------------------------------- a. validate
# The settings files that need a cloud service, and the plugin named.
declare -A CLOUD=(
  [examples/azure_blob_sentiment/settings.yaml]=azure_blob
  [examples/azure_blob_sentiment/settings_pooled.yaml]=azure_blob
  [examples/azure_keyvault_secrets/settings.yaml]="Azure Key Vault"
  [examples/chroma_rag/settings.yaml]=rag_retrieval
  [examples/chroma_rag_qa/settings.yaml]=rag_retrieval
  [examples/chroma_rag_indexed/index_pipeline.yaml]=chroma_sink
  [examples/chroma_rag_indexed/query_pipeline.yaml]=chroma
)
n=0
for f in $(find examples -name '*.yaml' ! -name 'chaos_config.yaml' ! -name 'criteria_lookup.yaml' ! -path '*/prompts/*' | sort); do
  n=$((n + 1))
  if [ -n "${CLOUD[$f]:-}" ]; then
    expect "validate $f: refused, naming ${CLOUD[$f]}" 1 "${CLOUD[$f]}" -- "$ELSPETH" validate -s "$f"
  else
    expect "validate $f" 0 "" -- "$ELSPETH" validate -s "$f"
  fi
done
[ "$n" = 42 ] && pass "all 42 settings files of ELSPETH's 34 example folders were tried" || fail "$n settings files, want 42"

# ------------------------------------------------- b. runs without an LLM
same_file() { # same_file EXAMPLE FILE: ours and ELSPETH's, byte for byte
  if cmp -s "$FIX/expected/$1/$2" "examples/$1/output/$2"; then
    pass "$1: $2 is ELSPETH's, byte for byte"
  else
    fail "$1: $2 differs from ELSPETH's"; diff "$FIX/expected/$1/$2" "examples/$1/output/$2" | head -6
  fi
}
for ex in threshold_gate boolean_routing explicit_routing checkpoint_resume batch_aggregation \
          deaggregation json_explode schema_contracts_demo fork_coalesce database_sink; do
  for s in examples/$ex/settings*.yaml; do
    expect "$ex: run $(basename "$s")" 0 "Run completed" -- "$ELSPETH" run -s "$s" --execute
  done
  for f in "$FIX/expected/$ex"/*; do
    b=$(basename "$f")
    case $b in
      *.rows) # a database table: its rows as sqlite3 lists them
        if python3 - "examples/$ex/output/deals.db" "${b%.rows}" "$f" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(f'select * from "{sys.argv[2]}"').fetchall()
got = "".join("|".join("" if v is None else str(v) for v in r) + "\n" for r in rows)
sys.exit(got != open(sys.argv[3]).read())
PY
        then pass "$ex: table ${b%.rows} holds ELSPETH's rows"; else fail "$ex: table ${b%.rows} differs"; fi ;;
      *) same_file "$ex" "$b" ;;
    esac
  done
  extra=$(cd "examples/$ex/output" && ls | grep -v '\.db$' | while read -r o; do [ -e "$FIX/expected/$ex/$o" ] || echo "$o"; done)
  [ -z "$extra" ] && pass "$ex: no file ELSPETH did not write" || fail "$ex: extra outputs: $extra"
done

# --------------------------------------------- c. LLM against the mock
# ELSPETH's LLM examples point at 127.0.0.1:8199 (its ChaosLLM); our mock
# stands in there. Another program on that port: skipped, saying so.
if (exec 3<>/dev/tcp/127.0.0.1/8199) 2>/dev/null; then
  echo "# port 8199 is taken: the LLM examples are not run"
else
  "$(dirname "$ELSPETH")/elspeth-mock-llm" --port 8199 --port-file mock.port > mock.log 2>&1 &
  MOCK=$!
  for _ in $(seq 100); do [ -s mock.port ] && break; sleep 0.05; done
  for ex in rate_limited_llm chaosllm_sentiment; do
    expect "$ex: run against the mock" 0 "Run completed" -- \
      "$ELSPETH" run -s examples/$ex/settings.yaml --execute
    same_file $ex results.json
  done
  kill "$MOCK"; wait "$MOCK" 2>/dev/null
fi
finish

#!/usr/bin/env bash
# ELSPETH 0.4.1's own example pipelines, unmodified
# (tests/fixtures/elspeth_compat/examples/, copied from its examples/):
#   a. error_routing and deep_routing (keyword_filter, ADR 0026) run and
#      give the outputs real ELSPETH 0.4.1 gave (expected/, recorded with
#      /work/shared/elspeth-reference): every sink file, and for each
#      blocked row the reason ELSPETH recorded (its transform_errors);
#   b. the pipelines that need a cloud service are refused at validate
#      naming file:line:column, the plugin and the service (ADR 0027),
#      before any unset ${VAR} would be reported, and with the variables
#      set too.
source "$(dirname "$0")/lib.sh"
FIX="$SRC/tests/fixtures/elspeth_compat"
cp -r "$FIX/examples" "$WORK/examples"
cd "$WORK"

# Byte for byte: our csv sink writes csv.DictWriter's bytes (CRLF).
same_csv() { cmp -s "$1" "$2"; }

# ------------------------------------------------ a. keyword_filter examples
for ex in error_routing deep_routing; do
  s=examples/$ex/settings.yaml
  expect "$ex: validate" 0 "Settings valid" -- "$ELSPETH" validate -s "$s"
  expect "$ex: run" 0 "Run completed" -- "$ELSPETH" run -s "$s" --execute
  for f in "$FIX/expected/$ex"/*.csv; do
    b=$(basename "$f"); ours=examples/$ex/output/$b
    if same_csv "$f" "$ours"; then
      pass "$ex: $b as ELSPETH wrote it"
    else
      fail "$ex: $b differs from ELSPETH's"; diff "$f" "$ours" | head -10
    fi
  done
  # Each blocked row: ELSPETH's reason, byte for byte, as our error.
  while read -r id reason; do
    row=$(awk -F, -v id="$id" 'NR > 1 && $1 == id { print NR - 1; exit }' "examples/$ex/input.csv")
    out=$("$ELSPETH" explain -s "$s" --run 1 --row "$row" 2>&1)
    if grep -qF -- "error: $reason" <<<"$out"; then
      pass "$ex: row $id blocked for ELSPETH's reason"
    else
      fail "$ex: row $id: want error $reason"; echo "$out" | sed 's/^/    /' | head -12
    fi
  done < "$FIX/expected/$ex/transform_errors.txt"
  # No other row failed.
  n=$(grep -c . "$FIX/expected/$ex/transform_errors.txt")
  expect "$ex: only those rows failed" 0 "failed $n," -- "$ELSPETH" run -s "$s" --execute
done

# ------------------------------------------- b. cloud services are refused
refused() { # NAME FILE NEEDLE
  expect "$1: refused at validate" 1 "$3" -- "$ELSPETH" validate -s "$2"
}
AZ=(AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_ACCOUNT_URL AZURE_STORAGE_CONTAINER
    AZURE_CONTENT_SAFETY_ENDPOINT AZURE_CONTENT_SAFETY_KEY AZURE_OPENAI_DEPLOYMENT
    AZURE_OPENAI_ENDPOINT AZURE_OPENAI_KEY AZURE_KEYVAULT_URL)
for v in "${AZ[@]}"; do unset "$v"; done
for round in unset set; do
  refused "azure_blob_sentiment ($round)" examples/azure_blob_sentiment/settings.yaml \
    "examples/azure_blob_sentiment/settings.yaml:2:11: source.plugin: plugin 'azure_blob' needs Azure Blob Storage, which this build does not support"
  refused "azure_keyvault_secrets ($round)" examples/azure_keyvault_secrets/settings.yaml \
    "examples/azure_keyvault_secrets/settings.yaml:2:11: secrets.source: secrets from a key vault need Azure Key Vault"
  refused "chroma_rag ($round)" examples/chroma_rag/settings.yaml \
    "transforms[0].plugin: plugin 'rag_retrieval' needs a vector store"
  refused "chroma_rag_indexed index ($round)" examples/chroma_rag_indexed/index_pipeline.yaml \
    "sinks.output.plugin: plugin 'chroma_sink' needs ChromaDB"
  refused "chroma_rag_indexed query ($round)" examples/chroma_rag_indexed/query_pipeline.yaml \
    "collection_probes[0].provider: collection probes ask a vector store ('chroma')"
  for v in "${AZ[@]}"; do export "$v=https://example.invalid/x"; done
done
for v in "${AZ[@]}"; do unset "$v"; done
# A refusal is never a crash, and nothing was written.
[ ! -e state ] && pass "refusals wrote nothing" || fail "a refused pipeline wrote state/"
finish

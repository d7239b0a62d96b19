#!/usr/bin/env bash
# ELSPETH 0.7.1's example pipelines (tests/fixtures/elspeth071_examples,
# copied unmodified), run from the folder above examples/ as its README
# says (ADR 0044, 0045):
#   a. every settings file is read as 0.7.1's format and validates, except
#      those that need a cloud service or what this build does not have
#      yet, which are refused saying so;
#   b. every local one we support runs and writes the files the real
#      ELSPETH 0.7.1 wrote (tests/fixtures/elspeth071/, recorded with it),
#      byte for byte, and no file it did not write;
#   c. the LLM pipelines that point at 127.0.0.1:8199 (0.7.1's ChaosLLM),
#      the two multi_worker ones among them, run against our mock there
#      as one process with 16 rows in flight: every row answered or
#      quarantined, in source order (0.7.1 did not record these: its
#      ChaosLLM answers depend on timing).
source "$(dirname "$0")/lib.sh"
FIX="$SRC/tests/fixtures/elspeth071"
cp -r "$SRC/tests/fixtures/elspeth071_examples/examples" "$WORK/examples"
cd "$WORK"
export OPENROUTER_API_KEY=k AZURE_OPENAI_KEY=k AZURE_OPENAI_ENDPOINT=https://example.invalid \
  AZURE_OPENAI_DEPLOYMENT=d AZURE_OPENAI_API_VERSION=2024-10-21 AZURE_STORAGE_ACCOUNT_URL=https://example.invalid \
  AZURE_STORAGE_CONTAINER=c AZURE_STORAGE_SAS_TOKEN=t AZURE_CONTENT_SAFETY_ENDPOINT=https://example.invalid \
  AZURE_CONTENT_SAFETY_KEY=k

# ---------------------------------------------------------- a. validate
# Refused, and the words that say why.
declare -A REFUSED=(
  [examples/azure_blob_sentiment/settings.yaml]="needs Azure Blob Storage"
  [examples/azure_blob_sentiment/settings_pooled.yaml]="needs Azure Blob Storage"
  [examples/azure_keyvault_secrets/settings.yaml]="Azure Key Vault"
  [examples/chroma_rag/settings.yaml]="needs a vector store"
  [examples/chroma_rag_qa/settings.yaml]="needs a vector store"
  # its transform has no on_error: 0.7.1 refuses it too ("transforms.0.on_error:
  # Field required"), checked with the reference
  [examples/azure_openai_sentiment/settings_pooled.yaml]="missing required key 'on_error'"
)
n=0 valid=0
for f in $(find examples -name 'settings*.yaml' | sort); do
  n=$((n + 1))
  if [ -n "${REFUSED[$f]:-}" ]; then
    expect "validate $f: refused (${REFUSED[$f]})" 1 "${REFUSED[$f]}" -- "$ELSPETH" validate -s "$f"
  else
    expect "validate $f: 0.7.1's format" 0 "Format: ELSPETH 0.7.1" -- "$ELSPETH" validate -s "$f" --verbose
    valid=$((valid + 1))
  fi
done
[ "$n" = 60 ] && pass "all 60 settings files of ELSPETH 0.7.1's examples were tried ($valid validate)" ||
  fail "$n settings files, want 60"

# ------------------------------------------------------------ b. runs
# example/settings-stem pairs whose output is 0.7.1's byte for byte.
SAME="batch_aggregation/settings boolean_routing/settings checkpoint_resume/settings
  concurrent_scheduler/settings deaggregation/settings deep_routing/settings
  error_routing/settings explicit_routing/settings
  fork_coalesce/settings fork_coalesce/settings_per_branch fork_coalesce/settings_union_first_wins
  fork_coalesce/settings_union_last_wins json_explode/settings landscape_journal/settings
  multi_flow/settings multi_source_queue/settings report_assemble/settings retention_purge/settings
  schema_contracts_demo/settings statistical_batch_plugins/settings_classifier_metrics
  statistical_batch_plugins/settings_data_quality_report
  statistical_batch_plugins/settings_distribution_profile
  statistical_batch_plugins/settings_outlier_annotator
  statistical_batch_plugins/settings_effect_size statistical_batch_plugins/settings_experiment_compare
  statistical_batch_plugins/settings_drift_compare
  statistical_batch_plugins/settings_paired_preference
  statistical_batch_plugins/settings_threshold_summary statistical_batch_plugins/settings_top_k
  threshold_gate/settings transform_pipeline/settings large_scale_test/settings"
# large_scale_test's input is made by its generate_data.py: the one 0.7.1 read
cp "$FIX/large_scale_test/settings/input.csv" examples/large_scale_test/
for pair in $SAME; do
  ex=${pair%%/*} st=${pair#*/}
  rm -rf "examples/$ex/output" "examples/$ex/runs"
  mkdir -p "examples/$ex/output" "examples/$ex/runs"
  expect "$pair: runs" 0 "Run completed" -- "$ELSPETH" run -s "examples/$ex/$st.yaml" --execute
  want=$(cd "$FIX/$ex/$st/output" && find . -type f | sort)
  for f in $want; do
    if cmp -s "$FIX/$ex/$st/output/$f" "examples/$ex/output/$f"; then
      pass "$pair: ${f#./} is 0.7.1's, byte for byte"
    else
      fail "$pair: ${f#./} differs from 0.7.1's"
      diff "$FIX/$ex/$st/output/$f" "examples/$ex/output/$f" | head -6
    fi
  done
  extra=$(cd "examples/$ex/output" && find . -type f ! -name .gitkeep | sort | while read -r f; do
    [ -e "$FIX/$ex/$st/output/$f" ] || echo "$f"; done)
  [ -z "$extra" ] && pass "$pair: no file 0.7.1 did not write" || fail "$pair: extra files: $extra"
done

# audit_export: the csv files are 0.7.1's; the signed export holds our
# run's ids and times, so it is checked by recomputing every hash of it
# (audit_export_check.py; test_audit_export_v2.sh goes further)
rm -rf examples/audit_export/output examples/audit_export/runs
expect "audit_export/settings: runs and exports" 0 "Run completed" -- \
  "$ELSPETH" run -s examples/audit_export/settings.yaml --execute
for f in corporate.csv non_corporate.csv; do
  cmp -s "$FIX/audit_export/settings/output/$f" "examples/audit_export/output/$f" &&
    pass "audit_export/settings: $f is 0.7.1's, byte for byte" ||
    fail "audit_export/settings: $f differs from 0.7.1's"
done
python3 "$SRC/tests/integration/audit_export_check.py" examples/audit_export/output/audit_trail.json |
  grep -q "ALL MATCH" && pass "audit_export/settings: audit_trail.json's every hash recomputes" ||
  fail "audit_export/settings: audit_trail.json does not check"

# database_sink: its run.sh provisions the target table and the effect
# ledger first (seed.py, which imports ELSPETH: the same DDL here, as
# SQLAlchemy writes it for SQLite); the database then holds 0.7.1's rows
# and one ledger row (the fixture keeps the ledger's count only: its
# entries hold run ids and times)
rm -rf examples/database_sink/output examples/database_sink/runs
mkdir -p examples/database_sink/output examples/database_sink/runs
sqlite3 examples/database_sink/output/deals.db "CREATE TABLE high_value_deals (id INTEGER,
  customer TEXT, amount INTEGER, category TEXT, region TEXT);
CREATE TABLE _elspeth_sink_effects (effect_id VARCHAR(64) NOT NULL, schema_version INTEGER NOT NULL,
  protocol_version VARCHAR(32) NOT NULL, plan_hash VARCHAR(64) NOT NULL, payload_hash VARCHAR(64) NOT NULL,
  completed BOOLEAN NOT NULL, descriptor_json TEXT, accepted_ordinals_json TEXT, diverted_ordinals_json TEXT,
  accepted_payload_hash VARCHAR(64), diversion_hashes_json TEXT, evidence_json TEXT, PRIMARY KEY (effect_id))"
expect "database_sink/settings: runs into the provisioned tables" 0 "Run completed" -- \
  "$ELSPETH" run -s examples/database_sink/settings.yaml --execute
cmp -s "$FIX/database_sink/settings/output/standard_deals.csv" examples/database_sink/output/standard_deals.csv &&
  pass "database_sink/settings: standard_deals.csv is 0.7.1's, byte for byte" ||
  fail "database_sink/settings: standard_deals.csv differs from 0.7.1's"
dump=$(for t in $(sqlite3 examples/database_sink/output/deals.db "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"); do
  echo "# $t: $(sqlite3 examples/database_sink/output/deals.db "SELECT count(*) FROM \"$t\"") rows"
  sqlite3 examples/database_sink/output/deals.db "SELECT group_concat(name, char(9)) FROM pragma_table_info('$t')"
  case $t in _elspeth*) ;; *) sqlite3 -separator $'\t' examples/database_sink/output/deals.db "SELECT * FROM \"$t\"" ;; esac
  echo; done)
[ "$dump" = "$(cat "$FIX/database_sink/settings/deals.db.dump.txt")" ] &&
  pass "database_sink/settings: deals.db holds 0.7.1's rows and one ledger row" ||
  { fail "database_sink/settings: deals.db differs from 0.7.1's"; diff <(echo "$dump") "$FIX/database_sink/settings/deals.db.dump.txt" | head; }

# blob_transforms/settings_expand_csv_blobs: its prepare script (which
# imports ELSPETH) stores two CSV files in the payload store and writes a
# manifest of their hashes; here the same files go in with sha256sum, and
# the manifest is the one 0.7.1's script wrote (its source_url holds the
# absolute paths of 0.7.1's run, which the output repeats)
B=examples/blob_transforms
rm -rf $B/output $B/runs $B/payloads; mkdir -p $B/output $B/runs $B/input
cp "$FIX/blob_transforms/settings_expand_csv_blobs/input/csv_blob_manifest.csv" $B/input/
for f in feed_a feed_b; do
  h=$(sha256sum examples/multi_worker_showcase/input/$f.csv | cut -c1-64)
  mkdir -p $B/payloads/${h:0:2}; cp examples/multi_worker_showcase/input/$f.csv $B/payloads/${h:0:2}/$h
done
expect "blob_transforms/settings_expand_csv_blobs: runs" 0 "Run completed" -- \
  "$ELSPETH" run -s $B/settings_expand_csv_blobs.yaml --execute
cmp -s "$FIX/blob_transforms/settings_expand_csv_blobs/output/expanded_csv_rows.csv" $B/output/expanded_csv_rows.csv &&
  [ "$(ls $B/output)" = expanded_csv_rows.csv ] &&
  pass "blob_transforms/settings_expand_csv_blobs: expanded_csv_rows.csv is 0.7.1's, byte for byte, and no other file" ||
  fail "blob_transforms/settings_expand_csv_blobs: output differs from 0.7.1's"

# 0.7.1's union_collision_policy: fail stops its run (CoalesceCollisionError)
rm -rf examples/fork_coalesce/output
expect "fork_coalesce/settings_union_fail: the run stops at the collision" 1 \
  "union merge collisions: ['category', 'description', 'id', 'price', 'product']" -- \
  "$ELSPETH" run -s examples/fork_coalesce/settings_union_fail.yaml --execute

# --------------------------------------------- c. LLM against the mock
if (exec 3<>/dev/tcp/127.0.0.1/8199) 2>/dev/null; then
  echo "# port 8199 is taken: the LLM examples are not run"
else
  "$(dirname "$ELSPETH")/elspeth-mock-llm" --port 8199 --port-file mock.port > mock.log 2>&1 &
  MOCK=$!
  for _ in $(seq 100); do [ -s mock.port ] && break; sleep 0.05; done
  # example  rows it must give (results + quarantined)
  for spec in multi_worker:120 multi_worker_showcase:200 chaosllm_sentiment:10 rate_limited_llm:8; do
    ex=${spec%%:*} want=${spec#*:}
    rm -rf "examples/$ex/output"
    expect "$ex: runs against the mock, 16 rows in flight" 0 "Run completed" -- \
      "$ELSPETH" run -s "examples/$ex/settings.yaml" --execute --max-rows-in-flight 16
    got=$(cat examples/$ex/output/*.json* 2>/dev/null | wc -l)
    [ "$got" = "$want" ] && pass "$ex: $got rows out" || fail "$ex: $got rows out, want $want"
  done
  # two feeds through one queue: feed_a's rows (ids 1..100), then feed_b's
  # (101..200), in that order, with 16 rows in flight
  python3 - <<'PY' && pass "multi_worker_showcase: feed_a's rows, then feed_b's, in order" ||
import json, sys
ids = [json.loads(l)["id"] for l in open("examples/multi_worker_showcase/output/results.json")]
sys.exit(0 if ids == list(range(1, 201)) else 1)
PY
    fail "multi_worker_showcase: rows out of order"
  kill "$MOCK"; wait "$MOCK" 2>/dev/null
fi
finish

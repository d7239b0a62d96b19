#!/usr/bin/env bash
# ELSPETH 0.7.1's audit export, audit-export-v2 (ADR 0053): 0.7.1's own
# audit_export example runs unmodified; its file passes an independent
# check of every hash (audit_export_check.py, which passes on the files
# the real 0.7.1 wrote and fails on an edited byte); the content store
# holds the same bytes; HMAC signing over several chunks, a wrong key
# failing; the csv bundle; fail_if_exists; a limit exceeded failing the
# export with 0.7.1's message while the run stays recorded; settings
# refused with 0.7.1's messages.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
CHECK="python3 $SRC/tests/integration/audit_export_check.py"
FX=$SRC/tests/fixtures/elspeth071_audit_export
mkdir -p examples
cp -r "$SRC/tests/fixtures/elspeth071_examples/examples/audit_export" examples/
EX=examples/audit_export
STORE=.elspeth/audit-export-content-store/audit-export-example/audit-export-example

# 0. the checker itself: 0.7.1's own files pass, an edited one does not
is "checker: 0.7.1's unsigned file passes" sh -c "$CHECK $FX/audit_unsigned.json | grep -q 'ALL MATCH'"
is "checker: 0.7.1's HMAC file passes with its key" \
  sh -c "$CHECK $FX/audit_hmac.json fixture-hmac-key-071 | grep -q 'ALL MATCH'"
is "checker: 0.7.1's HMAC file fails with another key" \
  sh -c "! $CHECK $FX/audit_hmac.json other-key | grep -q 'ALL MATCH'"

# 1. the example as 0.7.1 ships it
expect "validate --verbose: says what the export writes" 0 \
  "Audit export: ELSPETH 0.7.1's audit-export-v2 to sink 'audit_export' [json], unsigned; chunks of at most 1000 records and 1000000 bytes" -- \
  "$ELSPETH" validate -s $EX/settings.yaml --verbose
expect "run: exports" 0 "Run completed" -- "$ELSPETH" run -s $EX/settings.yaml --execute
OUT=$EX/output/audit_trail.json
is "the export passes the check" sh -c "$CHECK $OUT > check.log && grep -q 'ALL MATCH' check.log"
for f in corporate.csv non_corporate.csv; do
  cmp -s "$SRC/tests/fixtures/elspeth071/audit_export/settings/output/$f" "$EX/output/$f" &&
    pass "$f is 0.7.1's, byte for byte" || fail "$f differs from 0.7.1's"
done
[ "$(stat -c %a $OUT)" = 600 ] && pass "the export is private (0600)" || fail "mode $(stat -c %a $OUT)"
types=$(python3 -c "
import json, sys
rs = [json.loads(l) for l in open('$OUT', 'rb')]
print(rs[0]['record_type'], rs[-1]['record_type'], len(rs),
      sum(r['record_type'] == 'row' for r in rs),
      sorted({r['record_type'] for r in rs[1:-1]}) == sorted(['node', 'edge', 'operation', 'row',
        'token', 'token_outcome', 'node_state', 'routing_event', 'artifact']),
      {r['path'] for r in rs if r['record_type'] == 'token_outcome'} == {'gate_routed'},
      [r['ingest_sequence'] for r in rs if r['record_type'] == 'row'] == list(range(8)))")
[ "${types% *}" = "run manifest $(($(wc -l < $OUT) + 1)) 8 True True" ] && [ "${types##* }" = True ] &&
  pass "records: run first, manifest last, 8 rows in ingest order, 0.7.1's types and paths" ||
  fail "records: $types"
# the content store: one object per chunk and one for the manifest, the
# same bytes as the file; owned by this export; the spool left empty
objs=$(find $STORE/objects -type f ! -name '.*' | sort)
man=$(tail -c +$(($(stat -c %s $OUT) - $(tail -1 $OUT | wc -c) + 1)) $OUT | sha256sum | cut -c1-64)
chunk=$(head -c $(($(stat -c %s $OUT) - $(tail -1 $OUT | wc -c))) $OUT | sha256sum | cut -c1-64)
[ "$(echo "$objs" | wc -l)" = 2 ] && [ -f "$STORE/objects/${man:0:2}/$man" ] &&
  [ -f "$STORE/objects/${chunk:0:2}/$chunk" ] &&
  cat "$STORE/objects/${chunk:0:2}/$chunk" "$STORE/objects/${man:0:2}/$man" | cmp -s - $OUT &&
  pass "content store: the chunk and the manifest, addressed by their SHA-256, the file's bytes" ||
  fail "content store: $objs"
[ "$(find $STORE/candidates -path '*/owned/*' -type f | wc -l)" = 2 ] &&
  [ "$(cat $(find $STORE/candidates -path '*/owned/*' -type f | head -1))" = owned ] &&
  pass "content store: both objects owned by this export" || fail "owned markers"
[ -z "$(ls -A .elspeth/audit-export-spool/audit-export-example)" ] &&
  [ "$(stat -c %a .elspeth/audit-export-spool/audit-export-example)" = 700 ] &&
  pass "the spool directory is private and left empty" || fail "spool: $(ls -la .elspeth/audit-export-spool/*)"
# written again from the LMDB trail (a temporary SQL trail, not the
# run's SQLite file): the same bytes
sed 's#output/audit_trail.json#output/again_same.json#' $EX/settings.yaml > $EX/same.yaml
expect "export --audit of the same run: exported" 0 "exported the audit records of run 1" -- \
  "$ELSPETH" export -s $EX/same.yaml --audit -r 1
cmp -s $OUT $EX/output/again_same.json && pass "export --audit: the run's export byte for byte" ||
  fail "export --audit: differs from the run's own export"
# an edited record is caught
python3 -c "
b = open('$OUT', 'rb').read()
assert b.count(b'\"record_type\":\"edge\"') == 3
open('tampered.json', 'wb').write(b.replace(b'\"record_type\":\"edge\"', b'\"record_type\":\"edgE\"', 1))"
is "an edited record fails the check" sh -c "! $CHECK tampered.json | grep -q 'ALL MATCH'"

# the same export from an LMDB-only trail (read through a temporary SQL
# trail instead of the run's own SQLite file): the same records
sed -e 's#url: sqlite:///examples/audit_export/runs/audit.db#url: lmdb://lm.lmdb#' \
    -e 's#output/audit_trail.json#output/from_lmdb.json#' $EX/settings.yaml > $EX/lmdb.yaml
expect "lmdb trail: runs" 0 "Run completed" -- "$ELSPETH" run -s $EX/lmdb.yaml --execute
is "lmdb trail: the export passes the check" \
  sh -c "$CHECK $EX/output/from_lmdb.json | grep -q 'ALL MATCH'"
shape() { python3 -c "
import json, sys
print([(r['record_type'], sorted(r)) for r in map(json.loads, open(sys.argv[1], 'rb'))][:-1])" "$1"; }
[ "$(shape $EX/output/from_lmdb.json)" = "$(shape $OUT)" ] &&
  pass "lmdb trail: the same records, fields and order as from the SQLite trail" ||
  fail "lmdb trail: the records differ"

# a row routed by its transform's on_error: 0.7.1's (failure,
# on_error_routed), its transform_error record (the row's data only with
# include_raw_error_rows); a spool path written as 0.7.1 writes a Path
printf 'id,v\n1,5\n2,x\n3,7\n' > err_in.csv
cat > err.yaml <<'EOF'
sources:
  primary:
    plugin: csv
    on_success: c
    options: {path: err_in.csv, schema: {mode: observed}, on_validation_failure: discard}
transforms:
- name: coerce
  plugin: type_coerce
  input: c
  on_success: out
  on_error: errs
  options: {schema: {mode: observed}, conversions: [{field: v, to: int}]}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: err_out.jsonl, format: jsonl, schema: {mode: observed}}}
  errs: {plugin: json, on_write_failure: discard, options: {path: err_errs.jsonl, format: jsonl, schema: {mode: observed}}}
  audit: {plugin: json, on_write_failure: discard, options: {path: err_audit.json, schema: {mode: observed}}}
landscape:
  url: sqlite:///err.db
  export:
    enabled: true
    sink: audit
    format: json
    include_raw_error_rows: RAW
    total_record_limit: 1000
    total_byte_limit: 10000000
    chunk_limit: 10
    per_chunk_record_limit: 1000
    per_chunk_byte_limit: 1000000
    spool_root: ./.elspeth//audit-export-spool/e/
    content_store: {content_store_id: s1, namespace: n, root: .elspeth/audit-export-content-store/e, policy_version: p1, retention_days: 1, durability: replicated}
EOF
errs() { python3 -c "
import json
rs = [json.loads(l) for l in open('err_audit.json', 'rb')][:-1]
print(sorted((r['token_id'], r['outcome'], r['path']) for r in rs if r['record_type'] == 'token_outcome'),
      '|', [(r['destination'], r['row_data_json']) for r in rs if r['record_type'] == 'transform_error'],
      '|', rs[0]['settings']['landscape']['export']['spool_root'])"; }
declare -A got
for raw in false true; do
  sed "s/RAW/$raw/" err.yaml > err_$raw.yaml
  rm -f err_audit.json
  expect "on_error ($raw): runs" 0 "Run completed" -- "$ELSPETH" run -s err_$raw.yaml --execute
  is "on_error ($raw): the export checks" sh -c "$CHECK err_audit.json | grep -q 'ALL MATCH'"
  got[$raw]=$(errs)
done
want="[('tok-1-1', 'success', 'default_flow'), ('tok-1-2', 'failure', 'on_error_routed'), ('tok-1-3', 'success', 'default_flow')]"
[ "${got[false]%% |*}" = "$want" ] && [ "${got[false]##*| }" = .elspeth/audit-export-spool/e ] &&
  [[ "${got[false]}" == *"[('errs', None)]"* ]] && [[ "${got[true]}" == *'"v":"x"'* ]] &&
  pass "on_error: 0.7.1's outcome and path, the transform error (its row only when asked), the spool as a Path" ||
  fail "on_error: ${got[false]} / ${got[true]}"

# 2. HMAC over several chunks (40 records or 30,000 bytes each)
sed -e 's/signing_mode: unsigned/signing_mode: hmac_sha256/' \
    -e 's/signer_key_id: UNSIGNED/signer_key_id: audit-key-1\n    signing_secret_ref: AE_TEST_KEY/' \
    -e 's/per_chunk_record_limit: 1000/per_chunk_record_limit: 40/' \
    -e 's/per_chunk_byte_limit: 1000000/per_chunk_byte_limit: 30000/' \
    -e 's/^    chunk_limit: 100$/    chunk_limit: 1000/' \
    -e 's#output/audit_trail.json#output/audit_hmac.json#' $EX/settings.yaml > $EX/hmac.yaml
expect "hmac: no key, the export fails naming the variable" 1 \
  "AE_TEST_KEY environment variable required for signed export" -- \
  "$ELSPETH" run -s $EX/hmac.yaml --execute
AE_TEST_KEY="   " expect "hmac: a blank key is no key" 1 "AE_TEST_KEY environment variable required" -- \
  "$ELSPETH" run -s $EX/hmac.yaml --execute
AE_TEST_KEY=s3cret expect "hmac: runs" 0 "Run completed" -- "$ELSPETH" run -s $EX/hmac.yaml --execute
H=$EX/output/audit_hmac.json
is "hmac: the export passes the check with its key" sh -c "$CHECK $H s3cret | grep -q 'ALL MATCH'"
is "hmac: and not with another" sh -c "! $CHECK $H s3cre | grep -q 'ALL MATCH'"
n=$(tail -1 $H | python3 -c "import json,sys; m=json.load(sys.stdin); print(m['chunk_count'], m['signature_key_id'], len(m['signature']))")
[ "$n" = "2 audit-key-1 64" ] && pass "hmac: 2 chunks, signed by audit-key-1" || fail "hmac: manifest $n"

# 3. the csv bundle: one file per record type and the manifest
sed -e 's/format: json/format: csv/' -e 's/plugin: json/plugin: csv/' \
    -e 's#output/audit_trail.json#output/bundle#' $EX/settings.yaml > $EX/csv.yaml
expect "csv: runs" 0 "Run completed" -- "$ELSPETH" run -s $EX/csv.yaml --execute
B=$EX/output/bundle
m=$(sha256sum < $B/audit_manifest.v2.json | cut -c1-64)
[ -f "$STORE/objects/${m:0:2}/$m" ] && [ "$(stat -c %a $B)" = 700 ] &&
  [ "$(ls $B | tr '\n' ' ')" = "artifact.csv audit_manifest.v2.json edge.csv node.csv node_state.csv operation.csv routing_event.csv row.csv run.csv token.csv token_outcome.csv " ] &&
  pass "csv: the bundle's files, its manifest in the content store" || fail "csv: $(ls -la $B)"
[ "$(($(wc -l < $B/row.csv) - 1))" = 8 ] && head -1 $B/token_outcome.csv | grep -q '^batch_id,completed,' &&
  grep -q $'\r$' $B/row.csv && pass "csv: 8 rows, sorted columns, CRLF" || fail "csv: $(head -2 $B/token_outcome.csv)"
expect "csv: the same export again is accepted where it is (the same bytes)" 0 \
  "exported the audit records" -- "$ELSPETH" export -s $EX/csv.yaml --audit
echo tampered >> $B/row.csv
expect "csv: ... but not over a bundle whose CSV was edited" 1 \
  "create-only bundle target exists with divergent content" -- "$ELSPETH" export -s $EX/csv.yaml --audit
expect "csv: a second run's bundle is refused where the first one is" 1 \
  "create-only bundle target exists with divergent content" -- "$ELSPETH" run -s $EX/csv.yaml --execute

# 4. fail_if_exists keeps the file there; without it the file is replaced
python3 -c "
import sys; s = sys.stdin.read()
print(s.replace('path: examples/audit_export/output/audit_trail.json',
  'path: examples/audit_export/output/audit_trail.json\n      collision_policy: fail_if_exists'), end='')" \
  < $EX/settings.yaml > $EX/keep.yaml
before=$(sha256sum < $OUT)
expect "fail_if_exists: the file is kept" 1 "collision_policy: fail_if_exists" -- \
  "$ELSPETH" run -s $EX/keep.yaml --execute
[ "$(sha256sum < $OUT)" = "$before" ] && pass "fail_if_exists: same bytes" || fail "fail_if_exists: replaced"
expect "no collision policy: replaced" 0 "Run completed" -- "$ELSPETH" run -s $EX/settings.yaml --execute
[ "$(sha256sum < $OUT)" != "$before" ] && pass "the file was replaced by the new run's" || fail "not replaced"

# 5. a limit exceeded: 0.7.1's message, nothing published, the run recorded
sed -e 's/total_record_limit: 10000/total_record_limit: 30/' \
    -e 's/per_chunk_record_limit: 1000/per_chunk_record_limit: 30/' \
    -e 's#output/audit_trail.json#output/limited.json#' $EX/settings.yaml > $EX/limit.yaml
expect "limit: the export fails" 1 "audit export record count exceeds max_total_records" -- \
  "$ELSPETH" run -s $EX/limit.yaml --execute
[ ! -e $EX/output/limited.json ] && pass "limit: no file" || fail "limit: a file was written"
expect "limit: the run itself is recorded as completed" 0 "completed" -- \
  "$ELSPETH" runs -s $EX/limit.yaml
# written again with the example's limits: `export --audit`
run=$("$ELSPETH" runs -s $EX/limit.yaml --json | python3 -c "import json,sys; print(max(r['run_id'] for r in json.load(sys.stdin)))")
sed 's#output/audit_trail.json#output/again.json#' $EX/settings.yaml > $EX/again.yaml
expect "export --audit: the same run, other limits" 0 "exported the audit records of run $run" -- \
  "$ELSPETH" export -s $EX/again.yaml --audit -r $run
is "export --audit: the file checks (its run record shows the limits it was written with)" \
  sh -c "$CHECK $EX/output/again.json | grep -q 'ALL MATCH'"
expect "export --audit: the limits still fail the first settings" 1 \
  "audit export record count exceeds max_total_records" -- "$ELSPETH" export -s $EX/limit.yaml --audit
sed "s/condition: row\['category'\] == 'corporate'/condition: row['nope'] == 1/" $EX/settings.yaml > $EX/fails.yaml
"$ELSPETH" run -s $EX/fails.yaml --execute > fails.log 2>&1
expect "export --audit: a run that failed is not exported" 1 "only a completed run is exported" -- \
  "$ELSPETH" export -s $EX/fails.yaml --audit
expect "export --audit: an unknown run" 1 "no run 99" -- "$ELSPETH" export -s $EX/again.yaml --audit -r 99

# 6. settings refused with 0.7.1's messages
refuse() { # name, sed expression, message
  sed -e "$2" $EX/settings.yaml > bad.yaml
  expect "refused: $1" 1 "$3" -- "$ELSPETH" validate -s bad.yaml
}
refuse "unsigned with a key id" 's/signer_key_id: UNSIGNED/signer_key_id: k1/' \
  "unsigned signing requires the typed UNSIGNED signer identity"
refuse "hmac without a secret" 's/signing_mode: unsigned/signing_mode: hmac_sha256/;s/signer_key_id: UNSIGNED/signer_key_id: k1/' \
  "hmac_sha256 signing requires a signing secret reference"
refuse "hmac with UNSIGNED" 's/signing_mode: unsigned/signing_mode: hmac_sha256/' \
  "hmac_sha256 signer_key_id cannot use the reserved UNSIGNED identity"
refuse "a missing limit" '/chunk_limit: 100/d' "enabled audit export requires explicit fields: chunk_limit"
refuse "capacity" 's/chunk_limit: 100/chunk_limit: 5/' "total_record_limit exceeds configured chunk record capacity"
refuse "a spool outside .elspeth" 's#spool_root: .elspeth/audit-export-spool/#spool_root: /tmp/#' \
  "spool_root must be inside the code-owned private .elspeth/audit-export-spool root"
refuse "a content store outside .elspeth" 's#root: .elspeth/audit-export-content-store/#root: ../#' \
  "content store root must be inside the code-owned .elspeth/audit-export-content-store root"
refuse "a namespace with .." 's#namespace: audit-export-example#namespace: a/../b#' \
  "namespace must be a bounded credential-free relative namespace"
refuse "0.4.1's sign key" 's/signing_mode: unsigned/sign: true/' "unknown key 'sign'"
refuse "csv format into the json sink" 's/format: json/format: csv/' \
  "Sink 'audit_export' does not support audit export format 'csv'"
refuse "a signing mode 0.7.1 has not" 's/signing_mode: unsigned/signing_mode: ed25519/' "ed25519"
refuse "a null where 0.7.1 wants a value" 's/signer_key_id: UNSIGNED/signer_key_id: null/' \
  "signer_key_id: a value is required, not null"
sed 's/signer_key_id: UNSIGNED/signer_key_id: UNSIGNED\n    signer_rotation_policy: single_export/' $EX/settings.yaml > single.yaml
expect "single_export: a run's own export" 0 "Run completed" -- "$ELSPETH" run -s single.yaml --execute
expect "single_export: not exported again (no registry to check the signer against)" 1 \
  "single_export allows one signer per run" -- "$ELSPETH" export -s single.yaml --audit
chmod 755 .elspeth/audit-export-spool/audit-export-example
expect "refused: a spool others can read" 1 "spool_root must be private (no group/world permissions)" -- \
  "$ELSPETH" validate -s $EX/settings.yaml
finish

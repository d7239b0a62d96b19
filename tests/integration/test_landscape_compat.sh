#!/usr/bin/env bash
# ELSPETH 0.4.1's landscape extras, run on its own examples unmodified
# (tests/fixtures/elspeth-0.4.1-landscape; ADR 0028):
#   a. landscape.export (audit_export): the export sink is not part of the
#      graph; output/audit_trail.json has ELSPETH's records, fields and
#      order (compared with what ELSPETH wrote, ids, times and hashes
#      normalized: landscape_compat.py); sign: true signs every record
#      with HMAC-SHA256 of its canonical JSON keyed by ELSPETH_SIGNING_KEY
#      and ends with a manifest whose final_hash chains the signatures
#      (checked independently in Python); without the key the run fails
#      saying so; format: csv writes one CSV per record type;
#   b. landscape.dump_to_jsonl (landscape_journal): the journal's lines,
#      statement texts and parameter arity are ELSPETH's; a journal with an
#      lmdb:// url and no path is refused; an unwritable journal warns, or
#      fails the run with dump_to_jsonl_fail_on_error;
#   c. payload_store + purge (retention_purge): payloads are files under
#      base_path; purge --dry-run lists them and deletes nothing; purge -y
#      -r 0 deletes them; verify still passes (payloads_purged), explain
#      still tells the story ("purged (hash kept)"); a recent run is kept
#      with -r 1; an interrupted run is never purged and its resume
#      (reading its payloads from the files) completes and verifies.
source "$(dirname "$0")/lib.sh"
FIX=$SRC/tests/fixtures/elspeth-0.4.1-landscape
CMP=$SRC/tests/integration/landscape_compat.py
cp -r "$FIX/examples" "$WORK/examples"
for e in landscape_journal audit_export retention_purge; do
  mkdir -p "$WORK/examples/$e/output" "$WORK/examples/$e/runs"
done
mkdir -p "$WORK/examples/retention_purge/payloads"
cd "$WORK"
show() { sed 's/^/    /' | head -20; }

# ------------------------------------------------------------ a. export
AE=examples/audit_export
expect "audit_export runs unmodified" 0 "non_corporate=6 corporate=2" -- \
  "$ELSPETH" run -s $AE/settings.yaml --execute
if python3 "$CMP" export $AE/output/audit_trail.json "$FIX/audit_export.audit_trail.json" > cmp.log 2>&1; then
  pass "export: ELSPETH's records, fields and order (normalized)"
else
  fail "export differs from ELSPETH's"; show < cmp.log
fi
python3 - $AE/output/audit_trail.json <<'EOF' && pass "export: one run, its sinks' artifacts, no record of the export sink" || fail "export content"
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["record_type"] for r in d].count("run") == 1 and d[0]["record_type"] == "run"
assert d[0]["status"] == "completed" and d[0]["settings"]["landscape"]["export"]["sink"] == "audit_export"
nodes = [r["node_id"] for r in d if r["record_type"] == "node"]
assert not any("audit_export" in n for n in nodes), nodes
assert {r["path_or_uri"].rsplit("/", 1)[1] for r in d if r["record_type"] == "artifact"} == {"corporate.csv", "non_corporate.csv"}
EOF

sed 's/sign: false/sign: true/' $AE/settings.yaml > signed.yaml
expect "sign without ELSPETH_SIGNING_KEY: refused" 1 "ELSPETH_SIGNING_KEY environment variable required" -- \
  env -u ELSPETH_SIGNING_KEY "$ELSPETH" run -s signed.yaml --execute
expect "sign with the key" 0 "" -- env ELSPETH_SIGNING_KEY=s3cret "$ELSPETH" run -s signed.yaml --execute
python3 - $AE/output/audit_trail.json s3cret <<'EOF' > sig.log 2>&1 && pass "signatures: HMAC-SHA256 of canonical JSON, manifest chains them" || { fail "signatures"; show < sig.log; }
import hashlib, hmac, json, math, sys
def num(x):
    # ECMAScript Number::toString (RFC 8785's number form)
    if isinstance(x, bool) or not isinstance(x, float): return json.dumps(x)
    if x == 0: return "0"
    sign = "-" if x < 0 else ""
    m, _, e = ("%r" % abs(x)).partition("e")
    ip, _, fp = m.partition(".")
    fp = fp.rstrip("0") if fp != "0" else ""
    d = (ip + fp).lstrip("0")
    n = len(ip.lstrip("0")) + int(e or 0) if ip.lstrip("0") else int(e or 0) - (len(fp) - len(fp.lstrip("0")))
    d = d.rstrip("0") or "0"; k = len(d)
    if k <= n <= 21: return sign + d + "0" * (n - k)
    if 0 < n <= 21: return sign + d[:n] + "." + d[n:]
    if -6 < n <= 0: return sign + "0." + "0" * (-n) + d
    return sign + d[0] + ("." + d[1:] if k > 1 else "") + "e" + ("+" if n - 1 >= 0 else "-") + str(abs(n - 1))
def canon(v):
    if isinstance(v, dict): return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canon(v[k]) for k in sorted(v)) + "}"
    if isinstance(v, list): return "[" + ",".join(canon(x) for x in v) + "]"
    if isinstance(v, str): return json.dumps(v, ensure_ascii=False)
    if v is None: return "null"
    if v is True: return "true"
    if v is False: return "false"
    return num(v)
d = json.load(open(sys.argv[1])); key = sys.argv[2].encode()
chain = hashlib.sha256()
for r in d:
    sig = r.pop("signature")
    want = hmac.new(key, canon(r).encode(), hashlib.sha256).hexdigest()
    assert sig == want, (r["record_type"], sig, want)
    if r["record_type"] != "manifest": chain.update(sig.encode())
m = d[-1]
assert m["record_type"] == "manifest" and m["record_count"] == len(d) - 1
assert m["final_hash"] == chain.hexdigest() and m["hash_algorithm"] == "sha256" and m["signature_algorithm"] == "hmac-sha256"
assert m["exported_at"].endswith("+00:00")
EOF

sed 's/format: json/format: csv/' $AE/settings.yaml > csv.yaml
expect "format: csv" 0 "" -- "$ELSPETH" run -s csv.yaml --execute
if [ -f $AE/output/audit_trail/run.csv ] && [ -f $AE/output/audit_trail/node_state.csv ] &&
   head -1 $AE/output/audit_trail/run.csv | grep -q '^canonical_version,completed_at,config_hash,record_type,reproducibility_grade,run_id,settings\.gates,' &&
   [ "$(($(wc -l < $AE/output/audit_trail/row.csv) - 1))" = 8 ]; then
  pass "csv: one file per record type, sorted flattened columns"
else
  fail "csv export"; ls $AE/output/audit_trail 2>&1 | show; head -2 $AE/output/audit_trail/run.csv 2>&1 | cut -c1-200 | show
fi

# ------------------------------------------------------------ b. journal
LJ=examples/landscape_journal
expect "landscape_journal runs unmodified" 0 "output=2" -- "$ELSPETH" run -s $LJ/settings.yaml --execute
if python3 "$CMP" journal $LJ/runs/audit.journal.jsonl "$FIX/landscape_journal.journal.jsonl" > jcmp.log 2>&1; then
  pass "journal: ELSPETH's line format and statements"
else
  fail "journal differs from ELSPETH's"; show < jcmp.log
fi
n1=$(wc -l < $LJ/runs/audit.journal.jsonl)
"$ELSPETH" run -s $LJ/settings.yaml --execute > /dev/null 2>&1
n2=$(wc -l < $LJ/runs/audit.journal.jsonl)
[ "$n2" = $((2 * n1)) ] && pass "journal: a second run appends" || fail "journal append: $n1 then $n2 lines"
cat > jl_lmdb.yaml <<EOF
landscape: {url: "lmdb://$WORK/state", dump_to_jsonl: true}
source: {plugin: json, on_success: out, options: {path: $LJ/input.jsonl, format: jsonl, on_validation_failure: discard, schema: {mode: observed}}}
sinks: {out: {plugin: json, options: {path: $WORK/o.jsonl, format: jsonl, schema: {mode: observed}}}}
EOF
expect "journal without a path on lmdb://: refused" 1 "dump_to_jsonl requires dump_to_jsonl_path" -- \
  "$ELSPETH" validate -s jl_lmdb.yaml
mkdir -p ro && chmod 500 ro
sed "s|dump_to_jsonl: true}|dump_to_jsonl: true, dump_to_jsonl_path: $WORK/ro/sub/j.jsonl}|" jl_lmdb.yaml > jl_ro.yaml
sed "s|dump_to_jsonl: true}|dump_to_jsonl: true, dump_to_jsonl_fail_on_error: true, dump_to_jsonl_path: $WORK/ro/sub/j.jsonl}|" jl_lmdb.yaml > jl_fail.yaml
if [ "$(id -u)" != 0 ]; then
  expect "unwritable journal: a warning" 0 "warning: the landscape journal was not written" -- "$ELSPETH" run -s jl_ro.yaml -x
  expect "unwritable journal, fail_on_error: the run fails" 1 "journal" -- "$ELSPETH" run -s jl_fail.yaml -x
else
  echo "ok - (skipped: unwritable-journal checks need a non-root user)"
fi

# ------------------------------------------------------------ c. payload store and purge
RP=examples/retention_purge
DB=$RP/runs/audit.db
expect "retention_purge runs unmodified" 0 "public=2 restricted=3" -- "$ELSPETH" run -s $RP/settings.yaml --execute
nfiles() { find $RP/payloads -type f ! -name .gitkeep | wc -l; }
[ "$(nfiles)" = 5 ] && pass "payload_store: one content-addressed file per distinct payload" ||
  { fail "payload files: $(nfiles)"; find $RP/payloads | show; }
f=$(find $RP/payloads -type f ! -name .gitkeep | head -1)
[ "$(sha256sum < "$f" | cut -c1-64)" = "$(basename "$f")" ] && [ "$(basename "$(dirname "$f")")" = "$(basename "$f" | cut -c1-2)" ] &&
  pass "payload file named by its SHA-256 under its first two hex digits" || fail "payload file layout: $f"
expect "purge -r 1: a fresh run is kept" 0 "No payloads older than 1 days found." -- \
  "$ELSPETH" purge --dry-run --database $DB --payload-dir $RP/payloads --retention-days 1
expect "purge --dry-run lists, deletes nothing" 0 "Would delete 5 payload(s) older than 0 days:" -- \
  "$ELSPETH" purge --dry-run --database $DB --payload-dir $RP/payloads --retention-days 0
[ "$(nfiles)" = 5 ] && pass "dry run deleted nothing" || fail "dry run deleted files"
expect "purge without --yes, answered no: aborted" 1 "Aborted." -- \
  sh -c "echo n | '$ELSPETH' purge --database $DB --payload-dir $RP/payloads --retention-days 0"
expect "purge --yes -r 0" 0 "Deleted: 5" -- \
  "$ELSPETH" purge --yes --database $DB --payload-dir $RP/payloads --retention-days 0
[ "$(nfiles)" = 0 ] && pass "payload files deleted" || fail "files left: $(nfiles)"
expect "verify after purge: OK" 0 "all audit invariants hold" -- "$ELSPETH" verify --run latest -d $DB
expect "verify --json counts the purged payloads" 0 '"payloads_purged": ' -- "$ELSPETH" verify --run latest -d $DB --json
expect "explain after purge: the story, payloads purged" 0 "purged (hash kept)" -- \
  "$ELSPETH" explain --run latest -d $DB --row 1
expect "explain after purge: routing kept" 0 "routed: condition gave 'true' -> public" -- \
  "$ELSPETH" explain --run latest -d $DB --row 1
expect "explain --json: {hash, purged: true}" 0 '"purged": true' -- \
  "$ELSPETH" explain --run latest -d $DB --row 1 --json
# A payload missing without a purge is still a violation.
"$ELSPETH" run -s $RP/settings.yaml --execute > /dev/null 2>&1
find $RP/payloads -type f ! -name .gitkeep | head -1 | xargs rm -f
expect "a payload deleted by hand (not purged): a violation" 4 "is missing" -- "$ELSPETH" verify --run latest -d $DB

# An interrupted run keeps its payloads; its resume reads them back.
seq 1 400 | awk 'BEGIN{print "id,document,classification"} {printf "%d,doc %d,%s\n", $1, $1, ($1%2?"public":"secret")}' > many.csv
cat > slow.yaml <<EOF
source: {plugin: csv, on_success: d_in, options: {path: $WORK/many.csv, on_validation_failure: discard, schema: {mode: fixed, fields: ["id: int", "document: str", "classification: str"]}}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: out, on_error: discard, options: {distribution: uniform, min_ms: 5, max_ms: 6, seed: 1, error_rate: 0}}
sinks: {out: {plugin: csv, options: {path: $WORK/slow/out.csv, schema: {mode: observed}}}}
landscape: {url: "sqlite:///$WORK/slow/audit.db"}
payload_store: {backend: filesystem, base_path: $WORK/slow/payloads, retention_days: 7}
EOF
"$ELSPETH" run -s slow.yaml --execute > slow.log 2>&1 & BG=$!
started slow/out.csv; sleep 0.3; kill -INT $BG; wait $BG; BGRC=$?
expect "interrupted run: nothing to purge" 0 "No payloads older than 0 days found." -- \
  "$ELSPETH" purge --yes -d slow/audit.db -p slow/payloads -r 0
expect "resume after purge reads the payloads back" 0 "" -- "$ELSPETH" resume latest -s slow.yaml --execute
expect "resumed run verifies" 0 "all audit invariants hold" -- "$ELSPETH" verify --run latest -d slow/audit.db
[ "$BGRC" = 3 ] && [ "$(($(wc -l < slow/out.csv) - 1))" = 400 ] && pass "interrupted (exit 3), resumed to 400 rows" ||
  fail "interrupt/resume: exit $BGRC, $(wc -l < slow/out.csv) lines"
expect "explain of the resumed run shows its source row" 0 '"document":"doc 1"' -- \
  "$ELSPETH" explain --run latest -d slow/audit.db --row 1
expect "then purge deletes the completed run's payloads" 0 "Deleted: " -- \
  "$ELSPETH" purge --yes -d slow/audit.db -p slow/payloads -r 0
expect "and it still verifies" 0 "all audit invariants hold" -- "$ELSPETH" verify --run latest -d slow/audit.db
finish

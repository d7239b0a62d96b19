#!/usr/bin/env bash
# blob_fetch (ELSPETH 0.7.1; plugins/transform/blob_fetch.c) against the
# local web server test_web_scrape.sh uses (web_scrape_server.py):
#  a. a CSV fetched (directly and through redirects) lands in the payload
#     store as ab/HASH with that SHA-256, the row gains blob_ref,
#     blob_sha256, blob_content_type (the media type), blob_size_bytes,
#     fetch_status, fetch_url_final (after redirects), fetch_url_final_ip;
#     the headers sent carry X-Abuse-Contact and X-Fetch-Reason; every
#     fetch is a call in the trail;
#  b. a 404, a content type outside allowed_content_types and a body past
#     max_body_bytes are row errors with 0.7.1's reasons, nothing stored;
#     public_only refuses the loopback address before anything is sent;
#  c. blob_fetch then blob_csv_expand: one row per CSV row of each blob;
#  d. 0.7.1's example validates; bad options are refused naming the key.
source "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
PY=$(python3 -c 'import sys; print(sys.executable)')
"$PY" "$SRC/tests/integration/web_scrape_server.py" --pages "$SRC/tests/fixtures/web_scrape" \
  --port-file srv.port --log srv.log > srv.out 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
for i in $(seq 200); do [ -s srv.port ] && break; sleep 0.025; done
[ -s srv.port ] || { fail "the web server did not start"; cat srv.out; finish; exit 1; }
U=http://127.0.0.1:$(cat srv.port)

# pipeline DIR ALLOWED_HOSTS [EXPAND]: urls.csv -> blob_fetch (-> blob_csv_expand)
pipeline() {
  local d=$1 hosts=$2 expand=${3:-} next=out
  [ -n "$expand" ] && next=blobs
  mkdir -p "$d"
  cat > "$d/p.yaml" <<YAML
source:
  plugin: csv
  on_success: urls
  options: {path: urls.csv, schema: {mode: observed}, on_validation_failure: discard}
transforms:
  - name: fetch
    plugin: blob_fetch
    input: urls
    on_success: $next
    on_error: failures
    options:
      url_field: url
      allowed_content_types: [text/csv, "TEXT/HTML; charset=utf-8"]
      http: {abuse_contact: ops@example.com, fetch_reason: "blob test", timeout: 5, max_body_bytes: 1000, allowed_hosts: $hosts}
      schema: {mode: observed}
YAML
  [ -n "$expand" ] && cat >> "$d/p.yaml" <<YAML
  - name: expand
    plugin: blob_csv_expand
    input: blobs
    on_success: out
    on_error: failures
    options: {schema: {mode: observed}, columns: null}
YAML
  cat >> "$d/p.yaml" <<YAML
sinks:
  out: {plugin: json, options: {path: out.jsonl, format: jsonl}}
  failures: {plugin: json, options: {path: failures.jsonl, format: jsonl}}
payload_store: {base_path: payloads}
landscape: {url: "lmdb://./state"}
YAML
}

# ------------------------------------------------------------- a. fetched
pipeline a allow_private
cat > a/urls.csv <<CSV
id,url
1,$U/csv
2,$U/redirect/to?u=/csv
3,$U/status/404
4,$U/binary
5,$U/pages/article.html
6,$U/pages/simple.html
CSV
expect "a: the run completes" 0 "Run completed" -- sh -c "cd a && exec '$ELSPETH' run -s p.yaml --execute"
h=$(printf 'id,text\r\n1,alpha\r\n2,"b, c"\r\n' | sha256sum | cut -c1-64)
python3 - "$h" "$U" a/out.jsonl <<'PY' && pass "a: rows 1, 2 and 6 gain the blob's fields (redirect followed)" || fail "a: output rows"
import json, sys
h, u, path = sys.argv[1:]
rows = {r["id"]: r for r in map(json.loads, open(path))}
assert sorted(rows) == ["1", "2", "6"], sorted(rows)
for i in ("1", "2"):
    r = rows[i]
    assert r["blob_ref"] == r["blob_sha256"] == h, r
    assert r["blob_content_type"] == "text/csv" and r["blob_size_bytes"] == 28 and r["fetch_status"] == 200, r
    assert r["fetch_url_final"] == u + "/csv" and r["fetch_url_final_ip"] == "127.0.0.1", r
assert rows["6"]["blob_content_type"] == "text/html" and rows["6"]["blob_size_bytes"] == 60
PY
[ -f "a/payloads/${h:0:2}/$h" ] && [ "$(sha256sum < "a/payloads/${h:0:2}/$h" | cut -c1-64)" = "$h" ] &&
  [ -z "$(find a/payloads -name '*.??????')" ] &&
  pass "a: the payload store holds the body as ab/HASH, with that hash (no temporary file left)" ||
  fail "a: payload store: $(find a/payloads -type f | head)"
grep -q '"X-Fetch-Reason": "blob test"' srv.log && grep -q '"X-Abuse-Contact": "ops@example.com"' srv.log &&
  pass "a: X-Abuse-Contact and X-Fetch-Reason sent" || fail "a: headers not sent"
calls=$("$ELSPETH" runs -d a/state --run latest --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["metrics"]["calls"]["total"])')
[ "$calls" = 7 ] && pass "a: every request is a call in the trail (7: 6 rows, one redirect)" || fail "a: calls $calls"

# ------------------------------------------------------------ b. refused
python3 - a/failures.jsonl <<'PY' && pass "b: 404, octet-stream and a body past max_body_bytes: 0.7.1's reasons" || fail "b: failures"
import json, sys
rows = {r["id"]: r["_error"] for r in map(json.loads, open(sys.argv[1]))}
assert sorted(rows) == ["3", "4", "5"], rows
assert rows["3"].startswith("api_error: NotFoundError: HTTP 404"), rows["3"]
assert rows["4"].startswith("unsupported_content_type: ValueError: content-type 'application/octet-stream'"), rows["4"]
assert rows["5"].startswith("body_too_large: BodyTooLargeError: response body exceeds max_body_bytes 1000"), rows["5"]
PY
pipeline b public_only
printf 'id,url\n1,%s/csv\n' "$U" > b/urls.csv
n=$(wc -l < srv.log)
(cd b && "$ELSPETH" run -s p.yaml --execute > run.log 2>&1)
grep -q "validation_failed: SSRFBlockedError: Blocked IP range: 127.0.0.1 in 127.0.0.0/8" b/failures.jsonl &&
  [ "$(wc -l < srv.log)" = "$n" ] && [ ! -s b/out.jsonl ] &&
  pass "b: public_only refuses 127.0.0.1 before sending anything" || { fail "b: SSRF"; cat b/failures.jsonl b/run.log; }

# ------------------------------------------------------ c. fetch, expand
pipeline c allow_private expand
printf 'n,url\n1,%s/csv\n2,%s/redirect/chain\n' "$U" "$U" > c/urls.csv
expect "c: fetch then expand completes" 0 "Run completed" -- sh -c "cd c && exec '$ELSPETH' run -s p.yaml --execute"
python3 - c/out.jsonl c/failures.jsonl <<'PY' && pass "c: the CSV blob's two rows, each with its index; the HTML one is an expand error" || fail "c: expanded rows"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [(r["n"], r["id"], r["text"], r["csv_row_index"]) for r in rows] == [("1", "1", "alpha", 0), ("1", "2", "b, c", 1)], rows
fails = [json.loads(l) for l in open(sys.argv[2])]
assert len(fails) == 1 and fails[0]["n"] == "2" and fails[0]["_error"].startswith("empty_csv"), fails
PY

# ---------------------------------------------------------- d. settings
cp -r "$SRC/tests/fixtures/elspeth071_examples/examples" d-examples 2>/dev/null
expect "d: 0.7.1's example validates" 0 "Settings valid" -- "$ELSPETH" validate \
  -s d-examples/blob_transforms/settings_fetch_tutorial_html.yaml
bad() {
  local name=$1 http=$2 extra=$3 needle=$4
  cat > bad.yaml <<YAML
source: {plugin: csv, on_success: urls, options: {path: x.csv, schema: {mode: observed}, on_validation_failure: discard}}
transforms:
  - name: fetch
    plugin: blob_fetch
    input: urls
    on_success: out
    options:
      url_field: url
      schema: {mode: observed}
      http: $http$extra
sinks: {out: {plugin: json, options: {path: o.jsonl}}}
YAML
  expect "d: $name" 1 "$needle" -- "$ELSPETH" validate -s bad.yaml
}
H='{abuse_contact: a@b.c, fetch_reason: r}'
bad "http.fetch_reason is required" '{abuse_contact: a@b.c}' "" "missing required key 'fetch_reason'"
bad "web_scrape's scraping_reason is not blob_fetch's" '{abuse_contact: a@b.c, fetch_reason: r, scraping_reason: s}' "" "unknown key 'scraping_reason'"
bad "a non-ASCII reason" '{abuse_contact: a@b.c, fetch_reason: "café"}' "" "fetch_reason contains a non-ASCII character"
bad "an output field twice" "$H" $'\n      sha256_field: blob_ref' "Output fields must be unique; duplicates: ['blob_ref']"
bad "url_field among the outputs" "$H" $'\n      blob_ref_field: url' "collides with a blob_fetch output field"
bad "allowed_content_types twice" "$H" $'\n      allowed_content_types: [text/csv, "Text/CSV; q=1"]' "must be unique after normalization"
bad "max_body_bytes" '{abuse_contact: a@b.c, fetch_reason: r, max_body_bytes: 0}' "" "max_body_bytes"
finish

#!/usr/bin/env bash
# web_scrape (plugins/transform/web_scrape*.c, docs/settings.md) against a
# local web server this test starts (web_scrape_server.py), and a second
# one on 127.0.0.2 that nothing may reach:
#  a. markdown, text and raw of the test pages (tests/fixtures/web_scrape/)
#     and their fingerprints are what the real ELSPETH 0.4.1 made of them
#     (expected/, recorded by tests/reference/web_scrape_vs_elspeth.sh);
#     fingerprint_mode full hashes the content as it is;
#  b. one pipeline of good and bad URLs: redirects followed (relative,
#     chains), redirects to a forbidden address refused and recorded as
#     calls not sent (the 127.0.0.2 server sees nothing), a private
#     address, another scheme, a redirect loop, a redirect without a
#     Location, 404, 410 (kept, as ELSPETH), 500 and a timeout retried per
#     `retry` then failed, a refused connection, a binary body: every row
#     is in exactly one sink with ELSPETH's error words, every fetch a
#     call in the trail, verify passes, the headers ELSPETH sends are sent,
#     and --sequential writes the same files as 8 rows in flight;
#  c. allowed_hosts: allow_private reaches 127.0.0.2 but never the
#     metadata address; a name resolving to an allowed and a refused
#     address (localhost: 127.0.0.1 and ::1) is refused;
#  d. DNS rebinding (tests/shim/rebind.c: a name that resolves to
#     127.0.0.1, then to 127.0.0.2): the name is resolved once and the
#     connection goes to the address checked;
#  e. bad options are refused by validate, naming file, line and key.
source "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
PY=$(python3 -c 'import sys; print(sys.executable)')
PAGES=$SRC/tests/fixtures/web_scrape
SERVER=$SRC/tests/integration/web_scrape_server.py
SRV_PIDS=()
trap 'for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

# serve NAME HOST: starts a server, sets PORT_<NAME>.
serve() {
  local name=$1 host=$2 i
  "$PY" "$SERVER" --pages "$PAGES" --host "$host" --port-file "$name.port" --log "$name.log" \
    > "$name.out" 2>&1 &
  SRV_PIDS+=($!)
  for i in $(seq 200); do [ -s "$name.port" ] && break; sleep 0.025; done
  [ -s "$name.port" ] || { fail "server $name on $host did not start"; cat "$name.out"; finish; exit 1; }
  printf -v "PORT_$name" '%s' "$(cat "$name.port")"
}
serve one 127.0.0.1
serve two 127.0.0.2
P1=$PORT_one P2=$PORT_two
U=http://127.0.0.1:$P1

# pipeline FILE INPUT FORMAT ALLOWED [EXTRA_OPTIONS]: a web_scrape pipeline
# (retries fast: 2 attempts; timeout $TIMEOUT s, 5 unless set: generous,
# for sanitizer builds on a busy machine) to out.jsonl and failures.jsonl
# in directory FILE's name without .yaml.
pipeline() {
  local f=$1 in=$2 fmt=$3 allowed=$4 extra=${5:-} d=${1%.yaml}
  cat > "$f" <<YAML
source:
  plugin: csv
  on_success: urls
  options: {path: $in, schema: {mode: observed}, on_validation_failure: discard}
transforms:
  - name: scraper
    plugin: web_scrape
    input: urls
    on_success: out
    on_error: failures
    options:
      url_field: url
      content_field: page_content
      fingerprint_field: page_fingerprint
      format: $fmt
      http:
        abuse_contact: test@example.com
        scraping_reason: elspeth integration test
        timeout: ${TIMEOUT:-5}
        allowed_hosts: $allowed
      schema: {mode: observed}$extra
sinks:
  out: {plugin: json, options: {path: $d/out.jsonl, format: jsonl}}
  failures: {plugin: json, options: {path: $d/failures.jsonl, format: jsonl}}
retry: {max_attempts: 2, initial_delay_seconds: 0.01, max_delay_seconds: 0.02}
landscape: {url: "lmdb://./state-$d"}
YAML
}

# run NAME ARGS...: runs NAME.yaml, exit code in RC, output in NAME.log.
run() {
  local name=$1; shift
  timeout -s KILL 300 "$ELSPETH" run -s "$name.yaml" -x "$@" > "$name.log" 2>&1
  RC=$?
}

verify_ok() { "$ELSPETH" verify --database "state-$1" --run latest > /dev/null 2>&1; }

# ------------------------------------------------------------ a. formats
names=$(cd "$PAGES" && ls *.html | sed 's/\.html$//' | sort)
{ echo "id,url"; for n in $names; do echo "$n,$U/pages/$n.html"; done; } > pages.csv
for fmt in markdown text raw; do
  pipeline "f_$fmt.yaml" pages.csv $fmt '["127.0.0.1/32"]'
  run "f_$fmt" --max-rows-in-flight 4
  [ "$RC" = 0 ] || { fail "formats: $fmt run exits $RC"; sed 's/^/    /' "f_$fmt.log" | head; }
  res=$("$PY" - "$fmt" "$PAGES/expected" "f_$fmt/out.jsonl" <<'PY'
import json, sys
fmt, exp, out = sys.argv[1:4]
ext = {"markdown": "md", "text": "txt", "raw": "raw"}[fmt]
fps = {tuple(l.split()[:2]): l.split()[2] for l in open(exp + "/fingerprints.txt")}
rows = [json.loads(l) for l in open(out)]
bad = []
for r in rows:
    want = open(f"{exp}/{r['id']}.{ext}", encoding="utf-8", newline="").read()
    if r["page_content"] != want:
        bad.append(r["id"] + " content")
    if r["page_fingerprint"] != fps[(r["id"], fmt)]:
        bad.append(r["id"] + " fingerprint")
    if (r["fetch_status"], r["fetch_url_final"], r["fetch_url_final_ip"]) != (200, r["url"], "127.0.0.1"):
        bad.append(r["id"] + " fetch fields")
print(f"{len(rows)} rows; differ: {', '.join(bad) or 'none'}")
PY
)
  is_ok=0; grep -q "differ: none" <<<"$res" && [ "${res%% *}" = "$(wc -w <<<"$names")" ] && is_ok=1
  if [ $is_ok = 1 ]; then pass "formats: $fmt of every page as ELSPETH ($res)"; else fail "formats: $fmt ($res)"; fi
done
pipeline f_full.yaml pages.csv text '["127.0.0.1/32"]' $'\n      fingerprint_mode: full'
run f_full
res=$("$PY" -c '
import hashlib, json, sys
bad = sum(hashlib.sha256(r["page_content"].encode()).hexdigest() != r["page_fingerprint"]
          for r in map(json.loads, open("f_full/out.jsonl")))
print(bad)')
[ "$RC" = 0 ] && [ "$res" = 0 ] && pass "formats: fingerprint_mode full is the SHA-256 of the content" ||
  fail "formats: fingerprint_mode full ($RC, $res bad)"
verify_ok f_markdown && pass "formats: verify" || fail "formats: verify"

# ----------------------------------------------- b. redirects and errors
cat > b.csv <<CSV
id,url
chain,$U/redirect/chain
relative,$U/redirect/to?u=/pages/simple.html
absolute,$U/redirect/to?u=$U/pages/article.html
to_other_lo,$U/redirect/to?u=http://127.0.0.2:$P2/pages/simple.html
to_metadata,$U/redirect/to?u=http://169.254.169.254/latest/meta-data/
to_ftp,$U/redirect/to?u=ftp://127.0.0.1/file
private,http://10.1.2.3/x
v6_unspecified,http://[::]:$P1/pages/simple.html
v6_6to4,http://[2002:7f00:2::]:$P1/pages/simple.html
to_v6_nat64,$U/redirect/to?u=http://[64:ff9b::7f00:2]:$P1/pages/simple.html
scheme,ftp://127.0.0.1/file
loop,$U/redirect/loop
nolocation,$U/redirect/nolocation
missing,$U/status/404
forbidden,$U/status/403
gone,$U/status/410
server,$U/status/500
slow,$U/slow?s=10
refused,http://127.0.0.1:1/
binary,$U/binary
CSV
TIMEOUT=3 pipeline b.yaml b.csv markdown '["127.0.0.1/32"]'
: > one.log; : > two.log
run b --max-rows-in-flight 8
[ "$RC" = 0 ] && pass "errors: the run exits 0" || { fail "errors: exit $RC"; sed 's/^/    /' b.log | head; }
res=$("$PY" - "$U" "$P2" "$P1" <<'PY'
import json, sys
U, P2, P1 = sys.argv[1:4]
out = {r["id"]: r for r in map(json.loads, open("b/out.jsonl"))}
err = {r["id"]: r["_error"] for r in map(json.loads, open("b/failures.jsonl"))}
want_ok = {"chain": f"{U}/pages/simple.html", "relative": f"{U}/pages/simple.html",
           "absolute": f"{U}/pages/article.html", "gone": f"{U}/status/410",
           "binary": f"{U}/binary"}
want_err = {
  "to_other_lo": f"api_error: SSRFBlockedError: SSRF blocked during redirect: {U}/redirect/to?u=http://127.0.0.2:{P2}/pages/simple.html: Blocked IP range: 127.0.0.2 in 127.0.0.0/8",
  "to_metadata": f"api_error: SSRFBlockedError: SSRF blocked during redirect: {U}/redirect/to?u=http://169.254.169.254/latest/meta-data/: Always-blocked IP range: 169.254.169.254 in 169.254.0.0/16",
  "to_ftp": f"api_error: SSRFBlockedError: SSRF blocked during redirect: {U}/redirect/to?u=ftp://127.0.0.1/file: Forbidden scheme: ftp",
  "private": "validation_failed: SSRFBlockedError: Blocked IP range: 10.1.2.3 in 10.0.0.0/8",
  "v6_unspecified": "validation_failed: SSRFBlockedError: Blocked IP range: :: in ::/128",
  "v6_6to4": "validation_failed: SSRFBlockedError: Blocked IP range: 127.0.0.2 in 127.0.0.0/8 (embedded in 2002:7f00:2::)",
  "to_v6_nat64": f"api_error: SSRFBlockedError: SSRF blocked during redirect: {U}/redirect/to?u=http://[64:ff9b::7f00:2]:{P1}/pages/simple.html: Blocked IP range: 127.0.0.2 in 127.0.0.0/8 (embedded in 64:ff9b::7f00:2)",
  "scheme": "validation_failed: SSRFBlockedError: Forbidden scheme: ftp",
  "loop": f"api_error: InvalidURLError: Too many redirects: {U}/redirect/loop: Exceeded 10 redirects",
  "nolocation": f"api_error: InvalidURLError: Unresolved redirect HTTP 302: {U}/redirect/nolocation (missing or empty Location header)",
  "missing": f"api_error: NotFoundError: HTTP 404: {U}/status/404",
  "forbidden": f"api_error: ForbiddenError: HTTP 403: {U}/status/403",
  "server": f"api_error: ServerError: HTTP 500: {U}/status/500",
  "slow": f"api_error: NetworkError: Timeout fetching {U}/slow?s=10: ",
  "refused": "api_error: NetworkError: Connection error fetching http://127.0.0.1:1/: ",
}
bad = []
for k, v in want_ok.items():
    r = out.get(k)
    if not r or r["fetch_url_final"] != v or r["fetch_url_final_ip"] != "127.0.0.1":
        bad.append(f"{k}: {r and (r['fetch_url_final'], r['fetch_url_final_ip'])}")
if out.get("gone", {}).get("fetch_status") != 410:
    bad.append("gone: status")
for k, v in want_err.items():
    if not err.get(k, "").startswith(v):
        bad.append(f"{k}: {err.get(k)!r}")
if len(out) + len(err) != 20 or set(out) & set(err):
    bad.append(f"{len(out)} out + {len(err)} failed")
print("; ".join(bad) or "ok")
PY
)
[ "$res" = ok ] && pass "errors: every row in one sink, with ELSPETH's words" || fail "errors: $res"
[ ! -s two.log ] && pass "errors: nothing reached 127.0.0.2" || fail "errors: 127.0.0.2 was reached: $(head -2 two.log)"
res=$("$PY" -c '
import json
bad = [r["path"] for r in map(json.loads, open("one.log"))
       if (r["headers"].get("X-Abuse-Contact"), r["headers"].get("X-Scraping-Reason")) !=
          ("test@example.com", "elspeth integration test")
       or not r["headers"].get("User-Agent", "").startswith("elspeth/")]
print(len(bad))')
[ "$res" = 0 ] && pass "errors: every request carries X-Abuse-Contact, X-Scraping-Reason, User-Agent" ||
  fail "errors: $res requests without the headers"
verify_ok b && pass "errors: verify" || fail "errors: verify"

# calls ROW: the row's calls as "type:status:class" words (explain --json).
calls() {
  local row
  row=$(grep -n "^$1," b.csv | cut -d: -f1); row=$((row - 1))
  "$ELSPETH" explain --database state-b --run latest --row "$row" --json 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
def walk(x):
    if isinstance(x, dict):
        if "call_type" in x and "request" in x:
            yield x
        for v in x.values():
            yield from walk(v)
    elif isinstance(x, list):
        for v in x:
            yield from walk(v)
print(" ".join("%s:%s:%s" % (c["call_type"], c.get("http_status") or 0, c.get("error_class") or "ok")
               for c in walk(d)))'
}
expect_calls() {
  local got; got=$(calls "$1")
  [ "$got" = "$2" ] && pass "calls: $1 recorded as $2" || fail "calls: $1 recorded as '$got', want '$2'"
}
expect_calls chain "http:301:ok http_redirect:302:ok http_redirect:200:ok"
expect_calls to_other_lo "http:302:ok http_redirect:0:client"
expect_calls to_metadata "http:302:ok http_redirect:0:client"
expect_calls private ""
expect_calls missing "http:404:client"
expect_calls server "http:500:server http:500:server"
expect_calls slow "http:0:timeout http:0:timeout"
expect_calls refused "http:0:network http:0:network"
n=$(calls loop | wc -w)
[ "$n" = 11 ] && pass "calls: a redirect loop stops after 10 redirects (11 requests)" || fail "calls: loop made $n calls"
expect "calls: explain shows the refused hop, not sent, with its target" 0 \
  "SSRFBlockedError: Always-blocked IP range: 169.254.169.254 in 169.254.0.0/16 (not sent)" -- \
  "$ELSPETH" explain --database state-b --run latest --row 5
expect "calls: explain shows the hop's request with its pinned address" 0 '"resolved_ip":"127.0.0.1"' -- \
  "$ELSPETH" explain --database state-b --run latest --row 1

sed 's/state-b/state-b_seq/; s#b/out.jsonl#b_seq/out.jsonl#; s#b/failures.jsonl#b_seq/failures.jsonl#' b.yaml > b_seq.yaml
run b_seq --sequential
[ "$RC" = 0 ] && diff -q b/out.jsonl b_seq/out.jsonl > /dev/null && diff -q b/failures.jsonl b_seq/failures.jsonl > /dev/null &&
  pass "errors: --sequential writes the same files as 8 rows in flight" || fail "errors: sequential differs ($RC)"

# --------------------------------------------------- c. allowed_hosts
cat > c.csv <<CSV
id,url
other_lo,$U/redirect/to?u=http://127.0.0.2:$P2/pages/simple.html
metadata,$U/redirect/to?u=http://169.254.169.254/latest/meta-data/
CSV
pipeline c.yaml c.csv text allow_private
: > two.log
run c
res=$("$PY" -c '
import json
out = {r["id"]: r for r in map(json.loads, open("c/out.jsonl"))}
err = {r["id"]: r["_error"] for r in map(json.loads, open("c/failures.jsonl"))}
ok = (out.get("other_lo", {}).get("fetch_url_final_ip") == "127.0.0.2"
      and out["other_lo"]["page_content"] == "Title Content here"
      and "Always-blocked IP range: 169.254.169.254" in err.get("metadata", ""))
print("ok" if ok else f"{out} {err}")')
[ "$res" = ok ] && [ "$(wc -l < two.log)" = 1 ] && pass "allow_private: 127.0.0.2 reached, the metadata address still refused" ||
  fail "allow_private: $res (127.0.0.2 saw $(wc -l < two.log))"
if getent ahosts localhost | grep -q '^::1 '; then
  echo "id,url" > l.csv; echo "lh,http://localhost:$P1/pages/simple.html" >> l.csv
  pipeline l.yaml l.csv text '["127.0.0.1/32"]'
  run l
  grep -q 'validation_failed: SSRFBlockedError: Blocked IP range: ::1 in ::1/128' l/failures.jsonl &&
    pass "allowed_hosts: localhost (127.0.0.1 and ::1) is refused for its ::1" || fail "allowed_hosts: localhost: $(cat l/failures.jsonl l/out.jsonl 2>/dev/null)"
else
  echo "# localhost has no ::1 here: its mixed-address case is not run"
fi

# ------------------------------------------------------ d. DNS rebinding
SHIM=$(dirname "$ELSPETH")/libelspeth_rebind.so
if [ -f "$SHIM" ]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
  echo "id,url" > d.csv; echo "rebind,http://rebind.test:$P1/pages/simple.html" >> d.csv
  pipeline d.yaml d.csv text '["127.0.0.1/32"]'
  : > two.log; : > rebind.log
  LD_PRELOAD=$SHIM ELSPETH_TEST_REBIND=rebind.test,127.0.0.1,127.0.0.2 ELSPETH_TEST_REBIND_LOG=$WORK/rebind.log \
    run d
  res=$("$PY" -c '
import json
r = [json.loads(l) for l in open("d/out.jsonl")]
print("ok" if len(r) == 1 and r[0]["fetch_url_final_ip"] == "127.0.0.1" and r[0]["page_content"] == "Title Content here" else r)')
  [ "$RC" = 0 ] && [ "$res" = ok ] && [ ! -s two.log ] && [ "$(cat rebind.log)" = 127.0.0.1 ] &&
    pass "rebinding: resolved once, connected to the address checked (127.0.0.2 never reached)" ||
    fail "rebinding: rc $RC, $res, resolutions: $(tr '\n' ' ' < rebind.log), 127.0.0.2 saw $(wc -l < two.log)"
else
  fail "rebinding: the test shim $SHIM is not built"
fi

# ------------------------------------------------------- e. bad options
# bad NAME NEEDLE SED: validate refuses b.yaml edited by SED.
bad() {
  local rc
  sed "$3" b.yaml > "e_$1.yaml"
  "$ELSPETH" validate -s "e_$1.yaml" > "e_$1.log" 2>&1; rc=$?
  if [ "$rc" = 1 ] && grep -qF -- "$2" "e_$1.log"; then pass "options: $1"
  else fail "options: $1: exit $rc, want 1 and '$2'"; sed 's/^/    /' "e_$1.log" | head -5; fi
}
bad unknown_key "e_unknown_key.yaml:12:7: transforms[0].options.urll_field: unknown key 'urll_field'" 's/url_field: url/urll_field: url/'
bad unknown_http_key "transforms[0].options.http.user_agent: unknown key 'user_agent'" 's/timeout: 3/timeout: 3\n        user_agent: me/'
bad no_abuse_contact "missing required key 'abuse_contact'" '/abuse_contact/d'
bad empty_reason "scraping_reason must not be empty" 's/scraping_reason: .*/scraping_reason: "  "/'
bad header_injection "abuse_contact must be one line" 's/abuse_contact: .*/abuse_contact: "a\\r\\nX-Evil: 1"/'
bad keyword "allowed_hosts must be 'public_only', 'allow_private', or a list of CIDR ranges, got 'everything'" 's/allowed_hosts: .*/allowed_hosts: everything/'
bad cidr "Invalid CIDR in allowed_hosts: '10.0.0.0/33'" 's#allowed_hosts: .*#allowed_hosts: ["10.0.0.0/33"]#'
bad empty_list "allowed_hosts list must not be empty" 's/allowed_hosts: .*/allowed_hosts: []/'
bad format "transforms[0].options.format" 's/format: markdown/format: html/'
bad same_fields "content_field and fingerprint_field must differ" 's/fingerprint_field: page_fingerprint/fingerprint_field: page_content/'
bad timeout "transforms[0].options.http.timeout" 's/timeout: 3/timeout: 0/'
bad no_schema "missing required key 'schema'" '/schema: {mode: observed}$/d'

# Sanitizer builds: a report in any run's output is a failure, whatever
# the run's exit code said.
reports=$(grep -l 'Sanitizer\|runtime error:' ./*.log 2>/dev/null | grep -v -e '^./one.log' -e '^./two.log')
[ -z "$reports" ] && pass "no sanitizer report in any run" || fail "sanitizer reports in: $reports"

finish

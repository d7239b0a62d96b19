#!/usr/bin/env bash
# `elspeth serve` in ELSPETH's oidc mode (#29, docs/serve.md "OIDC"):
# bearer tokens are an OpenID Connect issuer's RS256 JWTs, checked against
# the JWKS its discovery document names. A test issuer on loopback
# (oidc_issuer.py: Python's standard library, keys and signatures made by
# the openssl command) serves the documents; tokens are minted for each
# case: good ones pass (the profile from their claims), every way a token
# can be wrong is refused, the JWKS is fetched once and kept when the
# issuer goes away, and the options are checked at start.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
DPY=/usr/bin/python3
ISS="$DPY $SRC/tests/integration/oidc_issuer.py"
mkdir -p keys root
openssl genrsa -out keys/good.pem 2048 2>/dev/null && openssl genrsa -out keys/rogue.pem 2048 2>/dev/null ||
  { fail "openssl genrsa"; finish; exit 1; }
cp "$SRC/tests/fixtures/elspeth_telemetry/pipeline/input/people.csv" root/people.csv
cat > root/p.yaml <<'YAML'
source: {plugin: csv, on_success: out, options: {path: people.csv, schema: {mode: observed}, on_validation_failure: discard}}
sinks:
  out: {plugin: csv, options: {path: out/people.csv}}
landscape: {url: "lmdb://./state"}
YAML

$ISS serve port keys > issuer.log 2>&1 &
IPID=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
IP=$(cat port)
ISSUER="http://127.0.0.1:$IP"
"$ELSPETH" serve --listen 127.0.0.1:0 --root root --oidc-issuer "$ISSUER/" \
  --oidc-audience elspeth-api --oidc-client-id page-1 > serve.out 2> serve.err &
SRV=$!
trap 'kill $SRV $IPID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q "listening on port" serve.out 2>/dev/null && break; sleep 0.05; done
P=$(grep -o 'port [0-9]*' serve.out | cut -d' ' -f2)
[ -n "$P" ] && pass "serve starts in oidc mode (port $P)" || { fail "serve did not start"; cat serve.err; finish; exit 1; }

now=$(date +%s)
claims() { # extra JSON fields merged over a good token's claims
  $DPY -c 'import json,sys; c={"iss": sys.argv[1], "aud": "elspeth-api", "sub": "u-17",
    "preferred_username": "ann", "name": "Ann Auditor", "email": "ann@example.org",
    "groups": ["auditors", 42], "iat": int(sys.argv[2]) - 10, "exp": int(sys.argv[2]) + 600}
c.update(json.loads(sys.argv[3])); [c.pop(k) for k in [k for k, v in c.items() if v is None]]
print(json.dumps(c))' "$ISSUER" "$now" "${1:-{\}}"
}
token() { $ISS mint "keys/${2:-good}.pem" "${3-k1}" "$(claims "${1:-{\}}")" ${4:-}; }
get() { curl -s -H "Authorization: Bearer $1" "http://127.0.0.1:$P$2" -w '\n%{http_code}'; }

out=$(curl -s "http://127.0.0.1:$P/api/auth/config")
[ "$out" = "{\"provider\":\"oidc\",\"oidc_issuer\":\"$ISSUER/\",\"oidc_client_id\":\"page-1\"}" ] &&
  pass "GET /api/auth/config: ELSPETH's {provider: oidc, issuer, client id}" || fail "config: $out"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/api/runs")" = 401 ] &&
  pass "no token: 401" || fail "no token"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{"username":"a","password":"b"}' \
  "http://127.0.0.1:$P/api/auth/login")" = 404 ] && pass "no password logins in oidc mode: 404" ||
  fail "login in oidc mode"

good=$(token)
out=$(get "$good" /api/auth/me)
$DPY -c 'import json,sys
b, code = sys.argv[1].rsplit("\n", 1)
assert code == "200", code
assert json.loads(b) == {"user_id": "u-17", "username": "ann", "display_name": "Ann Auditor",
  "email": "ann@example.org", "groups": ["auditors", "42"]}, b' "$out" &&
  pass "a good token: /api/auth/me is ELSPETH's UserProfile from its claims" || fail "good token: $out"

refused() { # NAME TOKEN
  local code
  code=$(get "$2" /api/runs | tail -1)
  [ "$code" = 401 ] && pass "refused (401): $1" || fail "$1: $code"
}
refused "expired" "$(token '{"exp": '$((now - 5))'}')"
refused "for another audience" "$(token '{"aud": "someone-else"}')"
refused "from another issuer" "$(token '{"iss": "http://127.0.0.1:1"}')"
refused "signed by a key not in the JWKS (same kid)" "$(token '{}' rogue)"
refused "a kid the JWKS lacks" "$(token '{}' good k9)"
refused "not valid yet (nbf)" "$(token '{"nbf": '$((now + 300))'}')"
refused "issued in the future (iat)" "$(token '{"iat": '$((now + 300))'}')"
refused "without sub" "$(token '{"sub": null}')"
refused "without exp" "$(token '{"exp": null}')"
refused "alg none" "$(token '{}' good k1 none)"
tampered=$($DPY -c 'import base64,json,sys
h, p, s = sys.argv[1].split(".")
c = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
c["sub"] = "root"
print(h + "." + base64.urlsafe_b64encode(json.dumps(c).encode()).rstrip(b"=").decode() + "." + s)' "$good")
refused "a payload changed after signing" "$tampered"
refused "not a JWT" "abc.def"

# a run, with the token; the WebSocket takes it as ?token=
out=$(curl -s -X POST -H "Authorization: Bearer $good" -d '{"settings_path": "p.yaml"}' \
  "http://127.0.0.1:$P/api/runs" -w '\n%{http_code}')
id=$(head -1 <<<"$out" | $DPY -c 'import json,sys; print(json.load(sys.stdin)["run_id"])' 2>/dev/null)
[ "${out##*$'\n'}" = 202 ] && pass "POST /api/runs with the token: 202" || fail "post: $out"
st=""
for _ in $(seq 100); do
  st=$(get "$good" "/api/runs/$id" | head -1 | $DPY -c 'import json,sys; print(json.load(sys.stdin)["status"])')
  [ "$st" = completed ] && break; sleep 0.1
done
[ "$st" = completed ] && pass "the run completes" || fail "run status: $st"
$DPY "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/$id?token=$good" > ws_good.json
grep -q '"close": 1000' ws_good.json && grep -q '"completed"' ws_good.json &&
  pass "the WebSocket with the token (?token=): the run's events, closed 1000" || fail "ws: $(cat ws_good.json)"
$DPY "$SRC/tests/integration/ws_watch.py" "ws://127.0.0.1:$P/ws/runs/$id?token=$tampered" > ws_bad.json
grep -q '"close": 4001' ws_bad.json && pass "the WebSocket with a bad token: closed 4001 (ELSPETH's)" ||
  fail "ws bad token: $(cat ws_bad.json)"

hits=$(curl -s "$ISSUER/hits")
[ "$hits" = '{"discovery": 1, "jwks": 1}' ] && pass "the JWKS was fetched once for all those tokens ($hits)" ||
  fail "fetches: $hits"
kill $IPID; wait $IPID 2>/dev/null
[ "$(get "$(token)" /api/auth/me | tail -1)" = 200 ] &&
  pass "the issuer gone: the keys fetched are kept (a fresh token still passes)" || fail "issuer gone"

expect "an issuer over plain http that is not loopback is refused" 1 "https://" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root root --oidc-issuer http://idp.example.org --oidc-audience a
expect "an issuer without an audience is refused" 1 "--oidc-audience" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root root --oidc-issuer https://idp.example.org
expect "--users and --oidc-issuer together are refused" 1 "one of --users, --oidc-issuer" -- \
  "$ELSPETH" serve --listen 127.0.0.1:0 --root root --users /nonexistent --oidc-issuer https://i --oidc-audience a
finish

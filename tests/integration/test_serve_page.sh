#!/usr/bin/env bash
# elspeth serve's page (docs/serve.md) in headless Debian chromium, driven
# over the DevTools protocol (serve_page_cdp.py): log in (a wrong password
# refused first), start the README demo's pipeline against the bundled
# mock, see the live numbers move over the WebSocket, wait for the run to
# complete, open row 42's story; a screenshot at each step, checked to be
# a drawn page, the content checked in the page itself. Exit 77 when
# chromium or python3-websocket is missing.
source "$(dirname "$0")/lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
DPY=/usr/bin/python3
command -v chromium > /dev/null || { echo "# skipped: chromium is missing (apt-get install chromium)"; exit 77; }
"$DPY" -c 'import websocket' 2> /dev/null || { echo "# skipped: python3-websocket is missing"; exit 77; }

EX=$SRC/examples/llm_classify
mkdir -p root/data shots
cp "$EX/data/"* root/data/
sed -e 's#examples/llm_classify/data#data#' -e 's#${ELSPETH_OUT_DIR:-examples/llm_classify/out}#out#' \
  "$EX/settings.yaml" > root/demo.yaml
echo 'landscape: {url: "lmdb://./state"}' >> root/demo.yaml
# shellcheck disable=SC2046
mock_start $(cat "$EX/mock.args")
printf 'tr0ub4dor&3\n' | "$ELSPETH" serve adduser ann --users users.json > /dev/null

"$ELSPETH" serve --listen 127.0.0.1:0 --root root --users users.json > serve.out 2> serve.err &
SRV=$!
CHR=
trap 'kill $SRV $CHR 2>/dev/null; mock_stop; [ -z "${KEEP:-}" ] && rm -rf "$WORK"' EXIT
for _ in $(seq 100); do grep -q "listening on port" serve.out 2>/dev/null && break; sleep 0.05; done
P=$(grep -o 'port [0-9]*' serve.out | cut -d' ' -f2)
[ -n "$P" ] && pass "serve listens (port $P)" || { fail "serve did not start"; cat serve.err; finish; exit; }

hdrs=$(curl -s -D - -o page.html "http://127.0.0.1:$P/")
grep -q "^HTTP/1.1 200" <<<"$hdrs" && grep -qi "^content-security-policy: default-src 'none'" <<<"$hdrs" &&
  grep -q 'id="login-btn"' page.html && pass "GET / is the page (no token needed), with a strict Content-Security-Policy" ||
  fail "GET /: $(head -3 <<<"$hdrs")"

chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
  --user-data-dir="$WORK/profile" --remote-debugging-port=0 about:blank > chromium.out 2> chromium.err &
CHR=$!
for _ in $(seq 200); do grep -q "DevTools listening on" chromium.err 2>/dev/null && break; sleep 0.1; done
CP=$(grep -o 'ws://127.0.0.1:[0-9]*' chromium.err | head -1 | cut -d: -f3)
[ -n "$CP" ] && pass "headless chromium $(chromium --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1) with DevTools on port $CP" ||
  { fail "chromium did not start"; tail -5 chromium.err; finish; exit; }

"$DPY" "$SRC/tests/integration/serve_page_cdp.py" "$CP" "http://127.0.0.1:$P/" ann 'tr0ub4dor&3' \
  demo.yaml "$WORK/shots" > cdp.log 2>&1
rc=$?
sed -e '/^# [0-9]* checks failed/d' -e '/^ok - \|^FAIL - \|^# /!s/^/    /' cdp.log
PASSES=$((PASSES + $(grep -c '^ok - ' cdp.log))); FAILS=$((FAILS + $(grep -c '^FAIL - ' cdp.log)))
[ $rc = 0 ] || [ "$(grep -c '^FAIL - ' cdp.log)" -gt 0 ] || { fail "the page driver stopped (exit $rc)"; tail -5 cdp.log; }
[ -n "${SHOTS_TO:-}" ] && cp shots/*.png "$SHOTS_TO"/
finish

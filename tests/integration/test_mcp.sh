#!/usr/bin/env bash
# `elspeth mcp` end to end, driven by the official MCP TypeScript SDK client
# (@modelcontextprotocol/sdk: Client + StdioClientTransport,
# tests/mcp-client/client.mjs) on the fixture trail of four ELSPETH 0.4.1
# runs (tests/fixtures/mcp/trail.sql): initialize, tools/list, every tool
# checked against known facts of the fixture, writes through `query`
# refused and the file byte-identical afterwards. Then, without the SDK:
# stdout carries nothing but JSON-RPC, bad options and missing trails exit
# 2 and 1, SIGTERM ends the server.
#
# The client is installed with `npm ci` (package-lock.json) into the build
# directory, once per lock file. Without npm the test is skipped (exit 77)
# and says so; a failing install fails it.
source "$(dirname "$0")/lib.sh"
cd "$WORK"

if ! command -v npm > /dev/null; then
  echo "SKIP: test_mcp needs npm (and node) to install the MCP TypeScript SDK client in tests/mcp-client; npm is not installed"
  exit 77
fi

# ---- the client, installed under the build directory
CLIENT="$(dirname "$ELSPETH")/mcp-client"
LOCK_SUM=$(sha256sum "$SRC/tests/mcp-client/package-lock.json" | cut -d' ' -f1)
mkdir -p "$CLIENT"
if [ ! -d "$CLIENT/node_modules/@modelcontextprotocol/sdk" ] ||
   [ "$(cat "$CLIENT/.lock.sha256" 2>/dev/null)" != "$LOCK_SUM" ]; then
  cp "$SRC/tests/mcp-client/package.json" "$SRC/tests/mcp-client/package-lock.json" "$CLIENT/"
  if (cd "$CLIENT" && timeout 300 npm ci --no-audit --no-fund --loglevel=error) > npm.log 2>&1; then
    echo "$LOCK_SUM" > "$CLIENT/.lock.sha256"
    pass "npm ci installed the MCP TypeScript SDK client"
  else
    fail "npm ci of tests/mcp-client failed"; sed 's/^/    /' npm.log | tail -20
    finish; exit 1
  fi
fi
cp "$SRC/tests/mcp-client/client.mjs" "$CLIENT/"

# ---- the fixture trail, as a fresh SQLite file
if command -v sqlite3 > /dev/null; then
  sqlite3 trail.db < "$SRC/tests/fixtures/mcp/trail.sql"
else
  python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).executescript(open(sys.argv[2]).read())' \
    trail.db "$SRC/tests/fixtures/mcp/trail.sql"
fi
before=$(sha256sum trail.db | cut -d' ' -f1)

# ---- the SDK client: every tool, the refusals, the errors
node "$CLIENT/client.mjs" "$ELSPETH" "$WORK/trail.db" > client.out 2>&1
rc=$?
cat client.out
PASSES=$((PASSES + $(grep -c '^ok - ' client.out)))
FAILS=$((FAILS + $(grep -c '^FAIL - ' client.out)))
[ "$rc" = 0 ] && pass "the SDK client's session succeeded" || fail "the SDK client exited $rc"
[ "$(grep -c '^ok - ' client.out)" -ge 40 ] && pass "the client made its 40+ checks" ||
  fail "the client made only $(grep -c '^ok - ' client.out) checks"
after=$(sha256sum trail.db | cut -d' ' -f1)
[ "$before" = "$after" ] && pass "the trail file is byte-identical after the session" ||
  fail "the trail file changed during the session"
ls /tmp/elspeth-mcp-test-attached.db > /dev/null 2>&1 &&
  fail "ATTACH created a file" || pass "ATTACH created no file"

# ---- without the SDK: stdout is JSON-RPC only
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"diagnose"}}' \
  'not json' \
  '{"jsonrpc":"2.0","id":3,"method":"bogus/method"}' |
  "$ELSPETH" mcp -d trail.db > raw.out 2> raw.err
if python3 - raw.out << 'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
msgs = [json.loads(l) for l in lines]          # every stdout line is JSON
assert [m["id"] for m in msgs] == [1, 2, None, 3], [m.get("id") for m in msgs]
assert msgs[0]["result"]["protocolVersion"] == "2025-03-26"
assert json.loads(msgs[1]["result"]["content"][0]["text"])["status"] == "CRITICAL"
assert msgs[2]["error"]["code"] == -32700 and msgs[3]["error"]["code"] == -32601
EOF
then pass "stdout holds only the JSON-RPC replies, one per line"
else fail "stdout of a raw session"; sed 's/^/    /' raw.out | cut -c1-200; fi
grep -q "serving trail.db (4 runs)" raw.err && pass "notes go to stderr" || fail "no note on stderr"

expect "mcp names a missing trail" 1 "no audit trail at nowhere.db" -- "$ELSPETH" mcp -d nowhere.db
expect "mcp refuses a file that is not a trail" 1 "neither an SQLite audit trail" -- "$ELSPETH" mcp -d raw.out
expect "mcp refuses a bad option" 2 "bad option '--frobnicate'" -- "$ELSPETH" mcp --frobnicate
expect "mcp refuses -d with -s" 2 "not both" -- "$ELSPETH" mcp -d trail.db -s x.yaml
expect "mcp takes sqlite:/// URLs" 0 "serving trail.db" -- "$ELSPETH" mcp -d sqlite:///trail.db < /dev/null
expect "mcp --help" 0 "Model" -- "$ELSPETH" mcp --help

# ---- SIGTERM ends a server waiting for input
mkfifo in.fifo
"$ELSPETH" mcp -d trail.db < in.fifo > /dev/null 2> term.err &
pid=$!
exec 7> in.fifo
for _ in $(seq 100); do grep -q serving term.err 2> /dev/null && break; sleep 0.05; done
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2> /dev/null; then
  fail "SIGTERM did not end the server"; kill -KILL "$pid"
else
  wait "$pid"; trc=$?
  [ "$trc" = 0 ] && pass "SIGTERM ends the server (exit 0)" || fail "SIGTERM: exit $trc"
fi
exec 7>&-

# ---- our own trails: an LMDB Landscape (exported to a private temporary
# file, gone once open) and the SQLite file a sqlite:/// landscape.url keeps
cp -r "$SRC/examples" examples
"$ELSPETH" run -s examples/fork_coalesce/settings.yaml --execute > run.log 2>&1 ||
  { fail "fork_coalesce did not run"; cat run.log; }
mkdir -p tmp
TMPDIR="$WORK/tmp" node "$CLIENT/client.mjs" "$ELSPETH" "$WORK/state/audit.lmdb" lmdb > lmdb.out 2>&1
rc=$?
cat lmdb.out
PASSES=$((PASSES + $(grep -c '^ok - ' lmdb.out)))
FAILS=$((FAILS + $(grep -c '^FAIL - ' lmdb.out)))
[ "$rc" = 0 ] && pass "the SDK client on an LMDB Landscape" || fail "the SDK client on LMDB exited $rc"
[ -z "$(ls -A tmp)" ] && pass "the temporary export left nothing in TMPDIR" ||
  fail "left in TMPDIR: $(ls -A tmp)"
expect "mcp -s serves the settings' LMDB trail" 0 "serving ./state/audit.lmdb (1 runs)" -- \
  "$ELSPETH" mcp -s examples/fork_coalesce/settings.yaml < /dev/null
{ cat examples/quickstart/settings.yaml; printf '\nlandscape:\n  url: sqlite:///sql/audit.db\n'; } > sql.yaml
"$ELSPETH" run -s sql.yaml --execute > run2.log 2>&1 || { fail "quickstart with sqlite:/// did not run"; cat run2.log; }
expect "mcp -s serves the SQLite file of a sqlite:/// landscape.url" 0 "serving sql/audit.db (1 runs)" -- \
  "$ELSPETH" mcp -s sql.yaml < /dev/null
mkdir -p empty.lmdb
expect "mcp names an LMDB directory that holds no trail" 1 "empty.lmdb" -- "$ELSPETH" mcp -d empty.lmdb

# ---- the composer's tools with --root: the catalog, validation, runs in
# the background under the root (on a trail not there yet)
mkdir -p croot ctmp
printf 'id,text\n1,a\n2,b\n3,c\n' > croot/input.csv
/usr/bin/python3 -c 'import sys; print("id,text"); [print("%d,t%d" % (i, i)) for i in range(1, 3001)]' > croot/many.csv
TMPDIR="$WORK/ctmp" node "$CLIENT/client.mjs" "$ELSPETH" "$WORK/croot/state/audit.lmdb" compose \
  "$WORK/croot" > compose.out 2>&1
rc=$?
cat compose.out
PASSES=$((PASSES + $(grep -c '^ok - ' compose.out)))
FAILS=$((FAILS + $(grep -c '^FAIL - ' compose.out)))
[ "$rc" = 0 ] && pass "the SDK client composes and runs pipelines under --root" ||
  fail "the SDK client (compose) exited $rc"
[ -z "$(ls -A ctmp)" ] && pass "the runs' private output is gone once the server ends" ||
  fail "left in TMPDIR: $(ls -A ctmp)"
slow=$(cd croot && grep -l many.csv mcp-*.yaml)
[ -f croot/slow-state/data.mdb ] && (cd croot && "$ELSPETH" resume latest -s "$slow" --execute) \
  > resume.log 2>&1 </dev/null && [ "$(wc -l < croot/out/many.csv)" = 3001 ] &&
  pass "the cancelled run resumes from the CLI to all 3000 rows" || { fail "resume after cancel"; tail -5 resume.log; }
expect "mcp --root on a directory that is not there" 1 "--root" -- "$ELSPETH" mcp -d trail.db --root nowhere

finish

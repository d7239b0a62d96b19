#!/usr/bin/env bash
# The readers on a PostgreSQL trail (ADR 0043), `elspeth mcp -d
# postgresql://…` and `elspeth runs -d postgresql://…`, against a private
# PostgreSQL server: a run of the SQL trail tests' pipeline writes its
# trail into the database live; then
#   a. the server's copy of the database (sqlt_import_pg, also `export
#      -d URL --sqlite NEWFILE`) holds every
#      table's rows as the database does (compared in Python, with its own
#      conversions: times as stored text in UTC, booleans as 0/1);
#   b. the tools answer from it: list_runs names the run, get_run_summary
#      counts its rows, explain_token tells a row's lineage;
#   c. `query` runs on the database itself: PostgreSQL's SQL (a `::` cast
#      beside a named parameter, E'' strings, nested comments), its answer
#      as JSON numbers (NaN as text); it only reads (a DELETE, two
#      statements, a COPY: refused, nothing changed; a SET and a session
#      advisory lock end with their call), stops at its time limit
#      (pg_sleep(7) past its 5 s), caps its rows and a row's bytes;
#   d. -s SETTINGS with the url reads the same database; a wrong database
#      name exits 1, naming the url without its password;
#   e. runs -d URL lists the run by its id there (its Landscape's number,
#      status, rows), --json and -r latest agree, an unknown run exits 1;
#      a second Landscape's run into the same database is listed first;
#      a database without our elspeth_ tables (ELSPETH's own) is listed;
#   f. the commands that read a Landscape (explain, verify, report,
#      resume, purge) given a postgresql:// url say so, exit 1, and never
#      print its password.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"
PY=/usr/bin/python3
$PY -c 'import psycopg2' 2> /dev/null || { echo "# skipped: python3-psycopg2 is missing"; exit 77; }
pg_start
cd "$WORK"
show() { sed 's/^/    /' "$@" | head -20; }
R=200
awk -v n=$R 'BEGIN { print "id,region,amount,text"; for (i = 1; i <= n; i++)
  printf "%d,r%d,%d,row %d\n", i, i % 3, i * 7 % 100, i }' > rows.csv
pg_sql -c "CREATE DATABASE trail" > /dev/null
URL="postgresql://elspeth@/trail?host=$PG_DIR&port=$PG_PORT"
mkdir -p out && trail_pipe "$URL" "$WORK/out" 0 1 > p.yaml
"$ELSPETH" run -s p.yaml --execute > run.log 2>&1 || { fail "the run into PostgreSQL"; show run.log; }

# mcp.py URL_OR_PATH [OPTIONS...] < calls.json: one line per call's answer
cat > mcp.py <<'PY'
import json, subprocess, sys
args = [sys.argv[1], "mcp", "-d"] + sys.argv[2:]
calls = json.load(sys.stdin)
p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def ask(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                      "clientInfo": {"name": "t", "version": "1"}})
for i, (name, a) in enumerate(calls, 1):
    r = ask(i, "tools/call", {"name": name, "arguments": a})["result"]
    text = r["content"][0]["text"]
    print(json.dumps({"error": text} if r["isError"] else
                     {"value": json.loads(text), "notes": [c["text"] for c in r["content"][1:]]}))
p.stdin.close(); p.wait()
PY

# ------------------------------------------------ a. the copy, table by table
# `elspeth export -d URL --sqlite NEW` makes the copy the server serves
# (sqlt_import_pg), kept.
# Also a database with the payloads (elspeth_payloads' BYTEA), written by
# export --payloads.
pg_sql -c "CREATE DATABASE withpay" > /dev/null
PAY="postgresql://elspeth@/withpay?host=$PG_DIR&port=$PG_PORT"
"$ELSPETH" export -d state/audit.lmdb --payloads --sqlite "$PAY" > pay.log 2>&1 || { fail "a: export --payloads"; show pay.log; }
cat > same_copy.py <<'PY'
import datetime, psycopg2, sqlite3, sys
url, path = sys.argv[1:]
cur = psycopg2.connect(url).cursor(); cur.execute("SET TimeZone = 'UTC'")
db = sqlite3.connect(path)
def norm(v):
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, memoryview):
        return bytes(v)
    return v
cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
tables = sorted(r[0] for r in cur.fetchall())
lite = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
assert tables == lite, (tables, lite)
n = 0
for t in tables:
    cols = [r[1] for r in db.execute('PRAGMA table_info("%s")' % t)]
    cur.execute("SELECT %s FROM \"%s\"" % (", ".join('"%s"' % c for c in cols), t))
    a = sorted((tuple(norm(v) for v in r) for r in cur.fetchall()), key=repr)
    b = sorted((tuple(r) for r in db.execute('SELECT * FROM "%s"' % t)), key=repr)
    assert len(a) == len(b), (t, len(a), len(b))
    for x, y in zip(a, b):
        diff = [(c, u, v) for c, u, v in zip(cols, x, y) if u != v or type(u) != type(v)]
        assert not diff, (t, x[0], diff)
    n += len(a)
print("%d tables, %d rows alike" % (len(tables), n))
PY
for db in "$URL" "$PAY"; do
  rm -f copy.db
  "$ELSPETH" export -d "$db" --sqlite copy.db > copy.log 2>&1 \
    && $PY same_copy.py "$db" copy.db > a.out 2>&1 \
    && pass "a: the copy holds every table of the database, row for row: $(tail -1 a.out)" \
    || { fail "a: the copy differs"; show copy.log a.out; }
done
[ "$(sqlite3 copy.db "SELECT count(*) FROM elspeth_payloads WHERE typeof(data) = 'blob'")" -gt 0 ] \
  && pass "a: payloads arrive as blobs" || fail "a: no payload blobs in the copy"
"$ELSPETH" export -d "$URL" --sqlite copy.db > again.log 2>&1; rc=$?
[ $rc = 1 ] && grep -q "exists" again.log && pass "a: a copy does not overwrite a file (exit 1)" \
  || { fail "a: copy over a file: exit $rc"; show again.log; }

# ---------------------------------------------------------- b. the tools
RID=$(pg_sql -d trail -c "SELECT run_id FROM runs")
TOK=$(pg_sql -d trail -c "SELECT o.token_id FROM token_outcomes o JOIN tokens t USING (token_id)
  WHERE t.row_id = 'row-$RID-7' AND o.outcome = 'completed'")
cat > b.json <<JSON
[["list_runs", {}], ["get_run_summary", {"run_id": "$RID"}],
 ["explain_token", {"run_id": "$RID", "token_id": "$TOK"}]]
JSON
$PY mcp.py "$ELSPETH" "$URL" < b.json > b.out 2> b.err
$PY - "$RID" "$R" b.out <<'PY' > b.check 2>&1 && pass "b: list_runs, get_run_summary and explain_token answer from the database's trail: $(cat b.check)" || { fail "b: the tools"; show b.check b.err; }
import json, sys
rid, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs, summary, explain = [json.loads(l) for l in open(path)]
assert [r["run_id"] for r in runs["value"]] == [rid], runs
assert summary["value"]["counts"]["rows"] == n, summary
e = explain["value"]
assert e["token"]["row_id"] == "row-%s-7" % rid and e["node_states"] and e["outcome"], e
print("run %s, %d rows, row 7: %d states, outcome %s" % (rid, n, len(e["node_states"]),
      e["outcome"]["outcome"]))
PY

# ------------------------------------------------------- c. query, on PostgreSQL
cat > c.json <<'JSON'
[["query", {"sql": "SELECT row_index::text AS t, row_index + :k AS n, 1.5::float8 AS f FROM rows WHERE row_index = :i", "params": {"i": 4, "k": 10}}],
 ["query", {"sql": "SELECT ':i' AS lit, $$:k$$ AS dollar, E'it\\'s :x' AS e /* :x /* :y */ */ -- :z\n"}],
 ["query", {"sql": "DELETE FROM rows"}],
 ["query", {"sql": "SET default_transaction_read_only = off"}],
 ["query", {"sql": "SELECT current_setting('default_transaction_read_only') AS v"}],
 ["query", {"sql": "SELECT 1; DELETE FROM rows"}],
 ["query", {"sql": "SELECT pg_sleep(7)"}],
 ["query", {"sql": "SELECT generate_series(1, 5000) AS g"}],
 ["query", {"sql": "SELECT * FROM rows WHERE row_index = :nope"}],
 ["query", {"sql": "SELECT count(*) AS n FROM rows"}],
 ["query", {"sql": "COPY rows TO STDOUT"}],
 ["query", {"sql": "SELECT pg_advisory_lock(4751128)"}],
 ["query", {"sql": "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'"}],
 ["query", {"sql": "SELECT 'NaN'::float8 AS a, '-Infinity'::numeric AS b, :x::numeric = 0.1 AS eq", "params": {"x": 0.1}}],
 ["query", {"sql": "SELECT repeat('x', 10000000) AS big"}]]
JSON
$PY mcp.py "$ELSPETH" "$URL" < c.json > c.out 2> c.err
$PY - "$R" c.out <<'PY' > c.check 2>&1 && pass "c: query on the database: PostgreSQL's SQL with named parameters, read-only, its time limit and row cap: $(cat c.check)" || { fail "c: query"; show c.check c.out c.err; }
import json, sys
n, path = int(sys.argv[1]), sys.argv[2]
a = [json.loads(l) for l in open(path)]
assert a[0]["value"] == [{"t": "4", "n": 14, "f": 1.5}], a[0]
assert a[1]["value"] == [{"lit": ":i", "dollar": ":k", "e": "it's :x"}], a[1]
assert "only reads" in a[2]["error"], a[2]
assert "value" in a[3], a[3]
assert a[4]["value"] == [{"v": "on"}], a[4]            # the SET did not outlive its call
assert "error" in a[5] and "multiple commands" in a[5]["error"], a[5]
assert "time limit" in a[6]["error"], a[6]
assert len(a[7]["value"]) == 1000 and a[7]["notes"] and "1000 rows" in a[7]["notes"][0], a[7]
assert "nope" in a[8]["error"], a[8]
assert a[9]["value"] == [{"n": n}], a[9]
assert "COPY" in a[10]["error"], a[10]                # refused, and the next call works
assert "value" in a[11], a[11]
assert a[12]["value"] == [{"n": 0}], a[12]             # the session's lock did not outlive its call
assert a[13]["value"] == [{"a": "NaN", "b": "-Infinity", "eq": True}], a[13]
assert "first row alone" in a[14]["error"], a[14]
print("refused: DELETE, two statements, COPY; SET and an advisory lock end with their call; "
      "pg_sleep stopped; 1000 of 5000 rows; NaN as text; %d rows still" % n)
PY

# ------------------------------------------------- d. settings, and a bad url
"$ELSPETH" mcp -s p.yaml < /dev/null > d.out 2> d.err \
  && grep -q "copied the trail in postgresql://elspeth@/trail" d.err \
  && pass "d: -s SETTINGS serves the settings' PostgreSQL url" || { fail "d: -s"; show d.err; }
BAD="postgresql://elspeth:sekrit@/nosuchdb?host=$PG_DIR&port=$PG_PORT"
"$ELSPETH" mcp -d "$BAD" < /dev/null > d2.out 2> d2.err; rc=$?
[ $rc = 1 ] && grep -q "nosuchdb" d2.err && ! grep -q sekrit d2.err d2.out \
  && pass "d: a missing database exits 1, naming the url without its password" \
  || { fail "d: bad url exit $rc"; show d2.err; }
# --------------------------------------------------------------- e. runs
"$ELSPETH" runs -d "$URL" > e.txt 2>&1 && "$ELSPETH" runs -d "$URL" --json > e.json 2>&1 \
  && "$ELSPETH" runs -d "$URL" -r latest --json > e1.json 2>&1 \
  && $PY - "$RID" "$R" e.txt e.json e1.json <<'PY' > e.check 2>&1 \
  && pass "e: runs -d URL lists the database's run: $(cat e.check)" || { fail "e: runs"; show e.txt e.check; }
import json, sys
rid, n, txt, js, one = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
lines = open(txt).read().split("\n")
assert lines[0].split()[:3] == ["run", "local", "started"], lines[0]
f = lines[1].split()
assert f[0] == rid and f[1] == "1" and "completed" in f and str(n) in f, f
runs = json.load(open(js))
assert [r["run_id"] for r in runs] == [rid] and runs[0]["rows"] == n, runs
assert runs[0]["landscape_run_id"] == 1 and runs[0]["status"] == "completed", runs
assert "metrics" in runs[0] and "written_at" in runs[0], runs[0]
assert json.load(open(one))["run_id"] == rid
print("%s (local 1), completed, %d rows" % (rid, n))
PY
"$ELSPETH" runs -d "$URL" -r nosuch > e2.out 2>&1; rc=$?
[ $rc = 1 ] && grep -q "nosuch" e2.out && pass "e: an unknown run exits 1" || { fail "e: unknown run exit $rc"; show e2.out; }
mkdir -p second && (cd second && trail_pipe "$URL" "$WORK/second" 0 1 > p.yaml && "$ELSPETH" run -s p.yaml --execute > run.log 2>&1)
ids=$("$ELSPETH" runs -d "$URL" --json | $PY -c 'import json, sys; print(" ".join(r["run_id"] for r in json.load(sys.stdin)))')
set -- $ids
[ $# = 2 ] && [ "$2" = "$RID" ] && pass "e: a second Landscape's run is listed first, beside the first" \
  || fail "e: runs after a second Landscape's run: $ids"
# A database only ELSPETH wrote has no elspeth_ tables: its runs are
# listed with their rows counted.
pg_sql -c "CREATE DATABASE bare" > /dev/null
BARE="postgresql://elspeth@/bare?host=$PG_DIR&port=$PG_PORT"
"$ELSPETH" export -d state/audit.lmdb --sqlite "$BARE" > bare.log 2>&1
pg_sql -d bare -At -c "SELECT 'DROP TABLE ' || string_agg(quote_ident(table_name), ', ') FROM information_schema.tables WHERE table_name LIKE 'elspeth%'" > drop.sql
pg_sql -d bare -f drop.sql > /dev/null
"$ELSPETH" runs -d "$BARE" --json > bare.json 2>&1 \
  && $PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert len(r) == 1 and r[0]["rows"] == int(sys.argv[2]) and "landscape_run_id" not in r[0], r' bare.json "$R" \
  && pass "e: a database without our tables: its run, rows counted" || { fail "e: runs on ELSPETH's tables alone"; show bare.json; }

# ------------------------------------------- f. not a Landscape, no password
SECRET="postgresql://elspeth:sekrit@/trail?host=$PG_DIR&port=$PG_PORT"
bad=""
for c in "explain --row 1" "verify" "report -o r.html" "resume latest -s p.yaml" "purge --retention-days 1"; do
  set -- $c
  "$ELSPETH" "$@" -d "$SECRET" > f.out 2>&1; rc=$?
  { [ $rc = 1 ] && grep -q "is a PostgreSQL database, not a Landscape" f.out && ! grep -q sekrit f.out; } \
    || { bad="$bad $1(exit $rc)"; show f.out; }
done
[ -z "$bad" ] && pass "f: explain, verify, report, resume, purge on a url: exit 1, a clear message, no password" \
  || fail "f:$bad"
finish

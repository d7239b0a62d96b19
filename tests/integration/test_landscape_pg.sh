#!/usr/bin/env bash
# landscape.url: postgresql://… (ADR 0039) against a real PostgreSQL
# server started by the test in a temporary directory (pg_lib.sh).
#   a. ELSPETH's PostgreSQL schema: every column (type, length, NOT
#      NULL), key and index of its 20 tables as its metadata.create_all
#      makes them (tests/fixtures/elspeth-0.4.1-schema-postgresql.sql),
#      but for the one widened column and our elspeth_ix_ indexes on
#      the foreign keys' referencing columns;
#   b. a run with url ${DATABASE_URL} (ELSPETH's deployment guide's
#      spelling, a password in it): every table holds what the SQLite
#      export of the same Landscape holds, row for row; the password is
#      in no output, no table, no message;
#   c. a second run: its own id; a re-export replaces, never duplicates;
#   d. SIGKILL mid-run, resume: the database shows one completed run;
#   d2. a run in ELSPETH 0.7.1's format adds 0.7.1's columns of rows
#      and its run_sources (ADR 0049);
#   e. wrong password, unknown host, missing database, a read-only user,
#      a table of another shape, an unknown sslmode: exit 1
#      before any row, the url named without its password, no sink
#      written; a user who may only write rows, its password from
#      PGPASSWORD, writes the run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"
pg_start
cd "$WORK"
PY=/usr/bin/python3
R=300
db_q() { "$PG_BIN/psql" -X -q -At -h "$PG_DIR" -p "$PG_PORT" -U elspeth -d "$1" -c "$2"; }
url() { echo "postgresql://${2:-elspeth}@/$1?host=$PG_DIR&port=$PG_PORT"; }
show() { sed 's/^/    /' "$@" | head -20; }
$PY -c 'import psycopg2' 2> /dev/null || { echo "# skipped: python3-psycopg2 is missing"; exit 77; }

# ------------------------------------------------------------- a. schema
pg_sql -c "CREATE DATABASE ref" -c "CREATE DATABASE live"
db_q ref "$(grep -v '^--' "$SRC/tests/fixtures/elspeth-0.4.1-schema-postgresql.sql")" > /dev/null
awk -v n=$R 'BEGIN { print "id,region,amount,text"; for (i = 1; i <= n; i++)
  printf "%d,r%d,%d,row %d says \"hello\\tworld\"\n", i, i % 3, i * 7 % 100, i }' > rows.csv

pipe() { trail_pipe "$1" "$2" "${3:-1}" "${3:-2}"; } # pipe URL OUTDIR [DELAY_MS]
mkdir -p a
pipe '${DATABASE_URL:-sqlite:////app/state/landscape.db}' "$WORK/a" > a.yaml
SECRET='pa:ss@w0rd'
(cd a && DATABASE_URL="postgresql://elspeth:$SECRET@/live?host=$PG_DIR&port=$PG_PORT&application_name=elspeth-test" \
  "$ELSPETH" run -s ../a.yaml -x --max-rows-in-flight 16 > run.log 2>&1); rc=$?
[ $rc = 0 ] && pass "a run with landscape.url \${DATABASE_URL} = postgresql://… (exit 0)" || { fail "run: exit $rc"; show a/run.log; }
$PY - "$(url ref)" "$(url live)" > schema.log 2>&1 <<'PY' && pass "ELSPETH's 20 tables as its create_all makes them on PostgreSQL: columns, types, NOT NULL, keys, indexes (schema_contract_hash widened to 64)" || { fail "schema differs"; show schema.log; }
import sys, psycopg2
T = ("runs nodes edges rows tokens token_parents token_outcomes node_states operations calls "
     "routing_events batches batch_members batch_outputs artifacts validation_errors "
     "transform_errors checkpoints secret_resolutions preflight_results").split()
def shape(url):
    c = psycopg2.connect(url).cursor()
    c.execute("""SELECT table_name, column_name, data_type, character_maximum_length, is_nullable
                 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ANY(%s)
                 ORDER BY table_name, ordinal_position""", (T,))
    cols = c.fetchall()
    c.execute("""SELECT tc.table_name, tc.constraint_type, string_agg(k.column_name, ',' ORDER BY k.ordinal_position)
                 FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage k
                 ON k.constraint_name = tc.constraint_name AND k.table_name = tc.table_name
                 WHERE tc.table_schema = 'public' AND tc.table_name = ANY(%s)
                 GROUP BY tc.table_name, tc.constraint_name, tc.constraint_type ORDER BY 1, 2, 3""", (T,))
    keys = c.fetchall()
    c.execute("""SELECT t.table_name, c.check_clause FROM information_schema.check_constraints c
                 JOIN information_schema.table_constraints t ON t.constraint_name = c.constraint_name
                 WHERE t.table_name = ANY(%s) AND c.check_clause NOT LIKE '%%IS NOT NULL' ORDER BY 1, 2""", (T,))
    checks = c.fetchall()
    c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = ANY(%s) "
              "AND indexname NOT LIKE 'elspeth\\_%%' ORDER BY 1", (T,))
    idx = c.fetchall()
    return cols, keys, checks, idx
ref, ours = shape(sys.argv[1]), shape(sys.argv[2])
want = [tuple(64 if i == 3 and r[:2] == ("runs", "schema_contract_hash") else v for i, v in enumerate(r)) for r in ref[0]]
assert len(ref[0]) >= 199, len(ref[0])
assert want == ours[0], [(a, b) for a, b in zip(want, ours[0]) if a != b] or (len(want), len(ours[0]))
for i, name in ((1, "keys"), (2, "checks"), (3, "indexes")):
    assert ref[i] == ours[i], (name, sorted(set(ref[i]) ^ set(ours[i]))[:6])
print("columns", len(ours[0]), "keys", len(ours[1]), "checks", len(ours[2]), "indexes", len(ours[3]))
PY
show schema.log | tail -1
[ "$(db_q live "SELECT count(*) FROM pg_indexes WHERE indexname LIKE 'elspeth\_ix\_%'")" = 6 ] \
  && pass "our six indexes on ELSPETH's foreign keys' referencing columns (replacing a run stays linear)" \
  || fail "elspeth_ix_ indexes: $(db_q live "SELECT indexname FROM pg_indexes WHERE indexname LIKE 'elspeth%'")"

# ----------------------------------------------- b. the same as SQLite
"$ELSPETH" export -d a/state/audit.lmdb --run 1 --sqlite a/same.db > /dev/null 2>&1
$PY - "$(url live)" a/same.db > same.log 2>&1 <<'PY' && pass "every table holds what the SQLite export of the same Landscape holds, row for row ($(tail -1 same.log))" || { fail "PostgreSQL differs from SQLite"; show same.log; }
import sqlite3, sys, psycopg2, datetime
pg = psycopg2.connect(sys.argv[1]).cursor()
lite = sqlite3.connect(sys.argv[2])
pg.execute("SELECT run_id FROM elspeth_runs WHERE landscape_run_id = 1")
rid = pg.fetchone()[0]
assert len(rid) == 10 and rid != "1", rid
def norm(v, ids):
    if isinstance(v, datetime.datetime):
        assert v.utcoffset() == datetime.timedelta(0), v
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, (bytes, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return "1" if v == rid else v.replace("-" + rid + "-", "-1-").replace("-" + rid, "-1")
    return v
total = 0
tables = [r[0] for r in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
for t in tables:
    cols = [r[1] for r in lite.execute("PRAGMA table_info(%s)" % t)]
    if t == "elspeth_runs":
        cols.remove("exported_at")
    q = ", ".join('"%s"' % c for c in cols)
    a = sorted((tuple(norm(v, 0) for v in r) for r in lite.execute("SELECT %s FROM %s" % (q, t))), key=repr)
    pg.execute("SELECT %s FROM %s" % (q, t))
    b = sorted((tuple(norm(v, 1) for v in r) for r in pg.fetchall()), key=repr)
    if len(b) != len(a):
        sys.exit("%s: %d rows in SQLite, %d in PostgreSQL" % (t, len(a), len(b)))
    for x, y in zip(a, b):
        if x != y:
            sys.exit("%s differs:\n  sqlite %r\n  pg     %r" % (t, x, y))
    total += len(a)
print("%d tables, %d rows" % (len(tables), total))
PY
! grep -rqF "$SECRET" a/run.log a/out.jsonl && ! pg_sql -d live -c "SELECT * FROM runs" | grep -qF "$SECRET" \
  && pass "the password is in no output and not in runs.settings_json" || fail "the password leaked"
grep -q "application_name=elspeth-test" a/run.log && ! grep -q "s3cr\|pa:ss" a/run.log \
  && pass "the summary names the url without its password" || { fail "summary"; show a/run.log; }

# ------------------------------------------- c. a second run, re-export
(cd a && DATABASE_URL="$(url live)" "$ELSPETH" run -s ../a.yaml -x > run2.log 2>&1)
[ "$(db_q live "SELECT count(DISTINCT run_id) || '|' || count(*) FROM runs")" = "2|2" ] \
  && pass "a second run gets an id of its own" || fail "runs: $(db_q live 'SELECT run_id FROM runs')"
"$ELSPETH" export -d a/state/audit.lmdb --run 1 --sqlite "$(url live)" > /dev/null 2>&1
[ "$(db_q live "SELECT count(*) FROM rows")" = $((2 * R)) ] && [ "$(db_q live "SELECT count(*) FROM runs")" = 2 ] \
  && pass "exporting run 1 again replaces it (still $((2 * R)) rows, 2 runs)" || fail "re-export: $(db_q live 'SELECT count(*) FROM rows')"

# ------------------------------------------------ d. SIGKILL and resume
pg_sql -c "CREATE DATABASE kill"
mkdir -p k
pipe "$(url kill)" "$WORK/k" 20 > k.yaml
(cd k && exec "$ELSPETH" run -s ../k.yaml -x --max-rows-in-flight 4 > run.log 2>&1) & pid=$!
for _ in $(seq 3000); do [ -f k/out.jsonl ] && [ "$(wc -l < k/out.jsonl)" -ge 40 ] && break; sleep 0.01; done
kill -0 $pid 2>/dev/null && pass "killed mid-run ($(wc -l < k/out.jsonl) lines written)" || fail "the run ended before the SIGKILL"
kill -9 $pid; wait $pid 2>/dev/null
(cd k && "$ELSPETH" resume latest -s ../k.yaml -x > resume.log 2>&1); rc=$?
[ $rc = 0 ] && [ "$(db_q kill "SELECT count(*) || '|' || max(status) FROM runs")" = "1|completed" ] &&
  [ "$(db_q kill "SELECT count(*) FROM rows")" = $R ] && [ "$(db_q kill "SELECT count(*) FROM elspeth_resumes")" = 1 ] \
  && pass "resumed: the database shows one completed run, $R rows, its resume" \
  || { fail "resume: exit $rc, $(db_q kill 'SELECT run_id, status FROM runs')"; show k/resume.log; }

# ---------------------------------------- d2. ELSPETH 0.7.1's additions
# A run in 0.7.1's format (two sources) adds 0.7.1's columns of rows and
# its run_sources table, with 0.7.1's types on PostgreSQL (ADR 0049); a
# 0.4.1-format run into the same database still goes in (NULL there);
# a re-export replaces the run's run_sources too.
pg_sql -c "CREATE DATABASE v07"
mkdir -p v
head -41 rows.csv > v/one.csv; { head -1 rows.csv; sed -n 42,71p rows.csv; } > v/two.csv
cat > v/p.yaml <<YAML
sources:
  one: {plugin: csv, on_success: merged, options: {path: one.csv, schema: {mode: observed}, on_validation_failure: discard}}
  two: {plugin: csv, on_success: merged, options: {path: two.csv, schema: {mode: observed}, on_validation_failure: discard}}
queues:
  merged: {description: both}
transforms:
- {name: pass, plugin: passthrough, input: merged, on_success: out, on_error: discard, options: {schema: {mode: observed}}}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: out.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "$(url v07)"}
YAML
(cd v && "$ELSPETH" run -s p.yaml -x > run.log 2>&1); rc=$?
[ $rc = 0 ] && [ "$(db_q v07 "SELECT string_agg(source_name || '/' || plugin_name || '/' || lifecycle_state, ' '
  ORDER BY source_name) FROM run_sources")" = "one/csv/exhausted two/csv/exhausted" ] &&
  pass "0.7.1 format on PostgreSQL: run_sources names both sources, exhausted" || { fail "v07 run: exit $rc"; show v/run.log; }
[ "$(db_q v07 "SELECT string_agg(s.source_name || ':' || n || ':' || lo || '-' || hi, ' ' ORDER BY first) FROM
  (SELECT source_node_id, count(*) n, min(source_row_index) lo, max(source_row_index) hi, min(ingest_sequence) first
   FROM rows GROUP BY source_node_id) r JOIN run_sources s USING (source_node_id)")" = "one:40:0-39 two:30:0-29" ] &&
  [ "$(db_q v07 "SELECT count(*) FROM rows WHERE ingest_sequence = row_index")" = 70 ] &&
  pass "0.7.1 format on PostgreSQL: rows.source_row_index per source, ingest_sequence over both" ||
  fail "v07 rows: $(db_q v07 'SELECT source_node_id, source_row_index, ingest_sequence FROM rows LIMIT 3')"
got=$(db_q v07 "SELECT string_agg(table_name || '.' || column_name || ':' || data_type || ':' ||
  coalesce(character_maximum_length::text, '') || ':' || is_nullable, ' ' ORDER BY table_name, ordinal_position)
  FROM information_schema.columns WHERE table_schema = 'public' AND (table_name = 'run_sources'
  OR (table_name = 'rows' AND column_name IN ('source_row_index', 'ingest_sequence')))")
want="rows.source_row_index:integer::YES rows.ingest_sequence:integer::YES run_sources.run_id:character varying:64:NO
run_sources.source_node_id:character varying:64:NO run_sources.source_name:character varying:64:NO
run_sources.plugin_name:character varying:128:NO run_sources.lifecycle_state:character varying:32:NO
run_sources.config_hash:character varying:64:NO run_sources.schema_json:text::YES
run_sources.schema_contract_json:text::YES run_sources.schema_contract_hash:character varying:32:YES
run_sources.field_resolution_json:text::YES run_sources.recorded_at:timestamp with time zone::NO"
[ "$got" = "$(echo $want)" ] && pass "0.7.1's columns with its PostgreSQL types (the rows columns added, so nullable)" ||
  fail "v07 columns: $got"
[ "$(db_q v07 "SELECT string_agg(constraint_type, ',' ORDER BY constraint_type) FROM information_schema.table_constraints
  WHERE table_name = 'run_sources' AND constraint_type <> 'CHECK'")" = "FOREIGN KEY,FOREIGN KEY,PRIMARY KEY,UNIQUE" ] &&
  pass "run_sources: 0.7.1's keys" || fail "run_sources keys"
mkdir -p v4; pipe "$(url v07)" "$WORK/v4" > v4.yaml
(cd v4 && "$ELSPETH" run -s ../v4.yaml -x > run.log 2>&1); rc=$?
[ $rc = 0 ] && [ "$(db_q v07 "SELECT count(*) FROM rows WHERE source_row_index IS NULL")" = $R ] &&
  pass "a 0.4.1-format run into the same database: its $R rows, 0.7.1's columns NULL" || { fail "v04 into v07: exit $rc"; show v4/run.log; }
"$ELSPETH" export -d v/state/audit.lmdb --run 1 --sqlite "$(url v07)" > /dev/null 2>&1
[ "$(db_q v07 "SELECT count(*) FROM run_sources")" = 2 ] && [ "$(db_q v07 "SELECT count(*) FROM rows")" = $((70 + R)) ] &&
  pass "exporting the 0.7.1 run again replaces its run_sources and rows" || fail "v07 re-export"

# ------------------------------------------------------------- e. faults
HBA="$PG_DIR/data/pg_hba.conf"
{ echo "local all auditor scram-sha-256"; cat "$HBA"; } > hba && cat hba > "$HBA"
pg_sql -c "CREATE ROLE auditor LOGIN PASSWORD 'right-one'" -c "CREATE DATABASE ro" \
  -c "CREATE ROLE reader LOGIN" -c "CREATE DATABASE odd"
(cd "$PG_DIR" && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" reload > /dev/null)
sleep 0.5
"$ELSPETH" export -d a/state/audit.lmdb --run 1 --sqlite "$(url ro)" > /dev/null 2>&1
db_q ro "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader" > /dev/null
db_q odd "$(grep -v '^--' "$SRC/tests/fixtures/elspeth-0.4.1-schema-postgresql.sql")" > /dev/null
db_q odd "ALTER TABLE calls DROP COLUMN latency_ms" > /dev/null
fault() { # fault NAME URL NEEDLE
  local d=f$((++NF)) out
  mkdir -p $d; pipe "$2" "$WORK/$d" > $d.yaml
  (cd $d && "$ELSPETH" run -s ../$d.yaml -x > run.log 2>&1); rc=$?
  out=$(cat $d/run.log)
  if [ $rc = 1 ] && grep -qF -- "$3" <<<"$out" && ! grep -qF "wrong-one" <<<"$out" && [ ! -e $d/out.jsonl ]; then
    pass "$1: exit 1 before any row, '$3', no password"
  else fail "$1: exit $rc"; show $d/run.log; fi
}
NF=0
fault "wrong password" "postgresql://auditor:wrong-one@/live?host=$PG_DIR&port=$PG_PORT" "password authentication failed"
fault "unknown host" "postgresql://auditor:wrong-one@no-such-host.invalid/live" "cannot connect to postgresql://auditor@no-such-host.invalid/live"
fault "missing database" "postgresql://elspeth:wrong-one@/nosuch?host=$PG_DIR&port=$PG_PORT" "database \"nosuch\" does not exist"
fault "read-only user" "postgresql://reader:wrong-one@/ro?host=$PG_DIR&port=$PG_PORT" "may not insert into, update and delete from table runs"
fault "a table of another shape" "postgresql://elspeth@/odd?host=$PG_DIR&port=$PG_PORT" "table calls has no column latency_ms"
fault "an sslmode libpq does not know" "postgresql://elspeth:wrong-one@/live?host=$PG_DIR&port=$PG_PORT&sslmode=sometimes" "sslmode"
fault "postgres:// (SQLAlchemy refuses it)" "postgres://elspeth:wrong-one@/live?host=$PG_DIR" "write postgresql://"
expect "validate names the file, line and key of a bad url" 1 "landscape" -- "$ELSPETH" validate -s f7.yaml

# A user who may only write rows (the tables are another's), its password
# from PGPASSWORD, as libpq reads it.
db_q live "GRANT SELECT, INSERT, DELETE ON ALL TABLES IN SCHEMA public TO auditor" > /dev/null
mkdir -p w; pipe "postgresql://auditor@/live?host=$PG_DIR&port=$PG_PORT" "$WORK/w" > w.yaml
# ... but one that may not update: the live trail's steps update the
# run's row, so it is refused before any row
(cd w && PGPASSWORD=right-one "$ELSPETH" run -s ../w.yaml -x > noupdate.log 2>&1); rc=$?
[ $rc = 1 ] && grep -q "may not insert into, update and delete from table" w/noupdate.log && [ ! -s w/out.jsonl ] \
  && pass "a user who may not update is refused before any row (exit 1)" \
  || { fail "no UPDATE: exit $rc"; show w/noupdate.log; }
db_q live "GRANT UPDATE ON ALL TABLES IN SCHEMA public TO auditor" > /dev/null
(cd w && PGPASSWORD=right-one "$ELSPETH" run -s ../w.yaml -x > run.log 2>&1); rc=$?
[ $rc = 0 ] && [ "$(db_q live "SELECT count(*) FROM runs")" = 3 ] \
  && pass "PGPASSWORD, and a user allowed only to write rows: the run is written" \
  || { fail "auditor: exit $rc, runs $(db_q live "SELECT count(*) FROM runs")"; show w/run.log; }
# ... whose database lacks 0.7.1's additions, which it may not make: a
# run in 0.7.1's format is refused before any row, saying so
sed "s|url: .*|url: \"postgresql://auditor@/live?host=$PG_DIR\&port=$PG_PORT\"}|" v/p.yaml > w/v07.yaml
cp v/one.csv v/two.csv w/
(cd w && rm -f out.jsonl && PGPASSWORD=right-one "$ELSPETH" run -s v07.yaml -x > v07.log 2>&1); rc=$?
[ $rc = 1 ] && grep -q "needs its columns rows.source_row_index and ingest_sequence and its table run_sources" w/v07.log &&
  [ ! -s w/out.jsonl ] && ! grep -q right-one w/v07.log &&
  pass "0.7.1 format, a user who may not alter rows: refused before any row, saying what is missing" ||
  { fail "v07 by auditor: exit $rc"; show w/v07.log; }
finish

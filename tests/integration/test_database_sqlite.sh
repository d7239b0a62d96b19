#!/usr/bin/env bash
# The database sink on SQLite files (docs/settings.md "database", ADR 0023):
#   a. ELSPETH 0.4.1's own example pipeline (examples/database_sink) runs
#      unmodified: its table, its types; run twice (if_exists: replace);
#   b. typed columns from the schema, mode observed's TEXT columns, an
#      `any` object stored as Python's json.dumps text, the commit ledger;
#   c. if_exists: replace drops the table, append adds to it;
#   d. SIGKILL mid-run, `elspeth resume` (killed again, resumed again):
#      each row exactly once, both tables equal to an uninterrupted run,
#      verify OK; also a run killed as its first rows go in; and rows
#      committed after the last checkpoint (a transaction's early commit)
#      deleted by the resume; SIGINT (exit 3) and resume;
#   e. rows the table refuses (a UNIQUE constraint, a field that is no
#      column) go to on_write_failure, the rest of the transaction stays;
#   f. a resume refused, changing nothing, when the database no longer
#      holds what the checkpoint counts (ledger emptied, table dropped);
#   g. bad options: errors naming file, line and key;
#   h. ELSPETH 0.7.1's effect_ledger: no DDL (an unprovisioned database
#      is refused before any row), one ledger row per commit, and SIGKILL
#      + resume with DELETE forbidden on every table: each row once,
#      equal to the uninterrupted run, nothing deleted; its bad options.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/db_lib.sh"
cd "$WORK"
command -v sqlite3 > /dev/null || { echo "# skipped: the sqlite3 command is missing"; exit 77; }

db_url() { echo "sqlite:///$WORK/db/$1.sqlite"; }
db_q() { sqlite3 -cmd ".timeout 2000" "$WORK/db/$1.sqlite" "$2"; }
show() { sed 's/^/    /' "$@" | head -20; }
verify_ok() { "$ELSPETH" verify --database "$1/state" --run latest > "$1/verify.log" 2>&1 && grep -q "verify: OK" "$1/verify.log"; }
mkdir -p db
db_input $DB_ROWS > in.jsonl

# ------------------------------------------------- a. ELSPETH's example
# examples/database_sink/settings.yaml of ELSPETH 0.4.1, as it is.
mkdir -p a/examples/database_sink/output a/examples/database_sink/runs
cat > a/examples/database_sink/input.csv <<'CSV'
id,customer,amount,category,region
1,Acme Corp,5200,enterprise,north
2,Globex Inc,3100,commercial,south
3,Initech,890,startup,east
4,Umbrella Corp,12000,enterprise,west
5,Stark Industries,4500,enterprise,north
6,Cyberdyne,7800,enterprise,east
7,Tyrell Corp,15000,enterprise,south
8,Wonka Industries,2100,commercial,west
CSV
cat > a/settings.yaml <<'YAML'
source:
  plugin: csv
  on_success: validated
  options:
    path: examples/database_sink/input.csv
    schema:
      mode: fixed
      fields:
      - 'id: int'
      - 'customer: str'
      - 'amount: int'
      - 'category: str'
      - 'region: str'
    on_validation_failure: discard

gates:
- name: value_gate
  input: validated
  condition: row['amount'] >= 5000
  routes:
    'true': high_value_db
    'false': standard

sinks:
  high_value_db:
    plugin: database
    on_write_failure: discard
    options:
      url: sqlite:///examples/database_sink/output/deals.db
      table: high_value_deals
      schema:
        mode: fixed
        fields:
        - 'id: int'
        - 'customer: str'
        - 'amount: int'
        - 'category: str'
        - 'region: str'
      if_exists: replace
  standard:
    plugin: csv
    on_write_failure: discard
    options:
      path: examples/database_sink/output/standard_deals.csv
      schema:
        mode: fixed
        fields:
        - 'id: int'
        - 'customer: str'
        - 'amount: int'
        - 'category: str'
        - 'region: str'

landscape:
  url: sqlite:///examples/database_sink/runs/audit.db
YAML
DEALS=a/examples/database_sink/output/deals.db
want_deals="1|Acme Corp|5200|enterprise|north
4|Umbrella Corp|12000|enterprise|west
6|Cyberdyne|7800|enterprise|east
7|Tyrell Corp|15000|enterprise|south"
for k in 1 2; do
  (cd a && $TO "$ELSPETH" run -s settings.yaml --execute > run$k.log 2>&1); rc=$?
  got=$(sqlite3 "$DEALS" "SELECT * FROM high_value_deals" 2>&1)
  if [ $rc = 0 ] && [ "$got" = "$want_deals" ]; then
    pass "ELSPETH's example, run $k: the 4 high-value deals in the table (if_exists: replace)"
  else
    fail "ELSPETH's example, run $k: exit $rc"; show a/run$k.log; echo "$got" | show
  fi
done
types=$(sqlite3 "$DEALS" "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\", ', ') FROM pragma_table_info('high_value_deals')")
[ "$types" = "id INTEGER 1, customer TEXT 1, amount INTEGER 1, category TEXT 1, region TEXT 1" ] &&
  pass "ELSPETH's example: columns typed from the schema, NOT NULL ($types)" ||
  fail "ELSPETH's example: columns are $types"
[ "$(sqlite3 "$DEALS" "SELECT typeof(id) || typeof(amount) || typeof(customer) FROM high_value_deals LIMIT 1")" = integerintegertext ] &&
  pass "ELSPETH's example: values stored as integers and text" || fail "ELSPETH's example: value types"
if (cd a && "$ELSPETH" verify -s settings.yaml --run latest > verify.log 2>&1) && grep -q "verify: OK" a/verify.log &&
   [ "$(sqlite3 a/examples/database_sink/runs/audit.db "SELECT count(*) FROM artifacts WHERE path_or_uri LIKE '%db://high_value_deals@sqlite:///examples/database_sink/output/deals.db'")" = 8 ]; then
  pass "ELSPETH's example: verify OK; the SQL trail's artifacts name db://high_value_deals@sqlite:///..."
else
  fail "ELSPETH's example: verify or artifacts"; show a/verify.log
fi

# ---------------------------------------------- b. types and the ledger
mkdir -p b
ln -s ../in.jsonl b/in.jsonl
db_pipe "$(db_url b)" > b/p.yaml
(cd b && $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
if [ $rc = 0 ] && db_once b; then pass "types: a run writes each row once to both tables"
else fail "types: exit $rc"; show b/run.log; fi
cols=$(db_q b "SELECT group_concat(name || ' ' || type || ' ' || \"notnull\", ', ') FROM pragma_table_info('results')")
[ "$cols" = "id INTEGER 1, name TEXT 1, score FLOAT 0, ok BOOLEAN 1, meta TEXT 1" ] &&
  pass "types: int INTEGER, str TEXT, float? FLOAT (nullable), bool BOOLEAN, any TEXT" || fail "types: columns $cols"
row=$(db_q b "SELECT id, name, score, ok, meta, typeof(score) FROM results WHERE id = 1")
want='1|row 1 é"q"|1.1|1|{"k": 1, "tags": ["a", "\u00e9"], "x": 1.5}|real'
[ "$row" = "$want" ] && pass "types: an object in an any column is json.dumps text, as ELSPETH stores it" ||
  { fail "types: row 1 is $row"; echo "    want $want"; }
[ "$(db_q b "SELECT score IS NULL FROM results WHERE id = 9")" = 1 ] && pass "types: a null float is NULL" ||
  fail "types: row 9's score"
side=$(db_q b "SELECT group_concat(name || ' ' || type, ', ') FROM pragma_table_info('side')")
[ "$side" = "id TEXT, name TEXT, score TEXT, ok TEXT, meta TEXT" ] &&
  pass "types: mode observed takes the first row's keys as TEXT columns" || fail "types: side columns $side"
ledger=$(db_q b "SELECT count(DISTINCT writer), max(rows_after) FROM elspeth_sink_commits WHERE target = 'results'")
n=$(db_q b "SELECT count(*) FROM elspeth_sink_commits")
if [ "$ledger" = "1|$((DB_ROWS - DB_ROWS / 5))" ] && [ "$n" -le 20 ]; then
  pass "types: the commit ledger holds the run's last commits ($n entries)"
else
  fail "types: ledger $ledger, $n entries"; db_q b "SELECT * FROM elspeth_sink_commits" | show
fi
verify_ok b && pass "types: verify OK" || { fail "types: verify"; show b/verify.log; }

# --------------------------------------------- c. replace and append
(cd b && $TO "$ELSPETH" run -s p.yaml --execute > run2.log 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(db_count b)" = $((DB_ROWS - DB_ROWS / 5)) ] &&
   [ "$(db_count b side)" = $((2 * (DB_ROWS / 5))) ]; then
  pass "if_exists: a second run replaces results and appends to side"
else
  fail "if_exists: exit $rc, results $(db_count b), side $(db_count b side)"; show b/run2.log
fi

# ------------------------------------------------ d. kill and resume
mkdir -p ref
db_pipe "$(db_url ref)" > ref/p.yaml
ln -s ../in.jsonl ref/in.jsonl
(cd ref && $TO "$ELSPETH" run -s p.yaml --execute --sequential > run.log 2>&1) && db_once ref &&
  pass "kill: the uninterrupted reference run" || { fail "kill: reference run"; show ref/run.log; }
db_dump ref > ref.dump
# kill_resume DIR ROWS...: killed at each count of rows in turn (the
# run, then its resumes), then resumed to the end.
kill_resume() {
  local d=$1 k DB_CMD=run; shift
  mkdir -p "$d"; ln -sf ../in.jsonl "$d/in.jsonl"
  [ -z "${DB_PROVISION:-}" ] || "$DB_PROVISION" "$d"
  DB_DELAY="5 25" db_pipe "$(db_url "$d")" > "$d/p.yaml"  # slow: room between kills
  for k in "$@"; do
    db_killed "$d" "$d" "$k" || { fail "kill $d: not killed mid-run at $k rows"; return; }
    DB_CMD="resume latest"
  done
  (cd "$d" && $TO "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); local rc=$?
  if [ $rc = 0 ] && db_once "$d" && db_dump "$d" | cmp -s - ref.dump; then
    pass "kill $d at $*: resumed, each row once, both tables equal to the uninterrupted run"
  else
    fail "kill $d at $*: resume exit $rc"; show "$d/resume.log"
    diff <(db_dump "$d") ref.dump | head -5 | show
  fi
  verify_ok "$d" && pass "kill $d: verify OK" || { fail "kill $d: verify"; show "$d/verify.log"; }
}
kill_resume d1 80
kill_resume d2 40 120 220
kill_resume d3 1
db_big d4
# SIGINT: exit 3 with every released row committed; the resume finishes.
mkdir -p d5; ln -s ../in.jsonl d5/in.jsonl
db_pipe "$(db_url d5)" > d5/p.yaml
(cd d5 && exec "$ELSPETH" run -s p.yaml --execute > bg.log 2>&1) & pid=$!
for i in $(seq 1 3000); do [ "$(db_count d5 2>/dev/null)" -ge 60 ] 2>/dev/null && break; sleep 0.01; done
kill -INT $pid; wait $pid; rc=$?
released=$(grep -o "main=[0-9]*" d5/bg.log | cut -d= -f2)
committed=$(db_count d5)
(cd d5 && $TO "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); rc2=$?
if [ $rc = 3 ] && [ -n "$released" ] && [ "$released" -lt $((DB_ROWS - DB_ROWS / 5)) ] &&
   [ "$committed" = "$released" ] && [ $rc2 = 0 ] &&
   db_once d5 && db_dump d5 | cmp -s - ref.dump; then
  pass "SIGINT: exit 3 with the $released released rows committed; the resume finishes, equal to the uninterrupted run"
else
  fail "SIGINT: exit $rc, released '$released', $committed in the table, resume exit $rc2"; show d5/bg.log d5/resume.log
fi

# ---------------------------------------------------- e. row errors
mkdir -p e
ln -s ../in.jsonl e/in.jsonl
db_q e "CREATE TABLE results (id INTEGER UNIQUE, name TEXT, score FLOAT, ok BOOLEAN, meta TEXT);
        INSERT INTO results (id, name) VALUES (3, 'was here')"
DB_IF_EXISTS=append DB_REFUSED=1 DB_INPUT=in2.jsonl DB_SOURCE_MODE=flexible db_pipe "$(db_url e)" > e/p.yaml
# a field that is no column of results: row 4 gets one
awk '{ if (NR == 4) sub(/"id": 4,/, "\"id\": 4, \"extra\": 1,"); print }' in.jsonl > e/in2.jsonl
(cd e && $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
refused=$(cut -c1-12 e/out/refused.jsonl 2>/dev/null | tr '\n' ' ')
if [ $rc = 0 ] && [ "$(db_count e)" = $((DB_ROWS - DB_ROWS / 5 - 2 + 1)) ] &&
   [ "$(wc -l < e/out/refused.jsonl)" = 2 ] && grep -q '"id": *3' e/out/refused.jsonl && grep -q '"id": *4' e/out/refused.jsonl; then
  pass "row errors: the UNIQUE violation (row 3) and the extra field (row 4) diverted, the rest written"
else
  fail "row errors: exit $rc, $(db_count e) rows, refused: $refused"; show e/run.log
fi
(cd e && "$ELSPETH" explain --database state --run latest --row 3 2>&1 | grep -q "UNIQUE constraint failed") &&
  pass "row errors: the reason is the database's (UNIQUE constraint failed)" || fail "row errors: no reason recorded"
(cd e && "$ELSPETH" explain --database state --run latest --row 4 2>&1 | grep -q "field 'extra': not declared in the schema") &&
  pass "row errors: a field the fixed schema lacks is named" || fail "row errors: extra field message"
verify_ok e && pass "row errors: verify OK" || { fail "row errors: verify"; show e/verify.log; }

# -------------------------------------------------- f. refused resumes
refused_resume() {
  local d=$1 what=$2 sql=$3 needle=$4 before after
  mkdir -p "$d"; ln -sf ../in.jsonl "$d/in.jsonl"
  [ -z "${DB_PROVISION:-}" ] || "$DB_PROVISION" "$d"
  DB_DELAY="5 25" db_pipe "$(db_url "$d")" > "$d/p.yaml"  # slow: room between kills
  db_killed "$d" "$d" 100 || { fail "refused $d: not killed mid-run"; return; }
  db_q "$d" "$sql"
  before=$(sha256sum "db/$d.sqlite"; db_dump "$d" 2>/dev/null | sha256sum)
  (cd "$d" && "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); local rc=$?
  after=$(sha256sum "db/$d.sqlite"; db_dump "$d" 2>/dev/null | sha256sum)
  if [ $rc = 1 ] && grep -q "$needle" "$d/resume.log" && [ "$before" = "$after" ]; then
    pass "refused resume ($what): exit 1, nothing changed: $(grep -o "$needle.*" "$d/resume.log" | cut -c1-90)"
  else
    fail "refused resume ($what): exit $rc"; show "$d/resume.log"
  fi
}
refused_resume f1 "ledger emptied" "DELETE FROM elspeth_sink_commits" "was replaced or restored"
refused_resume f2 "table dropped" "DROP TABLE results" "is gone"

# ----------------------------------------------------- g. bad options
bad() {
  local name=$1 opts=$2 needle=$3
  cat > g.yaml <<YAML
source:
  plugin: json
  on_success: out
  options: {path: in.jsonl, format: jsonl, schema: {mode: observed}, on_validation_failure: discard}
sinks:
  out:
    plugin: database
    options:
$opts
YAML
  expect "bad options: $name" 1 "$needle" -- "$ELSPETH" validate -s g.yaml
}
bad "a misspelt key" "      url: sqlite:///x.db
      tabel: t
      schema: {mode: observed}" "g.yaml:10:7: sinks.out.options.tabel: unknown key 'tabel' (did you mean 'table'?)"
bad "another database" "      url: mysql+pymysql://u:pw@h/db
      table: t
      schema: {mode: observed}" "g.yaml:9:12: sinks.out.options.url: database 'mysql+pymysql' is not supported"
bad "no schema" "      url: sqlite:///x.db
      table: t" "g.yaml:9:7: sinks.out.options: missing required key 'schema'"
bad "an empty table" "      url: sqlite:///x.db
      table: ' '
      schema: {mode: observed}" "g.yaml:10:14: sinks.out.options.table: table name must not be empty"
bad "if_exists" "      url: sqlite:///x.db
      table: t
      if_exists: upsert
      schema: {mode: observed}" "g.yaml:11:18: sinks.out.options.if_exists"
bad "a sqlite url with a host" "      url: sqlite://host/x.db
      table: t
      schema: {mode: observed}" "a sqlite url is sqlite:///relative/file.db"
bad "the url's password never printed" "      url: mysql://ann:hunter2@h/db
      table: t
      schema: {mode: observed}" "not supported"
"$ELSPETH" validate -s g.yaml 2>&1 | grep -q hunter2 && fail "bad options: the password was printed" ||
  pass "bad options: the password is not printed"

# ------------------------------------------------ h. effect_ledger
LEDGER_DDL="CREATE TABLE _elspeth_sink_effects (effect_id VARCHAR(64) NOT NULL,
  schema_version INTEGER NOT NULL, protocol_version VARCHAR(32) NOT NULL,
  plan_hash VARCHAR(64) NOT NULL, payload_hash VARCHAR(64) NOT NULL,
  completed BOOLEAN NOT NULL, descriptor_json TEXT, accepted_ordinals_json TEXT,
  diverted_ordinals_json TEXT, accepted_payload_hash VARCHAR(64),
  diversion_hashes_json TEXT, evidence_json TEXT, PRIMARY KEY (effect_id));"
# provision NAME: the reference run's two tables, empty, the ledger, and
# triggers that refuse any DELETE or UPDATE (the runtime only inserts)
provision() {
  local t
  { sqlite3 "$WORK/db/ref.sqlite" ".schema results" ".schema side"; echo "$LEDGER_DDL"
    for t in results side _elspeth_sink_effects; do
      echo "CREATE TRIGGER no_del_$t BEFORE DELETE ON $t BEGIN SELECT RAISE(ABORT, 'no DELETE on $t'); END;"
      echo "CREATE TRIGGER no_upd_$t BEFORE UPDATE ON $t BEGIN SELECT RAISE(ABORT, 'no UPDATE on $t'); END;"
    done; } | sqlite3 "$WORK/db/$1.sqlite"
}
mkdir -p h0; ln -s ../in.jsonl h0/in.jsonl
DB_EFFECT=1 DB_IF_EXISTS=append db_pipe "$(db_url h0)" > h0/p.yaml
expect "effect_ledger: an unprovisioned database is refused before any row" 1 \
  "effect ledger table '_elspeth_sink_effects' does not exist in sqlite:///$WORK/db/h0.sqlite: the database sink never creates it" \
  -- sh -c "cd h0 && exec '$ELSPETH' run -s p.yaml --execute"
[ "$(db_q h0 "SELECT count(*) FROM sqlite_master")" = 0 ] && pass "effect_ledger: and nothing was created" ||
  fail "effect_ledger: the refused run created $(db_q h0 "SELECT group_concat(name) FROM sqlite_master")"
sqlite3 "$WORK/db/h0.sqlite" "$LEDGER_DDL"
expect "effect_ledger: a missing target table is refused (no DDL)" 1 \
  "table 'results' does not exist in sqlite:///$WORK/db/h0.sqlite: with effect_ledger the database sink never creates tables" \
  -- sh -c "cd h0 && exec '$ELSPETH' run -s p.yaml --execute"
mkdir -p h1; ln -s ../in.jsonl h1/in.jsonl; provision h1
DB_EFFECT=1 DB_IF_EXISTS=append db_pipe "$(db_url h1)" > h1/p.yaml
(cd h1 && $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1) && db_dump h1 | cmp -s - ref.dump &&
  pass "effect_ledger: a provisioned run writes the uninterrupted run's tables" || { fail "effect_ledger: run"; show h1/run.log; }
n=$(db_q h1 "SELECT count(*), count(DISTINCT plan_hash), sum(completed), min(schema_version) FROM _elspeth_sink_effects")
commits=$(db_q h1 "SELECT count(*) FROM _elspeth_sink_effects WHERE json_extract(descriptor_json, '$.rows_after') > json_extract(descriptor_json, '$.rows_before')")
[ "${n%%|*}" -ge 2 ] && [ "$n" = "${n%%|*}|2|${n%%|*}|1" ] && [ "$commits" -ge 2 ] &&
  pass "effect_ledger: one completed ledger row per commit of each sink ($n)" || fail "effect_ledger: ledger rows $n"
DB_EFFECT=1 DB_IF_EXISTS=append DB_PROVISION=provision kill_resume h2 40 120 220
[ "$(db_q h2 "SELECT sum(json_extract(descriptor_json, '$.rows_after') - json_extract(descriptor_json, '$.rows_before')) FROM _elspeth_sink_effects")" = "$DB_ROWS" ] &&
  pass "effect_ledger: the ledger's commits count each row once across the kills" ||
  fail "effect_ledger: the ledger counts $(db_q h2 "SELECT sum(json_extract(descriptor_json, '$.rows_after') - json_extract(descriptor_json, '$.rows_before')) FROM _elspeth_sink_effects") rows"
# Rows committed after the last checkpoint (the transaction's early
# commits, as db_big): the resume keeps them — DELETE is refused — and
# checks the same rows against them instead of writing them again.
mkdir -p h3
{ echo "CREATE TABLE results (id INTEGER, name TEXT);"; echo "$LEDGER_DDL"
  for t in results _elspeth_sink_effects; do
    echo "CREATE TRIGGER no_del_$t BEFORE DELETE ON $t BEGIN SELECT RAISE(ABORT, 'no DELETE on $t'); END;"
  done; } | sqlite3 "$WORK/db/h3.sqlite"
db_big_killed h3 "effect_ledger: {table: _elspeth_sink_effects, permissions: [select, insert]}"
(cd h3 && $TO "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); rc=$?
if [ "${before:-0}" -ge 10000 ] && [ "${before:-0}" -lt 40000 ] && [ $rc = 0 ] &&
   [ "$(db_q h3 "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM results")" = "40000|40000|1|40000" ] &&
   [ "$(db_q h3 "SELECT sum(json_extract(descriptor_json, '$.rows_after') - json_extract(descriptor_json, '$.rows_before')) FROM _elspeth_sink_effects")" = 40000 ]; then
  pass "effect_ledger: killed with $before rows published after the checkpoint; the resume kept them (no DELETE) and wrote the other $((40000 - before)) once"
else
  fail "effect_ledger: early commits: $before rows at the kill, resume exit $rc"; show h3/bg.log h3/resume.log
fi
eff="      url: sqlite:///x.db
      table: t
      schema: {mode: observed}"
bad "effect_ledger: a table outside _elspeth_" "$eff
      effect_ledger: {table: sink_effects, permissions: [select, insert]}" \
  "g.yaml:12:30: sinks.out.options.effect_ledger.table: effect ledger table must be a namespaced identifier beginning with '_elspeth_'"
bad "effect_ledger: permissions" "$eff
      effect_ledger: {table: _elspeth_fx, permissions: [select]}" \
  "effect ledger permissions must declare exactly 'select' and 'insert'"
bad "effect_ledger: schema_version" "$eff
      effect_ledger: {table: _elspeth_fx, schema_version: 2, permissions: [select, insert]}" \
  "effect ledger schema_version must be 1"
bad "effect_ledger: if_exists replace" "$eff
      if_exists: replace
      effect_ledger: {table: _elspeth_fx, permissions: [insert, select]}" \
  "Database sink effect mode 'replace' is not supported"

finish

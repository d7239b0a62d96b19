#!/usr/bin/env bash
# The database sink against a real PostgreSQL server, started by the test
# in a temporary directory (tests/integration/pg_lib.sh: Debian's
# postgresql, initdb as an unprivileged user, a unix socket only) and
# stopped at the end. Exit 77 when the server's binaries are missing.
#   a. typed columns (BIGINT, TEXT, FLOAT, BOOLEAN; NOT NULL), mode
#      observed's TEXT columns, an `any` object as json.dumps text;
#   b. if_exists: replace drops the table, append adds to it;
#   c. SIGKILL mid-run, `elspeth resume` (killed again, resumed again):
#      each row exactly once, both tables equal to an uninterrupted run,
#      verify OK; rows committed after the last checkpoint (early
#      commits) deleted through their transaction id;
#   d. a row the table refuses (UNIQUE) goes to on_write_failure: the
#      aborted transaction is written again without it, nothing lost;
#   e. the url's password reaches neither the Landscape nor messages;
#   f. a resume refused when the ledger was emptied; a server that is
#      not there is an error naming the url (without its password);
#   g. ELSPETH 0.7.1's effect_ledger as its contract has it: a runtime
#      role with SELECT and INSERT only (no DELETE, no DDL) on tables the
#      operator provisioned; SIGKILL + resume: each row once, equal to the
#      uninterrupted run, one ledger row per commit.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/pg_lib.sh"
source "$(dirname "$0")/db_lib.sh"
pg_start
cd "$WORK"

db_url() { echo "postgresql://${DB_USER:-elspeth}@/$1?host=$PG_DIR&port=$PG_PORT"; }
db_q() { "$PG_BIN/psql" -X -q -At -h "$PG_DIR" -p "$PG_PORT" -U elspeth -d "$1" -c "$2"; }
newdb() { pg_sql -c "CREATE DATABASE $1" && mkdir -p "$1" && ln -sf ../in.jsonl "$1/in.jsonl"; }
show() { sed 's/^/    /' "$@" | head -20; }
verify_ok() { "$ELSPETH" verify --database "$1/state" --run latest > "$1/verify.log" 2>&1 && grep -q "verify: OK" "$1/verify.log"; }
db_input $DB_ROWS > in.jsonl
pass "a PostgreSQL server of our own: $(pg_sql -c 'SHOW server_version')"

# ------------------------------------------------------------- a. types
newdb a
db_pipe "$(db_url a)" > a/p.yaml
(cd a && $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
if [ $rc = 0 ] && db_once a; then pass "types: a run writes each row once to both tables"
else fail "types: exit $rc"; show a/run.log; fi
cols=$(db_q a "SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'results'")
[ "$cols" = "id bigint NO, name text NO, score double precision YES, ok boolean NO, meta text NO" ] &&
  pass "types: int BIGINT, str TEXT, float? FLOAT (nullable), bool BOOLEAN, any TEXT" || fail "types: columns $cols"
row=$(db_q a "SELECT id, name, score, ok, meta FROM results WHERE id = 1")
want='1|row 1 é"q"|1.1|t|{"k": 1, "tags": ["a", "\u00e9"], "x": 1.5}'
[ "$row" = "$want" ] && pass "types: an object in an any column is json.dumps text, as ELSPETH stores it" ||
  { fail "types: row 1 is $row"; echo "    want $want"; }
side=$(db_q a "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'side'")
[ "$side" = "id text, name text, score text, ok text, meta text" ] &&
  [ "$(db_q a "SELECT id, ok, score FROM side WHERE id = '5'")" = "5|true|5.5" ] &&
  pass "types: mode observed: TEXT columns, values as PostgreSQL casts them (true, 5.5)" ||
  fail "types: side: $side / $(db_q a "SELECT id, ok, score FROM side WHERE id = '5'")"
refs=$(db_q a "SELECT count(*) FROM elspeth_sink_commits WHERE ref !~ '^[0-9]+\$'")
[ "$refs" = 0 ] && pass "types: the ledger names each commit by its transaction id" || fail "types: ledger refs"
verify_ok a && pass "types: verify OK" || { fail "types: verify"; show a/verify.log; }

# ----------------------------------------------------- b. replace, append
(cd a && $TO "$ELSPETH" run -s p.yaml --execute > run2.log 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(db_count a)" = $((DB_ROWS - DB_ROWS / 5)) ] &&
   [ "$(db_count a side)" = $((2 * (DB_ROWS / 5))) ]; then
  pass "if_exists: a second run replaces results and appends to side"
else
  fail "if_exists: exit $rc, results $(db_count a), side $(db_count a side)"; show a/run2.log
fi

# ------------------------------------------------------ c. kill, resume
newdb ref
db_pipe "$(db_url ref)" > ref/p.yaml
(cd ref && $TO "$ELSPETH" run -s p.yaml --execute --sequential > run.log 2>&1) && db_once ref &&
  pass "kill: the uninterrupted reference run" || { fail "kill: reference run"; show ref/run.log; }
db_dump ref > ref.dump
kill_resume() {
  local d=$1 k DB_CMD=run; shift
  newdb "$d"
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
kill_resume c1 80
kill_resume c2 40 120 220
pg_sql -c "CREATE DATABASE c3" && db_big c3

# ---------------------------------------------------------- d. row errors
newdb d
db_q d "CREATE TABLE results (id BIGINT UNIQUE, name TEXT, score FLOAT, ok BOOLEAN, meta TEXT);
        INSERT INTO results (id, name) VALUES (3, 'was here')"
DB_IF_EXISTS=append DB_REFUSED=1 db_pipe "$(db_url d)" > d/p.yaml
(cd d && $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(db_q d "SELECT count(*), count(DISTINCT id) FROM results")" = "320|320" ] &&
   [ "$(wc -l < d/out/refused.jsonl)" = 1 ] && grep -q '"id": *3' d/out/refused.jsonl &&
   [ "$(db_q d "SELECT name FROM results WHERE id = 3")" = "was here" ]; then
  pass "row errors: the UNIQUE violation (row 3) diverted, the aborted transaction written again without it"
else
  fail "row errors: exit $rc, $(db_q d "SELECT count(*) FROM results") rows"; show d/run.log
fi
(cd d && "$ELSPETH" explain --database state --run latest --row 3 2>&1 | grep -q "duplicate key value violates unique constraint") &&
  pass "row errors: the reason is the server's" || fail "row errors: no reason recorded"
verify_ok d && pass "row errors: verify OK" || { fail "row errors: verify"; show d/verify.log; }

# ------------------------------------------------------------ e. secrets
newdb e
PW=s3cret-Pass-42
SECRET_URL="postgresql://elspeth:$PW@/e?host=$PG_DIR&port=$PG_PORT"
db_pipe "$SECRET_URL" > e/p.yaml
(cd e && ELSPETH_FINGERPRINT_KEY=k $TO "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
(cd e && "$ELSPETH" export --database state --run all --sqlite trail.db > export.log 2>&1)
if [ $rc = 0 ] && [ -s e/trail.db ] && ! grep -rqa "$PW" e/state e/trail.db e/run.log &&
   [ "$(sqlite3 e/trail.db "SELECT count(*) FROM runs WHERE settings_json LIKE '%url_password_fingerprint%hmac-sha256:%'")" = 1 ]; then
  pass "secrets: the password is in neither the Landscape nor its SQL export; its fingerprint is"
else
  fail "secrets: exit $rc"; show e/run.log e/export.log
fi
expect "secrets: no server there: an error naming the url without its password" 1 \
  "postgresql://elspeth@/e?host=$WORK/nowhere" -- \
  bash -c "cd e && sed 's|host=$PG_DIR|host=$WORK/nowhere|' p.yaml > gone.yaml && '$ELSPETH' run -s gone.yaml --execute"
(cd e && "$ELSPETH" run -s gone.yaml --execute 2>&1 | grep -q "$PW") && fail "secrets: the password was printed" ||
  pass "secrets: the password is not printed"

# ---------------------------------------------------- f. refused resume
newdb f
db_pipe "$(db_url f)" > f/p.yaml
if db_killed f f 100; then
  db_q f "DELETE FROM elspeth_sink_commits" > /dev/null
  before=$(db_dump f)
  (cd f && "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); rc=$?
  if [ $rc = 1 ] && grep -q "was replaced or restored" f/resume.log && [ "$before" = "$(db_dump f)" ]; then
    pass "refused resume: the ledger emptied: exit 1, nothing changed"
  else
    fail "refused resume: exit $rc"; show f/resume.log
  fi
else
  fail "refused resume: not killed mid-run"
fi

# ------------------------------------------------------ g. effect_ledger
pg_sql -c "CREATE ROLE fx LOGIN"
pg_provision() {
  db_q "$1" "CREATE TABLE results (id BIGINT NOT NULL, name TEXT NOT NULL, score DOUBLE PRECISION,
      ok BOOLEAN NOT NULL, meta TEXT NOT NULL);
    CREATE TABLE side (id TEXT, name TEXT, score TEXT, ok TEXT, meta TEXT);
    CREATE TABLE _elspeth_sink_effects (effect_id VARCHAR(64) NOT NULL, schema_version INTEGER NOT NULL,
      protocol_version VARCHAR(32) NOT NULL, plan_hash VARCHAR(64) NOT NULL,
      payload_hash VARCHAR(64) NOT NULL, completed BOOLEAN NOT NULL, descriptor_json TEXT,
      accepted_ordinals_json TEXT, diverted_ordinals_json TEXT, accepted_payload_hash VARCHAR(64),
      diversion_hashes_json TEXT, evidence_json TEXT, PRIMARY KEY (effect_id));
    REVOKE ALL ON SCHEMA public FROM PUBLIC; GRANT USAGE ON SCHEMA public TO fx;
    GRANT SELECT, INSERT ON results, side, _elspeth_sink_effects TO fx"
}
DB_USER=fx DB_EFFECT=1 DB_IF_EXISTS=append DB_PROVISION=pg_provision kill_resume g 40 120 220
n=$(db_q g "SELECT count(*), sum((descriptor_json::json->>'rows_after')::int - (descriptor_json::json->>'rows_before')::int), bool_and(completed) FROM _elspeth_sink_effects")
[ "${n#*|}" = "$DB_ROWS|t" ] && pass "effect_ledger: the ledger's commits count each row once ($n)" ||
  fail "effect_ledger: ledger $n"
db_q g "SELECT has_table_privilege('fx', 'results', 'DELETE'), has_schema_privilege('fx', 'public', 'CREATE')" | grep -qx "f|f" &&
  pass "effect_ledger: the role could neither delete nor create" || fail "effect_ledger: the role had more rights"

finish

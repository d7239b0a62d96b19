# Shared by test_database_sqlite.sh and test_database_pg.sh (sourced after
# lib.sh): a pipeline writing two tables of one database through the
# database sink, slow enough to be killed mid-run, and the kill-and-resume
# check against an uninterrupted run. The test defines
#   db_url NAME          the sink's url for database NAME (a fresh one each)
#   db_q NAME SQL        runs SQL on database NAME: rows '|'-separated
TO="timeout -s KILL 120"
DB_ROWS=400

# db_input N: N rows of JSON Lines with every type the tables take.
db_input() {
  awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++) {
    score = i % 9 ? sprintf("%d.%d", i % 50, i % 10) : "null"
    printf "{\"id\": %d, \"name\": \"row %d \\u00e9\\\"q\\\"\", \"score\": %s, \"ok\": %s, \"meta\": {\"k\": %d, \"tags\": [\"a\", \"\\u00e9\"], \"x\": 1.5}}\n",
      i, i, score, i % 2 ? "true" : "false", i } }'
}

# db_pipe URL [INTERVAL] [TABLE]: a delay, then every 5th row to table
# `side` (mode observed, if_exists append) and the others to TABLE
# (default results; typed columns, if_exists $DB_IF_EXISTS or replace).
# DB_DELAY="MIN MAX": the delay's bounds in ms (default 2 10).
# DB_REFUSED=1: main's on_write_failure is a json sink, out/refused.jsonl;
# DB_INPUT: the input file (default in.jsonl); DB_SOURCE_MODE: the
# source schema's mode (default fixed); DB_EFFECT=1: both sinks keep
# ELSPETH 0.7.1's effect ledger _elspeth_sink_effects.
db_pipe() {
  local fail= refused= dmin dmax eff=
  read -r dmin dmax <<< "${DB_DELAY:-2 10}"
  if [ -n "${DB_REFUSED:-}" ]; then
    fail=$'\n    on_write_failure: refused'
    refused=$'\n  refused: {plugin: json, options: {path: out/refused.jsonl}}'
  fi
  [ -n "${DB_EFFECT:-}" ] &&
    eff=$'\n      effect_ledger: {table: _elspeth_sink_effects, schema_version: 1, permissions: [select, insert]}'
  cat <<YAML
source:
  plugin: json
  on_success: work_in
  options:
    path: ${DB_INPUT:-in.jsonl}
    format: jsonl
    schema: {mode: ${DB_SOURCE_MODE:-fixed}, fields: ["id: int", "name: str", "score: float?", "ok: bool", "meta: any"]}
    on_validation_failure: discard
transforms:
  - name: work
    plugin: delay
    input: work_in
    on_success: route_in
    options: {distribution: uniform, min_ms: $dmin, max_ms: $dmax, seed: 7}
gates:
  - name: route
    input: route_in
    condition: "row['id'] % 5 == 0"
    routes: {'true': side, 'false': main}
sinks:
  main:
    plugin: database$fail
    options:
      url: "$1"
      table: ${3:-results}
      if_exists: ${DB_IF_EXISTS:-replace}
      schema: {mode: fixed, fields: ["id: int", "name: str", "score: float?", "ok: bool", "meta: any"]}$eff
  side:
    plugin: database
    options:
      url: "$1"
      table: side
      schema: {mode: observed}$eff$refused
concurrency:
  pipelining: {max_rows_in_flight: 4}
checkpoint: {frequency: every_n, checkpoint_interval: ${2:-25}}
landscape: {url: "lmdb://./state"}
YAML
}

db_count() { db_q "$1" "SELECT count(*) FROM ${2:-results}" 2>/dev/null | tail -1; }
# db_dump NAME: both tables in id order, the way each holds them.
db_dump() {
  db_q "$1" "SELECT * FROM results ORDER BY id"
  echo "--"
  db_q "$1" "SELECT * FROM side ORDER BY CAST(id AS INTEGER)"
}
# db_once NAME: each table has each row once, as many as the input gives.
db_once() {
  local main side
  main=$(db_q "$1" "SELECT count(*), count(DISTINCT id) FROM results" | tail -1)
  side=$(db_q "$1" "SELECT count(*), count(DISTINCT id) FROM side" | tail -1)
  [ "$main" = "$((DB_ROWS - DB_ROWS / 5))|$((DB_ROWS - DB_ROWS / 5))" ] &&
    [ "$side" = "$((DB_ROWS / 5))|$((DB_ROWS / 5))" ] || { echo "    counts: results $main, side $side"; return 1; }
}

# db_killed DIR NAME ROWS: runs the pipeline of DIR/p.yaml (its
# database NAME), SIGKILLs it once table results holds ROWS rows or
# more, and checks it died before its end. DB_CMD: run (default) or
# "resume latest".
db_killed() {
  local d=$1 name=$2 want=$3 pid i n=0
  (cd "$d" && exec "$ELSPETH" ${DB_CMD:-run} -s p.yaml --execute > bg.log 2>&1) &
  pid=$!
  for i in $(seq 1 6000); do
    n=$(db_count "$name"); n=${n:-0}
    [ "$n" -ge "$want" ] 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  n=$(db_count "$name")
  if grep -q "Sanitizer\|runtime error:" "$d/bg.log"; then
    fail "$d: sanitizer report"; sed 's/^/    /' "$d/bg.log" | head; return 1
  fi
  if grep -q "^Run completed" "$d/bg.log" || [ "${n:-0}" -ge "$((DB_ROWS - DB_ROWS / 5))" ]; then
    echo "    # $d: the run ended before the kill ($n rows)"; return 1
  fi
  echo "    # $d: killed with ${n:-0} rows in the table"
}

# db_big_killed DIR [SINK_OPTION_LINE]: 40,000 rows into table results
# with no checkpoint due before the end, killed once the transaction's
# early commits put 10,000 rows in the table; `before` gets the rows
# there then. The extra line goes into the sink's options.
db_big_killed() {
  local d=$1 extra=${2:-} pid i
  mkdir -p "$d"
  awk 'BEGIN { for (i = 1; i <= 40000; i++) printf "{\"id\": %d, \"name\": \"r%d\"}\n", i, i }' > "$d/big.jsonl"
  [ -n "$extra" ] && extra=$'\n      '"$extra"
  cat > "$d/p.yaml" <<YAML
source:
  plugin: json
  on_success: results
  options: {path: big.jsonl, format: jsonl, schema: {mode: observed}, on_validation_failure: discard}
sinks:
  results:
    plugin: database
    options:
      url: "$(db_url "$d")"
      table: results
      schema: {mode: fixed, fields: ["id: int", "name: str"]}$extra
checkpoint: {frequency: every_n, checkpoint_interval: 1000000}
landscape: {url: "lmdb://./state"}
YAML
  (cd "$d" && exec "$ELSPETH" run -s p.yaml --execute > bg.log 2>&1) &
  pid=$!
  for i in $(seq 1 6000); do
    before=$(db_count "$d"); [ "${before:-0}" -ge 10000 ] 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  before=$(db_count "$d")
}

# db_big DIR: rows committed after the last checkpoint are deleted by the
# resume. With no checkpoint due before the end, the rows reach the
# table only through the transaction's early commits (DBS_TXN_ROWS,
# 10,000 rows): the run is killed once they show, so every row in the
# table then is after the start's checkpoint, and the resume must take
# them all back before it writes them again.
db_big() {
  local d=$1 n=40000 rc dry
  db_big_killed "$d"
  (cd "$d" && "$ELSPETH" resume latest -s p.yaml > dry.log 2>&1)
  dry=$(grep -o "cut back to [0-9]* rows" "$d/dry.log")
  (cd "$d" && $TO "$ELSPETH" resume latest -s p.yaml --execute > resume.log 2>&1); rc=$?
  if [ "${before:-0}" -ge 10000 ] && [ "${before:-0}" -lt $n ] && [ "$dry" = "cut back to 0 rows" ] &&
     [ $rc = 0 ] && [ "$(db_q "$d" "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM results")" = "$n|$n|1|$n" ]; then
    pass "early commits: killed with $before rows in the table after the start's checkpoint; the resume deleted them and wrote each of the $n rows once"
  else
    fail "early commits: $before rows at the kill, dry run '$dry', resume exit $rc"
    sed 's/^/    /' "$d/bg.log" "$d/dry.log" "$d/resume.log" | head -20
  fi
}

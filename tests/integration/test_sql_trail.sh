#!/usr/bin/env bash
# The SQL trail (ELSPETH 0.4.1's schema in SQLite):
#   a. `export` writes ELSPETH's 20 tables with its columns, types,
#      constraints and indexes (compared with the .schema of a database
#      the real ELSPETH 0.4.1 wrote: tests/fixtures/elspeth-0.4.1-schema.sql)
#      and user_version 2;
#   b. the facts agree with `explain`/`runs` on fork/coalesce, aggregation,
#      error routing and explode runs (outcome counts, lineage of a row,
#      group ids, batch outputs, errors, artifacts' bytes);
#   c. exporting again changes nothing (idempotent), a foreign SQLite file
#      is refused;
#   d. landscape.url sqlite:///FILE: run, runs, explain, verify, resume
#      work; the file shows an interrupted run as interrupted, and after
#      SIGKILL + resume (an aggregation holding rows at the checkpoint)
#      one completed run whose outcomes equal an uninterrupted run's,
#      every token with parents in a lineage group (ELSPETH's rule);
#      -d FILE finds a killed run's Landscape before FILE exists; an
#      export that fails keeps the run's exit code;
#   e. postgres:// and sqlite:///:memory: are refused with what to do
#      (postgresql://: test_landscape_pg.sh);
#   f. ELSPETH's runbook queries answer.
source "$(dirname "$0")/lib.sh"
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
command -v sqlite3 >/dev/null || { fail "sqlite3 (the CLI) is missing: scripts/install-deps.sh installs it"; finish; exit 1; }
q() { sqlite3 "$@"; }

# ------------------------------------------------------------ a. schema
for e in fork_coalesce batch_aggregation error_routing explode; do
  ELSPETH_OUT_DIR=$WORK/out-$e "$ELSPETH" run -s examples/$e/settings.yaml -x > run-$e.log 2>&1 \
    || { fail "example $e runs"; show run-$e.log 2>/dev/null || cat run-$e.log; }
done
expect "export writes every run" 0 "exported every run to t.db" -- "$ELSPETH" export --sqlite t.db
sqlite3 ref.db < "$SRC/tests/fixtures/elspeth-0.4.1-schema.sql"
# Each table's columns (name, type, not null, default, primary key) and
# its indexes, in a canonical order.
shape() {
  local db=$1 t
  for t in $(q "$db" "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'elspeth_%' AND name NOT LIKE 'sqlite_%' ORDER BY name"); do
    echo "table $t"
    q "$db" "SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('$t')"
    q "$db" "SELECT name, \"unique\", partial FROM pragma_index_list('$t') ORDER BY name"
  done
  q "$db" "SELECT sql FROM sqlite_master WHERE type='index' AND name NOT LIKE 'ix_elspeth%' AND sql IS NOT NULL ORDER BY name" | sed 's/IF NOT EXISTS //'
}
shape ref.db > ref.shape; shape t.db > ours.shape
if diff -u ref.shape ours.shape > shape.diff; then
  pass "ELSPETH's 20 tables: same columns, types, keys and indexes ($(grep -c '^table' ours.shape) tables)"
else
  fail "the schema differs from ELSPETH 0.4.1's"; head -30 shape.diff
fi
[ "$(q t.db 'PRAGMA user_version')" = 2 ] && pass "user_version is ELSPETH's schema epoch (2)" \
  || fail "user_version is $(q t.db 'PRAGMA user_version')"

# ------------------------------------------------------------- b. facts
# outcome counts by run: SQL against `explain`'s terminal outcomes per row
for run in 1 2 3 4; do
  rows=$(q t.db "SELECT count(*) FROM rows WHERE run_id='$run'")
  want=$("$ELSPETH" runs --run $run --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"])')
  [ "$rows" = "$want" ] && pass "run $run: rows $rows as runs says" || fail "run $run: rows $rows, runs says $want"
  bad=$(q t.db "SELECT count(*) FROM tokens t LEFT JOIN token_outcomes o ON o.token_id = t.token_id WHERE t.run_id='$run' AND o.outcome IS NULL")
  [ "$bad" = 0 ] && pass "run $run: every token has its outcome" || fail "run $run: $bad tokens without outcome"
done
python3 - "$ELSPETH" t.db <<'PY' > facts.log 2>&1 && pass "every row's tokens, parents, states and outcomes equal explain's (4 runs)" || { fail "SQL lineage differs from explain"; head -20 facts.log; }
import json, sqlite3, subprocess, sys
elspeth, db = sys.argv[1], sqlite3.connect(sys.argv[2])
for run in ("1", "2", "3", "4"):
    nrows = db.execute("SELECT count(*) FROM rows WHERE run_id=?", (run,)).fetchone()[0]
    for seq in range(1, nrows + 1):
        doc = json.loads(subprocess.check_output([elspeth, "explain", "--run", run, "--row", str(seq), "--json"]))
        want = {}
        for t in doc["tokens"]:
            want["tok-%s-%d" % (run, t["token_id"])] = (
                (t.get("outcome") or {}).get("outcome", "").lower(),
                sorted("tok-%s-%d" % (run, p["token_id"]) if isinstance(p, dict) else "tok-%s-%d" % (run, p) for p in t.get("parents", [])),
                [("st-%s-%d" % (run, s["state_id"]), s["status"]) for s in t["states"]])
        got = {}
        for (tok,) in db.execute("SELECT token_id FROM tokens WHERE row_id=?", ("row-%s-%d" % (run, seq),)):
            out = db.execute("SELECT outcome FROM token_outcomes WHERE token_id=?", (tok,)).fetchone()
            parents = sorted(p for (p,) in db.execute("SELECT parent_token_id FROM token_parents WHERE token_id=?", (tok,)))
            states = [tuple(r) for r in db.execute("SELECT state_id, status FROM node_states WHERE token_id=? ORDER BY step_index, attempt", (tok,))]
            got[tok] = (out[0] if out else "", parents, states)
        # explain lists a row's own tokens and those that joined into it
        for k in list(got):
            if k not in want:
                print("run", run, "row", seq, "extra token", k); sys.exit(1)
        for k, v in want.items():
            if k in got and got[k] != v:
                print("run", run, "row", seq, k, "sql", got[k], "explain", v); sys.exit(1)
print("ok")
PY
# group ids: fork children share their parent's fork group, the merged
# token and what it joined share a join group, expanded children theirs.
[ "$(q t.db "SELECT count(*) FROM tokens WHERE run_id='1' AND fork_group_id IS NOT NULL")" = 8 ] \
  && pass "fork/coalesce: 8 fork children carry their fork group" || fail "fork groups: $(q t.db "SELECT count(*) FROM tokens WHERE run_id='1' AND fork_group_id IS NOT NULL")"
bad=$(q t.db "SELECT count(*) FROM token_outcomes o JOIN tokens m ON m.join_group_id = o.join_group_id WHERE o.run_id='1' AND o.outcome='coalesced' AND NOT EXISTS (SELECT 1 FROM token_parents p WHERE p.token_id = m.token_id AND p.parent_token_id = o.token_id)")
[ "$bad" = 0 ] && [ "$(q t.db "SELECT count(*) FROM token_outcomes WHERE run_id='1' AND outcome='coalesced' AND join_group_id IS NOT NULL")" = 8 ] \
  && pass "fork/coalesce: each coalesced token's join group is the token it joined" || fail "join groups wrong ($bad)"
[ "$(q t.db "SELECT expected_branches_json FROM token_outcomes WHERE run_id='1' AND outcome='forked' LIMIT 1")" = '["summary", "meta"]' ] \
  && pass "forked outcomes list their expected branches" || fail "expected_branches_json: $(q t.db "SELECT expected_branches_json FROM token_outcomes WHERE outcome='forked' LIMIT 1")"
[ "$(q t.db "SELECT count(DISTINCT expand_group_id) FROM tokens WHERE run_id='4' AND expand_group_id IS NOT NULL")" = 2 ] \
  && pass "explode: one expand group per row exploded into items (row 2's array is empty)" || fail "expand groups: $(q t.db "SELECT count(DISTINCT expand_group_id) FROM tokens WHERE run_id='4'")"
outs=$(q t.db "SELECT count(*) FROM batch_outputs bo JOIN batches b ON b.batch_id = bo.batch_id WHERE b.run_id='2'")
[ "$outs" = "$(q t.db "SELECT count(*) FROM token_outcomes WHERE run_id='2' AND outcome='completed'")" ] && [ "$outs" -gt 0 ] \
  && pass "aggregation: every output token is a batch output ($outs)" || fail "batch outputs: $outs"
[ "$(q t.db "SELECT count(*) FROM token_outcomes WHERE run_id='2' AND outcome='consumed_in_batch' AND batch_id IS NULL")" = 0 ] \
  && pass "aggregation: consumed tokens name their batch" || fail "consumed tokens without batch_id"
[ "$(q t.db "SELECT destination || '|' || schema_mode FROM validation_errors WHERE run_id='3'")" = "quarantine|flexible" ] \
  && pass "validation error: destination and schema mode" || fail "validation_errors: $(q t.db "SELECT * FROM validation_errors")"
[ "$(q t.db "SELECT violation_type || '|' || original_field_name || '|' || expected_type || '|' || actual_type FROM validation_errors WHERE run_id='3'")" = "type_mismatch|order|int|str" ] \
  && pass "validation error: per-field details (type_mismatch, field, expected and actual type)" || fail "violation: $(q t.db "SELECT violation_type, original_field_name, expected_type, actual_type FROM validation_errors")"
[ "$(q t.db "SELECT destination FROM transform_errors WHERE run_id='3'")" = "errors" ] \
  && pass "transform error: its on_error sink" || fail "transform_errors: $(q t.db "SELECT * FROM transform_errors")"
[ "$(q t.db "SELECT label || '|' || default_mode FROM edges WHERE run_id='3' AND label LIKE '__error_%'")" = "__error_tidy__|divert" ] \
  && pass "error edges are ELSPETH's __error_NAME__ divert edges" || fail "error edge: $(q t.db "SELECT label, default_mode FROM edges WHERE run_id='3'")"
# an artifact's bytes: its offset and length in the file hash to content_hash
python3 - t.db <<'PY' > art.log 2>&1 && pass "every artifact's byte range hashes to its content_hash" || { fail "artifact bytes"; head art.log; }
import hashlib, sqlite3, sys
db = sqlite3.connect(sys.argv[1]); n = 0
for uri, h, size, off in db.execute("SELECT a.path_or_uri, a.content_hash, a.size_bytes, e.byte_offset FROM artifacts a JOIN elspeth_artifacts e USING (artifact_id)"):
    with open(uri[len("file://"):], "rb") as f:
        f.seek(off); b = f.read(size)
    assert hashlib.sha256(b).hexdigest() == h, (uri, off, size); n += 1
assert n > 30, n
PY
rh=$(q t.db "SELECT DISTINCT reason_hash FROM routing_events r JOIN edges e ON e.edge_id = r.edge_id WHERE e.run_id='1' AND e.label='false'")
want=$(printf '{"condition":"row['"'"'priority'"'"'] != '"'"'low'"'"'","result":"false"}' | sha256sum | cut -c1-64)
[ "$rh" = "$want" ] && pass "routing reason hash: sha256 of {condition, result}" || fail "reason_hash $rh, want $want"

# A batch that fails, its members routed on_error: each member's failed
# visit to the aggregation, then its sink, as two steps of its own (they
# once shared a step: the trail's UNIQUE key refused the second state)
mkdir -p bf && printf 'id,v\n1,a\n2,b\n3,c\n' > bf/in.csv
cat > bf/p.yaml <<'YAML'
source:
  plugin: csv
  on_success: agg_in
  options: {path: in.csv, schema: {mode: observed}, on_validation_failure: discard}
aggregations:
  - name: stats
    plugin: batch_stats
    input: agg_in
    on_success: out
    on_error: bad
    trigger: {count: 3}
    output_mode: transform
    options: {value_field: v, schema: {mode: observed}}
sinks:
  out: {plugin: json, options: {path: out.jsonl, format: jsonl}}
  bad: {plugin: json, options: {path: bad.jsonl, format: jsonl}}
landscape: {url: "sqlite:///audit.db"}
YAML
(cd bf && "$ELSPETH" run -s p.yaml --execute > run.log 2>&1); rc=$?
st=$(q bf/audit.db "SELECT group_concat(s, ' ') FROM (SELECT step_index || ':' || status || ':' || (error_json IS NOT NULL) AS s FROM node_states WHERE token_id = 'tok-1-2' ORDER BY step_index)")
if [ $rc = 0 ] && [ "$(wc -l < bf/bad.jsonl)" = 3 ] && [ "$st" = "1:failed:1 2:completed:0" ]; then
  pass "a failed batch: each member's aggregation state failed with the error, its sink the next step"
else
  fail "a failed batch: exit $rc, states '$st'"; show bf/run.log 2>/dev/null || cat bf/run.log
fi

# ------------------------------------------------------ c. idempotence
dump() { q "$1" .dump | grep -v "INSERT INTO elspeth_runs" | sort; }
dump t.db > dump1
"$ELSPETH" export --sqlite t.db > /dev/null 2>&1
"$ELSPETH" export --run 2 --sqlite t.db > /dev/null 2>&1
dump t.db > dump2
cmp -s dump1 dump2 && pass "exporting again (all runs, then run 2) leaves the same database" || { fail "re-export changed the database"; diff dump1 dump2 | head; }
expect "payloads on request" 0 "" -- "$ELSPETH" export --run 1 --sqlite p.db --payloads
n=$(q p.db "SELECT count(*) FROM rows r JOIN elspeth_payloads p ON p.hash = r.source_data_ref")
[ "$n" = 6 ] && pass "--payloads: every source row's payload is in elspeth_payloads" || fail "payloads of rows: $n"
sqlite3 foreign.db "CREATE TABLE runs (x); CREATE TABLE tokens (y)"
expect "a foreign SQLite file is refused" 1 "is not an SQL audit trail: it has 2 of ELSPETH's 20 tables" -- "$ELSPETH" export --sqlite foreign.db
expect "export needs --sqlite" 2 "--sqlite FILE is required" -- "$ELSPETH" export
sqlite3 shape.db < "$SRC/tests/fixtures/elspeth-0.4.1-schema.sql"
expect "a file with ELSPETH's empty schema takes the export" 0 "exported run 1" -- "$ELSPETH" export --run 1 --sqlite shape.db
sqlite3 shape.db "ALTER TABLE runs RENAME COLUMN status TO state"
expect "a file whose tables have other columns is refused" 1 "column runs.status:VARCHAR(32) is missing" -- "$ELSPETH" export --run 1 --sqlite shape.db

# ------------------------------------------ d. landscape.url sqlite:///
R=400
awk -v n=$R 'BEGIN { print "id,region,amount,text"; for (i = 1; i <= n; i++) printf "%d,r%d,%d,ticket %d\n", i, i % 3, i * 7 % 101, i }' > rows.csv
pipe() { trail_pipe "sqlite:///$1" "$2" 5 15; }
mkdir -p ref kill int
pipe ref/audit.db "$WORK/ref" > ref.yaml
pipe runs/audit.db "$WORK/kill" > kill.yaml
pipe "$WORK/int/audit.db" "$WORK/int" > int.yaml
expect "run with landscape.url sqlite:///relative" 0 "audit: run 1" -- "$ELSPETH" run -s ref.yaml -x --max-rows-in-flight 16
[ -d ref/audit.db.lmdb ] && [ -f ref/audit.db ] && pass "the LMDB store lives beside the file (ref/audit.db.lmdb)" || fail "no ref/audit.db.lmdb"
[ "$(q ref/audit.db "SELECT status FROM runs")" = completed ] && pass "the SQL file shows the completed run" || fail "runs: $(q ref/audit.db 'SELECT * FROM runs')"
[ "$(q ref/audit.db "SELECT count(*) > 0, sum(final), max(rows_released) FROM elspeth_samples")" = "1|1|$R" ] \
  && pass "the run's metric samples are in elspeth_samples (the last one final, all $R rows released)" \
  || fail "samples: $(q ref/audit.db 'SELECT count(*), sum(final), max(rows_released) FROM elspeth_samples')"
expect "runs reads it (-s)" 0 "completed" -- "$ELSPETH" runs -s ref.yaml
expect "explain reads it (-d FILE, ELSPETH's --database)" 0 "Row 5" -- "$ELSPETH" explain -d ref/audit.db --row 5
expect "verify reads it" 0 "verify: OK" -- "$ELSPETH" verify -s ref.yaml

# SIGINT: the file says interrupted; resume: one completed run.
(exec "$ELSPETH" run -s int.yaml -x --max-rows-in-flight 4 > int.log 2>&1) & pid=$!
started int/out.jsonl 30; sleep 0.3; kill -INT $pid; wait $pid; rc=$?
[ "$rc" = 3 ] && pass "SIGINT stops the run (exit 3)" || { fail "SIGINT: exit $rc"; cat int.log | head; }
[ "$(q int/audit.db "SELECT status FROM runs")" = interrupted ] && pass "the SQL file shows the interrupted run at once" || fail "after SIGINT: $(q int/audit.db 'SELECT run_id, status FROM runs')"
expect "resume with landscape.url sqlite:///absolute" 0 "resumed run 1" -- "$ELSPETH" resume latest -s int.yaml -x
[ "$(q int/audit.db "SELECT count(*) || '|' || max(status) FROM runs")" = "1|completed" ] && pass "after resume: one run, completed" || fail "after resume: $(q int/audit.db 'SELECT run_id, status FROM runs')"
[ "$(q int/audit.db "SELECT count(*) FROM elspeth_resumes")" = 1 ] && pass "the resume is in elspeth_resumes" || fail "elspeth_resumes: $(q int/audit.db 'SELECT * FROM elspeth_resumes')"

# SIGKILL mid-run: the live trail's whole rows only, until the resume brings it up to date.
(exec "$ELSPETH" run -s kill.yaml -x --max-rows-in-flight 4 > kill.log 2>&1) & pid=$!
for _ in $(seq 3000); do [ -f kill/out.jsonl ] && [ "$(wc -l < kill/out.jsonl)" -ge 60 ] && break; sleep 0.01; done
kill -0 $pid 2>/dev/null && pass "killed mid-run ($(wc -l < kill/out.jsonl) lines written)" || fail "the run ended before the SIGKILL"
kill -9 $pid; wait $pid 2>/dev/null
# the live trail (ADR 0041) may have written some rows already: whole ones
partial=$( [ -e runs/audit.db ] && q runs/audit.db "SELECT count(*) FROM tokens t JOIN rows r
  ON r.row_id = t.row_id WHERE (r.row_index + 1) % 5 != 0 AND NOT EXISTS
  (SELECT 1 FROM token_outcomes o WHERE o.token_id = t.token_id)" || echo 0)
[ -d runs/audit.db.lmdb ] && [ "$partial" = 0 ] && pass "after SIGKILL: the Landscape, and the SQL file holds whole rows only ($( [ -e runs/audit.db ] && q runs/audit.db 'SELECT count(*) FROM rows' || echo 0) rows)" || fail "after SIGKILL: $(ls runs), $partial partial tokens"
expect "-d FILE finds the killed run's Landscape beside the file (stopped: no process runs it)" 0 "stopped" -- "$ELSPETH" runs -d runs/audit.db
expect "resume after SIGKILL" 0 "resumed run 1" -- "$ELSPETH" resume latest -s kill.yaml -x
cmp -s ref/out.jsonl kill/out.jsonl && cmp -s ref/fives.csv kill/fives.csv && pass "the resumed sinks equal the uninterrupted run's" || fail "resumed sinks differ"
outc() { q "$1" "SELECT outcome || ':' || count(*) FROM token_outcomes GROUP BY outcome ORDER BY outcome" | tr '\n' ' '; }
[ "$(outc runs/audit.db)" = "$(outc ref/audit.db)" ] && pass "resumed run exports as one run with the uninterrupted run's outcomes ($(outc ref/audit.db))" \
  || fail "outcomes: resumed $(outc runs/audit.db) vs $(outc ref/audit.db)"
sup=$(q runs/audit.db "SELECT count(*) FROM elspeth_superseded")
dup=$(q runs/audit.db "SELECT count(*) FROM (SELECT r.row_id FROM rows r JOIN tokens t ON t.row_id = r.row_id JOIN token_outcomes o ON o.token_id = t.token_id WHERE t.token_id NOT IN (SELECT token_id FROM token_parents) GROUP BY r.row_id HAVING count(*) > 1)")
[ "$dup" = 0 ] && pass "no row has two root-token outcomes ($sup superseded tokens kept in elspeth_superseded)" || fail "$dup rows with two outcomes"
nogroup=$(q runs/audit.db "SELECT count(*) FROM tokens t WHERE EXISTS (SELECT 1 FROM token_parents p WHERE p.token_id = t.token_id) AND coalesce(fork_group_id, join_group_id, expand_group_id) IS NULL")
[ "$nogroup" = 0 ] && pass "every token with parents has its lineage group (batch outputs an expand group)" || fail "$nogroup tokens with parents and no group"
live=$(q runs/audit.db "SELECT count(*) FROM batch_outputs bo JOIN batches b USING (batch_id) JOIN tokens t ON t.token_id = bo.output_id WHERE b.status = 'completed' AND t.token_id IN (SELECT token_id FROM elspeth_superseded)")
[ "$live" = 0 ] && pass "no superseded output is credited to a live batch" || fail "$live superseded outputs in live batches"
[ "$(q runs/audit.db "SELECT count(*) FROM batch_outputs bo JOIN batches b USING (batch_id) WHERE b.status = 'completed'")" = "$(q ref/audit.db "SELECT count(*) FROM batch_outputs")" ] \
  && pass "the live batches' outputs equal the uninterrupted run's" || fail "batch outputs: $(q runs/audit.db "SELECT b.status, count(*) FROM batch_outputs bo JOIN batches b USING (batch_id) GROUP BY 1") vs $(q ref/audit.db 'SELECT count(*) FROM batch_outputs')"

# An export that fails (the file is not a trail) is said, and the run's
# own ending is kept: SIGINT still exits 3.
mkdir -p bad && sqlite3 bad/audit.db "CREATE TABLE runs (x)"
pipe "$WORK/bad/audit.db" "$WORK/bad" > bad.yaml
(exec "$ELSPETH" run -s bad.yaml -x --max-rows-in-flight 4 > bad.log 2>&1) & pid=$!
started bad/out.jsonl 30; sleep 0.3; kill -INT $pid; wait $pid; rc=$?
[ "$rc" = 3 ] && grep -q "does not show it yet" bad.log && grep -q "elspeth resume" bad.log \
  && pass "a failed SQL export keeps the interrupt's exit 3 and its resume hint" || { fail "failed export: exit $rc"; head -5 bad.log; }

# ------------------------------------------------------ e. refused urls
sed 's|url: sqlite:///.*|url: "postgres://u:hidden@db.example/elspeth"|' ref.yaml > pg.yaml
expect "postgres:// is refused (SQLAlchemy's rule), naming file, line and column" 1 "pg.yaml:2:8: landscape.url" -- "$ELSPETH" validate -s pg.yaml
! "$ELSPETH" validate -s pg.yaml 2>&1 | grep -q hidden && pass "... without the password" || fail "the password is in the message"
sed 's|url: sqlite:///.*|url: "sqlite:///:memory:"|' ref.yaml > mem.yaml
expect "sqlite:///:memory: is refused" 1 "no in-memory database" -- "$ELSPETH" validate -s mem.yaml
sed 's|url: sqlite:///.*|url: "sqlite:///runs/."|' ref.yaml > dot.yaml
expect "a sqlite:/// url naming a directory is refused" 1 "a SQL trail is a file" -- "$ELSPETH" validate -s dot.yaml
sed 's|url: sqlite:///.*|url: "sqlite:///ref"|' ref.yaml > dir.yaml
expect "... and an existing directory, before the run" 1 "exists and is not a file" -- "$ELSPETH" run -s dir.yaml -x

# --------------------------------------------- f. ELSPETH's runbook queries
# docs/runbooks/database-maintenance.md and incident-response.md
out=$(q ref/audit.db "SELECT 'runs', COUNT(*) FROM runs UNION ALL SELECT 'rows', COUNT(*) FROM rows UNION ALL SELECT 'tokens', COUNT(*) FROM tokens UNION ALL SELECT 'node_states', COUNT(*) FROM node_states UNION ALL SELECT 'checkpoints', COUNT(*) FROM checkpoints UNION ALL SELECT 'artifacts', COUNT(*) FROM artifacts" | tr '\n' ' ')
grep -q "runs|1 rows|$R tokens|" <<<"$out" && pass "runbook: row counts ($out)" || fail "runbook counts: $out"
out=$(q ref/audit.db "SELECT DATE(started_at), COUNT(*) FROM runs GROUP BY DATE(started_at)")
[ "$out" = "$(date -u +%F)|1" ] && pass "runbook: runs by date" || fail "runs by date: $out"
out=$(q ref/audit.db "SELECT r.row_index, o.sink_name FROM token_outcomes o JOIN tokens t ON o.token_id = t.token_id JOIN rows r ON t.row_id = r.row_id WHERE o.run_id = '1' AND o.sink_name = 'out' ORDER BY r.row_index LIMIT 2" | tr '\n' ' ')
[ "$out" = "0|out 1|out " ] && pass "runbook: rows routed to a sink (row_index 0-based)" || fail "rows to fives: $out"
out=$(q ref/audit.db "SELECT count(*) FROM node_states ns JOIN tokens t ON ns.token_id = t.token_id JOIN rows r ON t.row_id = r.row_id WHERE r.run_id = '1'")
[ "$out" -gt $((2 * R)) ] && pass "runbook: a run's node states by join ($out)" || fail "node states by join: $out"
finish

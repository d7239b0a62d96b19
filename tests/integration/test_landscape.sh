#!/usr/bin/env bash
# The audit trail end to end: runs, explain (text and JSON against an
# expected document), verify (passes; fails with exit 4 on a tampered sink),
# failed and interrupted runs, read-only errors; ELSPETH's short flags
# (run -x -n -v -f, explain -r -t -d --no-tui, plugins list -t, resume -d
# -x -f on a Landscape that landscape.url does not name).
source "$(dirname "$0")/lib.sh"
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
QS=examples/quickstart/settings.yaml
NORM="python3 $SRC/tests/integration/normalize_explain.py"

expect "runs on an empty directory says so" 1 "no audit trail at" -- "$ELSPETH" runs --database nowhere.lmdb

expect "quickstart runs with the audit on" 0 "audit: run 1" -- "$ELSPETH" run -s $QS --execute --sequential
expect "runs lists the run" 0 "completed" -- "$ELSPETH" runs
expect "runs finds the trail from -s" 0 "completed" -- "$ELSPETH" runs -s $QS
expect "explain tells the story of row 42" 0 "routed: condition gave 'true' -> urgent" -- "$ELSPETH" explain --run latest --row 42
expect "explain shows where the row landed" 0 "Written: examples/quickstart/out/urgent.jsonl bytes" -- "$ELSPETH" explain --run 1 --row 42
expect "explain a quarantined row" 0 "validation error: line 58: field 'amount'" -- "$ELSPETH" explain --row 57

"$ELSPETH" explain --run latest --row 42 --json | $NORM > row42.json
if diff -u "$SRC/tests/integration/expected/quickstart_explain_row42.json" row42.json > diff.txt; then
  pass "explain --json of row 42 equals the expected document"
else
  fail "explain --json of row 42 differs"; head -40 diff.txt
fi

expect "explain of a row that does not exist" 1 "run 1 has no row 9999" -- "$ELSPETH" explain --row 9999
expect "explain of a run that does not exist" 1 "no run 7" -- "$ELSPETH" explain --run 7 --row 1
expect "explain needs --row or --token" 2 "exactly one of --row" -- "$ELSPETH" explain --run 1

expect "verify passes on a clean run" 0 "verify: OK" -- "$ELSPETH" verify --run latest

# Tamper with one byte of a sink file: verify must notice (exit 4).
cp examples/quickstart/out/urgent.jsonl urgent.bak
sed -i '5s/Customer/Kustomer/' examples/quickstart/out/urgent.jsonl
expect "verify catches an edited sink file" 4 "differ from what was written" -- "$ELSPETH" verify --run 1
expect "verify names the changed file" 4 "changed since the run" -- "$ELSPETH" verify --run 1
cp urgent.bak examples/quickstart/out/urgent.jsonl

# A run that stops on a row error is recorded as failed and still verifies.
sed "s/row\['urgency'\] == 'high'/row['nope'] == 1/" $QS > failing.yaml
expect "a failing run exits 1" 1 "row 1: gate 'route'" -- "$ELSPETH" run -s failing.yaml --execute
expect "the failed run is recorded" 0 "failed" -- "$ELSPETH" runs
expect "the failed row has a FAILED outcome" 0 "Outcome: FAILED" -- "$ELSPETH" explain --run 2 --row 1
expect "verify passes on the failed run" 0 "verify: OK" -- "$ELSPETH" verify --run 2

# Audit off: nothing recorded.
printf '\nlandscape: {enabled: false}\n' | cat $QS - > noaudit.yaml
rm -rf state-before; cp -r state state-before
expect "audit off runs" 0 "Run completed" -- "$ELSPETH" run -s noaudit.yaml --execute
[ "$("$ELSPETH" runs | grep -c '^ *[0-9]')" = 2 ] && pass "audit off records no run" || fail "audit off recorded a run"

# SIGINT mid-run: exit 3, status interrupted, verify passes.
awk 'BEGIN { print "ticket_id,customer,subject,priority,amount";
  for (i = 1; i <= 400000; i++) printf "%d,c%d,s %d,%s,%d.5\n", i, i % 50, i, (i % 3 ? "low" : "high"), i % 900 }' > big.csv
sed "s|examples/quickstart/data/tickets.csv|big.csv|" $QS > big.yaml
ELSPETH_OUT_DIR=bigout "$ELSPETH" run -s big.yaml --execute > int.out 2>&1 &
pid=$!
started bigout/normal.csv
sleep 0.3
kill -INT $pid
wait $pid; rc=$?
[ "$rc" = 3 ] && pass "SIGINT exits 3" || { fail "SIGINT exit $rc"; cat int.out; }
expect "the interrupted run is recorded" 0 "interrupted" -- "$ELSPETH" runs
expect "verify passes on the interrupted run" 0 "verify: OK" -- "$ELSPETH" verify --run latest

# ELSPETH's short flags (docs/adr/0017-cli-flags.md) on the binary.
# -x -f json is --execute --format json: the same run_completed event,
# but for its run id and times.
completed() { python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e["event"] == "run_completed":
        for k in ("run_id", "wall_seconds", "pipeline_seconds", "fifo_wait_max_ms", "duration_seconds"):
            e.pop(k)
        print(json.dumps(e, sort_keys=True))'; }
"$ELSPETH" run -s $QS --execute --format json --sequential | completed > long.json
"$ELSPETH" run -s $QS -x -f json --sequential | completed > short.json
if [ -s long.json ] && cmp -s long.json short.json; then
  pass "run -x -f json gives the events of --execute --format json"
else
  fail "run -x -f json differs from --execute --format json"; cat long.json short.json
fi
expect "run -f console is the text summary" 0 "Run completed: 200 rows" -- "$ELSPETH" run -s $QS -x -f console
expect "run -f xml is a usage error" 2 "--format is console, text or json, got 'xml'" -- "$ELSPETH" run -s $QS -x -f xml
expect "run -f without a value is a usage error" 2 "option '-f' needs a value" -- "$ELSPETH" run -s $QS -f
rm -rf dry; runs_before=$("$ELSPETH" runs | grep -c '^ *[0-9]')
expect "run -n -x is a dry run" 0 "Dry run (--dry-run): validation passed; nothing was run." -- \
  env ELSPETH_OUT_DIR=dry "$ELSPETH" run -s $QS -n -x
[ ! -e dry ] && [ "$("$ELSPETH" runs | grep -c '^ *[0-9]')" = "$runs_before" ] \
  && pass "run -n -x writes and records nothing" || fail "run -n -x wrote or recorded something"
expect "run -v shows the pipeline first" 0 "Starting pipeline execution..." -- "$ELSPETH" run -s $QS -x -v
expect "run -v shows the outcomes" 0 "outcomes: ROUTED 199, QUARANTINED 1" -- "$ELSPETH" run -s $QS -x -v

"$ELSPETH" explain --run 1 --row 42 > long.txt
"$ELSPETH" explain -r 1 --row 42 --no-tui > short.txt
[ -s long.txt ] && cmp -s long.txt short.txt && pass "explain -r --no-tui is explain --run" \
  || { fail "explain -r --no-tui differs"; diff long.txt short.txt | head; }
expect "explain -r latest works" 0 "Row 42 (line 43)" -- "$ELSPETH" explain -r latest --row 42
expect "explain -t names a token" 0 "Row 42 (line 43)" -- "$ELSPETH" explain -r 1 -t 42
"$ELSPETH" explain -d state/audit.lmdb -r 1 --row 42 --json --no-tui | $NORM > row42d.json
diff -q "$SRC/tests/integration/expected/quickstart_explain_row42.json" row42d.json > /dev/null \
  && pass "explain -d --json --no-tui is the expected JSON (--json wins)" || fail "explain -d --json differs"
expect "explain -d of nothing is an error" 1 "no audit trail at" -- "$ELSPETH" explain -d nowhere.lmdb -r 1 --row 1
expect "explain -t of a non-number is a usage error" 2 "--token needs a positive number" -- "$ELSPETH" explain -r 1 -t tok-1

expect "plugins list -t source lists the sources" 0 "Sources:" -- "$ELSPETH" plugins list -t source
"$ELSPETH" plugins list -t source | grep -q "Transforms:" && fail "plugins list -t source lists transforms" \
  || pass "plugins list -t source lists nothing else"
expect "plugins list --type transform includes the aggregations" 0 "batch_stats" -- "$ELSPETH" plugins list --type transform
expect "plugins list -t of an unknown type is a usage error" 2 "got 'gate'" -- "$ELSPETH" plugins list -t gate

# resume -d PATH: the Landscape is PATH, not the settings' landscape.url.
# A slow run (delay, one row at a time) into elsewhere.lmdb, interrupted,
# its Landscape moved; the resume finds it only with -d.
seq 1 300 | sed '1i id' > slow.csv
cat > slow.yaml <<YAML
landscape: {url: "lmdb://./elsewhere.lmdb"}
source: {plugin: csv, on_success: d_in, options: {path: slow.csv, on_validation_failure: discard}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: out, options: {distribution: fixed, ms: 20}}
sinks:
  out: {plugin: csv, options: {path: slowout/out.csv}}
YAML
"$ELSPETH" run -s slow.yaml -x --sequential > slow.out 2>&1 &
pid=$!
started slowout/out.csv
sleep 0.5
kill -INT $pid
wait $pid; rc=$?
[ "$rc" = 3 ] && pass "the slow run is interrupted" || { fail "slow run exit $rc"; cat slow.out; }
mv elsewhere.lmdb moved.lmdb
expect "resume without -d looks at landscape.url" 1 "elsewhere.lmdb" -- "$ELSPETH" resume latest -s slow.yaml
expect "resume -d of nothing is an error" 1 "no audit trail at" -- "$ELSPETH" resume latest -s slow.yaml -d nowhere.lmdb
expect "resume -d is a dry run without -x" 0 "elspeth resume 1 -s slow.yaml -d moved.lmdb --execute" -- \
  "$ELSPETH" resume latest -s slow.yaml -d moved.lmdb
expect "resume -n is not ELSPETH's: a usage error" 2 "bad option '-n'" -- "$ELSPETH" resume latest -s slow.yaml -d moved.lmdb -n
"$ELSPETH" resume latest -s slow.yaml -d moved.lmdb -x -f json --max-rows-in-flight 64 > resumed.json 2> resumed.err
rc=$?
[ "$rc" = 0 ] && grep -q '"event":"run_completed".*"status":"completed"' resumed.json \
  && pass "resume -d -x -f json finishes the run" || { fail "resume -d -x -f json: exit $rc"; cat resumed.err; }
[ "$(wc -l < slowout/out.csv)" = 301 ] && pass "the resumed run wrote every row once" \
  || fail "the resumed sink has $(wc -l < slowout/out.csv) lines"
expect "verify -d -r passes on the resumed run" 0 "verify: OK" -- "$ELSPETH" verify -d moved.lmdb -r 1
[ ! -e elsewhere.lmdb ] && pass "resume -d did not create landscape.url's Landscape" || fail "resume -d created elsewhere.lmdb"

# A damaged trail (Landscape format 3: every value sealed, ADR 0035):
# one bit flipped anywhere in data.mdb, 60 times. verify reads in a child
# process, so damage is a violation (exit 4), never a crash nor exit 1;
# export reads in one too and refuses (exit 1, nothing of the run
# written); explain of the row a damaged key names refuses, saying the
# trail is damaged, or (when the flip was in a key and the row's own
# records are intact) shows exactly the intact story. A flip verify
# passes must change nothing the trail says:
# the export is then the same as the intact trail's.
"$ELSPETH" export -d moved.lmdb -r 1 --sqlite intact.db 2> /dev/null
# The flips corrupt mapped pages on purpose: a reader child that faults
# must die of the signal (the parent reports the damage), which TSan would
# otherwise turn into exit 66 (ASan aborts: a signal too).
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0:handle_sigbus=0" \
python3 - moved.lmdb "$ELSPETH" <<'PY' && pass "damage: 60 flipped bits: each one verify passes changes nothing exported; each other is a violation (exit 4) and export refuses it (exit 1); no crash" || fail "damaged trails"
import os, random, re, shutil, sqlite3, subprocess, sys
src, elspeth = sys.argv[1], sys.argv[2]
T = ("runs", "nodes", "edges", "rows", "tokens", "node_states", "token_outcomes",
     "artifacts", "routing_events", "validation_errors", "transform_errors", "calls")
def dump(db):
    c = sqlite3.connect(db)
    return {t: sorted(map(repr, c.execute(f"select * from {t}").fetchall())) for t in T}
intact = dump("intact.db")
random.seed(11)
codes, damaged, explained = {}, 0, 0
for i in range(60):
    shutil.rmtree("flip.lmdb", ignore_errors=True)
    shutil.copytree(src, "flip.lmdb")
    f = "flip.lmdb/data.mdb"
    b = bytearray(open(f, "rb").read())
    pos = random.randrange(len(b))
    b[pos] ^= 1 << random.randrange(8)
    open(f, "wb").write(b)
    p = subprocess.run([elspeth, "verify", "-d", "flip.lmdb", "-r", "1"], capture_output=True, text=True)
    if os.path.exists("flip.db"):
        os.remove("flip.db")
    x = subprocess.run([elspeth, "export", "-d", "flip.lmdb", "-r", "1", "--sqlite", "flip.db"],
                       capture_output=True, text=True)
    key = (p.returncode, x.returncode)
    codes[key] = codes.get(key, 0) + 1
    if key == (0, 0):
        if dump("flip.db") != intact:
            print(f"byte {pos}: verify OK but the export differs from the intact trail's")
            sys.exit(1)
    elif key != (4, 1):
        print(f"byte {pos}: verify exit {p.returncode}, export exit {x.returncode}: "
              f"{p.stdout[-300:]} {x.stderr[-300:]}")
        sys.exit(1)
    damaged += "VIOLATION: the trail is damaged: run 1" in p.stdout
    # report reads less than verify: it draws the page or refuses with the
    # damage named, never dies of it
    r = subprocess.run([elspeth, "report", "-d", "flip.lmdb", "-r", "1", "-o", "flip.html"],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1) or (r.returncode == 1 and "damaged" not in r.stderr) or \
       (key == (0, 0) and r.returncode):
        print(f"byte {pos}: report exit {r.returncode}: {r.stderr[-300:]}")
        sys.exit(1)
    # explain of a row whose story is damaged says so, not "no row"
    m = re.search(r"table trail, key \(1, (\d+),", p.stdout)
    if m and 1 <= int(m.group(1)) <= 300:
        e = subprocess.run([elspeth, "explain", "-d", "flip.lmdb", "-r", "1", "--row", m.group(1)],
                           capture_output=True, text=True)
        explained += e.returncode == 1
        # exit 0 only when the row's own records are intact: a flip in a
        # key can name a row whose story it is not part of; the story
        # shown must then be the intact trail's, byte for byte
        if e.returncode == 0:
            got = subprocess.run([elspeth, "explain", "-d", "flip.lmdb", "-r", "1", "--row",
                                  m.group(1), "--json"], capture_output=True, text=True).stdout
            want = subprocess.run([elspeth, "explain", "-d", src, "-r", "1", "--row",
                                   m.group(1), "--json"], capture_output=True, text=True).stdout
            if got != want:
                import difflib
                print(f"byte {pos}: explain --row {m.group(1)} exit 0 with a story that differs:")
                print("".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True)))[:40]))
                if os.environ.get("KEEP_DAMAGED"):
                    shutil.copytree("flip.lmdb", os.environ["KEEP_DAMAGED"])
                sys.exit(1)
        elif e.returncode != 1 or "the trail is damaged" not in e.stderr:
            print(f"byte {pos}: explain --row {m.group(1)}: exit {e.returncode}: {e.stderr[-300:]}")
            sys.exit(1)
print(f"# (verify, export) exits {codes}; {damaged} reported as damage; {explained} damaged rows explained as damaged")
sys.exit(0 if damaged else 1)
PY

finish

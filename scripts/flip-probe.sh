#!/usr/bin/env bash
# The damage probe of docs/audit.md "Damage and tampering", by hand (CI
# runs 60 flips in tests/integration/test_landscape.sh): a 2,000-row
# quickstart-like trail, interrupted and resumed (two attempts' stories),
# then FLIPS copies each with one random bit of data.mdb flipped. Each
# copy is read by verify, export, report and explain (of the row verify
# names). Prints how many flips each reader passed or refused, and fails
# on any outcome that would be a lie: verify OK while the export differs
# from the intact trail's, a reader that died of a signal or answered
# with another exit code, explain showing a story that is not the intact
# one. KEEP=DIR keeps each such copy (and the intact trail) in DIR.
#   Usage: scripts/flip-probe.sh [FLIPS] [SEED]   (200, 1)
set -euo pipefail
cd "$(dirname "$0")/.."
FLIPS=${1:-200}
SEED=${2:-1}
E=${ELSPETH:-$PWD/build/elspeth}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
seq 1 2000 | awk 'BEGIN { print "id,amount" } { printf "%d,%d\n", $1, $1 % 97 }' > in.csv
cat > p.yaml <<YAML
landscape: {url: "lmdb://./t.lmdb"}
source: {plugin: csv, on_success: d_in, options: {path: in.csv, on_validation_failure: discard, schema: {mode: fixed, fields: ["id: int", "amount: int"]}}}
transforms:
  - {name: d, plugin: delay, input: d_in, on_success: g_in, options: {distribution: fixed, ms: 5}}
gates:
  - {name: g, input: g_in, condition: "row['amount'] > 50", routes: {'true': high, 'false': low}}
sinks:
  high: {plugin: csv, options: {path: out/high.csv}}
  low: {plugin: csv, options: {path: out/low.csv}}
YAML
"$E" run -s p.yaml -x --max-rows-in-flight 4 > run.log 2>&1 &
pid=$!
sleep 1
kill -INT "$pid" 2>/dev/null || true; wait "$pid" || true
"$E" resume latest -s p.yaml -x > resume.log 2>&1
"$E" verify -s p.yaml | tail -2
"$E" export -d t.lmdb -r 1 --sqlite intact.db 2> /dev/null
python3 - "$E" "$FLIPS" "$SEED" <<'PY'
import os, random, re, shutil, sqlite3, subprocess, sys
E, FLIPS, SEED = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
T = ("runs", "nodes", "edges", "rows", "tokens", "node_states", "token_outcomes",
     "artifacts", "routing_events", "validation_errors", "transform_errors", "calls")
def dump(db):
    c = sqlite3.connect(db)
    return {t: sorted(map(repr, c.execute(f"select * from {t}").fetchall())) for t in T}
def run(*a):
    return subprocess.run([E, *a], capture_output=True, text=True)
intact = dump("intact.db")
random.seed(SEED)
count = {}
def note(k):
    count[k] = count.get(k, 0) + 1
bad = 0
for i in range(FLIPS):
    shutil.rmtree("f.lmdb", ignore_errors=True)
    shutil.copytree("t.lmdb", "f.lmdb")
    b = bytearray(open("f.lmdb/data.mdb", "rb").read())
    pos = random.randrange(len(b))
    b[pos] ^= 1 << random.randrange(8)
    open("f.lmdb/data.mdb", "wb").write(b)
    v = run("verify", "-d", "f.lmdb", "-r", "1")
    if os.path.exists("f.db"):
        os.remove("f.db")
    x = run("export", "-d", "f.lmdb", "-r", "1", "--sqlite", "f.db")
    r = run("report", "-d", "f.lmdb", "-r", "1", "-o", "f.html")
    note(f"verify exit {v.returncode}"); note(f"export exit {x.returncode}")
    note(f"report exit {r.returncode}")
    why = None
    if v.returncode not in (0, 4) or x.returncode not in (0, 1) or r.returncode not in (0, 1):
        why = "a reader's exit code"
    elif v.returncode == 0 and (x.returncode or dump("f.db") != intact):
        why = "verify OK but the export refused or differs"
    elif v.returncode == 4 and x.returncode == 0 and dump("f.db") != intact:
        why = "export exit 0 with a trail that differs"
    m = re.search(r"key \(1, (\d+),", v.stdout)
    if not why and m and 1 <= int(m.group(1)) <= 2000:
        e = run("explain", "-d", "f.lmdb", "-r", "1", "--row", m.group(1), "--json")
        note(f"explain exit {e.returncode}")
        if e.returncode == 0:
            if e.stdout != run("explain", "-d", "t.lmdb", "-r", "1", "--row", m.group(1), "--json").stdout:
                why = "explain exit 0 with a story that differs"
        elif e.returncode != 1 or "damaged" not in e.stderr:
            why = f"explain exit {e.returncode}: {e.stderr[-200:]}"
    if why:
        bad += 1
        print(f"flip at byte {pos}: {why}")
        if os.environ.get("KEEP"):  # the damaged copy and the intact trail
            shutil.copytree("f.lmdb", f"{os.environ['KEEP']}/flip-{pos}.lmdb")
            if not os.path.exists(f"{os.environ['KEEP']}/intact.lmdb"):
                shutil.copytree("t.lmdb", f"{os.environ['KEEP']}/intact.lmdb")
print(f"{FLIPS} flips (seed {SEED}): " + ", ".join(f"{k}: {n}" for k, n in sorted(count.items())))
print(f"lies: {bad}")
sys.exit(1 if bad else 0)
PY

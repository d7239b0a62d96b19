#!/usr/bin/env bash
# Sharded runs (issue 18, docs/scale-out.md): `elspeth shard plan`,
# `elspeth run --manifest M --shard K --execute`, `elspeth merge` and
# `runs`/`explain`/`verify`/`export --manifest`.
#   a. every example pipeline without aggregation (quickstart,
#      error_routing, explode, fork_coalesce, llm_classify against the
#      bundled mock server), on inputs made so that 7 shards all get rows,
#      split into N = 1, 2, 3, 7 shards (run at once), merges to files
#      byte-identical to the unsharded run's. The inputs hold CSV fields
#      with quoted newlines (CRLF and LF), CRLF line ends, a UTF-8 BOM,
#      blank lines, rows failing validation at the shard boundaries (their
#      "line N" is the global line, checked against the generator), a JSONL
#      source with invalid lines, a JSON document source (data_key), CSV
#      with skip_rows and with columns (no header, ';'), a JSON array sink
#      (format: json, indent 2); plus N larger than the rows (empty
#      shards), an empty source, and the aggregation example as 1 shard;
#   b. a shard SIGKILLed at a random moment (by the rows in its part file;
#      round 1 just after its run started, before its first checkpoint;
#      round 4 kills its rerun in turn): merge and verify --manifest refuse
#      it; run again (it finishes from its checkpoint) and merged: identical
#      to the unsharded run. SIGINT: exit 3 naming the command that
#      finishes the shard, rows numbered from the shard's first, merge
#      refuses it as interrupted, run again: identical;
#   c. refusals, each with its exit code and message: merge (and verify,
#      explain) with a shard not run; a tampered (also its CSV header),
#      grown, missing or foreign part of each sink — and then no final
#      file written (shard.h: "refuses ..., nothing written"); a foreign
#      or swapped shard directory; a manifest edited by hand (every
#      command; a whitespace-only edit is the same document); a source
#      changed after the plan (only the shard whose bytes changed; a JSON
#      document: every shard); other settings; an aggregation with
#      --shards 2; a sink with mode: append; no Landscape; --shards 0; a
#      second copy of a running shard; a completed shard run again does
#      nothing (exit 0, no byte changed); the shard from
#      SLURM_ARRAY_TASK_ID / JOB_COMPLETION_INDEX, out of range, missing;
#      --parallel's share; merge run again, after a crashed merge, -f json;
#      the manifest named two ways from the same directory;
#   d. explain --manifest finds rows in their shard and, after the merge,
#      their bytes in the merged file (= the part's, the unsharded file's,
#      the row's own) for CSV, JSONL, quarantined rows and a JSON array
#      with indent; verify --manifest (0, then 4 after a merged file or a
#      part is edited); runs --manifest lists every shard; export
#      --manifest: every shard's rows in the SQLite file, once.
# SHARD_ROWS (default 3000) scales the inputs (sanitizer builds: fewer);
# SHARD_SECTIONS="a c" runs some sections only; SHARD_SEED fixes the kill
# points of b (printed); SHARD_KEEP=1 keeps the working directory.
source "$(dirname "$0")/lib.sh"
[ -z "${SHARD_KEEP:-}" ] || trap 'mock_stop; echo "# kept $WORK"' EXIT
cd "$WORK"
T0=$(date +%s.%N)
R=${SHARD_ROWS:-3000}
SEED=${SHARD_SEED:-$RANDOM}
RANDOM=$SEED
TO="timeout -s KILL 120"
cp -r "$SRC/examples" examples
command -v sqlite3 > /dev/null || { fail "sqlite3 (the CLI) is missing: scripts/install-deps.sh installs it"; finish; exit 1; }

# ------------------------------------------------------------- helpers
show() { sed 's/^/    /' "$@" | head -20; }
nlines() { if [ -f "$1" ]; then wc -l < "$1" | tr -d ' '; else echo 0; fi; }
sanitized() {
  if grep -q "Sanitizer\|runtime error:" "$@" 2>/dev/null; then
    fail "$*: sanitizer report"; grep -h -m5 "Sanitizer\|runtime error:" "$@" | sed 's/^/    /'
  fi
}
# el LOG ARG...: elspeth ARG... under a timeout, its output in LOG; RC.
el() { local log=$1; shift; $TO "$ELSPETH" "$@" > "$log" 2>&1; RC=$?; sanitized "$log"; }
# same_out REF DIR: the same file names, each byte-identical.
same_out() {
  local f bad=
  for f in $(cd "$1" && ls); do cmp -s "$1/$f" "$2/$f" || bad+="$f "; done
  for f in $(cd "$2" && ls); do [ -e "$1/$f" ] || bad+="$f(extra) "; done
  [ -z "$bad" ] || { echo "    differ: $bad"; return 1; }
}
# tree_sum DIR: the SHA-256 of every file under DIR (but LMDB's lock.mdb,
# its reader table, which a read-only open updates).
tree_sum() { (cd "$1" && find . -type f ! -name lock.mdb | sort | xargs -r sha256sum); }
# jget FILE EXPR: a value of the JSON document in FILE (python: d = doc).
jget() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }
# shard_ranges M: "first last" per shard, one line each.
shard_ranges() { python3 -c 'import json, sys
for r in json.load(open(sys.argv[1]))["ranges"]: print(r["first_row"], r["last_row"])' "$1"; }

# plan LABEL SETTINGS N DIR [ARG...]: the plan of N shards in DIR/m.json
# (ELSPETH_OUT_DIR must be the same for the plan, its shards and merge).
plan() {
  local label=$1 s=$2 n=$3 d=$4; shift 4
  mkdir -p "$d"
  el "$d/plan.log" shard plan -s "$s" --shards "$n" -o "$d/m.json" "$@"
  [ $RC = 0 ] && grep -q "Planned $n shards of" "$d/plan.log" ||
    { fail "$label: shard plan --shards $n exits $RC"; show "$d/plan.log"; return 1; }
}
# run_shards LABEL SETTINGS DIR K...: the shards K... at once (each in
# DIR/run-K.log); fails unless each exits 0.
run_shards() {
  local label=$1 s=$2 d=$3 k bad= pids=(); shift 3
  for k in "$@"; do
    $TO "$ELSPETH" run -s "$s" --manifest "$d/m.json" --shard "$k" --execute > "$d/run-$k.log" 2>&1 &
    pids+=("$k:$!")
  done
  for p in "${pids[@]}"; do
    wait "${p#*:}" || bad+="${p%%:*}($?) "
    sanitized "$d/run-${p%%:*}.log"
  done
  [ -z "$bad" ] || { fail "$label: shards $bad failed"; for k in $bad; do show "$d/run-${k%%(*}.log"; done; return 1; }
}
# merge LABEL DIR: merge DIR/m.json, exit 0.
merge() {
  el "$2/merge.log" merge --manifest "$2/m.json"
  [ $RC = 0 ] && grep -q "Merged [0-9]* shards, rows 1\.\." "$2/merge.log" ||
    { fail "$1: merge exits $RC"; show "$2/merge.log"; return 1; }
}
# reference LABEL SETTINGS OUT: the unsharded run (Landscape: ./state).
reference() {
  mkdir -p "$3"
  ELSPETH_OUT_DIR=$3 el "$3.log" run -s "$2" --execute
  [ $RC = 0 ] || { fail "$1: the unsharded run exits $RC"; show "$3.log"; return 1; }
}
# equivalent LABEL SETTINGS "N..." [ALL_FULL]: the unsharded run, then for
# each N: plan, every shard at once, merge; each merged file
# byte-identical to the unsharded run's; verify --manifest OK. ALL_FULL=1:
# every shard of every plan must get rows.
equivalent() {
  local label=$1 s=$2 ns=$3 full=${4:-0} n d rows empty t0=$(date +%s.%N)
  reference "$label" "$s" "$WORK/$label/ref" || return
  for n in $ns; do
    d=$WORK/$label/n$n
    export ELSPETH_OUT_DIR=$d/out
    if plan "$label" "$s" "$n" "$d"; then
      rows=$(jget "$d/m.json" 'd["rows"]')
      empty=$(jget "$d/m.json" 'sum(r["rows"] == 0 for r in d["ranges"])')
      if [ "$full" = 1 ] && [ "$empty" != 0 ]; then fail "$label: $empty of $n shards got no rows ($rows rows)"; fi
      run_shards "$label N=$n" "$s" "$d" $(seq 0 $((n - 1))) && merge "$label N=$n" "$d" &&
        if same_out "$WORK/$label/ref" "$d/out"; then
          pass "$label: N=$n ($rows rows, $empty empty shards) merged byte-identical to the unsharded run ($(ls "$d/out" | tr '\n' ' '))"
        else fail "$label: N=$n merged files differ from the unsharded run's"; fi
      el "$d/verify.log" verify --manifest "$d/m.json"
      [ $RC = 0 ] && grep -q "verify: OK" "$d/verify.log" || { fail "$label: N=$n verify --manifest exits $RC"; show "$d/verify.log"; }
    fi
    unset ELSPETH_OUT_DIR
  done
  echo "    # $label: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}
# settings_from EXAMPLE DATA: the example's settings reading DATA.
settings_from() {
  local src
  src=$(awk '/^    path:/ { print $2; exit }' "examples/$1/settings.yaml")
  sed "s#$src#$2#" "examples/$1/settings.yaml"
}

# The inputs (deterministic): gen.py R DIR.
cat > gen.py <<'PY'
import json, random, sys
R = int(sys.argv[1]); out = sys.argv[2]
rnd = random.Random(18)
def bounds(n):   # the first row of each shard k > 0 of an n-shard plan
    return {R * k // n + 1 for k in range(1, n)}
edge = set().union(*(bounds(n) for n in (2, 3, 7)))
bad = set(edge) | {r - 1 for r in edge} | set(range(5, R + 1, 97))

# quickstart: BOM, CRLF, quoted newlines (CRLF and bare LF inside
# quotes), blank lines, rows failing validation at and before the shard
# boundaries (each on one line, after rows spanning several: its global
# line number is known here).
subjects = ['Invoice shows wrong VAT', 'Cannot upload profile photo, "error 413"',
            'Refund not received', 'Login fails\r\nafter password reset',
            'Outage in EU region\nsince 09:00, "all" users', 'Café menu: naïve résumé ✓',
            'App crashes on startup']
line = 1; qlines = []
with open(f'{out}/qs.csv', 'w', newline='', encoding='utf-8') as f:
    f.write('\ufeffticket_id,customer,subject,priority,amount\r\n'); line += 1
    for i in range(1, R + 1):
        if i % 53 == 0 or i in edge:
            f.write('\r\n'); line += 1
        s = subjects[i % len(subjects)]
        if i + 1 in edge or i in edge:
            s = 'multi\r\nline\nsubject ' + str(i)
        if i in bad:
            s = 'plain'; amount = 'n/a'; qlines.append(line)
        else:
            amount = '%d.%02d' % (rnd.randrange(500), rnd.randrange(100))
        q = '"' + s.replace('"', '""') + '"' if any(c in s for c in ',"\r\n') else s
        rec = f'{i},Customer {rnd.randrange(40)},{q},{rnd.choice(["high", "medium", "low"])},{amount}\r\n'
        f.write(rec); line += rec.count('\n')
open(f'{out}/qs.qlines', 'w').write(''.join(f'line {l}\n' for l in qlines))

# fork_coalesce: LF, quoted commas, quotes and newlines, UTF-8.
texts = ['The checkout page throws a 500 error', 'Export to CSV drops\nthe last column, "sometimes"',
         'Password reset emails, not delivered', 'Typo on the pricing page', 'Über-long ticket ' + 'x' * 40,
         'Search results are not sorted by relevance', 'Zażółć gęślą jaźń']
with open(f'{out}/fc.csv', 'w', newline='', encoding='utf-8') as f:
    f.write('id,priority,text\n')
    for i in range(1, R + 1):
        t = texts[(i * 7) % len(texts)] + f' #{i}'
        if i in edge: t = 'edge\nrow ' + str(i)
        q = '"' + t.replace('"', '""') + '"' if any(c in t for c in ',"\n') else t
        f.write(f'{i},{rnd.choice(["high", "medium", "low"])},{q}\n')

# error_routing: JSON Lines with a BOM, CRLF, blank lines, invalid JSON
# and an "order" that is not an int (both quarantined with their line),
# rows without a note (errors), rows with an extra field (diverted).
line = 0; jq = []
with open(f'{out}/er.jsonl', 'w', newline='', encoding='utf-8') as f:
    f.write('\ufeff')
    for i in range(1, R + 1):
        if i % 41 == 0 or i in edge:
            f.write('\r\n'); line += 1
        line += 1
        o = {'order': i, 'customer': f'c{i % 17}', 'note': texts[i % len(texts)]}
        if i % 11 == 0: del o['note']
        if i % 13 == 0: o['coupon'] = 'SPRING'
        if i in bad and i % 2: o['order'] = 'five'
        if i in bad: jq.append(line)
        if i in bad and not i % 2:
            f.write('{"order": %d, "customer": broken\r\n' % i); continue
        f.write(json.dumps(o, ensure_ascii=False) + '\r\n')
open(f'{out}/er.qlines', 'w').write(''.join(f'line {l}\n' for l in jq))

# explode: a JSON document, the rows under data_key.
fruit = ['apple', 'pear', 'plum', 'fig', 'kiwi', 'Äpfel']
orders = [{'order': i, 'customer': f'c{i % 23}', 'items': [fruit[(i + j) % 6] for j in range(i % 4)]}
          for i in range(1, R + 1)]
with open(f'{out}/ex.json', 'w', encoding='utf-8') as f:
    f.write('{"orders": [\n' + ',\n'.join('  ' + json.dumps(o, ensure_ascii=False) for o in orders) + '\n]}\n')
PY
mkdir -p data
python3 gen.py "$R" data || { fail "gen.py"; finish; exit 1; }
cp data/qs.csv examples/quickstart/data/tickets.csv
cp data/fc.csv examples/fork_coalesce/data/tickets.csv
cp data/er.jsonl examples/error_routing/data/orders.jsonl
cp data/ex.json examples/explode/data/orders.json
# fork_coalesce with a JSON array sink (format: json, indent 2).
sed 's#{plugin: json, options: {path: "${ELSPETH_OUT_DIR:-examples/fork_coalesce/out}/joined.jsonl"}}#{plugin: json, options: {path: "${ELSPETH_OUT_DIR:-x}/joined.json", format: json, indent: 2}}#' \
  examples/fork_coalesce/settings.yaml > fc_array.yaml
grep -q "format: json, indent: 2" fc_array.yaml || fail "fc_array.yaml: the sed found no sink"
# The LLM example: its bundled tickets, at most R of them.
head -n $((R > 1000 ? 1001 : R + 1)) "$SRC/examples/llm_classify/data/tickets.csv" > examples/llm_classify/data/tickets.csv

# ----------------------------------------- a. N shards = one unsharded run
sa() {
  local e
  # The global line numbers of the quarantined rows, as the generator
  # counted them (the merged files are compared with these runs' below).
  equivalent quickstart examples/quickstart/settings.yaml "1 2 3 7" 1
  grep -o '"_error": "line [0-9]*' quickstart/ref/quarantine.jsonl | sed 's/"_error": "//' > qs.got
  if [ -s qs.got ] && cmp -s qs.got data/qs.qlines; then
    pass "quickstart: the $(wc -l < qs.got) quarantined rows (CSV: BOM, CRLF, quoted newlines, blank lines) carry their global line ($(sed -n '$p' qs.got), ...), also after the merge"
  else fail "quickstart: the quarantined rows' lines differ from the file's"; diff qs.got data/qs.qlines | head -5; fi
  equivalent error_routing examples/error_routing/settings.yaml "1 2 3 7" 1
  grep -o '"_error": "line [0-9]*' error_routing/ref/quarantine.jsonl | sed 's/"_error": "//' > er.got
  if [ -s er.got ] && cmp -s er.got data/er.qlines; then
    pass "error_routing: the $(wc -l < er.got) quarantined rows (JSONL: BOM, CRLF, blank lines, invalid JSON) carry their global line ($(sed -n '$p' er.got), ...)"
  else fail "error_routing: the quarantined rows' lines differ from the file's"; diff er.got data/er.qlines | head -5; fi
  for e in quickstart error_routing; do
    [ "$(jget $e/n7/m.json 'd["rows"]')" = "$R" ] && pass "$e: the plan counts $R rows" || fail "$e: the plan counts $(jget $e/n7/m.json 'd["rows"]') rows, want $R"
  done
  equivalent explode examples/explode/settings.yaml "1 2 3 7" 1
  equivalent fork_coalesce examples/fork_coalesce/settings.yaml "1 2 3 7" 1
  # A JSON array sink (format: json, indent 2).
  equivalent fork_coalesce_array fc_array.yaml "2 7" 1
  head -c 2 fork_coalesce_array/ref/joined.json | grep -q '\[' && pass "fork_coalesce_array: the sink is a JSON array" || fail "fork_coalesce_array: joined.json is no array"

  # CSV with lines before its header (skip_rows), and without a header
  # (columns), ';'-separated, CRLF.
  { printf '# exported from the tracker\n"an, unbalanced quote\n'; cat data/fc.csv; } > data/fc_skip.csv
  settings_from fork_coalesce data/fc_skip.csv | sed 's#^    on_validation_failure#    skip_rows: 2\n    on_validation_failure#' > fc_skip.yaml
  equivalent fc_skip fc_skip.yaml "3 7" 1
  python3 - data/fc.csv data/fc_cols.csv <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='', encoding='utf-8')))[1:]
with open(sys.argv[2], 'w', newline='', encoding='utf-8') as f:
    csv.writer(f, delimiter=';', lineterminator='\r\n').writerows(rows)
PY
  settings_from fork_coalesce data/fc_cols.csv |
    sed 's#^    on_validation_failure#    columns: [id, priority, text]\n    delimiter: ";"\n    on_validation_failure#' > fc_cols.yaml
  equivalent fc_cols fc_cols.yaml "3 7" 1
  cmp -s fc_cols/ref/low.csv fork_coalesce/ref/low.csv && cmp -s fc_skip/ref/low.csv fork_coalesce/ref/low.csv &&
    pass "skip_rows, columns: the same rows as the plain file (low.csv)" || fail "skip_rows/columns variants read other rows"

  # More shards than rows: the bundled small inputs (5, 3, 6 rows).
  settings_from error_routing "$SRC/examples/error_routing/data/orders.jsonl" > er_small.yaml
  equivalent er_small er_small.yaml "5 7 12"
  settings_from explode "$SRC/examples/explode/data/orders.json" > ex_small.yaml
  equivalent ex_small ex_small.yaml "7"
  settings_from fork_coalesce "$SRC/examples/fork_coalesce/data/tickets.csv" > fca_small.yaml.in
  sed 's#{plugin: json, options: {path: "${ELSPETH_OUT_DIR:-examples/fork_coalesce/out}/joined.jsonl"}}#{plugin: json, options: {path: "${ELSPETH_OUT_DIR:-x}/joined.json", format: json}}#' \
    fca_small.yaml.in > fca_small.yaml
  equivalent fca_small fca_small.yaml "7"
  [ "$(jget fca_small/n7/m.json 'sum(r["rows"] == 0 for r in d["ranges"])')" = 1 ] &&
    pass "fca_small: 6 rows in 7 shards: one empty shard" || fail "fca_small: want one empty shard"
  # An empty source (a header only; an empty JSONL file).
  head -n 1 "$SRC/examples/quickstart/data/tickets.csv" > data/qs_empty.csv
  settings_from quickstart data/qs_empty.csv > qs_empty.yaml
  equivalent qs_empty qs_empty.yaml "1 3"
  : > data/er_empty.jsonl
  settings_from error_routing data/er_empty.jsonl > er_empty.yaml
  equivalent er_empty er_empty.yaml "2"

  # The LLM example against the mock server (its faults are drawn from
  # each request's hash and attempt: reset before each pass).
  # No concurrency limit: the mock's 429s put the capacity controller's
  # back-off (seconds) into every pass; test_capacity.sh tests those.
  mock_start $(cat examples/llm_classify/mock.args) --latency fixed:1 --max-concurrent 0
  local n d rows
  mock_reset
  if reference llm_classify examples/llm_classify/settings.yaml "$WORK/llm_classify/ref"; then
    for n in 1 2 3 7; do
      d=$WORK/llm_classify/n$n
      export ELSPETH_OUT_DIR=$d/out
      mock_reset
      plan llm_classify examples/llm_classify/settings.yaml $n "$d" &&
        run_shards "llm_classify N=$n" examples/llm_classify/settings.yaml "$d" $(seq 0 $((n - 1))) &&
        merge "llm_classify N=$n" "$d" &&
        if same_out "$WORK/llm_classify/ref" "$d/out"; then
          pass "llm_classify: N=$n ($(jget "$d/m.json" 'd["rows"]') rows, each shard $(jget "$d/m.json" 'd["capacity_share"]') of pool_size) merged byte-identical to the unsharded run"
        else fail "llm_classify: N=$n merged files differ"; fi
      unset ELSPETH_OUT_DIR
    done
  fi
  mock_stop
}

# ------------------------------------------------ the slow pipeline (b, c)
# KR rows: a delay (1-3 ms, seeded) -> gate: amount > 250 to a JSON array,
# the rest to a CSV file; rows failing validation to quarantine.jsonl.
KR=$(( R < 1200 ? R : 1200 ))
python3 - "$KR" <<'PY'
import sys
n = int(sys.argv[1])
with open('slow.csv', 'w') as f:
    f.write('id,region,amount,text\n')
    for i in range(1, n + 1):
        amount = 'bad' if i % 89 == 0 else '%d.%02d' % (i * 7919 % 500, i % 100)
        f.write(f'{i},{["north", "south", "east"][i % 3]},{amount},"row {i}, ""quoted""\nsecond line"\n')
PY
slow_yaml() { # slow_yaml CKPT_INTERVAL [EXTRA SINK OPTIONS]
  local extra=${2:-}
  cat <<YAML
source:
  plugin: csv
  on_success: work_in
  options:
    path: slow.csv
    schema: {mode: fixed, fields: ["id: int", "region: str", "amount: float", "text: str"]}
    on_validation_failure: quarantine
transforms:
  - {name: work, plugin: delay, input: work_in, on_success: route_in, options: {distribution: uniform, min_ms: "\${SLOW_MIN:-1}", max_ms: "\${SLOW_MAX:-3}", seed: 7}}
gates:
  - {name: route, input: route_in, condition: "row['amount'] > 250", routes: {'true': big, 'false': small}}
sinks:
  big: {plugin: json, options: {path: "\${OUT:-out}/big.json", format: json$extra}}
  small: {plugin: csv, options: {path: "\${OUT:-out}/small.csv"}}
  quarantine: {plugin: json, options: {path: "\${OUT:-out}/quarantine.jsonl"}}
concurrency: {pipelining: {max_rows_in_flight: 8}}
checkpoint: {frequency: every_n, checkpoint_interval: $1}
YAML
}
slow_yaml 10 > slow.yaml
SLOW_REF=0
slow_ref() {
  [ "$SLOW_REF" = 1 ] && return
  OUT=$WORK/slowref el slowref.log run -s slow.yaml --execute
  [ $RC = 0 ] && [ -s slowref/big.json ] && [ -s slowref/small.csv ] && [ -s slowref/quarantine.jsonl ] &&
    { SLOW_REF=1; return; }
  fail "slow pipeline: the unsharded run exits $RC"; show slowref.log
}
# part D K NAME: shard K's part file of the sink file NAME.
part() { ls "$1"/m.d/shard-$(printf %04d "$2")/parts/*-"$3" 2>/dev/null | head -1; }
# start_shard D K [ARG...]: shard K of D/m.json (slow.yaml) in the
# background (no timeout wrapper: BG is elspeth itself, for kill); BG.
start_shard() {
  local d=$1 k=$2; shift 2
  "$ELSPETH" run -s slow.yaml --manifest "$d/m.json" --shard "$k" --execute "$@" > "$d/bg-$k.log" 2>&1 &
  BG=$!
}
# kill_at D K WHAT: SIGKILLs BG once shard K's small.csv part holds WHAT
# lines ("start": as soon as its run is recorded); BGRC.
kill_at() {
  local d=$1 k=$2 want=$3 i p lock
  lock=$d/m.d/shard-$(printf %04d "$k")/landscape/run-1.lock
  for i in $(seq 1 20000); do
    kill -0 "$BG" 2>/dev/null || break
    if [ "$want" = start ]; then [ -e "$lock" ] && break
    else p=$(part "$d" "$k" small.csv); [ -n "$p" ] && [ "$(nlines "$p")" -ge "$want" ] && break; fi
    sleep 0.003
  done
  kill -KILL "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; BGRC=$?
  sanitized "$d/bg-$k.log"
}

# ------------------------------------------------ b. SIGKILL and resume
sb() {
  slow_ref
  export OUT=$WORK/b/out
  local round d k rows last want n1 first try
  echo "# SHARD_SEED=$SEED"
  for round in 1 2 3 4; do
    d=$WORK/b/r$round; rm -rf "$d" "$OUT"
    plan kill slow.yaml 3 "$d" || continue
    k=$(( (round - 1) % 3 ))
    read -r first last < <(shard_ranges "$d/m.json" | sed -n "$((k + 1))p")
    rows=$((last - first + 1))
    # Round 1: as soon as the run started (before its first checkpoint);
    # then a random point of the shard's rows (small.csv holds about half
    # of them, two lines each). A kill that comes too late on a loaded
    # machine (the shard ended) is tried again, earlier.
    if [ $round = 1 ]; then want=start; else want=$(( 20 + RANDOM % (rows * 2 / 3) )); fi
    for try in 1 2 3; do
      rm -rf "$d/m.d"
      start_shard "$d" $k
      kill_at "$d" $k $want
      [ "$BGRC" = 137 ] && break
      echo "    # kill round $round: shard $k not killed at '$want' (exit $BGRC): again, earlier"
      [ $want = start ] || want=$((want / 3))
    done
    n1=$(nlines "$(part "$d" $k small.csv)")
    if [ "$BGRC" != 137 ]; then
      fail "kill round $round: shard $k was not killed mid-run at $want (exit $BGRC)"; show "$d/bg-$k.log"; continue
    fi
    # The interrupted shard is refused by the merge (after the others ran).
    run_shards "kill round $round" slow.yaml "$d" $(seq 0 2 | grep -vx $k) || continue
    el "$d/refuse.log" merge --manifest "$d/m.json"
    [ $RC = 1 ] && grep -qE "shard $k: its run 1 is running, not completed|shard $k: its Landscape holds no run" "$d/refuse.log" &&
      grep -qF -- "--shard $k --execute" "$d/refuse.log" && [ ! -e "$OUT/big.json" ] &&
      pass "kill round $round: merge refuses the killed shard $k (exit 1, names the command that finishes it)" ||
      { fail "kill round $round: merge with shard $k killed exits $RC"; show "$d/refuse.log"; }
    el "$d/verify-killed.log" verify --manifest "$d/m.json"
    [ $RC = 4 ] && grep -q "VIOLATION: shard $k: " "$d/verify-killed.log" &&
      pass "kill round $round: verify --manifest exits 4 naming shard $k" ||
      { fail "kill round $round: verify --manifest with shard $k killed exits $RC"; show "$d/verify-killed.log"; }
    if [ $round = 4 ]; then # the resume killed in turn
      start_shard "$d" $k
      kill_at "$d" $k $(( n1 + 1 + RANDOM % (rows / 4) ))
      [ "$BGRC" = 137 ] && pass "kill round $round: the rerun of shard $k killed in turn" ||
        echo "    # kill round $round: the rerun was not killed (exit $BGRC)"
    fi
    el "$d/rerun.log" run -s slow.yaml --manifest "$d/m.json" --shard $k --execute
    # (Round 4's rerun may have finished before its kill came: then this
    # run finds the shard completed, and says so.)
    [ $RC = 0 ] && grep -qE "Run completed|already completed \(run 1" "$d/rerun.log" ||
      { fail "kill round $round: shard $k killed at '$want' ($n1 rows out) then run again exits $RC"; show "$d/rerun.log"; continue; }
    grep -q "finishing its run 1 from its checkpoint" "$d/rerun.log" && echo "    # round $round: shard $k killed at '$want' ($n1 small rows out), resumed from its checkpoint" ||
      echo "    # round $round: shard $k killed at '$want' ($n1 small rows out), run again from its start"
    merge "kill round $round" "$d" &&
      if same_out slowref "$OUT"; then pass "kill round $round: shard $k SIGKILLed at '$want', run again, merged: identical to the unsharded run"
      else fail "kill round $round: merged files differ from the unsharded run's"; fi
    el "$d/verify.log" verify --manifest "$d/m.json"
    [ $RC = 0 ] || { fail "kill round $round: verify --manifest exits $RC"; show "$d/verify.log"; }
  done

  # SIGINT: shard 1 stops (exit 3) naming the command that finishes it;
  # the merge refuses it as interrupted; `runs` says so; run again, merged.
  # Slower rows here (15-25 ms, 8 in flight: about 1 s a shard), so that
  # the signal lands mid-run however fast the machine polls.
  d=$WORK/b/int; rm -rf "$d" "$OUT"
  export SLOW_MIN=15 SLOW_MAX=25
  plan sigint slow.yaml 3 "$d" && run_shards sigint slow.yaml "$d" 0 2 || { unset OUT SLOW_MIN SLOW_MAX; return; }
  read -r first last < <(shard_ranges "$d/m.json" | sed -n 2p)
  want=$((20 + RANDOM % 200))
  for try in 1 2 3; do
    rm -rf "$d/m.d/shard-0001"
    start_shard "$d" 1
    for i in $(seq 1 20000); do
      kill -0 "$BG" 2>/dev/null || break
      [ "$(nlines "$(part "$d" 1 small.csv)")" -ge $want ] && break
      sleep 0.003
    done
    kill -INT "$BG" 2>/dev/null; wait "$BG"; BGRC=$?
    sanitized "$d/bg-1.log"
    [ $BGRC = 3 ] && break
    want=$((want / 3))
  done
  if [ $BGRC = 3 ] && grep -qF "To finish the shard:" "$d/bg-1.log" &&
     grep -qF "elspeth run -s slow.yaml --manifest $d/m.json --shard 1 --execute" "$d/bg-1.log"; then
    pass "SIGINT: shard 1 exits 3 naming the command that finishes it"
  else fail "SIGINT: shard 1 exits $BGRC"; show "$d/bg-1.log"; fi
  # Its rows are numbered as in the whole run ($first..$last).
  grep -qE "stopped after row [0-9]+; sinks hold rows $first\.\." "$d/bg-1.log" &&
    pass "SIGINT: the stop message counts shard 1's rows from its first ($first)" ||
    { fail "SIGINT: the stop message of shard 1 (rows $first..$last) does not number its rows from $first"; grep -m1 "stopped after" "$d/bg-1.log" | sed 's/^/    /'; }
  el "$d/refuse.log" merge --manifest "$d/m.json"
  refused "SIGINT: merge with shard 1 interrupted" 1 "shard 1: its run 1 is interrupted, not completed" "$d/refuse.log"
  el "$d/runs.log" runs --manifest "$d/m.json"
  grep -qE '^ +1 .* interrupted ' "$d/runs.log" && pass "SIGINT: runs --manifest says shard 1 is interrupted" ||
    { fail "SIGINT: runs --manifest"; show "$d/runs.log"; }
  el "$d/rerun.log" run -s slow.yaml --manifest "$d/m.json" --shard 1 --execute
  [ $RC = 0 ] && grep -q "finishing its run 1 from its checkpoint" "$d/rerun.log" && merge sigint "$d" && same_out slowref "$OUT" &&
    pass "SIGINT: shard 1 run again finishes from its checkpoint; merged: identical to the unsharded run" ||
    { fail "SIGINT: run again / merge (exit $RC)"; show "$d/rerun.log"; }
  unset OUT SLOW_MIN SLOW_MAX
}

# ------------------------------------------------------------ c. refusals
# refused NAME CODE NEEDLE LOG: the last el's RC is CODE and LOG holds NEEDLE.
refused() {
  if [ "$RC" = "$2" ] && grep -qF -- "$3" "$4"; then pass "$1: exit $2, '$(grep -m1 -E 'error|VIOLATION' "$4" | cut -c1-150)'"
  else fail "$1: exit $RC (want $2), message wants '$3'"; show "$4"; fi
}
sc() {
  slow_ref
  local d=$WORK/c/a o=$WORK/c/a/out before after p
  # Fast: the same pipeline without its delay.
  sed 's/min_ms: "${SLOW_MIN:-1}", max_ms: "${SLOW_MAX:-3}"/min_ms: 0, max_ms: 0/' slow.yaml > fast.yaml
  OUT=$WORK/c/fastref el c-ref.log run -s fast.yaml --execute
  export OUT=$o
  plan refusals fast.yaml 3 "$d" || return
  run_shards refusals fast.yaml "$d" 0 2 || return
  el "$d/m1.log" merge --manifest "$d/m.json"
  refused "merge with shard 1 not run" 1 "shard 1 has not run" "$d/m1.log"
  grep -qF "elspeth run -s fast.yaml --manifest $d/m.json --shard 1 --execute" "$d/m1.log" &&
    pass "merge with shard 1 not run: names the command that runs it" || fail "merge with shard 1 not run: no command to run it"
  [ ! -e "$o" ] || [ -z "$(ls "$o")" ] && pass "merge with shard 1 not run: no final file written" || fail "merge with shard 1 not run: wrote $(ls "$o")"
  el "$d/v1.log" verify --manifest "$d/m.json"
  refused "verify --manifest with shard 1 not run" 4 "shard 1 has not run" "$d/v1.log"
  el "$d/e1.log" explain --manifest "$d/m.json" --row "$(jget "$d/m.json" 'd["ranges"][1]["first_row"]')"
  refused "explain --manifest of a row of shard 1 (not run)" 1 "shard 1 has not run" "$d/e1.log"
  el "$d/e0.log" explain --manifest "$d/m.json" --row 1 --json
  [ $RC = 0 ] && [ "$(jget "$d/e0.log" 'd["shard"]["index"]')" = 0 ] && ! grep -q '"final"' "$d/e0.log" &&
    pass "explain --manifest --row 1 before the merge: shard 0, no merged bytes yet" || { fail "explain before the merge"; show "$d/e0.log"; }
  el "$d/runs1.log" runs --manifest "$d/m.json"
  grep -qE '^ +1 .*not run' "$d/runs1.log" && grep -qE '^ +2 .*completed' "$d/runs1.log" &&
    pass "runs --manifest: shard 1 'not run', shard 2 completed" || { fail "runs --manifest before shard 1 ran"; show "$d/runs1.log"; }

  # The shard from the scheduler's index; out of range; not a number.
  SLURM_ARRAY_TASK_ID=1 el "$d/slurm.log" run -s fast.yaml --manifest "$d/m.json" --execute
  [ $RC = 0 ] && grep -q "audit: shard 1's run 1" "$d/slurm.log" && pass "run --manifest: the shard from SLURM_ARRAY_TASK_ID" ||
    { fail "run with SLURM_ARRAY_TASK_ID=1 exits $RC"; show "$d/slurm.log"; }
  JOB_COMPLETION_INDEX=2 el "$d/k8s.log" run -s fast.yaml --manifest "$d/m.json" --execute
  refused "run --manifest: JOB_COMPLETION_INDEX=2, a completed shard, does nothing" 0 "Shard 2 of $d/m.json already completed" "$d/k8s.log"
  el "$d/range.log" run -s fast.yaml --manifest "$d/m.json" --shard 3 --execute
  refused "run --shard 3 of 3 shards" 2 "has shards 0..2" "$d/range.log"
  SLURM_ARRAY_TASK_ID=x el "$d/nan.log" run -s fast.yaml --manifest "$d/m.json" --execute
  refused "SLURM_ARRAY_TASK_ID=x" 2 "not a shard number" "$d/nan.log"
  env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX $TO "$ELSPETH" run -s fast.yaml --manifest "$d/m.json" --execute > "$d/none.log" 2>&1; RC=$?
  refused "run --manifest without --shard or an array index" 2 "which shard?" "$d/none.log"

  # A completed shard run again: nothing done, no byte changed.
  before=$(tree_sum "$d/m.d/shard-0000")
  el "$d/again.log" run -s fast.yaml --manifest "$d/m.json" --shard 0 --execute
  after=$(tree_sum "$d/m.d/shard-0000")
  [ $RC = 0 ] && grep -q "already completed" "$d/again.log" && [ "$before" = "$after" ] &&
    pass "a completed shard run again: exit 0, 'already completed', no byte of its Landscape or parts changed" ||
    { fail "a completed shard run again: exit $RC, files $([ "$before" = "$after" ] && echo unchanged || echo CHANGED)"; show "$d/again.log"; }

  # Settings other than the plan's (the output directory differs).
  OUT=$WORK/c/elsewhere el "$d/set.log" run -s fast.yaml --manifest "$d/m.json" --shard 0 --execute
  refused "a shard run with other settings (OUT changed)" 1 "the settings differ from those" "$d/set.log"
  OUT=$WORK/c/elsewhere el "$d/set2.log" merge --manifest "$d/m.json"
  refused "merge with other settings (OUT changed)" 1 "the settings differ from those" "$d/set2.log"

  # A good merge; then each refusal below starts from its shards (a saved
  # copy of the plan's directory put back) and no merged file yet.
  merge refusals "$d" || return
  same_out c/fastref "$o" && pass "refusals: the good merge is identical to the unsharded run" || fail "refusals: merge differs"
  local good
  good=$(tree_sum "$o")
  el "$d/again-merge.log" merge --manifest "$d/m.json"
  [ $RC = 0 ] && [ "$(tree_sum "$o")" = "$good" ] && [ -z "$(ls "$o" | grep merging)" ] &&
    pass "merge run again: exit 0, the same bytes" || { fail "merge run again: exit $RC or other bytes"; show "$d/again-merge.log"; }
  el "$d/merge.json.out" merge --manifest "$d/m.json" -f json
  [ $RC = 0 ] && [ "$(jget "$d/merge.json.out" '" ".join("%s:%d" % (s["sink"], len(s["parts"])) for s in d["sinks"])')" = "big:3 small:3 quarantine:3" ] &&
    cmp -s <(jget "$d/merge.json.out" 'json.dumps(d, sort_keys=True)') <(jget "$d/m.d/merge.json" 'json.dumps(d, sort_keys=True)') &&
    [ "$(tree_sum "$o")" = "$good" ] && pass "merge -f json: merge.json's document (3 sinks of 3 parts), the same bytes again" ||
    { fail "merge -f json: exit $RC"; show "$d/merge.json.out"; }
  : > "$o/big.json.merging"
  el "$d/stale.log" merge --manifest "$d/m.json"
  [ $RC = 0 ] && [ "$(tree_sum "$o")" = "$good" ] && pass "merge after a crashed merge (a stale .merging file): the same bytes, the leftover gone" ||
    { fail "merge over a stale .merging file: exit $RC"; show "$d/stale.log"; ls "$o"; }

  # Tampered, missing and foreign parts: the Landscapes name the parts by
  # path, so the originals are edited in place, then restored.
  local s k=1 saved=$WORK/c/saved
  rm -rf "$saved"; cp -a "$d/m.d" "$saved"
  restore() { rm -rf "$d/m.d"; cp -a "$saved" "$d/m.d"; rm -rf "$o"; }
  for s in big.json small.csv quarantine.jsonl; do
    restore
    p=$(part "$d" $k $s)
    # One byte in the middle of the part changed (its size kept).
    python3 - "$p" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); i = len(b) // 2
b[i] = ord('Z') if b[i] != ord('Z') else ord('Y'); open(sys.argv[1], 'wb').write(bytes(b))
PY
    el "$d/tamper.log" merge --manifest "$d/m.json"
    refused "a tampered part ($s of shard $k, one byte)" 1 "shard $k: " "$d/tamper.log"
    grep -qF "$p" "$d/tamper.log" && pass "a tampered part ($s): the message names the part" || fail "a tampered part ($s): the message does not name $p"
    [ ! -e "$o" ] || [ -z "$(ls "$o")" ] && pass "a tampered part ($s): nothing written (the contract: refuses, nothing written)" ||
      fail "a tampered part ($s): the refused merge wrote $(ls "$o" | tr '\n' ' ')"
    restore
    rm -f "$(part "$d" $k $s)"
    el "$d/missing.log" merge --manifest "$d/m.json"
    refused "a missing part ($s of shard $k)" 1 "shard $k" "$d/missing.log"
    grep -q "$s" "$d/missing.log" && pass "a missing part ($s): the message names it" || fail "a missing part ($s): the message does not name the file"
    [ ! -e "$o" ] || [ -z "$(ls "$o")" ] && pass "a missing part ($s): nothing written" ||
      fail "a missing part ($s): the refused merge wrote $(ls "$o" | tr '\n' ' ')"
  done
  # A tampered header: the CSV part of shard 2 (not the first with rows).
  restore
  p=$(part "$d" 2 small.csv); sed -i '1s/^id,/iD,/' "$p"
  el "$d/head.log" merge --manifest "$d/m.json"
  # (its size kept: refused as a part not what its run wrote, not blamed
  # on the rows' fields)
  refused "a tampered part (the CSV header of shard 2)" 1 "$p is not what its run wrote" "$d/head.log"
  # A part grown by a row (appended).
  restore
  p=$(part "$d" 1 small.csv); echo '9999,north,1.0,extra' >> "$p"
  el "$d/grown.log" merge --manifest "$d/m.json"
  refused "a part grown by a row" 1 "$p" "$d/grown.log"

  # Foreign: another plan (4 shards) of the same pipeline.
  local f=$WORK/c/f
  plan foreign fast.yaml 4 "$f" && run_shards foreign fast.yaml "$f" 1 || return
  restore
  rm -rf "$d/m.d/shard-0001"; cp -a "$f/m.d/shard-0001" "$d/m.d/shard-0001"
  el "$d/foreign.log" merge --manifest "$d/m.json"
  refused "a foreign shard directory (shard 1 of a 4-shard plan)" 1 "is not shard 1 of this plan" "$d/foreign.log"
  el "$d/foreign-run.log" run -s fast.yaml --manifest "$d/m.json" --shard 1 --execute
  refused "run --shard 1 over a foreign shard directory" 1 "holds a run of another plan or shard" "$d/foreign-run.log"
  el "$d/foreign-v.log" verify --manifest "$d/m.json"
  refused "verify --manifest with a foreign shard directory" 4 "not shard 1 of this plan" "$d/foreign-v.log"
  # A foreign part file: the same name, from the other plan's shard 1.
  restore
  cp "$(part "$f" 1 small.csv)" "$(part "$d" 1 small.csv)"
  el "$d/foreign-part.log" merge --manifest "$d/m.json"
  refused "a foreign part file (small.csv of the 4-shard plan's shard 1)" 1 "$(part "$d" 1 small.csv)" "$d/foreign-part.log"
  [ ! -e "$o" ] || [ -z "$(ls "$o")" ] && pass "a foreign part: nothing written" || fail "a foreign part: the refused merge wrote $(ls "$o" | tr '\n' ' ')"
  # Shards swapped (shard 0's directory as shard 2's).
  restore
  rm -rf "$d/m.d/shard-0002"; cp -a "$saved/shard-0000" "$d/m.d/shard-0002"
  el "$d/swap.log" merge --manifest "$d/m.json"
  refused "shard 0's directory copied as shard 2's" 1 "is not shard 2 of this plan" "$d/swap.log"
  restore
  merge "refusals, restored" "$d" && same_out c/fastref "$o" && pass "after the refusals the merge is identical again" || fail "after the refusals: merge differs"

  # The manifest edited by hand: a shard's range moved by one row (the
  # ranges still cover every row), one hex digit of a hash, a key.
  local m2=$WORK/c/e/m.json cmd
  for edit in whitespace ranges sha key; do
    mkdir -p "$WORK/c/e"; rm -rf "$WORK/c/e/m.d"; cp -a "$d/m.d" "$WORK/c/e/m.d"
    python3 - "$d/m.json" "$m2" "$edit" <<'PY'
import json, sys, re
src, dst, edit = sys.argv[1:]
t = open(src).read()
if edit == 'ranges':      # shard 0 one row shorter, shard 1 one longer
    d = json.loads(t); r = d['ranges']
    r[0]['last_row'] -= 1; r[1]['first_row'] -= 1; r[0]['rows'] -= 1; r[1]['rows'] += 1
    t = json.dumps(d, indent=2) + '\n'
elif edit == 'sha':
    i = t.index('"sha256": "') + 11; t = t[:i] + ('0' if t[i] != '0' else '1') + t[i + 1:]
elif edit == 'key':
    t = t.replace('"parallel": 3', '"parallel": 1')
else:                     # whitespace only: the same document
    t = re.sub(r'"last_row": (\d+),', r'"last_row": \1 ,', t, count=1)
open(dst, 'w').write(t)
PY
    if [ $edit = whitespace ]; then
      el "$WORK/c/e/ws.log" runs --manifest "$m2"
      [ $RC = 0 ] && pass "manifest with a whitespace edit (the same JSON): still read" || { fail "a whitespace edit refused"; show "$WORK/c/e/ws.log"; }
      continue
    fi
    for cmd in "run -s fast.yaml --manifest $m2 --shard 0 --execute" "merge --manifest $m2" \
               "runs --manifest $m2" "explain --manifest $m2 --row 1" "verify --manifest $m2" \
               "export --manifest $m2 --sqlite $WORK/c/e/x.db"; do
      # shellcheck disable=SC2086
      el "$WORK/c/e/cmd.log" $cmd
      refused "manifest edited ($edit): ${cmd%% *}" 1 "the manifest was edited since the plan wrote it" "$WORK/c/e/cmd.log"
    done
  done

  # The source changed after the plan.
  local sd=$WORK/c/src
  mkdir -p "$sd"; cp slow.csv "$sd/in.csv"
  sed "s#path: slow.csv#path: $sd/in.csv#" fast.yaml > "$sd/p.yaml"
  plan source "$sd/p.yaml" 3 "$sd" || return
  # One byte of shard 2's range changed (the size kept).
  python3 - "$sd/in.csv" "$(jget "$sd/m.json" 'd["ranges"][2]["offset"]')" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); i = int(sys.argv[2]) + 3
b[i] = ord('7') if b[i] != ord('7') else ord('8'); open(sys.argv[1], 'wb').write(bytes(b))
PY
  el "$sd/r2.log" run -s "$sd/p.yaml" --manifest "$sd/m.json" --shard 2 --execute
  refused "a source byte of shard 2's range changed: shard 2" 1 "changed since \`elspeth shard plan\` (bytes" "$sd/r2.log"
  el "$sd/r0.log" run -s "$sd/p.yaml" --manifest "$sd/m.json" --shard 0 --execute
  [ $RC = 0 ] && pass "a source byte of shard 2's range changed: shard 0 (its bytes unchanged) still runs" ||
    { fail "shard 0 after shard 2's bytes changed: exit $RC"; show "$sd/r0.log"; }
  echo '9999,north,1.0,appended' >> "$sd/in.csv"
  el "$sd/r1.log" run -s "$sd/p.yaml" --manifest "$sd/m.json" --shard 1 --execute
  refused "a row appended to the source after the plan" 1 "it changed since \`elspeth shard plan\`" "$sd/r1.log"
  # A JSON document source: any byte.
  mkdir -p "$WORK/c/js"; cp data/ex.json "$WORK/c/js/in.json"
  settings_from explode "$WORK/c/js/in.json" > "$WORK/c/js/p.yaml"
  export ELSPETH_OUT_DIR=$WORK/c/js/out
  plan json-source "$WORK/c/js/p.yaml" 2 "$WORK/c/js"
  sed -i '0,/apple/s//APPLE/' "$WORK/c/js/in.json"
  el "$WORK/c/js/r.log" run -s "$WORK/c/js/p.yaml" --manifest "$WORK/c/js/m.json" --shard 1 --execute
  unset ELSPETH_OUT_DIR
  refused "a JSON document source changed after the plan" 1 "changed since \`elspeth shard plan\` (its SHA-256 differs)" "$WORK/c/js/r.log"

  # What cannot be sharded, refused by the plan.
  ELSPETH_OUT_DIR=$WORK/c/agg el "$WORK/c/agg.log" shard plan -s examples/batch_aggregation/settings.yaml --shards 2 -o "$WORK/c/agg.json"
  refused "shard plan of an aggregation with --shards 2" 1 "aggregation 'stats': its batches would be cut at shard boundaries" "$WORK/c/agg.log"
  grep -q -- "--shards 1" "$WORK/c/agg.log" && [ ! -e "$WORK/c/agg.json" ] && pass "aggregation refused: says --shards 1, no manifest written" ||
    fail "aggregation refused: no mention of --shards 1, or a manifest was written"
  equivalent batch_aggregation examples/batch_aggregation/settings.yaml "1"
  slow_yaml 20 ", mode: append" | sed 's#format: json, mode: append#format: jsonl, mode: append#' > append.yaml
  el "$WORK/c/append.log" shard plan -s append.yaml --shards 2 -o "$WORK/c/append.json"
  refused "shard plan of a sink with mode: append" 1 "sink 'big': mode: append cannot be sharded" "$WORK/c/append.log"
  { slow_yaml 20; echo "landscape: {enabled: false}"; } > nolandscape.yaml
  el "$WORK/c/nol.log" shard plan -s nolandscape.yaml --shards 2 -o "$WORK/c/nol.json"
  refused "shard plan without the Landscape" 1 "needs the Landscape" "$WORK/c/nol.log"
  el "$WORK/c/par.log" shard plan -s fast.yaml --shards 8 --parallel 2 -o "$WORK/c/par.json"
  [ $RC = 0 ] && [ "$(jget "$WORK/c/par.json" 'd["parallel"], d["capacity_share"], d["shards"]')" = "2 0.5 8" ] &&
    grep -q "each shard takes 0.5 of every rate limit and pool_size (2 at once)" "$WORK/c/par.log" &&
    pass "shard plan --shards 8 --parallel 2: each shard takes half of every rate limit" || { fail "shard plan --parallel 2"; show "$WORK/c/par.log"; }
  el "$WORK/c/zero.log" shard plan -s fast.yaml --shards 0 -o "$WORK/c/zero.json"
  refused "shard plan --shards 0" 2 "--shards needs a number" "$WORK/c/zero.log"

  # One directory (docs/scale-out.md: every command from the same one),
  # the manifest named in two ways: the shards with a relative path, the
  # merge and explain with an absolute one.
  local w=$WORK/c/wd
  mkdir -p "$w"
  cp fast.yaml slow.csv "$w/"
  (cd "$w" && OUT=out $TO "$ELSPETH" shard plan -s fast.yaml --shards 2 -o m.json > plan.log 2>&1 &&
   OUT=out $TO "$ELSPETH" run --manifest m.json --shard 0 --execute > r0.log 2>&1 &&
   OUT=out $TO "$ELSPETH" run --manifest ./m.json --shard 1 --execute > r1.log 2>&1) ||
    { fail "the manifest named two ways: plan or shards failed"; show "$w/plan.log" "$w/r0.log" "$w/r1.log"; }
  (cd "$w" && OUT=out $TO "$ELSPETH" merge --manifest "$w/m.json" > merge.log 2>&1); RC=$?
  [ $RC = 0 ] && same_out c/fastref "$w/out" && pass "shards run with --manifest m.json and ./m.json, merged with $w/m.json: identical" ||
    { fail "the manifest named two ways: merge exits $RC"; show "$w/merge.log"; }
  (cd "$w" && $TO "$ELSPETH" explain --manifest "$w/m.json" --row 1000 --json > explain.json 2>&1); RC=$?
  [ $RC = 0 ] && [ "$(jget "$w/explain.json" 'd["shard"]["index"], all("final" in t["artifact"] for t in d["tokens"] if isinstance(t.get("artifact"), dict))')" = "1 True" ] &&
    pass "explain --manifest with the other name: row 1000 in shard 1, its merged bytes given" || { fail "explain --manifest (absolute path)"; show "$w/explain.json"; }

  # A second copy of a running shard.
  local r=$WORK/c/run2
  export OUT=$r/out
  plan second slow.yaml 2 "$r" || return
  start_shard "$r" 0 --sequential
  for p in $(seq 1 2000); do [ -n "$(part "$r" 0 small.csv)" ] && break; sleep 0.005; done
  el "$r/second.log" run -s slow.yaml --manifest "$r/m.json" --shard 0 --execute
  kill -0 "$BG" 2>/dev/null && local alive=1 || local alive=0
  refused "a second copy of a running shard" 1 "shard 0 is being run by another process" "$r/second.log"
  [ $alive = 1 ] || echo "    # the first copy had ended before the second started (a loaded machine?)"
  wait "$BG"; local rc1=$?
  run_shards second slow.yaml "$r" 1
  [ $rc1 = 0 ] && merge second "$r" && same_out slowref "$OUT" &&
    pass "a second copy of a running shard: the first finishes, the merge is identical" ||
    { fail "a second copy of a running shard: first exit $rc1"; show "$r/bg-0.log"; }
  unset OUT
}

# ---------------------------- d. explain, verify, runs, export --manifest
# explained LABEL DIR REF ROWS PATTERN...: explain --manifest DIR/m.json
# --row R --json for each of ROWS: the row is found in the shard whose
# range holds it, and each artifact's bytes in the merged file (its
# "final" range) are the part's bytes, the unsharded run's file's at the
# same offset, and the row's own (one PATTERN, "{row}" its number, found
# in them; "^": at their start).
explained() {
  local label=$1 d=$2 ref=$3 rows=$4 bad=0 checked=0 row verdict; shift 4
  for row in $rows; do
    el "$d/explain.json" explain --manifest "$d/m.json" --row "$row" --json
    [ $RC = 0 ] || { fail "$label: explain --manifest --row $row exits $RC"; show "$d/explain.json"; bad=1; continue; }
    verdict=$(python3 - "$d/explain.json" "$d/m.json" "$row" "$ref" "$@" <<'PY'
import json, sys, os
doc = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2])); row = int(sys.argv[3]); ref = sys.argv[4]
pats = [p.replace("{row}", str(row)) for p in sys.argv[5:]]
want = [r["shard"] for r in m["ranges"] if r["first_row"] <= row <= r["last_row"]][0]
if doc["shard"]["index"] != want: print("shard", doc["shard"]["index"], "want", want); sys.exit()
arts = [t["artifact"] for t in doc["tokens"] if isinstance(t.get("artifact"), dict)]
if not arts: print("no artifact"); sys.exit()
for a in arts:
    f = a.get("final")
    if not f: print("no final range", a); sys.exit()
    part = open(a["path"], "rb").read()[a["offset"]:a["offset"] + a["length"]]
    final = open(f["path"], "rb").read()[f["offset"]:f["offset"] + f["length"]]
    same = open(os.path.join(ref, os.path.basename(f["path"])), "rb").read()[f["offset"]:f["offset"] + f["length"]]
    if f["length"] != a["length"] or part != final or final != same or not part:
        print("bytes differ", a, f, final[:40], same[:40]); sys.exit()
    text = final.decode()
    if not any(text.startswith(p[1:]) if p[0] == "^" else p in text for p in pats):
        print("not row", row, repr(text[:60])); sys.exit()
print("ok", want, len(arts))
PY
)
    if [ "${verdict%% *}" != ok ]; then fail "$label: explain --manifest --row $row: $verdict"; bad=1; fi
    checked=$((checked + 1))
  done
  [ $bad = 0 ] && pass "$label: explain --manifest --row: $checked rows (each shard's first, middle, last$([ -n "${QUARANTINED:-}" ] && echo ", quarantined")) found in their shard; their bytes in the merged file are the part's, the unsharded file's, the row's own"
}
# some_rows M [MORE...]: each shard's first, middle and last row, and MORE.
some_rows() { python3 -c 'import json, sys
rows = {int(x) for x in sys.argv[2:]}
for r in json.load(open(sys.argv[1]))["ranges"]:
    if r["rows"]: rows |= {r["first_row"], r["last_row"], (r["first_row"] + r["last_row"]) // 2}
print(" ".join(str(x) for x in sorted(rows)))' "$@"; }

sd() {
  local d=$WORK/quickstart/n3 rows k
  [ -d "$WORK/quickstart/ref" ] || reference quickstart examples/quickstart/settings.yaml "$WORK/quickstart/ref"
  [ -e "$d/m.json" ] || { export ELSPETH_OUT_DIR=$d/out; plan explain examples/quickstart/settings.yaml 3 "$d" &&
    run_shards explain examples/quickstart/settings.yaml "$d" 0 1 2 && merge explain "$d"; unset ELSPETH_OUT_DIR; }
  rows=$(jget "$d/m.json" 'd["rows"]')
  # quickstart: a CSV sink (quoted newlines), JSONL, quarantined rows
  # (rows 5 and 102 fail validation).
  QUARANTINED=1 explained "quickstart N=3" "$d" "$WORK/quickstart/ref" "$(some_rows "$d/m.json" 5 102)" \
    '^{row},' '"ticket_id": {row},' '"ticket_id": "{row}"'
  # A JSON array sink (indent 2) and a fork/coalesce: 7 shards.
  local a=$WORK/fork_coalesce_array/n7
  if [ ! -e "$a/m.json" ]; then
    reference fork_coalesce_array fc_array.yaml "$WORK/fork_coalesce_array/ref"
    export ELSPETH_OUT_DIR=$a/out
    plan explain fc_array.yaml 7 "$a" && run_shards explain fc_array.yaml "$a" $(seq 0 6) && merge explain "$a"
    unset ELSPETH_OUT_DIR
  fi
  explained "fork_coalesce_array N=7" "$a" "$WORK/fork_coalesce_array/ref" "$(some_rows "$a/m.json")" '^{row},' '"id": {row},'
  el "$d/explain.txt" explain --manifest "$d/m.json" --row "$rows"
  [ $RC = 0 ] && grep -q "^Shard 2 of" "$d/explain.txt" && grep -q "Merged: .* bytes [0-9]*\.\.[0-9]*" "$d/explain.txt" &&
    pass "explain --manifest (text): names the shard and the merged bytes" || { fail "explain --manifest text"; show "$d/explain.txt"; }
  el "$d/explain0.log" explain --manifest "$d/m.json" --row $((rows + 1))
  refused "explain --manifest --row past the end" 1 "has rows 1..$rows" "$d/explain0.log"
  el "$d/explaint.log" explain --manifest "$d/m.json" --token 1
  refused "explain --manifest --token" 2 "name the row (--row SEQ)" "$d/explaint.log"

  # runs --manifest: every shard.
  el "$d/runs.json" runs --manifest "$d/m.json" --json
  [ $RC = 0 ] && [ "$(jget "$d/runs.json" '",".join(s["status"] for s in d["shards"]) + (" merged" if d["merged"] else "")')" = "completed,completed,completed merged" ] &&
    [ "$(jget "$d/runs.json" 'sum(s["run"]["rows"] for s in d["shards"])')" = "$rows" ] &&
    pass "runs --manifest --json: 3 shards completed, their rows sum to $rows, merged" || { fail "runs --manifest --json"; show "$d/runs.json"; }
  el "$d/runs.txt" runs --manifest "$d/m.json"
  [ $RC = 0 ] && [ "$(grep -cE '^ +[0-2] .*completed' "$d/runs.txt")" = 3 ] && grep -q "; merged" "$d/runs.txt" &&
    pass "runs --manifest: a line per shard" || { fail "runs --manifest (text)"; show "$d/runs.txt"; }

  # export --manifest: every shard's run.
  rm -f "$d/x.db"
  el "$d/export.log" export --manifest "$d/m.json" --sqlite "$d/x.db"
  local n runs
  n=$(sqlite3 "$d/x.db" "select count(*) from rows" 2>&1); runs=$(sqlite3 "$d/x.db" "select count(*) from runs" 2>&1)
  [ $RC = 0 ] && [ "$n" = "$rows" ] && [ "$runs" = 3 ] && pass "export --manifest --sqlite: $n rows (= the source's), 3 runs" ||
    { fail "export --manifest: exit $RC, $n rows (want $rows), $runs runs (want 3)"; show "$d/export.log"; }
  local dup
  dup=$(sqlite3 "$d/x.db" "select count(*) from (select row_index from rows group by row_index having count(*) > 1)" 2>&1)
  [ "$dup" = 0 ] && pass "export --manifest: no row twice (row_index)" || fail "export --manifest: $dup row indexes twice"
  el "$d/export2.log" export --manifest "$d/m.json" --sqlite "$d/x.db"
  [ $RC = 0 ] && [ "$(sqlite3 "$d/x.db" "select count(*) from rows")" = "$rows" ] && pass "export --manifest again: still $rows rows" ||
    fail "export --manifest again: exit $RC"

  # verify --manifest: 0, then 4 after a merged file or a part is edited.
  el "$d/verify.log" verify --manifest "$d/m.json"
  [ $RC = 0 ] && grep -q "checked the merged files and their parts" "$d/verify.log" && grep -q "verify: OK" "$d/verify.log" &&
    pass "verify --manifest: exit 0 after the merge" || { fail "verify --manifest exits $RC"; show "$d/verify.log"; }
  cp "$d/out/normal.csv" "$d/normal.saved"
  python3 - "$d/out/normal.csv" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read()); b[len(b) // 3] ^= 1; open(sys.argv[1], 'wb').write(bytes(b))
PY
  el "$d/verify2.log" verify --manifest "$d/m.json"
  refused "verify --manifest after a merged file was edited" 4 "normal.csv changed since the merge" "$d/verify2.log"
  cp "$d/normal.saved" "$d/out/normal.csv"
  local p
  p=$(part "$d" 1 urgent.jsonl); cp "$p" "$d/part.saved"; sed -i '1s/"/'"'"'/' "$p"
  el "$d/verify3.log" verify --manifest "$d/m.json"
  refused "verify --manifest after a part was edited" 4 "is not what was merged" "$d/verify3.log"
  cp "$d/part.saved" "$p"
  el "$d/verify4.log" verify --manifest "$d/m.json"
  [ $RC = 0 ] && pass "verify --manifest: 0 again once restored" || { fail "verify --manifest after restoring: $RC"; show "$d/verify4.log"; }
}

for sec in ${SHARD_SECTIONS:-a b c d}; do
  t=$(date +%s.%N); "s$sec"
  echo "# section $sec: $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
done
echo "# test_shard.sh took $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s (SHARD_ROWS=$R, SHARD_SEED=$SEED)"
finish

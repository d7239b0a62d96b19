#!/usr/bin/env bash
# Sharded runs under Slurm (issue 18, "Tests"): a private single-node
# Slurm cluster (tests/slurm/cluster.sh) in the test's temporary
# directory, then
#   a. the cluster alone, without elspeth: a 4-task array job writes one
#      file per task, an afterok job concatenates them;
#   b. elspeth: the quickstart pipeline over a generated 4,000-row input
#      (rows that fail validation, quoted fields with commas, quotes and
#      newlines) planned in 4 shards (`elspeth shard plan`), the shards run
#      as a 4-task array job (`elspeth run --manifest`, the shard from
#      SLURM_ARRAY_TASK_ID), merged by an afterok job (`elspeth merge`):
#      every merged sink file is byte-identical to an unsharded run's;
#   c. stopping the cluster stops every daemon it started (by PID) and no
#      process is left working under the test's directory.
# The cluster is stopped on every exit path (trap). Jobs are waited for by
# polling `scontrol show job` (no accounting, so no sacct), at most
# TEST_SLURM_TIMEOUT seconds (60) per wait. Needs root and Debian's Slurm
# and munge packages (scripts/install-deps.sh): exit 77 (skipped) without.
# TEST_SLURM_KEEP=1 keeps the working directory (printed at the end).
source "$(dirname "$0")/lib.sh"
T0=$(date +%s.%N)
CLUSTER="$SRC/tests/slurm/cluster.sh"
CDIR="$WORK/cluster"
JOB_TIMEOUT=${TEST_SLURM_TIMEOUT:-60}
ROWS=4000

cleanup() {
  "$CLUSTER" stop "$CDIR" || echo "# cluster.sh stop failed: daemons may be left under $CDIR"
  mock_stop
  if [ -n "${TEST_SLURM_KEEP:-}" ]; then echo "# kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# A signal still runs cleanup (EXIT), so the daemons never outlive us.
trap 'exit 130' INT
trap 'exit 143' TERM

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# ------------------------------------------------------------ the cluster
# munged runs as the munge user and must reach $WORK/cluster/munge.
chmod go+x "$WORK"
"$CLUSTER" start "$CDIR" 2> "$WORK/start.log"
rc=$?
sed 's/^/# /' "$WORK/start.log"
case $rc in
  0) ;;
  77) echo "SKIP: test_slurm: $(grep -m1 'cannot run here' "$WORK/start.log")"; exit 77 ;;
  *) fail "the cluster starts (cluster.sh start: exit $rc)"; finish; exit ;;
esac
pass "the cluster starts: node idle"
T_START=$(sed -n 's/.* idle after \([0-9.]*\) s.*/\1/p' "$WORK/start.log")
# shellcheck source=/dev/null
source "$CDIR/env.sh"

# ------------------------------------------------------------ job helpers
# submit ARG...: sbatch ARG... --parsable; prints the job ID.
submit() { sbatch --parsable "$@" | cut -d';' -f1; }

# jobs_active ID...: true while a job (any task of an array job) is not
# finished. A job left pending on a dependency that can never be met is
# finished too (the cluster cancels it, kill_invalid_depend; this is the
# belt to those braces).
jobs_active() {
  local id out
  for id; do
    # slurmctld busy for a moment is no answer: keep waiting.
    out=$(scontrol -o show job "$id" 2>/dev/null) || return 0
    grep -v 'Reason=DependencyNeverSatisfied' <<<"$out" |
      grep -qE 'JobState=(PENDING|CONFIGURING|RUNNING|COMPLETING|SUSPENDED|REQUEUED|RESIZING|SIGNALING|STAGE_OUT)' &&
      return 0
  done
  return 1
}

# wait_jobs ID...: waits until every job has ended (at most JOB_TIMEOUT s);
# true when each task of each ended COMPLETED with exit code 0.
wait_jobs() {
  local t id out bad=
  t=$(date +%s.%N)
  while jobs_active "$@"; do
    if awk -v e="$(since "$t")" -v m="$JOB_TIMEOUT" 'BEGIN { exit !(e > m) }'; then
      echo "    jobs $* still not ended after $JOB_TIMEOUT s"
      bad=1; break
    fi
    sleep 0.1
  done
  for id; do
    out=$(scontrol -o show job "$id" 2>/dev/null)
    if [ -z "$out" ] || grep -vqE 'JobState=COMPLETED .*ExitCode=0:0' <<<"$out"; then bad=1; fi
  done
  [ -z "$bad" ] && return 0
  for id; do
    scontrol -o show job "$id" 2>&1 |
      grep -oE '^JobId=[0-9]+|ArrayTaskId=[^ ]+|JobState=[^ ]+|Reason=[^ ]+|ExitCode=[^ ]+' |
      paste -sd' ' | sed 's/^/    /'
  done
  return 1
}

# show_outputs DIR: the jobs' output files, for a failure's diagnosis.
show_outputs() {
  local f
  for f in "$1"/*.out; do
    [ -e "$f" ] || continue
    echo "    ---- ${f##*/}"; tail -n 15 "$f" | sed 's/^/    /'
  done
}

# sanitized FILE...: fails on a sanitizer report in the FILEs: elspeth's
# output, which goes to files here (the jobs' above all), not to ctest's
# log that the suite's sanitizer builds search.
sanitized() {
  local f
  for f; do
    if grep -q "Sanitizer\|runtime error:" "$f" 2>/dev/null; then
      fail "sanitizer report in ${f#"$WORK"/}"
      grep -m5 "Sanitizer\|runtime error:" "$f" | sed 's/^/    /'
    fi
  done
}

# ------------------------------------------------------------ a. the cluster alone
A_DIR="$WORK/trivial"
mkdir -p "$A_DIR"
# Scripts, not --wrap: --wrap runs /bin/sh, and these are bash.
cat > "$A_DIR/task.sh" <<'EOF'
#!/bin/bash
# One array task: writes its index, as Slurm gave it, to a file of its own.
set -euo pipefail
echo "task $SLURM_ARRAY_TASK_ID of job $SLURM_ARRAY_JOB_ID on $(hostname -s)" > "part-$SLURM_ARRAY_TASK_ID"
EOF
cat > "$A_DIR/merge.sh" <<'EOF'
#!/bin/bash
# Runs only after every task succeeded (afterok): all four parts exist.
set -euo pipefail
cat part-0 part-1 part-2 part-3 > all
EOF
chmod +x "$A_DIR"/*.sh
t=$(date +%s.%N)
AJ=$(submit -J trivial --array=0-3 --chdir="$A_DIR" -o "$A_DIR/task-%a.out" "$A_DIR/task.sh")
AM=$(submit -J trivial-merge --dependency="afterok:$AJ" --chdir="$A_DIR" -o "$A_DIR/merge.out" "$A_DIR/merge.sh")
if [ -z "$AJ" ] || [ -z "$AM" ]; then
  fail "a. sbatch submits the array and the afterok job"
elif ! wait_jobs "$AJ" "$AM"; then
  fail "a. a 4-task array job and its afterok job complete"; show_outputs "$A_DIR"
else
  T_TRIVIAL=$(since "$t")
  want=$(for i in 0 1 2 3; do echo "task $i of job $AJ on $TEST_SLURM_NODE"; done)
  if [ "$(cat "$A_DIR/all" 2>/dev/null)" = "$want" ]; then
    pass "a. a 4-task array job and its afterok job ran, in order (${T_TRIVIAL} s)"
  else
    fail "a. the afterok job's file lacks a task's part"; sed 's/^/    /' "$A_DIR/all"
  fi
fi

# ------------------------------------------------------------ b. elspeth sharded
Q="$WORK/quickstart"
cp -r "$SRC/examples/quickstart" "$Q"
rm -rf "$Q/out" "$Q/expected"
# ROWS tickets in the example's 5 columns: every 97th subject spans two
# lines (a quoted newline: byte offsets and line numbers part ways, and a
# shard boundary cannot be found by splitting lines), and so do the rows
# on both sides of the boundaries of 4 equal shards; some have commas and
# doubled quotes, and BAD rows fail validation (quarantined with their
# line numbers, which must survive sharding), one of them first in its
# shard.
BAD=$(python3 - "$Q/data/big.csv" "$ROWS" <<'EOF'
import csv, random, sys
path, rows = sys.argv[1], int(sys.argv[2])
rnd = random.Random(18)
subjects = ['Invoice shows wrong VAT', 'Refund not received',
            'Login fails after password reset',
            'Cannot upload profile photo, "error 413"',
            'Billing address, city field truncated']
bad = {777: ('ticket_id', 'A777'), 1500: ('amount', 'n/a'),
       2501: ('ticket_id', '25O1'), 3001: ('amount', 'twelve'),
       3333: ('ticket_id', '3333.5')}
with open(path, 'w', newline='') as f:
    w = csv.writer(f, lineterminator='\n')
    w.writerow(['ticket_id', 'customer', 'subject', 'priority', 'amount'])
    for i in range(1, rows + 1):
        row = {'ticket_id': str(i), 'customer': 'Customer %d' % rnd.randint(1, 40),
               'subject': rnd.choice(subjects),
               'priority': rnd.choice(['high', 'medium', 'low']),
               'amount': '%.2f' % rnd.uniform(5, 500)}
        if i % 97 == 0 or i in (1000, 1001, 2000, 2001, 3000, 3001):
            row['subject'] = 'Printer says "paper jam"\nbut the tray is empty, row %d' % i
        if i in bad:
            row[bad[i][0]] = bad[i][1]
        w.writerow([row[k] for k in ('ticket_id', 'customer', 'subject', 'priority', 'amount')])
print(len(bad))
EOF
)
sed -i "s#path: examples/quickstart/data/tickets.csv#path: $Q/data/big.csv#" "$Q/settings.yaml"
grep -qF "path: $Q/data/big.csv" "$Q/settings.yaml" || fail "b. the settings read the generated input"

# The unsharded reference: its own directory (Landscape in ./state) and
# its own ELSPETH_OUT_DIR.
REF="$WORK/unsharded"
mkdir -p "$REF"
t=$(date +%s.%N)
# records FILE: CSV records in FILE, header included (0 when missing).
records() { python3 -c 'import csv, sys; print(sum(1 for _ in csv.reader(open(sys.argv[1], newline=""))))' "$1" 2>/dev/null || echo 0; }
# lines FILE: lines in FILE (0 when missing); a JSONL record is one line.
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
REF_OK=
if (cd "$REF" && ELSPETH_OUT_DIR="$REF/out" "$ELSPETH" run -s "$Q/settings.yaml" --execute > run.log 2>&1); then
  T_REF=$(since "$t")
  nq=$(lines "$REF/out/quarantine.jsonl")
  nu=$(lines "$REF/out/urgent.jsonl")
  nn=$(($(records "$REF/out/normal.csv") - 1))
  if [ "$nq" -eq "$BAD" ] && [ $((nq + nu + nn)) -eq "$ROWS" ]; then
    REF_OK=1
    pass "b. unsharded reference: $nu urgent + $nn normal + $nq quarantined = $ROWS rows (${T_REF} s)"
  else
    fail "b. unsharded reference: $nu urgent + $nn normal + $nq quarantined (want $BAD), not $ROWS rows"
  fi
else
  fail "b. the unsharded run"; tail -n 20 "$REF/run.log" | sed 's/^/    /'
fi

# The sharded run: plan, shards and merge in one directory, with one
# ELSPETH_OUT_DIR (the settings hash the manifest records includes it).
S="$WORK/sharded"
mkdir -p "$S/jobs"
q() { printf %q "$1"; }
cat > "$S/shard.sh" <<EOF
#!/bin/bash
# One shard of the plan: elspeth takes its index from SLURM_ARRAY_TASK_ID.
set -euo pipefail
export ELSPETH_OUT_DIR=$(q "$S/out")
exec $(q "$ELSPETH") run -s $(q "$Q/settings.yaml") --manifest $(q "$S/manifest.json") --execute
EOF
cat > "$S/merge.sh" <<EOF
#!/bin/bash
# After every shard completed (afterok): the sinks' final files.
set -euo pipefail
export ELSPETH_OUT_DIR=$(q "$S/out")
exec $(q "$ELSPETH") merge --manifest $(q "$S/manifest.json")
EOF
chmod +x "$S"/*.sh

if ! "$ELSPETH" shard --help > "$S/shard-help.log" 2>&1; then
  fail "b. elspeth has a 'shard' command (issue 18): $(head -1 "$S/shard-help.log")"
else
  t=$(date +%s.%N)
  if ! (cd "$S" && ELSPETH_OUT_DIR="$S/out" "$ELSPETH" shard plan -s "$Q/settings.yaml" \
          --shards 4 -o "$S/manifest.json" > plan.log 2>&1); then
    fail "b. elspeth shard plan --shards 4"; tail -n 20 "$S/plan.log" | sed 's/^/    /'
  else
    T_PLAN=$(since "$t")
    # The manifest's ranges (issue 18: each shard's first and last row)
    # cover rows 1..ROWS in 4 pieces, each after the one before.
    if python3 - "$S/manifest.json" "$ROWS" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
r = m["ranges"]
ok = len(r) == 4 and r[0]["first_row"] == 1 and r[-1]["last_row"] == int(sys.argv[2])
ok = ok and all(a["last_row"] + 1 == b["first_row"] for a, b in zip(r, r[1:]))
sys.exit(0 if ok else 1)
EOF
    then
      pass "b. elspeth shard plan --shards 4: 4 ranges cover rows 1..$ROWS (${T_PLAN} s)"
    else
      fail "b. elspeth shard plan --shards 4: the manifest's ranges do not cover rows 1..$ROWS"
    fi
    t=$(date +%s.%N)
    SJ=$(submit -J elspeth-shard --array=0-3 --chdir="$S" -o "$S/jobs/shard-%a.out" "$S/shard.sh")
    SM=$(submit -J elspeth-merge --dependency="afterok:$SJ" --chdir="$S" -o "$S/jobs/merge.out" "$S/merge.sh")
    if [ -z "$SJ" ] || [ -z "$SM" ]; then
      fail "b. sbatch submits the shards and the merge"
    elif ! wait_jobs "$SJ" "$SM"; then
      fail "b. 4 shards as an array job, then the merge (afterok), complete"; show_outputs "$S/jobs"
    else
      T_SHARDED=$(since "$t")
      pass "b. 4 shards as an array job, then the merge (afterok), complete (${T_SHARDED} s)"
      bad=
      [ -n "$REF_OK" ] || bad="(no unsharded reference to compare with) "
      for f in $(cd "$REF/out" 2>/dev/null && ls); do
        cmp "$REF/out/$f" "$S/out/$f" > "$S/cmp.log" 2>&1 || bad+="$f ($(head -1 "$S/cmp.log")) "
      done
      for f in $(cd "$S/out" 2>/dev/null && ls); do [ -e "$REF/out/$f" ] || bad+="$f (not in the unsharded run) "; done
      if [ -z "$bad" ] && [ -n "$(ls "$REF/out" 2>/dev/null)" ]; then
        pass "b. merged sinks byte-identical to the unsharded run: $(cd "$REF/out" && ls | paste -sd' ')"
      else
        fail "b. merged sinks differ from the unsharded run: ${bad:-no sink files}"
      fi
    fi
  fi
fi

sanitized "$REF/run.log" "$S/plan.log" "$S"/jobs/*.out

# ------------------------------------------------------------ c. stop
cd /
if "$CLUSTER" stop "$CDIR" && ! "$CLUSTER" status "$CDIR" > "$WORK/status.log" 2>&1; then
  pass "c. cluster.sh stop: every daemon it started has exited"
else
  fail "c. cluster.sh stop"; sed 's/^/    /' "$WORK/status.log"
fi
# Job processes are not the daemons' children once slurmstepd forks them,
# so look for any process still working under $WORK (a zombie has no cwd).
left=
for p in /proc/[0-9]*; do
  case $(readlink "$p/cwd" 2>/dev/null) in
    "$WORK"|"$WORK"/*) left+="${p#/proc/}:$(tr '\0' ' ' < "$p/cmdline" | cut -c1-60) " ;;
  esac
done
if [ -z "$left" ]; then
  pass "c. no process left working under the test's directory"
else
  fail "c. processes left under $WORK: $left"
fi

echo "# times: cluster start ${T_START:-?} s; trivial array+merge ${T_TRIVIAL:-?} s;" \
     "unsharded run ${T_REF:-?} s; shard plan ${T_PLAN:-?} s;" \
     "sharded array+merge ${T_SHARDED:-?} s; whole test $(since "$T0") s"
finish

#!/usr/bin/env bash
# A private single-node Slurm cluster for the tests, everything under DIR.
#
#   tests/slurm/cluster.sh start DIR   start munged, slurmctld and slurmd;
#                                      wait until the node is idle; write
#                                      DIR/env.sh for callers to source
#   tests/slurm/cluster.sh stop DIR    cancel its jobs, stop its daemons
#                                      by the PIDs start recorded
#   tests/slurm/cluster.sh status DIR  which of its daemons run (exit 1
#                                      when none)
#
# Why a private cluster: the test must not depend on, or disturb, a Slurm
# or munge the machine may run. So nothing here is system-wide: no
# systemd, no /etc/slurm, no /run/munge. The cluster has its own munge key
# and socket, its own free ports, its own state, spool, logs and pid files
# under DIR; callers reach it only through DIR/env.sh (SLURM_CONF). `stop`
# signals the daemons `start` recorded (PID plus start time, so a reused
# PID is never hit), never a daemon found by name; then whatever is left
# of this cluster's jobs, known by this cluster's SLURM_CONF in their
# environment (kill_leftovers).
#
# Needs root (slurmd runs jobs as their submitter and munged must be
# started as the munge user) and Debian 12's slurmctld, slurmd,
# slurm-client and munge (scripts/install-deps.sh). When it cannot run
# here, `start` exits 77 saying why (ctest's "skipped").
#
# Written against Slurm 22.05 (slurm.conf(5), slurmd(8), slurmctld(8)) and
# munge 0.5.15 (munged(8)) as Debian 12 ships them.
set -euo pipefail

usage() { echo "usage: $0 start|stop|status DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
CMD=$1
DIR=$2

NODE=$(hostname -s)
PARTITION="test"
# Seconds to wait: for the node to become idle after start, for jobs to
# end after scancel, for a daemon to exit after SIGTERM.
START_TIMEOUT=${TEST_SLURM_START_TIMEOUT:-30}
STOP_TIMEOUT=10

say() { echo "cluster: $*" >&2; }

# ------------------------------------------------------------ processes
# A recorded daemon is DIR/pids/NAME holding "PID STARTTIME": STARTTIME is
# field 22 of /proc/PID/stat (clock ticks since boot), which tells our
# process from a later one given the same PID.
starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # The command name (field 2) may hold spaces: count from after its ')'.
  stat=${stat##*) }
  # Now f[0] is the state (overall field 3); a zombie has exited.
  local f
  read -r -a f <<<"$stat"
  [ "${f[0]}" != Z ] || return 1
  echo "${f[19]}"
}

record() { # record NAME PID
  local st
  st=$(starttime "$2") || { say "$1 (pid $2) exited at once"; return 1; }
  echo "$2 $st" > "$DIR/pids/$1"
}

# recorded_pid NAME: prints the PID of NAME if it is still the process we
# started; fails otherwise.
recorded_pid() {
  local file=$DIR/pids/$1 pid st now
  [ -f "$file" ] || return 1
  read -r pid st < "$file" || return 1
  now=$(starttime "$pid") || return 1
  [ "$now" = "$st" ] || return 1
  echo "$pid"
}

# stop_daemon NAME: SIGTERM, up to STOP_TIMEOUT seconds for it to exit,
# then SIGKILL.
stop_daemon() {
  local name=$1 pid i
  if pid=$(recorded_pid "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_TIMEOUT * 20; i++)); do
      recorded_pid "$name" >/dev/null || break
      sleep 0.05
    done
    if pid=$(recorded_pid "$name"); then
      say "$name (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT} s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 40; i++)); do
        recorded_pid "$name" >/dev/null || break
        sleep 0.05
      done
      if recorded_pid "$name" >/dev/null; then
        say "$name (pid $pid) still runs after SIGKILL"
        return 1
      fi
    fi
  fi
  rm -f "$DIR/pids/$name"
}

# ------------------------------------------------------------ environment
# Variables that would send the clients (and the daemons' children) to
# another cluster or change their defaults and output formats: a caller
# that itself runs inside a Slurm job has SLURM_JOB_ID, SLURM_CONF...
foreign_env() {
  compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN|SQUEUE|SINFO|SCANCEL|SCONTROL|SACCT)_' || true
}

# "${CLUSTER_ENV[@]}" CMD...: runs CMD with the cluster's environment.
# An array, not a function, so that `"${CLUSTER_ENV[@]}" daemon &` is one
# simple command and $! the daemon's PID (env execs it).
set_cluster_env() {
  local v
  CLUSTER_ENV=(env)
  for v in $(foreign_env); do CLUSTER_ENV+=(-u "$v"); done
  CLUSTER_ENV+=(SLURM_CONF="$DIR/slurm.conf")
}
in_cluster() { "${CLUSTER_ENV[@]}" "$@"; }

# ------------------------------------------------------------ start
cant_run() { say "cannot run here: $*"; exit 77; }

free_ports() { # prints two distinct free TCP ports
  # Both sockets stay bound until both are chosen, so they differ; the
  # daemons bind them a moment later (another process taking one in
  # between makes start fail with "Address already in use" in the logs).
  python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'
}

write_slurm_conf() { # write_slurm_conf CTLD_PORT SLURMD_PORT
  local hw mem
  # The node as slurmd sees it: CPUs, boards, sockets, cores, threads.
  # RealMemory must not exceed what slurmd finds, or the node registers
  # as INVALID; we ask for exactly that.
  hw=$(slurmd -C | head -1)
  mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
  hw=$(sed -e 's/^NodeName=[^ ]* //' -e 's/ RealMemory=[0-9]*//' <<<"$hw")
  if [ -z "$mem" ] || [ -z "$hw" ]; then say "cannot parse 'slurmd -C': $hw"; return 1; fi
  cat > "$DIR/slurm.conf" <<EOF
# A private single-node cluster written by tests/slurm/cluster.sh.
# Everything it writes is under $DIR; see slurm.conf(5) of Slurm 22.05.
ClusterName=elspethtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
# The private munged, not the system's (/run/munge/munge.socket.2).
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munged.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (a container may not delegate them): processes are tracked
# by parent PID and tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# No slurmdbd: no accounting, so no sacct; job states come from scontrol.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
# Schedule on every event (submit, job end) at once: by default batch jobs
# wait for a cycle every 3 s, which doubled a 4-task array's wall time.
# A job whose dependency can never be met (afterok on a failed job) is
# cancelled rather than left pending forever, so callers see it end.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,kill_invalid_depend
# Cores are the unit handed out, so array tasks share the node.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
# The node comes back on its own whenever slurmd registers.
ReturnToService=2
MailProg=/bin/true
# Seconds between SIGTERM and SIGKILL for a cancelled job: stop is quick.
KillWait=2
NodeName=$NODE NodeAddr=127.0.0.1 $hw RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

write_env_sh() {
  cat > "$DIR/env.sh" <<EOF
# Sourced by bash: the client environment of the private Slurm cluster
# under $DIR (tests/slurm/cluster.sh). Variables of any other Slurm
# (a caller inside a real job has SLURM_JOB_ID, SLURM_CONF...) go first.
for _v in \$(compgen -e | grep -E '^(SLURM|SBATCH|SALLOC|SRUN|SQUEUE|SINFO|SCANCEL|SCONTROL|SACCT)_'); do
  unset "\$_v"
done
unset _v
export SLURM_CONF=$DIR/slurm.conf
export TEST_SLURM_DIR=$DIR
export TEST_SLURM_NODE=$NODE
export TEST_SLURM_PARTITION=$PARTITION
EOF
}

start_munged() {
  local m=$DIR/munge i
  # munged, as the munge user, must reach DIR/munge: DIR is often a
  # mktemp -d (0700). Traversal only; DIR stays unreadable to others. Its
  # parents are the caller's: we only say when one is in the way.
  chmod go+x "$DIR"
  if ! setpriv --reuid=munge --regid=munge --clear-groups -- test -x "$DIR"; then
    say "the munge user cannot reach $DIR: make its parent directories searchable (chmod go+x)"
    return 1
  fi
  # munged wants its socket's directory searchable by all (clients must
  # reach the socket) and writable by none but itself; the key in it is
  # 0400, readable by munged alone.
  install -d -o munge -g munge -m 0711 "$m"
  # A fresh key for this cluster alone: its credentials mean nothing to
  # the machine's munged, and the machine's mean nothing to ours.
  dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$m/munge.key"
  chmod 0400 "$m/munge.key"
  # -F: in the foreground, so $! is munged itself (setpriv execs it).
  setpriv --reuid=munge --regid=munge --init-groups -- \
    munged -F --socket="$m/munged.socket" --key-file="$m/munge.key" \
    --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
    --seed-file="$m/munged.seed" \
    < /dev/null > "$DIR/log/munged.out" 2>&1 &
  record munged $!
  for ((i = 0; i < START_TIMEOUT * 20; i++)); do
    if [ -S "$m/munged.socket" ] &&
       munge -n -S "$m/munged.socket" 2>/dev/null | unmunge -S "$m/munged.socket" >/dev/null 2>&1; then
      return 0
    fi
    recorded_pid munged >/dev/null || { say "munged exited"; return 1; }
    sleep 0.05
  done
  say "munged did not answer within ${START_TIMEOUT} s"
  return 1
}

# start_daemon NAME: slurmctld or slurmd in the foreground (-D), so $! is
# the daemon and no pid file of its own is needed to find it.
start_daemon() {
  "${CLUSTER_ENV[@]}" "$1" -D -f "$DIR/slurm.conf" \
    < /dev/null > "$DIR/log/$1.out" 2>&1 &
  record "$1" $!
}

# slurmctld forks slurmscriptd (it runs prologs and the like for it) and
# stops it when it exits itself; recorded so that stop can check it after
# a slurmctld that had to be SIGKILLed.
record_scriptd() {
  local ctld c
  ctld=$(recorded_pid slurmctld) || return 0
  for c in $(pgrep -P "$ctld" || true); do
    if [ "$(cat "/proc/$c/comm" 2>/dev/null)" = slurmscriptd ]; then
      record slurmscriptd "$c" || true
    fi
  done
}

node_state() { in_cluster sinfo -h -n "$NODE" -o %t 2>/dev/null || true; }

wait_idle() {
  local i state='' d
  for ((i = 0; i < START_TIMEOUT * 20; i++)); do
    state=$(node_state)
    [ "$state" = idle ] && return 0
    for d in munged slurmctld slurmd; do
      recorded_pid "$d" >/dev/null || { say "$d exited"; return 1; }
    done
    sleep 0.05
  done
  say "node $NODE not idle within ${START_TIMEOUT} s (state: ${state:-none})"
  return 1
}

show_logs() {
  local f
  # The daemons run in the foreground, which copies every log line to
  # their output, early errors (before a log file opens) included.
  for f in "$DIR"/log/*.out; do
    [ -s "$f" ] || continue
    echo "---- ${f#"$DIR"/} (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
}

start_failed() {
  local rc=$?
  say "start failed (exit $rc); stopping what it started"
  stop || true
  show_logs
  exit 1
}

start() {
  [ "$(id -u)" -eq 0 ] || cant_run "needs root (munged runs as the munge user, slurmd runs jobs as their submitter)"
  local b
  for b in munged munge unmunge slurmctld slurmd sinfo sbatch scontrol scancel squeue setpriv python3; do
    command -v "$b" >/dev/null || cant_run "$b is not installed (scripts/install-deps.sh installs it)"
  done
  id munge >/dev/null 2>&1 || cant_run "no munge user (the munge package creates it)"

  mkdir -p "$DIR"
  DIR=$(realpath "$DIR")
  set_cluster_env
  for b in munged slurmctld slurmd; do
    if recorded_pid "$b" >/dev/null; then say "$b already runs for $DIR"; exit 1; fi
  done

  local t0 ports
  t0=$(date +%s.%N)
  # Any failure from here on (set -e, a signal) stops what was started.
  trap start_failed EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  rm -f "$DIR/env.sh"
  mkdir -p "$DIR/pids" "$DIR/log" "$DIR/run" "$DIR/state" "$DIR/spool"

  start_munged
  read -r -a ports <<<"$(free_ports)"
  write_slurm_conf "${ports[0]}" "${ports[1]}"
  # Both at once: slurmd keeps trying to register until slurmctld listens.
  start_daemon slurmctld
  start_daemon slurmd
  wait_idle
  record_scriptd
  write_env_sh
  trap - EXIT INT TERM
  say "node $NODE idle after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s" \
      "(slurmctld port ${ports[0]}, slurmd port ${ports[1]}; source $DIR/env.sh)"
}

# ------------------------------------------------------------ stop
# Jobs first: their processes are slurmstepd's children, not recorded, and
# must not outlive the cluster. scancel kills every process of a job that
# proctrack/linuxproc can trace to it (SIGTERM, KillWait, SIGKILL); a
# process that double-forked away from its job escapes, as on any
# cluster configured this way.
cancel_jobs() {
  local i
  recorded_pid slurmctld >/dev/null || return 0
  [ -n "$(in_cluster squeue -h -o %i 2>/dev/null)" ] || return 0
  in_cluster scancel --partition="$PARTITION" 2>/dev/null || true
  for ((i = 0; i < STOP_TIMEOUT * 20; i++)); do
    [ -n "$(in_cluster squeue -h -o %i 2>/dev/null)" ] || return 0
    sleep 0.05
  done
  say "jobs still listed ${STOP_TIMEOUT} s after scancel:"
  in_cluster squeue >&2 || true
}

# After the daemons: what is left of this cluster's jobs when scancel
# could not run (slurmctld had died) or a job outlived it. Such a process
# is a slurmstepd or a job's process, and carries this cluster's
# SLURM_CONF in the environment it started with (slurmd's, or the
# submitter's, which sourced env.sh): that marks it as ours, whatever
# its name. It gets SIGKILL, by PID.
kill_leftovers() {
  local p pid env comm left=()
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    case $pid in "$$"|"$BASHPID") continue ;; esac
    env=$(tr '\0' '\n' 2>/dev/null < "$p/environ") || continue
    grep -qxF "SLURM_CONF=$DIR/slurm.conf" <<<"$env" || continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    if [ "$comm" = slurmstepd ] || grep -q '^SLURM_JOB_ID=' <<<"$env"; then
      left+=("$pid")
      say "left over: pid $pid ($comm): SIGKILL"
    fi
  done
  [ ${#left[@]} -eq 0 ] || kill -KILL "${left[@]}" 2>/dev/null || true
}

stop() {
  [ -d "$DIR/pids" ] || return 0
  local rc=0 d
  cancel_jobs
  # slurmd before slurmctld, so the node is not marked down while jobs
  # end; munged last, both Slurm daemons use it until they exit.
  for d in slurmd slurmctld slurmscriptd munged; do
    stop_daemon "$d" || rc=1
  done
  kill_leftovers
  return $rc
}

status() {
  local d pid any=1
  for d in munged slurmctld slurmd; do
    if pid=$(recorded_pid "$d"); then echo "$d: pid $pid"; any=0; else echo "$d: not running"; fi
  done
  return $any
}

case $CMD in
  start) start ;;
  stop)
    [ -d "$DIR" ] || exit 0
    DIR=$(realpath "$DIR")
    set_cluster_env
    stop ;;
  status)
    [ -d "$DIR" ] || { echo "no cluster under $DIR"; exit 1; }
    DIR=$(realpath "$DIR")
    status ;;
  *) usage ;;
esac

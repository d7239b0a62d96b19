# Shared by the benchmark scripts (sourced; $OUT must be set).

HZ=$(getconf CLK_TCK)

# Machine-wide busy CPU time in clock ticks (everything but idle, iowait).
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }

# quiet_gate: waits until the machine uses at most QUIET_MAX cores (sampled
# over 1 s), for at most QUIET_WAIT seconds, so runs start on a quiet box.
quiet_gate() {
  local waited=0 b0 b1 load
  while :; do
    b0=$(busy_ticks); sleep 1; b1=$(busy_ticks)
    load=$(awk -v a="$b0" -v b="$b1" -v hz="$HZ" 'BEGIN { printf "%.2f", (b - a) / hz }')
    if awk -v l="$load" -v m="$QUIET_MAX" 'BEGIN { exit !(l <= m) }' || [ "$waited" -ge "$QUIET_WAIT" ]; then
      return
    fi
    [ "$waited" = 0 ] && echo "  waiting for the machine to quieten (other load $load cores > $QUIET_MAX) ..." >&2
    waited=$((waited + 1))
  done
}

# ensure_pkg COMMAND PACKAGE: installs PACKAGE with apt-get (sudo when not
# root) if COMMAND is missing; returns non-zero if it is still missing.
ensure_pkg() {
  if command -v "$1" >/dev/null 2>&1; then return 0; fi
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo=(sudo -n)
  fi
  echo "installing $2 (for $1) with apt-get ..." >&2
  { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" ||
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2"; }
  } >>"$OUT/apt.log" 2>&1 || { echo "  apt-get failed (see $OUT/apt.log)" >&2; return 1; }
  command -v "$1" >/dev/null 2>&1
}

# ---- the mock LLM server, for bench/llm.sh and bench/limits.sh ----
# Need OUT (with log/) and MOCK (the binary). start_mock ARGS... starts it
# and sets MOCK_PID and PORT; stop_mock; mock METHOD PATH [JSON] is an
# admin request; mock_input ROWS prints the path of an input CSV of ROWS
# distinct rows (made once, in OUT).
MOCK_PID=
stop_mock() {
  if [ -n "$MOCK_PID" ]; then kill "$MOCK_PID" 2>/dev/null || true; wait "$MOCK_PID" 2>/dev/null || true; fi
  MOCK_PID=
}
start_mock() {
  stop_mock
  rm -f "$OUT/mock.port"
  "$MOCK" --port 0 --port-file "$OUT/mock.port" "$@" > "$OUT/log/mock.log" 2>&1 &
  MOCK_PID=$!
  for _ in $(seq 100); do [ -s "$OUT/mock.port" ] && break; sleep 0.05; done
  PORT=$(cat "$OUT/mock.port")
}
mock() {
  if [ $# -ge 3 ]; then curl -sf -X "$1" "http://127.0.0.1:$PORT$2" -d "$3"
  else curl -sf -X "$1" "http://127.0.0.1:$PORT$2"; fi
}
mock_input() {
  local f="$OUT/input-$1.csv"
  [ -f "$f" ] || awk -v n="$1" 'BEGIN { print "id,text";
    for (i = 1; i <= n; i++) printf "%d,ticket %d: the printer on floor %d jams\n", i, i, i % 17 }' > "$f"
  echo "$f"
}

# foundation_input ROWS FILE: the foundation pipeline's CSV (id, name,
# score, category, note with a quoted comma; seeded, so the same each
# time), written once.
foundation_input() {
  [ -f "$2" ] && return 0
  awk -v n="$1" 'BEGIN {
    srand(42); print "id,name,score,category,note";
    split("alpha,beta,gamma,delta", cats, ",");
    for (i = 1; i <= n; i++)
      printf "%d,user %d,%.2f,%s,\"note, with comma %d\"\n", i, i % 977, rand() * 100, cats[(i % 4) + 1], i;
  }' > "$2"
}

# foundation_pipeline INPUT OUTDIR: the foundation pipeline's settings
# (CSV -> field_mapper -> gate -> two CSV sinks in OUTDIR, which may be a
# ${VAR} reference), without a landscape section, on stdout.
foundation_pipeline() {
  cat <<YAML
source:
  plugin: csv
  on_success: map_in
  options:
    path: $1
    schema: {mode: fixed, fields: ["id: int", "name: str", "score: float", "category: str", "note: str"]}
    on_validation_failure: discard
transforms:
  - {name: mapper, plugin: field_mapper, input: map_in, on_success: gate_in, options: {mapping: {name: user, score: points}}}
gates:
  - {name: by_points, input: gate_in, condition: "row['points'] >= 50", routes: {'true': high, 'false': low}}
sinks:
  high: {plugin: csv, options: {path: "$2/high.csv"}}
  low: {plugin: csv, options: {path: "$2/low.csv"}}
YAML
}

# llm_bench_bins [BUILD_DIR]: a Release build of elspeth and the mock
# (default build-release), copied into $OUT/bin so that a rebuild
# meanwhile (other work in the tree) cannot change the binaries halfway
# through a benchmark; sets BIN, MOCK and REV (the commit, "+local
# changes" when the tree differs from it).
llm_bench_bins() {
  local b=${1:-build-release}
  cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
  cmake --build "$b" -j"$(nproc)" --target elspeth elspeth-mock-llm >/dev/null
  cp "$b/elspeth" "$b/elspeth-mock-llm" "$OUT/bin/"
  BIN=$OUT/bin/elspeth
  MOCK=$OUT/bin/elspeth-mock-llm
  REV=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  git diff --quiet HEAD 2>/dev/null || REV="$REV+local changes"
}

# bench_pg_start DIR: a private PostgreSQL server (Debian's postgresql;
# as an unprivileged user when run as root), reachable through a unix
# socket in DIR only; sets BENCH_PG_URL, or returns 1 when the server's
# binaries are missing. bench_pg_stop stops it.
BENCH_PG_BIN=
BENCH_PG_DIR=
BENCH_PG_AS=()
bench_pg_start() {
  local d port
  for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && BENCH_PG_BIN=$d && break
  done
  [ -n "$BENCH_PG_BIN" ] || return 1
  BENCH_PG_DIR=$(realpath -m "$1"); rm -rf "$BENCH_PG_DIR"; mkdir -p "$BENCH_PG_DIR"
  if [ "$(id -u)" = 0 ]; then
    BENCH_PG_AS=(setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups --)
    chown postgres "$BENCH_PG_DIR"
  fi
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (cd "$BENCH_PG_DIR" && "${BENCH_PG_AS[@]}" "$BENCH_PG_BIN/initdb" -D "$BENCH_PG_DIR/data" -U elspeth \
     --auth=trust -E UTF8 --locale=C > "$BENCH_PG_DIR/initdb.log" 2>&1) || return 1
  (cd "$BENCH_PG_DIR" && "${BENCH_PG_AS[@]}" "$BENCH_PG_BIN/pg_ctl" -D "$BENCH_PG_DIR/data" \
     -l "$BENCH_PG_DIR/server.log" -w -o "-k $BENCH_PG_DIR -p $port -c listen_addresses=" start > /dev/null) || return 1
  BENCH_PG_URL="postgresql://elspeth@/postgres?host=$BENCH_PG_DIR&port=$port"
}
bench_pg_stop() {
  [ -n "$BENCH_PG_DIR" ] && [ -f "$BENCH_PG_DIR/data/postmaster.pid" ] &&
    (cd "$BENCH_PG_DIR" && "${BENCH_PG_AS[@]}" "$BENCH_PG_BIN/pg_ctl" -D "$BENCH_PG_DIR/data" -m fast -w stop > /dev/null 2>&1)
  return 0
}

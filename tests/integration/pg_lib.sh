# A private PostgreSQL server for a test (sourced after lib.sh): Debian's
# postgresql package (initdb, pg_ctl, psql of /usr/lib/postgresql/N/bin),
# a cluster in a temporary directory of its own, reachable only through
# a unix socket in that directory (no TCP), run as an unprivileged user
# when the test runs as root (postgres refuses to run as root), stopped
# and removed on exit.
#   pg_start       starts it, or exits 77 when the binaries are missing;
#                  sets PG_URL (postgresql://elspeth@/postgres?host=...)
#   pg_sql SQL...  runs SQL with psql, unaligned, no headers
#   pg_stop        stops it (the EXIT trap calls it too)
PG_BIN=
PG_DIR=
PG_PORT=
PG_URL=
PG_AS=()

pg_find() {
  local d
  for d in /usr/lib/postgresql/15/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/postgres" ] && [ -x "$d/psql" ]; then
      PG_BIN=$d; return 0
    fi
  done
  return 1
}

pg_stop() {
  if [ -n "$PG_DIR" ] && [ -f "$PG_DIR/data/postmaster.pid" ]; then
    "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop > /dev/null 2>&1
  fi
  if [ -n "$PG_DIR" ]; then rm -rf "$PG_DIR"; PG_DIR=; fi
}

pg_start() {
  if ! pg_find; then
    echo "# skipped: PostgreSQL's server binaries are missing (apt-get install postgresql)"
    exit 77
  fi
  PG_DIR=$(mktemp -d)
  trap 'pg_stop; mock_stop; rm -rf "$WORK"' EXIT
  if [ "$(id -u)" = 0 ]; then
    local who=postgres
    id "$who" > /dev/null 2>&1 || who=nobody
    PG_AS=(setpriv --reuid="$who" --regid="$(id -g "$who")" --clear-groups --)
    chown "$who" "$PG_DIR"
  fi
  PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  if ! (cd "$PG_DIR" && "${PG_AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U elspeth \
          --auth=trust -E UTF8 --locale=C > "$PG_DIR/initdb.log" 2>&1); then
    echo "FAIL - initdb"; sed 's/^/    /' "$PG_DIR/initdb.log" | tail -20; exit 1
  fi
  if ! (cd "$PG_DIR" && "${PG_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
          -o "-k $PG_DIR -p $PG_PORT -c listen_addresses=" start > /dev/null 2>&1); then
    echo "FAIL - pg_ctl start"; sed 's/^/    /' "$PG_DIR/server.log" | tail -20; exit 1
  fi
  PG_URL="postgresql://elspeth@/postgres?host=$PG_DIR&port=$PG_PORT"
}

pg_sql() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -At -h "$PG_DIR" -p "$PG_PORT" -U elspeth -d postgres "$@"
}

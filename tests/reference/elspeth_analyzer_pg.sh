#!/usr/bin/env bash
# By hand (not in CI: it needs the real ELSPETH 0.4.1, see
# /work/shared/elspeth-reference or ELSPETH_REF): as elspeth_analyzer.sh,
# but the trail goes into a private PostgreSQL server (Debian's
# postgresql, a unix socket in a temporary directory) through
# `elspeth export --sqlite postgresql://…`, and ELSPETH's own
# LandscapeAnalyzer reads it there (psycopg2), token by token.
# Usage: tests/reference/elspeth_analyzer_pg.sh [BUILD_DIR]
source "$(dirname "$0")/trail.sh"
source "$SRC/bench/lib.sh"
PGD=$(mktemp -d) # /tmp/tmp.X itself: WORK is not the postgres user's to enter
bench_pg_start "$PGD" || { echo "needs Debian's postgresql"; exit 2; }
trap 'bench_pg_stop; rm -rf "$PGD"; kill $MOCK 2>/dev/null; rm -rf "$WORK"' EXIT
"$BUILD/elspeth" export --sqlite "$BENCH_PG_URL"
PYTHONPATH="$REF/shim:$REF/src" ELSPETH_FINGERPRINT_KEY=x /usr/bin/python3 \
  "$SRC/tests/reference/elspeth_analyzer.py" "$BUILD/elspeth" "$BENCH_PG_URL" "$WORK"

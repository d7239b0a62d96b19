# Shared helpers for the integration tests (sourced). $1 = elspeth binary,
# $2 = source tree. Each test runs in a fresh temporary directory.
set -uo pipefail
ELSPETH=$(realpath "$1")
SRC=$(realpath "$2")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILS=0
PASSES=0

pass() { PASSES=$((PASSES + 1)); echo "ok - $1"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL - $1"; }

# expect NAME EXIT_CODE NEEDLE -- command...: runs the command, checks the
# exit code and that stdout+stderr contain NEEDLE.
expect() {
  local name=$1 code=$2 needle=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ]; then
    fail "$name: exit $rc, want $code"; echo "$out" | sed 's/^/    /' | head -20; return
  fi
  if [ -n "$needle" ] && ! grep -qF -- "$needle" <<<"$out"; then
    fail "$name: output lacks '$needle'"; echo "$out" | sed 's/^/    /' | head -20; return
  fi
  pass "$name"
}

finish() {
  echo "$PASSES passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

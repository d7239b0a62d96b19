# Sourced by the by-hand reference scripts (elspeth_analyzer.sh,
# mcp_vs_elspeth.sh): checks that the real ELSPETH 0.4.1 is there (see
# /work/shared/elspeth-reference or ELSPETH_REF), runs our examples
# (fork/coalesce, aggregation, error routing, explode, and the LLM example
# against the mock) in a temporary WORK and exports their trail to
# $WORK/trail.db. $1: the build directory (default build/). Sets SRC,
# BUILD, REF, WORK.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(realpath "${1:-$SRC/build}")
REF=${ELSPETH_REF:-$HOME/.cache/elspeth-ref}
[ -d "$REF/src/elspeth" ] || { echo "needs the ELSPETH reference in $REF (setup.sh)"; exit 2; }
WORK=$(mktemp -d); trap 'kill $MOCK 2>/dev/null; rm -rf "$WORK"' EXIT
cp -r "$SRC/examples" "$WORK/"
cd "$WORK"
"$BUILD/elspeth-mock-llm" --port 0 --port-file mock.port $(cat examples/llm_classify/mock.args 2>/dev/null) > mock.log 2>&1 & MOCK=$!
for _ in $(seq 100); do [ -s mock.port ] && break; sleep 0.05; done
export ELSPETH_LLM_URL="http://127.0.0.1:$(cat mock.port)/v1"
for e in fork_coalesce batch_aggregation error_routing explode llm_classify; do
  ELSPETH_OUT_DIR=$WORK/out-$e "$BUILD/elspeth" run -s examples/$e/settings.yaml -x > /dev/null
done
"$BUILD/elspeth" export --sqlite trail.db

#!/usr/bin/env bash
# By hand (not in CI: it needs the real ELSPETH 0.4.1, see
# /work/shared/elspeth-reference or ELSPETH_REF): runs our examples
# (fork/coalesce, aggregation, error routing, explode) and the LLM example
# against the mock, exports the trail, and compares every elspeth mcp tool's
# answer with ELSPETH's own analyzer's on it (mcp_vs_elspeth.py). The
# committed counterpart is tests/unit/test_mcp_elspeth.c, on a trail ELSPETH
# itself wrote.
# Usage: tests/reference/mcp_vs_elspeth.sh [BUILD_DIR]
source "$(dirname "$0")/trail.sh"
PYTHONPATH="$REF/shim:$REF/src" ELSPETH_FINGERPRINT_KEY=x python3 "$SRC/tests/reference/mcp_vs_elspeth.py" "$BUILD/elspeth" "$WORK/trail.db"

#!/usr/bin/env bash
# By hand (not in CI: it needs the real ELSPETH 0.4.1, see
# /work/shared/elspeth-reference or ELSPETH_REF): runs our examples
# (fork/coalesce, aggregation, error routing, explode) and the LLM
# example against the mock, exports the trail, and reads the export with
# ELSPETH's own LandscapeAnalyzer (tests/reference/elspeth_analyzer.py).
# Usage: tests/reference/elspeth_analyzer.sh [BUILD_DIR]
source "$(dirname "$0")/trail.sh"
PYTHONPATH="$REF/shim:$REF/src" ELSPETH_FINGERPRINT_KEY=x python3 "$SRC/tests/reference/elspeth_analyzer.py" "$BUILD/elspeth" "$WORK/trail.db" "$WORK"

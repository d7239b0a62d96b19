#!/usr/bin/env bash
# Runs each libFuzzer harness (settings loader, CSV reader, expression
# parser, prompt templates, LLM responses, web_scrape's HTML to markdown
# and text, keyword_filter's Python regex translation, the MCP server's
# JSON-RPC, shard manifests, the JSON source, row stories read back from
# LMDB) for SECONDS seconds (default 60). scripts/test.sh runs each for a
# few seconds; long runs (issue 33 asks for 4 minutes each) are by hand. Run from anywhere: it works in the repository
# (fuzz_mcp_rpc reads tests/fixtures/mcp/trail.sql).
#   ./scripts/fuzz.sh 300
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
CC=clang cmake -S . -B build-fuzz -DELSPETH_FUZZ=ON -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
status=0
for h in ${HARNESSES:-settings csv expr template llm_response html pyre mcp_rpc manifest json_source story}; do
  corpus=tests/fuzz/corpus/$h
  work=build-fuzz/corpus-$h
  mkdir -p "$work"
  echo "== fuzz_$h for ${SECS}s"
  dict=(); [ -f tests/fuzz/$h.dict ] && dict=(-dict=tests/fuzz/$h.dict)
  if ! build-fuzz/fuzz_$h "${dict[@]}" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
       "$work" "$corpus" 2>build-fuzz/fuzz_$h.log; then
    echo "fuzz_$h FAILED: see build-fuzz/fuzz_$h.log"; status=1
  fi
  grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" build-fuzz/fuzz_$h.log | tail -1 || true
done
exit $status

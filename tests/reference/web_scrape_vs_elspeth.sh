#!/usr/bin/env bash
# By hand: records what the real ELSPETH 0.4.1 makes of the test pages
# (tests/fixtures/web_scrape/*.html) as the expected files that
# tests/integration/test_web_scrape.sh checks our web_scrape against:
# expected/PAGE.FORMAT (the content, markdown | text | raw) and
# expected/fingerprints.txt ("PAGE FORMAT FINGERPRINT").
#
#   tests/reference/web_scrape_vs_elspeth.sh HTML2TEXT_GIT_DIR
#
# Needs the reference (/work/shared/elspeth-reference, ELSPETH_REF) and a
# git dir of github.com/Alir3z4/html2text holding its tag 2025.4.15 (the
# version ELSPETH 0.4.1's lock file pins; Debian's python3-html2text is
# 2020.1.16). BeautifulSoup is Debian's (4.11.2; ELSPETH asks >= 4.12, the
# html.parser builder is the same). The reference's stubs of html2text and
# bs4 are lifted for this run.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
H2T_GIT=${1:?usage: web_scrape_vs_elspeth.sh HTML2TEXT_GIT_DIR}
REF=${ELSPETH_REF:-$HOME/.cache/elspeth-ref}
[ -d "$REF/src/elspeth" ] || { echo "needs the ELSPETH reference in $REF (setup.sh)"; exit 2; }
PAGES=$SRC/tests/fixtures/web_scrape
OUT=$PAGES/expected
WORK=$(mktemp -d); trap 'kill $SRV 2>/dev/null; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib" "$OUT"
git --git-dir="$H2T_GIT" archive 2025.4.15 html2text | tar -x -C "$WORK/lib"
printf '__version__ = "2025.4.15"\n__version_tuple__ = (2025, 4, 15)\n' > "$WORK/lib/html2text/_version.py"
cd "$WORK"
python3 "$SRC/tests/integration/web_scrape_server.py" --pages "$PAGES" --port-file port --log server.log &
SRV=$!
for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
PORT=$(cat port)
names=$(cd "$PAGES" && ls *.html | sed 's/\.html$//' | sort)
{ echo "id,url"; for n in $names; do echo "$n,http://127.0.0.1:$PORT/pages/$n.html"; done; } > input.csv
: > "$OUT/fingerprints.txt.new"
for fmt in markdown text raw; do
  cat > $fmt.yaml <<EOF
source:
  plugin: csv
  on_success: urls
  options: {path: input.csv, schema: {mode: observed}, on_validation_failure: discard}
transforms:
- name: scraper
  plugin: web_scrape
  input: urls
  on_success: out
  on_error: failures
  options:
    url_field: url
    content_field: page_content
    fingerprint_field: page_fingerprint
    format: $fmt
    http: {abuse_contact: test@example.com, scraping_reason: reference, timeout: 5, allowed_hosts: ["127.0.0.1/32"]}
    schema: {mode: observed}
sinks:
  out: {plugin: json, on_write_failure: discard, options: {path: $fmt.jsonl, format: jsonl, schema: {mode: observed}}}
  failures: {plugin: json, on_write_failure: discard, options: {path: $fmt-failures.jsonl, format: jsonl, schema: {mode: observed}}}
landscape: {url: "sqlite:///$fmt.db"}
payload_store: {base_path: payloads}
rate_limit: {enabled: false}
EOF
  STUB_MODULES=opentelemetry,textual,pyrate_limiter,azure,chromadb,openai,litellm,langfuse,mcp \
  PYTHONPATH="$REF/shim:$REF/src:$WORK/lib" ELSPETH_FINGERPRINT_KEY=reference-key \
    python3 "$REF/shim/elspeth_run.py" $fmt.yaml > $fmt.log 2>&1 || { cat $fmt.log; exit 1; }
  [ ! -s $fmt-failures.jsonl ] || { echo "ELSPETH failed rows:"; cat $fmt-failures.jsonl; exit 1; }
  python3 - "$fmt" "$OUT" <<'PY'
import json, sys
fmt, out = sys.argv[1:3]
ext = {"markdown": "md", "text": "txt", "raw": "raw"}[fmt]
with open(out + "/fingerprints.txt.new", "a") as fp:
    for line in open(fmt + ".jsonl"):
        r = json.loads(line)
        with open(f"{out}/{r['id']}.{ext}", "w", encoding="utf-8", newline="") as f:
            f.write(r["page_content"])
        fp.write(f"{r['id']} {fmt} {r['page_fingerprint']}\n")
PY
done
sort "$OUT/fingerprints.txt.new" > "$OUT/fingerprints.txt"
rm "$OUT/fingerprints.txt.new"
echo "expected files written to $OUT ($(ls "$OUT" | wc -l) files)"

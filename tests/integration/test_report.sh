#!/usr/bin/env bash
# `elspeth report` end to end (docs/report.md): examples/llm_classify on
# 1,500 tickets against the bundled mock LLM server, interrupted with
# SIGINT and resumed, so the trail holds metric samples of two attempts;
# the report of that run rendered by headless Chromium: the screenshot is
# a PNG of the size asked for that is not blank (colours, ink in every
# band), the DOM holds every section, its charts (svg, paths, bars), the
# resume's mark, the explain links land on their stories, and nothing is
# loaded from elsewhere. Then a run without LLM calls (examples/quickstart)
# says "no data" where the LLM charts would be. Skipped (with a message)
# only when chromium is not installed.
source "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium; scripts/install-deps.sh lists it)"
  exit 0
fi
PY=$(python3 -c 'import sys; print(sys.executable)')
cp -r "$SRC/examples" "$WORK/examples"
cd "$WORK"
EX=examples/llm_classify
head -1501 "$EX/data/tickets.csv" > tickets.csv
sed "s#path: examples/llm_classify/data/tickets.csv#path: tickets.csv#" "$EX/settings.yaml" > llm.yaml
export ELSPETH_OUT_DIR="$WORK/out"

# chrome FILE.html OUT: a 1280x2400 screenshot (OUT.png) and the DOM
# after layout (OUT.dom).
chrome() {
  local flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --mute-audio
               --no-first-run --user-data-dir="$WORK/chrome" --window-size=1280,2400)
  timeout 60 "$CHROMIUM" "${flags[@]}" --screenshot="$2.png" "file://$1" > "$2.shot.log" 2>&1
  timeout 60 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$1" > "$2.dom" 2> "$2.dom.log"
}

# ------------------------------------------------------- a resumed LLM run
# shellcheck disable=SC2046
mock_start $(cat "$EX/mock.args")
"$ELSPETH" run -s llm.yaml --execute > run1.log 2>&1 &
pid=$!
started out/tickets.csv 20 && sleep 1.2
kill -INT "$pid" 2>/dev/null
wait "$pid"; rc=$?
is_rc() { [ "$1" = "$2" ] && pass "$3" || { fail "$3 (exit $1)"; sed 's/^/    /' "$4" | tail -5; }; }
is_rc "$rc" 3 "the run stops on SIGINT (exit 3, resumable)" run1.log
expect "the resume finishes it" 0 "Run completed" -- "$ELSPETH" resume latest -s llm.yaml --execute
mock_stop
expect "verify passes, samples included" 0 "verify: OK" -- "$ELSPETH" verify --run latest
samples=$("$ELSPETH" verify --run latest --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["checked"]["samples"])')
[ "$samples" -ge 4 ] && pass "the trail holds $samples metric samples" || fail "only $samples samples"

expect "report writes the page" 0 "written to report.html" -- "$ELSPETH" report --run latest -o report.html
size=$(wc -c < report.html)
[ "$size" -gt 50000 ] && pass "report.html: $size bytes" || fail "report.html: only $size bytes"
expect "report -o - writes it to stdout" 0 "</html>" -- "$ELSPETH" report -o -
expect "an unknown run is an error" 1 "no run 99" -- "$ELSPETH" report --run 99 -o never.html
[ ! -e never.html ] && pass "no page for an unknown run" || fail "never.html written"

chrome "$WORK/report.html" llm
"$PY" "$SRC/tests/integration/png_check.py" stats llm.png > llm.png.json 2> llm.png.err
"$PY" - llm.png.json <<'PY' && pass "screenshot: 1280x2400, not blank" || { fail "screenshot"; cat llm.png.json llm.png.err llm.shot.log | head -20; }
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["width"], s["height"]) == (1280, 2400), s
assert s["colours"] >= 50, s                  # charts, text, colours of outcomes
assert s["ink"] >= 0.1, s
assert sum(b >= 0.01 for b in s["bands"]) >= 9, s   # content all the way down
PY
"$PY" - llm.dom <<'PY' && pass "DOM: sections, charts, resume mark, explain links land, nothing external" || { fail "DOM"; }
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def check(cond, what):
    if not cond:
        print("    DOM:", what); sys.exit(1)
for sec in ("summary", "graph", "rows", "llm", "latency", "sinks", "slowest", "errors", "stories"):
    check(f'id="{sec}"' in dom, f"section {sec} missing")
svgs = dom.count("<svg")
check(svgs >= 8, f"{svgs} svg elements")          # graph, 2 rows, calls, 2 capacity, latency, sinks
check(dom.count("<path") >= 12, f"{dom.count('<path')} paths")
# node boxes, legend swatches and the bars of calls/s and refusals: how
# many bars depends on how long the run took (39 under ASan on a loaded
# machine), so the floor is what any run of this pipeline draws.
check(dom.count("<rect") >= 20, f"{dom.count('<rect')} rects")
rows = dom[dom.index('id="rows"'):dom.index('id="llm"')]
check("No data" not in rows, "rows over time has no data")
check(rows.count("<svg") == 2, "two charts of rows over time")
check(dom.count(">resume 1<") >= 2, "the resume is marked on the charts")
check("Capacity control: http://127.0.0.1:" in dom, "no capacity control section")
check("<title>ok: " in dom, "no calls drawn")
links = set(re.findall(r'href="#(row-\d+)"', dom))
ids = set(re.findall(r'id="(row-\d+)"', dom))
check(len(links) >= 20, f"{len(links)} explain links")
check(links <= ids, f"links without a story: {sorted(links - ids)[:5]}")
check("<script" not in dom and "<link" not in dom and "<img" not in dom, "script, link or img element")
check(not re.search(r'(src|href)="(https?:)?//', dom), "an external reference")
check("finish_reason" in dom, "the rows with errors show their error")
PY

# ------------------------------------------------------ a run without LLM
expect "quickstart runs" 0 "Run completed" -- \
  env ELSPETH_OUT_DIR="$WORK/out-quick" "$ELSPETH" run -s examples/quickstart/settings.yaml --execute
expect "its report" 0 "written to" -- "$ELSPETH" report -o quick.html
chrome "$WORK/quick.html" quick
"$PY" - quick.dom <<'PY' && pass "no LLM calls: 'no data' instead of the LLM charts" || fail "quickstart DOM"
import sys
dom = open(sys.argv[1], encoding="utf-8").read()
llm = dom[dom.index('id="llm"'):dom.index('id="latency"')]
assert "No data: this run made no LLM calls" in llm, llm[:400]
assert "No data: no metric samples of an LLM upstream" in llm, llm[:400]
assert "<svg" not in llm
assert dom.count("<svg") >= 5, dom.count("<svg")   # graph, rows x2, latency, sinks
PY
finish

#!/usr/bin/env bash
# `elspeth serve` under load (#29, docs/serve.md): the README demo's
# pipeline (examples/llm_classify, 3,000 rows, N = 64) against the
# bundled mock as the demo sets it, started through POST /api/runs on a
# loopback server (--no-auth), alone and with 50 clients polling
# GET /api/runs/{id} (every 100 ms each) and 20 WebSockets on
# /ws/runs/{id}, alternately (REPEATS times each), side by side in one run.
#
# Prints each run's rows/s (rows over the run's own started_at ..
# finished_at), the ratio loaded / alone (median of the runs), the
# pollers' answers (count, p50/p99 latency, errors) and what each
# WebSocket received: every one must end with the run's `completed`
# event and a 1000 close, with its progress counts never going back
# ("lost events" counts those that did not). Exit 1 when an event was
# lost or a poll failed.
#
# What it does not model: clients on other machines (loopback has no
# latency), a browser's own rendering, TLS (serve speaks plain HTTP;
# put nghttpx or another proxy in front).
#
# Usage: bench/serve_load.sh      Environment: REPEATS=2 POLLERS=50 SOCKETS=20
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out/serve_load
REPEATS=${REPEATS:-2}
POLLERS=${POLLERS:-50}
SOCKETS=${SOCKETS:-20}
EX=$ROOT/examples/llm_classify
mkdir -p "$OUT"/{bin,log}
source bench/lib.sh
llm_bench_bins "${BUILD:-build-release}"
PY=/usr/bin/python3
$PY -c 'import websocket' 2>/dev/null || { echo "bench/serve_load.sh needs python3-websocket (scripts/install-deps.sh)" >&2; exit 1; }

rm -rf "$OUT/root" && mkdir -p "$OUT/root/data"
cp "$EX/data/"* "$OUT/root/data/"
sed -e 's#examples/llm_classify/data#data#' -e 's#${ELSPETH_OUT_DIR:-examples/llm_classify/out}#out#' \
  "$EX/settings.yaml" > "$OUT/root/demo.yaml"
echo 'landscape: {url: "lmdb://./state"}' >> "$OUT/root/demo.yaml"

# shellcheck disable=SC2046
start_mock $(cat "$EX/mock.args")
export ELSPETH_LLM_URL="http://127.0.0.1:$PORT/v1"
"$BIN" serve --listen 127.0.0.1:0 --root "$OUT/root" --no-auth > "$OUT/log/serve.out" 2> "$OUT/log/serve.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; stop_mock' EXIT
for _ in $(seq 100); do grep -q "listening on port" "$OUT/log/serve.out" 2>/dev/null && break; sleep 0.05; done
SPORT=$(grep -o 'port [0-9]*' "$OUT/log/serve.out" | cut -d' ' -f2)

echo "bench/serve_load.sh at $REV on $(nproc) cores; $(date -u +%FT%TZ); $POLLERS pollers, $SOCKETS WebSockets"
$PY - "$SPORT" "$PORT" "$REPEATS" "$POLLERS" "$SOCKETS" <<'PY'
import datetime, json, statistics, sys, threading, time, urllib.request
import websocket

sport, mport, repeats, npoll, nsock = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
base = "http://127.0.0.1:%s" % sport

def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())

def mock_reset():
    urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/admin/reset" % mport,
                                                  data=b"", method="POST")).read()

def when(s):
    return datetime.datetime.fromisoformat(s).timestamp()

def one(loaded):
    mock_reset()
    rid = call("POST", "/api/runs", {"settings_path": "demo.yaml"})["run_id"]
    stop = threading.Event()
    lat, errors, socks = [], [0], []
    def poller():
        while not stop.is_set():
            t = time.monotonic()
            try:
                call("GET", "/api/runs/" + rid)
                lat.append(time.monotonic() - t)
            except Exception:
                errors[0] += 1
            time.sleep(0.1)
    def watcher(i):
        got = {"messages": 0, "progress": [], "last": None, "close": None}
        socks.append(got)
        try:
            ws = websocket.create_connection("ws://127.0.0.1:%s/ws/runs/%s" % (sport, rid), timeout=120)
            while True:
                op, data = ws.recv_data(control_frame=True)
                if op == websocket.ABNF.OPCODE_CLOSE:
                    got["close"] = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
                    break
                if op == websocket.ABNF.OPCODE_TEXT:
                    m = json.loads(data)
                    got["messages"] += 1
                    got["last"] = m.get("event_type")
                    if m.get("event_type") == "progress":
                        got["progress"].append(m["data"]["rows_processed"])
        except Exception as e:
            got["error"] = str(e)
    threads = []
    if loaded:
        threads = [threading.Thread(target=poller) for _ in range(npoll)]
        threads += [threading.Thread(target=watcher, args=(i,)) for i in range(nsock)]
        for t in threads:
            t.start()
    while True:
        s = call("GET", "/api/runs/" + rid)
        if s["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join()
    rows = s["rows_processed"]
    secs = when(s["finished_at"]) - when(s["started_at"])
    lost = sum(1 for g in socks if g["last"] != "completed" or g["close"] != 1000 or
               g["progress"] != sorted(g["progress"]) or g.get("error"))
    return {"status": s["status"], "rows": rows, "secs": secs, "rps": rows / secs, "polls": len(lat),
            "p50": statistics.median(lat) if lat else 0,
            "p99": sorted(lat)[int(0.99 * len(lat))] if lat else 0, "errors": errors[0],
            "sockets": len(socks), "lost": lost,
            "events": sum(g["messages"] for g in socks)}

alone, loaded, bad = [], [], 0
print("%-7s %-9s %6s %7s %7s %7s %8s %8s %6s %7s %7s %5s" % ("mode", "status", "rows", "secs", "rows/s",
      "polls", "p50 ms", "p99 ms", "errors", "sockets", "events", "lost"))
for rep in range(repeats):
    for mode in ("alone", "loaded"):
        r = one(mode == "loaded")
        (loaded if mode == "loaded" else alone).append(r["rps"])
        bad += r["errors"] + r["lost"] + (r["status"] != "completed")
        print("%-7s %-9s %6d %7.2f %7.1f %7d %8.1f %8.1f %6d %7d %7d %5d" % (mode, r["status"], r["rows"], r["secs"],
              r["rps"], r["polls"], r["p50"] * 1000, r["p99"] * 1000, r["errors"], r["sockets"], r["events"], r["lost"]))
ratio = statistics.median(loaded) / statistics.median(alone)
print("throughput loaded / alone (medians): %.3f" % ratio)
sys.exit(1 if bad else 0)
PY

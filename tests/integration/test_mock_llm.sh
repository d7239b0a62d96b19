#!/usr/bin/env bash
# elspeth-mock-llm (bench/mock_llm, docs/mock_llm.md): start-up, OpenAI and
# Azure answers and their determinism, keys, capacity (max-concurrent, rps,
# schedule), every injected fault, structured answers, the admin endpoints,
# HTTP details (keep-alive, pipelining, 100-continue, chunked) and 2000
# concurrent connections; then the provider-like limits (limiter modes,
# refused requests that count, token budgets, hints, rate-limit headers,
# quota errors, capacity and goodput, the series) in mock_llm_limits.py.
# The client is python3 (stdlib only); it prints "ok - ..." / "FAIL - ..."
# lines that are counted here.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
MOCK="$(dirname "$ELSPETH")/elspeth-mock-llm"
[ -x "$MOCK" ] || { fail "no mock binary at $MOCK"; finish; exit; }

expect "--help lists the options" 0 "--schedule" -- "$MOCK" --help
expect "--help lists the fault rates" 0 "--truncated-rate" -- "$MOCK" --help
expect "unknown option: exit 2" 2 "unknown option '--nope'" -- "$MOCK" --nope 1
expect "bad latency: exit 2" 2 "--latency: bad value 'soon'" -- "$MOCK" --latency soon
expect "bad schedule: exit 2" 2 "--schedule: bad value" -- "$MOCK" --schedule 5:0
expect "bad status: exit 2" 2 "expected 429, 503 or 529" -- "$MOCK" --over-capacity-status 500
expect "fault rates over 1: exit 2" 2 "add up to" -- "$MOCK" --drop-rate 0.6 --stall-rate 0.6
expect "missing value: exit 2" 2 "--port needs a value" -- "$MOCK" --port
expect "--help lists the limiter options" 0 "--refused-weight" -- "$MOCK" --help
expect "bad limiter: exit 2" 2 "expected rolling|fixed|bucket" -- "$MOCK" --limiter leaky
expect "bad hint: exit 2" 2 "--hint: bad value 'soon'" -- "$MOCK" --hint soon
expect "bad concurrency schedule: exit 2" 2 "a whole N" -- "$MOCK" --concurrency-schedule 1.5:2
expect "transient quota needs a lock: exit 2" 2 "--quota-lock-ms" -- "$MOCK" --quota credits-transient

cat > client.py <<'PY'
import asyncio, json, os, re, resource, signal, subprocess, sys, time

MOCK = sys.argv[1]
HERE = sys.argv[2]  # tests/integration, where mock_llm_limits.py lives
LABELS = ["positive", "negative", "neutral"]
CHAT = "/v1/chat/completions"

def check(name, cond, detail=""):
    print(("ok - " if cond else "FAIL - ") + name + ("" if cond else ": " + str(detail)[:400]), flush=True)
    return cond

class Resp:
    def __init__(self, status=None, headers=None, body=b"", truncated=False, closed=False):
        self.status, self.headers, self.body = status, headers or {}, body
        self.truncated, self.closed = truncated, closed
    def json(self):
        return json.loads(self.body)
    def __repr__(self):
        return f"<{self.status} closed={self.closed} trunc={self.truncated} {self.body[:200]!r}>"

def start(*args, name="mock"):
    pf = os.path.abspath(name + ".port")
    p = subprocess.Popen([MOCK, "--port", "0", "--port-file", pf, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.match(r"mock-llm listening on 127\.0\.0\.1:(\d+)$", line.strip())
    check(f"{name}: prints its address", m, line)
    port = int(m.group(1))
    check(f"{name}: port file holds the port", open(pf).read().strip() == str(port))
    return p, port

def stop(p, name="mock"):
    p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill(); out, err = p.communicate()
    check(f"{name}: SIGTERM exits 0 quietly", p.returncode == 0 and "ERROR" not in err,
          f"rc={p.returncode} {err[-2000:]}")

def encode(method, path, body=None, headers=None):
    data = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
    h = {"Host": "127.0.0.1", "Content-Type": "application/json", "Content-Length": str(len(data))}
    h.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None)
    return head.encode() + b"\r\n" + data

async def read_response(r):
    try:
        head = await r.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        return Resp(closed=True, body=e.partial)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if l)}
    n = int(headers.get("content-length", 0))
    try:
        return Resp(status, headers, await r.readexactly(n))
    except asyncio.IncompleteReadError as e:
        return Resp(status, headers, e.partial, truncated=True)

async def http(port, method, path, body=None, headers=None, timeout=20):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    try:
        w.write(encode(method, path, body, headers))
        await w.drain()
        return await asyncio.wait_for(read_response(r), timeout)
    finally:
        w.close()

def msgs(text, system="Classify the sentiment."):
    return {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": system},
                                                  {"role": "user", "content": text}]}

async def chat(port, text="I love it", **kw):
    return await http(port, "POST", CHAT, msgs(text), **kw)

async def stats(port):
    return (await http(port, "GET", "/admin/stats")).json()

async def config(port, **opts):
    r = await http(port, "POST", "/admin/config", {k.replace("_", "-"): v for k, v in opts.items()})
    assert r.status == 200, r
    return r.json()

async def reset(port):
    await http(port, "POST", "/admin/reset")

def is_error(resp, status):
    try:
        e = resp.json()["error"]
        return resp.status == status and isinstance(e["message"], str) and "type" in e and "code" in e
    except Exception:
        return False

# ------------------------------------------------------------------ answers
async def answers(port):
    r1 = await chat(port, "The food was great")
    r2 = await chat(port, "The food was great")
    b = r1.json() if r1.status == 200 else {}
    c = b.get("choices", [{}])[0]
    check("openai: 200 with a chat.completion", r1.status == 200 and b.get("object") == "chat.completion", r1)
    check("openai: id is chatcmpl-<24 hex>", re.fullmatch(r"chatcmpl-[0-9a-f]{24}", b.get("id", "")), b)
    check("openai: model echoed, created fixed", b.get("model") == "gpt-4o-mini" and b.get("created") == 1700000000, b)
    check("openai: content is a label, finish stop", c.get("message", {}).get("content") in LABELS
          and c.get("finish_reason") == "stop" and c["message"]["role"] == "assistant", c)
    u = b.get("usage", {})
    check("openai: usage adds up", u.get("prompt_tokens") == 7 and u.get("completion_tokens") == 1
          and u.get("total_tokens") == 8, u)
    check("determinism: same request, same bytes", r1.body == r2.body)
    got = {(await chat(port, f"review number {i}")).json()["choices"][0]["message"]["content"] for i in range(30)}
    check("label mode spreads over the labels", got == set(LABELS), got)
    r = await http(port, "POST", "/api/v1/chat/completions", msgs("The food was great"))
    check("a base path prefix works, same answer", r.status == 200 and r.body == r1.body, r)
    az = "/openai/deployments/gpt4-prod/chat/completions"
    r = await http(port, "POST", az + "?api-version=2024-02-01", msgs("The food was great"), {"api-key": "x"})
    check("azure: 200, model is the deployment", r.status == 200 and r.json()["model"] == "gpt4-prod", r)
    check("azure: same content as openai", r.status == 200 and
          r.json()["choices"] == b.get("choices") and r.json()["id"] == b.get("id"), r)
    r = await http(port, "POST", az, msgs("x"))
    check("azure: no api-version -> 400", is_error(r, 400) and "api-version" in r.json()["error"]["message"], r)
    await config(port, answer="echo")
    r = await chat(port, "say it back: ünïcode \"quoted\"\nline two")
    check("echo: content is the last user message",
          r.json()["choices"][0]["message"]["content"] == "say it back: ünïcode \"quoted\"\nline two", r)
    await config(port, answer="label", labels="yes,no")
    got = {(await chat(port, f"q {i}")).json()["choices"][0]["message"]["content"] for i in range(20)}
    check("labels from /admin/config", got == {"yes", "no"}, got)
    await config(port, labels=None)
    r = await chat(port, "The food was great")
    check("labels back to the default: same bytes as before", r.body == r1.body)
    return r1.body

# --------------------------------------------------------------- structured
SCHEMA = {"type": "object", "properties": {
    "sentiment": {"type": "string"}, "score": {"type": "integer"},
    "confidence": {"type": "number"}, "sarcastic": {"type": "boolean"},
    "topic": {"type": "string", "enum": ["food", "service", "price"]},
    "stars": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["sentiment", "score", "confidence", "sarcastic", "topic", "stars"]}

def conforms(o):
    return (isinstance(o, dict) and set(o) == set(SCHEMA["properties"])
            and o["sentiment"] in LABELS and type(o["score"]) is int and 0 <= o["score"] <= 100
            and type(o["confidence"]) is float and 0 <= o["confidence"] <= 1
            and round(o["confidence"], 2) == o["confidence"] and type(o["sarcastic"]) is bool
            and o["topic"] in ("food", "service", "price") and 1 <= o["stars"] <= 5)

async def structured(port):
    topics, bad = set(), []
    for i in range(25):
        body = msgs(f"text {i}")
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}
        r = await http(port, "POST", CHAT, body)
        o = json.loads(r.json()["choices"][0]["message"]["content"])
        if not conforms(o):
            bad.append(o)
        topics.add(o.get("topic"))
    check("response_format json_schema: every answer conforms", not bad, bad[:2])
    check("enum values spread", len(topics) >= 2, topics)
    line = "Answer with a JSON object matching this JSON Schema: " + json.dumps(SCHEMA)
    r = await chat(port, "Rate this review.\n" + line)
    content = r.json()["choices"][0]["message"]["content"]
    check("standard prompt mode: a conforming object", conforms(json.loads(content)), content)
    await config(port, fence_rate=1)
    r = await chat(port, "Rate this review.\n" + line)
    f = r.json()["choices"][0]["message"]["content"]
    check("fence-rate 1: fenced in ```json", f.startswith("```json\n") and f.endswith("\n```")
          and json.loads(f[8:-4]) == json.loads(content), f)
    await config(port, fence_rate=0.5)
    fenced = [(await chat(port, f"r{i}\n" + line)).json()["choices"][0]["message"]["content"].startswith("```")
              for i in range(40)]
    again = [(await chat(port, f"r{i}\n" + line)).json()["choices"][0]["message"]["content"].startswith("```")
             for i in range(40)]
    check("fence-rate 0.5: some fenced, decided by the prompt", 5 < sum(fenced) < 35 and fenced == again, sum(fenced))
    await config(port, fence_rate=0)

# ------------------------------------------------------- errors, keys, http
async def errors(port):
    r = await http(port, "GET", "/nowhere")
    check("unknown path -> 404 error JSON", is_error(r, 404), r)
    r = await http(port, "GET", CHAT)
    check("GET on chat -> 405 with Allow", is_error(r, 405) and r.headers.get("allow") == "POST", r)
    r = await http(port, "POST", "/admin/stats")
    check("POST on /admin/stats -> 405", is_error(r, 405), r)
    r = await http(port, "POST", CHAT, b"{not json")
    check("bad JSON body -> 400 error JSON", is_error(r, 400), r)
    r = await http(port, "POST", CHAT, {"model": "m"})
    check("no messages -> 400", is_error(r, 400) and "messages" in r.json()["error"]["message"], r)
    await config(port, require_key="sk-test")
    r = await chat(port, headers={"Authorization": "Bearer wrong"})
    check("wrong Bearer key -> 401", is_error(r, 401) and r.json()["error"]["code"] == "invalid_api_key", r)
    r = await chat(port)
    check("no key -> 401", is_error(r, 401), r)
    r = await chat(port, headers={"Authorization": "Bearer sk-test"})
    check("right Bearer key -> 200", r.status == 200, r)
    r = await http(port, "POST", "/openai/deployments/d/chat/completions?api-version=1", msgs("x"),
                   {"api-key": "sk-test"})
    check("right api-key -> 200", r.status == 200, r)
    r = await http(port, "GET", "/admin/config")
    check("GET /admin/config hides the key", r.json()["require-key"] == "(set)", r)
    await config(port, require_key="")
    r = await http(port, "POST", "/admin/config", {"rps": "fast"})
    check("/admin/config: bad value -> 400 naming it", is_error(r, 400) and "--rps" in r.json()["error"]["message"], r)
    r = await http(port, "POST", "/admin/config", {"port": 1})
    check("/admin/config: start-up option refused", is_error(r, 400), r)
    r = await http(port, "POST", "/admin/config", {"latency": "fixed:5", "drop-rate": 2})
    cfg = (await http(port, "GET", "/admin/config")).json()
    check("/admin/config: all or nothing", is_error(r, 400) and cfg["latency"] == "fixed:0", cfg)
    # raw HTTP: keep-alive + pipelining, 100-continue, chunked, HTTP/1.0
    rd, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(encode("POST", CHAT, msgs("one")) + encode("POST", CHAT, msgs("two")))
    a, b = await read_response(rd), await read_response(rd)
    w.write(encode("POST", CHAT, msgs("three")))
    c = await read_response(rd)
    check("keep-alive and pipelining: answers in order", [x.status for x in (a, b, c)] == [200] * 3
          and a.body == (await chat(port, "one")).body and b.body == (await chat(port, "two")).body)
    body = json.dumps(msgs("x" * 5000)).encode()
    w.write(encode("POST", CHAT, b"", {"Content-Length": str(len(body)), "Expect": "100-continue"}))
    cont = await asyncio.wait_for(rd.readuntil(b"\r\n\r\n"), 5)
    w.write(body)
    d = await read_response(rd)
    check("Expect: 100-continue answered, then the body served", cont.startswith(b"HTTP/1.1 100") and d.status == 200, (cont, d))
    w.write(encode("POST", CHAT, b"", {"Content-Length": None, "Transfer-Encoding": "chunked"}) + b"0\r\n\r\n")
    e = await read_response(rd)
    rest = await asyncio.wait_for(rd.read(), 5)
    check("chunked body -> 411, then close", e.status == 411 and rest == b"", e)
    w.close()
    rd, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(encode("POST", CHAT, msgs("old")).replace(b"HTTP/1.1", b"HTTP/1.0", 1))
    f = await read_response(rd)
    rest = await asyncio.wait_for(rd.read(), 5)
    check("HTTP/1.0: answered, Connection: close", f.status == 200 and f.headers.get("connection") == "close" and rest == b"", f)
    w.close()

# ----------------------------------------------------------------- capacity
async def capacity(port):
    await config(port, max_concurrent=5, latency="fixed:400", retry_after=2)
    await reset(port)
    rs = await asyncio.gather(*(chat(port, f"c{i}") for i in range(12)))
    ok = [r for r in rs if r.status == 200]
    over = [r for r in rs if r.status == 429]
    check("max-concurrent 5: 5 served, 7 get 429", len(ok) == 5 and len(over) == 7, [r.status for r in rs])
    check("429 carries Retry-After: 2 and an error JSON",
          all(r.headers.get("retry-after") == "2" and is_error(r, 429) for r in over), over[:1])
    s = await stats(port)
    check("stats: peak 5, admitted 5, by_status", s["peak_concurrency"] == 5 and s["admitted"] == 5
          and s["by_status"] == {"200": 5, "429": 7} and s["requests"] == 12 and s["current_concurrency"] == 0, s)
    await config(port, max_concurrent=0, latency="fixed:0", retry_after=0.2, rps=10, over_capacity_status=503)
    await reset(port)
    rs = [await chat(port, f"r{i}") for i in range(25)]
    st = [r.status for r in rs]
    check("rps 10: 10 admitted in a second, then 503", st[:10] == [200] * 10 and set(st[10:]) == {503}, st)
    check("Retry-After rounded up to whole seconds", rs[-1].headers.get("retry-after") == "1", rs[-1].headers)
    await config(port, rps=0, retry_after=0, over_capacity_status=429, schedule="50:1,5:1,0:60")
    await reset(port)
    rd, w = await asyncio.open_connection("127.0.0.1", port)
    t0, seen = time.monotonic(), []
    while time.monotonic() - t0 < 1.85:
        w.write(encode("POST", CHAT, msgs("s")))
        r = await read_response(rd)
        seen.append((time.monotonic() - t0, r.status))
        await asyncio.sleep(0.002)
    w.close()
    s = await stats(port)
    aps = s["admitted_per_second"]
    # The 60 s phase of rate 0 keeps the schedule from coming round again
    # should the client's last requests arrive after 2 s.
    check("schedule 50:1,5:1,0:60: 50 admitted in second 0, 5 in second 1",
          len(aps) >= 2 and aps[0] == 50 and aps[1] == 5, aps)
    check("schedule: the rest answered 429", sum(1 for _, st in seen if st == 429) == len(seen) - sum(aps[:2]),
          (len(seen), aps))
    await config(port, schedule="")

# ------------------------------------------------------------------- faults
async def faults(port):
    await reset(port)
    await config(port, error_500_rate=1)
    r = await chat(port, "f")
    check("error-500-rate 1: 500 with error JSON", is_error(r, 500), r)
    await config(port, error_500_rate=0, malformed_rate=1)
    r = await chat(port, "f")
    try:
        json.loads(r.body); parsed = True
    except ValueError:
        parsed = False
    check("malformed-rate 1: 200 whose body is not JSON", r.status == 200 and not parsed and r.body, r)
    await config(port, malformed_rate=0, truncated_rate=1)
    r = await chat(port, "f")
    check("truncated-rate 1: fewer bytes than Content-Length, then close",
          r.status == 200 and r.truncated and 0 < len(r.body) < int(r.headers["content-length"]), r)
    await config(port, truncated_rate=0, stall_rate=1, stall_ms=300)
    t0 = time.monotonic()
    r = await chat(port, "f")
    dt = time.monotonic() - t0
    check("stall-rate 1, stall-ms 300: closed unanswered after ~300 ms", r.closed and not r.body and 0.25 < dt < 3, (r, dt))
    # a client that gives up on a stalled request frees its slot, and the
    # server accounts only the time the slot was held (not --stall-ms)
    s0 = (await stats(port))["slot_seconds"]
    await config(port, stall_ms=3000)
    try:
        await chat(port, "f", timeout=0.3)
        gave_up = False
    except asyncio.TimeoutError:
        gave_up = True
    await asyncio.sleep(0.1)
    s = await stats(port)
    held = s["slot_seconds"] - s0
    check("a stalled request abandoned after 0.3 s: ~0.3 s of slot accounted, slot freed",
          gave_up and 0.25 < held < 1.0 and s["current_concurrency"] == 0, (held, s))
    await config(port, stall_rate=0, drop_rate=1)
    t0 = time.monotonic()
    r = await chat(port, "f")
    check("drop-rate 1: closed at once without a byte", r.closed and not r.body and time.monotonic() - t0 < 1, r)
    await config(port, drop_rate=0, length_rate=1, answer="echo")
    r = await chat(port, "one two three four five six")
    c = r.json()["choices"][0]
    check("length-rate 1: finish_reason length, content cut",
          c["finish_reason"] == "length" and c["message"]["content"] == "one two three", c)
    await config(port, length_rate=0, answer="label")
    s = await stats(port)
    check("stats: one of each fault", s["faults"] == {"drop": 1, "stall": 2, "error_500": 1, "malformed": 1,
                                                     "truncated": 1, "length": 1}, s["faults"])
    check("stats: faulted requests are admitted", s["admitted"] == 7 and s["requests"] == 7, s)
    check("stats: requests = answered + stalls + drops",
          s["requests"] == sum(s["by_status"].values()) + s["faults"]["stall"] + s["faults"]["drop"], s)
    # a retried identical request can meet another fate; the sequence of
    # fates is a function of seed, request and attempt number
    await config(port, error_500_rate=0.5)
    await reset(port)
    seq1 = [(await chat(port, "same")).status for _ in range(24)]
    await reset(port)
    seq2 = [(await chat(port, "same")).status for _ in range(24)]
    check("attempts of one request meet different fates", set(seq1) == {200, 500}, seq1)
    check("after reset the same attempts meet the same fates", seq1 == seq2, (seq1, seq2))
    await config(port, seed=2)
    await reset(port)
    seq3 = [(await chat(port, "same")).status for _ in range(24)]
    check("another seed, another sequence", seq3 != seq1, seq3)
    await config(port, error_500_rate=0, seed=1)

async def admin(port):
    s = await stats(port)
    check("stats has every field", all(k in s for k in ("requests", "by_status", "faults", "admitted",
          "current_concurrency", "peak_concurrency", "admitted_per_second", "uptime_seconds")), s)
    await http(port, "GET", "/admin/stats")
    check("admin requests are not chat requests", (await stats(port))["requests"] == s["requests"])
    await reset(port)
    s = await stats(port)
    check("reset zeroes the counters", s["requests"] == 0 and s["admitted"] == 0 and s["by_status"] == {}
          and s["peak_concurrency"] == 0 and sum(s["admitted_per_second"]) == 0 and s["uptime_seconds"] > 0, s)

# -------------------------------------------------------- many connections
async def many(port, n):
    conns = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port) for _ in range(n)))
    t0 = time.monotonic()
    for i, (_, w) in enumerate(conns):
        w.write(encode("POST", CHAT, msgs(f"row {i}")))
    rs = await asyncio.gather(*(asyncio.wait_for(read_response(r), 30) for r, _ in conns))
    dt = time.monotonic() - t0
    for _, w in conns:
        w.close()
    check(f"{n} concurrent connections all answered 200", all(r.status == 200 for r in rs),
          [r for r in rs if r.status != 200][:3])
    # one at a time, or a small pool, would take n x 500 ms
    check(f"{n} x 500 ms answered in under 10 s ({dt:.2f} s)", 0.45 < dt < 10, dt)
    s = await stats(port)
    # all n are in flight at once unless the server (under TSan, say) reads
    # the first requests more than 500 ms before the last
    check(f"peak concurrency in the thousands ({s['peak_concurrency']})", s["peak_concurrency"] >= min(n, 1000), s)

async def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    p, port = start("--seed", "1", name="mock A")
    try:
        first = await answers(port)
        await structured(port)
        await errors(port)
        await capacity(port)
        await faults(port)
        await admin(port)
    finally:
        stop(p, "mock A")
    n = min(2000, hard // 2 - 50)
    p, port = start("--latency", "fixed:500", "--max-concurrent", "4000", name="mock B")
    try:
        r = await chat(port, "The food was great")
        check("another process, same options: same bytes", r.body == first)
        await many(port, n)
    finally:
        stop(p, "mock B")
    sys.path.insert(0, HERE)
    import mock_llm_limits
    await mock_llm_limits.run(sys.modules[__name__])

asyncio.run(main())
PY
# A traceback or timeout of the client counts as a failure too.
while IFS= read -r line; do
  case "$line" in
    "ok - "*) pass "${line#ok - }" ;;
    "FAIL - "*) fail "${line#FAIL - }" ;;
    "client exit "*) [ "${line#client exit }" = 0 ] || fail "client.py exited ${line#client exit }" ;;
    *) echo "    $line" ;;
  esac
done < <(timeout 180 python3 client.py "$MOCK" "$SRC/tests/integration" 2>&1; echo "client exit $?")
finish

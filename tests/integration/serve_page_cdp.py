"""Drives elspeth serve's page in headless chromium over the DevTools
protocol (test_serve_page.sh): log in, start the demo pipeline, watch the
numbers move, read row 42's story; screenshots at each step. Prints one
"ok - ..." or "FAIL - ..." line per check.

argv: chromium's DevTools port, the page's url, the user, the password,
the settings path to run, the directory for the screenshots.
"""
import base64
import json
import struct
import sys
import time
import urllib.request
import zlib

import websocket

port, url, user, password, settings, shots = sys.argv[1:7]
fails = 0


def check(name, ok):
    global fails
    print(("ok - " if ok else "FAIL - ") + name, flush=True)
    fails += not ok


targets = json.loads(urllib.request.urlopen("http://127.0.0.1:%s/json/list" % port).read())
page = next(t for t in targets if t["type"] == "page")
ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
seq = 0


def cdp(method, **params):
    global seq
    seq += 1
    ws.send(json.dumps({"id": seq, "method": method, "params": params}))
    while True:
        m = json.loads(ws.recv())
        if m.get("id") == seq:
            if "error" in m:
                raise RuntimeError("%s: %s" % (method, m["error"]))
            return m.get("result", {})


def js(expr):
    r = cdp("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
    if "exceptionDetails" in r:
        raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
    return r["result"].get("value")


def text(id_):
    return js("(document.getElementById(%s) || {}).textContent || ''" % json.dumps(id_))


def wait(cond, secs, step=0.1):
    end = time.time() + secs
    while time.time() < end:
        try:
            v = cond()
        except RuntimeError:  # the page is still loading
            v = None
        if v:
            return v
        time.sleep(step)
    return None


def png_stats(data):
    """(width, height, distinct scanlines): a blank page has a handful,
    a page with text and panels hundreds."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    pos, idat = 8, b""
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = len(raw) // h
    return w, h, len({raw[i * stride:(i + 1) * stride] for i in range(h)})


def shot(name):
    data = base64.b64decode(cdp("Page.captureScreenshot", format="png")["data"])
    with open("%s/%s.png" % (shots, name), "wb") as f:
        f.write(data)
    return png_stats(data)


cdp("Page.enable")
cdp("Runtime.enable")
cdp("Emulation.setDeviceMetricsOverride", width=1280, height=800, deviceScaleFactor=1, mobile=False)
cdp("Page.navigate", url=url)
check("the page loads and asks for a login",
      wait(lambda: js("!document.getElementById('login').classList.contains('hidden')"), 15))
w, h, colours = shot("1-login")
check("the login screenshot is a drawn page (%dx%d, %d distinct scanlines)" % (w, h, colours), colours > 40)

js("document.getElementById('login-user').value = 'nobody';"
   "document.getElementById('login-pass').value = 'wrong';"
   "document.getElementById('login-btn').click()")
check("a wrong password is refused on the page",
      wait(lambda: "Invalid username or password" in text("login-err"), 10))
js("document.getElementById('login-user').value = %s;"
   "document.getElementById('login-pass').value = %s;"
   "document.getElementById('login-btn').click()" % (json.dumps(user), json.dumps(password)))
check("logging in shows the app", wait(lambda: js(
    "!document.getElementById('app').classList.contains('hidden')"), 10))
check("the header names the user", wait(lambda: user in text("who"), 5))

js("document.getElementById('settings-path').value = %s;"
   "document.getElementById('start-btn').click()" % json.dumps(settings))
check("the run starts and is selected", wait(lambda: text("run-status") in ("running", "progress"), 30))
seen = []


def moved():
    v = text("rows-processed")
    if v.isdigit() and (not seen or int(v) != seen[-1]):
        seen.append(int(v))
    return len([x for x in seen if x > 0]) >= 3


moving = wait(moved, 60, 0.2)
check("the live numbers move over the WebSocket (rows processed seen: %s)" %
      ", ".join(map(str, seen[:8])), moving)
check("... and only upwards", seen == sorted(seen))
def upstream_live():
    t = text("upstreams")
    return "classify" in t and "of 64" in t


check("the live panel shows the llm upstream's window and requests while running",
      wait(upstream_live, 20))
seen_inflight = []


def inflight_moving():
    v = js("(() => { for (const tr of document.querySelectorAll('#live tr'))"
           " if (tr.cells[0].textContent === 'in flight') return tr.cells[1].textContent; return ''; })()")
    seen_inflight.append(v)
    return v.isdigit() and 0 < int(v) <= 64


check("... and the rows in flight (%s)" % ", ".join(seen_inflight[-3:]) if wait(inflight_moving, 10)
      else "... rows in flight never shown: %s" % seen_inflight[-5:], bool(seen_inflight) and
      seen_inflight[-1].isdigit() and 0 < int(seen_inflight[-1]) <= 64)
check("the graph is drawn: source, classify, route and the three sinks",
      wait(lambda: js("[...document.querySelectorAll('#graph g.node')].map(g => g.dataset.name).sort().join(',')")
           == "classify,errors,route,source,tickets,urgent", 10))
check("... with its edges, the error path dashed",
      js("document.querySelectorAll('#graph path.edge').length") >= 5 and
      js("document.querySelectorAll('#graph path.edge[stroke-dasharray]').length") >= 1)
check("the settings text is shown", "plugin: llm" in text("yaml") and "demo.yaml" in text("yaml-name"))
w, h, colours = shot("2-running")
mid = text("rows-processed")
check("the running screenshot is a drawn page (%d distinct scanlines; rows %s)" % (colours, mid), colours > 100)
check("the run completes on the page", wait(lambda: text("run-status") == "completed", 120))
check("its final numbers: %s rows, %s failed, Landscape run %s" % (
    text("rows-processed"), text("rows-failed"), text("landscape-run")),
    text("rows-processed") == "3000" and text("landscape-run") == "1")
check("the runs table lists it completed", wait(lambda: "completed" in text("runs"), 10))
check("errors as they happen: the rows the llm failed, with their node",
      wait(lambda: js("document.querySelectorAll('#errors tbody tr').length") >= 1 and
           "classify" in text("errors"), 10))
check("the last sample: every row written, the urgent sink among them",
      wait(lambda: "written to urgent" in text("calls") and "rowsreleased3000" in text("live").replace(" ", ""), 10))

js("document.getElementById('row-n').value = 42; document.getElementById('row-btn').click()")
check("row 42's story shows", wait(lambda: "Row 42" in text("story"), 15))
story = text("story")
check("... with its source data, its llm state and its outcome",
      "Ticket 42" in story and "classify (llm): completed" in story and
      ("ROUTED" in story or "COMPLETED" in story))
w, h, colours = shot("3-row-42")
check("the row-42 screenshot is a drawn page (%d distinct scanlines)" % colours, colours > 150)
print("# %d checks failed" % fails)
sys.exit(1 if fails else 0)

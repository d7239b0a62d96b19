"""Watches a WebSocket of `elspeth serve` (test_serve.sh, test_serve_oidc.sh):
prints {"close": CODE, "reason": ..., "messages": [the text messages]} as
one JSON line when the server closes it.
  ws_watch.py URL
"""
import json, sys, websocket
ws = websocket.create_connection(sys.argv[1], timeout=60)
msgs = []
while True:
    op, data = ws.recv_data(control_frame=True)
    if op == websocket.ABNF.OPCODE_CLOSE:
        code = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
        print(json.dumps({"close": code, "reason": data[2:].decode(), "messages": msgs}))
        break
    if op == websocket.ABNF.OPCODE_TEXT:
        msgs.append(json.loads(data))

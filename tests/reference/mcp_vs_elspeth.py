"""Every elspeth mcp tool against ELSPETH 0.4.1's own analyzer, on one trail.

    python3 mcp_vs_elspeth.py ELSPETH_BINARY TRAIL.db     (ELSPETH on PYTHONPATH)

Calls each run-level tool for every run, explain_token for every token and
every row, describe_schema and list_runs, through `elspeth mcp` (JSON-RPC on
stdio) and through ELSPETH's LandscapeAnalyzer, and compares the answers
value for value. Where ELSPETH raises, we must answer a tool error. Known
differences (docs/mcp.md): plugins_failing is a set (compared sorted);
list_nodes' schema_fields, which ELSPETH cannot serialise, compared as the
lists they hold. Exit 1 on any difference.
"""
import json
import sqlite3
import subprocess
import sys
import types

from elspeth.mcp.analyzer import LandscapeAnalyzer

binary, db = sys.argv[1], sys.argv[2]
an = LandscapeAnalyzer("sqlite:///" + db)
srv = subprocess.Popen([binary, "mcp", "-d", db], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
seq = 0


def plain(o):
    if isinstance(o, (types.MappingProxyType, dict)):
        return {k: plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [plain(v) for v in o]
    return o


def rpc(method, params):
    global seq
    seq += 1
    srv.stdin.write(json.dumps({"jsonrpc": "2.0", "id": seq, "method": method, "params": params}) + "\n")
    srv.stdin.flush()
    return json.loads(srv.stdout.readline())


def ours(name, args):
    r = rpc("tools/call", {"name": name, "arguments": args})["result"]
    return ("error", r["content"][0]["text"]) if r["isError"] else json.loads(r["content"][0]["text"])


same = differ = 0


def compare(name, **args):
    global same, differ
    try:
        theirs = plain(getattr(an, name)(**args))
    except Exception as e:  # the Python SDK's isError result
        theirs = ("error", str(e))
    o = ours(name, args)
    if name == "get_failure_context" and isinstance(o, dict) and isinstance(theirs, dict):
        o["patterns"]["plugins_failing"].sort()
        theirs["patterns"]["plugins_failing"].sort()
    if o == theirs or (isinstance(o, tuple) and isinstance(theirs, tuple)):
        same += 1
        return
    differ += 1
    print(f"DIFFERS {name} {args}\n  ours:    {json.dumps(o)[:1500]}\n  ELSPETH: {json.dumps(theirs)[:1500]}")


rpc("initialize", {"protocolVersion": "2025-06-18"})
c = sqlite3.connect(db)
for (rid,) in c.execute("SELECT run_id FROM runs").fetchall():
    for tool in ("get_run", "get_run_summary", "list_nodes", "get_dag_structure",
                 "get_performance_report", "get_error_analysis", "get_llm_usage_report",
                 "get_outcome_analysis", "get_failure_context", "list_operations"):
        compare(tool, run_id=rid)
    compare("list_rows", run_id=rid, limit=100000, offset=0)
    compare("list_tokens", run_id=rid, limit=100000)
    compare("get_node_states", run_id=rid, limit=100000)
    compare("get_errors", run_id=rid, limit=100000)
    for (tid,) in c.execute("SELECT token_id FROM tokens WHERE run_id = ?", (rid,)).fetchall():
        compare("explain_token", run_id=rid, token_id=tid)
    for (row,) in c.execute("SELECT row_id FROM rows WHERE run_id = ?", (rid,)).fetchall():
        compare("explain_token", run_id=rid, row_id=row)
    for (state,) in c.execute("SELECT DISTINCT state_id FROM calls WHERE state_id IN "
                              "(SELECT state_id FROM node_states WHERE run_id = ?)", (rid,)).fetchall():
        compare("get_calls", state_id=state)
compare("describe_schema")
compare("list_runs", limit=1000)
srv.stdin.close()
srv.wait()
print(f"{same} answers as ELSPETH's, {differ} differ")
sys.exit(1 if differ else 0)

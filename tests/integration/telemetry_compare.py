#!/usr/bin/env python3
"""Compares our console exporter's lines with real ELSPETH 0.4.1's
(tests/fixtures/elspeth_telemetry/runs): the same events in the same
order, the same fields in the same order, the same values — except what
differs by nature: the time, the ids (ELSPETH's uuids, our SQL trail's
ids, checked for their form), durations (checked to be floats), the
settings hash, and the hash part of a gate's node id (ELSPETH hashes its
gate's config differently; ADR 0037).
Usage: telemetry_compare.py json|pretty OURS THEIRS"""
import json
import re
import sys

mode, ours_path, theirs_path = sys.argv[1:4]
TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$")
errors = []


def lines(path, pretty):
    out = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if pretty and line.startswith("["):
            m = re.match(r"^\[([^\]]+)\] (\w+): (\S+)(?: \((.*)\))?$", line)
            if not m:
                errors.append("unparsed pretty line: " + line)
                continue
            fields = {"timestamp": m.group(1), "run_id": m.group(3)}
            for part in re.split(r", (?=[a-z_]+=)", m.group(4) or ""):
                k, _, v = part.partition("=")
                fields[k] = v
            fields["event_type"] = m.group(2)
            out.append(fields)
        elif not pretty and line.startswith("{"):
            out.append(json.loads(line))
    return out


def check(i, k, a, b):
    where = "event %d (%s) %s" % (i, b.get("event_type"), k)
    x, y = a[k], b[k]
    if k == "timestamp":
        if not TS.match(str(x)):
            errors.append("%s: %r is not an isoformat time" % (where, x))
    elif k == "run_id":
        if not re.fullmatch(r"\d+|[0-9a-f]{32}", str(x)):
            errors.append("%s: %r" % (where, x))
    elif k in ("row_id", "token_id"):
        pre = "row" if k == "row_id" else "tok"
        if not re.fullmatch(pre + r"-\w+-\d+", str(x)):
            errors.append("%s: %r is not a trail id" % (where, x))
    elif k == "node_id":
        if str(x).rsplit("_", 1)[0] != str(y).rsplit("_", 1)[0] or \
           not re.fullmatch(r"[0-9a-f]{12}", str(x).rsplit("_", 1)[1]):
            errors.append("%s: %r vs %r" % (where, x, y))
    elif k == "config_hash":
        if not re.fullmatch(r"[0-9a-f]{64}", str(x)):
            errors.append("%s: %r" % (where, x))
    elif k in ("duration_ms", "latency_ms"):
        try:
            float(x)
            if mode == "json" and not isinstance(x, float):
                raise ValueError
        except ValueError:
            errors.append("%s: %r is not a float" % (where, x))
    elif x != y:
        errors.append("%s: ours %r, ELSPETH's %r" % (where, x, y))


ours = lines(ours_path, mode == "pretty")
theirs = lines(theirs_path, mode == "pretty")
if [e["event_type"] for e in ours] != [e["event_type"] for e in theirs]:
    errors.append("events: ours %s\n  ELSPETH's %s" % (
        [e["event_type"] for e in ours], [e["event_type"] for e in theirs]))
else:
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if list(a) != list(b):
            errors.append("event %d (%s): fields %s, ELSPETH's %s" % (
                i, b["event_type"], list(a), list(b)))
            continue
        for k in b:
            check(i, k, a, b)
for e in errors[:20]:
    print("  " + e)
print("%d events compared, %d differences" % (len(theirs), len(errors)))
sys.exit(1 if errors else 0)

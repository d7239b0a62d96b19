#!/usr/bin/env python3
"""Drops the volatile fields (times, durations) of an explain document so
that it can be compared with an expected file."""
import json
import sys

VOLATILE = {"started_at", "completed_at", "created_at", "recorded_at",
            "written_at", "duration_ms", "duration_seconds", "settings_path",
            "metrics"}


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in VOLATILE}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


print(json.dumps(strip(json.load(sys.stdin)), indent=2, sort_keys=True))

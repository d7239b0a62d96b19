#!/usr/bin/env python3
"""Text summary of an ELSPETH 0.7.1 Landscape (SQLite audit db) for a fixture.

    audit_summary.py AUDIT.db > audit_summary.txt

Only what does not change between runs of the same pipeline: every table's
row count; run_sources (without run_id and time); the rows table's source
columns (source name, node, row_index, source_row_index, ingest_sequence,
source_data_hash) in ingest_sequence order; token outcomes counted by outcome,
path, completed and sink; runs' status. Random ids and timestamps are left out.
"""
import sqlite3
import sys


def main(path):
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    q = lambda sql: c.execute(sql).fetchall()  # noqa: E731
    tables = [n for (n,) in q("select name from sqlite_master where type='table' and name != 'sqlite_sequence' order by name")]
    cols = lambda t: [r[1] for r in q(f'pragma table_info("{t}")')]  # noqa: E731
    print("# table\trows")
    for t in tables:
        print(f"{t}\t{q(f'select count(*) from {chr(34)}{t}{chr(34)}')[0][0]}")
    if "runs" in tables:
        want = [x for x in ("status", "export_status") if x in cols("runs")]
        if want:
            print("\n# runs: " + "\t".join(want))
            for r in q(f"select {', '.join(want)} from runs order by started_at"):
                print("\t".join("" if v is None else str(v) for v in r))
    if "run_sources" in tables:
        keep = [x for x in cols("run_sources") if x not in ("run_id", "recorded_at")]
        print("\n# run_sources: " + "\t".join(keep))
        for r in q(f"select {', '.join(keep)} from run_sources order by source_name"):
            print("\t".join("" if v is None else str(v) for v in r))
    if "rows" in tables:
        has_src = "run_sources" in tables
        sel = ("coalesce(s.source_name, ''), " if has_src else "'', ") + \
            "r.source_node_id, r.row_index, r.source_row_index, r.ingest_sequence, r.source_data_hash"
        join = " left join run_sources s on s.run_id = r.run_id and s.source_node_id = r.source_node_id" if has_src else ""
        print("\n# rows: source_name\tsource_node_id\trow_index\tsource_row_index\tingest_sequence\tsource_data_hash")
        for r in q(f"select {sel} from rows r{join} order by r.ingest_sequence, r.row_index"):
            print("\t".join("" if v is None else str(v) for v in r))
    if "token_outcomes" in tables:
        oc = cols("token_outcomes")
        keys = [x for x in ("outcome", "path", "completed", "sink_name") if x in oc]
        if keys:
            print("\n# token_outcomes: " + "\t".join(keys) + "\tcount")
            for r in q(f"select {', '.join(keys)}, count(*) from token_outcomes group by {', '.join(keys)} order by {', '.join(keys)}"):
                print("\t".join("" if v is None else str(v) for v in r))


if __name__ == "__main__":
    main(sys.argv[1])

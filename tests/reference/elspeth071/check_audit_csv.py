#!/usr/bin/env python3
"""Compare an audit-export-v2 CSV bundle with what 0.7.1's own CSVFormatter writes.

usage (with the reference's interpreter and path, as verify_audit_export.py):
  check_audit_csv.py EXPORT.json BUNDLE_DIR
EXPORT.json: the same run's json export (its records are the bundle's);
prints "same" or the first difference per record type. The run record's
settings.landscape.export differs by nature (each file shows its own format).
"""
from elspeth.core.landscape.formatters import CSVFormatter
from elspeth.contracts.hashing import canonical_json
from elspeth.plugins.sinks._audit_export_bundle_effects import _neutralize_csv_formula
data = open(sys.argv[1], 'rb').read()
frames = data[:data.rfind(b'\n') + 1].split(b'\n')[:-1]
f = CSVFormatter(); groups = {}
for fr in frames:
    rec = json.loads(fr)
    flat = f.format(rec)
    safe = {k: _neutralize_csv_formula(v) for k, v in flat.items()}
    safe = json.loads(canonical_json(safe))
    groups.setdefault(rec['record_type'], []).append(safe)
bad = 0
for t, rows in groups.items():
    names = set()
    for r in rows: names.update(r)
    out = io.StringIO(newline='')
    w = csv.DictWriter(out, fieldnames=sorted(names), lineterminator='\r\n')
    w.writeheader()
    for r in rows: w.writerow(r)
    want = out.getvalue().encode('utf-8')
    got = open(f'{sys.argv[2]}/{t}.csv', 'rb').read()
    if want != got:
        bad += 1
        i = next((i for i in range(min(len(want), len(got))) if want[i] != got[i]), 0)
        print('DIFF', t, i, want[max(0,i-60):i+60], got[max(0,i-60):i+60])
    else:
        print('same', t, len(got))
print('ALL SAME' if not bad else f'{bad} differ')

#!/usr/bin/env bash
# Run ELSPETH 0.7.1's local example pipelines with the reference (after setup.sh)
# and record what each wrote as fixtures.
#   run_examples.sh [OUT_DIR] [SETTINGS_REL ...]
# OUT_DIR defaults to tests/fixtures/elspeth071; SETTINGS_REL like
# threshold_gate/settings.yaml (default: the list below). Each settings file runs
# in a fresh copy of the 0.7.1 tree (src + examples) with that copy's root as the
# working directory. Files the run created or changed under examples/ are copied
# to OUT_DIR/<example>/<settings-stem>/ (relative to examples/<example>/), except
# SQLite databases, *-wal/-shm, ELSPETH's empty .*.elspeth.lock files and the
# payload store (payloads/, runs/payloads/); a SQLite database a sink wrote becomes
# NAME.db.dump.txt; the audit db becomes audit_summary.txt (audit_summary.py) and
# the console output (ending with the exit status) run.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ref=${ELSPETH_REF071:-$HOME/.cache/elspeth-ref071}
out=$(realpath -m "${1:-$here/../../fixtures/elspeth071}"); shift || true
[ -d "$ref/examples" ] || { echo "run_examples.sh: run setup.sh first"; exit 1; }
list=("$@")
if [ ${#list[@]} -eq 0 ]; then
  list=(threshold_gate/settings.yaml boolean_routing/settings.yaml multi_source_queue/settings.yaml
        multi_flow/settings.yaml fork_coalesce/settings.yaml fork_coalesce/settings_per_branch.yaml
        fork_coalesce/settings_union_fail.yaml fork_coalesce/settings_union_first_wins.yaml
        fork_coalesce/settings_union_last_wins.yaml transform_pipeline/settings.yaml
        report_assemble/settings.yaml json_explode/settings.yaml deaggregation/settings.yaml
        batch_aggregation/settings.yaml deep_routing/settings.yaml error_routing/settings.yaml
        explicit_routing/settings.yaml checkpoint_resume/settings.yaml retention_purge/settings.yaml
        schema_contracts_demo/settings.yaml audit_export/settings.yaml database_sink/settings.yaml
        landscape_journal/settings.yaml large_scale_test/settings.yaml
        blob_transforms/settings_expand_csv_blobs.yaml concurrent_scheduler/settings.yaml)
  for f in "$ref"/examples/statistical_batch_plugins/settings_*.yaml; do list+=("statistical_batch_plugins/$(basename "$f")"); done
fi
export PYTHONPATH="$ref/shim:$ref/src:$ref/vendor/usr/lib/python3/dist-packages"
# a fixed work folder: blob_transforms' manifest records the absolute path of its inputs
work=${ELSPETH_REF071_WORK:-/tmp/elspeth-ref071-work}; rm -rf "$work"; mkdir -p "$work"
for rel in "${list[@]}"; do
  ex=${rel%%/*}; stem=$(basename "$rel" .yaml)
  tree="$work/$ex.$stem"; rm -rf "$tree"; mkdir -p "$tree"
  cp -a "$ref/examples" "$tree/examples"; ln -s "$ref/src" "$tree/src"
  touch -d '2000-01-01' "$work/stamp"; find "$tree/examples" -exec touch -h -d '2000-01-01' {} +
  dest="$out/$ex/$stem"; rm -rf "$dest"; mkdir -p "$dest"
  # the steps the example's README/run.sh does before `elspeth run`
  case $ex in
    database_sink) (cd "$tree" && python3 examples/database_sink/seed.py) > "$dest/seed.log" 2>&1 ;;
    large_scale_test)  # generate_data.py is unseeded: seed it, and keep its input as a fixture
      (cd "$tree" && python3 -c 'import random, runpy, sys; random.seed(71); sys.argv = ["generate_data.py", "300"]; runpy.run_path("examples/large_scale_test/generate_data.py", run_name="__main__")') > /dev/null
      cp "$tree/examples/large_scale_test/input.csv" "$dest/input.csv" ;;
    blob_transforms)  # README: prepare the manifest and payload-store blobs first
      (cd "$tree" && python3 examples/blob_transforms/scripts/prepare_csv_blob_manifest.py) > "$dest/prepare.log" 2>&1
      mkdir -p "$dest/input"; cp "$tree/examples/blob_transforms/input/csv_blob_manifest.csv" "$dest/input/" ;;
  esac
  find "$tree/examples" -newer "$work/stamp" -type f > "$work/before" 2>/dev/null
  echo "== $rel"
  start=$(date +%s)
  "$here/elspeth-ref071" "examples/$rel" "$tree" > "$dest/run.log" 2>&1; rc=$?
  echo "   rc=$rc $(( $(date +%s) - start ))s"
  echo "exit status: $rc" >> "$dest/run.log"
  (cd "$tree/examples/$ex" && find . -newer "$work/stamp" -type f | sort) | while read -r f; do
    f=${f#./}
    case $f in *.db|*.db-wal|*.db-shm|*.db-journal|*.elspeth.lock|runs/payloads/*|payloads/*) continue ;; esac
    grep -qxF "$tree/examples/$ex/$f" "$work/before" && [ "$ex" != large_scale_test ] && continue
    case $ex/$f in large_scale_test/input.csv|blob_transforms/input/csv_blob_manifest.csv) continue ;; esac
    mkdir -p "$dest/$(dirname "$f")"; cp "$tree/examples/$ex/$f" "$dest/$f"
  done
  # files written outside the example's own folder
  (cd "$tree/examples" && find . -newer "$work/stamp" -type f -not -path "./$ex/*" | sort) | sed 's|^|outside example folder: |' >> "$dest/run.log"
  (cd "$tree/examples/$ex" && find . -name '*.elspeth.lock' | sort) | sed 's|^|lock file left: |' >> "$dest/run.log"
  for db in $(cd "$tree" && find examples/$ex -name '*.db' -newer "$work/stamp" | sort); do
    case $db in */runs/*|*audit*) python3 "$here/audit_summary.py" "$tree/$db" > "$dest/audit_summary.txt" 2>&1 ;;
      *) python3 - "$tree/$db" > "$dest/$(basename "$db").dump.txt" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("select name from sqlite_master where type='table' order by name"):
    cols = [r[1] for r in c.execute(f'pragma table_info("{t}")')]
    rows = c.execute(f'select * from "{t}"').fetchall()
    print(f"# {t}: {len(rows)} rows\n" + "\t".join(cols))
    if not t.startswith("_elspeth"):  # the effect ledger holds run ids and times
        for r in rows: print("\t".join("" if v is None else str(v) for v in r))
    print()
PY
      ;;
    esac
  done
done

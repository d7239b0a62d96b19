#!/usr/bin/env bash
# ELSPETH 0.7.1's signed audit export (audit-export-v2, ADR 0053): what
# it adds to a run. ROWS rows (default 200,000) through 0.7.1's own
# audit_export example (CSV -> gate -> two CSVs, its sqlite:/// trail),
# side by side in one invocation: the export off, json unsigned, json
# HMAC-SHA256, the csv bundle; then `export --audit` of the last run alone
# (read through a temporary SQL trail, as for an lmdb:// url). Release
# build. Prints seconds, the export's share and its size; with CHECK=1
# every file is checked with tests/integration/audit_export_check.py.
# Usage: bench/audit_export.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ROWS=${1:-200000}
OUT=$ROOT/bench/out/audit_export
rm -rf "$OUT" && mkdir -p "$OUT/examples"

cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DELSPETH_TESTS=OFF >/dev/null
cmake --build build-release -j"$(nproc)" --target elspeth >/dev/null
E=$ROOT/build-release/elspeth
cp -r tests/fixtures/elspeth071_examples/examples/audit_export "$OUT/examples/"
cd "$OUT"
python3 - "$ROWS" > examples/audit_export/input.csv <<'EOF'
import random, sys
random.seed(7)
print("id,name,amount,category")
for i in range(int(sys.argv[1])):
    print(f"{i},customer {i},{random.randint(1, 99999)},{random.choice(['corporate', 'retail', 'public'])}")
EOF
X=examples/audit_export
# the example's limits, raised for ROWS rows (about 8 records a row)
sed -e 's/total_record_limit: 10000$/total_record_limit: 100000000/' \
    -e 's/total_byte_limit: 10000000$/total_byte_limit: 1099511627776/' \
    -e 's/^    chunk_limit: 100$/    chunk_limit: 100000/' \
    -e 's/per_chunk_byte_limit: 1000000$/per_chunk_byte_limit: 67108864/' \
    -e 's/per_chunk_record_limit: 1000$/per_chunk_record_limit: 100000/' $X/settings.yaml > $X/unsigned.yaml
sed 's/^    enabled: true/    enabled: false/' $X/unsigned.yaml > $X/off.yaml
sed -e 's/signing_mode: unsigned/signing_mode: hmac_sha256/' \
    -e 's/signer_key_id: UNSIGNED/signer_key_id: bench-key\n    signing_secret_ref: BENCH_KEY/' $X/unsigned.yaml > $X/hmac.yaml
sed -e 's/format: json/format: csv/' -e 's/plugin: json/plugin: csv/' \
    -e 's#output/audit_trail.json#output/bundle#' $X/unsigned.yaml > $X/csv.yaml
export BENCH_KEY=bench-secret
secs() { local s e; s=$(date +%s.%N); "$@" > /dev/null 2>&1; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }'; }
run() { rm -rf $X/output $X/runs .elspeth; secs "$E" run -s "$X/$1.yaml" --execute; }
# the independent check is pure Python (about a minute per 100 MB): on
# request only
check() { if [ -n "${CHECK:-}" ]; then python3 "$ROOT/tests/integration/audit_export_check.py" "$@" | tail -1; else echo "-"; fi; }

printf '%-22s %8s %8s %10s %s\n' mode seconds ratio MB check
t_off=$(run off)
printf '%-22s %8s %8s %10s\n' "export off" "$t_off" 1.00 -
for m in unsigned hmac; do
  t=$(run $m)
  key=""; [ $m = hmac ] && key=$BENCH_KEY
  mb=$(( $(stat -c %s $X/output/audit_trail.json) / 1000000 ))
  printf '%-22s %8s %8s %10s %s\n' "json $m" "$t" "$(awk -v a="$t" -v b="$t_off" 'BEGIN { printf "%.2f", a / b }')" \
    "$mb" "$(check $X/output/audit_trail.json $key)"
done
t=$(run csv)
mb=$(( $(du -sb $X/output/bundle | cut -f1) / 1000000 ))
printf '%-22s %8s %8s %10s\n' "csv bundle" "$t" "$(awk -v a="$t" -v b="$t_off" 'BEGIN { printf "%.2f", a / b }')" "$mb"
# the export alone, again, for the last (unsigned) run: a temporary SQL trail first
"$E" run -s $X/unsigned.yaml --execute > /dev/null 2>&1 || true
mv $X/output/audit_trail.json $X/output/first.json
t=$(secs "$E" export -s $X/unsigned.yaml --audit)
printf '%-22s %8s %8s %10s %s\n' "export --audit alone" "$t" "$(awk -v a="$t" -v b="$t_off" 'BEGIN { printf "%.2f", a / b }')" \
  "$(( $(stat -c %s $X/output/audit_trail.json) / 1000000 ))" "$(check $X/output/audit_trail.json)"

#!/usr/bin/env bash
# A random differential of 0.7.1's ten statistics aggregations, run by
# hand (it needs the 0.7.1 reference: setup.sh): 700 random rows for each
# example of examples/statistical_batch_plugins (numbers as ints, 1–3
# decimal floats, scores in [0, 1), Gaussian floats, a few outliers;
# labels and categories from small sets, some empty; pairs cut across
# batch edges), run through the real ELSPETH 0.7.1 and through ours with
# 0.7.1's example settings, and the output files compared byte for byte.
#   tests/reference/elspeth071/stats_differential.sh ELSPETH_BINARY [SEED]
# Session 39, seed 39: all ten identical (2,282 output rows).
set -euo pipefail
BIN=$(realpath "${1:?usage: stats_differential.sh ELSPETH_BINARY [SEED]}")
SEED=${2:-39}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
W=$(mktemp -d /tmp/stats-diff-XXXXXX)
D=examples/statistical_batch_plugins
mkdir -p "$W/$D/output" "$W/$D/runs" "$W/ref"
PLUGINS="distribution_profile drift_compare outlier_annotator paired_preference effect_size
  experiment_compare classifier_metrics data_quality_report threshold_summary top_k"
for s in $PLUGINS; do cp "$SRC/tests/fixtures/elspeth071_examples/$D/settings_$s.yaml" "$W/$D/"; done
cd "$W"
python3 - "$SEED" <<'PY'
import random, sys
random.seed(int(sys.argv[1]))
def num():
    k = random.random()
    if k < 0.3: return str(random.randint(0, 2000))
    if k < 0.6: return "%.*f" % (random.randint(1, 3), random.uniform(0, 1000))
    if k < 0.8: return "%.2f" % random.uniform(0, 1)
    return repr(random.gauss(500, 200))
d = "examples/statistical_batch_plugins/"
def table(name, header, row):
    """700 rows of row(i), i = 1..700, under header (in the order the
    random calls were always made: the recorded seeds stay valid)"""
    with open(d + name + ".csv", "w") as f:
        f.write(header + "\n")
        for i in range(1, 701): f.write(row(i) + "\n")
table("distribution_scores", "id,variant,latency_ms,quality_score",
      lambda i: f"{i},{random.choice(['control', 'treatment', 'a', 'b'])},{num()},{num()}")
table("drift_scores", "id,cohort,score",
      lambda i: f"{i},{random.choice(['baseline', 'current', 'later'])},{num()}")
table("outlier_scores", "id,prompt_variant,latency_ms",
      lambda i: f"{i},{random.choice(['control', 'treatment'])},{num() if random.random() > 0.02 else '99999.5'}")
with open(d + "paired_preferences.csv", "w") as f:
    f.write("case_id,variant,preference_score\n")
    for i in range(1, 351):
        for v in random.sample(['control', 'treatment'], 2):
            f.write(f"case-{i:03d},{v},{num()}\n")
for name in ("effect_size_scores", "experiment_scores"):
    table(name, "id,prompt_variant,score",
          lambda i: f"{i},{random.choice(['control', 'treatment', 'v2'])},{num()}")
table("classifier_labels", "id,actual_label,predicted_label",
      lambda i: f"{i},{random.choice(['pass', 'fail', 'skip'])},{random.choice(['pass', 'fail', 'skip', 'pass'])}")
table("data_quality_rows", "id,source,score_text,label",
      lambda i: f"{i},{random.choice(['judge_a', 'judge_b', ''])},{random.choice([num(), '', 'n/a'])},{random.choice(['accepted', 'rejected', ''])}")
table("threshold_scores", "id,prompt_variant,quality_score,latency_ms",
      lambda i: f"{i},{random.choice(['control', 'treatment'])},{'%.2f' % random.uniform(0, 1)},{random.randint(500, 1500)}")
table("top_k_labels", "id,model,predicted_label,task_family",
      lambda i: f"{i},{random.choice(['model_a', 'model_b'])},{random.choice(['accepted', 'rejected', 'unsure', 'accepted'])},{random.choice(['summarization', 'qa', 'code'])}")
PY
rc=0
for s in $PLUGINS; do
  rm -rf "$D/runs"/* "$D/output"/*
  "$HERE/elspeth-ref071" "$D/settings_$s.yaml" "$W" > "ref-$s.log" 2>&1 || { echo "$s: the reference failed (ref-$s.log)"; rc=1; continue; }
  out=$(cd "$D/output" && ls) # each example's one output file
  cp "$D/output/$out" "ref/$out"
  rm -rf "$D/runs"/* "$D/output"/*
  "$BIN" run -s "$D/settings_$s.yaml" --execute > "ours-$s.log" 2>&1 || { echo "$s: ours failed (ours-$s.log)"; rc=1; continue; }
  if cmp -s "ref/$out" "$D/output/$out"; then
    echo "$s: $(wc -l < "ref/$out") rows, identical"
  else
    echo "$s: differs"; rc=1
  fi
done
echo "work: $W"
exit $rc

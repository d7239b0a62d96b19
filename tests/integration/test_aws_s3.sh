#!/usr/bin/env bash
# ELSPETH 0.7.1's aws_s3 source and sink against a real S3-compatible
# server: Ceph's radosgw on a throw-away one-node cluster (s3_lib.sh,
# Debian's packages; ADR 0051). The test's own client is curl's SigV4.
#  1. the source reads an object as the csv / json sources read the same
#     bytes from a file (CSV, JSON array, JSON Lines)
#  2. the sink's object is what 0.7.1's serializer writes (Python's csv
#     and json, computed here) in CSV, JSON and JSON Lines; its key
#     template renders {{ run_id }}
#  3. overwrite: false refuses an existing key; nothing is replaced
#  4. SIGKILL mid-run, SIGTERM, the server down at the upload; each
#     resumed: the object is the uninterrupted run's
#  5. a source object changed before the resume stops it before any row
#  6. errors: a missing bucket, a wrong secret, an object past
#     max_object_bytes, a bad key template (validate, file:line:col);
#     the secret appears in no message and not in the trail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/s3_lib.sh"
cd "$WORK"
trap 's3_stop; mock_stop; if [ -n "${KEEP:-}" ]; then echo "kept: $WORK"; else rm -rf "$WORK"; fi' EXIT

s3_start "$WORK/s3"
rc=$?
if [ $rc = 77 ]; then exit 77; fi # Ceph is not installed (install-deps.sh installs it)
if [ $rc -ne 0 ]; then
  fail "s3_start: the S3 server did not start (rc $rc)"
  finish
  exit 1
fi
pass "radosgw started at $S3_ENDPOINT"

python3 - <<'PY'
import csv, json, random
rnd = random.Random(51)
rows = []
for i in range(1, 1201):
    name = rnd.choice(["alpha", "beta, gamma", 'say "hi"', "naïve", "línea\nnueva", ""])
    rows.append({"id": i, "name": name, "score": round(rnd.uniform(-50, 50), rnd.randint(0, 6))})
with open("in.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "name", "score"])
    for r in rows:
        w.writerow([r["id"], r["name"], repr(r["score"])])
with open("in.json", "w") as f:
    json.dump(rows, f)
with open("in.jsonl", "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
s3_mb elspeth-in && s3_mb elspeth-out || fail "make buckets"
for f in in.csv in.json in.jsonl; do s3_put elspeth-in "data/$f" "$f" || fail "put $f"; done

SCHEMA="{mode: fixed, fields: ['id: int', 'name: str', 'score: float']}"
# pipe FORMAT SOURCE_BLOCK SINK_BLOCK: a 0.7.1-format pipeline
pipe() {
  cat <<YAML
sources:
  objects:
$2
    on_success: out
sinks:
$3
landscape: {url: "lmdb://trail.lmdb"}
checkpoint: {frequency: every_n, checkpoint_interval: 50}
YAML
}
s3_source() { # $1 format, $2 key, [$3 extra options]
  cat <<YAML
    plugin: aws_s3
    options: {bucket: elspeth-in, key: "$2", format: $1, endpoint_url: "\${S3_ENDPOINT}", schema: $SCHEMA, on_validation_failure: discard${3:+, $3}}
YAML
}
file_source() { # $1 plugin, $2 path
  cat <<YAML
    plugin: $1
    options: {path: $2, schema: $SCHEMA, on_validation_failure: discard}
YAML
}
local_sink() {
  cat <<YAML
  out:
    plugin: json
    on_write_failure: discard
    options: {path: local.jsonl, format: jsonl, schema: {mode: observed}}
YAML
}

# wait_staged N: until the run's staging file holds N rows (30 s at most)
wait_staged() {
  local _
  for _ in $(seq 1 3000); do
    [ "$(cat .elspeth/s3-staging/*.jsonl 2>/dev/null | wc -l)" -ge "$1" ] && return 0
    sleep 0.01
  done
  return 1
}

# 1. the source: the rows are those the file sources read from the bytes
for fmt in csv json jsonl; do
  plugin=json; [ $fmt = csv ] && plugin=csv
  pipe $fmt "$(file_source $plugin in.$fmt)" "$(local_sink)" > file.yaml
  pipe $fmt "$(s3_source $fmt data/in.$fmt)" "$(local_sink)" > s3.yaml
  rm -rf trail.lmdb local.jsonl
  "$ELSPETH" run -s file.yaml --execute > /dev/null 2>&1 && mv local.jsonl want.jsonl
  rm -rf trail.lmdb
  if ! "$ELSPETH" run -s s3.yaml --execute > run.log 2>&1; then
    fail "source $fmt: run: $(tail -3 run.log)"
  elif [ "$(wc -l < local.jsonl)" -eq 1200 ] && cmp -s local.jsonl want.jsonl &&
       cp want.jsonl seen_$fmt.jsonl; then
    pass "source $fmt: 1,200 rows, the same as the $plugin source reads from the file"
  else fail "source $fmt: $(diff local.jsonl want.jsonl | head -3)"; fi
done
expect "verify after an S3 source run" 0 "verify: OK" -- "$ELSPETH" verify -s s3.yaml --run latest

# 2. the sink: the object is 0.7.1's serialization of the rows
s3_sink() { # $1 format, $2 key, [$3 extra options] (0.7.1's format: with on_write_failure)
  cat <<YAML
  out:
    plugin: aws_s3
    on_write_failure: discard
    options: {bucket: elspeth-out, key: "$2", format: $1, endpoint_url: "\${S3_ENDPOINT}", schema: {mode: observed}${3:+, $3}}
YAML
}
# what 0.7.1's serializer makes of the rows the sink gets (as the file
# sources gave them above: in 0.7.1's format a float such as 20.0 that
# is integral arrives as the int 20, as 0.7.1 has it)
python3 - <<'PY'
import csv, io, json
enc = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
for src, out in (("seen_jsonl.jsonl", "want"), ("seen_csv.jsonl", "want_csvsrc")):
    rows = [json.loads(l) for l in open(src)]
    b = io.StringIO(newline="")
    w = csv.writer(b, lineterminator="\r\n")
    w.writerow(["id", "name", "score"])
    for r in rows:
        w.writerow([str(r["id"]), r["name"], str(r["score"])])
    open(out + ".csv", "wb").write(b.getvalue().encode())
    open(out + ".json", "wb").write(("[" + ",".join(enc.encode(r) for r in rows) + "]").encode())
    open(out + ".jsonl", "wb").write("".join(enc.encode(r) + "\n" for r in rows).encode())
PY
for fmt in csv json jsonl; do
  pipe $fmt "$(file_source json in.jsonl)" "$(s3_sink $fmt out/rows.$fmt)" > sink.yaml
  rm -rf trail.lmdb got.$fmt
  if ! "$ELSPETH" run -s sink.yaml --execute > run.log 2>&1; then
    fail "sink $fmt: run: $(tail -3 run.log)"; continue
  fi
  s3_get elspeth-out out/rows.$fmt got.$fmt || { fail "sink $fmt: no object"; continue; }
  if cmp -s got.$fmt want.$fmt; then pass "sink $fmt: the object is 0.7.1's serialization ($(wc -c < got.$fmt) bytes)"
  else fail "sink $fmt: $(cmp got.$fmt want.$fmt)"; fi
done
ls .elspeth/s3-staging/ 2> /dev/null | grep -q . &&
  fail "the staging files are left after a finished run" || pass "no staging file is left after the run"

pipe csv "$(file_source json in.jsonl)" "$(s3_sink jsonl 'runs/{{ run_id }}/rows.jsonl')" > tmpl.yaml
rm -rf trail.lmdb
"$ELSPETH" run -s tmpl.yaml --execute > run.log 2>&1
if s3_req GET "elspeth-out?prefix=runs" "$S3_EMPTY_SHA256" -o ls.xml > /dev/null &&
   key=$(grep -o '<Key>runs/run-1-[0-9]*/rows.jsonl</Key>' ls.xml | sed 's/<[^>]*>//g') &&
   s3_get elspeth-out "$key" got.tmpl && cmp -s got.tmpl want.jsonl; then
  pass "the key template renders {{ run_id }} ($key)"
else fail "key template: $(head -c 300 ls.xml) $(tail -2 run.log)"; fi

# 2b. without a Landscape (0.4.1's format, landscape.enabled: false):
#     the object is written and the private staging directory goes
#     (its sink without on_write_failure: 0.4.1's format does not require it)
cat > noaudit.yaml <<YAML
source:
  plugin: json
  on_success: out
  options: {path: in.jsonl, schema: $SCHEMA, on_validation_failure: discard}
sinks:
$(s3_sink jsonl out/noaudit.jsonl | sed '/on_write_failure:/d')
landscape: {enabled: false}
YAML
mkdir -p tmp
if TMPDIR=$WORK/tmp "$ELSPETH" run -s noaudit.yaml --execute > run.log 2>&1 &&
   s3_get elspeth-out out/noaudit.jsonl got.noaudit && [ "$(wc -l < got.noaudit)" = 1200 ] &&
   [ -z "$(ls -A tmp)" ]; then
  pass "without a Landscape: the object written, nothing left in TMPDIR"
else fail "no Landscape: $(tail -2 run.log); left: $(ls tmp)"; fi

# 3. overwrite: false refuses an existing object and replaces nothing
pipe csv "$(file_source json in.jsonl)" "$(s3_sink csv out/rows.csv 'overwrite: false')" > keep.yaml
rm -rf trail.lmdb
expect "overwrite: false refuses an existing key" 1 "exists and overwrite is false" -- \
  "$ELSPETH" run -s keep.yaml --execute
s3_get elspeth-out out/rows.csv got.csv && cmp -s got.csv want.csv &&
  pass "the existing object is unchanged" || fail "the existing object was replaced"

# 4. SIGKILL mid-run, resume: the object is the uninterrupted run's
cat > kill.yaml <<YAML
sources:
  objects:
$(s3_source csv data/in.csv)
    on_success: raw
transforms:
- name: slow
  plugin: delay
  input: raw
  on_success: out
  on_error: discard
  options: {schema: {mode: observed}, distribution: uniform, min_ms: 1, max_ms: 3, seed: 3}
sinks:
$(s3_sink csv out/killed.csv)
landscape: {url: "lmdb://trail.lmdb"}
checkpoint: {frequency: every_n, checkpoint_interval: 50}
YAML
killed=0
for attempt in 1 2 3; do
  rm -rf trail.lmdb .elspeth
  "$ELSPETH" run -s kill.yaml --execute --max-rows-in-flight 8 > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    n=$(cat .elspeth/s3-staging/*.jsonl 2>/dev/null | wc -l)
    [ "$n" -ge 300 ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  s3_head elspeth-out out/killed.csv && continue # it had finished: again
  killed=1; break
done
if [ $killed = 1 ]; then
  pass "killed with $(cat .elspeth/s3-staging/*.jsonl | wc -l) rows staged and no object yet"
  if "$ELSPETH" resume latest -s kill.yaml --execute > resume.log 2>&1 &&
     s3_get elspeth-out out/killed.csv got.csv && cmp -s got.csv want_csvsrc.csv; then
    pass "resumed: the object is the uninterrupted run's bytes"
  else fail "resume after SIGKILL: $(tail -3 resume.log)"; fi
  expect "verify after the resume" 0 "verify: OK" -- "$ELSPETH" verify -s kill.yaml --run latest
else fail "no kill landed before the upload in 3 tries"; fi

# 4a. SIGTERM: exit 3, no object (the run did not complete), the staging
#     file kept; the resume uploads the uninterrupted run's bytes
rm -rf trail.lmdb .elspeth
s3_head elspeth-out out/killed.csv && s3_req DELETE elspeth-out/out/killed.csv "$S3_EMPTY_SHA256" -o /dev/null > /dev/null
"$ELSPETH" run -s kill.yaml --execute --max-rows-in-flight 8 > term.log 2>&1 &
pid=$!
wait_staged 300
kill -TERM $pid; wait $pid; rc=$?
if [ $rc = 3 ] && ! s3_head elspeth-out out/killed.csv && ls .elspeth/s3-staging/*.jsonl > /dev/null 2>&1; then
  pass "SIGTERM: exit 3, no object written, the staging file kept"
else fail "SIGTERM: exit $rc, object $(s3_head elspeth-out out/killed.csv && echo present || echo absent)"; fi
if "$ELSPETH" resume latest -s kill.yaml --execute > resume.log 2>&1 &&
   s3_get elspeth-out out/killed.csv got.csv && cmp -s got.csv want_csvsrc.csv; then
  pass "resumed after SIGTERM: the object is the uninterrupted run's bytes"
else fail "resume after SIGTERM: $(tail -3 resume.log)"; fi
ls .elspeth/s3-staging/*.jsonl > /dev/null 2>&1 &&
  fail "the staging file is left after the resumed run completed" ||
  pass "the staging file goes once the resumed run completed"

# 4c. the server is down when the run ends: the run fails (exit 1,
#     resumable, the staging file kept); with the server back, the
#     resume uploads the uninterrupted run's bytes
sed 's|key: "out/killed.csv"|key: "out/down.csv"|' kill.yaml > down.yaml
rm -rf trail.lmdb .elspeth
"$ELSPETH" run -s down.yaml --execute --max-rows-in-flight 8 > down.log 2>&1 &
pid=$!
wait_staged 100
s3_rgw_stop
wait $pid; rc=$?
if [ $rc = 1 ] && grep -q "aws_s3: PUT" down.log && ls .elspeth/s3-staging/*.jsonl > /dev/null 2>&1; then
  pass "server down at the upload: the run fails ($(grep -o 'aws_s3: PUT[^;]*' down.log | head -1 | cut -c1-80)), staging kept"
else fail "server down: exit $rc: $(tail -2 down.log)"; fi
if s3_rgw_start; then
  if "$ELSPETH" resume latest -s down.yaml --execute > resume.log 2>&1 &&
     s3_get elspeth-out out/down.csv got.csv && cmp -s got.csv want_csvsrc.csv; then
    pass "server back, resumed: the object is the uninterrupted run's bytes"
  else fail "resume after the server came back: $(tail -3 resume.log)"; fi
else fail "radosgw did not come back"; fi

# 4b. overwrite: false and a kill between the upload and the run's end:
#     the resume finds its own bytes there and takes them; other bytes
#     under the key fail it
sed 's|key: "out/killed.csv", format: csv,|key: "out/once.csv", format: csv, overwrite: false,|' kill.yaml > once.yaml
grep -q 'overwrite: false' once.yaml || fail 'once.yaml has no overwrite: false'
kill_early() {
  rm -rf trail.lmdb .elspeth
  "$ELSPETH" run -s once.yaml --execute --max-rows-in-flight 8 > /dev/null 2>&1 &
  local pid=$!
  wait_staged 100
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
}
kill_early
s3_put elspeth-out out/once.csv want_csvsrc.csv
if "$ELSPETH" resume latest -s once.yaml --execute > resume.log 2>&1; then
  pass "overwrite: false, resumed after its own upload: the object is taken as its own"
else fail "overwrite: false resume over its own bytes: $(tail -2 resume.log)"; fi
kill_early
s3_put elspeth-out out/once.csv in.csv
expect "overwrite: false, resumed over other bytes: refused" 1 "exists and overwrite is false" -- \
  "$ELSPETH" resume latest -s once.yaml --execute
s3_get elspeth-out out/once.csv got.csv && cmp -s got.csv in.csv &&
  pass "... and the other bytes are left as they were" || fail "the other object was replaced"

# 5. the source object changed before the resume
rm -rf trail.lmdb .elspeth
"$ELSPETH" run -s kill.yaml --execute --max-rows-in-flight 8 > /dev/null 2>&1 &
pid=$!
wait_staged 100
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
sed 's/alpha/ALPHA/' in.csv > changed.csv && s3_put elspeth-in data/in.csv changed.csv
expect "a changed source object stops the resume" 1 "changed since the run read it" -- \
  "$ELSPETH" resume latest -s kill.yaml --execute
s3_put elspeth-in data/in.csv in.csv

# 6. errors, each before any row, naming the object and not the secret
pipe csv "$(s3_source csv data/in.csv | sed 's/elspeth-in/no-such-bucket/')" "$(local_sink)" > nob.yaml
rm -rf trail.lmdb
expect "a missing bucket" 1 "s3://no-such-bucket/data/in.csv: HTTP 404" -- "$ELSPETH" run -s nob.yaml --execute
pipe csv "$(s3_source csv data/in.csv)" "$(local_sink)" > s3.yaml
rm -rf trail.lmdb
SECRET=$AWS_SECRET_ACCESS_KEY
AWS_SECRET_ACCESS_KEY=wrong-secret-value "$ELSPETH" run -s s3.yaml --execute > bad.log 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "HTTP 403" bad.log && ! grep -q "wrong-secret-value" bad.log; then
  pass "a wrong secret: HTTP 403, the secret not in the message"
else fail "wrong secret: exit $rc: $(tail -2 bad.log)"; fi
pipe csv "$(s3_source csv data/in.csv 'max_object_bytes: 1000')" "$(local_sink)" > big.yaml
rm -rf trail.lmdb
expect "an object past max_object_bytes" 1 "exceeds limit 1000 bytes" -- "$ELSPETH" run -s big.yaml --execute
rm -rf trail.lmdb
"$ELSPETH" run -s s3.yaml --execute > /dev/null 2>&1
if grep -rqa -- "$SECRET" trail.lmdb; then fail "the secret is in the trail"
else pass "the secret is not in the trail"; fi
pipe csv "$(file_source json in.jsonl)" "$(s3_sink csv 'out/{{ user }}.csv')" > tmplbad.yaml
expect "a key template with another variable" 1 "tmplbad.yaml:" -- "$ELSPETH" validate -s tmplbad.yaml
expect "... says what a key template may hold" 1 "only literal text and approved variables" -- \
  "$ELSPETH" validate -s tmplbad.yaml

finish

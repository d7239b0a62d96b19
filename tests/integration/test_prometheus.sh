#!/usr/bin/env bash
# The run's Prometheus endpoint (run --metrics-listen, ADR 0033) scraped by
# a real Prometheus (Debian's), started here in the test's directory with a
# scrape interval of 1 s, during an LLM run against elspeth-mock-llm; the
# values are read back through Prometheus' HTTP API. Also: promtool check
# metrics passes on a scrape; bad addresses and a port in use are refused
# before anything runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/llm_lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
command -v prometheus > /dev/null || { fail "prometheus is not installed (scripts/install-deps.sh)"; finish; exit; }
[ -x "$MOCK" ] || { fail "no mock binary at $MOCK"; finish; exit; }

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# q PROMQL: the first value Prometheus has for the query ("" when none).
q() {
  curl -s --max-time 5 "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
    "$PY" -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' 2>/dev/null
}

MP=$(free_port)
PP=$(free_port)
cat > prom.yml <<EOF
global: {scrape_interval: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: elspeth
    static_configs: [{targets: ["127.0.0.1:$MP"]}]
EOF
prometheus --config.file=prom.yml --storage.tsdb.path=tsdb --web.listen-address=127.0.0.1:$PP \
  > prom.log 2>&1 &
PROM=$!
MOCK_PIDS+=("$PROM")
for _ in $(seq 200); do curl -s "http://127.0.0.1:$PP/-/ready" 2>/dev/null | grep -q Ready && break; sleep 0.05; done
is "prometheus is ready" curl -sf "http://127.0.0.1:$PP/-/ready" -o /dev/null

# ~10 s of an LLM run: 1,000 rows, 8 in flight, 80 ms answers
start_mock m --latency fixed:80 --seed 1
rows_csv rows.csv 1000
pipeline p.yaml rows.csv llm "$(printf '%s\n' "model: test/model-1" \
  "base_url: \"http://127.0.0.1:$PORT/v1\"" "template: \"Classify: {{ row.text }}\"" "pool_size: 8")"
OUT=out STATE=state timeout 120 "$ELSPETH" run -s p.yaml -x --max-rows-in-flight 8 \
  --metrics-listen "127.0.0.1:$MP" > run.log 2>&1 &
RUN=$!
# while it runs: a scrape of our own, checked by promtool
got=
for _ in $(seq 100); do
  curl -s --max-time 2 "http://127.0.0.1:$MP/metrics" > scrape.txt 2>/dev/null &&
    grep -q '^elspeth_upstream_requests_total' scrape.txt && { got=1; break; }
  sleep 0.1
done
is "a scrape during the run has the upstream's metrics" [ -n "$got" ]
is "promtool check metrics passes" promtool check metrics < scrape.txt
for m in 'elspeth_node_duration_seconds_bucket{node="t",kind="transform",le="+Inf"} [0-9]' \
         'elspeth_node_duration_seconds_count{node="out",kind="sink"} ' \
         'elspeth_retries_total ' 'elspeth_checkpoints_total [1-9]' \
         'elspeth_recorder_queued_records ' 'elspeth_trail_bytes [1-9]'; do
  grep -q "^$m" scrape.txt && pass "the scrape has $m" || fail "the scrape lacks $m"
done
grep -q '^elspeth_upstream_requests_total{node="t",upstream="http://127.0.0.1:'"$PORT"'"}' scrape.txt &&
  pass "the upstream's series is labelled with its node and address" ||
  { fail "upstream labels"; grep upstream_requests scrape.txt; }
# Prometheus scraped it: up == 1 and rows moving while the run goes
seen=
for _ in $(seq 100); do
  v=$(q 'elspeth_rows_released_total{job="elspeth"}')
  [ -n "$v" ] && [ "${v%.*}" -gt 0 ] 2>/dev/null && { seen=$v; break; }
  sleep 0.1
done
is "Prometheus scraped the live run (rows released so far: ${seen:-none})" [ -n "$seen" ]
is "Prometheus sees the target up" [ "$(q 'up{job="elspeth"}')" = 1 ]
wait $RUN; rc=$?
is "the run completed (exit $rc)" [ "$rc" = 0 -a "$(nlines out/out.jsonl)" = 1000 ]
last=$(q 'max_over_time(elspeth_rows_released_total{job="elspeth"}[1m])')
is "Prometheus' last value is within the run (released $last of 1000)" \
  awk -v v="$last" -v s="$seen" 'BEGIN { exit !(v > s && v <= 1000) }'
reqs=$(q 'max_over_time(elspeth_upstream_requests_total{node="t"}[1m])')
is "the requests counted reached Prometheus ($reqs)" awk -v v="$reqs" 'BEGIN { exit !(v > 0) }'
n=$(q 'count_over_time(elspeth_rows_released_total{job="elspeth"}[1m])')
is "Prometheus took several scrapes of the run ($n)" awk -v v="$n" 'BEGIN { exit !(v >= 3) }'
r=$(q 'max_over_time(rate(elspeth_rows_released_total{job="elspeth"}[3s])[1m:1s])')
is "rows/s is queryable as a rate ($r)" awk -v v="$r" 'BEGIN { exit !(v > 10) }'
p95=$(q 'max_over_time(histogram_quantile(0.95, rate(elspeth_node_duration_seconds_bucket{node="t"}[3s]))[1m:1s])')
is "the LLM transform's p95 from the histogram is the mock's 80 ms ($p95 s)" \
  awk -v v="$p95" 'BEGIN { exit !(v >= 0.05 && v <= 0.25) }'

# the address from the settings (metrics.listen), when no flag gives one
MP2=$(free_port)
cp p.yaml p2.yaml
echo "metrics: {listen: \"127.0.0.1:$MP2\"}" >> p2.yaml
OUT=o3 STATE=s3 timeout 120 "$ELSPETH" run -s p2.yaml -x > run2.log 2>&1 &
RUN2=$!
got=
for _ in $(seq 100); do
  curl -s --max-time 2 "http://127.0.0.1:$MP2/metrics" 2>/dev/null | grep -q '^elspeth_rows_pulled_total' &&
    { got=1; break; }
  sleep 0.1
done
is "metrics.listen in the settings serves the endpoint" [ -n "$got" ]
kill "$RUN2" 2>/dev/null; wait "$RUN2" 2>/dev/null

# bad input: refused before anything runs, naming the address
expect "a port in use is refused" 1 "127.0.0.1:$PP': cannot listen there" -- \
  env OUT=o2 STATE=s2 "$ELSPETH" run -s p.yaml -x --metrics-listen "127.0.0.1:$PP"
[ ! -e o2 ] && [ ! -e s2 ] && pass "nothing ran" || fail "a refused run wrote something"
expect "a name is not resolved" 1 "'example.com' is not an IP address" -- \
  env OUT=o2 STATE=s2 "$ELSPETH" run -s p.yaml -x --metrics-listen example.com:9464
expect "a bad port" 1 "expected HOST:PORT" -- \
  env OUT=o2 STATE=s2 "$ELSPETH" run -s p.yaml -x --metrics-listen 127.0.0.1:99999
stop_mock
kill "$PROM" 2>/dev/null
finish

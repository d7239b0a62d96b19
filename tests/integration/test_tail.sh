#!/usr/bin/env bash
# Tail control (docs/adr/0029-heavy-tails.md) against elspeth-mock-llm:
#  1. a stuck request is cut at the tail deadline (3 x p99 of the
#     upstream's recent answers, at least 1 s), recorded as a timeout
#     and sent again at once; the row succeeds; the server accounts only
#     the time the stalled request really held its slot;
#  2. with hedge: true, a request unanswered after the p99 gets a copy;
#     the first good answer is the row's, the other copy is cancelled;
#     both are in the trail; each row has exactly one answer it used;
#  3. a hedged run killed with SIGKILL and resumed writes the same sinks
#     as an uninterrupted run, and no row's answer is bought more than
#     the two copies' worth (a resume replays what was recorded);
#  4. the waiting budget: the progress events say what holds rows back;
#  5. hedge: idle (the default): with fewer rows in flight than the pool,
#     a stuck request gets a copy after 1.5 x p99 (long before the tail
#     deadline), only stuck ones do, and each row keeps one answer.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/llm_lib.sh"
cd "$WORK"; [ -n "${KEEP:-}" ] && trap - EXIT
[ -x "$MOCK" ] || { fail "no mock binary at $MOCK"; finish; exit; }

opts() {
  printf '%s\n' "model: test/model-1" "base_url: \"http://127.0.0.1:$PORT/v1\"" \
    "template: \"Classify this ticket: {{ row.text }}\"" "pool_size: 32" "$@"
}
retry="{max_attempts: 3, initial_delay_seconds: 0.001, max_delay_seconds: 0.002}"

# sqlq NAME SQL: one value from the run's SQL export.
sqlq() {
  [ -f "$1.db" ] || "$ELSPETH" export --database "state-$1" --run latest --sqlite "$1.db" > /dev/null
  "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$1.db" "$2"
}

# ------------------------------------------------------- 1. the tail deadline
start_mock tail --latency fixed:40 --stall-rate 0.03 --stall-ms 20000 --seed 3
R=600
rows_csv rows.csv $R
pipeline tail.yaml rows.csv llm "$(opts "timeout_seconds: 4")" "$retry"
run tail tail.yaml --max-rows-in-flight 32
stalls=$(mstat "s['faults']['stall']")
held=$(mstat "s['slot_seconds']")
is "tail: exit 0, all $R rows out (in $SECS s, $stalls stalls)" [ "$RC" = 0 -a "$(nlines tail/out.jsonl)" = $R -a "$stalls" -gt 5 ]
cuts=$(sqlq tail "select count(*) from calls where error_json like '%tail deadline%'")
short=$(sqlq tail "select count(*) from calls where error_json like '%tail deadline%' and latency_ms between 900 and 2500")
is "tail: stalls past the first answers are cut at the deadline (~1 s, not the 4 s timeout): $cuts cut, $short of them after 0.9-2.5 s" \
  [ "$cuts" -gt 0 -a "$short" = "$cuts" ]
to=$(calls tail timeout)
is "tail: every stall is one timeout call (timeouts $to = stalls $stalls)" [ "$to" = "$stalls" ]
is "tail: the summary counts the cuts" grep -q "; $cuts cut at the tail deadline" tail.log
bad=$(sqlq tail "select count(*) from (select state_id, sum(status = 'success') ok from calls group by state_id) where ok != 1")
is "tail: every row has exactly one good answer ($bad rows otherwise)" [ "$bad" = 0 ]
# The stalls held their slots ~1 s (cut) or 4 s (before 64 answers were
# known), never the 20 s the mock would have held them.
is "tail: the server accounts the stalls' real time in a slot ($held slot-s for $stalls stalls)" \
  lt "$held" "$(awk -v s="$stalls" -v r=$R 'BEGIN { print s * 4 + r * 0.1 }')"
is "tail: verify" verify_ok tail
stop_mock

# ------------------------------------------------------------- 2. hedging
start_mock hedge --latency fixed:40 --stall-rate 0.03 --stall-ms 20000 --seed 5
pipeline hedge.yaml rows.csv llm "$(opts "timeout_seconds: 4" "tail_timeout_factor: 0" "hedge: true")" "$retry"
run hedge hedge.yaml --max-rows-in-flight 32
is "hedge: exit 0, all $R rows out (in $SECS s)" [ "$RC" = 0 -a "$(nlines hedge/out.jsonl)" = $R ]
won=$(sqlq hedge "select count(*) from calls where error_json like '%its hedged twin answered first%'")
is "hedge: stalled requests were rescued by their copy ($won cancelled twins)" [ "$won" -gt 0 ]
line=$(grep -o '[0-9]* hedged ([0-9]* won)' hedge.log)
sent=${line%% *}
is "hedge: the summary counts hedges ($line); cancelled twins <= hedges" [ -n "$sent" ] && [ "$won" -le "$sent" ]
bad=$(sqlq hedge "select count(*) from (select state_id, sum(status = 'success') ok from calls group by state_id) where ok < 1")
is "hedge: every row has a good answer ($bad rows without)" [ "$bad" = 0 ]
is "hedge: the sinks equal the unhedged run's" diff -r tail hedge
is "hedge: verify" verify_ok hedge
stop_mock

# ------------------------------------- 3. hedged, killed and resumed
start_mock kill --latency fixed:40 --stall-rate 0.03 --stall-ms 20000 --seed 5
pipeline k.yaml rows.csv llm "$(opts "timeout_seconds: 4" "tail_timeout_factor: 0" "hedge: true")" "$retry"
rm -rf k "state-k"
OUT=k STATE=state-k "$ELSPETH" run -s k.yaml --execute --max-rows-in-flight 32 > k.log 2>&1 &
pid=$!
# The stalls among the first answers wait out the 4 s timeout (no
# percentiles yet): killed after 2 s, the run is halfway.
started k/out.jsonl
sleep 2
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
is "kill+resume: killed halfway ($(nlines k/out.jsonl) of $R rows out)" [ "$(nlines k/out.jsonl)" -lt $R ]
OUT=k STATE=state-k timeout 120 "$ELSPETH" resume latest -s k.yaml --execute --max-rows-in-flight 32 > k2.log 2>&1
RC=$?
is "kill+resume: resume exits 0" [ "$RC" = 0 ]
is "kill+resume: the sinks equal the uninterrupted run's" diff -r hedge k
# Per row, the good answers that were sent (not replayed from the trail):
# a copy and its twin may both answer (2), but a resume never buys a row's
# answer again once one was recorded.
most=$(sqlq k "select max(n) from (select row_id, count(*) n from elspeth_calls where error_class is null and replayed_from is null group by row_id)")
rows=$(sqlq k "select count(distinct row_id) from elspeth_calls where error_class is null")
is "kill+resume: every row has a good answer ($rows of $R), none bought more than twice (most: $most)" \
  [ "$rows" = $R -a "$most" -le 2 ]
is "kill+resume: verify" verify_ok k
stop_mock

# ------------------------------------ 5. hedge: idle, the default
start_mock idle --latency fixed:40 --stall-rate 0.03 --stall-ms 20000 --seed 5
pipeline idle.yaml rows.csv llm "$(opts "timeout_seconds: 4")" "$retry"
run idle idle.yaml --max-rows-in-flight 8
stalls=$(mstat "s['faults']['stall']")
is "idle: exit 0, all $R rows out (in $SECS s, $stalls stalls)" [ "$RC" = 0 -a "$(nlines idle/out.jsonl)" = $R ]
line=$(grep -o '[0-9]* hedged ([0-9]* won)' idle.log)
sent=${line%% *}
won=$(sqlq idle "select count(*) from calls where error_json like '%its hedged twin answered first%'")
is "idle: copies rescue stuck requests ($line, $won twins cancelled, $stalls stalls)" [ -n "$sent" ] && [ "$won" -gt 0 ]
is "idle: copies only for stuck requests (hedged $sent <= stalls $stalls + 2)" [ "$sent" -le $((stalls + 2)) ]
bad=$(sqlq idle "select count(*) from (select state_id, sum(status = 'success') ok from calls group by state_id) where ok < 1")
is "idle: every row has a good answer ($bad rows without)" [ "$bad" = 0 ]
is "idle: the sinks equal the unhedged run's" diff -r tail idle
stop_mock
pipeline off.yaml rows.csv llm "$(opts "timeout_seconds: 4" "hedge: maybe")" "$retry"
OUT=off STATE=state-off expect "hedge: maybe is refused naming the choices" 1 "hedge: expected true, false or idle" -- "$ELSPETH" validate -s off.yaml

# ------------------------------------------- 4. what holds rows back
start_mock slow --latency fixed:20
pipeline slow.yaml rows.csv llm "$(opts)" "$retry"
OUT=slow STATE=state-slow "$ELSPETH" run -s slow.yaml --execute --max-rows-in-flight 8 --format json \
  > slow.events 2>&1
n=$(grep -c '"held_by": *"rows_in_flight"' slow.events || true)
m=$(grep -c '"waiting_bytes"' slow.events || true)
is "progress events carry waiting_bytes and held_by ($m events, $n held by rows_in_flight)" [ "$m" -gt 0 ]
stop_mock

finish

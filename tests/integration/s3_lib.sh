# A private S3 server for a test (sourced): Debian's Ceph 16.2 (packages
# ceph-mon, ceph-osd, radosgw; scripts/install-deps.sh) as a throw-away
# single-node cluster under a directory of the caller's: one ceph-mon,
# one ceph-osd on the in-memory `memstore` objectstore, no ceph-mgr (the
# gateway does not need one), radosgw with its beast frontend. Everything
# listens on 127.0.0.1 only (ports picked free), runs as the current user,
# without systemd, cephx off (nothing but this machine can reach it).
#   s3_start DIR   creates and starts it; waits (at most S3_TIMEOUT
#                  seconds, default 90, per stage) for the mon, the osd
#                  and an S3 request signed with the test user's keys.
#                  Exports S3_ENDPOINT (http://127.0.0.1:PORT),
#                  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
#                  AWS_DEFAULT_REGION (us-east-1). Returns 0; 77 (with a
#                  "# s3_start: ... is missing" line) when the Ceph
#                  binaries are missing; 1 with a message naming the log
#                  file when a stage fails. Per-stage times go to
#                  DIR/log/stages.log.
#                  Call it in the test's own shell (not in $(...)): the
#                  daemons' pids are kept for s3_stop.
#   s3_stop        kills (SIGKILL) every daemon s3_start started and waits
#                  for them; safe to call twice.
#                  DIR is left to the caller (it holds the logs).
#   s3_mb BUCKET                 creates a bucket
#   s3_put BUCKET KEY FILE       uploads FILE
#   s3_get BUCKET KEY OUTFILE    downloads; non-zero on 404 (or any >= 400)
#   s3_head BUCKET KEY           HEAD; non-zero unless 2xx
# KEY goes into the URL as it is: keep it URL-safe ([A-Za-z0-9._/-]).
# The clients are plain curl (--aws-sigv4, path-style URLs): independent
# of elspeth's own S3 code. The caller sets the EXIT trap, e.g.
#   trap 's3_stop; rm -rf "$WORK"' EXIT
S3_DIR=
S3_PIDS=()
S3_NAMES=()
S3_ENDPOINT=
S3_LOG=
# SigV4's credential scope carries a region; radosgw checks it against
# nothing (it computes the signature with the region the client sent:
# us-east-1, default, anything works), so us-east-1, what S3 clients
# default to. A CreateBucket body's LocationConstraint is checked: only
# "default" (the zonegroup's api_name) or none at all.
S3_REGION="us-east-1"
S3_ACCESS=elspeth-test-access-key
S3_SECRET=elspeth-test-secret-key-0123456789abcdef

s3_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# s3_wait SECONDS WHAT LOG -- command...: retries the command (1 s apart)
# until it succeeds; on timeout prints WHAT and the log's tail, returns 1.
# Also gives up at once when one of our daemons has died.
s3_wait() {
  local secs=$1 what=$2 log=$3; shift 4
  local start=$SECONDS i
  while :; do
    if "$@" > /dev/null 2>&1; then return 0; fi
    for i in "${!S3_PIDS[@]}"; do
      if ! kill -0 "${S3_PIDS[$i]}" 2> /dev/null; then
        echo "FAIL - s3_start: ${S3_NAMES[$i]:-a Ceph daemon} exited while waiting for $what; see $S3_DIR/log/${S3_NAMES[$i]:-}.log and .out" >&2
        tail -n 20 "$log" 2> /dev/null | sed 's/^/    /' >&2
        return 1
      fi
    done
    if [ $((SECONDS - start)) -ge "$secs" ]; then
      echo "FAIL - s3_start: no $what after ${secs}s; see $log" >&2
      tail -n 20 "$log" 2> /dev/null | sed 's/^/    /' >&2
      return 1
    fi
    sleep 1
  done
}

# s3_stage NAME: notes in log/stages.log how long s3_start has taken.
S3_T0=0
s3_stage() {
  local us=$((${EPOCHREALTIME/./} - S3_T0))
  printf '%s %d.%01ds\n' "$1" $((us / 1000000)) $((us % 1000000 / 100000)) >> "$S3_DIR/log/stages.log"
}

s3_ceph() { ceph -c "$S3_DIR/ceph.conf" --connect-timeout 10 "$@"; }

s3_osd_up() { s3_ceph osd dump 2> /dev/null | grep -q '^osd\.0 up '; }

s3_signed_ok() { [ "$(s3_req GET "" "$S3_EMPTY_SHA256" -o /dev/null)" = 200 ]; }

s3_anon_up() { curl -s -o /dev/null --max-time 5 "$S3_ENDPOINT/"; }

s3_start() {
  local dir=$1 b
  for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph uuidgen curl python3; do
    if ! command -v "$b" > /dev/null 2>&1; then
      echo "# s3_start: $b is missing (apt-get install ceph-mon ceph-osd radosgw, or scripts/install-deps.sh)"
      return 77
    fi
  done
  local secs=${S3_TIMEOUT:-90}
  mkdir -p "$dir" || return 1
  S3_DIR=$(realpath "$dir")
  S3_PIDS=(); S3_NAMES=()
  mkdir -p "$S3_DIR/run" "$S3_DIR/log" "$S3_DIR/mon.a" "$S3_DIR/osd.0" "$S3_DIR/rgw" || return 1
  local fsid monport rgwport osduuid
  fsid=$(uuidgen); osduuid=$(uuidgen)
  monport=$(s3_free_port) && rgwport=$(s3_free_port) || return 1
  S3_ENDPOINT="http://127.0.0.1:$rgwport"
  # $name is Ceph's own metavariable (mon.a, osd.0, client.rgw).
  cat > "$S3_DIR/ceph.conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$monport]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
run dir = $S3_DIR/run
admin socket = $S3_DIR/run/\$name.asok
pid file = $S3_DIR/run/\$name.pid
log file = $S3_DIR/log/\$name.log
mon cluster log file = $S3_DIR/log/cluster.log
log to syslog = false
crash dir = $S3_DIR/crash
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon data avail warn = 2
mon data avail crit = 1
[client]
log file = $S3_DIR/log/\$name.\$pid.log
admin socket = $S3_DIR/run/\$name.\$pid.asok
[mon]
mon data = $S3_DIR/mon.\$id
mon memory target = 268435456
paxos propose interval = 0.1
rocksdb cache size = 33554432
[osd]
osd data = $S3_DIR/osd.\$id
osd objectstore = memstore
memstore device bytes = 536870912
osd op num shards = 2
osd op num threads per shard = 1
[client.rgw]
rgw data = $S3_DIR/rgw
rgw frontends = beast endpoint=127.0.0.1:$rgwport
rgw thread pool size = 16
rgw enable apis = s3, admin
rgw dynamic resharding = false
rgw enable usage log = false
log file = $S3_DIR/log/rgw.log
admin socket = $S3_DIR/run/rgw.asok
EOF
  local conf=$S3_DIR/ceph.conf log
  S3_T0=${EPOCHREALTIME/./}
  # mon: a monmap with one member, its store, then the daemon.
  log=$S3_DIR/log/mkfs.log
  if ! { monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$monport]" "$S3_DIR/monmap" &&
         timeout "$secs" ceph-mon -c "$conf" --mkfs -i a --monmap "$S3_DIR/monmap"; } > "$log" 2>&1; then
    echo "FAIL - s3_start: ceph-mon --mkfs; see $log" >&2; sed 's/^/    /' "$log" | tail -n 20 >&2; return 1
  fi
  ceph-mon -c "$conf" -f -i a > "$S3_DIR/log/mon.a.out" 2>&1 &
  S3_PIDS+=($!); S3_NAMES+=(mon.a)
  S3_LOG=$S3_DIR/log/mon.a.log
  s3_wait "$secs" "ceph-mon answering" "$S3_LOG" -- s3_ceph mon stat || return 1
  s3_stage mon
  # osd: registered with the mon, its (in-memory) store, then the daemon.
  log=$S3_DIR/log/mkfs.log
  if ! { s3_ceph osd new "$osduuid" &&
         timeout "$secs" ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$osduuid"; } >> "$log" 2>&1; then
    echo "FAIL - s3_start: ceph osd new / ceph-osd --mkfs; see $log" >&2; sed 's/^/    /' "$log" | tail -n 20 >&2; return 1
  fi
  ceph-osd -c "$conf" -f -i 0 > "$S3_DIR/log/osd.0.out" 2>&1 &
  S3_PIDS+=($!); S3_NAMES+=(osd.0)
  S3_LOG=$S3_DIR/log/osd.0.log
  s3_wait "$secs" "osd.0 up" "$S3_LOG" -- s3_osd_up || return 1
  s3_stage osd
  # radosgw: creates its pools and default zone on its first start.
  radosgw -c "$conf" -f -n client.rgw > "$S3_DIR/log/rgw.out" 2>&1 &
  S3_PIDS+=($!); S3_NAMES+=(rgw)
  S3_LOG=$S3_DIR/log/rgw.log
  s3_wait "$secs" "radosgw answering on $S3_ENDPOINT" "$S3_LOG" -- s3_anon_up || return 1
  s3_stage rgw
  log=$S3_DIR/log/user.log
  if ! timeout "$secs" radosgw-admin -c "$conf" user create --uid=elspeth --display-name=elspeth \
         --access-key="$S3_ACCESS" --secret-key="$S3_SECRET" > "$log" 2>&1; then
    echo "FAIL - s3_start: radosgw-admin user create; see $log" >&2; sed 's/^/    /' "$log" | tail -n 20 >&2; return 1
  fi
  s3_wait "$secs" "a signed request accepted by $S3_ENDPOINT" "$S3_LOG" -- s3_signed_ok || return 1
  s3_stage user
  export S3_ENDPOINT
  export AWS_ACCESS_KEY_ID=$S3_ACCESS AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_DEFAULT_REGION=$S3_REGION
  return 0
}

# s3_rgw_stop / s3_rgw_start: radosgw alone goes away and comes back on
# the same port (the cluster and its objects stay): a server that is
# down for a while.
s3_rgw_stop() {
  local i
  for i in "${!S3_NAMES[@]}"; do
    [ "${S3_NAMES[$i]}" = rgw ] || continue
    kill -KILL "${S3_PIDS[$i]}" 2> /dev/null || true
    wait "${S3_PIDS[$i]}" 2> /dev/null || true
    while kill -0 "${S3_PIDS[$i]}" 2> /dev/null; do sleep 0.1; done
    unset 'S3_PIDS[i]' 'S3_NAMES[i]'
  done
  S3_PIDS=("${S3_PIDS[@]}"); S3_NAMES=("${S3_NAMES[@]}")
}
s3_rgw_start() {
  radosgw -c "$S3_DIR/ceph.conf" -f -n client.rgw >> "$S3_DIR/log/rgw.out" 2>&1 &
  S3_PIDS+=($!); S3_NAMES+=(rgw)
  S3_LOG=$S3_DIR/log/rgw.log
  s3_wait "${S3_TIMEOUT:-90}" "radosgw answering again on $S3_ENDPOINT" "$S3_LOG" -- s3_signed_ok
}

s3_stop() {
  local p
  [ "${#S3_PIDS[@]}" -gt 0 ] || return 0
  # SIGKILL: nothing in this cluster is worth keeping (memstore), and a
  # SIGTERMed osd whose mon went first waits 5 s to say goodbye.
  for p in "${S3_PIDS[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  for p in "${S3_PIDS[@]}"; do
    wait "$p" 2> /dev/null || true
    # not our child (s3_start ran in another shell): wait by polling
    while kill -0 "$p" 2> /dev/null; do sleep 0.1; done
  done
  S3_PIDS=(); S3_NAMES=()
  return 0
}

# s3_req METHOD PATH PAYLOAD_SHA256 curl-args...: one signed request to
# $S3_ENDPOINT/PATH; prints the HTTP status code (the body goes where the
# args send it). Left alone, curl 7.88 signs without sending an
# x-amz-content-sha256 header; radosgw then takes the payload hash as
# UNSIGNED-PAYLOAD and the signatures differ (403 SignatureDoesNotMatch).
# Given the header, curl signs the hash it names: so it is always sent.
S3_EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_req() {
  local method=$1 path=$2 sha=$3 m; shift 3
  if [ "$method" = HEAD ]; then m=(--head); else m=(-X "$method"); fi
  curl -s "${m[@]}" --max-time 60 -w '%{http_code}' \
    -H "x-amz-content-sha256: $sha" \
    --aws-sigv4 "aws:amz:$S3_REGION:s3" \
    --user "$S3_ACCESS:$S3_SECRET" \
    "$@" "$S3_ENDPOINT/$path"
}

s3_2xx() { case $1 in 2??) return 0 ;; *) return 1 ;; esac; }

s3_mb() {
  local code
  code=$(s3_req PUT "$1" "$S3_EMPTY_SHA256" -o /dev/null) || return 1
  s3_2xx "$code" || { echo "s3_mb $1: HTTP $code" >&2; return 1; }
}

# The body's real SHA-256: radosgw checks it against the bytes it got.
s3_put() {
  local code sha
  sha=$(sha256sum < "$3") || return 1
  code=$(s3_req PUT "$1/$2" "${sha%% *}" -o /dev/null -T "$3") || return 1
  s3_2xx "$code" || { echo "s3_put $1/$2: HTTP $code" >&2; return 1; }
}

s3_get() {
  local code
  code=$(s3_req GET "$1/$2" "$S3_EMPTY_SHA256" -o "$3.part") || { rm -f "$3.part"; return 1; }
  if ! s3_2xx "$code"; then rm -f "$3.part"; echo "s3_get $1/$2: HTTP $code" >&2; return 1; fi
  [ -e "$3.part" ] || : > "$3.part"   # an empty body: curl may write no file
  mv -f "$3.part" "$3"
}

s3_head() {
  local code
  code=$(s3_req HEAD "$1/$2" "$S3_EMPTY_SHA256" -o /dev/null) || return 1
  s3_2xx "$code"
}

#!/usr/bin/env bash
# Installs every Debian 12 package elspeth needs. Idempotent and
# non-interactive; uses sudo when not root. Installs only what is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev
  libyaml-dev libjansson-dev liblmdb-dev lmdb-utils
  libprotobuf-c-dev protobuf-c-compiler
  libcriterion-dev libcurl4-openssl-dev libssl-dev
  python3 openssl
  nghttp2-proxy
  libsqlite3-dev sqlite3 libzstd-dev
  libxml2-dev
  libpcre2-dev
  libpq-dev postgresql
  libmicrohttpd-dev libsodium-dev prometheus
  python3-grpcio python3-protobuf protobuf-compiler python3-websocket python3-psycopg2
  chromium
  slurmctld slurmd slurm-client munge
  ceph-mon ceph-osd radosgw
)
# Node.js runs the MCP test client (npm @modelcontextprotocol/sdk); a
# machine that has it (e.g. from NodeSource, npm included) keeps it.
if ! command -v npm >/dev/null 2>&1; then PKGS+=(nodejs npm); fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq

# munge, slurmctld, slurmd, postgresql and the Ceph daemons (ceph-mon,
# ceph-osd, radosgw; lvm2's monitor, pulled in by ceph-osd) are daemons
# their packages start on install where nothing forbids it. We need only
# their binaries: the Slurm test (tests/slurm/cluster.sh) runs a private
# cluster under a temporary directory, the database sink's
# (tests/integration/pg_lib.sh) a private PostgreSQL server, the S3 tests
# (tests/integration/s3_lib.sh) a private one-osd Ceph cluster with its
# radosgw, and a system-wide munged, slurmd, postgres or ceph-* started
# here would run with a default config forever. So while
# apt-get installs, a
# policy-rc.d (Debian's invoke-rc.d / deb-systemd-invoke hook) answers
# 101, "action forbidden". A machine that already has one (containers
# usually do) keeps it untouched; ours carries a marker line, and only a
# file with that line is removed afterwards, on every exit path.
POLICY=/usr/sbin/policy-rc.d
POLICY_MARK="# written by elspeth scripts/install-deps.sh; removed when it ends"
POLICY_OURS=
remove_policy() {
  if [ -n "$POLICY_OURS" ] && grep -qxF "$POLICY_MARK" "$POLICY" 2>/dev/null; then
    $SUDO rm -f "$POLICY"
  fi
}
trap remove_policy EXIT
# A signal must still run the EXIT trap, then exit with the usual code.
trap 'exit 130' INT
trap 'exit 143' TERM
if [ ! -e "$POLICY" ]; then
  POLICY_OURS=1
  printf '#!/bin/sh\n%s\nexit 101\n' "$POLICY_MARK" | $SUDO tee "$POLICY" >/dev/null
  $SUDO chmod 0755 "$POLICY"
fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
remove_policy
POLICY_OURS=

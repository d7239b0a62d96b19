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
  libsqlite3-dev sqlite3
  chromium
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
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"

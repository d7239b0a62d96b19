# Shared by the benchmark scripts (sourced; $OUT must be set).

# ensure_pkg COMMAND PACKAGE: installs PACKAGE with apt-get (sudo when not
# root) if COMMAND is missing; returns non-zero if it is still missing.
ensure_pkg() {
  if command -v "$1" >/dev/null 2>&1; then return 0; fi
  command -v apt-get >/dev/null 2>&1 || return 1
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || return 1
    sudo=(sudo -n)
  fi
  echo "installing $2 (for $1) with apt-get ..." >&2
  { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" ||
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2"; }
  } >>"$OUT/apt.log" 2>&1 || { echo "  apt-get failed (see $OUT/apt.log)" >&2; return 1; }
  command -v "$1" >/dev/null 2>&1
}

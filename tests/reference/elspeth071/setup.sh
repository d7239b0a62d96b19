#!/usr/bin/env bash
# Prepare real ELSPETH 0.7.1 (Python) to run on this machine's Python 3.11, as a
# reference to compare the C engine's behaviour and outputs with.
#   ./setup.sh GIT_DIR     GIT_DIR: a git dir of johnm-dta/elspeth holding 720d44133 (Release 0.7.1)
# Installs Debian's Python libraries (root), extracts 0.7.1's src/ and examples/ into
# ${ELSPETH_REF071:-$HOME/.cache/elspeth-ref071}, rewrites its Python 3.12 syntax for
# 3.11 (rewrite_py312.py; the result must equal elspeth-0.7.1-py312-rewrite.patch) and
# applies the small hand patch (elspeth-0.7.1-on-python3.11.patch).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
git_dir=${1:?usage: setup.sh GIT_DIR}
ref=${ELSPETH_REF071:-$HOME/.cache/elspeth-ref071}
commit=720d44133
apt-get install -y -qq python3-sqlalchemy python3-typer python3-pluggy python3-structlog \
  python3-pandas python3-numpy python3-httpx python3-tenacity python3-deepdiff python3-dynaconf >/dev/null
python3 -c "import sys; assert sys.version_info[:2] == (3, 11), sys.version; import pydantic, networkx, jinja2, yaml, dotenv, jsonschema" 2>/dev/null ||
  { echo "setup.sh: python3 must be 3.11 with pydantic 2, networkx, jinja2, pyyaml, python-dotenv, jsonschema"; exit 1; }
rm -rf "$ref"; mkdir -p "$ref/pristine" "$ref/shim" "$ref/vendor" "$ref/apt/lists/partial" "$ref/apt/cache/archives/partial" "$ref/apt/debs"
# Debian 13's pure-Python libraries 0.7.1 needs newer than Debian 12's (SQLAlchemy 2.0,
# rfc8785, ...), fetched with a private apt configuration (the system's apt sources and
# state are not touched) and extracted into $ref/vendor, not installed.
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" > "$ref/apt/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$ref/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$ref/apt/lists" -o Dir::Cache="$ref/apt/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq
(cd "$ref/apt/debs" && apt-get "${apt_opts[@]}" download -qq python3-sqlalchemy python3-rfc8785 \
  python3-typer python3-structlog python3-pluggy python3-tenacity python3-deepdiff python3-orderly-set)
for deb in "$ref"/apt/debs/*.deb; do dpkg -x "$deb" "$ref/vendor"; done
git --git-dir="$git_dir" archive "$commit" src examples | tar -x -C "$ref"
git --git-dir="$git_dir" archive "$commit" src | tar -x -C "$ref/pristine"
# git archive's modes are 0775/0664; as a checkout under umask 022 would have them
# (0.7.1's payload store refuses a group-writable directory)
chmod -R go-w "$ref/src" "$ref/examples" "$ref/pristine"
python3 "$here/rewrite_py312.py" "$ref/src"
# the mechanical rewrite must give exactly the reviewed patch
(cd "$ref" && diff -ru -x __pycache__ pristine/src src > rewrite.diff || true)
if ! diff -q <(grep -v '^[-+][-+][-+] \|^diff ' "$ref/rewrite.diff") \
             <(grep -v '^[-+][-+][-+] \|^diff ' "$here/elspeth-0.7.1-py312-rewrite.patch") >/dev/null; then
  echo "setup.sh: rewrite_py312.py's result differs from elspeth-0.7.1-py312-rewrite.patch (see $ref/rewrite.diff)"; exit 1
fi
(cd "$ref" && patch -s -p0 < "$here/elspeth-0.7.1-on-python3.11.patch")
rm -rf "$ref/pristine" "$ref/rewrite.diff"
cp "$here"/{sitecustomize.py,sitecustomize_stub.py,elspeth_run.py} "$ref/shim/"
echo "ready: $here/elspeth-ref071 SETTINGS.yaml [WORKDIR]   (runs ELSPETH 0.7.1's 'run --execute')"

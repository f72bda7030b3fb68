#!/usr/bin/env bash
# Installs everything encbench needs into ./.venv on a fresh Debian 12 machine (or reuses it).
# Usage: bash scripts/setup.sh [--test]   (--test also installs the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || missing+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]} with apt-get" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq python3 python3-venv >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".${extras}"
echo "setup: ready ($(.venv/bin/encbench --version))" >&2

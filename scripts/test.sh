#!/usr/bin/env bash
# Installs what the tests need (scripts/setup.sh --test), then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"

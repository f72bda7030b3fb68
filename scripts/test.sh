#!/usr/bin/env bash
# Installs what the tests need (scripts/setup.sh --test), then runs the whole suite.
# Serial by default. In two pytest-xdist workers (each with its own TMPDIR and encfs/memory-cgroup ledgers, one test
# file per unit of work, the heaviest first: tests/conftest.py):
#   bash scripts/test.sh -n 2 --dist loadfile --no-loadscope-reorder
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"

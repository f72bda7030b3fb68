#!/usr/bin/env bash
# Installs what the tests need (scripts/setup.sh --test), then runs the whole suite in two pytest-xdist workers:
# one test file per unit of work (its module fixtures, often a private server, set up once), the heaviest files
# first (tests/conftest.py); each worker has its own TMPDIR, encfs/memory-cgroup ledgers and private-server ports,
# checked around every integration test (tests/xdist_workers.py). ENCBENCH_TEST_WORKERS=0 runs it serially.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
workers="${ENCBENCH_TEST_WORKERS:-2}"
if [ "$workers" = 0 ]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile --no-loadscope-reorder "$@"

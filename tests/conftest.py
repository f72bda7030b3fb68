"""What every test process shares: under pytest-xdist (`pytest -n N`), each worker's own temporary directory and
its own encfs / memory-cgroup ledgers, set before anything imports encbench or asks tempfile for its directory.

A worker's private servers, scratch and pymp directories, owner records, filesystems' working directories and the
leftover scans of the tests (a glob of tempfile.gettempdir(), processes naming a path in it) then never see another
worker's; nor does an encbench command of one worker reclaim (and name, on its stderr) what a killed run of the
other left in the ledgers. The directory is made by the controller (the run's base, in the caller's TMPDIR) and
is reachable by the servers' users (postgres, mysql), as /tmp is; each worker's is `<base>/<worker id>`. Each worker
also has its own slice of the private servers' ports (ENCBENCH_PORTS): no two workers' servers ever take the same
port, even one after the other (a test that finds a port closed, or a client that reaches a server by its port,
never meets the other worker's). tests/xdist_workers.py holds the shares and the check that they hold (every
integration test, tests/integration/conftest.py). A run without xdist changes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from xdist_workers import BASE_ENV, share, shared, worker_dirs

WORKER = os.environ.get("PYTEST_XDIST_WORKER")
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)


def _worker_share(base: Path, worker: str) -> None:
    """This worker's own temporary directory, ledgers and port slice, in its environment (and its children's);
    a share another worker would have too is a usage error before any test runs. The directories are set before
    anything imports encbench (its ledgers' paths are read as it is imported); the port slice after."""
    dirs = worker_dirs(base, worker)
    dirs["TMPDIR"].mkdir(exist_ok=True)
    dirs["TMPDIR"].chmod(0o1777)  # as /tmp: a server running as postgres or mysql reaches its directory in it
    os.environ.update({name: str(path) for name, path in dirs.items()})
    tempfile.tempdir = None  # tempfile caches its answer: ask again
    clash = shared({f"gw{i}": share(base, f"gw{i}", WORKERS) for i in range(WORKERS)})
    if clash:
        raise pytest.UsageError(f"xdist workers would share: {'; '.join(clash)}")
    os.environ["ENCBENCH_PORTS"] = "%d-%d" % share(base, worker, WORKERS)["ENCBENCH_PORTS"]


if WORKER and os.environ.get(BASE_ENV):
    _worker_share(Path(os.environ[BASE_ENV]), WORKER)


def _undo_readline_width() -> None:
    """GNU readline, once loaded in a pytest process (it is, by configure time), exports LINES and COLUMNS (80 x 24
    without a terminal) at the C level: os.environ does not show them, but every process spawned without env=
    inherits them, xdist's workers among them, whose encbench commands then made their tables for 80 columns
    where a serial run's made them for a pipe's 100 (leak-check's posture table wrapped its header). Back to the
    environment the suite was started with."""
    for name in ("COLUMNS", "LINES"):
        if name not in os.environ:
            os.unsetenv(name)


def pytest_configure(config):
    """Every test process: readline's LINES and COLUMNS undone. The controller of an xdist run makes the workers'
    base directory (inherited through the environment)."""
    _undo_readline_width()
    if WORKER or not getattr(config.option, "numprocesses", None) or os.environ.get(BASE_ENV):
        return
    base = Path(tempfile.mkdtemp(prefix="xd-"))  # short: socket paths below it stay under 107 bytes
    base.chmod(0o755)
    os.environ[BASE_ENV] = str(base)
    config._encbench_run_base = base


def _mounted_under(base: Path) -> bool:
    prefix = str(base) + "/"
    try:
        return any(line.split()[1].startswith(prefix) for line in Path("/proc/mounts").read_text().splitlines())
    except OSError:
        return True


def pytest_unconfigure(config):
    """The base is removed after the run unless something is still mounted below it (never rmtree into a mount)."""
    base = getattr(config, "_encbench_run_base", None)
    if base is not None:
        os.environ.pop(BASE_ENV, None)
        if not _mounted_under(base):
            shutil.rmtree(base, ignore_errors=True)


# -- scheduling under xdist (`--dist loadfile`) -------------------------------------------------------------------
# Each test file is one unit of work: its module fixtures (often a private server) are set up once, on one worker, and
# its tests never run beside each other. (`--dist loadgroup` would let files share a unit through xdist_group
# markers, but xdist 3.8 renames the nodeid through `item._nodeid`, which pytest 9 no longer reads: no group forms.)
# The files are handed out heaviest first, so that a long one does not start last and leave the other worker idle:
# FIRST lists the files that take longest (measured with --durations=0 in two workers, 2026-11-28; test_pg_knobs and
# test_advise_mariadb re-measured alone after their advise fixtures were cut to the private-server knobs: 154 s and
# 139 s, now behind test_meter's callgrind runs), in that order; the unit tests come last.
FIRST = tuple(f"tests/integration/{name}.py" for name in (
    "test_meter", "test_pg_knobs", "test_advise_mariadb", "test_pg_oltp", "test_kill_reclaim", "test_mariadb_oltp",
    "test_postgres", "test_pg_at_rest", "test_tls_scan", "test_secrets", "test_mariadb", "test_oltp_sqlite",
    "test_errors", "test_advise", "test_maria_encfs", "test_hash", "test_hangs", "test_inputs", "test_column_servers",
    "test_gate_estimate", "test_run", "test_estimate_bill", "test_external_state", "test_interrupt"))


def _rank(item) -> tuple[int, int]:
    path = item.nodeid.split("::", 1)[0]
    if path in FIRST:
        return 0, FIRST.index(path)
    return (2 if path.startswith("tests/unit/") else 1), 0


def pytest_collection_modifyitems(config, items):
    """On an xdist worker (every worker collects the same order): the heaviest files first (a stable sort)."""
    if WORKER:
        items.sort(key=_rank)

"""Shared helpers for the integration tests: the real `encbench` CLI, run as a subprocess
against real SQLCipher at tiny sizes.

Nothing here writes into the repository or ~/.cache: every run gets --data-dir in a
pytest temporary directory, -o in a temporary directory, its working directory in a
temporary directory and XDG_CACHE_HOME pointed at a temporary directory too.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from integration_helpers import Result, encbench_command, external_pg
from xdist_workers import BASE_ENV, Watch

TIMEOUT = 180  # seconds, per CLI invocation (the slowest one here takes ~6 s)


def pytest_collection_modifyitems(config, items):
    """Every test under tests/integration/ runs a real engine: each carries the `integration` marker, whether or not
    its file says so, so that `pytest -m "not integration"` runs none of them."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def _servers_watch():
    """Under pytest-xdist: the private servers of the whole run, watched from this worker (tests/xdist_workers.py)."""
    base, count = os.environ.get(BASE_ENV), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    if not (os.environ.get("PYTEST_XDIST_WORKER") and base and count > 1):
        yield None
        return
    watch = Watch(base, count)
    watch.start()
    yield watch
    watch.stop()


@pytest.fixture(autouse=True)
def _workers_keep_apart(_servers_watch):
    """Around every integration test under xdist: no private server's directory or port is another worker's, each
    port in its worker's slice (ENCBENCH_PORTS); an error at this test's teardown otherwise."""
    if _servers_watch is None:
        yield
        return
    _servers_watch.sample()
    yield
    _servers_watch.sample()
    problems = _servers_watch.take()
    assert not problems, "xdist workers share a private server's directory or port: " + "; ".join(problems)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory) -> Path:
    """Working directory and XDG cache of every invocation (never the repository)."""
    return tmp_path_factory.mktemp("sandbox")


@pytest.fixture(scope="session")
def cli_env(sandbox) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ENCBENCH_KEY", None)
    env["XDG_CACHE_HOME"] = str(sandbox / "xdg-cache")
    env["PYTHONUNBUFFERED"] = "1"
    # a wide pipe: the tests read each line whole (the output wraps to COLUMNS, 100 when unset); the tests of the
    # width itself set their own (test_output_width.py, COLUMNS=100 in test_posture_of_a_fleet_with_one_closed_port)
    env["COLUMNS"] = "1000"
    return env


@pytest.fixture(scope="session")
def encbench(sandbox, cli_env):
    """encbench(*args, env={...}) -> Result: the real CLI in a subprocess."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT) -> Result:
        full_env = dict(cli_env, **(env or {}))
        proc = subprocess.run(encbench_command() + list(args), cwd=sandbox, env=full_env,
                              capture_output=True, text=True, timeout=timeout)
        return Result(list(args), proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """Generated data shared (and reused) by all the runs with the default key."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="session")
def out_dir(tmp_path_factory) -> Path:
    """Result files of the session-scoped runs that several tests look at."""
    return tmp_path_factory.mktemp("results")


HAPPY_ARGS = ("run", "--size", "2MB", "--runs", "3", "--warmups", "1",
              "--workload", "scan-eq", "--workload", "scan-like")


@pytest.fixture(scope="session")
def happy(encbench, data_dir, out_dir):
    """The happy-path run: (Result, result document, result path)."""
    path = out_dir / "happy.json"
    res = encbench(*HAPPY_ARGS, "--data-dir", str(data_dir), "-o", str(path))
    assert res.returncode == 0, str(res)
    return res, json.loads(path.read_text()), path


@pytest.fixture(scope="session")
def second(encbench, data_dir, out_dir, happy):
    """A second, smaller run on the same data (after `happy`): must reuse the data files."""
    path = out_dir / "second.json"
    res = encbench("run", "--size", "2MB", "--runs", "2", "--warmups", "0", "--workload", "scan-eq",
                   "--data-dir", str(data_dir), "-o", str(path))
    assert res.returncode == 0, str(res)
    return res, json.loads(path.read_text()), path


@pytest.fixture
def no_tls_pg():
    """A PostgreSQL server the test started (not encbench) with ssl=off: the in-transit refusals and tls-scan's."""
    with external_pg({"ssl": "off"}) as server:
        yield server

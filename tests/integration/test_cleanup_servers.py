"""`encbench cleanup` reclaims the private server a run killed with SIGKILL left running, and nothing of a live run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from encbench.util import leftovers
from integration_helpers import HAVE_MARIADB

pytestmark = pytest.mark.integration

CHILD = """
import sys, time
from encbench.engines.mariadb import server as maria_server
server = maria_server.start(base=maria_server.BENCH)
print(server.root, flush=True)
time.sleep(3600)
"""


def _pointing_into(directory: Path) -> list[int]:
    return [p.pid for p in leftovers.server_processes(directory)]


@pytest.mark.skipif(not HAVE_MARIADB, reason="MariaDB server binaries not installed")
@pytest.mark.skipif(os.geteuid() != 0, reason="encbench cleanup needs root")
def test_cleanup_stops_and_removes_a_killed_runs_mariadb(encbench):
    live = Path(tempfile.mkdtemp(prefix="encbench-maria-"))  # owned by this (live) process: must be kept
    leftovers.claim_server_dir(live)
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    root = None
    try:
        line = child.stdout.readline().strip()  # blocks until the server is up (or the child died: "")
        assert line, f"the child did not start a server (exit {child.poll()})"
        root = Path(line)
        assert (root / leftovers.OWNER_FILE).is_file()
        assert _pointing_into(root), "no mariadbd runs from the child's directory"
        child.kill()  # SIGKILL: no atexit, the server outlives the run
        child.wait()
        assert root.exists() and _pointing_into(root)

        res = encbench("cleanup")
        assert res.returncode == 0, str(res)
        assert f"server {root} (dead pid {child.pid}): stopped pid" in res.stdout, str(res)
        assert not root.exists(), str(res)
        assert _pointing_into(root) == []
        assert live.is_dir() and (live / leftovers.OWNER_FILE).is_file(), str(res)
        assert str(live) not in res.stdout
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if root is not None:  # whatever the assertions left
            for p in leftovers.server_processes(root):
                p.send_signal(signal.SIGKILL)
            shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(live, ignore_errors=True)

"""A private PostgreSQL server that dies mid-run (SIGKILL of its postmaster): the one-line error names its kept
log, the result file's `error_detail` holds the log's last lines (redacted), and the kept copy is private (0600).
One short run of the connect workload (~10 s)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from integration_helpers import encbench_command, needs_pg


def _postmaster(port: int) -> int | None:
    for p in psutil.process_iter(["cmdline", "ppid"]):
        cmd = p.info.get("cmdline") or []
        if cmd and cmd[0].endswith("/postgres") and f"port={port}" in cmd:
            return p.pid
    return None


@needs_pg
def test_a_dead_private_server_leaves_its_log_named_in_the_error(cli_env, sandbox, tmp_path):
    out, data = tmp_path / "r.json", tmp_path / "data"
    proc = subprocess.Popen(encbench_command() + ["run", "--engine", "postgres", "--workload", "connect", "--quick",
                                                  "--runs", "200", "--warmups", "0", "--data-dir", str(data),
                                                  "-o", str(out)],
                            cwd=sandbox, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.monotonic() + 120
        while port is None and proc.poll() is None and time.monotonic() < deadline:
            try:
                doc = json.loads(out.read_text())
                port = doc["dataset"]["server"]["port"] if doc["runs"] else None
            except (OSError, ValueError, KeyError, TypeError):
                pass
            time.sleep(0.05)
        assert port, f"no run recorded (exit {proc.poll()})"
        pid = _postmaster(port)
        assert pid, f"no postmaster on port {port}"
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (10, 11), err
    line = err.strip().splitlines()[-1]
    assert "the server went away" in line and "server log kept: " in line, err
    doc = json.loads(out.read_text())
    assert doc["status"] == "failed" and "server log kept: " in doc["error"]
    [detail] = doc["error_detail"]
    kept = Path(detail["server_log"])
    assert detail["server"] == "private server" and kept.parent == data and str(kept) in line
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert detail["server_log_tail"] and len(detail["server_log_tail"]) <= 50
    assert detail["server_log_tail"][-1] in kept.read_text()  # the tail is the kept log's end

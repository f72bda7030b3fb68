"""A private server that died during a run: its log kept (a redacted 0600 copy outliving the server's directory)
and its last lines, redacted (engines/local/server.py log_tail/keep_log, PgServer.death_report,
PostgresEngine.failure_detail). No server is started: the PgServer here only has a directory and a log."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from encbench.engines import ENGINES
from encbench.engines.local.server import keep_log, log_tail
from encbench.engines.postgres.server import PgServer

SECRET = "s3cr3t-Pa55"


def _log(path: Path, n: int = 120, crash: bool = False) -> Path:
    lines = [f"2026-11-23 10:00:{i:02d} UTC [42] LOG:  line {i}" for i in range(n)]
    lines.insert(n - 5, f"2026-11-23 10:01:00 UTC [43] ERROR:  bad conninfo postgresql://u:{SECRET}@h/db password={SECRET}")
    if crash:
        lines.append("2026-11-23 10:02:00 UTC [42] LOG:  server process (PID 77) was terminated by signal 9: Killed")
    path.write_text("\n".join(lines) + "\n\n")
    return path


def _server(tmp_path: Path, *, running: bool, crash: bool = False) -> PgServer:
    root = tmp_path / "encbench-pg-x"
    (root / "data").mkdir(parents=True)
    _log(root / "server.log", crash=crash)
    if running:  # a postmaster.pid naming a live process: this one
        (root / "data" / "postmaster.pid").write_text(f"{os.getpid()}\n")
    return PgServer(bindir=Path("/nonexistent"), root=root, port=5999, password=SECRET, user=None)


def test_the_tail_is_the_last_lines_with_passwords_hidden(tmp_path):
    tail = log_tail(_log(tmp_path / "server.log"))
    assert len(tail) == 50 and tail[-1].endswith("line 119")
    assert any("ERROR:  bad conninfo" in ln for ln in tail) and not any(SECRET in ln for ln in tail)
    assert log_tail(tmp_path / "missing.log") == []


def test_a_kept_log_is_private_redacted_and_never_overwritten(tmp_path):
    src = _log(tmp_path / "server.log")
    first = keep_log(src, tmp_path / "keep", "pg.log")
    second = keep_log(src, tmp_path / "keep", "pg.log")
    assert first == tmp_path / "keep" / "pg.log" and second == tmp_path / "keep" / "pg-1.log"
    assert stat.S_IMODE(first.stat().st_mode) == 0o600
    text = first.read_text()
    assert SECRET not in text and "line 0" in text and "line 119" in text  # the whole log, redacted
    assert keep_log(tmp_path / "missing.log", tmp_path / "keep", "x.log") is None


def test_a_dead_server_reports_its_kept_log_and_tail(tmp_path):
    server = _server(tmp_path, running=False)
    report = server.death_report(tmp_path / "keep")
    kept = Path(report["server_log"])
    assert kept.parent == tmp_path / "keep" and kept.is_file() and "5999" in kept.name
    assert len(report["server_log_tail"]) == 50 and not any(SECRET in ln for ln in report["server_log_tail"])


def test_a_running_server_reports_nothing_unless_a_process_of_it_crashed(tmp_path):
    assert _server(tmp_path / "a", running=True).death_report(tmp_path / "keep") is None
    crashed = _server(tmp_path / "b", running=True, crash=True).death_report(tmp_path / "keep")
    assert crashed and "terminated by signal 9" in crashed["server_log_tail"][-1]
    assert not (tmp_path / "keep").exists() or [p.name for p in (tmp_path / "keep").iterdir()] == [
        Path(crashed["server_log"]).name]


def test_the_engine_names_each_dead_server(tmp_path):
    engine = type(ENGINES.get("postgres"))()
    setup = {"schema": "s1", "clusters": {"off": {}, "fscrypt": {}}}
    engine._servers["s1"] = _server(tmp_path / "transit", running=True)
    engine._clusters["s1"] = [[_server(tmp_path / "off", running=True), None],
                              [_server(tmp_path / "fscrypt", running=False), None]]
    [detail] = engine.failure_detail(setup, tmp_path / "keep")
    assert detail["server"] == "encryption=fscrypt" and Path(detail["server_log"]).is_file()
    assert ENGINES.get("sqlite").failure_detail({}, tmp_path) == []

"""Issue 11, items 4, 5 and 9: encbench never hangs, never replaces what is not a regular file,
and says what happened.

The "servers" that hang are small socket servers in a thread of this test, on 127.0.0.1: one
accepts and stays silent, one answers garbage and closes. Every command gets a time bound far
below the old hang (forever, 120 s, 40 s); the real servers (PostgreSQL, MariaDB) are started
here and killed in the middle of a run.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from integration_helpers import (HAVE_MARIADB, HAVE_PG, assert_one_line_error, encbench_command, needs_mariadb,
                                 needs_pg)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "results-v1.json"
BOUND_S = 30  # the old behaviour: forever (MariaDB), 120 s (MariaDB on a PostgreSQL port), 40 s (PostgreSQL)


class FakeServer:
    """A TCP server on 127.0.0.1 in a thread: `silent` accepts and never sends a byte; `garbage`
    sends a line of nonsense and closes. Connections are held until stop()."""

    def __init__(self, mode: str):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.accepted += 1
            if self.mode == "garbage":
                try:
                    conn.sendall(b"HTTP/1.0 418 I am not a database\r\n\r\n")
                finally:
                    conn.close()
            else:
                self.held.append(conn)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        for c in self.held:
            c.close()
        self.sock.close()


@pytest.fixture
def silent():
    server = FakeServer("silent")
    yield server
    server.stop()


@pytest.fixture
def garbage():
    server = FakeServer("garbage")
    yield server
    server.stop()


def timed(encbench, *args, **kw):
    t0 = time.monotonic()
    res = encbench(*args, timeout=BOUND_S * 3, **kw)
    return res, time.monotonic() - t0


# -- item 4: connect and read timeouts ---------------------------------------------------------

@needs_mariadb
def test_mariadb_dsn_to_a_silent_port(encbench, tmp_path, silent):
    out = tmp_path / "r.json"
    res, took = timed(encbench, "run", "--engine", "mariadb", "--dsn", f"mysql://u:p@127.0.0.1:{silent.port}/",
                      "--workload", "scan-eq", "--variant", "cache=warm", "--quick", "-o", str(out))
    line = assert_one_line_error(res, 10)
    assert "no MySQL greeting within 10 s" in line, line
    assert took < BOUND_S, took
    assert silent.accepted == 1  # the clean-up did not connect again to a server that never answered
    assert not out.exists()  # a configuration error: nothing measured, no `failed` file


@needs_mariadb
def test_mariadb_dsn_to_a_garbage_port(encbench, tmp_path, garbage):
    res, took = timed(encbench, "run", "--engine", "mariadb", "--dsn", f"mysql://u:p@127.0.0.1:{garbage.port}/",
                      "--workload", "scan-eq", "--variant", "cache=warm", "--quick", "-o", str(tmp_path / "r.json"))
    line = assert_one_line_error(res, 10)
    assert "cannot connect" in line, line
    assert took < BOUND_S, took


def test_estimate_live_mysql_to_a_silent_port(encbench, silent):
    res, took = timed(encbench, "estimate", "--from", str(GOLDEN), "--live", f"mysql://u:p@127.0.0.1:{silent.port}/",
                      "--seconds", "1")
    line = assert_one_line_error(res, 10)
    assert "no MySQL greeting" in line, line
    assert took < BOUND_S, took


@needs_pg
def test_postgres_dsn_to_a_silent_port(encbench, tmp_path, silent):
    res, took = timed(encbench, "run", "--engine", "postgres", "--dsn",
                      f"postgresql://u:p@127.0.0.1:{silent.port}/db", "--workload", "storm", "--quick",
                      "-o", str(tmp_path / "r.json"))
    line = assert_one_line_error(res, 10)
    assert "timeout expired" in line, line
    assert took < 15, took  # one 10 s connect timeout, not one per sslmode and per clean-up (40 s)
    assert silent.accepted == 1


@pytest.fixture(scope="module")
def postgres():
    if not HAVE_PG:
        pytest.skip("PostgreSQL server binaries not installed")
    from encbench.engines.postgres import server as pg_server

    server = pg_server.start()
    yield server
    server.stop()


@needs_mariadb
def test_mariadb_dsn_to_a_postgres_port(encbench, tmp_path, postgres):
    res, took = timed(encbench, "run", "--engine", "mariadb", "--dsn", f"mysql://u:p@127.0.0.1:{postgres.port}/",
                      "--workload", "scan-eq", "--variant", "cache=warm", "--quick", "-o", str(tmp_path / "r.json"))
    line = assert_one_line_error(res, 10)
    assert "no MySQL greeting" in line, line
    assert took < BOUND_S, took  # was 120 s


@needs_mariadb
def test_ctrl_c_while_connecting_to_a_silent_port(cli_env, sandbox, tmp_path, silent):
    proc = subprocess.Popen(encbench_command() + ["run", "--engine", "mariadb", "--dsn",
                                                  f"mysql://u:p@127.0.0.1:{silent.port}/", "--workload", "scan-eq",
                                                  "--variant", "cache=warm", "--quick", "-o", str(tmp_path / "r.json")],
                            cwd=sandbox, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while silent.accepted == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert silent.accepted == 1, "encbench never connected"
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=BOUND_S)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert took < 5, took  # one Ctrl-C is enough, and the clean-up does not reconnect (and wait again)
    assert silent.accepted == 1
    assert "Traceback" not in err and len(err.splitlines()) == 1, err


# -- item 4: files that are not regular files are never opened -------------------------------

@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("argv", [["show", "{f}"], ["show", "{f}", "--format", "json"], ["compare", "{g}", "{f}"],
                                  ["report", "{f}", "-o", "{o}"], ["estimate", "--from", "{f}", "--read-rate", "1MB/s"],
                                  ["tls-scan", "postgresql://127.0.0.1:1", "--baseline", "{f}"]],
                         ids=["show", "show-json", "compare", "report", "estimate", "tls-scan-baseline"])
def test_a_fifo_is_refused_not_read(encbench, tmp_path, fifo, argv):
    args = [a.format(f=fifo, g=GOLDEN, o=tmp_path / "r.html") for a in argv]
    res, took = timed(encbench, *args)
    line = assert_one_line_error(res, 6)
    assert "is a FIFO" in line and str(fifo) in line, line
    assert took < BOUND_S, took
    assert not (tmp_path / "r.html").exists()


# -- item 5: output paths -------------------------------------------------------------------

def _specials(tmp_path: Path) -> dict[str, Path]:
    target = tmp_path / "precious.txt"
    target.write_text("precious\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    return {"symlink": link, "FIFO": fifo}


@pytest.mark.parametrize("kind", ["symlink", "FIFO"])
def test_run_output_never_replaces_a_special_file(encbench, tmp_path, kind):
    path = _specials(tmp_path)[kind]
    res, took = timed(encbench, "run", "--size", "1MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                      "--data-dir", str(tmp_path / "data"), "-o", str(path))
    line = assert_one_line_error(res, 5)
    assert ("symbolic link" if kind == "symlink" else "FIFO") in line and str(path) in line, line
    assert took < BOUND_S
    assert path.is_symlink() if kind == "symlink" else path.is_fifo()
    assert (tmp_path / "precious.txt").read_text() == "precious\n"
    assert not (tmp_path / "data").exists()  # refused before anything was measured or generated


@pytest.mark.parametrize("kind", ["symlink", "FIFO"])
def test_report_and_baseline_never_replace_a_special_file(encbench, tmp_path, kind):
    path = _specials(tmp_path)[kind]
    res = encbench("report", str(GOLDEN), "-o", str(path), timeout=BOUND_S * 3)
    assert "encbench only writes regular files" in assert_one_line_error(res, 5)
    res = encbench("tls-scan", "postgresql://127.0.0.1:1", "--save-baseline", str(path), timeout=BOUND_S * 3)
    line = assert_one_line_error(res, 5)
    assert "baseline" in line and "encbench only writes regular files" in line, line
    assert path.is_symlink() if kind == "symlink" else path.is_fifo()
    assert (tmp_path / "precious.txt").read_text() == "precious\n"


def test_output_in_a_missing_directory_fails_before_measuring(encbench, tmp_path):
    out = tmp_path / "nonexistent" / "dir" / "x.json"
    res, took = timed(encbench, "run", "--size", "1MB", "--runs", "1", "--warmups", "0", "--workload", "scan-eq",
                      "--data-dir", str(tmp_path / "data"), "-o", str(out))
    line = assert_one_line_error(res, 5)
    assert "does not exist" in line and "nonexistent" in line, line
    assert not (tmp_path / "nonexistent").exists()  # never created
    assert not (tmp_path / "data").exists()
    res = encbench("tls-scan", "postgresql://127.0.0.1:1", "--save-baseline", str(out))
    assert "does not exist" in assert_one_line_error(res, 5)
    assert not (tmp_path / "nonexistent").exists()


# -- item 9: messages and limits ------------------------------------------------------------

def test_tls_scan_setting_failure_does_not_hint_keep(encbench):
    if not HAVE_PG:
        pytest.skip("PostgreSQL server binaries not installed")
    res = encbench("tls-scan", "--engine", "postgres", "--setting", "ssl_ciphers=NO-SUCH-CIPHER")
    line = assert_one_line_error(res, 10)
    assert "--keep" not in line and "--setting" in line, line


@pytest.mark.parametrize("rate", ["1" + "0" * 30, "20TB/s", "9" * 400])
def test_estimate_refuses_absurd_rates(encbench, rate):
    line = assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--read-rate", rate), 4)
    assert "more than any server" in line and "10 TB/s" in line, line
    line = assert_one_line_error(encbench("estimate", "--from", str(GOLDEN), "--read-rate", "1MB/s",
                                          "--write-rate", rate), 4)
    assert "--write-rate" in line


def test_configuration_error_writes_no_result_file(encbench, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("an earlier file that must survive\n")
    res = encbench("run", "--engine", "postgres", "--dsn", "postgresql://u@127.0.0.1:1/db", "--workload", "storm",
                   "--quick", "-o", str(out))
    line = assert_one_line_error(res, 10)
    assert "results so far kept" not in line
    assert out.read_text() == "an earlier file that must survive\n"


def _wait_for_runs(out: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if len(json.loads(out.read_text())["runs"]) >= n:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    pytest.fail(f"no {n} runs recorded (exit {proc.poll()})")


def _run_and_kill(cli_env, sandbox, args: list[str], out: Path, kill) -> tuple[int, str]:
    proc = subprocess.Popen(encbench_command() + args + ["-o", str(out)], cwd=sandbox, env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_runs(out, 1, proc)
        kill()
        _, err = proc.communicate(timeout=BOUND_S * 2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@needs_pg
@pytest.mark.parametrize("workload", ["connect", "storm"])  # killed while connecting, or inside a query
def test_postgres_killed_mid_run_is_the_server_going_away(cli_env, sandbox, tmp_path, workload):
    from encbench.engines.postgres import server as pg_server

    cli_env = dict(cli_env, XDG_CACHE_HOME=str(tmp_path / "xdg"))  # the journal it leaves is this test's

    server = pg_server.start()
    try:
        dsn = f"postgresql://postgres:{server.password}@127.0.0.1:{server.port}/postgres"
        code, err = _run_and_kill(cli_env, sandbox, ["run", "--engine", "postgres", "--dsn", dsn, "--workload",
                                                     workload, "--runs", "40", "--warmups", "0", "--quick",
                                                     "--variant", "tls=on"],
                                  tmp_path / "r.json", lambda: os.kill(server.proc.pid, signal.SIGKILL))
    finally:
        server.stop()
    assert code in (10, 11), err
    assert "the server went away" in err, err
    assert "TLS settings" not in err and "pg_hba" not in err, err
    assert server.password not in err
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "failed"


@needs_mariadb
def test_mariadb_killed_mid_run_is_the_server_going_away(cli_env, sandbox, tmp_path):
    from encbench.engines.mariadb import server as maria_server

    cli_env = dict(cli_env, XDG_CACHE_HOME=str(tmp_path / "xdg"))  # the journal it leaves is this test's

    server = maria_server.start(base=maria_server.BENCH, tls=True)
    try:
        h = server.handle
        dsn = f"mysql://{maria_server.BENCH_USER}:{h.password}@127.0.0.1:{h.port}/"
        pid = h.pid()
        code, err = _run_and_kill(cli_env, sandbox, ["run", "--engine", "mariadb", "--dsn", dsn, "--workload",
                                                     "connect", "--runs", "40", "--warmups", "0", "--quick",
                                                     "--variant", "tls=on"],
                                  tmp_path / "r.json", lambda: os.kill(pid, signal.SIGKILL))
    finally:
        server.stop()
    assert code in (10, 11), err
    assert "the server went away" in err, err
    assert "TLS settings" not in err and "have_ssl" not in err, err
    assert json.loads((tmp_path / "r.json").read_text())["status"] == "failed"


@needs_mariadb
def test_mariadb_timeouts_bound_the_login_only(monkeypatch):
    """The read timeout that bounds the greeting is lifted once logged in: a measured query longer
    than it is never cut (here with a 1 s bound and a 2 s query)."""
    from encbench.engines.mariadb import client as maria_client
    from encbench.engines.mariadb import server as maria_server

    monkeypatch.setattr(maria_client, "CONNECT_TIMEOUT_S", 1)
    server = maria_server.start(base=maria_server.BENCH)
    try:
        conn = maria_client.connect_bounded(server.handle.tcp_params(), ssl_disabled=True)
        try:
            cur = conn.cursor()
            t0 = time.monotonic()
            cur.execute("SELECT SLEEP(2)")
            assert cur.fetchone()[0] == 0 and time.monotonic() - t0 >= 2
        finally:
            conn.close()
    finally:
        server.stop()

"""Issue 24 on MariaDB: `encbench advise --engine mariadb` against real servers.

The server's startup knobs (file_key_management_encryption_algorithm, innodb_encrypt_log, encrypt_tmp_files,
encrypt_binlog) run a private server per value, each setting read back per run and the files it encrypts proven
written during each measured operation; the TLS suites are the client's. --quick ranks them; --from ranks kept
files; on a --dsn server only the suites are measured (the rest said in one line) and the server is left exactly as
it was, interrupted or killed; an interrupted advise on private servers leaves no server, directory or key file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from encbench.engines.mariadb import server as maria_server
from integration_helpers import assert_one_line_error, external_maria, process_command_lines
from server_state import diff, journals, maria_state, start_encbench

pytestmark = pytest.mark.integration

QUICK = ["advise", "--engine", "mariadb", "--quick", "--size", "2MB", "--warmups", "0"]
STARTUP = {"encryption_algorithm": "file_key_management_encryption_algorithm", "encrypt_log": "innodb_encrypt_log",
           "encrypt_tmp_files": "encrypt_tmp_files", "encrypt_binlog": "encrypt_binlog"}


STARTUP_KNOBS = ",".join(STARTUP)
QUICK_SWEEPS = ("encryption_algorithm", "encrypt_log", "encrypt_tmp_files")  # --quick's startup knobs (not the binlog)


@pytest.fixture(scope="module")
def advised(encbench, tmp_path_factory):
    """advise --quick on private servers, the startup knobs (a server per value): (its JSON, the sweeps' directory,
    stderr). The TLS suites, the one knob a --dsn server sweeps too, are advised on the --dsn server below
    (test_dsn_advise_measures_the_suites_and_leaves_the_server_as_it_was: the same sweep, each value checked there)."""
    out = tmp_path_factory.mktemp("advise-maria")
    res = encbench(*QUICK, "--knob", STARTUP_KNOBS, "--data-dir", str(out / "data"), "-o", str(out / "sweeps"),
                   "--json", timeout=900)
    assert res.returncode == 0, str(res)
    return json.loads(res.stdout), out / "sweeps", res.stderr


def _docs(where: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(where.glob("advise-*.json"))}


def test_every_knob_is_measured_and_ranked(advised):
    out, _, _ = advised
    entries = out["entries"]
    assert {(e["key"], e["value"]) for e in entries} >= {
        ("encryption_algorithm", "aes_ctr"), ("encrypt_log", "off"), ("encrypt_tmp_files", "off")}
    assert {e["key"] for e in entries} == set(QUICK_SWEEPS)  # --knob: no TLS suite (the --dsn advise has them)
    for e in entries:
        assert e["default"] != e["value"] and e["n"] >= 6, e
        assert e["ratio"] is None or (e["ci"][0] <= e["ratio"] <= e["ci"][1]), e
        weaker = e["value"] == "off"
        assert e["weakens"] == weaker and (not weaker or e["gives_up"]), e
        if e["standing"].startswith("saves"):
            assert e["standing"] == ("saves, gives up protection" if weaker else "saves"), e  # never a plain win
        if e["rank"] is None:
            assert not e["standing"].startswith("saves"), e
    tmp = next(e for e in entries if e["key"] == "encrypt_tmp_files")
    assert tmp["workload"] == "sort" and "merge passes" in (tmp["explanation"] or ""), tmp
    log = next(e for e in entries if e["key"] == "encrypt_log")
    assert "KB of redo log:" in (log["explanation"] or "") and "raw AES-256-CBC" in log["explanation"], log  # the server's own cipher: the plugin's default
    assert len(out["files"]) == 3 and "not_measured" not in out


def test_each_run_reads_its_settings_back_and_proves_the_files_written(advised):
    _, where, _ = advised
    docs = _docs(where)
    assert set(docs) == {"advise-encryption-algorithm.json", "advise-encrypt-log.json",
                         "advise-encrypt-tmp-files.json"}
    for name, doc in docs.items():
        for run in doc["runs"]:
            v = run["variant"]
            named = [k for k in STARTUP if k in v]
            got = run["session"].get("server_settings", {})
            for key in named:  # the server's own word, per run
                want = {"aes_cbc": "AES_CBC", "aes_ctr": "AES_CTR", "on": "ON", "off": "OFF"}[v[key]]
                assert got[STARTUP[key]] == want, (name, v, got)
            for op in run["operations"]:
                for key in named:
                    if key != "encryption_algorithm":  # its files: the table's pages, checked as always
                        assert op["extra"][f"{key}_proven"] == 1, (name, v, op)
                if "encrypt_tmp_files" in v:
                    assert op["metrics"]["tmp_files_created"] > 0 and op["metrics"]["sort_merge_passes"] > 0, op
                if "encrypt_log" in v:
                    assert op["metrics"]["redo_bytes_written"] > 0, op
    algo = docs["advise-encryption-algorithm.json"]
    assert list(algo["dataset"]["knob_servers"].values()) == [  # aes_cbc, the stock default, on the main server
        {"file_key_management_encryption_algorithm": "AES_CTR"}], algo["dataset"]["knob_servers"]
    raw = algo["calibration"]["raw_cipher"]  # the server's own cipher and each named one
    assert set(raw) == {"16384", "16384/aes_cbc", "16384/aes_ctr"}, raw
    assert "CBC" in raw["16384/aes_cbc"]["cipher"] and "CTR" in raw["16384/aes_ctr"]["cipher"]


def test_from_files_ranks_the_same_and_prints_the_list(encbench, advised):
    out, where, _ = advised
    files = sorted(str(p) for p in where.glob("advise-*.json"))
    res = encbench("advise", *[x for f in files for x in ("--from", f)], "--json")
    assert res.returncode == 0, str(res)
    again = json.loads(res.stdout)["entries"]
    key = lambda e: (e["key"], e["value"], e["ratio"], e["standing"], e["rank"])  # noqa: E731
    assert sorted(map(key, again)) == sorted(map(key, out["entries"]))
    text = encbench("advise", *[x for f in files for x in ("--from", f)])
    assert text.returncode == 0, str(text)
    assert "temporary file encryption off (default on)" in text.stdout
    assert "key management cipher aes_ctr (default aes_cbc)" in text.stdout
    assert "encbench leak-check --engine mariadb --setting innodb_encrypt_log=OFF" in text.stdout


def test_binary_log_knob_takes_effect(encbench, tmp_path):
    """encrypt_binlog needs the binary log on: both values run with log_bin, each read back, bytes written."""
    out = tmp_path / "binlog.json"
    res = encbench("run", "--engine", "mariadb", "--workload", "oltp", "--size", "2MB", "--runs", "1", "--warmups",
                   "0", "--variant", "encryption=on", "--variant", "script=oltp_read_write", "--variant",
                   "encrypt_binlog=on,off", "--param", "seconds=2", "--param", "warmup_seconds=1", "-o", str(out),
                   timeout=600)
    assert res.returncode == 0, str(res)
    doc = json.loads(out.read_text())
    seen = set()
    for run in doc["runs"]:
        got = run["session"]["server_settings"]
        assert got["log_bin"] == "ON" and got["encrypt_binlog"] == run["variant"]["encrypt_binlog"].upper(), got
        assert run["operations"][0]["metrics"]["binlog_bytes_written"] > 0
        seen.add(run["variant"]["encrypt_binlog"])
    assert seen == {"on", "off"}


def test_a_knob_in_a_workload_that_writes_none_of_its_files_fails(encbench, tmp_path):
    res = encbench("run", "--engine", "mariadb", "--workload", "oltp", "--size", "2MB", "--runs", "1", "--warmups",
                   "0", "--variant", "encryption=on", "--variant", "script=oltp_point_select", "--variant",
                   "encrypt_binlog=off", "--param", "seconds=1", "--param", "warmup_seconds=0",
                   "-o", str(tmp_path / "x.json"), timeout=600)
    line = assert_one_line_error(res, 12)
    assert "no binary log bytes" in line, line


def test_bad_input(encbench, tmp_path):
    line = assert_one_line_error(encbench("run", "--engine", "mariadb", "--workload", "sort", "--variant",
                                          "encrypt_tmp_files=off", "--setting", "encrypt_tmp_files=ON",
                                          "-o", str(tmp_path / "a.json")), 2)
    assert "both set encrypt_tmp_files" in line, line
    assert_one_line_error(encbench("run", "--engine", "mariadb", "--variant", "encrypt_log=maybe"), 3)
    line = assert_one_line_error(encbench("run", "--engine", "mariadb", "--workload", "sort", "--variant",
                                          "encrypt_tmp_files=on,off", "--keep", "-o", str(tmp_path / "k.json")), 2)
    assert "server of its own" in line, line
    line = assert_one_line_error(encbench("run", "--engine", "mariadb", "--workload", "dml", "--variant",
                                          "encryption=off,fscrypt", "--variant", "encrypt_log=off"), 4)
    assert "separate runs" in line, line


# -- a --dsn server: only the client's TLS suites; the server exactly as it was --------------------------

@pytest.fixture(scope="module")
def maria():
    with external_maria(tls=True) as server:
        yield server


def _dsn(server) -> str:
    return f"mysql://{maria_server.BENCH_USER}:{server.handle.password}@127.0.0.1:{server.handle.port}/"


DSN_ADVISE = ["advise", "--engine", "mariadb", "--quick", "--runs", "2", "--warmups", "0"]


def test_dsn_advise_measures_the_suites_and_leaves_the_server_as_it_was(encbench, tmp_path, maria, cli_env):
    before = maria_state(maria)
    res = encbench(*DSN_ADVISE, "--dsn", _dsn(maria), "-o", str(tmp_path / "sweeps"), "--json", timeout=600)
    assert res.returncode == 0, str(res)
    out = json.loads(res.stdout)
    assert [Path(f).name for f in out["files"]] == ["advise-tls.json"]
    assert {e["key"] for e in out["entries"]} == {"tls"}
    # the TLS suites (the private advise above leaves them to this one): every suite forced, TLS 1.2 weaker
    assert {e["value"] for e in out["entries"]} == {
        "TLSv1.3:TLS_AES_128_GCM_SHA256", "TLSv1.3:TLS_CHACHA20_POLY1305_SHA256", "TLSv1.2:ECDHE-RSA-AES128-GCM-SHA256"}
    for e in out["entries"]:
        weaker = e["value"].startswith("TLSv1.2")
        assert e["default"] == "on" and e["n"] >= 2 and e["weakens"] == weaker and (not weaker or e["gives_up"]), e
        if e["standing"].startswith("saves"):
            assert e["standing"] == ("saves, gives up protection" if weaker else "saves"), e  # never a plain win
    for run in json.loads(Path(out["files"][0]).read_text())["runs"]:  # the client's suite, no startup knob
        assert run["session"]["tls"]["cipher"] and not set(STARTUP) & set(run["variant"]), run["session"]
    [note] = out["not_measured"]  # one line for the startup options, not an error
    assert "startup options" in note and "innodb_encrypt_log" in note and "restart" in note, note
    assert sum("startup options" in line for line in res.stderr.splitlines()) == 1, res.stderr
    assert diff(before, maria_state(maria)) == {}
    assert journals(cli_env) == []
    line = assert_one_line_error(encbench("run", "--engine", "mariadb", "--dsn", _dsn(maria), "--workload", "oltp",
                                          "--variant", "encrypt_log=off"), 2)
    assert "startup option" in line and "restart" in line, line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_dsn_advise_interrupted_leaves_the_server_as_it_was(encbench, tmp_path, maria, cli_env, sig):
    before = maria_state(maria)
    sweeps = tmp_path / "sweeps"
    proc = start_encbench([*DSN_ADVISE, "--runs", "40", "--dsn", _dsn(maria), "-o", str(sweeps)], cli_env, tmp_path)
    _signal_when(proc, lambda: (sweeps / "advise-tls.json").exists() and any(
        s.startswith("encbench_") for s in maria_state(maria)["schemas"]), sig)  # measuring
    if sig == signal.SIGINT:
        assert proc.returncode == 130, proc.returncode
        assert diff(before, maria_state(maria)) == {}
        assert journals(cli_env) == []
        return
    assert len(journals(cli_env)) == 1  # killed: its database is journaled, the next advise drops it first
    res = encbench(*DSN_ADVISE, "--dsn", _dsn(maria), "-o", str(tmp_path / "next"), timeout=600)
    assert res.returncode == 0, str(res)
    assert "restored what an earlier encbench run left" in res.stderr, res.stderr
    assert diff(before, maria_state(maria)) == {}
    assert journals(cli_env) == []


def _signal_when(proc, ready, sig: int, timeout: float = 300) -> str:
    """Send sig (SIGKILL: to encbench and every process it started) once ready() is true; wait for the end;
    its stderr."""
    import psutil

    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"encbench ended (exit {proc.returncode}) too early: {proc.stderr.read()[-2000:]}")
        assert time.monotonic() < deadline, "advise never reached the state to be signalled in"
        time.sleep(0.05)
    tree = psutil.Process(proc.pid).children(recursive=True) if sig == signal.SIGKILL else []
    proc.send_signal(sig)
    for p in tree:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    _, stderr = proc.communicate(timeout=120)
    psutil.wait_procs(tree, timeout=30)
    return stderr


# -- an interrupted advise on private servers leaves nothing ------------------------------------------

@pytest.fixture
def private_tmp():
    """A TMPDIR of the test's own (the private servers' directories land there), reachable by the mysql user."""
    path = Path(tempfile.mkdtemp(prefix="encbench-advise-test-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _servers_in(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("encbench-maria-*"))


@pytest.mark.parametrize("moment", ["second-server-loading", "measuring"])
def test_interrupted_advise_leaves_no_server_directory_or_key(tmp_path, cli_env, private_tmp, moment):
    sweeps = tmp_path / "sweeps"
    proc = start_encbench([*QUICK, "--data-dir", str(tmp_path / "data"), "-o", str(sweeps)],
                          dict(cli_env, TMPDIR=str(private_tmp)), tmp_path)

    def ready() -> bool:
        if moment == "measuring":
            return (sweeps / "advise-encryption-algorithm.json").exists()
        return len(_servers_in(private_tmp)) >= 2  # the main server and the AES_CBC one
    stderr = _signal_when(proc, ready, signal.SIGINT)
    assert proc.returncode == 130, (proc.returncode, stderr)
    assert "Traceback" not in stderr, stderr
    assert _servers_in(private_tmp) == [], list(private_tmp.iterdir())  # no server directory, so no key file
    assert list(private_tmp.rglob("keys.txt")) == []
    assert process_command_lines(str(private_tmp)) == []  # no mariadbd (nor anything else) running from there

"""Several real `encbench run` processes on one fresh --data-dir: the data is built once (one builds, the others
wait on the data directory's lock, then reuse its files), every run completes with a result file, and the data is
the same as a build of its own; a builder killed with SIGKILL leaves nothing a later run takes as complete."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from encbench.lab import reclaim
from encbench.vocab import datagen
from encbench.engines.sqlite import engine as sqlite_engine
from integration_helpers import encbench_command

pytestmark = pytest.mark.integration

QUICK = ("run", "--quick", "--workload", "scan-eq")  # the race is in prepare: one workload keeps it short
TIMEOUT = 400


def _start(args: list[str], work: Path, env: dict, name: str) -> tuple[subprocess.Popen, Path]:
    err = work / f"{name}.stderr"
    with open(work / f"{name}.stdout", "w") as so, open(err, "w") as se:
        proc = subprocess.Popen(encbench_command() + args, cwd=work, env=env, stdout=so, stderr=se,
                                start_new_session=True)
    return proc, err


def _stop(procs) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _rows_digest(conn) -> str:
    h = hashlib.sha256()
    for row in conn.execute(f"SELECT * FROM {sqlite_engine.TABLE} ORDER BY id"):
        h.update(repr(row).encode())
    return h.hexdigest()


def _reference_plain(tmp: Path, rows: int, seed: int) -> Path:
    """The plain file a run of its own builds (the engine's writer, in this process)."""
    path = tmp / "reference" / "plain-p4096.db"
    path.parent.mkdir()
    sqlite_engine.SQLiteEngine._write_plain(sqlite_engine._import(), path, {"encryption": "off", "page_size": "4096"},
                                            {"rows": rows, "seed": seed})
    return path


@pytest.mark.parametrize("n", [2, 3])
def test_concurrent_runs_on_a_fresh_data_dir_build_the_data_once(cli_env, tmp_path, n):
    data = tmp_path / "data"  # fresh: nothing generated yet
    procs = []
    try:
        for i in range(n):
            procs.append(_start([*QUICK, "--data-dir", str(data), "-o", str(tmp_path / f"r{i}.json")], tmp_path,
                                cli_env, f"run{i}")[0])
        codes = [p.wait(timeout=TIMEOUT) for p in procs]
    finally:
        _stop(procs)
    errs = [(tmp_path / f"run{i}.stderr").read_text() for i in range(n)]
    assert codes == [0] * n, list(zip(codes, errs))
    docs = [json.loads((tmp_path / f"r{i}.json").read_text()) for i in range(n)]
    assert all(d["status"] == "complete" for d in docs)
    datasets = [d["dataset"] for d in docs]
    assert len({ds["dataset_id"] for ds in datasets}) == 1 and len({ds["data_dir"] for ds in datasets}) == 1
    names = set(datasets[0]["files"])
    assert names == {"plain-p4096.db", "enc-p4096-k256000-passphrase.db"}
    for name in names:  # each file built by exactly one run, the others reused it
        assert sorted(ds["files"][name]["reused"] for ds in datasets) == [False] + [True] * (n - 1), name
        assert len({ds["files"][name]["bytes"] for ds in datasets}) == 1
    ddir = Path(datasets[0]["data_dir"])
    assert not list(ddir.glob("*.tmp*")) and not list(ddir.glob(".*.json.*"))  # no half-built file left
    # the same data as a build of its own: the plain file byte for byte, the encrypted one row for row
    plain = ddir / "plain-p4096.db"
    ref = _reference_plain(tmp_path, datasets[0]["rows"], datasets[0]["seed"])
    assert hashlib.sha256(plain.read_bytes()).hexdigest() == hashlib.sha256(ref.read_bytes()).hexdigest()
    sqlcipher3 = sqlite_engine._import()
    variant = {"encryption": "on", "page_size": "4096", "kdf_iter": "256000", "key": "passphrase"}
    enc = sqlite_engine._connect(sqlcipher3, ddir / "enc-p4096-k256000-passphrase.db", variant,
                                 sqlite_engine.key_sql(variant, sqlite_engine.DEFAULT_PASSPHRASE))
    ref_conn = sqlcipher3.connect(str(ref))
    try:
        assert _rows_digest(enc) == _rows_digest(ref_conn)
    finally:
        enc.close()
        ref_conn.close()


def test_a_builder_killed_mid_build_leaves_nothing_taken_as_complete(cli_env, tmp_path):
    """A builds (a bigger size, so it takes a while); B starts, says it waits for A; A is killed with SIGKILL
    while its file is half-built; B then builds the file itself (never reusing A's) and completes."""
    data = tmp_path / "data"
    size = ("--size", "48MB")
    rows = datagen.row_count_for(48_000_000)
    one = ("--workload", "scan-eq", "--runs", "1", "--warmups", "0", "--variant", "encryption=off",
           "--variant", "cache=warm", "--progress", "lines", *size, "--data-dir", str(data))
    procs = []
    try:
        a, _ = _start(["run", *one, "-o", str(tmp_path / "a.json")], tmp_path, cli_env, "a")
        procs.append(a)
        deadline = time.monotonic() + 120
        while not list(data.glob("sqlite-*/plain-p4096.tmp")):
            assert a.poll() is None and time.monotonic() < deadline, "A never started building"
            time.sleep(0.05)
        b, b_err = _start(["run", *one, "-o", str(tmp_path / "b.json")], tmp_path, cli_env, "b")
        procs.append(b)
        while "waiting for another run building the data" not in b_err.read_text():
            assert b.poll() is None and time.monotonic() < deadline, f"B did not wait for A: {b_err.read_text()}"
            time.sleep(0.05)
        assert a.poll() is None and list(data.glob("sqlite-*/plain-p4096.tmp")), "A finished before the kill"
        os.killpg(a.pid, signal.SIGKILL)
        a.wait()
        assert b.wait(timeout=TIMEOUT) == 0, b_err.read_text()
    finally:
        _stop(procs)
        # B started before A died, so it reclaimed nothing: what A left (its owner record in this worker's TMPDIR,
        # its scratch directory) is reclaimed here, not by the next command this worker runs (a test of its stderr)
        done = reclaim.reclaim(data)
    assert done.problems == [], done.problems
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["status"] == "complete"
    meta = doc["dataset"]["files"]["plain-p4096.db"]
    assert meta["reused"] is False  # B built it: A's half file was never taken as complete
    ddir = Path(doc["dataset"]["data_dir"])
    assert not list(ddir.glob("*.tmp*"))
    conn = sqlite_engine._import().connect(str(ddir / "plain-p4096.db"))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute(f"SELECT count(*) FROM {sqlite_engine.TABLE}").fetchone()[0] == rows
    finally:
        conn.close()
    assert not (tmp_path / "a.json").exists()  # A was killed before measuring anything

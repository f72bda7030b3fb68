"""Helpers of the integration tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


def encbench_command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m encbench.cli`."""
    script = Path(sys.executable).parent / "encbench"  # not resolved: keep the venv's bin/
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "encbench.cli"]


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:  # shown by pytest when an assertion on a Result fails
        return (f"encbench {' '.join(self.args)} -> exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout[-3000:]}\n--- stderr ---\n{self.stderr[-3000:]}")


def assert_one_line_error(res: Result, code: int, prefix: str = "encbench: error:") -> str:
    """Exit code as in errors.py, one line on stderr with the prefix, no traceback anywhere."""
    assert res.returncode == code, str(res)
    assert "Traceback" not in res.stdout + res.stderr, str(res)
    lines = res.stderr.splitlines()
    assert len(lines) == 1, str(res)
    assert lines[0].startswith(prefix), str(res)
    return lines[0]


def scratch_dirs(data_dir: Path) -> list[Path]:
    return sorted(data_dir.glob("scratch-*")) if data_dir.exists() else []


def process_command_lines(word: str) -> list[str]:
    """Command lines of the running processes that mention `word` (psutil: no procps needed)."""
    import psutil

    out = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if word in line:
            out.append(line)
    return out


def temp_dir() -> Path:
    """This test process's temporary directory (a pytest-xdist worker's own: tests/conftest.py), where encbench's
    private servers, filesystems' and pymp directories land."""
    return Path(tempfile.gettempdir())


def temp_dirs(pattern: str) -> set[str]:
    """The entries of this process's temporary directory that match `pattern` (e.g. "encbench-maria-*")."""
    return {str(p) for p in temp_dir().glob(pattern)}


def own_command_lines(word: str) -> list[str]:
    """process_command_lines(word), only those naming a path in this process's temporary directory (a private
    server's my.cnf or data directory, a callgrind output file): not another xdist worker's, nor another user's."""
    prefix = str(temp_dir()) + "/"
    return [line for line in process_command_lines(word) if prefix in line]


def env_command_lines(word: str) -> list[str]:
    """process_command_lines(word), only those of processes with this process's temporary directory in their
    environment (uses_our_temp_dir)."""
    import psutil

    out = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if word in line and uses_our_temp_dir(proc):
            out.append(line)
    return out


def uses_our_temp_dir(proc) -> bool:
    """A process (psutil) started with this process's temporary directory in its environment (a sysbench that
    names no path of ours on its command line). Without TMPDIR a process's directory is tempfile's default."""
    import psutil

    try:
        env = proc.environ()
    except psutil.Error:
        return False
    return os.path.realpath(env.get("TMPDIR") or "/tmp") == os.path.realpath(temp_dir())


def orphan_keys() -> list[str]:
    """Key directories under the encfs key root that no ledger records: this worker's (ledger.records()), the other
    xdist workers' and the default one (/var/lib/encbench/encfs: a run outside this test run). Read twice, so that
    a filesystem made or torn down between reading the records and listing the keys is not taken for an orphan
    (a record is written before its keys are made, and removed after they are destroyed)."""
    from encbench.host.encfs import ledger

    def listed() -> set[str]:
        live = {r["keydir"] for r in ledger.records()} | _keydirs_in(_other_ledgers())
        keys = {str(p) for p in ledger.KEY_ROOT.iterdir()} if ledger.KEY_ROOT.is_dir() else set()
        return keys - live

    first = listed()
    return sorted(first & listed()) if first else []


DEFAULT_ENCFS_STATE = Path("/var/lib/encbench/encfs")


def _other_ledgers() -> list[Path]:
    """The encfs ledgers other than this process's: the default one and the other workers' (tests/conftest.py)."""
    from encbench.host.encfs import ledger

    dirs = [DEFAULT_ENCFS_STATE]
    base = os.environ.get("ENCBENCH_TEST_RUN_BASE")
    if base:
        dirs += sorted(Path(base).glob("*-encfs-state"))
    return [d for d in dirs if d.resolve() != ledger.STATE_DIR.resolve()]


def _keydirs_in(state_dirs: list[Path]) -> set[str]:
    import json

    out = set()
    for d in state_dirs:
        for path in sorted(d.glob("*.json")) if d.is_dir() else []:
            try:
                out.add(json.loads(path.read_text())["keydir"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return out


def _have(check) -> bool:
    try:
        check()
        return True
    except Exception:  # noqa: BLE001 - any reason means: not installed here
        return False


def _pg_bindir() -> None:
    from encbench.engines.postgres import server as pg_server

    pg_server.find_bindir()


def _maria_binaries() -> None:
    from encbench.engines.mariadb import server as maria_server

    maria_server.binaries()


HAVE_PG = _have(_pg_bindir)
HAVE_MARIADB = _have(_maria_binaries)


def _skipif(missing: bool, reason: str):
    import pytest

    return pytest.mark.skipif(missing, reason=reason)


needs_pg = _skipif(not HAVE_PG, "PostgreSQL server binaries not installed")
needs_mariadb = _skipif(not HAVE_MARIADB, "MariaDB server binaries not installed")


@contextlib.contextmanager
def external_pg(settings: dict | None = None):
    """A PostgreSQL server started by the test, not by encbench (as a DBA's server would be); skips without binaries."""
    if not HAVE_PG:
        pytest.skip("PostgreSQL server binaries not installed")
    from encbench.engines.postgres import server as pg_server

    server = pg_server.start(settings=settings) if settings else pg_server.start()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def external_maria(**options):
    """A MariaDB server started by the test (maria_server.start's options; base BENCH unless given)."""
    if not HAVE_MARIADB:
        pytest.skip("MariaDB server binaries not installed")
    from encbench.engines.mariadb import server as maria_server

    options.setdefault("base", maria_server.BENCH)
    server = maria_server.start(**options)
    try:
        yield server
    finally:
        server.stop()


def scale_encrypted(src: Path, dst: Path, factor: float) -> Path:
    """src with every elapsed and CPU value of its encrypted runs (operations and connection open) x factor."""
    import json

    doc = json.loads(src.read_text())
    for run in doc["runs"]:
        if run["variant"].get("encryption") != "on":
            continue
        for values in [op["metrics"] for op in run.get("operations", [])] + [run.get("open") or {}]:
            for metric in ("wall_s", "cpu_s"):
                if metric in values:
                    values[metric] *= factor
    dst.write_text(json.dumps(doc))
    return dst


def same_build_runs(encbench, args, data_dir: Path, out: Path) -> tuple[Path, Path]:
    """Two real invocations of the same build (a.json, b.json in out), each asserted to succeed."""
    paths = []
    for name in ("a", "b"):
        path = out / f"{name}.json"
        res = encbench(*args, "--data-dir", str(data_dir), "-o", str(path))
        assert res.returncode == 0, str(res)
        paths.append(path)
    return paths[0], paths[1]


def encfs_unavailable(kinds=("plain", "fscrypt", "gocryptfs")) -> str | None:
    """Why these encrypted-filesystem kinds cannot be mounted here (the layer's one-line error), else None."""
    from encbench import errors
    from encbench.host import encfs

    for kind in kinds:
        try:
            encfs.check(kind)
        except errors.FilesystemUnavailableError as e:
            return e.one_line()
    return None


def session_processes(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid` (a command started with start_new_session)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


class ServerWatch:
    """While a CLI run runs (`proc`, a Popen), every `name` process whose command line names a directory that matches
    `pattern` in this process's temporary directory and did not exist before: whether it was ever seen alive outside
    the run's process tree (issue 30: a server a worker restarted went to init, and its CPU to "other processes"), and
    its CPU, sampled every `interval` seconds in a thread, each sample with the worker then running (a child of the
    run's forkserver), if any; `join()` after the run."""

    def __init__(self, proc, name: str, pattern: str, interval: float = 0.25):
        import threading

        self.proc, self.name, self.pattern, self.interval = proc, name, pattern, interval
        self.before = temp_dirs(pattern)
        self.seen: dict[int, list[tuple[int | None, float]]] = {}  # pid -> [(the worker running then, its CPU)]
        self.born: dict[int, float] = {}  # pid -> start time (seconds since the epoch)
        self.outside: dict[int, str] = {}  # pid -> its parents when it was seen outside the tree
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _ours(self, cmdline: list[str]) -> bool:
        line = " ".join(cmdline or [])
        return any(d in line for d in temp_dirs(self.pattern) - self.before)

    def _worker(self) -> int | None:
        """The worker that runs now: a live child of the run's forkserver that is not a server it adopted."""
        import psutil

        def alive_named(p: psutil.Process, word: str) -> bool:  # a zombie (a stopped server) has no command line
            try:
                return p.status() != psutil.STATUS_ZOMBIE and word in " ".join(p.cmdline())
            except psutil.Error:
                return False

        try:
            children = psutil.Process(self.proc.pid).children()
        except psutil.Error:
            return None
        for fs in [c for c in children if alive_named(c, "forkserver")]:
            return next((c.pid for c in fs.children() if alive_named(c, "") and c.name() != self.name), None)
        return None

    def _watch(self) -> None:
        import psutil

        while self.proc.poll() is None:
            worker = self._worker()
            for p in psutil.process_iter(["name", "cmdline", "create_time"]):
                try:
                    if p.info["name"] != self.name or not self._ours(p.info["cmdline"]):
                        continue
                    t = p.cpu_times()
                    self.born[p.pid] = p.info["create_time"]
                    parents = p.parents()
                    if p.status() != psutil.STATUS_ZOMBIE and self.proc.pid not in [q.pid for q in parents]:
                        self.outside[p.pid] = " <- ".join(f"{q.pid} {q.name()}" for q in parents)
                except psutil.Error:
                    continue
                self.seen.setdefault(p.pid, []).append((worker if worker == self._worker() else None,
                                                        t.user + t.system))
            time.sleep(self.interval)

    def cpu_in_runs(self, pid: int) -> float:
        """What process `pid` was seen to use while one worker ran (between two samples taken during the same
        worker's life, each checked before and after): inside the run's measured windows, a lower bound of it."""
        samples = self.seen.get(pid, [])
        return sum(b[1] - a[1] for a, b in zip(samples, samples[1:]) if a[0] is not None and a[0] == b[0])

    def join(self) -> None:
        self._thread.join(30)

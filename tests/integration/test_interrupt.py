"""Ctrl-C / SIGTERM in the middle of a run: exit 130, the runs so far kept, nothing left over.

The signal is sent while a worker process is deep inside a measured run (in SQLCipher's
key derivation, made long with kdf_iter=1000000), never while the pool spawns the next
worker: a signal in that window is a separate, known bug (see
test_interrupt_while_spawning_a_worker), and would make these tests flaky.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from integration_helpers import Result, encbench_command, scratch_dirs, session_processes

pytestmark = pytest.mark.integration

RUNS = 20
LONG_RUN = ("run", "--size", "4MB", "--runs", str(RUNS), "--warmups", "1", "--workload", "scan-eq",
            "--variant", "encryption=on", "--variant", "kdf_iter=1000000")
PLANNED = (RUNS + 1) * 2  # (runs + warmups) x (cache cold, warm)
WAIT = 90  # seconds: until the moment to interrupt, and until the process exits after the signal
IN_RUN = 0.1  # seconds a new worker must have been seen alive before the signal (its key derivation takes ~0.5 s)


def _load(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # not there yet (the file is replaced atomically, never half-written)
        return None


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _workers(main_pid: int) -> list[int]:
    """The pool's worker processes: children of the forkserver, itself a child of encbench."""
    return [w for fs in _children(main_pid) if "forkserver" in _cmdline(fs) for w in _children(fs)]


def _reset_signals():  # a pytest started in the background inherits SIGINT ignored: undo that
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _poll(condition, what: str, proc: subprocess.Popen, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if proc.poll() is not None:
            pytest.fail(f"encbench exited ({proc.returncode}) before {what}")
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail(f"timed out waiting for {what}")


def interrupt(command: list[str], args: list[str], *, workdir: Path, env: dict, signum: int, group: bool,
              when, exit_timeout: float = WAIT) -> tuple[Result, int, list[int]]:
    """Start encbench, wait until when(pid) is true, send `signum`.

    Returns (Result, runs seen before the signal, processes of its session still alive 5 s
    after it exited). group=True sends the signal to the whole process group, as a
    terminal's Ctrl-C does (the workers get it too); group=False to the main process only.
    """
    stdout, stderr = workdir / "stdout.txt", workdir / "stderr.txt"
    with open(stdout, "w") as so, open(stderr, "w") as se:
        proc = subprocess.Popen(command + args, cwd=workdir, env=env, stdout=so, stderr=se,
                                start_new_session=True, preexec_fn=_reset_signals)
    leftovers: list[int] = []
    try:
        seen = _poll(lambda: when(proc.pid), "the moment to interrupt", proc)
        (os.killpg if group else os.kill)(proc.pid, signum)
        try:
            proc.wait(timeout=exit_timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"encbench did not exit within {exit_timeout} s of the signal")
        deadline = time.monotonic() + 5
        while (leftovers := session_processes(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        if proc.poll() is None or session_processes(proc.pid):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    return Result(args, proc.returncode, stdout.read_text(), stderr.read_text()), seen, leftovers


def in_a_run(out: Path):
    """when(): at least one run recorded, and a new worker alive for IN_RUN s (so inside its run)."""
    first_seen: dict[int, float] = {}

    def when(pid: int) -> int:
        doc = _load(out)
        if not doc or not doc["runs"]:
            return 0
        done = {r["worker_pid"] for r in doc["runs"]}
        now = time.monotonic()
        for w in _workers(pid):
            if w not in done and now - first_seen.setdefault(w, now) >= IN_RUN:
                return len(doc["runs"])
        return 0

    return when


@pytest.fixture(scope="module")
def long_data(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("data-4MB")


_cache: dict = {}


@pytest.fixture
def interrupted(long_data, cli_env, tmp_path_factory):
    """interrupted(signal name, group) -> (Result, doc, runs seen, leftovers, result path); each run once."""

    def get(name: str, group: bool):
        if (name, group) not in _cache:
            work = tmp_path_factory.mktemp(f"int-{name}-{'group' if group else 'proc'}")
            out = work / "result.json"
            res, seen, leftovers = interrupt(encbench_command(),
                                             [*LONG_RUN, "--data-dir", str(long_data), "-o", str(out)],
                                             workdir=work, env=cli_env, signum=getattr(signal, name),
                                             group=group, when=in_a_run(out))
            _cache[(name, group)] = (res, _load(out), seen, leftovers, out)
        return _cache[(name, group)]

    return get


SCENARIOS = [("SIGINT", False), ("SIGINT", True), ("SIGTERM", False)]
IDS = ["sigint-process", "ctrl-c-process-group", "sigterm-process"]


@pytest.mark.parametrize("name,group", SCENARIOS, ids=IDS)
def test_interrupt_keeps_partial_results(interrupted, long_data, name, group):
    res, doc, seen, leftovers, _ = interrupted(name, group)
    assert res.returncode == 130, str(res)
    assert "Traceback" not in res.stdout + res.stderr, str(res)
    assert len(res.stderr.splitlines()) == 1, str(res)
    assert "interrupted" in res.stderr
    assert doc is not None, "the result file is not valid JSON after the interrupt"
    assert doc["schema_version"] == 1
    assert doc["status"] == "interrupted"
    assert doc["error"] is None
    assert seen <= len(doc["runs"]) < PLANNED
    for run in doc["runs"]:
        assert run["workload"] == "scan-eq"
        assert [op["operation"] for op in run["operations"]] == ["scan"]
        assert "wall_s" in run["operations"][0]["metrics"]
    assert "summaries" in doc and "comparisons" in doc  # analysed as far as it got
    assert scratch_dirs(long_data) == []
    assert leftovers == []  # no worker, forkserver or resource tracker outlives encbench


@pytest.mark.parametrize("name,group", SCENARIOS, ids=IDS)
def test_interrupted_file_can_be_shown(encbench, interrupted, name, group):
    _, _, _, _, out = interrupted(name, group)
    res = encbench("show", str(out))
    assert res.returncode == 0, str(res)
    assert "status interrupted" in res.stdout
    res = encbench("show", str(out), "--json")
    assert res.returncode == 0, str(res)
    assert json.loads(res.stdout)["status"] == "interrupted"


def test_interrupt_message_prefix(interrupted):
    res = interrupted("SIGINT", False)[0]
    assert res.stderr.startswith("encbench: interrupted"), str(res)


# -- signals at chosen moments, made deterministic -------------------------------------------
# Both tests run the real main() in a subprocess (python -c), with one function of the
# standard library wrapped in the encbench process only, to land the signal at a chosen point.

SLOW_FSYNC_MAIN = """
import os, sys, time
_fsync = os.fsync
def _slow_fsync(fd):  # a slow disk: fsync of the result file's temporary copy takes 0.5 s
    try:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        name = ""
    if name.startswith(os.environ["SLOW_FSYNC_PREFIX"]):
        time.sleep(0.5)
    return _fsync(fd)
os.fsync = _slow_fsync
from encbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_interrupt_during_result_write_leaves_no_temp_file(long_data, cli_env, tmp_path):
    """A Ctrl-C while write_atomic() writes (and fsyncs) its temporary file after a run must not
    leave a hidden '.<name>.json.XXXXXXXX' file behind (it did before the fix in 7e14c21)."""
    out = tmp_path / "result.json"
    env = dict(cli_env, SLOW_FSYNC_PREFIX=f".{out.name}.")

    def writing_after_first_run(pid: int) -> int:
        doc = _load(out)
        if not doc or not doc["runs"]:
            return 0
        return len(doc["runs"]) if list(tmp_path.glob(f".{out.name}.*")) else 0

    res, _, _ = interrupt([sys.executable, "-c", SLOW_FSYNC_MAIN],
                          [*LONG_RUN, "--data-dir", str(long_data), "-o", str(out)],
                          workdir=tmp_path, env=env, signum=signal.SIGINT, group=False,
                          when=writing_after_first_run)
    assert res.returncode == 130, str(res)
    doc = _load(out)
    assert doc is not None and doc["status"] == "interrupted"  # the final write still works
    assert scratch_dirs(long_data) == []
    assert list(tmp_path.glob(f".{out.name}.*")) == []


SIGNAL_AT_SPAWN_MAIN = """
import os, signal, sys, threading
import multiprocessing.process as mpp
_start, _count = mpp.BaseProcess.start, [0]
def _start_then_signal(self):
    _start(self)
    if threading.current_thread() is threading.main_thread():
        _count[0] += 1
        if _count[0] == int(os.environ["SIGNAL_AT_SPAWN"]):
            os.kill(os.getpid(), signal.SIGTERM)  # as if it arrived just now, from outside
mpp.BaseProcess.start = _start_then_signal
from encbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_interrupt_while_spawning_a_worker(tmp_path_factory, cli_env, tmp_path):
    data = tmp_path_factory.mktemp("data-spawn")
    out = tmp_path / "result.json"
    res, _, leftovers = interrupt(
        [sys.executable, "-c", SIGNAL_AT_SPAWN_MAIN],
        ["run", "--size", "2MB", "--runs", "3", "--warmups", "0", "--workload", "scan-eq",
         "--data-dir", str(data), "-o", str(out)],
        workdir=tmp_path, env=dict(cli_env, SIGNAL_AT_SPAWN="3"), signum=0, group=False,
        when=lambda pid: 1, exit_timeout=15)
    assert res.returncode == 130, str(res)
    assert "Traceback" not in res.stderr, str(res)
    assert _load(out)["status"] == "interrupted"
    assert leftovers == []


# -- SIGKILL: nothing to clean up in the dying process; the next run reclaims it ----------------------

KILLS = 4


@pytest.fixture
def private_tmp():
    """A TMPDIR of the test's own (multiprocessing's pymp-* directories land there), its path short: the
    forkserver's socket, <TMPDIR>/pymp-XXXXXXXX/listener-XXXXXXXX, must fit in 107 bytes. One below tmp_path does
    not in an xdist worker (.../pytest-N/popen-gw0/test_sigkill_leftovers_are_rec0/tmp/...: 107 bytes with N < 100
    under /tmp, 121 under a longer TMPDIR): the run failed (exit 11) before its first run."""
    d = Path(tempfile.mkdtemp(prefix="int-"))  # this worker's temporary directory (tests/conftest.py)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _owned(directories: list[Path]) -> dict[Path, int]:
    """{directory: owner pid} of those holding an encbench owner record."""
    from encbench.util import leftovers

    return {d: o["pid"] for d in directories if (o := leftovers.read_owner(d))}


def test_sigkill_leftovers_are_reclaimed_by_the_next_run(long_data, cli_env, tmp_path, private_tmp):
    """SIGKILL of the runner mid-run, KILLS times: each time its scratch-* (data directory) and pymp-*
    (temporary directory) stay behind with its pid recorded, the orphaned worker exits without a word,
    and the next run removes them and says so in one line."""
    tmp = private_tmp
    env = dict(cli_env, TMPDIR=str(tmp))
    previous: dict[Path, int] = {}
    for k in range(KILLS):
        work = tmp_path / f"kill-{k}"
        work.mkdir()
        out = work / "result.json"
        res, seen, still = interrupt(encbench_command(), [*LONG_RUN, "--data-dir", str(long_data), "-o", str(out)],
                                     workdir=work, env=env, signum=signal.SIGKILL, group=False, when=in_a_run(out),
                                     exit_timeout=30)
        assert res.returncode == -signal.SIGKILL and seen >= 1
        assert not still, f"processes of the killed run still alive 5 s later: {still}"  # the orphan stopped
        # the orphaned worker shares the runner's stderr: not a word from it (no BrokenPipeError traceback)
        assert "Traceback" not in res.stderr and "Error" not in res.stderr, res.stderr
        if previous:  # this run reclaimed what the last killed one left, and said so on one line
            lines = [line for line in res.stderr.splitlines() if "reclaimed" in line]
            assert len(lines) == 1 and all(str(d) in lines[0] for d in previous), (res.stderr, previous)
            assert not any(d.exists() for d in previous)
        left = _owned(scratch_dirs(long_data) + sorted(tmp.glob("pymp-*")))  # the killed run's, pid recorded
        assert sorted(d.name.split("-")[0] for d in left) == ["pymp", "scratch"] and len(set(left.values())) == 1, left
        previous = left
    done = tmp_path / "after"
    done.mkdir()
    res = subprocess.run(encbench_command() + ["run", "--size", "4MB", "--runs", "1", "--warmups", "0", "--workload",
                                               "scan-eq", "--variant", "encryption=off", "--variant", "cache=warm",
                                               "--data-dir", str(long_data), "-o", str(done / "r.json")],
                         cwd=done, env=env, capture_output=True, text=True, timeout=WAIT)
    assert res.returncode == 0, res.stderr
    assert sum("reclaimed" in line for line in res.stderr.splitlines()) == 1
    assert not scratch_dirs(long_data) and not list(tmp.glob("pymp-*"))



@pytest.mark.skipif(os.geteuid() != 0, reason="encbench cleanup needs root")
def test_sigkill_leftovers_are_reclaimed_by_encbench_cleanup(long_data, cli_env, tmp_path, private_tmp):
    """SIGKILL of the runner mid-run: `encbench cleanup --data-dir` (not only the next run) removes its scratch-*
    and pymp-* directories, one line each; a live owner's directories and an unowned one stay."""
    from encbench.util import leftovers

    tmp = private_tmp
    env = dict(cli_env, TMPDIR=str(tmp))
    live = [long_data / "scratch-live", tmp / "pymp-live"]  # this (live) process's: must stay
    unowned = tmp / "pymp-unowned"  # another program's (no owner record): must stay
    for d in (*live, unowned):
        d.mkdir()
    for d in live:
        leftovers.write_owner(d, leftovers.me())
    try:
        out = tmp_path / "result.json"
        res, seen, still = interrupt(encbench_command(), [*LONG_RUN, "--data-dir", str(long_data), "-o", str(out)],
                                     workdir=tmp_path, env=env, signum=signal.SIGKILL, group=False,
                                     when=in_a_run(out), exit_timeout=30)
        assert res.returncode == -signal.SIGKILL and seen >= 1 and not still
        left = _owned(scratch_dirs(long_data) + sorted(tmp.glob("pymp-*")))
        killed = {d: pid for d, pid in left.items() if d not in live}
        assert sorted(d.name.split("-")[0] for d in killed) == ["pymp", "scratch"], left
        done = subprocess.run(encbench_command() + ["cleanup", "--data-dir", str(long_data)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=WAIT)
        assert done.returncode == 0, done.stderr
        for d, pid in killed.items():
            assert not d.exists(), done.stdout
            assert f"directory {d} (dead pid {pid}): removed" in done.stdout
        assert "directories: 2 removed" in done.stdout
        assert all(d.is_dir() for d in live) and unowned.is_dir()
        assert not any(str(d) in done.stdout for d in (*live, unowned))
    finally:
        for d in (*live, unowned):
            shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3, 0.5])
def test_a_signal_in_the_first_moments_is_an_interruption(cli_env, tmp_path, delay):
    """Early on, a signal can land inside an import that turns KeyboardInterrupt into another error
    (numpy: 'ImportError: initialization failed'): still exit 130, never 'internal error' / exit 1.

    Before the interpreter reaches encbench's code no handler exists yet: the signal's default
    action ends the process (-SIGTERM), silently and before anything was made."""
    proc = subprocess.Popen(encbench_command() + ["run", "--quick", "--workload", "scan-eq", "--runs", "1",
                                                  "--warmups", "0", "--data-dir", str(tmp_path / "d"),
                                                  "-o", str(tmp_path / "r.json")],
                            cwd=tmp_path, env=cli_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_reset_signals)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=WAIT)
    if proc.returncode == -signal.SIGTERM:  # still starting Python: nothing done, nothing to report
        assert err == "" and not (tmp_path / "r.json").exists() and not (tmp_path / "d").exists(), err
    else:
        assert proc.returncode in (0, 130), (proc.returncode, err)
    assert "internal error" not in err and "Traceback" not in err, err

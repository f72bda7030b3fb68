"""Runs killed at a random moment while they measure, then one more encbench: nothing of theirs is left.

SIGKILL (to the main process, or to its whole process group) of a SQLite run, a PostgreSQL and a MariaDB private
server run, a metered (`--meter instructions`) PostgreSQL run, a PostgreSQL oltp run with a memory share (its memory
cgroup, as root) and an `advise --quick`: the private servers (own sessions), their valgrind processes and cgroups
outlive the kill. The next encbench invocation finds them through the killed runs' owner records, stops and removes
them, and names what it reclaimed in one stderr line; afterwards no process, mount, memory cgroup, loop device,
vgdb pipe, scratch directory or owner record of the killed runs is left.

SIGTERM to the whole process group (timeout -s TERM, systemd, CI runners) at random moments, 3 SQLite runs and
each of the other scenarios above: always an interruption (exit 130, status interrupted, runs kept), never "the worker
process died (exit code 255)" (exit 11: 4 tries in 12 before the fix, on a loaded 2-core machine).

Cost on a loaded 2-core machine (load 8): the kills about 80 s, the SIGTERMs about 50 s.

Every command runs with a private, short TMPDIR (its servers, pymp and owner records there, and nowhere another test
looks).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from encbench.host import memcg
from encbench.util import leftovers
from encbench.util import owners, proc
from integration_helpers import HAVE_MARIADB, HAVE_PG, encbench_command, scratch_dirs, session_processes

pytestmark = pytest.mark.integration

ROOT = os.geteuid() == 0
WAIT = 240  # seconds until the measuring phase (a metered server starts under valgrind), and until an exit
TERM_TRIES = 3
SQLITE_RUN = ("run", "--size", "2MB", "--runs", "30", "--warmups", "0", "--workload", "scan-eq")
# name -> (command line, whether it can run here, how it is killed: SIGKILL to the group or to the main process)
KILLED = {
    "sqlite": (SQLITE_RUN, True, True),
    "postgres": (("run", "--engine", "postgres", "--workload", "roundtrip", "--variant", "tls=off,on",
                  "--variant", "clients=1", "--runs", "30", "--warmups", "0"), HAVE_PG, False),
    "mariadb": (("run", "--engine", "mariadb", "--workload", "scan-eq", "--size", "2MB", "--variant", "cache=warm",
                 "--runs", "30", "--warmups", "0"), HAVE_MARIADB, True),
    "metered": (("run", "--engine", "postgres", "--meter", "instructions", "--quick", "--workload", "roundtrip",
                 "--variant", "tls=off,on", "--variant", "clients=1", "--param", "metered_queries=20", "--runs", "30",
                 "--warmups", "0"), HAVE_PG and shutil.which("valgrind") is not None, False),
    "oltp-memory": (("run", "--engine", "postgres", "--workload", "oltp", "--quick", "--variant", "memory=25%",
                     "--variant", "tls=off", "--param", "seconds=1", "--runs", "30", "--warmups", "0"),
                    HAVE_PG and ROOT and memcg.unavailable() is None, True),
    # an advise (a run per sweep, each a result file of its own in the output directory)
    "advise": (("advise", "--quick", "--size", "2MB", "--warmups", "0", "--runs", "3"), True, False),
}


def _reset_signals():  # a pytest started in the background inherits SIGINT ignored: undo that
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _measuring(out: Path, runs: int) -> bool:
    """The measuring phase: a result file (or, for advise, a sweep's file in the output directory), first written
    when measuring starts, with at least `runs` runs in it."""
    for f in ([out] if out.suffix == ".json" else sorted(out.glob("*.json"))):
        try:
            if len(json.loads(f.read_text())["runs"]) >= runs:
                return True
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return False


def _start(args, out: Path, env: dict, work: Path) -> subprocess.Popen:
    with open(work / "stdout.txt", "w") as so, open(work / "stderr.txt", "w") as se:
        return subprocess.Popen(encbench_command() + [*args, "-o", str(out)], cwd=work, env=env, stdout=so,
                                stderr=se, start_new_session=True, preexec_fn=_reset_signals)


def _signal_while_measuring(p: subprocess.Popen, out: Path, sig: int, group: bool, rng: random.Random,
                            runs: int = 0) -> float:
    """Wait for the measuring phase (and `runs` runs in it), then a random moment, then the signal; the seconds it
    took."""
    t0 = time.monotonic()
    while not _measuring(out, runs):
        if p.poll() is not None:
            pytest.fail(f"encbench exited ({p.returncode}) before it measured")
        if time.monotonic() - t0 > WAIT:
            os.killpg(p.pid, signal.SIGKILL)
            pytest.fail("it did not reach the measuring phase in time")
        time.sleep(0.05)
    time.sleep(rng.uniform(0, 1.0))
    (os.killpg if group else os.kill)(p.pid, sig)
    return time.monotonic() - t0


def _wait_session_empty(sid: int, timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := session_processes(sid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _loop_devices_under(directory: Path) -> list[str]:
    found = []
    for bf in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            if bf.read_text().strip().startswith(str(directory)):
                found.append(bf.parent.parent.name)
        except OSError:
            continue
    return found


def _mounts_under(directory: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(directory))]


@pytest.fixture
def private_tmp(cli_env):
    """A short private TMPDIR (socket paths stay under 107 bytes) and the environment that uses it."""
    tmp = Path(tempfile.mkdtemp(prefix="kr-"))
    tmp.chmod(0o1777)  # as /tmp: a server running as postgres or mysql reaches its directory in it
    yield tmp, dict(cli_env, TMPDIR=str(tmp))
    for rec_path, record in owners.records(tmp):  # whatever a failed assertion left running
        for item in record["items"]:
            if item.get("kind") == "dir":
                for p in leftovers.server_processes(Path(item["path"])):
                    p.kill()
    shutil.rmtree(tmp, ignore_errors=True)


def _left_by(tmp: Path, pid: int) -> dict:
    """What the killed run `pid` left, from its owner record and the memory cgroup records."""
    [record] = [r for _, r in owners.records(tmp) if r["owner"]["pid"] == pid]
    dirs = [Path(i["path"]) for i in record["items"] if i["kind"] == "dir"]
    return {"dirs": [d for d in dirs if d.exists()],
            "servers": [i for i in record["items"] if i["kind"] == "process" and proc.alive(i["pid"], i["start"])],
            "running": [p.pid for d in dirs for p in leftovers.server_processes(d)],
            "groups": [r["path"] for _, r in memcg.records() if r["owner"]["pid"] == pid]}


def _check_reclaimed(stderr: str, pid: int, left: dict) -> None:
    """The command after a killed one: one line naming the dead run, each server it stopped, each directory; and
    nothing of it left."""
    lines = [ln for ln in stderr.splitlines() if "reclaimed" in ln]
    assert len(lines) == 1 and lines[0].startswith(f"encbench: reclaimed what a killed run (pid {pid}) left: "), \
        (stderr, left)
    for item in left["servers"]:
        assert f"{item['what']} pid {item['pid']}" in lines[0], lines[0]
        assert not proc.alive(item["pid"], item["start"]), item
    for d in left["dirs"]:
        assert str(d) in lines[0] and not d.exists() and not leftovers.server_processes(d), (d, lines[0])
    assert not [p for p in left["running"] if proc.running(p)], left
    for g in left["groups"]:
        assert not Path(g).exists(), g
    assert not [r for _, r in memcg.records() if r["owner"]["pid"] == pid]


def _next_command(tmp: Path, data: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(encbench_command() + ["run", "--size", "1MB", "--runs", "1", "--warmups", "0", "--workload",
                                                "scan-eq", "--variant", "encryption=off", "--variant", "cache=warm",
                                                "--data-dir", str(data), "-o", str(tmp / "next.json")],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=WAIT)


def test_the_next_command_reclaims_what_killed_runs_left(private_tmp, tmp_path_factory):
    """Each scenario is killed while it measures; the command after it (the next scenario, then one more run)
    reclaims what it left."""
    tmp, env = private_tmp
    data = tmp_path_factory.mktemp("kill-data")
    rng = random.Random()
    took: dict[str, float] = {}
    before: tuple[int, dict] | None = None  # the last killed run: its pid and what it left
    outlived = 0
    for name, (args, possible, group) in KILLED.items():
        if not possible:
            continue
        work = tmp_path_factory.mktemp(f"kill-{name}")
        out = work / ("sweeps" if args[0] == "advise" else "r.json")
        t0 = time.monotonic()
        p = _start([*args, "--data-dir", str(data)], out, env, work)
        _signal_while_measuring(p, out, signal.SIGKILL, group, rng)
        assert p.wait(60) == -signal.SIGKILL
        if before is not None:  # this command began by reclaiming the last one's
            _check_reclaimed((work / "stderr.txt").read_text(), *before)
        assert not _wait_session_empty(p.pid), f"{name}: processes of its session outlive it"
        before = (p.pid, _left_by(tmp, p.pid))
        outlived += len(before[1]["running"])
        took[name] = time.monotonic() - t0
    assert before is not None and outlived, "no server outlived a kill: the test shows nothing"
    t0 = time.monotonic()
    done = _next_command(tmp, data, env)
    took["next"] = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    _check_reclaimed(done.stderr, *before)
    assert not _mounts_under(tmp) and not _loop_devices_under(tmp)
    assert not list(tmp.rglob("vgdb-pipe-*")), sorted(tmp.rglob("vgdb-pipe-*"))
    assert not scratch_dirs(data) and not list(tmp.glob("pymp-*"))
    assert not [d for d in tmp.glob("encbench-*-*") if not d.name.startswith(owners.PREFIX)]
    assert owners.records(tmp) == []
    print("seconds:", {k: round(v, 1) for k, v in took.items()})


def test_sigterm_to_the_group_is_an_interruption(private_tmp, tmp_path_factory):
    """SQLite runs and each other scenario of KILLED that can run here (a PostgreSQL and a MariaDB private server,
    a metered server, an oltp run with its memory cgroup, an advise), each signalled at a random moment while it
    measures: exit 130, status interrupted, runs kept, nothing left (its servers stopped and removed, its cgroup
    gone, no owner record)."""
    tmp, env = private_tmp
    data = tmp_path_factory.mktemp("term-data")
    rng = random.Random()
    others = [name for name, (_, possible, _) in KILLED.items() if possible and name != "sqlite"]
    tries = [("sqlite", SQLITE_RUN)] * TERM_TRIES + [(name, KILLED[name][0]) for name in others]
    for k, (name, args) in enumerate(tries):
        work = tmp_path_factory.mktemp(f"term-{k}")
        out = work / ("sweeps" if args[0] == "advise" else "r.json")
        p = _start([*args, "--data-dir", str(data)], out, env, work)
        _signal_while_measuring(p, out, signal.SIGTERM, True, rng, runs=1)  # a run kept, the next one in a worker
        try:
            code = p.wait(WAIT)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        err = (work / "stderr.txt").read_text()
        assert code == 130, f"try {k} ({name}): exit {code}: {err}"
        said = [ln for ln in err.splitlines() if ln.startswith("encbench")]  # advise's progress lines beside it
        assert said == err.splitlines()[-1:] and said[0].startswith("encbench: interrupted"), (name, err)
        assert args[0] == "advise" or len(err.splitlines()) == 1, (name, err)
        files = [out] if out.suffix == ".json" else sorted(out.glob("*.json"))
        docs = [json.loads(f.read_text()) for f in files]
        assert docs and docs[-1]["status"] == "interrupted" and any(d["runs"] for d in docs), (name, files)
        assert docs[-1]["error"] is None, (name, docs[-1]["error"])
        assert not _wait_session_empty(p.pid, 5), f"try {k} ({name}): processes of its session outlive it"
        assert not scratch_dirs(data) and not list(tmp.glob("pymp-*")) and owners.records(tmp) == [], name
        assert not list(tmp.glob("encbench-pg-*")) and not list(tmp.glob("encbench-maria-*")), name
        assert not list(tmp.rglob("vgdb-pipe-*")) and not _mounts_under(tmp) and not _loop_devices_under(tmp), name
        assert not [r for _, r in memcg.records() if r["owner"]["pid"] == p.pid], name


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_valgrind_as_encbench_runs_it_makes_no_vgdb_pipes(tmp_path):
    """valgrind's gdbserver FIFOs (vgdb-pipe-*) are made in $TMPDIR and stay when the process is killed: the command
    line encbench uses asks for none."""
    from encbench.host import valgrind

    p = subprocess.Popen(valgrind.callgrind_argv(str(tmp_path / "cg.%p"), cache_sim=False) + ["sleep", "60"],
                         env=dict(os.environ, TMPDIR=str(tmp_path)), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("cg.*")) and time.monotonic() < deadline:  # callgrind is up (its output file)
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        p.kill()
        p.wait()
    assert not list(tmp_path.glob("vgdb-pipe-*")), sorted(tmp_path.glob("vgdb-pipe-*"))

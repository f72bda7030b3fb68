"""What each pytest-xdist worker has to itself, and the check that no two workers share a private server's directory
or port (tests/conftest.py sets the shares up; tests/integration/conftest.py checks them around every test).

A worker's share: its temporary directory (`<run base>/<worker>`: private servers, scratch, pymp and owner records
land there), its encfs and memory-cgroup ledgers, and its slice of the private servers' ports (ENCBENCH_PORTS,
engines/local/ports). The check reads the live PostgreSQL and MariaDB servers of this test run (those whose
environment names the run's base) from /proc: the worker that started each (its environment), its data directory
and its port; a port outside its worker's slice, or a directory or port seen under two workers, is a failure.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

BASE_ENV = "ENCBENCH_TEST_RUN_BASE"  # the controller's directory of the workers' temporary directories
SERVER_COMMS = ("postgres", "mariadbd", "callgrind")  # a private server, or one under valgrind (--meter)


def worker_index(worker: str) -> int:
    """gw0 -> 0, gw1 -> 1 (xdist's names)."""
    return int(worker.removeprefix("gw"))


def worker_ports(index: int, count: int) -> tuple[int, int]:
    """The index-th of `count` equal slices of the private servers' ports (below the ephemeral range)."""
    from encbench.engines.local import ports  # late: conftest sets the worker's ledgers before encbench is imported

    span = (ports.HIGH - ports.LOW + 1) // max(count, 1)
    low = ports.LOW + index * span
    return low, low + span - 1


def worker_dirs(base: Path, worker: str) -> dict[str, Path]:
    """The worker's own temporary directory and ledgers, by the environment variable that names each."""
    return {"TMPDIR": base / worker, "ENCBENCH_ENCFS_STATE": base / f"{worker}-encfs-state",
            "ENCBENCH_MEMCG_STATE": base / f"{worker}-memcg-state"}


def share(base: Path, worker: str, count: int) -> dict:
    """The worker's own: its directories and its port slice (ENCBENCH_PORTS)."""
    return {**worker_dirs(base, worker), "ENCBENCH_PORTS": worker_ports(worker_index(worker), count)}


def shared(shares: dict[str, dict]) -> list[str]:
    """What two workers' shares have in common: the same or nested directories, overlapping port ranges."""
    out = []
    names = sorted(shares)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            (alo, ahi), (blo, bhi) = shares[a]["ENCBENCH_PORTS"], shares[b]["ENCBENCH_PORTS"]
            if alo <= bhi and blo <= ahi:
                out.append(f"{a} and {b}: ports {alo}-{ahi} and {blo}-{bhi} overlap")
            for key in worker_dirs(Path("/"), a):
                pa, pb = shares[a][key], shares[b][key]
                if pa == pb or pa in pb.parents or pb in pa.parents:
                    out.append(f"{a} and {b}: {key} {pa} and {pb}")
    return out


@dataclass(frozen=True)
class Server:
    pid: int
    worker: str
    datadir: str
    port: int


def _read(path: str, binary: bool = False):
    try:
        with open(path, "rb" if binary else "r") as f:
            return f.read()
    except OSError:
        return None


def _option(args: list[str], flag: str) -> str | None:
    """The value of `-D X` / `-c port=N` (flag "-D", "port=") or `--datadir=X` in a command line."""
    for i, a in enumerate(args):
        if flag.startswith("-") and a == flag and i + 1 < len(args):
            return args[i + 1]
        if not flag.startswith("-") and a.startswith(flag):
            return a[len(flag):]
    return None


def _cnf(args: list[str]) -> dict[str, str]:
    """A MariaDB server's --defaults-file, key=value lines."""
    path = next((a.split("=", 1)[1] for a in args if a.startswith("--defaults-file=")), None)
    text = _read(path) if path else None
    return dict(line.split("=", 1) for line in (text or "").splitlines() if "=" in line and not line.startswith("#"))


def _server(pid: int, run_base: str) -> Server | None:
    """The postmaster or mariadbd `pid` of this test run (its environment names run_base), else None."""
    env = _read(f"/proc/{pid}/environ", binary=True)
    cmd = _read(f"/proc/{pid}/cmdline", binary=True)
    if not env or not cmd:
        return None
    environ = dict(e.split(b"=", 1) for e in env.split(b"\0") if b"=" in e)
    if environ.get(BASE_ENV.encode()) != run_base.encode() or b"PYTEST_XDIST_WORKER" not in environ:
        return None
    args = [a.decode(errors="replace") for a in cmd.split(b"\0") if a]
    if any(os.path.basename(a).startswith("mariadbd") for a in args):
        cnf = _cnf(args)
        datadir, port = _option(args, "--datadir=") or cnf.get("datadir"), cnf.get("port")
    elif any(os.path.basename(a) == "postgres" for a in args):
        datadir, port = _option(args, "-D"), _option(args, "port=")
    else:
        return None
    if not datadir or not (port or "").isdigit():
        return None
    return Server(pid, environ[b"PYTEST_XDIST_WORKER"].decode(), datadir, int(port))


def run_servers(run_base: str) -> list[Server]:
    """The live private servers of this test run, whichever worker started them."""
    out = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (_read(f"/proc/{entry.name}/comm") or "").startswith(SERVER_COMMS):
            server = _server(int(entry.name), run_base)
            if server is not None:
                out.append(server)
    return out


class Watch:
    """The servers of this run seen so far: each directory and port under one worker only, each port in its worker's
    slice. sample() on demand (around each test) and every `interval` seconds in a thread (servers that live within
    one test)."""

    def __init__(self, run_base: str, count: int, interval: float = 2.0):  # a sample: ~13 ms of CPU here
        self.run_base, self.count, self.interval = run_base, count, interval
        self.dirs: dict[str, str] = {}
        self.ports: dict[int, str] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def sample(self) -> None:
        for s in run_servers(self.run_base):
            with self._lock:
                self._check(s)

    def _check(self, s: Server) -> None:
        low, high = worker_ports(worker_index(s.worker), self.count)
        if not low <= s.port <= high:
            self._problem(f"{s.worker}'s server {s.pid} ({s.datadir}) on port {s.port}, outside its {low}-{high}")
        for seen, key in ((self.dirs, s.datadir), (self.ports, s.port)):
            if seen.setdefault(key, s.worker) != s.worker:
                self._problem(f"{key} used by a server of {seen[key]} and by {s.worker}'s server {s.pid}")

    def _problem(self, text: str) -> None:
        if text not in self.problems:
            self.problems.append(text)

    def take(self) -> list[str]:
        """The problems found since the last call."""
        with self._lock:
            out, self.problems = self.problems, []
        return out

    def start(self) -> None:
        def loop():
            while not self._stop.wait(self.interval):
                self.sample()

        threading.Thread(target=loop, name="xdist-workers-watch", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

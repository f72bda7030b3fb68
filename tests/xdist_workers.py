"""What each pytest-xdist worker has to itself, and the check that no two workers share a private server's directory
or port (tests/conftest.py sets the shares up; tests/integration/conftest.py checks them around every test).

A worker's share: its temporary directory (`<run base>/<worker>`: private servers, scratch, pymp and owner records
land there), its encfs and memory-cgroup ledgers, and its slice of the private servers' ports (ENCBENCH_PORTS,
engines/local/ports). The check reads the live PostgreSQL and MariaDB servers of this test run (those whose
environment names the run's base) from /proc: the worker that started each (its environment), its data directory
and the ports it listens on; a port outside its worker's slice, or a directory or port seen under two workers, is a
failure.
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
    """The value of `-D X` (flag "-D") or `--datadir=X` (flag "--datadir=") in a command line."""
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            return args[i + 1]
        if flag.endswith("=") and a.startswith(flag):
            return a[len(flag):]
    return None


def _cnf_datadir(args: list[str]) -> str | None:
    """The datadir= line of a MariaDB server's --defaults-file."""
    path = next((a.split("=", 1)[1] for a in args if a.startswith("--defaults-file=")), None)
    for line in (_read(path) or "").splitlines() if path else []:
        if line.startswith("datadir="):
            return line.split("=", 1)[1].strip()
    return None


def _owned(pid: int, run_base: str) -> tuple[str, str] | None:
    """(worker, data directory) of the postmaster or mariadbd `pid` of this test run (its environment names
    run_base and the worker), else None."""
    env = _read(f"/proc/{pid}/environ", binary=True)
    cmd = _read(f"/proc/{pid}/cmdline", binary=True)
    if not env or not cmd:
        return None
    environ = dict(e.split(b"=", 1) for e in env.split(b"\0") if b"=" in e)
    worker = environ.get(b"PYTEST_XDIST_WORKER")
    if environ.get(BASE_ENV.encode()) != run_base.encode() or not worker:
        return None
    args = [a.decode(errors="replace") for a in cmd.split(b"\0") if a]
    if any(os.path.basename(a).startswith("mariadbd") for a in args):
        datadir = _option(args, "--datadir=") or _cnf_datadir(args)
    elif any(os.path.basename(a) == "postgres" for a in args):
        datadir = _option(args, "-D")
    else:
        return None
    return (worker.decode(), datadir) if datadir else None


def _listening() -> dict[int, int]:
    """{socket inode: port} of every TCP socket listening here (/proc/net/tcp, tcp6)."""
    out = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in (_read(name) or "").splitlines()[1:]:
            f = line.split()
            if len(f) > 9 and f[3] == "0A":  # TCP_LISTEN
                out[int(f[9])] = int(f[1].rsplit(":", 1)[1], 16)
    return out


def _ports(pid: int, listening: dict[int, int]) -> set[int]:
    """The TCP ports process `pid` listens on (its socket descriptors): a server that failed to bind its port (a
    taken one, retried on another) listens on none and is not counted."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    out = set()
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and int(link[8:-1]) in listening:
            out.add(listening[int(link[8:-1])])
    return out


def run_servers(run_base: str) -> list[Server]:
    """The live private servers of this test run, whichever worker started them, one per port each listens on."""
    out, listening = [], None
    for entry in os.scandir("/proc"):
        if not (entry.name.isdigit() and (_read(f"/proc/{entry.name}/comm") or "").startswith(SERVER_COMMS)):
            continue
        owned = _owned(int(entry.name), run_base)
        if owned is not None:
            listening = _listening() if listening is None else listening
            out += [Server(int(entry.name), *owned, port) for port in sorted(_ports(int(entry.name), listening))]
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

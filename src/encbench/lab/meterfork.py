"""Workers under valgrind (`--meter instructions`, an engine that runs in the worker: SQLite): a fork server.

Starting Python under callgrind and importing encbench costs seconds of CPU per process, which every run
would pay. So, as the forkserver of `lab/runner` does for ordinary runs, one server process is started
under valgrind once (`valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no python -m
encbench.lab.meterfork FD`): it imports the worker and then forks a fresh child per run. A child of a
process under valgrind is under valgrind too, with its own output file (`cg.<pid>`); instrumentation
and counting are off until the instructions probe turns them on around an operation (probes/instructions).

    runner                                   server (under valgrind)           child (fork, per run)
    socketpair ---- one end, its fd number on the command line -->
                <--------------------------- b"ready" (imports done)
    Pipe(); its child end sent (SCM_RIGHTS) ->  fork ------------------------>  spec = recv(); run
                <--------------------------- the child's pid (8 bytes)          ("ok", record) -> Pipe
    closes its end ------------------------> EOF: exits; its children get SIGTERM (worker: PR_SET_PDEATHSIG)

The child is a worker as the forkserver's are (placement.child_main: pinned, Ctrl-C ignored, SIGTERM to a
clean exit); the runner stops it by its pid.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import sys
import time
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

from ..errors import EngineUnavailableError, RunFailedError
from ..host import valgrind
from ..util import interrupts, owners, proc
from ..engines.local.server import keep_log
from ..probes import instructions
from ..engines import ENGINES

START_TIMEOUT_S = 180  # importing encbench under valgrind: ~3 s of CPU, far more on a loaded machine
POLL_S = 0.05
STOP_GRACE_S = 10
PID = struct.Struct("q")


def _recv_exactly(sock: socket.socket, n: int, timeout: float) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
    except (socket.timeout, OSError):
        pass
    finally:
        sock.settimeout(None)
    return data


class MeteredWorkers:
    """The runner's side: start the server once, run a spec in a fresh child, stop everything."""

    def __init__(self, scratch: Path, *, cache_sim: bool, keep_dir: Path, engine: str = ""):
        self.engine = engine  # its library is imported once, in the server, not in every child
        self.dir = scratch / "callgrind"
        self.log = scratch / "valgrind-workers.log"
        self.keep_dir = keep_dir
        self.cache_sim = cache_sim
        self.proc = None
        self.ctrl: socket.socket | None = None

    def start(self) -> None:
        import subprocess

        self.dir.mkdir(mode=0o700, exist_ok=True)
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = valgrind.callgrind_argv(str(self.dir / "cg.%p"), cache_sim=self.cache_sim,
                                       options=("--instr-atstart=no", "--collect-atstart=no"), log_file=str(self.log))
        argv += [sys.executable, "-m", "encbench.lab.meterfork", str(theirs.fileno()), self.engine]
        # one hash seed in every invocation: the same dict layouts, so the same instructions, from one run to the next
        env = dict(os.environ, PYTHONPATH=valgrind._src_path(), PYTHONHASHSEED="0")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log, env=env)
        owners.spawned(self.proc.pid, "worker server under valgrind", self.dir)
        theirs.close()
        self.ctrl = mine
        timeout = valgrind.start_timeout(START_TIMEOUT_S)
        deadline = time.monotonic() + timeout
        got = b""
        while time.monotonic() < deadline and not got:
            interrupts.raise_if_stopped()
            if self.proc.poll() is not None:
                break
            got = _recv_exactly(mine, 5, 0.5)
        if got != b"ready":
            died = self.proc.poll() is not None
            self.close()
            kept = self._keep_log()
            raise EngineUnavailableError(
                "the worker under valgrind exited at start-up" if died else
                f"the worker under valgrind did not start within {timeout:g} s",
                hint=f"valgrind's log kept: {kept}" if kept else "valgrind's log could not be kept")

    def _keep_log(self) -> str | None:
        kept = keep_log(self.log, self.keep_dir, "encbench-valgrind-workers.log")
        return str(kept) if kept else None

    def run(self, spec: dict) -> tuple[str, object]:
        """One run in a fresh child: (kind, payload) as the worker sends it ("ok", "error", "exception")."""
        parent, child = Pipe(duplex=True)
        try:
            socket.send_fds(self.ctrl, [b"R"], [child.fileno()])
        except OSError as e:
            raise RunFailedError(f"the worker server under valgrind is gone ({e})") from None
        finally:
            child.close()
        raw = _recv_exactly(self.ctrl, PID.size, 60)
        if len(raw) != PID.size:
            raise RunFailedError("the worker server under valgrind did not fork a worker",
                                 hint=f"see {self._keep_log() or self.log}")
        pid = PID.unpack(raw)[0]
        try:
            parent.send(spec)
            while not parent.poll(POLL_S):
                if interrupts.STOP.is_set():
                    self._stop(pid)
                    raise KeyboardInterrupt
                if not proc.running(pid) and not parent.poll(0):
                    raise self._died()
            try:
                return parent.recv()
            except EOFError:
                raise self._died() from None
        finally:
            parent.close()
            self._stop(pid, grace=STOP_GRACE_S)

    def _died(self) -> BaseException:
        """A child that ended without a result: an interruption when the group's signal ended it, else a failure."""
        if interrupts.stopped():
            return KeyboardInterrupt()
        return RunFailedError("the worker under valgrind died without a result",
                              hint=f"valgrind's log: {self._keep_log() or self.log}")

    @staticmethod
    def _stop(pid: int, grace: float = 0.0) -> None:
        """Wait up to `grace` s for the child to end, then SIGTERM it (a clean exit), then SIGKILL."""
        deadline = time.monotonic() + grace
        while proc.running(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.stop_pid(pid, STOP_GRACE_S)

    def close(self) -> None:
        """EOF to the server: it exits (its children with it); killed when it does not."""
        if self.ctrl is not None:
            self.ctrl.close()
            self.ctrl = None
        proc.kill_and_reap(self.proc, STOP_GRACE_S * 3)


# -- the server (under valgrind) ----------------------------------------------------------------


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _child(sock: socket.socket, fd: int) -> None:
    from . import placement

    sock.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    conn = Connection(fd)
    try:
        spec = conn.recv()
        placement.child_main(spec, conn)
    finally:
        os._exit(0)


def serve(fd: int, engine: str = "") -> None:
    from . import forkserver_init, placement, worker  # noqa: F401 (imported once, here: every child has them)

    if engine:  # the engine's library (SQLite: sqlcipher3, OpenSSL linked in), loaded once for every child

        ENGINES.get(engine).check_available()

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    sock.sendall(b"ready")
    children = []
    while True:
        _reap()
        ready, _, _ = select.select([sock], [], [], 1.0)
        if not ready:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 16, 1)
        except OSError:
            break
        if not msg or not fds:
            break
        pid = os.fork()
        if pid == 0:
            _child(sock, fds[0])
        os.close(fds[0])
        children.append(pid)
        sock.sendall(PID.pack(pid))
    for pid in children:  # the runner is gone: nobody will read a result
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _reap()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "")

"""Pieces shared by the bench scripts: the main wrapper; for PostgreSQL, CPU placement, server clean-up check, one run."""

from __future__ import annotations

import os
import sys

from encbench.util import interrupts
from encbench.lab import runner
from encbench.errors import BadValueError, EncbenchError


def pin(engine, setup: dict, how: str) -> str:
    """CPU affinity of this process (so of the forkserver, the workers and pgbench, which inherit it) and of
    the private server's postmaster and children (new backends inherit it): 'same' puts both on CPU 0,
    'split' the client side on CPU 0 and the server on CPU 1. A bench-only knob: encbench itself pins nothing."""
    if how == "none":
        return "none (the scheduler places client and server)"
    cpus = sorted(os.sched_getaffinity(0))
    if how == "split" and len(cpus) < 2:
        raise BadValueError("--pin split needs 2 CPUs")
    client, server_cpu = {cpus[0]}, {cpus[0] if how == "same" else cpus[1]}
    server = getattr(engine, "_servers", {}).get(setup.get("schema"))
    if server is None or server.proc is None:
        raise BadValueError("--pin needs the private server")
    pids = [server.proc.pid]
    try:
        with open(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children") as f:
            pids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    for pid in pids:
        try:
            os.sched_setaffinity(pid, server_cpu)
        except OSError:
            pass
    os.sched_setaffinity(0, client)
    return f"{how}: client side on CPU {min(client)}, server on CPU {min(server_cpu)}"


def cleanup(engine, setup: dict) -> None:
    """engine.cleanup (drops the schema, stops the private server, deletes its directory), then check it."""
    server = getattr(engine, "_servers", {}).get(setup.get("schema"))
    pid = server.proc.pid if server is not None and server.proc is not None else None
    engine.cleanup(setup)
    if server is None:
        return
    left = ([f"process {pid}"] if pid and os.path.exists(f"/proc/{pid}") else []) + \
        ([str(server.root)] if server.root.exists() else [])
    if left:
        print(f"private server NOT cleaned up: {', '.join(left)} remain", file=sys.stderr)
    else:
        print(f"private server (postmaster pid {pid}, {server.root}) stopped and deleted")


def run(ctx, spec: dict) -> dict:
    """One run as the runner does it: a fresh worker process (worker.child_main), stopped in order on
    Ctrl-C/SIGTERM (interrupts.deferred: the signal only sets STOP, the runner terminates the worker)."""
    with interrupts.deferred():
        return runner.run_in_fresh_process(ctx, spec)


def script_main(name: str, body, parse_args, argv: list[str] | None = None) -> int:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt (so finally blocks stop servers); errors on one line."""
    interrupts.install()
    try:
        return body(parse_args(argv))
    except EncbenchError as e:
        print(f"{name}: error: {e.one_line()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130


def add_pin_argument(parser) -> None:
    parser.add_argument("--pin", default="none", choices=("none", "same", "split"),
                        help="CPU placement: none (default), same (client side and server on one CPU), "
                             "split (client side on one CPU, server on another)")


def progress(text: str, width: int = 60) -> None:
    """A one-line progress indicator on a terminal; nothing otherwise."""
    if sys.stderr.isatty():
        print(f"\r  {text:<{width}}", end="", file=sys.stderr, flush=True)

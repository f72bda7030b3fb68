"""Pieces shared by the private servers encbench starts (PostgreSQL, MariaDB)."""

from __future__ import annotations

import os
import pwd
import subprocess
import time
from pathlib import Path
from typing import Callable

from ...errors import EngineUnavailableError, UsageError
from ...util.proc import kill_and_reap, kill_tree
from . import ports
from ...util.redact import redact


def unprivileged_user(preferred: str) -> tuple[str, int, int] | None:
    """(name, uid, gid) to run a server as when we are root (it refuses root); None otherwise."""
    if os.geteuid() != 0:
        return None
    for name in (preferred, "nobody"):
        try:
            pw = pwd.getpwnam(name)
            return name, pw.pw_uid, pw.pw_gid
        except KeyError:
            continue
    raise EngineUnavailableError(f"running as root and no unprivileged user ({preferred}, nobody) to run the server as",
                                 hint=f"create a '{preferred}' user or run encbench as an ordinary user")


def last_log_line(path: Path, marks: tuple[str, ...] = ("FATAL", "ERROR")) -> str:
    """The last error line of a server log (else its last line): what a start-up failure says."""
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    errors = [ln for ln in lines if any(m in ln for m in marks)]
    return (errors or lines or ["empty log"])[-1].strip()


LOG_TAIL_LINES = 50
LOG_TAIL_BYTES = 256 << 10  # read no more than this of a log's end


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last `lines` non-empty lines of a server log, each with its passwords hidden (util/redact); [] when
    there is no log to read."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return [redact(ln) for ln in text.splitlines() if ln.strip()][-lines:]


def keep_log(path: Path, dest_dir: Path, name: str) -> Path | None:
    """A copy of a server log that outlives the server's directory (deleted with it): `dest_dir/name` (a numbered
    name when taken), 0600, its passwords hidden; None when there is no log or no place to write it."""
    try:
        text = Path(path).read_text(errors="replace")
        dest_dir = Path(dest_dir)
        dest_dir.mkdir(parents=True, exist_ok=True)
        stem, dot, ext = name.rpartition(".")
        for n in range(1000):
            dest = dest_dir / (name if n == 0 else f"{stem}-{n}{dot}{ext}")
            try:
                fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                break
            except FileExistsError:
                continue
        else:
            return None
        with os.fdopen(fd, "w") as f:
            f.write(redact(text))
        return dest
    except OSError:
        return None


def run_tool(cmd: list[str], what: str, *, timeout: float = 300, error_mark: str | None = None, **popen) -> None:
    """Run a set-up tool (initdb, mariadb-install-db); its error is its first line with
    error_mark (the root cause, before the follow-on errors), else its last output line."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
    except (OSError, subprocess.SubprocessError) as e:
        raise EngineUnavailableError(f"{what} failed: {e}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        raise EngineUnavailableError(f"{what} failed: no answer after {timeout:g} s") from None
    except BaseException:  # Ctrl-C, SIGTERM: the tool and what it started (a shell script's server) go with it
        kill_tree(proc)
        raise
    if proc.returncode != 0:
        lines = (stderr + "\n" + stdout).strip().splitlines()
        marked = [ln for ln in lines if error_mark and error_mark in ln]
        if marked:
            last = marked[0][marked[0].index(error_mark) + len(error_mark):].strip()
        else:
            last = ((stderr or stdout).strip().splitlines() or ["no output"])[-1]
        raise EngineUnavailableError(f"{what} failed: {last}")


def wait_ready(proc: subprocess.Popen | None, try_connect: Callable[[], None], not_yet: type[Exception] | tuple,
               last_line: Callable[[], str], timeout: float, interval: float = 0.1) -> tuple[bool, str]:
    """Poll until a connection succeeds: (True, "") or (False, why) when the server died (`proc`, our child, when
    there is one: a server another process restarted is not) or timed out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False, last_line()
        try:
            try_connect()
            return True, ""
        except not_yet:
            time.sleep(interval)
    return False, f"not accepting connections after {timeout:g} s; {last_line()}"


def start_on_free_port(launch: Callable[[int], subprocess.Popen],
                       wait: Callable[[subprocess.Popen], tuple[bool, str]],
                       port_taken: Callable[[str], bool], *, attempts: int = 5) -> tuple[subprocess.Popen | None, str]:
    """Start a server on a free port, on another one while it fails because its port was taken.

    A port free when chosen can be taken before the server binds it: launch(port) starts the
    server there, wait(proc) says whether it became ready (and why not), port_taken(why) whether
    that failure is worth another port. A server that did not become ready is killed and reaped.
    Returns (the ready process, "") or (None, the last failure).
    """
    last = ""
    for _ in range(attempts):
        proc = launch(ports.free_port())
        ok, last = wait(proc)
        if ok:
            return proc, ""
        kill_and_reap(proc)
        if not port_taken(last):
            break
    return None, last


def runs_program(pid: int, names: tuple[str, ...]) -> bool:
    """Is process `pid` one of these programs (its comm), directly or under valgrind (--meter instructions: its comm
    is then the tool's, e.g. callgrind-amd64, and its command line names the program)?"""
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip()
        if comm.startswith(names):
            return True
        if not comm.startswith("callgrind"):
            return False
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
        return any(os.path.basename(a.decode(errors="replace")).startswith(names) for a in args)
    except OSError:
        return False


def parse_settings(specs: list[str]) -> dict[str, str]:
    """--setting NAME=VALUE (repeatable) -> {name: value} for a private server's configuration."""
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--setting {spec!r} is not NAME=VALUE", hint="e.g. --setting innodb_encrypt_log=OFF")
        out[name.strip()] = value.strip()
    return out

"""A private PostgreSQL server on loopback, started and stopped by encbench.

initdb into a private temporary directory (as the unprivileged `postgres` user when
running as root), a self-signed RSA certificate, a random superuser password (scram),
a free port below the ephemeral range, a private socket directory, ssl=on. The server
is stopped and its directory deleted by `stop()`, which the engine calls on exit, error,
Ctrl-C and SIGTERM (and, as a last resort, at interpreter exit).
"""

from __future__ import annotations

import glob
import os
import re
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..local import affinity, certs
from ...errors import EngineUnavailableError
from ...host import valgrind
from ...util import leftovers
from ...util.proc import stop_child, stop_pid
from ..local.private_server import (ServerLog, meter_wrapper, own_dir, record_spawned, running_pid, start_failed,
                                    stopped_on_error)
from ..local.server import last_log_line, run_tool, start_on_free_port, unprivileged_user, wait_ready

INSTALL_HINT = "install them with: apt-get install postgresql (Debian/Ubuntu), or measure an existing server with --dsn"
# a postmaster's words for a server process that crashed (it then restarts the others)
CRASH_MARKS = ("terminated by signal", "was terminated by exception", "PANIC:")
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15
# --meter instructions: the server runs under callgrind (engines/postgres/meter.py), 20-50x slower to start and
# to stop (every backend writes its last dump as it exits)
METER_START_TIMEOUT_S = 180
METER_STOP_TIMEOUT_S = 120
FAST_SHUTDOWN = (signal.SIGINT, signal.SIGKILL)  # a postmaster's fast shutdown (clients disconnected), then a kill
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "ssl": "on",
    "shared_buffers": "256MB",
    "max_connections": "300",  # the hash sweep goes up to 256 sessions
    "autovacuum": "off",  # no background workers muddying server CPU
    "fsync": "off",  # a throw-away instance measuring the wire, not durability
    "log_min_messages": "warning",
    "logging_collector": "off",
}


def _version_key(path: str) -> tuple:
    m = re.search(r"/postgresql/(\d+)(?:\.(\d+))?/bin", path)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def find_bindir() -> Path:
    """The directory holding initdb and postgres: pg_config --bindir, else the newest Debian layout."""
    override = os.environ.get("ENCBENCH_PG_BINDIR")
    if override:
        if all(os.access(os.path.join(override, b), os.X_OK) for b in ("initdb", "postgres")):
            return Path(override)
        raise EngineUnavailableError(f"ENCBENCH_PG_BINDIR={override} holds no initdb and postgres", hint=INSTALL_HINT)
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10)
            candidates.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for c in candidates:
        if c and os.access(os.path.join(c, "initdb"), os.X_OK) and os.access(os.path.join(c, "postgres"), os.X_OK):
            return Path(c)
    raise EngineUnavailableError("PostgreSQL server binaries (initdb, postgres) not found", hint=INSTALL_HINT)


def binary_version() -> tuple[int, str]:
    """(server_version_num, server_version) of the private server's binaries (`postgres --version`: "postgres
    (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" -> (150018, "15.18"))."""
    exe = find_bindir() / "postgres"
    try:
        out = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise EngineUnavailableError(f"{exe} --version failed: {e}", hint=INSTALL_HINT) from None
    m = re.search(r"\)\s*(\d+)(?:\.(\d+))?", out)
    if not m:
        raise EngineUnavailableError(f"{exe} --version said {out.strip()!r}: no version in it", hint=INSTALL_HINT)
    major, minor = int(m.group(1)), int(m.group(2) or 0)
    return major * 10000 + minor, f"{major}.{minor}"


@dataclass
class PgServer(ServerLog):
    """A private PostgreSQL server (engines/local/private_server.PrivateServer)."""

    ENGINE = "PostgreSQL"
    LOG_TAG = "pg"
    CRASH_MARKS = CRASH_MARKS

    bindir: Path
    root: Path
    port: int
    password: str = field(repr=False)
    user: tuple[str, int, int] | None
    proc: subprocess.Popen | None = None
    keep: bool = False
    args: list[str] = field(default_factory=list, repr=False)  # the postgres command line, for restart()
    data_parent: Path | None = None  # the data directory's own directory when it is not under root (a mount)
    cgroup: Path | None = None  # the memory cgroup the postmaster (and so every child) starts in (host/memcg)
    meter_dir: Path | None = None  # --meter instructions: where its processes' callgrind dumps go
    stop_timeout: float = STOP_TIMEOUT_S

    @property
    def datadir(self) -> Path:
        return (self.data_parent or self.root) / "data"

    @property
    def sockdir(self) -> Path:
        return self.root / "sock"

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    def conninfo(self) -> dict:
        return {"host": "127.0.0.1", "port": self.port, "user": "postgres", "dbname": "postgres",
                "password": self.password}

    def how_to_connect(self) -> str:
        return (f"psql 'host=127.0.0.1 port={self.port} user=postgres dbname=postgres' "
                f"(password in {self.root / 'pwfile'}); stop: kill -INT {self.proc.pid if self.proc else '?'} "
                f"&& rm -rf {self.root}")

    def restart(self) -> None:
        """Start the same server again (same data, port and settings) after it stopped or was killed."""
        if self.proc is not None and self.proc.poll() is None:
            raise EngineUnavailableError("the server is still running")
        self._spawn()
        ok, error = _wait_ready(self)
        if not ok:
            raise EngineUnavailableError(f"the PostgreSQL server did not restart: {error}")

    def restart_with(self, settings: dict[str, str | None]) -> None:
        """Stop the server (whoever started it last) and start it again, in its cgroup, with these settings
        (command-line -c values, which no configuration file overrides) changed; the rest as it was."""
        self.args = with_settings(self.args, settings)
        cpus = affinity.cpus_of(postmaster_pid(self.datadir))  # the new one where the old one ran (placement)
        shutdown(self.datadir)
        if self.proc is not None:
            self.proc.poll()  # reaped: our child, stopped by its pid above
        with affinity.starting_on(cpus):
            self._spawn()
        ok, error = _wait_ready(self)
        if not ok:
            raise EngineUnavailableError(f"the PostgreSQL server did not restart with {settings}: {error}")

    def _spawn(self) -> None:
        log = open(self.logfile, "ab")
        try:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, **_as_user(self.user))
        finally:
            log.close()
        record_spawned(self.proc.pid, self.ENGINE, self.root, metered=bool(self.meter_dir))

    def pid(self) -> int | None:
        """The postmaster that runs now on the data directory (a worker may have restarted it)."""
        return postmaster_pid(self.datadir)

    def worker_handle(self) -> dict:
        """What another process (a worker) needs to restart this server: plain data (restart_handle)."""
        return {"bindir": str(self.bindir), "root": str(self.root), "port": self.port, "user": list(self.user or []),
                "args": list(self.args), "data_parent": str(self.data_parent) if self.data_parent else None}

    def stop(self) -> None:
        """Fast shutdown, then delete the directory. Idempotent; a no-op with keep=True. The postmaster of the
        moment is found by its pid file too: a worker may have restarted it (cache=cold)."""
        if self.keep:
            return
        proc, self.proc = self.proc, None
        stop_child(proc, self.stop_timeout, FAST_SHUTDOWN)  # SIGINT: disconnect clients, stop
        shutdown(self.datadir, self.stop_timeout)
        if self.data_parent is not None:
            shutil.rmtree(self.data_parent, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)


CGROUP_WRAPPER = 'echo $$ > "$0" && exec "$@"'  # the shell puts itself in the group, then becomes postgres


def in_cgroup(args: list[str], cgroup: Path) -> list[str]:
    """The command started inside a memory cgroup: the process joins it before exec, so the postmaster and every
    process it forks are in it from the start (their memory and page cache charged to it)."""
    return ["/bin/sh", "-c", CGROUP_WRAPPER, str(Path(cgroup) / "cgroup.procs"), *args]


def with_settings(args: list[str], settings: dict[str, str | None]) -> list[str]:
    """A postgres command line with these `-c name=value` settings replaced (or added at the end); a value None
    removes the setting (the server's default then)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "-c" and i + 1 < len(args) and args[i + 1].partition("=")[0] in settings:
            i += 2  # every occurrence dropped; the new value goes at the end
            continue
        out.append(args[i])
        i += 1
    for name, value in settings.items():
        if value is not None:
            out += ["-c", f"{name}={value}"]
    return out


def setting_of(args: list[str], name: str) -> str | None:
    """The value a postgres command line gives `-c name=...` (the last one), or None."""
    found = None
    for i in range(len(args) - 1):
        if args[i] == "-c" and args[i + 1].partition("=")[0] == name:
            found = args[i + 1].partition("=")[2]
    return found


def postmaster_pid(datadir: Path) -> int | None:
    """The running postmaster of `datadir` (its pid file's first line), or None."""
    return running_pid(Path(datadir) / "postmaster.pid")


def shutdown(datadir: Path, timeout: float = STOP_TIMEOUT_S) -> None:
    """Fast shutdown (SIGINT) of whatever postmaster runs on `datadir`, waited for; SIGKILL when it hangs."""
    pid = postmaster_pid(datadir)
    if pid is not None:
        stop_pid(pid, timeout, signals=FAST_SHUTDOWN)


def restart_handle(handle: dict, conninfo: dict) -> float:
    """Stop and start the server of `handle` (PgServer.worker_handle()) from any process: an empty shared_buffers.
    The new postmaster runs in a session of its own (it outlives a worker: the forkserver adopts it, so its CPU stays
    encbench's own in the run context, lab/forkserver_init); the seconds it took."""
    import time

    t0 = time.perf_counter()
    user = tuple(handle["user"]) if handle.get("user") else None
    server = PgServer(bindir=Path(handle["bindir"]), root=Path(handle["root"]), port=handle["port"], password="",
                      user=user, args=list(handle["args"]),
                      data_parent=Path(handle["data_parent"]) if handle.get("data_parent") else None)
    cpus = affinity.cpus_of(postmaster_pid(server.datadir))
    shutdown(server.datadir)
    with affinity.starting_on(cpus):  # the new postmaster (and its backends) where the old one ran (placement)
        server._spawn()
    ok, error = _wait_ready_pid(server, conninfo)
    if not ok:
        raise EngineUnavailableError(f"the PostgreSQL server did not restart: {error}")
    server.proc = None  # not ours to stop: the runner's PgServer.stop finds it by its pid file
    return time.perf_counter() - t0


def settings_for(settings: dict | None, *, meter: bool = False) -> dict:
    """The -c settings a private server starts with: SERVER_SETTINGS, the meter's, then the caller's."""
    from . import meter as pg_meter

    return dict(SERVER_SETTINGS, **(pg_meter.SERVER_SETTINGS if meter else {}), **(settings or {}))


def _as_user(user):
    return {"user": user[1], "group": user[2], "extra_groups": []} if user else {}


def start(*, keep: bool = False, settings: dict | None = None, data_parent: Path | None = None,
          root_parent: Path | None = None, unix_socket: bool = True, cgroup: Path | None = None,
          meter: dict | None = None) -> PgServer:
    """initdb + certificate + start on a free port below 32768; retried on a port race. data_parent: a directory
    to make the data directory in (data, WAL, temporary files: e.g. on an encrypted mount); the socket, log,
    certificate and password file stay in the server's own temporary directory, made in root_parent (default
    the system's temporary directory). unix_socket=False: TCP only (no socket path to fit in 107 bytes).
    cgroup: a memory cgroup (host/memcg, its cgroup.procs writable by the server's user) the postmaster starts
    in, and every restart too.
    meter (--meter instructions: {"cache_sim", "keep_dir"}): the server runs under callgrind (meter.py), its
    dumps in root/callgrind; one that does not start in time has its log kept in keep_dir (exit 10)."""
    bindir = find_bindir()
    if meter:
        valgrind.find()  # exit 10 with the apt-get line, before anything is made
    user = unprivileged_user("postgres")
    root = leftovers.server_dir("encbench-pg-", root_parent)  # owned before it exists: reclaimed after a kill
    server = PgServer(bindir=bindir, root=root, port=0, password=secrets.token_urlsafe(24), user=user, keep=False,
                      cgroup=cgroup)
    with stopped_on_error(server):
        if data_parent is not None:
            server.data_parent = own_dir(leftovers.server_dir("encbench-pgdata-", data_parent), user)
        own_dir(root, user)
        pwfile = _write_password(server)
        own_dir(server.sockdir, user, make=True)
        run_tool([str(bindir / "initdb"), "-D", str(server.datadir), "-U", "postgres", "-E", "UTF8",
                  "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "--no-instructions"],
                 "initdb", timeout=120, **_as_user(user))
        crt, key = certs.self_signed(root, owner=user[1:] if user else None)
        conf = dict(settings_for(settings, meter=bool(meter)), ssl_cert_file=str(crt), ssl_key_file=str(key),
                    unix_socket_directories=str(server.sockdir) if unix_socket else "")
        prefix = _metered(server, meter) if meter else []
        timeout = valgrind.start_timeout(METER_START_TIMEOUT_S) if meter else START_TIMEOUT_S
        proc, last_error = start_on_free_port(lambda port: _launch(server, port, prefix, conf),
                                              lambda _proc: _wait_ready(server, timeout),
                                              lambda why: _port_taken(server, why))
        if proc is None:
            server.proc = None
            raise start_failed(server.ENGINE, "pg", server.logfile, server.port, last_error, meter,
                               hint=f"see {server.logfile}" if keep else "run with --keep to inspect its log")
        server.keep = keep
        if keep:
            for d in (root, server.data_parent):
                if d is not None:
                    leftovers.release_server_dir(d)
        return server


def _write_password(server: PgServer) -> Path:
    """The superuser's password in a file initdb reads (0600, the server's user's)."""
    pwfile = server.root / "pwfile"
    fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(server.password + "\n")
    if server.user:
        os.chown(pwfile, server.user[1], server.user[2])
    return pwfile


def _metered(server: PgServer, meter: dict) -> list[str]:
    """--meter instructions: the dumps' directory, the longer stop timeout, and valgrind's command line."""
    from . import meter as pg_meter

    server.meter_dir = server.root / "callgrind"
    server.stop_timeout = METER_STOP_TIMEOUT_S
    return meter_wrapper(server.meter_dir, server.user, meter, pg_meter.SERVER_OPTIONS)


def _launch(server: PgServer, port: int, prefix: list[str], conf: dict) -> subprocess.Popen:
    """The postmaster started on `port` (in the server's cgroup when it has one) with these -c settings."""
    server.port = port
    args = prefix + [str(server.bindir / "postgres"), "-D", str(server.datadir), "-c", f"port={port}"]
    for k, v in conf.items():
        args += ["-c", f"{k}={v}"]
    server.args = in_cgroup(args, server.cgroup) if server.cgroup is not None else args
    server._spawn()
    return server.proc


def _wait_ready(server: PgServer, timeout: float = START_TIMEOUT_S) -> tuple[bool, str]:
    import psycopg

    return wait_ready(server.proc,
                      lambda: psycopg.connect(**server.conninfo(), sslmode="disable", connect_timeout=2).close(),
                      psycopg.OperationalError, lambda: _last_log_line(server), timeout)


def _wait_ready_pid(server: PgServer, conninfo: dict) -> tuple[bool, str]:
    """As _wait_ready, for a postmaster that is not our child: ready when a connection over its socket works."""
    import psycopg

    return wait_ready(server.proc, lambda: psycopg.connect(**conninfo, sslmode="disable", connect_timeout=2).close(),
                      psycopg.OperationalError, lambda: _last_log_line(server), START_TIMEOUT_S, interval=0.05)


def _port_taken(server: PgServer, last_error: str) -> bool:
    """The server could not bind its port (taken since we checked it): worth another port."""
    if "could not create any TCP/IP sockets" in last_error:
        return True
    try:
        return "Address already in use" in server.logfile.read_text(errors="replace")
    except OSError:
        return False


def _last_log_line(server: PgServer) -> str:
    return last_log_line(server.logfile)

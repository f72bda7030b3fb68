"""A private MariaDB server on loopback with encryption at rest, started and stopped by encbench.

mariadb-install-db into a private temporary directory (run as the `mysql` user when we
are root), a generated key file for the file_key_management plugin (mode 0600, deleted
with the directory), a self-signed certificate for TLS, a free port below the ephemeral
range, a private socket, bind 127.0.0.1, a benchmark user with a random password for
TCP connections. `stop()` shuts it down and deletes everything, on exit, error and Ctrl-C.

The server is tracked by its pid file, not by a process handle, so that a worker process
can restart it (a cold buffer pool) and the runner can still stop it: `Handle` is the
part of a server that travels to workers as plain data.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..local import affinity, certs
from ...errors import BadValueError, EngineUnavailableError
from ...host import valgrind
from ..local.private_server import (ServerLog, meter_wrapper, own_dir, record_spawned, running_pid, start_failed,
                                    stopped_on_error)
from ..local.server import last_log_line, run_tool, start_on_free_port, unprivileged_user, wait_ready
from .client import connect_bounded
from ...util import leftovers
from ...util import owners
from ...util.proc import kill_and_reap, stop_pid

INSTALL_HINT = "install it with: apt-get install mariadb-server mariadb-backup sysbench (the oltp workload's driver)"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60
# --meter instructions: the server under callgrind (meter.py) starts and stops 20-50x slower
METER_START_TIMEOUT_S = 240
METER_STOP_TIMEOUT_S = 180
BENCH_USER = "encbench"

# everything encrypted that MariaDB can encrypt (the leak-check's "fully encrypted" baseline)
ENCRYPTED = {
    "plugin_load_add": "file_key_management",
    "file_key_management_encryption_algorithm": "AES_CTR",
    "innodb_encrypt_tables": "ON",
    "innodb_encrypt_log": "ON",
    "innodb_encrypt_temporary_tables": "ON",
    "encrypt_tmp_files": "ON",
    "encrypt_binlog": "ON",
    "aria_encrypt_tables": "ON",
    "log_bin": "binlog",
    "server_id": "1",
}

# `encbench run`: a stock server of this version (what a DBA runs: the plugin's own defaults, AES_CBC, redo log,
# temporary files and tables, Aria and binary log in plaintext) with what the measurement needs: the key
# management plugin loaded (each table says for itself, ENCRYPTED=YES|NO, so one instance holds the encrypted and
# the plain copy); reads from storage (O_DIRECT, no buffer-pool dump/load); performance_schema on (it cannot be
# turned on without a restart: the threads table and status_by_thread prove a connection's TLS, the waits probe
# samples events_waits_current) with every instrument and consumer off but the thread bookkeeping, so it costs
# next to nothing: the waits probe turns the wait instruments and events_waits_current on while it samples and
# off again (waits.WaitSampler, WAITS_ON / WAITS_OFF). Named startup knobs (knobs.py) and --setting change one of
# these at a time.
BENCH = {
    "plugin_load_add": "file_key_management",
    "file_key_management": "FORCE",  # a key file the plugin cannot read stops the server, never a server without it
    # the version's own defaults, written out: a knob's value that is the default then means the same server
    # (knobs.server_groups compares configurations), and the result file says what ran
    "file_key_management_encryption_algorithm": "AES_CBC",
    "innodb_encrypt_tables": "OFF",
    "innodb_encrypt_log": "OFF",
    "innodb_encrypt_temporary_tables": "OFF",
    "encrypt_tmp_files": "OFF",
    "encrypt_binlog": "OFF",
    "aria_encrypt_tables": "OFF",
    "innodb_flush_method": "O_DIRECT",
    "innodb_buffer_pool_load_at_startup": "OFF",
    "innodb_buffer_pool_dump_at_shutdown": "OFF",
    "performance_schema": "ON",
    "performance_schema_instrument": "'%=OFF'",
    "performance_schema_consumer_statements_digest": "OFF",
    "max_connections": "300",
}
# what differs from a stock server of the version, and why (docs/mariadb.md says the same)
NOT_STOCK = {
    "plugin_load_add": "the key management plugin, so that a table can be created ENCRYPTED=YES",
    "file_key_management": "FORCE: a server whose key management plugin fails to start does not start at all",
    "innodb_flush_method": "O_DIRECT: a page the buffer pool misses is read from storage, not from the OS cache",
    "innodb_buffer_pool_load_at_startup": "a restart empties the buffer pool (cache=cold)",
    "innodb_buffer_pool_dump_at_shutdown": "a restart empties the buffer pool (cache=cold)",
    "performance_schema": "the server's own view of each connection's TLS, and the waits probe; every instrument "
                          "off until the waits probe turns the wait instruments on for the operation it samples",
    "max_connections": "the hash sweep's sessions (up to 256)",
}

# a run with a filesystem variant (encryption=fscrypt|gocryptfs): every server of the run, the plain-mount
# baseline included, with the same settings (InnoDB's instance-level encryption off, as on a stock server), so each
# variant differs from `off` by one thing: the table's ENCRYPTED=YES (`on`) or the filesystem (fscrypt, gocryptfs).
FS_BENCH = dict(BENCH)


def binaries() -> dict[str, str]:
    found = {name: shutil.which(name) or (f"/usr/sbin/{name}" if os.access(f"/usr/sbin/{name}", os.X_OK) else None)
             for name in ("mariadbd", "mariadb-install-db", "mariadb-backup")}
    missing = [n for n in ("mariadbd", "mariadb-install-db") if not found[n]]
    if missing:
        raise EngineUnavailableError(f"MariaDB server binaries not found ({', '.join(missing)})", hint=INSTALL_HINT)
    return found


@dataclass
class Handle:
    """What a process needs to reach, restart or stop the server (plain data: it goes to workers)."""

    root: str
    port: int
    user: list | None  # [name, uid, gid] to run as, when we are root
    mariadbd: str
    password: str = ""
    settings: dict = field(default_factory=dict)
    data_root: str = ""  # where the data directory and tmpdir live when not under root (a filesystem's mount)
    wrapper: list = field(default_factory=list)  # --meter instructions: valgrind's command line before mariadbd

    @property
    def datadir(self) -> Path:
        return Path(self.data_root or self.root) / "data"

    @property
    def tmpdir(self) -> Path:
        return Path(self.data_root or self.root) / "tmp"

    @property
    def socket(self) -> Path:
        return Path(self.root) / "sock" / "mariadb.sock"

    @property
    def cnf(self) -> Path:
        return Path(self.root) / "my.cnf"

    @property
    def pidfile(self) -> Path:
        return Path(self.root) / "mariadbd.pid"

    @property
    def logfile(self) -> Path:
        return Path(self.root) / "server.log"

    @property
    def keyfile(self) -> Path:
        return Path(self.root) / "keys.txt"

    @property
    def client_tls(self) -> dict[str, Path]:
        """start(client_cert=True): a client certificate and key the server trusts (its ssl_ca), and the
        server's own certificate (a client's CA)."""
        return {"cert": Path(self.root) / "client" / "server.crt", "key": Path(self.root) / "client" / "server.key",
                "ca": Path(self.root) / "server.crt"}

    @property
    def meter_dir(self) -> Path:
        return Path(self.root) / "callgrind"

    @property
    def start_timeout(self) -> float:
        return valgrind.start_timeout(METER_START_TIMEOUT_S) if self.wrapper else START_TIMEOUT_S

    @property
    def stop_timeout(self) -> float:
        return METER_STOP_TIMEOUT_S if self.wrapper else STOP_TIMEOUT_S

    def to_dict(self) -> dict:
        return asdict(self)

    def pid(self) -> int | None:
        return running_pid(self.pidfile)

    def connect(self, **extra):
        """root over the private socket (authenticated by the socket's owner: no password)."""
        return connect_bounded({"unix_socket": str(self.socket), "user": "root"}, autocommit=True, **extra)

    def tcp_params(self) -> dict:
        return {"host": "127.0.0.1", "port": self.port, "user": BENCH_USER, "password": self.password}

    # -- process ---------------------------------------------------------------------
    def launch(self) -> subprocess.Popen:
        args = list(self.wrapper) + [self.mariadbd, f"--defaults-file={self.cnf}"] + (
            [f"--user={self.user[0]}"] if self.user else [])
        if self.data_root:  # named on the command line: a dead run's server is found (and stopped) by the
            args.append(f"--datadir={self.datadir}")  # encfs ledger's teardown of the filesystem it holds
        if not self.wrapper:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
        else:
            with open(self.logfile, "ab") as log:  # valgrind's own words go to the server's log
                proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                        start_new_session=True)
        record_spawned(proc.pid, MariaServer.ENGINE, self.root, metered=bool(self.wrapper))
        return proc

    def wait_ready(self, proc: subprocess.Popen | None) -> tuple[bool, str]:
        import pymysql

        return wait_ready(proc, lambda: self.connect(connect_timeout=2).close(), pymysql.err.OperationalError,
                          self.last_log_line, self.start_timeout, interval=0.05)

    def shutdown(self) -> None:
        """A normal shutdown (SIGTERM), waited for; a kill when it hangs."""
        pid = self.pid()
        if pid is not None:
            stop_pid(pid, self.stop_timeout)  # SIGTERM, then SIGKILL

    def restart(self) -> float:
        """Shut down and start again: an empty buffer pool (no dump/load). Returns the seconds it took."""
        t0 = time.perf_counter()
        cpus = affinity.cpus_of(self.pid())  # the new server where the old one ran (never the worker's CPU)
        self.shutdown()
        with affinity.starting_on(cpus):
            proc = self.launch()
        try:
            ok, last = self.wait_ready(proc)
        except BaseException:  # stopped while it starts (SIGTERM to the worker): before its pid file exists
            kill_and_reap(proc)
            raise
        if not ok:
            raise EngineUnavailableError(f"the private MariaDB server did not restart: {last}")
        return time.perf_counter() - t0

    def last_log_line(self) -> str:
        return last_log_line(self.logfile, ("ERROR",))


@dataclass
class MariaServer(ServerLog):
    """A private MariaDB server (engines/local/private_server.PrivateServer): its Handle travels to workers."""

    ENGINE = "MariaDB"
    LOG_TAG = "maria"

    handle: Handle
    proc: subprocess.Popen | None = None
    keep: bool = False

    # the handle's properties, for callers that hold the server
    datadir = property(lambda self: self.handle.datadir)
    socket = property(lambda self: self.handle.socket)
    root = property(lambda self: Path(self.handle.root))
    port = property(lambda self: self.handle.port)
    logfile = property(lambda self: self.handle.logfile)

    def pid(self) -> int | None:
        return self.handle.pid()

    def worker_handle(self) -> dict:
        return self.handle.to_dict()

    def connect(self, **extra):
        return self.handle.connect(**extra)

    def how_to_connect(self) -> str:
        return (f"mariadb --socket={self.handle.socket} -u root (or -h 127.0.0.1 -P {self.handle.port} -u {BENCH_USER}); "
                f"directory {self.handle.root}; stop it with: kill $(cat {self.handle.pidfile})")

    def stop(self) -> None:
        """Shut down (whoever started the current process) and delete everything. Idempotent."""
        if self.keep:
            return
        self.handle.shutdown()
        proc, self.proc = self.proc, None
        kill_and_reap(proc)
        shutil.rmtree(self.handle.root, ignore_errors=True)
        if self.handle.data_root:
            shutil.rmtree(self.handle.data_root, ignore_errors=True)


def _check_settings(settings: dict) -> None:
    for k, v in settings.items():
        if not k.replace("_", "").replace("-", "").isalnum() or "\n" in str(v):
            raise BadValueError(f"server setting {k}={v!r} is not a valid option",
                                hint="use NAME=VALUE, e.g. innodb_encrypt_log=OFF")


def start(settings: dict | None = None, *, base: dict | None = None, buffer_pool_mb: int = 128,
          tls: bool = False, keep: bool = False, data_root: Path | None = None,
          client_cert: bool = False, meter: dict | None = None) -> MariaServer:
    """install-db, key file, certificate, config, start; retried on a port race.

    client_cert (with tls): also a client certificate the server trusts (ssl_ca, Handle.client_tls), for a
    client that always presents one (sysbench 1.0.20's --mysql-ssl=on: the server refuses one it cannot verify).

    base: the settings to start from (ENCRYPTED by default); settings: the user's changes; data_root: a
    directory (on a filesystem encbench mounted) to hold the data directory and tmpdir instead of the
    private directory (keys, socket, config and log stay there). meter (--meter instructions: {"cache_sim",
    "keep_dir"}): the server runs under callgrind (meter.py), its dumps in root/callgrind; one that does not
    start in time has its log kept in keep_dir (exit 10).
    """
    from . import meter as maria_meter

    if meter:
        valgrind.find()  # exit 10 with the apt-get line, before anything is made
    bins = binaries()
    user = unprivileged_user("mysql")
    conf = dict(ENCRYPTED if base is None else base, **(maria_meter.settings(buffer_pool_mb) if meter else {}),
                **(settings or {}))
    _check_settings(conf)
    own_keys = "file_key_management" in conf.get("plugin_load_add", "") and "file_key_management_filename" not in conf
    _check_key_file(conf)
    root = leftovers.server_dir("encbench-maria-")  # owned before it exists: reclaimed after a kill
    handle = Handle(root=str(root), port=0, user=list(user) if user else None, mariadbd=bins["mariadbd"],
                    password=secrets.token_urlsafe(18), settings=conf,
                    data_root=str(Path(data_root) / f"mariadb-{root.name}") if data_root else "")
    server = MariaServer(handle)
    with stopped_on_error(server):
        own_dir(root, None)
        own_dir(root / "sock", None, make=True)
        if meter:
            handle.wrapper = meter_wrapper(handle.meter_dir, user, meter, maria_meter.SERVER_OPTIONS)
        if data_root:
            owners.add({"kind": "dir", "path": handle.data_root})
            Path(handle.data_root).mkdir(mode=0o700)
        handle.tmpdir.mkdir(mode=0o700)
        _write_keys(handle)
        if user:
            for p in (root, root / "sock", handle.tmpdir, handle.keyfile, *([Path(handle.data_root)] if data_root else [])):
                os.chown(p, user[1], user[2])
        tls_lines = _tls_lines(root, user, client_cert) if tls else []

        def launch(port: int) -> subprocess.Popen:
            handle.port = port
            handle.cnf.write_text(config_text(handle, conf, buffer_pool_mb, own_keys, tls_lines))
            if not handle.datadir.exists():
                _install_db(handle, bins["mariadb-install-db"], user)
            server.proc = handle.launch()
            return server.proc

        proc, last = start_on_free_port(launch, handle.wait_ready,
                                        lambda why: "already in use" in why or "bind" in why.lower())
        if proc is None:
            server.proc = None
            raise start_failed(server.ENGINE, "maria", handle.logfile, handle.port, last, meter)
        _create_bench_user(handle)
        server.keep = keep
        if keep:
            leftovers.release_server_dir(root)
        return server


def _check_key_file(conf: dict) -> None:
    """The user's own key file (file_key_management_filename): checked before anything starts."""
    if "file_key_management_filename" in conf:
        given = Path(str(conf["file_key_management_filename"]))
        if not given.is_file() or not os.access(given, os.R_OK):
            raise BadValueError(f"key file {given} is missing or unreadable",
                                hint="give file_key_management_filename a readable file of lines '1;<64 hex digits>'")


def _write_keys(handle: Handle) -> None:
    """A generated key for the file_key_management plugin (0600; deleted with the directory)."""
    fd = os.open(handle.keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"1;{secrets.token_hex(32)}\n")


def _tls_lines(root: Path, user, client_cert: bool) -> list[str]:
    """The server's certificate (and, with client_cert, the client certificate it trusts): its option lines."""
    crt, key = certs.self_signed(root, owner=user[1:] if user else None)
    lines = [f"ssl_cert={crt}", f"ssl_key={key}"]
    if client_cert:
        (root / "client").mkdir(mode=0o700)
        client_crt, _ = certs.self_signed(root / "client", common_name="encbench client")
        if user:  # the server reads it as its CA; the key stays the caller's
            for p in (root / "client", client_crt):
                os.chown(p, user[1], user[2])
        lines.append(f"ssl_ca={client_crt}")
    return lines


def _install_db(handle: Handle, install_db: str, user) -> None:
    """mariadb-install-db into the data directory; its failure names the first error its server logged."""
    try:
        run_tool([install_db, f"--defaults-file={handle.cnf}", *([f"--user={user[0]}"] if user else []),
                  "--auth-root-authentication-method=socket", "--skip-test-db"], "mariadb-install-db",
                 error_mark="[ERROR]")
    except EngineUnavailableError as e:  # its server's errors went to the log: the first is the cause
        cause = _first_error(handle.logfile)
        if cause:
            raise EngineUnavailableError(f"mariadb-install-db failed: {cause}") from None
        raise e from None


def config_text(handle: Handle, conf: dict, buffer_pool_mb: int, own_keys: bool, tls_lines: list[str]) -> str:
    """The server's option file: where its files are, loopback only, the pool, then `conf` (base + the run's)."""
    lines = ["[mariadbd]", f"datadir={handle.datadir}", f"socket={handle.socket}", f"port={handle.port}",
             "bind-address=127.0.0.1", f"tmpdir={handle.tmpdir}", f"pid_file={handle.pidfile}",
             *([f"file_key_management_filename={handle.keyfile}"] if own_keys else []),
             f"innodb_buffer_pool_size={int(buffer_pool_mb)}M", "innodb_log_file_size=96M",
             "skip-name-resolve", f"log_error={handle.logfile}", *tls_lines]
    lines += [f"{k}={v}" for k, v in conf.items()]
    return "\n".join(lines) + "\n"


def _first_error(log: Path) -> str | None:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        if "[ERROR]" in line:
            return line[line.index("[ERROR]") + len("[ERROR]"):].strip()
    return None


def _create_bench_user(handle: Handle) -> None:
    conn = handle.connect()
    try:
        cur = conn.cursor()
        cur.execute(f"CREATE USER '{BENCH_USER}'@'127.0.0.1' IDENTIFIED BY %s", (handle.password,))
        cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO '{BENCH_USER}'@'127.0.0.1'")
    finally:
        conn.close()

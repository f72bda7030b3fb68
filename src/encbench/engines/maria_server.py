"""A private MariaDB server on loopback with encryption at rest, started and stopped by encbench.

mariadb-install-db into a private temporary directory (run as the `mysql` user when we
are root), a generated key file for the file_key_management plugin (mode 0600, deleted
with the directory), a free port below the ephemeral range, a private socket, bind
127.0.0.1. `stop()` shuts it down and deletes everything, on exit, error and Ctrl-C.
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import ports
from ..errors import BadValueError, EngineUnavailableError
from .local_server import last_log_line, run_tool, unprivileged_user, wait_ready

INSTALL_HINT = "install it with: apt-get install mariadb-server mariadb-backup"
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30

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


def binaries() -> dict[str, str]:
    found = {name: shutil.which(name) or (f"/usr/sbin/{name}" if os.access(f"/usr/sbin/{name}", os.X_OK) else None)
             for name in ("mariadbd", "mariadb-install-db", "mariadb-backup")}
    missing = [n for n in ("mariadbd", "mariadb-install-db") if not found[n]]
    if missing:
        raise EngineUnavailableError(f"MariaDB server binaries not found ({', '.join(missing)})", hint=INSTALL_HINT)
    return found


@dataclass
class MariaServer:
    root: Path
    port: int
    user: tuple[str, int, int] | None
    settings: dict
    proc: subprocess.Popen | None = None

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def socket(self) -> Path:
        return self.root / "sock" / "mariadb.sock"

    def connect(self, **extra):
        import pymysql

        return pymysql.connect(unix_socket=str(self.socket), user="root", autocommit=True, **extra)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # a normal shutdown
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _check_settings(settings: dict) -> None:
    for k, v in settings.items():
        if not k.replace("_", "").replace("-", "").isalnum() or "\n" in str(v):
            raise BadValueError(f"server setting {k}={v!r} is not a valid option", hint="use NAME=VALUE, e.g. innodb_encrypt_log=OFF")


def start(settings: dict | None = None) -> MariaServer:
    """install-db, key file, config, start; retried on a port race."""
    bins = binaries()
    user = unprivileged_user("mysql")
    conf = dict(ENCRYPTED, **(settings or {}))
    _check_settings(conf)
    root = Path(tempfile.mkdtemp(prefix="encbench-maria-"))
    server = MariaServer(root=root, port=0, user=user, settings=conf)
    atexit.register(server.stop)
    try:
        os.chmod(root, 0o700)
        (root / "sock").mkdir(mode=0o700)
        (root / "tmp").mkdir(mode=0o700)
        keyfile = root / "keys.txt"
        fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"1;{secrets.token_hex(32)}\n")
        if user:
            for p in (root, root / "sock", root / "tmp", keyfile):
                os.chown(p, user[1], user[2])
        last = ""
        for _ in range(5):
            server.port = ports.free_port()
            cnf = root / "my.cnf"
            lines = ["[mariadbd]", f"datadir={server.datadir}", f"socket={server.socket}", f"port={server.port}",
                     "bind-address=127.0.0.1", f"tmpdir={root / 'tmp'}", f"file_key_management_filename={keyfile}",
                     "innodb_buffer_pool_size=128M", "innodb_log_file_size=48M", "skip-name-resolve",
                     f"log_error={root / 'server.log'}"]
            lines += [f"{k}={v}" for k, v in conf.items()]
            cnf.write_text("\n".join(lines) + "\n")
            if not server.datadir.exists():
                run_tool([bins["mariadb-install-db"], f"--defaults-file={cnf}", *([f"--user={user[0]}"] if user else []),
                          "--auth-root-authentication-method=socket", "--skip-test-db"], "mariadb-install-db")
            args = [bins["mariadbd"], f"--defaults-file={cnf}"] + ([f"--user={user[0]}"] if user else [])
            server.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
            ok, last = _wait_ready(server)
            if ok:
                return server
            if server.proc.poll() is None:
                server.proc.kill()
                server.proc.wait()
            server.proc = None
            if "already in use" not in last and "bind" not in last.lower():
                break
        raise EngineUnavailableError(f"the private MariaDB server did not start: {last}")
    except BaseException:
        server.stop()
        raise


def _wait_ready(server: MariaServer) -> tuple[bool, str]:
    import pymysql

    return wait_ready(server.proc, lambda: server.connect(connect_timeout=2).close(), pymysql.err.OperationalError,
                      lambda: _last_log_line(server), START_TIMEOUT_S)


def _last_log_line(server: MariaServer) -> str:
    return last_log_line(server.root / "server.log", ("ERROR",))

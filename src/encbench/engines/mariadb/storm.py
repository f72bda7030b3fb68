"""The MariaDB storm driven by the `mariadb` command-line client (C, Connector/C), not by PyMySQL.

Why: measured on the 2-core lab machine (200k one-row result sets from the storm procedure),
PyMySQL spent 3.1-4.7 s of CPU, the `mariadb` client 0.22-0.90 s (plain-TLS): PyMySQL's
per-message work, not the server, would have been timed.

Its life, one process per operation, kept until the probes have stopped:

  start (untimed)  `mariadb --batch --unbuffered` connected with the variant's TLS (the
                   worker's OPENSSL_CONF forces a suite, as for the Python client, and
                   --tls-version/--ssl-cipher say it too); it prints Ssl_version,
                   Ssl_cipher and its performance_schema thread: the server's view, checked
                   against the variant (the session's check_client_tls)
  run (timed)      CALL storm(n, send), then a marker row; the worker counts the rows it
                   reads from the pipe ("x" per message) until the marker
  finish (untimed) stdin closed: the client exits and is reaped

The password goes in MYSQL_PWD (the environment), never on the command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ...vocab.tls import forced
from ...drivers import session_storm as session_storm_base
from ..local.storm_client import driver_failure, stderr_of, steal_socket

MARKER = "encbench-storm-done"
PAD = "SELECT REPEAT('-', 16384);\n"  # more than stdio's buffer: what was printed before it reaches the pipe


def client_binary() -> str | None:
    return shutil.which("mariadb") or shutil.which("mysql")


def connection_args(conn: dict) -> list[str]:
    """The command line of the PyMySQL arguments (the password stays in MYSQL_PWD): the same server, user
    and option file (--dsn: ~/.my.cnf [client] as PyMySQL's read_default_file; else no option file)."""
    args = [f"--defaults-file={conn['read_default_file']}"] if conn.get("read_default_file") else ["--no-defaults"]
    for key, flag in (("host", "--host"), ("port", "--port"), ("unix_socket", "--socket"), ("user", "--user")):
        if conn.get(key) is not None:
            args.append(f"{flag}={conn[key]}")
    if conn.get("unix_socket"):
        args.append("--protocol=SOCKET")
    elif conn.get("host"):
        args.append("--protocol=TCP")
    return args


def tls_args(tls: str) -> list[str]:
    if tls == "off":
        return ["--skip-ssl"]
    args = ["--ssl", "--ssl-verify-server-cert=0"]  # a private self-signed certificate: what is measured is the cipher
    f = forced(tls)
    if f:
        args += [f"--tls-version={f[0]}", f"--ssl-cipher={f[1]}"]
    return args


class NativeStorm(session_storm_base.DriverProcess):
    def __init__(self, binary: str, conn: dict, schema: str, tls: str, messages: int = 0, send: bool = False):
        self.messages, self.send = int(messages), send
        # no --unbuffered: it flushes stdout after every result set, a write per message (and a read of 2
        # bytes in the worker): the client's CPU per message grew about sixfold. Output stays in stdio's
        # buffer; a padding row after each answer the worker waits for pushes it through the pipe.
        self.cmd = [binary, *connection_args(conn), "--batch", "--skip-column-names", "--raw", *tls_args(tls), schema]
        self.env = dict(os.environ, **({"MYSQL_PWD": str(conn["password"])} if conn.get("password") is not None else {}))
        self.schema = schema
        self.proc: subprocess.Popen | None = None
        self.socket_fd: int | None = None
        self.state: dict = {}

    def start(self) -> dict:
        """Connected: {ssl, version, cipher, bits, ps_thread, os_thread} as the server reports them."""
        self.proc = subprocess.Popen(self.cmd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)
        self._send("SELECT COALESCE(v.VARIABLE_VALUE, '-'), COALESCE(c.VARIABLE_VALUE, '-'), "
                   "COALESCE(t.THREAD_ID, 0), COALESCE(t.THREAD_OS_ID, 0) FROM "
                   "information_schema.SESSION_STATUS v, information_schema.SESSION_STATUS c "
                   "LEFT JOIN performance_schema.threads t ON t.PROCESSLIST_ID = CONNECTION_ID() "
                   f"WHERE v.VARIABLE_NAME = 'SSL_VERSION' AND c.VARIABLE_NAME = 'SSL_CIPHER';\n{PAD}")
        words = self._line().split("\t")
        if len(words) != 4:
            self._fail(f"answered {words!r}")
        version, cipher = (None if w in ("-", "") else w for w in words[:2])
        self.state = {"ssl": bool(cipher), "version": version, "cipher": cipher, "bits": None,
                      "ps_thread": int(words[2]) or None, "os_thread": int(words[3]) or None}
        self.socket_fd = steal_socket(self.proc.pid)
        return self.state

    def run(self) -> int:
        """The storm; returns the rows ("x") read before the marker."""
        return self.statement(f"CALL {self.schema}.storm({self.messages}, {1 if self.send else 0})")[0]

    def statement(self, sql: str) -> tuple[int, int]:
        """(rows "x", bytes) the client printed for one statement, read from the pipe until the marker."""
        self._send(f"{sql};\nSELECT '{MARKER}';\n{PAD}")
        end = b"\n" + MARKER.encode() + b"\n"
        out = bytearray()
        read, fd = os.read, self.proc.stdout.fileno()
        while True:
            block = read(fd, 1 << 16)
            if not block:
                self._fail("exited during the operation")
            start = max(0, len(out) - len(end))
            out += block
            at = out.find(end, start)
            if at >= 0:
                rows = out[:at + 1].split(b"\n")  # what came before the marker: padding left over, then the rows
                return rows.count(b"x"), at + 1

    def _send(self, sql: str) -> None:
        try:
            self.proc.stdin.write(sql.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._fail("exited")

    def _line(self) -> str:
        out = bytearray()
        while b"\n" not in out:
            block = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not block:
                self._fail("did not connect")
            out += block
        return out[:out.index(b"\n")].decode()

    def _fail(self, what: str):
        raise driver_failure(f"the mariadb client (storm) {what}", stderr_of(self.proc, self.finish))


class SessionStorm(session_storm_base.SessionStorm):
    """A MariaSession's storm through the `mariadb` client."""

    UNIT = "result rows"
    CLIENT = "native (mariadb client)"

    def __init__(self, session, binary: str, messages: int = 0, send: bool = False):
        super().__init__(session, NativeStorm(binary, session.setup["_conn"], session.schema, session.tls, messages,
                                              send), messages, send)

    def target(self, state: dict):
        target = self.session.target()  # the server process, as for the Python client; then this connection's own
        pid = target.pids[0] if target.pids else None
        target.threads = [(pid, state["os_thread"])] if pid and state["os_thread"] else []
        target.extra = dict(target.extra, socket_fds=[self.driver.socket_fd] if self.driver.socket_fd is not None
                            else [], client_pids=[self.driver.proc.pid])
        if state["ps_thread"] and "wait_sampler" in target.extra:
            target.extra["wait_sampler"] = self.session._sampler([state["ps_thread"]], None)
        return target


def session_storm(session, messages: int, send: bool) -> SessionStorm | None:
    """The native storm of a MariaSession; None without the `mariadb` client (PyMySQL drives it then)."""
    binary = client_binary()
    return SessionStorm(session, binary, messages, send) if binary else None

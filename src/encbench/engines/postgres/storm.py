"""The PostgreSQL storm driven by a native libpq client (C), not by Python.

Why: with psycopg the worker's own CPU per notice was of the order of the server's, so the
storm timed the client. Measured on the 2-core lab machine (200k notices, TLS): psql used
~0.90 s of CPU, a plain libpq program ~0.75 s (no per-notice write to stderr, a counter
instead), and with TLS even that one was saturated in some runs: OpenSSL read each record
with two read() calls. This driver lets OpenSSL read ahead (one read() for what is waiting)
and waits on the socket itself. Figures: bench/storm_client.py.

The driver (C source below) is built once with the system compiler against libpq and
cached under $XDG_CACHE_HOME/encbench/drivers/ (by the source's hash). Its life:

  start (untimed)  connect from PG* variables (OPENSSL_CONF of the worker forces a suite,
                   as for pgbench), run the setup SQL, print "ready PID SSL VERSION CIPHER
                   BITS" from pg_stat_ssl for its own backend, wait for a line on stdin
  run (timed)      on "go": the storm statement, notices counted by a no-op receiver,
                   then "done N"
  finish (untimed) stdin closed: PQfinish, exit, reaped

The process stays alive until the probes have stopped, so its backend is measured as the
server (a live process: exact CPU) and the driver itself as a client process
(Target.extra["client_pids"]); its TCP socket is duplicated into the worker
(pidfd_getfd) so the net probe sees the bytes and segments on the wire.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ...drivers import session_storm as session_storm_base
from ..local.storm_client import driver_failure, stderr_of, steal_socket

C_SOURCE = r"""
#include <stdio.h>
#include <poll.h>
#include <libpq-fe.h>
#ifndef ENCBENCH_NO_OPENSSL
#include <openssl/ssl.h>
#endif

static long notices = 0;
static void on_notice(void *arg, const PGresult *res) { (void)arg; (void)res; notices++; }

static int fail(PGconn *c, const char *what) {
    fprintf(stderr, "%s: %s\n", what, PQerrorMessage(c));
    PQfinish(c);
    return 1;
}

/* The storm statement, its notices counted. With TLS, OpenSSL reads ahead (one read() brings in
   every record waiting on the socket, not two per record), so the client keeps up with the
   server; libpq's own wait only sees records already decrypted (SSL_pending), so this loop
   waits on the socket itself and only when OpenSSL holds nothing (SSL_has_pending). */
static int storm(PGconn *c, const char *sql) {
    void *ssl = NULL;
    int ok = 1;
#ifndef ENCBENCH_NO_OPENSSL
    ssl = PQsslStruct(c, "OpenSSL");
    if (ssl) SSL_set_read_ahead((SSL *) ssl, 1);
#endif
    if (!PQsendQuery(c, sql)) return 0;
    for (;;) {
        while (!PQisBusy(c)) {
            PGresult *r = PQgetResult(c);
            if (!r) return ok;
            if (PQresultStatus(r) != PGRES_COMMAND_OK) ok = 0;
            PQclear(r);
        }
        int pending = 0;
#ifndef ENCBENCH_NO_OPENSSL
        pending = ssl && SSL_has_pending((SSL *) ssl);
#endif
        if (!pending) {
            struct pollfd p = { PQsocket(c), POLLIN, 0 };
            if (poll(&p, 1, -1) < 0) return 0;
        }
        if (!PQconsumeInput(c)) return 0;
    }
}

/* --meter instructions: the marker statement the server's callgrind dumps at (meter.py) */
static int mark(PGconn *c, const char *sql) {
    PGresult *r;
    if (!sql) return 1;
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) { PQclear(r); return 0; }
    PQclear(r);
    return 1;
}

int main(int argc, char **argv) {
    char line[64];
    PGresult *r;
    PGconn *c;
    const char *marker = argc == 4 ? argv[3] : NULL;
    int i;
    if (argc != 3 && argc != 4) { fprintf(stderr, "usage: encbench-pg-storm SETUP_SQL STORM_SQL [MARKER_SQL]\n"); return 2; }
    c = PQconnectdb("");
    if (PQstatus(c) != CONNECTION_OK) return fail(c, "cannot connect");
    r = PQexec(c, argv[1]);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) return fail(c, "setup");
    PQclear(r);
    for (i = 0; i < 3; i++)  /* the markers' own cost, measured before the storm (meter.FRAMING_MARKS) */
        if (!mark(c, marker)) return fail(c, "marker");
    r = PQexec(c, "SELECT pid, ssl, coalesce(version, '-'), coalesce(cipher, '-'), coalesce(bits, 0) "
                  "FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) return fail(c, "pg_stat_ssl");
    printf("ready %s %s %s %s %s\n", PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2),
           PQgetvalue(r, 0, 3), PQgetvalue(r, 0, 4));
    fflush(stdout);
    PQclear(r);
    if (!fgets(line, sizeof line, stdin)) { PQfinish(c); return 3; }
    PQsetNoticeReceiver(c, on_notice, NULL);
    if (!mark(c, marker)) return fail(c, "marker");
    if (!storm(c, argv[2])) return fail(c, "storm");
    if (!mark(c, marker)) return fail(c, "marker");
    printf("done %ld\n", notices);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) { }
    PQfinish(c);
    return 0;
}
"""

NAME = "encbench-pg-storm"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "encbench" / "drivers"


def _include_dir() -> str | None:
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--includedir"], capture_output=True, text=True, timeout=30)
            if out.returncode == 0 and (Path(out.stdout.strip()) / "libpq-fe.h").exists():
                return out.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    for d in ("/usr/include/postgresql", "/usr/include"):
        if (Path(d) / "libpq-fe.h").exists():
            return d
    return None


def build() -> tuple[Path | None, str]:
    """(the driver binary, '') built or found in the cache; (None, why) when it cannot be built here."""
    digest = hashlib.sha256(C_SOURCE.encode()).hexdigest()[:12]
    binary = cache_dir() / f"{NAME}-{digest}"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary, ""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    include = _include_dir()
    if not cc or not include:
        return None, ("no C compiler" if not cc else "no libpq headers (libpq-fe.h)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    src = binary.with_suffix(f".{os.getpid()}.c")
    tmp = binary.with_suffix(f".{os.getpid()}.tmp")
    try:
        src.write_text(C_SOURCE)
        for flags in (["-lpq", "-lssl"], ["-DENCBENCH_NO_OPENSSL", "-lpq"]):  # without OpenSSL's headers: no read-ahead
            done = subprocess.run([cc, "-O2", "-o", str(tmp), str(src), f"-I{include}", *flags],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                break
        else:
            return None, "cannot build it: " + ((done.stderr.strip().splitlines() or ["?"])[-1])
        os.replace(tmp, binary)  # atomic: a concurrent build finds a whole file or none
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"cannot build it: {e}"
    finally:
        for p in (src, tmp):
            p.unlink(missing_ok=True)
    return binary, ""


def libpq_env(conninfo: dict, client_params: dict, appname: str) -> dict[str, str]:
    """The environment of a libpq client process: connection, TLS mode, application name.

    PG* variables the user set still apply (as for --dsn); what the DSN says wins. The
    worker's OPENSSL_CONF (a forced suite) is inherited.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PGSSL", "PGAPPNAME"))}
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"), ("dbname", "PGDATABASE"),
                     ("password", "PGPASSWORD")):
        if conninfo.get(key):
            env[var] = str(conninfo[key])
    env["PGAPPNAME"] = appname
    names = {"sslmode": "PGSSLMODE", "ssl_min_protocol_version": "PGSSLMINPROTOCOLVERSION",
             "ssl_max_protocol_version": "PGSSLMAXPROTOCOLVERSION"}
    for k, v in client_params.items():
        env[names[k]] = v
    return env


class NativeStorm(session_storm_base.DriverProcess):
    """One storm operation through the C driver: start() untimed, run() timed, finish() untimed."""

    def __init__(self, binary: Path, env: dict[str, str], setup_sql: str, storm_sql: str, marker_sql: str | None = None):
        self.binary, self.env, self.setup_sql, self.storm_sql = binary, env, setup_sql, storm_sql
        self.marker_sql = marker_sql  # --meter instructions: run before and after the storm (meter.py)
        self.proc: subprocess.Popen | None = None
        self.socket_fd: int | None = None
        self.state: dict = {}

    def start(self) -> dict:
        """Connected and waiting: the server's view of its connection (pg_stat_ssl), backend pid included."""
        argv = [str(self.binary), self.setup_sql, self.storm_sql] + ([self.marker_sql] if self.marker_sql else [])
        self.proc = subprocess.Popen(argv, env=self.env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        words = self._line().split()
        if len(words) != 6 or words[0] != "ready":
            self._fail("did not connect")
        pid, ssl, version, cipher, bits = words[1:]
        self.state = {"pid": int(pid), "ssl": ssl == "t", "version": None if version == "-" else version,
                      "cipher": None if cipher == "-" else cipher, "bits": int(bits) or None}
        self.socket_fd = steal_socket(self.proc.pid)
        return self.state

    def run(self) -> int:
        """The storm; returns the notices the driver received."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        words = self._line().split()
        if len(words) != 2 or words[0] != "done":
            self._fail("the storm failed")
        return int(words[1])

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            self._fail("exited")
        return line

    def _fail(self, what: str):
        raise driver_failure(f"the native storm driver {what}", stderr_of(self.proc, self.finish))


def unavailable_reason() -> str | None:
    """Why the native driver cannot be built here (None: it can); builds nothing."""
    if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
        return "no C compiler"
    return None if _include_dir() else "no libpq headers (libpq-fe.h)"


class SessionStorm(session_storm_base.SessionStorm):
    """A PgSession's storm through the native driver: its backend is the server target."""

    UNIT = "notices"
    CLIENT = "native (C, libpq)"

    def __init__(self, session, binary: Path, messages: int, send: bool):
        env = libpq_env(*session.libpq_params(), "encbench-storm")
        level = "notice" if send else "warning"
        loop = f"DO $$ BEGIN FOR i IN 1..{int(messages)} LOOP RAISE NOTICE 'x'; END LOOP; END $$"
        marker = (session.setup.get("meter") or {}).get("marker")  # --meter instructions: the driver marks
        super().__init__(session, NativeStorm(binary, env, f"SET client_min_messages = {level}", loop, marker),
                         messages, send)

    def target(self, state: dict):
        target = self.session.backend_target([state["pid"]])
        target.extra["socket_fds"] = [self.driver.socket_fd] if self.driver.socket_fd is not None else []
        target.extra["client_pids"] = [self.driver.proc.pid]
        return target


def session_storm(session, messages: int, send: bool) -> SessionStorm | None:
    """The native storm of a PgSession; None when the driver cannot be built here (Python drives it then)."""
    binary, _why = build()
    return SessionStorm(session, binary, messages, send) if binary else None

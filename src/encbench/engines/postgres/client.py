"""The PostgreSQL client side shared by the measured session, the wait sampler and the engine:
psycopg imported on demand, the connection parameters of a TLS variant and the check that the
server's view of a connection (pg_stat_ssl) agrees with it, the admin connection, and the
one-line reason a connection failed.

It imports nothing of encbench's engines, so every one of them can import it (no cycle).
"""

from __future__ import annotations

from ...errors import CheckFailedError, EngineUnavailableError
from ...host import sockets, sslctl
from ...vocab.tls import TLS_RE
from ...util.redact import redact
from ..local.server import runs_program


def psycopg():
    """The psycopg module, or a clear error where it is not installed."""
    try:
        import psycopg
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise EngineUnavailableError(f"psycopg is not importable ({e})", hint="pip install 'psycopg[binary]'") from None
    return psycopg


def offers(tls: str) -> bool:
    """Can libpq offer this tls= variant's suite at all (its own OpenSSL, its default security level)? True when
    no suite is forced or its library cannot be asked: the connection then says."""
    m = TLS_RE.match(tls)
    lib = _libssl() if m else None
    return lib is None or sslctl.offers(lib, m.group(1), m.group(2)) is not False


def _libssl() -> str | None:
    """The libssl libpq uses: psycopg's binary package bundles its own (loaded beside the system's one that
    Python's ssl uses), else the system's, found among the libraries this process has mapped."""
    pq = psycopg().pq
    pq.version()  # libpq (and its libssl) loaded
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "/libssl" in line})
    except OSError:
        return None
    bundled = [p for p in paths if "psycopg" in p]
    return (bundled or paths or [None])[0]


def client_params(tls: str) -> dict[str, str]:
    if tls == "off":
        return {"sslmode": "disable"}
    m = TLS_RE.match(tls)
    if not m:
        return {"sslmode": "require"}
    proto = m.group(1)
    return {"sslmode": "require", "ssl_min_protocol_version": proto, "ssl_max_protocol_version": proto}


# why resumed TLS sessions are absent from a PostgreSQL bill (estimate --live's sampler and calibrate alike)
NO_RESUMPTION = "PostgreSQL turns TLS session caching and tickets off: every TLS session is a full handshake"


def check_connection(state: dict, tls: str) -> None:
    """Fail loudly when the server's view of a connection differs from the variant."""
    want_ssl = tls != "off"
    problem = None
    if bool(state.get("ssl")) != want_ssl:
        problem = f"ssl={state.get('ssl')}"
    else:
        m = TLS_RE.match(tls)
        if m and (state.get("version") != m.group(1) or state.get("cipher") != m.group(2)):
            problem = f"{state.get('version')} {state.get('cipher')}"
    if problem:
        raise CheckFailedError(f"the server reports this connection as {problem}, not tls={tls}",
                               hint="the cipher was not negotiated as asked: check the server's ssl settings")


def conninfo_of(setup: dict) -> dict:
    return dict(setup["_conninfo"])


def first_line(e: Exception) -> str:
    return redact(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__)


def tool_error(text: str) -> str:
    """A PostgreSQL client tool's own words for what went wrong (pgbench, pg_dump), redacted, on one line: its first
    error line ('pgbench: error: query failed: ERROR: ...', the server's reason) with the detail line after it
    ('pgbench: detail: Query was: ...'; libpq's hint lines are left out), else its last line."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return "no output"
    at = next((i for i, line in enumerate(lines) if "error:" in line or "FATAL:" in line), None)
    if at is None:
        return redact(lines[-1])
    told = [lines[at]] + [line for line in lines[at + 1:at + 2] if "detail:" in line]
    return redact("; ".join(" ".join(line.split()) for line in told))


CONNECT_TIMEOUT_S = 10  # libpq connect_timeout: the whole connection attempt (docs/RESULTS.md)
NO_SERVER = ("timeout expired", "Connection refused", "could not translate host name", "No such file or directory")


def connect_admin(psycopg, conninfo: dict):
    last = None
    for sslmode in ("prefer", "disable"):
        try:
            return psycopg.connect(**{"connect_timeout": CONNECT_TIMEOUT_S, **conninfo}, sslmode=sslmode,
                                   autocommit=True, application_name="encbench-admin")
        except psycopg.OperationalError as e:
            last = e
            if any(s in str(e) for s in NO_SERVER):
                break  # no server answers there: without TLS it would not either (a second timeout)
    raise EngineUnavailableError(f"cannot connect to the PostgreSQL server: {first_line(last)}",
                                 hint="check --dsn (host, port, user, password) and that the server is running")


def is_local_postgres(pid: int) -> bool:
    """Is this pid a PostgreSQL server process on this machine (what the probes can read), run directly or under
    valgrind (`--meter instructions`: its comm is then the tool's and its command line names postgres)?"""
    return runs_program(pid, ("postgres",))


def server_sockets(conn):
    """(a host/sockets.SocketCounter of the server's TCP sockets, this connection left out; or None, why not): the
    bytes and messages a driver's connections carry, PostgreSQL 15 counting neither."""
    return sockets.for_server(int(conn.info.port), conn.pgconn.socket)

"""The MariaDB client side shared by the measured session, the private server, the select driver
and `estimate --live`: PyMySQL imported on demand, connections whose connect, greeting and login
are bounded, the one-line reason a connection failed, and TLS per variant (the client's context,
the server's view of it, and the check that both agree with the variant).

It imports nothing of encbench's engines, so every one of them can import it (no cycle).
"""

from __future__ import annotations

from ...errors import BadValueError, CheckFailedError, EngineUnavailableError
from ...util.redact import redact
from ...host import sslctl
from ...vocab.tls import forced, group_of


def pymysql():
    try:
        import pymysql as mod
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise EngineUnavailableError(f"PyMySQL is not importable ({e})", hint="pip install PyMySQL") from None
    return mod


def first_line(e: BaseException) -> str:
    text = str(e.args[1]) if len(getattr(e, "args", ())) > 1 else str(e)
    return redact(text.strip().splitlines()[0] if text.strip() else type(e).__name__)


# Connecting, the server's greeting and the login each get this long (docs/RESULTS.md). PyMySQL's
# connect_timeout bounds the TCP connect only: the greeting is a read without any timeout, so a
# port that accepts and never answers (or speaks another protocol) would block for ever.
CONNECT_TIMEOUT_S = 10
# client error codes (CR_*) that mean the server is not (or no longer) there
_UNREACHABLE = {2002: "no server on that socket", 2003: "nothing accepts connections there"}
_GONE = (2006, 2013, 2055)


def connect_bounded(params: dict, **kw):
    """A PyMySQL connection whose connect, greeting and login time out after CONNECT_TIMEOUT_S; the
    read/write timeouts are lifted once logged in (a measured query may take as long as it takes)."""
    my = pymysql()
    bounded = [k for k in ("read_timeout", "write_timeout") if k not in kw]
    kw.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    for k in bounded:
        kw[k] = kw["connect_timeout"]
    conn = my.connect(**params, **kw)
    for k in bounded:  # PyMySQL applies these before every later read/write (pinned in pyproject.toml)
        setattr(conn, f"_{k}", None)
    return conn


def unreachable(e: BaseException, where: str) -> str | None:
    """A one-line reason when a connection error means no MariaDB server answers at `where`, else None."""
    code = e.args[0] if getattr(e, "args", None) and isinstance(e.args[0], int) else None
    if code in _UNREACHABLE:
        return f"{_UNREACHABLE[code]} at {where}"
    if code in _GONE:
        if "timed out" in str(e):
            return (f"{where} sent no MySQL greeting within {CONNECT_TIMEOUT_S} s (a MariaDB server greets at "
                    "once: is this the port of another service?)")
        return f"{where} closed the connection before a MySQL greeting (not a MariaDB server, or one going down)"
    return None


def where_of(params: dict) -> str:
    return params.get("unix_socket") or f"{params.get('host', 'localhost')}:{params.get('port', 3306)}"


def tls_params(tls: str) -> dict:
    """PyMySQL arguments for a tls variant (off: no TLS at all; on: whatever is negotiated)."""
    if tls == "off":
        return {"ssl_disabled": True}
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # a private self-signed certificate; what is measured is the cipher
    f = forced(tls)
    if f:
        version = ssl.TLSVersion.TLSv1_2 if f[0] == "TLSv1.2" else ssl.TLSVersion.TLSv1_3
        ctx.minimum_version = ctx.maximum_version = version
        if f[0] == "TLSv1.2":  # Python sets its own TLS 1.2 cipher list on every context: narrow it here
            try:
                ctx.set_ciphers(f[1])
            except ssl.SSLError:
                raise BadValueError(f"tls={tls}: this client's OpenSSL does not know the suite {f[1]}",
                                    hint="`openssl ciphers -v` lists the suites it knows") from None
        else:
            _only_tls13_suite(ctx, f[1], tls)
        group = group_of(tls)
        if group:
            _only_group(ctx, group, tls)
    return {"ssl": ctx}


def _only_group(ctx, group: str, tls: str) -> None:
    """Offer one key-exchange group (SSL_CTX_set1_groups_list, through SSL_CTX_ctrl): the handshake then
    uses it or fails, so a completed connection used it."""
    if not sslctl.set_groups(ctx, group):
        raise BadValueError(f"tls={tls}: this client's OpenSSL does not know the group {group}",
                            hint="e.g. X25519, prime256v1, secp384r1, ffdhe2048")


def _only_tls13_suite(ctx, suite: str, tls: str) -> None:
    """Python's ssl has no way to choose TLS 1.3 suites (and OPENSSL_CONF is read once, when
    OpenSSL first starts in the process, often before us): call SSL_CTX_set_ciphersuites on
    the context's SSL_CTX (the first field after the object header), then check the context
    now offers exactly that suite. Never a silent fallback: an error if it does not."""
    def offered() -> list[str]:
        return [c["name"] for c in ctx.get_ciphers() if c.get("protocol") == "TLSv1.3"]

    if offered() == [suite]:
        return
    if not sslctl.set_tls13_suites(ctx, suite) or offered() != [suite]:
        raise BadValueError(f"tls={tls}: cannot make this client offer only {suite}",
                            hint="use a TLS 1.3 suite OpenSSL knows (TLS_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256, "
                                 "TLS_CHACHA20_POLY1305_SHA256)")


def check_tls_state(state: dict, tls: str) -> None:
    """Fail loudly when the server's view of a connection (Ssl_version, Ssl_cipher) differs from the variant."""
    problem = None
    if bool(state.get("cipher")) != (tls != "off"):
        problem = f"Ssl_cipher={state.get('cipher') or '(none)'}"
    else:
        f = forced(tls)
        if f and (state.get("version"), state.get("cipher")) != f:
            problem = f"{state.get('version')} {state.get('cipher')}"
    if problem:
        raise CheckFailedError(f"the server reports this connection as {problem}, not tls={tls}",
                               hint="the cipher was not negotiated as asked: check the server's ssl_cipher and tls_version")


def server_tls_state(cur) -> dict:
    cur.execute("SHOW SESSION STATUS WHERE Variable_name IN ('Ssl_version', 'Ssl_cipher')")
    got = dict(cur.fetchall())
    return {"ssl": bool(got.get("Ssl_cipher")), "version": got.get("Ssl_version") or None,
            "cipher": got.get("Ssl_cipher") or None, "bits": None}

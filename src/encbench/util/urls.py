"""The one reader of a server URL a user names (`--dsn mysql://...`, a tls-scan target, `--live`).

urllib's own parser raises a bare ValueError on an unclosed IPv6 bracket (`mysql://[::1`) or a port that is
not a number, and reads port 0 as "no port" (so the engine's default port would be used: a typo measuring
another server). Here each of those is one line (BadValueError, exit 4) naming the URL without its password,
and a port must be 1-65535.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from ..errors import BadValueError
from .redact import redact

PORT_RANGE = (1, 65535)


@dataclass(frozen=True)
class ServerURL:
    scheme: str
    hostname: str | None  # lower-cased, IPv6 without its brackets; None when the URL names no host
    port: int | None  # None: the URL names no port (the engine's default applies)
    username: str | None  # as written (percent-encoded)
    password: str | None
    query: str
    path: str


def split(text: str, *, what: str, hint: str = "") -> ServerURL:
    """`text` read as scheme://user:password@host:port/path?query; a one-line BadValueError for what urllib
    cannot read or a port outside 1-65535. `what` names the input in the message ("--dsn", "target")."""
    shown = redact(text)
    try:
        u: SplitResult = urlsplit(text)
        hostname = u.hostname
    except ValueError:  # 'Invalid IPv6 URL': a '[' without its ']' (or the reverse)
        raise BadValueError(f"{what} {shown!r} has an unclosed '[' around its IPv6 address",
                            hint=hint or "write an IPv6 host as [::1]:PORT") from None
    return ServerURL(u.scheme.lower(), hostname, _port(u, what, shown), u.username, u.password, u.query, u.path)


def _port(u: SplitResult, what: str, shown: str) -> int | None:
    netloc = u.netloc.rpartition("@")[2]
    written = netloc.rpartition("]")[2] if netloc.startswith("[") else netloc
    if ":" not in written:
        return None
    text = written.rpartition(":")[2]
    if text == "":
        return None  # 'host:' as urllib reads it: no port
    if not text.isdigit():
        raise BadValueError(f"{what} {shown!r} has a port that is not a number",
                            hint=f"use a port from {PORT_RANGE[0]} to {PORT_RANGE[1]}")
    return check_port(int(text), what=f"{what} {shown!r}")


def check_port(port: int, *, what: str) -> int:
    """A TCP port a server can listen on: 1-65535 (0 is no port: never read as "the default")."""
    if not PORT_RANGE[0] <= port <= PORT_RANGE[1]:
        raise BadValueError(f"{what}: port {port} is out of range ({PORT_RANGE[0]}-{PORT_RANGE[1]})",
                            hint="name the server's real port, or leave the port out for the engine's default")
    return port

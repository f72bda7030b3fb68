"""The key exchange group of a PostgreSQL server's TLS, proven from a handshake (the `ecdh_curve` variant key).

pg_stat_ssl says nothing of the group; libpq cannot tell it either. So each run makes one handshake of its own
before anything is measured: the SSLRequest, then TLS offering every group this client's OpenSSL knows
(sslctl.every_group), and reads the group the server chose (host/sslctl.negotiated_group). Before PostgreSQL 18 the
server accepts exactly the one curve of ssl_ecdh_curve, so that group is the one every connection of the run uses;
a server that did not take the setting (a reload that kept the old TLS context) shows its old group here, and the
run fails (CheckFailedError) rather than measure the wrong one.
"""

from __future__ import annotations

import socket
import ssl

from ...errors import CheckFailedError, EngineUnavailableError
from ...host import sslctl
from ..wire import postgres_preamble
from .client import CONNECT_TIMEOUT_S
from .knobs import CURVES, curve_setting


def handshake_group(conninfo: dict) -> str:
    """The group of one handshake with the server of `conninfo`: the SSLRequest, then TLS as negotiated offering
    every group this client's OpenSSL knows (sslctl.every_group), the group read from the finished handshake."""
    host = str(conninfo.get("hostaddr") or conninfo.get("host") or "127.0.0.1")
    port = int(conninfo.get("port") or 5432)
    if host.startswith("/"):
        raise EngineUnavailableError("ecdh_curve: the server is reached through a Unix socket, where there is no TLS",
                                     hint="give --dsn a TCP host (host=127.0.0.1)")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # the proof reads the group, not the certificate
    groups = sslctl.every_group()
    if not groups or not sslctl.set_groups(ctx, groups):
        raise EngineUnavailableError("ecdh_curve: this client's OpenSSL cannot tell which group a handshake used "
                                     "(OpenSSL 3 needed)", hint="drop --variant ecdh_curve")
    label = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as sock:
            postgres_preamble(sock, label)
            with ctx.wrap_socket(sock, server_hostname=None) as tls:
                group = sslctl.negotiated_group(tls)
    except (OSError, ssl.SSLError) as e:  # ConnectionError and timeouts are OSErrors
        raise EngineUnavailableError(f"ecdh_curve: the proof's TLS handshake with {label} failed: "
                                     f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    if not group:
        raise CheckFailedError("ecdh_curve: the group of the proof's handshake could not be read",
                               hint="drop --variant ecdh_curve: this client's OpenSSL does not say")
    return group


def check_group(conn, curve: str, negotiated: str) -> dict:
    """The server's setting (SHOW) and the group its handshake used, against the variant's curve: CheckFailedError
    when the handshake used another (the proof is the handshake; the setting is recorded beside it)."""
    setting = curve_setting(conn.info.server_version)
    try:
        shown = conn.execute(f"SHOW {setting}").fetchone()[0]
    except Exception:  # noqa: BLE001 - a role that may not read it: the handshake alone proves the group
        shown = None
    if negotiated.lower() != curve.lower():
        raise CheckFailedError(f"the server's TLS handshake uses {negotiated}, not ecdh_curve={curve} "
                               f"({CURVES.get(curve, curve)}; {setting} shows {shown})",
                               hint="the server did not take the setting: look at its log for the reload")
    return {"curve": curve, "setting": setting, "setting_shows": shown, "negotiated_group": negotiated,
            "proof": "one TLS handshake per run offering every group this client's OpenSSL knows"}

"""TLS variants shared by the server engines: off, on (as negotiated) or PROTOCOL:SUITE.

A forced suite is made the only one the client offers, through an OpenSSL config file
named by OPENSSL_CONF in the worker process before its first TLS connection (libpq and
Python's ssl module both read it when OpenSSL starts up in that process).
"""

from __future__ import annotations

import re

from ..errors import BadValueError

DEFAULT_TLS = (
    "off", "on",
    "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384",
    "TLSv1.2:ECDHE-RSA-AES256-SHA384",
    "TLSv1.2:ECDHE-RSA-CHACHA20-POLY1305",
    "TLSv1.3:TLS_AES_256_GCM_SHA384",
)
TLS_RE = re.compile(r"^(TLSv1\.[23]):([A-Za-z0-9_-]+)(?:@([A-Za-z0-9_-]+))?$")  # PROTOCOL:SUITE[@GROUP]


def check_tls(value: str) -> str:
    if value in ("off", "on") or TLS_RE.match(value):
        return value
    raise BadValueError(f"variant tls={value!r} is not off, on or PROTOCOL:SUITE[@GROUP]",
                        hint="e.g. tls=TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384 or tls=TLSv1.3:TLS_AES_256_GCM_SHA384@X25519")


def group_of(tls: str) -> str | None:
    """The key-exchange group a variant forces (tls=...@X25519), if any: the only one the client offers."""
    m = TLS_RE.match(tls)
    return m.group(3) if m else None


def forced(tls: str) -> tuple[str, str] | None:
    """(protocol, suite) of a forced-suite variant; None for off/on."""
    m = TLS_RE.match(tls)
    return (m.group(1), m.group(2)) if m else None


def openssl_client_conf(tls: str) -> str | None:
    """An OpenSSL config that makes the client offer only the variant's suite."""
    f = forced(tls)
    if not f:
        return None
    proto, suite = f
    line = f"Ciphersuites = {suite}" if proto == "TLSv1.3" else f"CipherString = {suite}"
    group = group_of(tls)
    if group:
        line += f"\nGroups = {group}"
    return ("openssl_conf = openssl_init\n[openssl_init]\nssl_conf = ssl_sect\n[ssl_sect]\n"
            f"system_default = system_default_sect\n[system_default_sect]\n{line}\n")

"""The database protocols' TLS preambles (tls-scan): what a client says on a plain socket before
the TLS handshake. PostgreSQL wants an SSLRequest; MariaDB/MySQL a TLS upgrade inside its own
handshake. Each engine points its `tls_preamble` here; `label` names the server in errors.
"""

from __future__ import annotations

import socket
import struct

from ..errors import EngineUnavailableError, NotADatabaseError, NoTLSError

PG_SSLREQUEST = struct.pack("!II", 8, 80877103)
MYSQL_CLIENT_SSL = 0x800
MYSQL_CLIENT_PROTOCOL_41 = 0x200


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buf += chunk
    return buf


def postgres_preamble(sock: socket.socket, label: str) -> None:
    sock.sendall(PG_SSLREQUEST)
    answer = recv_exact(sock, 1)
    if answer == b"N":
        raise NoTLSError(f"{label} answers the SSLRequest with 'N': the server has TLS off",
                            hint="set ssl=on (and a certificate) on the server")
    if answer != b"S":
        raise NotADatabaseError(f"{label} does not answer like a PostgreSQL server (got {answer!r})",
                                     hint="check the port, or use mysql:// for MariaDB/MySQL")


def mysql_preamble(sock: socket.socket, label: str) -> None:
    header = recv_exact(sock, 4)
    length = int.from_bytes(header[:3], "little")
    if length <= 0 or length > 1 << 16:
        raise NotADatabaseError(f"{label} does not answer like a MySQL/MariaDB server",
                                hint="check the port, or use postgresql:// for PostgreSQL")
    payload = recv_exact(sock, length)
    if payload[:1] == b"\xff":  # an error packet: e.g. host not allowed
        msg = payload[3:].decode(errors="replace").lstrip("#")[5:] if len(payload) > 3 else "?"
        raise EngineUnavailableError(f"{label} refused the connection: {msg}")
    if payload[:1] != b"\x0a":
        raise NotADatabaseError(f"{label} does not answer like a MySQL/MariaDB server (protocol {payload[:1]!r})",
                                hint="check the port, or use postgresql:// for PostgreSQL")
    try:
        end = payload.index(b"\x00", 1)  # server version, NUL-terminated
        pos = end + 1 + 4 + 8 + 1  # thread id, auth data part 1, filler
        caps = int.from_bytes(payload[pos:pos + 2], "little")
    except ValueError:
        raise NotADatabaseError(f"{label} sent a malformed MySQL handshake") from None
    if not caps & MYSQL_CLIENT_SSL:
        raise NoTLSError(f"{label} does not offer TLS (no CLIENT_SSL in its handshake)",
                            hint="configure ssl_cert and ssl_key on the server")
    flags = MYSQL_CLIENT_SSL | MYSQL_CLIENT_PROTOCOL_41
    body = struct.pack("<IIB", flags, 1 << 24, 33) + b"\x00" * 23
    sock.sendall(len(body).to_bytes(3, "little") + b"\x01" + body)

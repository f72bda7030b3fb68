"""The key-exchange groups of this client's OpenSSL (read from the library, never a list of ours), the group a
real handshake used, and tls-scan's groups by elimination against an in-process TLS endpoint (Python's ssl on
the server side) that speaks PostgreSQL's SSLRequest preamble."""

from __future__ import annotations

import socket
import ssl
import struct
import threading

import pytest

from encbench.engines.local import certs
from encbench.tls import scan as tlsscan
from encbench.host import sslctl

SSLREQUEST = struct.pack("!II", 8, 80877103)
TLS13_GROUPS = {"prime256v1", "secp384r1", "secp521r1", "X25519", "X448",
                "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"}


def test_library_groups_are_every_group_openssl_declares():
    groups = sslctl.library_groups()
    names = [g.name for g in groups]
    assert len(names) == len(set(names))  # one entry per group, aliases folded in
    by_name = {g.name: g for g in groups}
    assert "secp256r1" in by_name["prime256v1"].aliases and "P-256" in by_name["prime256v1"].aliases
    assert TLS13_GROUPS <= {g.name for g in groups if g.usable_in(ssl.TLSVersion.TLSv1_3)}
    assert not by_name["ffdhe6144"].usable_in(ssl.TLSVersion.TLSv1_2)  # OpenSSL: finite-field groups in TLS 1.3 only
    assert by_name["secp256k1"].usable_in(ssl.TLSVersion.TLSv1_2)
    assert not by_name["secp256k1"].usable_in(ssl.TLSVersion.TLSv1_3)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    assert all(sslctl.set_groups(ctx, n) for n in names)


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return certs.self_signed(tmp_path_factory.mktemp("cert"))


class Endpoint:
    """127.0.0.1:port answering PostgreSQL's SSLRequest with 'S', then a real TLS handshake whose server offers
    only `groups` (one connection at a time, on a thread); stop() ends it."""

    def __init__(self, cert, groups: str, maximum=ssl.TLSVersion.TLSv1_3):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(*cert)
        self.ctx.maximum_version = maximum
        assert sslctl.set_groups(self.ctx, groups)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                try:
                    if conn.recv(8) != SSLREQUEST:
                        continue  # not a PostgreSQL client (direct TLS): hang up, as PostgreSQL 15 does
                    conn.sendall(b"S")
                    with self.ctx.wrap_socket(conn, server_side=True):
                        pass
                except (OSError, ssl.SSLError):
                    pass

    def stop(self):
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        except OSError:
            pass
        self.listener.close()
        self.thread.join(timeout=10)


@pytest.mark.parametrize("protocol,group", [("TLSv1.3", "ffdhe6144"), ("TLSv1.3", "X25519"),
                                            ("TLSv1.2", "secp256k1"), ("TLSv1.2", "prime256v1")])
def test_negotiated_group_is_read_from_the_handshake(cert, protocol, group):
    server = Endpoint(cert, group)
    try:
        ep = tlsscan.Endpoint("postgres", "127.0.0.1", server.port)
        hs = tlsscan.handshake(ep, tlsscan.Offer(protocol=protocol, groups=group))
        assert hs.ok and hs.protocol == protocol, hs
        assert hs.group == group
        assert tlsscan.handshake(ep, tlsscan.Offer(protocol=protocol)).group == group  # every group offered
    finally:
        server.stop()


def test_groups_found_by_elimination(cert, monkeypatch):
    accepted = ["secp384r1", "X448", "ffdhe6144", "ffdhe8192"]
    server = Endpoint(cert, ":".join(accepted))
    try:
        ep = tlsscan.Endpoint("postgres", "127.0.0.1", server.port)
        p = tlsscan.ScanProgress()
        order = [g.name for g in sslctl.library_groups()]
        expected = sorted(accepted, key=order.index)  # reported in the library's order
        assert tlsscan.accepted_groups(ep, "TLSv1.3", p) == expected
        assert p.handshakes == len(accepted) + 1  # one per accepted group, and one that fails
        p = tlsscan.ScanProgress()
        assert tlsscan.accepted_groups(ep, "TLSv1.2", p) == ["secp384r1", "X448"]  # no finite-field group in 1.2
        assert p.handshakes == 3
        # a library that does not say which group a handshake used: each group offered alone
        monkeypatch.setattr(sslctl, "negotiated_group", lambda tls: None)
        p = tlsscan.ScanProgress()
        assert tlsscan.accepted_groups(ep, "TLSv1.3", p) == expected
        assert p.handshakes == 1 + len(tlsscan.client_groups("TLSv1.3"))
    finally:
        server.stop()


def test_offers_asks_the_library_what_a_client_would_put_in_its_hello():
    """tls-scan --measure (issue 28): a suite the client library cannot offer is marked, not measured."""
    import ssl

    lib = ssl._ssl.__file__  # links the system libssl
    assert sslctl.offers(lib, "TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384") is True
    assert sslctl.offers(lib, "TLSv1.3", "TLS_AES_256_GCM_SHA384") is True
    assert sslctl.offers(lib, "TLSv1.2", "NO-SUCH-SUITE") is False
    assert sslctl.offers(lib, "TLSv1.2", "TLS_AES_256_GCM_SHA384") is False  # a TLS 1.3 suite is no TLS 1.2 one
    assert sslctl.offers("/nonexistent/libssl.so", "TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384") is None

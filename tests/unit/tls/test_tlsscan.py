"""tls-scan's pure parts: targets, grades, baseline files and drift lines."""

from __future__ import annotations

import json

import pytest

from encbench.tls import baseline as tlsbaseline
from encbench.tls import scan as tlsscan
from encbench.errors import BadValueError, ResultFileError, SchemaVersionError


def test_targets():
    assert tlsscan.parse_target("postgresql://db1") == tlsscan.Endpoint("postgres", "db1", 5432)
    assert tlsscan.parse_target("mysql://u:p@db2:3307/x") == tlsscan.Endpoint("mysql", "db2", 3307)
    assert tlsscan.parse_target("mariadb://db3").port == 3306
    for bad in ("https://x", "db1:5432", "postgresql://h:port", "postgresql://[::1", "mysql://[::1:3306",
                "postgresql://localhost:0", "mysql://db1:0", "mysql://db1:65536"):
        with pytest.raises(BadValueError):
            tlsscan.parse_target(bad)


@pytest.mark.parametrize("suite,proto,letter", [
    ("TLS_AES_256_GCM_SHA384", "TLSv1.3", "A"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.2", "A"),
    ("ECDHE-RSA-CHACHA20-POLY1305", "TLSv1.2", "A"),
    ("ECDHE-RSA-AES256-SHA384", "TLSv1.2", "B"),
    ("ECDHE-RSA-AES256-SHA", "TLSv1.2", "C"),
    ("AES256-GCM-SHA384", "TLSv1.2", "C"),
    ("ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.1", "C"),
    ("DES-CBC3-SHA", "TLSv1.2", "F"),
    ("ECDHE-RSA-NULL-SHA", "TLSv1.2", "F"),
])
def test_grades(suite, proto, letter):
    assert tlsscan.grade(suite, proto)["grade"] == letter


def _scan(**over):
    base = {"kind": "encbench-tls-scan", "version": 1, "target": "postgres://h:1", "protocols": ["TLSv1.2", "TLSv1.3"],
            "suites": {"TLSv1.2": [{"suite": "A1"}, {"suite": "B1"}], "TLSv1.3": [{"suite": "T1"}]},
            "order": {"TLSv1.2": "server", "TLSv1.3": "server"}, "groups": ["X25519"],
            "certificate": {"sha256_fingerprint": "aa", "key_type": "RSA", "key_bits": 2048, "not_after": "2030-01-01"}}
    base.update(over)
    return base


def test_no_drift_when_equal():
    assert tlsbaseline.diff(_scan(), _scan(scanned_at="later", handshakes=9)) == []


def test_every_kind_of_drift_is_named():
    now = _scan(protocols=["TLSv1.3"], suites={"TLSv1.2": [{"suite": "B1"}, {"suite": "A1"}, {"suite": "C1"}],
                                                 "TLSv1.3": [{"suite": "T1"}]},
                groups=["X25519", "secp384r1"], certificate={"sha256_fingerprint": "bb", "key_type": "EC"})
    lines = tlsbaseline.diff(_scan(), now)
    assert "protocol removed: TLSv1.2" in lines
    assert "TLSv1.2: suite added: C1" in lines
    assert any(line.startswith("TLSv1.2: server preference changed") for line in lines)
    assert "group added: secp384r1" in lines
    assert any(line.startswith("certificate changed") for line in lines)
    who = tlsbaseline.diff(_scan(), _scan(order={"TLSv1.2": "client", "TLSv1.3": "server"}))
    assert who == ["TLSv1.2: the order is now the client's choice (was the server's)"]


def test_a_certificate_change_names_the_field_that_changed():
    """issue 30 item 7: not "RSA 2048 until 2026-11-30 -> RSA 2048 until 2026-11-30"."""
    cert = {"sha256_fingerprint": "aa" * 32, "key_type": "RSA", "key_bits": 2048, "not_after": "2026-11-30T00:00:00",
            "serial": "1a2b", "issuer": "CN=ca", "subject": "CN=db", "signature": "sha256"}

    def drift(**new):
        return tlsbaseline.diff(_scan(certificate=cert), _scan(certificate=dict(cert, **new)))

    assert drift() == []
    assert drift(sha256_fingerprint="bb" * 32, serial="3c4d") == ["certificate changed: serial 1a2b -> 3c4d"]
    assert drift(sha256_fingerprint="bb" * 32, issuer="CN=other ca") == [
        "certificate changed: issuer CN=ca -> CN=other ca"]
    assert drift(sha256_fingerprint="bb" * 32, key_type="EC prime256v1", key_bits=256, not_after="2027-01-31") == [
        "certificate changed: key RSA 2048 -> EC prime256v1 256; expiry 2026-11-30 -> 2027-01-31"]
    (line,) = drift(sha256_fingerprint="bb" * 32)  # nothing recorded tells them apart: the fingerprint does
    assert line == f"certificate changed: fingerprint {'aa' * 8}... -> {'bb' * 8}..."
    old = {k: v for k, v in cert.items() if k != "serial"}  # a baseline saved before the serial was recorded
    (line,) = tlsbaseline.diff(_scan(certificate=old), _scan(certificate=dict(cert, sha256_fingerprint="cc")))
    assert line == f"certificate changed: fingerprint {'aa' * 8}... -> cc"
    assert tlsbaseline.diff(_scan(certificate=None), _scan(certificate=cert)) == ["certificate changed: now presented"]


def test_the_scan_records_the_certificate_serial():
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "db")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(0xBEEF).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=30))
            .sign(key, hashes.SHA256()))
    got = tlsscan.certificate(cert.public_bytes(serialization.Encoding.DER))
    assert (got["serial"], got["key_type"], got["issuer"]) == ("beef", "EC secp256r1", "CN=db")


def test_baseline_files(tmp_path):
    path = tmp_path / "b.json"
    tlsbaseline.save(_scan(), path)
    assert tlsbaseline.load(path)["groups"] == ["X25519"]
    for text, err in (("{", ResultFileError), (json.dumps({"kind": "x"}), ResultFileError),
                      (json.dumps(_scan(version=9)), SchemaVersionError),
                      (json.dumps({k: v for k, v in _scan().items() if k != "order"}), ResultFileError)):
        path.write_text(text)
        with pytest.raises(err):
            tlsbaseline.load(path)
    with pytest.raises(ResultFileError):
        tlsbaseline.load(tmp_path / "missing.json")


def test_tls_variant_with_a_group():
    from encbench.vocab import tls

    assert tls.check_tls("TLSv1.3:TLS_AES_256_GCM_SHA384@X25519") == "TLSv1.3:TLS_AES_256_GCM_SHA384@X25519"
    assert tls.forced("TLSv1.3:TLS_AES_256_GCM_SHA384@X25519") == ("TLSv1.3", "TLS_AES_256_GCM_SHA384")
    assert tls.group_of("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384@prime256v1") == "prime256v1"
    assert tls.group_of("TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384") is None
    assert "Groups = X25519" in tls.openssl_client_conf("TLSv1.3:TLS_AES_256_GCM_SHA384@X25519")

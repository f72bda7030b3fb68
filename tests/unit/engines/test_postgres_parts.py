"""Unit tests of the PostgreSQL engine's pure parts and the server-side probes (no server)."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from encbench.engines.local import certs
from encbench.engines.local import ports
from encbench.engines.postgres import client as pg_client
from encbench.engines.postgres import engine as pg
from encbench.engines.postgres import pgbench
from encbench.errors import BadValueError, CheckFailedError
from encbench.probes import Target
from encbench.probes.net import NetProbe, tcp_counters
from encbench.probes.sysctx import SystemContextSwitchProbe
from encbench.probes.waits import WaitEventProbe, metric_name
from encbench.util.redact import redact
from encbench.vocab.tls import openssl_client_conf


@pytest.mark.parametrize("value", ["off", "on", "TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.3:TLS_AES_256_GCM_SHA384"])
def test_check_tls_accepts(value):
    assert pg.check_tls(value) == value


@pytest.mark.parametrize("value", ["yes", "TLSv1.1:AES128-SHA", "TLSv1.2:", "TLSv1.2:bad suite", "tls1.2:X"])
def test_check_tls_rejects(value):
    with pytest.raises(BadValueError):
        pg.check_tls(value)


def test_server_and_client_settings():
    assert pg.server_settings("on") is None and pg.server_settings("off") is None
    assert pg.server_settings("TLSv1.2:ECDHE-RSA-AES256-SHA384") == {
        "ssl_min_protocol_version": "TLSv1.2", "ssl_max_protocol_version": "TLSv1.2",
        "ssl_ciphers": "ECDHE-RSA-AES256-SHA384"}
    assert "ssl_ciphers" not in pg.server_settings("TLSv1.3:TLS_AES_256_GCM_SHA384")  # PG 15 cannot choose 1.3 suites
    assert pg_client.client_params("off") == {"sslmode": "disable"}
    assert pg_client.client_params("on") == {"sslmode": "require"}
    assert pg_client.client_params("TLSv1.3:TLS_AES_256_GCM_SHA384")["ssl_max_protocol_version"] == "TLSv1.3"


def test_openssl_client_conf_names_the_suite():
    assert openssl_client_conf("on") is None
    assert "CipherString = ECDHE-RSA-AES256-SHA384" in openssl_client_conf("TLSv1.2:ECDHE-RSA-AES256-SHA384")
    assert "Ciphersuites = TLS_CHACHA20_POLY1305_SHA256" in openssl_client_conf("TLSv1.3:TLS_CHACHA20_POLY1305_SHA256")


def test_check_connection():
    pg_client.check_connection({"ssl": False}, "off")
    pg_client.check_connection({"ssl": True, "version": "TLSv1.3", "cipher": "X"}, "on")
    pg_client.check_connection({"ssl": True, "version": "TLSv1.2", "cipher": "ECDHE-RSA-AES256-SHA384"},
                        "TLSv1.2:ECDHE-RSA-AES256-SHA384")
    with pytest.raises(CheckFailedError, match="ssl=False"):
        pg_client.check_connection({"ssl": False}, "on")  # never a TLS number measured on plaintext
    with pytest.raises(CheckFailedError):
        pg_client.check_connection({"ssl": True, "version": "TLSv1.2", "cipher": "ECDHE-RSA-AES256-GCM-SHA384"},
                            "TLSv1.2:ECDHE-RSA-AES256-SHA384")
    with pytest.raises(CheckFailedError):
        pg_client.check_connection({"ssl": True, "version": "TLSv1.3"}, "off")


def test_pgbench_latency_logs(tmp_path):
    (tmp_path / "rt.123").write_text("0 1 1500 0 1700000000 1\n0 2 2500 0 1700000000 2\n")
    (tmp_path / "rt.123.1").write_text("1 1 500 0 1700000000 3\n")
    (tmp_path / "other.1").write_text("0 1 99999 0 1 1\n")
    lat = sorted(pgbench.latencies(tmp_path, "rt"))
    assert lat == [0.5, 1.5, 2.5]
    assert pgbench.percentile(lat, 50) == 1.5
    assert pgbench.percentile([], 50) is None


def test_redact_hides_passwords():
    assert redact("postgresql://bob:s3cr3t@h:5432/db") == "postgresql://bob:<hidden>@h:5432/db"
    assert "s3cr3t" not in redact("encbench run --dsn 'host=h password=s3cr3t user=u'")
    assert redact("postgresql://h/db") == "postgresql://h/db"


@pytest.mark.parametrize("dsn,words", [
    ("postgresql://u:topsecret@localhost:0/db", "port 0 is out of range"),
    ("host=localhost port=0 password=topsecret", "port 0 is out of range"),
    ("postgresql://u:topsecret@h1:5432,h2:70000/db", "port 70000 is out of range"),
    ("postgresql://u:topsecret@[::1", "not a valid connection string"),
])
def test_a_dsn_with_no_usable_port_or_host_is_refused_in_one_line_before_a_connection(dsn, words):
    with pytest.raises(BadValueError) as e:
        pg.PostgresEngine().check_dsn(dsn)
    assert words in e.value.one_line() and "topsecret" not in e.value.one_line()
    pg.PostgresEngine().check_dsn("postgresql://u@[::1]:5433,h2/db")  # read, not connected


def test_free_port_is_below_the_ephemeral_range():
    lo, _ = ports.ephemeral_range()
    for _ in range(5):
        p = ports.free_port()
        assert p < lo and p >= ports.LOW and ports.is_free(p)


def test_self_signed_certificate(tmp_path):
    crt, key = certs.self_signed(tmp_path)
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert b"BEGIN CERTIFICATE" in crt.read_bytes() and b"PRIVATE KEY" in key.read_bytes()


def test_net_probe_counts_bytes_and_segments_of_a_tcp_socket():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    try:
        target = Target(pids=[os.getpid()], extra={"socket_fds": [client.fileno()]})
        p = NetProbe()
        p.start(target)
        for _ in range(10):
            peer.sendall(b"x" * 1000)
            client.recv(4096)
        client.sendall(b"y" * 500)
        peer.recv(4096)
        time.sleep(0.05)  # let the ACKs come back
        out = p.stop(target)
        assert out["net_bytes_received"] == 10_000
        assert out["net_bytes_sent"] == 500
        assert out["net_segments_in"] >= 10
    finally:
        for s in (client, peer, server):
            s.close()


def test_net_probe_records_nothing_without_sockets_or_on_a_unix_socket():
    a, b = socket.socketpair()
    try:
        assert tcp_counters(a.fileno()) is None
        p = NetProbe()
        t = Target(pids=[os.getpid()], extra={"socket_fds": [a.fileno()]})
        p.start(t)
        assert p.stop(t) == {}
    finally:
        a.close()
        b.close()


def test_sysctx_probe_counts_machine_context_switches():
    p = SystemContextSwitchProbe()
    t = Target(pids=[os.getpid()])
    p.start(t)
    for _ in range(50):
        time.sleep(0.001)
    assert p.stop(t)["system_ctx_switches"] >= 50


class _FakeSampler:
    def __init__(self):
        self.n = 0
        self.closed = False

    def sample(self):
        self.n += 1
        return ["Client/ClientWrite"] if self.n % 2 else ["CPU"]

    def close(self):
        self.closed = True


def test_wait_probe_reports_shares_and_closes_its_sampler():
    fake = _FakeSampler()
    t = Target(pids=[os.getpid()], extra={"wait_sampler": lambda: fake, "wait_interval_s": 0.005})
    p = WaitEventProbe()
    p.start(t)
    time.sleep(0.2)
    out = p.stop(t)
    assert fake.closed
    assert out["wait_samples"] >= 10
    shares = out[metric_name("Client/ClientWrite")] + out[metric_name("CPU")]
    assert shares == pytest.approx(1.0)
    assert 0.3 < out[metric_name("CPU")] < 0.7
    assert threading.active_count() >= 1 and not any(th.name == "encbench-wait-sampler" for th in threading.enumerate())


def test_wait_probe_without_sampler_records_nothing():
    p = WaitEventProbe()
    t = Target(pids=[os.getpid()])
    p.start(t)
    assert p.stop(t) == {}


class _BrokenSampler(_FakeSampler):
    def sample(self):
        if self.n >= 2:
            raise OSError("connection lost")
        return super().sample()


def test_wait_probe_failure_is_reported_not_swallowed():
    broken = _BrokenSampler()
    t = Target(pids=[os.getpid()], extra={"wait_sampler": lambda: broken, "wait_interval_s": 0.005})
    p = WaitEventProbe()
    p.start(t)
    time.sleep(0.1)
    with pytest.raises(RuntimeError, match="connection lost"):
        p.stop(t)
    assert broken.closed


# -- the restore journal (issue 11) ------------------------------------------------------------

def test_restore_journal_is_private_and_names_no_password(tmp_path, monkeypatch):
    from encbench.engines.local import restore_journal

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    j = restore_journal.new("postgres", {"host": "127.0.0.1", "port": 5432, "dbname": "app", "user": "bench",
                                         "password": "s3cret-pw"}, {"system_identifier": "7", "port": 5432})
    j.data["schema"] = "encbench_x"
    j.save()
    assert j.path.parent == tmp_path / "encbench" / "restore"
    assert oct(j.path.stat().st_mode & 0o777) == "0o600"
    assert oct(j.path.parent.stat().st_mode & 0o777) == "0o700"
    assert "s3cret-pw" not in j.path.read_text() and "bench@127.0.0.1:5432/app" in j.describe()
    assert restore_journal.existing("postgres", lambda data: True) == ([], [], [])  # our own: not "left behind"
    j.discard()
    j.discard()  # idempotent
    assert not j.path.exists()


def test_restore_journal_tells_left_behind_from_running_and_unreadable(tmp_path, monkeypatch):
    import json
    import subprocess

    from encbench.engines.local import restore_journal
    from encbench.util import proc

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    running = subprocess.Popen(["sleep", "30"])
    try:
        one = {"system_identifier": "1", "port": 1}
        for pid in (gone.pid, running.pid):
            j = restore_journal.new("postgres", {"host": "h", "port": 1}, one)
            j.path = j.path.with_name(f"{restore_journal.server_key('postgres', one)}-{pid}.json")
            j.data["owner"] = dict(j.data["owner"], **(proc.identity(pid) if pid == running.pid
                                                       else {"pid": pid, "start": "1"}))
            j.save()
        bad = restore_journal.directory() / f"{restore_journal.server_key('postgres', one)}-1.json"
        bad.write_text("{not json")
        other = restore_journal.new("postgres", {"host": "h", "port": 2}, {"system_identifier": "2", "port": 2})
        other.data["owner"]["pid"] = gone.pid  # another server's, left behind: not listed
        other.save()
        dead, live, unreadable = restore_journal.existing("postgres", lambda data: data["identity"] == one)
        assert [j.data["owner"]["pid"] for j in dead] == [gone.pid]
        assert [j.data["owner"]["pid"] for j in live] == [running.pid]
        assert unreadable == [str(bad)]
        assert json.loads(dead[0].path.read_text())["server"] == {"host": "h", "port": 1, "dbname": None, "user": None,
                                                                  "address": None}
    finally:
        running.kill()
        running.wait()


def test_pg_state_quotes_role_names_in_grants():
    from encbench.engines.postgres.state import quote_ident

    assert quote_ident("bench") == "bench"
    assert quote_ident("Bench User") == '"Bench User"'
    assert quote_ident('a"b') == '"a""b"'


def test_a_postmaster_that_is_exiting_is_not_running():
    """test_pg_server_log failed 1 in 5: a SIGKILLed postmaster had closed its socket (clients refused) but its stat
    still said 'S'; the exiting flag (PF_EXITING, stat field 9) tells it is dying."""
    from encbench.util.proc import stat_running

    line = b"123 (postgres) S 1 123 123 0 -1 %d 0 0 0 0 1 2 0 0 20 0 1 0 100 0 0"
    assert stat_running(line % 0x400000)
    assert not stat_running(line % (0x400000 | 0x4))
    assert not stat_running(b"123 (postgres) Z 1 123 123 0 -1 4194304 0")
    assert not stat_running(b"garbage")
    assert stat_running(open("/proc/self/stat", "rb").read())

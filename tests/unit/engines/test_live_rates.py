"""estimate --live (issue 31): each server engine's sampler turns two readings of its counters into the rate of
every bill term, and names the terms that do not apply (absent, never zero)."""

from __future__ import annotations

import pytest

from encbench.engines.mariadb import live as maria_live
from encbench.engines.postgres import live as pg_live


def test_the_live_samplers_turn_counters_into_rates_and_absent_terms():
    pg_facts = {"engine": "postgres", "version": "15.18 (Debian)", "page_size": 8192, "cipher": None, "ssl": True}
    first = {"blks_read": 100, "temp_bytes": 0, "sessions": 10, "buffers_written": 5, "wal_bytes": 1000, "now": 1000.0}
    last = dict(first, blks_read=300, sessions=30, wal_bytes=5000, now=1002.0)
    # seen by the polls: a long-lived plain session, and four new ones in the window, three on TLS
    seen = {(1, 500.0): False, (2, 1000.1): True, (3, 1000.5): True, (4, 1001.0): False, (5, 1001.5): True}
    got = pg_live.rates(first, last, 2.0, False, dict(pg_facts, seen=seen))
    assert got.rates["reads"][0] == 100 and got.rates["log_bytes"][0] == 2000 and got.rates["temp_bytes"][0] == 0
    assert got.rates["tls_handshakes"][0] == pytest.approx(10 * 0.75)  # new sessions x the new ones' share on TLS
    assert "4 sessions seen starting in the window" in got.rates["tls_handshakes"][1]
    only_old = pg_live.rates(first, last, 2.0, False, dict(pg_facts, seen={(1, 500.0): True, (2, 600.0): False}))
    assert only_old.rates["tls_handshakes"][0] == pytest.approx(10 * 0.5)  # none new: every session seen
    unseen = pg_live.rates(first, last, 2.0, False, pg_facts).rates["tls_handshakes"]
    assert unseen[0] is None and "--all-tls" in unseen[2]
    assert got.rates["tls_bytes"][0] is None and "--rate tls_bytes" in got.rates["tls_bytes"][2]
    assert set(got.absent) == {"tls_resumptions", "commits"}
    assert pg_live.rates(first, last, 2.0, True, pg_facts).rates["tls_handshakes"][0] == 10  # --all-tls
    off = pg_live.rates(first, last, 2.0, False, dict(pg_facts, ssl=False))
    assert {"tls_handshakes", "tls_bytes", "tls_records_in", "tls_records_out", "tls_resumptions", "commits"} == set(off.absent)

    m_facts = {"engine": "mariadb", "version": "10.11", "page_size": 16384, "cipher": "aes_ctr", "log_bin": False,
               "ssl": True, "encrypt_log": "ON", "encrypt_binlog": "ON"}
    a = {"Innodb_buffer_pool_reads": 0, "Innodb_pages_written": 0, "Innodb_os_log_written": 0,
         "Binlog_bytes_written": 0, "Ssl_finished_accepts": 50, "Ssl_session_cache_hits": 0, "Bytes_sent": 0,
         "Bytes_received": 0, "Questions": 0, "Connections": 100}
    b = dict(a, Innodb_buffer_pool_reads=40, Innodb_os_log_written=8000, Binlog_bytes_written=999,
             Ssl_finished_accepts=70, Ssl_session_cache_hits=4, Bytes_sent=4000, Questions=21, Connections=140)
    got = maria_live.rates(a, b, 4.0, False, m_facts)
    assert got.rates["reads"][0] == 10 and got.rates["log_bytes"][0] == 2000  # no binary log: redo only
    assert got.rates["tls_handshakes"][0] == pytest.approx((20 - 4) / 4) and got.rates["tls_resumptions"][0] == 1
    assert got.rates["tls_bytes"][0] == pytest.approx(1000 * 0.5)  # x 70 / 140 connections on TLS
    for name in ("tls_records_in", "tls_records_out"):  # Questions less this sampler's statement, assumed
        assert got.rates[name][0] == pytest.approx((21 - 1) / 4 * 0.5) and got.rates[name][1].startswith("assumed")
    assert set(got.absent) == {"temp_bytes", "commits"}
    assert maria_live.rates(a, b, 4.0, False, dict(m_facts, log_bin=True)).rates["log_bytes"][0] == (8000 + 999) / 4


def test_mariadb_prices_only_the_logs_it_encrypts():
    """A log written in the clear costs no encryption: the log term counts the redo log where innodb_encrypt_log=ON,
    the binary log where log_bin and encrypt_binlog=ON, and is absent (with the settings) where neither is."""
    f = {"engine": "mariadb", "version": "10.11", "page_size": 16384, "cipher": "aes_cbc", "ssl": False}
    a = {"Innodb_buffer_pool_reads": 0, "Innodb_pages_written": 0, "Innodb_os_log_written": 0,
         "Binlog_bytes_written": 0}
    b = dict(a, Innodb_os_log_written=8000, Binlog_bytes_written=4000)

    def log(**facts):
        got = maria_live.rates(a, b, 4.0, False, dict(f, **facts))
        return got.rates.get("log_bytes"), got.absent.get("log_bytes")

    assert log(log_bin=True, encrypt_log="ON", encrypt_binlog="OFF")[0][0] == 2000  # the redo only
    assert log(log_bin=True, encrypt_log="OFF", encrypt_binlog="ON")[0][0] == 1000  # the binary log only
    assert log(log_bin=False, encrypt_log="OFF", encrypt_binlog="ON") == \
        (None, "this server writes its logs in the clear (innodb_encrypt_log=OFF): no log byte is encrypted")
    rate, why = log(log_bin=True, encrypt_log="OFF", encrypt_binlog="OFF")
    assert rate is None and "innodb_encrypt_log=OFF, encrypt_binlog=OFF" in why


def _counter(*looks):
    from encbench.host.sockets import SocketCounter

    c = SocketCounter(5432, lambda: looks[min(c.looks, len(looks) - 1)])
    for _ in looks:
        c.sample()
    return c


def _sock(cookie, port, out, inn, so, si):
    from encbench.host.sockets import SockStat

    return SockStat((cookie, cookie), ("127.0.0.1", 5432), ("127.0.0.1", port), out, inn, so, si)


def test_postgres_tls_bytes_and_records_each_way_are_read_from_the_servers_sockets_by_session():
    pg_facts = {"engine": "postgres", "version": "15.18 (Debian)", "page_size": 8192, "cipher": None, "ssl": True}
    first = {"blks_read": 0, "temp_bytes": 0, "sessions": 10, "buffers_written": 0, "wal_bytes": 0, "now": 1000.0}
    last = dict(first, sessions=12, now=1002.0)
    # a TLS session (port 40001), a plain one (40002), and a new socket whose session no watch saw (40003)
    c = _counter([_sock(1, 40001, 0, 0, 0, 0), _sock(2, 40002, 0, 0, 0, 0)],
                 [_sock(1, 40001, 3000, 1000, 30, 10), _sock(2, 40002, 9000, 9000, 90, 90),
                  _sock(3, 40003, 400, 400, 4, 4)])
    seen = {(1, 900.0): True, (2, 900.0): False, (3, 1000.5): True, (4, 1001.0): False,
            "ends": {("127.0.0.1", 40001): True, ("127.0.0.1", 40002): False}, "unix": {4: 1001.0}}
    got = pg_live.rates(first, last, 2.0, False, dict(pg_facts, seen=seen, sockets=c)).rates
    # the TLS socket's 4,000 B and 40 segments, the unseen one's 800 B and 8 at the new sessions' share (1 of 2)
    assert got["tls_bytes"][0] == pytest.approx((4000 + 800 * 0.5) / 2)
    assert got["tls_records_in"][0] == pytest.approx((10 + 4 * 0.5) / 2)  # the segments the server received
    assert got["tls_records_out"][0] == pytest.approx((30 + 4 * 0.5) / 2)  # and sent
    assert "tcp_info" in got["tls_bytes"][1] and "not counted" in got["tls_bytes"][1]  # its blind spot stated
    every = pg_live.rates(first, last, 2.0, True, dict(pg_facts, seen=seen, sockets=c)).rates
    assert every["tls_bytes"][0] == pytest.approx((4000 + 18000 + 800) / 2)  # --all-tls: every socket
    # 6 sessions begun, 1 new socket seen, 1 over a Unix socket: 4 closed between two looks, their bytes uncounted
    lost = pg_live.rates(first, dict(last, sessions=16), 2.0, False, dict(pg_facts, seen=seen, sockets=c)).rates
    assert lost["tls_bytes"][0] is None and "4 of the 6 sessions" in lost["tls_bytes"][2]
    assert "lower bound" in lost["tls_bytes"][2] and "--rate tls_bytes" in lost["tls_bytes"][2]
    remote = pg_live.rates(first, last, 2.0, False, dict(pg_facts, seen=seen, sockets=None,
                                                           sockets_why="the server is not on this host")).rates
    assert remote["tls_records_in"][0] is None and "not on this host" in remote["tls_records_in"][2]


def test_mariadb_records_are_its_tls_bytes_times_the_sockets_records_each_way_per_byte():
    m_facts = {"engine": "mariadb", "version": "10.11", "page_size": 16384, "cipher": None, "log_bin": False,
               "ssl": True}
    a = {"Innodb_buffer_pool_reads": 0, "Innodb_pages_written": 0, "Innodb_os_log_written": 0,
         "Binlog_bytes_written": 0, "Ssl_finished_accepts": 50, "Ssl_session_cache_hits": 0, "Bytes_sent": 0,
         "Bytes_received": 0, "Questions": 0, "Connections": 100}
    b = dict(a, Bytes_sent=8000, Questions=21)
    c = _counter([_sock(1, 40001, 0, 0, 0, 0)], [_sock(1, 40001, 1500, 500, 15, 5)])  # 20 segments per 2,000 B
    got = maria_live.rates(a, b, 4.0, False, dict(m_facts, sockets=c)).rates
    assert got["tls_records_in"][0] == pytest.approx(8000 / 4 * 0.5 * 5 / 2000) and "TCP segments" in \
        got["tls_records_in"][1]
    assert got["tls_records_out"][0] == pytest.approx(8000 / 4 * 0.5 * 15 / 2000)
    none = maria_live.rates(a, b, 4.0, False, dict(m_facts, sockets=None, sockets_why="x")).rates["tls_records_in"]
    assert none[0] == pytest.approx((21 - 1) / 4 * 0.5) and none[1].startswith("assumed: Questions as requests")


def test_a_local_postgres_reads_are_priced_by_the_kernels_bytes_else_blks_read_with_why():
    """fscrypt decrypts what the kernel reads from storage: a local server's processes' /proc/PID/io bytes over the
    block size; without them (remote, not root) blks_read, saying why the kernel's bytes were not read."""
    facts = {"engine": "postgres", "version": "15.18", "page_size": 8192, "cipher": None, "ssl": False}
    first = {"blks_read": 100, "temp_bytes": 0, "sessions": 0, "buffers_written": 0, "wal_bytes": 0, "now": 0.0,
             "kernel_read_bytes": 1_000_000.0, "kernel_written_bytes": 0.0}
    last = dict(first, blks_read=900, kernel_read_bytes=1_000_000.0 + 2 * 8192 * 50)
    got = pg_live.rates(first, last, 2.0, False, dict(facts, kernel_io=4242)).rates["reads"]
    assert got[0] == pytest.approx(50) and "/proc/PID/io" in got[1] and got[2] is None
    remote = "the server does not run on this machine (or its postmaster is not visible from here)"
    plain = {k: v for k, v in first.items() if not k.startswith("kernel")}
    got = pg_live.rates(plain, dict(plain, blks_read=900), 2.0, False, dict(facts, kernel_io=remote)).rates["reads"]
    assert got[0] == 400 and "blks_read" in got[1] and remote in got[1]


class _Conn:
    def __init__(self, row):
        self.row, self.info = row, type("Info", (), {"backend_pid": 7})()

    def execute(self, sql, *a):
        return self

    def fetchone(self):
        return self.row


def test_the_kernels_bytes_are_read_only_for_a_server_of_this_machine(monkeypatch):
    import os

    import psutil

    from encbench.host import procio

    # a backend pid no process of this machine has: the server is elsewhere
    assert pg_live.kernel_source(_Conn((2**22 + 17, 0.0))).startswith("the server does not run on this machine")
    # this process as the "backend": its parent is no postmaster started when the server says
    assert pg_live.kernel_source(_Conn((os.getpid(), 0.0))).startswith("the server does not run")
    parent = psutil.Process(os.getppid())
    monkeypatch.setattr(pg_live, "is_local_postgres", lambda pid: pid == parent.pid)
    monkeypatch.setattr(procio, "cwd_fstype", lambda pid: "fuse.gocryptfs")
    assert "FUSE" in pg_live.kernel_source(_Conn((os.getpid(), parent.create_time())))
    monkeypatch.setattr(procio, "cwd_fstype", lambda pid: "ext4")
    assert pg_live.kernel_source(_Conn((os.getpid(), parent.create_time()))) == parent.pid
    monkeypatch.setattr(procio, "tree_io", lambda pid, skip=(): procio.TreeIo(8192, 4096, 2))
    assert pg_live.kernel_sample(parent.pid, _Conn(None)) == {"kernel_read_bytes": 8192.0,
                                                              "kernel_written_bytes": 4096.0}
    assert pg_live.kernel_sample(None, _Conn(None)) == {}

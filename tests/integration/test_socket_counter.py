"""Issue 31: the bytes and messages a PostgreSQL 15 server sends and receives (it counts neither), read from the
kernel's counters of its TCP sockets (host/sockets.py), on a real server: a client that moves a known number of
bytes over TLS and one over plain TCP; the counter sees at least those bytes and at most a stated overhead, and
`estimate --live`'s PostgreSQL sampler prices only the TLS one."""

from __future__ import annotations

import threading
import time

import pytest

from encbench.engines.postgres import live as pg_live
from encbench.engines.postgres.client import server_sockets
from integration_helpers import external_pg

pytestmark = pytest.mark.integration

ROWS_BYTES = 100_000  # each query's result: one text value of this many bytes
SENT_BYTES = 50_000  # each query's parameter: this many bytes to the server
QUERIES = 8
# what the protocol adds beyond the values themselves: startup, authentication (SCRAM), ParameterStatus, each
# query's Parse/Bind/Execute and RowDescription/DataRow/CommandComplete framing: a few kB; TLS adds its handshake
# (certificate included, a few kB) and 22 B per record of at most 16 kB (TLS 1.3)
PLAIN_OVERHEAD = 8_000
TLS_OVERHEAD = 16_000 + 22 * (QUERIES * (ROWS_BYTES + SENT_BYTES) // 16_000 + 4 * QUERIES)


def _traffic(conn) -> None:
    for _ in range(QUERIES):
        got = conn.execute("SELECT repeat('r', %s), length(%s)", (ROWS_BYTES, "s" * SENT_BYTES)).fetchone()
        assert len(got[0]) == ROWS_BYTES and got[1] == SENT_BYTES


def _port(conn) -> int:
    return int(conn.execute("SELECT inet_client_port()").fetchone()[0])


def test_the_servers_sockets_count_what_a_tls_and_a_plain_client_moved():
    import psycopg

    with external_pg() as server:
        observer = psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True)
        counter, why = server_sockets(observer)
        assert why is None, why
        counter.sample()
        clients = {mode: psycopg.connect(**server.conninfo(), sslmode=mode, autocommit=True)
                   for mode in ("require", "disable")}
        try:
            ports = {mode: _port(c) for mode, c in clients.items()}
            for c in clients.values():
                _traffic(c)
                # a window's last look is a full one (new sockets are found by a dump at most every DISCOVER_S; on a
                # quiet machine both clients connect and move their bytes well within that)
                counter.sample(full=True)
            moved = QUERIES * (ROWS_BYTES + SENT_BYTES)
            for mode, overhead in (("require", TLS_OVERHEAD), ("disable", PLAIN_OVERHEAD)):
                t = counter.totals(lambda f: f.remote[1] == ports[mode])
                assert t.sockets == 1 and moved <= t.bytes <= moved + overhead, (mode, t, moved, overhead)
                assert t.bytes_out >= QUERIES * ROWS_BYTES and t.bytes_in >= QUERIES * SENT_BYTES
                assert 2 * QUERIES <= t.messages <= 2 * QUERIES + (t.bytes // 16_000) * 2 + 40, (mode, t)
            assert counter.totals(lambda f: f.remote[1] == _port_of(observer)).sockets == 0  # its own: left out

            # estimate --live's sampler: the TLS client's bytes priced, the plain one's not
            sampler = pg_live.sampler(psycopg.connect(**server.conninfo(), sslmode="disable", autocommit=True))
            first = sampler.sample()
            t0 = time.monotonic()
            load = threading.Thread(target=lambda: [_traffic(c) for c in clients.values()])
            load.start()
            while load.is_alive() or time.monotonic() - t0 < 0.5:
                sampler.watch()
                sampler.look()
                time.sleep(0.02)
            load.join()
            sampler.look()
            last = sampler.sample()
            seconds = time.monotonic() - t0
            got = sampler.rates(first, last, seconds, False).rates
            sampler.close()
            tls_bytes = got["tls_bytes"][0] * seconds
            assert moved <= tls_bytes <= moved + TLS_OVERHEAD, (got["tls_bytes"], moved)
            assert got["tls_records_in"][0] > 0 and got["tls_records_out"][0] > 0 and "tcp_info" in got["tls_bytes"][1]
        finally:
            for c in clients.values():
                c.close()
            observer.close()


def _port_of(conn) -> int:
    from encbench.host.sockets import own_end

    return own_end(conn.pgconn.socket)[1]

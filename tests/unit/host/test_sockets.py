"""host/sockets.py (issue 31): the kernel's per-socket counters of a local server's connections, followed through a
window by each socket's identity; parsed from sock_diag's own bytes, and read on this machine's loopback."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from encbench.host import sockets
from encbench.host.sockets import SockStat, SocketCounter

PORT = 5432


def st(cookie, port=40000, out=0, inn=0, so=0, si=0, local_port=PORT) -> SockStat:
    return SockStat((cookie, 100 + cookie), ("127.0.0.1", local_port), ("127.0.0.1", port), out, inn, so, si)


class Looks:
    """A fake sampler: each call returns the next look's sockets."""

    def __init__(self, *looks):
        self.looks = list(looks)

    def __call__(self):
        return self.looks.pop(0)


def test_a_socket_closing_mid_window_keeps_what_its_last_look_saw_and_a_new_one_counts_from_zero():
    looks = Looks(
        [st(1, out=1000, inn=500, so=10, si=5), st(9, local_port=9999, out=7)],  # window start; another port
        [st(1, out=1600, inn=700, so=16, si=7), st(2, port=40002, out=300, inn=100, so=3, si=1)],
        [st(2, port=40002, out=900, inn=150, so=9, si=2)],  # socket 1 closed after the second look
        [st(2, port=40002, out=1000, inn=200, so=10, si=3)],
    )
    c = SocketCounter(PORT, looks)
    for _ in range(4):
        c.sample()
    t = c.totals()
    # socket 1: from its value at the window's start to its last look; socket 2: opened in the window, from 0
    assert (t.bytes_out, t.bytes_in) == (600 + 1000, 200 + 200) and t.bytes == 2000
    assert t.messages == (6 + 2) + (10 + 3) and t.sockets == 2 and t.new_sockets == 1
    assert c.totals(lambda f: f.remote[1] == 40002).bytes == 1200  # one client's connections only
    assert not t.notes


def test_a_wrapped_segment_counter_is_unwrapped_and_a_counter_that_went_back_counts_again_from_zero():
    near = sockets.U32 - 5
    looks = Looks([st(1, out=100, so=near, si=1)], [st(1, out=200, so=5, si=2)],  # 10 segments across the wrap
                  [st(1, out=50, so=3, si=1)])  # bytes went back: another socket under this identity
    c = SocketCounter(PORT, looks)
    c.sample()
    c.sample()
    assert c.totals().messages == 10 + 1 and c.totals().bytes == 100
    c.sample()
    t = c.totals()
    assert t.bytes == 100 + 50 and t.messages == 11 + 3 + 1 and "reset" in t.notes[0]


def test_a_kernel_without_data_segment_counters_gives_bytes_and_no_message_count():
    c = SocketCounter(PORT, Looks([st(1, out=10)], [SockStat((1, 101), ("127.0.0.1", PORT), ("127.0.0.1", 40000),
                                                             90, 0, None, None)]))
    c.sample()
    c.sample()
    t = c.totals()
    assert t.bytes == 80 and t.messages is None and "no message count" in t.notes[0]


def test_the_readers_own_connection_is_left_out_and_the_server_must_be_on_this_host():
    looks = [st(1, port=40000, out=10), st(2, port=40001, out=20)]
    c = SocketCounter(PORT, lambda: looks, exclude=[("::ffff:127.0.0.1", 40001)])  # an IPv4-mapped address
    c.sample()
    assert set(f.remote[1] for f in c.followed.values()) == {40000}
    assert sockets.local_to(PORT, ("127.0.0.1", 40001), lambda: looks)
    assert not sockets.local_to(PORT, ("10.0.0.5", 40001), lambda: looks)  # its end is another kernel's socket


def test_no_sock_diag_is_said_in_one_line_and_no_counter_is_made():
    def broken():
        raise PermissionError(13, "Permission denied")

    counter, why = sockets.for_server(PORT, None, broken)
    assert counter is None and "sock_diag" in why and "Permission denied" in why and "\n" not in why
    r, w = socket.socketpair()  # a reader over a Unix socket: on the server's host
    try:
        assert sockets.own_end(r.fileno()) is None
        counter, why = sockets.for_server(PORT, r.fileno(), lambda: [])
        assert counter is not None and why is None
    finally:
        r.close()
        w.close()


def test_a_follower_looks_in_its_own_thread_from_start_to_end_and_a_failing_look_is_said():
    calls = []
    c = SocketCounter(PORT, lambda: calls.append(threading.get_ident()) or [])
    with sockets.Follower(c, every=0.001) as f:
        deadline = time.monotonic() + 5
        while len(calls) < 4 and time.monotonic() < deadline:
            time.sleep(0.001)
    assert len(calls) >= 4 and calls[0] == calls[-1] == threading.get_ident()  # first and last look: this thread
    assert set(calls[1:-1]) - {threading.get_ident()}  # the looks between: another thread's
    assert sockets.run_fields(f, None)["server_net_sockets"] == 0

    def failing():
        if calls:
            raise OSError(1, "Operation not permitted")
        calls.append(1)
        return []

    calls.clear()
    with sockets.Follower(SocketCounter(PORT, failing), every=0.001) as f:
        time.sleep(0.05)
    assert "Operation not permitted" in sockets.run_fields(f, None)["server_net_why"]
    assert sockets.run_fields(sockets.Follower(None), "why not") == {"server_net_why": "why not"}


def _diag_message(cookie: int, inode: int, info: bytes) -> bytes:
    head = struct.pack("=BBBB", socket.AF_INET, 1, 0, 0)
    sockid = struct.pack("!HH16s16s", PORT, 40123, socket.inet_aton("127.0.0.1") + bytes(12),
                         socket.inet_aton("127.0.0.2") + bytes(12)) + struct.pack("=III", 0, cookie & 0xFFFFFFFF,
                                                                                   cookie >> 32)
    tail = struct.pack("=IIIII", 0, 0, 0, 0, inode)
    attr = struct.pack("=HH", 4 + len(info), sockets.INET_DIAG_INFO) + info
    return head + sockid + tail + attr + bytes(-len(attr) % 4)


def test_an_inet_diag_message_is_parsed_from_its_bytes():
    info = bytearray(232)
    struct.pack_into("=QQ", info, 120, 5_000_000_000, 1234)
    struct.pack_into("=II", info, 152, 7, 9)  # data_segs_in, data_segs_out
    struct.pack_into("=QQ", info, 200, 5_000_000_100, 100)  # bytes_sent, bytes_retrans: sent once = bytes_acked
    got = sockets.parse_message(_diag_message((3 << 32) | 5, 777, bytes(info)))
    assert got.ident == (3 << 32) | 5 and got.inode == 777 and got.local == ("127.0.0.1", PORT) and got.remote == ("127.0.0.2", 40123)
    assert (got.bytes_out, got.bytes_in, got.segs_out, got.segs_in) == (5_000_000_000, 1234, 9, 7)
    short = sockets.parse_message(_diag_message(1, 2, bytes(info[:144])))  # a kernel before 4.6: bytes_acked
    assert short.bytes_out == 5_000_000_000 and short.segs_out is None
    struct.pack_into("=QQ", info, 200, 6_000_000_100, 100)
    assert sockets.parse_message(_diag_message(1, 2, bytes(info))).bytes_out == 6_000_000_000
    assert sockets.parse_message(_diag_message(1, 2, b"")[:60]) is None


def test_this_kernels_counters_see_the_bytes_a_loopback_client_sends():
    """Real sockets: a server on a free loopback port; a client sends 200 kB in 100 writes, the server answers each
    with 10 bytes. The server's sockets counted from sock_diag: at least those bytes, and each write a segment."""
    why = sockets.available()
    if why:
        pytest.skip(why)
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    got = []

    def serve():
        conn, _ = srv.accept()
        with conn:
            left = 200_000
            while left > 0:
                data = conn.recv(65536)
                left -= len(data)
                got.append(len(data))
                conn.sendall(b"x" * 10)

    t = threading.Thread(target=serve)
    t.start()
    cli = socket.create_connection(("127.0.0.1", port))
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    counter = SocketCounter(port)
    counter.sample()
    for _ in range(100):
        cli.sendall(b"y" * 2000)
        cli.recv(65536)
        counter.sample()
    t.join(timeout=10)
    counter.sample()
    total = counter.totals()
    cli.close()
    srv.close()
    assert total.sockets == 1 and total.bytes_in == 200_000 and 10 * len(got) <= total.bytes_out <= 1000
    assert 100 <= total.messages <= 200 + len(got)
    assert total.messages == total.messages_in + total.messages_out and total.messages_in >= 1


def test_calibrate_fits_against_the_counted_bytes_and_messages_not_assumed_ones():
    from encbench.analysis.fit import _transit_counts

    counted = {"queries": 100, "tls_checked_connections": 1, "server_net_bytes": 25_000, "server_net_messages": 230,
               "server_net_messages_in": 110, "server_net_messages_out": 120}
    assert _transit_counts("roundtrip", {}, counted) == (100, {"tls_handshakes": 1, "tls_bytes": 25_000,
                                                               "tls_records_in": 110, "tls_records_out": 120})
    m = {"net_bytes_sent": 100, "net_bytes_received": 1_000_000, "net_data_segments_out": 2,
         "net_data_segments_in": 40}
    got = _transit_counts("bulk", m, {})[1]  # the client's socket: what it sent the server received
    assert (got["tls_records_in"], got["tls_records_out"]) == (2, 40)
    old = _transit_counts("roundtrip", {}, {"queries": 100})[1]  # a file from before: a request and a result assumed
    assert (old["tls_records_in"], old["tls_records_out"]) == (100, 100)


def test_between_dumps_only_the_followed_sockets_are_looked_up_and_a_socket_opened_since_is_found_at_the_end():
    clock = [0.0]
    dumps, probes = [], []
    state = {1: st(1, out=100), 2: st(2, port=40002, out=5)}

    def dump():
        dumps.append(clock[0])
        return list(state.values())

    def probe(raw):
        probes.append(raw)
        return next((s for s in state.values() if s.raw == raw), None)

    for k, v in list(state.items()):
        state[k] = SockStat(v.ident, v.local, v.remote, v.bytes_out, v.bytes_in, v.segs_out, v.segs_in, 0, bytes([k]))
    c = SocketCounter(PORT, dump, probe=probe, discover_s=0.1, clock=lambda: clock[0])
    c.sample(full=True)
    grow = lambda k, n: SockStat(state[k].ident, state[k].local, state[k].remote, n, 0, 0, 0, 0, state[k].raw)  # noqa: E731
    clock[0] = 0.02
    state[1] = grow(1, 400)
    del state[2]  # closed: its lookup finds nothing, and it is never looked up again
    state[3] = SockStat(3, ("127.0.0.1", PORT), ("127.0.0.1", 40003), 70, 0, 0, 0, 0, bytes([3]))
    c.sample()
    clock[0] = 0.04
    c.sample()
    assert dumps == [0.0] and len(probes) == 3  # two lookups, then one: socket 2 is gone
    c.sample(full=True)  # the window's last look: a dump finds socket 3, opened since
    t = c.totals()
    assert dumps == [0.0, 0.04] and t.bytes_out == 300 + 0 + 70 and t.new_sockets == 1

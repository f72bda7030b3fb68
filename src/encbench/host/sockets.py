"""Bytes and messages on a local server's TCP connections, from the kernel's own per-socket counters (issue 31).

A server that counts no bytes or messages sent to its clients (PostgreSQL 15) still has them counted by the kernel:
every TCP socket's `tcp_info` holds the bytes sent (`tcpi_bytes_sent` less `tcpi_bytes_retrans`, Linux 4.19+; before,
`tcpi_bytes_acked`, which lags by a delayed ACK), the bytes received
(`tcpi_bytes_received`) and the segments that carried data each way (`tcpi_data_segs_out` / `tcpi_data_segs_in`:
Linux 4.6+). They are read here for every socket of this host whose local port is the server's, through the
kernel's socket diagnostics (netlink sock_diag, `SOCK_DIAG_BY_FAMILY` dump of TCP over IPv4 and IPv6: what
`ss -tin` prints), read-only and with no privilege: any user may dump them (only `ss -p`, the owning process,
needs more). No external tool or library is needed.

What a figure means:
- bytes: what crossed the wire in both directions, TLS records and their headers included (not the IP/TCP headers);
- a message: one TCP segment that carried data, in either direction. With TCP_NODELAY (PostgreSQL and MariaDB set
  it) every flush of the server or the client leaves as one segment on a quiet connection, so it counts the
  requests and results each sent; a stream the receiver cannot keep up with coalesces into fewer, larger segments.
  TLS adds no segment of its own: one record per flush.

The bookkeeping (SocketCounter): sampled through the window, each socket followed by its identity (the kernel's
socket cookie, unique per boot; not its inode, which a socket gets only once the server accepts it), so a socket
that closes mid-window keeps the bytes seen at its last sample. New sockets are found by a dump (every socket of
the host walked) at most every `discover_s`; between dumps only the followed sockets are looked up, each by itself.
The blind spot, stated wherever a figure is used: what a socket does after its last look before it closes, and
connections that open and close between two dumps (never seen at all). A 32-bit segment counter that
wrapped between two samples is unwrapped; a counter that went back (another socket under a reused identity) counts
from 0 again, keeping what was seen before.

Where it applies: the server on this host, in this network namespace (its end of a connection is one of this
kernel's sockets); `ServerSockets.local_to` checks that on the reader's own connection. A remote server's sockets
are another kernel's: the counter cannot be read here.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
INET_DIAG_INFO = 2
# every TCP state that still holds a full socket with counters (not LISTEN 10, TIME_WAIT 6, CLOSE 7, NEW_SYN_RECV 12)
STATES = sum(1 << s for s in (1, 2, 3, 4, 5, 8, 9, 11))
_NLMSG = struct.Struct("=IHHII")
_REQ = struct.Struct("=BBBxI")  # inet_diag_req_v2: family, protocol, ext, pad, states; then the sockid
_SOCKID = struct.Struct("!HH16s16s")  # sport, dport, src, dst (network order); then if, cookie[2] native
_MSG_HEAD = struct.Struct("=BBBB")
_MSG_TAIL = struct.Struct("=IIIII")  # expires, rqueue, wqueue, uid, inode
_MSG_LEN = 4 + 48 + 20
# struct tcp_info (linux/tcp.h): u64 bytes_acked at 120, u64 bytes_received at 128, u32 data_segs_in at 152,
# u32 data_segs_out at 156, u64 bytes_sent at 200 and bytes_retrans at 208 (Linux 4.19+)
_BYTES = struct.Struct("=QQ")
_SEGS = struct.Struct("=II")
U32 = 1 << 32
UNAVAILABLE = "this kernel's socket diagnostics (netlink sock_diag) cannot be read here: {why}"


@dataclass(frozen=True)
class SockStat:
    """One TCP socket at one look: its identity, its ends, and its counters so far (segments None: a kernel before
    4.6)."""

    ident: object  # the kernel's socket cookie (unique per boot; (local, remote) where a kernel gives none)
    local: tuple  # (ip text, port)
    remote: tuple  # (ip text, port)
    bytes_out: int
    bytes_in: int
    segs_out: int | None
    segs_in: int | None
    inode: int = 0  # 0 until the server accepts it (a socket in the accept queue has no file): not its identity
    raw: bytes | None = None  # (family +) its sockid as the kernel gave it: what looks it up again by itself


def norm_ip(addr) -> str:
    """An address as text, an IPv4-mapped IPv6 address as its IPv4 (a server listening on :: sees IPv4 clients
    as ::ffff:a.b.c.d; pg_stat_activity and information_schema say it either way)."""
    ip = ipaddress.ip_address(str(addr).split("%")[0])
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def _request(family: int, seq: int, sockid: bytes = bytes(48), dump: bool = True) -> bytes:
    body = _REQ.pack(family, socket.IPPROTO_TCP, 1 << (INET_DIAG_INFO - 1), STATES if dump else 0xFFFFFFFF) + sockid
    flags = NLM_F_REQUEST | (NLM_F_DUMP if dump else 0)
    return _NLMSG.pack(_NLMSG.size + len(body), SOCK_DIAG_BY_FAMILY, flags, seq, 0) + body


def _addr(family: int, raw: bytes) -> str:
    return norm_ip(socket.inet_ntop(family, raw[:4] if family == socket.AF_INET else raw))


def parse_message(payload: bytes) -> SockStat | None:
    """One inet_diag_msg with its attributes -> SockStat (None: no tcp_info attribute, or one too short)."""
    if len(payload) < _MSG_LEN:
        return None
    family = payload[0]
    sport, dport, src, dst = _SOCKID.unpack_from(payload, 4)
    c0, c1 = struct.unpack_from("=II", payload, 4 + 36 + 4)
    inode = _MSG_TAIL.unpack_from(payload, 4 + 48)[4]
    off, info = _MSG_LEN, None
    while off + 4 <= len(payload):
        alen, atype = struct.unpack_from("=HH", payload, off)
        if alen < 4:
            break
        if atype == INET_DIAG_INFO:
            info = payload[off + 4:off + alen]
        off += (alen + 3) & ~3
    if info is None or len(info) < 136:
        return None
    acked, received = _BYTES.unpack_from(info, 120)
    if len(info) >= 216:  # sent once (bytes_sent less bytes_retrans): what bytes_acked lags by a delayed ACK
        sent, retrans = _BYTES.unpack_from(info, 200)
        acked = sent - retrans
    segs_in, segs_out = _SEGS.unpack_from(info, 152) if len(info) >= 160 else (None, None)
    local, remote = (_addr(family, src), sport), (_addr(family, dst), dport)
    cookie = c0 | (c1 << 32)
    return SockStat(cookie or (local, remote), local, remote, acked, received, segs_out, segs_in, inode,
                    bytes([family]) + payload[4:52])


def _dump_family(sock: socket.socket, family: int, seq: int) -> list[SockStat]:
    sock.send(_request(family, seq))
    return _replies(sock, family)


def _replies(sock: socket.socket, family: int, single: bool = False) -> list[SockStat]:
    """The kernel's answer: a dump's messages up to NLMSG_DONE; a lookup's one message (or its error)."""
    out: list[SockStat] = []
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + _NLMSG.size <= len(data):
            length, kind, _, _, _ = _NLMSG.unpack_from(data, off)
            if length < _NLMSG.size:
                return out
            if kind == NLMSG_DONE:
                return out
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", data, off + _NLMSG.size)[0]
                if err == -errno.ENOENT or (single and err == -errno.ESTALE):
                    return out  # no IPv6 in this kernel (a dump); the socket gone, or its 4-tuple another's (a lookup)
                raise OSError(-err, os.strerror(-err))
            got = parse_message(data[off + _NLMSG.size:off + length])
            if got is not None:
                out.append(got)
            off += (length + 3) & ~3
        if single:
            return out


def dump_tcp() -> list[SockStat]:
    """Every TCP socket of this network namespace with counters (IPv4 and IPv6); OSError where sock_diag cannot be
    read."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(5.0)
        return _dump_family(sock, socket.AF_INET, 1) + _dump_family(sock, socket.AF_INET6, 2)


def lookup(raw: bytes) -> SockStat | None:
    """One socket again, by its sockid (the kernel's hash lookup, not a walk of every socket: a dump walks the whole
    established table, some 3 ms of CPU here); None once it is gone."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(5.0)
        sock.send(_request(raw[0], 1, raw[1:], dump=False))
        got = _replies(sock, raw[0], single=True)
    return got[0] if got else None


def available(source: Callable[[], list[SockStat]] = dump_tcp) -> str | None:
    """None when the counters can be read here, else why not (one line)."""
    try:
        source()
    except (OSError, ValueError) as e:
        return UNAVAILABLE.format(why=getattr(e, "strerror", None) or e)
    return None


# -- the bookkeeping ---------------------------------------------------------------------------------------------

@dataclass
class Followed:
    """One socket followed through the window: its ends, and each counter's total since the window began (or
    since it opened, when it opened in the window)."""

    local: tuple
    remote: tuple
    last: SockStat
    bytes_out: int = 0
    bytes_in: int = 0
    segs_out: int | None = 0
    segs_in: int | None = 0
    resets: int = 0
    new: bool = False  # first seen after the window's first look: it opened in the window


@dataclass
class Totals:
    """What the followed sockets carried in the window: bytes and messages (data segments, None where the kernel
    has no such counter; `messages_in`: the segments the server received, its clients' requests; `messages_out`:
    those it sent), how many sockets, and the counting's notes."""

    bytes: int = 0
    bytes_out: int = 0
    bytes_in: int = 0
    messages: int | None = 0
    messages_in: int | None = 0
    messages_out: int | None = 0
    sockets: int = 0
    new_sockets: int = 0
    notes: list[str] = field(default_factory=list)


def _step(before: int | None, now: int | None, width: int | None) -> tuple[int | None, bool]:
    """A counter's growth between two looks: (growth, whether it went back). A 32-bit counter that went back
    wrapped (at most one wrap between looks: 4 billion segments in a sample interval is not a rate any server
    reaches); a 64-bit one that went back is another socket: it counts from 0 again."""
    if before is None or now is None:
        return None, False
    if now >= before:
        return now - before, False
    if width == 32:
        return now + U32 - before, False
    return now, True


class SocketCounter:
    """The server-side sockets of one local port, followed through a window.

    `sample()` at the window's start, at every look in between and at its end; `totals(which)` sums the sockets
    `which(followed)` picks (default every one). A socket seen at the first look counts from the value it had
    then; one first seen later opened in the window and counts from 0 (tcp_info counts from a socket's start, so
    finding it late loses nothing). `exclude` drops sockets by their remote end (the reader's own connection).

    A look walks every socket (`source`, a dump) at most every `discover_s`; in between it looks up only the sockets
    it follows, each by itself (`probe`, cheap): new sockets are found at the dumps' pace, and a socket's last count
    before it closes at the looks'. Without `probe` every look is a dump."""

    def __init__(self, port: int, source: Callable[[], list[SockStat]] = dump_tcp, exclude: Iterable = (),
                 probe: Callable[[bytes], SockStat | None] | None = None, discover_s: float = 0.0, clock=None):
        self.port, self.source = int(port), source
        self.probe = probe if probe is not None else (lookup if source is dump_tcp else None)
        self.discover_s, self.clock = discover_s, clock or time.monotonic
        self.exclude = {(norm_ip(a), int(p)) for a, p in exclude}
        self.followed: dict = {}
        self.gone: set = set()
        self.looks = 0
        self._dumped = None

    def _mine(self, s: SockStat) -> bool:
        return s.local[1] == self.port and (s.remote[0], s.remote[1]) not in self.exclude

    def _current(self, full: bool) -> list[SockStat]:
        now = self.clock()
        if full or self.probe is None or self._dumped is None or now - self._dumped >= self.discover_s:
            self._dumped = now
            return [s for s in self.source() if self._mine(s)]
        out = []
        for ident, f in self.followed.items():
            if ident in self.gone or f.last.raw is None:
                continue
            got = self.probe(f.last.raw)
            if got is None or got.ident != ident:
                self.gone.add(ident)
            else:
                out.append(got)
        return out

    def sample(self, full: bool = False) -> None:
        """One look; `full`: a dump whatever the pace (a window's first and last look: a socket opened since the
        last dump is found)."""
        now = self._current(full)
        first = self.looks == 0
        self.looks += 1
        for s in now:
            f = self.followed.get(s.ident)
            if f is None:
                base = s if first else SockStat(s.ident, s.local, s.remote, 0, 0, 0, 0)
                f = self.followed[s.ident] = Followed(s.local, s.remote, base, new=not first)
            self._advance(f, s)

    @staticmethod
    def _advance(f: Followed, s: SockStat) -> None:
        grow = {k: _step(getattr(f.last, k), getattr(s, k), 64 if k.startswith("bytes") else 32)
                for k in ("bytes_out", "bytes_in", "segs_out", "segs_in")}
        if any(back for _, back in grow.values()):  # another socket under this identity: from 0 again
            f.resets += 1
            grow = {k: (getattr(s, k), False) for k in grow}
        for k, (g, _) in grow.items():
            total = getattr(f, k)
            setattr(f, k, None if g is None or total is None else total + g)
        f.last = s

    def totals(self, which: Callable[[Followed], bool] | None = None) -> Totals:
        out = Totals()
        for f in self.followed.values():
            if which is not None and not which(f):
                continue
            out.sockets += 1
            out.new_sockets += f.new
            out.bytes_out += f.bytes_out
            out.bytes_in += f.bytes_in
            if out.messages is not None:
                if f.segs_out is None or f.segs_in is None:
                    out.messages = out.messages_in = out.messages_out = None
                else:
                    out.messages += f.segs_out + f.segs_in
                    out.messages_in += f.segs_in
                    out.messages_out += f.segs_out
        out.bytes = out.bytes_out + out.bytes_in
        resets = sum(f.resets for f in self.followed.values())
        if resets:
            out.notes.append(f"{resets} counter reset(s) seen (a socket's counters went back): counted from 0 again")
        if out.messages is None:
            out.notes.append("this kernel's tcp_info has no data segment counters (Linux 4.6+): no message count")
        return out


def blind_spot(discover_s: float, look_s: float) -> str:
    """The sampling's blind spot, in words."""
    return (f"the server's sockets found every {discover_s:g} s and each looked at every {look_s:g} s (tcp_info "
            f"through sock_diag): a connection that opens and closes between two finds is not counted, nor what one "
            f"sends after its last look")


def local_to(server_port: int, own_local: tuple, source: Callable[[], list[SockStat]] = dump_tcp) -> bool:
    """Whether the server is on this host: the server's end of the reader's own connection (`own_local`: the
    reader's local address and port) is one of this kernel's sockets."""
    ip, port = norm_ip(own_local[0]), int(own_local[1])
    return any(s.local[1] == server_port and s.remote == (ip, port) for s in source())


def own_end(sock_fd: int) -> tuple | None:
    """(local ip, local port) of a connected TCP socket by its file descriptor; None for a Unix socket."""
    try:
        with socket.socket(fileno=os.dup(sock_fd)) as s:
            if s.family not in (socket.AF_INET, socket.AF_INET6):
                return None
            name = s.getsockname()
    except OSError:
        return None
    return norm_ip(name[0]), int(name[1])


DISCOVER_S = 0.1  # a dump (every socket of the host walked: ~3 ms of CPU here) at most this often; lookups between
NOT_HERE = ("the server is not on this host (its end of this connection is not one of this kernel's sockets): its "
            "sockets' counters cannot be read here")


def for_server(port: int, own_fd: int | None, source: Callable[[], list[SockStat]] = dump_tcp,
               discover_s: float = DISCOVER_S) -> tuple[SocketCounter | None, str | None]:
    """A counter of the server's sockets on `port`, the reader's own connection (`own_fd`) left out, or why there
    is none: sock_diag unreadable, or the server on another host. A reader over a Unix socket is on the server's
    host."""
    why = available(source)
    if why:
        return None, why
    own = own_end(own_fd) if own_fd is not None else None
    if own is not None and not local_to(port, own, source):
        return None, NOT_HERE
    return SocketCounter(port, source, exclude=[own] if own else (), discover_s=discover_s), None


FOLLOW_S = 0.01  # how often a run's server sockets are looked at while its driver runs


class Follower:
    """The server's sockets looked at every `every` seconds in a thread of their own while a driver runs (`with
    Follower(counter): ...`), once at the start and once at the end: the looks cost the calling thread nothing (a
    workload's client CPU is that thread's and its children's)."""

    def __init__(self, counter: SocketCounter | None, every: float = FOLLOW_S):
        self.counter, self.every = counter, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def _look(self, full: bool = False) -> bool:
        try:
            self.counter.sample(full=full)
        except OSError as e:  # sock_diag failed mid-run: the count stops, and says so
            self.error = UNAVAILABLE.format(why=e.strerror or e)
        return self.error is None

    def _loop(self) -> None:
        while not self._stop.wait(self.every) and self._look():
            pass

    def __enter__(self) -> "Follower":
        if self.counter is not None:
            self.counter.sample(full=True)
            self._thread = threading.Thread(target=self._loop, name="encbench-sockets", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self.error is None:
                self._look(full=True)


def run_fields(follower: Follower, why: str | None, ports: Iterable[int] | None = None) -> dict:
    """A run's result fields: what the server's sockets carried while its driver ran (bytes and data segments both
    ways, the sockets followed and how many opened meanwhile), or why it was not counted. `ports`: only the sockets
    whose client end is one of these ports (the driver's connections, not an observer's)."""
    counter = follower.counter
    if counter is None or follower.error:
        return {"server_net_why": why or follower.error}
    keep = None if ports is None else set(ports)
    t = counter.totals(None if keep is None else (lambda f: f.remote[1] in keep))
    out = {"server_net_bytes": t.bytes, "server_net_bytes_sent": t.bytes_out, "server_net_bytes_received": t.bytes_in,
           "server_net_sockets": t.sockets, "server_net_new_sockets": t.new_sockets}
    if t.messages is not None:
        out.update(server_net_messages=t.messages, server_net_messages_in=t.messages_in,
                   server_net_messages_out=t.messages_out)
    if t.notes:
        out["server_net_notes"] = "; ".join(t.notes)
    return out

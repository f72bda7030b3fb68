from __future__ import annotations

import socket
import struct

from .base import Metric, Probe, Target

# struct tcp_info (linux/tcp.h): u64 tcpi_bytes_acked at 120, tcpi_bytes_received at 128,
# u32 tcpi_segs_out at 136, tcpi_segs_in at 140 (Linux 4.2+); u32 tcpi_data_segs_in at 152, tcpi_data_segs_out at
# 156 (Linux 4.6+: the segments that carried data, what host/sockets.py counts as messages on a server's sockets)
_TCP_INFO_LEN = 160
_LAYOUT = struct.Struct("<QQII")
_OFFSET = 120
_DATA_SEGS = struct.Struct("<II")
_DATA_OFFSET = 152


def tcp_counters(fd: int) -> tuple | None:
    """(bytes sent and acknowledged, bytes received, segments out, segments in, data segments out, data segments
    in) of a TCP socket (the last two None on a kernel before 4.6)."""
    try:
        with socket.socket(fileno=socket.dup(fd)) as s:
            if s.family not in (socket.AF_INET, socket.AF_INET6):
                return None  # a Unix socket has no TCP counters
            raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
    except OSError:
        return None
    if len(raw) < _OFFSET + _LAYOUT.size:
        return None
    data_in, data_out = _DATA_SEGS.unpack_from(raw, _DATA_OFFSET) if len(raw) >= _TCP_INFO_LEN else (None, None)
    return (*_LAYOUT.unpack_from(raw, _OFFSET), data_out, data_in)


class NetProbe(Probe):
    """Bytes and TCP segments on the client's own connections (getsockopt TCP_INFO).

    What crosses the wire, TLS records and headers included: the engine puts the client
    sockets' file descriptors in target.extra["socket_fds"]. Segments show the 'TCP
    storm': one small message per segment.
    """

    name = "net"
    description = "bytes and TCP segments sent/received on the client's connections (TCP_INFO)"
    metrics = (
        Metric("net_bytes_sent", "B", "bytes sent", resolution=1),
        Metric("net_bytes_received", "B", "bytes received", resolution=1),
        Metric("net_segments_out", "count", "segments sent", resolution=1),
        Metric("net_segments_in", "count", "segments received", resolution=1),
        Metric("net_data_segments_out", "count", "segments sent that carried data", resolution=1),
        Metric("net_data_segments_in", "count", "segments received that carried data", resolution=1),
    )

    def _read(self, target: Target) -> list[tuple] | None:
        fds = target.extra.get("socket_fds")
        if not fds:
            return None
        readings = [tcp_counters(fd) for fd in fds]
        return None if any(r is None for r in readings) else readings

    def start(self, target: Target) -> None:
        self._before = self._read(target)

    def stop(self, target: Target) -> dict[str, float]:
        after = self._read(target)
        if after is None or self._before is None:
            return {}
        names = [m.name for m in self.metrics]
        out = {names[i]: sum(a[i] - b[i] for a, b in zip(after, self._before)) for i in range(4)}
        if all(r[4] is not None for r in after + self._before):
            out.update({names[i]: sum(a[i] - b[i] for a, b in zip(after, self._before)) for i in (4, 5)})
        return out

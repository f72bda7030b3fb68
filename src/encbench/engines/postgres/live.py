"""estimate --live on PostgreSQL: the rate of each term of the encryption bill from the server's own statistics
views, read-only (SELECT and SHOW only: no setting, no reset, no table).

- page reads: on a server on this machine whose processes' /proc/PID/io this user may read, the bytes the kernel read
  from storage for them / the block size (what fscrypt decrypts: kernel_reads below); else
  pg_stat_database.blks_read (blocks read by backends from the OS cache or storage);
- page writes: pg_stat_bgwriter buffers_checkpoint + buffers_clean + buffers_backend (every dirty block written);
- log bytes: pg_stat_wal.wal_bytes;
- temporary file bytes: pg_stat_database.temp_bytes;
- new TLS sessions: pg_stat_database.sessions, times the share on TLS of the sessions seen starting in the window
  (pg_stat_activity and pg_stat_ssl polled every 0.2 s; else of every session seen);
- resumptions: absent (PostgreSQL turns TLS session caching and tickets off: every TLS session is a full handshake);
- bytes and records over TLS: PostgreSQL 15 counts neither, so they are read from the kernel's counters of the
  server's TCP sockets (host/sockets.py: tcp_info through sock_diag, every WATCH_S), each socket matched to its
  session by the client's address and port (pg_stat_activity.client_addr / client_port) and priced when that
  session is on TLS (pg_stat_ssl); a socket whose session was never seen (it lasted less than a look) at the share
  on TLS of the sessions. A record: a TCP segment that carried data, received by the server (its clients' requests:
  tls_records_in) or sent (tls_records_out), priced apart. Only where the server is on this host; a remote server's
  are given with --rate tls_bytes=... / tls_records_in=... / tls_records_out=....

At rest, PostgreSQL has no encryption of its own: the at-rest terms price a filesystem (fscrypt, gocryptfs) that
encrypts the data directory, whose reads, writes, WAL and temporary files all pass through it.
"""

from __future__ import annotations

from ...host import procio, sockets
from ...vocab.live import COMMITS_AS_LOG, LiveRates, LiveSampler, per_second
from .client import NO_RESUMPTION, is_local_postgres

_COUNTERS = (
    ("blks_read", "SELECT coalesce(sum(blks_read), 0) FROM pg_stat_database"),
    ("temp_bytes", "SELECT coalesce(sum(temp_bytes), 0) FROM pg_stat_database"),
    ("sessions", "SELECT coalesce(sum(sessions), 0) FROM pg_stat_database"),
    ("buffers_written", "SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter"),
    ("wal_bytes", "SELECT wal_bytes FROM pg_stat_wal"),
    ("now", "SELECT extract(epoch FROM now())"),
)
# every client session (other than this one) connected now, with its start and whether it is on TLS
WATCH = ("SELECT a.pid, extract(epoch FROM a.backend_start), coalesce(s.ssl, false), host(a.client_addr), "
         "a.client_port FROM pg_stat_activity a LEFT JOIN pg_stat_ssl s USING (pid) "
         "WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()")
TLS_RECORDS = ("tls_records_in", "tls_records_out")  # analysis/bill's names: received and sent by the server
NO_COUNTER = ("PostgreSQL {v} counts no bytes or records sent to clients, and {why}: give the rate with --rate "
              "{name}=RATE (e.g. from the server host's network counters)")


def facts(conn) -> dict:
    def show(name):
        return conn.execute(f"SHOW {name}").fetchone()[0]

    return {"engine": "postgres", "version": show("server_version"), "page_size": int(show("block_size")),
            "cipher": None, "ssl": show("ssl") == "on"}


def sample(conn) -> dict[str, float]:
    return {name: float(conn.execute(sql).fetchone()[0] or 0) for name, sql in _COUNTERS}


def watch(conn, seen: dict) -> None:
    """Each client session connected now: seen[(pid, start)] = on TLS; and its TCP end: seen["ends"][(client
    address, client port)] = on TLS, seen["unix"]: the starts of those over a Unix socket (no TCP end)."""
    ends, unix = seen.setdefault("ends", {}), seen.setdefault("unix", {})
    for pid, start, ssl, addr, port in conn.execute(WATCH).fetchall():
        seen[(pid, float(start))] = bool(ssl)
        if addr is not None and port is not None and int(port) > 0:
            ends[(sockets.norm_ip(addr), int(port))] = bool(ssl)
        else:
            unix[pid] = float(start)


def tls_share(first: dict, seen: dict) -> tuple[float | None, str]:
    """The share of sessions on TLS: of those seen starting in the window (pg_stat_ssl polled), else of every one
    seen connected; None when none was."""
    sessions = {k: v for k, v in seen.items() if k not in ("ends", "unix")}
    new = [ssl for (_, start), ssl in sessions.items() if start >= first["now"]]
    pool, which = (new, "sessions seen starting in the window") if new else (list(sessions.values()), "sessions seen")
    if not pool:
        return None, ""
    return sum(pool) / len(pool), f"{len(pool)} {which}"


def rates(first: dict, last: dict, seconds: float, all_tls: bool, f: dict) -> LiveRates:
    out = {
        "reads": kernel_reads(first, last, seconds, f),
        "writes": (per_second(first, last, "buffers_written", seconds),
                   "pg_stat_bgwriter buffers_checkpoint + buffers_clean + buffers_backend", None),
        "log_bytes": (per_second(first, last, "wal_bytes", seconds), "pg_stat_wal.wal_bytes", None),
        "temp_bytes": (per_second(first, last, "temp_bytes", seconds), "pg_stat_database.temp_bytes", None),
    }
    absent = {"tls_resumptions": NO_RESUMPTION, "commits": COMMITS_AS_LOG}
    if not f["ssl"] and not all_tls:
        absent.update({k: "ssl=off on this server (--all-tls prices TLS for every session)"
                       for k in ("tls_handshakes", "tls_bytes", *TLS_RECORDS)})
        return LiveRates(out, absent, f, seconds)
    share, pool = (1.0, "") if all_tls else tls_share(first, f.get("seen") or {})
    word = "every session priced as TLS (--all-tls)" if all_tls else (
        f"x {share:.0%} on TLS of {pool} (pg_stat_ssl, every {LiveSampler.WATCH_S:g} s)" if share is not None else "")
    sessions = per_second(first, last, "sessions", seconds)
    if share is None:
        out["tls_handshakes"] = (None, "pg_stat_database.sessions", "no client session was seen to read the "
                                 "share on TLS from pg_stat_ssl; --all-tls prices every session as TLS")
    else:
        out["tls_handshakes"] = (sessions * share, f"pg_stat_database.sessions {word}", None)
    out.update(socket_rates(first, last, f, share, all_tls, seconds))
    return LiveRates(out, absent, f, seconds)


def missed(first: dict, last: dict, seen: dict, counter) -> tuple[int, int]:
    """(sessions begun in the window whose socket no look saw, sessions begun): pg_stat_database.sessions' growth
    less the new sockets seen and the new sessions seen over a Unix socket (no socket to see)."""
    begun = int(round(last.get("sessions", 0) - first.get("sessions", 0)))
    unix = sum(1 for start in (seen.get("unix") or {}).values() if start >= first.get("now", 0))
    return max(0, begun - counter.totals().new_sockets - unix), begun


def socket_rates(first: dict, last: dict, f: dict, share: float | None, all_tls: bool, seconds: float) -> dict:
    """Bytes and records (received, sent) over TLS from the server's sockets: each socket's when its session is on TLS, a socket
    whose session was never seen at the share on TLS (every one with --all-tls). Not resolved where more than
    MISSED_OK of the sessions begun in the window closed unseen between two looks: their bytes are not counted."""
    counter, why = f.get("sockets"), f.get("sockets_why") or "no socket counter was set up"
    names = ("tls_bytes", *TLS_RECORDS)
    if counter is None:
        return {name: (None, "no counter", NO_COUNTER.format(v=f["version"].split()[0], why=why, name=name))
                for name in names}
    seen = f.get("seen") or {}
    ends = seen.get("ends") or {}
    tls = counter.totals(lambda s: all_tls or ends.get(s.remote) is True)
    unseen = counter.totals(lambda s: not all_tls and s.remote not in ends)
    where = (f"the server's TCP sockets (tcp_info via sock_diag): {tls.sockets} on TLS sessions (pg_stat_ssl)"
             if not all_tls else f"the server's TCP sockets (tcp_info via sock_diag): all {tls.sockets} (--all-tls)")
    if unseen.sockets:
        where += f", {unseen.sockets} whose session was not seen x {share or 0:.0%} on TLS"
    where += f"; {sockets.blind_spot(counter.discover_s, LiveSampler.LOOK_S)}"
    if unseen.sockets and share is None:
        return {name: (None, where, "sockets whose session was never seen, and no session to read the share on TLS "
                       "from; --all-tls prices every socket") for name in names}
    k = share or 0.0
    lost, begun = missed(first, last, seen, counter)
    if lost > max(MISSED_OK * begun, 1):
        counted = (tls.bytes + unseen.bytes * k) / seconds
        return {name: (None, where, f"{lost} of the {begun} sessions begun in the window (pg_stat_database.sessions) "
                       f"closed between two looks at the server's sockets (new ones found every "
                       f"{counter.discover_s:g} s): their bytes and records are not counted (those counted, "
                       f"{counted:,.0f} B/s, are a lower bound); give the rate with --rate {name}=RATE")
                for name in names}
    out = {"tls_bytes": ((tls.bytes + unseen.bytes * k) / seconds, where, None)}
    for name, way, word in (("tls_records_in", "messages_in", "received"), ("tls_records_out", "messages_out", "sent")):
        if getattr(tls, way) is None or getattr(unseen, way) is None:
            out[name] = (None, where, "; ".join(tls.notes + unseen.notes))
        else:
            out[name] = ((getattr(tls, way) + getattr(unseen, way) * k) / seconds,
                         f"TCP segments that carried data, {word} by the server, on {where}", None)
    return out


MISSED_OK = 0.05  # the share of a window's new sessions whose sockets may go unseen (its counters' timing)


class _Live:
    """The counters of the views and of the server's sockets, read together."""

    def __init__(self, conn):
        self.facts = facts(conn)
        port = int(conn.execute("SHOW port").fetchone()[0])
        self.facts["sockets"], self.facts["sockets_why"] = sockets.for_server(port, conn.pgconn.socket)

    def sample(self, conn) -> dict[str, float]:
        if self.facts["sockets"] is not None:
            self.facts["sockets"].sample(full=True)  # the window's first and last look: every socket
        return sample(conn)

    def look(self) -> None:
        if self.facts["sockets"] is not None:
            self.facts["sockets"].sample()


def sampler(conn) -> LiveSampler:
    live = _Live(conn)
    live.facts["kernel_io"] = kernel_source(conn)
    pm = live.facts["kernel_io"] if isinstance(live.facts["kernel_io"], int) else None
    return LiveSampler(conn, lambda c: {**live.sample(c), **kernel_sample(pm, c)}, rates, live.facts, watch,
                       live.look if live.facts["sockets"] else None)


# -- page reads as the kernel reads them (issue 31), kept apart from the statistics views above ------------------
# fscrypt decrypts what the kernel reads from storage, not what PostgreSQL counts as a block read (blks_read counts
# reads the OS cache served too); `calibrate` fits the read cost per page the kernel read (analysis/fit.Basis). On a
# server on this machine whose processes' /proc/PID/io can be read, the reads are those bytes / the block size
BLKS_READ_WORDS = ("pg_stat_database.blks_read (blocks read from the OS cache or storage: an upper bound on what a "
                   "filesystem decrypts where the OS cache serves them; the kernel's bytes were not read: {why})")
START_SLACK_S = 2.0  # the local postmaster's start time against pg_postmaster_start_time(): the same server


def kernel_source(conn) -> int | str:
    """The postmaster's pid when this server runs on this machine (the backend's parent, started when the server
    says it started) and its processes' I/O counters can be read on a filesystem the kernel reads through (not
    FUSE: gocryptfs's daemon does the reading); else why not, in words."""
    import psutil  # start-up: loaded only when a live server is sampled

    pid, started = conn.execute("SELECT pg_backend_pid(), extract(epoch FROM pg_postmaster_start_time())").fetchone()
    try:
        pm = psutil.Process(pid).ppid()
        same = is_local_postgres(pm) and abs(psutil.Process(pm).create_time() - float(started)) < START_SLACK_S
    except psutil.Error:
        same = False
    if not same:
        return "the server does not run on this machine (or its postmaster is not visible from here)"
    got = procio.tree_io(pm)
    if got.read_bytes is None:
        return got.why
    fstype = procio.cwd_fstype(pm)
    if fstype and fstype.startswith("fuse"):
        return f"its data directory is on {fstype} (a FUSE daemon reads it, not the server's processes)"
    return pm


def kernel_sample(pm: int | None, conn) -> dict[str, float]:
    """The kernel's bytes read and written for the server's processes so far ({} without a local postmaster)."""
    if pm is None:
        return {}
    got = procio.tree_io(pm, skip=(conn.info.backend_pid,))
    return {} if got.read_bytes is None else {"kernel_read_bytes": float(got.read_bytes),
                                              "kernel_written_bytes": float(got.written_bytes)}


def kernel_reads(first: dict, last: dict, seconds: float, f: dict) -> tuple:
    """The reads rate: the kernel's pages read for a local server's processes, else blks_read, saying why."""
    if "kernel_read_bytes" in first and "kernel_read_bytes" in last:
        return (per_second(first, last, "kernel_read_bytes", seconds) / f["page_size"],
                f"bytes the kernel read from storage for the server's processes (/proc/PID/io read_bytes of the "
                f"postmaster and its children) / {f['page_size']}: what a filesystem encrypting in the kernel decrypts",
                None)
    why = f.get("kernel_io") if isinstance(f.get("kernel_io"), str) else "the server's processes were not found"
    return per_second(first, last, "blks_read", seconds), BLKS_READ_WORDS.format(why=why), None

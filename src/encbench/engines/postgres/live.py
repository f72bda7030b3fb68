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
- bytes and messages over TLS: PostgreSQL 15 counts neither; given with --rate tls_bytes=... / tls_messages=....

At rest, PostgreSQL has no encryption of its own: the at-rest terms price a filesystem (fscrypt, gocryptfs) that
encrypts the data directory, whose reads, writes, WAL and temporary files all pass through it.
"""

from __future__ import annotations

from ...host import procio
from ...vocab.live import LiveRates, LiveSampler, per_second
from .client import is_local_postgres

_COUNTERS = (
    ("blks_read", "SELECT coalesce(sum(blks_read), 0) FROM pg_stat_database"),
    ("temp_bytes", "SELECT coalesce(sum(temp_bytes), 0) FROM pg_stat_database"),
    ("sessions", "SELECT coalesce(sum(sessions), 0) FROM pg_stat_database"),
    ("buffers_written", "SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter"),
    ("wal_bytes", "SELECT wal_bytes FROM pg_stat_wal"),
    ("now", "SELECT extract(epoch FROM now())"),
)
# every client session (other than this one) connected now, with its start and whether it is on TLS
WATCH = ("SELECT a.pid, extract(epoch FROM a.backend_start), coalesce(s.ssl, false) FROM pg_stat_activity a "
         "LEFT JOIN pg_stat_ssl s USING (pid) WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid()")
NO_COUNTER = ("PostgreSQL {v} counts no bytes or messages sent to clients: give the rate with --rate {name}=RATE "
              "(e.g. from the host's network counters)")


def facts(conn) -> dict:
    def show(name):
        return conn.execute(f"SHOW {name}").fetchone()[0]

    return {"engine": "postgres", "version": show("server_version"), "page_size": int(show("block_size")),
            "cipher": None, "ssl": show("ssl") == "on"}


def sample(conn) -> dict[str, float]:
    return {name: float(conn.execute(sql).fetchone()[0] or 0) for name, sql in _COUNTERS}


def watch(conn, seen: dict) -> None:
    for pid, start, ssl in conn.execute(WATCH).fetchall():
        seen[(pid, float(start))] = bool(ssl)


def tls_share(first: dict, seen: dict) -> tuple[float | None, str]:
    """The share of sessions on TLS: of those seen starting in the window (pg_stat_ssl polled), else of every one
    seen connected; None when none was."""
    new = [ssl for (_, start), ssl in seen.items() if start >= first["now"]]
    pool, which = (new, "sessions seen starting in the window") if new else (list(seen.values()), "sessions seen")
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
    absent = {"tls_resumptions": "PostgreSQL turns TLS session caching and tickets off: every TLS session is a "
                                 "full handshake"}
    if not f["ssl"] and not all_tls:
        absent.update({k: "ssl=off on this server (--all-tls prices TLS for every session)"
                       for k in ("tls_handshakes", "tls_bytes", "tls_messages")})
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
    for name in ("tls_bytes", "tls_messages"):
        out[name] = (None, "no counter", NO_COUNTER.format(v=f["version"].split()[0], name=name))
    return LiveRates(out, absent, f, seconds)


def sampler(conn) -> LiveSampler:
    f = facts(conn)
    f["kernel_io"] = kernel_source(conn)
    pm = f["kernel_io"] if isinstance(f["kernel_io"], int) else None
    return LiveSampler(conn, lambda c: {**sample(c), **kernel_sample(pm, c)}, rates, f, watch)


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


# `encbench calibrate` (analysis/calibration.py): the terms that never apply to PostgreSQL, and the ones its designed
# mixes do not fit, each with the run that would measure it
ABSENT = {"tls_resumptions": "PostgreSQL turns TLS session caching and tickets off: every TLS session is a full "
                             "handshake"}
NOT_FITTED = {"temp_bytes": "no calibrated mix spills to temporary files; what would measure it: encbench run "
                            "--engine postgres --workload sort --variant encryption=off,fscrypt (a per-byte cost is "
                            "not derived from it yet)"}
# the in-transit mixes' --variant filters (connect, bulk, roundtrip): TLS off and on, one client
TRANSIT_VARIANTS = ("tls=off,on", "clients=1")

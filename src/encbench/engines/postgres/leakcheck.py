"""leak-check of an existing PostgreSQL on this host (--dsn): where its files are, how the canary is
forced out, and its posture (--posture).

Community PostgreSQL has no encryption at rest (no TDE): table files, WAL, temporary files and logs
hold whatever is stored in plaintext unless the filesystem under them encrypts. So the places are
read from the server (data_directory, the WAL directory pg_wal wherever its symlink points, the log
directory when the logging collector writes one, every tablespace's location: temp_tablespaces and
default_tablespace among them), and the posture names the filesystem under each: a fscrypt policy
(FS_IOC_GET_ENCRYPTION_POLICY_EX), gocryptfs (FUSE), dm-crypt/LUKS (the device-mapper uuid), or an
encfs mount encbench made (host/encfs ledger).
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from pathlib import Path

from ...lab import leakcheck
from . import client
from . import state as pg_state
from .client import connect_admin, first_line

FIX = ("none in community PostgreSQL (no TDE): put the data directory, WAL and temporary tablespaces on an "
       "encrypted filesystem (LUKS/dm-crypt, fscrypt, gocryptfs); its cost: encbench run --engine postgres "
       "--variant encryption=off,fscrypt")
FS_IOC_GET_ENCRYPTION_POLICY_EX = 0xC0096616  # _IOWR('f', 22, __u8[9])


def _setting(conn, name: str, report=None):
    value = pg_state.read_setting(conn, name)
    if isinstance(value, pg_state.Denied):
        if report is not None:
            report.notes.append(f"{name} not readable by this role: {value.text()}")
        return None
    return value


def _tablespaces(conn) -> list[tuple[str, str]]:
    rows = conn.execute("SELECT spcname, pg_tablespace_location(oid) FROM pg_tablespace").fetchall()
    return [(name, loc) for name, loc in rows if loc]


def places(conn, report=None) -> list[tuple[Path, str]]:
    """(path, role) of every place the server writes data to, the data directory first; [] when this role
    may not learn where the data directory is (said in report.notes)."""
    datadir = _setting(conn, "data_directory", report)
    if datadir is None:
        return []
    out = [(Path(datadir), "data directory")]
    wal = Path(datadir) / "pg_wal"
    if wal.is_symlink():
        out.append((Path(os.path.realpath(wal)), "WAL"))
    if _setting(conn, "logging_collector") == "on":
        logdir = _setting(conn, "log_directory", report)
        if logdir:
            p = Path(logdir) if Path(logdir).is_absolute() else Path(datadir) / logdir
            out.append((p, "server log"))
    for name, loc in _tablespaces(conn):
        out.append((Path(loc), f"tablespace {name}"))
    return out


def leak_targets(conn, report) -> list[tuple[Path, str]]:
    """places(), the data directory's readability checked: what cannot be read is `unchecked`, not an error."""
    found = places(conn, report)
    if not found:
        report.notes.append("the data directory (table files, WAL) was not scanned, only the pg_dump output: its "
                            "location is not readable by this role")
    readable = []
    for path, role in found:
        if not path.exists():  # a server on another machine: its files are not here to scan
            report.unchecked.append(f"{path}: not checked (not on this machine: run leak-check on the server's host)")
        elif not os.access(path, os.R_OK | os.X_OK):
            report.unchecked.append(f"{path}: {leakcheck.NOT_CHECKED}")
        else:
            readable.append((path, role))
    return readable


def force_to_disk(conn, report, options: dict) -> None:
    """CHECKPOINT (the data pages to their files; needs pg_checkpoint or superuser: said when refused); with
    --allow-flush-logs also pg_switch_wal() (a new WAL segment: beyond encbench's schema)."""
    report.steps.append("INSERT 200 canary rows, committed (the WAL written and flushed at commit)")
    try:
        conn.execute("CHECKPOINT")
        report.steps.append("CHECKPOINT (the table's pages written to its files)")
    except Exception as e:  # psycopg.Error
        if not pg_state.is_denied(e):
            raise
        role = pg_state.quote_ident(pg_state.current_user(conn))
        report.steps.append(f"CHECKPOINT refused ({first_line(e)}; enable with: GRANT pg_checkpoint TO {role}): the "
                            "table's pages reach its files at the server's next checkpoint; the WAL is scanned as usual")
    if not options.get("allow_flush_logs"):
        return
    try:
        lsn = conn.execute("SELECT pg_switch_wal()").fetchone()[0]
        report.steps.append(f"SELECT pg_switch_wal() (--allow-flush-logs: a new WAL segment after {lsn})")
    except Exception as e:  # psycopg.Error
        if not pg_state.is_denied(e):
            raise
        report.steps.append(f"pg_switch_wal() refused ({first_line(e)}; enable with: GRANT EXECUTE ON FUNCTION "
                            "pg_switch_wal() TO the role)")


# -- posture --------------------------------------------------------------------------------

def _mount_of(path: Path) -> tuple[str, str, str]:
    """(source, mount point, fstype) of the filesystem holding path (the longest mount point prefix)."""
    from ...host.encfs import ledger

    real = os.path.realpath(path)
    best = ("?", "/", "?")
    for source, point, fstype in ledger.mounts():
        if (real == point or real.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[1]):
            best = (source, point, fstype)
    return best


def _fscrypt_policy(path: Path) -> bool | None:
    """True when path has a fscrypt policy, False when it has none, None when it cannot be asked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.ioctl(fd, FS_IOC_GET_ENCRYPTION_POLICY_EX, bytearray(struct.pack("Q", 24) + bytes(24)))
        return True
    except OSError as e:
        return False if e.errno in (errno.ENODATA, errno.ENOTTY, errno.EOPNOTSUPP) else None
    finally:
        os.close(fd)


def _dm_crypt(source: str) -> bool:
    try:
        dev = os.path.realpath(source)
        uuid = Path(f"/sys/block/{Path(dev).name}/dm/uuid").read_text().strip()
    except OSError:
        return False
    return uuid.startswith("CRYPT-")


def filesystem(path: Path) -> tuple[bool | None, str]:
    """(encrypted?, how the filesystem under path is described)."""
    from ...host.encfs import ledger

    source, point, fstype = _mount_of(path)
    ours = next((r["kind"] for r in ledger.records() for m in r.get("mounts", []) if m.get("point") == point), None)
    where = f"{fstype} at {point} ({source})" + (f", an encbench {ours} mount" if ours else "")
    if fstype == "fuse.gocryptfs":
        return True, f"{where}: gocryptfs"
    if _dm_crypt(source):
        return True, f"{where}: dm-crypt"
    policy = _fscrypt_policy(path)
    if policy:
        return True, f"{where}: fscrypt policy on {path}"
    if policy is None and path.exists():
        return None, f"{where}: fscrypt policy not readable here"
    return False, f"{where}: not encrypted"


def posture(info: dict) -> leakcheck.PostureReport:
    """info: the --dsn as psycopg connection arguments (engine._parse_dsn)."""
    psycopg = client.psycopg()
    conn = connect_admin(psycopg, info)
    try:
        rep = leakcheck.PostureReport("postgres", f"{conn.info.host}:{conn.info.port}")
        found = places(conn, rep)
        ssl = _setting(conn, "ssl")
        version = _setting(conn, "server_version")
    finally:
        conn.close()
    Item = leakcheck.PostureItem
    rep.items.append(Item("encryption at rest in the server", f"none: PostgreSQL {version} has no TDE", None))
    if not found:
        rep.items.append(Item("data directory", "location not readable by this role: the filesystem is unknown",
                              True, FIX))
    for path, role in found:
        if not path.exists():
            rep.items.append(Item(role, f"{path} is not on this machine: its filesystem is unknown", None))
            continue
        encrypted, how = filesystem(path)
        rep.items.append(Item(role, f"{path} on {how}", None if encrypted is None else not encrypted,
                              "" if encrypted else FIX))
    rep.items.append(Item("in transit (not at rest)", f"ssl={ssl}", None,
                          "ssl=on with a certificate" if ssl == "off" else ""))
    return rep

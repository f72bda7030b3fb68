"""leak-check of an existing PostgreSQL on this host (--dsn): where its files are, how the canary is
forced out, and its posture (--posture).

Community PostgreSQL has no encryption at rest (no TDE): table files, WAL, temporary files and logs
hold whatever is stored in plaintext unless the filesystem under them encrypts. So the places are
read from the server (data_directory, the WAL directory pg_wal wherever its symlink points, the log
directory when the logging collector writes one, every tablespace's location: temp_tablespaces and
default_tablespace among them), and the posture names the filesystem under each: a fscrypt policy
(FS_IOC_GET_ENCRYPTION_POLICY_EX), gocryptfs (FUSE), dm-crypt/LUKS (the device-mapper uuid), or an
encfs mount encbench made (host/encfs ledger). The data directory is read whole; a WAL directory elsewhere,
the log directory and a tablespace's location only for the server's own entries (by name and owner: a
log_directory of /var/log holds everyone's logs).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
import struct
import subprocess
from pathlib import Path

from ...errors import EngineUnavailableError, UsageError
from ...vocab import leakcheck
from ...util import interrupts
from . import client
from . import state as pg_state
from .client import connect_admin, first_line
from ...host.encfs import ledger

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


def log_names(log_filename: str | None) -> tuple[str, ...]:
    """The server log's file names as patterns, from log_filename (its strftime escapes as `*`); with .log, the
    csvlog and jsonlog files beside them (.csv, .json)."""
    name = re.sub(r"\*+", "*", re.sub(r"%.", "*", log_filename or "")) or "*"
    if name.endswith(".log"):
        return name, name[:-4] + ".csv", name[:-4] + ".json"
    return name, name + ".csv", name + ".json"


# A place's own names when the server may share its directory with others: the server's entries of it are read,
# the others skipped unopened (vocab/leakcheck.ScanTarget.names); the data directory is the server's whole.
WAL_NAMES = ("[0-9A-F]*", "archive_status", "summaries", "xlogtemp.*")  # segments, .history/.backup/.partial files
TABLESPACE_NAMES = ("PG_*",)  # a tablespace's location holds one PG_<version>_<catalog version> directory a server


def places(conn, report=None) -> list[tuple[Path, str]]:
    """(path, role) of every place the server writes data to, the data directory first; [] when this role
    may not learn where the data directory is (said in report.notes)."""
    return [(Path(t.path), t.role) for t in _places(conn, report)]


def _places(conn, report=None) -> list[leakcheck.ScanTarget]:
    datadir = _setting(conn, "data_directory", report)
    if datadir is None:
        return []
    try:
        owner = os.stat(datadir).st_uid  # the server's OS user: a shared directory's entries it owns are its own
    except OSError:
        owner = None
    out = [leakcheck.ScanTarget(datadir, "data directory", FIX)]
    wal = Path(datadir) / "pg_wal"
    if wal.is_symlink():
        out.append(leakcheck.ScanTarget(os.path.realpath(wal), "WAL", FIX, WAL_NAMES, owner))
    if _setting(conn, "logging_collector") == "on":
        logdir = _setting(conn, "log_directory", report)
        if logdir:
            p = Path(logdir) if Path(logdir).is_absolute() else Path(datadir) / logdir
            names = log_names(_setting(conn, "log_filename", report))
            out.append(leakcheck.ScanTarget(str(p), "server log", FIX, names, owner))
    for name, loc in _tablespaces(conn):
        out.append(leakcheck.ScanTarget(loc, f"tablespace {name}", FIX, TABLESPACE_NAMES, owner))
    return out

def leak_targets(conn, report) -> list[leakcheck.ScanTarget]:
    """The places to scan, the data directory first and each one's readability checked: what cannot be read is
    `unchecked`, not an error. The data directory is read whole (the server's own); a WAL directory elsewhere,
    the log directory and a tablespace's location only for the server's own entries (a log_directory of /var/log
    holds everyone's logs)."""
    found = _places(conn, report)
    if not found:
        report.notes.append("the data directory (table files, WAL) was not scanned, only the pg_dump output: its "
                            "location is not readable by this role")
    readable = []
    for t in found:
        path = Path(t.path)
        if not path.exists():  # a server on another machine: its files are not here to scan
            report.unchecked.append(f"{path}: not checked (not on this machine: run leak-check on the server's host)")
        elif not os.access(path, os.R_OK | os.X_OK):
            report.unchecked.append(f"{path}: {leakcheck.NOT_CHECKED}")
        else:
            readable.append(t)
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



SECRET_FIELDS = ("password", "sslpassword")  # never on a command line (process listings)


def dump_command(tool: str, conninfo: dict, table: str, out: Path, psycopg) -> tuple[list[str], dict]:
    """pg_dump's command line and environment: only the fields the DSN has, as a connection string (libpq's own
    PG* variables and defaults fill the rest, as they did for encbench's connection); the password in
    PGPASSWORD, never on the command line."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PGSSL")}
    given = {k: v for k, v in conninfo.items() if v not in (None, "") and k not in SECRET_FIELDS}
    if conninfo.get("password"):
        env["PGPASSWORD"] = str(conninfo["password"])
    where = ["-d", psycopg.conninfo.make_conninfo(**given)] if given else []
    return [tool, *where, "-t", table, "-f", str(out)], env


def pg_dump(bindir: Path | None, conninfo: dict, table: str, out: Path) -> None:
    """pg_dump of encbench's canary table into out (the private server's own pg_dump, else the one on PATH)."""
    tool = str(bindir / "pg_dump") if bindir is not None else (shutil.which("pg_dump") or "")
    if not tool or not os.access(tool, os.X_OK):
        raise EngineUnavailableError("pg_dump not found",
                                     hint="install the PostgreSQL client: apt-get install postgresql-client")
    argv, env = dump_command(tool, conninfo, table, out, client.psycopg())
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise EngineUnavailableError(f"pg_dump failed: {client.tool_error(done.stderr)}",
                                     hint="check that pg_dump reaches the server as --dsn does (PG* variables, "
                                          "~/.pgpass) and that the client is as new as the server")

# -- posture --------------------------------------------------------------------------------

def _mount_of(path: Path) -> tuple[str, str, str]:
    """(source, mount point, fstype) of the filesystem holding path (the longest mount point prefix)."""
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


def canary_check(options: dict, workdir: Path) -> leakcheck.LeakReport:
    """Community PostgreSQL has no encryption at rest: say so, and show where the canary lands (table files,
    WAL, a pg_dump). With --setting encryption=KIND: on a filesystem of that kind (atrest.leak_check)."""
    from . import atrest, external
    from . import server as pg_server

    if options.get("settings"):
        if options.get("dsn"):
            raise UsageError("leak-check --setting encryption=... runs a private cluster on a filesystem encbench "
                             "makes: not with --dsn", hint="drop --dsn")
        return atrest.leak_check(options["settings"], workdir)

    psycopg = client.psycopg()
    dsn = options.get("dsn")
    server = None if dsn else pg_server.start()
    conninfo = external.parse_dsn(psycopg, dsn) if dsn else server.conninfo()
    canary = leakcheck.new_canary()
    schema = f"encbench_leak_{secrets.token_hex(4)}"
    report = leakcheck.LeakReport("postgres", "community PostgreSQL (no encryption at rest exists to turn on)",
                                  len(canary))
    admin = journal = None
    try:
        admin = connect_admin(psycopg, conninfo)
        journal = external.open_journal(psycopg, admin, conninfo, managed=server is not None, reconfigure=False)
        targets = leak_targets(admin, report)
        blocker = pg_state.create_blocker(admin)
        if blocker:  # the canary lives in a schema of encbench's own, dropped after the check
            raise EngineUnavailableError(f"cannot create encbench's schema for its canary: {blocker.reason}",
                                         hint=f"enable with: {blocker.grant}; or use --posture (settings only)")
        journal.data["schema"] = schema
        journal.save()
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"CREATE TABLE {schema}.leak (v text NOT NULL)")
        admin.execute(f"INSERT INTO {schema}.leak SELECT %s || ' ' || i FROM generate_series(1, 200) i", (canary,))
        force_to_disk(admin, report, options)  # data pages to their files; the WAL has them
        dump = workdir / "backup.sql"
        pg_dump(server.bindir if server is not None else None, conninfo, f"{schema}.leak", dump)
        report.steps.append("scanned: " + ", ".join(leakcheck.target_text(t) for t in targets))
        dumped = leakcheck.ScanTarget(str(dump), "backup (pg_dump)", FIX)
        # encbench's own dump and the other places first, the data directory last: under the cap on what one
        # check reads (vocab/leakcheck.MAX_BYTES), a large data directory is what is left unread
        leakcheck.scan([dumped] + targets[1:] + targets[:1], canary, report)
        datadir = Path(targets[0].path) if targets else None
        for f in report.findings:
            rel = Path(f.path).relative_to(datadir).parts if datadir and f.path.startswith(str(datadir)) else ()
            f.role = {"base": "table data", "pg_wal": "WAL", "global": "global catalog"}.get(
                rel[0] if rel else "", f.role)
        report.notes.append("community PostgreSQL has no encryption at rest: the canary is stored in plaintext "
                            "wherever the table's data goes (table files, WAL, dumps)")
    finally:
        with interrupts.deferred():
            if admin is not None:
                admin.close()
            if journal is not None and server is None:
                external.restore(psycopg, conninfo, journal)
            if server is not None:
                server.stop()  # with everything in it
    return report

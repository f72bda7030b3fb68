"""leak-check of an existing MariaDB on this host (--dsn), and its static posture (--posture).

Existing server: where it keeps its files is read from the server itself (datadir, redo log dir, undo
dir, binlog basename, tmpdir, Aria log dir, the general/slow query logs when they go to files); the
canary goes into a schema of encbench's own (a table ENCRYPTED=YES when a key management plugin is
active), is forced to disk with what changes no configuration (commit; FLUSH TABLES t FOR EXPORT of
encbench's own table; with --allow-flush-logs also FLUSH BINARY LOGS / FLUSH ENGINE LOGS, which write
beyond that schema), every place is scanned (the data directory whole; elsewhere, as in a tmpdir of
/tmp, only the server's own files, by name and owner: everyone else's are counted as skipped, never
opened), the schema dropped. Nothing is restarted or SET.

Posture: the same settings read without touching any file: the key management plugin, which user
tables are encrypted (information_schema.INNODB_TABLESPACES_ENCRYPTION), redo/undo/binlog/temporary
files and tables/Aria, the query logs, key versions and rotation.
"""

from __future__ import annotations

import fnmatch
import os
import secrets
import subprocess
from pathlib import Path

from ...errors import EngineUnavailableError, UsageError
from ...vocab import leakcheck
from ...util.redact import redact
from .client import connect_bounded, first_line, pymysql, unreachable, where_of

LOCAL_HOSTS = ("127.0.0.1", "::1", "localhost")
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
ROWS = 200

# (server variable, role of the files there, the setting that would close a leak there, the names of the server's
# own files there: a directory the server may share with others is read only for these, `()`: all of it is its own)
DIRECTORIES = (
    ("datadir", "data directory", "", ()),
    ("innodb_log_group_home_dir", "redo log", "innodb_encrypt_log=ON", ("ib_logfile*",)),
    ("innodb_undo_directory", "undo log", "innodb_encrypt_tables=ON (undo tablespaces follow it)", ("undo*",)),
    # MariaDB 10.11's own temporary files: "#sql-temptable-<pid>-<thread>-<n>.MAD/.MAI/.MYD/.MYI" (internal and
    # CREATE TEMPORARY tables) and "#sql*" alike; the IO_CACHE files ("MY": sorts, "ML": the binary log cache, "ib":
    # InnoDB's) have no name at all where O_TMPFILE works and "MYxxxxxx"-like names (unlinked at once) elsewhere
    ("tmpdir", "temporary file", "encrypt_tmp_files=ON", ("#sql*", "ib*", "ML*", "MY*")),
    ("aria_log_dir_path", "Aria log", "aria_encrypt_tables=ON", ("aria_log*",)),
)

def check_local(params: dict, dsn: str) -> None:
    """Its files must be readable here: a server on this host (loopback or a unix socket)."""
    if params.get("unix_socket") or params.get("host") in LOCAL_HOSTS:
        return
    raise UsageError(f"leak-check --dsn reads the server's files: {redact(dsn)} is not on this host",
                     hint="run encbench on the server's machine with --dsn mysql://...@127.0.0.1/ "
                          "(or use --posture, which reads settings only)")


# which file holds what, and the setting that encrypts it
FILE_ROLES = (
    ("ib_logfile*", "redo log", "innodb_encrypt_log=ON"),
    ("binlog.*", "binary log", "encrypt_binlog=ON"),
    ("ibtmp*", "temporary tablespace", "innodb_encrypt_temporary_tables=ON"),
    ("ibdata*", "system tablespace", "innodb_encrypt_tables=ON"),
    ("undo*", "undo log", "innodb_encrypt_tables=ON (undo tablespaces follow it)"),
    ("*.ibd", "table data", "ENCRYPTED=YES on the table, or innodb_encrypt_tables=ON"),
    ("aria_log*", "Aria log", "aria_encrypt_tables=ON"),
    ("*.MA[DI]", "Aria table", "aria_encrypt_tables=ON"),
    ("#sql*", "temporary file", "encrypt_tmp_files=ON"),
)


def classify(path: Path) -> tuple[str, str]:
    for pattern, role, fix in FILE_ROLES:
        if fnmatch.fnmatch(path.name, pattern):
            return role, fix
    return "data directory", "see which object writes this file"


def _connect(params: dict):
    my = pymysql()
    try:
        return connect_bounded(params, autocommit=True)
    except my.err.MySQLError as e:
        why = unreachable(e, where_of(params))
        raise EngineUnavailableError(f"cannot connect to the MariaDB server: {why or first_line(e)}",
                                     hint="check --dsn (user, password, host, port) and that the server runs") from None


DENIED = (1044, 1045, 1142, 1227)  # ER_DBACCESS_DENIED, ER_ACCESS_DENIED, ER_TABLEACCESS_DENIED, ER_SPECIFIC_ACCESS


def _denied(e: BaseException) -> bool:
    return bool(getattr(e, "args", None)) and e.args[0] in DENIED


def _optional(cur, report, sql: str, done: str, refused: str) -> None:
    """A forcing step the DSN's user may lack the privilege for: named as taken, or as refused and why."""
    my = pymysql()
    try:
        cur.execute(sql)
        report.steps.append(done)
    except my.err.MySQLError as e:
        if not _denied(e):
            raise
        report.steps.append(f"{sql} refused ({first_line(e)}): {refused}")


def _variables(cur) -> dict[str, str]:
    cur.execute("SHOW GLOBAL VARIABLES")
    return {k.lower(): v for k, v in cur.fetchall()}


def _plugins(cur) -> list[str]:
    cur.execute("SELECT PLUGIN_NAME FROM information_schema.PLUGINS WHERE PLUGIN_TYPE = 'ENCRYPTION' "
                "AND PLUGIN_STATUS = 'ACTIVE'")
    return [r[0] for r in cur.fetchall()]


def _on(v: dict, name: str) -> bool:
    return str(v.get(name, "")).upper() in ("ON", "1", "FORCE", "YES")


def _under(base: str, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path(base) / p


def _owner(path: str) -> int | None:
    """The uid owning the data directory: the server's OS user (None when it cannot be read)."""
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def _merge(out: list[leakcheck.ScanTarget]) -> list[leakcheck.ScanTarget]:
    """One target per place, naming every role it holds; read whole when any of them is (the data directory),
    else for the union of the server's names."""
    merged: dict[str, leakcheck.ScanTarget] = {}
    for t in out:
        key = os.path.realpath(t.path)
        if key not in merged:
            merged[key] = leakcheck.ScanTarget(t.path, t.role, t.fix, t.names, t.owner)
            continue
        m = merged[key]
        m.role += f", {t.role}"
        m.names = m.names and t.names and tuple(dict.fromkeys(m.names + t.names))
    # most specific first: a directory inside another is scanned for its own role
    return sorted(merged.values(), key=lambda t: -len(Path(t.path).parts))


def scan_targets(v: dict) -> list[leakcheck.ScanTarget]:
    """The server's own file locations, most specific first (a file counts once, for its first role). The data
    directory is the server's whole; elsewhere (a tmpdir of /tmp, a binary log in /var/log) only the server's
    own files, by name and owner, are read."""
    datadir = v["datadir"]
    owner = _owner(datadir)
    out = []
    if _on(v, "log_bin") and v.get("log_bin_basename"):
        base = _under(datadir, v["log_bin_basename"])
        out.append(leakcheck.ScanTarget(str(base.parent), "binary log", "encrypt_binlog=ON", (f"{base.name}.*",),
                                        owner))
    for name in ("general_log_file", "slow_query_log_file"):
        switch = "general_log" if name.startswith("general") else "slow_query_log"
        if _on(v, switch) and "FILE" in str(v.get("log_output", "")).upper() and v.get(name):
            out.append(leakcheck.ScanTarget(str(_under(datadir, v[name])), switch.replace("_", " "),
                                            f"{switch}=OFF (statements are logged in plaintext)"))
    for name, role, fix, names in DIRECTORIES[1:]:
        value = str(v.get(name) or "")
        # tmpdir may list several directories, ':'-separated (the server takes them in turn)
        for path in filter(None, value.split(":") if name == "tmpdir" else [value]):
            out.append(leakcheck.ScanTarget(str(_under(datadir, path)), role, fix, names, owner))
    out.append(leakcheck.ScanTarget(datadir, "data directory", ""))
    return _merge(out)


def classify_finding(path: str, role: str, v: dict, classify) -> tuple[str, str]:
    """The role and fix of a leaking file: the binary log by its basename, the query logs by their target, the
    rest by file name (classify: FILE_ROLES by default)."""
    name = Path(path).name
    base = Path(v.get("log_bin_basename") or "").name
    if base and name.startswith(base + "."):
        return "binary log", "encrypt_binlog=ON"
    if role in ("general log", "slow query log"):  # a log file named alone: its own target
        return role, f"{role.replace(' ', '_')}=OFF (statements are logged in plaintext)"
    return classify(Path(path))


def leak_check_existing(dsn: str, options: dict, params: dict, classify) -> leakcheck.LeakReport:
    check_local(params, dsn)
    canary = leakcheck.new_canary()
    schema = f"encbench_leak_{secrets.token_hex(4)}"
    conn = _connect(params)
    created = False
    try:
        cur = conn.cursor()
        v = _variables(cur)
        plugins = _plugins(cur)
        if not Path(v["datadir"]).exists():
            raise EngineUnavailableError(f"the server's data directory {v['datadir']} is not on this machine",
                                         hint="run leak-check on the server's machine (or use --posture)")
        report = leakcheck.LeakReport(
            "mariadb", f"existing MariaDB {v.get('version', '?')} at {where_of(params)} (key management: "
                       f"{', '.join(plugins) or 'none'})", len(canary))
        encrypted = "ENCRYPTED=YES" if plugins else "ENCRYPTED=NO"
        try:
            cur.execute(f"CREATE DATABASE {schema}")
        except pymysql().err.MySQLError as e:
            if not _denied(e):
                raise
            raise EngineUnavailableError(f"the --dsn user may not create encbench's schema: {first_line(e)}",
                                         hint="GRANT CREATE, DROP, INSERT, SELECT, LOCK TABLES ON `encbench\\_leak\\_%`.* "
                                              "and RELOAD ON *.* to that user, or use --posture") from None
        created = True
        cur.execute(f"CREATE TABLE {schema}.t (v TEXT NOT NULL) ENGINE=InnoDB {encrypted}")
        report.steps.append(f"CREATE DATABASE {schema}; CREATE TABLE {schema}.t ... ENGINE=InnoDB {encrypted}")
        if not plugins:
            report.notes.append("no key management plugin is active: no InnoDB table can be encrypted here "
                                "(plugin_load_add=file_key_management, or another key management plugin)")
        cur.executemany(f"INSERT INTO {schema}.t VALUES (%s)", [(f"{canary} {i}",) for i in range(ROWS)])
        report.steps.append(f"INSERT {ROWS} canary rows (autocommit: the redo log and the binary log written at "
                            f"commit; innodb_flush_log_at_trx_commit={v.get('innodb_flush_log_at_trx_commit')})")
        try:
            cur.execute("SELECT ENCRYPTION_SCHEME FROM information_schema.INNODB_TABLESPACES_ENCRYPTION "
                        "WHERE NAME = %s", (f"{schema}/t",))
            row = cur.fetchone()
            report.notes.append(f"{schema}/t encrypted per INNODB_TABLESPACES_ENCRYPTION: {bool(row and row[0])}")
        except pymysql().err.MySQLError as e:
            if not _denied(e):
                raise
            report.notes.append(f"INNODB_TABLESPACES_ENCRYPTION not readable ({first_line(e)}; GRANT PROCESS): "
                                "the scan alone says whether the table is stored encrypted")
        _optional(cur, report, f"FLUSH TABLES {schema}.t FOR EXPORT",
                  f"FLUSH TABLES {schema}.t FOR EXPORT; UNLOCK TABLES (its pages written to its .ibd)",
                  "its pages reach the .ibd when InnoDB flushes them; the redo log and binary log are scanned as usual")
        cur.execute("UNLOCK TABLES")
        if options.get("allow_flush_logs"):
            if _on(v, "log_bin"):
                _optional(cur, report, "FLUSH BINARY LOGS",
                          "FLUSH BINARY LOGS (--allow-flush-logs: the server starts a new binary log file)",
                          "the binary log as written at commit is scanned")
            _optional(cur, report, "FLUSH ENGINE LOGS", "FLUSH ENGINE LOGS (--allow-flush-logs)",
                      "the redo log as written at commit is scanned")
        else:
            report.notes.append("no log was rotated or flushed beyond encbench's schema (--allow-flush-logs runs "
                                "FLUSH BINARY LOGS and FLUSH ENGINE LOGS); what the server wrote at commit is "
                                "scanned")
        targets = scan_targets(v)
        report.steps.append("scanned: " + ", ".join(leakcheck.target_text(t) for t in targets))
        leakcheck.scan(targets, canary, report)
        for f in report.findings:
            f.role, f.fix = classify_finding(f.path, f.role, v, classify)
    finally:
        try:
            if created:
                conn.cursor().execute(f"DROP DATABASE IF EXISTS {schema}")
        finally:
            conn.close()
    report.steps.append(f"DROP DATABASE {schema}")
    return report


# -- posture ------------------------------------------------------------------------------

def _tables(cur) -> tuple[list[str], list[str]]:
    """(encrypted, plaintext) user InnoDB tables, by INNODB_TABLESPACES_ENCRYPTION."""
    marks = ", ".join(["%s"] * len(SYSTEM_SCHEMAS))
    cur.execute(f"SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE ENGINE = 'InnoDB' "
                f"AND TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ({marks})", SYSTEM_SCHEMAS)
    tables = [f"{s}/{t}" for s, t in cur.fetchall()]
    cur.execute("SELECT NAME FROM information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE ENCRYPTION_SCHEME > 0")
    enc = {r[0] for r in cur.fetchall()}
    yes = [t for t in tables if t in enc or any(n.startswith(t + "#") for n in enc)]
    return yes, [t for t in tables if t not in yes]


def _keys(cur) -> str:
    cur.execute("SELECT MIN(MIN_KEY_VERSION), MAX(CURRENT_KEY_VERSION), COUNT(*) FROM "
                "information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE ENCRYPTION_SCHEME > 0")
    low, current, n = cur.fetchone()
    if not n:
        return "no encrypted tablespace"
    return f"{n} encrypted tablespaces, oldest key version {low}, current key version {current}"


def posture(dsn: str, params: dict) -> leakcheck.PostureReport:
    conn = _connect(params)
    try:
        cur = conn.cursor()
        v = _variables(cur)
        plugins = _plugins(cur)
        try:
            (enc_tables, plain_tables), keys = _tables(cur), _keys(cur)
        except pymysql().err.MySQLError as e:  # INNODB_TABLESPACES_ENCRYPTION needs PROCESS
            if not _denied(e):
                raise
            enc_tables = plain_tables = keys = None
            why = first_line(e)
    finally:
        conn.close()
    rep = leakcheck.PostureReport("mariadb", where_of(params))
    Item = leakcheck.PostureItem
    add = rep.items.append
    add(Item("key management plugin", ", ".join(plugins) or "none active", not plugins,
             "" if plugins else "plugin_load_add=file_key_management (or another key management plugin)"))
    if plain_tables is None:
        add(Item("tables", f"INNODB_TABLESPACES_ENCRYPTION not readable ({why}; GRANT PROCESS to see which tables "
                 f"are encrypted); innodb_encrypt_tables={v.get('innodb_encrypt_tables')}", None))
    else:
        shown = ", ".join(plain_tables[:5]) + (f" and {len(plain_tables) - 5} more" if len(plain_tables) > 5 else "")
        add(Item("tables", f"{len(enc_tables)} user InnoDB tables encrypted, {len(plain_tables)} not"
                 + (f" ({shown})" if plain_tables else "") + f"; innodb_encrypt_tables={v.get('innodb_encrypt_tables')}",
                 bool(plain_tables), "ALTER TABLE ... ENCRYPTED=YES, or innodb_encrypt_tables=ON" if plain_tables else ""))

    def setting(what: str, name: str, fix: str, applies: bool = True, extra: str = "") -> None:
        plain = not _on(v, name)
        add(Item(what, f"{name}={v.get(name, '?')}{extra}", plain if applies else None,
                 fix if plain and applies else ""))

    setting("redo log", "innodb_encrypt_log", "innodb_encrypt_log=ON")
    setting("system tablespace, undo log", "innodb_encrypt_tables",
            "innodb_encrypt_tables=ON (the system and undo tablespaces follow it)")
    setting("temporary tables (InnoDB)", "innodb_encrypt_temporary_tables", "innodb_encrypt_temporary_tables=ON")
    setting("temporary files", "encrypt_tmp_files", "encrypt_tmp_files=ON")
    binlog = _on(v, "log_bin")
    setting("binary log", "encrypt_binlog", "encrypt_binlog=ON", applies=binlog, extra=f" (log_bin={v.get('log_bin')})")
    setting("Aria tables and log", "aria_encrypt_tables", "aria_encrypt_tables=ON")
    to_file = "FILE" in str(v.get("log_output", "")).upper()
    for switch, what in (("general_log", "general query log"), ("slow_query_log", "slow query log")):
        on = _on(v, switch) and to_file
        add(Item(what, f"{switch}={v.get(switch)}, log_output={v.get('log_output')}", True if on else None,
                 f"{switch}=OFF (statements are logged in plaintext)" if on else ""))
    rotate = v.get("innodb_encryption_rotate_key_age")
    threads = v.get("innodb_encryption_threads")
    add(Item("key rotation", f"{keys or 'key versions not readable (GRANT PROCESS)'}; innodb_encryption_rotate_key_age={rotate}, innodb_encryption_threads={threads}"
             + (" (no background re-encryption: rotation never happens)" if str(threads) == "0" else ""), None))
    if "file_key_management" in plugins:
        rep.notes.append("file_key_management keeps its keys in a file on this host and cannot rotate them "
                         "(key version 1); the key file is as sensitive as the data")
    return rep


def canary_check(settings: dict, workdir: Path, classify) -> leakcheck.LeakReport:
    """A private server, everything encrypted (AES_CTR) but what `settings` change: a canary table forced to
    disk and into a backup, then every file of the data directory and the backup scanned for it; each finding
    named by `classify` (the engine's file roles)."""
    from . import server as maria_server

    server = maria_server.start(settings)
    canary = leakcheck.new_canary()
    changed = ", ".join(f"{k}={v}" for k, v in settings.items()) or "none"
    report = leakcheck.LeakReport(
        "mariadb", f"MariaDB private server, everything encrypted (AES_CTR) except as changed: {changed}", len(canary))
    try:
        conn = server.connect()
        try:
            cur = conn.cursor()
            cur.execute("CREATE DATABASE encbench_leak")
            cur.execute("CREATE TABLE encbench_leak.t (v TEXT NOT NULL) ENGINE=InnoDB ENCRYPTED=YES")
            for i in range(200):
                cur.execute("INSERT INTO encbench_leak.t VALUES (%s)", (f"{canary} {i}",))
            cur.execute("SELECT ENCRYPTION_SCHEME FROM information_schema.INNODB_TABLESPACES_ENCRYPTION "
                        "WHERE NAME = 'encbench_leak/t'")
            row = cur.fetchone()
            report.notes.append(f"encbench_leak/t encrypted per INNODB_TABLESPACES_ENCRYPTION: {bool(row and row[0])}")
            cur.execute("FLUSH TABLES encbench_leak.t FOR EXPORT")  # its pages written to the .ibd
            cur.execute("UNLOCK TABLES")
            cur.execute("FLUSH BINARY LOGS")
        finally:
            conn.close()
        backup = workdir / "backup"
        backup_for_check(server, backup, report)
        targets = [leakcheck.ScanTarget(str(server.datadir), "data directory", ""),
                   leakcheck.ScanTarget(str(backup), "backup", "")]
        leakcheck.scan(targets, canary, report)
        for f in report.findings:
            role, fix = classify(Path(f.path))
            in_backup = f.path.startswith(str(backup))
            f.role, f.fix = (f"backup: {role}" if in_backup else role), fix
    finally:
        server.stop()
    return report


def backup_for_check(server, target: Path, report) -> None:
    """mariadb-backup of the private server into `target` (a note when it is not installed)."""
    from . import server as maria_server

    tool = maria_server.binaries().get("mariadb-backup")
    if not tool:
        report.notes.append("mariadb-backup not installed: the backup output was not checked")
        return
    done = subprocess.run([tool, "--backup", f"--target-dir={target}", f"--socket={server.socket}", "--user=root",
                           f"--datadir={server.datadir}"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        last = ((done.stderr or done.stdout).strip().splitlines() or ["?"])[-1]
        raise EngineUnavailableError(f"mariadb-backup failed: {last}")

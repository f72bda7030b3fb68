"""MariaDB: encryption at rest with InnoDB and the file_key_management plugin.

This first slice measures no workloads yet: it provides the private server
(maria_server.py) and `encbench leak-check --engine mariadb`. The at-rest and
in-transit workloads come next (issue 4).
"""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

from ..errors import EngineUnavailableError, UsageError
from .base import Engine, PrepareContext
from . import maria_server

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


def parse_settings(specs: list[str]) -> dict[str, str]:
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--setting {spec!r} is not NAME=VALUE", hint="e.g. --setting innodb_encrypt_log=OFF")
        out[name.strip()] = value.strip()
    return out


class MariaDBEngine(Engine):
    name = "mariadb"
    description = "MariaDB with InnoDB encryption at rest (private server); for now: leak-check only"
    workloads = ()
    options = ("settings",)

    def check_available(self) -> None:
        try:
            import pymysql

            del pymysql
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailableError(f"PyMySQL is not importable ({e})", hint="pip install PyMySQL") from None
        maria_server.binaries()

    def prepare(self, ctx: PrepareContext) -> dict:
        raise UsageError("engine mariadb measures no workloads yet: only `encbench leak-check --engine mariadb`")

    def leak_check(self, options: dict, workdir: Path):
        from .. import leakcheck

        settings = options.get("settings", {})
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
            _backup(server, backup, report)
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


def _backup(server, target: Path, report) -> None:
    tool = maria_server.binaries().get("mariadb-backup")
    if not tool:
        report.notes.append("mariadb-backup not installed: the backup output was not checked")
        return
    done = subprocess.run([tool, "--backup", f"--target-dir={target}", f"--socket={server.socket}", "--user=root",
                           f"--datadir={server.datadir}"], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        last = ((done.stderr or done.stdout).strip().splitlines() or ["?"])[-1]
        raise EngineUnavailableError(f"mariadb-backup failed: {last}")

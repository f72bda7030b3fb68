"""One measured MariaDB connection: the at-rest primitives (tables, cache states, InnoDB
counters, backups) and the in-transit ones (TLS per variant, storm, streamed result,
connection churn, a multi-client select load), with the server's own view as proof.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ...vocab.leakcheck import count_in_file
from ...errors import BadValueError, CheckFailedError, EngineUnavailableError
from ...vocab.probe import Target
from ..base import Session
from ...util.redact import redact
from ...util.proc import kill_and_reap
from ...vocab.tls import forced, openssl_client_conf
from ...vocab.variants import Variant
from .client import (
    check_tls_state,
    connect_bounded,
    first_line,
    pymysql,
    server_tls_state,
    tls_params,
    unreachable,
    where_of,
)
from ..concurrent import SessionsTogether
from . import filesystems, knobs
from .column import MariaColumn
from .oltp import MariaOltp
from ..local.server import runs_program
from . import meter as maria_meter
from .server import Handle
from .waits import WaitSampler

# InnoDB status counters -> the pages probe's names
COUNTERS = {
    "Innodb_pages_read": "pages_read",
    "Innodb_pages_written": "pages_written",
    "Innodb_num_pages_decrypted": "pages_decrypted",
    "Innodb_num_pages_encrypted": "pages_encrypted",
    "Innodb_buffer_pool_reads": "pool_misses",
    "Innodb_data_read": "engine_read_bytes",
    "Innodb_data_written": "engine_written_bytes",
    "Innodb_os_log_written": "redo_bytes_written",  # what innodb_encrypt_log encrypts
    "Binlog_bytes_written": "binlog_bytes_written",  # what encrypt_binlog encrypts
    "Created_tmp_files": "tmp_files_created",  # what encrypt_tmp_files encrypts (sort merge files, caches)
    "Sort_merge_passes": "sort_merge_passes",
}
RT_ROWS = 10_000
# the in-query hash workload's functions (the `function` variant key) -> their SQL
HASH_FUNCTIONS = {"sha2-256": "SHA2(v, 256)", "sha2-512": "SHA2(v, 512)", "md5": "MD5(v)", "sha1": "SHA1(v)"}


def table_encryption(cur, schema: str, table: str) -> tuple[bool, dict]:
    """(encrypted, details) from information_schema.INNODB_TABLESPACES_ENCRYPTION."""
    cur.execute("SELECT ENCRYPTION_SCHEME, CURRENT_KEY_VERSION, CURRENT_KEY_ID FROM "
                "information_schema.INNODB_TABLESPACES_ENCRYPTION WHERE NAME = %s", (f"{schema}/{table}",))
    row = cur.fetchone()
    if not row:
        return False, {"encryption_scheme": 0}
    return bool(row[0]) and bool(row[1]), {"encryption_scheme": row[0], "key_version": row[1], "key_id": row[2]}


def check_table(cur, schema: str, table: str, variant: Variant) -> dict:
    want = variant.get("encryption") == "on"
    got, details = table_encryption(cur, schema, table)
    if got != want:
        raise CheckFailedError(
            f"table {schema}.{table} is {'encrypted' if got else 'not encrypted'} per INNODB_TABLESPACES_ENCRYPTION "
            f"but the variant says encryption={variant.get('encryption')}",
            hint="check the server's encryption plugin and key management (an unencrypted run never counts)")
    return details


def local_server_pid(cur) -> int | None:
    """The server's pid when it runs on this machine and we can see it; else None."""
    cur.execute("SELECT @@pid_file")
    path = cur.fetchone()[0]
    try:
        pid = int(Path(path).read_text().strip())
    except (OSError, ValueError, TypeError):
        return None
    return pid if runs_program(pid, ("mariadbd", "mysqld")) else None


def thread_os_id(cur) -> tuple[int | None, int | None]:
    """(performance_schema THREAD_ID, OS thread id) of this connection; (None, None) without performance_schema."""
    try:
        cur.execute("SELECT THREAD_ID, THREAD_OS_ID FROM performance_schema.threads "
                    "WHERE PROCESSLIST_ID = CONNECTION_ID()")
        row = cur.fetchone()
    except Exception:
        return None, None
    return (row[0], row[1]) if row else (None, None)


class MariaSession(MariaOltp, MariaColumn, SessionsTogether, Session):
    """One connection in a worker process, over TCP, in the variant's TLS state."""

    fs: dict | None = None  # the encrypted (or plain) filesystem mount the variant's server keeps its data on
    fs_daemon: int | None = None  # gocryptfs: the daemon's pid (its CPU and reads count with the server's)

    def __init__(self, setup: dict, variant: Variant, scratch: Path, *, mutable: bool):
        enc = variant.get("encryption")
        if enc in setup.get("_servers", {}):  # a filesystem variant: the server on that filesystem
            setup = dict(setup, **setup["_servers"][enc])
        own = setup.get("_knob_servers", {}).get(knobs.server_key(variant))
        if own:  # named startup knobs the main server does not run: the server started with them
            setup = dict(setup, **own)
        self.fs = setup.get("filesystems", {}).get(enc) if enc else None  # the mount its data is on, if any
        self.setup, self.variant, self.scratch = setup, variant, scratch
        self.tls = variant.get("tls", "off")
        conf = openssl_client_conf(self.tls)
        if conf:  # before Python's ssl module (OpenSSL) starts up in this fresh process
            path = scratch / "openssl-client.cnf"
            path.write_text(conf)
            os.environ["OPENSSL_CONF"] = str(path)
        self.schema = setup["schema"]
        self.handle = Handle(**setup["_handle"]) if setup.get("_handle") else None
        self.oltp = "script" in variant  # the oltp workload: sysbench's schemas (oltp.py), not the at-rest table
        self.at_rest = "encryption" in variant and not self.oltp
        self.page_size = setup["page_size"]
        self._target: Target | None = None
        self._warm = False
        t0 = time.perf_counter()
        self.conn = self.connect()
        self.open_metrics = {"wall_s": time.perf_counter() - t0}
        cur = self.conn.cursor()
        self.tls_state = server_tls_state(cur)
        check_tls_state(self.tls_state, self.tls)
        self.info: dict = {"tls": self.tls_state}
        settings = knobs.read_back(cur, variant)  # the server's word on the named knobs (a mismatch fails the run)
        if settings:
            self.info["server_settings"] = settings
        if self.fs:  # the server's own word on where its data is (a test checks it is on the variant's mount)
            cur.execute("SELECT @@datadir")
            self.info["datadir"] = cur.fetchone()[0]
        self.copy = None
        if self.oltp:
            self._oltp_open(cur, check_table)
        elif self.at_rest:
            source = setup["tables"][variant["encryption"]]
            if mutable:  # each run changes its own copy (untimed), same ENCRYPTED option
                self.copy = f"run_{os.getpid()}_{uuid.uuid4().hex[:6]}"
                cur.execute(f"CREATE TABLE {self.schema}.{self.copy} LIKE {self.schema}.{source}")
                copy_rows(cur, f"{self.schema}.{source}", f"{self.schema}.{self.copy}", setup["rows"] + 1)
            self.table_name = self.copy or source
            self.info["table"] = check_table(cur, self.schema, self.table_name, variant)
            self.row_count = setup["rows"]
        else:
            self.table_name = "rt"
            self.row_count = RT_ROWS
        self.table = f"{self.oltp_schema if self.oltp else self.schema}.{self.table_name}"
        self._locate()

    # -- connections ------------------------------------------------------------------
    def connect(self, **extra):
        my = pymysql()
        try:
            return connect_bounded(self.setup["_conn"], database=self.schema, autocommit=True,
                                   **tls_params(self.tls), **extra)
        except my.err.OperationalError as e:
            msg = first_line(e)
            gone = unreachable(e, where_of(self.setup["_conn"]))
            if gone:  # it answered when the benchmark was prepared: not a TLS or grants problem
                raise EngineUnavailableError(f"the server went away: {gone} ({msg})",
                                             hint="it was reachable when the run started: was it stopped, "
                                                  "restarted or killed?") from None
            if forced(self.tls) and ("SSL" in msg or "ssl" in msg or "handshake" in msg):
                raise BadValueError(f"tls={self.tls} was refused: {msg}",
                                    hint="use a protocol and suite both the server and the client accept "
                                         "(e.g. TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384)") from None
            raise EngineUnavailableError(f"cannot connect with tls={self.tls}: {msg}",
                                         hint="check the server's TLS settings (have_ssl) and the user's grants") from None

    def _locate(self) -> None:
        cur = self.conn.cursor()
        self.server_pid = local_server_pid(cur)
        # gocryptfs decrypts in its daemon: its CPU and storage reads count with the server's
        self.fs_daemon = (filesystems.daemon_pid(self.fs["mount_point"])
                          if self.fs and self.fs.get("cipher_side") == "userspace" else None)
        if self.fs_daemon:
            self.info["fs_daemon_pid"] = self.fs_daemon
        self.ps_thread, self.os_thread = thread_os_id(cur)
        self.info["server_thread"] = self.ps_thread

    # -- probes -----------------------------------------------------------------------
    def counters(self) -> dict[str, int]:
        cur = self.conn.cursor()
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ",".join(f"'{k}'" for k in COUNTERS) + ")")
        return {COUNTERS[k]: int(v) for k, v in cur.fetchall() if k in COUNTERS}

    def target(self) -> Target:
        if self._target is not None:
            return self._target
        pids = ([self.server_pid] if self.server_pid else []) + ([self.fs_daemon] if self.fs_daemon else [])
        threads = [(self.server_pid, self.os_thread)] if self.server_pid and self.os_thread else []
        extra: dict[str, Any] = {"socket_fds": [self.conn._sock.fileno()] if self.conn._sock else [],
                                 "counters": self.counters,
                                 "wait_interval_s": self.setup["wait_interval_s"]}
        if self.ps_thread is not None and self.setup.get("performance_schema"):
            extra["wait_sampler"] = self._sampler([self.ps_thread], None)
        self._meter(extra)
        return Target(pids=pids, page_size=self.page_size, client=True, threads=threads, extra=extra)

    def _meter(self, extra: dict) -> None:
        """--meter instructions: every statement thread of the server between two markers of this connection."""
        if self.setup.get("meter") and self.server_pid:
            extra["instructions"] = maria_meter.marked(self.setup["meter"]["dir"], self.server_pid, self._mark,
                                                       self.conn.thread_id())

    def _mark(self) -> None:
        cur = self.conn.cursor()
        cur.execute(maria_meter.MARKER_SQL)
        cur.fetchall()

    def _sampler(self, thread_ids, others_of) -> Callable[[], WaitSampler]:
        params, switch = self.setup["_admin"], bool(self.setup.get("waits_on_demand"))
        return lambda: WaitSampler(params, thread_ids, others_of, switch)

    def churn_target(self, marker: str) -> Target:
        """The whole server process (connections come and go); waits of the user's other connections."""
        pids = [self.server_pid] if self.server_pid else []
        extra: dict[str, Any] = {"wait_interval_s": self.setup["wait_interval_s"]}
        if self.setup.get("performance_schema"):
            extra["wait_sampler"] = self._sampler(None, (self.setup["_conn"]["user"], self.conn.thread_id()))
        self._meter(extra)
        return Target(pids=pids, client=True, extra=extra)

    def use_target(self, target: Target | None) -> None:
        self._target = target

    def check_operation(self, variant: Variant, metrics: dict, cache: dict) -> dict | None:
        """The named knobs' files written (knobs.check_written); cache=warm: not one page from storage;
        cache=cold: pages read, decrypted iff encrypted."""
        proven = knobs.check_written(variant, metrics)
        return {**proven, **(self._check_cache(variant, metrics, cache) or {})} or None

    def _check_cache(self, variant: Variant, metrics: dict, cache: dict) -> dict | None:
        state = cache.get("cache")
        if state is None or "pool_misses" not in metrics:
            return None
        misses, decrypted = metrics["pool_misses"], metrics.get("pages_decrypted", 0)
        if state == "warm" and misses != 0:
            raise CheckFailedError(f"cache=warm but {misses:.0f} pages were read from storage during the operation "
                                   "(Innodb_buffer_pool_reads)", hint="the buffer pool is too small for the tables compared")
        if state == "cold":
            if metrics.get("pages_read", 0) <= 0:
                raise CheckFailedError("cache=cold but no page was read from storage (Innodb_pages_read)")
            enc = variant.get("encryption") == "on"
            if enc and decrypted <= 0:
                raise CheckFailedError("encryption=on, cache=cold but no page was decrypted (Innodb_num_pages_decrypted)")
            if not enc and decrypted > 0 and not self.setup.get("instance_encrypts_tables"):
                raise CheckFailedError(f"encryption={variant.get('encryption')} but {decrypted:.0f} pages were "
                                       "decrypted by InnoDB during the operation")
            if self.fs:  # the OS page cache too: the kernel's count of bytes read from storage
                filesystems.check_cold(variant.get("encryption", ""), metrics)
        return {"cache_verified": 1}

    # -- at rest ------------------------------------------------------------------------
    def set_cache(self, state: str) -> dict:
        if state == "cold":
            if self.handle is None:
                raise EngineUnavailableError("cache=cold restarts the server: only on the private server",
                                             hint="with --dsn use --variant cache=warm")
            self.conn.close()
            self._warm = False
            took = self.handle.restart()
            if self.fs:  # O_DIRECT does not keep every filesystem's page cache empty (filesystems.py)
                dropped = filesystems.drop_os_cache(self.handle.datadir, self.fs)
                self.conn = self.connect()
                self._locate()
                return {"cache": "cold", "method": filesystems.COLD_METHOD, "restart_s": took,
                        "os_cache_dropped_files": dropped}
            self.conn = self.connect()
            self._locate()
            return {"cache": "cold", "method": "server restarted (no buffer-pool load; O_DIRECT reads)",
                    "restart_s": took}
        if not self._warm:  # once per session, as on SQLite: later operations find it in the buffer pool
            cur = self.conn.cursor()
            cur.execute(f"SELECT SUM(LENGTH(body)) FROM {self.table}")  # every clustered-index page
            cur.execute(f"SELECT COUNT(*) FROM {self.table} FORCE INDEX (grp)")  # and the secondary index
            self._settle_background(cur)
            self._warm = True
        return {"cache": "warm"}

    def _settle_background(self, cur) -> None:
        """What InnoDB's background threads would read from storage during a warm operation, done first: the
        purge of changes made before the last restart (their undo pages; a private server only: a wait, nothing
        set) and the pages of its persistent statistics, which it updates after a table's rows change."""
        pymy = pymysql()
        if self.handle is not None:
            cur.execute("SET GLOBAL innodb_max_purge_lag_wait=0")
        for table in ("mysql.innodb_table_stats", "mysql.innodb_index_stats"):
            try:
                cur.execute(f"SELECT COUNT(*) FROM {table}")
            except pymy.err.MySQLError:  # a --dsn role that may not read them: their pages may still be read
                pass

    def execute(self, sql: str, params: tuple = ()) -> int:
        cur = self.conn.cursor()
        return cur.execute(_sql(sql), params) if params else cur.execute(sql)

    def query(self, sql: str, params: tuple = ()) -> list:
        cur = self.conn.cursor()
        cur.execute(_sql(sql), params) if params else cur.execute(sql)
        return list(cur.fetchall())

    def begin(self) -> None:
        self.conn.cursor().execute("BEGIN")

    def commit(self) -> None:
        self.conn.commit()

    def sort_all(self, buffer_bytes: int) -> dict:
        """Every row sorted on unindexed columns (filesort, spilling with this sort buffer), the last one sent."""
        cur = self.conn.cursor()
        cur.execute(f"SET SESSION sort_buffer_size = {int(buffer_bytes)}")
        cur.execute(f"SELECT id FROM {self.table} ORDER BY name, k LIMIT 1 OFFSET {int(self.row_count)}")
        if len(cur.fetchall()) != 1:  # row_count rows plus the marker row: the last one
            raise CheckFailedError(f"the sort of {self.table} did not reach its last row")
        return {"rows_sorted": self.row_count + 1}

    def rebuild_operations(self) -> list[tuple[str, Callable[[], Any]]]:
        def run(sql: str) -> Callable[[], Any]:
            def go():  # the connection of the moment: cache=cold reconnects before each operation
                cur = self.conn.cursor()
                cur.execute(sql)
                if cur.description:
                    cur.fetchall()
            return go

        return [("alter-force", run(f"ALTER TABLE {self.table} FORCE")),
                ("optimize", run(f"OPTIMIZE TABLE {self.table}"))]

    def prepare_backup(self, dest: Path):
        if not self.setup.get("mariadb_backup"):
            raise EngineUnavailableError("mariadb-backup not found (the backup workload runs it)",
                                         hint="apt-get install mariadb-backup")
        if self.handle is None:
            raise EngineUnavailableError("the backup workload reads the data directory: only on the private server",
                                         hint="drop --workload backup with --dsn")
        # mariadb-backup copies the redo log written since the last checkpoint: what earlier
        # runs left there would swamp the table. A clean restart checkpoints everything, so
        # each backup holds the table, the system tablespace and a near-empty redo log.
        self.conn.close()
        self._warm = False
        self.handle.restart()
        self.conn = self.connect()
        self._locate()
        return dest

    def run_backup(self, dest: Path) -> None:
        """mariadb-backup --stream of the variant's table (plus the system tablespace and redo log) to a file."""
        h = self.handle
        cmd = [self.setup["mariadb_backup"], f"--defaults-file={h.cnf}", "--backup", "--stream=xbstream",
               f"--target-dir={self.scratch / 'xb'}", f"--socket={h.socket}", "--user=root",
               f"--databases={self.schema}.{self.table_name}"]
        (self.scratch / "xb").mkdir(exist_ok=True)
        with open(dest, "wb") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, text=False, timeout=3600)
            out.flush()
            os.fsync(out.fileno())
        shutil.rmtree(self.scratch / "xb", ignore_errors=True)
        if done.returncode != 0:
            last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise CheckFailedError(f"mariadb-backup failed: {redact(last)}")

    def check_backup(self, dest: Path) -> dict:
        """The table's rows must be unreadable in an encrypted backup, readable in a plain one."""
        needle = self.setup["markers"][self.variant["encryption"]].encode()
        found = count_in_file(dest, needle) > 0
        if found == (self.variant.get("encryption") == "on"):
            raise CheckFailedError(f"the backup of an encryption={self.variant.get('encryption')} table "
                                   f"{'holds' if found else 'lacks'} its plaintext rows")
        # what the stream holds besides the table: the system tablespace (undo logs of earlier
        # runs make it grow) and the redo log since the checkpoint
        sizes = {"table_file_bytes": _size(self.handle.datadir / self.schema / f"{self.table_name}.ibd"),
                 "system_tablespace_bytes": _size(self.handle.datadir / "ibdata1")}
        return {"backup_encrypted": int(not found), **{k: v for k, v in sizes.items() if v is not None}}

    # -- in transit ---------------------------------------------------------------------
    def storm(self, messages: int, send: bool) -> dict:
        """A stored-procedure loop selecting one small row per iteration; send=False: the same loop, nothing sent."""
        cur = self.conn.cursor()
        cur.execute(f"CALL {self.schema}.storm(%s, %s)", (int(messages), 1 if send else 0))
        received = 0
        while True:
            if cur.description:
                received += len(cur.fetchall())
            if not cur.nextset():
                break
        if send and received != messages:
            raise CheckFailedError(f"storm: {received} of {messages} result rows reached the client")
        return {"messages_received": received}

    def check_client_tls(self, state: dict) -> None:
        """A client driver's connection, as the server sees it (Ssl_version, Ssl_cipher), against this variant."""
        check_tls_state(state, self.tls)

    def native_storm(self, messages: int, send: bool):
        """The storm through the `mariadb` client (storm.py); None without it."""
        from .storm import session_storm

        return session_storm(self, messages, send)

    def stream_out(self) -> dict:
        my = pymysql()
        cur = self.conn.cursor(my.cursors.SSCursor)  # unbuffered: rows as they arrive
        cur.execute(f"SELECT id, payload FROM {self.schema}.bulk")
        total = 0
        for _id, payload in cur:
            total += len(payload) + 4
        cur.close()
        return {"bytes_received": total}

    def connect_cycles(self, n: int, marker: str) -> list[int]:
        """n connections one after the other, each checked (Ssl_version/Ssl_cipher), then closed."""
        ids = []
        for _ in range(n):
            conn = self.connect()
            cur = conn.cursor()
            check_tls_state(server_tls_state(cur), self.tls)
            ids.append(conn.thread_id())
            conn.close()
        return ids

    def settle(self, ids: list[int], timeout: float = 5.0) -> None:
        """Until the server has let go of those connections (they leave the process list)."""
        if not ids:
            return
        cur = self.conn.cursor()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ("
                        + ",".join(str(int(i)) for i in ids) + ")")
            if cur.fetchone()[0] == 0:
                return
            time.sleep(0.001)

    def select_load(self, *, clients: int, seconds: float, appname: str, scratch: Path,
                    queries: int | None = None) -> dict:
        """C client processes of primary-key SELECTs for T seconds (or `queries` each), encbench's own driver,
        every one checked."""
        params = dict(self.setup["_conn"], database=self.schema)
        env = dict(os.environ, ENCBENCH_DRIVER_PASSWORD=str(params.pop("password", "")))
        cmd = [sys.executable, "-m", "encbench.engines.mariadb.select_driver", "--tls", self.tls, "--seconds", str(seconds),
               "--rows", str(RT_ROWS), "--marker", appname, "--params", json.dumps(params),
               *(["--queries", str(int(queries))] if queries else [])]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(clients)]
        outs = []
        for p in procs:
            out, err = p.communicate()
            if p.returncode != 0:
                for q in procs:
                    kill_and_reap(q)
                raise CheckFailedError(f"the select driver failed: {redact((err.strip().splitlines() or ['?'])[-1])}")
            outs.append(json.loads(out))
        for o in outs:
            check_tls_state(o["tls"], self.tls)
        lat = [x for o in outs for x in o["latencies_us"]]
        duration = max(o["seconds"] for o in outs)
        import numpy as np

        pct = (lambda q: float(np.percentile(lat, q)) / 1000.0) if lat else (lambda q: None)
        return {"queries": len(lat), "qps": len(lat) / duration, "latency_p50_ms": pct(50),
                "latency_p95_ms": pct(95), "latency_p99_ms": pct(99), "tls_checked_connections": len(outs)}

    # -- the hash workload: k sessions started together (concurrent.SessionsTogether) -------
    def hash_sql(self, function: str, with_function: bool) -> str:
        expr = HASH_FUNCTIONS[function] if with_function else "v"
        return f"SELECT MAX({expr}) FROM {self.schema}.hashsrc"

    def _new_session(self):
        return connect_bounded(self.setup["_conn"], database=self.schema, autocommit=True, ssl_disabled=True)

    @staticmethod
    def _session_value(conn, sql: str):
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchone()[0]

    def _connect_errors(self):
        return pymysql().err.OperationalError

    _error_line = staticmethod(first_line)

    def sessions_target(self, conns: list) -> Target:
        ids = [c.thread_id() for c in conns]
        threads, ps_threads = [], []
        cur = self.conn.cursor()
        try:
            cur.execute("SELECT THREAD_ID, THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID IN ("
                        + ",".join(str(int(i)) for i in ids) + ")")
            for ps, os_tid in cur.fetchall():
                ps_threads.append(ps)
                if self.server_pid and os_tid:
                    threads.append((self.server_pid, os_tid))
        except Exception:  # no performance_schema: the process CPU only
            pass
        extra: dict[str, Any] = {"wait_interval_s": self.setup["wait_interval_s"]}
        if ps_threads and self.setup.get("performance_schema"):
            extra["wait_sampler"] = self._sampler(ps_threads, None)
        return Target(pids=[self.server_pid] if self.server_pid else [], client=True, client_process=True,
                      threads=threads, extra=extra)

    def close(self) -> None:
        try:
            if self.oltp:
                self._oltp_close()
            if self.copy:
                self.conn.cursor().execute(f"DROP TABLE IF EXISTS {self.schema}.{self.copy}")
        finally:
            self.conn.close()


def copy_rows(cur, source: str, dest: str, max_id: int, chunk: int = 10_000) -> None:
    """INSERT ... SELECT in id ranges, a transaction each: one big transaction would leave
    its undo log in the system tablespace (ibdata1 grows for good, and every backup copies it)."""
    for lo in range(1, max_id + 1, chunk):
        cur.execute(f"INSERT INTO {dest} SELECT * FROM {source} WHERE id BETWEEN %s AND %s", (lo, lo + chunk - 1))


def _sql(sql: str) -> str:
    """The workloads' portable '?' placeholders in PyMySQL's format style (a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


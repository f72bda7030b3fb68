"""One measured PostgreSQL connection: TLS per variant with the server's own view (pg_stat_ssl) as
proof, the in-transit primitives (storm, streamed COPY, connection churn, a pgbench select load),
the in-query hash workload's k sessions, and the oltp workload's pgbench mixes (oltp.py), with the
processes the probes attach to.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ...vocab.leakcheck import count_in_file
from ...errors import BadValueError, CheckFailedError, EngineUnavailableError
from ...vocab.variants import Variant
from ...vocab.probe import Target
from ...vocab.tls import TLS_RE, openssl_client_conf
from ...util.redact import redact
from ...util.proc import kill_and_reap
from ...host import sockets
from ...host.rawhash import HMAC_KEY
from ..base import Session
from ..concurrent import SessionsTogether
from . import atrest, client, pgbench
from . import meter as pg_meter
from . import curves as knobs_proof
from .column import PgColumn
from .oltp import PgOltp
from . import server as pg_server
from .client import (CONNECT_TIMEOUT_S, NO_SERVER, check_connection, client_params, conninfo_of, first_line,
                     is_local_postgres)
from .waits import sampler_factory

RT_ROWS = 10_000
# hash workload: what each function name runs per row (pgcrypto for digest and hmac)
HASH_FUNCTIONS = {
    "sha256": "sha256(v::bytea)",
    "sha512": "sha512(v::bytea)",
    "md5": "md5(v)",
    "digest-sha256": "digest(v, 'sha256')",
    "hmac-sha256": f"hmac(v, '{HMAC_KEY}', 'sha256')",
}


class PgSession(PgOltp, PgColumn, SessionsTogether, Session):
    """One connection (plus whatever its workloads open), with the server's view of TLS."""

    def __init__(self, setup: dict, variant: Variant, scratch: Path, *, mutable: bool = False):
        self.setup, self.variant, self.tls = setup, variant, variant.get("tls", "off")
        self.scratch = scratch
        conf = openssl_client_conf(self.tls)
        if conf:  # before the first TLS connection of this (fresh) process
            path = scratch / "openssl-client.cnf"
            path.write_text(conf)
            os.environ["OPENSSL_CONF"] = str(path)
        self.psycopg = client.psycopg()
        self.schema = setup["schema"]
        self.table = f"{self.schema}.rt"
        self.row_count = RT_ROWS
        # at rest: the variant's own cluster (its data directory on the variant's filesystem)
        where = atrest.cluster_key(variant) if "encryption" in variant else None
        self.cluster = setup["clusters"][where] if where else None
        self._access = setup["_cluster_access"][where] if self.cluster else None
        if self.cluster:
            self._conninfo = dict(self._access["conninfo"])
        elif "script" in variant and setup.get("_oltp_access"):  # oltp (its variants have a script): its own server
            self._conninfo = dict(setup["_oltp_access"]["conninfo"])
        else:
            self._conninfo = conninfo_of(setup)
        # the key exchange group, proven from a handshake before anything is measured (its backend gone long before)
        handshake = knobs_proof.handshake_group(self._conninfo) if "ecdh_curve" in variant else None
        t0 = time.perf_counter()
        self.conn = self.connect()
        self.open_metrics = {"wall_s": time.perf_counter() - t0}
        self.backend_pid = self.conn.info.backend_pid
        self.tls_state = self.ssl_state(self.conn)
        check_connection(self.tls_state, self.tls)
        self.info = {"tls": self.tls_state, "backend_pid": self.backend_pid}
        if handshake is not None:
            self.info["ecdh"] = knobs_proof.check_group(self.conn, variant["ecdh_curve"], handshake)
        self.notices = 0
        self.conn.add_notice_handler(self._on_notice)
        self._target: Target | None = None
        self._rewrote = False  # the last operation rewrote the table into a new file (check_operation)
        self._catalogs_warm = False
        self._churned: list[tuple[int, bool]] = []  # --meter instructions: the backends an operation opened
        self.copy = None
        if self.cluster:
            self.page_size = atrest.BLOCK_SIZE
            self.row_count = setup["rows"]
            source = "data"
            if mutable:  # each run changes its own copy (untimed)
                self.copy = f"run_{os.getpid()}_{uuid.uuid4().hex[:6]}"
                atrest.copy_table(self.conn, self.schema, source, self.copy, self.row_count)
            self.table = f"{self.schema}.{self.copy or source}"
            self.info["filesystem"] = {k: self.cluster[k] for k in ("kind", "mount_point", "backing_kind")}
            if any(k in variant for k in atrest.FS_KEYS):  # a filesystem option named: what runs, read back
                self.info["filesystem"]["options"] = atrest.check_filesystem(variant, self.cluster,
                                                                             self._access["place"])

    # -- connections --------------------------------------------------------------
    def connect(self, application_name: str = "encbench"):
        try:
            return self.psycopg.connect(**{"connect_timeout": CONNECT_TIMEOUT_S, **self._conninfo},
                                        **client_params(self.tls), autocommit=True, application_name=application_name)
        except self.psycopg.OperationalError as e:
            msg = first_line(e)
            if any(s in str(e) for s in NO_SERVER + ("server closed the connection unexpectedly",)):
                raise EngineUnavailableError(f"the server went away: {msg}",
                                             hint="it was reachable when the run started: was it stopped, "
                                                  "restarted or killed?") from None
            if TLS_RE.match(self.tls) and "SSL" in msg:
                raise BadValueError(f"tls={self.tls} was refused: {msg}",
                                    hint="use a protocol and suite both the server and the client accept "
                                         "(e.g. TLSv1.2:ECDHE-RSA-AES256-GCM-SHA384; `openssl ciphers -v` lists them)") from None
            raise EngineUnavailableError(f"cannot connect with tls={self.tls}: {msg}",
                                         hint="check the server's TLS settings and pg_hba.conf") from None

    @staticmethod
    def ssl_state(conn) -> dict:
        row = conn.execute("SELECT ssl, version, cipher, bits FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
        return {"ssl": row[0], "version": row[1], "cipher": row[2], "bits": row[3]}

    def _on_notice(self, diag) -> None:
        self.notices += 1

    # -- what the probes attach to ------------------------------------------------
    def target(self) -> Target:
        if self._target is not None:
            return self._target
        if self.cluster:
            return self.at_rest_target()
        return self.backend_target([self.backend_pid])

    def at_rest_target(self) -> Target:
        """The backend, plus the gocryptfs daemon that decrypts for it (its CPU is the server side's cost);
        the table's block reads and the loop device's bytes as counters (check_operation reads them)."""
        pids = [p for p in (self.backend_pid, self.cluster.get("daemon_pid")) if p and os.path.exists(f"/proc/{p}")]
        return Target(pids=pids, page_size=self.page_size, client=True,
                      extra={"counters": self.counters, "socket_fds": [self.conn.fileno()],
                             "wait_interval_s": self.setup["wait_interval_s"]})

    def counters(self) -> dict[str, int]:
        return atrest.counters(self.conn, self.table, self.cluster.get("device"))

    def check_operation(self, variant: Variant, metrics: dict, cache: dict) -> dict | None:
        rewrote, self._rewrote = self._rewrote, False
        return atrest.check_operation(variant, metrics, cache, rewrote=rewrote) if self.cluster else None

    def backend_target(self, pids: list[int], *, application_name: str | None = None) -> Target:
        local = [p for p in pids if is_local_postgres(p)]
        sampler = sampler_factory(self.setup, pids=pids, application_name=application_name)
        extra = {"wait_sampler": sampler, "socket_fds": [self.conn.fileno()],
                 "wait_interval_s": self.setup["wait_interval_s"]}
        if self.setup.get("meter") and len(pids) == 1:  # --meter instructions: that backend, between markers
            mine = pids[0] == self.backend_pid  # the worker's connection: marked here; else its client marks it
            extra["instructions"] = pg_meter.marked(self.setup["meter"]["dir"], pids[0], self._mark if mine else None)
        return Target(pids=local, client=True, extra=extra)

    def _mark(self) -> None:
        self.conn.execute(pg_meter.MARKER_SQL).fetchall()

    def churn_target(self, application_name: str) -> Target:
        """The postmaster with its reaped children: the CPU of backends that came and went."""
        pm = parent_pid(self.backend_pid)
        sampler = sampler_factory(self.setup, pids=None, application_name=application_name)
        extra = {"wait_sampler": sampler, "wait_interval_s": self.setup["wait_interval_s"]}
        if self.setup.get("meter"):  # --meter instructions: the backends of the operation's connections
            self._churned = []
            extra["instructions"] = pg_meter.churned(self.setup["meter"]["dir"], lambda: self._churned)
        return Target(pids=[pm] if pm and is_local_postgres(pm) else [], client=True, reaped_children=True,
                      extra=extra)

    def use_target(self, target: Target | None) -> None:
        self._target = target

    # -- at rest ------------------------------------------------------------------
    def set_cache(self, state: str) -> dict:
        if not self.cluster:
            return {}
        if state == "cold":
            self.conn.close()
            self._catalogs_warm = False
            took = pg_server.restart_handle(self._access["handle"], self._conninfo)  # empty shared_buffers
            t0 = time.perf_counter()
            dropped = atrest.drop_os_cache(atrest.cache_paths(self.cluster))
            drop_s = time.perf_counter() - t0
            self._reconnect()
            return {"cache": "cold", "method": "server restarted (empty shared_buffers) and the OS page cache of "
                    "its files, the cipher files and the image dropped (syncfs, posix_fadvise DONTNEED per file)",
                    "restart_s": took, "os_cache_drop_s": drop_s, "os_cache_files": dropped["files"],
                    "os_cache_dropped": dropped["dropped"] == dropped["files"]}
        # warm: every block of the table and its indexes in shared_buffers (before each operation: a rebuild
        # leaves a new file behind that the next one would read from the OS)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        if not self._catalogs_warm:  # the catalogs an operation's plan looks up (a fresh cluster has read few)
            self.conn.execute("SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE c.relnamespace IN "
                              "('pg_catalog'::regnamespace, 'pg_toast'::regnamespace) AND c.relkind IN ('r', 'i', 't') "
                              "AND pg_relation_size(c.oid) > 0")
            self._catalogs_warm = True
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
        rels = ("SELECT %s::regclass::oid AS oid UNION SELECT indexrelid FROM pg_index WHERE indrelid = %s::regclass "
                "UNION SELECT reltoastrelid FROM pg_class WHERE oid = %s::regclass AND reltoastrelid <> 0 UNION "
                "SELECT objid FROM pg_depend WHERE refobjid = %s::regclass AND classid = 'pg_class'::regclass")
        args = (self.table,) * 4  # the table, its indexes, TOAST, identity sequence: every fork
        blocks = self.conn.execute(
            f"SELECT coalesce(sum(pg_prewarm(r.oid, 'buffer', f.fork)), 0) FROM ({rels}) r, "
            "(VALUES ('main'), ('fsm'), ('vm')) f(fork) WHERE pg_relation_size(r.oid, f.fork) > 0", args).fetchone()[0]
        resident = self.conn.execute(  # the proof: every one of those blocks is in shared_buffers now
            f"SELECT count(*) FROM pg_buffercache b JOIN ({rels}) r ON b.relfilenode = pg_relation_filenode(r.oid) "
            "AND b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())", args).fetchone()[0]
        self.counters()  # the catalog lookups of the counters' own query, cached before the operation
        return {"cache": "warm", "relation_blocks": int(blocks), "resident_blocks": int(resident)}

    def _reconnect(self) -> None:
        self.conn = self.connect()
        self.backend_pid = self.conn.info.backend_pid
        self.conn.add_notice_handler(self._on_notice)

    # -- workload primitives ------------------------------------------------------
    def execute(self, sql: str, params: tuple = ()) -> int:
        return self.conn.execute(_sql(sql) if params else sql, params).rowcount

    def query(self, sql: str, params: tuple = ()) -> list:
        return self.conn.execute(_sql(sql) if params else sql, params).fetchall()

    def begin(self) -> None:
        self.conn.execute("BEGIN")

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rebuild_operations(self) -> list[tuple[str, Callable[[], Any]]]:
        def run(sql: str, rewrites: bool) -> Callable[[], Any]:
            def go():  # the connection of the moment: cache=cold reconnects before each operation
                self.conn.execute(sql)
                self._rewrote = rewrites
            return go

        return [("vacuum-full", run(f"VACUUM FULL {self.table}", True)),
                ("reindex", run(f"REINDEX TABLE {self.table}", False))]

    def prepare_backup(self, dest: Path):
        """A checkpoint first (untimed): pg_basebackup's own then has little to write."""
        if not self.setup.get("pg_basebackup"):
            raise EngineUnavailableError("pg_basebackup not found (the backup workload runs it)",
                                         hint="apt-get install postgresql-client")
        self.conn.execute("CHECKPOINT")
        # measured: the postmaster with the children it reaps (the walsender pg_basebackup talks to exits at its
        # end) and the gocryptfs daemon; not this session's idle backend
        pm = parent_pid(self.backend_pid)
        pids = [p for p in (pm, self.cluster.get("daemon_pid")) if p and os.path.exists(f"/proc/{p}")]
        self._target = Target(pids=pids, client=True, reaped_children=True,
                              extra={"wait_interval_s": self.setup["wait_interval_s"]})
        return dest

    def run_backup(self, dest: Path) -> None:
        """pg_basebackup of the whole cluster as one tar stream (WAL fetched) to a file outside the mount."""
        info = self._conninfo
        env = dict(os.environ, PGPASSWORD=str(info.get("password", "")), PGSSLMODE="disable")
        cmd = [self.setup["pg_basebackup"], "-h", str(info["host"]), "-p", str(info["port"]), "-U", str(info["user"]),
               "-D", "-", "-F", "t", "-X", "fetch", "-c", "fast", "--no-password"]
        with open(dest, "wb") as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, env=env, timeout=3600)
            out.flush()
            os.fsync(out.fileno())
        if done.returncode != 0:
            last = (done.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
            raise CheckFailedError(f"pg_basebackup failed: {redact(last)}")

    def check_backup(self, dest: Path) -> dict:
        """The backup must hold the cluster's rows (the marker row). It is plaintext whatever the filesystem:
        pg_basebackup reads through the mount, so a backup written outside it is not encrypted (a leak)."""
        self._target = None
        if not count_in_file(dest, self.cluster["marker"].encode()) > 0:
            raise CheckFailedError("the base backup lacks the cluster's marker row: it is not a backup of the table")
        return {"backup_encrypted": 0, "backup_outside_mount": 1}

    def storm(self, messages: int, send: bool) -> dict:
        """A server-side loop of RAISE NOTICE; with send=False the same loop, messages not sent."""
        self.conn.execute(f"SET client_min_messages = {'notice' if send else 'warning'}")
        self.notices = 0
        self.conn.execute(f"DO $$ BEGIN FOR i IN 1..{int(messages)} LOOP RAISE NOTICE 'x'; END LOOP; END $$")
        received = self.notices
        if send and received != messages:
            raise CheckFailedError(f"storm: {received} of {messages} notices reached the client")
        return {"messages_received": received}

    def libpq_params(self) -> tuple[dict, dict]:
        """(conninfo, TLS parameters) for a client driver's own connection with this variant."""
        return conninfo_of(self.setup), client_params(self.tls)

    def check_client_tls(self, state: dict) -> None:
        """A client driver's connection, as pg_stat_ssl sees it, against this variant."""
        check_connection(state, self.tls)

    def native_storm(self, messages: int, send: bool):
        """The storm through a native C client (storm.py); None where it cannot be built here."""
        from .storm import session_storm

        return session_storm(self, messages, send)

    def stream_out(self) -> dict:
        total = 0
        with self.conn.cursor().copy(f"COPY {self.schema}.bulk TO STDOUT") as copy:
            for chunk in copy:
                total += len(chunk)
        return {"bytes_received": total}

    def connect_cycles(self, n: int, appname: str) -> list[int]:
        """n connections one after the other, each checked in pg_stat_ssl, then closed."""
        pids = []
        for _ in range(n):
            conn = self.connect(appname)
            check_connection(self.ssl_state(conn), self.tls)
            pids.append(conn.info.backend_pid)
            conn.close()
        self._churned = [(pid, True) for pid in pids]  # --meter instructions: connecting is the operation
        return pids

    @staticmethod
    def settle(pids: list[int], timeout: float = 5.0) -> None:
        """Until the backends' processes are gone: their CPU is then in the postmaster's account."""
        deadline = time.monotonic() + timeout
        for pid in pids:
            while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                time.sleep(0.0005)

    def select_load(self, *, clients: int, seconds: float, appname: str, scratch: Path,
                    queries: int | None = None) -> dict:
        """pgbench as the load driver: C connections of primary-key SELECTs, every one checked."""
        if not self.setup.get("pgbench"):
            raise EngineUnavailableError("pgbench not found (the roundtrip workload drives pgbench)",
                                         hint="install it: apt-get install postgresql (Debian ships pgbench there)")
        counter, why = client.server_sockets(self.conn)  # the bytes and messages of pgbench's connections
        with sockets.Follower(counter) as follower:
            proc = pgbench.start(self.setup["pgbench"], table=f"{self.schema}.rt", rows=RT_ROWS,
                                 conninfo=conninfo_of(self.setup), tls_params=client_params(self.tls),
                                 appname=appname, clients=clients, seconds=seconds, scratch=scratch,
                                 transactions=queries)
            t0 = time.perf_counter()
            states = self._watch_tls(appname, clients, proc, until_exit=bool(self.setup.get("meter")))
            self._churned = [(s["pid"], False) for s in states]  # --meter instructions: their queries, not set-up
            out, err = proc.communicate()
        if proc.returncode != 0:
            last = ((err or out).strip().splitlines() or ["no output"])[-1]
            raise CheckFailedError(f"pgbench failed: {redact(last)}")
        self.settle([s["pid"] for s in states])
        ran = seconds if queries is None else time.perf_counter() - t0  # -t: as long as the queries took
        return {**pgbench.summary(out, scratch, ran), "tls_checked_connections": len(states),
                **sockets.run_fields(follower, why, [s["port"] for s in states if s.get("port")])}

    def _watch_tls(self, appname: str, clients: int, proc, *, until_exit: bool = False) -> list[dict]:
        """pg_stat_ssl of every pgbench client connection, read while they are connected: only those that ran the
        workload's SELECT. pgbench's own first connection runs none and closes at once: taken for a client, it ended
        the watch before the client connected, and the socket counter then followed that connection's port, not the
        client's (0 to 11 segments counted for thousands of queries in 14 of 24 runs). until_exit (--meter
        instructions, whose count is of these backends): watched until pgbench exits."""
        seen: dict[int, dict] = {}
        table = f"{self.schema}.rt"
        while (until_exit or len(seen) < clients) and proc.poll() is None:
            for pid, ssl, version, cipher, bits, query, port in self.conn.execute(
                    "SELECT s.pid, s.ssl, s.version, s.cipher, s.bits, a.query, a.client_port FROM pg_stat_ssl s "
                    "JOIN pg_stat_activity a USING (pid) WHERE a.application_name = %s", (appname,)).fetchall():
                if table in (query or ""):
                    seen[pid] = {"pid": pid, "ssl": ssl, "version": version, "cipher": cipher, "bits": bits,
                                 "port": port}
            if until_exit or len(seen) < clients:
                # every 20 ms, metered too: a fast metered client may run its few queries between two slower looks
                time.sleep(0.02)
        for state in seen.values():
            check_connection(state, self.tls)
        if len(seen) < clients:
            kill_and_reap(proc)
            raise CheckFailedError(f"only {len(seen)} of {clients} pgbench connections could be checked in pg_stat_ssl",
                                   hint="use a longer --param seconds")
        return list(seen.values())

    # -- the hash workload: k sessions started together (concurrent.SessionsTogether) --
    def hash_sql(self, function: str, with_function: bool) -> str:
        expr = HASH_FUNCTIONS[function] if with_function else "v"
        return f"SELECT count({expr}) FROM {self.schema}.hashsrc"

    def _new_session(self):
        return self.psycopg.connect(**conninfo_of(self.setup), sslmode="disable", autocommit=True,
                                    application_name="encbench-hash")

    def _session_setup(self, conn, parallel: bool) -> None:
        if not parallel:  # one session is one CPU
            conn.execute("SET max_parallel_workers_per_gather = 0")

    @staticmethod
    def _session_value(conn, sql: str):
        return conn.execute(sql).fetchone()[0]

    def _connect_errors(self):
        return self.psycopg.OperationalError

    _error_line = staticmethod(first_line)

    def sessions_target(self, conns: list) -> Target:
        pids = [c.info.backend_pid for c in conns]
        sampler = sampler_factory(self.setup, pids=pids, application_name=None)
        return Target(pids=[p for p in pids if is_local_postgres(p)], client=True, client_process=True,
                      extra={"wait_sampler": sampler, "wait_interval_s": self.setup["wait_interval_s"]})

    def close(self) -> None:
        try:
            if self.copy:
                self.conn.execute(f"DROP TABLE IF EXISTS {self.schema}.{self.copy}")
        finally:
            self.conn.close()


def _sql(sql: str) -> str:
    """The workloads' portable '?' placeholders in psycopg's format style (a literal % doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")



def parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


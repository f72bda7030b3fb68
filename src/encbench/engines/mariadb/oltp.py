"""MariaDB's side of the oltp workload (workloads/oltp.py, issue 22): sysbench's OLTP scripts (sysbench.py)
on two schemas of one server, one of InnoDB tables created ENCRYPTED=YES (the engine's file_key_management
key 1), one ENCRYPTED=NO, so `encryption=off,on` compares them on the same server, buffer pool and disk.

Memory. The schemas share the server's buffer pool; O_DIRECT keeps the data out of the OS page cache, so
the pool is all the memory the data has. Each run (untimed, oltp_warm):
  1. InnoDB's purge of earlier runs' changes finishes (innodb_max_purge_lag_wait=0): none of it in this run;
  2. the pool is shrunk to the server's smallest (the other schema's pages leave with it), then set to
     memory x the schema's data (InnoDB's DATA_LENGTH + INDEX_LENGTH, read at prepare) + the pages InnoDB
     keeps for itself (its pages in the pool right after start-up: dictionary, system and undo pages; plus
     the innodb_lru_scan_depth free pages its page cleaner keeps), in the server's 1 MiB steps
     (innodb_buffer_pool_chunk_size=1M at start);
  3. with innodb_old_blocks_time=0 (a page read twice joins the young list at once), sysbench's own prewarm
     (the whole schema, when the pool can hold it) and a warm-up run of the same mix bring this schema's
     working set in; then innodb_old_blocks_time goes back to what it was, for the timed run.
What the run records is read back: the pool's pages (Innodb_buffer_pool_pages_total x page size) less
InnoDB's own, over the data: `share`. The session puts the pool and the settings back when it closes.

With --dsn nothing of this is changed: the run records the share the server's pool holds (its whole pool
over the schema's data; it also holds the server's other data), and a `memory` value is refused.

TLS: sysbench --mysql-ssl=on; every connection of the timed run is checked from the server's view
(performance_schema.status_by_thread: Ssl_version, Ssl_cipher), as the other in-transit clients are.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Any

from ...errors import BadValueError, CheckFailedError, UsageError
from ...vocab.probe import Target
from ...vocab.oltp import POOL_TOLERANCE, parse_share
from ...util.units import fmt_bytes
from ...util.proc import kill_and_reap
from . import state as maria_state, sysbench
from .client import check_tls_state, pymysql

SCHEMAS = {"off": "plain", "on": "enc"}  # encryption value -> the schema's suffix
# the private server when the run has oltp: the pool in 1 MiB steps (MariaDB before 10.11.12 rounds to the chunk
# size, 128M by default; later ones ignore it), and a free list of 100 pages rather than 1536 (the page cleaner
# keeps that many pages free: a 25% pool of a few MB would hold next to no data)
SERVER_SETTINGS = {"innodb_buffer_pool_chunk_size": "1M", "innodb_lru_scan_depth": "100"}
POOL_STEP = 1 << 20  # the pool's size steps with innodb_buffer_pool_chunk_size=1M (SERVER_SETTINGS)
DISK_FACTOR = 3  # free space asked for per byte of data: two schemas, their redo and undo while sysbench loads them
TLS_WATCH_S = 0.02
TABLE_COLUMNS = ("workload", "op", "variant", "rate", "d_rate", "server_per_unit", "d_server_per_unit",
                 "client_per_unit", "innodb_pages", "verdict")


def variants_of(variants: list[dict]) -> list[dict]:
    """The oltp workload's variants (the only ones with a `script`)."""
    return [v for v in variants if "script" in v]


def axis(variants: list[dict]) -> str:
    """The key the oltp table compares: tls when the run varies it, else encryption (one at a time)."""
    return "tls" if tls_wanted(variants_of(variants)) else "encryption"


def tls_wanted(oltp: list[dict]) -> bool:
    return any(v.get("tls", "off") != "off" for v in oltp)


def check_variants(oltp: list[dict], dsn: bool = False) -> None:
    """encryption=off/on only (two schemas of one server), encryption and tls not varied together, TLS only on the
    private server (sysbench 1.0.20 presents a client certificate the server must trust: sysbench.py)."""
    if dsn and tls_wanted(oltp):
        raise UsageError("with --dsn the oltp workload runs without TLS: sysbench 1.0.20 presents a client certificate "
                         "(client-cert.pem) that only encbench's private server trusts",
                         hint="drop --variant tls, or drop --dsn to measure TLS on the private server")
    other = sorted({v["encryption"] for v in oltp} - set(SCHEMAS))
    if other:
        raise UsageError(f"the oltp workload compares InnoDB's encrypted and plain tables: not encryption={other[0]}",
                         hint="--variant encryption=off,on for --workload oltp")
    encs, tls = {v["encryption"] for v in oltp}, {v.get("tls", "off") for v in oltp}
    if len(encs) > 1 and len(tls) > 1:
        raise UsageError("the oltp workload compares one thing at a time: encryption or tls, not both",
                         hint="add --variant encryption=off (or on) to compare tls, or drop --variant tls")


def data_bytes_for(size_bytes: int) -> int:
    """The InnoDB data + index length sysbench's tables of a schema take for --size (sysbench.ROW_BYTES)."""
    return sysbench.rows_per_table(size_bytes) * sysbench.TABLES * sysbench.ROW_BYTES


def size_for(size_bytes: int, oltp: list[dict]) -> tuple[int, str | None]:
    """The data size to prepare: --size, or more when the smallest `memory` share of a pool that grows in
    POOL_STEP steps could not come within POOL_TOLERANCE of it (then a line saying so)."""
    shares = [float(parse_share(v["memory"]).rstrip("%")) / 100 for v in oltp if "memory" in v]
    if not shares:
        return size_bytes, None
    floor = math.ceil(POOL_STEP / (POOL_TOLERANCE * min(shares)))
    if data_bytes_for(size_bytes) >= floor:
        return size_bytes, None
    return floor, (f"oltp data {fmt_bytes(floor)} per schema, not --size {fmt_bytes(size_bytes)}: the buffer pool "
                   f"grows in {fmt_bytes(POOL_STEP)} steps, so memory={min(shares):.0%} of less data would not come "
                   f"within {POOL_TOLERANCE:.0%} of its share")


def check_free_space(directory: Path, size_bytes: int, oltp: list[dict], servers: int = 1) -> None:
    """Before a private server starts: room for the schemas the run needs on its servers (one line, exit 4)."""
    need = DISK_FACTOR * data_bytes_for(size_bytes) * len({v["encryption"] for v in oltp}) * max(1, servers)
    free = shutil.disk_usage(directory).free
    if free < need:
        raise BadValueError(f"the oltp tables need about {fmt_bytes(need)} on {directory}, which has "
                            f"{fmt_bytes(free)} free", hint="use a smaller --size, or free some space")


def prepare(cur, ctx, setup: dict, oltp: list[dict], address: sysbench.Address, check_table) -> None:
    """Two schemas of sysbench tables (created by sysbench, ENCRYPTED=YES / NO), checked (check_table: the
    session's, the server's word) and measured."""
    tool = sysbench.binary()
    size, note = size_for(ctx.size_bytes, oltp)
    rows = sysbench.rows_per_table(size)
    schemas = {}
    facts: dict[str, Any] = {"sysbench": sysbench.version(tool), "tables": sysbench.TABLES, "rows_per_table": rows,
                             "rand_type": sysbench.RAND_TYPE, "schemas": schemas, "data_bytes": {}}
    if note:
        facts["size_note"] = note
        ctx.progress(note)
    setup["oltp"] = facts
    setup.setdefault("versions", {})["sysbench"] = facts["sysbench"].removeprefix("sysbench ")
    for enc in sorted({v["encryption"] for v in oltp}):
        schema = f"{setup['schema']}_{SCHEMAS[enc]}"
        maria_state.create_database(cur, setup.get("_journal"), schema)  # a --dsn server's: journaled first
        schemas[enc] = schema
        ctx.progress(f"sysbench prepare: {sysbench.TABLES} tables x {rows:,} rows in {schema} "
                     f"({sysbench.ENCRYPTED_OPTIONS[enc]})")
        work = sysbench.Workdir(ctx.scratch_dir / f"sysbench-{enc}", tool, address, schema, sysbench.TABLES, rows)
        try:
            work.call(work.prepare_command(enc, min(2, sysbench.TABLES)), f"prepare {schema}")
        finally:
            shutil.rmtree(work.dir, ignore_errors=True)
        facts[f"tables_{SCHEMAS[enc]}"] = check_tables(cur, schema, enc, check_table)
        facts["data_bytes"][enc] = data_bytes(cur, schema)
    if setup.get("_handle"):  # a private server: the purge of the load done before the checkpoint restart
        cur.execute("SET GLOBAL innodb_max_purge_lag_wait=0")


def check_tables(cur, schema: str, enc: str, check_table) -> dict:
    """Every sbtest table encrypted iff enc=on, per INNODB_TABLESPACES_ENCRYPTION (session.check_table)."""
    got = {}
    for i in range(1, sysbench.TABLES + 1):
        got[f"sbtest{i}"] = check_table(cur, schema, f"sbtest{i}", {"encryption": enc})
    return got


def data_bytes(cur, schema: str) -> int:
    """InnoDB's data + index length of the schema's tables, after ANALYZE (fresh statistics)."""
    for i in range(1, sysbench.TABLES + 1):
        cur.execute(f"ANALYZE TABLE {schema}.sbtest{i}")
        cur.fetchall()
    cur.execute("SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
                (schema,))
    return int(cur.fetchone()[0] or 0)


def pool_facts(cur) -> dict:
    cur.execute("SELECT @@innodb_buffer_pool_size, @@innodb_page_size, @@innodb_lru_scan_depth")
    size, page, depth = (int(x) for x in cur.fetchone())
    cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_total', "
                "'Innodb_buffer_pool_pages_data')")
    got = {k: int(v) for k, v in cur.fetchall()}
    return {"pool_bytes": size, "page_size": page, "lru_scan_depth": depth,
            "pages_total": got.get("Innodb_buffer_pool_pages_total", 0),
            "pages_data": got.get("Innodb_buffer_pool_pages_data", 0)}


def after_start(cur, setup: dict) -> None:
    """Right after the private server's (re)start: the pages InnoDB keeps for itself, and the pool's
    usable share (its pages over innodb_buffer_pool_size), from which each run's pool is sized."""
    p = pool_facts(cur)
    setup["oltp"]["overhead_bytes"] = (p["pages_data"] + p["lru_scan_depth"]) * p["page_size"]
    setup["oltp"]["usable"] = p["pages_total"] * p["page_size"] / p["pool_bytes"]
    setup["oltp"]["start_pool_bytes"] = p["pool_bytes"]


def pool_bytes_for(share: float, data: int, overhead: int, usable: float, step: int = 1 << 20) -> int:
    """innodb_buffer_pool_size for `share` of `data` in the pool besides InnoDB's own pages, in `step`s."""
    return max(step, math.ceil((share * data + overhead) / usable / step) * step)


def memory_line(m: dict, managed: bool) -> str:
    pages = f"{m['pages_total']:,} pages of {fmt_bytes(m['page_size'])}"
    if not managed:
        return (f"the server's own buffer pool (innodb_buffer_pool_size {fmt_bytes(m['pool_bytes'])}, {pages}; also "
                f"holding its other data), over the schema's {fmt_bytes(m['data_bytes'])}: encbench changed nothing")
    return (f"InnoDB buffer pool sized by encbench (innodb_buffer_pool_size {fmt_bytes(m['pool_bytes'])}, {pages}, "
            f"read back): {fmt_bytes(m['overhead_bytes'])} for InnoDB's own pages, the rest "
            f"{m['share']:.0%} of the schema's {fmt_bytes(m['data_bytes'])} (data + index length); O_DIRECT: "
            "no OS page cache")


def tls_seen(states: list[dict]) -> str:
    """What the server reports for sysbench's connections: 'off', or e.g. 'TLSv1.3 TLS_AES_256_GCM_SHA384'."""
    return "; ".join(sorted({f"{s['version']} {s['cipher']}" if s["ssl"] else "off" for s in states}))


class MariaOltp:
    """OltpSession for MariaSession (self.conn: the benchmark user's connection, self.setup, self.variant)."""

    def _oltp_open(self, cur, check_table) -> None:
        facts = self.setup["oltp"]
        enc = self.variant.get("encryption", "off")
        self.oltp_schema = facts["schemas"][enc]
        self.info["oltp_tables"] = check_tables(cur, self.oltp_schema, enc, check_table)
        self.table_name, self.row_count = "sbtest1", facts["rows_per_table"]
        self._work: sysbench.Workdir | None = None
        self._pool_changed = False

    def oltp_scripts(self) -> tuple[str, ...]:
        return sysbench.SCRIPTS

    # -- sysbench ------------------------------------------------------------------------
    def _workdir(self, scratch: Path) -> sysbench.Workdir:
        if self._work is None:
            c = self.setup["_conn"]
            address = sysbench.Address(c.get("host", "localhost"), int(c.get("port", 3306)), c.get("user", ""),
                                       str(c.get("password", "")), c.get("unix_socket"))
            facts = self.setup["oltp"]
            self._work = sysbench.Workdir(scratch / "sysbench", sysbench.binary(), address, self.oltp_schema,
                                          facts["tables"], facts["rows_per_table"])
            if self.tls != "off":
                self._work.with_tls(self.setup["_oltp_tls"])
        return self._work

    def oltp_target(self) -> Target:
        """The whole server process (every thread: connections, page cleaner, purge, I/O), sysbench as the
        client (the worker's waited-for child), InnoDB's page counters."""
        return Target(pids=[self.server_pid] if self.server_pid else [], page_size=self.page_size, client=True,
                      extra={"counters": self.counters})

    def oltp_warm(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        work = self._workdir(scratch)
        managed = self.handle is not None
        enc = self.variant.get("encryption", "off")
        data = self.setup["oltp"]["data_bytes"][enc]
        asked = self.variant.get("memory")
        share = float(parse_share(asked).rstrip("%")) / 100 if asked else None
        cur = self.conn.cursor()
        restore_old_blocks = None
        if managed:
            cur.execute("SET GLOBAL innodb_max_purge_lag_wait=0")
            if share is not None:
                facts = self.setup["oltp"]
                self._pool_changed = True
                cur.execute(f"SET GLOBAL innodb_buffer_pool_size = {1 << 20}")  # the server's smallest: evicts
                cur.execute(f"SET GLOBAL innodb_buffer_pool_size = "
                            f"{pool_bytes_for(share, data, facts['overhead_bytes'], facts['usable'])}")
            cur.execute("SELECT @@innodb_old_blocks_time")
            restore_old_blocks = int(cur.fetchone()[0])
            cur.execute("SET GLOBAL innodb_old_blocks_time = 0")
        try:
            pool = pool_facts(cur)
            if pool["pages_total"] * pool["page_size"] >= data:  # the pool can hold the whole schema
                work.call(work.prewarm_command(script, self.tls, clients), f"{script} prewarm", self.tls)
            if seconds > 0:
                work.call(work.run_command(script, self.tls, clients, seconds), f"{script} warm-up", self.tls)
        finally:
            if restore_old_blocks is not None:
                cur.execute(f"SET GLOBAL innodb_old_blocks_time = {restore_old_blocks}")
        m = dict(pool_facts(cur), data_bytes=data, requested=asked or "the server's own")
        if managed:
            m["overhead_bytes"] = self.setup["oltp"]["overhead_bytes"]
            m["share"] = (m["pages_total"] * m["page_size"] - m["overhead_bytes"]) / data
        else:
            m["share"] = m["pages_total"] * m["page_size"] / data
        m["how"] = memory_line(m, managed)
        keep = ("requested", "pool_bytes", "data_bytes", "share", "how", "overhead_bytes", "pages_total")
        return {"memory": {k: m[k] for k in keep if k in m}}

    def oltp_run(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        work = self._workdir(scratch)
        cmd = work.run_command(script, self.tls, clients, seconds)
        proc = work.start(cmd, self.tls)
        try:
            states = self._watch_sysbench_tls(proc, clients)
            out, err = proc.communicate()
        except BaseException:
            kill_and_reap(proc)
            raise
        if proc.returncode != 0:
            raise sysbench.failure(f"{script} run", err, out, proc.returncode)
        if states is not None and len(states) < clients:
            raise CheckFailedError(f"only {len(states)} of {clients} sysbench connections could be checked in "
                                   "performance_schema.status_by_thread", hint="use a longer --param seconds")
        return {**sysbench.summary(out), "driver": f"{self.setup['oltp']['sysbench']}: {sysbench.described(cmd)}",
                "clients": clients, "tls_checked_connections": len(states or []),
                **({"sysbench_tls": tls_seen(states)} if states else {})}

    def _watch_sysbench_tls(self, proc, clients: int) -> list[dict] | None:
        """The server's view (Ssl_version, Ssl_cipher) of each sysbench connection, read while connected (None:
        no view, which only tls=off may go without); fewer than `clients` when sysbench ended first."""
        if not self.setup.get("server", {}).get("performance_schema") == "ON":
            if self.tls != "off":
                raise CheckFailedError(f"tls={self.tls}: the server's view of sysbench's connections needs "
                                       "performance_schema (status_by_thread), which is off on this server",
                                       hint="turn performance_schema on, or --variant tls=off")
            return None
        seen: dict[int, dict] = {}
        cur = self.conn.cursor()
        me = self.conn.thread_id()
        while len(seen) < clients and proc.poll() is None:
            cur.execute("SELECT t.PROCESSLIST_ID, s.VARIABLE_NAME, s.VARIABLE_VALUE FROM performance_schema.threads t "
                        "JOIN performance_schema.status_by_thread s USING (THREAD_ID) WHERE t.PROCESSLIST_DB = %s "
                        "AND t.PROCESSLIST_ID <> %s AND s.VARIABLE_NAME IN ('Ssl_version', 'Ssl_cipher')",
                        (self.oltp_schema, me))
            for pid, name, value in cur.fetchall():
                state = seen.setdefault(pid, {"ssl": False, "version": None, "cipher": None, "bits": None})
                state["version" if name.lower() == "ssl_version" else "cipher"] = value or None
                state["ssl"] = bool(state["cipher"])
            if len(seen) < clients:
                time.sleep(TLS_WATCH_S)
        for state in seen.values():
            check_tls_state(state, self.tls)
        return list(seen.values())

    def _oltp_close(self) -> None:
        """The private server's pool back to its start size (the other workloads of the run size theirs); a
        server that went away keeps the error that said so, not this one."""
        if self.handle is None or not getattr(self, "_pool_changed", False):
            return
        try:
            self.conn.cursor().execute(
                f"SET GLOBAL innodb_buffer_pool_size = {self.setup['oltp']['start_pool_bytes']}")
        except pymysql().err.MySQLError:
            pass

"""PostgreSQL's oltp workload: pgbench's built-in scripts, run by pgbench, on the tables `pgbench -i` made, with
the share of the data in memory held: shared_buffers and the OS page cache the server reads through.

Where it runs (the axis the run varies, engine.plan_keys / run_tables): by default on a private server of its
own (TLS off / on / forced suites, proven per pgbench connection from pg_stat_ssl); with --variant
encryption=off,fscrypt,gocryptfs on the at-rest clusters (atrest.py: one per value, its data directory on its
host/encfs mount); with --dsn on that server, whose memory is never changed (the share its pool holds is read
and recorded). The private oltp server is a stock server of the installed version (SERVER_SETTINGS: fsync,
synchronous commit and full-page writes on, the default checkpoint distance and WAL sizes, no I/O timing) but for
shared_buffers (the memory share), autovacuum off (its workers would land in random runs' server CPU; pgbench's
own VACUUM runs before each warm-up instead), max_connections 300, TLS on and loopback only; the at-rest clusters
keep their small max_wal_size (the WAL fits their sparse images) and track_io_timing (their cache proof). pgbench's sessions
set synchronous_commit=off (pgbench.OLTP_SESSION): a commit does not wait for the disk's flush, so the mix
measures the server's work rather than the machine's fsync latency; everything is still written and fsynced.

The data: `pgbench -i -s SCALE` into the run's schema (pgbench's unqualified tables land in the first schema
of the search_path), SCALE from --size (15.7 MB per unit of scale; --quick: 1), once per engine prepare.

The memory share (variant memory=25%: the runner's apply_variant, then the worker's oltp_warm):
- shared_buffers = the share x the data as pgbench -i made it (its tables and indexes, pg_total_relation_size
  read back; at 100% the data plus a quarter, so that the catalogs and what the runs add fit too): the server
  restarted with it (a -c option, which no configuration file overrides) when it differs from the running one;
  the pool the run had is read back from the server (SHOW) and set beside the data as it is then;
- the OS page cache: the postmaster starts inside a memory cgroup (host/memcg), so it and every process it
  forks (checkpointer, background writer, WAL writer, the backends) charge their memory and the page cache of
  what they read to it (the gocryptfs daemon is moved in too: the cipher files it reads). After the warm-up
  (pg_prewarm of the tables, then the same mix for warmup_seconds after pgbench's VACUUM, pgbench -v) the
  page cache of the server's files is dropped and the group limited to what its processes hold themselves
  (usage minus the page cache of files, the median over the warm-up: their private memory, shared_buffers,
  kernel memory) plus OS_CACHE_ALLOWANCE: a page the pool misses is then read from storage again. Where
  cgroup v1 memory is not available (not root, cgroup v2 only) the run says so once and records the OS cache
  as not held: the proof below then decides.
- the proof, per run: physical page reads per transaction (workloads/oltp.memory_held): PostgreSQL's block
  reads of pgbench's relations (pg_statio_all_tables, minus the blocks the run added to them: PostgreSQL 15
  counts extending a relation as a read), beside the kernel's view where the data sits on a device of its own
  (the loop device under an at-rest cluster: bytes read and written) and the group's page cache at the end.

What is measured: the whole server (the postmaster with the backends it reaps, its live children: checkpointer,
background writer, WAL writer, ...; the gocryptfs daemon; never the session's own observing backend), pgbench as
the client, and the page counters above with the pages written (pg_stat_bgwriter) and the WAL bytes.
"""

from __future__ import annotations

import math
import os
import statistics
import shutil
import time
from pathlib import Path

from ...errors import BadValueError, CheckFailedError, EngineUnavailableError, RunFailedError
from ...host import memcg, procio, sockets
from ...vocab.probe import Target
from ...util.units import fmt_bytes
from ...util.proc import kill_and_reap
from ...vocab.oltp import parse_share
from . import atrest, pgbench
from .client import check_connection, client_params, is_local_postgres, server_sockets, tool_error

SCRIPTS = pgbench.BUILTIN
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")
BYTES_PER_SCALE = 15_700_000  # pgbench -i -s 1 with its indexes, measured on PostgreSQL 15 (-s 3: 47.2 MB)
WAL_ROOM = (1024 + 2 * 96) << 20  # the WAL between checkpoints (max_wal_size: 1 GB, the default) and what -i writes
FULL_HEADROOM = 0.25  # memory=100%: the pool holds the data and a quarter more (catalogs, history, new versions)
MIN_POOL = 16 * atrest.BLOCK_SIZE  # PostgreSQL's smallest shared_buffers (16 blocks)
# the page cache the server's group may hold beyond its own memory: room for the WAL and data pages being
# written and for a read page on its way into shared_buffers; data in it is data in memory (recorded)
OS_CACHE_ALLOWANCE = 4 << 20
SAMPLE_S = 0.05  # how often pgbench is looked at (the group's own memory read, during the warm-up)
TLS_POLL_S = 0.25  # pg_stat_ssl read for new pgbench connections once its clients are all there
SETTLE_S = 10.0  # at most this long for the postmaster to reap pgbench's backends
# the private oltp server: what server.SERVER_SETTINGS sets apart from a stock server and a DBA's would not have
# (fsync off) back to the default; the rest stock (docs/oltp.md: how the private servers are configured)
SERVER_SETTINGS = {"fsync": "on"}
WARM_APP, RUN_APP = "encbench-oltp-warm", "encbench-oltp"
INSTALL_HINT = "install it: apt-get install postgresql (Debian ships pgbench with the server)"


# -- sizes ---------------------------------------------------------------------------------------------

def scale_for(size_bytes: int) -> int:
    """pgbench's scale for a data size: whole units of 100,000 accounts, at least 1."""
    return max(1, int(size_bytes) // BYTES_PER_SCALE)


def disk_needed(scale: int) -> int:
    """What a server's data directory needs for pgbench's data at this scale: the tables, their indexes and
    the WAL between checkpoints."""
    return scale * BYTES_PER_SCALE + WAL_ROOM


def check_disk(directory: Path, scale: int, size_text: str) -> None:
    """BadValueError (exit 4) when the filesystem holding `directory` has not the room for the data."""
    need = disk_needed(scale)
    free = shutil.disk_usage(directory).free
    if free < need:
        raise BadValueError(f"--size {size_text} (pgbench scale {scale}) needs about {fmt_bytes(need)} free in "
                            f"{directory} for the oltp data and its WAL; {fmt_bytes(free)} free",
                            hint="use a smaller --size, or free some space")


def pool_bytes(share: float, data: int) -> int:
    """shared_buffers for a share of the data, whole 8 kB blocks, at least PostgreSQL's minimum."""
    want = data * (1 + FULL_HEADROOM) if share >= 1 else data * share
    blocks = math.ceil(want / atrest.BLOCK_SIZE)
    return max(MIN_POOL, blocks * atrest.BLOCK_SIZE)


def share_of(memory: str) -> float:
    return float(parse_share(memory).rstrip("%")) / 100


def data_bytes(conn, schema: str) -> int:
    """pgbench's tables with their indexes (and TOAST), as the server has them now."""
    return int(conn.execute(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r' AND c.relname = ANY(%s)",
        (schema, list(TABLES))).fetchone()[0])


def pool_read_back(conn) -> int:
    """shared_buffers as the running server has it, in bytes."""
    return int(conn.execute("SELECT pg_size_bytes(current_setting('shared_buffers'))").fetchone()[0])


# -- the page counters ----------------------------------------------------------------------------------

def counters(conn, schema: str, device: str | None, version_num: int) -> dict[str, int]:
    """Cumulative counters (the pages probe takes their difference over the operation):
    pages_read: blocks of pgbench's relations read from outside shared_buffers, minus the blocks of those
      relations and their indexes that exist: PostgreSQL 15 counts a relation's extension as a read, so the
      difference over the run is the blocks really read (from storage, or from the OS cache where it is not
      held; a free-space or visibility map block the run adds is read back once and counts);
    pages_written: shared buffers written out by the checkpointer, the background writer and the backends;
    wal_bytes: WAL generated (pg_stat_wal);
    device_read_bytes / device_written_bytes: the loop device under an at-rest cluster (the kernel's view);
    server_read_bytes / server_written_bytes (kernel_bytes, added by the session): what the server's processes made
    the kernel read from storage and dirty for writing (/proc/PID/io)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    written = ("(SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE object = 'relation')" if version_num >= 170000
               else "(SELECT buffers_checkpoint + buffers_clean + buffers_backend FROM pg_stat_bgwriter)")
    read, blocks, pages_written, wal = conn.execute(
        "SELECT (SELECT coalesce(sum(coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0) "
        "+ coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0)), 0) FROM pg_statio_all_tables "
        "WHERE relid IN (SELECT oid FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'r')), "
        "(SELECT coalesce(sum(pg_relation_size(c.oid)), 0) / current_setting('block_size')::int FROM pg_class c "
        " WHERE c.relnamespace = %s::regnamespace AND c.relkind IN ('r', 'i')), "
        f"{written}, (SELECT wal_bytes FROM pg_stat_wal)", (schema, schema)).fetchone()
    out = {"pages_read": int(read) - int(blocks), "pages_written": int(pages_written), "wal_bytes": int(wal)}
    dev = device_bytes(device)
    if dev is not None:
        out["device_read_bytes"], out["device_written_bytes"] = dev
    return out


def device_bytes(device: str | None) -> tuple[int, int] | None:
    """(bytes read, bytes written) of a block device so far (/sys/block/DEV/stat: sectors x 512)."""
    if not device:
        return None
    try:
        fields = Path(f"/sys/block/{device}/stat").read_text().split()
        return int(fields[2]) * 512, int(fields[6]) * 512
    except (OSError, IndexError, ValueError):
        return None


def kernel_bytes(backend_pid: int) -> dict[str, int]:
    """server_read_bytes / server_written_bytes so far: /proc/PID/io of the postmaster (with the backends it reaped)
    and its live children but the observing backend; {} where they cannot be read (not root, not a local server).
    What fscrypt decrypts and encrypts is what the kernel reads from and writes to storage, not PostgreSQL's block
    reads (some served by the OS cache): estimate --live prices a local server's reads by the same counter."""
    pids = server_pids(backend_pid)
    if not pids or not is_local_postgres(pids[0]):
        return {}
    got = procio.tree_io(pids[0], skip=(backend_pid,))
    if got.read_bytes is None:
        return {}
    return {"server_read_bytes": got.read_bytes, "server_written_bytes": got.written_bytes}


def check_connections(connection: str, sessions: int, transactions: int) -> dict:
    """The connection knob against the server's count of the sessions opened during the run: one per transaction
    (pgbench -C) at least as many sessions as transactions; reused, fewer than one per two transactions (pgbench's
    clients and the connection it checks the scale on). CheckFailedError when the run did otherwise."""
    per_transaction = sessions / transactions if transactions else None
    ok = sessions >= transactions if connection == "per-transaction" else sessions * 2 < transactions
    if not ok:
        raise CheckFailedError(f"the server counted {sessions} sessions for {transactions} transactions: not "
                               f"connection={connection}", hint="another client connected to the database during the "
                               "run? (pg_stat_database.sessions counts every client's)")
    return {"sessions_opened": sessions, "sessions_per_transaction": per_transaction}


# -- the server's processes ----------------------------------------------------------------------------------

def server_pids(backend_pid: int) -> list[int]:
    """The postmaster of a backend and its live children but that backend (the observer): the processes that
    do the server's work (backends, checkpointer, background writer, WAL writer, ...)."""
    import psutil

    try:
        pm = psutil.Process(backend_pid).ppid()
        kids = [c.pid for c in psutil.Process(pm).children() if c.pid != backend_pid]
    except psutil.Error:
        return []
    return [pm, *kids]


def how_line(memory: dict) -> str:
    """One line: what holds the data in memory and how it was sized."""
    pool = (f"shared_buffers {fmt_bytes(memory['pool_bytes'])} ({memory['share']:.0%} of pgbench's "
            f"{fmt_bytes(memory['data_bytes'])} of tables and indexes)")
    if memory.get("external"):
        return f"{pool}, as the external server has it (--dsn: encbench changes nothing; the OS page cache not held)"
    if memory.get("os_cache_held"):
        return (f"{pool}, sized to {memory['requested']}; the server (postmaster and every child) in a memory "
                f"cgroup limited to its own memory measured in the warm-up ({fmt_bytes(memory['server_own_bytes'])}) "
                f"+ {fmt_bytes(memory['os_cache_allowance_bytes'])} of OS page cache")
    return (f"{pool}, sized to {memory['requested']}; the OS page cache NOT held "
            f"({memory.get('os_cache_not_held') or 'no memory cgroup'}): pool misses may be served from RAM")


# -- the session's side (PgSession mixes this in) ---------------------------------------------------------------

class PgOltp:
    """The oltp workload on a PgSession (workloads/capabilities.OltpSession)."""

    def oltp_scripts(self) -> tuple[str, ...]:
        return SCRIPTS

    # what this run's server is: the private oltp server ("tls"), an at-rest cluster (its encryption value), or
    # the --dsn server ("dsn")
    def _oltp_where(self) -> str:
        if self.cluster:
            return atrest.cluster_key(self.variant)
        return "tls" if self.setup.get("_oltp_access") else "dsn"

    def _oltp_group(self) -> memcg.Group | None:
        path = (self.setup["oltp"]["servers"].get(self._oltp_where()) or {}).get("cgroup")
        return memcg.Group(Path(path)) if path else None

    def _oltp_tool(self) -> str:
        tool = self.setup["oltp"].get("pgbench")
        if not tool:
            raise EngineUnavailableError("pgbench not found (the oltp workload drives pgbench)", hint=INSTALL_HINT)
        return tool

    def _oltp_pgbench(self, script: str, clients: int, seconds: float, scratch: Path, *, warm: bool,
                      sample=None) -> tuple[list[str], str, list[dict]]:
        """pgbench driven to its end: (its command, its output, the pg_stat_ssl state of each connection).

        While it runs, every connection it opens (its clients, and the one it checks the scale on) is read from
        pg_stat_ssl and checked against the variant: quickly until the clients are there, then every
        TLS_POLL_S (a client connection lasts the whole run). `sample()` is called every SAMPLE_S. Afterwards,
        until the postmaster has reaped every backend it started: their CPU is then in its account."""
        cmd = pgbench.oltp_command(self._oltp_tool(), script=script, clients=clients, seconds=seconds,
                                   vacuum=warm, log=not warm, scratch=scratch,
                                   new_connections=self.variant.get("connection") == "per-transaction")
        appname = WARM_APP if warm else RUN_APP
        before = set(server_pids(self.backend_pid)[1:]) | {self.backend_pid}
        proc = pgbench.start_oltp(cmd, conninfo=self._conninfo, tls_params=client_params(self.tls), appname=appname,
                                  schema=self.schema, scratch=scratch)
        seen: dict[int, dict] = {}
        next_tls = 0.0
        try:
            while proc.poll() is None:
                now = time.monotonic()
                if now >= next_tls:
                    for state in self._ssl_states(appname):
                        if state["pid"] not in seen:
                            check_connection(state, self.tls)  # never a figure measured on the wrong TLS
                            seen[state["pid"]] = state
                    next_tls = now + (TLS_POLL_S if len(seen) >= clients else 0.02)
                if sample is not None:
                    sample()
                time.sleep(SAMPLE_S if len(seen) >= clients else 0.02)
        except BaseException:
            kill_and_reap(proc)
            raise
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise RunFailedError(f"pgbench failed{' in the warm-up' if warm else ''}: {tool_error(err or out)}")
        if len(seen) < clients:
            raise CheckFailedError(f"only {len(seen)} of {clients} pgbench connections could be checked in pg_stat_ssl",
                                   hint="use a longer --param seconds")
        self._settle_backends(before)
        return cmd, out, list(seen.values())

    def _ssl_states(self, appname: str) -> list[dict]:
        rows = self.conn.execute("SELECT s.pid, s.ssl, s.version, s.cipher, s.bits, a.client_port FROM pg_stat_ssl s "
                                 "JOIN pg_stat_activity a USING (pid) WHERE a.application_name = %s", (appname,))
        return [{"pid": pid, "ssl": ssl, "version": v, "cipher": c, "bits": b, "port": port}
                for pid, ssl, v, c, b, port in rows.fetchall()]

    def _settle_backends(self, before: set[int], timeout: float = SETTLE_S) -> None:
        """Until the postmaster has no child but those it had before (its auxiliary processes, our own backend)."""
        deadline = time.monotonic() + timeout
        while set(server_pids(self.backend_pid)[1:]) - before:
            if time.monotonic() > deadline:
                raise CheckFailedError(f"backends of pgbench still not gone {timeout:g} s after it ended",
                                       hint="is the server overloaded? their CPU would land in the next run")
            time.sleep(0.002)

    def oltp_warm(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        external = self._oltp_where() == "dsn"
        group = self._oltp_group()
        if group is not None:
            group.set_limit(None)
        if not external:  # a private server: its pool filled with the data (a full pool holds all of it)
            self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            self.conn.execute("SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE c.relnamespace = %s::regnamespace "
                              "AND c.relkind IN ('r', 'i')", (self.schema,))
        # the same mix (after pgbench's VACUUM of its tables), its connections checked like the timed ones'; the
        # group's own memory sampled while the mix runs (every client connected; the median: not the VACUUM's). A
        # gocryptfs daemon in the group: its Go heap rises and falls with its garbage collector, so the largest
        # sample (a limit below the heap's peak has the kernel kill one of the server's processes mid-run)
        own: list[int] = []
        sample = (lambda: own.append(group.own_bytes())) if group is not None else None
        self._oltp_pgbench(script, clients, max(1, seconds), scratch, warm=True, sample=sample)
        collected = bool(self.cluster and self.cluster.get("daemon_pid"))
        pgbench.percentile([0.0], 50)  # numpy imported here, not in the timed window (the client's CPU)
        memory = {"requested": self.variant.get("memory") or "as found", "pool_bytes": pool_read_back(self.conn),
                  "data_bytes": data_bytes(self.conn, self.schema)}
        memory["share"] = memory["pool_bytes"] / memory["data_bytes"] if memory["data_bytes"] else None
        if external:
            memory["external"] = 1
        elif group is not None:
            held = (max(own) if collected else int(statistics.median(own))) if own else group.own_bytes()
            memory.update(self._hold_os_cache(group, held))
        else:
            memory.update(os_cache_held=0, os_cache_not_held=self.setup["oltp"].get("os_cache_not_held"))
        memory["how"] = how_line(memory)
        self._oltp_counters()  # the catalog lookups of the counters' own query, cached before the operation
        return {"memory": memory}

    def _hold_os_cache(self, group: memcg.Group, own: int) -> dict:
        """The page cache of the server's files dropped, then the group limited to its own memory + the allowance.
        Its own memory: the warm-up's median, or what it holds when the limit is set if that is more (a gocryptfs
        daemon's Go heap can end the warm-up above its median: a limit below what the processes hold themselves
        cannot be set, EBUSY, or kills one of them)."""
        paths = atrest.cache_paths(self.cluster) if self.cluster else [self.setup["oltp"]["servers"]["tls"]["datadir"]]
        atrest.drop_os_cache(paths)
        own = max(own, group.own_bytes())
        want = own + OS_CACHE_ALLOWANCE
        try:
            limit = group.set_limit(want)
        except OSError as e:
            raise CheckFailedError(f"the server's memory cgroup could not be limited to {fmt_bytes(want)}: "
                                   f"{e.strerror or e}", hint="the memory share is too small for what the server "
                                   "holds itself: use a larger --variant memory or --size") from None
        return {"os_cache_held": 1, "server_own_bytes": own, "os_cache_allowance_bytes": OS_CACHE_ALLOWANCE,
                "os_cache_limit_bytes": limit, "memory_cgroup": str(group.path)}

    def _sessions(self) -> int:
        """Sessions the server has established to this database so far (pg_stat_database.sessions, PostgreSQL
        14+; a backend's are counted once its statistics are flushed: at the latest when it exits, and
        _oltp_pgbench waits for every pgbench backend to be gone)."""
        if self.conn.info.server_version < 140000:
            raise EngineUnavailableError("--variant connection needs PostgreSQL 14 or later (pg_stat_database.sessions "
                                         "proves the connections pgbench opened)", hint="drop --variant connection")
        return int(self.conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
                   .fetchone()[0])

    def _oltp_counters(self) -> dict[str, int]:
        device = self.cluster.get("device") if self.cluster else None
        return {**counters(self.conn, self.schema, device, self.conn.info.server_version),
                **kernel_bytes(self.backend_pid)}

    def oltp_target(self) -> Target:
        """The whole server, pgbench as the client (the worker's waited-for child), the page counters."""
        pids = [p for p in server_pids(self.backend_pid) if is_local_postgres(p)]
        daemon = self.cluster.get("daemon_pid") if self.cluster else None
        if daemon and os.path.exists(f"/proc/{daemon}"):
            pids.append(daemon)
        return Target(pids=pids, page_size=atrest.BLOCK_SIZE, client=True, reaped_children=True,
                      extra={"counters": self._oltp_counters, "wait_interval_s": self.setup["wait_interval_s"]})

    def oltp_run(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        sessions = self._sessions() if "connection" in self.variant else None
        # the bytes and messages pgbench's connections carry: the server's sockets followed while it runs
        counter, why = server_sockets(self.conn)
        with sockets.Follower(counter) as follower:
            cmd, out, states = self._oltp_pgbench(script, clients, seconds, scratch, warm=False)
        result = pgbench.oltp_summary(out, scratch)
        if not result["transactions"]:
            raise RunFailedError(f"pgbench ran no transaction in {seconds:g} s ({tool_error(out)})")
        if sessions is not None:  # the connection knob, proven from the server's count of sessions
            result.update(check_connections(self.variant["connection"], self._sessions() - sessions,
                                            result["transactions"]))
        group = self._oltp_group()
        extra = {}
        if group is not None:
            extra = {"os_file_cache_bytes": group.file_bytes(), "oom_kills": group.oom_kills()}
        return {**result, "driver": pgbench.driver_text(cmd, self.setup["oltp"].get("pgbench_version", "?")),
                "tls_checked_connections": len(states), **extra,
                **sockets.run_fields(follower, why, [s["port"] for s in states if s.get("port")])}

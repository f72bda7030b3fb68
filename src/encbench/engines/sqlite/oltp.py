"""SQLite/SQLCipher's oltp workload: a TPC-B-like mix in process, the statements of pgbench's built-in scripts.

Tables as `pgbench -i` makes them (pgbench_accounts, _branches, _tellers, _history; 100,000 accounts per scale
unit is pgbench's; here the accounts follow --size), one plain and one SQLCipher file of the same rows. Each run
works on its own copy (the mix writes). C clients are C threads, each with its own connection (opened, keyed and
warmed in the untimed warm-up: key derivation is never in the timed window), WAL journal, a busy timeout; the
sqlite3 module releases the GIL while SQLite (and SQLCipher's cipher) work, so the clients overlap there.

Memory: SQLite's page cache is where pages sit decrypted; every page read into it from the file is decrypted
(SQLCipher: the OS page cache below holds ciphertext). The share of the data in memory is the connections' page
caches together: cache_size = share x the file's size / clients each. Physical page reads = the page cache's
misses (sqlite3_db_status CACHE_MISS, summed over the clients' connections), as the at-rest lab counts them.
"""

from __future__ import annotations

import os
import random
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ...errors import BadValueError, CheckFailedError
from ...vocab.probe import Target

# pgbench's built-in names, the same statements; and encbench's own `update-one` and `update-batch` (1 and BATCH
# account updates in one transaction: 1 and 8 pages written per commit, where tpcb-like writes 4 and simple-update
# 2), which `calibrate` runs so that a commit's own cost and a page written's come apart
SCRIPTS = ("tpcb-like", "select-only", "simple-update", "update-batch", "update-one")
WRITES = tuple(s for s in SCRIPTS if s != "select-only")  # every transaction of these commits a change
BATCH = 8
OWN = {"update-batch": BATCH, "update-one": 1}  # encbench's own scripts: accounts changed per transaction
ACCOUNT_BYTES = 110  # stored bytes per pgbench_accounts row here (84-character filler): sizes the table
ACCOUNTS_PER_BRANCH = 100_000  # pgbench's: a branch per 100,000 accounts, 10 tellers per branch
MIN_ACCOUNTS = 10_000
FULL_HEADROOM = 2.0  # memory=100%: the page caches hold twice the file (the mix grows it)
BUSY_TIMEOUT_MS = 10_000
FILLER = " " * 84

DDL = (
    "CREATE TABLE pgbench_branches (bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler TEXT)",
    "CREATE TABLE pgbench_tellers (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL, "
    "filler TEXT)",
    "CREATE TABLE pgbench_accounts (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL, "
    "filler TEXT)",
    "CREATE TABLE pgbench_history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TEXT, filler TEXT)",
)


def accounts_for(size_bytes: int) -> int:
    return max(MIN_ACCOUNTS, size_bytes // ACCOUNT_BYTES)


def shape(accounts: int) -> tuple[int, int]:
    """(branches, tellers) for this many accounts: pgbench's proportions, at least one branch."""
    branches = max(1, round(accounts / ACCOUNTS_PER_BRANCH))
    return branches, 10 * branches


def populate(conn, accounts: int) -> None:
    """pgbench -i's rows: every balance 0, accounts spread over the branches."""
    branches, tellers = shape(accounts)
    for ddl in DDL:
        conn.execute(ddl)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO pgbench_branches VALUES (?, 0, NULL)", ((b,) for b in range(1, branches + 1)))
    conn.executemany("INSERT INTO pgbench_tellers VALUES (?, ?, 0, NULL)",
                     ((t, (t - 1) // 10 + 1) for t in range(1, tellers + 1)))
    per_branch = -(-accounts // branches)
    conn.executemany("INSERT INTO pgbench_accounts VALUES (?, ?, 0, ?)",
                     ((a, (a - 1) // per_branch + 1, FILLER) for a in range(1, accounts + 1)))
    conn.execute("COMMIT")


def transaction(script: str, conn, rng: random.Random, accounts: int, branches: int, tellers: int) -> None:
    """One transaction of the script, as pgbench's built-in runs it (its \\set lines, then its statements)."""
    aid = rng.randint(1, accounts)
    if script == "select-only":
        conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = ?", (aid,)).fetchone()
        return
    if script in OWN:
        _batch(conn, rng, accounts, aid, OWN[script])
        return
    bid, tid, delta = rng.randint(1, branches), rng.randint(1, tellers), rng.randint(-5000, 5000)
    with _writing(conn):
        conn.execute("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?", (delta, aid))
        conn.execute("SELECT abalance FROM pgbench_accounts WHERE aid = ?", (aid,)).fetchone()
        if script == "tpcb-like":
            conn.execute("UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?", (delta, tid))
            conn.execute("UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?", (delta, bid))
        conn.execute("INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, "
                     "CURRENT_TIMESTAMP)", (tid, bid, aid, delta))


@contextmanager
def _writing(conn):
    """One write transaction: BEGIN IMMEDIATE, then COMMIT, or ROLLBACK (and the error raised) if a statement or the
    commit fails."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _batch(conn, rng: random.Random, accounts: int, aid: int, n: int) -> None:
    """update-batch / update-one: n accounts' balances changed in one transaction (a page written each, one commit)."""
    with _writing(conn):
        for a in [aid] + [rng.randint(1, accounts) for _ in range(n - 1)]:
            conn.execute("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
                         (rng.randint(-5000, 5000), a))


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    import numpy as np

    return float(np.percentile(values, q))


class Clients:
    """C client connections to one database file, each in its own thread, driven together for a set time."""

    def __init__(self, connect, counters_of, path: Path, clients: int, share: float, accounts: int, seed: int):
        self.path, self.accounts = path, accounts
        self.branches, self.tellers = shape(accounts)
        self.data_bytes = path.stat().st_size
        # all of the data: room to spare, since the history table grows as the mix runs (a cache sized to the file
        # as it was would start evicting); a share: that share of the file, split over the connections
        pool = FULL_HEADROOM * self.data_bytes if share >= 1 else share * self.data_bytes
        self.cache_kib = max(64, int(pool / clients / 1024))  # 64 KiB: SQLite's smallest useful cache
        self.conns = []
        for _ in range(clients):
            conn = connect(path)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute(f"PRAGMA cache_size = -{self.cache_kib}")
            self.conns.append(conn)
        # the same journal for plain and encrypted (sqlcipher_export writes a rollback-journal file): WAL, checked
        mode = self.conns[0].execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":
            raise CheckFailedError(f"the oltp database {path.name} is in journal mode {mode!r}, not WAL")
        self.counters = [counters_of(c) for c in self.conns]
        self.rngs = [random.Random(seed * 1000 + i) for i in range(clients)]

    def memory(self, requested: str) -> dict:
        """The page caches as SQLite reports them (PRAGMA cache_size, per connection), against the data."""
        kib = sum(-int(c.execute("PRAGMA cache_size").fetchone()[0]) for c in self.conns)
        journal = self.conns[0].execute("PRAGMA journal_mode").fetchone()[0]
        return {"requested": requested, "pool_bytes": kib * 1024, "data_bytes": self.data_bytes,
                "share": kib * 1024 / self.data_bytes, "journal_mode": journal,
                "how": f"SQLite's page cache (decrypted pages): cache_size -{self.cache_kib} KiB on each of "
                       f"{len(self.conns)} connection(s), PRAGMA cache_size read back; the file's OS page cache holds "
                       "ciphertext (SQLCipher decrypts every page read into SQLite's cache)"
                       + ("; a connection's cache is emptied when another one writes, so with several writing "
                          "clients no cache keeps the data" if len(self.conns) > 1 else "")}

    def fill(self) -> None:
        """Each page cache filled as a long-running mix leaves it: every page read once (PRAGMA quick_check), so
        a cache that holds the whole file holds all of it, and a smaller one is full."""
        for conn in self.conns:
            conn.execute("PRAGMA quick_check").fetchall()

    def pages(self) -> dict[str, float]:
        """Page cache misses and writes summed over the clients' connections (sqlite3_db_status)."""
        out: dict[str, float] = {"pages_read": 0.0, "pages_written": 0.0}
        for read in self.counters:
            if read is None:
                continue
            for k, v in read().items():
                out[k] = out.get(k, 0.0) + v
        return out

    def drive(self, script: str, seconds: float) -> dict:
        """Every client runs the script back to back until `seconds` have passed: per-transaction latencies."""
        latencies: list[list[float]] = [[] for _ in self.conns]
        errors: list[BaseException] = []
        start = threading.Barrier(len(self.conns) + 1)
        deadline = [0.0]

        def client(i: int) -> None:
            conn, rng, mine = self.conns[i], self.rngs[i], latencies[i]
            start.wait()
            clock = time.perf_counter
            try:
                while True:
                    t0 = clock()
                    if t0 >= deadline[0]:
                        return
                    transaction(script, conn, rng, self.accounts, self.branches, self.tellers)
                    mine.append((clock() - t0) * 1000.0)
            except BaseException as e:  # noqa: BLE001 - reported by the caller, in one line
                errors.append(e)

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(self.conns))]
        for t in threads:
            t.start()
        deadline[0] = time.perf_counter() + seconds
        t0 = time.perf_counter()
        start.wait()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        if errors:
            raise CheckFailedError(f"an oltp client failed: {type(errors[0]).__name__}: "
                                   f"{str(errors[0]).splitlines()[0] if str(errors[0]) else ''}")
        lat = [x for mine in latencies for x in mine]
        # commits: each transaction of a writing script commits its change (one that failed ends the run, above)
        return {"transactions": len(lat), "commits": len(lat) if script in WRITES else 0,
                "tps": len(lat) / elapsed, "latency_p50_ms": percentile(lat, 50),
                "latency_p95_ms": percentile(lat, 95), "latency_p99_ms": percentile(lat, 99),
                "driver": f"encbench's in-process TPC-B-like driver ({script}, {len(self.conns)} client thread(s), "
                          "per-transaction timings)"}

    def close(self) -> None:
        for c in self.conns:
            c.close()
        self.conns = []


class OltpSessionMixin:
    """The OltpSession capability (workloads/capabilities.py) for the SQLite session: `self.path` is this run's
    copy of the oltp file, `self._connect_to(path)` opens a keyed connection like the session's own."""

    _clients: Clients | None = None

    def oltp_scripts(self) -> tuple[str, ...]:
        return SCRIPTS

    def _oltp_clients(self, clients: int) -> Clients:
        if self._clients is None or len(self._clients.conns) != clients:
            if self._clients is not None:
                self._clients.close()
            share = float(self.variant.get("memory", "100%").rstrip("%")) / 100
            self._clients = Clients(self._connect_to, self._counters_of, self.path, clients, share,
                                    self.setup_oltp["accounts"], self.setup_oltp["seed"])
        return self._clients

    def oltp_warm(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        if script not in SCRIPTS:
            raise BadValueError(f"unknown oltp script {script!r}", hint=f"valid: {', '.join(SCRIPTS)}")
        c = self._oltp_clients(clients)
        c.fill()
        c.drive(script, seconds)
        return {"memory": c.memory(self.variant.get("memory", "100%"))}

    def oltp_target(self) -> Target:
        c = self._clients
        return Target(pids=[os.getpid()], page_size=self.page_size,
                      extra={"counters": c.pages} if c is not None else {})

    def oltp_run(self, script: str, clients: int, seconds: float, scratch: Path) -> dict:
        return self._oltp_clients(clients).drive(script, seconds)

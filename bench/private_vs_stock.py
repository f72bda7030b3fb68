#!/usr/bin/env python3
"""Is encbench's private server a server like a DBA's? (issue 30) The same sysbench / pgbench mix on encbench's
private server and on a stock server of the same version with the same memory, interleaved.

  private  the server `encbench run --workload oltp` starts (engine.prepare: its configuration, its data loaded by
           sysbench / pgbench -i), placed on the CPUs `encbench run` gives it (lab/placement.py, as the runner
           applies it: before prepare, or after it for a workload that spreads its server);
  stock    started by this script before any pinning (every CPU): mariadb-install-db / initdb and only the memory
           settings (MariaDB: innodb_buffer_pool_size, O_DIRECT, and the key management plugin whose default cipher
           the encrypted tables need; PostgreSQL: shared_buffers), loaded by the same tool with the same rows.
The client (sysbench / pgbench, one thread) runs where encbench's worker runs (the worker's CPU) against both;
the pool of the private MariaDB is set by hand to the same size (SET GLOBAL innodb_buffer_pool_size, as the oltp
workload does), PostgreSQL's shared_buffers by the engine (apply_variant) and the stock one's to what the private
one reads back. Per round and script: a warm-up of each then the timed run, the order alternating (A B / B A).
Server CPU: the server's process (MariaDB), the postmaster with its children and the backends it reaped
(PostgreSQL), read from /proc around the timed run.

Printed per engine and script: the mean TPS and server CPU per transaction of each, and private / stock with the
95% CI of encbench.analysis.stats.ratio_ci (ratio of trimmed geometric means, Yuen-Welch). Goal: within 25%.

Usage: .venv/bin/python bench/private_vs_stock.py [--engine mariadb,postgres] [--rounds 6] [--seconds 10]
       [--warmup-seconds 5] [--rows 250000] [--pool 64MB] [--pg-size 48MB] [--pg-memory 100%]
Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from encbench.analysis import stats
from encbench.engines import PrepareContext
from encbench.engines.mariadb import server as maria_server, sysbench as sb
from encbench.engines.postgres import pgbench, server as pg_server
from encbench.errors import BadValueError, CheckFailedError
from encbench.lab import placement, runner
from encbench.util import interrupts
from encbench.util.units import fmt_bytes, parse_positive_int, parse_size
from encbench.workloads import WORKLOADS
from benchlib import progress, script_main

PRIVATE, STOCK = "private", "stock"
MARIA_SCRIPTS = ("oltp_read_write", "oltp_point_select")
PG_SCRIPTS = ("tpcb-like", "select-only")
_SB_TPS = re.compile(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec")
_PG_DONE = re.compile(r"number of transactions actually processed: (\d+)")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--engine", default="mariadb,postgres")
    p.add_argument("--rounds", default="6", help="timed runs per server and script (default 6: the fewest runs per side encbench gives a verdict on; 3 left the CIs too wide to judge 25%%)")
    p.add_argument("--seconds", default="10", help="timed window of each run (default 10)")
    p.add_argument("--warmup-seconds", default="5", help="untimed run of the same mix before each (default 5)")
    p.add_argument("--rows", default="250000", help="MariaDB: sysbench rows per table, 4 tables (default 250000)")
    p.add_argument("--pool", default="64MB", help="MariaDB: innodb_buffer_pool_size of both (default 64MB)")
    p.add_argument("--pg-size", default="48MB", help="PostgreSQL: --size of the pgbench data (default 48MB)")
    p.add_argument("--pg-memory", default="100%", help="PostgreSQL: the memory share (default 100%%)")
    return p.parse_args(argv)


# -- where things run ----------------------------------------------------------------------------

def encbench_placement() -> placement.Placement:
    """The placement `encbench run --workload oltp` takes (lab/placement.py); older builds had no spread."""
    spread = bool(getattr(WORKLOADS.get("oltp"), "spreads_server", False))
    return placement.choose(True, spread=True) if spread else placement.choose(True)


def _before(placed) -> bool:
    return getattr(placed, "before_prepare", True)


def _on(cpus):
    return (lambda: os.sched_setaffinity(0, cpus)) if cpus else None


def _cpu_s(pid: int, children: bool = False) -> float:
    """utime + stime of a process (and, children=True, of its reaped children and its live ones)."""
    import psutil

    p = psutil.Process(pid)
    t = p.cpu_times()
    total = t.user + t.system + ((t.children_user + t.children_system) if children else 0.0)
    for c in (p.children() if children else []):
        try:
            ct = c.cpu_times()
            total += ct.user + ct.system
        except psutil.Error:
            pass
    return total


def _call(cmd: list[str], what: str, *, cwd=None, env=None, cpus=None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600, preexec_fn=_on(cpus))
    if done.returncode != 0:
        raise CheckFailedError(f"{what} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


# -- MariaDB ------------------------------------------------------------------------------------

def _maria_private(rows: int, work: Path):
    size = rows * sb.TABLES * sb.ROW_BYTES
    config = runner.RunConfig(engine="mariadb", workloads=["oltp"], runs=1, warmups=0, size_bytes=size, seed=42,
                              output=work / "unused.json", data_dir=work, probes=["wall"],
                              variant_filters=[f"script={','.join(MARIA_SCRIPTS)}", "encryption=on"])
    plan = runner.plan(config)
    ctx = PrepareContext(size_bytes=size, seed=42, data_dir=work, scratch_dir=work, variants=plan.variants,
                         params=plan.params, progress=lambda m: progress(m))
    setup = plan.engine.prepare(ctx)
    c = setup["_conn"]
    address = sb.Address(c["host"], int(c["port"]), c["user"], str(c["password"]), None)
    return plan.engine, setup, address, setup["oltp"]["schemas"]["on"], maria_server.Handle(**setup["_handle"])


def _maria_stock(pool_mb: int, rows: int, work: Path):
    srv = maria_server.start(base={"plugin_load_add": "file_key_management", "innodb_flush_method": "O_DIRECT"},
                             buffer_pool_mb=pool_mb)
    srv.connect().cursor().execute("CREATE DATABASE sbstock")
    t = srv.handle.tcp_params()
    address = sb.Address(t["host"], int(t["port"]), t["user"], str(t["password"]), None)
    w = sb.Workdir(work / "stock-prepare", sb.binary(), address, "sbstock", sb.TABLES, rows)
    progress(f"sysbench prepare on the stock server ({sb.TABLES} x {rows:,} rows, ENCRYPTED=YES)")
    w.call(w.prepare_command("on", 2), "prepare sbstock")
    return srv, address, "sbstock"


def _maria_run(handle, address, schema: str, rows: int, script: str, secs: int, warm: int, work: Path,
               cpus) -> dict:
    w = sb.Workdir(work / f"run-{schema}", sb.binary(), address, schema, sb.TABLES, rows)
    _call(w.run_command(script, "off", 1, warm), "sysbench warm-up", cwd=w.dir, cpus=cpus)
    pid = handle.pid()
    c0 = _cpu_s(pid)
    out = _call(w.run_command(script, "off", 1, secs), "sysbench", cwd=w.dir, cpus=cpus)
    c1 = _cpu_s(pid)
    m = _SB_TPS.search(out)
    n = int(m.group(1))
    return {"tps": float(m.group(2)), "cpu_us_per_transaction": 1e6 * (c1 - c0) / n}


def _set_pool(handle, pool_bytes: int) -> None:
    conn = handle.connect()
    try:
        cur = conn.cursor()
        cur.execute("SET GLOBAL innodb_buffer_pool_size = 1048576")  # the other schema's pages out (as encbench)
        cur.execute(f"SET GLOBAL innodb_buffer_pool_size = {int(pool_bytes)}")
        cur.execute("SELECT @@innodb_buffer_pool_size")
        got = int(cur.fetchone()[0])
    finally:
        conn.close()
    if got != pool_bytes:
        raise CheckFailedError(f"the private server's pool is {got} bytes, not {pool_bytes}")


def mariadb(args, rounds: int, secs: int, warm: int) -> dict:
    rows = parse_positive_int(args.rows, what="--rows", maximum=100_000_000)
    pool = max(1, round(parse_size(args.pool) / (1 << 20))) << 20  # whole MiB: both servers size their pool so
    work = Path(tempfile.mkdtemp(prefix="encbench-pvs-maria-"))
    stock = engine = setup = None
    placed = None
    values: dict = {}
    try:
        stock, stock_addr, stock_schema = _maria_stock(pool >> 20, rows, work)  # before any pinning: every CPU
        placed = encbench_placement()
        if _before(placed):
            placement.apply(placed)
        engine, setup, priv_addr, priv_schema, handle = _maria_private(rows, work)
        if not _before(placed):
            placement.apply(placed)
        _set_pool(handle, pool)
        cpus = placed.worker_cpus if placed.pinned else None
        sides = {PRIVATE: (handle, priv_addr, priv_schema), STOCK: (stock.handle, stock_addr, stock_schema)}
        for r in range(rounds):
            for i, script in enumerate(MARIA_SCRIPTS):
                for side in ((PRIVATE, STOCK) if (r + i) % 2 == 0 else (STOCK, PRIVATE)):
                    interrupts.raise_if_stopped()
                    progress(f"MariaDB round {r + 1}/{rounds} {script} {side}")
                    row = _maria_run(*sides[side], rows, script, secs, warm, work, cpus)
                    for k, v in row.items():
                        values.setdefault(script, {}).setdefault(side, {}).setdefault(k, []).append(v)
        facts = {"what": f"MariaDB {setup['server']['version']}, sysbench {sb.TABLES} x {rows:,} rows ENCRYPTED=YES, "
                         f"pool {fmt_bytes(pool)} both, O_DIRECT both",
                 "placement": placed.describe()["text"]}
        return {"facts": facts, "values": values}
    finally:
        with interrupts.deferred():
            if setup is not None:
                engine.cleanup(setup)
            if stock is not None:
                stock.stop()
            if placed is not None:
                placement.restore(placed)
            shutil.rmtree(work, ignore_errors=True)


# -- PostgreSQL ---------------------------------------------------------------------------------

def _pg_run(env: dict, script: str, secs: int, warm: int, datadir: Path, cpus, work: Path) -> dict:
    base = ["pgbench", "-b", script, "-c", "1", "-j", "1"]
    _call([*base, "-T", str(warm), "-v"], "pgbench warm-up", env=env, cpus=cpus, cwd=work)
    pm = pg_server.postmaster_pid(datadir)
    c0 = _cpu_s(pm, children=True)
    out = _call([*base, "-T", str(secs), "-n"], "pgbench", env=env, cpus=cpus, cwd=work)
    time.sleep(0.2)  # the backend reaped: its CPU in the postmaster's children's
    c1 = _cpu_s(pm, children=True)
    n = int(_PG_DONE.search(out).group(1))
    return {"tps": n / secs, "cpu_us_per_transaction": 1e6 * (c1 - c0) / n}


def _pg_env(conninfo: dict, schema: str | None) -> dict:
    session = {"search_path": schema, **pgbench.OLTP_SESSION} if schema else dict(pgbench.OLTP_SESSION)
    return pgbench.environment(conninfo, {"sslmode": "disable"}, "pvs", session)


def postgres(args, rounds: int, secs: int, warm: int) -> dict:
    size = parse_size(args.pg_size)
    work = Path(tempfile.mkdtemp(prefix="encbench-pvs-pg-"))
    os.chmod(work, 0o755)
    stock = engine = setup = placed = None
    values: dict = {}
    try:
        config = runner.RunConfig(engine="postgres", workloads=["oltp"], runs=1, warmups=0, size_bytes=size, seed=1,
                                  output=work / "unused.json", data_dir=work, probes=["wall"],
                                  variant_filters=[f"script={','.join(PG_SCRIPTS)}", "tls=off",
                                                   f"memory={args.pg_memory}", "clients=1"])
        plan = runner.plan(config)
        engine = plan.engine
        placed = encbench_placement()
        stock_pending = True
        if _before(placed):  # the stock server first, on every CPU
            stock, stock_pending = pg_server.start(settings={"fsync": "on", "autovacuum": "on",
                                                             "max_connections": "100"}), False
            placement.apply(placed)
        ctx = PrepareContext(size_bytes=size, seed=1, data_dir=work, scratch_dir=work, variants=plan.variants,
                             params=plan.params, progress=lambda m: progress(m))
        setup = engine.prepare(ctx)
        cell = next(v for v in plan.variants if v.get("script") == PG_SCRIPTS[0])
        engine.apply_variant(setup, cell, "oltp")  # shared_buffers for the memory share (a restart)
        access = setup["_oltp_access"]
        import psycopg

        with psycopg.connect(**access["conninfo"], sslmode="disable") as c:
            shared = c.execute("SHOW shared_buffers").fetchone()[0]
        if stock_pending:
            stock = pg_server.start(settings={"fsync": "on", "autovacuum": "on", "max_connections": "100"})
            placement.apply(placed)
        mine = os.sched_getaffinity(0)
        os.sched_setaffinity(0, placed.previous or mine)  # the stock server stays on every CPU
        try:
            stock.restart_with({"shared_buffers": shared, "fsync": "on", "autovacuum": "on", "max_connections": "100"})
        finally:
            os.sched_setaffinity(0, mine)
        stock_env = _pg_env(stock.conninfo(), None)
        progress(f"pgbench -i -s {setup['oltp']['scale']} on the stock server")
        _call(["pgbench", "-i", "-s", str(setup["oltp"]["scale"]), "-q"], "pgbench -i", env=stock_env, cwd=work)
        cpus = placed.worker_cpus if placed.pinned else None
        sides = {PRIVATE: (_pg_env(access["conninfo"], setup["schema"]), Path(setup["oltp"]["servers"]["tls"]["datadir"])),
                 STOCK: (stock_env, stock.datadir)}
        for r in range(rounds):
            for i, script in enumerate(PG_SCRIPTS):
                for side in ((PRIVATE, STOCK) if (r + i) % 2 == 0 else (STOCK, PRIVATE)):
                    interrupts.raise_if_stopped()
                    progress(f"PostgreSQL round {r + 1}/{rounds} {script} {side}")
                    row = _pg_run(*sides[side][:1], script, secs, warm, sides[side][1], cpus, work)
                    for k, v in row.items():
                        values.setdefault(script, {}).setdefault(side, {}).setdefault(k, []).append(v)
        facts = {"what": f"PostgreSQL {setup['versions'].get('postgresql_server')}, pgbench scale "
                         f"{setup['oltp']['scale']}, shared_buffers {shared} both ({args.pg_memory} of the data), OS "
                         "page cache not held on either",
                 "placement": placed.describe()["text"]}
        return {"facts": facts, "values": values}
    finally:
        with interrupts.deferred():
            if setup is not None:
                engine.cleanup(setup)
            if stock is not None:
                stock.stop()
            if placed is not None:
                placement.restore(placed)
            shutil.rmtree(work, ignore_errors=True)


# -- the report ---------------------------------------------------------------------------------

def _ratio(stock: list[float], private: list[float]) -> str:
    est = stats.ratio_ci(stock, private)
    ci = f"[{est.ci[0]:.2f}, {est.ci[1]:.2f}]" if est.ci else "[no CI]"
    within = "within 25%" if est.ci and 0.75 <= est.ci[0] and est.ci[1] <= 1.25 else (
        "NOT within 25%" if est.ci and (est.ci[1] < 0.75 or est.ci[0] > 1.25) else "not resolved at 25%")
    return f"{est.value:.2f} {ci} {within}"


def report(name: str, result: dict) -> None:
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"{name}: {result['facts']['what']}; encbench's placement: {result['facts']['placement']}")
    for script, sides in result["values"].items():
        p, s = sides[PRIVATE], sides[STOCK]
        print(f"  {script} ({len(p['tps'])} + {len(s['tps'])} runs):")
        for key, label in (("tps", "TPS"), ("cpu_us_per_transaction", "server CPU µs/txn")):
            print(f"    {label:<18} stock {mean(s[key]):9.1f}  private {mean(p[key]):9.1f}  private/stock "
                  f"{_ratio(s[key], p[key])}")


ENGINES = {"mariadb": mariadb, "postgres": postgres}


def _main(args) -> int:
    t0 = time.monotonic()
    names = [x.strip() for x in args.engine.split(",") if x.strip()]
    if not names or set(names) - set(ENGINES):
        raise BadValueError(f"--engine {args.engine!r}: use mariadb, postgres or both")
    rounds = parse_positive_int(args.rounds, what="--rounds", maximum=100)
    secs = parse_positive_int(args.seconds, what="--seconds", maximum=3600)
    warm = parse_positive_int(args.warmup_seconds, what="--warmup-seconds", maximum=3600)
    for name in names:
        result = ENGINES[name](args, rounds, secs, warm)
        progress("")
        report(name, result)
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


def main(argv=None) -> int:
    return script_main("private_vs_stock", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

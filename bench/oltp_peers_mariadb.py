"""Does encbench's MariaDB oltp workload report what sysbench itself reports? (issue 22; the peer runner that
bench/oltp_vs_peers.py calls as `peer_runs(...)`)

On ONE private MariaDB server (engine.prepare starts it and has sysbench prepare an encrypted and a plain
schema), per cell (encryption x memory share), interleaved A B / B A round by round:
  encbench  the oltp workload as `encbench run` runs it: a fresh worker process (runner.run_in_fresh_process),
            every default probe, its own pool sizing, warm-up and sysbench run; its figures are the run's
            tps and latency_p95_ms (from sysbench's histogram) and its server CPU per transaction;
  sysbench  invoked by hand on the same schema: the buffer pool set by hand (SET GLOBAL
            innodb_buffer_pool_size: to the server's smallest, then to the size encbench's rule gives the
            cell), `sysbench <script> prewarm` when the pool holds the whole schema, a warm-up run, then the
            timed `sysbench <script> run`; its figures are the ones it prints (transactions per sec., the
            95th percentile line); server CPU and InnoDB page reads read around it by this script.
Printed per cell: the mean of each, sysbench/encbench ratios of TPS and p95 with the 95% CI of
encbench.analysis.stats.ratio_ci (agreement: the CI holds 1), and encbench's own overhead per transaction
(1/TPS difference and server CPU per transaction difference, Welch CIs).

Usage: .venv/bin/python bench/oltp_peers_mariadb.py [--script oltp_read_only] [--encryption off,on]
       [--memory 100%,25%] [--rounds 4] [--seconds 10] [--warmup-seconds 5] [--size 48MB] [--clients 1]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from encbench.analysis import stats
from encbench.engines import ENGINES, PrepareContext
from encbench.engines.mariadb import oltp as maria_oltp
from encbench.engines.mariadb import sysbench as sb
from encbench.errors import BadValueError, CheckFailedError
from encbench.lab import runner
from encbench.probes import DEFAULT_PROBES
from encbench.util import interrupts
from encbench.util.units import parse_positive_int, parse_size
from encbench.vocab.oltp import parse_share
from benchlib import progress, run, script_main

ENC, PEER = "encbench", "sysbench"
_TPS = re.compile(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec")
_P95 = re.compile(r"95th percentile:\s+([\d.]+)")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--script", default="oltp_read_only", choices=sb.SCRIPTS)
    p.add_argument("--encryption", default="off,on", help="encryption values, comma-separated (default off,on)")
    p.add_argument("--memory", default="100%,25%", help="memory shares, comma-separated (default 100%%,25%%)")
    p.add_argument("--rounds", default="4", help="measured runs per tool and cell (default 4)")
    p.add_argument("--seconds", default="10", help="timed window of each run (default 10, encbench's)")
    p.add_argument("--warmup-seconds", default="5", help="untimed warm-up of each run (default 5, encbench's)")
    p.add_argument("--size", default="48MB", help="data per schema (default 48MB, encbench's default --size)")
    p.add_argument("--clients", default="1", help="sysbench threads (default 1)")
    return p.parse_args(argv)


# -- sysbench by hand ----------------------------------------------------------------------

def _status(cur) -> dict[str, int]:
    cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_pages_read', 'Innodb_num_pages_decrypted')")
    return {k: int(v) for k, v in cur.fetchall()}


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sysbench(cmd: list[str], cwd: Path, what: str) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise CheckFailedError(f"sysbench by hand ({what}) failed: {sb.last_error(done.stderr, done.stdout)}")
    return done.stdout


def peer_run(setup: dict, work: Path, schema: str, data: int, *, script: str, share: float, seconds: int,
             warmup: int, clients: int) -> dict:
    """sysbench invoked by hand on the schema, the pool set by hand: its own figures, and the server's CPU and
    page reads around the timed run."""
    from encbench.engines.mariadb.server import Handle

    handle = Handle(**setup["_handle"])
    facts = setup["oltp"]
    conn = handle.connect(ssl_disabled=True)
    try:
        cur = conn.cursor()
        cur.execute("SET GLOBAL innodb_buffer_pool_size = 1048576")
        cur.execute(f"SET GLOBAL innodb_buffer_pool_size = "
                    f"{maria_oltp.pool_bytes_for(share, data, facts['overhead_bytes'], facts['usable'])}")
        c = setup["_conn"]
        cfg = work / "hand.cfg"
        fd = os.open(cfg, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"mysql-password={c['password']}\n")
        base = ["sysbench", f"--config-file={cfg}", "--db-driver=mysql", f"--mysql-host={c['host']}",
                f"--mysql-port={c['port']}", f"--mysql-user={c['user']}", f"--mysql-db={schema}",
                f"--tables={facts['tables']}", f"--table-size={facts['rows_per_table']}", f"--threads={clients}"]
        if share >= 1:
            _sysbench([*base, script, "prewarm"], work, "prewarm")
        _sysbench([*base, f"--time={warmup}", "--rand-type=uniform", script, "run"], work, "warm-up")
        pid = handle.pid()
        s0, c0 = _status(cur), _cpu_s(pid)
        out = _sysbench([*base, f"--time={seconds}", "--rand-type=uniform", "--percentile=95", script, "run"], work,
                        "run")
        s1, c1 = _status(cur), _cpu_s(pid)
    finally:
        conn.close()
    tps, p95 = _TPS.search(out), _P95.search(out)
    if not tps or not p95:
        raise CheckFailedError("sysbench by hand printed no transactions or 95th percentile line")
    n = int(tps.group(1))
    return {"tps": float(tps.group(2)), "latency_p95_ms": float(p95.group(1)), "transactions": n,
            "cpu_us_per_transaction": 1e6 * (c1 - c0) / n,
            "pages_read_per_transaction": (s1["Innodb_pages_read"] - s0["Innodb_pages_read"]) / n}


def encbench_run(ctx, plan: runner.Plan, setup: dict, scratch: Path, variant: dict, warmup: bool = False) -> dict:
    spec = {"workload": "oltp", "variant": variant, "round": 0, "warmup": warmup, "engine": plan.engine.name,
            "setup": setup, "probes": list(DEFAULT_PROBES), "scratch_dir": str(scratch), "params": plan.params["oltp"]}
    op = run(ctx, spec)["operations"][0]
    if op["probe_errors"]:
        print(f"probe errors ({variant}): {op['probe_errors']}", file=sys.stderr)
    x, m = op["extra"], op["metrics"]
    if x.get("memory_held") == 0:
        print(f"warning: {variant}: {x.get('memory_not_held')}", file=sys.stderr)
    n = x["transactions"]
    return {"tps": x["tps"], "latency_p95_ms": x["latency_p95_ms"], "transactions": n,
            "cpu_us_per_transaction": 1e6 * m["cpu_s"] / n, "pages_read_per_transaction": m["pages_read"] / n}


# -- the interleaved runs ------------------------------------------------------------------

def peer_runs(*, script: str = "oltp_read_only", encryptions: tuple[str, ...] = ("off", "on"),
              memories: tuple[str, ...] = ("100%", "25%"), rounds: int = 4, seconds: int = 10, warmup: int = 5,
              size_bytes: int = 48_000_000, clients: int = 1) -> dict:
    """{(encryption, memory): {"encbench": {metric: [per run]}, "sysbench": {...}}} plus "meta": what ran."""
    config = runner.RunConfig(engine="mariadb", workloads=["oltp"], runs=rounds, warmups=0, size_bytes=size_bytes,
                              seed=42, output=Path("unused.json"), data_dir=Path(tempfile.gettempdir()),
                              probes=list(DEFAULT_PROBES), variant_filters=[
                                  f"script={script}", f"encryption={','.join(encryptions)}",
                                  f"memory={','.join(memories)}", f"clients={clients}"],
                              params=[f"seconds={seconds}", f"warmup_seconds={warmup}"])
    plan = runner.plan(config)
    engine = plan.engine
    scratch = Path(tempfile.mkdtemp(prefix="encbench-oltp-peers-"))
    setup: dict = {}
    values: dict = {}
    try:
        setup = engine.prepare(PrepareContext(size_bytes=size_bytes, seed=42, data_dir=scratch, scratch_dir=scratch,
                                              variants=plan.variants, params=plan.params,
                                              progress=lambda m: print(f"  {m}", file=sys.stderr)))
        ctx = runner._context()
        cells = [(e, m) for e in encryptions for m in memories]
        variants = {c: next(v for v in plan.variants if (v["encryption"], v["memory"]) == c) for c in cells}
        items = [(c, t, True) for c in cells for t in (ENC, PEER)]  # one untimed pair per cell first
        for r in range(rounds):
            order = cells if r % 2 == 0 else cells[::-1]
            items += [(c, t, False) for i, c in enumerate(order) for t in ((ENC, PEER) if (r + i) % 2 == 0
                                                                         else (PEER, ENC))]
        for n, (cell, tool, warm) in enumerate(items, 1):
            interrupts.raise_if_stopped()
            progress(f"{n}/{len(items)} {tool} encryption={cell[0]} memory={cell[1]}{' (warmup)' if warm else ''}")
            if tool == ENC:
                row = encbench_run(ctx, plan, setup, scratch, variants[cell], warm)
            else:
                work = scratch / "hand"
                work.mkdir(exist_ok=True)
                row = peer_run(setup, work, setup["oltp"]["schemas"][cell[0]], setup["oltp"]["data_bytes"][cell[0]],
                               script=script, share=float(parse_share(cell[1]).rstrip("%")) / 100, seconds=seconds,
                               warmup=warmup, clients=clients)
            if not warm:
                for k, v in row.items():
                    values.setdefault(cell, {}).setdefault(tool, {}).setdefault(k, []).append(float(v))
    finally:
        progress("")
        if setup:
            engine.cleanup(setup)
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)
    meta = {"script": script, "clients": clients, "seconds": seconds, "warmup_seconds": warmup, "rounds": rounds,
            "size_bytes": size_bytes, "sysbench": (setup.get("oltp") or {}).get("sysbench"),
            "server": (setup.get("server") or {}).get("version"),
            "rows_per_table": (setup.get("oltp") or {}).get("rows_per_table")}
    return {"meta": meta, "cells": values}


def _ratio(est: stats.Estimate) -> str:
    ci = f"[{est.ci[0]:.3f}, {est.ci[1]:.3f}]" if est.ci else "[no CI]"
    agree = "agree" if est.ci and est.ci[0] <= 1 <= est.ci[1] else "DIFFER" if est.ci else "?"
    return f"{est.value:.3f} {ci} {agree}"


def report(result: dict) -> None:
    meta = result["meta"]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"{meta['sysbench']} {meta['script']}, {meta['clients']} client(s), {meta['seconds']} s runs after "
          f"{meta['warmup_seconds']} s warm-ups, {meta['rounds']} rounds per tool, {meta['rows_per_table']:,} rows "
          f"x 4 tables per schema, MariaDB {meta['server']}")
    print("ratio = encbench / sysbench by hand (ratio of trimmed geometric means, Yuen-Welch 95% CI); "
          "agree: the CI holds 1")
    for (enc, mem), tools in result["cells"].items():
        e, p = tools[ENC], tools[PEER]
        print(f"  encryption={enc} memory={mem}:")
        for key, label in (("tps", "TPS"), ("latency_p95_ms", "p95 ms"), ("cpu_us_per_transaction", "server µs/txn"),
                           ("pages_read_per_transaction", "page reads/txn")):
            line = f"    {label:<15} sysbench {mean(p[key]):>9.3f}  encbench {mean(e[key]):>9.3f}"
            if key in ("tps", "latency_p95_ms", "cpu_us_per_transaction") and min(p[key] + e[key]) > 0:
                line += f"  ratio {_ratio(stats.ratio_ci(p[key], e[key]))}"
            print(line)
        per_txn = stats.difference_ci([1e6 / x for x in p["tps"]], [1e6 / x for x in e["tps"]])
        cpu = stats.difference_ci(p["cpu_us_per_transaction"], e["cpu_us_per_transaction"])
        fmt = lambda est: (f"{est.value:+.1f} µs [{est.ci[0]:+.1f}, {est.ci[1]:+.1f}]"  # noqa: E731
                           if est.ci else f"{est.value:+.1f} µs")
        print(f"    encbench's own overhead per transaction: elapsed {fmt(per_txn)}, server CPU {fmt(cpu)}")


def _main(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    encs = tuple(x.strip() for x in args.encryption.split(",") if x.strip())
    if not encs or set(encs) - {"off", "on"}:
        raise BadValueError(f"--encryption {args.encryption!r}: use off, on or off,on")
    mems = tuple(parse_share(x) for x in args.memory.split(",") if x.strip())
    result = peer_runs(script=args.script, encryptions=encs, memories=mems,
                       rounds=parse_positive_int(args.rounds, what="--rounds", maximum=100),
                       seconds=parse_positive_int(args.seconds, what="--seconds", maximum=3600),
                       warmup=parse_positive_int(args.warmup_seconds, what="--warmup-seconds", maximum=3600),
                       size_bytes=parse_size(args.size), clients=parse_positive_int(args.clients, what="--clients",
                                                                                   maximum=256))
    report(result)
    print(f"wall time {time.monotonic() - t0:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    return script_main("oltp_peers_mariadb", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

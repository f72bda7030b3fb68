"""Does encbench's oltp workload on PostgreSQL report what pgbench itself reports? (the peer: pgbench by hand)

On ONE private server (the oltp workload's own: engine.prepare starts it and loads pgbench -i -s SCALE into
the run's schema), per cell (script x tls x memory) two ways of running the same mix, interleaved:
  encbench  the oltp workload as `encbench run` runs it: engine.apply_variant (shared_buffers for the memory
            share, a restart when it changes), a fresh worker process, every default probe; its warm-up
            (pg_prewarm, pgbench -v for warmup_seconds, the memory cgroup limited) then pgbench -n -l for
            `seconds`; its tps (pgbench's own line) and p95 (from the -l log) are its figures;
  pgbench   what a DBA types on the same server right after: `pgbench -b SCRIPT -c C -j C -T WARMUP -v` (its
            warm-up), then `pgbench -b SCRIPT -c C -j C -T SECONDS -n -l`, with the same session settings
            (PGOPTIONS -c synchronous_commit=off and the search_path) and PGSSLMODE=disable|require; the
            server as encbench's variant left it (same shared_buffers; the memory cgroup's limit as the last
            encbench warm-up set it, so the OS page cache is held the same way).
Per round the cells alternate their order (A B / B A) and within a cell the two tools theirs; one warm-up
pair per cell first, dropped.

Printed per cell: mean tps and p95 of each tool, encbench / pgbench with the 95% CI of the analysis's
ratio_ci (agreement: the CI holds 1), and encbench's own cost per transaction: 1/tps(encbench) -
1/tps(pgbench) in µs (what its probes, its fresh process and its checks add to the window, if anything).

`peer_runs(...)` returns the runs (one dict per measured run) for bench/oltp_vs_peers.py.

Usage: .venv/bin/python bench/oltp_peers_postgres.py [--runs 3] [--seconds 10] [--warmup-seconds 5]
       [--script tpcb-like,select-only] [--tls off,on] [--memory 100%,25%] [--clients 1] [--size 48MB]
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
from encbench.engines.postgres import oltp, pgbench
from encbench.errors import CheckFailedError
from encbench.host import memcg
from encbench.lab import runner
from encbench.probes import DEFAULT_PROBES
from encbench.util import interrupts
from encbench.util.units import parse_positive_int, parse_size
from benchlib import progress, run, script_main

ENC, PEER = "encbench", "pgbench"


def _cells(scripts, tls, memory, clients) -> list[dict]:
    return [{"memory": m, "tls": t, "clients": str(clients), "script": s} for s in scripts for m in memory for t in tls]


def _schedule(cells: list[dict], runs: int) -> list[tuple[dict, str, bool]]:
    """(cell, tool, warmup): a warm-up pair per cell, then rounds in A B / B A order."""
    items = [(c, tool, True) for c in cells for tool in (ENC, PEER)]
    for r in range(runs):
        for i, c in enumerate(cells if r % 2 == 0 else cells[::-1]):
            items += [(c, tool, False) for tool in ((ENC, PEER) if (r + i) % 2 == 0 else (PEER, ENC))]
    return items


def _peer(setup: dict, cell: dict, seconds: int, warmup_seconds: int, scratch: Path, limit=None) -> dict:
    """pgbench by hand: its warm-up, then (the memory cgroup limited as encbench's warm-up limited it: `limit`)
    the timed run with its own -l log."""
    tool, schema = setup["oltp"]["pgbench"], setup["schema"]
    tls_params = {"sslmode": "require" if cell["tls"] != "off" else "disable"}
    env = pgbench.environment(setup["_oltp_access"]["conninfo"], tls_params, "pgbench-by-hand",
                              {"search_path": schema, **pgbench.OLTP_SESSION})
    base = [tool, "-b", cell["script"], "-c", cell["clients"], "-j", cell["clients"]]
    for cmd in ([*base, "-T", str(max(1, warmup_seconds)), "-v"], [*base, "-T", str(seconds), "-n", "-l",
                                                                   f"--log-prefix={scratch / 'peer'}"]):
        if "-n" in cmd and limit is not None:
            limit()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=scratch, timeout=seconds + 600)
        if done.returncode != 0:
            raise CheckFailedError(f"pgbench by hand failed: {pgbench.redact(done.stderr.strip()[-600:])}")
    lat, failed = pgbench.read_log(scratch, "peer")
    for f in scratch.glob("peer.*"):
        f.unlink()
    tps = re.search(r"tps = ([0-9.]+)", done.stdout)
    return {"tps": float(tps.group(1)), "transactions": len(lat), "latency_p95_ms": pgbench.percentile(lat, 95),
            "latency_p50_ms": pgbench.percentile(lat, 50), "failed_transactions": failed}


def _encbench(plan, setup: dict, cell: dict, warmup: bool, scratch: Path, ctx) -> dict:
    server = plan.engine.apply_variant(setup, cell, "oltp")
    spec = {"workload": "oltp", "variant": cell, "round": 0, "warmup": warmup, "engine": plan.engine.name,
            "setup": setup, "probes": list(DEFAULT_PROBES), "scratch_dir": str(scratch),
            "params": plan.params["oltp"]}
    op = run(ctx, spec)["operations"][0]
    e, m = op["extra"], op["metrics"]
    return {"tps": e["tps"], "transactions": e["transactions"], "latency_p95_ms": e["latency_p95_ms"],
            "latency_p50_ms": e["latency_p50_ms"], "cpu_us_per_transaction": 1e6 * m["cpu_s"] / e["transactions"],
            "pages_read_per_transaction": m["pages_read"] / e["transactions"], "memory_held": e.get("memory_held"),
            "shared_buffers": server.get("shared_buffers"), "os_cache_limit_bytes": e.get("memory_os_cache_limit_bytes")}


def peer_runs(*, scripts=("tpcb-like",), tls=("off", "on"), memory=("100%",), clients: int = 1, runs: int = 3,
              seconds: int = 10, warmup_seconds: int = 5, size_bytes: int = 48 << 20,
              on_progress=progress) -> tuple[dict, list[dict]]:
    """Prepare the private server, run the schedule, clean up: (facts, one dict per measured run:
    {"tool": "encbench"|"pgbench", "cell": {...}, "tps", "latency_p95_ms", ...})."""
    work = Path(tempfile.mkdtemp(prefix="encbench-oltppeer-", dir="/tmp"))
    os.chmod(work, 0o755)
    plan = setup = None
    out: list[dict] = []
    try:
        config = runner.RunConfig(
            engine="postgres", workloads=["oltp"],
            variant_filters=[f"script={','.join(scripts)}", f"tls={','.join(tls)}", f"memory={','.join(memory)}",
                             f"clients={clients}"],
            runs=runs, warmups=1, size_bytes=size_bytes, seed=1, output=work / "unused.json", data_dir=work,
            probes=list(DEFAULT_PROBES), params=[f"seconds={seconds}", f"warmup_seconds={warmup_seconds}"])
        plan = runner.plan(config)
        plan.engine.check_available()
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=work))
        os.chmod(scratch, 0o755)
        pctx = PrepareContext(size_bytes=size_bytes, seed=1, data_dir=work, scratch_dir=scratch,
                              variants=plan.variants, progress=on_progress, params=plan.params)
        setup = plan.engine.prepare(pctx)
        facts = {"pgbench": setup["oltp"]["pgbench_version"], "scale": setup["oltp"]["scale"],
                 "data_bytes": setup["oltp"]["servers"]["tls"]["data_bytes"],
                 "server": setup["versions"].get("postgresql_server"),
                 "os_cache": setup["oltp"].get("os_cache_not_held") or "held (memory cgroup)"}
        ctx = runner._context()
        items = _schedule(_cells(scripts, tls, memory, clients), runs)
        limits: dict[tuple, int | None] = {}  # the OS cache limit encbench's last warm-up of a cell set
        group = setup["oltp"]["servers"]["tls"].get("cgroup")
        for n, (cell, tool, warmup) in enumerate(items, 1):
            interrupts.raise_if_stopped()
            on_progress(f"run {n}/{len(items)}: {tool} {cell}{' (warmup)' if warmup else ''}")
            key = tuple(sorted(cell.items()))
            if tool == ENC:
                row = _encbench(plan, setup, cell, warmup, scratch, ctx)
                limits[key] = row["os_cache_limit_bytes"]
            else:  # the server as encbench's variant has it: its shared_buffers, its memory cgroup's limit
                plan.engine.apply_variant(setup, cell, "oltp")  # unlimited for the warm-up (its VACUUM too)
                limit = (lambda k=key: memcg.Group(Path(group)).set_limit(limits[k])) if group and limits.get(key) else None
                row = _peer(setup, cell, seconds, warmup_seconds, scratch, limit)
            if not warmup:
                out.append({"tool": tool, "cell": dict(cell), **row})
        return facts, out
    finally:
        with interrupts.deferred():
            if setup is not None:
                plan.engine.cleanup(setup)
            shutil.rmtree(work, ignore_errors=True)
            on_progress("")


def _ratio(peer: list[float], enc: list[float]) -> str:
    est = stats.ratio_ci(peer, enc)
    ci = f"[{est.ci[0]:.3f}, {est.ci[1]:.3f}]" if est.ci else "[no CI]"
    agree = "agree" if est.ci and est.ci[0] <= 1 <= est.ci[1] else "differ" if est.ci else "?"
    return f"{est.value:.3f} {ci} {agree}"


def report(facts: dict, rows: list[dict]) -> None:
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    print(f"PostgreSQL {facts['server']}, pgbench {facts['pgbench']}, scale {facts['scale']} "
          f"({facts['data_bytes'] / 1e6:.1f} MB), OS page cache: {facts['os_cache']}")
    print("per cell: mean of the runs; encbench/pgbench ratio with the 95% CI (agree: it holds 1); "
          "encbench's own cost = 1/tps(encbench) - 1/tps(pgbench)")
    cells = list({tuple(sorted(r["cell"].items())): r["cell"] for r in rows}.values())
    for cell in cells:
        enc = [r for r in rows if r["cell"] == cell and r["tool"] == ENC]
        peer = [r for r in rows if r["cell"] == cell and r["tool"] == PEER]
        tps_e, tps_p = [r["tps"] for r in enc], [r["tps"] for r in peer]
        p95_e, p95_p = [r["latency_p95_ms"] for r in enc], [r["latency_p95_ms"] for r in peer]
        own = 1e6 * (1 / mean(tps_e) - 1 / mean(tps_p))
        name = f"{cell['script']} memory={cell['memory']} tls={cell['tls']} clients={cell['clients']}"
        print(f"  {name}: tps pgbench {mean(tps_p):,.0f}, encbench {mean(tps_e):,.0f}: {_ratio(tps_p, tps_e)}; "
              f"p95 pgbench {mean(p95_p):.3f} ms, encbench {mean(p95_e):.3f} ms: {_ratio(p95_p, p95_e)}; "
              f"encbench's own cost {own:+.1f} µs per transaction; server CPU {mean([r['cpu_us_per_transaction'] for r in enc]):.0f} "
              f"µs, pages read {mean([r['pages_read_per_transaction'] for r in enc]):.2f} per transaction "
              f"(encbench's runs, {len(enc)} + {len(peer)})")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="3")
    p.add_argument("--seconds", default="10")
    p.add_argument("--warmup-seconds", default="5")
    p.add_argument("--script", default="tpcb-like,select-only")
    p.add_argument("--tls", default="off,on")
    p.add_argument("--memory", default="100%")
    p.add_argument("--clients", default="1")
    p.add_argument("--size", default="48MB")
    return p.parse_args(argv)


def _main(args) -> int:
    t0 = time.monotonic()
    facts, rows = peer_runs(scripts=tuple(args.script.split(",")), tls=tuple(args.tls.split(",")),
                            memory=tuple(args.memory.split(",")), clients=parse_positive_int(args.clients, what="--clients"),
                            runs=parse_positive_int(args.runs, what="--runs"),
                            seconds=parse_positive_int(args.seconds, what="--seconds"),
                            warmup_seconds=int(args.warmup_seconds), size_bytes=parse_size(args.size))
    report(facts, rows)
    print(f"took {time.monotonic() - t0:.0f} s")
    return 0


def main(argv=None) -> int:
    return script_main("oltp_peers_postgres", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

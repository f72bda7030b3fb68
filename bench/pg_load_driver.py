"""Does encbench's roundtrip workload measure what plain pgbench measures? (the load driver)

On ONE private PostgreSQL server (engine.prepare starts it; `pgbench -i -s 1` then loads
pgbench's own tables into it), two ways of driving small SELECTs at C clients, TLS off and on:
  pgbench   plain `pgbench -n -S -c C -j C -T S` (the built-in select-only script,
            simple query protocol unless --plain-protocol prepared) with PGSSLMODE=disable
            or require; its figure is the tps pgbench prints (without connection time);
  encbench  the roundtrip workload as `encbench run` runs it: a fresh worker process
            (runner.run_in_fresh_process), every default probe, engine.apply_variant before the run,
            variant tls=off/on and clients=C; it drives pgbench itself (-M prepared, a
            custom primary-key SELECT script, -l latency log) and reports qps = logged
            transactions / duration, which is its figure here.
Same duration, interleaved (per round the clients x tls cells alternate their order, and
within a cell the tools alternate A B / B A), one warmup per tool and cell dropped.

Printed per clients x tls: mean qps of each tool and qps(encbench) / qps(pgbench) with
the bootstrap 95% CI of encbench.analysis.stats.ratio_ci; per clients: each tool's TLS overhead
(qps on / qps off - 1, with CI) and their difference in percentage points (bootstrap CI,
the four groups resampled independently). The project's goals: ratio >= 0.9, and the two
TLS overheads within 3 points of each other: met when the whole CI satisfies the goal,
not met when none of it does, undecided otherwise.

Usage: .venv/bin/python bench/pg_load_driver.py [--runs 3] [--seconds 3] [--clients 1,2]
       [--plain-protocol simple|extended|prepared] [--warmups 1]
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

import numpy as np

from encbench.util import interrupts
from encbench.lab import runner
from encbench.analysis import stats
from encbench.engines import PrepareContext
from encbench.errors import BadValueError, CheckFailedError, EncbenchError, EngineUnavailableError
from encbench.probes import DEFAULT_PROBES
from encbench.util.units import parse_positive_int
from benchlib import add_pin_argument, cleanup, pin, progress, run, script_main

PG, ENC = "pgbench", "encbench"
TLS = ("off", "on")
SSLMODE = {"off": "disable", "on": "require"}
RATIO_GOAL = 0.9
POINTS_GOAL = 3.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="3", help="measured runs per tool, clients and tls (default 3)")
    p.add_argument("--warmups", default="1", help="warmup runs per tool, clients and tls, dropped (default 1)")
    p.add_argument("--seconds", default="3", help="duration of each run in whole seconds (default 3)")
    p.add_argument("--clients", default="1,2", help="client counts, comma-separated (default 1,2)")
    p.add_argument("--plain-protocol", default="simple", choices=("simple", "extended", "prepared"),
                   help="-M of the plain pgbench runs (default simple, pgbench's own default)")
    add_pin_argument(p)
    return p.parse_args(argv)


def pg_env(conninfo: dict, tls: str | None, appname: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update({"PGHOST": str(conninfo["host"]), "PGPORT": str(conninfo["port"]), "PGUSER": str(conninfo["user"]),
                "PGDATABASE": str(conninfo["dbname"]), "PGAPPNAME": appname})
    if conninfo.get("password"):
        env["PGPASSWORD"] = str(conninfo["password"])
    if tls is not None:
        env["PGSSLMODE"] = SSLMODE[tls]
    return env


def _run(cmd: list[str], env: dict, timeout: float, what: str) -> str:
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as e:
        raise EngineUnavailableError(f"{what} failed: {e}") from None
    if out.returncode != 0:
        last = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise CheckFailedError(f"{what} failed (exit {out.returncode}): {last[0]}")
    return out.stdout


def load_pgbench_tables(pgbench: str, conninfo: dict) -> None:
    _run([pgbench, "-i", "-s", "1", "-q"], pg_env(conninfo, "off", "pgbench-init"), 300, "pgbench -i -s 1")


def check_plain_tls(conninfo: dict) -> dict[str, str]:
    """What the server reports for a plain libpq connection with each sslmode (pg_stat_ssl)."""
    import psycopg

    out = {}
    for tls, mode in SSLMODE.items():
        with psycopg.connect(**conninfo, sslmode=mode, autocommit=True) as conn:
            ssl, version, cipher = conn.execute(
                "SELECT ssl, version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()
        if bool(ssl) != (tls == "on"):
            raise CheckFailedError(f"sslmode={mode} gave ssl={ssl} on the server")
        out[tls] = f"{version} {cipher}" if ssl else "no TLS"
    return out


def plain_run(pgbench: str, conninfo: dict, clients: int, tls: str, seconds: int, protocol: str) -> dict:
    cmd = [pgbench, "-n", "-S", "-M", protocol, "-c", str(clients), "-j", str(clients), "-T", str(seconds)]
    out = _run(cmd, pg_env(conninfo, tls, "pgbench-plain"), seconds + 120, "plain pgbench -S")
    tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    n = re.search(r"number of transactions actually processed: (\d+)", out)
    if not tps:
        raise CheckFailedError(f"no tps line in pgbench's output: {out.strip().splitlines()[-1:]}")
    return {"qps": float(tps.group(1)), "transactions": int(n.group(1)) if n else None}


def schedule(cells: list[tuple[int, str]], runs: int, warmups: int) -> list[tuple[str, int, str, bool]]:
    """(tool, clients, tls, warmup): warmups first, then interleaved rounds."""
    tools = [PG, ENC]
    items = [(t, c, tls, True) for _ in range(warmups) for c, tls in cells for t in tools]
    for r in range(runs):
        order = cells if r % 2 == 0 else cells[::-1]
        for i, (c, tls) in enumerate(order):
            items += [(t, c, tls, False) for t in (tools if (r + i) % 2 == 0 else tools[::-1])]
    return items


def measure(plan: runner.Plan, setup: dict, scratch: Path, items: list, seconds: int,
            protocol: str) -> dict[tuple[str, int, str], dict[str, list[float]]]:
    """(tool, clients, tls) -> name -> one value per measured run."""
    values: dict[tuple[str, int, str], dict[str, list[float]]] = {}
    conninfo = dict(setup["_conninfo"])
    ctx = runner._context()
    try:
        for n, (tool, clients, tls, warmup) in enumerate(items, 1):
            interrupts.raise_if_stopped()
            progress(f"run {n}/{len(items)}: {tool} clients={clients} tls={tls}{' (warmup)' if warmup else ''}")
            variant = {"tls": tls, "clients": str(clients)}
            if tool == PG:
                row = plain_run(setup["pgbench"], conninfo, clients, tls, seconds, protocol)
            else:
                server = plan.engine.apply_variant(setup, variant)
                if server.get("skip"):
                    raise EncbenchError(f"roundtrip tls={tls} skipped by the engine: {server['skip']}")
                spec = {"workload": "roundtrip", "variant": variant, "round": 0, "warmup": warmup,
                        "engine": plan.engine.name, "setup": setup, "probes": list(DEFAULT_PROBES),
                        "scratch_dir": str(scratch), "params": plan.params["roundtrip"]}
                op = run(ctx, spec)["operations"][0]
                if op["probe_errors"]:
                    print(f"probe errors ({tool} clients={clients} tls={tls}): {op['probe_errors']}", file=sys.stderr)
                row = {k: v for k, v in op["extra"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            if warmup:
                continue
            cell = values.setdefault((tool, clients, tls), {})
            for k, v in row.items():
                if v is not None:
                    cell.setdefault(k, []).append(float(v))
    finally:
        progress("")
        if sys.stderr.isatty():
            print("\r", end="", file=sys.stderr, flush=True)
    return values


def overhead_difference_ci(e_off, e_on, p_off, p_on, n_resamples: int = stats.N_RESAMPLES,
                           seed: int = 0) -> tuple[float, tuple[float, float]]:
    """(encbench TLS overhead - pgbench TLS overhead) in points, with a percentile bootstrap 95% CI."""
    groups = [np.asarray(g, dtype=float) for g in (e_off, e_on, p_off, p_on)]
    point = 100 * ((groups[1].mean() / groups[0].mean()) - (groups[3].mean() / groups[2].mean()))
    rng = np.random.default_rng(seed)
    means = [g[rng.integers(0, g.size, size=(n_resamples, g.size))].mean(axis=1) for g in groups]
    boot = 100 * (means[1] / means[0] - means[3] / means[2])
    alpha = (1 - stats.CONFIDENCE) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return float(point), (float(lo), float(hi))


def _ci(est: stats.Estimate, digits: int = 3) -> str:
    return f"[{est.ci[0]:.{digits}f}, {est.ci[1]:.{digits}f}]" if est.ci else "[no CI]"


def report(values: dict, clients_list: list[int], runs: int, protocol: str) -> None:
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    goals = []
    print()
    print(f"queries/s, mean of {runs} runs; ratio = qps(encbench) / qps(pgbench), bootstrap 95% CI")
    print(f"  {'clients':>7} {'tls':>4} {'pgbench':>9} {'encbench':>9}  {'ratio':>6} {'95% CI':>16}  "
          f"{'verdict':<16} goal >= {RATIO_GOAL}   (encbench's own pgbench tps / pgbench: ratio)")
    for c in clients_list:
        for tls in TLS:
            p, e = values[(PG, c, tls)]["qps"], values[(ENC, c, tls)]["qps"]
            est = stats.ratio_ci(p, e)
            if est.ci and est.ci[0] >= RATIO_GOAL:
                g = "MET"
            elif est.ci and est.ci[1] < RATIO_GOAL:
                g = "NOT MET"
            else:
                g = "undecided"
            goals.append((f"ratio clients={c} tls={tls}", g, est.value >= RATIO_GOAL))
            own = values[(ENC, c, tls)].get("pgbench_tps", [])
            own_text = f"{stats.ratio_ci(p, own).value:.3f}" if own else "-"
            print(f"  {c:>7} {tls:>4} {mean(p):>9,.0f} {mean(e):>9,.0f}  {est.value:>6.3f} {_ci(est):>16}  "
                  f"{'significant' if est.significant else 'not significant':<16} {g:<12}   ({own_text})")
            for tool, xs in ((PG, p), (ENC, e)):
                for w in stats.warnings_for(xs, label=tool):
                    if " runs (< " not in w:
                        print(f"  {'':>12} warning: {w}")
    print()
    print("TLS overhead = qps(tls=on) / qps(tls=off) - 1 (negative: TLS costs throughput), bootstrap 95% CI; "
          f"difference = encbench - pgbench in points; goal: within {POINTS_GOAL:g} points")
    for c in clients_list:
        p_off, p_on = values[(PG, c, "off")]["qps"], values[(PG, c, "on")]["qps"]
        e_off, e_on = values[(ENC, c, "off")]["qps"], values[(ENC, c, "on")]["qps"]
        po, eo = stats.ratio_ci(p_off, p_on), stats.ratio_ci(e_off, e_on)
        diff, (lo, hi) = overhead_difference_ci(e_off, e_on, p_off, p_on)
        if -POINTS_GOAL <= lo and hi <= POINTS_GOAL:
            g = "MET"
        elif hi < -POINTS_GOAL or lo > POINTS_GOAL:
            g = "NOT MET"
        else:
            g = "undecided"
        goals.append((f"TLS overheads clients={c}", g, abs(diff) <= POINTS_GOAL))

        def pct(est):
            return (f"{(est.value - 1) * 100:+.1f}% [{(est.ci[0] - 1) * 100:+.1f}%, {(est.ci[1] - 1) * 100:+.1f}%]"
                    if est.ci else f"{(est.value - 1) * 100:+.1f}%")

        print(f"  clients={c}: pgbench {pct(po)}, encbench {pct(eo)}; difference {diff:+.1f} points "
              f"[{lo:+.1f}, {hi:+.1f}]: goal {g}")
    if runs < stats.MIN_RUNS:
        print(f"  warning: only {runs} runs per tool and cell: the CIs are rough (bootstrap of {runs} values)")
    print()
    print(f"goals (ratio >= {RATIO_GOAL}, TLS overheads within {POINTS_GOAL:g} points), by the 95% CI "
          "(by the point estimate alone):")
    for k, v, ok in goals:
        print(f"  {k:<26} {v:<10} ({'within' if ok else 'outside'} the goal)")
    verdicts = {v for _, v, _ in goals}
    overall = "NOT MET" if "NOT MET" in verdicts else ("MET" if verdicts == {"MET"} else "NOT SHOWN (undecided)")
    points = sum(ok for _, _, ok in goals)
    print(f"  overall by the 95% CIs: {overall}; by the point estimates: {points} of {len(goals)} within the goals")
    if protocol != "prepared":
        print(f"  note: plain pgbench used -M {protocol}, encbench's roundtrip uses -M prepared "
              f"(and its own table and script, -l logging, probes): rerun with --plain-protocol prepared "
              f"to take the protocol out of the comparison")


def _main(args: argparse.Namespace) -> int:
    t_start = time.monotonic()
    runs = parse_positive_int(args.runs, what="--runs", maximum=1000)
    warmups = 0 if args.warmups.strip() == "0" else parse_positive_int(args.warmups, what="--warmups", maximum=100)
    seconds = parse_positive_int(args.seconds, what="--seconds", maximum=3600)
    try:
        clients_list = sorted({int(x) for x in args.clients.split(",") if x.strip()})
    except ValueError:
        raise BadValueError(f"--clients {args.clients!r} is not a comma-separated list of numbers") from None
    if not clients_list or any(not 1 <= c <= 256 for c in clients_list):
        raise BadValueError(f"--clients {args.clients!r}: use numbers from 1 to 256")
    work = Path(tempfile.mkdtemp(prefix="encbench-pgload-"))
    plan = setup = None
    try:
        config = runner.RunConfig(
            engine="postgres", workloads=["roundtrip"],
            variant_filters=["tls=off,on", "clients=" + ",".join(map(str, clients_list))],
            runs=runs, warmups=warmups, size_bytes=1, seed=1, output=work / "unused.json", data_dir=work,
            probes=list(DEFAULT_PROBES), params=[f"seconds={seconds}"],
        )
        plan = runner.plan(config)  # checks every name and value
        plan.engine.check_available()
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=work))
        ctx = PrepareContext(size_bytes=1, seed=1, data_dir=work, scratch_dir=scratch, variants=plan.variants,
                             progress=progress, params=plan.params)
        setup = plan.engine.prepare(ctx)  # starts the one private server of this script
        placement = pin(plan.engine, setup, args.pin)
        if not setup.get("pgbench"):
            raise EngineUnavailableError("pgbench not found", hint="apt-get install postgresql")
        conninfo = dict(setup["_conninfo"])
        progress("pgbench -i -s 1")
        load_pgbench_tables(setup["pgbench"], conninfo)
        tls_seen = check_plain_tls(conninfo)
        version = _run([setup["pgbench"], "--version"], os.environ.copy(), 30, "pgbench --version").strip()
        cells = [(c, tls) for c in clients_list for tls in TLS]
        items = schedule(cells, runs, warmups)
        print(f"load driver on PostgreSQL {setup['server']['version']} (private server on loopback), {version}, "
              f"{os.cpu_count()} CPUs")
        print(f"pgbench: pgbench -n -S -M {args.plain_protocol} -c C -j C -T {seconds} after pgbench -i -s 1 "
              f"(PGSSLMODE=disable: {tls_seen['off']}; require: {tls_seen['on']})")
        print(f"encbench: roundtrip workload, seconds={seconds}, variants tls=off,on x clients="
              f"{','.join(map(str, clients_list))}, probes {','.join(DEFAULT_PROBES)}, a fresh worker per run")
        print(f"CPU placement: {placement}")
        print(f"{runs} runs per tool, clients and tls + {warmups} warmup(s), interleaved; {len(items)} runs in all")
        values = measure(plan, setup, scratch, items, seconds, args.plain_protocol)
        report(values, clients_list, runs, args.plain_protocol)
        print(f"\ntook {time.monotonic() - t_start:.0f} s")
        return 0
    finally:
        with interrupts.deferred():  # a second Ctrl-C must not cut the clean-up short
            if setup is not None:
                cleanup(plan.engine, setup)
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return script_main("pg_load_driver", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

"""What do the probes themselves cost? (the observer effect)

Runs one workload through the real machinery (runner.plan, engine.prepare, one fresh
forkserver worker process per run, worker.execute) with three probe sets: every probe,
only the wall probe, and wall+cpu. The sets are interleaved per variant (A B C, then
C B A, ...) so drift cancels out; one warmup per variant and set is dropped.

Probes start in ascending rank and stop in descending rank (worker._measure): the wall
clock (highest rank) sees only the operation, the CPU clock next sees the operation plus
the wall probe, and the other probes sit outside both. Two comparisons per variant check
that, each a ratio of means with the bootstrap 95% CI of encbench.analysis.stats.ratio_ci and a
'significant' / 'not significant' verdict:
  - elapsed (wall_s): all probes / wall only. Significant would mean the other probes
    disturb the operation itself (caches, scheduling), since their reads are not timed.
  - CPU (cpu_s): all probes / wall+cpu. Significant would mean the other probes' work
    leaks into cpu_s.

Then cpu_s of an empty operation (the first of a fresh worker process), all probes vs
wall+cpu, which isolates what the other probes add to cpu_s at their costliest; and a
micro-measurement: the mean cost of one start+stop cycle of each probe (a loop of
--cycles cycles in this process), and the cost of its first cycle in a fresh worker
process, which is what the first operation of every run pays.

Usage: .venv/bin/python bench/observer_overhead.py [--runs N] [--size 8MB]
       [--workload scan-eq] [--data-dir DIR] [--cycles 2000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from encbench.lab import runner
from encbench.analysis import stats
from encbench.lab import worker
from encbench.engines import ENGINES, PrepareContext
from encbench.host.oscache import filesystem_of
from encbench.probes import DEFAULT_PROBES, PROBES, Target
from encbench.util.units import fmt_bytes, fmt_seconds, parse_positive_int, parse_size
from encbench.vocab.variants import label
from benchlib import progress, run, script_main

ALL, WALL, WALL_CPU = "all", "wall only", "wall+cpu"
PROBE_SETS = {ALL: list(DEFAULT_PROBES), WALL: ["wall"], WALL_CPU: ["wall", "cpu"]}
COMPARISONS = (  # (metric, what it means, contender set, baseline set)
    ("wall_s", "elapsed", ALL, WALL),
    ("cpu_s", "CPU", ALL, WALL_CPU),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="10", help="measured runs per variant and probe set (default 10)")
    p.add_argument("--size", default="8MB", help="data size (default 8MB)")
    p.add_argument("--workload", default="scan-eq", help="workload to run (default scan-eq)")
    p.add_argument("--engine", default="sqlite", help="engine (default sqlite)")
    p.add_argument("--seed", default="42", help="data generation seed (default 42)")
    p.add_argument("--data-dir", default=None,
                   help="where the data is generated (default: a temporary directory, removed at the end)")
    p.add_argument("--cycles", default="2000", help="start+stop cycles per probe in the micro-measurement")
    return p.parse_args(argv)


def _pool(engine) -> ProcessPoolExecutor:
    """The runner's kind of pool: forkserver, encbench.lab.worker preloaded, one fresh process per run."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["encbench.lab.worker"])
    return ProcessPoolExecutor(max_workers=1, mp_context=ctx, max_tasks_per_child=1)


def measure_runs(plan: runner.Plan, workload: str, setup: dict, scratch: Path,
                 runs: int) -> dict[str, dict[str, dict[str, list[float]]]]:
    """variant label -> probe set -> metric -> one value per measured run (operations added up)."""
    out = {label(v): {s: {} for s in PROBE_SETS} for v in plan.variants}
    names = list(PROBE_SETS)
    items = [(v, s, True) for v in plan.variants for s in names]  # warmups first, as the runner does
    for r in range(runs):
        variants = plan.variants if r % 2 == 0 else plan.variants[::-1]
        for i, v in enumerate(variants):
            order = names if (r + i) % 2 == 0 else names[::-1]  # A B C, then C B A: drift cancels out
            items += [(v, s, False) for s in order]
    ctx = runner._context()
    try:
        for n, (v, probe_set, warmup) in enumerate(items, 1):
            progress(f"run {n}/{len(items)}", 40)
            spec = {"workload": workload, "variant": v, "round": 0, "warmup": warmup,
                    "engine": plan.engine.name, "setup": setup, "probes": PROBE_SETS[probe_set],
                    "scratch_dir": str(scratch)}
            result = run(ctx, spec)
            totals: dict[str, float] = {}
            for op in result["operations"]:
                if op["probe_errors"]:
                    print(f"\n  probe errors in {label(v)} {probe_set}: {op['probe_errors']}", file=sys.stderr)
                for metric, value in op["metrics"].items():
                    totals[metric] = totals.get(metric, 0.0) + value
            if not warmup:
                for metric, value in totals.items():
                    out[label(v)][probe_set].setdefault(metric, []).append(value)
    finally:
        progress("", 40)
        if sys.stderr.isatty():
            print("\r", end="", file=sys.stderr, flush=True)
    return out


def _rank(name: str) -> int:
    """Probes start in ascending rank and stop in descending rank (worker._measure)."""
    return getattr(PROBES.get(name), "rank", 0)


def _cycle_costs(probe, target: Target, cycles: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per start+stop cycle."""
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(cycles):
        probe.start(target)
        probe.stop(target)
    return (time.perf_counter() - w0) / cycles * 1e6, (time.process_time() - c0) / cycles * 1e6


def first_cycle(engine_name: str, setup: dict, variant: dict, scratch: str, probe_name: str) -> tuple[float, float]:
    """In a fresh worker process: the first start+stop cycle of one probe on a real session target."""
    engine = ENGINES.get(engine_name)
    session = engine.open_session(setup, variant, mutable=False, scratch_dir=Path(scratch))
    try:
        return _cycle_costs(PROBES.get(probe_name)(), session.target(), 1)
    finally:
        session.close()


def empty_operation(engine_name: str, setup: dict, variant: dict, scratch: str, probes: list[str]) -> dict:
    """In a fresh worker process: the metrics of an operation that does nothing, the first of its session."""
    from encbench.workloads import Operation

    engine = ENGINES.get(engine_name)
    session = engine.open_session(setup, variant, mutable=False, scratch_dir=Path(scratch))
    try:
        no_cache = {k: v for k, v in variant.items() if k != "cache"}  # nothing to drop or preload
        return worker._measure(Operation("empty", lambda: {}), session, no_cache, probes)["metrics"]
    finally:
        session.close()


def empty_runs(plan: runner.Plan, setup: dict, scratch: Path, runs: int) -> dict[str, list[float]]:
    """cpu_s of an empty first operation, all probes vs wall+cpu, interleaved, each in a fresh process."""
    out: dict[str, list[float]] = {ALL: [], WALL_CPU: []}
    pool = _pool(plan.engine)
    try:
        for r in range(runs):
            for probe_set in ((ALL, WALL_CPU) if r % 2 == 0 else (WALL_CPU, ALL)):
                progress(f"empty operation {r + 1}/{runs}", 40)
                m = pool.submit(empty_operation, plan.engine.name, setup, plan.variants[0], str(scratch),
                                PROBE_SETS[probe_set]).result()
                out[probe_set].append(m["cpu_s"])
    finally:
        pool.shutdown(wait=True)
        progress("", 40)
    return out


def micro(plan: runner.Plan, setup: dict, scratch: Path, cycles: int) -> list[dict]:
    variant = plan.variants[0]
    session = plan.engine.open_session(setup, variant, mutable=False, scratch_dir=scratch)
    try:
        targets = {"pid": Target(pids=[os.getpid()]), "session": session.target()}
        rows = []
        for name, cls in PROBES.items():
            row = {"probe": name}
            for tname, target in targets.items():
                probe = cls()
                _cycle_costs(probe, target, 50)  # warm up: the first calls open files, fill caches
                row[tname] = _cycle_costs(probe, target, cycles)
            rows.append(row)
    finally:
        session.close()
    for row in rows:
        pool = _pool(plan.engine)
        try:
            row["first"] = pool.submit(first_cycle, plan.engine.name, setup, variant, str(scratch),
                                       row["probe"]).result()
        finally:
            pool.shutdown(wait=True)
    return rows


def short_labels(variants: list[dict]) -> dict[str, str]:
    """Full variant label -> only the keys that differ between the variants (encryption=on,cache=cold)."""
    varying = [k for k in variants[0] if len({v.get(k) for v in variants}) > 1]
    return {label(v): ",".join(f"{k}={v[k]}" for k in varying if k in v) or label(v) for v in variants}


def report(values: dict, empty: dict[str, list[float]], rows: list[dict], cycles: int,
           names: dict[str, str]) -> None:
    shortened = [f"{short} = {full}" for full, short in names.items() if short != full]
    if shortened:
        print("variants: " + "; ".join(shortened))
    values = {names.get(k, k): v for k, v in values.items()}
    width = max(len(v) for v in values)
    for metric, word, cont, base in COMPARISONS:
        print()
        print(f"{word} ({metric}) of the workload, {cont} / {base} (ratio of means, bootstrap 95% CI)")
        print(f"  {'variant':<{width}}  {base:>10}  {cont:>10}  {'ratio':>6}  {'95% CI':>16}  verdict")
        for vl, by_set in values.items():
            b, c = by_set[base].get(metric, []), by_set[cont].get(metric, [])
            if not b or not c:
                print(f"  {vl:<{width}}  no {metric} values")
                continue
            est = stats.ratio_ci(b, c)
            ratio = f"{est.value:.3f}" if est.value is not None else "-"
            ci = f"[{est.ci[0]:.3f}, {est.ci[1]:.3f}]" if est.ci else "-"
            verdict = "significant" if est.significant else "not significant"
            print(f"  {vl:<{width}}  {fmt_seconds(sum(b) / len(b)):>10}  {fmt_seconds(sum(c) / len(c)):>10}  "
                  f"{ratio:>6}  {ci:>16}  {verdict}")
            diff = stats.difference_ci(b, c)
            if est.significant and diff.ci:
                print(f"  {'':<{width}}  difference {diff.value * 1e6:+.0f} µs "
                      f"[{diff.ci[0] * 1e6:+.0f}, {diff.ci[1] * 1e6:+.0f}] per run")
            warns = stats.warnings_for(b, label=base) + stats.warnings_for(c, label=cont)
            for w in warns:
                if " runs (< " not in w:  # too few runs: said once, below
                    print(f"  {'':<{width}}  warning: {w}")
        n = min(len(x) for by_set in values.values() for x in (by_set[base].get(metric, []), by_set[cont].get(metric, [])))
        if n < stats.MIN_RUNS:
            print(f"  warning: only {n} runs per variant and probe set: the CIs are rough, use --runs 10")

    tests = len(COMPARISONS) * len(values)
    print(f"  ({tests} comparisons at 95%: by chance alone about {1 - 0.95 ** tests:.0%} of the runs of this "
          f"script show at least one 'significant'; a real overhead shows upwards, run after run)")
    print()
    print("what the all-probes runs saw (means per run)")
    for vl, by_set in values.items():
        m = {k: sum(x) / len(x) for k, x in by_set[ALL].items()}
        print(f"  {vl:<{width}}  elapsed {fmt_seconds(m.get('wall_s'))}, CPU {fmt_seconds(m.get('cpu_s'))}, "
              f"{fmt_bytes(m.get('read_bytes'))} read from storage, "
              f"{m.get('pages_read', float('nan')):,.0f} pages read into the engine's cache")

    print()
    b, c = empty[WALL_CPU], empty[ALL]
    diff = stats.difference_ci(b, c)
    ci = f" [{diff.ci[0] * 1e6:+.0f}, {diff.ci[1] * 1e6:+.0f}]" if diff.ci else ""
    print(f"CPU (cpu_s) of an empty operation, the first of a fresh worker process ({len(c)} processes per set): "
          f"wall+cpu {fmt_seconds(sum(b) / len(b))}, all {fmt_seconds(sum(c) / len(c))}, "
          f"difference {diff.value * 1e6:+.0f} µs{ci} ({'significant' if diff.significant else 'not significant'}): "
          f"what the other probes add to the cpu_s of each run's first operation")

    print()
    print(f"one start+stop cycle of each probe: mean of {cycles} cycles in this process on "
          f"Target(pids=[os.getpid()]) and on a real session target (page counters), and the first cycle "
          f"in a fresh worker process (session target)")
    print(f"  {'probe':<6}  {'pid: wall µs':>12}  {'CPU µs':>7}  {'session: wall µs':>16}  {'CPU µs':>7}  "
          f"{'first cycle: wall µs':>20}  {'CPU µs':>7}")
    for r in rows:
        (pw, pc), (sw, sc), (fw, fc) = r["pid"], r["session"], r["first"]
        print(f"  {r['probe']:<6}  {pw:12.2f}  {pc:7.2f}  {sw:16.2f}  {sc:7.2f}  {fw:20.1f}  {fc:7.1f}")
    for clock, metric in (("wall", "wall_s"), ("cpu", "cpu_s")):
        rank = _rank(clock)
        inner = [r for r in rows if r["probe"] != clock and _rank(r["probe"]) > rank]
        if not inner:
            print(f"  inside {metric}: no other probe (the {clock} probe starts last and stops first)")
            continue
        steady, first = sum(r["session"][1] for r in inner), sum(r["first"][1] for r in inner)
        print(f"  inside {metric}: {', '.join(r['probe'] for r in inner)} (higher rank), about {steady:.1f} µs "
              f"of CPU per operation once warm, {first:.0f} µs on the first operation of a run")


def _main(args: argparse.Namespace) -> int:
    runs = parse_positive_int(args.runs, what="--runs", maximum=1000)
    cycles = parse_positive_int(args.cycles, what="--cycles", maximum=10**7)
    size = parse_size(args.size)
    seed = parse_positive_int(args.seed, what="--seed", maximum=2**31)
    own_data = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="encbench-observer-")) if own_data else Path(args.data_dir)
    scratch = None
    try:
        config = runner.RunConfig(
            engine=args.engine, workloads=[args.workload],
            variant_filters=["encryption=off,on", "cache=cold,warm"],
            runs=runs, warmups=1, size_bytes=size, seed=seed, output=data_dir / "unused.json",
            data_dir=data_dir, probes=list(DEFAULT_PROBES),
        )
        plan = runner.plan(config)  # checks every name and value
        plan.engine.check_available()
        data_dir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=data_dir))
        ctx = PrepareContext(size_bytes=size, seed=seed, data_dir=data_dir, scratch_dir=scratch,
                             variants=plan.variants, progress=lambda msg: progress(msg, 40))
        setup = plan.engine.prepare(ctx)
        print(f"observer overhead: {args.engine}/{args.workload}, {setup.get('rows', 0):,} rows ({args.size}), "
              f"data on {filesystem_of(data_dir)}; {runs} runs per variant and probe set + 1 warmup, "
              f"interleaved, each a fresh worker process")
        print("probe sets: " + "; ".join(f"{k} = {','.join(v)}" for k, v in PROBE_SETS.items()))
        values = measure_runs(plan, args.workload, setup, scratch, runs)
        empty = empty_runs(plan, setup, scratch, runs)
        rows = micro(plan, setup, scratch, cycles)
        report(values, empty, rows, cycles, short_labels(plan.variants))
        return 0
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if own_data:
            shutil.rmtree(data_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return script_main("observer_overhead", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

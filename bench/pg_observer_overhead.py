"""What do the probes cost on PostgreSQL, above all the wait-event sampler? (the observer effect)

Runs the PostgreSQL workloads storm and roundtrip through the real machinery
(runner.plan, engine.prepare once: ONE private server for the whole script, then
engine.apply_variant and one fresh forkserver worker process per run, runner.run_in_fresh_process)
with three probe sets:
  all            every probe (encbench's default)
  without waits  every probe except the wait-event sampler
  wall only      the wall clock alone
at tls=off and tls=on. The sets are interleaved per variant (A B C, then C B A, ...),
the variants and workloads alternate their order too, so drift cancels out; one warmup
per workload, variant and set is dropped.

The sampler (probes/waits.py) is a thread in the worker with its own connection, polling
pg_stat_activity every 100 ms. It starts before the other probes and stops after them,
so its connection set-up is outside the timing, but its polling runs beside the
operation: in the client process (the GIL, a CPU) and on the server (a backend, a CPU).

Compared, per workload / operation / tls, as ratios of means with the bootstrap 95% CI of
encbench.analysis.stats.ratio_ci and a 'significant' / 'not significant' verdict:
  - storm: elapsed (wall_s) of each operation;
  - roundtrip: queries per second (the operation's extra 'qps', from pgbench's log).
  all / without waits is the sampler's cost, all / wall only the cost of every probe.
The sampler's overhead (elapsed, or time per query = 1/qps) is checked against the
project's goal (<= 1%): met when the whole 95% CI is at or below 1%, not met when it is
all above, undecided otherwise. Then the sampler thread's own CPU (wait_sampler_cpu_s)
of every run of the 'all' set.

Usage: .venv/bin/python bench/pg_observer_overhead.py [--runs 8] [--messages 100000]
       [--seconds 2] [--clients 1] [--warmups 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from encbench.util import interrupts
from encbench.lab import runner
from encbench.analysis import stats
from encbench.engines import PrepareContext
from encbench.errors import EncbenchError
from encbench.probes import DEFAULT_PROBES
from encbench.util.units import parse_positive_int
from encbench.vocab.variants import label
from benchlib import add_pin_argument, cleanup, pin, progress, run, script_main

ALL, NO_WAITS, WALL = "all", "without waits", "wall only"
PROBE_SETS = {
    ALL: list(DEFAULT_PROBES),
    NO_WAITS: [p for p in DEFAULT_PROBES if p != "waits"],
    WALL: ["wall"],
}
WORKLOADS = ("storm", "roundtrip")
# per workload: the figure compared, its extra/metric source, and whether higher is better
FIGURE = {"storm": ("wall_s", "metric", False), "roundtrip": ("qps", "extra", True)}
GOAL = 0.01  # the sampler may cost at most 1%


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", default="8", help="measured runs per workload, tls and probe set (default 8)")
    p.add_argument("--warmups", default="1", help="warmup runs per workload, tls and probe set, dropped (default 1)")
    p.add_argument("--messages", default="100000", help="storm: messages per storm (default 100000)")
    p.add_argument("--seconds", default="2", help="roundtrip: seconds per run (default 2)")
    p.add_argument("--clients", default="1", help="roundtrip: client connections (default 1)")
    add_pin_argument(p)
    return p.parse_args(argv)


def _variants_of(plan: runner.Plan) -> dict[str, list[dict]]:
    """workload -> its variants, in the plan's order."""
    out: dict[str, list[dict]] = {}
    for item in plan.items:
        vs = out.setdefault(item["workload"], [])
        if item["variant"] not in vs:
            vs.append(item["variant"])
    return out


def schedule(variants: dict[str, list[dict]], runs: int, warmups: int) -> list[tuple[str, dict, str, bool]]:
    """(workload, variant, probe set, warmup): warmups first, then interleaved rounds."""
    names = list(PROBE_SETS)
    items = [(wl, v, s, True) for _ in range(warmups) for wl in WORKLOADS for v in variants[wl] for s in names]
    for r in range(runs):
        for w, wl in enumerate(WORKLOADS if r % 2 == 0 else WORKLOADS[::-1]):
            vs = variants[wl] if (r + w) % 2 == 0 else variants[wl][::-1]
            for i, v in enumerate(vs):
                order = names if (r + w + i) % 2 == 0 else names[::-1]  # A B C, then C B A
                items += [(wl, v, s, False) for s in order]
    return items


def measure(plan: runner.Plan, setup: dict, scratch: Path, items: list) -> tuple[dict, list[str]]:
    """(workload, variant label, op) -> probe set -> name -> one value per measured run."""
    values: dict[tuple[str, str, str], dict[str, dict[str, list[float]]]] = {}
    problems: list[str] = []
    ctx = runner._context()
    try:
        for n, (wl, v, probe_set, warmup) in enumerate(items, 1):
            interrupts.raise_if_stopped()
            progress(f"run {n}/{len(items)}: {wl} {label(v)} {probe_set}{' (warmup)' if warmup else ''}")
            server = plan.engine.apply_variant(setup, v)
            if server.get("skip"):
                raise EncbenchError(f"{wl} {label(v)} skipped by the engine: {server['skip']}")
            spec = {"workload": wl, "variant": v, "round": 0, "warmup": warmup, "engine": plan.engine.name,
                    "setup": setup, "probes": PROBE_SETS[probe_set], "scratch_dir": str(scratch),
                    "params": plan.params[wl]}
            result = run(ctx, spec)
            for op in result["operations"]:
                if op["probe_errors"]:
                    problems.append(f"{wl} {label(v)} {op['operation']} [{probe_set}]: {op['probe_errors']}")
                if warmup:
                    continue
                row = values.setdefault((wl, label(v), op["operation"]), {s: {} for s in PROBE_SETS})[probe_set]
                for k, x in op["metrics"].items():
                    row.setdefault(k, []).append(x)
                for k, x in op["extra"].items():
                    if isinstance(x, (int, float)) and not isinstance(x, bool):
                        row.setdefault("extra:" + k, []).append(float(x))
    finally:
        progress("")
        if sys.stderr.isatty():
            print("\r", end="", file=sys.stderr, flush=True)
    return values, problems


def _series(by_set: dict, probe_set: str, wl: str) -> list[float]:
    name, source, _ = FIGURE[wl]
    return by_set[probe_set].get(name if source == "metric" else "extra:" + name, [])


def _fmt(value: float, wl: str) -> str:
    return f"{value * 1e3:.2f} ms" if FIGURE[wl][0] == "wall_s" else f"{value:,.0f}"


def _ratio_text(base: list[float], cont: list[float]) -> tuple[str, stats.Estimate]:
    est = stats.ratio_ci(base, cont)
    if est.value is None:
        return "no ratio", est
    ci = f"[{est.ci[0]:.3f}, {est.ci[1]:.3f}]" if est.ci else "[no CI]"
    return f"{est.value:.3f} {ci} {'significant' if est.significant else 'not significant'}", est


def _overhead(est: stats.Estimate, higher_is_better: bool) -> tuple[float, tuple[float, float] | None]:
    """The sampler's cost as a fraction of elapsed time (or of time per query = 1/qps)."""
    if higher_is_better:  # all/without qps ratio r: time per query grows by 1/r - 1
        point = 1 / est.value - 1
        ci = (1 / est.ci[1] - 1, 1 / est.ci[0] - 1) if est.ci else None
    else:
        point = est.value - 1
        ci = (est.ci[0] - 1, est.ci[1] - 1) if est.ci else None
    return point, ci


def goal_verdict(point: float, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "undecided (no CI)"
    if ci[1] <= GOAL:
        return "MET (the whole CI is at or below +1%)"
    if ci[0] > GOAL:
        return "NOT MET (the whole CI is above +1%)"
    return "undecided (the CI spans +1%: more runs needed)"


def report(values: dict, runs: int, pinned: str) -> None:
    verdicts = []
    for wl in WORKLOADS:
        name, _, higher = FIGURE[wl]
        what = "elapsed (wall_s), lower is better" if name == "wall_s" else "queries/s (extra qps), higher is better"
        keys = [k for k in values if k[0] == wl]
        for op in dict.fromkeys(k[2] for k in keys):
            print()
            print(f"{wl} / {op}: {what}; mean of {runs} runs per set; ratios of means, bootstrap 95% CI")
            print(f"  {'variant':<18} {ALL:>11} {NO_WAITS:>13} {WALL:>10}   all / without waits (sampler)"
                  f"            all / wall only (every probe)")
            for key in keys:
                if key[2] != op:
                    continue
                by_set = values[key]
                a, nw, w = (_series(by_set, s, wl) for s in (ALL, NO_WAITS, WALL))
                if not (a and nw and w):
                    print(f"  {key[1]:<18} missing values")
                    continue
                mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
                t1, est = _ratio_text(nw, a)
                t2, _ = _ratio_text(w, a)
                print(f"  {key[1]:<18} {_fmt(mean(a), wl):>11} {_fmt(mean(nw), wl):>13} {_fmt(mean(w), wl):>10}   "
                      f"{t1:<40} {t2}")
                if est.value is not None:
                    point, ci = _overhead(est, higher)
                    ci_text = f" [{ci[0] * 100:+.2f}%, {ci[1] * 100:+.2f}%]" if ci else ""
                    v = goal_verdict(point, ci)
                    verdicts.append((f"{wl}/{op} {key[1]}", point, v))
                    print(f"  {'':<18} sampler overhead {point * 100:+.2f}%{ci_text} "
                          f"({'time per query' if higher else 'elapsed'}): goal <= 1% {v}")
                for s, xs in ((ALL, a), (NO_WAITS, nw), (WALL, w)):
                    for msg in stats.warnings_for(xs, label=s):
                        if " runs (< " not in msg:
                            print(f"  {'':<18} warning: {msg}")
    if runs < stats.MIN_RUNS:
        print(f"\nwarning: only {runs} runs per set: the CIs are rough")

    print()
    print("the sampler thread's own CPU (wait_sampler_cpu_s) in each run of the 'all' set, in run order; "
          "wait_samples: mean samples per run; share: sampler CPU / mean elapsed of the operation")
    for key, by_set in values.items():
        cpu = by_set[ALL].get("wait_sampler_cpu_s", [])
        samples = by_set[ALL].get("wait_samples", [])
        wall = by_set[ALL].get("wall_s", [])
        if not cpu:
            print(f"  {key[0]}/{key[2]} {key[1]}: no wait_sampler_cpu_s (the sampler did not run)")
            continue
        mcpu = sum(cpu) / len(cpu)
        share = f"{mcpu / (sum(wall) / len(wall)) * 100:.2f}%" if wall and sum(wall) else "-"
        per_run = " ".join(f"{x * 1e3:.2f}" for x in cpu)
        per_sample = f"{mcpu / (sum(samples) / len(samples)) * 1e6:.0f} µs/sample" if samples and sum(samples) else "- µs/sample"
        print(f"  {key[0] + '/' + key[2]:<22} {key[1]:<18} ms: {per_run}")
        print(f"  {'':<22} {'':<18} mean {mcpu * 1e3:.2f} ms, {sum(samples) / max(1, len(samples)):.1f} samples, "
              f"{per_sample}, share {share}")

    print()
    met = [v for v in verdicts if v[2].startswith("MET")]
    not_met = [v for v in verdicts if v[2].startswith("NOT MET")]
    undecided = [v for v in verdicts if not v[2].startswith(("MET", "NOT MET"))]
    print(f"goal (wait-event sampler <= 1% overhead): met in {len(met)}, not met in {len(not_met)}, "
          f"undecided in {len(undecided)} of {len(verdicts)} workload/op/tls rows")
    for title, group in (("not met", not_met), ("undecided", undecided)):
        for where, point, _ in group:
            print(f"  {title}: {where} ({point * 100:+.2f}%)")
    overall = "NOT MET" if not_met else ("MET" if not undecided else "NOT SHOWN (undecided rows)")
    within = sum(point <= GOAL for _, point, _ in verdicts)
    print(f"  overall by the 95% CIs: {overall}; by the point estimates: {within} of {len(verdicts)} rows at or "
          f"below +1%")
    if pinned == "none" and undecided:
        print("  (on a small machine where the client and the server may share a CPU or not, the scheduler's "
              "placement dominates the noise: --pin same gives stable, worst-case numbers)")
    print(f"  ({len(verdicts) * 2} ratios at 95%: by chance alone some may show 'significant')")


def _main(args: argparse.Namespace) -> int:
    t_start = time.monotonic()
    runs = parse_positive_int(args.runs, what="--runs", maximum=1000)
    warmups = int(args.warmups) if args.warmups.strip() == "0" else parse_positive_int(args.warmups, what="--warmups",
                                                                                      maximum=100)
    clients = parse_positive_int(args.clients, what="--clients", maximum=256)
    work = Path(tempfile.mkdtemp(prefix="encbench-pgobs-"))
    plan = setup = None
    try:
        config = runner.RunConfig(
            engine="postgres", workloads=list(WORKLOADS), variant_filters=["tls=off,on", f"clients={clients}"],
            runs=runs, warmups=warmups, size_bytes=1, seed=1, output=work / "unused.json", data_dir=work,
            probes=list(DEFAULT_PROBES), params=[f"messages={args.messages}", f"seconds={args.seconds}"],
        )
        plan = runner.plan(config)  # checks every name and value
        plan.engine.check_available()
        scratch = Path(tempfile.mkdtemp(prefix="scratch-", dir=work))
        ctx = PrepareContext(size_bytes=1, seed=1, data_dir=work, scratch_dir=scratch, variants=plan.variants,
                             progress=progress, params=plan.params)
        setup = plan.engine.prepare(ctx)  # starts the one private server of this script
        placement = pin(plan.engine, setup, args.pin)
        items = schedule(_variants_of(plan), runs, warmups)
        print(f"observer overhead on PostgreSQL {setup['server']['version']} (private server on loopback, "
              f"ssl_library {setup['server'].get('ssl_library')}); storm messages={plan.params['storm']['messages']}, "
              f"roundtrip seconds={plan.params['roundtrip']['seconds']:g} clients={clients}")
        print(f"{runs} runs per workload, tls and probe set + {warmups} warmup(s), interleaved, each a fresh "
              f"worker process; {len(items)} runs in all")
        print(f"CPU placement: {placement}; {os.cpu_count()} CPUs")
        print("probe sets: " + "; ".join(f"{k} = {','.join(v)}" for k, v in PROBE_SETS.items()))
        values, problems = measure(plan, setup, scratch, items)
        for p in problems:
            print(f"probe errors: {p}")
        report(values, runs, args.pin)
        print(f"\ntook {time.monotonic() - t_start:.0f} s")
        return 0
    finally:
        with interrupts.deferred():  # a second Ctrl-C must not cut the clean-up short
            if setup is not None:
                cleanup(plan.engine, setup)
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return script_main("pg_observer_overhead", _main, parse_args, argv)


if __name__ == "__main__":
    sys.exit(main())

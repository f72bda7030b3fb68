"""A/A check of encbench's verdicts on this machine: K invocations of the same build.

K back-to-back `encbench run` invocations (default 6) of a reduced default suite, each with
placebo twins (`--variant placebo=a,b`: every variant twice, under labels that change
nothing). Nothing differs between them, so every "different" is a false positive. Printed:

- within-run A/A false-positive rate: placebo twins called different (costs/saves) inside
  one invocation, over the elapsed and CPU comparisons that got a verdict;
- cross-run false-positive rate: `compare` of every pair of invocations (absolute rows and
  overhead rows apart);
- the gate's false-alarm rate: `encbench compare A B --fail-if 'overhead>5%'` on every pair
  (exit 17 = a false alarm);
- verdict agreement: how often the same row (workload, operation, contender, metric) gets
  the same verdict in two invocations (over every pair), and how many rows are unanimous;
- the spread of the headline overheads (elapsed, CPU) across the K invocations;
- power: one invocation's encrypted (contender) runs scaled by 1.10 (elapsed and CPU, a
  10% regression of the encrypted side), the gate run on it against each other
  invocation: how often it fails (catches it), and how many overhead rows say "costs".

Goals (issue 12): false positives <= 5%, same verdict >= 95%, a 10% regression caught >= 90%.
It prints its figures; it is a benchmark, not a test.

Usage: .venv/bin/python bench/aa_check.py [--k 6] [--workload W ...] [--size 48MB] [--runs N]
       [--fail-if 'overhead>5%'] [--noise-floor FILE] [--keep DIR] [--from DIR]
(--from re-analyses the aa-*.json of an earlier --keep DIR without running anything.)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from encbench.analysis import summary as analysis
from encbench import cli
from encbench.analysis import compare
from encbench.analysis import gate
from encbench.lab import results
from encbench.lab import selftest
from encbench.errors import BadValueError, RunFailedError, UsageError
from encbench.util.units import parse_positive_int, parse_size
from benchlib import script_main

# the default suite without dml, rebuild and backup (the mutating ones, which copy the table per run: dml alone
# took 143 of 272 s of one invocation on the loaded 2-core machine); about 1-2 min per invocation
SUITE = ("scan-eq", "scan-like")
HEADLINE = (("wall_s", "elapsed"), ("cpu_s", "CPU"))
SCALED = ("wall_s", "cpu_s", "cpu_user_s", "cpu_sys_s")
GOAL_FP, GOAL_AGREE, GOAL_POWER = 0.05, 0.95, 0.90


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="aa_check.py", description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="6", help="invocations (default 6; at least 2, the goals need 6)")
    ap.add_argument("--workload", action="append", default=[], help=f"workload (repeatable; default {', '.join(SUITE)})")
    ap.add_argument("--size", default=cli.DEFAULT_SIZE, help=f"data size (default {cli.DEFAULT_SIZE}, as encbench run)")
    ap.add_argument("--runs", default=None, help=f"runs per variant (default encbench run's, {cli.DEFAULT_RUNS})")
    ap.add_argument("--engine", default="sqlite")
    ap.add_argument("--fail-if", default="overhead>5%", help="the gate condition (default 'overhead>5%%')")
    ap.add_argument("--regression", default="1.10", help="the factor applied to the encrypted runs (default 1.10)")
    ap.add_argument("--noise-floor", default=None, metavar="FILE", help="pass this floor file to compare and the gate")
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the result files in DIR")
    ap.add_argument("--from", dest="source", default=None, metavar="DIR", help="re-analyse DIR/aa-*.json, run nothing")
    ap.add_argument("--data-dir", default=None, help="encbench run --data-dir (default encbench's)")
    return ap.parse_args(argv)


# -- the invocations ------------------------------------------------------------------------------

def run_args(args, workloads: list[str], output: Path) -> list[str]:
    out = ["run", "--engine", args.engine, "--size", args.size, "--variant", "placebo=a,b", "-o", str(output), "--json"]
    out += [x for w in workloads for x in ("--workload", w)]
    out += ["--runs", args.runs] if args.runs else []
    out += ["--data-dir", args.data_dir] if args.data_dir else []
    return out


def invoke(argv: list[str]) -> float:
    """One `encbench run` as a user starts it (a new process); its wall time."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "encbench.cli", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RunFailedError(f"encbench {' '.join(argv[:3])} ... exited {proc.returncode}: "
                             f"{(proc.stderr.strip().splitlines() or ['no message'])[-1]}")
    return time.monotonic() - start


# -- the figures ----------------------------------------------------------------------------------

def gate_exit(path_a: Path, path_b: Path, condition: str, floor: str | None) -> int:
    """`encbench compare A B --fail-if COND` as the CLI runs it (in this process); its exit code."""
    argv = ["compare", str(path_a), str(path_b), "--fail-if", condition, "--format", "json"]
    argv += ["--noise-floor", floor] if floor else []
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = cli.main(argv)
    if code not in (0, 17, 23):  # 23: a row not resolved at the limit (neither a false alarm nor a catch)
        raise RunFailedError(f"compare exited {code}: {err.getvalue().strip()}")
    return code


def scaled(doc: dict, factor: float) -> dict:
    """A copy whose contender (encrypted) runs take `factor` times the elapsed and CPU time."""
    out = json.loads(json.dumps(doc))
    for run in out["runs"]:
        if analysis.baseline_for(run["variant"], out["engine"], run["workload"]) is None:
            continue  # a baseline (plain) run
        for op in run.get("operations", []):
            for m in SCALED:
                if isinstance(op.get("metrics", {}).get(m), (int, float)):
                    op["metrics"][m] *= factor
        for m in SCALED:
            if isinstance((run.get("open") or {}).get(m), (int, float)):
                run["open"][m] *= factor
    return out


def verdict_of(c: dict) -> str:
    return c.get("verdict") or ("significant" if c.get("significant") else "not significant")


def agreement(analyses: list[dict]) -> dict:
    """Per real comparison row (workload, operation, contender, metric): its verdict in each invocation."""
    rows: dict[tuple, list[str]] = {}
    for an in analyses:
        for c in an["comparisons"]:
            if c["metric"] in dict(HEADLINE):
                rows.setdefault((c["workload"], c["operation"], c["contender"], c["metric"]), []).append(verdict_of(c))
    same = pairs = 0
    for vs in rows.values():
        for x, y in itertools.combinations(vs, 2):
            pairs += 1
            same += x == y
    unanimous = sum(1 for vs in rows.values() if len(set(vs)) == 1)
    counts: dict[str, int] = {}
    for vs in rows.values():
        for v in vs:
            counts[v] = counts.get(v, 0) + 1
    flipping = sorted(((k, vs) for k, vs in rows.items() if len(set(vs)) > 1), key=lambda kv: -len(set(kv[1])))
    return {"rate": same / pairs if pairs else None, "pairs": pairs, "rows": len(rows), "unanimous": unanimous,
            "flipping": flipping, "counts": dict(sorted(counts.items(), key=lambda kv: -kv[1]))}


def spread(analyses: list[dict]) -> list[dict]:
    """Per headline row: the overheads (ratio - 1, %) across the invocations."""
    rows: dict[tuple, list[float]] = {}
    for an in analyses:
        for c in an["comparisons"]:
            if c["metric"] in dict(HEADLINE) and c.get("ratio") is not None and c["workload"] != "(open)":
                rows.setdefault((c["workload"], c["operation"], c["contender"], c["metric"]), []).append(
                    100 * (c["ratio"] - 1))
    out = []
    for (wl, op, cont, metric), xs in sorted(rows.items()):
        out.append({"row": f"{wl}/{op} {short(cont)} {metric}", "n": len(xs), "median": statistics.median(xs),
                    "min": min(xs), "max": max(xs), "range": max(xs) - min(xs),
                    "sd": statistics.stdev(xs) if len(xs) > 1 else None})
    return out


def short(label: str) -> str:
    """The settings that tell rows apart (cache, page size...), not the encryption defaults."""
    keep = [kv for kv in label.split(",") if kv.split("=")[0] in ("cache", "placebo", "page_size", "tls", "clients")]
    return ",".join(keep) or label


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson 95% interval of a proportion k / n (a rate from few trials is rough: say how rough)."""
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / (1 + z * z / n)), min(1.0, (centre + half) / (1 + z * z / n))


def rate_text(k: int, n: int) -> str:
    if not n:
        return f"{k}/0 (nothing judged)"
    lo, hi = wilson(k, n)
    return f"{k}/{n} = {k / n:.1%} [95% CI {lo:.1%}, {hi:.1%}]"


def goal(ok: bool | None) -> str:
    return "n/a" if ok is None else ("meets the goal" if ok else "MISSES the goal")


def body(args) -> int:
    k = parse_positive_int(args.k, what="--k", maximum=50)
    if k < 2:
        raise BadValueError("--k must be 2 or more (every figure compares invocations)", hint="the goals need --k 6")
    parse_size(args.size)
    factor = float(args.regression)
    if not 1 < factor < 10:
        raise BadValueError(f"--regression {args.regression} is not a factor above 1", hint="e.g. 1.10")
    cond = gate.parse(args.fail_if)  # a bad condition fails before anything runs
    floor = gate.load_floor(args.noise_floor) if args.noise_floor and hasattr(gate, "load_floor") else None
    workloads = args.workload or list(SUITE)
    work = Path(args.source or args.keep or tempfile.mkdtemp(prefix="aa-check-"))
    if args.keep and not args.source:
        work.mkdir(parents=True, exist_ok=True)
    paths, seconds = [], []
    try:
        if args.source:
            paths = sorted(work.glob("aa-*.json"))
            if len(paths) < 2:
                raise UsageError(f"--from {work}: fewer than 2 aa-*.json result files")
        else:
            print(f"reduced suite: {args.engine} {', '.join(workloads)} at {args.size}, "
                  f"{args.runs or cli.DEFAULT_RUNS} runs per variant, placebo twins a/b; {k} invocations", flush=True)
            for i in range(1, k + 1):
                path = work / f"aa-{i}.json"
                seconds.append(invoke(run_args(args, workloads, path)))
                paths.append(path)
                print(f"  invocation {i}/{k}: {seconds[-1]:.0f} s", flush=True)
        report(paths, seconds, cond, args, floor, factor, work)
    finally:
        if not args.keep and not args.source:
            for p in work.glob("*"):
                p.unlink(missing_ok=True)
            work.rmdir()
    return 0


def report(paths: list[Path], seconds: list[float], cond, args, floor, factor: float, work: Path) -> None:
    t0 = time.monotonic()
    docs = [results.load(p) for p in paths]
    analyses = [analysis.analyze(d) for d in docs]
    k = len(docs)
    if seconds:
        print(f"one invocation: {statistics.median(seconds):.0f} s median ({min(seconds):.0f}-{max(seconds):.0f} s); "
              f"all {k}: {sum(seconds) / 60:.1f} min")
    cfg = docs[0]["config"]
    print(f"suite: {docs[0]['engine']['name']} {', '.join(cfg['workloads'])}, {cfg['size_bytes'] / 1e6:.0f} MB, "
          f"{cfg['runs']} runs + {cfg['warmups']} warmup per variant, {cfg['variant_filters']}")

    within = selftest.false_positives([c for an in analyses for c in an.get("placebo_comparisons", [])])
    t = within["total"]
    print(f"within-run A/A (placebo twins, elapsed and CPU): {rate_text(t['flagged'], t['compared'])} called "
          f"different; {t['not_judged']} not judged — {goal(t['rate'] <= GOAL_FP if t['rate'] is not None else None)}")

    pairs = list(itertools.combinations(range(k), 2))
    cross_rows = []
    for i, j in pairs:
        cross_rows += compare.compare(docs[i], docs[j], **({"floor": floor} if floor else {}))["comparisons"]
    cross = selftest.false_positives(cross_rows)
    for key, e in cross["by_metric"].items():
        print(f"cross-run compare ({len(pairs)} pairs), {key}: {rate_text(e['flagged'], e['compared'])} called "
              f"different; {e['not_judged']} not judged — "
              f"{goal(e['flagged'] / e['compared'] <= GOAL_FP if e['compared'] else None)}")

    codes = [gate_exit(paths[i], paths[j], cond.text, args.noise_floor) for i, j in pairs]
    alarms = codes.count(17)
    print(f"gate false alarms (compare --fail-if '{cond.text}' on every pair): {rate_text(alarms, len(pairs))} — "
          f"{goal(alarms / len(pairs) <= GOAL_FP)}; not resolved (exit 23): {rate_text(codes.count(23), len(pairs))}")

    agree = agreement(analyses)
    print(f"same verdict across invocations: {agree['rate']:.1%} of {agree['pairs']} row pairs; "
          f"{agree['unanimous']} of {agree['rows']} rows unanimous — "
          f"{goal(agree['rate'] >= GOAL_AGREE if agree['rate'] is not None else None)}")
    print("  the verdicts given (an agreement of 'inconclusive' with itself is no precision): "
          + ", ".join(f"{v} {n}" for v, n in agree["counts"].items()))
    for (wl, op, cont, metric), vs in agree["flipping"][:6]:
        print(f"  flips: {wl}/{op} {short(cont)} {metric}: {', '.join(vs)}")

    sp = spread(analyses)
    if sp:
        print(f"spread of the headline overheads over {k} invocations (median [min, max], range in points):")
        for s in sp:
            print(f"  {s['row']:<58} {s['median']:+7.1f}% [{s['min']:+.1f}, {s['max']:+.1f}]  range {s['range']:.1f}")
        print(f"  median range {statistics.median(s['range'] for s in sp):.1f} points, "
              f"widest {max(s['range'] for s in sp):.1f} ({max(sp, key=lambda s: s['range'])['row']})")

    caught = unresolved = tried = rows_costs = rows_total = 0
    tmp = Path(tempfile.mkdtemp(prefix="aa-scaled-", dir=work))
    try:
        for j in range(k):
            slow = scaled(docs[j], factor)
            slow_path = tmp / f"aa-{j + 1}-x{factor:g}.json"
            results.write_atomic(slow_path, slow)
            for i in range(k):
                if i == j:
                    continue
                tried += 1
                code = gate_exit(paths[i], slow_path, cond.text, args.noise_floor)
                caught += code == 17
                unresolved += code == 23
                for c in compare.compare(docs[i], slow, **({"floor": floor} if floor else {}))["comparisons"]:
                    if cond.kind == "overhead" and cond.applies(c) and c["workload"] != "(open)":
                        rows_total += 1
                        rows_costs += c.get("verdict") == "costs"
            slow_path.unlink()
    finally:
        for p in tmp.glob("*"):
            p.unlink(missing_ok=True)
        tmp.rmdir()
    print(f"power: encrypted runs x{factor:g} in B, gate '{cond.text}' against each other invocation: caught "
          f"{rate_text(caught, tried)} — {goal(caught / tried >= GOAL_POWER)}; not resolved (exit 23, never passed): "
          f"{rate_text(unresolved, tried)}; overhead rows ({cond.named}) "
          f"saying 'costs': {rate_text(rows_costs, rows_total)}")
    print(f"(analysis took {time.monotonic() - t0:.0f} s; result files: {work if args.keep or args.source else 'removed'})")


if __name__ == "__main__":
    sys.exit(script_main("aa_check.py", body, parse_args))

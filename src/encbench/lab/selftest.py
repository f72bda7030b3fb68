"""`encbench selftest`: an A/A check of this machine in about a minute.

Two back-to-back invocations of a reduced default suite, each with placebo twins
(`--variant placebo=a,b`: every variant twice, under labels that change nothing):

- within-run false positives: placebo twins called different inside one invocation;
- cross-run false positives: the same rows called different by `compare` across the two;
- the noise floor per metric: the smallest change between two invocations that noise alone
  stays under 95% of the time (`floor`), from the spread of the log ratios of the rows;
- whether cold cache can be produced (a direct posix_fadvise probe, and what the cold runs
  read from storage), the CPU placement available (sched_setaffinity, cgroup v1 cpuset),
  the steal time and load while it ran;
- a plain verdict, and optionally the floor saved for `compare` (`--save-floor FILE`).

The arithmetic (`false_positives`, `noise_floor`, `excess_p`, `floor_document`) is pure,
so it is tested on fabricated documents.
"""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..engines import DEFAULT_ENGINE
from ..util import owners
from ..vocab.variants import PLACEBO, flagged, judged
from ..analysis import summary as analysis
from ..host.environment import cpu_info
from ..host import oscache
from ..probes.base import read_proc_kv
from ..probes import DEFAULT_PROBES
from ..analysis import compare
from ..util.units import fmt_bytes

PLACEBO_VALUES = ("a", "b")
HEADLINE = (("wall_s", "elapsed"), ("cpu_s", "CPU"))
COUNTED = (("instructions", "instructions"),)  # --meter instructions: two more invocations, counted (lab/meter.py)
METER_RUNS = 3  # a count repeats to the instruction: three runs per variant show its spread
METER_SIZE = 3_000_000
NOMINAL_FP = 0.05  # the rate a 95% CI promises on A/A data
EXCESS_P = 0.01  # a false-positive count this unlikely under the nominal rate fails the check
FLOOR_Z = 1.959964  # two-sided 95%
POWER_Z = 0.841621  # 80% power: an effect of (FLOOR_Z + POWER_Z) / FLOOR_Z x the floor is caught 4 times in 5
FLOOR_SCHEMA = 1


@dataclass
class Settings:
    engine: str = DEFAULT_ENGINE
    workloads: list[str] = field(default_factory=list)
    runs: int = 5
    warmups: int = 1
    size_bytes: int = 48_000_000
    seed: int = 42
    data_dir: Path = Path(".")
    keep_dir: Path | None = None  # keep the two result files here (default: a temporary directory)
    command: str = ""
    meter: bool = False  # --meter instructions: the instruction A/A spread beside the time spread


# -- the pure arithmetic ------------------------------------------------------------------

def false_positives(comparisons: Sequence[dict], metrics: Sequence[str] = tuple(m for m, _ in HEADLINE)) -> dict:
    """Per metric (and per kind: `overhead wall_s` for compare's overhead rows) and in total: how many A/A
    comparisons claimed a difference (`variants.flagged`); rows without a verdict are counted apart."""
    out: dict[str, dict] = {}
    for c in comparisons:
        if c["metric"] not in metrics:
            continue
        kind = c.get("kind") or "absolute"
        e = out.setdefault(c["metric"] if kind == "absolute" else f"{kind} {c['metric']}",
                           {"flagged": 0, "compared": 0, "not_judged": 0, "rows": []})
        if not judged(c):
            e["not_judged"] += 1
            continue
        e["compared"] += 1
        if flagged(c):
            e["flagged"] += 1
            e["rows"].append(f"{c['workload']}/{c['operation']} {c.get('contender') if c.get('placebo') else c.get('variant') or c.get('contender')} "
                             f"{(c['ratio'] - 1) * 100:+.1f}%")
    k = sum(v["flagged"] for v in out.values())
    n = sum(v["compared"] for v in out.values())
    return {"by_metric": dict(sorted(out.items())),
            "total": {"flagged": k, "compared": n, "not_judged": sum(v["not_judged"] for v in out.values()),
                      "rate": k / n if n else None, "excess_p": excess_p(k, n)}}


def excess_p(k: int, n: int, rate: float = NOMINAL_FP) -> float | None:
    """P(X >= k) for X ~ Binomial(n, rate): how likely k or more false positives are by chance alone."""
    if n == 0:
        return None
    from scipy.stats import binom  # exact for any n (a sum of math.comb terms overflows a float past n ~ 1,000)

    return float(binom.sf(k - 1, n, rate))


def log_stats(doc: dict, headline=HEADLINE) -> dict[tuple[str, str, str], dict[str, tuple[float, float]]]:
    """(workload, operation, variant) -> metric -> (mean of ln values, its variance: var(ln) / n), for the
    headline metrics of rows with 2 or more positive values (the connection open left out)."""
    out: dict = {}
    for key, metrics in analysis.collect(doc).items():
        if key[:2] == analysis.OPEN:
            continue
        for metric, _ in headline:
            values = metrics.get(metric) or []
            if len(values) < 2 or min(values) <= 0:
                continue
            logs = [math.log(v) for v in values]
            m = sum(logs) / len(logs)
            var = sum((x - m) ** 2 for x in logs) / (len(logs) - 1)
            out.setdefault(key, {})[metric] = (m, var / len(logs))
    return out


Row = tuple[str, float, float]  # (what, ln of the change B vs A, the variance the runs alone give it)


def absolute_rows(a: dict, b: dict, metric: str) -> list[Row]:
    """The same variant in both invocations: ln(geometric mean B / geometric mean A)."""
    return [(f"{k[0]}/{k[1]} {k[2]}", b[k][metric][0] - a[k][metric][0], a[k][metric][1] + b[k][metric][1])
            for k in a if metric in a[k] and metric in b.get(k, {})]


def overhead_rows(a: dict, b: dict, pairs: Sequence[tuple[str, str, str, str]], metric: str) -> list[Row]:
    """The encryption overhead (contender / baseline inside each invocation), B against A."""
    out = []
    for wl, op, base, cont in pairs:
        keys = [(wl, op, base), (wl, op, cont)]
        if not all(metric in d.get(k, {}) for d in (a, b) for k in keys):
            continue
        (ba, va), (ca, wa) = a[keys[0]][metric], a[keys[1]][metric]
        (bb, vb), (cb, wb) = b[keys[0]][metric], b[keys[1]][metric]
        out.append((f"{wl}/{op} {cont}", (cb - bb) - (ca - ba), va + wa + vb + wb))
    return out


def noise_floor(rows: Sequence[Row], *, runs: int, invocation_s: float | None, what: str = "the same variant") -> dict | None:
    """The noise floor of one metric from the between-invocation changes of identical rows.

    s = the root mean square of the rows' ln(B/A) (the typical change between two invocations,
    any common drift included); detectable_pct = exp(1.96 s) - 1: the change noise alone stays
    under 95% of the time, so the smallest one two invocations can tell from noise.
    floor_pct = exp(1.96 d) - 1 with d^2 = s^2 - (the mean variance the runs' own scatter gives
    a row): the machine drift between invocations beyond what each row's CI already covers,
    which is what `compare` adds on top of a row's own interval.
    """
    if not rows:
        return None
    s2 = sum(d * d for _, d, _ in rows) / len(rows)
    sampling = sum(v for _, _, v in rows) / len(rows)
    drift = math.sqrt(max(0.0, s2 - sampling))
    what_w, worst, _ = max(rows, key=lambda r: abs(r[1]))
    return {
        "floor_pct": 100 * (math.exp(FLOOR_Z * drift) - 1),
        "detectable_pct": 100 * (math.exp(FLOOR_Z * math.sqrt(s2)) - 1),
        "detectable_80_pct": 100 * (math.exp((FLOOR_Z + POWER_Z) * math.sqrt(s2)) - 1),
        "rms_log_change": math.sqrt(s2),
        "rms_log_sampling": math.sqrt(sampling),
        "rms_log_drift": drift,
        "mean_change_pct": 100 * (math.exp(sum(d for _, d, _ in rows) / len(rows)) - 1),
        "largest_change_pct": 100 * (math.exp(worst) - 1),
        "largest_row": what_w,
        "rows": len(rows),
        "runs_per_variant": runs,
        "invocation_s": invocation_s,
        "method": (f"{what} in two back-to-back invocations ({runs} runs per variant each), {len(rows)} rows, the "
                   "connection open left out: per row d = ln(geometric mean B / geometric mean A); s = root mean "
                   "square of d; detectable_pct = exp(1.96 s) - 1 (noise alone stays under it 95% of the time; an "
                   "effect that size is caught about half the time, detectable_80_pct 4 times in 5); floor_pct = "
                   "exp(1.96 sqrt(max(0, s^2 - mean(var ln A / nA + var ln B / nB)))) - 1: the drift beyond the "
                   "runs' own scatter, which compare adds on top of each row's CI"),
    }


def floor_document(floors: dict[str, dict | None], overhead: dict[str, dict | None], machine: dict, *,
                   engine: str, workloads: Sequence[str], size_bytes: int, measured: str | None = None) -> dict:
    """The noise floor file `compare --noise-floor` reads (gate.load_floor): schema 1, per metric a
    floor_pct for the same variant across files (`metrics`) and for the encryption overhead (`overhead`)."""
    return {
        "schema": FLOOR_SCHEMA,
        "kind": "encbench noise floor",
        "machine": machine,
        "measured": measured or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "suite": {"engine": engine, "workloads": list(workloads), "size_bytes": size_bytes},
        "metrics": {m: f for m, f in floors.items() if f is not None},
        "overhead": {m: f for m, f in overhead.items() if f is not None},
    }


def verdict(floors: dict[str, dict | None], overhead: dict[str, dict | None], within: dict, cross: dict,
            seconds: float) -> tuple[str, bool]:
    """(a plain sentence, passed): what effects this machine resolves, and whether its A/A checks held."""
    parts = [f"{floors[m]['detectable_pct']:.0f}% {word}" for m, word in HEADLINE if floors.get(m)]
    over = [f"{overhead[m]['detectable_pct']:.0f}% {word}" for m, word in HEADLINE if overhead.get(m)]
    text = (f"this machine can resolve {' and '.join(parts)} effects in {seconds:.0f} s (one invocation, compared "
            "with another)" if parts else "no noise floor: no row was measured in both invocations")
    if over:
        text += f", and changes of the encryption overhead of {' and '.join(over)}"
    failed = [name for name, fp in (("within-run (placebo twins)", within), ("cross-run (compare)", cross))
              if fp["total"]["excess_p"] is not None and fp["total"]["excess_p"] < EXCESS_P]
    if failed:
        text += ("; but its A/A check FAILED: more false positives than the 5% the 95% CIs promise in the "
                 + " and ".join(failed) + " check" + ("s" if len(failed) > 1 else "")
                 + ": differences reported here are not yet trustworthy")
    elif within["total"]["compared"] or cross["total"]["compared"]:
        text += "; the A/A false positives are within what the 95% CIs promise"
    else:
        text += "; no A/A comparison was judged (too few runs for a verdict): use more --runs"
    return text, not failed


# -- what this machine offers --------------------------------------------------------------

def machine_facts() -> dict:
    cpu = cpu_info()
    return {"hostname": socket.gethostname(), "cpu_model": cpu["model"], "logical_cores": cpu["logical_cores"],
            "kernel": platform.release(), "memory_bytes": _memory()}


def _memory() -> int | None:
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except Exception:  # pragma: no cover - psutil is a dependency
        return None


def fadvise_probe(directory: Path, size: int = 8 << 20) -> dict:
    """Write a file, read it (now cached), evict it with posix_fadvise(DONTNEED), read it again:
    do the bytes read from storage (/proc/self/io read_bytes) show the eviction?"""
    out = dict(oscache.capabilities(directory))
    fd, name = tempfile.mkstemp(prefix=".encbench-selftest-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
        _read_all(name)  # cached now
        before = _io_read_bytes()
        _read_all(name)
        warm = _io_read_bytes() - before if before is not None else None
        evicted = oscache.drop_file(name)
        before = _io_read_bytes()
        _read_all(name)
        cold = _io_read_bytes() - before if before is not None else None
    except OSError as e:
        out.update(fadvise_works=False, fadvise_error=f"{e.strerror or e}")
        return out
    finally:
        Path(name).unlink(missing_ok=True)
    out.update(probe_bytes=size, warm_read_bytes=warm, cold_read_bytes=cold, fadvise_accepted=evicted,
               fadvise_works=bool(evicted and cold is not None and cold >= size // 2 and (warm or 0) < size // 2))
    return out


def _read_all(name: str) -> None:
    with open(name, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def _io_read_bytes() -> int | None:
    """This process's bytes read from storage, as the io probe reads them."""
    try:
        return read_proc_kv("/proc/self/io").get("read_bytes")
    except OSError:
        return None


def cold_runs(docs: Sequence[dict]) -> dict:
    """What the measured cold operations read from storage, against the database file's size."""
    cold, warm = [], []
    for doc in docs:
        for run in doc.get("runs", []):
            if run.get("warmup"):
                continue
            for op in run.get("operations", []):
                state = (op.get("cache") or {}).get("cache")
                read = (op.get("metrics") or {}).get("read_bytes")
                if read is not None and state in ("cold", "warm"):
                    (cold if state == "cold" else warm).append(float(read))
    sizes = [f.get("bytes") for doc in docs for f in ((doc.get("dataset") or {}).get("files") or {}).values()
             if f.get("bytes")]
    file_bytes = min(sizes) if sizes else None
    out = {"cold_operations": len(cold), "cold_reading": sum(1 for x in cold if x > 0),
           "cold_mean_read_bytes": sum(cold) / len(cold) if cold else None,
           "warm_operations": len(warm), "warm_mean_read_bytes": sum(warm) / len(warm) if warm else None,
           "database_file_bytes": file_bytes}
    out["cold_works"] = bool(cold) and out["cold_reading"] == len(cold) and (
        file_bytes is None or out["cold_mean_read_bytes"] >= 0.5 * file_bytes)
    return out


def placement() -> dict:
    """The CPU placement this process can use: sched_setaffinity (tried and undone), cgroup v1 cpuset
    (a child cgroup made and removed), cgroup v2."""
    out: dict = {}
    try:
        allowed = sorted(os.sched_getaffinity(0))
        out["allowed_cpus"] = allowed
        try:
            os.sched_setaffinity(0, {allowed[-1]})
            out["sched_setaffinity"] = sorted(os.sched_getaffinity(0)) == [allowed[-1]]
        finally:
            os.sched_setaffinity(0, set(allowed))
    except (AttributeError, OSError) as e:
        out["sched_setaffinity"] = False
        out["sched_setaffinity_error"] = str(e)
    v1 = _cgroup_mount("cgroup", "cpuset")
    out["cgroup_v1_cpuset"] = v1
    out["cgroup_v1_cpuset_usable"] = False
    if v1:
        probe = Path(v1) / f"encbench-selftest-{os.getpid()}"
        try:
            probe.mkdir()
            out["cgroup_v1_cpuset_usable"] = (probe / "cpuset.cpus").exists()
        except OSError as e:
            out["cgroup_v1_cpuset_error"] = e.strerror or str(e)
        finally:
            try:
                probe.rmdir()
            except OSError:
                pass
    v2 = _cgroup_mount("cgroup2", None)
    out["cgroup_v2"] = v2
    if v2:
        try:
            out["cgroup_v2_cpuset"] = "cpuset" in (Path(v2) / "cgroup.controllers").read_text().split()
        except OSError:
            out["cgroup_v2_cpuset"] = False
    return out


def _cgroup_mount(fstype: str, option: str | None) -> str | None:
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                if parts[2] == fstype and (option is None or option in parts[3].split(",")):
                    return parts[1]
    except OSError:
        pass
    return None


def cpu_times() -> list[int] | None:
    """/proc/stat's all-CPU line: user nice system idle iowait irq softirq steal ... (ticks; runctx reads it)."""
    from . import runctx

    return (runctx.read_stat() or {}).get("cpu")


def machine_load(t0: list[int] | None, t1: list[int] | None) -> dict:
    """Steal and busy shares of all CPUs between two /proc/stat readings, and the load average."""
    out: dict = {"loadavg_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}
    if t0 and t1:
        d = [b - a for a, b in zip(t0, t1)]
        total = sum(d[:8]) or 1
        out["steal_share"] = d[7] / total if len(d) > 7 else None
        out["busy_share"] = 1 - (d[3] + d[4]) / total
    return out


# -- the run --------------------------------------------------------------------------------

def workloads_for(engine) -> list[str]:
    """The reduced suite: the engine's own (Engine.selftest_workloads), else its first default workload."""
    return list(engine.selftest_workloads or (engine.default_workloads or engine.workloads)[:1])


def config_for(settings: Settings, output: Path, *, counted: bool = False):
    """The run of one invocation; counted: under --meter instructions (METER_RUNS runs, METER_SIZE, no warmup)."""
    from . import meter, runner

    kind = meter.INSTRUCTIONS if counted else meter.TIME
    return runner.RunConfig(
        engine=settings.engine, workloads=list(settings.workloads),
        variant_filters=[f"{PLACEBO}={','.join(PLACEBO_VALUES)}"],
        runs=METER_RUNS if counted else settings.runs, warmups=0 if counted else settings.warmups,
        size_bytes=METER_SIZE if counted else settings.size_bytes, seed=settings.seed,
        output=output, data_dir=settings.data_dir, probes=meter.default_probes(kind, list(DEFAULT_PROBES)),
        command=settings.command, meter=kind,
    )


def _counted(settings: Settings, work: Path, progress) -> dict:
    """--meter instructions: two more invocations, counted; the instruction A/A false positives and noise floor."""
    from . import runner

    docs, seconds = [], []
    for i in (1, 2):
        progress(f"invocation {i} of 2 under --meter instructions: {settings.engine} {', '.join(settings.workloads)}, "
                 f"placebo twins, {METER_RUNS} runs per variant")
        start = time.monotonic()
        docs.append(runner.execute(config_for(settings, work / f"selftest-instructions-{i}.json", counted=True)))
        seconds.append(time.monotonic() - start)
    analyses = [analysis.analyze(d) for d in docs]
    metrics = tuple(m for m, _ in COUNTED)
    within = false_positives([c for a in analyses for c in a.placebo_comparisons or []], metrics)
    cross = false_positives(compare.compare(docs[0], docs[1])["comparisons"], metrics)
    la, lb = log_stats(docs[0], COUNTED), log_stats(docs[1], COUNTED)
    pairs = sorted({(c["workload"], c["operation"], c["baseline"], c["contender"]) for c in analyses[0].comparisons})
    per = sum(seconds) / len(seconds)
    return {"invocation_s": seconds, "runs_per_variant": METER_RUNS, "size_bytes": METER_SIZE,
            "within_run": within, "cross_run": cross,
            "noise_floor": {m: noise_floor(absolute_rows(la, lb, m), runs=METER_RUNS, invocation_s=per)
                            for m in metrics},
            "overhead_floor": {m: noise_floor(overhead_rows(la, lb, pairs, m), runs=METER_RUNS, invocation_s=per,
                                              what="the encryption overhead (contender / baseline in each "
                                                   "invocation)") for m in metrics}}


def run(settings: Settings, *, progress: Callable[[str], None] = lambda msg: None) -> dict:
    """Two invocations, then every figure; the result files go to keep_dir or a removed temp dir."""
    from . import runner

    work = Path(settings.keep_dir) if settings.keep_dir else owners.make_dir("encbench-selftest-")
    try:
        docs, seconds = [], []
        t0 = cpu_times()
        for i in (1, 2):
            output = work / f"selftest-{i}.json"
            progress(f"invocation {i} of 2: {settings.engine} {', '.join(settings.workloads)}, "
                     f"placebo twins, {settings.runs} runs per variant")
            start = time.monotonic()
            docs.append(runner.execute(config_for(settings, output)))
            seconds.append(time.monotonic() - start)
        load = machine_load(t0, cpu_times())
        counted = _counted(settings, work, progress) if settings.meter else None
        progress("checking cold cache and CPU placement")
        cache = dict(fadvise_probe(settings.data_dir), **cold_runs(docs))
        place = placement()
    finally:
        if not settings.keep_dir:
            for p in work.glob("*"):
                p.unlink(missing_ok=True)
            work.rmdir()
    analyses = [analysis.analyze(d) for d in docs]
    placebo = [c for a in analyses for c in a.placebo_comparisons or []]
    cross_rows = compare.compare(docs[0], docs[1])["comparisons"]
    within, cross = false_positives(placebo), false_positives(cross_rows)
    la, lb = log_stats(docs[0]), log_stats(docs[1])
    pairs = sorted({(c["workload"], c["operation"], c["baseline"], c["contender"]) for c in analyses[0].comparisons})
    per_invocation = sum(seconds) / len(seconds)
    floors = {m: noise_floor(absolute_rows(la, lb, m), runs=settings.runs, invocation_s=per_invocation)
              for m, _ in HEADLINE}
    overhead = {m: noise_floor(overhead_rows(la, lb, pairs, m), runs=settings.runs, invocation_s=per_invocation,
                               what="the encryption overhead (contender / baseline in each invocation)")
                for m, _ in HEADLINE}
    text, passed = verdict(floors, overhead, within, cross, per_invocation)
    machine = machine_facts()
    floor = floor_document(floors, overhead, machine, engine=settings.engine, workloads=settings.workloads,
                           size_bytes=settings.size_bytes)
    floor["aa_check"] = {"passed": passed, "within_run_rate": within["total"]["rate"],
                         "cross_run_rate": cross["total"]["rate"], "verdict": text}
    return {
        "engine": settings.engine, "workloads": list(settings.workloads), "runs_per_variant": settings.runs,
        "warmups": settings.warmups, "size_bytes": settings.size_bytes, "placebo_values": list(PLACEBO_VALUES),
        "invocation_s": seconds, "within_run": within, "cross_run": cross, "noise_floor": floors,
        "overhead_floor": overhead, "cold_cache": cache, "placement": place, "load": load, "machine": machine,
        "placement_used": (docs[0].get("placement") or {}).get("text"),
        "result_files": [str(work / f"selftest-{i}.json") for i in (1, 2)] if settings.keep_dir else None,
        "verdict": text, "passed": passed, "floor_file": floor,
        **({"instructions": counted} if counted else {}),
    }


def save_floor(path: Path, floor: dict) -> None:
    from . import results

    results.write_atomic(Path(path), floor)


# -- the report -----------------------------------------------------------------------------

def _fp_line(name: str, fp: dict) -> str:
    t = fp["total"]
    per = ", ".join(f"{key} {e['flagged']}/{e['compared']}" for key, e in fp["by_metric"].items())
    rate = f"{t['rate']:.0%}" if t["rate"] is not None else "-"
    chance = f"; P(this many or more by chance at 5%) = {t['excess_p']:.2g}" if t["excess_p"] is not None else ""
    unjudged = f"; {t['not_judged']} not judged (too few runs)" if t["not_judged"] else ""
    return f"{name}: {t['flagged']} of {t['compared']} called different ({rate}; {per}){chance}{unjudged}"


def _bytes(x) -> str:
    return "-" if x is None else fmt_bytes(x)


def lines(r: dict) -> list[str]:
    out = [f"encbench selftest: {r['engine']} {', '.join(r['workloads'])}, {_bytes(r['size_bytes'])}, "
           f"{r['runs_per_variant']} runs + {r['warmups']} warmup per variant, placebo twins "
           f"{'/'.join(r['placebo_values'])}; two invocations of "
           + " and ".join(f"{s:.0f} s" for s in r["invocation_s"]),
           "false positives (A/A: identical variants, so every 'different' is false; 5% expected):",
           "  " + _fp_line("within a run (placebo twins)", r["within_run"]),
           "  " + _fp_line("across the two invocations (compare)", r["cross_run"])]
    for side in ("within_run", "cross_run"):
        for key, e in r[side]["by_metric"].items():
            for row in e["rows"][:3]:
                out.append(f"    {side.replace('_', '-')} {key}: {row}")
    out.append("noise floor per metric (between two invocations; saved with --save-floor for compare --noise-floor):")
    for title, floors in (("same variant", r["noise_floor"]), ("encryption overhead", r["overhead_floor"])):
        for m, word in HEADLINE:
            f = floors.get(m)
            if not f:
                out.append(f"  {title}, {word}: not measured")
                continue
            out.append(f"  {title}, {word}: changes from {f['detectable_pct']:.1f}% are told from noise (caught 4 "
                       f"times in 5 from {f['detectable_80_pct']:.1f}%); drift beyond the runs' scatter "
                       f"{f['floor_pct']:.1f}% (floor_pct); common shift {f['mean_change_pct']:+.1f}%, largest "
                       f"{f['largest_change_pct']:+.1f}% ({f['largest_row']})")
    counted = r.get("instructions")
    if counted:  # --meter instructions: the same figures for the count, beside the time's
        out.append(f"instructions (--meter instructions: two more invocations of {' and '.join(f'{s:.0f} s' for s in counted['invocation_s'])}, "
                   f"{counted['runs_per_variant']} runs per variant, {_bytes(counted['size_bytes'])}):")
        out.append("  " + _fp_line("false positives within a run (placebo twins)", counted["within_run"]))
        if counted["cross_run"]["total"]["compared"]:
            out.append("  " + _fp_line("false positives across the two invocations (compare)", counted["cross_run"]))
        for title, floors in (("same variant", counted["noise_floor"]), ("encryption overhead",
                                                                         counted["overhead_floor"])):
            for m, word in COUNTED:
                f = floors.get(m)
                out.append(f"  {title}, {word}: " + (
                    "not measured" if not f else
                    f"changes from {f['detectable_pct']:.2g}% are told from noise (time: "
                    + ", ".join(f"{w} {g['detectable_pct']:.1f}%" for mm, w in HEADLINE
                                if (g := (r['noise_floor'] if title == 'same variant' else r['overhead_floor']).get(mm)))
                    + f"); largest change between the invocations {f['largest_change_pct']:+.2g}% "
                      f"({f['largest_row']})"))
    first = next((f for f in list(r["noise_floor"].values()) + list(r["overhead_floor"].values()) if f), None)
    out.append(f"  how: {first['method']}" if first else "  how: -")
    c = r["cold_cache"]
    probe = ("works" if c.get("fadvise_works") else "does NOT work") + (
        f" (a {_bytes(c.get('probe_bytes'))} file re-read {_bytes(c.get('cold_read_bytes'))} from storage after "
        f"eviction, {_bytes(c.get('warm_read_bytes'))} before)" if c.get("probe_bytes") else
        f" ({c.get('fadvise_error', 'no posix_fadvise')})")
    out.append(f"cold cache: posix_fadvise(DONTNEED) {probe}; global drop_caches "
               f"{'writable' if c.get('global_drop_caches_writable') else 'not writable'} (encbench does not use it); "
               f"data on {c.get('data_dir_filesystem')}")
    if c["cold_operations"]:
        out.append(f"  the cold runs {'really read from storage' if c['cold_works'] else 'did NOT all read from storage'}: "
                   f"{c['cold_reading']} of {c['cold_operations']} cold operations read, "
                   f"{_bytes(c['cold_mean_read_bytes'])} on average (database file {_bytes(c['database_file_bytes'])}); "
                   f"warm operations {_bytes(c['warm_mean_read_bytes'])}")
    p = r["placement"]
    v1 = (f"cgroup v1 cpuset at {p['cgroup_v1_cpuset']} " + ("usable" if p["cgroup_v1_cpuset_usable"] else
          f"not usable ({p.get('cgroup_v1_cpuset_error', 'no cpuset.cpus')})")) if p.get("cgroup_v1_cpuset") \
        else "no cgroup v1 cpuset"
    v2 = (f"cgroup v2 at {p['cgroup_v2']} with{'' if p.get('cgroup_v2_cpuset') else 'out'} the cpuset controller"
          if p.get("cgroup_v2") else "no cgroup v2")
    out.append(f"CPU placement: CPUs {p.get('allowed_cpus')}; sched_setaffinity "
               f"{'works' if p.get('sched_setaffinity') else 'does NOT work'}; {v1}; {v2}")
    if r.get("placement_used"):
        out.append(f"  the runs here: {r['placement_used']}")
    ld = r["load"]
    if ld.get("busy_share") is not None:
        out.append(f"while it ran: CPUs {ld['busy_share']:.0%} busy, steal {ld['steal_share']:.1%}, "
                   f"load average {ld['loadavg_1min']:.2f} on {r['machine']['logical_cores']} cores")
    if r.get("result_files"):
        out.append("result files: " + ", ".join(r["result_files"]))
    out.append(f"verdict: {r['verdict']}")
    return out


def to_json(r: dict) -> str:
    return json.dumps(r, indent=1)

"""CPU profiles of any workload: `perf record -g` during the warmup runs only (--profile).

A warmup run with `--param profile=1` (`encbench run --profile`) gets one extra operation
per workload operation, `profile:<op>`: the same operation (repeated, when it only reads,
until the profile holds enough samples) with perf attached to the engine's processes
(the worker itself for SQLite, the backend / server for PostgreSQL and MariaDB). Its
samples are put in categories (libcrypto, sqlcipher, sqlite, python, kernel...), folded
for a flame graph written next to the result file, and set beside the baseline's profile
of the same operation, so the report can say where an overhead goes.
Measured runs are never profiled: perf costs time.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from ..util.units import fmt_seconds

PROFILE_PARAM = "profile"
PROFILE_PREFIX = "profile:"
PROFILE_HZ = 1999  # an operation of a few ms still gets samples
PROFILE_SECONDS = 1.0  # a read-only operation is repeated until this much wall time has passed
MAX_REPEATS = 500
TOP_FOLDED = 3000  # stacks kept in the result file

# (category, regex on the object, regex on the symbol): first match wins; a symbol rule is needed
# where one object holds several libraries. The engines declare their own (Engine.profile_categories):
# an engine whose code runs in the client's process is a Python extension, so its rules come before
# Python's; a server engine's come after the runtime's, in registry order.
HEAD_CATEGORIES: tuple[tuple[str, str, str], ...] = (
    ("kernel", r"kernel|vmlinux|\[k\]", r""),
    ("libcrypto", r"libcrypto", r""),
)
RUNTIME_CATEGORIES: tuple[tuple[str, str, str], ...] = (
    ("python", r"python|\.cpython-|_rust\.abi3", r""),
    ("libc", r"libc\.so|libc-|ld-linux|libm\.so|libpthread", r""),
)


_ENGINES: list = []  # the engine classes, in their table's order: engines/__init__ hands them over (use_engines)


def use_engines(engines) -> None:
    """The engines whose profile_categories the table holds (engines/__init__ calls it: profiling sits below the
    engines and never imports them)."""
    _ENGINES[:] = list(engines)
    categories.cache_clear()
    _compiled.cache_clear()


@functools.cache
def categories() -> tuple[tuple[str, str, str], ...]:
    """The whole ordered table: the kernel and libcrypto, the in-process engines, the runtime, the server engines."""
    engines = _ENGINES
    return (HEAD_CATEGORIES + tuple(c for e in engines if e.profile_in_process for c in e.profile_categories)
            + RUNTIME_CATEGORIES + tuple(c for e in engines if not e.profile_in_process for c in e.profile_categories))


@functools.cache
def _compiled() -> list[tuple[str, re.Pattern, re.Pattern | None]]:
    return [(c, re.compile(o), re.compile(s) if s else None) for c, o, s in categories()]


# -- recording ------------------------------------------------------------------------


class Profiler:
    """perf record -g on some processes while an operation runs; perf script after."""

    def __init__(self, scratch: Path, frequency: int = 499):
        self.scratch, self.frequency = scratch, frequency
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.data = scratch / f"perf-{os.getpid()}-{time.monotonic_ns()}.data"
        self.pids: list[int] = []

    _checked: str | None | bool = False

    @classmethod
    def available(cls) -> str | None:
        """None when perf can sample here (tried once, on a tiny command), else why not (one line)."""
        if cls._checked is not False:
            return cls._checked
        cls._checked = cls._try()
        return cls._checked

    @staticmethod
    def _try() -> str | None:
        if not shutil.which("perf"):
            return "perf not found (apt-get install linux-perf): no CPU profile"
        try:
            paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
        except (OSError, ValueError):
            paranoid = 2
        if os.geteuid() != 0 and paranoid > 1:
            return (f"perf may not sample other processes (kernel.perf_event_paranoid={paranoid}, not root): "
                    "no CPU profile")
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            try:
                done = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", f"{tmp}/t.data",
                                       "--", "sleep", "0.01"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.SubprocessError) as e:
                return f"perf cannot run here ({e}): no CPU profile"
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            return f"perf may not sample here ({last[:120]}): no CPU profile"
        return None

    def start(self, pids: list[int]) -> None:
        self.error = self.available()
        if self.error or not pids:
            self.error = self.error or "no local server process to profile"
            return
        self.pids = list(pids)
        cmd = ["perf", "record", "-q", "-F", str(self.frequency), "-g", "-e", "cpu-clock", "-o", str(self.data),
               "-p", ",".join(str(p) for p in pids)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)  # perf attaches to every thread before the operation starts
        if self.proc.poll() is not None:
            self.error = f"perf record failed: {(self.proc.stderr.read().strip().splitlines() or ['?'])[-1]}"
            self.proc = None

    def stop(self) -> dict:
        from . import flame

        if self.proc is None:
            return {"profile_error": self.error or "not started"}
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not self.data.exists():
            return {"profile_error": f"perf record wrote nothing: {(err or '').strip()[:200]}"}
        try:
            done = subprocess.run(["perf", "script", "-i", str(self.data)], capture_output=True, text=True,
                                  timeout=300)
        finally:
            self.data.unlink(missing_ok=True)
        samples = flame.parse_perf_script(done.stdout)
        if not samples:
            return {"profile_error": "perf recorded no samples"}
        folded = flame.fold(samples, dso_for_unknown=True)
        top = dict(sorted(folded.items(), key=lambda kv: -kv[1])[:TOP_FOLDED])  # the file stays small
        return {"profile": dict(flame.summarize(samples), folded=top, frequency_hz=self.frequency,
                                event="cpu-clock", sample_count=len(samples), categories=categorize(samples),
                                leaf_samples=leaf_counts(samples))}


def category_of(sym: str, dso: str) -> str:
    for name, obj, sym_rx in _compiled():
        if obj.search(dso) and (sym_rx is None or sym_rx.search(sym)):
            return name
    return "other"


def categorize(samples) -> dict[str, float]:
    """Share (0..1) of the samples whose leaf frame falls in each category (categories()), largest first."""
    weights: dict[str, int] = {}
    total = 0
    for s in samples:
        leaf = s.frames[-1] if s.frames else None
        cat = category_of(leaf.sym, leaf.dso) if leaf else "other"
        weights[cat] = weights.get(cat, 0) + s.period
        total += s.period
    return {k: v / total for k, v in sorted(weights.items(), key=lambda kv: -kv[1])} if total else {}


def leaf_counts(samples, top: int = 40) -> dict[str, int]:
    """Samples per leaf function ('sym' or '[unknown] in obj'), the top ones: absolute, for differences."""
    out: dict[str, int] = {}
    for s in samples:
        leaf = s.frames[-1] if s.frames else None
        name = "[unknown]" if leaf is None else (
            leaf.sym if leaf.sym != "[unknown]" else f"[unknown] in {leaf.dso.rsplit('/', 1)[-1]}")
        out[name] = out.get(name, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:top])


# -- the profile operations -------------------------------------------------------------


def with_profiles(workload, session, scratch: Path, params: dict, ops: list) -> list:
    """ops plus one `profile:<op>` per operation in a warmup run with profile=1 (else ops unchanged).

    A workload that declares its own `profile` parameter (hash) records its profile itself.
    """
    own = any(p.name == PROFILE_PARAM for p in getattr(workload, "params", ()))
    if own or not params.get(PROFILE_PARAM) or not params.get("_warmup"):
        return ops
    return ops + [profiled(op, session, scratch, repeat=bool(getattr(workload, "reads_only", False))) for op in ops]


def profiled(op, session, scratch: Path, *, repeat: bool):
    """The operation with perf attached around it, repeated (when read-only) for PROFILE_SECONDS."""
    state: dict = {}

    def run() -> dict:
        prof = Profiler(scratch, frequency=PROFILE_HZ)
        pids = list(session.target().pids)
        prof.start(pids)
        cache = getattr(session, "variant", {}).get("cache")
        n, t0, cpu0 = 0, time.perf_counter(), time.process_time()
        extra: dict = {}
        while True:
            out = op.run()
            extra = out if isinstance(out, dict) else {}
            n += 1
            if not repeat or prof.proc is None or n >= MAX_REPEATS or time.perf_counter() - t0 >= PROFILE_SECONDS:
                break
            if cache == "cold":  # each repeat as cold as the measured one; stop if that moved the target
                session.set_cache(cache)
                if list(session.target().pids) != pids:
                    break
        elapsed = time.perf_counter() - t0
        state["worker_cpu_s"] = time.process_time() - cpu0
        state["result"] = prof.stop()
        return dict(extra, profile_repeats=n, profile_elapsed_s=elapsed)

    def after() -> dict:
        post = op.after() if op.after else None
        out = dict(post) if isinstance(post, dict) else {}
        out.update(state.get("result") or {"profile_error": "not recorded"})
        return out

    return dataclasses.replace(op, name=PROFILE_PREFIX + op.name, run=run, after=after)


# -- reading the profiles back (analysis and report) -------------------------------------


def recorded(doc: dict):
    """(workload, operation, variant label, variant, extra) of every `profile:<op>` in the file."""
    for run in doc.get("runs", []):
        for op in run.get("operations", []):
            name = op.get("operation", "")
            if name.startswith(PROFILE_PREFIX):
                yield (run["workload"], name[len(PROFILE_PREFIX):], run.get("variant_label", ""), run["variant"],
                       op.get("extra", {}))


def _per_repeat(extra: dict) -> tuple[dict, float] | None:
    p = extra.get("profile")
    if not p or not p.get("sample_count"):
        return None
    reps = max(1, int(extra.get("profile_repeats") or 1))
    return p, p["sample_count"] / reps / p.get("frequency_hz", PROFILE_HZ)


def findings(doc: dict, comps: list[dict]) -> list[dict]:
    """For each compared pair with both sides profiled: the profiled CPU per operation on each side and
    what the difference is made of (categories and leaf functions), from absolute sample counts."""
    prof = {(w, o, lab): e for w, o, lab, _, e in recorded(doc)}
    out, seen = [], set()
    for c in comps:
        key = (c["workload"], c["operation"], c["baseline"], c["contender"])
        if key in seen:
            continue
        seen.add(key)
        b, k = prof.get((c["workload"], c["operation"], c["baseline"])), prof.get(
            (c["workload"], c["operation"], c["contender"]))
        if not b or not k:
            continue
        pb, pk = _per_repeat(b), _per_repeat(k)
        if not pb or not pk:
            continue
        (bp, b_s), (kp, k_s) = pb, pk
        scale_b = 1 / max(1, int(b.get("profile_repeats") or 1)) / bp.get("frequency_hz", PROFILE_HZ)
        scale_k = 1 / max(1, int(k.get("profile_repeats") or 1)) / kp.get("frequency_hz", PROFILE_HZ)
        cats = sorted(set(bp.get("categories", {})) | set(kp.get("categories", {})))
        cat_diff = {x: kp.get("categories", {}).get(x, 0) * k_s - bp.get("categories", {}).get(x, 0) * b_s
                    for x in cats}
        leaves = set(bp.get("leaf_samples", {})) | set(kp.get("leaf_samples", {}))
        leaf_diff = {f: kp.get("leaf_samples", {}).get(f, 0) * scale_k - bp.get("leaf_samples", {}).get(f, 0) * scale_b
                     for f in leaves}
        out.append({
            "workload": c["workload"], "operation": c["operation"], "baseline": c["baseline"],
            "contender": c["contender"], "baseline_cpu_s": b_s, "contender_cpu_s": k_s, "added_cpu_s": k_s - b_s,
            "contender_categories": kp.get("categories", {}), "baseline_categories": bp.get("categories", {}),
            "added_by_category": dict(sorted(cat_diff.items(), key=lambda kv: -kv[1])),
            "added_by_function": dict(sorted(leaf_diff.items(), key=lambda kv: -kv[1])[:5]),
            "samples": [bp["sample_count"], kp["sample_count"]],
            "method": "perf record -g -e cpu-clock during warmup runs; samples per operation repeat / frequency",
        })
    return out


CRYPTO_CATEGORIES = ("libcrypto", "sqlcipher")


def finding_line(f: dict) -> str:
    """'scan-eq/scan cache=warm, encryption=on: +3.9 ms CPU per operation in the profile (+41%); libcrypto 0%...'"""
    base = f["baseline_cpu_s"]
    pct = f"{f['added_cpu_s'] / base:+.0%}" if base > 0 else "n/a"
    crypto = sum(f["contender_categories"].get(x, 0) for x in CRYPTO_CATEGORIES)
    sign = "+" if f["added_cpu_s"] >= 0 else "-"
    line = (f"{f['workload']}/{f['operation']} {f['contender']} vs {f['baseline']}: "
            f"{sign}{fmt_seconds(abs(f['added_cpu_s']))} CPU per operation in the profile ({pct}); "
            f"{crypto:.0%} of the contender's CPU in libcrypto/SQLCipher")
    added = f["added_cpu_s"]
    if added > 0:
        parts = [f"{k} {v / added:.0%}" for k, v in f["added_by_category"].items() if v / added >= 0.05]
        funcs = [f"{k} {v / added:.0%}" for k, v in f["added_by_function"].items() if v / added >= 0.05][:3]
        line += "; the added time: " + ", ".join(parts or ["spread thin"])
        if funcs:
            line += " (" + ", ".join(funcs) + ")"
        crypto_added = sum(f["added_by_category"].get(x, 0) for x in CRYPTO_CATEGORIES)
        if crypto_added < 0.25 * added:
            line += ": not decryption, the added time is outside the cipher"
        else:
            line += ": pages are being decrypted (or keys derived) within the operation"
    return line + f" ({f['samples'][0]} / {f['samples'][1]} samples)"


def finding_lines(doc: dict, comps: list[dict]) -> list[str]:
    return [finding_line(f) for f in findings(doc, comps)]


def flame_files(doc: dict, prefix, *, only_missing: bool = False) -> list[str]:
    """A flame graph per profiled workload operation and variant: <prefix>-flame-<workload>-<op>-<n>.svg."""
    from . import flame

    written = []
    for i, (w, o, lab, _, extra) in enumerate(recorded(doc)):
        folded = (extra.get("profile") or {}).get("folded")
        if not folded:
            continue
        target = Path(f"{prefix}-flame-{w}-{o}-{_slug(lab)}.svg")
        if not (only_missing and target.exists()):
            target.write_text(flame.flamegraph_svg(folded, f"{doc['engine']['name']} CPU: {w}/{o} {lab}"))
        written.append(str(target))
    return written


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9=.-]+", "_", label)[:80] or "default"


def notes(doc: dict, comps: list[dict]) -> list[str]:
    """The report's lines on the generic profiles: what each overhead is spent on, and why a profile is missing."""
    asked = any((meta.get("params") or {}).get(PROFILE_PARAM) for name, meta in doc.get("workloads", {}).items()
                if name != "hash")  # the hash workload records and reports its own profile
    entries = list(recorded(doc))
    out = [f"CPU profile (perf, warmup runs): {line}" for line in finding_lines(doc, comps)]
    errors = sorted({e.get("profile_error") for *_, e in entries if e.get("profile_error")})
    out += [f"CPU profile: {e}" for e in errors]
    if asked and not entries:
        out.append("--profile records during the warmup runs, and there were none: use --warmups 1")
    return out

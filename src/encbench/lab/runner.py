"""The runner: plan the matrix, prepare the engine, execute runs in fresh worker
processes (interleaved, warmups first), and write the result file after every run.

It knows no engine, workload or probe by name: everything comes from the registries.
"""

from __future__ import annotations

import multiprocessing
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import __version__
from ..analysis import summary as analysis
from ..util import interrupts, owners
from ..util import leftovers
from . import meter as meters
from . import meterfork
from . import placement
from . import precision
from . import reclaim
from . import results
from . import resultschema
from . import runctx
from ..host import cpugap, environment
from ..util.redact import redact
from ..engines import ENGINES, PrepareContext
from ..errors import BadValueError, EncbenchError, RunFailedError, UsageError
from ..probes import PROBES
from ..probes.instructions import resolve
from ..vocab.variants import Variant, label, matrix, parse_filters, with_placebo
from ..workloads import WORKLOADS, capabilities
from ..workloads.base import resolve_params
from ..profiling.profiler import Profiler
from ..util.files import check_writable


@dataclass
class RunConfig:
    engine: str
    workloads: list[str]
    variant_filters: list[str]
    runs: int
    warmups: int
    size_bytes: int
    seed: int
    output: Path
    data_dir: Path
    probes: list[str]
    regenerate: bool = False
    key: str | None = field(default=None, repr=False)
    key_source: str = "default"
    quick: bool = False
    command: str = ""
    params: list[str] = field(default_factory=list)
    engine_options: dict = field(default_factory=dict)  # --dsn, --keep, ... (secrets never stored)
    precision: float | None = None  # --precision: target CI half-width of each headline comparison, in points
    max_time_s: float | None = None  # --max-time: rounds are added until the precision or this time is reached
    pin: bool = True  # --no-pin: False
    data_dir_given: bool = True  # False: data_dir is the default one (--data-dir not given)
    meter: str = meters.TIME  # --meter: time, or instructions (counted by valgrind: lab/meter.py)
    cache_sim: bool = False  # --meter instructions: callgrind's cache simulation too (L1 / last-level misses)
    budget_s: float | None = None  # --budget (--quick: its default): no round starts that would end after it
    sequential: bool = False  # --quick / --budget: rounds until each workload's verdicts resolve (precision.Sequential)

    def public(self) -> dict:
        return {
            "engine": self.engine, "workloads": self.workloads, "variant_filters": self.variant_filters,
            "runs": self.runs, "warmups": self.warmups, "size_bytes": self.size_bytes, "seed": self.seed,
            "data_dir": str(self.data_dir), "probes": self.probes, "quick": self.quick,
            "key_source": self.key_source, "command": self.command, "params": self.params,
            "engine_options": {k: redact(v) if isinstance(v, str) else v for k, v in self.engine_options.items()},
            "precision_points": self.precision, "max_time_s": self.max_time_s, "pin": self.pin,
            **({"budget_s": self.budget_s} if self.budget_s is not None else {}),
            **({"sequential": precision.Sequential().describe()} if self.sequential else {}),
            **({"meter": self.meter, "cache_sim": self.cache_sim} if self.meter != meters.TIME else {}),
        }


@dataclass
class Plan:
    engine: object
    workloads: list
    variants: list[Variant]
    items: list[dict]
    params: dict[str, dict]
    by_workload: dict[str, list[Variant]] = field(default_factory=dict)  # each workload's variants, matrix order
    keys: tuple = ()  # the variant keys the run varies (Engine.plan_keys)


def plan(config: RunConfig) -> Plan:
    """Check every name and value, and lay out the runs: per workload, warmups then ABBA rounds."""
    engine = ENGINES.get(config.engine)
    if not engine.workloads:
        raise UsageError(f"engine {engine.name} measures no workloads yet",
                         hint=f"what it offers now: encbench leak-check --engine {engine.name}")
    unknown = sorted(set(config.engine_options) - set(engine.options))
    if unknown:
        flags = ", ".join("--" + o.replace("_", "-").removesuffix("settings") + ("setting" if o == "settings" else "") for o in unknown)
        raise UsageError(f"engine {engine.name} takes no {flags}",
                         hint=f"its options: {', '.join('--' + o.replace('_', '-') for o in engine.options) or 'none'}")
    if config.engine_options.get("dsn"):
        engine.check_dsn(config.engine_options["dsn"])
    for name in config.probes:
        PROBES.get(name)
    workloads = []
    for name in config.workloads:
        wl = WORKLOADS.get(name)
        capabilities.require(engine, wl, WORKLOADS)  # listed by the engine, and its session serves it
        workloads.append(wl)
    meters.check(config.meter, engine, workloads, config.engine_options, config.probes, config.params,
                 adaptive=config.precision is not None or config.max_time_s is not None or config.sequential)
    keys = with_placebo(engine.variant_keys)  # `placebo` is every engine's (variants.py)
    filters = parse_filters(config.variant_filters, keys)
    keys = engine.plan_keys(keys, filters, [wl.name for wl in workloads], config.engine_options)
    params = meters.params(config.meter, resolve_params(workloads, config.params, quick=config.quick,
                                                        engine_workloads=[WORKLOADS.get(n) for n in engine.workloads]),
                           config.params, config.quick)
    items, variants, by_workload = [], [], {}
    for wl in workloads:
        wl_variants = matrix(keys, filters, wl.name)
        variants += [v for v in wl_variants if v not in variants]
        by_workload[wl.name] = wl_variants
        for w in range(config.warmups):
            items += [{"workload": wl.name, "variant": v, "round": w, "warmup": True} for v in wl_variants]
        for r in range(config.runs):
            order = wl_variants if r % 2 == 0 else wl_variants[::-1]  # A B B A: drift cancels out
            items += [{"workload": wl.name, "variant": v, "round": r, "warmup": False} for v in order]
    if len(items) > resultschema.MAX_RUNS:
        raise BadValueError(f"this plan has {len(items):,} runs; a result file holds at most "
                            f"{resultschema.MAX_RUNS:,} (docs/RESULTS.md)",
                            hint="fewer --runs, --warmups, variants or workloads, or split it into several runs")
    engine.check_variants(variants)
    return Plan(engine, workloads, variants, items, params, by_workload, keys)


def round_items(p: Plan, workload: str, r: int) -> list[dict]:
    """Measured round r of a workload: its variants in matrix order for even r, reversed for odd (A B B A)."""
    order = p.by_workload[workload] if r % 2 == 0 else p.by_workload[workload][::-1]
    return [{"workload": workload, "variant": v, "round": r, "warmup": False} for v in order]


def measured_rounds(doc: dict, p: Plan) -> dict[str, int]:
    """Complete measured rounds so far per workload (the fewest runs of any of its variants)."""
    counts = {wl: {label(v): 0 for v in vs} for wl, vs in p.by_workload.items()}
    for run in doc["runs"]:
        if not run.get("warmup") and run["variant_label"] in counts.get(run["workload"], {}):
            counts[run["workload"]][run["variant_label"]] += 1
    return {wl: min(c.values(), default=0) for wl, c in counts.items()}


def round_costs(spent: dict[str, list[float]], p: Plan) -> dict[str, float]:
    """Seconds one more round of each workload takes at its slowest measured run so far: the whole of a run's
    cost (the variant applied, the run, its result written), so that a round started before the deadline ends
    before it (warmups are not in spent)."""
    return {wl: len(vs) * max(spent.get(wl) or [0.0]) for wl, vs in p.by_workload.items()}


def starts_round(item: dict, p: Plan) -> bool:
    """Is this planned item the first run of a measured round of its workload?"""
    if item["warmup"]:
        return False
    order = p.by_workload[item["workload"]] if item["round"] % 2 == 0 else p.by_workload[item["workload"]][::-1]
    return item["variant"] == order[0]


def announce_estimate(doc: dict, p: Plan, budget: precision.Budget, on_progress: Callable, item: dict,
                      spent: dict[str, list[float]]) -> None:
    """--quick / --budget: after a workload's first measured round, the time its runs take at this machine's pace."""
    if budget.sequential is None or item["warmup"] or item["round"] != 0:
        return
    order = p.by_workload[item["workload"]]
    if item["variant"] != order[-1]:
        return
    wl = item["workload"]
    remaining = budget.deadline - budget.clock() if budget.max_time_s is not None else None
    on_progress(precision.estimate_text({wl: round_costs(spent, p)[wl]}, {wl: 1}, budget.sequential, remaining),
                len(doc["runs"]), len(p.items))


def new_document(config: RunConfig, p: Plan, env: dict) -> dict:
    e = p.engine
    return {
        "schema_version": results.SCHEMA_VERSION,
        "encbench_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "status": "running",
        "config": config.public(),
        "environment": env,
        "engine": {
            "name": e.name,
            "description": e.description,
            "axis": e.axis,
            "axis_baseline": e.axis_baseline,
            "variant_keys": [{"name": k.name, "applies_when": [list(x) for x in k.applies_when],
                              "workloads": list(k.workloads) if k.workloads else None}
                             for k in p.keys or with_placebo(e.variant_keys)],
            "variants": p.variants,
            "table_columns": list(e.table_columns) if e.table_columns else None,
            "metric_words": dict(e.metric_words),
            "tables": [t.to_dict() for t in e.run_tables(p.by_workload)],
        },
        "workloads": {wl.name: dict(wl.describe(), params=p.params[wl.name],
                                    **({"verdict_metrics": list(meters.verdict_metrics(wl))}
                                       if config.meter == meters.INSTRUCTIONS else {}))
                      for wl in p.workloads},
        "dataset": None,
        "calibration": None,
        "runs": [],
        "error": None,
    }


def per_operation(record: dict) -> dict:
    """Operations repeated N times in one timed interval (workloads/repeat.py): metrics divided back by N.

    The totals stay as `metrics_total`, N as `repeat`; a run still gives one value per operation.
    """
    for op in record.get("operations", []):
        n = (op.get("extra") or {}).pop("repeat", None)
        if isinstance(n, int) and n > 1:
            op["metrics_total"] = op["metrics"]
            op["metrics"] = {k: v / n if isinstance(v, (int, float)) else v for k, v in op["metrics"].items()}
            op["repeat"] = n
    return record


def runs_per_variant(doc: dict) -> dict[str, int]:
    """The fewest measured runs of any variant, per workload."""
    counts: dict[str, dict[str, int]] = {}
    for run in doc["runs"]:
        if not run.get("warmup"):
            c = counts.setdefault(run["workload"], {})
            c[run["variant_label"]] = c.get(run["variant_label"], 0) + 1
    return {wl: min(c.values()) for wl, c in counts.items()}


def _context():
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["encbench.lab.forkserver_init", "encbench.lab.worker", "encbench.lab.placement"])
    return ctx


POLL_S = 0.05
STOP_GRACE_S = 10


def run_in_fresh_process(ctx, spec: dict) -> dict:
    """One run in a new worker process; on Ctrl-C/SIGTERM the worker is stopped in order.

    The worker ignores SIGINT and turns SIGTERM into a clean exit (its finally blocks
    close the session and remove its scratch files); the runner sends SIGTERM when
    interrupts.STOP is set and waits for it, then kills it if it does not stop.
    """
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=placement.child_main, args=(spec, sender), daemon=True)
    proc.start()
    sender.close()
    try:
        while not receiver.poll(POLL_S):
            if interrupts.STOP.is_set():
                proc.terminate()
                raise KeyboardInterrupt
            if not proc.is_alive() and not receiver.poll(0):
                raise _died(proc)
        try:
            kind, payload = receiver.recv()
        except EOFError:
            raise _died(proc) from None
    finally:
        proc.join(STOP_GRACE_S)
        if proc.is_alive():
            proc.kill()
            proc.join()
        receiver.close()
    return outcome(kind, payload)


def _died(proc) -> BaseException:
    """A worker that ended without a result: an interruption when a signal to the whole group ended it (the
    forkserver killed with it says exit code 255), else a failed run."""
    if interrupts.stopped():
        return KeyboardInterrupt()
    return RunFailedError(f"the worker process died (exit code {proc.exitcode}) without a result")


def outcome(kind: str, payload) -> dict:
    """A worker's message as the run's record, or the error it reported, raised here."""
    if kind == "error":
        raise payload
    if kind == "exception":
        gone = any(sign in payload for sign in SERVER_GONE)
        raise RunFailedError(f"the server went away during the run: {payload}" if gone else payload)
    return payload


# a driver's words for a connection whose server stopped, restarted or was killed (psycopg, PyMySQL)
SERVER_GONE = ("server closed the connection unexpectedly", "terminating connection due to administrator command",
               "Lost connection to", "server has gone away", "Connection refused", "connection is lost")


def _interruption(doc: dict, started: bool) -> KeyboardInterrupt:
    """A failure a signal caused, as the interruption it is (the file's status, whether it was written)."""
    doc["status"] = "interrupted"
    stop = KeyboardInterrupt()
    stop.result_written = started
    return stop


def execute(config: RunConfig, *, on_progress: Callable[[str, int, int], None] = lambda *a: None) -> dict:
    """Run the whole plan. The result file is up to date after every run, whatever happens."""
    reclaim.claim(config.data_dir, pymp=True)  # undo what killed runs left (one line); mark what this one would leave
    budget = precision.Budget(config.precision, config.max_time_s or config.budget_s,  # the clock starts here
                              sequential=precision.Sequential() if config.sequential else None)
    p = plan(config)
    p.engine.check_available()
    check_writable(config.output)
    config.data_dir.mkdir(parents=True, exist_ok=True)
    doc = new_document(config, p, environment.collect(p.engine.versions(), config.data_dir))
    scratch = owners.make_dir("scratch-", config.data_dir)  # in the owner record before it exists
    leftovers.write_owner(scratch, leftovers.me())  # and its own record (encbench cleanup --data-dir)
    # before prepare: a private server inherits the rest CPUs; after it when a workload's server works as a DBA's
    placed = placement.choose(config.pin, spread=any(w.spreads_server for w in p.workloads))
    if placed.before_prepare:
        placement.apply(placed)
    doc["placement"] = placed.describe()
    runs = _Runs(config, p, doc, scratch, placed, on_progress)
    try:
        if runs.metered:
            on_progress("reading the CPU valgrind simulates", 0, len(p.items))
            doc["meter"] = meters.facts(config.cache_sim)
        runs.setup = p.engine.prepare(_prepare_context(config, p, scratch, on_progress))
        runs.prepared()
        results.write_atomic(config.output, doc)
        runs.started = True
        runs.measure(budget)
        on_progress("done", len(doc["runs"]), len(doc["runs"]))
        doc["status"] = "complete"
    except KeyboardInterrupt as e:
        doc["status"] = "interrupted"
        e.result_written = runs.started
        raise
    except EncbenchError as e:
        if interrupts.stopped():  # what failed was stopped by the signal (a set-up tool in the group): interrupted
            raise _interruption(doc, runs.started) from None
        runs.failed(e)
        raise
    finally:
        with interrupts.deferred():  # a second Ctrl-C must not cut the clean-up short
            runs.clean_up()
            _finish(doc, budget, runs.started, config.output)
    return doc


def _prepare_context(config: RunConfig, p: Plan, scratch: Path, on_progress: Callable) -> PrepareContext:
    """What the engine's prepare gets: the data, the variants, the options, the progress line, the meter."""
    metered = config.meter == meters.INSTRUCTIONS
    return PrepareContext(
        size_bytes=config.size_bytes, seed=config.seed, data_dir=config.data_dir, scratch_dir=scratch,
        variants=p.variants, regenerate=config.regenerate, key=config.key, key_source=config.key_source,
        progress=lambda msg: on_progress(msg, 0, len(p.items)),
        options=config.engine_options, params=p.params, data_dir_given=config.data_dir_given,
        meter={"cache_sim": config.cache_sim, "keep_dir": str(config.data_dir)} if metered else {},
    )


@dataclass
class _Runs:
    """One execute's measuring: the engine's setup, the worker under valgrind (--meter instructions, an engine in
    the worker), each run in a fresh process appended to the result file, and the clean-up."""

    config: RunConfig
    p: Plan
    doc: dict
    scratch: Path
    placed: placement.Placement
    on_progress: Callable
    setup: dict | None = None
    workers: meterfork.MeteredWorkers | None = None
    started: bool = False  # the file is first written once measuring can start: a configuration error leaves none
    total: int = 0

    @property
    def metered(self) -> bool:
        return self.config.meter == meters.INSTRUCTIONS

    @property
    def probes(self) -> list[str]:
        probes = list(self.config.probes)
        return probes + (["instructions"] if self.metered and "instructions" not in probes else [])

    def prepared(self) -> None:
        """After the engine's prepare: placement, what the data set and versions are, the raw cipher speed, the
        worker under valgrind."""
        p, doc, setup = self.p, self.doc, self.setup
        if not self.placed.before_prepare:  # its servers started on every CPU; the runner now on the rest
            placement.apply(self.placed)
            doc["placement"] = self.placed.describe()
        doc["dataset"] = {k: v for k, v in setup.items() if not k.startswith("_")}
        doc["environment"]["engine_versions"].update(setup.get("versions", {}))
        if setup.get("kept_server"):
            self.on_progress(f"server kept: {setup['kept_server']}", 0, len(p.items))
        self.on_progress("measuring raw cipher speed", 0, len(p.items))
        doc["calibration"] = p.engine.calibrate(setup)
        if self.metered and p.engine.metered == meters.WORKER:
            self.on_progress("starting the worker under valgrind", 0, len(p.items))
            self.workers = meterfork.MeteredWorkers(self.scratch, cache_sim=self.config.cache_sim,
                                                    keep_dir=self.config.data_dir, engine=p.engine.name)
            self.workers.start()

    def measure(self, budget: precision.Budget) -> None:
        """The planned runs (--budget bounds its rounds), then more rounds while --precision / --max-time want
        them; under --meter instructions the crypto library's code paths last."""
        p, doc = self.p, self.doc
        self._ctx, self._sources, self.total = _context(), runctx.Sources(), len(p.items)
        self.spent: dict[str, list[float]] = {}  # workload -> seconds each measured run cost, all of it (round_costs)
        for item in p.items:
            if self.config.budget_s is not None and starts_round(item, p) and not budget.fits(
                    round_costs(self.spent, p)[item["workload"]]):
                break  # --budget bounds the planned rounds too: the rule below says which workloads stopped
            self.one(item)
            announce_estimate(doc, p, budget, self.on_progress, item, self.spent)
        while True:  # --precision / --max-time: more rounds where a comparison is still too wide; --quick/--budget:
            costs = round_costs(self.spent, p)
            chosen = (budget.next_sequential(precision.row_codes(doc), measured_rounds(doc, p), costs)
                      if budget.sequential else budget.next_round(precision.rows(doc), costs))
            if not chosen:  # more rounds until each workload's verdicts resolve
                break
            done = measured_rounds(doc, p)
            extra = [item for wl in chosen for item in round_items(p, wl, done[wl])]
            if len(doc["runs"]) + len(extra) > resultschema.MAX_RUNS:  # what any encbench reads back (RESULTS.md)
                budget.stopped_because = f"a result file holds at most {resultschema.MAX_RUNS:,} runs"
                break
            self.total += len(extra)
            for item in extra:
                self.one(item)
        if self.metered:  # the CPU-model gap: which code the crypto library runs natively and under valgrind
            self.on_progress("probing the crypto library natively and under valgrind", len(doc["runs"]),
                             len(doc["runs"]))

            doc["meter"].update(cpugap.code_paths(p.engine.crypto_probes(self.setup), doc["meter"]["host_cpu_features"],
                                                  doc["meter"]["missing_cpu_features"], Profiler.available()))

    def one(self, item: dict) -> None:
        """One run in a fresh worker (or the worker under valgrind), appended to the file with its context."""
        p, doc, placed = self.p, self.doc, self.placed
        i, started = len(doc["runs"]), time.monotonic()
        interrupts.raise_if_stopped()
        self.on_progress(f"{item['workload']} {label(item['variant'])}{' (warmup)' if item['warmup'] else ''}",
                         i, self.total)
        before = self._sources.snapshot()
        server = p.engine.apply_variant(self.setup, item["variant"], item["workload"])
        spec = dict(item, engine=p.engine.name, setup=self.setup, probes=self.probes, scratch_dir=str(self.scratch),
                    params=p.params[item["workload"]], cpus=placed.worker_cpus if placed.pinned else None,
                    meter=({"kind": self.config.meter} if self.metered else {})
                    | ({"self_dir": str(self.workers.dir), "open": item["workload"] == p.workloads[0].name}
                       if self.workers else {}))
        what = f"run {i + 1} ({item['workload']} {label(item['variant'])})"
        with interrupts.deferred():
            try:
                out = per_operation(resolve(outcome(*self.workers.run(spec))) if self.workers else
                                    run_in_fresh_process(self._ctx, spec))
                if self.metered:
                    meters.check_counted(out, what)
            except KeyboardInterrupt:
                raise
            except EncbenchError:
                if interrupts.stopped():  # a client or the server's worker killed by the group's signal
                    raise KeyboardInterrupt from None
                raise
            except Exception as e:
                raise RunFailedError(f"{what} failed: {type(e).__name__}: {e}") from None
            context = runctx.delta(before, self._sources.snapshot(),
                                   worker_cpus=placed.worker_cpus if placed.pinned else None)
            doc["runs"].append(dict(item, variant_label=label(item["variant"]), server_config=server, **out,
                                    context=context))
            results.write_atomic(self.config.output, doc)
        if not item["warmup"]:
            self.spent.setdefault(item["workload"], []).append(time.monotonic() - started)

    def failed(self, e: EncbenchError) -> None:
        """A failed run's file: its one-line error (redacted), the log of a private server that died."""
        self.doc["status"] = "failed"
        died = self.p.engine.failure_detail(self.setup, self.config.data_dir) if self.setup is not None else []
        if died:  # a private server died: its log kept (path in the one line), its last lines in the file
            e.args = (f"{e}; server log kept: {', '.join(d['server_log'] for d in died)}", *e.args[1:])
            self.doc["error_detail"] = died
        self.doc["error"] = redact(e.one_line())
        e.result_written = self.started

    def clean_up(self) -> None:
        if self.workers is not None:
            self.workers.close()
        if self.setup is not None:
            self.p.engine.cleanup(self.setup)
        placement.restore(self.placed)
        shutil.rmtree(self.scratch, ignore_errors=True)


def _finish(doc: dict, budget: precision.Budget, started: bool, output: Path) -> None:
    """Whatever happened: the status, why measuring stopped, the run context, precision and the analysis (the raw
    runs matter more: an analysis that fails is said in the file), written once more."""
    if doc["status"] == "running":
        doc["status"] = "failed"
    if budget.stopped_because is None:
        budget.stopped_because = doc["status"]  # interrupted or failed before the plan was done
    try:
        doc["run_context"] = runctx.summary(doc["runs"])
        doc["precision"] = precision.document(precision.rows(doc), budget, runs_per_variant(doc))
    except Exception as e:  # as below: the raw runs matter more
        doc["analysis_error"] = f"{type(e).__name__}: {e}"
    try:
        doc.update(analysis.analyze(doc).stored())
    except Exception as e:  # the raw runs matter more than their summary: keep them
        doc["analysis_error"] = f"{type(e).__name__}: {e}"
    if started:
        results.write_atomic(output, doc)

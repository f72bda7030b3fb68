"""`encbench advise`'s measurements: the engine's sweeps (one knob varied at a time), each a `run` of its own.

An engine lists its sweeps (`Engine.advise_sweeps(quick, options)`): which workloads, which variant filters (the
knob's values, the rest at their defaults), which params. Each sweep is executed by the runner like any `run`
(fresh worker per run, interleaved variants, warmups, a result file written after every run), so an interrupted
advise keeps what it measured and leaves servers, mounts and keys as `run` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..vocab.knob import Sweep
from ..probes import DEFAULT_PROBES


@dataclass
class Settings:
    engine: str
    runs: int
    warmups: int
    size_bytes: int
    seed: int
    data_dir: Path
    out_dir: Path
    quick: bool = False
    options: dict = field(default_factory=dict)  # --dsn, --allow-reconfigure, ... (as `run`'s engine options)
    key: str | None = field(default=None, repr=False)
    key_source: str = "default"
    command: str = ""
    data_dir_given: bool = True
    budget_s: float | None = None  # --budget: the whole advise; each sweep gets an equal share of what is left


def config(settings: Settings, sweep: Sweep, budget_s: float | None = None):
    from . import runner

    return runner.RunConfig(
        engine=settings.engine, workloads=list(sweep.workloads), variant_filters=list(sweep.variants),
        runs=sweep.runs or settings.runs, warmups=settings.warmups, size_bytes=settings.size_bytes,
        seed=settings.seed, output=path_of(settings, sweep), data_dir=settings.data_dir, probes=list(DEFAULT_PROBES),
        key=settings.key, key_source=settings.key_source, quick=settings.quick,
        command=f"{settings.command} (sweep {sweep.name})", params=list(sweep.params),
        engine_options=dict(settings.options), data_dir_given=settings.data_dir_given,
        budget_s=budget_s, sequential=budget_s is not None)


def path_of(settings: Settings, sweep: Sweep) -> Path:
    return settings.out_dir / f"advise-{sweep.name}.json"


def check(settings: Settings, sweeps: list[Sweep]) -> None:
    """Every sweep's names and values checked (runner.plan) before the first is run."""
    from . import runner

    for sweep in sweeps:
        runner.plan(config(settings, sweep))


def run(settings: Settings, sweeps: list[Sweep], *, progress: Callable[[str], None] = lambda msg: None,
        clock: Callable[[], float] = time.monotonic) -> list[tuple[str, dict]]:
    """Every sweep, one after the other: (result file, document) of each."""
    from . import runner

    out = []
    start = clock()
    for i, sweep in enumerate(sweeps, 1):
        share = None
        if settings.budget_s is not None:  # --budget: an equal share of what is left to each sweep still to run
            share = (settings.budget_s - (clock() - start)) / (len(sweeps) - i + 1)
            if share < MIN_SWEEP_S:
                left = ", ".join(s.knob for s in sweeps[i - 1:])
                progress(f"budget spent: {len(sweeps) - i + 1} sweep(s) not run ({left})")
                break
        progress(f"sweep {i} of {len(sweeps)}: {sweep.knob} ({', '.join(sweep.workloads)}; "
                 f"{' '.join(sweep.variants)})" + (f", budget {share:.0f} s" if share is not None else ""))
        doc = runner.execute(config(settings, sweep, share))
        out.append((str(path_of(settings, sweep)), doc))
    return out


MIN_SWEEP_S = 10.0  # --budget: a sweep is not started with less than this left for it

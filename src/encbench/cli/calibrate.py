"""`encbench calibrate`: the read and write unit costs of the encryption bill, fitted at once over a designed set
of oltp mixes run on the target engine (issue 31, a first slice): the engine's read-only and write-heavy scripts at
two memory shares, encrypted and plain, as one ordinary `run` (fresh worker per run, interleaved, a result file
written after every run); then analysis/fit.py's least squares over every run. The result file is what
`encbench estimate --from` takes."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import errors
from .defaults import DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE, QUICK_SIZE, data_dir_default
from ..lab import runner
from ..probes import DEFAULT_PROBES
from ..report import render as report
from ..util.units import parse_positive_int, parse_size
from ..analysis import fit
from ..engines import DEFAULT_ENGINE, ENGINES
from ..lab import results, runner

QUICK_PARAMS = ("seconds=3", "warmup_seconds=1")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (default sqlite)")
    p.add_argument("--quick", action="store_true", help="short mixes (3 s each after a 1 s warm-up)")
    p.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS})")
    p.add_argument("--size", default=None, help=f"data size (default {DEFAULT_SIZE}, --quick {QUICK_SIZE})")
    p.add_argument("--data-dir", default=None, help=f"where generated data is kept and reused (default {data_dir_default()})")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="the result file (default encbench-results/calibrate-<engine>-<time>.json)")
    p.add_argument("--json", action="store_true", help="the fitted costs as JSON")


def _config(args, engine, argv):
    from . import defaults

    out = Path(args.output) if args.output else Path("encbench-results") / (
        f"calibrate-{engine.name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    return runner.RunConfig(
        engine=engine.name, workloads=["oltp"], variant_filters=list(engine.calibration_variants),
        runs=parse_positive_int(args.runs or DEFAULT_RUNS, what="--runs", maximum=1000), warmups=1,
        size_bytes=parse_size(args.size or (QUICK_SIZE if args.quick else DEFAULT_SIZE)), seed=DEFAULT_SEED, output=out,
        data_dir=defaults.data_dir(args.data_dir), probes=list(DEFAULT_PROBES), quick=args.quick,
        command=report.command_line(argv), params=list(QUICK_PARAMS if args.quick else ()),
        data_dir_given=bool(args.data_dir))


def cmd_calibrate(args, argv: list[str]) -> int:
    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    if not engine.calibration_variants:
        raise errors.UnknownNameError(f"engine {engine.name!r} has no calibration mixes yet", hint="engines with "
                                      "them: " + ", ".join(n for n, e in ENGINES.items() if e.calibration_variants))
    config = _config(args, engine, argv)
    runner.plan(config)  # every name and value checked before anything runs
    results.check_writable(config.output)
    print(f"calibrate: {engine.name}: oltp {' '.join(config.variant_filters)}, {config.runs} runs per variant",
          file=sys.stderr)
    try:
        doc = runner.execute(config)
    except KeyboardInterrupt:
        print(f"encbench: interrupted: the runs so far are kept in {config.output}", file=sys.stderr)
        return errors.EXIT_INTERRUPTED
    got = fit.fit(doc)
    if args.json:
        print(json.dumps({"file": str(config.output), "fit": got}, indent=1))
    else:
        print(_words(got, config.output))
    return 0 if got and all(got[f"{k}_ci_us"][0] > 0 for k in ("read", "write")) else errors.EXIT_NO_ESTIMATE


def _words(got: dict | None, path) -> str:
    if got is None:
        return f"{path}: no fit (the mixes' reads and writes did not vary apart, or a side has no runs)"
    lines = [f"{path}: fitted over {got['runs']} runs in {len(got['cells'])} mixes ({got['method']})"]
    for k, word in (("read", "per page read"), ("write", "per page written")):
        lo, hi = got[f"{k}_ci_us"]
        state = "" if lo > 0 else "  NOT RESOLVED (the 95% CI reaches zero: more runs or longer mixes)"
        lines.append(f"  {got[f'{k}_us']:.2f} µs {word} [{lo:.2f}, {hi:.2f}]{state}")
    lines.append(f"  use it: encbench estimate --from {path} --live DSN (or --read-rate / --write-rate)")
    return "\n".join(lines)

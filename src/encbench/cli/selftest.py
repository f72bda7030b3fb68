"""`encbench selftest`: an A/A check of this machine (false positives, noise floor, cold cache, placement)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import errors
from . import defaults
from .common import workloads
from .defaults import DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE
from ..engines import DEFAULT_ENGINE, ENGINES
from ..lab import runner, selftest
from ..report import render as report
from ..util.units import parse_count, parse_positive_int, parse_size
from ..util.columns import echo
from ..util.files import check_writable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (default sqlite)")
    p.add_argument("--workload", action="append", default=[], metavar="W[,W]",
                   help="workload (repeatable, or a comma list; default a reduced suite)")
    p.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS}, as `run`)")
    p.add_argument("--warmups", default="1", help="warmup runs per variant (default 1)")
    p.add_argument("--size", default=None, help=f"data size (default {DEFAULT_SIZE}, as `run`)")
    p.add_argument("--data-dir", default=None, help="where generated data is kept and reused (as `run`)")
    p.add_argument("--save-floor", default=None, metavar="FILE", help="save the noise floor for `compare`")
    p.add_argument("--keep-results", default=None, metavar="DIR", help="keep the two result files in DIR")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--meter", choices=("time", "instructions"), default="time",
                   help="instructions: two more invocations under --meter instructions (valgrind; ~2 min more on 2 "
                        "cores), their A/A false positives and spread beside the time's")


def cmd_selftest(args, argv: list[str]) -> int:
    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    settings = selftest.Settings(
        engine=engine.name, workloads=workloads(args.workload) or selftest.workloads_for(engine),
        runs=parse_positive_int(args.runs or DEFAULT_RUNS, what="--runs", maximum=1000),
        warmups=parse_count(args.warmups, what="--warmups", maximum=100),
        size_bytes=parse_size(args.size or DEFAULT_SIZE), seed=DEFAULT_SEED,
        data_dir=defaults.data_dir(args.data_dir),
        keep_dir=Path(args.keep_results) if args.keep_results else None, command=report.command_line(argv),
        meter=args.meter == "instructions")
    runner.plan(selftest.config_for(settings, Path("selftest.json")))  # every name and value checked first
    if settings.meter:
        runner.plan(selftest.config_for(settings, Path("selftest.json"), counted=True))
    for path in ([Path(args.save_floor)] if args.save_floor else []) + (
            [settings.keep_dir / "selftest-1.json"] if settings.keep_dir else []):
        check_writable(path)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    r = selftest.run(settings, progress=lambda msg: echo(f"selftest: {msg}", file=sys.stderr, flush=True))
    if args.save_floor:
        selftest.save_floor(Path(args.save_floor), r["floor_file"])
    if args.json:
        print(selftest.to_json(r))
    else:
        echo("\n".join(selftest.lines(r)))
        if args.save_floor:
            command = f"encbench compare A B --noise-floor {args.save_floor}"
            echo(f"noise floor saved to {args.save_floor} ({command})", keep=[f"({command})"])
    return 0 if r["passed"] else errors.EXIT_SELFTEST

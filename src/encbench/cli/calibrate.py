"""`encbench calibrate`: every unit cost of the encryption bill, fitted at once over a designed set of mixes run on
the target engine (issue 31), each side as one ordinary `run` (fresh worker per run, interleaved, a result file
written after every run):

- at rest: the engine's read-only and write-heavy oltp scripts at two memory shares, encrypted and plain
  (`Engine.calibration_variants`); fitted: page reads, page writes, log bytes (analysis/fit.py);
- in transit: a connect-heavy (`connect`), a bytes-heavy (`bulk`), a request-heavy (`roundtrip`: a record received
  and one sent per query) and a reply-heavy (`storm`: many records sent, one received) mix with tls=off,on (the
  engine's `calibration_transit_variants`); fitted: new TLS sessions, bytes, TLS records received and records sent.

-o FILE is the calibration file (analysis/calibration.py) `encbench estimate --from` takes; each side's result file
is kept beside it (FILE stem + `.at-rest.json` / `.in-transit.json`). With --dsn only the in-transit mixes run (a
TLS variant is the client's choice: nothing on the server changes); the at-rest terms are refused in one line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .. import errors
from ..analysis import calibration, summary, unitcost
from ..engines import DEFAULT_ENGINE, ENGINES, engine_for_dsn
from ..lab import results, runner
from ..probes import DEFAULT_PROBES
from ..report import render as report
from ..util.units import parse_positive_int, parse_size
from ..util.columns import echo
from ..workloads import WORKLOADS
from .defaults import DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE, QUICK_SIZE, data_dir_default
from ..util.files import check_writable

QUICK_PARAMS = ("seconds=3", "warmup_seconds=1")  # the oltp mixes
TRANSIT = ("connect", "bulk", "roundtrip", "storm")
# the in-transit mixes' sizes: each run long enough for its server CPU to be timed at a 10 ms tick
TRANSIT_PARAMS = ("connections=200", "rows=100000", "seconds=2", "messages=50000")
TRANSIT_QUICK = ("connections=100", "rows=50000", "seconds=1", "messages=20000")
DSN_AT_REST = ("--dsn: the at-rest mixes need a private server (encrypted and plain schemas or filesystems, memory "
               "shares set by restarts): run calibrate without --dsn for them")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (default sqlite; with --dsn: the DSN's)")
    p.add_argument("--dsn", default=None, metavar="DSN",
                   help="an existing server: only the in-transit mixes run there (nothing on it is changed)")
    p.add_argument("--quick", action="store_true", help="short mixes (oltp: 3 s each after a 1 s warm-up)")
    p.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS})")
    p.add_argument("--size", default=None, help=f"data size (default {DEFAULT_SIZE}, --quick {QUICK_SIZE})")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a workload parameter, after calibrate's own (e.g. connections=50)")
    p.add_argument("--data-dir", default=None, help=f"where generated data is kept and reused (default {data_dir_default()})")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="the calibration file (default encbench-results/calibrate-<engine>-<time>.json)")
    p.add_argument("--json", action="store_true", help="the calibration document on stdout")


def _config(args, engine, argv, side: str, out: Path):
    from . import defaults

    if side == "at_rest":
        workloads, variants = ["oltp"], list(engine.calibration_variants)
        params = list(QUICK_PARAMS if args.quick else ())
    else:
        workloads, variants = list(TRANSIT), list(engine.calibration_transit_variants)
        params = list(TRANSIT_QUICK if args.quick else TRANSIT_PARAMS)
    return runner.RunConfig(
        engine=engine.name, workloads=workloads, variant_filters=variants,
        runs=parse_positive_int(args.runs or DEFAULT_RUNS, what="--runs", maximum=1000), warmups=1,
        size_bytes=parse_size(args.size or (QUICK_SIZE if args.quick else DEFAULT_SIZE)), seed=DEFAULT_SEED, output=out,
        data_dir=defaults.data_dir(args.data_dir), probes=list(DEFAULT_PROBES), quick=args.quick,
        command=report.command_line(argv), params=params + _own_params(args.param, workloads),
        data_dir_given=bool(args.data_dir),
        engine_options={"dsn": args.dsn} if args.dsn and side == "in_transit" else {})


def _own_params(given: list[str], workloads: list[str]) -> list[str]:
    """The --param values a side's workloads take (the other side's are for it; a name neither takes is refused
    by the run that checks every name: `_plan`)."""
    names = {p.name for w in workloads for p in WORKLOADS.get(w).params}
    return [g for g in given if g.partition("=")[0].strip() in names]


def _engine(args):
    if args.dsn:
        engine = engine_for_dsn(args.dsn)
        if engine is None:
            raise errors.UsageError("--dsn is not a postgresql:// or mysql:// DSN", hint="e.g. postgresql://user@host/db")
        if args.engine and args.engine != engine.name:
            raise errors.UsageError(f"--engine {args.engine} but the --dsn is a {engine.name} server")
        engine.check_dsn(args.dsn)
        return engine
    engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
    if not engine.calibration_variants:
        raise errors.UnknownNameError(f"engine {engine.name!r} has no calibration mixes yet", hint="engines with "
                                      "them: " + ", ".join(n for n, e in ENGINES.items() if e.calibration_variants))
    return engine


def _plan(args, engine, argv) -> tuple[Path, dict]:
    """The calibration file and side -> RunConfig of every side that runs (each checked before anything runs)."""
    out = Path(args.output) if args.output else Path("encbench-results") / (
        f"calibrate-{engine.name}-{time.strftime('%Y%m%d-%H%M%S')}.json")
    sides = {}
    if not args.dsn:
        sides["at_rest"] = out.with_name(out.stem + ".at-rest.json")
    if engine.calibration_transit_variants:
        sides["in_transit"] = out.with_name(out.stem + ".in-transit.json")
    configs = {side: _config(args, engine, argv, side, path) for side, path in sides.items()}
    taken = {g for c in configs.values() for g in c.params}
    unknown = [g for g in args.param if g not in taken]
    if unknown:
        raise errors.UnknownNameError(f"unknown --param {unknown[0].partition('=')[0].strip()!r} for calibrate's "
                                      f"mixes ({', '.join(w for c in configs.values() for w in c.workloads)})",
                                      hint="e.g. --param connections=50 (connect) or --param rows=20000 (bulk)")
    check_writable(out, create_parent=not args.output)  # only the default directory is created
    for config in configs.values():
        runner.plan(config)
        check_writable(config.output)
    return out, configs


def cmd_calibrate(args, argv: list[str]) -> int:
    engine = _engine(args)
    out, configs = _plan(args, engine, argv)
    if args.dsn:
        echo(f"calibrate: at rest refused: {DSN_AT_REST}", file=sys.stderr)
    docs = {}
    for side, config in configs.items():
        echo(f"calibrate: {engine.name} {side.replace('_', ' ')}: {', '.join(config.workloads)} "
             f"{' '.join(config.variant_filters)}, {config.runs} runs per variant", file=sys.stderr, flush=True)
        try:
            docs[side] = (runner.execute(config), config.output)
        except KeyboardInterrupt:
            echo(f"encbench: interrupted: the runs so far are kept in {config.output}", file=sys.stderr)
            return errors.EXIT_INTERRUPTED
    setup = _setup(docs)
    doc = calibration.build(engine.name, setup, docs, command=report.command_line(argv),
                            refused={"at_rest": DSN_AT_REST} if args.dsn else None)
    results.write_atomic(out, doc)
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        echo("\n".join(calibration.lines(doc, out)), keep=calibration.figures(doc))
    return 0 if doc["fitted_resolved"] else errors.EXIT_NO_ESTIMATE


def _setup(docs: dict) -> dict:
    """The engine, page size and cipher the at-rest costs were measured with (the in-transit ones: the engine)."""
    if "at_rest" not in docs:
        return {"page_size": None, "cipher": None}
    doc = docs["at_rest"][0]
    entry = (summary.analyze(doc).get("oltp_costs") or [None])[0]
    s = unitcost.setup_of(doc, entry)
    return {"page_size": s.page_size, "cipher": s.cipher}

"""`encbench advise`: which setting makes encryption cheaper, by how much, at what loss of protection (issue 24)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from .. import errors
from . import defaults
from .common import parse_settings
from .defaults import DEFAULT_RUNS, DEFAULT_SEED, DEFAULT_SIZE, QUICK_SIZE, data_dir_default
from ..lab import precision
from ..analysis import advise, summary as analysis
from ..engines import DEFAULT_ENGINE, ENGINES, engine_named
from ..lab import advise as sweeps_lab, results
from ..report import render as report
from ..util.columns import echo
from ..util.units import parse_count, parse_positive_int, parse_size
from ..util.files import check_writable

# a setting's statement in the advice (what a DBA copies): kept on one line when the advice is wrapped
STATEMENT = re.compile(r"(?:PRAGMA|ALTER SYSTEM SET|SET GLOBAL) [\w.]+ = [^\s;)]+")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--engine", default=None, help="engine (default sqlite)")
    p.add_argument("--from", dest="sources", action="extend", nargs="+", default=[], metavar="RESULTS",
                   help="rank what these result files measured instead of running the sweeps (one or more files, "
                        "e.g. DIR/*.json; repeatable)")
    p.add_argument("--quick", action="store_true", help=f"the reduced sweeps, small data ({QUICK_SIZE})")
    p.add_argument("--runs", default=None, help=f"measured runs per variant (default {DEFAULT_RUNS}: the verdict minimum)")
    p.add_argument("--warmups", default="1", help="warmup runs per variant (default 1)")
    p.add_argument("--size", default=None, help=f"data size (default {DEFAULT_SIZE}, --quick {QUICK_SIZE})")
    p.add_argument("--data-dir", default=None, help=f"where generated data is kept and reused (default {data_dir_default()})")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="directory of the sweeps' result files (default encbench-results/advise-<engine>-<time>)")
    p.add_argument("--dsn", default=None, help="an existing server: only client-side and session knobs change")
    p.add_argument("--allow-reconfigure", action="store_true",
                   help="--dsn: server-side knobs may change too, journaled and restored byte for byte (as `run`)")
    p.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                   help="a private server's setting (as `run`)")
    p.add_argument("--budget", default=None, metavar="DURATION",
                   help="time the sweeps may take, e.g. 10m: each sweep gets an equal share of what is left and runs "
                        "until its verdicts resolve within it (6 runs per variant at least); sweeps that no longer "
                        "fit are not run, and said so")
    p.add_argument("--knob", dest="knobs", action="extend", type=_names, default=[], metavar="KNOB[,KNOB]",
                   help="only the sweeps of these knobs (e.g. tls or gocryptfs_cipher; repeatable); default every "
                        "knob that can run here")
    p.add_argument("--json", action="store_true", help="the ranked entries as JSON")


def _names(text: str) -> list[str]:
    """--knob's comma list; an empty item is a malformed command line (exit 2), as --variant's."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"{text!r}: an empty value between commas")
    return names


def _only_knobs(engine, sweeps: list, names: list[str]) -> list:
    """--knob: the sweeps of the knobs named (each a knob of the engine's, else exit 3); a knob named whose sweep
    cannot run here (its note said why) leaves the others; none left is exit 4."""
    if not names:
        return sweeps
    known = [k.key for k in getattr(engine, "knobs", ())]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise errors.UnknownNameError(f"advise --knob {unknown[0]}: engine {engine.name!r} has no such knob",
                                      hint="its knobs: " + ", ".join(known))
    kept = [s for s in sweeps if s.knob in names]
    if not kept:
        raise errors.BadValueError(f"advise --knob {','.join(names)}: no sweep of it can run here (said above)",
                                   hint="name another knob, or drop --knob")
    return kept


def _budget(args) -> float | None:
    """--budget in seconds (checked), or None; with --runs below the 6 a sequential verdict starts from: refused."""
    if args.budget is None:
        return None

    if args.runs is not None and str(args.runs).strip().isdigit() and int(args.runs) < precision.MIN_RUNS:
        raise errors.BadValueError(f"--runs {args.runs} is below the {precision.MIN_RUNS} runs per variant a verdict "
                                   "needs with --budget", hint=f"use --runs {precision.MIN_RUNS} or more")
    return precision.parse_duration(args.budget, what="--budget")


def cmd_advise(args, argv: list[str]) -> int:
    skipped: list[str] = []
    if args.sources:
        if args.engine or args.dsn or args.quick or args.budget or args.knobs:
            raise errors.UsageError("--from ranks existing result files: --engine, --dsn, --quick, --budget and "
                                    "--knob run sweeps", hint="drop them, or drop --from")
        docs = []
        for src in args.sources:
            results.check_readable(src)
            docs.append((src, results.load(src)))
    else:
        engine = ENGINES.get(args.engine or DEFAULT_ENGINE)
        options = {k: v for k, v in (("dsn", args.dsn), ("allow_reconfigure", args.allow_reconfigure),
                                     ("settings", args.setting and parse_settings(args.setting))) if v}
        sweeps = engine.advise_sweeps(args.quick, options)
        skipped = engine.advise_notes(args.quick, options)  # one line each, not an error for the rest
        for note in skipped:
            echo(f"advise: {note}", file=sys.stderr)
        sweeps = _only_knobs(engine, sweeps, args.knobs) if sweeps else sweeps
        if not sweeps:
            raise errors.UnknownNameError(f"engine {engine.name!r} has no advise sweeps yet",
                                          hint="engines with sweeps: " + ", ".join(
                                              n for n, e in ENGINES.items() if e.advise_sweeps(True, {})))
        out_dir = Path(args.output) if args.output else Path("encbench-results") / (
            f"advise-{engine.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        settings = sweeps_lab.Settings(
            engine=engine.name, runs=parse_positive_int(args.runs or DEFAULT_RUNS, what="--runs", maximum=1000),
            warmups=parse_count(args.warmups, what="--warmups", maximum=100),
            size_bytes=parse_size(args.size or (QUICK_SIZE if args.quick else DEFAULT_SIZE)), seed=DEFAULT_SEED,
            data_dir=defaults.data_dir(args.data_dir), out_dir=out_dir, quick=args.quick, options=options,
            command=report.command_line(argv), data_dir_given=bool(args.data_dir),
            budget_s=_budget(args))
        sweeps_lab.check(settings, sweeps)  # every name and value checked before anything runs
        made = _sweeps_dir(out_dir)
        check_writable(sweeps_lab.path_of(settings, sweeps[0]))
        try:
            docs = sweeps_lab.run(settings, sweeps, progress=lambda msg: echo(f"advise: {msg}", file=sys.stderr))
        except KeyboardInterrupt:
            kept = [p for p in (sweeps_lab.path_of(settings, s) for s in sweeps) if p.exists()]
            echo(f"encbench: interrupted: {_kept_line(out_dir, kept, made)}", file=sys.stderr)
            return errors.EXIT_INTERRUPTED
    with results.reading(*[src for src, _ in docs]):
        analyses = {src: analysis.analyze(doc) for src, doc in docs}
        knobs = tuple({k.key: k for _, doc in docs
                       for k in getattr(engine_named(doc["engine"]["name"]), "knobs", ())}.values())
        entries = advise.advise(docs, knobs, {"docs": dict(docs), "analyses": analyses})
    if args.json:
        print(json.dumps({"files": [src for src, _ in docs], "entries": entries, "method": advise.METHOD,
                          **({"not_measured": skipped} if skipped else {})}, indent=1, default=str))
        return 0
    print_advice(entries, [src for src, _ in docs], skipped)
    return 0


def print_advice(entries: list[dict], files: list[str], skipped: list[str]) -> None:
    """The ranked advice in words, each line wrapped to the width (a terminal's, else COLUMNS or 100), a setting's
    statement whole (STATEMENT)."""
    for line in advise.report_lines(entries, files) + [f"  not measured: {note}" for note in skipped]:
        echo(line, keep=STATEMENT.findall(line))


def _sweeps_dir(out_dir: Path) -> bool:
    """advise -o DIR: a directory, new (made here: True) or existing (False); anything else (a regular file,
    /dev/null, a path under /proc) is exit 5 before any sweep runs. `run -o` names a file; this names a directory."""
    if out_dir.exists() and not out_dir.is_dir():
        raise errors.OutputError(f"advise -o {out_dir} is not a directory",
                                 hint="give a new or an existing directory for the sweeps' result files")
    made = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise errors.OutputError(f"cannot create the directory {out_dir}: {e.strerror or e}",
                                 hint="give a directory for the sweeps' result files that can be created") from None
    return made


def _kept_line(out_dir: Path, kept: list[Path], made: bool) -> str:
    """What an interrupted advise leaves: the sweeps' files, or nothing (the directory it made, empty, removed)."""
    if kept:
        return f"the sweeps so far are kept in {out_dir} ({len(kept)} result file(s))"
    if made:
        try:
            out_dir.rmdir()  # only when empty: never another file
        except OSError:
            pass
    return "no sweep had finished a run: nothing was kept" + (f" ({out_dir} removed)" if made and not out_dir.exists()
                                                              else "")
